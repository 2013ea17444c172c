"""Charts (valid Vega-Lite, units on axes, tooltips, log2 batch axis) and exports (CSV,
PNG, an HTML report that opens offline)."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest

from contract import bundle as fmt
from contract.speedups import speedups
from pages.charts import encodings, report, run_charts, split_charts
from pages.logic import comparing, cost, points_table, run_text
from pages.logic.comparing import RunSpeedups
from tests import specs
from tests.records import header, headers, points_of
from tests.synthetic import sweep_bundle


@pytest.fixture(scope="module")
def points():
    return points_of(sweep_bundle(failing={("compile", 64): "CUDA out of memory"}))


_units, _encodings = specs.units, specs.encodings


def _layers(spec):
    """(mark type, encoding) of every unit chart in a spec."""
    return [(u["mark"]["type"] if isinstance(u["mark"], dict) else u["mark"], u["encoding"])
            for u in _units(spec) if "mark" in u]


def _error_bars(spec):
    return [e for mark, e in _layers(spec) if mark == "errorbar"]


def _title(spec) -> str:
    """A chart's title and subtitle as one line."""
    t = spec.get("title", "")
    if isinstance(t, str):
        return t
    sub = t.get("subtitle", "")  # layout.chart_title wraps a long one into lines
    return f"{t['text']} {' '.join(sub) if isinstance(sub, list) else sub}"


@pytest.fixture(scope="module")
def old_points():
    return points_of(sweep_bundle(intervals=False))


def test_speedup_chart_draws_the_interval_as_error_bars(points, old_points):
    spec = run_charts.speedup_chart(speedups(points)).to_dict()
    bars = _error_bars(spec)
    assert len(bars) == 1
    assert (bars[0]["y"]["field"], bars[0]["y2"]["field"]) == ("speedup_ci_low",
                                                               "speedup_ci_high")
    rows = [r for d in spec["datasets"].values() for r in d if "speedup_ci_low" in r]
    bar_rows = [r for r in rows if r["speedup_ci_low"] is not None]
    assert {r["mode"] for r in bar_rows} == {"compile", "reduce-overhead", "cuda-graph"}
    old = run_charts.speedup_chart(speedups(old_points)).to_dict()
    assert _error_bars(old) == []  # no interval measured: none drawn


def test_step_time_chart_error_bars_and_band_for_old_runs(points, old_points):
    spec = run_charts.step_time_chart(points).to_dict()
    bars = _error_bars(spec)
    assert [(b["y"]["field"], b["y2"]["field"]) for b in bars] == [("step_ms_ci_low",
                                                                    "step_ms_ci_high")]
    assert bars[0]["y"]["scale"]["type"] == "log"
    assert "95% interval" in _title(spec)
    old = run_charts.step_time_chart(old_points).to_dict()
    assert _error_bars(old) == [] and "no interval" in _title(old)
    assert [e["y2"]["field"] for m, e in _layers(old) if m == "area"] == ["step_ms_p90"]


def test_compare_chart_has_error_bars_where_known(points, old_points):
    h = headers({"id": 1, "gpu_name": "A", "torch_version": "2.1"},
                {"id": 2, "gpu_name": "B", "torch_version": "2.1"})
    sp = comparing.compare_speedups({1: points, 2: old_points}, h)
    spec = run_charts.compare_chart(sp).to_dict()
    bars = _error_bars(spec)
    # one layer in the single chart; the old run's points have no interval (filtered out)
    assert len(bars) == 1 and bars[0]["y2"]["field"] == "speedup_ci_high"
    assert bars[0]["color"]["field"] == "series"
    report.chart_svg(run_charts.compare_chart(sp))  # the filtered layer compiles
    only_old = comparing.compare_speedups({1: old_points}, h[:1])
    assert _error_bars(run_charts.compare_chart(only_old).to_dict()) == []


def test_time_split_puts_eager_host_launch_time_beside_gpu_busy(points, old_points):
    spec = split_charts.time_split_chart(points).to_dict()
    assert any(_title(c).startswith("Eager: launch time vs GPU busy") for c in spec["hconcat"])
    # a concat's panels carry no autosize (top-level only in Vega-Lite)
    assert not any("autosize" in c for c in spec["hconcat"])
    rows = [r for d in spec["datasets"].values() for r in d if "figure" in r]
    launch = [r for r in rows if r["figure"] == "Host launch time" and r["batch_size"] == 8]
    assert launch[0]["ms"] == pytest.approx(64 * 10.0 / 1000)  # launches x launch_us
    assert {"GPU busy time", "Step time"} <= {r["figure"] for r in rows}
    old = split_charts.time_split_chart(old_points).to_dict()
    assert len(old["hconcat"]) == 2  # no launch cost measured: no such panel


def test_speedup_chart_log2_batch_axis_units_and_tooltips(points):
    spec = run_charts.speedup_chart(speedups(points)).to_dict()
    enc = [e for m, e in _layers(spec) if m == "point"][0]
    assert enc["x"]["scale"]["type"] == "log" and enc["x"]["scale"]["base"] == 2
    assert enc["y"]["title"] == "Speedup over eager (x)"
    tips = {t["title"] for t in enc["tooltip"]}
    assert {"Mode", "Batch size", "Step time (ms)", "Eager step time (ms)"} <= tips
    # The failed compile point is not drawn.
    rows = spec["datasets"][spec["data"]["name"]]
    assert ("compile", 64) not in {(r["mode"], r["batch_size"]) for r in rows}


def test_step_time_chart_is_log_log(points):
    spec = run_charts.step_time_chart(points).to_dict()
    encs = _encodings(spec)
    line = [e for e in encs if "y2" not in e][0]
    assert line["y"]["scale"]["type"] == "log" and line["x"]["scale"]["type"] == "log"
    assert line["y"]["title"] == "Step time (ms)"


def test_memory_and_time_split_charts(points):
    mem = run_charts.memory_chart(cost.costs(points)).to_dict()
    enc = _encodings(mem)[0]
    assert enc["y"]["title"] == "Kept on the GPU (MiB)"
    assert "solid: graph pool, light: default pool" in _title(mem)
    assert enc["y"]["stack"] == "zero"  # the parts stacked, both visible
    rows = next(iter(mem["datasets"].values()))
    assert {r["part"] for r in rows} == {"Graph pool", "Default pool"}
    pool = [r for r in rows if r["part"] == "Graph pool" and r["mode"] == "cuda-graph"
            and r["batch_size"] == 8][0]
    assert pool["MiB"] == pytest.approx(32 + 8 * 4096 / 2**20)
    split = split_charts.time_split_chart(points).to_dict()
    titles = {e["y"]["title"] for e in _encodings(split) if "title" in e.get("y", {})}
    assert {"GPU busy fraction", "Host launches per step"} <= titles


def test_cpu_run_without_gpu_figures_draws_only_what_it_has():
    p = points_of(sweep_bundle(device="cpu"))
    got = run_charts.run_charts(p)
    assert set(got) == {"speedup", "step-time"}  # no memory, no busy time on cpu
    only_failed = points_of(sweep_bundle(modes=("eager",), batches=(8,),
                                     failing={("eager", 8): "boom"}))
    assert run_charts.run_charts(only_failed) == {}
    assert run_charts.compare_chart([RunSpeedups("", "", speedups(only_failed))]) is None


def test_compare_is_one_chart_colour_per_run_mark_per_mode():
    a = points_of(sweep_bundle(gpu="A"))
    b = points_of(sweep_bundle(gpu="B", scale=2.0))
    h = headers({"id": 1, "gpu_name": "A", "torch_version": "2.1"},
                {"id": 2, "gpu_name": "B", "torch_version": "2.2", "source": "published"})
    spec = run_charts.compare_chart(comparing.compare_speedups({1: a, 2: b}, h)).to_dict()
    # a single chart read at a glance (it stretches to the page), not a panel per mode
    assert "facet" not in spec and "hconcat" not in spec
    assert spec["autosize"]["type"] == "fit-x"
    points = [e for m, e in _layers(spec) if m == "point"][0]
    assert points["color"]["field"] == "series" and points["shape"]["field"] == "mode"
    assert points["shape"]["scale"]["domain"] == ["compile", "reduce-overhead", "cuda-graph"]
    assert len(set(points["shape"]["scale"]["range"])) == 3
    series = {r["series"] for d in spec["datasets"].values() for r in d if "series" in r}
    assert series == {"A · torch 2.1", "B · torch 2.2 (published)"}


def test_plot_height_is_the_plots_own_and_nothing_is_shortened(points):
    # autosize fit-x: the page stretches the width; legends and titles add to the height
    # instead of squeezing the plot (a 300 px chart had a 105 px plot).
    for name, chart in run_charts.run_charts(points).items():
        spec = chart.to_dict()
        if "hconcat" in spec:
            continue  # the exports' side-by-side form
        assert spec["autosize"] == {"type": "fit-x", "contains": "padding"}, name
        assert spec["height"] >= 150, name
        assert spec["title"]["limit"] == 0, name  # a title is never cut with an ellipsis


def test_legends_list_only_the_modes_a_run_has():
    cpu = points_of(sweep_bundle(device="cpu"))
    step = run_charts.step_time_chart(cpu).to_dict()
    colors = [e["color"] for e in _encodings(step) if "color" in e]
    assert colors[0]["scale"]["domain"] == ["eager", "compile"]  # no graph modes on cpu
    assert colors[0]["scale"]["range"] == [encodings.MODE_COLORS["eager"],
                                           encodings.MODE_COLORS["compile"]]
    speedup = run_charts.speedup_chart(speedups(cpu)).to_dict()
    colors = [e["color"] for e in _encodings(speedup) if "color" in e]
    assert colors[0]["scale"]["domain"] == ["compile"]  # eager is the 1x line


def test_every_chart_renders_through_vega(points):
    # vl-convert runs the real Vega-Lite compiler: an invalid spec raises here.
    for name, chart in run_charts.run_charts(points).items():
        svg = report.chart_svg(chart)
        assert svg.lstrip().startswith("<svg"), name
    png = report.chart_png(run_charts.speedup_chart(speedups(points)), scale=1)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_points_table_marks_failures_and_shows_unknown_as_dash(points):
    t = points_table.points_table(points)
    bad = t[t["Mode"].eq("compile") & t["Batch size"].eq(64)].iloc[0]
    assert bad["Status"] == "✖ error: CUDA out of memory"
    assert bad["Step time (ms)"] == "—"
    ok = t[t["Mode"].eq("cuda-graph") & t["Batch size"].eq(8)].iloc[0]
    assert ok["Graph pool (MiB)"].endswith("MiB")


def test_csv_has_raw_figures_and_unit_named_columns(points):
    df = pd.read_csv(io.StringIO(points_table.points_csv(1, points)))
    assert len(df) == len(points)
    assert {"step_ms", "graph_pool_bytes", "speedup", "details"} <= set(df.columns)
    row = df[(df["mode"] == "eager") & (df["batch_size"] == 8)].iloc[0]
    assert row["speedup"] == 1.0 and row["step_ms"] > 0


def test_html_report_is_self_contained(points):
    h = header(id=7, workload="mlp", workload_params={"depth": 2}, dtype="float32",
               status="done", source="published", label="<b>x</b>", gpu_name="G",
               torch_version="2.1", uuid="u", command="python -m runner sweep --workload mlp")
    html = report.html_report(h, points, "http://127.0.0.1:8501/run?run=7")
    assert html.count("<svg") >= 4
    assert "<script" not in html.lower()
    # No external resource: the only URL outside the SVG namespace is the share link.
    urls = set(re.findall(r"(?:src|href)=['\"]([^'\"]+)", html))
    assert urls <= {"http://127.0.0.1:8501/run?run=7"}
    assert "&lt;b&gt;x&lt;/b&gt;" in html  # the label is escaped
    assert run_text.PUBLISHED_NOTE in html
    assert "CUDA out of memory" in html


def test_headline_sentences_for_published_figures():
    from db.samples import SAMPLES

    p = points_of(fmt.read(SAMPLES / "published-l40s-day25.json"))
    lines = run_text.headline(p)
    assert lines[0].startswith("compile: up to 1.41x over eager, at batch 8192")
    assert lines[0].endswith("; no interval")  # published figures carry none
    assert any(line.startswith("reduce-overhead: up to 9.45x") for line in lines)
    assert any("from batch 8192 on" in line for line in lines)
    assert lines[-1] == ("Payback unknown for compile, reduce-overhead, cuda-graph (setup "
                         "time not recorded).")


def test_headline_quotes_the_interval_ranks_by_lower_bound_and_names_ties():
    # cuda-graph at batch 64: a spike (20x) whose interval is wide; batch 8's lower bound is
    # the highest, and its median lies inside batch 1's and batch 64's intervals.
    ci = lambda sp, lo, hi: {"speedup": sp, "speedup_ci_low": lo,  # noqa: E731
                             "speedup_ci_high": hi}
    p = points_of(sweep_bundle(overrides={("cuda-graph", 1): ci(10.0, 9.0, 11.0),
                                      ("cuda-graph", 8): ci(10.5, 10.0, 11.0),
                                      ("cuda-graph", 64): ci(20.0, 8.0, 40.0),
                                      ("cuda-graph", 512): ci(6.0, 5.8, 6.2)}))
    line = [x for x in run_text.headline(p) if x.startswith("cuda-graph:")][0]
    assert line.startswith("cuda-graph: up to 10.50x (10.00-11.00x) over eager, at batch 8 (")
    # the best itself is not among the batch sizes within noise of it
    assert line.endswith("; within noise of it: batches 1, 64")
    assert "20.00x" not in line
    assert any(x.startswith("Host launch cost: 10.0 us per launch") for x in run_text.headline(p))


def test_headline_never_names_a_point_within_noise_of_1x_beside_an_up_to_figure():
    # The H200 mlp sample's compile (issue 46): best 1.06x (1.05-1.08x) at batch 4096;
    # batch 1's interval (0.99-1.14x) holds the best's figure and 1x too: no speedup, so
    # it is not quoted beside "up to"; batch 1024 (1.04-1.08x) is.
    ci = lambda sp, lo, hi: {"speedup": sp, "speedup_ci_low": lo,  # noqa: E731
                             "speedup_ci_high": hi}
    p = points_of(sweep_bundle(batches=(1, 8, 1024, 4096), modes=("eager", "compile"),
                               overrides={("compile", 1): ci(1.054, 0.986, 1.142),
                                          ("compile", 8): ci(0.68, 0.60, 0.74),
                                          ("compile", 1024): ci(1.060, 1.042, 1.085),
                                          ("compile", 4096): ci(1.064, 1.051, 1.081)}))
    line = [x for x in run_text.headline(p) if x.startswith("compile:")][0]
    assert line.startswith("compile: up to 1.06x (1.05-1.08x) over eager, at batch 4096")
    assert "; within noise of it: batch 1024" in line
    assert "batch 1," not in line and "batches 1" not in line


def test_old_run_headline_says_no_interval(old_points):
    lines = run_text.headline(old_points)
    assert all(x.endswith("; no interval") for x in lines if " over eager" in x)
    assert not any(x.startswith("Host launch cost") for x in lines)


def test_points_table_shows_intervals_and_noise_badges(old_points):
    p = points_of(sweep_bundle(batches=(8,), overrides={("compile", 8): {"noisy": True}}))
    t = points_table.points_table(p).set_index("Mode")
    assert t.at["compile", "Noise"] == "noisy" and t.at["eager", "Noise"] == "ok"
    assert t.at["cuda-graph", "Speedup over eager 95% CI"].endswith("x")
    assert t.at["eager", "Speedup over eager 95% CI"] == "—"  # the baseline has none
    assert t.at["eager", "Step time 95% CI"].endswith(" ms")
    assert t.at["eager", "Host launch cost (us)"] == "10.0 us"
    old = points_table.points_table(old_points)
    assert set(old["Noise"]) == {"no interval"}
    assert set(old["Step time 95% CI"]) == {"no interval"}


def test_html_report_carries_intervals_and_noise(points):
    html = report.html_report(header(torch_version="2.1"), points)
    assert "<b>Noise:</b> ok: all 19 points within target" in html
    assert "95% interval" in html


def test_two_runs_of_one_gpu_and_torch_are_two_series(points):
    # Compare #11 and #10, both "NVIDIA H200 · torch 2.11": one colour and one legend entry
    # for both, seen in chromium; each is now named by its id.
    h = headers(*({"id": i, "gpu_name": "NVIDIA H200", "torch_version": "2.11"}
                  for i in (1, 2)), {"id": 3, "gpu_name": "B", "torch_version": "2.11"})
    sp = comparing.compare_speedups({i: points for i in (1, 2, 3)}, h)
    assert [r.series for r in sp] == ["#1 NVIDIA H200 · torch 2.11",
                                      "#2 NVIDIA H200 · torch 2.11", "B · torch 2.11"]
