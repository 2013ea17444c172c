"""One run, one set of figures: the typed run summary (contract/run_summary.py) and
every place that quotes it. The shipped H200 `mlp` sample read "+1 MiB" in the Run page
headline (pool + peak over eager's peak) and 34 MiB on the Runs board (the graph pool);
here the headline, the board, Compare, Trends, `runner list` and the HTML report are read
for that run and must show the same speedup string and the same memory figure."""

from __future__ import annotations

import math

import pytest
from markupsafe import escape

from contract import verdict as vd
from contract.measurement import Measurement
from contract.memory import OLD_METHOD
from contract.run_summary import MEMORY_COST_LABEL, RunHeader, summarize
from db import queries, records
from pages.charts import report
from runner.ops.cli import main
from tests.apptest import texts
from tests.conftest import H100_MLP_UUID, H200_MLP_UUID
from tests.synthetic import sweep_bundle

# The samples' own figures. data/samples/h200-mlp.json (measured before the isolated memory
# pass, bundle version 4): reduce-overhead at batch 1 has the highest lower bound, 6.05x;
# it has a graph pool of 35,651,584 bytes (34 MiB) and no memory cost, so the pool is
# quoted as what it is, a part, marked. data/samples/h100-mlp.json (version 7): cuda-graph
# at batch 8, whose memory cost over eager is +38 MiB with its parts.
H200 = (H200_MLP_UUID, "reduce-overhead at batch 1: 6.80x (6.05-7.57x)",
        f"graph pool 34.0 MiB ({OLD_METHOD})", None)
H100 = (H100_MLP_UUID, "cuda-graph at batch 8: 7.15x (4.71-9.59x)",
        f"+38.0 MiB {MEMORY_COST_LABEL}", ("cuda-graph memory MiB", 38.0))


def _run_id(dash, uuid: str) -> int:
    [rid] = [r.header.id for r in queries.runs_list(dash.engine) if r.header.uuid == uuid]
    return rid


@pytest.mark.parametrize("sample", [H200, H100], ids=["h200-before-the-pass", "h100"])
def test_every_reader_quotes_a_run_alike(dash, capsys, sample):
    uuid, SPEEDUP, MEMORY, column = sample
    rid = _run_id(dash, uuid)
    summary = queries.run_summary(dash.engine, rid)
    assert (summary.speedup_text(), summary.memory_text()) == (SPEEDUP, MEMORY)
    assert summary.header.kind == "sweep"

    # the Run page's headline (AppTest)
    head = texts(dash.open("pages/run.py", run=str(rid)), "markdown")[0]
    # (the energy gain follows where the run measured energy)
    assert head.startswith(f"##### {SPEEDUP} · {MEMORY}")
    assert "+1 MiB" not in head

    # the Runs board: the key figure, its memory cost, and the cost column's number
    # (none for a run from before the isolated memory pass)
    board = dash.open().dataframe[0].value.set_index("id").loc[rid]
    assert (board["key figure"], board["memory cost"]) == (SPEEDUP, MEMORY)
    if column is None:
        assert all(math.isnan(board[f"{m} memory MiB"])
                   for m in ("reduce-overhead", "cuda-graph"))
    else:
        assert board[column[0]] == pytest.approx(column[1])

    # Compare, beside the published L40S mlp run
    other = dash.published
    keys = dash.open("pages/compare.py", run=[str(rid), str(other)]).table[0].value
    mine = keys[keys["run"].str.startswith(f"#{rid} ")].iloc[0]
    assert (mine["key figure"], mine["memory cost"]) == (SPEEDUP, MEMORY)

    # Trends: the series of mlp runs on the run's GPU
    at = dash.open("pages/trend.py", workload="mlp", gpu=summary.header.gpu_name)
    keys = at.table[0].value
    mine = keys[keys["run"].str.endswith(f"#{rid}")].iloc[0]
    assert (mine["key figure"], mine["memory cost"]) == (SPEEDUP, MEMORY)

    # `runner list`
    assert main(["list", "--db", dash.url]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines()
                if ln.split()[0] == str(rid))
    assert SPEEDUP in line and MEMORY in line

    # the HTML report, as the Import/export page builds it, and from the frames alone
    header = queries.run_header(dash.engine, rid)
    points = queries.run_points(dash.engine, rid)
    for html in (report.html_report(header, points, summary=summary),
                 report.html_report(header, points)):
        assert f"<p class='answer'>{escape(SPEEDUP)} · {escape(MEMORY)}" in html


def test_the_board_and_the_list_say_the_same_of_a_run_without_a_finding(sqlite_engine,
                                                                        capsys):
    from db.store import import_bundle

    wide = {"speedup": 1.0, "speedup_ci_low": 0.2, "speedup_ci_high": 5.0}
    rid = import_bundle(sqlite_engine, sweep_bundle(batches=(8,), overrides={
        (m, 8): wide for m in ("compile", "reduce-overhead", "cuda-graph")}))[0]
    summary = queries.run_summary(sqlite_engine, rid)
    assert summary.key is None and summary.memory_text() is None
    assert summary.speedup_text().startswith("inconclusive: no mode's speedup is a finding")
    assert summary.headline().startswith("Inconclusive: no mode's speedup")
    assert main(["list", "--db", str(sqlite_engine.url)]) == 0
    assert summary.speedup_text() in capsys.readouterr().out


def _point(mode, batch, step_ms, speedup=None, lo=None, hi=None, pool=None, **details):
    return Measurement.from_json({
        "mode": mode, "batch_size": batch, "status": "ok", "step_ms": step_ms,
        "speedup": speedup, "speedup_ci_low": lo, "speedup_ci_high": hi,
        "graph_pool_bytes": pool, "details": details})


HEADER = RunHeader(id=1, uuid="u", workload="mlp", status="done")


def test_summarize_ranks_by_the_lower_bound_and_never_an_inconclusive_point():
    s = summarize(HEADER, [
        _point("eager", 1, 1.0), _point("eager", 8, 2.0),
        # a 40x median whose interval spans both sides of 1x widely: not the best
        _point("cuda-graph", 1, 0.03, 40.0, 0.5, 90.0, pool=2**25),
        _point("cuda-graph", 8, 0.3, 7.1, 6.5, 7.6, pool=2**25),
        _point("reduce-overhead", 8, 0.25, 8.0, 6.0, 9.0, pool=3 * 2**25),
        _point("compile", 8, 1.8)])  # no stored ratio: eager / compile medians, no interval
    cg = s.best("cuda-graph")
    assert (cg.batch_size, cg.verdict, cg.inconclusive) == (8, vd.FASTER, (1,))
    assert s.key.mode == "cuda-graph"  # 6.5 > 6.0: the higher lower bound, not the median
    assert s.best("compile").speedup == pytest.approx(2.0 / 1.8)
    assert s.best("compile").verdict == vd.NO_INTERVAL
    # Points without the isolated pass's figures (bundle version 6 and older): the pool
    # is quoted as a part, marked; a mode without one has no memory figure to quote.
    assert s.memory_text() == f"graph pool 32.0 MiB ({OLD_METHOD})"
    assert s.best("compile").memory_text() == "memory not measured"


def _kept(mode, kept, pool, eager, cost=None):
    mib = 2**20
    return Measurement.from_json({
        "mode": mode, "batch_size": 8, "status": "ok", "step_ms": 1.0,
        "graph_pool_bytes": pool * mib, "reserved_delta_bytes": kept * mib,
        "memory_cost_bytes": (kept - eager if cost is None else cost) * mib,
        "details": {"eager_reserved_delta_bytes": eager * mib}})


def test_the_memory_cost_is_quoted_with_its_parts_and_a_negative_one_with_its_cause():
    from contract import memory

    ro = _kept("reduce-overhead", 36, 34, 32)
    assert memory.cost_text(ro) == (f"+4.0 MiB {MEMORY_COST_LABEL} (keeps 36.0 MiB: graph "
                                    "pool 34.0 MiB, default pool 2.0 MiB; eager keeps 32.0 MiB)")
    assert memory.cost_text(ro, short=True) == "+4.0 MiB (graph pool 34.0 MiB)"
    assert memory.cost_of(ro).default_bytes == 2 * 2**20
    less = _kept("compile", 0, 0, 32)
    assert memory.cost_text(less).startswith(
        f"-32.0 MiB {MEMORY_COST_LABEL}: it keeps less than eager's own (keeps 0.0 MiB")
    assert memory.cost_text(_kept("eager", 32, 0, 32)) == "the baseline: eager keeps 32.0 MiB"


def test_summarize_reads_a_published_reference_and_the_paired_break_even():
    s = summarize(HEADER, [
        _point("cuda-graph", 4, 0.5, eager_reference_ms=2.0),  # its own eager run
        _point("eager", 1, 1.0), _point("eager", 64, 2.0),
        _point("compile", 1, 1.0), _point("reduce-overhead", 1, 0.5),
        _point("compile", 64, 1.0), _point("reduce-overhead", 64, 0.5,
                                           vs_compile={"median": 1.05, "low": 1.0,
                                                       "high": 1.1})])
    assert s.best("cuda-graph").speedup == pytest.approx(4.0)
    assert s.best("cuda-graph").memory_text() == "memory not measured"
    # batch 64: the paired ratio 1.05 (below 1.1x), not the medians' 2.0
    assert s.break_even_batch == 64


def test_a_failed_or_unknown_point_is_no_figure():
    s = summarize(HEADER, [
        _point("eager", 1, 1.0),
        Measurement.from_json({"mode": "cuda-graph", "batch_size": 1, "status": "error",
                               "step_ms": None}),
        Measurement.from_json({"mode": "compile", "batch_size": 1, "status": "ok",
                               "step_ms": math.nan})])
    assert s.bests == () and s.headline() is None
    assert records.header({"id": 2, "gpu_name": None, "uuid": "x", "workload": "w",
                           "status": "done"}).gpu_name is None
