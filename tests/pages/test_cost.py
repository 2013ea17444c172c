"""Memory that tells the truth (pool + peak, extra over eager, Pareto-best modes, the
one-line headline) and the chart basics every page shares (log speedup axis with a 1x
rule, readable log ticks, one colour per mode, short series unjoined, no 'nan' names)."""

from __future__ import annotations

import pandas as pd
import pytest

from contract import bundle as fmt
from contract.run_summary import header_of
from db.samples import SAMPLES
from pages.charts import encodings, report, run_charts, serve_charts
from pages.logic import analysis, comparing, cost, points_table, run_text, serve_tables
from pages.logic.names import LINE_CHARS, device_name, run_choice
from tests.synthetic import points_frame, sweep_bundle

MIB = 2**20


def mem(pool_mib, peak_mib, speedup, lo=None, hi=None):
    return {"graph_pool_bytes": None if pool_mib is None else int(pool_mib * MIB),
            "peak_allocated_bytes": int(peak_mib * MIB), "speedup": speedup,
            "speedup_ci_low": lo, "speedup_ci_high": hi}


@pytest.fixture(scope="module")
def batch8():
    # The case: reduce-overhead's peak allocated (7 MiB) is far below eager's
    # (40 MiB), but it holds a 95 MiB graph pool besides.
    return points_frame(sweep_bundle(batches=(8,), overrides={
        ("eager", 8): mem(None, 40, None),
        ("compile", 8): mem(None, 40, 1.1, 1.0, 1.2),
        ("reduce-overhead", 8): mem(95, 7, 6.0, 5.5, 6.5),
        ("cuda-graph", 8): mem(34, 40, 7.1, 6.5, 7.6)}))


def _row(c, mode):
    return c[c["mode"] == mode].iloc[0]


def test_total_is_pool_plus_peak_and_extra_is_over_eager(batch8):
    c = cost.memory_cost(batch8)
    ro = _row(c, "reduce-overhead")
    assert ro["total_mib"] == pytest.approx(102) and ro["extra_mib"] == pytest.approx(62)
    assert _row(c, "eager")["total_mib"] == pytest.approx(40)  # no pool: counts as 0
    assert _row(c, "cuda-graph")["extra_mib"] == pytest.approx(34)


def test_pareto_marks_modes_nothing_beats_on_both_axes(batch8):
    c = cost.memory_cost(batch8).set_index("mode")["pareto"]
    # cuda-graph: faster AND cheaper than reduce-overhead, which it therefore dominates.
    assert c["cuda-graph"] and not c["reduce-overhead"]
    # compile: faster than eager for the same memory, so eager is dominated at batch 8.
    assert c["compile"] and not c["eager"]


def test_pareto_agrees_with_the_definition_on_many_groups_with_ties_and_gaps():
    import random

    rng = random.Random(7)
    rows = [{"run_id": run, "batch_size": b, "mode": m,
             "speedup": rng.choice([None, 1.0, 2.0, 3.0]),
             "extra_mib": rng.choice([None, 0.0, 10.0, 20.0])}
            for run in (1, 2, 3) for b in (1, 8, 64) for m in ("eager", "compile", "x", "y")]
    # A non-default, repeated index, as a concatenated frame may carry.
    df = pd.DataFrame(rows, index=[5] * len(rows))
    got = cost._pareto(df).tolist()
    for r, best in zip(rows, got, strict=True):
        if r["speedup"] is None or r["extra_mib"] is None:
            assert best is False
            continue
        others = [o for o in rows if o is not r and (o["run_id"], o["batch_size"])
                  == (r["run_id"], r["batch_size"]) and None not in
                  (o["speedup"], o["extra_mib"])]
        beaten = any(o["speedup"] >= r["speedup"] and o["extra_mib"] <= r["extra_mib"]
                     and (o["speedup"] > r["speedup"] or o["extra_mib"] < r["extra_mib"])
                     for o in others)
        assert best is (not beaten), r


def headline(points) -> str | None:
    return run_text.summary_of(header_of({"id": 1}), points).headline()


def test_headline_is_one_line_with_interval_and_the_named_memory_cost(batch8):
    assert headline(batch8) == ("cuda-graph at batch 8: 7.10x (6.50-7.60x) · 34.0 MiB "
                                "graph pool kept after capture")
    published = points_frame(fmt.read(SAMPLES / "published-l40s-day25.json"))
    assert headline(published).endswith(
        "(no interval) · graph pool kept after capture: not measured")


def test_memory_chart_stacks_both_parts_in_mode_colours(batch8):
    spec = run_charts.memory_chart(batch8).to_dict()
    rows = next(iter(spec["datasets"].values()))
    parts = {(r["mode"], r["part"]): r["MiB"] for r in rows}
    assert parts[("reduce-overhead", "Graph pool")] == pytest.approx(95)
    assert parts[("reduce-overhead", "Peak allocated")] == pytest.approx(7)
    assert spec["encoding"]["y"]["stack"] == "zero"
    assert spec["encoding"]["color"]["scale"]["range"] == list(encodings.MODE_COLORS.values())
    assert "lower is better" not in spec["title"]


def test_tradeoff_chart_plots_speedup_against_extra_mib_with_pareto(batch8):
    spec = run_charts.tradeoff_chart(cost.memory_cost(batch8)).to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert {r["mode"]: r["best"] for r in rows}["reduce-overhead"] == "dominated"
    enc = spec["layer"][0]["encoding"]
    assert enc["x"]["field"] == "extra_mib" and enc["y"]["scale"]["type"] == "log"


def _has_one_x_rule(spec) -> bool:
    return any(layer.get("mark", {}).get("type") == "rule" and
               spec["datasets"][layer["data"]["name"]] == [{"y": 1.0}]
               for layer in spec["layer"])


def test_speedup_axes_are_log_with_a_1x_rule():
    p = points_frame(sweep_bundle())
    spec = run_charts.speedup_chart(analysis.speedups(p)).to_dict()
    y = spec["layer"][0]["encoding"]["y"]
    assert y["scale"]["type"] == "log" and 1.0 in y["axis"]["values"]
    assert _has_one_x_rule(spec)
    h = pd.DataFrame([{"id": 1, "gpu_name": "A", "torch_version": "2.1", "source": "measured"}])
    d = run_charts.compare_chart(comparing.compare_speedups(p, h)).to_dict()
    assert d["layer"][0]["encoding"]["y"]["scale"]["type"] == "log" and _has_one_x_rule(d)


def test_step_time_ticks_are_readable_and_the_legend_is_on():
    assert encodings.log_ticks([0.119, 2.2]) == [0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
    # A figure stored before imports checked it (p10 1.8e308) leaves the axis alone,
    # where it raised OverflowError (issue 48).
    assert encodings.log_ticks([0.119, 2.2, 1.7976931348623157e308]) == \
        encodings.log_ticks([0.119, 2.2])
    spec = run_charts.step_time_chart(points_frame(sweep_bundle())).to_dict()
    enc = [layer["encoding"] for layer in spec["layer"] if "encoding" in layer][0]
    assert enc["y"]["axis"]["format"] == "~g" and 1.0 in enc["y"]["axis"]["values"]
    assert enc["color"]["legend"] is not None


def test_published_two_point_series_are_points_not_lines():
    p = points_frame(fmt.read(SAMPLES / "published-l40s-day25.json"))
    spec = run_charts.speedup_chart(analysis.speedups(p)).to_dict()
    line = [layer for layer in spec["layer"] if layer.get("mark", {}).get("type") == "line"][0]
    # The line layer keeps only series of 3+ points; a point layer draws every point.
    assert {"filter": f"datum._series_points >= {encodings.MIN_LINE_POINTS}"} in line["transform"]
    assert any(layer.get("mark", {}).get("type") == "point" for layer in spec["layer"])
    svg = report.chart_svg(run_charts.speedup_chart(analysis.speedups(p)))
    assert "mark-symbol" in svg  # it compiles, and draws the points


def test_serve_page_uses_the_mode_colours():
    for kind, colour in serve_charts.KIND_COLORS.items():
        assert colour == encodings.MODE_COLORS.get(kind, encodings.MODE_COLORS["cuda-graph"])
    assert serve_tables.kind_of("buckets:8/16/32") == "buckets"


def test_a_run_without_gpu_is_named_cpu_and_host_never_nan():
    assert device_name({"gpu_name": float("nan"), "hostname": "box"}) == "CPU (box)"
    assert device_name({"gpu_name": None}) == "CPU"
    assert device_name(pd.Series({"gpu_name": "NVIDIA H200"})) == "NVIDIA H200"
    title = run_text.run_title(header_of({"id": 3, "workload": "mlp", "gpu_name": float("nan"),
                                          "hostname": "box", "torch_version": float("nan")}))
    assert title == "Run 3: mlp on CPU (box), torch —"


def test_ratio_columns_come_before_the_times():
    a, b = points_frame(sweep_bundle(gpu="A"), 1), points_frame(sweep_bundle(gpu="B", scale=2.0), 2)
    h = pd.DataFrame([{"id": 1, "gpu_name": "A", "torch_version": "2.1"},
                      {"id": 2, "gpu_name": "B", "torch_version": "2.1"}])
    cols = list(comparing.ratio_table(pd.concat([a, b]), h, 1).columns)
    assert cols[:4] == ["mode", "batch_size", "#2 B · torch 2.1 vs #1",
                        "#2 B · torch 2.1 vs #1 95%"]
    assert cols[-1].endswith(" ms")


def test_compare_flags_a_published_mean_and_shows_memory_side_by_side():
    pub = points_frame(fmt.read(SAMPLES / "published-l40s-day25.json"), 1)
    own = points_frame(sweep_bundle(gpu="A"), 2)
    h = pd.DataFrame([{"id": 1, "gpu_name": "NVIDIA L40S", "torch_version": "2.8.0",
                       "source": "published"},
                      {"id": 2, "gpu_name": "A", "torch_version": "2.1", "source": "measured"}])
    flags = comparing.statistic_flags(h, pd.concat([pub, own]))
    assert len(flags) == 1 and flags[0].startswith("#1 NVIDIA L40S")
    assert "mean of CUDA-event timings" in flags[0] and "not medians" in flags[0]
    m = comparing.memory_table(pd.concat([pub, own]), h)
    assert list(m.columns) == ["mode", "batch_size", "#1 NVIDIA L40S · torch 2.8.0 "
                               "(published) MiB", "#2 A · torch 2.1 MiB"]
    assert m.iloc[:, 2].isna().all() and m.iloc[:, 3].notna().all()


def test_points_table_key_columns_first_and_pivot(batch8):
    t = points_table.points_table(batch8)
    assert list(t.columns[:9]) == [
        "Mode", "Batch size", "Speedup over eager (x)", "Speedup over eager 95% CI",
        "Verdict", "Step time (ms)", "Step time 95% CI", "Memory held (pool + peak) (MiB)",
        "Extra memory over eager (MiB)"]
    ro = t[t["Mode"] == "reduce-overhead"].iloc[0]
    assert ro["Memory held (pool + peak) (MiB)"] == "102.0 MiB"
    assert ro["Verdict"] == "faster"
    assert t[t["Mode"] == "eager"].iloc[0]["Verdict"] == "—"  # the reference itself
    pivot = points_table.speedup_pivot(batch8).set_index("Batch size")
    # the memory cost as the summary defines it: reduce-overhead's pool, not its +62 MiB
    # of pool + peak over eager's peak (the points table's column beside it)
    assert pivot.at[8, "cuda-graph"] == "7.10x (6.50-7.60x) · 34.0 MiB"
    assert pivot.at[8, "reduce-overhead"] == "6.00x (5.50-6.50x) · 95.0 MiB"
    assert pivot.at[8, "compile"] == "1.10x (1.00-1.20x)"  # captures no graph: no pool


def test_html_report_table_fits_its_width(batch8):
    html = report.html_report(header_of({"id": 1, "workload": "mlp", "status": "done",
                                         "source": "measured", "gpu_name": "G"}), batch8)
    assert "white-space:nowrap" not in html  # the 1535 px table came from nowrap cells
    assert "<div class='wide'><table class='points'>" in html
    assert ("cuda-graph at batch 8: 7.10x (6.50-7.60x) · 34.0 MiB graph pool kept after "
            "capture") in html
    assert "release cached blocks" in html


def test_a_cpu_runs_memory_view_says_why_it_is_empty(dash):
    # The CPU run: eager and compile measured, the graph modes unsupported. Its
    # Memory view was blank.
    from tests.apptest import texts

    rid = dash.add(gpu=None, device="cpu", batches=(1, 8, 64))
    at = dash.open("pages/run.py", run=str(rid), view="Memory")
    [why] = [t for t in texts(at, "info") if t.startswith("No memory figures")]
    assert why.startswith("No memory figures: this run had no CUDA.")
    assert "no graph pool" in why and "graph modes are unsupported" in why
    assert "cuda-graph and reduce-overhead recorded as unsupported here" in why
    assert not at.get("vega_lite_chart") and not at.get("arrow_vega_lite_chart")


def test_memory_missing_reason_off_cpu():
    failed = pd.DataFrame({"mode": ["eager"], "status": ["error"], "step_ms": [None]})
    assert "no point of this run ended ok" in cost.missing_reason(failed, "cuda")


def test_a_picker_line_fits_whatever_the_gpu_name_and_label():
    from datetime import datetime

    h = {"id": 5, "workload": "hf-causal-lm", "kind": "graph-memory",
         "gpu_name": "NVIDIA H100 80GB HBM3", "torch_version": "2.11.0+cu130",
         "created_at": datetime(2026, 12, 5, 16, 28), "label": "H100 graph memory: " + "x" * 60}
    line = run_choice(h)
    assert len(line) <= LINE_CHARS and line.endswith("…")
    assert line.startswith("#5 hf-causal-lm graph-memory run · NVIDIA H100 80GB HBM3 · ")
    short = run_choice({**h, "gpu_name": "NVIDIA H200", "label": "H200 mlp"})
    assert short.endswith(" · H200 mlp")  # a label that fits is never cut
    published = run_choice({**h, "source": "published"})
    assert len(published) <= LINE_CHARS and published.endswith("… (published)")

