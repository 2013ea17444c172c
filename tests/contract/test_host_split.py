"""Host and GPU apart (issue 39): the split of a step and the projection to a reference
launch cost, on synthetic figures and on the shipped H200 `mlp` sweep's rounds."""

from __future__ import annotations

import json

import pytest

from contract.host_split import check_rounds, projected_speedup, projected_step, split
from tests.conftest import ROOT

SAMPLE = ROOT / "data" / "samples" / "h200-mlp.json"


def test_a_launch_bound_step_is_mostly_launch_cost():
    s = split(step_ms=0.8, gpu_busy_ms=0.1, launches_per_step=64, launch_us=7.0)
    assert s.gpu_ms == pytest.approx(0.1) and s.launch_ms == pytest.approx(0.448)
    assert s.rest_ms == pytest.approx(0.8 - 0.1 - 0.448)
    assert s.share("launch") >= 0.5
    assert s.gpu_ms + s.launch_ms + s.rest_ms == pytest.approx(s.step_ms)


def test_a_gpu_bound_step_caps_the_launch_part_at_the_waiting_time():
    s = split(step_ms=1.2, gpu_busy_ms=1.1, launches_per_step=64, launch_us=7.0)
    assert s.share("gpu") >= 0.8
    assert s.launch_ms == pytest.approx(0.1) and s.rest_ms == pytest.approx(0.0)
    # Busy time past the step (one profiled step against the rounds' median) is capped.
    s = split(step_ms=1.0, gpu_busy_ms=1.3, launches_per_step=64, launch_us=7.0)
    assert (s.gpu_ms, s.launch_ms, s.rest_ms) == (1.0, 0.0, 0.0)


@pytest.mark.parametrize("missing", ["step_ms", "gpu_busy_ms", "launches_per_step",
                                     "launch_us"])
def test_no_split_without_every_figure(missing):
    kw = dict(step_ms=1.0, gpu_busy_ms=0.5, launches_per_step=10, launch_us=7.0)
    kw[missing] = None
    assert split(**kw) is None
    kw[missing] = True  # a bool is no figure
    assert split(**kw) is None


def test_the_projection_scales_the_host_and_keeps_the_gpu():
    # eager: host 0.76 ms a step at 7 us a launch, GPU 0.1 ms; the graph: host 0.01 ms,
    # GPU 0.108 ms. At 7 us the measured 7x; at 10 us a slower host: more.
    eager, graph = (0.10, 0.76, 7.0), (0.108, 0.0103, 7.0)
    assert projected_step(*eager, 7.0) == pytest.approx(0.76)
    assert projected_step(*eager, 14.0) == pytest.approx(1.52)
    assert projected_step(0.9, 0.76, 7.0, 7.0) == pytest.approx(0.9)  # GPU-bound stays
    at5, at10, at20 = (projected_speedup(eager, graph, u) for u in (5.0, 10.0, 20.0))
    assert at5 < at10 < at20
    assert at10 == pytest.approx(0.76 * 10 / 7 / 0.108)
    assert projected_step(0.1, 0.7, 0.0, 10.0) is None


def test_each_rounds_step_follows_its_launch_cost_on_the_h200_sample():
    """The model held against real rounds: the eager step of each round predicted from
    that round's probe, within 10% in at least 80% of the rounds at every batch size."""
    doc = json.loads(SAMPLE.read_text())
    checked = 0
    for m in doc["measurements"]:
        if m["mode"] != "eager":
            continue
        c = check_rounds(m["samples_ms"], m["launch_us_rounds"], m["gpu_busy_ms"],
                         m["details"]["host_ms_per_step"])
        assert c is not None
        assert c.within(0.10) >= 0.75, (m["batch_size"], c.within(0.10))
        assert c.median_error <= 0.08, m["batch_size"]
        checked += 1
    assert checked == 7


def test_rounds_that_do_not_pair_are_not_checked():
    assert check_rounds([1.0, 1.1], [7.0], 0.1, 0.9) is None
    assert check_rounds([], [], 0.1, 0.9) is None


def test_fill_writes_each_points_split_and_projection_and_round_trips():
    from contract import host_split
    from contract.measurement import Measurement

    def point(mode, step, gpu, host_launches, graph_launches, host_ms):
        m = Measurement(mode, 1)
        m.timing.step_ms, m.timing.host_ms_per_step = step, host_ms
        m.launches.gpu_busy_ms = gpu
        m.launches.host_launches_per_step = host_launches
        m.launches.graph_launches_per_step = graph_launches
        m.intervals.launch_us = 7.0
        return m

    ms = {"eager": point("eager", 0.76, 0.10, 64, 0, 0.76),
          "cuda-graph": point("cuda-graph", 0.12, 0.108, 0, 1, 0.0103)}
    host_split.fill(ms)
    e, g = ms["eager"], ms["cuda-graph"]
    assert e.split.launch_ms == pytest.approx(0.448) and e.split.speedup_at_launch_us is None
    assert g.split.launch_ms == pytest.approx(0.007)  # one graph launch at the probe's cost
    at = g.split.speedup_at_launch_us
    assert set(at) == {"5", "10", "20"} and at["5"] < at["10"] < at["20"]
    doc = g.to_json()
    assert doc["split_gpu_ms"] == pytest.approx(0.108)
    assert doc["details"]["speedup_at_launch_us"] == at
    back = Measurement.from_json(doc)
    assert back.split == g.split
    # A failed point gets no split.
    ms["cuda-graph"].status = "error"
    host_split.fill(ms)
    assert ms["cuda-graph"].split.gpu_ms is None
