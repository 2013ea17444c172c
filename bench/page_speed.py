"""How fast a page shows its charts in a real browser (issue 25): the Run page of the
shipped H200 `mlp` sample in chromium at 1280x800, from navigation to the first chart
Vega drew and to the last. Targets on an idle 2-core machine: first chart within 1.5 s,
all charts within 3 s.

A `streamlit run app.py` on a free port over a temp SQLite file seeded with the samples
(as a first start does), then, per repeat, a fresh browser context (a new visitor: no
session, no browser cache) opening /run?run=ID. The page opens on its default view (Speed,
two charts; the other views are tabs computed only when opened), so "all charts" are that
view's. A returning visitor (streamlit's scripts in the browser cache) is printed apart:
the targets are judged on new visitors. Times come from the page itself: an init
script stamps performance.now() (ms since navigation start) when the first
stVegaLiteChart holds a drawn svg, and when the script has finished and every chart on
the page holds one. The first visit after the server starts (cold: modules imported,
caches empty) is printed apart from the warm ones.

The machine's load is printed with the figures: on a shared host they say as much about
the neighbours as about the page.

usage: python bench/page_speed.py [--repeat 5] [--path 'run?run=ID'] [--url BASE]
(--url: time an already running dashboard instead of starting one; --path defaults to
the H200 mlp sample's run page)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402

FIRST_TARGET_S, ALL_TARGET_S = 1.5, 3.0
TIMEOUT_MS = 60_000

# Stamps, in ms since navigation start, kept on window.__lb: `first` when a chart is
# drawn, `all` when the script is done and every chart on the page is drawn.
STAMPS = """
(() => {
  window.__lb = {first: null, all: null};
  const check = () => {
    const charts = [...document.querySelectorAll("[data-testid='stVegaLiteChart']")];
    const drawn = charts.filter(c => c.querySelector('svg.marks text, canvas'));
    if (drawn.length && window.__lb.first === null) window.__lb.first = performance.now();
    const app = document.querySelector("[data-testid='stApp']");
    const done = app && app.getAttribute('data-test-script-state') === 'notRunning';
    if (done && charts.length && drawn.length === charts.length && window.__lb.all === null)
      window.__lb.all = performance.now();
  };
  new MutationObserver(check).observe(document, {subtree: true, childList: true,
                                                 attributes: true});
})();
"""


def sample_run_id(db_url: str) -> int:
    from db import queries
    from db.engine import make_engine

    engine = make_engine(db_url)
    try:
        runs = queries.runs_frame(engine)
    finally:
        engine.dispose()
    mlp = runs[(runs["kind"] == "sweep") & (runs["workload"] == "mlp")
               & runs["gpu_name"].fillna("").str.contains("H200")]
    return int(mlp["id"].iloc[0])


def _open(context, url: str) -> tuple[float, float, int]:
    page = context.new_page()
    try:
        page.goto(url, wait_until="commit")
        page.wait_for_function("() => window.__lb && window.__lb.all !== null",
                               timeout=TIMEOUT_MS)
        stamps = page.evaluate("() => window.__lb")
        charts = page.locator("[data-testid='stVegaLiteChart']").count()
        return stamps["first"] / 1000, stamps["all"] / 1000, charts
    finally:
        page.close()


def visit(browser, url: str, returning: bool = False) -> tuple[float, float, int]:
    """(first chart s, all charts s, charts) of one visit in a fresh browser context: a new
    visitor, or (`returning`) one whose browser cache already holds streamlit's scripts
    (immutable files), timed on a second page of the same context: a new session still."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        context.add_init_script(STAMPS)
        if returning:
            _open(context, url)
        return _open(context, url)
    finally:
        context.close()


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def bench(base: str, path: str | None, db_url: str | None, repeat: int) -> None:
    from playwright.sync_api import sync_playwright

    path = path or f"run?run={sample_run_id(db_url)}"
    url = f"{base}/{path.lstrip('/')}"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            print(f"{url} in chromium 1280x800 ({load()})")
            first, every, n = visit(browser, url)
            print(f"  cold (first visit after start): first chart {first:.2f} s, all {n} "
                  f"charts {every:.2f} s")
            firsts, alls = [], []
            for i in range(repeat):
                first, every, n = visit(browser, url)
                firsts.append(first)
                alls.append(every)
                print(f"  warm {i + 1}: first chart {first:.2f} s, all {n} charts "
                      f"{every:.2f} s ({load()})")
            back = [visit(browser, url, returning=True) for _ in range(max(1, repeat // 2))]
            print(f"  returning visitor (browser cache warm, new session), median of "
                  f"{len(back)}: first chart {statistics.median(b[0] for b in back):.2f} s, "
                  f"all charts {statistics.median(b[1] for b in back):.2f} s")
        finally:
            browser.close()
    f, a = statistics.median(firsts), statistics.median(alls)
    print(f"median of {repeat} warm visits: first chart {f:.2f} s (target "
          f"{FIRST_TARGET_S} s: {'met' if f <= FIRST_TARGET_S else 'MISSED'}), all charts "
          f"{a:.2f} s (target {ALL_TARGET_S} s: {'met' if a <= ALL_TARGET_S else 'MISSED'}); "
          f"{load()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--path", help="page path, e.g. 'run?run=2' (default: H200 mlp run)")
    ap.add_argument("--url", help="base URL of a running dashboard (default: start one)")
    args = ap.parse_args()
    if args.url:
        if not args.path:
            ap.error("--url needs --path (the run id is in that dashboard's database)")
        bench(args.url.rstrip("/"), args.path, None, args.repeat)
        return
    from db.engine import make_engine
    from db.samples import seed_if_empty

    with tempfile.TemporaryDirectory(prefix="lb-page-speed-") as tmp:
        db_url = f"sqlite:///{Path(tmp) / 'lb.db'}"
        engine = make_engine(db_url)
        seed_if_empty(engine)
        engine.dispose()
        with streamlit_server(db_url, log_dir=Path(tmp)) as server:
            t0 = time.perf_counter()
            bench(server.base_url, args.path, db_url, args.repeat)
            print(f"({time.perf_counter() - t0:.0f} s in all)")


if __name__ == "__main__":
    main()
