"""The serve page through AppTest, and its pure helpers (pages/charts/serve_charts.py).

The bundles here are synthetic test inputs (made-up figures with a GPU's shape: pools,
graphs), built to exercise the page; no result is claimed from them.
"""

from __future__ import annotations

import random
import uuid

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from contract import buckets as B
from contract import bundle as fmt
from contract import serve_record as rec
from contract.json_shape import as_json
from db.engine import make_engine
from db.store import import_bundle
from pages.charts import serve_charts as sc
from pages.logic import serve_tables
from tests.apptest import open_app

MIB = 2**20


def serve_bundle(cuda: bool = True, requests: int = 120) -> dict:
    """A serve run with plausible figures: launch-bound eager, cheap graph replays."""
    rng = random.Random(1)
    stream = B.request_stream(B.parse_distribution("uniform:1-64"), requests, 0)
    names = ["eager", "compile", "reduce-overhead", "buckets:8/16/32", "buckets:pow2-256"]
    results = []
    for name in names:
        s = B.parse_strategy(name)
        graph = s.kind in ("buckets", "reduce-overhead") and cuda
        lat = [(0.15 if graph and (not s.buckets or x <= s.buckets[-1]) else 2.0)
               + 0.001 * x + rng.random() * 0.01 for x in stream]
        st = B.bucket_stats(stream, s.buckets) if s.buckets else None
        r = rec.ServeResult.empty(
                 name, requests=requests, real_rows=sum(stream), latencies_ms=lat,
                 **B.latency_summary(lat), requests_per_s=1000 * requests / sum(lat),
                 rows_per_s=1000 * sum(stream) / sum(lat), correct=True, max_abs_err=0.0,
                 padding_waste=st.padding_waste if st else 0.0,
                 wasted_fraction=st.wasted_fraction if st else 0.0,
                 hit_rate=st.hit_rate if st else None,
                 fallback_rate=st.fallback_rate if st else None, setup_s=1.0,
                 execution={"eager": "eager", "compile": "inductor",
                            "reduce-overhead": "cudagraph-trees"}.get(
                     s.kind, "cuda-graph" if cuda else "eager-padded"),
                 graphs=(len(s.buckets) if s.buckets else 64 if graph else 0) if cuda else 0,
                 graph_pool_bytes=((34 + 2 * len(s.buckets)) * MIB if graph else 0)
                 if cuda else None)
        if not cuda and s.kind == "reduce-overhead":
            r = rec.ServeResult.empty(name, status="unsupported", message="no CUDA",
                                      requests=requests, real_rows=sum(stream))
        results.append(r)
    sizes = sorted(set(stream) | {1, 2, 4, 8, 16, 32, 64, 128, 256})
    profile = [rec.ServeProfilePoint(b, bucket_ms=0.15 + 0.001 * b, eager_ms=2.0 + 0.001 * b,
                                     pool_bytes=(32 * MIB + 4096 * b) if cuda else None,
                                     pool_extra_bytes=1024 * b if cuda else None,
                                     capture_s=0.01 if cuda else None,
                                     execution="cuda-graph" if cuda else "eager-padded")
               for b in sizes]
    env = {"device": "cuda" if cuda else "cpu", "gpu_name": "Test GPU" if cuda else None,
           "torch_version": "2.11.0"}
    run = {"uuid": str(uuid.uuid4()), "workload": "mlp", "workload_params": {"depth": 32},
           "created_at": fmt.now_iso(), "status": "done", "kind": "serve",
           "command": "python -m runner serve --workload mlp"}
    section = rec.ServeSection(rec.ServeConfig("uniform:1-64", requests, 0, names, stream),
                               results, profile)
    return fmt.validate(fmt.make_bundle(env, run, [], serve=section.to_json()))


@pytest.fixture
def db(app_db_url):
    engine = make_engine(app_db_url)
    yield engine
    engine.dispose()


def open_page(**params) -> AppTest:
    return open_app("pages/serve.py", **params)


def _text(at: AppTest) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "error",
                                               "warning") for e in getattr(at, kind))


def test_page_shows_a_gpu_serve_run_and_the_advisor_follows_the_budget(db):
    run_id = import_bundle(db, serve_bundle(cuda=True))[0]
    at = open_page(run=str(run_id))
    text = _text(at)
    assert "Batch 11 pads to 16: 5 of its 16 rows (31%)" in text
    assert "falls back to eager" in text
    summary = at.dataframe[0].value
    assert list(summary["Strategy"])[:2] == ["eager", "compile"]
    charts = [e for e in at.main if getattr(e, "type", "") in ("vega_lite_chart",
                                                             "arrow_vega_lite_chart")]
    # memory against throughput, waste per bucket strategy (two), latency
    assert len(charts) == 4
    slider = at.slider(key="budget")
    assert slider.value >= 32 and slider.max > slider.value
    before = at.dataframe[-1].value
    assert "powers of two (best within budget)" in list(before["Plan"])
    slider.set_value(1).run()  # below any graph's pool: nothing can be captured
    assert not at.exception
    after = at.dataframe[-1].value
    assert after.iloc[0]["Buckets"] == "none (all eager)"
    assert "nothing (eager only)" in _text(at)


def test_cpu_run_says_memory_is_unknown(db):
    run_id = import_bundle(db, serve_bundle(cuda=False))[0]
    at = open_page(run=str(run_id))
    text = _text(at)
    assert "no CUDA" in text and "ranks by time alone" in text
    assert not at.get("slider")


@pytest.mark.parametrize("value, match", [("abc", "is not a run id"), ("0", "ids start at 1")])
def test_bad_run_parameter_one_clear_line(db, value, match):
    import_bundle(db, serve_bundle(cuda=True, requests=30))
    at = open_page(run=value)
    assert any(match in str(e.value) for e in at.error)


def test_unknown_run_falls_back_to_the_newest_and_says_so(db):
    run_id = import_bundle(db, serve_bundle(cuda=True, requests=30))[0]
    at = open_page(run="999")
    assert any("Run 999 is not a serve run" in str(e.value) for e in at.error)
    assert next(s for s in at.selectbox if s.label == "Serve run").value == run_id


def test_no_serve_run_yet(db):
    sweep = fmt.make_bundle({"device": "cpu"}, {"uuid": str(uuid.uuid4()), "workload": "mlp",
                                                "created_at": fmt.now_iso(), "status": "done"},
                            [])
    import_bundle(db, sweep)  # a database with runs is not seeded with the samples
    at = open_page()
    assert any("No serve run stored yet" in str(e.value) for e in at.info)


def test_the_shipped_h200_sample_shows_on_a_fresh_database(db):
    at = open_page()  # the app seeds data/samples/ into the empty database
    assert "NVIDIA H200" in next(s for s in at.selectbox if s.label == "Serve run").options[0]
    text = _text(at)
    assert "Batch 11 pads to 16: 5 of its 16 rows (31%)" in text and "Measured:" in text
    summary = at.dataframe[0].value.set_index("Strategy")
    assert summary.loc["buckets:pow2-256", "Ran as"] == "cuda-graph"
    assert summary.loc["reduce-overhead", "Graphs"] != "—"
    assert at.slider(key="budget").max > 0


def test_flat_memory_advice_prefers_less_padding_and_says_why(db):
    # The H200 sample: every plan near the best keeps the same 34 MiB pool. The advice
    # used to be 16/64 with 58% padding; with memory flat, less padding wins.
    at = open_page()
    text = _text(at)
    why = next(line for line in text.splitlines() if line.startswith("Why:"))
    assert "keeps the same 34.0 MiB of graph pool" in why and "least padding wins" in why
    table = at.dataframe[-1].value.set_index("Plan")
    rec = table.loc["advisor: recommended"]
    assert rec["Buckets"] != "16/64" and rec["Pool MiB (model)"] == "34.0"
    assert int(rec["Padding waste (model)"].rstrip("%")) < 58
    assert f"{rec['Padding waste (model)']} padding" in text


def test_waste_frame_and_example_without_8_16_32():
    stream = [3, 5, 9, 20, 20]
    results = pd.DataFrame([as_json(rec.ServeResult.empty("buckets:4/8"))])
    w = serve_tables.waste_frame(stream, results).set_index("batch_size")
    assert w.loc[3, "outcome"] == "padded" and w.loc[20, "requests"] == 2
    assert w.loc[20, "outcome"] == "eager fallback" and pd.isna(w.loc[20, "bucket"])
    lines = serve_tables.example_lines(stream, results, pd.DataFrame(
        columns=["strategy", "request", "batch_size", "latency_ms"]))
    assert "2 of 5 requests (40%) ran in a graph" in lines[0]
    assert lines[1].startswith("Batch 5 pads to 8: 3 of its 8 rows (38%)")
    assert lines[2].startswith("Batch 9 matches no bucket (the largest is 8)")


def test_advisor_takes_eager_times_from_the_eager_replay():
    requests = pd.DataFrame({"strategy": ["eager"] * 3 + ["buckets:8"] * 3,
                             "request": [0, 1, 2] * 2, "batch_size": [4, 4, 40] * 2,
                             "latency_ms": [1.0, 3.0, 5.0, 0.1, 0.1, 9.0]})
    assert serve_tables.eager_from_replay(requests) == {4: 2.0, 40: 5.0}
    profile = pd.DataFrame([{"batch_size": 8, "bucket_ms": 0.2, "eager_ms": 7.0,
                             "pool_bytes": None, "pool_extra_bytes": None}])
    eager = serve_tables.eager_from_replay(requests)
    pts = {p.batch_size: p for p in serve_tables.profile_points(profile, eager)}
    assert pts[8].eager_ms == 7.0 and pts[8].bucket_ms == 0.2  # no replay figure at 8
    assert pts[40].eager_ms == 5.0 and pts[40].bucket_ms is None  # eager-only point


def test_every_strategy_has_its_own_colour_and_mark():
    names = ["eager", "compile", "reduce-overhead", "buckets:8/16/32", "buckets:pow2-256"]
    order, colors, shapes = sc.strategy_styles(names)
    assert order == names
    assert len(set(colors)) == len(names) and len(set(shapes)) == len(names)
    assert colors[:3] == [sc.MODE_COLORS[m] for m in names[:3]]  # the mode colours
    assert colors[3] == sc.MODE_COLORS["cuda-graph"]  # the first bucket strategy's green
    enc = [layer["encoding"] for layer in sc.latency_chart(pd.DataFrame(
        {"strategy": names * 2, "batch_size": [1] * 5 + [2] * 5,
         "latency_ms": [1.0] * 10})).to_dict()["layer"]]
    point = [e for e in enc if "shape" in e][0]
    # colour and shape on the strategy, one legend: the legend's symbols are coloured
    assert point["color"]["field"] == point["shape"]["field"] == "strategy"
    assert point["color"]["legend"] == point["shape"]["legend"]


def test_the_shipped_sample_reads_its_parameters_and_labels_modelled_figures(db):
    """Issue 46: the parameters as 'depth=32, width=256, dtype=float32', never a Python
    dict; a bucket set this run replayed is a row 'ran here: ...' whose model figures sit
    under columns that say model, beside the measured ones."""
    at = open_page()
    text = _text(at)
    assert "mlp (depth=32, width=256, dtype=float32) on NVIDIA H200" in text
    assert "{" not in text.split("Strategies")[0] and "'depth'" not in text
    table = at.dataframe[-1].value.set_index("Plan")
    ran = [p for p in table.index if p.startswith(serve_tables.RAN_HERE)]
    assert ran and not any(p.startswith("measured") for p in table.index)
    row = table.loc[ran[0]]
    assert row[serve_tables.MODEL_ROWS] != row[serve_tables.RAN_ROWS]  # two figures, named
    assert all(c.endswith(("(model)", "(measured)")) for c in table.columns
               if c not in ("Plan", "Buckets", "Graphs"))
    assert serve_tables.params_text({"depth": 32, "heads": None}) == "depth=32"


def test_the_wasted_rows_legend_is_drawn_in_the_padded_bars_colour():
    import json

    from pages.charts import serve_charts as sc

    stream = [3, 5, 9, 20, 20]
    results = pd.DataFrame([as_json(rec.ServeResult.empty("buckets:4/8"))])
    [figure] = sc.waste_charts(serve_tables.waste_frame(stream, results)).values()
    spec = json.dumps(figure.to_dict())
    assert f'"symbolFillColor": "{sc.OUTCOMES["padded"]}"' in spec
