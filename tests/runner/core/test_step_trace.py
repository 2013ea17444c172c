"""One profiled step per point (issue 12): choosing the step from synthetic profiler events
(the runner's torch-free Event seam), bounding it, the idle-gap arithmetic, the Chrome
trace / Perfetto file, and the trace's trip through bundle and database."""

from __future__ import annotations

import json

import pytest

from contract import bundle as fmt
from contract import trace as tr
from contract.limits import MAX_TRACE_EVENTS
from contract.trace import PointTrace
from db import queries, store
from db.engine import make_engine
from runner.core.profiling import Event, count
from tests.synthetic import sweep_bundle


def step_events(i: int, t0: float, kernel_us: float, *, graph: bool = False,
                corr: bool = True, lag: float = 0.0) -> list[Event]:
    """Step i: a host range of 100 us; two launches (or one cudaGraphLaunch) and two
    kernels of `kernel_us`, the second on another stream, `lag` us after its launch."""
    ev = [Event("ProfilerStep*", False, t0, t0 + 100),
          Event("aten::mm", False, t0 + 1, t0 + 30),  # an op, not a launch
          Event("ProfilerStep*", True, t0, t0 + 200)]  # the GPU-side annotation
    ids = (i * 10 + 1, i * 10 + 2)
    if graph:
        ev.append(Event("cudaGraphLaunch", False, t0 + 5, t0 + 15,
                        correlation=ids[0] if corr else None))
        ids = (ids[0], ids[0])
    else:
        ev += [Event("cudaLaunchKernel", False, t0 + 5, t0 + 10,
                     correlation=ids[0] if corr else None),
               Event("cudaLaunchKernel", False, t0 + 20, t0 + 25,
                     correlation=ids[1] if corr else None)]
    ev += [Event("void gemm_kernel<float, 4>(float*, int)", True, t0 + 12,
                 t0 + 12 + kernel_us, stream=7, correlation=ids[0] if corr else None),
           Event("triton_poi_fused_relu_0", True, t0 + 30 + lag, t0 + 30 + lag + kernel_us,
                 stream=13, correlation=ids[1] if corr else None)]
    return ev


def test_the_step_kept_is_not_the_first_and_matches_the_mean_busy_time():
    # Step 1 carries the profiler's start-up (long kernels); steps 2 and 3 differ a little;
    # the last one synchronizes (closest to the mean here, but never kept).
    evs = (step_events(0, 0, 40) + step_events(1, 1000, 10) + step_events(2, 2000, 14)
           + step_events(3, 3000, 30))
    t = tr.select_step(evs)
    mean_us = count(evs, steps=4).gpu_busy_ms * 1e3  # (80 + 20 + 28 + 60) / 4 = 47
    assert t["step"] == 3 and t["steps"] == 4  # 28 is closer to 47 than 20 is
    assert t["match"] == "correlation" and t["dropped"] == 0
    assert t["cpu_us"] == [0.0, 100.0] and t["gpu_us"] == [12.0, 44.0]
    rows = tr.events(t)
    assert [r.name for r in rows if r.lane == "cpu"] == ["cudaLaunchKernel"] * 2
    gpu = [r for r in rows if r.lane == "gpu"]
    assert [r.name for r in gpu] == ["gemm_kernel", "triton_poi_fused_relu_0"]
    assert [r.stream for r in gpu] == [7, 13] and tr.kernel_sum_us(t) == 28
    assert abs(tr.kernel_sum_us(t) - mean_us) < abs(20 - mean_us)
    tr.validate_trace(t)


def test_kernels_belong_to_the_step_that_launched_them_even_when_they_run_later():
    # GPU-bound: the second kernel of each step runs while the host is in the next step.
    evs = step_events(0, 0, 10, lag=1500) + step_events(1, 1000, 10, lag=1500)
    t = tr.select_step(evs)
    assert t["step"] == 2 and len(t["gpu"]) == 2
    assert max(r.end_us for r in tr.events(t)) == pytest.approx(30 + 1500 + 10)
    # Without correlation ids, time decides: a kernel is in the last step begun before it.
    t = tr.select_step(step_events(0, 0, 10, corr=False) + step_events(1, 1000, 10,
                                                                      corr=False))
    assert t["match"] == "time" and t["step"] == 2 and len(t["gpu"]) == 2


def test_a_graph_step_is_one_graph_launch_before_its_kernels():
    evs = step_events(0, 0, 5, graph=True) + step_events(1, 1000, 5, graph=True)
    t = tr.select_step(evs)
    kinds = [(r.lane, r.kind) for r in tr.events(t)]
    assert kinds == [("cpu", "graph"), ("gpu", "kernel"), ("gpu", "kernel")]


def test_no_step_range_or_no_gpu_work_keeps_no_trace():
    assert tr.select_step([Event("cudaLaunchKernel", False, 0, 1),
                           Event("k", True, 2, 3)]) is None
    assert tr.select_step([Event("ProfilerStep*", False, 0, 10)]) is None


def test_bounding_keeps_the_earliest_events_shares_the_budget_and_counts_the_rest():
    cpu = [("cudaLaunchKernel", float(i), 1.0) for i in range(100)]
    gpu = [(f"k{i}", float(i), 0.5, 7) for i in range(2900)]
    t = tr.build(cpu, gpu, cpu_end=3000, gpu_span=[0, 2900])
    assert len(t["cpu"]) == 100 and len(t["gpu"]) == MAX_TRACE_EVENTS - 100
    assert t["dropped"] == 1000 and t["gpu"][-1][1] == MAX_TRACE_EVENTS - 101
    both = tr.build(cpu * 30, gpu, cpu_end=3000, gpu_span=[0, 2900])
    assert len(both["cpu"]) == len(both["gpu"]) == MAX_TRACE_EVENTS // 2
    assert both["dropped"] == 3000 + 2900 - MAX_TRACE_EVENTS
    tr.validate_trace(t)
    tr.validate_trace(both)
    assert tr.short_name("void at::native::vectorized_elementwise_kernel<4, "
                         "at::native::(anonymous namespace)::f>(int, float)") == (
        "at::native::vectorized_elementwise_kernel")


def test_idle_gaps_count_overlapping_kernels_on_two_streams_once():
    t = tr.build([("cudaLaunchKernel", 0.0, 5.0)],
                 [("a", 10.0, 20.0, 7), ("b", 20.0, 20.0, 13),  # 10..40 busy, once
                  ("c", 50.0, 10.0, 7), ("d", 52.0, 3.0, 13)],  # 50..60 busy
                 cpu_end=80.0, gpu_span=[10.0, 60.0])
    g = tr.gpu_idle(t)
    # the host range runs on to 80 us, but the step's own span ends with its last kernel
    assert g.busy_us == 40 and g.span_us == 60 and g.queued is None
    assert g.gaps == [(0.0, 10.0), (40.0, 50.0)] and g.idle_us == 20
    assert tr.idle_text(t) == "GPU idle 0.020 ms of 0.060 ms profiled"
    assert tr.kernel_sum_us(t) == 53  # the sum, as gpu_busy_ms counts, is not the union
    assert tr.merge([(0, 1), (1, 2), (5, 6)]) == [(0, 2), (5, 6)]
    cpu_only = tr.build([("cudaLaunchKernel", 0.0, 5.0)], [], cpu_end=9.0, gpu_span=None)
    assert tr.gpu_idle(cpu_only).idle_us is None and tr.idle_text(cpu_only) == (
        "no GPU lane")


def test_the_lanes_trim_the_profilers_lead_in_and_name_the_timed_step():
    from pages.charts import timeline_chart
    from pages.logic import timeline

    # The H200's cuda-graph at batch 8: the profiled range starts 300 us before the
    # step's first launch (ProfilerStep bookkeeping), the host launches at 300-320 us and
    # runs ahead; the GPU is still busy with the previous step until 800 us, then replays
    # 140 us of kernels with one 10 us gap. Timed: 0.136 ms.
    t = tr.build([("cudaMemcpyAsync", 300.0, 5.0), ("cudaGraphLaunch", 306.0, 14.0)],
                 [("copy", 800.0, 4.0, 7), ("k1", 804.0, 60.0, 7), ("k2", 874.0, 66.0, 7)],
                 cpu_end=330.0, gpu_span=[800.0, 940.0])
    assert tr.window(t) == (0.0, 940.0)  # what the lanes used to span: 0.94 ms
    assert tr.step_span(t) == (300.0, 940.0)
    g = tr.gpu_idle(t)
    assert g.queued == (300.0, 800.0) and g.step_us == 140 and g.idle_us == 10
    assert tr.idle_text(t, 0.136) == ("GPU idle 0.010 ms of 0.140 ms profiled · 0.500 ms "
                                      "before it queued behind the previous step · timed "
                                      "step 0.136 ms (median)")
    # on the chart: time 0 is the first launch, nothing from the lead-in is drawn
    f = timeline.frame(t)
    assert f["start_us"].min() == 0 and f["end_us"].max() == pytest.approx(640)
    gaps = timeline.gaps_frame(t)
    assert list(gaps["gap"]) == ["queued", "idle"]
    assert gaps.iloc[0][["start_us", "end_us"]].tolist() == [0, 500]
    spec = timeline_chart.timeline_spec([("cuda-graph", t, 0.136)])
    pair = spec["vconcat"][0]
    assert "timed step 0.136 ms" in pair["title"]["subtitle"]
    assert pair["layer"][-1]["encoding"]["x"]["scale"]["domain"] == [0, 640.0]
    # a launch-bound step (the GPU waits on the host) is not queued: idle from the launch
    eager = tr.build([("cudaLaunchKernel", 50.0, 10.0), ("cudaLaunchKernel", 70.0, 10.0)],
                     [("a", 62.0, 5.0, 7), ("b", 82.0, 5.0, 7)], cpu_end=95.0,
                     gpu_span=[62.0, 87.0])
    e = tr.gpu_idle(eager)
    assert e.queued is None and tr.step_span(eager) == (50.0, 87.0)
    assert e.gaps == [(50.0, 62.0), (67.0, 82.0)] and e.step_us == 37
    # where the two step times differ by more than half, the reason stands beside them
    assert tr.idle_text(eager, 0.020).endswith(
        "timed step 0.020 ms (median) · profiled longer: the profiler slows the host's calls")
    assert tr.idle_text(eager, 0.067).endswith(
        "profiled shorter: host work before the first launch is not drawn")
    assert tr.idle_text(eager, 0.037).endswith("timed step 0.037 ms (median)")


def test_the_perfetto_file_is_chrome_trace_json_with_one_x_event_per_event():
    eager = sweep_bundle(batches=(8,), modes=("eager",), traces=True)["measurements"][0]
    graph = sweep_bundle(batches=(8,), modes=("cuda-graph",), traces=True)["measurements"][0]
    doc = json.loads(json.dumps(tr.chrome_trace([("eager b8", eager["trace"]),
                                                 ("cuda-graph b8", graph["trace"])])))
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == 128 + 65
    assert all({"name", "ts", "dur", "pid", "tid", "cat"} <= set(e) for e in xs)
    assert all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 for e in xs)
    meta = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_name"}
    assert meta == {(1, 0): "CPU launches", (1, 1): "GPU stream 7",
                    (2, 0): "CPU launches", (2, 1): "GPU stream 7"}
    procs = [e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"]
    assert procs == ["eager b8", "cuda-graph b8"]
    assert {e["cat"] for e in xs if e["pid"] == 2 and e["tid"] == 0} == {"graph"}


@pytest.mark.parametrize("mutate, expected", [
    (lambda t: t.update(cpu=[[99, 0.0, 1.0]]), "name index 99"),
    (lambda t: t.update(gpu=[[0, 0.0, -1.0, 7]]), "duration -1.0"),
    (lambda t: t.update(gpu=[[0, 0.0, 1.0, "s"]]), "stream 's'"),
    (lambda t: t.update(dropped=-1), "dropped -1"),
    (lambda t: t.update(cpu=[[0, 0.0, 1.0]] * (MAX_TRACE_EVENTS + 1)), "more than"),
    (lambda t: t.update(gpu_us=[5, 1]), "gpu_us [5, 1]"),
    (lambda t: t.update(match="guess"), "match 'guess'"),
])
def test_a_bad_trace_in_a_bundle_is_refused_naming_the_value(mutate, expected):
    doc = sweep_bundle(batches=(8,), modes=("eager",), traces=True)
    mutate(doc["measurements"][0]["trace"])
    with pytest.raises(fmt.BundleError, match="measurement 0: trace") as e:
        fmt.validate(doc)
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_traces_round_trip_through_the_database_and_older_bundles_have_none(any_url):
    engine = make_engine(any_url)
    doc = sweep_bundle(batches=(1, 8), modes=("eager", "cuda-graph"), traces=True)
    run_id, _ = store.import_bundle(engine, doc)
    got = queries.point_traces(engine, [run_id], 8)
    assert [(g.mode, g.trace) for g in got] == [
        (m["mode"], m["trace"]) for m in sorted(doc["measurements"], key=lambda m: m["mode"])
        if m["batch_size"] == 8]
    back = store.export_bundle(engine, run_id)
    assert back["version"] == fmt.VERSION == 7
    assert store.import_bundle(engine, back) == (run_id, False)  # the same content
    old = sweep_bundle(batches=(8,), modes=("eager",), intervals=False)  # version 2
    old_id, _ = store.import_bundle(engine, old)
    assert queries.point_traces(engine, [old_id], 8) == []
    assert store.export_bundle(engine, old_id)["measurements"][0]["trace"] is None
    store.delete_run(engine, run_id)
    assert queries.point_traces(engine, [run_id], 8) == []


def test_the_html_report_draws_the_headline_batch_timeline():
    from pages.charts import report
    from pages.logic import timeline

    doc = sweep_bundle(batches=(1, 8, 64), modes=("eager", "cuda-graph"), traces=True)
    from tests.records import header as record_header
    from tests.records import points_of

    pts = points_of(doc)
    batch = timeline.headline_batch(pts)
    assert batch in (1, 8, 64)
    items = [PointTrace(run_id=1, mode=m["mode"], batch_size=batch, trace=m["trace"])
             for m in doc["measurements"] if m["batch_size"] == batch]
    header = record_header()
    html = report.html_report(header, pts, None, items)
    assert f"One step at batch size {batch}" in html and "id='chart-timeline'" in html
    assert "GPU idle" in html and "<script" not in html
    # the profiled figure with the timed one beside it, and the note on why they differ
    assert "timed step" in html and "Two step times per point, on purpose" in html
    assert "chart-timeline" not in report.html_report(header, pts)


def test_unpaired_kernels_fall_back_to_time_and_a_broken_trace_is_not_kept():
    import dataclasses

    from runner.core.profiling import keep_trace

    evs = step_events(0, 0, 5, graph=True) + step_events(1, 1000, 5, graph=True)
    half = [dataclasses.replace(e, correlation=None) if e.name.startswith("triton") else e
            for e in evs]
    t = tr.select_step(half)
    assert t["match"] == "mixed" and len(t["gpu"]) == 2
    bad = keep_trace(evs + [Event("cudaLaunchKernel", False, 1050, float("nan"))])
    assert bad.timeline is None and bad.error is not None
    assert keep_trace(evs).timeline["step"] == 2


def test_a_click_on_a_speedup_point_picks_its_batch_size():
    from contract.speedups import speedups
    from pages.charts import run_charts, timeline_chart
    from pages.logic import timeline
    from tests.records import points_of

    pts = points_of(sweep_bundle(batches=(1, 8, 64)))
    chart = timeline_chart.clickable(run_charts.speedup_chart(speedups(pts)))
    spec = chart.to_dict()
    picks = spec["params"]  # hoisted by Altair, naming the view (layer) it lives on
    assert [(p["name"], p["select"]["fields"]) for p in picks] == [
        (timeline.PICK, ["batch_size"])]
    on = [layer["mark"]["type"] for layer in spec["layer"]
          if layer.get("name") in picks[0]["views"]]
    assert on == ["point"]
    assert timeline.picked_batch({timeline.PICK: [{"batch_size": 64}]}) == 64
    assert timeline.picked_batch({timeline.PICK: []}) is None
    assert timeline.picked_batch(None) is None


def test_a_bundle_keeps_traces_within_its_budget_and_refuses_more(monkeypatch):
    doc = sweep_bundle(batches=(1, 8), modes=("eager", "cuda-graph"), traces=True)
    per_point = [len(m["trace"]["cpu"]) + len(m["trace"]["gpu"]) for m in doc["measurements"]]
    monkeypatch.setattr(fmt, "MAX_BUNDLE_TRACE_EVENTS", sum(per_point[:2]))
    kept = fmt.make_bundle(doc["environment"], doc["run"], doc["measurements"])
    assert [m["trace"] is not None for m in kept["measurements"]] == [True, True, False,
                                                                      False]
    fmt.validate(kept)  # the points stay, their later traces are left out
    with pytest.raises(fmt.BundleError, match=f"{sum(per_point)} trace events, more than"):
        fmt.validate(doc)
