"""The Trends page's change points (issue 40): where each mode's step time stepped along
the series, judged by the one rule, and the two runs that bracket each step as a Compare
link. The detection and the verdicts are runner/history's (shared with `runner check`);
this module names the runs and builds the links. Pure pandas.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from pages.logic import links
from pages.logic.plain import plain
from runner.format.vocab import BASELINE_MODE
from runner.history import changes as hc
from runner.history import series as hs

# The change verdicts, in the order a legend lists them, with the words the page uses.
VERDICT_ORDER = (hc.REGRESSION, hc.IMPROVEMENT, hc.INCONCLUSIVE)
RULE_TEXT = ("A change point is where a mode's step time steps along the series "
             "(PELT change-point detection, the ruptures library, over every run of this "
             "series). Before / after are the medians of the runs up to the next step; the "
             "step is a regression or an improvement only when the 95% interval of before / "
             "after lies wholly below or above 1x, else inconclusive. Host-bound points are "
             f"judged on the {hs.NORMALISED} step, so a slower host is not read as a "
             "torch regression.")


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
    figures = figures[figures["mode"].isin(keep) & figures["batch_size"].isin(list(batches))]
    figures = figures.assign(run=figures["run_id"].map(label))
    found = found[found["mode"].isin(keep) & found["batch_size"].isin(list(batches))]
    found = found.assign(before=found["before_run"].map(label),
                         after=found["after_run"].map(label))
    return figures.reset_index(drop=True), found.reset_index(drop=True)


def change_line(change: pd.Series, base_url: str | None) -> str:
    """One change point as a Markdown line with a Compare link to its two runs (the run
    labels hold a bundle's torch version: shown as plain text)."""
    url = links.compare_url(base_url, [int(change["before_run"]), int(change["after_run"])],
                            int(change["batch_size"]))
    return (f"- **{change['verdict']}**: {change['mode']} at batch "
            f"{int(change['batch_size'])}, {change['before_median']:.4g} → "
            f"{change['after_median']:.4g} ms ({change['change']:+.1%}; before/after "
            + (f"{change['ratio_low']:.2f}-{change['ratio_high']:.2f}x"
               if pd.notna(change["ratio_low"]) else "no interval")
            + f") between {plain(change['before'])} and {plain(change['after'])} "
            f"([compare the two runs]({url}))")
