"""How fast every page shows its charts in a real browser (issue 25, issue 46 item 4), and
where the time goes. Targets on an idle 2-core machine, warm server: the Run page's first
chart within 1.0 s, every page settled within 2.0 s.

A `streamlit run app.py` on a free port over a temp SQLite file seeded with the samples
(as a first start does); every page and view (the Runs board, each Run view of the
shipped H200 `mlp` sample, Compare of the shipped GPUs, Trends, Serve, Launch, Import /
export, a graph-memory run) opened in chromium at 1280x800, per repeat in a fresh browser
context (a new visitor: no session, no browser cache). Times come from the page itself: an
init script stamps performance.now() (ms since navigation start) when the first
stVegaLiteChart holds a drawn svg or canvas, and when the page last became settled (the
script done, every chart drawn, every data grid drawn: a page whose widgets sync to the URL
runs its script twice, so the last such moment counts, read after a quiet second). The
first visit of each page after the server starts (cold: modules imported, caches empty) is
printed apart; the figures are medians of the warm visits.

Then the breakdown: one script run of each page under cProfile in streamlit's AppTest (the
same script in-process, caches warm), its time split by where the code lives (queries and
the database driver, page logic, chart specs and altair's validation, streamlit's
marshalling, pandas, arrow) and the project's functions that take most of it.

The machine's load is printed with the figures: on a shared host they say as much about
the neighbours as about the page.

usage: python bench/page_speed.py [--repeat 3] [--path 'run?run=ID'] [--url BASE]
                                  [--no-profile]
(--path: one page only; --url: time an already running dashboard (needs --path) instead of
starting one)
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402

FIRST_TARGET_S, SETTLED_TARGET_S = 1.0, 2.0
TIMEOUT_MS = 60_000
PHASES: list[dict] = []  # every visit's stamps, for the phase breakdown
QUIET_MS = 1000  # a page settled this long is done (its second script run came before)
QUIET_TRIES = 5

# Stamps, in ms since navigation start, kept on window.__lb: `first` when a chart is
# drawn, `settled` the last time the page became settled (script done, every chart and
# data grid drawn, content on the page).
STAMPS = """
(() => {
  window.__lb = {app: null, running: null, content: null, first: null, settled: null,
                 ready: null, now: false};
  const once = (k, ok) => {
    if (ok && window.__lb[k] === null) window.__lb[k] = performance.now();
  };
  const check = () => {
    const st = document.querySelector("[data-testid='stApp']");
    once('app', !!st);
    once('running', !!st && st.getAttribute('data-test-script-state') === 'running');
    once('content', !!document.querySelector(
      "[data-testid='stMain'] [data-testid='stElementContainer']"));
    const charts = [...document.querySelectorAll("[data-testid='stVegaLiteChart']")];
    const drawn = charts.filter(c => c.querySelector('svg.marks text, canvas'));
    if (drawn.length && window.__lb.first === null) window.__lb.first = performance.now();
    const app = document.querySelector("[data-testid='stApp']");
    // (a grid below the first screen draws when scrolled to: not waited for)
    const grids = [...document.querySelectorAll("[data-testid='stDataFrame']")].filter(g => {
      const r = g.getBoundingClientRect();
      return r.height > 0 && r.top < window.innerHeight;
    });
    // An element whose script chunk is still on its way (a chart, a grid) stands as a
    // skeleton: the page is not settled while one does.
    const ready = !!app && app.getAttribute('data-test-script-state') === 'notRunning' &&
      !!document.querySelector("[data-testid='stMain'] [data-testid='stElementContainer']") &&
      !document.querySelector("[data-testid='stMain'] [data-testid='stSkeleton']") &&
      drawn.length === charts.length && grids.every(g => g.querySelector('canvas'));
    if (ready && !window.__lb.now) window.__lb.settled = performance.now();
    once('ready', ready);  // the first settled moment (a page on a timer reruns after)
    window.__lb.now = ready;
  };
  new MutationObserver(check).observe(document, {subtree: true, childList: true,
                                                 attributes: true});
})();
"""


def sample_pages(db_url: str) -> list[tuple[str, str]]:
    """(name, path) of every page and view the targets hold, over the shipped samples."""
    from db import queries
    from db.engine import make_engine
    from pages.logic.links import RUN_VIEWS
    from tests.conftest import H100_MLP_UUID, H200_MLP_UUID

    engine = make_engine(db_url)
    try:
        runs = queries.runs_frame(engine)
    finally:
        engine.dispose()

    def one(query: str) -> int:
        return int(runs.query(query)["id"].iloc[0])

    h200, h100 = one(f"uuid == '{H200_MLP_UUID}'"), one(f"uuid == '{H100_MLP_UUID}'")
    gpus = (h100, h200, one("uuid == 'published-l40s-day25'"),
            one("uuid == 'published-v100-cuda-graphs-blog'"))
    memory = one("kind == 'graph-memory'")
    return ([("Runs board", "")] +
            [(f"Run {h200} {v}", f"run?run={h200}&view={quote(v)}") for v in RUN_VIEWS] +
            [("Compare 4 GPUs", "compare?" + "&".join(f"run={i}" for i in gpus)),
             ("Trends", "trend"), ("Serve", "serve"), ("Launch", "launch"),
             ("Import / export", "import"), (f"Run {memory} graph memory",
                                              f"run?run={memory}")])


def _open(context, url: str) -> tuple[float | None, float, int]:
    page = context.new_page()
    try:
        page.goto(url, wait_until="commit")
        page.wait_for_function("() => window.__lb && window.__lb.ready !== null",
                               timeout=TIMEOUT_MS)
        # Settled and quiet: a second script run (widgets synced to the URL) came first. A
        # page on a timer (Launch's job list reruns every second) is never quiet: its first
        # settled moment counts.
        for _ in range(QUIET_TRIES):
            before = page.evaluate("() => window.__lb.settled")
            page.wait_for_timeout(QUIET_MS)
            stamps = page.evaluate("() => window.__lb")
            if stamps["settled"] == before:
                break
        else:
            stamps["settled"] = stamps["ready"]
        charts = page.locator("[data-testid='stVegaLiteChart']").count()
        first = None if stamps["first"] is None else stamps["first"] / 1000
        PHASES.append({k: (v or 0) / 1000 for k, v in stamps.items() if k != "now"})
        return first, stamps["settled"] / 1000, charts
    finally:
        page.close()


def visit(browser, url: str, returning: bool = False) -> tuple[float | None, float, int]:
    """(first chart s or None, settled s, charts) of one visit in a fresh browser context:
    a new visitor, or (`returning`) one whose browser cache already holds streamlit's
    scripts (immutable files), timed on a second page of the same context."""
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


def _s(v: float | None) -> str:
    return "  -  " if v is None else f"{v:5.2f}"


def time_page(browser, base: str, name: str, path: str, repeat: int) -> tuple:
    """One page: a cold visit, then `repeat` warm ones; (name, cold, first, settled, n)."""
    url = f"{base}/{path.lstrip('/')}"
    cold = visit(browser, url)
    PHASES.clear()
    warm = [visit(browser, url) for _ in range(repeat)]
    ph = {k: statistics.median(p[k] for p in PHASES) for k in PHASES[0]}
    firsts = [w[0] for w in warm if w[0] is not None]
    first = statistics.median(firsts) if firsts else None
    settled = statistics.median(w[1] for w in warm)
    print(f"  {name:28s} cold {_s(cold[1])}  first chart {_s(first)}  settled "
          f"{_s(settled)}  ({warm[-1][2]} charts; warm runs {[round(w[1], 2) for w in warm]})",
          flush=True)
    # Where the browser's time goes: the page and streamlit's scripts loaded (stApp drawn),
    # the session connected and the script started, its first element shown, then drawn.
    print(f"  {'':28s} phases: app shell {ph['app']:.2f}, script starts {ph['running']:.2f}, "
          f"first element {ph['content']:.2f}, first chart {ph['first']:.2f}, first settled "
          f"{ph['ready']:.2f}, last settled {ph['settled']:.2f}", flush=True)
    return name, cold[1], first, settled, warm[-1][2]


def bench(base: str, pages: list[tuple[str, str]], repeat: int) -> list[tuple]:
    from playwright.sync_api import sync_playwright

    print(f"{base} in chromium 1280x800, median of {repeat} warm visits, new visitors, "
          f"seconds from navigation ({load()})")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            rows = [time_page(browser, base, name, path, repeat) for name, path in pages]
            run = next((p for n, p in pages if p.startswith("run?")), None)
            if run:
                back = [visit(browser, f"{base}/{run}", returning=True)
                        for _ in range(max(1, repeat))]
                print(f"  returning visitor to {run} (browser cache warm, new session): "
                      f"first chart {_s(statistics.median(b[0] or 0 for b in back))}, "
                      f"settled {_s(statistics.median(b[1] for b in back))}")
        finally:
            browser.close()
    return rows


def verdict(rows: list[tuple]) -> None:
    run_first = [r[2] for r in rows if r[0].lower().startswith("run") and r[2] is not None]
    first = run_first[0] if run_first else None
    slow = [f"{r[0]} {r[3]:.2f} s" for r in rows if r[3] > SETTLED_TARGET_S]
    met = "not timed" if first is None else "met" if first <= FIRST_TARGET_S else "MISSED"
    print(f"Run page first chart {_s(first)} s (target {FIRST_TARGET_S} s: {met}); "
          f"every page settled within {SETTLED_TARGET_S} s: "
          f"{'met' if not slow else 'MISSED by ' + ', '.join(slow)}; {load()}")


# Where a function's own time is counted, by the file it lives in (first match wins).
CATEGORIES = (("queries (db/)", f"{ROOT}/db/"), ("page logic (pages/logic)", "/pages/logic/"),
              ("chart specs (pages/charts)", "/pages/charts/"),
              ("page scripts and widgets", f"{ROOT}/pages/"), ("contract/", f"{ROOT}/contract/"),
              ("altair + jsonschema (spec, validation)", ("/altair/", "/jsonschema",
                                                          "/referencing/", "/narwhals/")),
              ("sqlalchemy + sqlite", ("/sqlalchemy/", "sqlite3")),
              ("pandas + numpy", ("/pandas/", "/numpy/")), ("pyarrow", "/pyarrow/"),
              ("streamlit (marshalling, widgets)", ("/streamlit/", "/google/protobuf")))


def _category(filename: str) -> str:
    for name, marks in CATEGORIES:
        if any(m in filename for m in ((marks,) if isinstance(marks, str) else marks)):
            return name
    return "other (python, imports, builtins)"


def _apptest(path: str):
    """An AppTest on `path`'s page with its query string, the app run once before."""
    from urllib.parse import parse_qs, urlsplit

    from streamlit.testing.v1 import AppTest

    from pages.logic.links import PAGES

    parts = urlsplit(path)
    page = next(p.file for p in PAGES.values() if p.url_path == parts.path.strip("/"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page(page)
    for key, values in parse_qs(parts.query).items():
        at.query_params[key] = values if len(values) > 1 else values[0]
    return at


def profile_page(path: str, repeat: int) -> tuple[float, pstats.Stats]:
    """(median s of a warm script run, a cProfile of one more) of `path` in AppTest. The
    script runs in streamlit's script thread: the profiler is switched on inside it."""
    from streamlit.runtime.scriptrunner import script_runner

    prof, on = cProfile.Profile(), [False]
    original = script_runner.ScriptRunner._run_script

    def run_script(self, rerun_data):
        if not on[0]:
            return original(self, rerun_data)
        prof.enable()
        try:
            return original(self, rerun_data)
        finally:
            prof.disable()

    script_runner.ScriptRunner._run_script = run_script
    try:
        at = _apptest(path)
        at.run()  # warm: this page's caches filled
        walls = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            at.run()
            walls.append(time.perf_counter() - t0)
        on[0] = True
        at.run()
    finally:
        script_runner.ScriptRunner._run_script = original
    return statistics.median(walls), pstats.Stats(prof)


def breakdown(name: str, path: str, repeat: int, top: int = 8) -> None:
    wall, stats = profile_page(path, repeat)
    by: dict[str, float] = {}
    total = 0.0
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():
        by[_category(filename)] = by.get(_category(filename), 0.0) + tottime
        total += tottime
    print(f"\n{name} ({path or '/'}): script run {wall:.2f} s warm (median of {repeat}); "
          f"profiled run {total:.2f} s of own time:")
    for cat, t in sorted(by.items(), key=lambda kv: -kv[1]):
        if t >= 0.005:
            print(f"    {t:6.3f} s {t / total:4.0%}  {cat}")
    own = sorted(((tt, f"{Path(f).name}:{line} {fn}")
                  for (f, line, fn), (_, _, tt, _, _) in stats.stats.items()), reverse=True)
    print("  most own time: " + "; ".join(f"{w} {t:.3f} s" for t, w in own[:6]))
    mine = [(ct, f"{Path(f).relative_to(ROOT)}:{line} {fn}")
            for (f, line, fn), (_, _, _, ct, _) in stats.stats.items()
            if f.startswith(str(ROOT)) and "bench/" not in f and fn != "<module>"]
    print("  the project's functions, by time spent in them and what they call:")
    for ct, where in sorted(mine, reverse=True)[:top]:
        print(f"    {ct:6.3f} s  {where}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--path", help="one page path, e.g. 'run?run=2' (default: every page)")
    ap.add_argument("--url", help="base URL of a running dashboard (needs --path)")
    ap.add_argument("--no-profile", action="store_true", help="skip the cProfile breakdown")
    args = ap.parse_args()
    if args.url:
        if not args.path:
            ap.error("--url needs --path (the run ids are in that dashboard's database)")
        verdict(bench(args.url.rstrip("/"), [(args.path, args.path)], args.repeat))
        return
    from db.engine import make_engine
    from db.samples import seed_if_empty

    with tempfile.TemporaryDirectory(prefix="lb-page-speed-") as tmp:
        db_url = f"sqlite:///{Path(tmp) / 'lb.db'}"
        engine = make_engine(db_url)
        seed_if_empty(engine)
        engine.dispose()
        pages = [(args.path, args.path)] if args.path else sample_pages(db_url)
        t0 = time.perf_counter()
        with streamlit_server(db_url, log_dir=Path(tmp)) as server:
            verdict(bench(server.base_url, pages, args.repeat))
        if not args.no_profile:
            os.environ["LAUNCHBENCH_DB"] = db_url
            print(f"\nWhere the time goes: one warm script run per page, in-process ({load()})")
            for name, path in pages:
                breakdown(name, path, args.repeat)
        print(f"({time.perf_counter() - t0:.0f} s in all)")


if __name__ == "__main__":
    main()
