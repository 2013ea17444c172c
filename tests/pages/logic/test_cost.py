"""Memory that tells the truth (issue 44: one memory cost over eager with its parts, the
Pareto-best modes, the one-line headline, a run from before the isolated pass marked) and
the chart basics every page shares (log speedup axis with a 1x
rule, readable log ticks, one colour per mode, short series unjoined, no 'nan' names)."""

from __future__ import annotations

import pandas as pd
import pytest

from contract import bundle as fmt
from contract import memory
from contract.speedups import speedups
from db.samples import SAMPLES
from pages.charts import encodings, report, run_charts, serve_charts
from pages.logic import comparing, cost, points_table, run_text, serve_tables
from pages.logic.names import LINE_CHARS, device_name, run_choice
from tests.records import header, headers, points_of, pts
from tests.synthetic import sweep_bundle

MIB = 2**20


def mem(kept_mib, pool_mib, peak_mib, speedup, lo=None, hi=None, eager_mib=32):
    """A point measured by the isolated memory pass (bundle version 7)."""
    return {"graph_pool_bytes": int(pool_mib * MIB), "reserved_delta_bytes": int(kept_mib * MIB),
            "memory_cost_bytes": int((kept_mib - eager_mib) * MIB),
            "peak_allocated_bytes": int(peak_mib * MIB), "speedup": speedup,
            "speedup_ci_low": lo, "speedup_ci_high": hi,
            "details": {"eager_reserved_delta_bytes": int(eager_mib * MIB)}}


def old_mem(pool_mib, peak_mib, speedup, lo=None, hi=None):
    """A point from before the pass: pool and peak, no cost."""
    return {"graph_pool_bytes": None if pool_mib is None else int(pool_mib * MIB),
            "peak_allocated_bytes": int(peak_mib * MIB), "speedup": speedup,
            "speedup_ci_low": lo, "speedup_ci_high": hi, "memory_cost_bytes": None,
            "reserved_delta_bytes": None, "details": {}}


@pytest.fixture(scope="module")
def batch8():
    # As the H100 measured mlp (bench/results/h100-session.txt): eager keeps its 32 MiB
    # cuBLAS workspace; reduce-overhead keeps a 34 MiB pool (its own workspace inside) and
    # 2 MiB beside it: +4 MiB over eager; cuda-graph a 34 MiB pool and 36 MiB beside it.
    # Here reduce-overhead keeps a 95 MiB pool instead (as a cold compile's buffer once
    # did), so cuda-graph, faster and cheaper, dominates it.
    return points_of(sweep_bundle(batches=(8,), overrides={
        ("eager", 8): mem(32, 0, 40, None),
        ("compile", 8): mem(32, 0, 40, 1.1, 1.0, 1.2),
        ("reduce-overhead", 8): mem(97, 95, 7, 6.0, 5.5, 6.5),
        ("cuda-graph", 8): mem(70, 34, 40, 7.1, 6.5, 7.6)}))


@pytest.fixture(scope="module")
def old8():
    return points_of(sweep_bundle(batches=(8,), overrides={
        ("eager", 8): old_mem(None, 40, None),
        ("compile", 8): old_mem(None, 40, 1.1, 1.0, 1.2),
        ("reduce-overhead", 8): old_mem(95, 7, 6.0, 5.5, 6.5),
        ("cuda-graph", 8): old_mem(34, 40, 7.1, 6.5, 7.6)}))


def _row(c, mode):
    return next(x for x in c if x.mode == mode)


def test_the_cost_is_what_a_mode_keeps_beyond_eager_with_its_parts(batch8):
    c = cost.costs(batch8)
    ro = _row(c, "reduce-overhead").memory
    assert ro.cost_bytes / MIB == pytest.approx(65) and ro.kept_bytes / MIB == pytest.approx(97)
    assert ro.pool_bytes / MIB == pytest.approx(95) and ro.default_bytes / MIB == pytest.approx(2)
    assert _row(c, "eager").memory.cost_bytes == 0
    assert _row(c, "cuda-graph").memory.cost_bytes / MIB == pytest.approx(38)
    assert _row(c, "cuda-graph").memory.peak_bytes / MIB == pytest.approx(40)  # apart


def test_the_memory_cost_is_one_function_of_a_point(batch8, old8):
    # The figure a run is quoted by (contract/memory.py): the stored cost over eager, its
    # words naming the definition and the parts; a point from before the pass has none.
    by = {m.mode: m for m in batch8}
    assert memory.memory_cost(by["reduce-overhead"]) == 65 * MIB
    assert memory.memory_cost(by["compile"]) == 0
    assert memory.cost_text(by["cuda-graph"]) == (
        "+38.0 MiB memory cost over eager (keeps 70.0 MiB: graph pool 34.0 MiB, default pool "
        "36.0 MiB; eager keeps 32.0 MiB)")
    old = {m.mode: m for m in old8}
    assert memory.memory_cost(old["cuda-graph"]) is None
    assert memory.cost_text(old["cuda-graph"]) == f"graph pool 34.0 MiB ({memory.OLD_METHOD})"


def test_pareto_marks_modes_nothing_beats_on_both_axes(batch8):
    c = {x.mode: x.pareto for x in cost.costs(batch8)}
    # cuda-graph: faster AND cheaper than reduce-overhead, which it therefore dominates.
    assert c["cuda-graph"] and not c["reduce-overhead"]
    # compile: faster than eager for the same memory, so eager is dominated at batch 8.
    assert c["compile"] and not c["eager"]


def test_pareto_agrees_with_the_definition_on_many_groups_with_ties_and_gaps():
    import random

    rng = random.Random(7)
    for _ in range(20):
        rows = [(m, b, rng.choice([None, 1.0, 2.0, 3.0]), rng.choice([None, 0.0, 10.0, 20.0]))
                for b in (1, 8, 64) for m in ("eager", "compile", "x", "y")]
        got = memory.pareto(rows)
        for r in rows:
            mode, batch, x, extra = r
            if x is None or extra is None:
                assert (mode, batch) not in got
                continue
            beaten = any(o[1] == batch and o[0] != mode and None not in o[2:]
                         and o[2] >= x and o[3] <= extra and (o[2] > x or o[3] < extra)
                         for o in rows)
            assert ((mode, batch) in got) is (not beaten), r


def headline(points) -> str | None:
    return run_text.summary_of(header(), points).headline()


def test_headline_is_one_line_with_interval_and_the_named_memory_cost(batch8, old8):
    assert headline(batch8) == (
        "cuda-graph at batch 8: 7.10x (6.50-7.60x) · +38.0 MiB memory cost over eager")
    assert headline(old8) == ("cuda-graph at batch 8: 7.10x (6.50-7.60x) · graph pool "
                              f"34.0 MiB ({memory.OLD_METHOD})")
    published = points_of(fmt.read(SAMPLES / "published-l40s-day25.json"))
    assert headline(published).endswith("(no interval) · memory not measured")


def test_memory_chart_stacks_the_parts_in_mode_colours(batch8):
    spec = run_charts.memory_chart(cost.costs(batch8)).to_dict()
    rows = next(iter(spec["datasets"].values()))
    parts = {(r["mode"], r["part"]): r["MiB"] for r in rows}
    assert parts[("reduce-overhead", "Graph pool")] == pytest.approx(95)
    assert parts[("reduce-overhead", "Default pool")] == pytest.approx(2)
    assert parts[("eager", "Default pool")] == pytest.approx(32)  # the baseline's bar
    assert all(r["cost_mib"] == pytest.approx(38) for r in rows if r["mode"] == "cuda-graph")
    assert spec["encoding"]["y"]["stack"] == "zero"
    assert spec["encoding"]["y"]["title"] == "Kept on the GPU (MiB)"
    assert spec["encoding"]["color"]["scale"]["range"] == list(encodings.MODE_COLORS.values())
    assert "lower is better" not in spec["title"]


def test_a_run_before_the_pass_charts_its_pools_only_and_says_so(old8):
    spec = run_charts.memory_chart(cost.costs(old8)).to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert {r["part"] for r in rows} == {"Graph pool"}
    assert {r["mode"] for r in rows} == {"reduce-overhead", "cuda-graph"}
    assert memory.OLD_METHOD in " ".join(spec["title"]["subtitle"])  # wrapped in lines
    assert run_charts.tradeoff_chart(cost.costs(old8)) is None  # no cost to plot


def test_tradeoff_chart_plots_speedup_against_the_memory_cost_with_pareto(batch8):
    spec = run_charts.tradeoff_chart(cost.costs(batch8)).to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert {r["mode"]: r["best"] for r in rows}["reduce-overhead"] == "dominated"
    enc = spec["layer"][0]["encoding"]
    assert enc["x"]["field"] == "cost_mib" and enc["y"]["scale"]["type"] == "log"
    assert enc["x"]["title"] == "Memory cost over eager (MiB)"


def _has_one_x_rule(spec) -> bool:
    return any(layer.get("mark", {}).get("type") == "rule" and
               spec["datasets"][layer["data"]["name"]] == [{"y": 1.0}]
               for layer in spec["layer"])


def test_speedup_axes_are_log_with_a_1x_rule():
    p = points_of(sweep_bundle())
    spec = run_charts.speedup_chart(speedups(p)).to_dict()
    y = spec["layer"][0]["encoding"]["y"]
    assert y["scale"]["type"] == "log" and 1.0 in y["axis"]["values"]
    assert _has_one_x_rule(spec)
    h = headers({"id": 1, "gpu_name": "A", "torch_version": "2.1"})
    d = run_charts.compare_chart(comparing.compare_speedups({1: p}, h)).to_dict()
    assert d["layer"][0]["encoding"]["y"]["scale"]["type"] == "log" and _has_one_x_rule(d)


def test_step_time_ticks_are_readable_and_the_legend_is_on():
    assert encodings.log_ticks([0.119, 2.2]) == [0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
    # A figure stored before imports checked it (p10 1.8e308) leaves the axis alone,
    # where it raised OverflowError (issue 48).
    assert encodings.log_ticks([0.119, 2.2, 1.7976931348623157e308]) == \
        encodings.log_ticks([0.119, 2.2])
    spec = run_charts.step_time_chart(points_of(sweep_bundle())).to_dict()
    enc = [layer["encoding"] for layer in spec["layer"] if "encoding" in layer][0]
    assert enc["y"]["axis"]["format"] == "~g" and 1.0 in enc["y"]["axis"]["values"]
    assert enc["color"]["legend"] is not None


def test_published_two_point_series_are_points_not_lines():
    p = points_of(fmt.read(SAMPLES / "published-l40s-day25.json"))
    spec = run_charts.speedup_chart(speedups(p)).to_dict()
    line = [layer for layer in spec["layer"] if layer.get("mark", {}).get("type") == "line"][0]
    # The line layer keeps only series of 3+ points; a point layer draws every point.
    assert {"filter": f"datum._series_points >= {encodings.MIN_LINE_POINTS}"} in line["transform"]
    assert any(layer.get("mark", {}).get("type") == "point" for layer in spec["layer"])
    svg = report.chart_svg(run_charts.speedup_chart(speedups(p)))
    assert "mark-symbol" in svg  # it compiles, and draws the points


def test_serve_page_uses_the_mode_colours():
    for kind, colour in serve_charts.KIND_COLORS.items():
        assert colour == encodings.MODE_COLORS.get(kind, encodings.MODE_COLORS["cuda-graph"])
    assert serve_tables.kind_of("buckets:8/16/32") == "buckets"


def test_a_run_without_gpu_is_named_cpu_and_host_never_nan():
    assert device_name({"gpu_name": float("nan"), "hostname": "box"}) == "CPU (box)"
    assert device_name({"gpu_name": None}) == "CPU"
    assert device_name(pd.Series({"gpu_name": "NVIDIA H200"})) == "NVIDIA H200"
    title = run_text.run_title(header(id=3, workload="mlp", gpu_name=None, hostname="box",
                                      torch_version=None))
    assert title == "Run 3: mlp on CPU (box), torch not recorded"


def test_ratio_columns_come_before_the_times():
    a, b = points_of(sweep_bundle(gpu="A")), points_of(sweep_bundle(gpu="B", scale=2.0))
    h = headers({"id": 1, "gpu_name": "A", "torch_version": "2.1"},
                {"id": 2, "gpu_name": "B", "torch_version": "2.1"})
    cols = list(comparing.ratio_table({1: a, 2: b}, h, 1).columns)
    assert cols[:4] == ["mode", "batch_size", "#2 B vs #1", "#2 B vs #1 95%"]
    assert cols[-1].endswith(" ms")
    table = comparing.ratio_table({1: a, 2: b}, h, 1)
    rows = comparing.ratio_rows(table, h, 1)  # as the page shows it: a row a run
    assert list(rows.columns[:5]) == ["mode", "batch_size", "run", "vs baseline", "95%"]
    assert list(rows["vs baseline"]) == list(table["#2 B vs #1"])
    assert set(rows["run"]) == {"#2 B"} and len(rows) == len(table)


def test_compare_flags_a_published_mean_and_shows_memory_side_by_side():
    pub = points_of(fmt.read(SAMPLES / "published-l40s-day25.json"))
    own = points_of(sweep_bundle(gpu="A"))
    h = headers({"id": 1, "gpu_name": "NVIDIA L40S", "torch_version": "2.8.0",
                 "source": "published"}, {"id": 2, "gpu_name": "A", "torch_version": "2.1"})
    flags = comparing.statistic_flags(h, {1: pub, 2: own})
    assert len(flags) == 1 and flags[0].startswith("#1 NVIDIA L40S")
    assert "mean of CUDA-event timings" in flags[0] and "not medians" in flags[0]
    own_v7 = points_of(sweep_bundle(gpu="A", batches=(1, 8), modes=("eager", "cuda-graph"),
                                    overrides={("cuda-graph", b): mem(70, 34, 40, 7.0)
                                               for b in (1, 8)}))
    m = comparing.memory_table({1: pub, 2: own_v7}, h)
    # the published run measured no memory: no column of blanks, named apart instead
    assert list(m.columns) == ["mode", "batch_size", "#2 A MiB"]  # its short name
    assert comparing.without(m, h, "MiB") == ["#1 NVIDIA L40S · torch 2.8.0 (published)"]
    costs = dict(zip(m["mode"], m.iloc[:, 2], strict=False))  # eager is the baseline: 0
    assert costs == {"eager": pytest.approx(0.0), "cuda-graph": pytest.approx(38.0)}
    old = points_of(sweep_bundle(gpu="A", overrides={
        ("cuda-graph", 8): old_mem(34, 40, 7.0)}))
    assert comparing.old_memory_runs({1: pub, 2: old}, h) == ["#2 A · torch 2.1"]


def test_points_table_key_columns_first_and_pivot(batch8):
    t = points_table.points_table(batch8)
    assert list(t.columns[:11]) == [
        "Mode", "Batch size", "Speedup over eager (x)", "Speedup over eager 95% CI",
        "Verdict", "Step time (ms)", "Step time 95% CI", points_table.COST_COLUMN,
        "Graph pool (MiB)", points_table.DEFAULT_COLUMN, points_table.PEAK_COLUMN]
    ro = t[t["Mode"] == "reduce-overhead"].iloc[0]
    assert ro[points_table.COST_COLUMN] == "+65.0 MiB" and ro["Graph pool (MiB)"] == "95.0 MiB"
    assert ro[points_table.DEFAULT_COLUMN] == "2.0 MiB"
    assert t[t["Mode"] == "eager"].iloc[0][points_table.COST_COLUMN] == "baseline"
    assert ro["Verdict"] == "faster"
    assert t[t["Mode"] == "eager"].iloc[0]["Verdict"] == "—"  # the reference itself
    pivot = points_table.speedup_pivot(batch8).set_index("Batch size")
    # the memory cost over eager, the graph pool beside it as a part
    assert pivot.at[8, "cuda-graph"] == "7.10x (6.50-7.60x) · +38.0 MiB (graph pool 34.0 MiB)"
    assert pivot.at[8, "reduce-overhead"] == "6.00x (5.50-6.50x) · +65.0 MiB (graph pool 95.0 MiB)"
    assert pivot.at[8, "compile"] == "1.10x (1.00-1.20x) · +0.0 MiB"  # no graph, no pool


def test_a_points_table_before_the_pass_marks_its_cost(old8):
    t = points_table.points_table(old8)
    ro = t[t["Mode"] == "reduce-overhead"].iloc[0]
    assert ro[points_table.COST_COLUMN] == "before the memory pass"
    assert ro["Graph pool (MiB)"] == "95.0 MiB"
    assert points_table.DEFAULT_COLUMN not in t.columns  # no point knows that part


def test_html_report_table_fits_its_width(batch8):
    html = report.html_report(header(), batch8)
    assert "white-space:nowrap" not in html  # the 1535 px table came from nowrap cells
    assert "<div class='wide'><table class='points'>" in html
    assert ("cuda-graph at batch 8: 7.10x (6.50-7.60x) · +38.0 MiB memory cost over "
            "eager</p>") in html
    assert "each measured alone from a clean state" in html


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
    failed = pts([("eager", 8, None)])
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



def test_html_report_points_tables_hold_every_column_once_a_dozen_at_most(batch8):
    # Issue 46: 36 columns in one 1200 px table wrapped letter by letter. A subject per
    # table, each led by mode and batch size; a column no rule names is still shown.
    df = points_table.points_table(batch8)
    tables = report._point_tables(df.assign(**{"A later column": "x"}))
    seen = [c for t in tables for c in t["columns"] if c not in report.KEY_COLUMNS]
    assert sorted(seen) == sorted([*(c for c in df.columns if c not in report.KEY_COLUMNS),
                                   "A later column"])
    assert all(t["columns"][:2] == list(report.KEY_COLUMNS) for t in tables)
    assert all(len(t["columns"]) <= 12 for t in tables), [len(t["columns"]) for t in tables]
    html = report.html_report(header(), batch8)
    assert "overflow-wrap:anywhere" not in html and "overflow-wrap:normal" in html
