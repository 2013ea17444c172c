"""Which GPU gains more from graphs (issue 47), on the shipped samples: the H100's default
mlp sweep (bundle 7) against the H200's (bundle 6), same torch; a published run left out."""

from __future__ import annotations

import pytest

from contract import bundle as fmt
from contract.measurement import Measurement
from contract.run_summary import RunHeader
from db.samples import SAMPLES
from pages.logic import gpu_gains


def _run(rid: int, name: str, source: str = "measured"):
    doc = fmt.read(SAMPLES / name)
    env = doc["environment"]
    header = RunHeader(id=rid, uuid=doc["run"]["uuid"], workload=doc["run"]["workload"],
                       status="done", gpu_name=env.get("gpu_name"),
                       torch_version=env.get("torch_version"), source=source)
    return header, [Measurement.from_json(m) for m in doc["measurements"]]


@pytest.fixture(scope="module")
def runs():
    return [_run(1, "h100-mlp.json"), _run(2, "h200-mlp-energy.json"),
            _run(3, "published-l40s-day25.json", "published")]


def test_every_shared_graph_point_gets_an_answer_and_an_overlap_is_none(runs):
    headers = [h for h, _ in runs]
    points = {h.id: p for h, p in runs}
    t = gpu_gains.gains_table(headers, points).set_index(["mode", "batch"])
    assert set(t.index) == {(m, b) for m in ("reduce-overhead", "cuda-graph")
                            for b in (1, 8, 64, 8192)}
    # batch 64: the H200's interval lies above the H100's, and stays ahead at a common
    # launch cost; batch 1: the intervals overlap, so neither is said to gain more
    row = t.loc[("cuda-graph", 64)]
    assert row["gains more"] == "NVIDIA H200"
    assert row["why"].startswith("not the launch cost: still more at 10 us a launch")
    assert t.loc[("cuda-graph", 1)]["gains more"] == "neither: the intervals overlap"
    assert "GPU busy" in t.loc[("cuda-graph", 1)]["why"]
    # the published L40S has no interval or launch cost: left out, and named
    assert not any("L40S" in c for c in t.columns)
    [published] = gpu_gains.left_out(headers)
    assert "L40S" in published


def test_the_host_is_named_where_a_common_launch_cost_evens_the_gain():
    a = gpu_gains.Side(1, "A", None, at=5.0, busy_ms=0.1, launch_us=6.0)
    b = gpu_gains.Side(2, "B", None, at=4.9, busy_ms=0.1, launch_us=11.0)
    assert gpu_gains._why(a, b, 10.0).startswith("the host's launch cost (6.0 against 11.0")


def test_runs_on_one_gpu_get_no_answer(runs):
    (h, p), _, _ = runs
    other = RunHeader(id=9, uuid="x", workload="mlp", status="done", gpu_name=h.gpu_name,
                      torch_version=h.torch_version, source="measured")
    assert gpu_gains.gains_table([h, other], {1: p, 9: p}).empty


def test_the_summary_counts_points_not_batch_sizes():
    # 'at 8 the intervals overlap' read as batch size 8: the count says what it counts.
    import pandas as pd

    def table(answers):
        return pd.DataFrame({"GPU": ["#1 H100", "#2 H200"] * len(answers),
                             "gains more": [a for a in answers for _ in (0, 1)]})

    assert gpu_gains.summary(table([gpu_gains.OVERLAP] * 8)).endswith(
        "; at all 8 mode-and-batch points the intervals overlap, so neither is said to.")
    won = pd.DataFrame({"GPU": ["#1 H100", "#2 H200", "#1 H100", "#2 H200"],
                        "gains more": ["no", "yes, also at 10 us", gpu_gains.OVERLAP,
                                       gpu_gains.OVERLAP]})
    assert gpu_gains.summary(won) == (
        "The H200 gains more at 1 of 2 mode-and-batch points (1 of them also at the common "
        "launch cost); at 1 of the 2 mode-and-batch points the intervals overlap, so "
        "neither is said to.")
