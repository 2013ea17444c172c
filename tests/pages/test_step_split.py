"""Host and GPU apart on the Run page (issue 39): the Time split view's split of each
mode's step with shares, eager's rounds against their launch cost with the projection,
and the Points view's split columns, projected speedups and what `noisy` was judged on."""

from __future__ import annotations

import json

import pytest

from contract import host_split
from contract.measurement import details_of
from pages.charts import report, split_charts
from pages.logic import points_table, step_split
from tests.conftest import ROOT
from tests.synthetic import points_frame


@pytest.fixture(scope="module")
def h200():
    doc = json.loads((ROOT / "data/samples/h200-mlp.json").read_text())
    return points_frame(doc)


def test_old_bundle_gets_the_split_from_its_figures(h200):
    split = step_split.split_frame(h200)
    row = split[(split["mode"] == "eager") & (split["batch_size"] == 1)].iloc[0]
    assert row[["gpu_ms", "launch_ms", "rest_ms"]].sum() == pytest.approx(row["step_ms"])
    assert row[["gpu_share", "launch_share", "rest_share"]].sum() == pytest.approx(1.0)
    assert row["launch_share"] > 0.5  # launch-bound eager at batch 1
    big = split[(split["mode"] == "eager") & (split["batch_size"] == 8192)].iloc[0]
    assert big["gpu_share"] > 0.8  # GPU-bound


def test_stored_split_wins_and_nan_reads_as_unknown(h200):
    one = h200.iloc[[0]].copy()
    one["split_gpu_ms"], one["split_launch_ms"], one["split_rest_ms"] = 0.5, 0.2, 0.065
    got = step_split.split_frame(one).iloc[0]
    assert (got["gpu_ms"], got["launch_ms"]) == (0.5, 0.2)
    one["split_gpu_ms"] = float("nan")  # a database frame's unknown: computed instead
    assert step_split.split_frame(one).iloc[0]["gpu_ms"] != 0.5


def test_time_split_view_draws_each_mode_and_the_launch_scatter(h200):
    charts = split_charts.host_split_charts(h200)
    assert list(charts) == ["split-eager", "split-compile", "split-reduce-overhead",
                            "split-cuda-graph", "launch-scatter"]
    legend = json.dumps(charts["split-eager"].to_dict())
    assert all(name in legend for name in host_split.PARTS.values())
    rounds = step_split.launch_rounds(h200)
    assert set(rounds["process"]) == {0, 1, 2}
    lines = step_split.projection_lines(h200, rounds)
    assert not lines.empty and set(lines["batch_size"]) == set(rounds["batch_size"])
    for chart in charts.values():
        report.chart_svg(chart)


def test_points_table_has_split_projection_and_judged_columns(h200):
    # A bundle before version 6 does not say how `noisy` was judged: no such column.
    assert "Noisy judged on" not in points_table.points_table(h200).columns
    judged = h200.copy()
    judged["details"] = [{**d, "judged_on": "host-normalised", "judged_half_width": 0.04,
                          "target_half_width": 0.05} for d in judged["details"]]
    table = points_table.points_table(judged)
    cols = set(table.columns)
    assert {"Split: GPU / launch / rest", "Speedup at 5 / 10 / 20 us a launch",
            "Noisy judged on"} <= cols
    row = table[(table["Mode"] == "cuda-graph") & (table["Batch size"] == 1)].iloc[0]
    assert row["Speedup at 5 / 10 / 20 us a launch"] == "5.02x / 10.05x / 20.10x"
    assert row["Split: GPU / launch / rest"].count("%") == 3
    assert row["Noisy judged on"] == "host-normalised: ±4.0% (target ±5.0%)"


def test_judged_text_says_what_noisy_was_judged_on():
    judged = details_of({"judged_on": "host-normalised", "judged_half_width": 0.061,
                         "target_half_width": 0.1})
    assert step_split.judged_text(judged) == "host-normalised: ±6.1% (target ±10.0%)"
    assert step_split.judged_text(details_of({})) is None
