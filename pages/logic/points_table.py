"""A run's points as tables and files: every point with units and marks (the Points view,
the HTML report), the batch size x mode pivot, and the CSV exports, their text cells
neutralised for spreadsheets.
"""

from __future__ import annotations

import json
import unicodedata

import pandas as pd

from contract import verdict as vd
from contract.bundle import MEASUREMENT_FIELDS
from contract.measurement import details_of
from contract.numbers import is_missing
from contract.plain import MAX_CELL, cut
from contract.run_summary import MEMORY_COST_LABEL, mib_text
from contract.vocab import ALTERNATIVE_MODES, CUDA_GRAPH_MODES
from pages.logic import analysis, cost, energy, noise, step_split
from pages.logic.metrics import MISSING, format_interval, format_value, metric, title

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
        out[c] = analysis.numeric_column(out, c)
    mem = cost.memory_cost(points).set_index(["run_id", "mode", "batch_size"])[
        ["total_mib", "extra_mib"]]
    return out.join(mem, on=["run_id", "mode", "batch_size"])


def host_split_cells(p: pd.DataFrame) -> dict[str, list[str]]:
    """The host-and-GPU columns of the points table (issue 39): the step's split as shares,
    the speedup projected to each reference launch cost beside the measured one, and what
    `noisy` was judged on. Columns no point fills are left out (a CPU run has no split)."""
    split = step_split.split_frame(p).set_index(["mode", "batch_size"])
    at = step_split.projected_speedups(p).set_index(["mode", "batch_size"])
    us = " / ".join(f"{u:g}" for u in step_split.host_split.REFERENCE_LAUNCH_US)
    cols: dict[str, list[str]] = {"Split: GPU / launch / rest": [],
                                  f"Speedup at {us} us a launch": [], "Noisy judged on": []}
    for _, r in p.iterrows():
        key = (r["mode"], int(r["batch_size"]))
        s = split.loc[key] if key in split.index else None
        cols["Split: GPU / launch / rest"].append(MISSING if s is None else " / ".join(
            f"{s[f'{part}_share']:.0%}" for part in step_split.PART_NAMES))
        xs = at.loc[key].drop("run_id").tolist() if key in at.index else []
        cols[f"Speedup at {us} us a launch"].append(
            " / ".join(f"{x:.2f}x" for x in xs) if xs and not any(map(is_missing, xs))
            else MISSING)
        cols["Noisy judged on"].append(step_split.judged_text(analysis.point_record(r))
                                       or MISSING)
    return {k: v for k, v in cols.items() if any(c != MISSING for c in v)}


def points_table(points: pd.DataFrame) -> pd.DataFrame:
    """Every point, failed ones included and marked with their message; numbers as text
    with units (unknown shows as a dash)."""
    if points.empty:
        return pd.DataFrame(columns=["Mode", "Batch size", "Status"])
    p = analysis.in_mode_order(points_with_speedup(points))
    out = pd.DataFrame({"Mode": p["mode"], "Batch size": p["batch_size"].astype(int)})
    for c in ENERGY_TABLE_COLUMNS:
        p[c] = analysis.numeric_column(p, c)
    for c in ("energy_mj_per_step_ci_low", "energy_mj_per_step_ci_high",
              "energy_gain_ci_low", "energy_gain_ci_high"):
        p[c] = analysis.numeric_column(p, c)
    shown = [(c, b) for c, b in POINT_COLUMNS
             if c not in ENERGY_TABLE_COLUMNS or energy.has_energy(points)]
    for c, bounds in shown:
        if c == "step_ms_p10":  # after the answer columns: how each point went
            out["Status"] = status_marks(p).values
            out["Noise"] = noise.point_badges(p).values
        out[title(c)] = [format_value(c, v) for v in p[c]]
        if bounds:
            lo, hi = p[bounds[0]], p[bounds[1]]
            known = p[c].notna() & p["mode"].ne("eager") if c == "speedup" else p[c].notna()
            out[f"{metric(c).label} 95% CI"] = [
                format_interval(c, a, b) if k else MISSING
                for a, b, k in zip(lo, hi, known, strict=True)]
        if c == "speedup":  # the one rule's word beside the figure it judges
            out["Verdict"] = [v if isinstance(v, str) else MISSING for v in p["verdict"]]
    # How each point went, after the answer columns: its noise, each process's median
    # and the note that says why its figures need a word.
    at = out.columns.get_loc("Noise") + 1
    out.insert(at, NOTE_COLUMN, point_notes(p).values)
    out.insert(at, PROCESS_COLUMN, [MISSING if m is None else ", ".join(f"{x:.2f}" for x in m)
                                    for m in _process_medians(p)])
    if energy.has_energy(points):  # the one rule and the counter's error, in words
        e = energy.energy_points(p).set_index(["mode", "batch_size"])
        keys = list(zip(p["mode"], p["batch_size"].astype(int), strict=True))
        within = [k in e.index and bool(e.at[k, "above_idle_within_error"]) for k in keys]
        out[title("energy_above_idle_mj_per_step")] = [
            energy.WITHIN_ERROR if w else cell for w, cell in zip(
                within, out[title("energy_above_idle_mj_per_step")], strict=True)]
        gain = title("energy_gain")
        out[gain] = ["inconclusive" if vd.inconclusive(g, lo, hi) else cell for g, lo, hi, cell
                     in zip(p["energy_gain"], p["energy_gain_ci_low"], p["energy_gain_ci_high"],
                            out[gain], strict=True)]
    # Each beside what it explains: the projected speedups beside the measured one, what
    # `noisy` was judged on beside the noise mark, the split beside the GPU busy time.
    after = {"Speedup at": "Verdict", "Noisy judged on": "Noise",
             "Split:": title("gpu_busy_ms")}
    for name, cells in host_split_cells(p).items():
        anchor = next((a for k, a in after.items() if name.startswith(k)), None)
        at = out.columns.get_loc(anchor) + 1 if anchor in out.columns else len(out.columns)
        out.insert(at, name, cells)
    out["CUDA graph"] = p["cudagraph_status"].values
    out["Correct"] = [MISSING if is_missing(v) else ("yes" if v else "NO") for v in p["correct"]]
    return out


PROCESS_COLUMN = "Process medians (ms)"
NOTE_COLUMN = "Note"


def _process_medians(points: pd.DataFrame) -> list[list[float] | None]:
    samples = points["samples_ms"] if "samples_ms" in points else [None] * len(points)
    details = points["details"] if "details" in points else [None] * len(points)
    return [noise.process_medians(s, details_of(d).intervals.round_process)
            for s, d in zip(samples, details, strict=True)]


def point_notes(points: pd.DataFrame) -> pd.Series:
    """One line a point, where its figures need a word of why (empty elsewhere): its
    paired speedup and the ratio of the medians printed beside it disagree beyond the
    interval (contract/verdict.py medians_disagree, the CLI's '#'), or the spread
    between its processes makes its step interval (noise.process_note). `points` as
    points_with_speedup returns them (eager_ms is found again here)."""
    if points.empty:
        return pd.Series([], dtype=object)
    sp = analysis.speedups(points).set_index(["run_id", "mode", "batch_size"])["eager_ms"]
    eager = [sp.get((r, m, b)) for r, m, b in
             zip(points["run_id"], points["mode"], points["batch_size"], strict=True)]
    samples = points["samples_ms"] if "samples_ms" in points else [None] * len(points)
    notes = []
    for (_, r), e, s in zip(points.iterrows(), eager, samples, strict=True):
        m = analysis.point_record(r)
        said = []
        if r["mode"] != "eager" and vd.medians_disagree(e, r["step_ms"], r["speedup_ci_low"],
                                                        r["speedup_ci_high"]):
            said.append(vd.disagree_text(e, r["step_ms"]))
        proc = noise.process_note(s, m.intervals.round_process, r["step_ms"],
                                  m.intervals.step_ms_ci_low, m.intervals.step_ms_ci_high)
        if proc:
            said.append(proc)
        notes.append("; ".join(said))
    return pd.Series(notes, index=points.index, dtype=object)


def note_lines(points: pd.DataFrame) -> list[str]:
    """The points' notes as lines under the Points table: 'eager at batch 256: ...'."""
    if points.empty:
        return []
    p = analysis.in_mode_order(points_with_speedup(points))
    return [f"{m} at batch {int(b)}: {n}" for m, b, n in
            zip(p["mode"], p["batch_size"], point_notes(p), strict=True) if n]


PIVOT_CAPTION = ("Speedup over eager (95% interval where measured) · the graph modes' "
                 f"memory cost: the {MEMORY_COST_LABEL}, per batch size and mode.")


def speedup_pivot(points: pd.DataFrame) -> pd.DataFrame:
    """Batch size x graph mode at a glance: each cell the speedup over eager with its 95%
    interval and, for a mode that captures graphs, its memory cost as the run's summary
    defines it (MEMORY_COST_LABEL), e.g. '7.10x (6.50-7.60x) · 34.0 MiB'; an inconclusive one
    (contract/verdict.py) shows its interval only."""
    sp = analysis.speedups(points)
    sp = sp[sp["mode"] != "eager"]
    if sp.empty:
        return pd.DataFrame(columns=["Batch size"])
    pool = analysis.usable(points).set_index(["run_id", "mode", "batch_size"])
    sp = sp.join(analysis.numeric_column(pool, "graph_pool_bytes"),
                 on=["run_id", "mode", "batch_size"])
    sp.loc[~sp["mode"].isin(CUDA_GRAPH_MODES), "graph_pool_bytes"] = float("nan")

    def cell(r) -> str:
        # Quoted as the headline and every page quote it (verdict.quoted): one figure, one
        # way of writing it ("6.80x (6.05-7.57x)", not "6.8x (6.1-7.6)" beside it).
        text = vd.quoted(r["speedup"], r["speedup_ci_low"], r["speedup_ci_high"])
        if pd.notna(r["graph_pool_bytes"]):
            text += f" · {mib_text(r['graph_pool_bytes'])}"
        return text

    sp["cell"] = sp.apply(cell, axis=1)
    wide = sp.pivot_table(index="batch_size", columns="mode", values="cell", aggfunc="first")
    wide = wide[[m for m in ALTERNATIVE_MODES if m in wide.columns]].fillna(MISSING)
    return wide.rename_axis(columns=None).reset_index().rename(
        columns={"batch_size": "Batch size"})


def points_csv(points: pd.DataFrame) -> str:
    """Raw figures, one row per point; column names carry their units."""
    p = analysis.in_mode_order(points_with_speedup(points)) if not points.empty else points
    cols = ["run_id", *(f for f in MEASUREMENT_FIELDS
                        if f not in ("samples_ms", "launch_us_rounds", "details"))]
    out = p.reindex(columns=cols).copy()
    out["details"] = [json.dumps(d, sort_keys=True) if isinstance(d, dict) else ""
                      for d in (p["details"] if "details" in p else [None] * len(p))]
    return csv_text(out)


# A spreadsheet runs a cell that starts with one of these as a formula
# (=HYPERLINK("http://evil.example","x") in a point's message): OWASP's CSV injection rule.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# What a spreadsheet skips or folds before it reads a formula (issue 48, item 7): leading
# whitespace of any kind (a space, a newline), invisible format characters (a zero-width
# space U+200B, a word joiner U+2060, a byte-order mark U+FEFF) and controls; and the
# full-width forms of the signs (＝ U+FF1D folds to =), caught by NFKC's folding.
_SKIPPED = ("Zs", "Zl", "Zp", "Cc", "Cf")


def _first_visible(text: str) -> str:
    """The first character a spreadsheet reads, folded by NFKC ('' when none)."""
    for ch in text:
        if not ch.isspace() and unicodedata.category(ch) not in _SKIPPED:
            return unicodedata.normalize("NFKC", ch)[:1]
    return ""


def csv_cell(value):
    """A text cell a spreadsheet would read as a formula, prefixed with ' so it stays
    text; everything else (numbers too: -1.5 is a number, not a formula) as it is."""
    if isinstance(value, str) and (value.startswith(FORMULA_START)
                                   or _first_visible(value) in FORMULA_START[:4]):
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


def status_marks(points: pd.DataFrame) -> pd.Series:
    """A visible mark per point for tables: ok points are blank, others say what and why."""
    icons = {"ok": "", "error": "✖ error", "unsupported": "⊘ unsupported",
             "skipped": "⤼ skipped"}

    def mark(row) -> str:
        icon = icons.get(row["status"], row["status"])
        if not icon:
            return "ok"
        msg = str(analysis.point_record(row).message).strip().splitlines()
        return f"{icon}: {cut(msg[0], MAX_CELL)}" if msg else icon  # in full: the CSV

    if points.empty:
        return pd.Series([], dtype=object)
    return points.apply(mark, axis=1)
