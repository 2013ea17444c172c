"""Trends: the query string, the ordering over torch versions, the change verdicts, and
the page through AppTest (a bad query string included)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

import pandas as pd
import pytest

from contract import bundle as fmt
from contract.measurement import Measurement
from contract.run_summary import RunListing
from db import queries
from db.store import import_bundle
from pages.charts import trend_chart
from pages.logic import metrics, trends
from runner.history.series import torch_key
from tests.apptest import charts, share_links, texts
from tests.conftest import ROOT
from tests.records import header

WORKLOADS, GPUS = ["mlp", "resnet"], ["NVIDIA H200", "cpu"]


def _q(**params):
    asked = {k: [] for k in trends.QUERY_KEYS}
    asked.update({k: v if isinstance(v, list) else [v] for k, v in params.items()})
    return trends.parse_query(asked, WORKLOADS, GPUS)


def test_a_good_query_string():
    q = _q(workload="mlp", gpu="NVIDIA H200", batch=["64", "8,8"], mode="cuda-graph")
    assert (q.workload, q.gpu, q.batches, q.modes) == ("mlp", "NVIDIA H200", (8, 64),
                                                       ("cuda-graph",))
    assert _q() == trends.TrendQuery(None, None, None, (), ())
    assert _q(order="date").order == "date" and _q().order == "torch"


@pytest.mark.parametrize("params, message", [
    ({"workload": "nosuch"}, "?workload='nosuch' has no run here"),
    ({"gpu": "TPU"}, "?gpu='TPU' has no run here"),
    ({"batch": "８"}, "?batch='８' is not a batch size: expected a whole number in ASCII"),
    ({"batch": "1e3"}, "?batch='1e3' is not a batch size"),
    ({"batch": "-4"}, "?batch='-4' is not a batch size"),
    ({"batch": "0"}, "?batch='0' is out of range"),
    ({"batch": "99999999999999999999"}, "is not a batch size"),
    ({"mode": "eager"}, "?mode='eager' is not a mode with a speedup"),
    ({"workload": ["mlp", "resnet"]}, "?workload= is given 2 times"),
    ({"order": "size"}, "?order='size' is not an order: choose one of torch, date, run"),
])
def test_bad_query_strings_name_the_value(params, message):
    with pytest.raises(trends.TrendQueryError) as e:
        _q(**params)
    assert message in str(e.value)


def test_torch_versions_order_by_release_then_pre_release():
    versions = ["2.10.0", "2.6.0+cu124", "2.6.0.dev20241112", "2.5.1", None]
    assert sorted(versions, key=torch_key) == [
        None, "2.5.1", "2.6.0.dev20241112", "2.6.0+cu124", "2.10.0"]


def _sp(run_id, sp, half=0.02, mode="cuda-graph", batch=8):
    return {"run_id": run_id, "mode": mode, "batch_size": batch, "status": "ok",
            "step_ms": 1.0, "speedup": sp, "speedup_ci_low": sp * (1 - half),
            "speedup_ci_high": sp * (1 + half), "details": {}}


def test_changes_outside_the_noise_are_marked_against_the_previous_run():
    runs = [header(id=i, torch_version=f"2.{4 + i}",
                   created_at=datetime(2026, 1, 5 - i, tzinfo=timezone.utc))
            for i in (1, 2, 3, 4)]
    eager = {"mode": "eager", "speedup": None, "speedup_ci_low": None, "speedup_ci_high": None}
    points = {i: [Measurement.from_json({**_sp(i, 1.0), **eager}),
                  Measurement.from_json(_sp(i, x))]
              for i, x in ((1, 5.0), (2, 5.1), (3, 6.5), (4, 4.0))}
    table = trends.trend_table(runs, points, [8], ["cuda-graph"])
    assert list(table["run_id"]) == [1, 2, 3, 4]
    assert list(table["change"]) == ["first", "within noise", "faster", "slower"]
    assert table["change vs previous"].iloc[2].startswith("faster (1.27x; ")
    assert list(trends.changes(table)["run_id"]) == [3, 4]
    assert trend_chart.trend_chart(table, 8) is not None
    assert trend_chart.trend_chart(table, 64) is None


# --- the page -------------------------------------------------------------------------------

def _runs(dash):
    up = {("cuda-graph", 8): {"speedup": 30.0, "speedup_ci_low": 29.0, "speedup_ci_high": 31.0}}
    return [dash.add(gpu="Trend GPU", torch="2.5.1", created_at="2026-01-01T00:00:00+00:00"),
            dash.add(gpu="Trend GPU", torch="2.6.0", created_at="2026-02-01T00:00:00+00:00"),
            dash.add(gpu="Trend GPU", torch="2.7.0", created_at="2026-03-01T00:00:00+00:00",
                     overrides=up)]


def test_trend_page_marks_a_change_and_shares_its_url(dash):
    ids = _runs(dash)
    at = dash.open("pages/trend.py", workload="mlp", gpu="Trend GPU", batch=["8", "512"])
    assert not at.error and not at.exception
    keys = at.table[0].value  # each run's key figure, oldest torch first
    assert [k.rsplit("#", 1)[1] for k in keys["run"]] == [str(i) for i in ids]
    assert keys["key figure"].iloc[-1] == "cuda-graph at batch 8: 30.00x (29.00-31.00x)"
    table = next(d.value for d in at.dataframe if "run_id" in d.value.columns)
    assert set(table["run_id"]) == set(ids) and set(table["batch_size"]) == {8, 512}
    assert len(charts(at)) == 4  # step times with their change points, then speedups
    moved = " ".join(texts(at, "markdown"))
    assert "**cuda-graph** at batch 8: faster" in moved and f"#{ids[2]}" in moved
    share = " ".join(share_links(at))
    assert "/trend?workload=mlp&gpu=Trend+GPU&params=" in share and "batch=8&batch=512" in share
    assert at.query_params.get("gpu") == "Trend GPU"


def _stepped(dash, gpu="Step GPU"):
    """Four runs of one series, stored out of torch order; torch 2.7 made every step 30%
    longer."""
    return [dash.add(gpu=gpu, torch=t, scale=s, created_at=f"2026-0{m}-01T00:00:00+00:00")
            for t, s, m in (("2.6.0", 1.0, 1), ("2.7.0", 1.3, 2), ("2.4.0", 1.0, 3),
                            ("2.5.1", 1.0, 4))]


def _change_table(at):
    found = [d.value for d in at.dataframe if "between runs" in d.value.columns]
    assert len(found) == 1
    return found[0]


def test_trend_page_lists_change_points_newest_first_with_compare_links(dash):
    ids = _stepped(dash)
    at = dash.open("pages/trend.py", workload="mlp", gpu="Step GPU", batch=["8", "512"],
                   mode="cuda-graph")
    assert not at.error and not at.exception
    found = _change_table(at)
    # eager (always: every speedup's reference) and cuda-graph at two batch sizes
    assert len(found) == 4 and set(found["verdict"]) == {"regression"}
    first = found.iloc[0]
    assert (first["mode"], first["batch"]) == ("eager", 8)
    assert first["change"] == pytest.approx(30.0)
    assert first["compare"] == f"/compare?run={ids[0]}&run={ids[1]}&batch=8"
    assert first["between runs"] == f"#{ids[0]} → #{ids[1]} (torch 2.6.0 → 2.7.0)"
    steps = [c for c in charts(at) if "Step time at batch" in c.proto.spec]
    assert len(steps) == 2 and "triangle-up" in steps[0].proto.spec
    # By date the slow run is the second of four: a regression, then an improvement.
    at = dash.open("pages/trend.py", workload="mlp", gpu="Step GPU", batch="8",
                   mode="cuda-graph", order="date")
    found = _change_table(at)  # newest first
    assert list(found["verdict"]) == ["improvement", "improvement", "regression",
                                      "regression"]
    assert list(found["mode"]) == ["eager", "cuda-graph"] * 2
    assert at.query_params.get("order") == "date"
    assert "ordered by date the run started" in " ".join(texts(at, "caption"))


def test_trend_page_says_when_no_step_changed(dash):
    for m in (1, 2, 3):
        dash.add(gpu="Flat GPU", torch=f"2.{m}.0", created_at=f"2026-0{m}-01T00:00:00+00:00")
    at = dash.open("pages/trend.py", workload="mlp", gpu="Flat GPU", batch="8")
    assert "No change point in the step times" in " ".join(texts(at, "success"))
    assert len(charts(at)) == 2  # a step chart and a speedup chart, no list between


@pytest.mark.parametrize("params, message", [
    ({"workload": "mlp", "order": "size"}, "?order='size' is not an order"),
    ({"workload": "mlp", "batch": "８"}, "?batch='８' is not a batch size"),
    ({"workload": "mlp", "gpu": "No such GPU"}, "?gpu='No such GPU' has no run here"),
    ({"workload": "<script>"}, "?workload='<script>' has no run here"),
])
def test_trend_page_bad_query_string_is_one_clear_message(dash, params, message):
    at = dash.open("pages/trend.py", **params)
    assert [e for e in texts(at, "error") if message in e], texts(at, "error")
    assert len(at.error) == 1 and not at.exception and not charts(at)


def test_default_view_is_the_series_with_the_most_runs():
    def run(i, workload, gpu, params, day, kind="sweep"):
        return RunListing(header(id=i, kind=kind, workload=workload, gpu_name=gpu,
                                 workload_params=params, dtype="float32",
                                 created_at=datetime(2026, 1, day, tzinfo=timezone.utc)))
    runs = [run(1, "alpha", "A", {"n": 1}, 1),
            run(2, "mlp", "B", {"n": 1}, 2), run(3, "mlp", "B", {"n": 1}, 3),
            run(4, "mlp", None, {"n": 1}, 4), run(5, "zeta", "A", {"n": 1}, 9, "serve")]
    # alpha sorts first but has one run; mlp on B has two of one parameter set
    assert trends.default_view(runs) == ("mlp", "B")
    assert trends.default_view(runs, "alpha") == ("alpha", "A")
    one_each = [runs[0], runs[3]]
    assert trends.default_view(one_each) == ("mlp", "cpu")  # a tie: the newest
    assert trends.default_view([]) is None


def test_one_run_in_a_series_says_there_is_nothing_to_compare_yet(dash):
    # The shipped samples hold one run per series: "no change between consecutive runs"
    # would claim a comparison that never happened.
    dash.add(gpu="Lonely GPU", torch="2.6.0")
    at = dash.open("pages/trend.py", workload="mlp", gpu="Lonely GPU")
    assert not at.exception
    assert any("One run in this series" in t for t in texts(at, "info"))
    assert not any("No change outside the noise" in t for t in texts(at, "success"))


# --- a series of one run (issue 37) --------------------------------------------------------

def test_series_count_the_runs_of_each_workload_gpu_and_parameter_set(dash):
    from db import queries

    runs = queries.runs_list(dash.engine)
    s = trends.series(runs)
    assert s["runs"].sum() == sum(r.header.kind == "sweep" for r in runs)  # one series each
    many = trends.trend_series(runs)
    assert not many.empty and many["runs"].ge(2).all()
    assert len(many) == s["runs"].ge(2).sum()
    # The shipped CPU series: mlp under torch 2.10 to 2.13 on one host, one parameter set.
    [cpu] = many[(many["workload"] == "mlp") & (many["gpu"] == "cpu")]["runs"].tolist()
    assert cpu == 4


def test_a_one_run_series_says_what_a_trend_needs_and_shows_single_runs(app_db_url):
    # A database whose every series has one run (not seeded: it is not empty).
    from db.engine import make_engine
    from db.store import import_bundle
    from tests.apptest import open_app
    from tests.synthetic import sweep_bundle

    engine = make_engine(app_db_url)
    try:
        for w, gpu in [("mlp", "Synthetic GPU"), ("mlp", "Other GPU"),
                       ("transformer-decode", "Synthetic GPU")]:
            import_bundle(engine, sweep_bundle(workload=w, gpu=gpu))
        at = open_app("pages/trend.py")
        said = " ".join(texts(at, "info"))
        assert "two or more runs of the same workload on this GPU" in said
        assert "No series here has a second run yet" in said
        assert [c for c in charts(at) if "one run a point" in c.proto.spec]

        from db import queries

        runs = queries.runs_list(engine)
        points = trends.single_runs(queries.run_summaries(engine,
                                                          [r.header.id for r in runs]))
        assert len(points) == 3 and points["run_id"].is_unique  # one point a run
        other = points[points["run"].str.startswith("mlp · Other GPU")].iloc[0]
        assert re.fullmatch(r"[a-z-]+ at batch \d+: [\d.]+x \([\d.]+-[\d.]+x\)",
                            other["figure"]), other["figure"]
        assert json.loads(trend_chart.single_runs_chart(points).to_json())["layer"]
    finally:
        engine.dispose()


def test_a_one_run_series_offers_the_series_that_have_two(dash):
    dash.add(workload="mlp", gpu="Synthetic GPU", uuid="a",
             created_at="2026-01-01T00:00:00+00:00")
    dash.add(workload="mlp", gpu="Synthetic GPU", uuid="b",
             created_at="2026-01-02T00:00:00+00:00")
    at = dash.open("pages/trend.py", workload="kernel-chain", gpu="NVIDIA H200")  # one run
    from db import queries

    have = trends.trend_series(queries.runs_list(dash.engine))
    assert f"{len(have)} series here have them" in " ".join(texts(at, "info"))
    links = [p for p in at.get("page_link") if "Synthetic GPU" in p.proto.label]
    assert len(links) == 1 and "2 runs" in links[0].proto.label
    assert not [c for c in charts(at) if "one run a point" in c.proto.spec]


# --- what the change points cannot see, and one machine's runs (issue 47) ---------------

def test_no_change_point_says_the_change_it_could_not_see(dash):
    """The shipped CPU series: a green "No change point" over intervals that span three
    decades now says how large a change would pass unseen."""
    at = dash.open("pages/trend.py", workload="mlp", gpu="cpu", batch="1")
    said = " ".join(texts(at, "warning"))  # amber: a 5% change would pass unseen
    assert "No change point in the step times" in said
    assert re.search(r"A change under \d+\.\d% would not be seen here", said), said
    flat = [dash.add(gpu="Flat GPU", torch=f"2.{m}.0",
                     created_at=f"2026-0{m}-01T00:00:00+00:00") for m in (1, 2, 3, 4)]
    assert flat
    at = dash.open("pages/trend.py", workload="mlp", gpu="Flat GPU", batch="8")
    quiet = float(re.search(r"A change under (\d+\.\d)%", " ".join(texts(at, "success")))[1])
    assert not [t for t in texts(at, "warning") if "No change point" in t]
    noisy = float(re.search(r"A change under (\d+\.\d)%", said)[1])
    assert quiet < 5 < noisy  # +-1% runs see a few percent; the shared CPU host cannot


def test_a_run_of_another_machine_is_shown_apart_not_joined(dash):
    cpu = json.loads((ROOT / "data" / "samples" / "cpu-mlp-torch-2.13.0.json").read_text())
    cpu["run"].update(uuid="another-host", created_at="2026-12-05T18:00:00+00:00",
                      finished_at="2026-12-05T18:01:00+00:00")
    cpu["environment"]["cpu_model"] = "Intel(R) Xeon(R) Gold 6330"
    other = import_bundle(dash.engine, fmt.validate(cpu))[0]
    at = dash.open("pages/trend.py", workload="mlp", gpu="cpu", batch="8")
    apart = [c for c in texts(at, "caption") if c.startswith("Shown apart")]
    assert len(apart) == 1 and f"#{other}" in apart[0] and "Gold 6330" in apart[0]
    assert any(c.startswith("4 run(s) of mlp") for c in texts(at, "caption"))
    assert at.query_params.get("machine") == "CPU · AMD EPYC"
    mixed = dash.open("pages/trend.py", workload="mlp", gpu="cpu", batch="8",
                      machine=trends.MIXED)
    assert any(c.startswith("5 run(s) of mlp") for c in texts(mixed, "caption"))
    assert not [c for c in texts(mixed, "caption") if c.startswith("Shown apart")]
    alone = dash.open("pages/trend.py", workload="mlp", gpu="cpu",
                      machine="CPU · Intel(R) Xeon(R) Gold 6330")
    assert any(c.startswith("1 run(s) of mlp") for c in texts(alone, "caption"))


def test_a_speedup_low_of_zero_is_no_bound_and_the_cpu_series_defaults_to_compile(dash):
    """Issue 46, on the shipped CPU series: torch 2.11.0's compile at batch 8 stores a
    95% low of 0.00x (its three processes' step-time interval ran below 0 ms and was
    clamped): the page shows it as no lower bound, says why, and offers the modes the
    series measured (compile), not graph modes a CPU cannot run."""
    from tests.apptest import texts

    at = dash.open("pages/trend.py", workload="mlp", gpu="cpu")
    modes = next(m for m in at.multiselect if m.label == "Modes")
    assert modes.options == ["compile"] and modes.value == ["compile"]
    table = at.dataframe[-1].value
    row = table[(table["torch"] == "2.11.0+cu130") & (table["batch_size"] == 8)].iloc[0]
    assert pd.isna(row["speedup_ci_low"]) and row["speedup_ci_high"] > 1
    assert "no lower bound" in row["change vs previous"]
    assert "0.00" not in " ".join(table["change vs previous"])
    assert trends.OPEN_BELOW_NOTE in " ".join(texts(at, "caption")).replace("\\", "")
    assert trends.bound(0.0) is None and trends.bound(0.5) == 0.5
    # The Run page writes the same point's interval by the same rule (metrics.format_interval)
    runs = queries.runs_frame(dash.engine)
    rid = int(runs[(runs["torch_version"] == "2.11.0+cu130") & runs["gpu_name"].isna()
                   & (runs["workload"] == "mlp")]["id"].iloc[0])
    run = dash.open("pages/run.py", run=str(rid), view="Points")
    speed = run.dataframe[0].value.set_index(["Mode", "Batch size"])
    assert speed.at[("compile", 8), "Speedup over eager 95% CI"] == "≤4.90x, no lower bound"
    # Trends' words too
    assert metrics.format_interval("speedup", 0.0, 4.897) == "≤4.90x, no lower bound"
    assert run.table[0].value.loc[8, "compile"] == "inconclusive (95% ≤4.90x, no lower bound)"


def test_interval_bars_stay_inside_the_plot():
    import json

    from pages.charts import trend_chart

    t = pd.DataFrame({"run": ["a", "b"], "order": [0, 1], "run_id": [1, 2],
                      "mode": ["compile"] * 2, "batch_size": [8, 8], "speedup": [1.1, 1.0],
                      "speedup_ci_low": [None, 0.9], "speedup_ci_high": [4.9, 1.1],
                      "change": ["first", "within noise"],
                      "change vs previous": ["first run", "x"]})
    spec = json.dumps(trend_chart.trend_chart(t, 8).to_dict())
    assert '"clip": true' in spec and "bar_low" in spec
