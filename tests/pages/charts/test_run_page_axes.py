"""The Run page's axes and legends as a reader at 1280x800 found them (issue 46): a batch
axis ticks exactly the measured batch sizes, every one labelled, with room for a whole
marker at either end; the two energy charts share one batch domain; the time split's
percent axis, launch counts of 0 and 1, and projection lines read as what they are."""

from __future__ import annotations

import json
from pathlib import Path

from contract.speedups import speedups
from pages.charts import encodings, layout, run_charts, split_charts
from pages.logic import energy, run_text
from tests import specs
from tests.records import points_of
from tests.synthetic import sweep_bundle

SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples"


def _sample(name: str):
    return points_of(json.loads((SAMPLES / name).read_text()))


def _x_axes(spec) -> list[dict]:
    """Every x encoding on batch_size in a (layered) spec."""
    return [e["x"] for e in specs.encodings(spec)
            if isinstance(e.get("x"), dict) and e["x"].get("field") == "batch_size"]


def test_batch_axis_ticks_exactly_the_measured_batch_sizes_all_labelled():
    x = encodings.batch_x([1, 8, 64, 8192, 8, 1]).to_dict()
    assert x["axis"]["values"] == [1, 8, 64, 8192]  # no 4 or 16, and 8192 is there
    assert x["axis"]["labelOverlap"] is False  # vega drops no label
    assert x["scale"]["domain"] == [1, 8192] and x["scale"]["padding"] > 0
    # Labels that would collide written level are slanted, never dropped.
    wide = encodings.batch_x([1, 16, 256, 4096, 65536, 524288, 4194304, 16777216]).to_dict()
    assert wide["axis"]["labelAngle"] != 0 and wide["axis"]["labelOverlap"] is False
    assert encodings.batch_x([1, 8, 64]).to_dict()["axis"]["labelAngle"] == 0
    # One batch size: a span around it, its one tick in the middle.
    one = encodings.batch_x([500000]).to_dict()
    assert one["axis"]["values"] == [500000] and one["scale"]["domain"] == [250000, 1000000]


def test_every_batch_axis_of_the_run_charts_is_the_runs_batch_sizes():
    p = points_of(sweep_bundle(batches=(1, 8, 64, 8192)))
    for name, chart in {**run_charts.run_charts(p), **split_charts.host_split_charts(p),
                        **split_charts.time_split_charts(p)}.items():
        for x in _x_axes(chart.to_dict()):  # the memory bars: a band a batch size
            assert x["type"] == "ordinal" or x["axis"]["values"] == [1, 8, 64, 8192], name


def test_published_l40s_markers_sit_inside_the_plot():
    spec = run_charts.speedup_chart(speedups(_sample("published-l40s-day25.json"))).to_dict()
    x = _x_axes(spec)[0]
    assert x["axis"]["values"] == [8, 8192] and x["scale"]["padding"] >= 10


def test_four_mode_legend_fits_and_three_modes_take_one_row():
    three = ["compile", "reduce-overhead", "cuda-graph"]
    assert layout.legend(entries=3, labels=three).to_dict()["columns"] == 3
    four = ["eager", *three]  # wider than a half-page chart in one row
    assert layout.legend(entries=4, labels=four).to_dict()["columns"] == 2
    color = encodings.mode_color(three).to_dict()
    assert color["title"] is None and color["legend"]["columns"] == 3


def test_energy_charts_share_one_batch_domain_on_the_h200_energy_sample():
    p = _sample("h200-mlp-energy.json")
    got = run_charts.run_charts(p, names=["energy", "energy-above-idle"])
    left, right = (_x_axes(got[k].to_dict()) for k in ("energy", "energy-above-idle"))
    assert {json.dumps(x["scale"]["domain"]) for x in left + right} == {"[1, 8192]"}
    assert left[0]["axis"]["values"] == right[0]["axis"]["values"] == [1, 8, 64, 8192]
    # Points within the counter's error are left out above idle: the page says which.
    assert "not drawn" in json.dumps(got["energy-above-idle"].to_dict()["title"])
    left_out = energy.left_out_text(p)
    assert left_out and "within the counter's error" in left_out and "compile" in left_out


def test_time_split_axes_read_as_what_they_are():
    p = points_of(sweep_bundle(batches=(1, 8, 64)))
    charts = {k: c.to_dict() for k, c in split_charts.time_split_charts(p).items()}
    busy = charts["busy"]
    assert "1.0" not in json.dumps(busy["title"]) and "100%" in json.dumps(busy["title"])
    y = busy["layer"][0]["encoding"]["y"]
    assert y["scale"]["domain"][0] == 0 and y["axis"]["values"][-1] == 1.0
    assert y["axis"]["labelFlush"] is False  # the 100% label on the dashed line
    launches = charts["launches"]["layer"][0]["encoding"]["y"]
    # 0 and 1 launches apart from each other and from the zero line: a symlog axis
    assert launches["scale"]["type"] == "symlog" and launches["axis"]["values"][:2] == [0, 1]


def test_launch_scatter_names_batch_sizes_in_a_legend_not_over_the_dots():
    p = _sample("h100-mlp.json")
    spec = split_charts.host_split_charts(p)["launch-scatter"].to_dict()
    marks = [lay["mark"]["type"] if isinstance(lay["mark"], dict) else lay["mark"]
             for lay in spec["layer"]]
    assert "text" not in marks
    dash = spec["layer"][0]["encoding"]["strokeDash"]
    assert dash["scale"]["domain"] == ["1", "8", "64", "8,192"]
    assert spec["layer"][1]["encoding"]["x"]["scale"]["padding"] > 0  # whole dots at edges


def test_published_l40s_charts_and_findings_name_the_mean_they_show():
    p = _sample("published-l40s-day25.json")
    step = json.dumps(run_charts.step_time_chart(p).to_dict()["title"])
    assert "mean, no interval or band given" in step and "median" not in step
    speedup = json.dumps(run_charts.speedup_chart(speedups(p)).to_dict()["title"])
    assert "no interval measured" in speedup and "95% interval" not in speedup
    lines = [x for x in run_text.headline(p) if " over eager, at batch" in x]
    assert lines and all("ms, means)" in x for x in lines)
    # a measured run keeps its medians
    measured = points_of(sweep_bundle(batches=(1, 8)))
    assert run_text.step_statistic(measured) == "median"
    assert "median, 95% interval" in json.dumps(
        run_charts.step_time_chart(measured).to_dict()["title"])


def test_log_y_leaves_room_for_a_marker_at_its_ends():
    y = encodings.log_y("speedup", [1.0, 9.88]).to_dict()
    assert y["scale"]["domain"] == [1.0, 10.0] and y["scale"]["padding"] > 0


def test_memory_bars_label_every_batch_size_as_the_other_axes_do():
    x = encodings.batch_band_x([1, 8, 64, 1024, 8192]).to_dict()
    assert x["type"] == "ordinal" and x["sort"] == [1, 8, 64, 1024, 8192]
    assert "',d'" in x["axis"]["labelExpr"] and x["axis"]["labelOverlap"] is False
    wide = encodings.batch_band_x([1, 16, 256, 4096, 65536, 524288, 4194304, 16777216])
    assert wide.to_dict()["axis"]["labelAngle"] != 0


def test_speed_view_charts_start_their_plots_under_their_titles():
    # The mode legend under the plot (no other legend there): the two charts side by side
    # (three modes and four) start their plots at one height, right under their titles.
    p = points_of(sweep_bundle(batches=(1, 8, 64)))
    for chart in (run_charts.speedup_chart(speedups(p)), run_charts.step_time_chart(p)):
        colors = [e["color"] for e in specs.encodings(chart.to_dict()) if "color" in e]
        assert {c["legend"]["orient"] for c in colors if c.get("legend")} == {"bottom"}
        assert all(c["title"] is None for c in colors)
