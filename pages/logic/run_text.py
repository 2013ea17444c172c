"""What a run says in words: its title, its summary built from frames, and the headline
sentences (best speedup per mode with its interval, break-even, payback, launch cost,
energy) the Run page and the HTML report open with.
"""

from __future__ import annotations

import pandas as pd

from contract import verdict as vd
from contract.run_summary import (
    BREAK_EVEN_LABEL,
    RunHeader,
    RunSummary,
    records,
    summarize,
)
from pages.logic import analysis, energy, noise
from pages.logic.metrics import MISSING, NO_INTERVAL, format_interval, format_value
from pages.logic.names import device_name, known

PUBLISHED_NOTE = ("Published figures, transcribed from the cited article: not measured by "
                  "launchbench; figures the article does not give are empty.")


def run_title(header: RunHeader, shown=str, torch: bool = True) -> str:
    """The run's title from its summary's header. `shown` turns each stored text into
    what the target shows (pages.logic.plain's plain() for a Markdown element; the HTML
    report escapes by itself). `torch=False`: without the torch version (the Run page
    says it on the line below, so that the title fits one line at 1280 px)."""
    gpu = shown(device_name(header))
    version = f", {torch_text(header, shown)}" if torch else ""
    mark = " [published]" if header.source == "published" else ""
    return f"Run {header.id}: {shown(header.workload)} on {gpu}{version}{mark}"


def torch_text(header: RunHeader, shown=str) -> str:
    return f"torch {shown(known(header.torch_version) or MISSING)}"


def summary_of(header: RunHeader, points: pd.DataFrame) -> RunSummary:
    """The summary of a run held as a header and a frame of points, built by the one
    builder the database's reads call (contract/run_summary.py)."""
    return summarize(header, records(points.to_dict("records")))


def duration_text(seconds: float) -> str:
    """A setup time as read at a glance: ms below a second ('3.2 ms', '850 ms'), else
    seconds ('12.4 s'): '0.00 s' said nothing about a 3 ms capture."""
    if seconds < 0.01:
        return f"{seconds * 1e3:.1f} ms"
    if seconds < 1:
        return f"{seconds * 1e3:.0f} ms"
    return f"{seconds:,.1f} s"


def _best_line(r: pd.Series, measured: pd.DataFrame) -> str:
    """One mode's best speedup in words, by its verdict (contract/verdict.py)."""
    mode, batch = r["mode"], int(r["batch_size"])
    if r["verdict"] == vd.INCONCLUSIVE:
        return (f"{mode}: inconclusive at every measured batch size (95% intervals span "
                f"both sides of 1x by more than {vd.SPREAD_LIMIT:g}x; narrowest at batch "
                f"{batch}: {vd.interval_text(r['speedup_ci_low'], r['speedup_ci_high'])})")
    ci = format_interval("speedup", r["speedup_ci_low"], r["speedup_ci_high"])
    times = (f"{format_value('step_ms', r['step_ms'])} vs "
             f"{format_value('step_ms', r['eager_ms'])}, medians")
    figure = f"{format_value('speedup', r['speedup'])}{'' if ci == NO_INTERVAL else f' ({ci})'}"
    if r["verdict"] == vd.SAME:
        line = (f"{mode}: no speedup beyond noise: at best {figure} at batch {batch} "
                f"({times})")
    elif r["verdict"] == vd.SLOWER:
        line = f"{mode}: slower than eager: at best {figure} at batch {batch} ({times})"
    else:
        line = f"{mode}: up to {figure} over eager, at batch {batch} ({times})"
    if ci == NO_INTERVAL:
        line += f"; {NO_INTERVAL}"
    elif len(r["ties"]) > 1:
        batches = measured.loc[measured["mode"] == mode, "batch_size"]
        line += f"; {analysis.batch_span(r['ties'], batches)} within noise"
    if vd.medians_disagree(r["eager_ms"], r["step_ms"], r["speedup_ci_low"],
                           r["speedup_ci_high"]):
        # Two statistics that disagree are named, not left side by side (as the CLI's #).
        line += f"; {vd.disagree_text(r['eager_ms'], r['step_ms'])}"
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
    said = BREAK_EVEN_LABEL[0].upper() + BREAK_EVEN_LABEL[1:]  # "Break-even vs compile"
    if be.status == "crosses":
        at = dict(be.ratios)
        lines.append(f"{said}: from batch {be.batch_size} on, reduce-overhead gains less "
                     f"than {g} over compile ({at[be.batch_size]:.2f}x there; "
                     f"{at[be.last_gaining]:.2f}x at batch {be.last_gaining}).")
    elif be.status == "never-below":
        lines.append(f"{said}: not reached: reduce-overhead gains at least {g} over "
                     f"compile at every measured batch size (up to {be.last_gaining}).")
    elif be.status == "always-below":
        lines.append(f"{said}: reduce-overhead gains less than {g} over compile at every "
                     "measured batch size.")
    else:
        lines.append(f"{said}: unknown (needs compile and reduce-overhead at the same "
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
                         f"{int(r['batch_size'])}, so its setup never pays back.")
        elif pd.isna(p["payback_steps"]):
            unknown.append(r["mode"])
        else:
            lines.append(f"{r['mode']}: its {duration_text(p['setup_s'])} setup pays "
                         f"back after {p['payback_steps']:,.0f} steps at batch "
                         f"{int(r['batch_size'])}.")
    if unknown:
        lines.append(f"Payback unknown for {', '.join(unknown)} (setup time not recorded).")
    cost = noise.launch_cost(points)
    if cost is not None:
        lines.append(f"Host launch cost: {cost.median:.1f} us per launch (median; "
                     f"{cost.low:.1f}-{cost.high:.1f} us over {cost.points} points).")
    lines.extend(energy.findings(points))
    return lines
