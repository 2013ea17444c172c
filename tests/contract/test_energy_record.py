"""Energy on the record (issue 28): typed on Measurement, top-level bundle fields from
version 5, database columns (0009_energy); older bundles read without energy, and a
point without a counter carries the reason, never a 0."""

import uuid

import pytest

from contract import bundle as fmt
from contract.energy import Energy, EnergyWindow, IdlePower
from contract.measurement import ENERGY_NUMBER_FIELDS, Measurement
from db import queries, store
from db.engine import make_engine


def _energy() -> Energy:
    ws = (EnergyWindow("cuda-graph", 0, 1700.0, 7300, 1.0, 0.01),
          EnergyWindow("cuda-graph", 1, 1720.0, 7310, 1.0, 0.01))
    return Energy(energy_mj_per_step=17.0, energy_mj_per_step_ci_low=16.5,
                  energy_mj_per_step_ci_high=17.5, avg_power_w=126.0, idle_power_w=70.0,
                  energy_above_idle_mj_per_step=-0.5, energy_gain=6.2,
                  energy_gain_ci_low=5.9, energy_gain_ci_high=6.5, windows=ws,
                  counter="fake")


def _run(**kw):
    return {"uuid": str(uuid.uuid4()), "workload": "mlp", "created_at": fmt.now_iso(),
            "status": "done", **kw}


def _points() -> list[Measurement]:
    graph = Measurement("cuda-graph", 8)
    graph.timing.step_ms = 0.137
    graph.energy.set(_energy(), idle=IdlePower(power_w=70.0, seconds=1.0, mj=70e3, edge_s=0.01))
    cpu = Measurement("eager", 8)
    cpu.timing.step_ms = 0.9
    cpu.energy.set(Energy.unavailable("no CUDA device"))
    return [graph, cpu]


def test_energy_is_typed_and_round_trips_through_json():
    graph, cpu = _points()
    j = graph.to_json()
    assert j["energy_mj_per_step"] == 17.0 and j["energy_above_idle_mj_per_step"] == -0.5
    assert j["energy_unavailable_reason"] is None
    assert j["details"]["energy_counter"] == "fake"
    assert len(j["details"]["energy_windows"]) == 2
    back = Measurement.from_json(j)
    assert back.energy.get() == graph.energy.get()
    assert back.energy.get().windows[1].mj == 1720.0
    assert back.energy.idle == IdlePower(power_w=70.0, seconds=1.0, mj=70e3, edge_s=0.01)
    assert j["details"]["energy_idle"] == {"power_w": 70.0, "seconds": 1.0, "mj": 70e3,
                                           "edge_s": 0.01}
    c = cpu.to_json()
    assert all(c[f] is None for f in ENERGY_NUMBER_FIELDS)  # absent, never 0
    assert c["energy_unavailable_reason"] == "no CUDA device"
    assert Measurement("eager", 1).energy.get() is None  # says nothing about energy


def test_bundle_is_version_5_and_a_version_4_bundle_reads_without_energy():
    doc = fmt.make_bundle({"device": "cuda"}, _run(), _points())
    assert doc["version"] == 7
    fmt.validate(doc)
    old = fmt.make_bundle({"device": "cuda"}, _run(), [Measurement("eager", 8)])
    old["version"] = 4
    for m in old["measurements"]:
        for f in (*ENERGY_NUMBER_FIELDS, "energy_unavailable_reason"):
            del m[f]
    got = fmt.validate(old)["measurements"][0]
    assert all(got[f] is None for f in ENERGY_NUMBER_FIELDS)
    assert Measurement.from_json(got).energy.get() is None


@pytest.mark.parametrize("field, value, match", [
    ("energy_mj_per_step", -1.0, "energy_mj_per_step -1.0 is negative"),
    ("avg_power_w", "hot", "avg_power_w 'hot' must be a number or null"),
    ("energy_unavailable_reason", 3, "energy_unavailable_reason 3 must be text or null"),
])
def test_bad_energy_fields_are_refused_naming_the_value(field, value, match):
    doc = fmt.make_bundle({"device": "cuda"}, _run(), _points())
    doc["measurements"][0][field] = value
    with pytest.raises(fmt.BundleError, match=match):
        fmt.validate(doc)


def test_energy_columns_store_export_and_query(any_url):
    engine = make_engine(any_url)
    doc = fmt.make_bundle({"device": "cuda"}, _run(), _points())
    run_id, _ = store.import_bundle(engine, doc)
    out = store.export_bundle(engine, run_id)
    assert out["measurements"] == fmt.validate(doc)["measurements"]
    by = {m.mode: m.energy for m in queries.run_points(engine, run_id)}
    assert by["cuda-graph"].energy_mj_per_step == 17.0
    assert by["cuda-graph"].energy_gain == 6.2
    assert by["eager"].unavailable_reason == "no CUDA device"
    assert by["eager"].energy_mj_per_step is None
    engine.dispose()
