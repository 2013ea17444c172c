"""Bench the dashboard at scale: 1,000 runs and 100,000 measurements in SQLite.

Builds the database (SYNTHETIC figures from tests/synthetic.py: a speed benchmark needs
volume, not truth; they never leave the temp file), then times, warm (caches filled by a
first render, as for a user who has the app open):
  - the Runs page and a Run page rendered through streamlit's AppTest (the whole script:
    frame, sidebar, queries through st.cache_data, charts, tables), target < 1 s each;
  - the same pages' queries and chart building without streamlit, uncached (what a cache
    miss costs, e.g. right after a worker stored a point);
  - `--sessions N` (default 20): a real `streamlit run app.py` server and N sessions
    opening the Runs page at once over streamlit's websocket protocol, after one reader
    drew it (a server in use); each session's time until its runs table was sent and its
    script run finished, target < 10 s.

usage: python bench/dashboard_bench.py [--db FILE.db] [--runs 1000] [--repeat 5]
                                       [--sessions 20]
A --db file that already holds the runs is reused (building takes about a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from db import queries  # noqa: E402
from db.engine import make_engine  # noqa: E402
from db.store import import_bundle  # noqa: E402
from pages.charts import run_charts  # noqa: E402
from pages.logic import board, points_table, run_text  # noqa: E402
from tests.synthetic import sweep_bundle  # noqa: E402

TARGET_S = 1.0
SESSIONS_TARGET_S = 10.0
GPUS = ("SYNTHETIC GPU A", "SYNTHETIC GPU B", "SYNTHETIC GPU C", "SYNTHETIC GPU D", None)
TORCHES = ("2.8.0", "2.9.0", "2.10.0", "2.11.0")
# 4 modes x 25 batch sizes = 100 points per run.
BATCHES = tuple(sorted({2 ** k for k in range(13)} | {3 * 2 ** k for k in range(12)}))


def build(url: str, runs: int, traces: bool = False) -> None:
    """`traces`: every GPU point carries a step timeline (bench/timeline_bench.py)."""
    engine = make_engine(url)
    have = len(queries.runs_frame(engine))
    if have >= runs:
        print(f"reusing {url}: {have} runs")
        return
    t0 = time.perf_counter()
    for i in range(have, runs):
        gpu = GPUS[i % len(GPUS)]
        doc = sweep_bundle(
            gpu=gpu, device="cuda" if gpu else "cpu", torch=TORCHES[i % len(TORCHES)],
            workload=("mlp", "transformer-decode")[i % 2], batches=BATCHES,
            scale=1.0 + (i % 7) / 10, uuid=f"bench-synthetic-{i:05d}",
            label=f"SYNTHETIC bench run {i}",
            created_at=f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00+00:00",
            traces=traces)
        import_bundle(engine, doc)
        if (i + 1) % 100 == 0:
            print(f"  built {i + 1}/{runs} runs ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    engine.dispose()


def timed(fn, repeat: int) -> tuple[float, float]:
    """(first call, median of the next `repeat` calls) in seconds."""
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return first, statistics.median(times)


def bench_pages(url: str, run_id: int, repeat: int) -> dict[str, tuple[float, float]]:
    from streamlit.testing.v1 import AppTest

    os.environ["LAUNCHBENCH_DB"] = url
    os.environ.pop("LAUNCHBENCH_READ_ONLY", None)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)

    def runs_page():
        at.switch_page("pages/runs.py")
        at.query_params = {}
        at.run()
        assert not at.exception and len(at.dataframe[0].value) >= 1000, at.exception

    def run_page():
        at.switch_page("pages/run.py")
        at.query_params = {"run": str(run_id)}
        at.run()
        assert not at.exception and not at.error, (at.exception, at.error)

    t = time.perf_counter()
    at.run()  # cold: engine, caches and imports all fresh
    cold = time.perf_counter() - t
    return {"Runs page, cold start (AppTest)": (cold, float("nan")),
            "Runs page (AppTest)": timed(runs_page, repeat),
            "Run page (AppTest)": timed(run_page, repeat)}


def bench_functions(url: str, run_id: int, repeat: int) -> dict[str, tuple[float, float]]:
    engine = make_engine(url)

    def runs_load():
        board.runs_table(queries.runs_list(engine))

    def board_load():  # what the Runs page computes once per database state
        runs = queries.runs_list(engine)
        sweeps = queries.run_summaries(engine, [r.header.id for r in runs
                                                if r.header.kind == "sweep"])
        board.board(runs, {s.header.id: s for s in sweeps})

    def run_load():
        points = queries.run_points(engine, run_id)
        queries.run_header(engine, run_id)
        queries.run_summary(engine, run_id).headline()
        run_text.headline(points)
        for chart in run_charts.run_charts(points).values():
            chart.to_dict()
        points_table.points_table(points)

    return {"Runs query + table (no cache)": timed(runs_load, repeat),
            "Runs board, 1,000 runs (no cache)": timed(board_load, repeat),
            "Run query + charts (no cache)": timed(run_load, repeat)}


async def _session(base: str) -> float:
    """One session as a browser opens it, over streamlit's own websocket protocol: seconds
    from connecting until the script run that drew the runs table has finished. No
    browser: on a 2-core machine 20 chromium pages parsing streamlit's JavaScript take
    the CPU the server is being measured on."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.asyncio.client import connect

    t = time.perf_counter()
    url = base.replace("http", "ws", 1) + "/_stcore/stream"
    async with connect(url, subprotocols=["streamlit"], max_size=None) as ws:
        ask = BackMsg()
        ask.rerun_script.query_string = ""  # "/": the Runs page
        await ws.send(ask.SerializeToString())
        table = False
        while True:
            msg = ForwardMsg()
            msg.ParseFromString(await asyncio.wait_for(ws.recv(), 300))
            kind = msg.WhichOneof("type")
            if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                table |= msg.delta.new_element.WhichOneof("type") == "dataframe"
            if kind == "script_finished" and table:
                return time.perf_counter() - t


def bench_sessions(url: str, n: int) -> list[float]:
    """Seconds until each of `n` sessions opened at once has the Runs table, on a real
    `streamlit run app.py` (read-only) after one reader drew it (a server in use)."""

    async def run(base: str) -> list[float]:
        await _session(base)
        return list(await asyncio.gather(*(_session(base) for _ in range(n))))

    from tests.e2e_support import streamlit_server

    with streamlit_server(url, {"LAUNCHBENCH_READ_ONLY": "1"},
                          Path(tempfile.mkdtemp(prefix="lb-bench-log-"))) as dash:
        return sorted(asyncio.run(run(dash.base_url)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="SQLite file to build or reuse (default: a temp file)")
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sessions", type=int, default=20,
                    help="concurrent browser sessions on the Runs page (0: skip)")
    args = ap.parse_args()
    path = Path(args.db) if args.db else Path(tempfile.mkdtemp(prefix="lb-bench-")) / "b.db"
    url = f"sqlite:///{path.resolve()}"
    build(url, args.runs)
    engine = make_engine(url)
    frame = queries.runs_frame(engine)
    n_points = int(frame["points"].sum())
    run_id = int(frame.iloc[len(frame) // 2]["id"])
    engine.dispose()
    print(f"database: {path} ({len(frame)} runs, {n_points} measurements, SYNTHETIC)")
    results = {**bench_functions(url, run_id, args.repeat),
               **bench_pages(url, run_id, args.repeat)}
    ok = True
    print(f"{'what':34s} {'first':>8s} {'warm median':>12s}  target")
    for name, (first, warm) in results.items():
        page = "AppTest" in name and warm == warm  # NaN: a cold start, no target
        verdict = ("ok" if warm < TARGET_S else "SLOW") if page else ""
        ok &= warm < TARGET_S or not page
        target = f"< {TARGET_S:g} s {verdict}" if page else ""
        shown = f"{warm:11.3f}s" if warm == warm else f"{'-':>12s}"
        print(f"{name:34s} {first:7.3f}s {shown}  {target}")
    if args.sessions > 0:
        took = bench_sessions(url, args.sessions)
        slow = max(took) >= SESSIONS_TARGET_S
        ok &= not slow
        print(f"Runs page, {args.sessions} sessions at once: median "
              f"{statistics.median(took):.2f} s, slowest {max(took):.2f} s  "
              f"target every one < {SESSIONS_TARGET_S:g} s {'SLOW' if slow else 'ok'}")
    print(f"load average while measuring: {os.getloadavg()[0]:.2f} (1 min), "
          f"{os.cpu_count()} CPUs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
