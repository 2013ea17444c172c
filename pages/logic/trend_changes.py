"""The Trends page's change points (issue 40): where each mode's step time stepped along
the series, judged by the one rule, and the two runs that bracket each step as a Compare
link. The detection and the verdicts are runner/history's (shared with `runner check`);
this module names the runs and builds the links. Pure pandas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from contract.vocab import BASELINE_MODE
from pages.logic import links
from runner.history import changes as hc
from runner.history import series as hs

# The change verdicts, in the order a legend lists them, with the words the page uses.
VERDICT_ORDER = (hc.REGRESSION, hc.IMPROVEMENT, hc.INCONCLUSIVE)
RULE_TEXT = ("A change point is where a mode's step time steps along the series "
             "(PELT change-point detection, the ruptures library, over every run of this "
             "series), newest first. Before / after are the medians of the runs up to the "
             "next step; the step is a regression or an improvement only when the 95% "
             "interval of before / after lies wholly below or above 1x, else inconclusive. "
             "Host-bound points are judged on the step projected to "
             f"{hs.REFERENCE_US:g} us a launch, so a slower host is not read as a torch "
             "regression.")


def trend_changes(runs: pd.DataFrame, points: pd.DataFrame, order: str,
                  batches: Sequence[int], modes: Sequence[str]
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the judged step per run, mode and batch with the run's label; the change points,
    newest first, with the bracketing runs' labels). `runs` is ordered_runs' frame (its
    `run` labels), `points` the runs' full points; eager is always in: its step is every
    speedup's reference. Only the asked batch sizes and modes are returned; the detection
    runs over the whole series of each."""
    keep = [BASELINE_MODE, *[m for m in modes if m != BASELINE_MODE]]
    figures, found = hc.change_points(runs, points, order)
    label = dict(zip(runs["id"].astype(int), runs["run"], strict=True)) if len(runs) else {}
    torch = dict(zip(runs["id"].astype(int), runs["torch_version"], strict=True)) \
        if len(runs) else {}
    figures = figures[figures["mode"].isin(keep) & figures["batch_size"].isin(list(batches))]
    figures = figures.assign(run=figures["run_id"].map(label))
    found = found[found["mode"].isin(keep) & found["batch_size"].isin(list(batches))]
    found = found.assign(before=found["before_run"].map(label),
                         after=found["after_run"].map(label),
                         before_torch=found["before_run"].map(torch),
                         after_torch=found["after_run"].map(torch))
    return figures.reset_index(drop=True), found.reset_index(drop=True)


CHANGE_TABLE_COLUMNS = ["verdict", "mode", "batch", "change", "step ms", "before/after 95%",
                       "between runs", "compare"]


def _between(c: pd.Series) -> str:
    """'#16 → #17 (torch 2.8.0 → 2.9.0)', or '#12 → #13 (same torch)': the two runs as
    the table names them (the chart's labels carry the dates and versions; the dates, or
    one torch version twice, made the table wider than the page)."""
    before, after = hs.text(c["before_torch"]) or "?", hs.text(c["after_torch"]) or "?"
    torch = "same torch" if before == after != "?" else f"torch {before} → {after}"
    return f"#{int(c['before_run'])} → #{int(c['after_run'])} ({torch})"


def change_table(found: pd.DataFrame, base_url: str | None) -> pd.DataFrame:
    """The change points as the page lists them, newest first (as trend_changes gives
    them), each with a Compare link to its two bracketing runs at its batch size. A
    table, not a line each: eight points and two steps made sixteen lines above the
    charts. Shown in a dataframe, which renders text as text."""
    rows = [{"verdict": c["verdict"], "mode": c["mode"], "batch": int(c["batch_size"]),
             "step ms": f"{c['before_median']:.4g} → {c['after_median']:.4g}",
             "change": c["change"] * 100,
             "before/after 95%": (f"{c['ratio_low']:.2f}-{c['ratio_high']:.2f}x"
                                  if pd.notna(c["ratio_low"]) else "no interval"),
             "between runs": _between(c),
             "compare": links.compare_url(base_url, [int(c["before_run"]),
                                                     int(c["after_run"])],
                                          int(c["batch_size"]))}
            for _, c in found.iterrows()]
    return pd.DataFrame(rows, columns=CHANGE_TABLE_COLUMNS)


UNSEEN_RULE = ("What a change point can see: the smallest slowdown at the newest run that "
               "these runs' noise lets the change points call a regression at 95% (the "
               "detector run on the series itself, the newest run moved up until it is "
               "called), for each mode and batch size shown; `python -m runner check` "
               "says the same per point, and cannot tell where it exceeds its threshold.")


@dataclass(frozen=True)
class Unseen:
    """What the change points could not see here (issue 47): the smallest step at the
    newest run of each shown (mode, batch size) that they would call a regression,
    worst and best, and how many could see none at all (no interval)."""
    worst: float | None  # None: no shown series can see any step
    best: float | None
    blind: int

    def text(self) -> str:
        if self.worst is None or self.best is None:  # both or neither (unseen)
            return ("No change could be seen here: these runs carry no 95% interval, so "
                    "nothing says what their noise is.")
        spread = (f"; {self.best:.1%} for the quietest mode and batch size"
                  if self.worst - self.best >= 0.001 else "")
        blind = (f"; {self.blind} with no interval see nothing" if self.blind else "")
        return f"A change under {self.worst:.1%} would not be seen here{spread}{blind}."

    def hides(self, threshold: float) -> bool:
        """Would a change of `threshold` (0.05) pass unseen somewhere shown?"""
        return self.worst is None or self.worst > threshold or self.blind > 0


def unseen(figures: pd.DataFrame) -> Unseen | None:
    """Unseen for the shown series (trend_changes' figures, runner/history
    changes.detectable_at on each); None without a series of two runs."""
    found = hc.detectable_at(figures) if not figures.empty else figures
    if found.empty:
        return None
    seen = found[found["detectable"] < float("inf")]["detectable"]
    return Unseen(float(seen.max()) if len(seen) else None,
                  float(seen.min()) if len(seen) else None, len(found) - len(seen))
