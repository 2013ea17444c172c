"""The Runs board's pure logic: key figures per run and whether runs can be compared."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from contract.run_summary import BREAK_EVEN_LABEL, NO_SPEEDUP
from contract.verdict import INCONCLUSIVE, quoted
from db import queries
from db.store import import_bundle
from pages.logic import board, comparing
from tests.synthetic import step_figures, sweep_bundle


def _runs(engine):
    return queries.runs_frame(engine)


def _summaries(engine, ids) -> dict:
    return {s.header.id: s for s in queries.run_summaries(engine, ids)}


def test_key_figures_rank_by_lower_bound_and_carry_the_pool(sqlite_engine):
    rid = import_bundle(sqlite_engine, sweep_bundle())[0]
    runs = _runs(sqlite_engine)
    figs = board.key_figures(runs, _summaries(sqlite_engine, [rid])).loc[rid]
    pts = queries.run_points(sqlite_engine, rid)
    for mode in ("reduce-overhead", "cuda-graph"):
        mine = pts[(pts["mode"] == mode)]
        best = mine.loc[mine["speedup_ci_low"].idxmax()]
        assert figs[f"{mode} batch"] == best["batch_size"]
        assert math.isclose(figs[f"{mode} x"], best["speedup"])
        assert math.isclose(figs[f"{mode} pool MiB"], best["graph_pool_bytes"] / 2**20)
    assert figs["points"] == f"{len(pts)}/{len(pts)} ok"


def test_a_run_without_points_has_no_figures_not_zeros(sqlite_engine):
    doc = sweep_bundle()
    doc["measurements"] = []
    rid = import_bundle(sqlite_engine, doc)[0]
    figs = board.key_figures(_runs(sqlite_engine), _summaries(sqlite_engine, [rid])).loc[rid]
    assert all(math.isnan(figs[c]) for c in board.key_columns())
    assert figs["key figure"] == NO_SPEEDUP and figs["memory cost"] == ""


def test_serve_key_figure_is_the_best_strategy():
    runs = pd.DataFrame([{"id": 7, "kind": "serve"}])
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
    base = {"kind": "sweep", "workload": "mlp", "workload_params": {"depth": 2},
            "dtype": "float32", "gpu_name": "A", "torch_version": "2.5", "source": "measured"}
    same = pd.DataFrame([{**base, "id": 1}, {**base, "id": 2}])
    assert board.compare_refusal(same) == []
    assert board.compare_refusal(same.iloc[:1]) == []
    serve = pd.DataFrame([{**base, "id": 1}, {**base, "id": 2, "kind": "serve"}])
    assert board.compare_refusal(serve) == [
        "Run 2 is a serve run: Compare overlays sweeps. Open it on the Serve page instead."]
    # Different workloads are Compare's to show with a warning, as it does: one rule.
    other = pd.DataFrame([{**base, "id": 1}, {**base, "id": 2, "workload": "resnet"}])
    assert board.compare_refusal(other) == []
    refused, warned = comparing.compare_rule(other)
    assert refused == [] and warned[0].startswith("Not comparable: workloads differ")


def _one_run_at_a_time(points: pd.DataFrame) -> dict:
    """The oracle: one run's key figures from analysis' per-run functions over its points
    frame (pandas), against which the summary's standard-library builder is held."""
    from pages.logic import analysis

    row = {c: math.nan for c in board.key_columns()}
    ok = analysis.usable(points)
    best = analysis.largest_speedups(points)
    for _, b in best.iterrows():
        if b["mode"] not in ("reduce-overhead", "cuda-graph") or b["verdict"] == INCONCLUSIVE:
            continue
        batch = int(b["batch_size"])
        row[f"{b['mode']} x"], row[f"{b['mode']} batch"] = float(b["speedup"]), batch
        pool = ok.loc[(ok["mode"] == b["mode"]) & (ok["batch_size"] == batch),
                      "graph_pool_bytes"].astype(float)
        row[f"{b['mode']} pool MiB"] = pool.iloc[0] / 2**20 if len(pool) else math.nan
    be = analysis.break_even(points)
    if be.status in ("crosses", "always-below"):
        row[BREAK_EVEN_LABEL] = be.batch_size
    found = best[best["verdict"] != INCONCLUSIVE]
    if found.empty:
        row["key figure"] = None  # not compared: the inconclusive wording is tested apart
    else:
        rank = found["speedup_ci_low"].where(found["speedup_ci_low"].notna(), found["speedup"])
        k = found.loc[rank.idxmax()]
        row["key figure"] = (f"{k['mode']} at batch {int(k['batch_size'])}: "
                             f"{quoted(k['speedup'], k['speedup_ci_low'], k['speedup_ci_high'])}")
    return row


def _varied_bundles():
    """Runs that exercise every branch: break-even crossing, never and always below,
    equal ranks, failed points, no intervals, a missing graph mode."""
    for i, (scale, intervals) in enumerate([(1.0, True), (1.6, False), (0.4, True)]):
        doc = sweep_bundle(scale=scale, intervals=intervals, uuid=f"varied-{i}")
        ms = doc["measurements"]
        if i == 0:  # compile far slower at small batch only: break-even crosses
            for m in ms:
                if m["mode"] == "compile" and m["batch_size"] <= 8:
                    m.update(step_figures(m["step_ms"] * 5))
                    m["details"] = {}
        if i == 1:  # a failed best point and no reduce-overhead at all
            ms[:] = [m for m in ms if m["mode"] != "reduce-overhead"]
            for m in ms:
                if m["mode"] == "cuda-graph" and m["batch_size"] == 1:
                    m.update(status="error", step_ms=None, message="boom")
        if i == 2:  # equal ranks at every batch: the first batch wins
            for m in ms:
                if m["mode"] == "cuda-graph":
                    m.update(speedup=3.0, speedup_ci_low=2.5, speedup_ci_high=3.5)
        yield doc


def test_key_figures_of_all_runs_at_once_equal_one_run_at_a_time(sqlite_engine):
    from db.samples import SAMPLES, seed_if_empty

    seed_if_empty(sqlite_engine, SAMPLES)
    for doc in _varied_bundles():
        import_bundle(sqlite_engine, doc)
    runs = _runs(sqlite_engine)
    sweeps = runs[runs["kind"] == "sweep"]
    points = queries.key_points(sqlite_engine, sweeps["id"])
    figs = board.key_figures(sweeps, _summaries(sqlite_engine, sweeps["id"]))
    seen_break_even = 0
    for rid in sweeps["id"].astype(int):
        want = _one_run_at_a_time(points[points["run_id"] == rid])
        got = figs.loc[rid]
        for c, v in want.items():
            if v is None:
                continue
            if isinstance(v, float) and math.isnan(v):
                assert math.isnan(got[c]), (rid, c, got[c])
            else:
                assert got[c] == pytest.approx(v) if isinstance(v, float) else got[c] == v, \
                    (rid, c, got[c], v)
        seen_break_even += not math.isnan(want[BREAK_EVEN_LABEL])
    assert seen_break_even >= 1  # the crossing branch was really compared


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
    table = board.board(runs, _summaries(sqlite_engine, runs["id"]))
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


def test_a_board_column_is_as_wide_as_its_longest_entry_within_bounds():
    from pages.logic.board import column_width, text_px

    # The GPU name that was cut at 140 px in chromium at 1280x800 gets the room it needs.
    assert column_width(["NVIDIA H200", "NVIDIA H100 80GB HBM3"], 80, 200) > 146
    assert text_px("NVIDIA H100 80GB HBM3") > text_px("nvidia h100 80gb hbm3")
    assert column_width(["mlp"], 90, 160) == 90  # at least the floor
    assert column_width(["x" * 500], 240, 400) == 400  # never past the cap
    assert column_width([], 80, 200) == 80
