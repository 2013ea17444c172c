"""How wide a grid's text draws at 1280x800 in chromium (st.dataframe's 14 px sans), by
character class, so that a column is as wide as its text and a table's columns add up to
no more than the page. Seven pixels a character, the rule before, overstated text by about
a fifth (measured by tests/e2e/audit_page.js, which reads each column's text in the grid's
own font): a table of eight short columns passed the Run page's 820 px edge.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

# Pixels a character, a little over what the audit measured in the grid's font: digits
# ("16777216": 55.7 px), lower case ("reduce-overhead": 99.6 px), capitals, the wide M
# and W ("Mode": 32.5 px) and the per cent sign, and the narrow space and punctuation.
DIGIT_PX, LOWER_PX, UPPER_PX, WIDE_PX, NARROW_PX = 7.2, 7.0, 8.6, 12.0, 4.0
NARROW = " .,:;'|!()[]-/"
# glide pads a cell 8 px on its left and overdraws the last pixels at the border: the text
# must end 2 px before it (the audit's rule: text + 10 px), plus room for rounding.
CELL_PAD_PX = 14


def text_px(text: str) -> float:
    """The drawn width of `text` in the grid's font, a little over rather than under."""
    px = 0.0
    for ch in text:
        if ch.isdigit():
            px += DIGIT_PX
        elif ch in "MWmw%":
            px += WIDE_PX if ch.isupper() or ch == "%" else LOWER_PX + 2.5
        elif ch.isupper():
            px += UPPER_PX
        elif ch in NARROW:
            px += NARROW_PX
        else:
            px += LOWER_PX
    return px


def fit_px(texts: Iterable[object], widest: int | None = None) -> int:
    """A column as wide as the widest of `texts` (its header among them) plus the cell's
    padding; at most `widest`."""
    px = max((text_px(str(t)) for t in texts), default=0.0)
    need = math.ceil(px) + CELL_PAD_PX
    return need if widest is None else min(need, widest)
