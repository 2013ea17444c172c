"""The dashboard's maths, links, metrics table, queries and sample seeding, as plain
functions (no streamlit)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from contract import bundle as fmt
from contract.run_summary import header_of
from db import queries
from db.samples import SAMPLES, seed_if_empty
from db.store import import_bundle
from pages.logic import analysis, board, comparing, links, metrics, noise, points_table
from tests.synthetic import sweep_bundle

PUBLISHED = SAMPLES / "published-l40s-day25.json"


def pts(rows, run_id=1):
    """A points frame from (mode, batch, step_ms, extra-dict) tuples."""
    out = []
    for mode, batch, step, *extra in rows:
        m = fmt.empty_measurement(mode, batch)
        m.update(step_ms=step, run_id=run_id)
        if step is None:
            m["status"] = "error"
            m["message"] = "boom"
        if extra:
            m.update(extra[0])
        out.append(m)
    return pd.DataFrame(out)


# --- speedups ---------------------------------------------------------------------------

def test_speedup_is_eager_over_mode_per_batch_and_skips_failed_points():
    p = pts([("eager", 8, 2.0), ("compile", 8, 1.0), ("eager", 64, 3.0),
             ("compile", 64, None), ("cuda-graph", 128, 0.5)])
    sp = analysis.speedups(p)
    got = {(r.mode, r.batch_size): r.speedup for r in sp.itertuples()}
    assert got == {("eager", 8): 1.0, ("eager", 64): 1.0, ("compile", 8): 2.0}


def test_speedup_uses_a_points_own_eager_reference():
    p = pts([("eager", 8, 1.124), ("cuda-graph", 8, 0.113, {"details":
                                                           {"eager_reference_ms": 1.116}})])
    sp = analysis.speedups(p).set_index("mode")
    assert sp.at["cuda-graph", "speedup"] == pytest.approx(1.116 / 0.113)
    assert sp.at["cuda-graph", "eager_ms"] == pytest.approx(1.116)


def test_largest_speedup_per_mode_and_where():
    p = pts([("eager", 8, 2.0), ("eager", 64, 4.0), ("compile", 8, 1.0), ("compile", 64, 1.0),
             ("reduce-overhead", 8, 0.5), ("reduce-overhead", 64, 2.0)])
    best = analysis.largest_speedups(p).set_index("mode")
    assert best.at["compile", "batch_size"] == 64 and best.at["compile", "speedup"] == 4.0
    assert best.at["reduce-overhead", "batch_size"] == 8
    assert best.at["reduce-overhead", "speedup"] == 4.0
    assert "eager" not in best.index


def test_no_speedup_without_any_ok_point():
    p = pts([("eager", 8, None), ("compile", 8, None)])
    assert analysis.speedups(p).empty and analysis.largest_speedups(p).empty
    assert analysis.break_even(p).status == "unknown"
    assert analysis.payback(p).empty and analysis.time_split(p).empty


# --- break-even -------------------------------------------------------------------------

def _ro_vs_compile(ratios):
    rows = []
    for b, r in ratios.items():
        rows += [("compile", b, r * 1.0), ("reduce-overhead", b, 1.0)]
    return pts(rows)


def test_break_even_where_gain_drops_below_threshold_for_good():
    be = analysis.break_even(_ro_vs_compile({8: 5.0, 64: 1.05, 512: 1.3, 4096: 1.05,
                                             8192: 1.0}))
    # 64 dips below but 512 gains again: the break-even is where the tail starts.
    assert (be.status, be.batch_size, be.last_gaining) == ("crosses", 4096, 512)


def test_break_even_never_and_always():
    assert analysis.break_even(_ro_vs_compile({8: 3.0, 64: 1.2})).status == "never-below"
    be = analysis.break_even(_ro_vs_compile({8: 1.05, 64: 1.0}))
    assert (be.status, be.batch_size) == ("always-below", 8)


def test_break_even_of_the_published_figures():
    p = pd.DataFrame(fmt.read(PUBLISHED)["measurements"]).assign(run_id=1)
    be = analysis.break_even(p)
    assert (be.status, be.batch_size, be.last_gaining) == ("crosses", 8192, 8)
    assert dict(be.ratios)[8] == pytest.approx(0.960 / 0.119)


# --- payback, time split ------------------------------------------------------------------

def test_payback_steps_round_up_and_never_when_slower():
    p = pts([("eager", 8, 2.0), ("compile", 8, 1.5, {"setup_s": 1.0}),
             ("reduce-overhead", 8, 2.5, {"setup_s": 3.0}), ("cuda-graph", 8, 1.0)])
    pay = analysis.payback(p).set_index("mode")
    assert pay.at["compile", "payback_steps"] == math.ceil(1000 / 0.5)
    assert bool(pay.at["reduce-overhead", "never"])
    assert pd.isna(pay.at["reduce-overhead", "payback_steps"])
    assert pd.isna(pay.at["cuda-graph", "payback_steps"])  # setup unknown, not 0
    assert not bool(pay.at["cuda-graph", "never"])


def test_time_split_busy_fraction_and_idle():
    p = pts([("eager", 8, 2.0, {"gpu_busy_ms": 0.5}), ("cuda-graph", 8, 0.5,
                                                      {"gpu_busy_ms": 0.52}),
             ("compile", 8, 1.0)])
    ts = analysis.time_split(p).set_index("mode")
    assert ts.at["eager", "busy_fraction"] == pytest.approx(0.25)
    assert ts.at["eager", "idle_ms"] == pytest.approx(1.5)
    assert ts.at["cuda-graph", "idle_ms"] == 0  # noise above the step is not negative idle
    assert pd.isna(ts.at["compile", "busy_fraction"])


# --- several runs -------------------------------------------------------------------------

def headers(*rows):
    base = {"kind": "sweep", "workload": "mlp", "workload_params": {"depth": 2}, "dtype": "float32",
            "source": "measured", "gpu_name": "G", "torch_version": "2.0"}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_comparability_names_each_differing_field_and_run():
    same = headers({"id": 1}, {"id": 2})
    assert comparing.comparability(same) == []
    # dtype recorded among the parameters on one side only is not a difference.
    assert comparing.comparability(headers({"id": 1}, {"id": 2, "workload_params": {
        "depth": 2, "dtype": "float32"}})) == []
    diff = headers({"id": 1}, {"id": 2, "workload_params": {"depth": 4}, "dtype": "bfloat16"})
    w = comparing.comparability(diff)
    assert len(w) == 2
    assert "workload parameters" in w[0] and "run 2: depth=4" in w[0]
    assert "dtype" in w[1] and "bfloat16" in w[1]


def test_ratio_table_is_baseline_over_run_and_keeps_gaps():
    h = headers({"id": 1, "gpu_name": "A"}, {"id": 2, "gpu_name": "B"})
    h3 = headers({"id": 1, "gpu_name": "A"}, {"id": 2, "gpu_name": "B"},
                 {"id": 3, "gpu_name": "C"})
    p = pd.concat([pts([("eager", 8, 2.0), ("eager", 64, 4.0), ("eager", 512, 5.0)], run_id=1),
                   pts([("eager", 8, 1.0), ("eager", 64, None)], run_id=2),
                   pts([("eager", 64, 8.0)], run_id=3)])
    t = comparing.ratio_table(p, h3, baseline=1).set_index("batch_size")
    col = "#2 B · torch 2.0 vs #1"
    assert t.at[8, col] == 2.0
    assert pd.isna(t.at[64, col])
    assert t.at[64, "#3 C · torch 2.0 vs #1"] == 0.5  # run 3 takes twice as long
    assert 512 not in t.index  # one run only: no ratio to show
    assert "#1 A · torch 2.0 vs #2" in list(comparing.ratio_table(p, h, baseline=2).columns)
    assert t.at[8, f"{col} 95%"] == "no interval"  # no step-time intervals in these points


def test_environment_diff_lists_only_differences():
    h = headers({"id": 1, "gpu_name": "A"}, {"id": 2, "gpu_name": "B", "source": "published"})
    d = comparing.environment_diff(h)
    assert set(d["field"]) == {"gpu_name", "source"}
    counts = comparing.environment_diff(
        headers({"id": 1, "sm_count": 132.0}, {"id": 2, "sm_count": float("nan")}))
    assert list(counts.iloc[0, 1:3]) == ["132", "—"]
    assert len(comparing.environment_diff(h, only_differences=False)) > len(d)


def test_series_name_marks_published_runs():
    assert comparing.series_name({"gpu_name": "NVIDIA L40S", "torch_version": "2.8.0",
                                 "source": "published"}) == "NVIDIA L40S · torch 2.8.0 (published)"
    assert comparing.series_name({"gpu_name": None, "torch_version": "2.13"}) == "CPU · torch 2.13"
    # pandas hands a missing gpu_name back as NaN, which is truthy: never "nan".
    assert comparing.series_name({"gpu_name": float("nan"), "hostname": "box",
                                 "torch_version": "2.13"}) == "CPU (box) · torch 2.13"


def test_status_marks_show_message():
    p = pts([("eager", 8, 1.0), ("compile", 8, None)])
    assert list(points_table.status_marks(p)) == ["ok", "✖ error: boom"]


# --- intervals and noise -------------------------------------------------------------------

def ci(sp, lo, hi, **extra):
    """Interval fields of one non-eager point (speedup and its bounds)."""
    return {"speedup": sp, "speedup_ci_low": lo, "speedup_ci_high": hi, **extra}


# cuda-graph over eager: batch 4 is a spike (12.9x) whose interval is wide; batch 8's lead
# is the one to be sure of. Eager 1.0 ms everywhere.
SPIKE = [("eager", b, 1.0) for b in (1, 4, 8, 16, 32)] + [
    ("cuda-graph", 1, 0.24, ci(4.1, 4.0, 4.2)),
    ("cuda-graph", 4, 0.078, ci(12.9, 6.0, 20.0)),
    ("cuda-graph", 8, 0.125, ci(8.0, 7.8, 8.2)),
    ("cuda-graph", 16, 0.13, ci(7.7, 7.0, 8.5)),
    ("cuda-graph", 32, 0.2, ci(5.0, 4.9, 5.1))]


def test_speedups_use_the_stored_paired_ratio_and_its_interval():
    p = pts([("eager", 8, 2.0), ("compile", 8, 1.0, ci(1.9, 1.8, 2.05)), ("cuda-graph", 8, 0.5)])
    sp = analysis.speedups(p).set_index("mode")
    assert sp.at["compile", "speedup"] == 1.9  # the paired median, not 2.0 / 1.0
    assert (sp.at["compile", "speedup_ci_low"], sp.at["compile", "speedup_ci_high"]) == (1.8, 2.05)
    assert sp.at["cuda-graph", "speedup"] == 4.0  # no stored figure: ratio of medians
    assert pd.isna(sp.at["cuda-graph", "speedup_ci_low"])  # and no invented interval
    assert sp.at["eager", "speedup"] == 1.0 and pd.isna(sp.at["eager", "speedup_ci_high"])


def test_largest_speedup_ranks_by_lower_bound_and_reports_ties():
    best = analysis.largest_speedups(pts(SPIKE)).set_index("mode")
    # By median batch 4 (12.9x) would win; its lower bound (6.0) is below batch 8's (7.8).
    assert best.at["cuda-graph", "batch_size"] == 8
    assert best.at["cuda-graph", "speedup"] == 8.0
    # 8.0x lies inside batch 4's and batch 16's intervals, not batch 1's or 32's.
    assert best.at["cuda-graph", "ties"] == (4, 8, 16)
    assert analysis.batch_span((4, 8, 16), [1, 4, 8, 16, 32]) == "batches 4-16"
    assert analysis.batch_span((4, 16), [1, 4, 8, 16, 32]) == "batches 4, 16"
    assert analysis.batch_span((8,), [1, 8]) == "batch 8"


def test_largest_speedup_without_intervals_keeps_the_median_ranking():
    p = pd.DataFrame(fmt.validate(sweep_bundle(intervals=False))["measurements"]).assign(
        run_id=1)
    best = analysis.largest_speedups(p).set_index("mode")
    sp = analysis.speedups(p)
    graph = sp[sp["mode"] == "cuda-graph"]
    assert best.at["cuda-graph", "speedup"] == graph["speedup"].max()
    assert best["speedup_ci_low"].isna().all() and best["speedup_ci_high"].isna().all()
    assert all(len(t) == 1 for t in best["ties"])


def test_ratio_interval_and_within_noise_verdict():
    assert noise.ratio_interval(1.9, 2.1, 0.95, 1.05) == pytest.approx((1.9 / 1.05,
                                                                           2.1 / 0.95))
    assert noise.ratio_interval(1.0, None, 1.0, 1.0) is None
    assert noise.ratio_verdict((1.81, 2.21)) == "faster"
    assert noise.ratio_verdict((0.4, 0.6)) == "slower"
    assert noise.ratio_verdict((0.97, 1.08)) == "within noise"
    assert noise.ratio_verdict(None) == "no interval"
    # Two runs whose step-time intervals overlap: their ratio interval includes 1.0.
    overlap = noise.ratio_interval(1.00, 1.10, 1.05, 1.20)
    assert overlap[0] <= 1 <= overlap[1]


def test_ratio_table_marks_ratios_within_noise():
    h = headers({"id": 1, "gpu_name": "A"}, {"id": 2, "gpu_name": "B"})
    iv = lambda lo, hi: {"step_ms_ci_low": lo, "step_ms_ci_high": hi}  # noqa: E731
    p = pd.concat([pts([("eager", 8, 2.0, iv(1.9, 2.1)), ("eager", 64, 1.0, iv(0.95, 1.05)),
                        ("eager", 512, 1.0)], run_id=1),
                   pts([("eager", 8, 1.0, iv(0.95, 1.05)), ("eager", 64, 0.97, iv(0.9, 1.02)),
                        ("eager", 512, 1.0)], run_id=2)])
    t = comparing.ratio_table(p, h, baseline=1).set_index("batch_size")
    col = "#2 B · torch 2.0 vs #1 95%"
    assert t.at[8, col] == "faster (1.81-2.21x)"
    assert t.at[64, col].startswith("within noise (")  # 1.03x, but the intervals overlap
    assert t.at[512, col] == "no interval"


def test_point_badges_and_run_noise_summary():
    p = pd.DataFrame(fmt.validate(sweep_bundle(
        batches=(1, 8), overrides={("cuda-graph", 8): {"noisy": True, "stop_reason": "budget"},
                                   ("compile", 1): {"host_unstable": True}},
        failing={("eager", 8): "boom"}))["measurements"]).assign(run_id=3)
    keys = zip(p["mode"], p["batch_size"], strict=True)
    badges = dict(zip(keys, noise.point_badges(p), strict=True))
    assert badges[("cuda-graph", 8)] == "noisy"
    assert badges[("compile", 1)] == "host unstable"
    assert badges[("eager", 8)] == "" and badges[("eager", 1)] == "ok"
    counts = noise.noise_counts(p)
    assert counts.loc[3].to_dict() == {"ok_points": 7, "interval_points": 7,
                                       "noisy_points": 1, "unstable_points": 1}
    assert noise.noise_summary(noise.counts_of(counts.loc[3])) == (
        "noisy", "1 of 7 points noisy, 1 of 7 points host unstable")
    clean = pd.DataFrame(fmt.validate(sweep_bundle(batches=(8,)))["measurements"])
    assert noise.noise_summary(noise.counts_of(
        noise.noise_counts(clean.assign(run_id=1)).loc[1]))[0] \
        == "ok"
    # Flags read back from the database as 1.0 / NaN beside nulls count the same.
    assert list(noise.point_badges(clean.assign(run_id=1, noisy=1.0)))[0] == "noisy"


@pytest.mark.parametrize("doc", [fmt.read(PUBLISHED), sweep_bundle(intervals=False)],
                         ids=["published-v1", "synthetic-v2"])
def test_old_runs_have_no_interval_badge(doc):
    p = pd.DataFrame(fmt.validate(doc)["measurements"]).assign(run_id=1)
    assert set(noise.point_badges(p)) <= {"no interval", ""}
    assert "no interval" in set(noise.point_badges(p))
    counts = noise.counts_of(noise.noise_counts(p).loc[1])
    assert noise.noise_summary(counts) == ("no interval", "no interval")
    assert noise.launch_cost(p) is None


def test_launch_cost_time_split_and_environment_diff_row():
    a = pd.DataFrame(fmt.validate(sweep_bundle(batches=(1, 8), launch_us=12.0, overrides={
        ("compile", 8): {"launch_us": 19.0}, ("eager", 1): {"launch_us": 7.0}}))
        ["measurements"]).assign(run_id=1)
    cost = noise.launch_cost(a)
    assert (cost.median, cost.low, cost.high, cost.points) == (12.0, 7.0, 19.0, 8)
    ts = analysis.time_split(a).set_index(["mode", "batch_size"])
    # eager: 64 launches x 12 us = 0.768 ms of host launch time per step.
    assert ts.at[("eager", 8), "host_launch_ms"] == pytest.approx(64 * 12.0 / 1000)
    b = pd.DataFrame(fmt.validate(sweep_bundle(batches=(8,), intervals=False))
                     ["measurements"]).assign(run_id=2)
    assert analysis.time_split(b)["host_launch_ms"].isna().all()  # unknown, not 0
    h = headers({"id": 1, "gpu_name": "A"}, {"id": 2, "gpu_name": "B"})
    diff = comparing.environment_diff(h, points=pd.concat([a, b])).set_index("field")
    row = diff.loc[comparing.LAUNCH_FIELD]
    assert list(row.iloc[:2]) == ["12.0 us (7.0-19.0)", "—"] and row["differs"]
    assert comparing.LAUNCH_FIELD not in set(comparing.environment_diff(h)["field"])


def test_break_even_prefers_the_paired_ratio_over_compile():
    vs = {"details": {"vs_compile": {"median": 1.05, "low": 1.0, "high": 1.1}}}
    p = pts([("compile", 8, 3.0), ("reduce-overhead", 8, 1.0),
             ("compile", 64, 1.2), ("reduce-overhead", 64, 1.0, vs)])
    be = analysis.break_even(p)
    assert dict(be.ratios) == {8: 3.0, 64: 1.05}
    assert (be.status, be.batch_size) == ("crosses", 64)


def test_runs_table_noise_column():
    runs = pd.DataFrame([{"id": 1, "created_at": pd.Timestamp("2026-01-01", tz="UTC"),
                          "source": "measured", "kind": "sweep", "gpu_name": "A",
                          "torch_version": "2", "workload": "mlp", "workload_params": {},
                          "dtype": "float32", "status": "done", "points": 40,
                          "ok_points": 40, "label": None}])
    noise = pd.DataFrame({"ok_points": [40], "interval_points": [40], "noisy_points": [3],
                          "unstable_points": [0]}, index=pd.Index([1], name="run_id"))
    assert board.runs_table(runs, noise).at[0, "noise"] == "3 of 40 points noisy"
    assert board.runs_table(runs).at[0, "noise"] == "—"
    assert board.runs_table(runs.assign(**noise.iloc[0])).at[0, "noise"] == \
        "3 of 40 points noisy"


# --- links --------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["abc", "-1", "0", "1.5", "", "9" * 20, "1;drop"])
def test_parse_run_id_refuses_with_the_value_named(bad):
    with pytest.raises(links.LinkError) as e:
        links.parse_run_id(bad)
    if bad.strip() and bad != "0":
        assert repr(bad[:40]) in str(e.value) or bad in str(e.value)


def test_parse_run_ids_keeps_good_ids_beside_errors():
    ids, errors = links.parse_run_ids(["3", "x", "5,3", "7"])
    assert ids == [3, 5, 7] and len(errors) == 1 and "'x'" in errors[0]
    assert links.missing_runs([3, 9], [3]) == [links.missing_runs([9], [])[0]]


def test_page_urls_replace_the_current_page_and_repeat_params():
    base = "http://127.0.0.1:8501/run"
    assert links.run_url(base, 4) == "http://127.0.0.1:8501/run?run=4"
    assert links.compare_url("http://h:1/app/", [1, 2]) == "http://h:1/app/compare?run=1&run=2"
    assert links.page_url(None, "", {"gpu": ["A B"], "torch": []}) == "/?gpu=A+B"


def test_measure_command_for_a_run_without_one():
    cmd = links.measure_command(header_of({"workload": "mlp",
                                           "workload_params": {"width": 256, "depth": 32}}),
                                [8192, 8, 8], ["compile", "eager", "eager"])
    assert cmd == ("python -m runner sweep --workload mlp --param depth=32 --param width=256 "
                   "--batch-sizes 8,8192 --modes eager,compile")


# --- metrics table --------------------------------------------------------------------------

def test_metrics_format_interval():
    assert metrics.format_interval("speedup", 6.5, 7.6) == "6.50-7.60x"
    assert metrics.format_interval("step_ms", 1.23, 1.3) == "1.230-1.300 ms"
    assert metrics.format_interval("speedup", None, 7.6) == metrics.NO_INTERVAL
    assert metrics.format_interval("speedup", float("nan"), 7.6) == metrics.NO_INTERVAL


def test_metrics_format_units_and_unknown():
    assert metrics.format_value("step_ms", 1.23456) == "1.235 ms"
    assert metrics.format_value("graph_pool_bytes", 32 * 1024 * 1024) == "32.0 MiB"
    assert metrics.format_value("speedup", 9.4) == "9.40x"
    assert metrics.format_value("busy_fraction", 0.5) == "50%"
    assert metrics.format_value("step_ms", None) == metrics.MISSING
    assert metrics.format_value("step_ms", float("nan")) == metrics.MISSING
    assert metrics.title("step_ms") == "Step time (ms)"
    with pytest.raises(KeyError):
        metrics.metric("nope")


def test_every_number_field_has_a_metric():
    assert set(fmt.NUMBER_FIELDS) - {"samples"} <= set(metrics.METRICS) | {"samples"}
    for name in fmt.NUMBER_FIELDS:
        metrics.metric(name)


# --- queries and samples against a real database -----------------------------------------

def test_published_sample_holds_exactly_the_articles_figures():
    doc = fmt.read(PUBLISHED)
    assert doc["run"]["source"] == "published"
    assert "torch.compile, day 25: CUDA Graph" in doc["run"]["label"]
    env = doc["environment"]
    assert (env["device"], env["gpu_name"], env["torch_version"]) == ("cuda", "NVIDIA L40S",
                                                                      "2.8.0")
    assert all(env[f] is None for f in fmt.ENVIRONMENT_FIELDS
               if f not in ("device", "gpu_name", "torch_version"))
    got = {(m["mode"], m["batch_size"]): (m["step_ms"], m["details"].get("stddev_ms"))
           for m in doc["measurements"] if m["status"] == "ok"}
    assert got == {("eager", 8): (1.124, 0.008), ("compile", 8): (0.960, 0.019),
                   ("reduce-overhead", 8): (0.119, 0.003), ("cuda-graph", 8): (0.113, None),
                   ("eager", 8192): (2.228, 0.002), ("compile", 8192): (1.585, 0.003),
                   ("reduce-overhead", 8192): (1.567, 0.004)}
    for m in doc["measurements"]:
        assert m["details"]["citation"] == doc["run"]["label"]
        # Nothing the article does not give is filled in.
        assert all(m[f] is None for f in fmt.NUMBER_FIELDS if f != "step_ms")


def test_seed_imports_samples_once_and_reports_bad_files(sqlite_engine, tmp_path):
    (tmp_path / "a.json").write_text(PUBLISHED.read_text())
    (tmp_path / "b.json").write_text('{"format": "launchbench.run", "version": 1')
    first = seed_if_empty(sqlite_engine, tmp_path)
    assert len(first.imported) == 1 and len(first.errors) == 1
    assert first.errors[0].startswith("b.json:") and "not valid JSON" in first.errors[0]
    again = seed_if_empty(sqlite_engine, tmp_path)
    assert again.skipped and again.imported == []
    assert len(queries.runs_frame(sqlite_engine)) == 1


def test_seed_writes_nothing_in_read_only_mode(sqlite_engine, monkeypatch):
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    assert seed_if_empty(sqlite_engine).skipped
    assert queries.runs_frame(sqlite_engine).empty


def test_seed_leaves_a_database_with_runs_alone(sqlite_engine):
    import_bundle(sqlite_engine, sweep_bundle())
    assert seed_if_empty(sqlite_engine).skipped
    assert len(queries.runs_frame(sqlite_engine)) == 1


def test_runs_frame_filters_and_counts(sqlite_engine):
    a, _ = import_bundle(sqlite_engine, sweep_bundle(gpu="A", torch="2.1",
                                                     failing={("compile", 8): "oom"}))
    b, _ = import_bundle(sqlite_engine, sweep_bundle(gpu="B", torch="2.2", workload="w2",
                                                     created_at="2026-02-01T00:00:00Z"))
    c, _ = import_bundle(sqlite_engine, sweep_bundle(device="cpu", torch="2.2"))
    df = queries.runs_frame(sqlite_engine)
    assert list(df["id"]) == [b, a, c] or set(df["id"]) == {a, b, c}
    assert df.iloc[0]["id"] == b  # newest first
    row = df.set_index("id").loc[a]
    assert (row["points"], row["ok_points"]) == (20, 19)
    assert set(queries.runs_frame(sqlite_engine, gpus=["cpu"])["id"]) == {c}
    assert set(queries.runs_frame(sqlite_engine, gpus=["A", "cpu"])["id"]) == {a, c}
    assert set(queries.runs_frame(sqlite_engine, torches=["2.2"], workloads=["mlp"])["id"]) == {c}
    opts = queries.run_filter_options(sqlite_engine)
    assert opts == {"gpu": ["A", "B", "cpu"], "workload": ["mlp", "w2"], "torch": ["2.1", "2.2"]}


def test_headers_points_and_version(sqlite_engine):
    v0 = queries.data_version(sqlite_engine)
    a, _ = import_bundle(sqlite_engine, sweep_bundle(batches=(8,)))
    b, _ = import_bundle(sqlite_engine, sweep_bundle(device="cpu", batches=(8, 64)))
    assert queries.data_version(sqlite_engine) != v0
    h = queries.runs_headers(sqlite_engine, [b, a, 999])
    assert list(h["id"]) == [b, a]
    assert queries.run_header(sqlite_engine, 999) is None
    assert queries.run_header(sqlite_engine, b).gpu_name is None
    p = queries.run_points(sqlite_engine, b)
    assert len(p) == 8 and set(p["run_id"]) == {b}
    unsupported = p[p["status"] == "unsupported"]
    assert set(unsupported["mode"]) == {"reduce-overhead", "cuda-graph"}
    assert unsupported["step_ms"].isna().all()  # unknown stays unknown, not 0
    assert queries.runs_points(sqlite_engine, []).empty
    assert json.loads(json.dumps(p.iloc[0]["details"])) == p.iloc[0]["details"]


def test_runs_table_marks_published_and_cpu(sqlite_engine):
    seed_if_empty(sqlite_engine)
    import_bundle(sqlite_engine, sweep_bundle(device="cpu"))
    t = board.runs_table(queries.runs_frame(sqlite_engine)).set_index("GPU")
    assert t.at["NVIDIA L40S", "source"] == "published"
    cpu = "CPU (synthetic-host)"
    assert t.at[cpu, "source"] == "measured"
    assert t.at[cpu, "link"].startswith("run?run=")
    assert not t.astype(str).apply(lambda c: c.str.contains("nan")).any().any()


def test_dashboard_queries_on_sqlite_and_postgresql(any_url):
    from db.engine import make_engine

    engine = make_engine(any_url)
    try:
        seed_if_empty(engine)
        gpu, _ = import_bundle(engine, sweep_bundle(gpu="A", failing={("eager", 8): "x"}))
        cpu, _ = import_bundle(engine, sweep_bundle(device="cpu"))
        # The samples hold CPU runs too (the torch series): "cpu" filters them in alike.
        shipped_cpu = set(queries.runs_frame(engine, gpus=["cpu"])["id"]) - {cpu}
        assert shipped_cpu and gpu not in shipped_cpu
        df = queries.runs_frame(engine, gpus=["A", "cpu"])
        assert set(df["id"]) == {gpu, cpu} | shipped_cpu
        assert df.set_index("id").at[gpu, "ok_points"] == 19
        assert "NVIDIA L40S" in queries.run_filter_options(engine)["gpu"]
        p = queries.runs_points(engine, [gpu, cpu])
        assert len(p) == 40 and p["step_ms"].dtype.kind == "f"
        h = queries.runs_headers(engine, [cpu, gpu])
        assert list(h["id"]) == [cpu, gpu] and pd.isna(h.iloc[0]["gpu_name"])
        assert analysis.speedups(p).query("mode == 'compile'")["speedup"].gt(1).all()
    finally:
        engine.dispose()
