"""Strings from bundles, forms and URLs, made safe to show in elements that render Markdown.

st.title, st.caption, st.markdown, st.info/warning/error, st.page_link labels and the rest
read their text as Markdown: a bundle whose label is `![p](http://host/pixel.png)` or
`[Re-login here](http://host/phish)` would make every reader's browser fetch the image or
show the link. A read-only share is where strangers' bundles meet strangers' browsers, so
every such string goes through `plain()` on its way into one of those elements (tables,
charts and st.code show text as text already; the HTML report is escaped by Jinja).
"""

from __future__ import annotations

import re
import string
from typing import Any

# CommonMark lets a backslash escape any ASCII punctuation and then shows the character
# itself. Escaping all of them, not a chosen few, also breaks what a renderer adds on top
# of CommonMark: GFM autolinks (`http://`, `www.`, `a@b.c`), math (`$`), streamlit's
# `:red[...]` and `:material/...:` directives, HTML (`<`).
_PUNCTUATION = frozenset(string.punctuation)
# GFM's autolinks are found in the text after escapes are resolved (`http\\://` still
# becomes a link in streamlit), so an invisible WORD JOINER goes where a bare URL or
# address would start: after every `:` and `@`, and inside `www.`.
_AUTOLINK = re.compile(r"(?<=[:@])|(?<=www)(?=\.)", re.IGNORECASE)
JOINER = "\u2060"


def plain(value: Any) -> str:
    """`value` as text that Markdown shows literally, on one line (a newline or another
    control character could start a heading, a list or a code block). What the reader
    sees is the text itself, with an invisible joiner where a link would have started."""
    text = _AUTOLINK.sub(JOINER, "" if value is None else str(value))
    return "".join(" " if ord(ch) < 32 or ord(ch) == 127
                   else "\\" + ch if ch in _PUNCTUATION else ch
                   for ch in text)
