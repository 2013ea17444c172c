"""Whether a ratio with a 95% interval is a finding: the one rule every page, the CLI table
and the HTML report apply to a speedup over eager (and to a ratio between two runs).

A noisy run printed "compile at batch 1: 0.5x (0.0-111.7)" as its headline: an interval
that spans both sides of 1x that widely says the run cannot tell whether the mode is
faster or slower, so its median is not a result. criterion.rs calls a change inside its
interval "no change"; asv refuses a verdict until the confidence allows one. Here:

    faster        the whole interval lies above 1x
    slower        the whole interval lies below 1x
    within noise  the interval contains 1x and spans at most SPREAD_LIMIT (high / low):
                  a measured "no difference", which is a finding
    inconclusive  the interval contains 1x and spans more than SPREAD_LIMIT: not a
                  finding; never ranked, never quoted as "up to", shown with its interval
    no interval   none was measured (older bundles, published figures): the median alone

An interval wholly on one side of 1x is a finding however wide it is (3-30x is surely
faster); ranking by the lower bound (contract/speedups.py) already keeps such a point
from being quoted above what it is sure of.

Standard library only: the runner's CLI table and the dashboard share it.
"""

from __future__ import annotations

import math
from typing import Any

from contract.numbers import number_or_none

# high / low above this: the run cannot place the figure within a factor of two, and
# with 1x inside the interval it cannot even say which side of eager the mode is on.
SPREAD_LIMIT = 2.0

FASTER, SLOWER, SAME, INCONCLUSIVE, NO_INTERVAL = (
    "faster", "slower", "within noise", "inconclusive", "no interval")
# Each verdict and what it means, in the words a caption or a tooltip shows.
VERDICTS = {
    FASTER: "the whole 95% interval lies above 1x",
    SLOWER: "the whole 95% interval lies below 1x",
    SAME: f"the 95% interval contains 1x and spans at most {SPREAD_LIMIT:g}x (high / low): "
          "no difference beyond noise",
    INCONCLUSIVE: f"the 95% interval contains 1x and spans more than {SPREAD_LIMIT:g}x "
                  "(high / low): the run cannot tell, so the figure is not ranked",
    NO_INTERVAL: "no interval was measured: the median alone",
}
# Verdicts whose median may be ranked and quoted as a best.
RANKABLE = (FASTER, SLOWER, SAME, NO_INTERVAL)

RULE_TEXT = (f"Inconclusive: the 95% interval contains 1x and its high end is more than "
             f"{SPREAD_LIMIT:g}x its low end; such a speedup is shown with its interval "
             "but never ranked or quoted as a best.")


def verdict(value: Any, low: Any, high: Any) -> str | None:
    """The verdict of a ratio `value` with its 95% interval [low, high]: one of VERDICTS;
    None when the value itself is unknown. Bounds that are missing, not finite or out of
    order count as no interval. A low bound at or below 0 spans without limit."""
    if number_or_none(value) is None:
        return None
    lo, hi = number_or_none(low), number_or_none(high)
    if lo is None or hi is None or lo > hi:
        return NO_INTERVAL
    if lo > 1.0:
        return FASTER
    if hi < 1.0:
        return SLOWER
    spread = hi / lo if lo > 0 else math.inf
    return INCONCLUSIVE if spread > SPREAD_LIMIT else SAME


def inconclusive(value: Any, low: Any, high: Any) -> bool:
    return verdict(value, low, high) == INCONCLUSIVE


def rankable(value: Any, low: Any, high: Any) -> bool:
    """May this figure be ranked (a best, a maximum, an 'up to')?"""
    return verdict(value, low, high) in RANKABLE


def x_text(v: float) -> str:
    """Two decimals, or two significant digits below 0.1x (0.0012x, not a misleading
    0.00x)."""
    a = abs(v)
    return f"{v:.2f}" if a >= 0.1 or a == 0 else f"{v:.2g}"


# A low end at or below 0 (the runner clamps a step-time interval that ran below 0 ms at
# 0) bounds nothing: issue 46 found the Run page writing '0.00-4.90x' where Trends wrote
# 'no lower bound' for the same point.
OPEN_BELOW = "no lower bound"


def interval_text(low: Any, high: Any) -> str:
    """A 95% interval in x: '6.50-7.60x'; '≤111.70x, no lower bound' where its low end is
    0 or below (every page, the headline and the CLI quote it so)."""
    if float(low) <= 0:
        return f"≤{x_text(float(high))}x, {OPEN_BELOW}"
    return f"{x_text(float(low))}-{x_text(float(high))}x"


def quoted(value: Any, low: Any, high: Any) -> str:
    """How a speedup is quoted where the rule applies: '7.10x (6.50-7.60x)' for a finding,
    'inconclusive (95% ≤111.70x, no lower bound)' for one that is not (no median: it
    says nothing),
    '1.20x (no interval)' without one; '—' when unknown."""
    v = verdict(value, low, high)
    if v is None:
        return "—"
    if v == INCONCLUSIVE:
        return f"inconclusive (95% {interval_text(low, high)})"
    if v == NO_INTERVAL:
        return f"{x_text(float(value))}x (no interval)"
    return f"{x_text(float(value))}x ({interval_text(low, high)})"


# Why a paired speedup and the ratio of the two medians can disagree, in the words the CLI
# footnote and the Run page's point note both use.
DISAGREE_WHY = ("the modes' times moved between rounds (a recompile, a host state); the "
                "paired figure compares each round's times, the medians do not")


def medians_ratio(eager_ms: Any, step_ms: Any) -> float | None:
    """Eager's median step over the mode's: the speedup a reader computes from the two
    printed medians; None where either is unknown or not positive."""
    e, t = number_or_none(eager_ms), number_or_none(step_ms)
    return e / t if e and t and e > 0 and t > 0 else None


def medians_disagree(eager_ms: Any, step_ms: Any, low: Any, high: Any) -> bool:
    """Does the ratio of the two medians fall outside the paired speedup's 95% interval?
    Then the printed medians and the printed speedup tell different stories, and whatever
    shows both must say so (the CLI's '#', the Run page's point note) rather than print
    them side by side without a word. False where anything is unknown."""
    ratio, lo, hi = medians_ratio(eager_ms, step_ms), number_or_none(low), number_or_none(high)
    if ratio is None or lo is None or hi is None:
        return False
    return not lo <= ratio <= hi


def disagree_text(eager_ms: Any, step_ms: Any) -> str:
    """The note a point whose two statistics disagree carries."""
    ratio = medians_ratio(eager_ms, step_ms)
    shown = "?" if ratio is None else x_text(ratio)
    return (f"the medians' ratio ({shown}x) lies outside "
            f"the paired interval: {DISAGREE_WHY}")
