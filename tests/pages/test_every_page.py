"""Every dashboard page through streamlit's AppTest, bad URL parameters and bad uploads
included: a clear message on the page, never an exception, nothing half-written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from contract import bundle as fmt
from contract.run_record import Environment, Run
from contract.serve_record import ServeConfig
from db import queries
from db.access import ReadOnlyError
from db.engine import make_engine
from db.store import import_bundle
from pages.logic import uploads
from pages.widgets.data import import_uploads
from tests.apptest import APP, charts, run_views, share_links, texts
from tests.graph_memory_data import probe_bundle
from tests.synthetic import step_figures, sweep_bundle

CHART_VIEWS = ("Speed", "Memory", "Time split")


def findings(markdown: list[str]) -> str:
    """The Run page's findings list (under the headline, one bullet a mode)."""
    return next(m for m in markdown if m.startswith("- "))


# --- frame ------------------------------------------------------------------------------

def test_navigation_url_paths_and_sidebar(dash):
    at = dash.open()
    paths = {v["url_pathname"]: Path(v["script_path"]).name
             for v in at._registered_pages.values()}
    assert {"": "runs.py", "run": "run.py", "compare": "compare.py",
            "import": "import.py"}.items() <= paths.items()
    assert paths.get("launch", "launch.py") == "launch.py"
    side = " ".join(texts(at.sidebar, "caption"))
    assert dash.url.split("///")[1] in side
    assert not any("read-only" in m for m in texts(at.sidebar, "markdown"))


def test_a_page_opened_first_still_runs_through_the_frame(dash):
    # A fresh AppTest starts in streamlit's legacy pages/ mode, like a fresh server whose
    # first request is a share link: the page must rerun through app.py (sidebar).
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page("pages/run.py")
    at.query_params = {"run": str(dash.published)}
    at.run()
    assert not at.exception
    assert any("Database:" in c for c in texts(at.sidebar, "caption"))
    assert "[published]" in at.title[0].value


def test_unusable_database_url_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("LAUNCHBENCH_DB", f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}")
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception
    errors = texts(at, "error")
    assert len(errors) == 1 and "missing-dir" in errors[0] and "LAUNCHBENCH_DB" in errors[0]


def test_first_start_seeds_an_empty_database(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    monkeypatch.setenv("LAUNCHBENCH_DB", url)
    monkeypatch.delenv("LAUNCHBENCH_READ_ONLY", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception
    df = queries.runs_frame(make_engine(url))
    assert "published-l40s-day25" in set(df["uuid"])
    assert any("imported" in c and "sample" in c for c in texts(at, "caption"))


def test_read_only_empty_database_shows_no_runs_and_writes_nothing(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'ro.db'}"
    make_engine(url, read_only=False).dispose()  # a current schema, no runs
    monkeypatch.setenv("LAUNCHBENCH_DB", url)
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception
    assert any("No runs yet" in t for t in texts(at, "info"))
    assert any("read-only share mode" in m for m in texts(at.sidebar, "markdown"))
    assert queries.runs_frame(make_engine(url)).empty  # read-only: not even the samples
    at.switch_page("pages/import.py").run()
    assert not at.exception and len(at.file_uploader) == 0
    assert any("Read-only" in t for t in texts(at, "info"))
    with pytest.raises(ReadOnlyError):
        import_uploads(make_engine(url), [("a.json", b"{}")])


# --- runs -------------------------------------------------------------------------------

def test_runs_page_lists_and_filters_from_the_url(dash):
    dash.add(gpu="Synthetic GPU A")
    dash.add(device="cpu")
    at = dash.open()
    table = at.dataframe[0].value
    assert len(table) == len(queries.runs_frame(dash.engine))
    assert "published" in set(table["source"])
    at = dash.open("pages/runs.py", gpu="cpu")
    cpu_rows = list(at.dataframe[0].value["GPU"])  # the shipped CPU series and this one
    assert "CPU (synthetic-host)" in cpu_rows and len(cpu_rows) > 1
    assert all(g.startswith("CPU (") for g in cpu_rows)
    assert at.query_params.get("gpu") == "cpu"
    assert any("/?gpu=cpu" in c for c in share_links(at))
    at = dash.open("pages/runs.py", gpu="No such GPU")
    assert any("'No such GPU' matches no run" in w for w in texts(at, "warning"))
    assert len(at.dataframe[0].value) == len(queries.runs_frame(dash.engine))


# --- run --------------------------------------------------------------------------------

def test_run_page_headline_charts_table_environment_and_share_link(dash):
    rid = dash.add(failing={("compile", 64): "CUDA out of memory"})
    views = run_views(dash, rid)
    # speedup and step time; memory and its trade-off;
    # the time split: each mode's split and the three (no scatter: the synthetic
    # points carry no host time a step to project)
    assert [len(charts(views[v])) for v in CHART_VIEWS] == [2, 2, 7]
    at = views["Speed"]
    md = texts(at, "markdown")
    assert md[0].startswith("##### cuda-graph at batch ")
    assert md[0].endswith(" MiB memory cost over eager")
    head = findings(md)
    assert "reduce-overhead: up to" in head and "Break-even" in head
    assert all(texts(v, "markdown")[:1] == md[:1] and findings(texts(v, "markdown")) == head
               for v in views.values())  # on every view
    pivot = views["Points"].table[0].value.reset_index()  # a static table: its cells wrap
    assert list(pivot.columns) == ["Batch size", "compile", "reduce-overhead", "cuda-graph"]
    points = views["Points"].dataframe[0].value
    assert "✖ error" in set(points["Status"])  # the mark; its message under the tables
    assert any("✖ error: CUDA out of memory" in t for t in texts(views["Points"], "markdown"))
    assert not views["Points"].code and not at.dataframe  # each view sends only its own
    env = views["Environment"]
    assert any(c.endswith(f"/run?run={rid}&view=Environment") for c in share_links(env))
    # The command: synthetic runs store "... --workload mlp (synthetic)", which is no
    # command line, so the page builds the runnable one (links.reproduce).
    assert any(c.startswith("python -m runner sweep --workload mlp --param")
               for c in texts(env, "code"))


def test_published_run_is_marked_and_offers_the_measuring_command(dash):
    views = run_views(dash, dash.published, ("Speed", "Memory", "Environment"))
    at = views["Speed"]
    assert "[published]" in at.title[0].value
    assert any("Published figures" in t for t in texts(at, "info"))
    assert len(charts(at)) == 2  # speedup, step time: the article gives no memory figures
    assert charts(views["Memory"]) == []
    assert any("--batch-sizes 8,8192" in c for c in texts(views["Environment"], "code"))


def test_cpu_run_with_unsupported_points_and_run_with_only_errors(dash):
    cpu = dash.add(device="cpu")
    views = run_views(dash, cpu, ("Speed", "Memory", "Time split", "Points"))
    at = views["Speed"]
    assert [len(charts(views[v])) for v in CHART_VIEWS] == [2, 0, 0]
    assert "⊘ unsupported" in set(views["Points"].dataframe[0].value["Status"])
    assert any("⊘ unsupported: reduce-overhead needs CUDA" in t
               for t in texts(views["Points"], "markdown"))
    everything = " ".join([at.title[0].value, *texts(at, "markdown"), *texts(at, "caption")])
    assert "CPU (synthetic-host)" in at.title[0].value and "nan" not in everything
    broken = dash.add(modes=("eager", "compile"), batches=(8,),
                      failing={("eager", 8): "boom", ("compile", 8): "bang"})
    at = dash.open("pages/run.py", run=str(broken))
    assert charts(at) == []
    assert any("No chart" in t for t in texts(at, "info"))


def test_run_page_quotes_intervals_noise_and_launch_cost(dash):
    ci = lambda sp, lo, hi: {"speedup": sp, "speedup_ci_low": lo,  # noqa: E731
                             "speedup_ci_high": hi}
    rid = dash.add(launch_us=12.5, overrides={
        ("cuda-graph", 1): ci(10.0, 9.0, 11.0), ("cuda-graph", 8): ci(10.5, 10.0, 11.0),
        ("cuda-graph", 64): ci(20.0, 8.0, 40.0),  # a spike inside noise: not the headline
        ("compile", 8): {"noisy": True, "stop_reason": "budget"}})
    at = dash.open("pages/run.py", run=str(rid))
    md = texts(at, "markdown")
    assert md[0] == ("##### cuda-graph at batch 8: 10.50x (10.00-11.00x) · +2.0 MiB memory cost "
                     "over eager")
    head = findings(md)
    assert ("cuda-graph: up to 10.50x (10.00-11.00x) over eager, at batch 8" in head
            and "within noise of it: batches 1, 64" in head), head
    context = texts(at, "caption")
    assert any("Noise: 1 of 20 points noisy" in c and "launch cost 12.5 us (12.5-12.5)"
               in c for c in context), context
    at = dash.open("pages/run.py", run=str(rid), view="Points")
    table = at.dataframe[0].value.set_index(["Mode", "Batch size"])
    assert table.at[("cuda-graph", 64), "Speedup over eager 95% CI"] == "8.00-40.00x"
    noise = _grid(at, "Noise").set_index(["Mode", "Batch size"])  # its own table
    assert noise.at[("compile", 8), "Noise"] == "noisy"


def test_old_run_page_says_no_interval(dash):
    rid = dash.add(intervals=False)
    at = dash.open("pages/run.py", run=str(rid))
    md = texts(at, "markdown")
    assert "(no interval)" in md[0] and "no interval" in findings(md)
    assert any("Noise: no interval" in c and "launch cost not measured" in c
               for c in texts(at, "caption")), texts(at, "caption")
    views = run_views(dash, rid, (*CHART_VIEWS, "Points"))
    assert set(_grid(views["Points"], "Noise")["Noise"]) == {"no interval"}
    # every chart still draws (no launch cost: no such panel), but for the trade-off of
    # speed against memory cost: a run from before the isolated memory pass has no cost,
    # and its Memory view says so
    assert [len(charts(views[v])) for v in CHART_VIEWS] == [2, 1, 2]
    assert any("No speed-against-memory chart" in c for c in texts(views["Memory"], "caption"))


@pytest.mark.parametrize("params, message", [
    ({"run": "abc"}, "?run='abc' is not a run id"),
    ({"run": "999999"}, "run 999999 does not exist"),
    ({}, "no run given"),
    ({"run": ["1", "2"]}, "given 2 times"),
    ({"run": "-3"}, "is not a run id"),
])
def test_run_page_bad_parameters(dash, params, message):
    at = dash.open("pages/run.py", **params)
    errors = texts(at, "error")
    assert len(errors) == 1 and message in errors[0], errors
    assert charts(at) == []


@pytest.mark.parametrize("kind", ["sweep", "graph-memory"])
def test_run_deleted_between_header_and_summary_is_one_line(dash, monkeypatch, kind):
    # The Run page reads a run's header, then its summary: a run deleted in between has a
    # header and no summary. Found by mypy (the summary's None read as a summary): an
    # AttributeError on the page before.
    rid = dash.add() if kind == "sweep" else import_bundle(
        dash.engine, probe_bundle(label="deleted meanwhile"))[0]
    monkeypatch.setattr("pages.widgets.data.summary", lambda run_id: None)
    at = dash.open("pages/run.py", run=str(rid))
    assert not at.exception
    if kind == "sweep":
        errors = texts(at, "error")
        assert len(errors) == 1 and f"run {rid} does not exist" in errors[0], errors
        assert charts(at) == []
    else:  # titled by the header read first; its captures are still there, so drawn
        assert "graph memory" in at.title[0].value and len(charts(at)) == 2


# --- compare ----------------------------------------------------------------------------

def test_compare_overlays_runs_with_ratio_table_and_environment_diff(dash):
    a = dash.add(gpu="Synthetic GPU A", torch="2.1")
    b = dash.add(gpu="Synthetic GPU B", torch="2.2", scale=0.5)
    at = dash.open("pages/compare.py", run=[str(a), str(b)])
    assert len(charts(at)) == 1  # one chart: a colour per run, a mark per mode
    assert not at.warning  # same workload, params, dtype
    keys = at.table[0].value  # each run's key figure, as the board quotes it
    assert list(keys.columns) == ["run", "key figure", "memory cost"] and len(keys) == 2
    ratios = at.dataframe[0].value
    assert list(ratios.columns[:5]) == ["mode", "batch_size", "run", "vs baseline", "95%"]
    assert ratios["vs baseline"].dropna().gt(1).all()  # B (half the time) is faster
    # after the GPU and host table (and, two GPUs here, which one gains more)
    memory = next(d.value for d in at.dataframe
                  if any(c.endswith(" MiB") for c in d.value.columns))
    assert [c for c in memory.columns if c.endswith(" MiB")] == [
        f"#{a} Synthetic GPU A MiB", f"#{b} Synthetic GPU B MiB"]  # short: a legend says
    assert f"#{a} Synthetic GPU A is #{a} Synthetic GPU A · torch 2.1" in " ".join(
        texts(at, "caption"))
    diff = next(t.value for t in at.table if "field" in t.value.columns)  # wraps
    # (Markdown cells: an underscore escaped, drawn as itself)
    assert {"gpu\\_name", "torch\\_version"} <= set(diff["field"])
    # the link carries the baseline run and the common launch cost as well
    shared = share_links(at)
    assert any(c.endswith(f"/compare?run={a}&run={b}&baseline={a}&at_us=10")
               for c in shared), shared


def test_compare_marks_ratios_within_noise_and_diffs_launch_cost(dash):
    a = dash.add(gpu="Synthetic GPU A", launch_us=8.0)
    # B: the same figures 1% slower (inside the +-1% intervals) except eager at batch 8,
    # twice as slow; on a host whose launch cost is 20 us.
    b = dash.add(gpu="Synthetic GPU B", launch_us=20.0, scale=1.01, overrides={
        ("eager", 8): {**step_figures(2.8), "step_ms_ci_low": 2.77,
                       "step_ms_ci_high": 2.83}})
    old = dash.add(gpu="Synthetic GPU C", intervals=False)
    at = dash.open("pages/compare.py", run=[str(a), str(b), str(old)])
    ratios = at.dataframe[0].value
    of_b = ratios[ratios["run"].str.startswith(f"#{b} ")]
    assert of_b["95%"].str.startswith("within noise (").any()
    slower = of_b[of_b["95%"].str.startswith("slower (")]
    assert list(zip(slower["mode"], slower["batch_size"], strict=True)) == [("eager", 8)]
    assert set(ratios[ratios["run"].str.startswith(f"#{old} ")]["95%"]) == {"no interval"}
    diff = next(t.value for t in at.table if "field" in t.value.columns).set_index("field")
    row = diff.loc["host launch cost (us, median and range)"]
    assert [v for k, v in row.items() if k.startswith("#")] == ["8.0 us (8.0-8.0)",
                                                                "20.0 us (20.0-20.0)", "—"]


def test_runs_page_carries_noise_badges(dash):
    noisy = dash.add(overrides={("compile", 8): {"noisy": True},
                                ("cuda-graph", 8): {"noisy": True}})
    old = dash.add(intervals=False)
    table = dash.open().dataframe[0].value.set_index("id")
    assert table.at[noisy, "noise"] == "2 of 20 points noisy"
    assert table.at[old, "noise"] == "no interval"
    assert table.at[dash.published, "noise"] == "no interval"


def test_compare_warns_when_runs_are_not_comparable(dash):
    a = dash.add()
    b = dash.add(workload="transformer-decode", params={"layers": 2})
    at = dash.open("pages/compare.py", run=[str(a), str(b), str(dash.published)])
    warned = " ".join(texts(at, "warning"))
    assert "Not comparable: workloads differ" in warned
    assert "workload parameters differ" in warned
    # one line per reason: the article's run is named published with the statistic it gives
    assert "Published, not measured here" in warned and len(texts(at, "warning")) == 1


@pytest.mark.parametrize("ids, message", [
    (["VALID", "999999"], "run 999999 does not exist"),
    (["abc", "VALID"], "?run='abc' is not a run id"),
])
def test_compare_with_a_missing_or_bad_id(dash, ids, message):
    ids = [str(dash.published) if i == "VALID" else i for i in ids]
    at = dash.open("pages/compare.py", run=ids)
    assert any(message in w for w in texts(at, "warning"))
    assert any("at least two runs" in t for t in texts(at, "info"))
    assert not at.error


# --- import / export ----------------------------------------------------------------------

def _upload(at: AppTest, files) -> AppTest:
    at.file_uploader(key="uploads").set_value(files)
    at.run()
    at.button(key="do_import").click().run()
    assert not at.exception
    return at


def _good() -> bytes:
    return fmt.dumps(sweep_bundle(label="uploaded SYNTHETIC")).encode()


def test_upload_imports_a_bundle_and_refuses_it_the_second_time(dash):
    data = _good()
    before = len(queries.runs_frame(dash.engine))
    at = _upload(dash.open("pages/import.py"), ("run.json", data, "application/json"))
    assert any("imported as run" in s for s in texts(at, "success"))
    assert len(queries.runs_frame(dash.engine)) == before + 1
    at = _upload(dash.open("pages/import.py"), ("again.json", data, "application/json"))
    assert any("already imported as run" in t and "nothing added" in t
               for t in texts(at, "info"))
    assert len(queries.runs_frame(dash.engine)) == before + 1


def _bad_uploads():
    good = json.loads(_good())
    wrong_format = {**good, "format": "something.else"}
    wrong_version = {**good, "version": 99}
    return [
        ("notes.json", b"this is not json at all", "not valid JSON"),
        ("cut.json", _good()[:300], "not valid JSON (truncated or corrupt?)"),
        ("other.json", json.dumps(wrong_format).encode(), "wrong format 'something.else'"),
        ("v99.json", json.dumps(wrong_version).encode(), "unsupported bundle version 99"),
        ("big.json", b" " * (uploads.MAX_UPLOAD_BYTES + 1), "over the 20 MB limit"),
        ("bin.json", b"\xff\xfe\x00garbage", "not UTF-8"),
        ("empty.json", b"", "is empty"),
    ]


@pytest.mark.parametrize("name, data, message", _bad_uploads(),
                         ids=[b[0] for b in _bad_uploads()])
def test_bad_uploads_get_a_clear_message_and_write_nothing(dash, name, data, message):
    before = queries.data_version(dash.engine)
    at = _upload(dash.open("pages/import.py"), (name, data, "application/json"))
    errors = texts(at, "error")
    assert len(errors) == 1 and message in errors[0] and name in errors[0], errors
    assert queries.data_version(dash.engine) == before


def test_one_bad_file_does_not_block_a_good_one(dash):
    at = _upload(dash.open("pages/import.py"),
                 [("bad.json", b"{", "application/json"),
                  ("good.json", _good(), "application/json")])
    assert len(texts(at, "error")) == 1 and len(texts(at, "success")) == 1


def test_export_offers_bundle_csv_report_and_pngs_for_the_linked_run(dash):
    rid = dash.add()
    at = dash.open("pages/import.py", run=str(rid))
    assert at.selectbox(key="export_run").value == rid
    labels = {b.label for b in at.get("download_button")}
    assert {"Bundle (.json)", "Points (.csv)", "Report (.html, opens offline)",
            "speedup.png", "memory.png"} <= labels
    at = dash.open("pages/import.py", run="nope")
    assert any("?run='nope' is not a run id" in w for w in texts(at, "warning"))


def test_serve_run_points_to_the_serve_page(dash):
    from db.serve import start_serve_run

    doc = sweep_bundle()
    rid = start_serve_run(dash.engine, Environment.from_json(doc["environment"]),
                          Run.from_json(doc["run"]),
                          ServeConfig("uniform:1-64", 3, 0, ["eager"], [1, 5, 11]))
    at = dash.open("pages/run.py", run=str(rid))
    assert any(f"Run {rid} is a serve run" in t for t in texts(at, "info"))
    assert charts(at) == [] and not at.error
    table = dash.open().dataframe[0].value.set_index("id")
    assert (table.at[rid, "kind"], table.at[rid, "link"]) == ("serve", f"serve?run={rid}")
    at = dash.open("pages/compare.py", run=[str(rid), str(dash.published)])
    assert any(f"run {rid} is a serve run" in w for w in texts(at, "warning"))
    options = at.multiselect[0].options
    assert any(o.startswith(f"#{dash.published} ") for o in options)
    assert not any(o.startswith(f"#{rid} ") for o in options) and not at.exception


def test_selecting_runs_offers_open_and_compare_links(dash):
    a = dash.add(gpu="Synthetic GPU A")
    at = dash.open()
    ids = list(at.dataframe[0].value["id"])
    at.session_state["runs_table"] = {"selection": {"rows": [ids.index(a)], "columns": []}}
    at.run()
    links_ = at.get("page_link")
    assert [p.label for p in links_] == [f"Open run {a}"], [p.label for p in links_]
    b = dash.add(gpu="Synthetic GPU B")  # the same model, size and dtype as a
    at = dash.open()
    ids = list(at.dataframe[0].value["id"])
    at.session_state["runs_table"] = {"selection": {"rows": [ids.index(a), ids.index(b)],
                                                    "columns": []}}
    at.run()
    labels = [p.label for p in at.get("page_link")]
    assert labels == [f"Compare runs {a}, {b}"]
    assert not at.warning


def test_runs_board_shows_key_figures_and_sorts_them_as_numbers(dash):
    a = dash.add(gpu="Synthetic GPU A")
    table = dash.open().dataframe[0].value.set_index("id")
    assert list(table.columns[:4]) == ["GPU", "workload", "torch", "key figure"]
    row = table.loc[a]
    for mode in ("reduce-overhead", "cuda-graph"):
        assert row[f"{mode} x"] > 1 and row[f"{mode} batch"] in (1, 8, 64, 512, 4096)
        assert table[f"{mode} x"].dtype.kind == "f"
    assert row["key figure"].startswith("cuda-graph at batch ") and row["points"] == "20/20 ok"
    assert row["memory cost"].endswith(" MiB memory cost over eager")


def test_serve_run_on_the_board_and_a_refused_compare(dash):
    from db.serve import start_serve_run

    a = dash.add(gpu="Synthetic GPU A")
    doc = sweep_bundle()
    rid = start_serve_run(dash.engine, Environment.from_json(doc["environment"]),
                          Run.from_json(doc["run"]),
                          ServeConfig("uniform:1-64", 3, 0, ["eager"], [1, 5, 11]))
    at = dash.open()
    table = at.dataframe[0].value
    row = table.set_index("id").loc[rid]
    assert row["points"] == "0/0 strategies ok" and row["key figure"] == \
        "no strategy finished"
    ids = list(table["id"])
    at.session_state["runs_table"] = {"selection": {"rows": [ids.index(a), ids.index(rid)],
                                                    "columns": []}}
    at.run()
    assert [p.label for p in at.get("page_link")] == []
    assert any(f"Run {rid} is a serve run" in w for w in texts(at, "warning"))


def test_shipped_samples_compare_without_a_false_alarm(dash):
    # A newcomer's first comparison: every shipped mlp sweep against the published L40S
    # figures. Same model, parameters and dtype: no "not comparable" warning.
    runs = queries.runs_frame(dash.engine)
    mlp = runs[(runs["kind"] == "sweep") & (runs["workload"] == "mlp")]
    sweeps = [str(i) for i in mlp["id"]]
    assert len(sweeps) >= 2, "data/samples/ should ship a measured sweep beside the article's"
    at = dash.open("pages/compare.py", run=sweeps)
    # No "not comparable" alarm; only the flag that the article gives means, not medians.
    assert [w for w in texts(at, "warning") if "not medians" not in w] == []
    assert any(f": #{dash.published} " in w and "not medians" in w
               for w in texts(at, "warning"))
    # One speedup chart, and the step timeline: the H200 sample carries traces.
    specs = [json.loads(c.proto.spec) for c in charts(at)]
    timelines = [s for s in specs if "GPU idle" in json.dumps(s)]
    assert (len(specs) - len(timelines), len(timelines)) == (1, 1)


def test_shipped_samples_of_different_workloads_warn_when_compared(dash):
    runs = queries.runs_frame(dash.engine)
    sweeps = runs[(runs["kind"] == "sweep") & (runs["source"] == "measured")]
    if sweeps["workload"].nunique() < 2:
        pytest.fail("data/samples/ should ship measured sweeps of two workloads")
    at = dash.open("pages/compare.py", run=[str(i) for i in sweeps["id"]])
    assert any("comparable" in w for w in texts(at, "warning")), texts(at, "warning")


def test_export_picker_tells_the_shipped_runs_apart(dash):
    # Eight entries read "#N NVIDIA H200 · torch 2.11": the same GPU and torch. Each now
    # says its workload, kind, date and label; without the id no two read alike.
    at = dash.open("pages/import.py")
    picker = at.selectbox(key="export_run")
    shown = list(picker.options)  # as the browser shows them (format_func applied)
    h200 = [s for s in shown if "NVIDIA H200" in s]
    assert len(h200) >= 8
    assert len({s.split(" ", 1)[1] for s in shown}) == len(shown), shown
    assert any(s.split(" ", 1)[1].startswith("mlp sweep · NVIDIA H200 · torch 2.11")
               and s.endswith("· H200 mlp") for s in shown), shown
    assert any(" mlp serve run · NVIDIA H200" in s for s in shown), shown
    assert all(len(s) <= 120 for s in shown), max(shown, key=len)  # one line at 1280 px


def _grid(at, column: str):
    """The Points view's table (one a subject) that holds `column`."""
    return next(d.value for d in at.dataframe if column in d.value.columns)
