"""Small pure helpers stated once: a percentile and NaN -> None (is_missing is the one
test for an unknown figure; the rest build on it)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def percentile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in 0..100."""
    if not samples:
        raise ValueError("percentile of no samples")
    xs = sorted(samples)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def is_number(v: Any) -> bool:
    """A finite int or float (a bool is not a number here)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def is_missing(v: Any) -> bool:
    """None or a float NaN: what pandas hands back for an unknown figure."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def number_or_none(v: Any) -> float | None:
    """The one reading of a figure that may be unknown: anything numeric (numpy and
    pandas scalars, numeric text such as nvidia-smi prints) as a finite float; None for
    None, a bool (Python's or numpy's: a yes/no column is not a count), other text, NaN,
    inf and an integer too large for a float. A figure a caller can compute with, or none."""
    if v is None or isinstance(v, bool) or getattr(getattr(v, "dtype", None), "kind", "") == "b":
        return None
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None


def flag_or_none(v: Any) -> bool | None:
    """A stored yes/no that pandas may hand back as bool, 1.0/0.0 or NaN."""
    return None if is_missing(v) else bool(v)


def finite_or_none(v: Any) -> Any:
    """A non-finite float (NaN, inf) as None, anything else as it is: JSON has no NaN."""
    return v if not isinstance(v, float) or math.isfinite(v) else None


def finite(obj: Any) -> Any:
    """A deep copy of dicts and lists with every non-finite float as None."""
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return finite_or_none(obj)
