"""Bench the step timelines (issue 12): what traces add to a bundle, and the Run page
with a timeline drawn on a 1,000-run / 100,000-point database whose every GPU point
carries a trace.

(a) Size: each bundle in data/samples/ (or the files given) with its traced points and
    events, against the 2 MB a shipped sample may weigh (the H200 samples carry real
    traces), and a SYNTHETIC 32-point bundle for the order of magnitude.
(b) Speed: bench/dashboard_bench.py's database built with a trace on every GPU point,
    then the Run page at ?batch=8 through AppTest (frame, queries, the stacked lanes),
    warm, target < 1 s; and the timeline's query + chart without streamlit, uncached.

usage: python bench/timeline_bench.py [--db FILE.db] [--runs 1000] [--repeat 5]
                                      [--size-only] [BUNDLE.json ...]
Building the database takes a few minutes; a --db file that holds the runs is reused.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import dashboard_bench as dash  # noqa: E402

from contract import bundle as fmt  # noqa: E402
from db import queries  # noqa: E402
from db.engine import make_engine  # noqa: E402
from pages.charts import timeline_chart  # noqa: E402
from pages.logic import timeline  # noqa: E402
from tests.synthetic import sweep_bundle  # noqa: E402

MAX_SAMPLE_BYTES = 2 << 20
SAMPLES = ROOT / "data" / "samples"


def size_line(name: str, text: str) -> tuple[str, bool]:
    doc = fmt.loads(text, name)
    traced = [m["trace"] for m in doc["measurements"] if m.get("trace")]
    events = sum(len(t["cpu"]) + len(t["gpu"]) for t in traced)
    dropped = sum(t["dropped"] for t in traced)
    size = len(text.encode())
    ok = size <= MAX_SAMPLE_BYTES
    return (f"{name:44s} {size / 1024:9.1f} KiB  {len(doc['measurements']):4d} points  "
            f"{len(traced):4d} traced  {events:7d} events  {dropped:5d} dropped  "
            f"{'ok' if ok else 'OVER 2 MB'}"), ok


def sizes(files: list[Path]) -> bool:
    print(f"(a) bundle sizes with traces (limit {MAX_SAMPLE_BYTES >> 20} MB per sample)")
    ok = True
    for f in files:
        line, good = size_line(f.name, f.read_text(encoding="utf-8"))
        print("   ", line)
        ok &= good
    synthetic = sweep_bundle(batches=(1, 4, 16, 64, 256, 1024, 4096, 8192), traces=True,
                             uuid="bench-synthetic-size")
    line, _ = size_line("SYNTHETIC 8 sizes x 4 modes (64 kernels)", fmt.dumps(synthetic))
    print("   ", line)
    return ok


def run_page(url: str, run_id: int, repeat: int) -> dict[str, tuple[float, float]]:
    """The Run page at ?batch=8 through AppTest, warm (as dashboard_bench times it), and
    the same page with the timeline section stubbed out in this process, the two renders
    interleaved: on a loaded host the pair says what the timeline adds to the page."""
    import json
    import os
    import statistics
    import time

    from streamlit.testing.v1 import AppTest

    from pages.widgets import timeline_view

    os.environ["LAUNCHBENCH_DB"] = url
    os.environ.pop("LAUNCHBENCH_READ_ONLY", None)
    real = timeline_view.timeline_section
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()  # the frame, engine and caches

    def render(timeline_on: bool) -> float:
        timeline_view.timeline_section = real if timeline_on else (lambda *a, **k: None)
        t = time.perf_counter()
        at.switch_page("pages/run.py")
        at.query_params = {"run": str(run_id), "batch": "8"}
        at.run()
        took = time.perf_counter() - t
        assert not at.exception and not at.error, (at.exception, at.error)
        drawn = any("vconcat" in json.loads(c.proto.spec) for c in at.main
                    if getattr(c, "type", "") in ("vega_lite_chart", "arrow_vega_lite_chart"))
        assert drawn == timeline_on, "timeline drawn" if drawn else "no timeline drawn"
        return took

    try:
        first = {True: render(True), False: render(False)}
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(repeat):
            for on in (True, False):
                times[on].append(render(on))
    finally:
        timeline_view.timeline_section = real
    return {"Run page (AppTest)": (first[True], statistics.median(times[True])),
            "  same page, timeline stubbed out": (first[False],
                                                  statistics.median(times[False]))}


def speed(db: str | None, runs: int, repeat: int) -> bool:
    path = Path(db) if db else Path(tempfile.mkdtemp(prefix="lb-tl-bench-")) / "t.db"
    url = f"sqlite:///{path.resolve()}"
    dash.build(url, runs, traces=True)
    engine = make_engine(url)
    frame = queries.runs_frame(engine)
    run_id = int(frame[frame["gpu_name"].notna()].iloc[len(frame) // 4]["id"])
    n_points = int(frame["points"].sum())
    print(f"(b) database: {path} ({len(frame)} runs, {n_points} measurements, a trace on "
          "every GPU point, SYNTHETIC)")

    def timeline_load():
        items = timeline.ordered(queries.point_traces(engine, [run_id], 8))
        assert items, "the bench run has no trace at batch 8"
        timeline_chart.timeline_chart([(x.mode, x.trace) for x in items]).to_dict()

    results = {"Run timeline query + chart (no cache)": dash.timed(timeline_load, repeat),
               **run_page(url, run_id, repeat)}
    engine.dispose()
    ok = True
    for name, (first, warm) in results.items():
        page = "AppTest" in name
        verdict = ("ok" if warm < dash.TARGET_S else "SLOW") if page else ""
        ok &= warm < dash.TARGET_S or not page
        target = f"target < {dash.TARGET_S:g} s {verdict}" if page else ""
        print(f"    {name + ' at ?batch=8' if page else name:44s} first {first:7.3f}s  "
              f"warm median {warm:7.3f}s  {target}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, help="bundles to size (default: "
                    "data/samples/*.json)")
    ap.add_argument("--db", help="SQLite file to build or reuse (default: a temp file)")
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--size-only", action="store_true", help="only (a), no database")
    args = ap.parse_args()
    ok = sizes(args.files or sorted(SAMPLES.glob("*.json")))
    if not args.size_only:
        ok &= speed(args.db, args.runs, args.repeat)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
