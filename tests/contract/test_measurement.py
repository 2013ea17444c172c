"""The typed point (contract/measurement.py): JSON only at the boundary, and the
boundary faithful to every bundle already written."""

from __future__ import annotations

import pytest

import contract.bundle as fmt
from contract.measurement import (
    DETAILS_ORDER,
    Clocks,
    Measurement,
    MemorySnapshot,
    NoIdle,
    PairedRatio,
    SeparateGraphs,
    details_of,
)
from tests.conftest import ROOT

DATA = ROOT / "data"


def test_an_empty_point_has_the_bundle_layout_with_every_figure_unknown():
    j = Measurement("eager", 8).to_json()
    assert list(j) == [*fmt.MEASUREMENT_FIELDS, fmt.TRACE_FIELD]
    assert j["cudagraph_status"] == "n/a" and j["message"] == "" and j["details"] == {}
    assert j["samples_ms"] == [] and j["launch_us_rounds"] == []
    assert all(j[f] is None for f in fmt.NUMBER_FIELDS)  # unknown is None, never 0


@pytest.mark.parametrize("path", sorted(DATA.rglob("*.json")), ids=lambda p: p.name)
def test_every_shipped_bundle_round_trips_unchanged(path):
    try:
        doc = fmt.read(path)
    except fmt.BundleError:
        pytest.skip("not a run bundle")
    for m in doc["measurements"]:
        back = Measurement.from_json(m).to_json()
        assert back == m and list(back) == list(m)
        assert list(back["details"]) == list(m["details"])  # byte for byte on export


def test_unknown_and_null_details_keys_survive_a_round_trip():
    m = fmt.empty_measurement("eager", 8)
    m["details"] = {"from_the_future": [1, 2], "stddev_ms": None, "rel_err": 0.5}
    t = Measurement.from_json(m)
    assert t.setup.rel_err == 0.5 and t.source.stddev_ms is None
    assert t.extra == {"from_the_future": [1, 2], "stddev_ms": None}
    assert t.to_json()["details"] == m["details"]


def test_fields_go_where_the_bundle_keeps_them():
    m = Measurement("reduce-overhead", 4)
    m.timing.step_ms = 1.5
    m.intervals.vs_compile = PairedRatio(median=2.0, low=1.5, high=2.5)
    m.host.placement = {"policy": None}
    m.trace.error = "ValueError: x"
    j = m.to_json()
    assert j["step_ms"] == 1.5
    assert j["details"] == {"vs_compile": {"median": 2.0, "low": 1.5, "high": 2.5},
                            "host": {"policy": None}, "trace_error": "ValueError: x"}
    fmt.check_measurement(j)


def test_a_point_the_runner_builds_writes_details_in_the_runners_order():
    m = Measurement("eager", 2)
    m.host.placement = {"policy": None}
    m.timing.phase_s = {"setup": 0.1}
    m.setup.rel_err = 0.0
    m.set_details({"clocks_before": None})  # a CPU point: no clocks, the key kept
    assert list(m.details()) == ["phase_s", "clocks_before", "rel_err", "host"]


def test_a_set_field_wins_over_a_null_read_before():
    m = Measurement.from_json({**fmt.empty_measurement("eager", 1),
                               "details": {"clocks_before": None}})
    m.host.clocks_before = {"sm_mhz": 1980}
    assert m.details() == {"clocks_before": {"sm_mhz": 1980}}


def test_a_stored_points_details_read_typed():
    d = details_of({"vs_compile": {"median": 1, "low": 0.9, "high": 1.1},
                    "statistic": "mean"})
    assert d.intervals.vs_compile == PairedRatio(1, 0.9, 1.1)
    assert d.source.statistic == "mean"
    assert details_of(None).timing.phase_s is None  # no details: every key unknown
    assert {"phase_s", "point_wall_s", "statistic", "processes"} <= set(DETAILS_ORDER)


def test_the_runners_fixed_shape_details_read_as_records_and_write_back_as_json():
    snap = {"allocated_bytes": 1536, "reserved_bytes": 2097152, "device_used_bytes": 6e8,
            "private_pool_bytes": 0, "private_pools": 0, "private_segments": []}
    clocks = {"sm_clock_mhz": 1980.0, "mem_clock_mhz": None, "temperature_c": 38.0,
              "power_w": 86.7}
    sep = {"forward_pool_bytes": 3, "backward_pool_bytes": 1, "sum_bytes": 4, "method": "x"}
    details = {"clocks_before": clocks, "m0": snap, "separate_graphs": sep,
               "energy_idle": {"unavailable_reason": "no counter"}}
    m = details_of(details)
    assert m.memory.m0 == MemorySnapshot(1536, 2097152, 6e8, 0, 0, [])
    assert m.host.clocks_before == Clocks(1980.0, None, 38.0, 86.7)
    assert m.memory.separate_graphs == SeparateGraphs(3, 1, 4, "x")
    assert m.energy.idle == NoIdle("no counter") and m.extra == {}
    assert m.details() == details


def test_a_details_object_of_another_shape_is_kept_as_it_came():
    odd = {"clocks_before": {"sm_mhz": 1980}, "separate_graphs": {"sum_bytes": 4},
           "m1": {"allocated_bytes": 1}}
    m = details_of(odd)
    assert m.host.clocks_before is None and m.memory.separate_graphs is None
    assert m.memory.m1 is None and m.extra == odd
    assert m.details() == odd
