"""The one converter from rows to records (db/records.py; issue 45): what a row may lack
is decided where it turns into a record, and said there. A header, a point and a listing
read from rows that hold only some columns; a comparison's parameters; a Trends query."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from contract.comparability import comparable_params
from contract.noise import NoiseCounts, noise_summary
from db import records
from pages.logic import trends


def test_a_header_takes_the_columns_it_knows_and_times_in_utc():
    h = records.header({"id": 3, "uuid": "u", "workload": "mlp", "status": "done",
                        "created_at": datetime(2026, 1, 2, 3, 4), "other": "ignored"})
    assert (h.id, h.kind, h.gpu_name) == (3, "sweep", None)
    assert h.created_at == datetime(2026, 1, 2, 3, 4, tzinfo=timezone.utc)


def test_a_point_from_some_columns_keeps_the_others_unknown():
    row = {"run_id": 1, "mode": "eager", "batch_size": 8, "status": "ok", "step_ms": 1.5}
    m = records.measurement(row)
    assert m.intervals.round_process is None and m.timing.samples_ms == []
    assert m.timing.step_ms == 1.5 and m.memory.graph_pool_bytes is None
    got = records.measurement({**row, "details": {"judged_on": "measured",
                                                  "round_process": [0, 1], "x": 1}},
                              details=("judged_on",))
    assert (got.intervals.judged_on, got.intervals.round_process, got.extra) == (
        "measured", None, {})


def test_a_listing_reads_unknown_counts_as_zero():
    got = records.listing({"id": 1, "uuid": "u", "workload": "mlp", "status": "done",
                           "points": 7, "ok_points": 7, "noisy_points": 1,
                           "interval_points": None})
    assert got.noise == NoiseCounts(ok_points=7, noisy_points=1)
    assert noise_summary(NoiseCounts()) == ("no interval", "no measured point")
    assert noise_summary(NoiseCounts(4, 4, 0, 1)) == ("host unstable",
                                                      "1 of 4 points host unstable")


def test_compared_parameters_drop_a_dtype_only_where_it_adds_nothing():
    def params(workload_params, dtype="bfloat16"):
        return comparable_params(workload_params, dtype)

    assert params({"hidden": 64, "dtype": "bfloat16"}) == {"hidden": 64}
    assert params({"hidden": 64, "dtype": None}) == {"hidden": 64}
    assert params({"hidden": 64}) == {"hidden": 64}  # a bundle that leaves it out
    # A dtype among the parameters that is not the run's tells the runs apart: kept.
    assert params({"hidden": 64, "dtype": "float32"}) == {"hidden": 64, "dtype": "float32"}
    assert params(None) is None


def test_a_trends_query_names_every_key():
    asked = {k: [] for k in trends.QUERY_KEYS}
    assert trends.parse_query(asked, ["mlp"], ["cpu"]) == trends.TrendQuery(None, None, None,
                                                                           (), ())
    with pytest.raises(KeyError):  # a key the page forgot is a bug, not an empty query
        trends.parse_query({k: v for k, v in asked.items() if k != "batch"}, ["mlp"],
                           ["cpu"])
