"""Energy on the pages (issue 28): the Run page's Energy view (a chart with data, one line
with the recorded reason without), the headline's energy words, the points table, the CSV
and the HTML report."""

from __future__ import annotations

import io
from dataclasses import replace
from html import unescape

import pandas as pd
import pytest

from contract.run_summary import energy_text, less_energy
from pages.charts import report, run_charts
from pages.logic import energy, points_table, run_text
from tests.apptest import charts as page_charts
from tests.apptest import run_views, texts
from tests.records import header as record_header
from tests.records import points_of
from tests.synthetic import sweep_bundle

BATCHES = (8, 64, 512)


def _energy_overrides() -> dict:
    """eager ~118 W, the graph modes ~126 W; cuda-graph 6.25x less energy at batch 8."""
    out = {}
    for b in BATCHES:
        eager = 100.0 + b / 8
        out[("eager", b)] = {"energy_mj_per_step": eager, "energy_mj_per_step_ci_low": eager * 0.97,
                             "energy_mj_per_step_ci_high": eager * 1.03, "avg_power_w": 118.0,
                             "idle_power_w": 70.0, "energy_above_idle_mj_per_step": eager / 3}
        for mode, gain in (("compile", 1.1), ("reduce-overhead", 3.0), ("cuda-graph", 6.25)):
            e = eager / gain
            out[(mode, b)] = {"energy_mj_per_step": e, "energy_mj_per_step_ci_low": e * 0.95,
                              "energy_mj_per_step_ci_high": e * 1.05, "avg_power_w": 126.0,
                              "idle_power_w": 70.0,
                              "energy_above_idle_mj_per_step": -0.1 if gain > 6 else e / 3,
                              "energy_gain": gain, "energy_gain_ci_low": gain * 0.9,
                              "energy_gain_ci_high": gain * 1.1}
    return out


@pytest.fixture(scope="module")
def with_energy():
    return points_of(sweep_bundle(batches=BATCHES, overrides=_energy_overrides()))


@pytest.fixture(scope="module")
def without():
    return points_of(sweep_bundle(batches=BATCHES))


def test_energy_charts_only_with_data(with_energy, without):
    got = run_charts.run_charts(with_energy)
    assert {"energy", "energy-above-idle"} <= set(got)
    spec = got["energy"].to_dict()
    assert "Energy per step" in str(spec["title"])
    assert any(layer.get("mark", {}).get("type") == "errorbar"
               if isinstance(layer.get("mark"), dict) else layer.get("mark") == "errorbar"
               for layer in spec["layer"])
    assert not {"energy", "energy-above-idle"} & set(run_charts.run_charts(without))
    for name in ("energy", "energy-above-idle"):
        report.chart_svg(got[name])  # renders through vega


def test_headline_gains_energy_words(with_energy, without):
    line = run_text.summary_of(record_header(), with_energy).headline()
    assert line.startswith("cuda-graph at batch") and "84% less energy per step" in line
    assert "energy" not in run_text.summary_of(record_header(), without).headline()
    found = [x for x in run_text.headline(with_energy) if x.startswith("Energy: cuda-graph")]
    assert found and "84% less energy per step than eager (6.25x" in found[0]
    assert not [x for x in run_text.headline(without) if x.startswith("Energy:")]
    assert less_energy(0.5) == "100% more energy per step"
    assert energy.mj_text(1143.6) == "1,144 mJ" and energy.mj_text(17.12) == "17.1 mJ"
    assert energy._against_eager(1.001) == "the same energy per step as eager"
    assert energy._against_eager(6.25) == "84% less energy per step than eager"


def test_missing_reason_says_why_in_one_line(without):
    assert energy.missing_reason(without) == energy.NOT_RECORDED
    # a published run was never measured here: not "measured before energy" (issue 46)
    assert energy.missing_reason(without, published=True) == energy.PUBLISHED_NONE
    cpu = [replace(m, energy=replace(
        m.energy, unavailable_reason="no CUDA device: this sweep runs on cpu")) for m in without]
    assert energy.missing_reason(cpu) == ("No energy figures: no CUDA device: this sweep runs "
                                          "on cpu.")


def test_table_csv_and_html_carry_energy(with_energy, without):
    table = points_table.points_table(with_energy)
    assert {"Energy per step (mJ)", "Energy per step 95% CI", "Energy gain over eager (x)",
            "Average power (W)"} <= set(table.columns)
    assert not any("Energy" in c for c in points_table.points_table(without).columns)
    df = pd.read_csv(io.StringIO(points_table.points_csv(1, with_energy)))
    assert {"energy_mj_per_step", "avg_power_w", "idle_power_w", "energy_gain",
            "energy_unavailable_reason"} <= set(df.columns)
    row = df[(df["mode"] == "cuda-graph") & (df["batch_size"] == 8)].iloc[0]
    assert row["energy_gain"] == 6.25
    header = {"id": 3, "workload": "mlp", "workload_params": {}, "status": "done",
              "source": "measured", "gpu_name": "G", "torch_version": "2.11", "uuid": "u"}
    html = report.html_report(record_header(**header), with_energy)
    assert "84% less energy per step" in html and "Energy per step (mJ)" in html
    assert html.count("<svg") >= 4


def test_run_page_energy_view(dash):
    rid = dash.add(batches=BATCHES, overrides=_energy_overrides())
    at = run_views(dash, rid, ("Energy",))["Energy"]
    assert len(page_charts(at)) == 2  # energy per step, and above idle
    assert any("84% less energy per step" in m for m in texts(at, "markdown"))
    old = dash.add(batches=BATCHES)
    at = run_views(dash, old, ("Energy",))["Energy"]
    assert page_charts(at) == []
    assert texts(at, "info") == [energy.NOT_RECORDED]
    cpu = dash.add(device="cpu", batches=(8,), modes=("eager",), overrides={
        ("eager", 8): {"energy_unavailable_reason": "no CUDA device: this sweep runs on cpu"}})
    at = run_views(dash, cpu, ("Energy",))["Energy"]
    assert texts(at, "info") == ["No energy figures: no CUDA device: this sweep runs on cpu."]


def test_compare_and_trend_show_energy_where_measured(dash):
    a = dash.add(batches=BATCHES, overrides=_energy_overrides(), gpu="A",
                 created_at="2026-01-01T00:00:00+00:00")
    b = dash.add(batches=BATCHES, gpu="A", created_at="2026-01-02T00:00:00+00:00")
    at = dash.open("pages/compare.py", run=[str(a), str(b)])
    assert "Energy per step, side by side" in texts(at, "subheader")
    table = next(d.value for d in at.dataframe if any(c.endswith(" mJ") for c in d.value))
    # the run without energy: no column (never 0, never a column of blanks), and named
    assert table[[c for c in table.columns if c.endswith(" mJ")]].notna().sum().tolist() \
        == [len(BATCHES) * 4]
    assert any(f"#{b} " in c and "No energy figure" in c for c in texts(at, "caption"))
    at = dash.open("pages/compare.py", run=[str(b), str(dash.published)])
    assert "Energy per step, side by side" not in texts(at, "subheader")
    at = dash.open("pages/trend.py", workload="mlp", gpu="A")
    table = at.dataframe[-1].value
    assert "energy_mj_per_step" in table.columns
    assert table["energy_mj_per_step"].notna().any() and table["energy_mj_per_step"].isna().any()


def test_serve_summary_has_energy_per_request_only_where_measured():
    from pages.logic.serve_tables import summary_table

    base = {"strategy": "eager", "status": "ok", "execution": "eager", "message": "",
            "requests_per_s": 1.0, "rows_per_s": 1.0, "latency_ms_p50": 1.0,
            "latency_ms_p99": 1.0, "padding_waste": 0.0, "hit_rate": None,
            "fallback_rate": None, "graphs": 0, "graph_pool_bytes": None, "setup_s": 0.1,
            "correct": True, "kind": "eager"}
    none = pd.DataFrame([{**base, "details": {"energy": {"unavailable_reason": "no CUDA"}}}])
    assert "mJ/request" not in summary_table(none).columns
    some = pd.DataFrame([{**base, "details": {"energy": {"energy_mj_per_request": 12.5}}},
                         {**base, "strategy": "compile", "details": {}}])
    assert summary_table(some)["mJ/request"].tolist() == ["12.500", "—"]


def test_launch_form_energy_checkbox_goes_into_the_queued_spec(tmp_path):
    from pages.logic import launch_form as lf

    good = lf.FormValues(workload="mlp", modes=lf.DEFAULTS["modes"], timing="quick", device="auto",
                         batch_preset=lf.CUSTOM, custom_batches="1,8")
    assert lf.check(good).spec.energy is True
    off = lf.check(replace(good, energy=False))
    assert off.spec.energy is False
    assert off.spec.to_json(queued=True)["energy"] is False  # what the queue stores
    assert "--no-energy" in off.spec.command()
    bad = lf.check(replace(good, energy="no"))
    assert bad.errors == {"energy": "energy 'no' must be true or false"}


def _within_and_inconclusive() -> dict:
    """cuda-graph at batch 8 draws 70.5 W over a 70 W idle, inside the counter's error
    (2% quantisation a window), and its energy gain spans 0-19.85x (issue 38's H200)."""
    out = _energy_overrides()
    window = {"mode": "cuda-graph", "round": 0, "mj": 70.5e3, "steps": 1000, "seconds": 1.0,
              "edge_s": 0.02, "poll_s": 0.0}  # the runner's window shape, every key
    out[("cuda-graph", 8)] = {**out[("cuda-graph", 8)], "avg_power_w": 70.5,
                              "idle_power_w": 70.0, "energy_above_idle_mj_per_step": -6.1,
                              "energy_gain": 6.08, "energy_gain_ci_low": 0.0,
                              "energy_gain_ci_high": 19.85,
                              "details": {"energy_windows": [window],
                                          "energy_idle": {"power_w": 70.0, "seconds": 1.0,
                                                          "mj": 70e3, "edge_s": 0.02}}}
    for b in BATCHES[1:]:  # cuda-graph's other gains inconclusive too
        out[("cuda-graph", b)] = {**out[("cuda-graph", b)], "energy_gain_ci_low": 0.5,
                                  "energy_gain_ci_high": 30.0}
    return out


def test_energy_view_says_its_rule_in_one_line():
    assert "mean power x the timed step" in energy.RULE and energy.RULE in energy.CAPTION


def test_within_error_and_inconclusive_gains_are_said_in_words():
    pts = points_of(sweep_bundle(batches=BATCHES, overrides=_within_and_inconclusive()))
    table = points_table.points_table(pts).set_index(["Mode", "Batch size"])
    row = table.loc[("cuda-graph", 8)]
    assert row["Energy per step above idle (mJ)"] == energy.WITHIN_ERROR
    assert row["Energy gain over eager (x)"] == "inconclusive"
    assert table.loc[("reduce-overhead", 8), "Energy gain over eager (x)"] != "inconclusive"
    # Not drawn as a number on the above-idle chart.
    above = run_charts.energy_chart(pts, above_idle=True).to_dict()
    rows = next(iter(above["datasets"].values()))
    assert not [r for r in rows if r["mode"] == "cuda-graph" and r["batch_size"] == 8]
    # The findings and the headline never quote an inconclusive gain as "% less energy".
    lines = [x for x in run_text.headline(pts) if x.startswith("Energy: cuda-graph")]
    assert lines and "inconclusive" in lines[0] and "less energy" not in lines[0]
    summary = run_text.summary_of(record_header(), pts)
    assert "inconclusive" in energy_text(summary.best("cuda-graph"))
    header = {"id": 3, "workload": "mlp", "workload_params": {}, "status": "done",
              "source": "measured", "gpu_name": "G", "torch_version": "2.11", "uuid": "u"}
    html = unescape(report.html_report(record_header(**header), pts))
    assert energy.WITHIN_ERROR in html and "-6.1" not in html and energy.RULE in html
