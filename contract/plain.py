"""Strings from bundles, forms and URLs, made safe to show in elements that render Markdown:
the dashboard's (through pages/logic/plain.py) and the GitHub step summary `check` writes.

st.title, st.caption, st.markdown, st.info/warning/error, st.page_link labels and the rest
read their text as Markdown: a bundle whose label is `![p](http://host/pixel.png)` or
`[Re-login here](http://host/phish)` would make every reader's browser fetch the image or
show the link. A read-only share is where strangers' bundles meet strangers' browsers, so
every such string goes through `plain()` on its way into one of those elements (tables,
charts and st.code show text as text already; the HTML report is escaped by Jinja). So
does every cell and line of `check`'s step summary, which GitHub renders. Standard
library only.
"""

from __future__ import annotations

import re
from typing import Any

# Every character that opens Markdown inline syntax where it stands: links and images
# (brackets), raw HTML and <autolinks>, emphasis, code, strikethrough, math, and the
# backslash itself. CommonMark shows a backslash-escaped punctuation character as itself.
# Other punctuation ('.', ',', ':', '?', '=') only means something next to these, and
# stays as typed.
_INLINE = re.compile(r"([\\`*_\[\]<>$~|])")
# What GFM and streamlit find in the text after escapes are resolved (`http\://` still
# becomes a link): bare URLs, www. names, e-mail addresses, `:material/icon:` and
# `:emoji:` shortcodes. An invisible WORD JOINER breaks each where it would start.
_FOUND_LATER = re.compile(r"(?<=:)(?=[A-Za-z0-9/])|(?<=\w@)(?=\w)|(?<=www)(?=\.)",
                          re.IGNORECASE)
JOINER = "\u2060"
# At the start of a line these open a block: heading, quote, list, thematic break ("#7"
# or "-3" open none and stay as typed).
_BLOCK_START = re.compile(r"^(\s*)(#{1,6}(?=\s|$)|[-+](?=\s|$)|-(?=-)|>|\d+(?=[.)](\s|$)))")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


# The most of one text a page shows (issue 48, item 6): a bundle's value may hold 100,000
# characters, and the browser took 15 s to lay out one such line. The rest is cut, said
# so, and kept a click away where the page shows it (a download, the run's bundle).
MAX_SHOWN = 1000
# A value in a table cell, a picker or a chart label: a line's worth.
MAX_CELL = 200


def cut(value: Any, limit: int | None = MAX_SHOWN) -> str:
    """`value` as text of at most `limit` characters and the count of what was cut:
    'xxxx… (+99,800 characters)'. None: no limit."""
    text = "" if value is None else str(value)
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit:,} characters)"


def plain(value: Any, limit: int | None = MAX_SHOWN) -> str:
    """`value` as text that Markdown shows literally, on one line (a newline or another
    control character could start a heading, a list or a code block), cut to `limit`
    characters (cut()). What the reader sees is the text itself, with an invisible
    joiner where a link would have started."""
    text = _CONTROL.sub(" ", cut(value, limit)).strip()
    text = _INLINE.sub(r"\\\1", _FOUND_LATER.sub(JOINER, text))
    m = _BLOCK_START.match(text)
    if m:
        if m.group(2).isdigit():  # "1. item" / "1) item": escape the dot or parenthesis
            end = m.end(2)
            return text[:end] + "\\" + text[end:]
        return text[:m.start(2)] + "\\" + text[m.start(2):]
    return text
