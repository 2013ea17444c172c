"""A run as a file: the self-contained HTML reports (a sweep's, a graph-memory run's) and
charts as PNG or SVG. Their words and tables are pages/logic/run_text.py's and
points_table.py's.

The HTML report must open offline and survive being mailed or attached to a ticket, so its
charts are inlined as SVG rendered here by vl-convert (no vega JavaScript, no network).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

import jinja2
import pandas as pd
import vl_convert as vlc

from contract import graph_memory as gm
from contract import noise
from contract.comparability import value_text
from contract.measurement import Measurement
from contract.run_summary import RunHeader, RunSummary
from contract.trace import PointTrace
from pages.charts import capture_charts, run_charts, split_charts, timeline_chart
from pages.logic import capture_advice as ca
from pages.logic import energy, links, step_split, timeline
from pages.logic.board import known_params
from pages.logic.metrics import MISSING
from pages.logic.plain import MAX_SHOWN, cut
from pages.logic.points_table import MEMORY_NOTE, points_table
from pages.logic.run_text import (
    PUBLISHED_NOTE,
    environment_rows,
    headline,
    run_title,
    summary_of,
)


def chart_png(chart, scale: float = 2.0) -> bytes:
    return vlc.vegalite_to_png(chart.to_dict(), scale=scale)


def chart_svg(chart) -> str:
    return vlc.vegalite_to_svg(chart.to_dict())


def _rows(df: pd.DataFrame, statuses: Sequence[object] | None = None) -> dict:
    """A table for the template: column names, and each row's cells as text with whether
    the point failed (its Status is not ok, from `statuses` where the frame has none of
    its own; the graph-memory tables have no Status)."""
    if statuses is None:
        statuses = df["Status"] if "Status" in df else ["ok"] * len(df)
    cells = df.itertuples(index=False, name=None)
    return {"columns": [str(c) for c in df.columns],
            "rows": [(not str(status).startswith("ok"), [str(v) for v in row])
                     for status, row in zip(statuses, cells, strict=True)]}


# The points tables wrap at word boundaries only (issue 46: 36 columns squeezed into 1200
# px with overflow-wrap:anywhere read "Spe edu p over eag er"); each holds a dozen
# columns at most (POINT_TABLES), and one that is still too wide scrolls sideways in its
# .wide box instead of breaking words.
CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;
color:#222;max-width:1200px}h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}
h3{font-size:1em;margin:1.5em 0 .4em}
.published{background:#fff4ce;border:1px solid #e0c050;padding:.6em 1em;border-radius:4px}
table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ddd;padding:3px 6px;
text-align:left}tr.bad td{background:#fdecea}.answer{font-size:1.2em;font-weight:600}
.wide{max-width:100%;overflow-x:auto}table.points{font-size:.8em}
table.points th,table.points td{padding:2px 5px;overflow-wrap:normal;word-break:normal;
hyphens:manual;vertical-align:top}table.points th{background:#f6f6f6;min-width:4em}
table.points td.long{min-width:22em}table.points td:first-child{min-width:7.5em}.note{color:#555}
.chart{margin:1em 0}code{background:#f4f4f4;padding:2px 4px;word-break:break-all}
.chart svg{max-width:100%;height:auto}footer{margin-top:3em;color:#777;font-size:.8em}"""

# The points table (pages/logic/points_table.py, 36 columns on a GPU run) as a few tables
# of one subject each, every one led by the point's mode and batch size. A column no rule
# names (one added later) goes to the last table: none is dropped.
KEY_COLUMNS = ("Mode", "Batch size")
POINT_TABLES: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("Speedup, step time, memory cost", lambda c: c.startswith((
        "Speedup over eager", "Verdict", "Step time (ms)", "Step time 95%",
        "Memory cost", "Status", "Correct"))),
    ("Noise and timing detail", lambda c: c.startswith((
        "Noise", "Noisy", "Process medians", "Note", "Step time p", "Latency", "Setup"))),
    ("Host launches and the GPU", lambda c: any(w in c for w in (
        "launch", "GPU", "Split", "CUDA graph", "error"))),
    ("Memory pools", lambda c: "(MiB)" in c),
    ("Energy", lambda c: "Energy" in c or "power" in c),
)
LONG_COLUMNS = ("Note", "Noisy judged on")  # sentences: given room, not a column of words


def _point_tables(df: pd.DataFrame) -> list[dict]:
    """The points as POINT_TABLES' tables (each _rows' shape plus its title), the empty
    ones left out."""
    left = [c for c in df.columns if c not in KEY_COLUMNS]
    keys = [c for c in KEY_COLUMNS if c in df.columns]
    out = []
    for i, (title, wanted) in enumerate(POINT_TABLES):
        last = i == len(POINT_TABLES) - 1
        mine = [c for c in left if wanted(str(c)) or last]
        left = [c for c in left if c not in mine]
        if mine:  # a failed point is marked in every table, Status column or not
            rows = _rows(df[keys + mine], df["Status"] if "Status" in df else None)
            rows["long"] = [c in LONG_COLUMNS for c in rows["columns"]]
            out.append({"title": title, **rows})
    return out


_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True, trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)


TIMELINE_NOTE = ("One profiled step per mode, CPU launch calls above the GPU's kernels, "
                 "on one time axis from the step's first launch to its last kernel's end; "
                 "shaded yellow: the GPU idle, waiting for the host; grey: the GPU still "
                 "busy with the previous step. " + timeline.STEP_TIMES_NOTE)


def _timeline(traces: list[PointTrace], points: Sequence[Measurement]
              ) -> dict[str, object] | None:
    items = timeline.ordered(traces)
    by_run = {x.run_id: points for x in items}
    chart = timeline_chart.timeline_chart([
        (x.mode, x.trace, timeline.timed_ms(by_run, x.run_id, x.mode, x.batch_size))
        for x in items])
    if chart is None:
        return None
    return {"batch": traces[0].batch_size, "note": TIMELINE_NOTE,
            "svg": chart_svg(chart)}


def _run_rows(header: RunHeader, after_params: list | None = None,
              after_status: list | None = None) -> list[tuple]:
    """The report's "run" table: what a run is, in the order both reports show it."""
    return [("workload", header.workload),
            # cut as on the pages, a None one left out as on the board ("heads=None" is a
            # value taken from the model's config); every value in full: the run's bundle
            ("parameters", cut(value_text(known_params(header.workload_params)))),
            *(after_params or []), ("status", header.status), *(after_status or []),
            ("created", header.created_at),
            ("finished", header.finished_at or MISSING), ("uuid", header.uuid)]


def _reproduce(header: RunHeader, batch_sizes, modes) -> links.Reproduce:
    """The command to offer, as the Run page offers it: one too long to read (a
    parameter of 100,000 characters) is said, not printed; the run's bundle holds it."""
    offer = links.reproduce(header, batch_sizes, modes)
    if offer.command and len(offer.command) > MAX_SHOWN:
        return links.Reproduce(None, f"The command is {len(offer.command):,} characters "
                                     "long (a parameter holds most of it): see the run's "
                                     "bundle for its parameters.")
    return offer


def _env_rows(header: RunHeader) -> list[tuple]:
    """The environment as the Run page's Environment view words it (GPU memory in GiB)."""
    return [(r["field"], r["value"]) for r in environment_rows(header)]


# What the energy and host-split charts are made of, said under them as on the Run page.
CHART_NOTES = {"energy": energy.CAPTION, "launch-scatter": step_split.VIEW_CAPTION}


def html_report(header: RunHeader, points: Sequence[Measurement],
                share_url: str | None = None,
                traces: list[PointTrace] | None = None, summary: RunSummary | None = None) -> str:
    """One run as a single HTML file (templates/report.html): the summary's headline,
    charts (inline SVG), the step timeline of its headline batch size (`traces`:
    queries.point_traces there, for timeline.headline_batch), points, environment, the
    reproducing command. `summary`: the run's (queries.run_summary); None builds it from
    `header` and `points` with the same builder. No script, no external resource: it
    opens offline."""
    summary = summary or summary_of(header, points)
    charts = {**run_charts.run_charts(points), **split_charts.host_split_charts(points)}
    noise_text = noise.run_noise(points)[1] if points else None
    # What the run measured, for its command.
    measured = ([m.batch_size for m in points], [m.mode for m in points])
    run_rows = _run_rows(header, [("dtype", header.dtype or MISSING)],
                         [("source", header.source)])
    env_rows = _env_rows(header)
    return _TEMPLATES.get_template("report.html").render(
        title=run_title(summary.header), css=CSS, label=summary.header.label,
        published=summary.header.source == "published", published_note=PUBLISHED_NOTE,
        summary=summary.headline(), headline=headline(points), noise=noise_text,
        charts=[(name, chart_svg(chart)) for name, chart in charts.items()],
        chart_notes=[note for name, note in CHART_NOTES.items() if name in charts],
        point_tables=_point_tables(points_table(points)), memory_note=MEMORY_NOTE,
        run_rows=run_rows, env_rows=env_rows,
        reproduce=_reproduce(header, *measured),
        share_url=share_url, timeline=_timeline(traces or [], points),
        stamp=datetime.now(timezone.utc).isoformat(timespec="seconds"))


GRAPH_MEMORY_NOTE = ("One CUDA graph captured per size, largest first (as vLLM and SGLang "
                     "do), the pools read after each capture. Shared: one pool for every "
                     "graph; private: a pool per graph, each paying the fixed part "
                     "(workspaces) again.")


def graph_memory_report(header: RunHeader, doc: gm.GraphMemoryDoc, share_url: str | None = None,
                        summary: RunSummary | None = None) -> str:
    """A graph-memory run as one HTML file (templates/graph_memory_report.html): MiB
    against the number of captured sizes and MiB added per size (inline SVG), the
    attribution and every capture. `summary`: the run's (queries.run_summary), whose
    header titles it; None builds it from `header`. No script, no external resource: it
    opens offline."""
    summary = summary or summary_of(header, [])
    total, added = capture_charts.curve_charts(doc)
    run_rows = [("kind", "graph-memory"), *_run_rows(header)]
    env_rows = _env_rows(header)
    return _TEMPLATES.get_template("graph_memory_report.html").render(
        title=run_title(summary.header) + " · graph memory", css=CSS,
        label=summary.header.label,
        note=GRAPH_MEMORY_NOTE,
        charts=[("graph-memory-total", chart_svg(total)),
                ("graph-memory-added", chart_svg(added))],
        attribution=_rows(ca.attribution_frame(doc)), captures=_rows(ca.captures_frame(doc)),
        run_rows=run_rows, env_rows=env_rows, command=header.command,
        run_id=header.id, share_url=share_url,
        stamp=datetime.now(timezone.utc).isoformat(timespec="seconds"))
