"""The Runs board's pure logic: key figures per run and whether runs can be compared."""

from __future__ import annotations

import math

import pandas as pd

from db import queries
from db.store import import_bundle
from pages.common import board
from tests.synthetic import sweep_bundle


def _runs(engine):
    return queries.runs_frame(engine)


def test_key_figures_rank_by_lower_bound_and_carry_the_pool(sqlite_engine):
    rid = import_bundle(sqlite_engine, sweep_bundle())[0]
    runs = _runs(sqlite_engine)
    figs = board.key_figures(runs, queries.key_points(sqlite_engine, [rid])).loc[rid]
    pts = queries.run_points(sqlite_engine, rid)
    for mode in ("reduce-overhead", "cuda-graph"):
        mine = pts[(pts["mode"] == mode)]
        best = mine.loc[mine["speedup_ci_low"].idxmax()]
        assert figs[f"{mode} batch"] == best["batch_size"]
        assert math.isclose(figs[f"{mode} x"], best["speedup"])
        assert math.isclose(figs[f"{mode} pool MiB"], best["graph_pool_bytes"] / 2**20)
    assert figs["points"] == f"{len(pts)}/{len(pts)} ok"


def test_a_run_without_points_has_no_figures_not_zeros(sqlite_engine):
    runs = pd.DataFrame([{"id": 1, "kind": "sweep", "points": 0, "ok_points": 0}])
    figs = board.key_figures(runs, pd.DataFrame(columns=queries.KEY_POINT_COLUMNS)).loc[1]
    assert all(math.isnan(figs[c]) for c in board.key_columns())
    assert figs["key figure"] == "no graph mode measured"


def test_serve_key_figure_is_the_best_strategy():
    runs = pd.DataFrame([{"id": 7, "kind": "serve"}])
    serve = pd.DataFrame([
        {"run_id": 7, "strategy": "eager", "status": "ok", "rows_per_s": 100.0,
         "latency_ms_p99": 2.0},
        {"run_id": 7, "strategy": "buckets", "status": "ok", "rows_per_s": 900.0,
         "latency_ms_p99": 1.25},
        {"run_id": 7, "strategy": "broken", "status": "error", "rows_per_s": None,
         "latency_ms_p99": None}])
    figs = board.key_figures(runs, pd.DataFrame(), serve).loc[7]
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
    other = pd.DataFrame([{**base, "id": 1}, {**base, "id": 2, "workload": "resnet"}])
    (line,) = board.compare_refusal(other)
    assert line.startswith("Cannot compare: workload differ")
