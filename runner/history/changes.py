"""Change points along a series of runs, and one run against a baseline, each judged by
the project's one rule (contract/verdict.py).

Finding where a series steps is a solved problem, so it is left to a library: `ruptures`
(BSD-2, numpy and scipy only), PELT over the log of the figure with an L2 cost, its
penalty a BIC-like PENALTY x sigma^2 x log(n). Why not the others on PyPI: apache-otava
0.8 pins numpy 2.2.0 exactly (this project runs on numpy 2.4) and pulls in BigQuery,
Slack and PostgreSQL clients; MongoDB's signal-processing-algorithms 2.1.6 (E-Divisive)
needs numpy below 2, Python 3.11 exactly and gevent. Both find the same kind of step;
ruptures installs beside everything else here.

sigma, the noise of one run's figure (log scale), is the larger of
- the runs' own 95% intervals (their median half-width / 1.96), and
- with six runs or more, the spread between consecutive runs (the MAD of successive
  differences / sqrt 2: a step moves only one difference), which holds what a run's own
  rounds cannot see, such as the host's state that lasts a process;
and at least MIN_SIGMA. A series with neither (two old runs without intervals) gets no
change point: nothing says what its noise is.

Each change point is judged as Compare judges two runs: the ratio before / after of the
two segments' medians (above 1: the runs after are faster), with a conservative interval
from each side's level interval (level_interval), and the rule's verdict on it: the
whole interval below 1 is a regression, above 1 an improvement; anything else (within
noise, inconclusive, no interval) is no finding.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

import numpy as np
import pandas as pd
import ruptures

from contract import verdict as vd
from contract.numbers import number_or_none
from contract.vocab import MODES
from runner.history import series as hs

# BIC's log(n) with a factor: at 2, 23% of simulated noise-only series of 5-30 runs got a
# change point; at 3, 12% (the verdict then calls nearly all of those within noise).
PENALTY = 3.0
# Below 0.1% no timer here resolves a change: a perfectly flat synthetic series must not
# split on rounding.
MIN_SIGMA = 1e-3
# The spread between runs is estimated from the series itself from this many runs on.
SERIES_SIGMA_RUNS = 6
Z95 = 1.959964

REGRESSION, IMPROVEMENT, INCONCLUSIVE = "regression", "improvement", "inconclusive"
# What each change verdict means, from the rule's word on before / after.
CHANGE_VERDICTS = {
    REGRESSION: "slower after: the whole 95% interval of before / after lies below 1x",
    IMPROVEMENT: "faster after: the whole 95% interval of before / after lies above 1x",
    INCONCLUSIVE: "the interval contains 1x, spans too widely, or is unknown: no finding",
}


def change_verdict(rule: str | None) -> str:
    """The change verdict of the rule's word on before / after."""
    return {vd.FASTER: IMPROVEMENT, vd.SLOWER: REGRESSION}.get(rule or "", INCONCLUSIVE)


def median_rank(n: int) -> int:
    """k such that the k-th smallest and k-th largest of n runs bound a distribution-free
    95% interval of their median (the sign test); 1 (the whole range) below six runs,
    where no narrower one has 95%."""
    k, tail = 1, 0.0
    while True:
        tail += math.comb(n, k - 1) / 2**n
        if 2 * tail > 0.05:
            return max(k - 1, 1)
        if k >= (n + 1) // 2:
            return k
        k += 1


def _known(v: float | None) -> TypeGuard[float]:
    """A bound that is a figure (number_or_none reads it): not None, NaN or inf."""
    return number_or_none(v) is not None


def level_interval(values: Sequence[float], lows: Sequence[float | None],
                   highs: Sequence[float | None], sigma: float | None = None
                   ) -> tuple[float, float] | None:
    """A 95% interval of a segment's level (its median run): the order-statistic interval
    of the runs' figures (their whole range below six runs), widened to the median of the
    runs' own 95% bounds, so a segment of one run has that run's interval and a segment
    of many has at least their spread; and, given the series' noise `sigma` (log scale),
    to at least the median x exp(+-1.96 sigma / sqrt(n)): a run's own rounds do not see
    a host state that lasts the run, the spread between runs does. None for one run
    without an interval."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return None
    k = median_rank(n)
    lo, hi = xs[k - 1], xs[n - k]
    if sigma is not None:
        mid, half = statistics.median(xs), math.exp(Z95 * sigma / math.sqrt(n))
        lo, hi = min(lo, mid / half), max(hi, mid * half)
    own = [(a, b) for a, b in zip(lows, highs, strict=True) if _known(a) and _known(b)]
    if own:
        lo = min(lo, statistics.median(a for a, _ in own))
        hi = max(hi, statistics.median(b for _, b in own))
    elif n == 1 and sigma is None:
        return None
    return lo, hi


def ratio_interval(num: tuple[float, float] | None, den: tuple[float, float] | None
                   ) -> tuple[float, float] | None:
    """A conservative interval for num / den from each side's own interval: num_low /
    den_high .. num_high / den_low (Compare's, contract/noise.py). None when a side has
    none or a bound is not positive."""
    if num is None or den is None or den[0] <= 0 or den[1] <= 0:
        return None
    return num[0] / den[1], num[1] / den[0]


def noise_sigma(values: Sequence[float], lows: Sequence[float | None],
                highs: Sequence[float | None]) -> float | None:
    """The noise of one run's figure on the log scale (see the module's docstring);
    None where nothing says."""
    found = []
    own = [(math.log(h) - math.log(lo)) / (2 * Z95) for lo, h in zip(lows, highs, strict=True)
           if _known(lo) and _known(h) and lo > 0 and h >= lo]
    if own:
        found.append(statistics.median(own))
    if len(values) >= SERIES_SIGMA_RUNS:
        d = np.abs(np.diff(np.log(np.asarray(values, dtype=float))))
        found.append(1.4826 * float(np.median(d)) / math.sqrt(2))
    return max(max(found), MIN_SIGMA) if found else None


class PrefixL2(ruptures.base.BaseCost):
    """ruptures' L2 cost (CostL2: a segment's squared deviations from its mean) from
    prefix sums, a segment in O(1) where CostL2 takes a numpy var of the segment: PELT
    asks for O(n^2) segments, and the smallest detectable step (detectable_step) runs it
    a dozen times a series. The same cost: sum x^2 - (sum x)^2 / n."""

    model = "l2-prefix"

    def __init__(self) -> None:
        self.min_size = 1
        self.signal = np.zeros((0, 1))  # ruptures reads its length
        self._s1: list[float] = [0.0]
        self._s2: list[float] = [0.0]

    def fit(self, signal) -> PrefixL2:
        self.signal = np.asarray(signal, dtype=float).reshape(len(signal), -1)
        x = self.signal[:, 0]
        # Python floats: a numpy scalar's indexing costs more than the sum it saves
        self._s1 = [0.0, *np.cumsum(x).tolist()]
        self._s2 = [0.0, *np.cumsum(x * x).tolist()]
        return self

    def error(self, start: int, end: int) -> float:
        n = end - start
        if n < self.min_size:
            raise ruptures.exceptions.NotEnoughPoints
        s = self._s1[end] - self._s1[start]
        return max(self._s2[end] - self._s2[start] - s * s / n, 0.0)


def breakpoints(values: Sequence[float], sigma: float) -> list[int]:
    """Where the series steps: the index of the first run of each new segment. PELT
    (ruptures) over log values with the L2 cost (PrefixL2), segments down to one run (the
    newest run alone may be the change a CI job asks about)."""
    n = len(values)
    if n < 2:
        return []
    x = np.log(np.asarray(values, dtype=float)).reshape(-1, 1)
    algo = ruptures.Pelt(custom_cost=PrefixL2(), min_size=1, jump=1).fit(x)
    return [int(b) for b in algo.predict(pen=PENALTY * sigma**2 * math.log(n))[:-1]]


@dataclass(frozen=True)
class ChangePoint:
    """One step along a series: the runs before it and after it (up to the next step),
    the two that bracket it, and what the rule says of before / after."""

    mode: str
    batch_size: int
    basis: str
    index: int                # the position of the first run after the step
    before_run: int           # the last run before the step
    after_run: int            # the first run after it
    before_runs: int
    after_runs: int
    before_median: float      # ms
    after_median: float
    ratio: float              # before / after: above 1, the runs after are faster
    ratio_low: float | None
    ratio_high: float | None
    rule: str                 # contract/verdict.py's word on the ratio
    verdict: str              # regression, improvement or inconclusive

    @property
    def change(self) -> float:
        """after / before - 1: +0.10 is a step 10% longer."""
        return self.after_median / self.before_median - 1

    def text(self) -> str:
        """'regression: 1.20 -> 1.50 ms (+25.0%; before/after 0.80x, 95% 0.78-0.82x)'."""
        iv = (f", 95% {vd.interval_text(self.ratio_low, self.ratio_high)}"
              if self.ratio_low is not None else ", no interval")
        return (f"{self.verdict}: {self.before_median:.4g} -> {self.after_median:.4g} ms "
                f"({self.change:+.1%}; before/after {vd.x_text(self.ratio)}x{iv})")


def judge(before: pd.DataFrame, after: pd.DataFrame, sigma: float | None = None
          ) -> tuple[float, tuple | None, str]:
    """(before / after of the medians, its interval, the rule's word) for two groups of
    runs (frames of value, low, high); `sigma` the series' noise, where known."""
    b, a = float(before["value"].median()), float(after["value"].median())
    iv = ratio_interval(level_interval(list(before["value"]), list(before["low"]),
                                       list(before["high"]), sigma),
                        level_interval(list(after["value"]), list(after["low"]),
                                       list(after["high"]), sigma))
    ratio = b / a
    rule = vd.verdict(ratio, *(iv or (None, None))) or vd.NO_INTERVAL
    return ratio, iv, rule


def series_changes(ordered: pd.DataFrame, mode: str, batch_size: int, basis: str
                   ) -> list[ChangePoint]:
    """The change points of one (mode, batch) series: `ordered` holds one row a run in
    the series' order (run_id, value, low, high), as series.judged gives it."""
    values = [float(v) for v in ordered["value"]]
    sigma = noise_sigma(values, list(ordered["low"]), list(ordered["high"]))
    if sigma is None:
        return []
    bkps = breakpoints(values, sigma)
    edges = [0, *bkps, len(values)]
    out = []
    for i, at in enumerate(bkps, start=1):
        before, after = ordered.iloc[edges[i - 1]:at], ordered.iloc[at:edges[i + 1]]
        ratio, iv, rule = judge(before, after, sigma)
        out.append(ChangePoint(
            mode=mode, batch_size=int(batch_size), basis=basis, index=at,
            before_run=int(ordered["run_id"].iloc[at - 1]),
            after_run=int(ordered["run_id"].iloc[at]), before_runs=len(before),
            after_runs=len(after), before_median=float(before["value"].median()),
            after_median=float(after["value"].median()), ratio=ratio,
            ratio_low=iv[0] if iv else None, ratio_high=iv[1] if iv else None, rule=rule,
            verdict=change_verdict(rule)))
    return out


CHANGE_COLUMNS = ["mode", "batch_size", "basis", "index", "before_run", "after_run",
                  "before_runs", "after_runs", "before_median", "after_median", "change",
                  "ratio", "ratio_low", "ratio_high", "rule", "verdict", "text"]


def change_points(runs: pd.DataFrame, points: pd.DataFrame, order: str = "torch"
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every (mode, batch) series of one set of runs (one series_key: the caller picks
    them), ordered by `order`: returns (the judged figures, one row per run and point
    with its position `order` and `basis`; the change points, CHANGE_COLUMNS, newest
    first)."""
    ordered = hs.order_runs(runs, order)
    position = dict(zip(ordered["id"].astype(int), ordered["order"], strict=True))
    fig = hs.figures(points)
    fig = fig[fig["run_id"].isin(position)]
    series_rows, found = [], []
    for (mode, batch), one in fig.groupby(["mode", "batch_size"], sort=True):
        basis, judged = hs.judged(one)
        judged = judged.assign(order=judged["run_id"].map(position)).sort_values("order")
        series_rows.append(judged.assign(mode=mode, batch_size=int(batch), basis=basis))
        found += series_changes(judged.reset_index(drop=True), mode, int(batch), basis)
    figures = (pd.concat(series_rows, ignore_index=True) if series_rows else
               pd.DataFrame(columns=["run_id", "value", "low", "high", "order", "mode",
                                     "batch_size", "basis"]))
    rows = [{**{c: getattr(cp, c) for c in CHANGE_COLUMNS if c != "text"},
             "text": cp.text()} for cp in found]
    changes = pd.DataFrame(rows, columns=CHANGE_COLUMNS)
    if not changes.empty:
        changes = (changes.assign(_m=changes["mode"].map(mode_key))
                   .sort_values(["index", "batch_size", "_m"], ascending=[False, True, True])
                   .drop(columns="_m").reset_index(drop=True))
    return figures, changes


@dataclass(frozen=True)
class PointCheck:
    """One (mode, batch size) of a run against its baseline."""

    mode: str
    batch_size: int
    basis: str
    baseline_ms: float
    run_ms: float
    ratio: float               # baseline / run: above 1, the run is faster
    ratio_low: float | None
    ratio_high: float | None
    rule: str
    verdict: str               # regression, improvement or inconclusive
    detectable: float = math.inf  # the smallest slowdown the rule could call here

    @property
    def change(self) -> float:
        return self.run_ms / self.baseline_ms - 1

    def fails(self, threshold: float) -> bool:
        """A regression by the rule and slower by more than `threshold` (0.05: 5%)."""
        return self.verdict == REGRESSION and self.change > threshold

    def outcome(self, threshold: float) -> str:
        return outcome(self.verdict, self.change, self.detectable, threshold)


def mode_key(mode: str) -> int:
    """The vocabulary's order of modes (eager first); an unknown mode last."""
    return MODES.index(mode) if mode in MODES else len(MODES)


def check_points(baseline: pd.DataFrame, run: pd.DataFrame) -> list[PointCheck]:
    """Each (mode, batch size) both runs measured, judged on one basis (series.judged
    over the two runs), in the modes' order then by batch size. `baseline` and `run` are points
    frames with a run_id column each (their ids must differ)."""
    fig = hs.figures(pd.concat([baseline, run], ignore_index=True))
    base_id = int(baseline["run_id"].iloc[0]) if not baseline.empty else None
    out = []
    for (mode, batch), one in fig.groupby(["mode", "batch_size"], sort=True):
        if one["run_id"].nunique() < 2:
            continue
        basis, judged = hs.judged(one)
        b, r = judged[judged["run_id"] == base_id], judged[judged["run_id"] != base_id]
        ratio, iv, rule = judge(b, r)
        out.append(PointCheck(mode=mode, batch_size=int(batch), basis=basis,
                              baseline_ms=float(b["value"].iloc[0]),
                              run_ms=float(r["value"].iloc[0]), ratio=ratio,
                              ratio_low=iv[0] if iv else None,
                              ratio_high=iv[1] if iv else None, rule=rule,
                              verdict=change_verdict(rule),
                              detectable=detectable_change(b, r)))
    return sorted(out, key=lambda c: (mode_key(c.mode), c.batch_size))


# --- what a check cannot see (issue 47) ------------------------------------------------
# A point's result in a check: a regression beyond the threshold fails; a point whose
# noise would hide a regression of the threshold's size cannot tell; the rest pass.
OK, FAIL, CANNOT_TELL = "ok", "FAIL", "cannot tell"
# The largest step the search for a detectable one tries: 100x slower. A series that
# would not call even that a regression sees nothing (math.inf).
MAX_STEP = 99.0
# The search stops when the step is known within this factor (0.1%).
STEP_PRECISION = 1.001


def detectable_change(before: pd.DataFrame, after: pd.DataFrame,
                      sigma: float | None = None) -> float:
    """The smallest slowdown (after / before - 1, 0.05 = 5%) that judge() would call a
    regression, given the two sides' noise: the after side moved up by (1 + d) keeps its
    relative interval, and the rule calls it slower once its low end passes the before
    side's high end: d = (before high / before level) / (after low / after figure) - 1.
    math.inf where either side has no interval (the rule could call nothing)."""
    b = level_interval(list(before["value"]), list(before["low"]), list(before["high"]),
                       sigma)
    a = level_interval(list(after["value"]), list(after["low"]), list(after["high"]),
                       sigma)
    b_level, a_level = float(before["value"].median()), float(after["value"].median())
    if b is None or a is None or b_level <= 0 or a_level <= 0 or a[0] <= 0:
        return math.inf
    return (b[1] / b_level) / (a[0] / a_level) - 1


def _finds_regression_at(series: pd.DataFrame, at: int) -> bool:
    return any(c.index == at and c.verdict == REGRESSION
               for c in series_changes(series, "", 0, hs.MEASURED))


def detectable_step(ordered: pd.DataFrame, at: int) -> float:
    """The smallest step up at run `at` of a series (series.judged's frame in order)
    that the change points would find there and call a regression, as if that run were
    the newest (a CI job's question): found by running the detector itself on the series
    up to `at`, that run moved to the level before it times (1 + d) with its own
    relative interval, the least such d searched to STEP_PRECISION. math.inf where no
    step up to MAX_STEP would be called (one run, no interval to say the noise)."""
    if at < 1 or at >= len(ordered):
        return math.inf
    head = ordered.iloc[:at + 1].reset_index(drop=True)
    before = [float(v) for v in head["value"].iloc[:at]]
    sigma = noise_sigma(before, list(head["low"].iloc[:at]), list(head["high"].iloc[:at]))
    steps = breakpoints(before, sigma) if sigma is not None and len(before) > 1 else []
    level = statistics.median(before[steps[-1]:] if steps else before)
    run = head.iloc[at]
    value = float(run["value"])
    low, high = number_or_none(run["low"]), number_or_none(run["high"])
    rel = (low / value, high / value) if low is not None and high is not None else None

    def found(d: float) -> bool:
        v = level * (1 + d)
        moved = head.copy()
        moved.loc[at, ["value", "low", "high"]] = (
            v, v * rel[0] if rel else math.nan, v * rel[1] if rel else math.nan)
        return _finds_regression_at(moved, at)

    if not found(MAX_STEP):
        return math.inf
    lo, hi = 1.0, 1.0 + MAX_STEP  # as factors: found(hi - 1) holds, found(lo - 1) not
    while hi / lo > STEP_PRECISION:
        mid = math.sqrt(lo * hi)
        if found(mid - 1):
            hi = mid
        else:
            lo = mid
    return hi - 1


def detectable_at(figures: pd.DataFrame, run_id: int | None = None) -> pd.DataFrame:
    """For each (mode, batch size) of change_points' figures, the smallest step at run
    `run_id` (default: each series' newest run) that it would call a regression
    (detectable_step). Columns mode, batch_size, run_id, detectable."""
    rows = []
    for (mode, batch), one in figures.groupby(["mode", "batch_size"], sort=True):
        one = one.sort_values("order").reset_index(drop=True)
        ids = [int(r) for r in one["run_id"]]
        rid = ids[-1] if run_id is None else run_id
        if rid not in ids:
            continue
        rows.append({"mode": mode, "batch_size": int(batch), "run_id": rid,
                     "detectable": detectable_step(one, ids.index(rid))})
    return pd.DataFrame(rows, columns=["mode", "batch_size", "run_id", "detectable"])


def outcome(verdict: str, change: float | None, detectable: float,
            threshold: float) -> str:
    """A point's result in a check: FAIL for a regression by the rule slower than
    `threshold` (0.05: 5%); ok for an improvement (a slowdown is ruled out, however wide
    the interval); CANNOT_TELL where the smallest regression the noise lets the check see
    is larger than `threshold` (a regression of the threshold's size would pass
    unseen); else ok."""
    if verdict == REGRESSION and change is not None and change > threshold:
        return FAIL
    if verdict == IMPROVEMENT:
        return OK
    return OK if detectable <= threshold else CANNOT_TELL


def detectable_text(d: float) -> str:
    """'+6.1%', or 'none' where no slowdown would be seen."""
    return "none" if not math.isfinite(d) else f"+{d:.1%}"
