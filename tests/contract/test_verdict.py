"""The one rule that says whether a speedup is a finding (contract/verdict.py)."""

import math
from datetime import datetime, timezone

import pytest

from contract import verdict as vd

EDGES = [
    (7.1, 6.5, 7.6, vd.FASTER),
    (0.8, 0.7, 0.9, vd.SLOWER),
    (1.02, 0.95, 1.1, vd.SAME),
    # the headline: both sides of 1x, widely
    (0.5, 0.0, 111.7, vd.INCONCLUSIVE),
    (1.0, 0.6, 1.5, vd.INCONCLUSIVE),          # spread 2.5
    # one-sided intervals are findings however wide
    (10.0, 3.0, 30.0, vd.FASTER),
    (0.1, 0.01, 0.5, vd.SLOWER),
    # edges: a bound on 1x contains it; a spread of exactly the limit is within noise
    (1.5, 1.0, 2.0, vd.SAME),
    (0.7, 0.5, 1.0, vd.SAME),
    (1.0, 0.7, 0.7 * vd.SPREAD_LIMIT, vd.SAME),
    (1.0, 0.7, 0.7 * vd.SPREAD_LIMIT + 1e-9, vd.INCONCLUSIVE),
    (1.0000001, 1.0000001, 5.0, vd.FASTER),    # just above 1x: faster
    (0.5, -0.2, 1.5, vd.INCONCLUSIVE),         # a negative low bound spans without limit
    # no interval: missing, NaN, inf or reversed bounds
    (1.3, None, None, vd.NO_INTERVAL),
    (1.3, float("nan"), 1.4, vd.NO_INTERVAL),
    (1.3, 1.2, math.inf, vd.NO_INTERVAL),
    (1.3, 1.4, 1.2, vd.NO_INTERVAL),
    # an unknown value has no verdict
    (None, 0.5, 2.0, None),
    (float("nan"), 0.5, 2.0, None),
]


@pytest.mark.parametrize("value,low,high,expected", EDGES)
def test_verdict_edges(value, low, high, expected):
    assert vd.verdict(value, low, high) == expected


def test_every_verdict_is_described_and_inconclusive_alone_is_not_ranked():
    assert set(vd.RANKABLE) | {vd.INCONCLUSIVE} == set(vd.VERDICTS)
    assert not vd.rankable(0.5, 0.0, 111.7)
    assert vd.rankable(1.02, 0.95, 1.1) and vd.rankable(2.0, None, None)
    assert vd.inconclusive(0.5, 0.0, 111.7) and not vd.inconclusive(7.1, 6.5, 7.6)
    assert f"{vd.SPREAD_LIMIT:g}x" in vd.RULE_TEXT


def test_quoted_never_gives_an_inconclusive_median():
    assert vd.quoted(0.5, 0.0, 111.7) == "inconclusive (95% ≤111.70x, no lower bound)"
    assert "0.5" not in vd.quoted(0.5, 0.0, 111.7)
    assert vd.quoted(7.1, 6.5, 7.6) == "7.10x (6.50-7.60x)"
    assert vd.quoted(1.2, None, None) == "1.20x (no interval)"
    assert vd.quoted(0.0012, 0.001, 0.0015) == "0.0012x (0.001-0.0015x)"
    assert vd.quoted(None, None, None) == "—"


# --- the rule where a speedup is quoted or ranked -------------------------------------------

from contract import noise  # noqa: E402
from contract import speedups as sp  # noqa: E402
from contract.run_summary import RunListing  # noqa: E402
from pages.charts import report, trend_chart  # noqa: E402
from pages.logic import board, points_table, run_text, trends  # noqa: E402
from tests.records import header, points_of  # noqa: E402
from tests.synthetic import sweep_bundle  # noqa: E402


def headline(points) -> str | None:
    return run_text.summary_of(header(), points).headline()

# The noisy run: compile at batch 1 spans 0.0-111.7x; cuda-graph is a finding at
# batch 8 and inconclusive at batch 1; reduce-overhead is inconclusive everywhere.
NOISY = {("compile", 1): {"speedup": 0.5, "speedup_ci_low": 0.0, "speedup_ci_high": 111.7},
         ("compile", 8): {"speedup": 30.0, "speedup_ci_low": 0.2, "speedup_ci_high": 90.0},
         ("cuda-graph", 1): {"speedup": 40.0, "speedup_ci_low": 0.3, "speedup_ci_high": 80.0},
         ("cuda-graph", 8): {"speedup": 7.1, "speedup_ci_low": 6.5, "speedup_ci_high": 7.6},
         ("reduce-overhead", 1): {"speedup": 9.0, "speedup_ci_low": 0.4,
                                  "speedup_ci_high": 20.0},
         ("reduce-overhead", 8): {"speedup": 3.0, "speedup_ci_low": 0.9,
                                  "speedup_ci_high": 5.0}}


def _step(ms: float) -> dict:
    """A step time with its own percentiles and interval around it (a median outside
    them is refused on the way in)."""
    return {"step_ms": ms, "step_ms_p10": ms * 0.97, "step_ms_p90": ms * 1.05,
            "step_ms_ci_low": ms * 0.99, "step_ms_ci_high": ms * 1.01}


def noisy_points(overrides=NOISY, batches=(1, 8)):
    return points_of(sweep_bundle(batches=batches, overrides=overrides))


def test_largest_speedups_never_ranks_an_inconclusive_point():
    best = {b.mode: b for b in sp.mode_bests(sp.speedups(noisy_points()))}
    # cuda-graph batch 1's 40x median is inconclusive: batch 8's 7.1x is the best
    g = best["cuda-graph"]
    assert (g.batch_size, g.verdict, g.inconclusive) == (8, vd.FASTER, (1,))
    # every compile point is inconclusive: one row says so, its narrowest interval
    c = best["compile"]
    assert (c.verdict, c.batch_size, c.ties) == (vd.INCONCLUSIVE, 8, ())
    assert all(s.verdict is None for s in sp.speedups(noisy_points()) if s.mode == "eager")


def test_headlines_say_inconclusive_and_quote_no_median():
    p = noisy_points()
    lines = run_text.headline(p)
    compile_line = next(ln for ln in lines if ln.startswith("compile:"))
    assert "inconclusive at every measured batch size" in compile_line
    assert "30.00x" not in compile_line and "up to" not in compile_line
    graph = next(ln for ln in lines if ln.startswith("cuda-graph:"))
    assert "up to 7.10x" in graph and "inconclusive, not ranked: batch 1" in graph
    assert vd.RULE_TEXT in lines
    assert not any(ln.startswith("compile: its") for ln in lines)  # no payback quoted
    assert headline(p).startswith("cuda-graph at batch 8: 7.10x")
    only_bad = {k: v for k, v in NOISY.items() if k != ("cuda-graph", 8)}
    only_bad[("cuda-graph", 8)] = {"speedup": 2.0, "speedup_ci_low": 0.1,
                                   "speedup_ci_high": 9.0}
    only_bad[("reduce-overhead", 8)] = {"speedup": 2.0, "speedup_ci_low": 0.1,
                                        "speedup_ci_high": 9.0}
    same = dict(only_bad)
    same[("compile", 1)] = {"speedup": 0.9, "speedup_ci_low": 0.8, "speedup_ci_high": 1.1}
    assert headline(noisy_points(same)) == (
        "compile at batch 1: 0.90x (0.80-1.10x) · +0.0 MiB memory cost over eager · within "
        "noise of eager")
    head = headline(noisy_points(only_bad))
    assert head.startswith("Inconclusive: no mode's speedup is a finding")
    assert "0.5" not in head and "2.0" not in head


def test_pivot_and_points_table_mark_inconclusive():
    p = noisy_points()
    pivot = points_table.speedup_pivot(p).set_index("Batch size")
    assert pivot.at[1, "compile"].startswith("inconclusive (95% ≤111.70x, no lower bound)")
    assert pivot.at[8, "cuda-graph"].startswith("7.10x (6.50-7.60x)")
    t = points_table.points_table(p)
    row = t[(t["Mode"] == "compile") & (t["Batch size"] == 1)].iloc[0]
    assert row["Verdict"] == vd.INCONCLUSIVE
    html = report.html_report(header(), p)
    assert "inconclusive at every measured batch size" in html and vd.RULE_TEXT in html


def test_board_key_figure_leaves_inconclusive_modes_unranked():
    def figures(points):  # the board's row of one run: (row, key figure)
        runs = [RunListing(header())]
        row = board.key_figures(runs, {1: run_text.summary_of(header(), points)}).loc[1]
        return row, row["key figure"]

    p = noisy_points()
    row, text = figures(p)
    assert row["cuda-graph x"] == pytest.approx(7.1)
    assert text == "cuda-graph at batch 8: 7.10x (6.50-7.60x)"
    assert math.isnan(row["reduce-overhead x"])
    bad = dict(NOISY)
    bad[("cuda-graph", 8)] = {"speedup": 2.0, "speedup_ci_low": 0.1, "speedup_ci_high": 9.0}
    row, text = figures(noisy_points(bad))
    assert math.isnan(row["cuda-graph x"]) and "inconclusive" in text


def test_trend_and_compare_verdicts_follow_the_rule():
    assert noise.ratio_verdict((0.3, 3.0)) == vd.INCONCLUSIVE
    assert noise.ratio_verdict((0.9, 1.1)) == vd.SAME
    runs = [header(id=i, torch_version=f"2.{i}",
                   created_at=datetime(2026, 1, i, tzinfo=timezone.utc)) for i in (1, 2)]
    p = {1: noisy_points(),
         2: noisy_points({("cuda-graph", 8): {"speedup": 7.0, "speedup_ci_low": 1.0,
                                              "speedup_ci_high": 40.0}})}
    table = trends.trend_table(runs, p, [8], ["cuda-graph"])
    assert table.iloc[1]["change"] == vd.INCONCLUSIVE
    assert trends.changes(table).empty


def test_setup_reads_ms_below_a_second():
    assert run_text.duration_text(0.0032) == "3.2 ms"
    assert run_text.duration_text(0.85) == "850 ms"
    assert run_text.duration_text(12.44) == "12.4 s"
    p = noisy_points({**NOISY, ("cuda-graph", 8): {**NOISY[("cuda-graph", 8)],
                                                   "setup_s": 0.004}})
    line = next(ln for ln in run_text.headline(p) if ln.startswith("cuda-graph: its"))
    assert line.startswith("cuda-graph: its 4.0 ms setup pays back after")


def test_every_change_verdict_has_a_shape_on_the_trend_chart():
    assert set(vd.VERDICTS) | {"first"} == set(trend_chart.CHANGE_SHAPES)


def test_the_headline_names_medians_that_disagree_with_the_paired_speedup():
    p = noisy_points({("eager", 8): _step(7.84),
                      ("cuda-graph", 8): {**_step(253.5), "speedup": 7.1,
                                          "speedup_ci_low": 6.5, "speedup_ci_high": 7.6}},
                     batches=(8,))
    line = next(ln for ln in run_text.headline(p) if ln.startswith("cuda-graph:"))
    assert "the medians' ratio (0.031x) lies outside the paired interval" in line
    agree = noisy_points({("eager", 8): _step(1.0),
                          ("cuda-graph", 8): {**_step(0.141), "speedup": 7.1,
                                              "speedup_ci_low": 6.5, "speedup_ci_high": 7.6}},
                         batches=(8,))
    line = next(ln for ln in run_text.headline(agree) if ln.startswith("cuda-graph:"))
    assert "medians' ratio" not in line
