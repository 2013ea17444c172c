"""Host and GPU apart on the Run page (issue 39): the Time split view's split of each
mode's step with shares, eager's rounds against their launch cost with the projection,
and the Points view's split columns, projected speedups and what `noisy` was judged on."""

from __future__ import annotations

import dataclasses
import json

import pytest

from contract import host_split
from contract.measurement import details_of
from pages.charts import report, split_charts
from pages.logic import points_table, step_split
from tests.conftest import ROOT
from tests.records import points_of


@pytest.fixture(scope="module")
def h200():
    doc = json.loads((ROOT / "data/samples/h200-mlp.json").read_text())
    return points_of(doc)


def _split(points, mode, batch):
    return next(s for m, s in step_split.splits(points)
                if (m.mode, m.batch_size) == (mode, batch))


def test_old_bundle_gets_the_split_from_its_figures(h200):
    s = _split(h200, "eager", 1)
    assert s.gpu_ms + s.launch_ms + s.rest_ms == pytest.approx(s.step_ms)
    assert sum(s.share(p) for p in step_split.PART_NAMES) == pytest.approx(1.0)
    assert s.share("launch") > 0.5  # launch-bound eager at batch 1
    assert _split(h200, "eager", 8192).share("gpu") > 0.8  # GPU-bound


def test_stored_split_wins_and_unknown_is_computed(h200):
    one = dataclasses.replace(h200[0], split=dataclasses.replace(
        h200[0].split, gpu_ms=0.5, launch_ms=0.2, rest_ms=0.065))
    got = host_split.point_split(one)
    assert (got.gpu_ms, got.launch_ms) == (0.5, 0.2)
    part = dataclasses.replace(one, split=dataclasses.replace(one.split, gpu_ms=None))
    assert host_split.point_split(part).gpu_ms != 0.5  # one part unknown: computed


def test_time_split_view_draws_each_mode_and_the_launch_scatter(h200):
    charts = split_charts.host_split_charts(h200)
    assert list(charts) == ["split-eager", "split-compile", "split-reduce-overhead",
                            "split-cuda-graph", "launch-scatter"]
    legend = json.dumps(charts["split-eager"].to_dict())
    assert all(name in legend for name in host_split.PARTS.values())
    rounds = step_split.launch_rounds(h200)
    assert {r.process for r in rounds} == {0, 1, 2}
    lines = step_split.projection_lines(h200, rounds)
    assert lines and {b for b, _, _ in lines} == {r.batch_size for r in rounds}
    for chart in charts.values():
        report.chart_svg(chart)


def test_points_table_has_split_projection_and_judged_columns(h200):
    # A bundle before version 6 does not say how `noisy` was judged: no such column.
    assert "Noisy judged on" not in points_table.points_table(h200).columns
    judged = [dataclasses.replace(m, intervals=dataclasses.replace(
        m.intervals, judged_on="host-normalised", judged_half_width=0.04,
        target_half_width=0.05)) for m in h200]
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
    assert host_split.judged_text(judged) == "host-normalised: ±6.1% (target ±10.0%)"
    assert host_split.judged_text(details_of({})) is None
