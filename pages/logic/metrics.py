"""Display helpers over the one metrics table (contract/metrics.py): titles, values
and intervals as text, unknown figures as a dash."""

from __future__ import annotations

from typing import Any

from contract.metrics import METRICS, Metric
from contract.numbers import is_missing
from contract.verdict import interval_text

MISSING = "—"  # what an unknown figure looks like; never 0
NO_INTERVAL = "no interval"  # a figure measured before intervals existed (bundle < 3)


def metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"no metric named {name!r} in contract/metrics.py METRICS") from None


def title(name: str) -> str:
    return metric(name).title


def shown(name: str, value: Any) -> float | None:
    """The value in display units (bytes -> MiB), None when unknown."""
    if is_missing(value):
        return None
    return float(value) * metric(name).scale


def format_interval(name: str, low: Any, high: Any) -> str:
    """A 95% interval as text, e.g. '6.50-7.60x' or '1.230-1.300 ms'; unknown bounds
    read 'no interval' (never a made-up one). A low end at or below 0 bounds nothing: a
    ratio reads by the one rule of contract/verdict.py ('≤4.90x, no lower bound'); a time
    or an energy (the runner clamps its interval at 0) '≤30.584 ms', OPEN_BELOW_NOTE
    under the table saying so (those words in each cell pushed the Points table past the
    page)."""
    lo, hi = shown(name, low), shown(name, high)
    if lo is None or hi is None:
        return NO_INTERVAL
    m = metric(name)
    a, b = m.fmt.format(lo), m.fmt.format(hi)
    if lo <= 0 and m.unit == "x":
        return interval_text(low, high)
    if lo <= 0:
        return f"≤{b} {m.unit}" if m.unit and not b.endswith("%") else f"≤{b}"
    if m.unit == "x":
        return f"{a.removesuffix('x')}-{b}"
    return f"{a}-{b} {m.unit}" if m.unit else f"{a}-{b}"


OPEN_BELOW_NOTE = ("≤: a 95% interval whose low end reached 0 (the rounds spread that "
                   "far): it bounds nothing below, only above.")


def format_value(name: str, value: Any) -> str:
    """One value as text with its unit; unknown shows as a dash, never as 0."""
    v = shown(name, value)
    if v is None:
        return MISSING
    m = metric(name)
    text = m.fmt.format(v)
    if m.unit and m.unit not in ("x",) and not text.endswith("%"):
        text = f"{text} {m.unit}"
    return text
