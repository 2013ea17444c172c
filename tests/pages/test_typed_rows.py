"""Rows read once into typed records at the edge of pages/logic (issue 36, item 4): noise
counts, a run's compared parameters, a points row without details, a Trends query.
What a row may lack is decided where it turns into a record, and said there."""

from __future__ import annotations

import pandas as pd
import pytest
from pages.logic.analysis import point_record

from contract.run_summary import header_of
from pages.logic import comparing, noise, trends


def test_noise_counts_are_read_once_and_unknown_counts_are_zero():
    assert noise.NOISE_COUNT_COLUMNS == ("ok_points", "interval_points", "noisy_points",
                                         "unstable_points")
    row = pd.Series({"ok_points": 7.0, "interval_points": float("nan"), "noisy_points": 1})
    assert noise.counts_of(row) == noise.NoiseCounts(ok_points=7, noisy_points=1)
    assert noise.counts_of(None) == noise.NoiseCounts()
    assert noise.noise_summary(noise.NoiseCounts()) == ("no interval", "no measured point")
    assert noise.noise_summary(noise.NoiseCounts(4, 4, 0, 1)) == (
        "host unstable", "1 of 4 points host unstable")


def test_compared_parameters_drop_a_dtype_only_where_it_adds_nothing():
    def params(workload_params, dtype="bfloat16"):
        return comparing.comparable_params(header_of({"id": 1, "workload_params":
                                                      workload_params, "dtype": dtype}))

    assert params({"hidden": 64, "dtype": "bfloat16"}) == {"hidden": 64}
    assert params({"hidden": 64, "dtype": None}) == {"hidden": 64}
    assert params({"hidden": 64}) == {"hidden": 64}  # a bundle that leaves it out
    # A dtype among the parameters that is not the run's tells the runs apart: kept.
    assert params({"hidden": 64, "dtype": "float32"}) == {"hidden": 64, "dtype": "float32"}
    assert params(None) is None


def test_a_points_row_without_details_reads_as_none():
    row = {"mode": "eager", "batch_size": 8, "status": "ok", "step_ms": 1.5}
    assert point_record(row).intervals.round_process is None
    nan = point_record({**row, "details": float("nan")})  # a frame's empty cell
    assert nan.intervals.judged_on is None and nan.timing.step_ms == 1.5
    got = point_record({**row, "details": {"judged_on": "measured", "round_process": [0, 1]}})
    assert (got.intervals.judged_on, got.intervals.round_process) == ("measured", [0, 1])


def test_a_trends_query_names_every_key():
    asked = {k: [] for k in trends.QUERY_KEYS}
    assert trends.parse_query(asked, ["mlp"], ["cpu"]) == trends.TrendQuery(None, None, None,
                                                                           (), ())
    with pytest.raises(KeyError):  # a key the page forgot is a bug, not an empty query
        trends.parse_query({k: v for k, v in asked.items() if k != "batch"}, ["mlp"],
                           ["cpu"])
