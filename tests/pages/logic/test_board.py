"""The Runs board's pure logic: key figures per run and whether runs can be compared."""

from __future__ import annotations

import math

import pandas as pd

from contract.comparability import compare_rule
from contract.run_summary import NO_SPEEDUP, RunListing
from db import queries
from db.samples import seed_if_empty
from db.store import import_bundle
from pages.logic import board
from tests.records import header, headers
from tests.synthetic import sweep_bundle


def _runs(engine):
    return queries.runs_list(engine)


def _summaries(engine, ids) -> dict:
    return {s.header.id: s for s in queries.run_summaries(engine, ids)}


def test_key_figures_rank_by_lower_bound_and_carry_the_memory_cost(sqlite_engine):
    rid = import_bundle(sqlite_engine, sweep_bundle())[0]
    runs = _runs(sqlite_engine)
    figs = board.key_figures(runs, _summaries(sqlite_engine, [rid])).loc[rid]
    pts = queries.run_points(sqlite_engine, rid)
    for mode in ("reduce-overhead", "cuda-graph"):
        best = max((m for m in pts if m.mode == mode),
                   key=lambda m: m.intervals.speedup_ci_low)
        assert figs[f"{mode} batch"] == best.batch_size
        assert math.isclose(figs[f"{mode} x"], best.intervals.speedup)
        assert math.isclose(figs[f"{mode} memory MiB"],
                            best.memory.memory_cost_bytes / 2**20)
    assert figs["points"] == f"{len(pts)}/{len(pts)} ok"


def test_a_run_without_points_has_no_figures_not_zeros(sqlite_engine):
    doc = sweep_bundle()
    doc["measurements"] = []
    rid = import_bundle(sqlite_engine, doc)[0]
    figs = board.key_figures(_runs(sqlite_engine), _summaries(sqlite_engine, [rid])).loc[rid]
    assert all(math.isnan(figs[c]) for c in board.key_columns())
    assert figs["key figure"] == NO_SPEEDUP and figs["memory cost"] == ""


def test_serve_key_figure_is_the_best_strategy():
    runs = [RunListing(header(id=7, kind="serve"))]
    serve = pd.DataFrame([
        {"run_id": 7, "strategy": "eager", "status": "ok", "rows_per_s": 100.0,
         "latency_ms_p99": 2.0},
        {"run_id": 7, "strategy": "buckets", "status": "ok", "rows_per_s": 900.0,
         "latency_ms_p99": 1.25},
        {"run_id": 7, "strategy": "broken", "status": "error", "rows_per_s": None,
         "latency_ms_p99": None}])
    figs = board.key_figures(runs, {}, serve).loc[7]
    assert figs["key figure"] == "best buckets: 900 rows/s, p99 1.25 ms"
    assert figs["points"] == "2/3 strategies ok"


def test_compare_refusal_names_the_reason():
    same = headers({"id": 1}, {"id": 2})
    assert board.compare_refusal(same) == []
    assert board.compare_refusal(same[:1]) == []
    serve = headers({"id": 1}, {"id": 2, "kind": "serve"})
    assert board.compare_refusal(serve) == [
        "Run 2 is a serve run: Compare overlays sweeps. Open it on the Serve page instead."]
    # Different workloads are Compare's to show with a warning, as it does: one rule.
    other = headers({"id": 1}, {"id": 2, "workload": "resnet"})
    assert board.compare_refusal(other) == []
    refused, warned = compare_rule(other)
    assert refused == [] and warned[0].startswith("Not comparable: workloads differ")


def test_the_board_is_built_from_one_points_query_per_database_state(sqlite_engine):
    """The Runs page's load: its queries do not grow with the number of runs (the runs
    frame, then the summaries' headers and points)."""
    from sqlalchemy import event

    for i in range(12):
        import_bundle(sqlite_engine, sweep_bundle(uuid=f"count-{i}"))
    statements = []
    event.listen(sqlite_engine, "before_cursor_execute",
                 lambda *a: statements.append(a[2]))
    runs = _runs(sqlite_engine)
    table = board.board(runs, _summaries(sqlite_engine, [r.header.id for r in runs]))
    assert len(table) == 12 and table["cuda-graph x"].notna().all()
    assert len(statements) == 3, statements


def test_the_runs_page_computes_the_board_once_per_database_state(dash, monkeypatch):
    """Rerunning the Runs page, or another reader opening it, reads the board back from
    the cache; adding, finishing or deleting a run computes it again."""
    from db.store import delete_run

    calls = []
    real = board.key_figures
    monkeypatch.setattr(board, "key_figures",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    first = dash.add(uuid="cache-1")
    at = dash.open("pages/runs.py")
    assert len(calls) == 1
    at.run()
    dash.open("pages/runs.py")  # a second reader, a fresh session
    assert len(calls) == 1
    second = dash.add(uuid="cache-2")
    at.run()
    assert len(calls) == 2 and second in at.dataframe[0].value["id"].tolist()
    delete_run(dash.engine, first)
    at.run()
    assert len(calls) == 3 and first not in at.dataframe[0].value["id"].tolist()


def test_runs_table_marks_published_and_cpu(sqlite_engine):
    seed_if_empty(sqlite_engine)
    import_bundle(sqlite_engine, sweep_bundle(device="cpu"))
    t = board.runs_table(queries.runs_list(sqlite_engine)).set_index("GPU")
    assert t.at["NVIDIA L40S", "source"] == "published"
    cpu = "CPU (synthetic-host)"
    assert t.at[cpu, "source"] == "measured"
    assert t.at[cpu, "link"].startswith("run?run=")
    assert not t.astype(str).apply(lambda c: c.str.contains("nan")).any().any()


def test_a_board_column_is_as_wide_as_its_longest_entry_within_bounds():
    from pages.logic.board import column_width, text_px

    # The GPU name that was cut at 140 px in chromium at 1280x800 gets the room it needs.
    assert column_width(["NVIDIA H200", "NVIDIA H100 80GB HBM3"], 80, 200) > 160
    assert text_px("NVIDIA H100 80GB HBM3") > text_px("nvidia h100 80gb hbm3")
    assert column_width(["mlp"], 90, 160) == 90  # at least the floor
    assert column_width(["x" * 500], 240, 400) == 400  # never past the cap
    assert column_width([], 80, 200) == 80
