"""The page audit (issue 46 item 1): every page, every Run view of every shipped sample,
Compare of the shipped GPUs, Trends per series, Serve, Launch, Import/export and the HTML
reports, read from what chromium draws at 1280x800, and judged by one function per rule.

A page is read once (tests/e2e/audit_page.js: its visible lines, what clips, the words
broken across lines, the data grids' columns and cells, every plot's area, axes and
marks); the checks below are plain Python over that reading, so each names what it found
as a Fault (case, check, element, text). tests/e2e/test_audit.py runs a case per page;
bench/page_audit.py runs them all and prints the faults as a table.

Nothing here imports playwright at module level: the GPU host collects tests/e2e/ without
it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

VIEWPORT = {"width": 1280, "height": 800}
MIN_PLOT_PX = 150        # a plot's least height (tests/e2e/test_chart_room.py's rule)
MIN_PLOT_WIDTH_PX = 150  # and least width: a subtitle too wide squeezed plots to 14 px
MIN_LANE_PX = 28         # a timeline lane's least height
TOLERANCE_PX = 1.5       # anti-aliasing and rounding, not a fault
MAX_SCROLLED_ROWS = 60   # a table this short is shown whole, not in a scroll box
DRAW_TIMEOUT_MS = 20_000  # a page under load draws within this, or is read as it is
COLLECT_JS = (Path(__file__).with_name("audit_page.js")).read_text()
PAGE_ROOT = "[data-testid='stMain']"
PAGE_CHARTS = "[data-testid='stVegaLiteChart'] svg.marks"
REPORT_ROOT = "body"
REPORT_CHARTS = "svg.marks, .chart svg"
# Every chart has drawn its text, every grid its canvas, and the script is done: the
# moment a reader reads the page (SETTLED in tests/e2e_support.py needs a chart; many
# pages here have none).
READY = """() => {
  const app = document.querySelector("[data-testid='stApp']");
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (!document.querySelector("[data-testid='stMain'] [data-testid='stElementContainer']"))
    return false;
  if (document.querySelector("[data-testid='stStatusWidgetRunningIcon']")) return false;
  // (one in a closed expander is drawn when opened)
  const open = el => el.getBoundingClientRect().height > 0 &&
    !el.closest('details:not([open])');
  // An element whose script chunk is still loading (a chart, a grid) is a skeleton.
  if ([...document.querySelectorAll("[data-testid='stMain'] [data-testid='stSkeleton']")]
      .some(open)) return false;
  const charts = [...document.querySelectorAll("[data-testid='stVegaLiteChart']")].filter(open);
  const grids = [...document.querySelectorAll("[data-testid='stDataFrame']")].filter(open);
  // (Vega draws a chart of many marks, the step timeline's, on a canvas: not read below)
  // A grid far below the fold may wait to be scrolled to before it draws its canvas.
  const bare = grids.find(g => !g.querySelector('canvas'));
  if (bare) bare.scrollIntoView();
  return charts.every(c => c.querySelector('svg.marks text, canvas')) && !bare;
}"""
# What changes while a page still arrives (a script that reruns itself once draws twice).
SHAPE = """() => [...document.querySelectorAll(
  "[data-testid='stMain'] [data-testid='stElementContainer']")].length + ':' +
  document.querySelectorAll('svg.marks text, canvas').length + ':' +
  (document.querySelector("[data-testid='stMain']") || document.body).innerText.length"""
OPEN_EXPANDERS = """() => { for (const d of document.querySelectorAll(
  "[data-testid='stExpander'] details:not([open]) > summary")) d.click(); }"""
# The share link sits in a closed expander (pages/widgets/parts.py share_link): opened
# to read it, as a reader would; true when there was one.
OPEN_SHARE = """() => { const s = [...document.querySelectorAll(
  "[data-testid='stExpander'] details:not([open]) > summary")].find(
  x => x.textContent.trim().startsWith('Share link')); if (s) s.click(); return !!s; }"""


@dataclass(frozen=True)
class Case:
    """One page or view to audit. `runs`: the runs whose measured batch sizes its batch
    axes must show; `means`: its figures are means (a published run), so no label may call
    them medians; `cpu`: a CPU series (no CUDA-only mode may be picked for it)."""
    name: str
    path: str                      # the dashboard path, or report:RUN_ID for its report
    runs: tuple[int, ...] = ()
    means: bool = False
    cpu: bool = False
    scroll_ok: bool = False        # a table that grows with the database may scroll
    view: str = ""

    @property
    def report(self) -> int | None:
        return int(self.path.split(":", 1)[1]) if self.path.startswith("report:") else None


@dataclass(frozen=True)
class Fault:
    case: str
    check: str
    element: str
    text: str

    def line(self) -> str:
        return f"{self.case} | {self.check} | {self.element} | {self.text}"


@dataclass
class Facts:
    """What the database says the pages must show: each run's measured batch sizes and
    modes (points that ended ok)."""
    batches: dict[int, set[int]] = field(default_factory=dict)
    modes: dict[int, set[str]] = field(default_factory=dict)

    def measured(self, runs: Iterable[int]) -> set[int]:
        return set().union(*(self.batches.get(r, set()) for r in runs))


# --------------------------------------------------------------------------- the cases

def _statistics(details: object) -> str:
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            return ""
    return str((details or {}).get("statistic") or "") if isinstance(details, dict) else ""


def points_facts(pts) -> Facts:
    """Each run's measured batch sizes and modes from its points (a frame of run_id, mode,
    batch_size, status, step_ms): the points that ended ok with a step time, the figure a
    batch axis draws (a published run that gives only a time per kernel, the V100 blog's,
    is drawn on no batch axis: Compare names it "not in the chart"); the modes of every
    point that ended ok."""
    ok = pts[pts["status"] == "ok"]
    timed = ok[ok["step_ms"].notna()]
    return Facts({int(r): {int(b) for b in g["batch_size"]} for r, g in timed.groupby("run_id")},
                 {int(r): set(g["mode"]) for r, g in ok.groupby("run_id")})


def facts_and_cases(engine) -> tuple[Facts, list[Case]]:
    """Every case of the audit over the database the dashboard shows."""
    from db import queries

    runs = queries.runs_frame(engine)
    pts = queries.runs_points(engine, [int(i) for i in runs["id"]])
    facts = points_facts(pts)
    means = {int(r) for r, g in pts.groupby("run_id")
             if (s := {_statistics(d) for d in g["details"]} - {""}) and all(
                 x.startswith("mean") for x in s)}
    cases = [Case("Runs board", "", scroll_ok=True)]
    cases += _run_cases(runs, means)
    cases += _other_cases(runs, means)
    return facts, cases


def cases_from_samples(folder: Path | None = None) -> list[Case]:
    """The same cases read from the shipped sample files, without importing them (test
    collection stays quick): a fresh database numbers them 1, 2, ... in file order, as
    db/samples.py imports them; the module's fixture checks the two agree."""
    import pandas as pd

    folder = folder or Path(__file__).resolve().parents[2] / "data" / "samples"
    rows, means = [], set()
    for i, path in enumerate(sorted(folder.glob("*.json")), start=1):
        b = json.loads(path.read_text())
        env, run = b.get("environment") or {}, b["run"]
        rows.append({"id": i, "kind": run.get("kind") or "sweep", "uuid": run["uuid"],
                     "workload": run["workload"], "gpu_name": env.get("gpu_name"),
                     "hostname": env.get("hostname")})
        stats = {_statistics(m.get("details")) for m in b.get("measurements", [])} - {""}
        if stats and all(x.startswith("mean") for x in stats):
            means.add(i)
    runs = pd.DataFrame(rows)
    return [Case("Runs board", "", scroll_ok=True)] + _run_cases(runs, means) + _other_cases(
        runs, means)


def _name(row) -> str:
    from pages.logic.names import device_name

    return f"Run {int(row['id'])} ({row['workload']} on {device_name(row)})"


def _run_cases(runs, means: set[int]) -> list[Case]:
    from pages.logic.links import RUN_VIEWS

    out = []
    for _, row in runs.sort_values("id").iterrows():
        rid = int(row["id"])
        if row["kind"] != "sweep":   # a graph-memory or serve run: one page, no views
            out.append(Case(_name(row), f"run?run={rid}", (rid,)))
            continue
        out += [Case(f"{_name(row)} · {v}", f"run?run={rid}&view={quote(v)}", (rid,),
                     means=rid in means, view=v) for v in RUN_VIEWS]
    return out


def _other_cases(runs, means: set[int]) -> list[Case]:
    from tests.conftest import H100_MLP_UUID, H200_MLP_UUID

    def one(query: str) -> int:
        return int(runs.query(query)["id"].iloc[0])

    gpus = (one(f"uuid == '{H100_MLP_UUID}'"), one(f"uuid == '{H200_MLP_UUID}'"),
            one("uuid == 'published-l40s-day25'"),
            one("uuid == 'published-v100-cuda-graphs-blog'"))
    out = [Case("Compare H100 mlp, H200 mlp, L40S, V100",
                "compare?" + "&".join(f"run={i}" for i in gpus), gpus)]
    sweeps = runs[runs["kind"] == "sweep"]
    for (workload, gpu), rows in sweeps.groupby(
            [sweeps["workload"], sweeps["gpu_name"].fillna("cpu")], sort=True):
        ids = tuple(int(i) for i in rows["id"])
        out.append(Case(f"Trends {workload} on {gpu}",
                        f"trend?workload={quote(workload)}&gpu={quote(gpu)}", ids,
                        means=set(ids) <= means, cpu=gpu == "cpu"))
    # The first of each kind by id: the board's frame lists runs newest first, the
    # sample files by name, and the two must pick the same run.
    serve = int(runs.loc[runs["kind"] == "serve", "id"].min())
    out.append(Case("Serve", f"serve?run={serve}"))
    out += [Case("Launch", "launch"), Case("Import / export", "import")]
    memory = int(runs.loc[runs["kind"] == "graph-memory", "id"].min())
    out += [Case(f"HTML report, run {gpus[1]} (H200 mlp)", f"report:{gpus[1]}", (gpus[1],)),
            Case(f"HTML report, run {gpus[2]} (L40S, published)", f"report:{gpus[2]}",
                 (gpus[2],), means=gpus[2] in means),
            Case(f"HTML report, run {memory} (graph memory)", f"report:{memory}")]
    return out


# --------------------------------------------------------------------------- reading

def read_page(page, base_url: str, case: Case, tmp: Path) -> dict:
    """What chromium shows for `case`: a dashboard page with its expanders opened, or a
    report downloaded from Import/export and opened from its file."""
    if case.report is not None:
        from tests.e2e_support import download_report

        path = download_report(page, f"{base_url}/import?run={case.report}",
                               tmp / f"report-{case.report}.html")
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        return page.evaluate(COLLECT_JS, {"root": REPORT_ROOT, "charts": REPORT_CHARTS})
    run = re.match(r"run\?run=(\d+)&view=", case.path)
    same_run = run and re.search(rf"[?&]run={run.group(1)}(&|$)", page.url)
    # The same run: its view's tab, as a reader would (else, or when no rerun came, a load)
    if not (case.view and same_run and _open_tab(page, case.view)):
        page.goto(f"{base_url}/{case.path}")
        settle(page)
    # Opened as a reader opens them (each expander stays open over the tabs' reruns; a
    # view's own, the Points view's tables, are new at its tab's click).
    page.evaluate(OPEN_EXPANDERS)
    settle(page)
    return page.evaluate(COLLECT_JS, {"root": PAGE_ROOT, "charts": PAGE_CHARTS})


RERUN_WATCH = """() => {
  window.__auditRerun = false;
  const app = document.querySelector("[data-testid='stApp']");
  new MutationObserver(() => { window.__auditRerun = true; }).observe(
    app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""


def _open_tab(page, view: str) -> bool:
    """Click a Run view's tab (one script rerun in the same session, not a new page
    load) and wait until the rerun has drawn it; False when no rerun came."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.evaluate(RERUN_WATCH)
    page.get_by_role("tab", name=view, exact=True).click()
    try:
        page.wait_for_function("() => window.__auditRerun", timeout=10_000)
    except PlaywrightTimeout:
        return False
    settle(page)
    return True


def settle(page, tries: int = 20) -> None:
    """Wait until the page is drawn and stays so for 600 ms (Vega lays out a chart's
    labels, and hides overlapping ones, a frame after its svg; a page whose widgets sync
    to the URL runs its script twice, the second drawing the rest of the page)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.wait_for_selector("[data-testid='stApp']")
    calm = 0
    for _ in range(tries):
        try:
            page.wait_for_function(READY, timeout=DRAW_TIMEOUT_MS)
        except PlaywrightTimeout:
            return  # a grid that never draws is named by check_table_box
        shape = page.evaluate(SHAPE)
        page.wait_for_timeout(300)
        calm = calm + 1 if page.evaluate(READY) and page.evaluate(SHAPE) == shape else 0
        if calm == 2:
            break


# --------------------------------------------------------------------------- the checks
# Each takes (case, what the page showed, what the database says) and returns its faults.

def _texts(snap: dict) -> Iterable[tuple[str, str]]:
    """(where, text) of everything a reader reads: lines, table cells, chart text."""
    for line in snap["lines"]:
        yield "text", line
    for g in snap["grids"]:
        for c in g["columns"]:
            for cell in c["cells"]:
                if cell:
                    yield f"table column '{c['title']}'", cell
    for chart in snap["charts"]:
        for t in chart["texts"]:
            yield f"chart '{_chart_name(chart)}'", t["text"]


def _chart_name(chart: dict) -> str:
    return (chart["title"] or "untitled")[:60]


def _grid_name(grid: dict) -> str:
    return f"table [{grid['columns'][0]['title'][:24] if grid['columns'] else ''}...]"


def check_cut_text(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """Text its box cuts: clipped or ellipsised page text, chart text past its svg or
    shortened with an ellipsis, a grid cell or header wider than its column."""
    out = [Fault(case.name, "cut text", c["tag"],
                 f"'{c['text'][:70]}' shows {c['shows']} of {c['needs']} px")
           for c in snap["cut"]]
    for chart in snap["charts"]:
        s = chart["svg"]
        for t in chart["texts"]:
            b = t["box"]
            if ("\u2026" in t["text"] or b["left"] < s["left"] - 1 or b["right"] > s["right"] + 1
                    or b["top"] < s["top"] - 1 or b["bottom"] > s["bottom"] + 1):
                out.append(Fault(case.name, "cut text", f"chart '{_chart_name(chart)}'",
                                 t["text"][:80]))
    for g in snap["grids"]:
        for c in g["columns"]:
            if c["need"] > c["width"] + 1 or c["head"] > c["width"] + 1:
                text, need = ((c["widest"], c["need"]) if c["need"] >= c["head"]
                              else (c["title"], c["head"]))
                out.append(Fault(case.name, "cut cell", f"{_grid_name(g)} column "
                                 f"'{c['title']}'", f"'{text[:60]}' needs {need:.0f} px, "
                                 f"the column has {c['width']:.0f}"))
    return out


def check_table_box(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """A table that hides columns past its right edge (a reader scrolls sideways to find
    them, and the one at the edge is cut), or a short table kept in a scroll box."""
    out = [Fault(case.name, "table not drawn", "table", g["error"])
           for g in snap["grids"] if g.get("error")]
    for g in snap["grids"]:
        if g.get("error"):
            continue
        past = [c["title"] for c in g["columns"] if c["right"] > g["box_width"] + 1]
        if past:
            out.append(Fault(case.name, "table wider than its box", _grid_name(g),
                             f"{len(past)} column(s) past its {g['box_width']:.0f} px: "
                             + ", ".join(f"'{t}'" for t in past[:8])))
        if (not case.scroll_ok and g["rows"] <= MAX_SCROLLED_ROWS
                and g["content_height"] > g["box_height"] + 2):
            out.append(Fault(case.name, "table in a scroll box", _grid_name(g),
                             f"{g['rows']} rows ({g['content_height']:.0f} px) in a "
                             f"{g['box_height']:.0f} px box"))
    return out


def check_broken_words(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """A word wrapped across lines (letter by letter in a narrow table header)."""
    seen, out = set(), []
    for b in snap["broken"]:
        if (b["word"], b["text"]) not in seen:
            seen.add((b["word"], b["text"]))
            out.append(Fault(case.name, "word broken across lines", b["tag"],
                             f"'{b['word']}' in '{b['text'][:60]}'"))
    return out


RAW = (
    ("None shown", re.compile(r"\bNone\b(?! of\b)")),
    ("nan shown", re.compile(r"\b(?:nan|NaN)\b")),
    ("a Python dict", re.compile(r"\{'[^']*'\s*:")),
    ("a Python list or tuple", re.compile(r"\[\d[\d.]*(?:, \d[\d.]*)+\]|\[\s*'|\(\d+, \d+\)")),
    ("a Python object", re.compile(r"\b[A-Z][A-Za-z]+\([a-z_]+=|<[\w.]+ object at 0x")),
    ("a raw byte count", re.compile(r"(?<![\w.,:/#=-])\d{9,}(?![\w.,-])")),
    ("a dash for a version", re.compile(r"\b(?:torch|CUDA|driver|triton|Python)\s*:?\s*\u2014")),
    ("an interval from 0.00x", re.compile(r"(?<![\d.])0\.00x\s*[-\u2013]")),
)


def check_raw_values(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """None, nan, a Python repr, a raw byte count or a placeholder where a figure or a
    version belongs, in any text a reader reads. Code (commands, the bundle) is exempt:
    a reader copies it."""
    code = {line.strip() for c in snap["codes"] for line in c.splitlines()}
    out, seen = [], set()
    for where, text in _texts(snap):
        if text.strip() in code:
            continue
        for name, rx in RAW:
            m = rx.search(text)
            if m and (name, where, text) not in seen:
                seen.add((name, where, text))
                out.append(Fault(case.name, name, where, _around(text, m)))
    return out


def _around(text: str, m: re.Match, room: int = 40) -> str:
    a, b = max(0, m.start() - room), min(len(text), m.end() + room)
    return ("..." if a else "") + text[a:b] + ("..." if b < len(text) else "")


def _inside(b: dict, area: dict, tol: float = TOLERANCE_PX) -> str:
    """'' when box `b` lies in `area`, else which edge it crosses and by how much."""
    over = {"left": area["left"] - b["left"], "right": b["right"] - area["right"],
            "top": area["top"] - b["top"], "bottom": b["bottom"] - area["bottom"]}
    side, px = max(over.items(), key=lambda kv: kv[1])
    return f"{px:.0f} px past the {side} edge" if px > tol else ""


def _outside(item: dict, area: dict) -> str:
    """Where a mark leaves its plot, by its box: a point drawn on the plot's edge (a batch
    at the very end of its axis, no padding) hangs over the axis or under the clip."""
    how = _inside(item["box"], area)
    return f"{how}{' (clipped)' if how and item['clipped'] else ''}"


def _cut_at_edge(item: dict, area: dict, tol: float = 0.75) -> str:
    """An error bar (a rule) that ends exactly on the plot's edge without spanning the
    plot: its interval runs past the axis and the scale cut it there."""
    if item["kind"] != "mark-rule":
        return ""
    b = item["box"]
    for lo, hi, size in (("top", "bottom", "height"), ("left", "right", "width")):
        spans = b[size] >= area[size] - 2
        if not spans and b[size] > 0 and (abs(b[lo] - area[lo]) < tol or
                                          abs(b[hi] - area[hi]) < tol):
            return f"ends on the plot's {lo if abs(b[lo] - area[lo]) < tol else hi} edge"
    return ""


def _overlap(a: dict, b: dict, inset: float = 1.0) -> bool:
    return (min(a["right"], b["right"]) - max(a["left"], b["left"]) > inset and
            min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > inset)


def _plots(snap: dict) -> Iterable[tuple[dict, dict]]:
    for chart in snap["charts"]:
        for plot in chart["plots"]:
            yield chart, plot


def _is_lane(plot: dict) -> bool:
    return any("GPU kernels" in a["labels"] for a in plot["axes"])


def check_marks_in_plot(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """Marks, labels and error bars inside their plot; no label over a mark or another
    label. (A mark a plot clips is still outside it: its box says where Vega put it.)"""
    out = []
    for chart, plot in _plots(snap):
        where = f"chart '{_chart_name(chart)}'"
        outside = [(it, how) for it in plot["items"]
                   if (how := _outside(it, plot["box"]) or _cut_at_edge(it, plot["box"]))]
        if outside:   # one line a plot: how many past which edge, and the first
            edges: dict[str, int] = {}
            for _, how in outside:
                side = re.search(r"(\w+) edge", how).group(1)
                edges[side] = edges.get(side, 0) + 1
            it, how = outside[0]
            out.append(Fault(case.name, "mark outside its plot", where,
                             f"{len(outside)} past the edge ("
                             + ", ".join(f"{n} {side}" for side, n in edges.items())
                             + f"); first: {it['kind']} '{(it['text'] or it['label'])[:50]}' "
                             + how))
        labels = [it for it in plot["items"] if it["kind"] == "mark-text"]
        dots = [it for it in plot["items"] if it["kind"] == "mark-symbol"]
        over = [(t, d) for t in labels for d in dots if _overlap(t["box"], d["box"])]
        over += [(t, u) for i, t in enumerate(labels) for u in labels[i + 1:]
                 if _overlap(t["box"], u["box"])]
        for t, d in over[:3]:
            out.append(Fault(case.name, "label over a mark", where,
                             f"'{t['text'][:40]}' over {d['kind']} "
                             f"'{(d['text'] or d['label'])[:50]}'"
                             + (f" (and {len(over) - 3} more)" if len(over) > 3 else "")))
    return out


def check_plot_size(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """A plot at least MIN_PLOT_PX tall and MIN_PLOT_WIDTH_PX wide; a timeline lane at
    least MIN_LANE_PX."""
    out = []
    for chart, plot in _plots(snap):
        h, w = plot["box"]["height"], plot["box"]["width"]
        if w < MIN_PLOT_WIDTH_PX:
            out.append(Fault(case.name, "plot too narrow", f"chart '{_chart_name(chart)}'",
                             f"plot {w:.0f} px wide (< {MIN_PLOT_WIDTH_PX})"))
        if _is_lane(plot):
            lanes = max((len(a["labels"]) for a in plot["axes"] if "GPU kernels" in a["labels"]),
                        default=1)
            if h / lanes < MIN_LANE_PX:
                out.append(Fault(case.name, "plot too small", f"chart '{_chart_name(chart)}'",
                                 f"{lanes} lanes in {h:.0f} px ({h / lanes:.0f} px a lane, "
                                 f"< {MIN_LANE_PX})"))
        elif h < MIN_PLOT_PX:
            out.append(Fault(case.name, "plot too small", f"chart '{_chart_name(chart)}'",
                             f"plot {h:.0f} px tall (< {MIN_PLOT_PX})"))
    return out


def _number(label: str) -> int | None:
    s = label.replace(",", "").replace("\u202f", "").strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kK]?)", s)
    if not m:
        return None
    return int(float(m.group(1)) * (1000 if m.group(2) else 1))


def check_batch_axis(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """A batch-size axis labels exactly the sizes the runs measured: no tick at a size
    never measured, no measured size without its label."""
    measured = facts.measured(case.runs)
    if not measured:
        return []
    out = []
    for chart, plot in _plots(snap):
        for axis in plot["axes"]:
            if not re.search(r"\bbatch\b", axis["title"], re.I):
                continue
            ticks = {n for n in map(_number, axis["labels"]) if n is not None}
            if not ticks:
                continue
            where = f"chart '{_chart_name(chart)}' axis '{axis['title']}'"
            if extra := sorted(ticks - measured):
                out.append(Fault(case.name, "batch tick not measured", where,
                                 f"ticks at {extra}; measured {sorted(measured)}"))
            if missing := sorted(measured - ticks):
                out.append(Fault(case.name, "measured batch unlabelled", where,
                                 f"no tick at {missing}; ticks {sorted(ticks)}"))
    return out


def check_percent_axis_words(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """A chart whose axis reads in % says its figures in %, not as a fraction (a
    subtitle's '1.0' beside a 0-100% axis)."""
    out = []
    for chart in snap["charts"]:
        pct = any(a["labels"] and all(x.endswith("%") for x in a["labels"])
                  for p in chart["plots"] for a in p["axes"])
        words = " ".join([chart["title"], chart["subtitle"]] + [
            a["title"] for p in chart["plots"] for a in p["axes"]])
        m = re.search(r"(?<![\d.])[01]\.\d+(?![\d%x])", words)
        if pct and m:
            out.append(Fault(case.name, "a fraction beside a % axis",
                             f"chart '{_chart_name(chart)}'", _around(words, m)))
    return out


MEDIAN = re.compile(r"(?<!not a )\bmedians?\b", re.I)


def check_statistic_words(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """Labels name the statistic the figures use: a run published as means is never
    called medians (its own note 'not a median' aside)."""
    if not case.means:
        return []
    out = []
    for where, text in _texts(snap):
        if m := MEDIAN.search(text):
            out.append(Fault(case.name, "names a statistic not used", where, _around(text, m)))
    return out[:6]


def check_modelled_as_measured(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """A row of a table whose figures are the model's is not labelled measured."""
    out = []
    for g in snap["grids"]:
        model = [c for c in g["columns"] if "(model" in c["title"]]
        if not model or not g["columns"]:
            continue
        for r, label in enumerate(g["columns"][0]["cells"]):
            filled = any(c["cells"][r] not in ("", "\u2014") for c in model)
            if re.match(r"measured\b", label, re.I) and filled:
                out.append(Fault(case.name, "modelled figure called measured", _grid_name(g),
                                 f"row '{label}' holds {model[0]['title']} "
                                 f"{model[0]['cells'][r]}"))
    return out


def check_figures_drawn(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """A run with points that ended ok draws them: its Speed view says no 'No chart'."""
    if case.view != "Speed" or not facts.measured(case.runs):
        return []
    return [Fault(case.name, "figures not drawn", "text", line[:100])
            for line in snap["lines"] if line.startswith("No chart")]


def check_offline_report(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """A report is a file mailed away: it sends no reader to the server that wrote it."""
    if case.report is None:
        return []
    local = re.compile(r"https?://(?:127\.0\.0\.1|localhost|0\.0\.0\.0)[:/]")
    return ([Fault(case.name, "report links to a local server", "text", line[:100])
             for line in snap["lines"] if local.search(line)] +
            [Fault(case.name, "report links to a local server", "link", href[:100])
             for href in snap["links"] if local.match(href)])


def _batches_in(span: str) -> Callable[[int], bool]:
    """Whether a batch lies in 'batches 4-16' (a run of measured sizes) or 'batches 1, 64'."""
    m = re.search(r"(\d+)-(\d+)", span)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        return lambda b: lo <= b <= hi
    listed = {int(x) for x in re.findall(r"\d+", span.replace(",", " "))}
    return lambda b: b in listed


def check_findings_agree(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """A finding does not call one batch size both the best and within noise of it.
    (The findings sit above every Run view: judged once, on its first.)"""
    if case.view not in ("", "Speed"):
        return []
    out = []
    for line in snap["lines"]:
        m = re.search(r"at batch (\d+)\b.*?; (batch(?:es)? [\d, \-]+?) within noise", line)
        if m and _batches_in(m.group(2))(int(m.group(1))):
            out.append(Fault(case.name, "best and within noise", "finding", line[:110]))
    return out


def check_series_modes(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """Trends picks, by default, only modes its series measured (a CPU series has no
    CUDA graphs)."""
    if not case.path.startswith("trend"):
        return []
    measured = set().union(*(facts.modes.get(r, set()) for r in case.runs))
    out = []
    for w in snap["widgets"]:
        if w.startswith("Modes"):
            picked = set(re.findall(r"[a-z][a-z-]+[a-z]", w[len("Modes"):]))
            if never := sorted(picked - measured - {"off", "on"}):
                out.append(Fault(case.name, "picks a mode never measured", "Modes",
                                 f"{never} picked; the series measured {sorted(measured)}"))
    return out


# A warning that an API the pages call is going away (streamlit's "Please replace `st.x`
# with `st.y`. ... will be removed after DATE", a Python DeprecationWarning or
# FutureWarning): the page works today and breaks on an upgrade.
DEPRECATION = re.compile(r"deprecat|FutureWarning|will be removed (?:after|in)\b", re.I)


def log_faults(log: str, case: str = "Server log") -> list[Fault]:
    """The deprecation warnings the dashboard's server logged while the pages were read,
    one fault per distinct line."""
    lines = dict.fromkeys(line.strip() for line in log.splitlines() if DEPRECATION.search(line))
    return [Fault(case, "deprecation warning", "server log", line[:160]) for line in lines]


CHECKS: tuple[Callable[[Case, dict, Facts], list[Fault]], ...] = (
    check_cut_text, check_table_box, check_broken_words, check_raw_values,
    check_marks_in_plot, check_plot_size, check_batch_axis, check_percent_axis_words,
    check_statistic_words, check_modelled_as_measured, check_figures_drawn,
    check_offline_report, check_findings_agree, check_series_modes)


def audit(case: Case, snap: dict, facts: Facts) -> list[Fault]:
    """Every check's faults on one page's reading."""
    return [f for check in CHECKS for f in check(case, snap, facts)]


# The faults still open (issue 46): recorded by `bench/page_audit.py --write-known`, one
# "page \t check \t element" a line, tolerated by the test; any other fault fails it, so
# a page cannot bring back a fixed fault or add a new one. Fixing one: rerun --write-known.
KNOWN_FILE = Path(__file__).with_name("audit_known.txt")


def fault_key(f: Fault) -> str:
    return f"{f.case}\t{f.check}\t{f.element}"


def known_faults() -> set[str]:
    if not KNOWN_FILE.exists():
        return set()
    return {line for line in KNOWN_FILE.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")}


def write_known(faults: list[Fault]) -> None:
    head = ("# The page audit's faults still open (issue 46), tolerated by tests/e2e/"
            "test_audit.py;\n# remade by `python bench/page_audit.py --write-known`.\n")
    KNOWN_FILE.write_text(head + "".join(f"{k}\n" for k in sorted(set(map(fault_key, faults)))),
                          encoding="utf-8")


def new_faults(faults: list[Fault]) -> list[Fault]:
    """The faults not recorded as known open ones."""
    known = known_faults()
    return [f for f in faults if fault_key(f) not in known]


def fault_table(faults: list[Fault]) -> str:
    """The faults as an aligned text table, one a line."""
    if not faults:
        return "no faults"
    rows = [("page", "check", "element", "text")] + [
        (f.case, f.check, f.element[:70], f.text) for f in faults]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(" | ".join(r[i].ljust(widths[i]) for i in range(3)) + " | " + r[3]
                     for r in rows)


# --------------------------------------------------------------------------- share links

STATE_JS = """() => {
  const root = document.querySelector("[data-testid='stMain']");
  const widgets = [...root.querySelectorAll(
      "[data-testid='stSelectbox'], [data-testid='stMultiSelect'], " +
      "[data-testid='stCheckbox'], [data-testid='stToggle'], [data-testid='stRadio'], " +
      "[data-testid='stSlider'], [data-testid='stNumberInput']")].map(w => {
    const box = w.querySelector('input[type=checkbox]');
    return (w.innerText || '').replace(/\\s+/g, ' ').trim() +
           (box ? (box.checked ? ' [on]' : ' [off]') : '');
  });
  const tabs = [...root.querySelectorAll("[role='tab'][aria-selected='true']")].map(
    t => t.textContent.trim());
  const chart = root.querySelector("[data-testid='stVegaLiteChart'] svg.marks");
  const marks = chart ? [...chart.querySelectorAll('.role-mark > *')].map(
    m => m.getAttribute('aria-label') || '').filter(Boolean) : [];
  const links = [...root.querySelectorAll("[data-testid='stCode']")].map(
    c => c.textContent.trim()).filter(t => /^https?:\\/\\//.test(t));
  return {widgets, tabs, marks, link: links.length ? links[links.length - 1] : null};
}"""


def share_cases(cases: list[Case]) -> list[Case]:
    """Views opened with parameters, whose share link must reopen them as they were."""
    compare = next(c for c in cases if c.path.startswith("compare"))
    h200 = compare.runs[1]
    picked = [Case("Runs board filtered", "?gpu=NVIDIA+H200&workload=mlp"),
              Case("Run timeline at a batch, fitted",
                   f"run?run={h200}&view=Timeline&batch=64&fit=1", (h200,)),
              Case("Run environment", f"run?run={h200}&view=Environment", (h200,)),
              Case("Compare two runs", f"compare?run={compare.runs[0]}&run={h200}"),
              Case("Trends H200 mlp at two sizes, one mode",
                   "trend?workload=mlp&gpu=NVIDIA+H200&batch=1&batch=64&mode=cuda-graph")]
    return picked


def share_faults(browser, base_url: str, case: Case) -> list[Fault]:
    """Open `case`, read its share link, open that link as a new visitor: the widgets, the
    open view and the first chart's marks (their data, as Vega labels them) must be the
    same."""
    first = _visit(browser, f"{base_url}/{case.path}")
    # The link the page shows (in a code box, to copy), else its address bar: the Run
    # page's views say the address bar is their share link.
    return state_faults(case, first, _visit(browser, first["link"] or first["url"]))


def state_faults(case: Case, first: dict, again: dict) -> list[Fault]:
    """What a reopened share link (`again`) lost or changed of the state it was read from."""
    out = []
    for part in ("widgets", "tabs", "marks"):
        if first[part] != again[part]:
            lost = [x for x in first[part] if x not in again[part]][:3]
            new = [x for x in again[part] if x not in first[part]][:3]
            out.append(Fault(case.name, "share link reopens another state", part,
                             f"{(first['link'] or first['url'])[:200]}: lost {lost}, "
                             f"got {new}"))
    return out


def _visit(browser, url: str) -> dict:
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(url)
        settle(page)
        if page.evaluate(OPEN_SHARE):
            page.locator("[data-testid='stCode']").last.wait_for()
        # The state as it stays: on a loaded 2-core host a page's second script run (its
        # widgets syncing to the URL) could come after settle's quiet moment, and the
        # state read then lacked what that run draws (CI-like runs, Compare's radio).
        state = page.evaluate(STATE_JS)
        for _ in range(5):
            page.wait_for_timeout(1500)
            settle(page)
            again = page.evaluate(STATE_JS)
            if again == state:
                break
            state = again
        return {**state, "url": page.url}
    finally:
        context.close()
