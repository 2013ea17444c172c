"""What a run says, in words and in files: the headline sentences, the points table, and the
exports (CSV, PNG charts, a self-contained HTML report).

The HTML report must open offline and survive being mailed or attached to a ticket, so its
charts are inlined as SVG rendered here by vl-convert (no vega JavaScript, no network).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import jinja2
import pandas as pd
import vl_convert as vlc

from pages.charts import run_charts
from pages.logic import analysis, cost, energy, links, timeline
from pages.logic.metrics import (
    MISSING,
    NO_INTERVAL,
    format_interval,
    format_value,
    metric,
    title,
)
from pages.logic.names import device_name, known
from runner.format import verdict as vd
from runner.format.bundle import ENVIRONMENT_FIELDS, MEASUREMENT_FIELDS
from runner.format.numbers import is_missing
from runner.format.vocab import ALTERNATIVE_MODES

PUBLISHED_NOTE = ("Published figures, transcribed from the cited article: not measured by "
                  "launchbench; figures the article does not give are empty.")


def run_title(header: dict, shown=str) -> str:
    """`shown` turns each stored text into what the target shows (pages.logic.plain's
    plain() for a Markdown element; the HTML report escapes by itself)."""
    gpu = shown(device_name(header))
    torch = shown(known(header.get("torch_version")) or MISSING)
    mark = " [published]" if header.get("source") == "published" else ""
    return f"Run {header['id']}: {shown(header['workload'])} on {gpu}, torch {torch}{mark}"


def duration_text(seconds: float) -> str:
    """A setup time as read at a glance: ms below a second ('3.2 ms', '850 ms'), else
    seconds ('12.4 s'): '0.00 s' said nothing about a 3 ms capture."""
    if seconds < 0.01:
        return f"{seconds * 1e3:.1f} ms"
    if seconds < 1:
        return f"{seconds * 1e3:.0f} ms"
    return f"{seconds:,.1f} s"


def _best_line(r: pd.Series, measured: pd.DataFrame) -> str:
    """One mode's best speedup in words, by its verdict (runner/format/verdict.py)."""
    mode, batch = r["mode"], int(r["batch_size"])
    if r["verdict"] == vd.INCONCLUSIVE:
        return (f"{mode}: inconclusive at every measured batch size (95% intervals span "
                f"both sides of 1x by more than {vd.SPREAD_LIMIT:g}x; narrowest at batch "
                f"{batch:,}: {vd.interval_text(r['speedup_ci_low'], r['speedup_ci_high'])})")
    ci = format_interval("speedup", r["speedup_ci_low"], r["speedup_ci_high"])
    times = (f"{format_value('step_ms', r['step_ms'])} vs "
             f"{format_value('step_ms', r['eager_ms'])}, medians")
    figure = f"{format_value('speedup', r['speedup'])}{'' if ci == NO_INTERVAL else f' ({ci})'}"
    if r["verdict"] == vd.SAME:
        line = (f"{mode}: no speedup beyond noise: at best {figure} at batch {batch:,} "
                f"({times})")
    elif r["verdict"] == vd.SLOWER:
        line = f"{mode}: slower than eager: at best {figure} at batch {batch:,} ({times})"
    else:
        line = f"{mode}: up to {figure} over eager, at batch {batch:,} ({times})"
    if ci == NO_INTERVAL:
        line += f"; {NO_INTERVAL}"
    elif len(r["ties"]) > 1:
        batches = measured.loc[measured["mode"] == mode, "batch_size"]
        line += f"; {analysis.batch_span(r['ties'], batches)} within noise"
    medians = r["eager_ms"] / r["step_ms"] if r["step_ms"] else float("nan")
    if pd.notna(r["speedup_ci_low"]) and pd.notna(r["speedup_ci_high"]) and \
            not r["speedup_ci_low"] <= medians <= r["speedup_ci_high"]:
        # Two statistics that disagree are named, not left side by side (as the CLI's #).
        line += (f"; the medians' ratio ({medians:.2f}x) lies outside the paired interval: "
                 "the times moved between rounds, the paired figure compares each round's")
    if r["inconclusive"]:
        batches = measured.loc[measured["mode"] == mode, "batch_size"]
        line += (f"; inconclusive, not ranked: "
                 f"{analysis.batch_span(r['inconclusive'], batches)}")
    return line


def headline(points: pd.DataFrame) -> list[str]:
    """The run's answer in a few sentences: best speedup per mode and where, with its 95%
    interval and the batch sizes within noise of it (analysis.largest_speedups ranks by the
    interval's lower bound and leaves inconclusive points out), the break-even batch size,
    how many steps pay back the setup, and the host's launch cost."""
    lines = []
    best = analysis.largest_speedups(points)
    measured = analysis.speedups(points)
    for _, r in best.iterrows():
        lines.append(_best_line(r, measured))
    if best.empty:
        lines.append("No speedup to show: no mode has an ok point beside an ok eager point.")
    elif best["verdict"].eq(vd.INCONCLUSIVE).any() or best["inconclusive"].map(len).any():
        lines.append(vd.RULE_TEXT)
    be = analysis.break_even(points)
    g = f"{be.threshold:g}x"
    if be.status == "crosses":
        at = dict(be.ratios)
        lines.append(f"Break-even: from batch {be.batch_size:,} on, reduce-overhead gains less "
                     f"than {g} over compile ({at[be.batch_size]:.2f}x there; "
                     f"{at[be.last_gaining]:.2f}x at batch {be.last_gaining:,}).")
    elif be.status == "never-below":
        lines.append(f"Break-even: not reached: reduce-overhead gains at least {g} over "
                     f"compile at every measured batch size (up to {be.last_gaining:,}).")
    elif be.status == "always-below":
        lines.append(f"Break-even: reduce-overhead gains less than {g} over compile at every "
                     "measured batch size.")
    else:
        lines.append("Break-even: unknown (needs compile and reduce-overhead at the same "
                     "batch size).")
    pay = analysis.payback(points)
    unknown = []
    for _, r in best[best["verdict"] != vd.INCONCLUSIVE].iterrows():
        row = pay[(pay["mode"] == r["mode"]) & (pay["batch_size"] == r["batch_size"])]
        if row.empty:
            continue
        p = row.iloc[0]
        if p["never"]:
            lines.append(f"{r['mode']}: saves nothing per step at batch "
                         f"{int(r['batch_size']):,}, so its setup never pays back.")
        elif pd.isna(p["payback_steps"]):
            unknown.append(r["mode"])
        else:
            lines.append(f"{r['mode']}: its {duration_text(p['setup_s'])} setup pays "
                         f"back after {p['payback_steps']:,.0f} steps at batch "
                         f"{int(r['batch_size']):,}.")
    if unknown:
        lines.append(f"Payback unknown for {', '.join(unknown)} (setup time not recorded).")
    cost = analysis.launch_cost(points)
    if cost is not None:
        lines.append(f"Host launch cost: {cost.median:.1f} us per launch (median; "
                     f"{cost.low:.1f}-{cost.high:.1f} us over {cost.points} points).")
    lines.extend(energy.findings(points))
    return lines


# (column, interval bounds or None): an interval column follows its figure. The answer
# columns come first (speedup, time, memory), so they are on screen without scrolling.
POINT_COLUMNS = (("speedup", ("speedup_ci_low", "speedup_ci_high")),
                 ("step_ms", ("step_ms_ci_low", "step_ms_ci_high")), ("total_mib", None),
                 ("extra_mib", None), ("graph_pool_bytes", None),
                 ("peak_allocated_bytes", None), ("step_ms_p10", None), ("step_ms_p90", None),
                 ("latency_ms", None), ("setup_s", None), ("launch_us", None),
                 ("host_launches_per_step", None), ("graph_launches_per_step", None),
                 ("gpu_busy_ms", None), ("busy_fraction", None),
                 ("reserved_delta_bytes", None), ("max_abs_err", None),
                 ("energy_mj_per_step", ("energy_mj_per_step_ci_low",
                                         "energy_mj_per_step_ci_high")),
                 ("energy_gain", ("energy_gain_ci_low", "energy_gain_ci_high")),
                 ("avg_power_w", None), ("energy_above_idle_mj_per_step", None))
# Shown only for a run with an energy figure: a dash in every row says nothing.
ENERGY_TABLE_COLUMNS = ("energy_mj_per_step", "energy_gain", "avg_power_w",
                        "energy_above_idle_mj_per_step")
RESERVED_NOTE = ("Reserved change in setup: how setup moved the allocator's reserve. It is "
                 "negative where setup made the allocator release cached blocks; it is not "
                 "a cost. What a mode holds is graph pool + peak allocated.")
SPEEDUP_FIELDS = ("speedup", "speedup_ci_low", "speedup_ci_high", "verdict")


def points_with_speedup(points: pd.DataFrame) -> pd.DataFrame:
    """Points with analysis.speedups' figure (the stored paired one where measured, else
    the ratio of medians) in place of the stored columns."""
    sp = (analysis.speedups(points).set_index(["run_id", "mode", "batch_size"])
          [list(SPEEDUP_FIELDS)])
    out = points.drop(columns=[c for c in SPEEDUP_FIELDS if c in points])
    out = out.join(sp, on=["run_id", "mode", "batch_size"])
    out["busy_fraction"] = pd.to_numeric(out["gpu_busy_ms"]) / pd.to_numeric(out["step_ms"])
    for c in ("step_ms_ci_low", "step_ms_ci_high", "launch_us"):
        out[c] = analysis._col(out, c)
    mem = cost.memory_cost(points).set_index(["run_id", "mode", "batch_size"])[
        ["total_mib", "extra_mib"]]
    return out.join(mem, on=["run_id", "mode", "batch_size"])


def points_table(points: pd.DataFrame) -> pd.DataFrame:
    """Every point, failed ones included and marked with their message; numbers as text
    with units (unknown shows as a dash)."""
    if points.empty:
        return pd.DataFrame(columns=["Mode", "Batch size", "Status"])
    p = analysis._ordered(points_with_speedup(points))
    out = pd.DataFrame({"Mode": p["mode"], "Batch size": p["batch_size"].astype(int)})
    for c in ENERGY_TABLE_COLUMNS:
        p[c] = analysis._col(p, c)
    for c in ("energy_mj_per_step_ci_low", "energy_mj_per_step_ci_high",
              "energy_gain_ci_low", "energy_gain_ci_high"):
        p[c] = analysis._col(p, c)
    shown = [(c, b) for c, b in POINT_COLUMNS
             if c not in ENERGY_TABLE_COLUMNS or energy.has_energy(points)]
    for c, bounds in shown:
        if c == "step_ms_p10":  # after the answer columns: how each point went
            out["Status"] = analysis.status_marks(p).values
            out["Noise"] = analysis.point_badges(p).values
        out[title(c)] = [format_value(c, v) for v in p[c]]
        if bounds:
            lo, hi = p[bounds[0]], p[bounds[1]]
            known = p[c].notna() & p["mode"].ne("eager") if c == "speedup" else p[c].notna()
            out[f"{metric(c).label} 95% CI"] = [
                format_interval(c, a, b) if k else MISSING
                for a, b, k in zip(lo, hi, known, strict=True)]
        if c == "speedup":  # the one rule's word beside the figure it judges
            out["Verdict"] = [v if isinstance(v, str) else MISSING for v in p["verdict"]]
    out["CUDA graph"] = p["cudagraph_status"].values
    out["Correct"] = [MISSING if is_missing(v) else ("yes" if v else "NO") for v in p["correct"]]
    return out


def speedup_pivot(points: pd.DataFrame) -> pd.DataFrame:
    """Batch size x graph mode at a glance: each cell the speedup over eager with its 95%
    interval and the extra memory over eager, e.g. '7.1x (6.5-7.6) · +34 MiB'; an
    inconclusive one (runner/format/verdict.py) shows its interval only."""
    sp = analysis.speedups(points)
    sp = sp[sp["mode"] != "eager"]
    if sp.empty:
        return pd.DataFrame(columns=["Batch size"])
    mem = cost.memory_cost(points).set_index(["run_id", "mode", "batch_size"])["extra_mib"]
    sp = sp.join(mem, on=["run_id", "mode", "batch_size"])

    def cell(r) -> str:
        if r["verdict"] == vd.INCONCLUSIVE:  # no median: it is not a finding
            text = f"inconclusive ({vd.interval_text(r['speedup_ci_low'], r['speedup_ci_high'])})"
        else:
            text = f"{r['speedup']:.1f}x"
        if r["verdict"] != vd.INCONCLUSIVE and pd.notna(r["speedup_ci_low"]) \
                and pd.notna(r["speedup_ci_high"]):
            text += f" ({r['speedup_ci_low']:.1f}-{r['speedup_ci_high']:.1f})"
        if pd.notna(r["extra_mib"]):
            text += f" · {r['extra_mib']:+,.0f} MiB"
        return text

    sp["cell"] = sp.apply(cell, axis=1)
    wide = sp.pivot_table(index="batch_size", columns="mode", values="cell", aggfunc="first")
    wide = wide[[m for m in ALTERNATIVE_MODES if m in wide.columns]].fillna(MISSING)
    return wide.rename_axis(columns=None).reset_index().rename(
        columns={"batch_size": "Batch size"})


def points_csv(points: pd.DataFrame) -> str:
    """Raw figures, one row per point; column names carry their units."""
    p = analysis._ordered(points_with_speedup(points)) if not points.empty else points
    cols = ["run_id", *(f for f in MEASUREMENT_FIELDS
                        if f not in ("samples_ms", "launch_us_rounds", "details"))]
    out = p.reindex(columns=cols).copy()
    out["details"] = [json.dumps(d, sort_keys=True) if isinstance(d, dict) else ""
                      for d in p.get("details", pd.Series([None] * len(p)))]
    return csv_text(out)


# A spreadsheet runs a cell that starts with one of these as a formula
# (=HYPERLINK("http://evil.example","x") in a point's message): OWASP's CSV injection rule.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """A text cell a spreadsheet would read as a formula, prefixed with ' so it stays
    text; everything else (numbers too: -1.5 is a number, not a formula) as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_text(frame: pd.DataFrame) -> str:
    """Every CSV export goes through here: text cells neutralised, numbers kept numbers."""
    out = frame.copy()
    for c in out.columns:
        if out[c].dtype == object or pd.api.types.is_string_dtype(out[c]):
            out[c] = out[c].map(csv_cell)
    out.columns = [csv_cell(str(c)) for c in out.columns]
    # RFC 4180's CRLF: the writer then quotes every field holding a CR or LF, so a CR in
    # a message stays inside its cell instead of starting a row.
    return out.to_csv(index=False, lineterminator="\r\n")


def chart_png(chart, scale: float = 2.0) -> bytes:
    return vlc.vegalite_to_png(chart.to_dict(), scale=scale)


def chart_svg(chart) -> str:
    return vlc.vegalite_to_svg(chart.to_dict())


def _rows(df: pd.DataFrame) -> dict:
    """The points table for the template: column names, and each row's cells as text with
    whether the point failed (its Status is not ok)."""
    return {"columns": [str(c) for c in df.columns],
            "rows": [(not str(r.get("Status", "ok")).startswith("ok"), [str(v) for v in r])
                     for _, r in df.iterrows()]}


CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;
color:#222;max-width:1200px}h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em}
.published{background:#fff4ce;border:1px solid #e0c050;padding:.6em 1em;border-radius:4px}
table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ddd;padding:3px 6px;
text-align:left}tr.bad td{background:#fdecea}.answer{font-size:1.2em;font-weight:600}
.wide{max-width:100%;overflow-x:auto}table.points{font-size:.72em;width:100%}
table.points th,table.points td{padding:2px 3px;overflow-wrap:anywhere}.note{color:#555}
.chart{margin:1em 0}code{background:#f4f4f4;padding:2px 4px;word-break:break-all}
footer{margin-top:3em;color:#777;font-size:.8em}"""


_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True, trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)


TIMELINE_NOTE = ("One profiled step per mode, CPU launch calls above the GPU's kernels, "
                 "on one time axis from the step's first launch to its last kernel's end; "
                 "shaded yellow: the GPU idle, waiting for the host; grey: the GPU still "
                 "busy with the previous step. " + timeline.STEP_TIMES_NOTE)


def _timeline(traces: list[dict], points: pd.DataFrame) -> dict | None:
    items = timeline.ordered(traces)
    chart = timeline.timeline_chart([
        (x["mode"], x["trace"], timeline.timed_ms(points, x.get("run_id"), x["mode"],
                                                  x.get("batch_size")))
        for x in items])
    if chart is None:
        return None
    return {"batch": traces[0].get("batch_size", "?"), "note": TIMELINE_NOTE,
            "svg": chart_svg(chart)}



def _run_rows(header: dict, after_params: list | None = None,
              after_status: list | None = None) -> list[tuple]:
    """The report's "run" table: what a run is, in the order both reports show it."""
    return [("workload", header.get("workload")),
            ("parameters", analysis._canon(header.get("workload_params"))),
            *(after_params or []), ("status", header.get("status")), *(after_status or []),
            ("created", header.get("created_at")),
            ("finished", header.get("finished_at") or MISSING), ("uuid", header.get("uuid"))]


def _env_rows(header: dict) -> list[tuple]:
    return [(f, MISSING if header.get(f) is None else header.get(f))
            for f in ENVIRONMENT_FIELDS]

def html_report(header: dict, points: pd.DataFrame, share_url: str | None = None,
                traces: list[dict] | None = None) -> str:
    """One run as a single HTML file (templates/report.html): headline, charts (inline
    SVG), the step timeline of its headline batch size (`traces`: queries.point_traces
    there, for timeline.headline_batch), points, environment, the reproducing command. No
    script, no external resource: it opens offline."""
    noise = None
    if not points.empty:
        counts = analysis.noise_counts(points)
        noise = analysis.noise_summary(counts.iloc[0] if len(counts) else {})[1]
    run_rows = _run_rows(header, [("dtype", header.get("dtype") or MISSING)],
                         [("source", header.get("source"))])
    env_rows = _env_rows(header)
    return _TEMPLATES.get_template("report.html").render(
        title=run_title(header), css=CSS, label=header.get("label"),
        published=header.get("source") == "published", published_note=PUBLISHED_NOTE,
        summary=cost.headline(points), headline=headline(points), noise=noise,
        charts=[(name, chart_svg(chart)) for name, chart in run_charts.run_charts(points).items()],
        points=_rows(points_table(points)), reserved_note=RESERVED_NOTE,
        run_rows=run_rows, env_rows=env_rows,
        reproduce=links.reproduce(header, points.get("batch_size", []),
                                  points.get("mode", [])),
        share_url=share_url, timeline=_timeline(traces or [], points),
        stamp=datetime.now(timezone.utc).isoformat(timespec="seconds"))


GRAPH_MEMORY_NOTE = ("One CUDA graph captured per size, largest first (as vLLM and SGLang "
                     "do), the pools read after each capture. Shared: one pool for every "
                     "graph; private: a pool per graph, each paying the fixed part "
                     "(workspaces) again.")


def graph_memory_report(header: dict, doc: dict, share_url: str | None = None) -> str:
    """A graph-memory run as one HTML file (templates/graph_memory_report.html): MiB
    against the number of captured sizes and MiB added per size (inline SVG), the
    attribution and every capture. No script, no external resource: it opens offline."""
    from pages.logic import capture_advice as ca  # the Serve page's charts, the same

    total, added = ca.curve_charts(doc)
    run_rows = [("kind", "graph-memory"), *_run_rows(header)]
    env_rows = _env_rows(header)
    return _TEMPLATES.get_template("graph_memory_report.html").render(
        title=run_title(header) + " · graph memory", css=CSS, label=header.get("label"),
        note=GRAPH_MEMORY_NOTE,
        charts=[("graph-memory-total", chart_svg(total)),
                ("graph-memory-added", chart_svg(added))],
        attribution=_rows(ca.attribution_frame(doc)), captures=_rows(ca.captures_frame(doc)),
        run_rows=run_rows, env_rows=env_rows, command=header.get("command"),
        run_id=header.get("id"), share_url=share_url,
        stamp=datetime.now(timezone.utc).isoformat(timespec="seconds"))
