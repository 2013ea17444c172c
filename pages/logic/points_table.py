"""A run's points as tables and files: every point with units and marks (the Points view,
the HTML report), the batch size x mode pivot, and the CSV exports, their text cells
neutralised for spreadsheets.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from contract import host_split, memory, noise
from contract import verdict as vd
from contract.bundle import MEASUREMENT_FIELDS
from contract.measurement import Measurement
from contract.memory import MEMORY_COST_LABEL
from contract.numbers import number_or_none
from contract.plain import MAX_CELL, cut
from contract.speedups import Speedup, in_mode_order, speedups, usable
from contract.vocab import ALTERNATIVE_MODES
from pages.logic import energy, step_split
from pages.logic.metrics import (
    MISSING,
    format_interval,
    format_value,
    metric,
    title,
)
from pages.logic.text_width import fit_px

MEMORY_NOTE = ("Memory cost over eager: what the mode keeps on the GPU beyond what eager "
               "keeps at the same batch size, each measured alone from a clean state; "
               "its parts are the graph pool and the default pool, less eager's own. Peak "
               "during a step is transient, not kept. Runs from before the isolated "
               "memory pass show their graph pool only (docs/MEASUREMENT.md, \"Memory\").")
COST_COLUMN = title("memory_cost_bytes")
DEFAULT_COLUMN = title("default_pool_bytes")
PEAK_COLUMN = title("peak_allocated_bytes")
PROCESS_COLUMN = "Process medians (ms)"
NOTE_COLUMN = "Note"
SPLIT_COLUMN = "Split: GPU / launch / rest"
AT_COLUMN = ("Speedup at " + " / ".join(f"{u:g}" for u in host_split.REFERENCE_LAUNCH_US)
             + " us a launch")
JUDGED_COLUMN = "Noisy judged on"


@dataclass(frozen=True)
class Row:
    """One point with what the rules say of it (contract/): the table's row as records."""
    m: Measurement
    speedup: Speedup | None
    memory: memory.Cost | None
    split: host_split.StepSplit | None
    at: dict[float, float]


def rows(points: Sequence[Measurement]) -> list[Row]:
    """One run's points in mode order, each with its speedup, memory and split."""
    found = {(s.mode, s.batch_size): s for s in speedups(points)}
    ok = usable(points)
    costs = {(c.mode, c.batch_size): c for c in memory.costs(ok)}
    split = {(m.mode, m.batch_size): s for m, s in step_split.splits(ok)}
    at = step_split.projected_speedups(points)
    return [Row(m, found.get(k), costs.get(k), split.get(k), at.get(k, {}))
            for m in in_mode_order(points) if (k := (m.mode, m.batch_size))]


def _speedup_cells(r: Row) -> dict[str, str]:
    s = r.speedup
    known = s is not None and r.m.mode != "eager"
    return {title("speedup"): format_value("speedup", s.speedup if s else None),
            f"{metric('speedup').label} 95% CI": (
                format_interval("speedup", s.ci_low if s else None,
                                s.ci_high if s else None))
            if known else MISSING,
            "Verdict": s.verdict if s is not None and s.verdict else MISSING}


def _figure(name: str, bounds: tuple[str, str] | None = None
            ) -> Callable[[Row], dict[str, str]]:
    """A stored figure's cell (and its interval's, after it) read from the record."""
    def cells(r: Row) -> dict[str, str]:
        v = r.m.value(name)
        out = {title(name): format_value(name, v)}
        if bounds:
            lo, hi = (r.m.value(b) for b in bounds)
            out[f"{metric(name).label} 95% CI"] = (format_interval(name, lo, hi)
                                                   if number_or_none(v) is not None
                                                   else MISSING)
        return out
    return cells


def _memory_cells(r: Row) -> dict[str, str]:
    """The memory cost over eager and its parts (contract/memory.py); a point from
    before the isolated pass has its graph pool only, and says so in the cost's cell."""
    c = r.memory
    if c is not None and c.old:
        cost = "before the memory pass"
    elif c is not None and c.mode == "eager" and c.cost_bytes is not None:
        cost = "baseline"
    else:
        cost = format_value("memory_cost_bytes", c.cost_bytes if c else None)
    return {COST_COLUMN: cost,
            title("graph_pool_bytes"): format_value("graph_pool_bytes",
                                                    c.pool_bytes if c else None),
            DEFAULT_COLUMN: format_value("default_pool_bytes", c.default_bytes if c else None),
            PEAK_COLUMN: format_value("peak_allocated_bytes", c.peak_bytes if c else None)}


def _status_cells(r: Row) -> dict[str, str]:
    return {"Status": status_mark(r.m), "Noise": noise.point_badge(r.m),
            JUDGED_COLUMN: host_split.judged_text(r.m) or MISSING,
            PROCESS_COLUMN: _process_text(r.m), NOTE_COLUMN: point_note(r)}


def _split_cells(r: Row) -> dict[str, str]:
    s = r.split
    share = MISSING if s is None else " / ".join(f"{s.share(p):.0%}"
                                                 for p in step_split.PART_NAMES)
    return {title("gpu_busy_ms"): format_value("gpu_busy_ms", r.m.launches.gpu_busy_ms),
            SPLIT_COLUMN: share,
            title("busy_fraction"): format_value("busy_fraction",
                                                 host_split.busy_fraction(r.m))}


def _at_cells(r: Row) -> dict[str, str]:
    xs = [r.at.get(u) for u in host_split.REFERENCE_LAUNCH_US]
    return {AT_COLUMN: " / ".join(f"{x:.2f}x" for x in xs if x is not None)
            if r.at and all(x is not None for x in xs) else MISSING}


def _energy_cells(r: Row) -> dict[str, str]:
    e = r.m.energy
    gain = format_value("energy_gain", e.energy_gain)
    if vd.inconclusive(e.energy_gain, e.energy_gain_ci_low, e.energy_gain_ci_high):
        gain = "inconclusive"
    above = format_value("energy_above_idle_mj_per_step", e.energy_above_idle_mj_per_step)
    if r.m.status == "ok" and energy.within_error(r.m):
        above = energy.WITHIN_ERROR
    return {**_figure("energy_mj_per_step", ("energy_mj_per_step_ci_low",
                                             "energy_mj_per_step_ci_high"))(r),
            title("energy_gain"): gain,
            f"{metric('energy_gain').label} 95% CI": format_interval(
                "energy_gain", e.energy_gain_ci_low, e.energy_gain_ci_high)
            if number_or_none(e.energy_gain) is not None else MISSING,
            title("avg_power_w"): format_value("avg_power_w", e.avg_power_w),
            title("energy_above_idle_mj_per_step"): above}


# The table's column groups in order: the answer first (speedup, time, memory), so it is
# on screen without scrolling; then how each point went (status, noise, the processes'
# medians and the note that says why its figures need a word); then the rest.
_GROUPS: tuple[Callable[[Row], dict[str, str]], ...] = (
    _speedup_cells, _at_cells, _figure("step_ms", ("step_ms_ci_low", "step_ms_ci_high")),
    _memory_cells, _status_cells, _figure("step_ms_p10"), _figure("step_ms_p90"),
    _figure("latency_ms"),
    _figure("setup_s"), _figure("launch_us"), _figure("host_launches_per_step"),
    _figure("graph_launches_per_step"), _split_cells, _figure("max_abs_err"))
# Shown only where some point fills them: a column of dashes says nothing (and a
# published run's "Process medians", of figures that are means, said medians).
OPTIONAL = (AT_COLUMN, JUDGED_COLUMN, SPLIT_COLUMN, DEFAULT_COLUMN, PROCESS_COLUMN)


def points_table(points: Sequence[Measurement]) -> pd.DataFrame:
    """Every point, failed ones included and marked with their message; numbers as text
    with units (unknown shows as a dash)."""
    if not points:
        return pd.DataFrame(columns=["Mode", "Batch size", "Status"])
    groups = _GROUPS + ((_energy_cells,) if energy.has_energy(points) else ())
    table = []
    for r in rows(points):
        cells = {"Mode": r.m.mode, "Batch size": str(r.m.batch_size)}
        for group in groups:
            cells.update(group(r))
        cells["CUDA graph"] = r.m.setup.cudagraph_status
        cells["Correct"] = (MISSING if r.m.setup.correct is None
                            else "yes" if r.m.setup.correct else "NO")
        table.append(cells)
    out = pd.DataFrame(table)
    out["Batch size"] = out["Batch size"].astype(int)
    empty = [c for c in OPTIONAL if (out[c] == MISSING).all()]
    return out.drop(columns=empty)


# A table drawn whole on the page (issue 46: 28 rows sat in a 400 px scroll box with the
# Verdict column cut): the grid's row height, and a column's width from its longest text
# at the grid's font (text_width.py), plus the cell's padding.
ROW_PX = 35
# A note (or a failure's message) is cut at this width; each is in full under the table.
WIDEST_COLUMN_PX = 480
# The Points table's widest column: a skipped point's reason (its Status, 520 px for the
# L40S article's) is shown whole; its notes are cut at WIDEST_COLUMN_PX (grid_notes).
POINTS_WIDEST_PX = 540
# A float cell of a table drawn here (the per-kernel table's 48.5621 us): two decimals.
FLOAT_FORMAT = "%.2f"


def table_height(rows: int) -> int:
    """The pixels that show a table's header and every one of its `rows`."""
    return (rows + 1) * ROW_PX + 3


# A table of up to this many rows is drawn whole (issue 46: 16 rows sat in a 400 px scroll
# box); a longer one (a long series, many runs' modes and sizes) keeps its scroll box.
WHOLE_ROWS = 60


def shown_height(rows: int) -> int | Literal["auto"]:
    """A grid's height: every one of its `rows` up to WHOLE_ROWS, else streamlit's own
    scroll box."""
    return table_height(rows) if rows <= WHOLE_ROWS else "auto"


def column_widths(frame: pd.DataFrame, widest: int = WIDEST_COLUMN_PX,
                  labels: Mapping[str, str] | None = None) -> dict[str, int]:
    """Each column as wide as its header (`labels`' where it has one) and its longest
    cell as the grid draws them (text_width.py), so that no cell is cut; at most `widest`
    pixels (a long note, written in full under the table)."""
    out = {}
    for c in frame.columns:
        float_col = pd.api.types.is_float_dtype(frame[c])
        texts = [(labels or {}).get(str(c), str(c)),
                 *((FLOAT_FORMAT % v if float_col and pd.notna(v) else str(v))
                   for v in frame[c])]
        out[str(c)] = fit_px(texts, widest)
    return out


def _process_text(m: Measurement) -> str:
    found = noise.process_medians(m)
    return MISSING if found is None else ", ".join(f"{x:.2f}" for x in found)


def point_note(r: Row) -> str:
    """One line a point, where its figures need a word of why (empty elsewhere): its
    paired speedup and the ratio of the medians printed beside it disagree beyond the
    interval (contract/verdict.py medians_disagree, the CLI's '#'), or the spread
    between its processes makes its step interval (noise.process_note)."""
    said = []
    s = r.speedup
    if s is not None and r.m.mode != "eager" and vd.medians_disagree(
            s.eager_ms, s.step_ms, s.ci_low, s.ci_high):
        said.append(vd.disagree_text(s.eager_ms, s.step_ms))
    proc = noise.process_note(r.m)
    if proc:
        said.append(proc)
    return "; ".join(said)


# What a note longer than its column shows in the page's grid, which cuts a cell at its
# column's edge (the report's table wraps it whole): its first words and where the rest is.
NOTE_CUT = " \u2026 (in full below)"


def grid_notes(table: pd.DataFrame, widest: int = WIDEST_COLUMN_PX) -> pd.DataFrame:
    """The points table as the page's grid shows it: a note wider than `widest` px is cut
    at a word, NOTE_CUT after it (note_lines says each in full under the table)."""
    def shown(note: str) -> str:
        if fit_px([note]) <= widest:
            return note
        words = note.split(" ")
        while words and fit_px([" ".join(words).rstrip(",;:") + NOTE_CUT]) > widest:
            words.pop()
        return " ".join(words).rstrip(",;:") + NOTE_CUT

    if NOTE_COLUMN not in table:
        return table
    return table.assign(**{NOTE_COLUMN: table[NOTE_COLUMN].astype(str).map(shown)})


def note_lines(points: Sequence[Measurement]) -> list[str]:
    """The points' notes as lines under the Points table: 'eager at batch 256: ...'."""
    return [f"{r.m.mode} at batch {r.m.batch_size}: {n}" for r in rows(points)
            if (n := point_note(r))]


PIVOT_CAPTION = ("Speedup over eager (95% interval where measured) · each mode's "
                 f"{MEMORY_COST_LABEL} (graph pool in brackets), per batch size and mode.")


def speedup_pivot(points: Sequence[Measurement]) -> pd.DataFrame:
    """Batch size x mode at a glance: each cell the speedup over eager with its 95%
    interval and its memory cost over eager (contract/memory.py, short), e.g.
    '7.10x (6.50-7.60x) · +38.0 MiB (graph pool 34.0 MiB)'; an inconclusive one
    (contract/verdict.py) shows its interval only."""
    found = [s for s in speedups(points) if s.mode != "eager"]
    if not found:
        return pd.DataFrame(columns=["Batch size"])
    cells: dict[int, dict[str, str]] = {}
    for s in found:
        # Quoted as the headline and every page quote it (verdict.quoted): one figure, one
        # way of writing it ("6.80x (6.05-7.57x)", not "6.8x (6.1-7.6)" beside it).
        text = vd.quoted(s.speedup, s.ci_low, s.ci_high)
        if memory.cost_of(s.point) is not None:
            text += f" · {memory.cost_text(s.point, short=True)}"
        cells.setdefault(s.batch_size, {})[s.mode] = text
    modes = [m for m in ALTERNATIVE_MODES if any(m in c for c in cells.values())]
    return pd.DataFrame([{"Batch size": b, **{m: cells[b].get(m, MISSING) for m in modes}}
                         for b in sorted(cells)], columns=["Batch size", *modes])


def points_csv(run_id: int, points: Sequence[Measurement]) -> str:
    """Raw figures, one row per point; column names carry their units. The speedup
    columns hold contract/speedups.py's figure (the stored paired one where measured,
    else the ratio of medians)."""
    found = {(s.mode, s.batch_size): s for s in speedups(points)}
    cols = ["run_id", *(f for f in MEASUREMENT_FIELDS
                        if f not in ("samples_ms", "launch_us_rounds", "details"))]
    table = []
    for m in in_mode_order(points):
        doc = m.to_json()
        s = found.get((m.mode, m.batch_size))
        doc.update(speedup=s.speedup if s else None, speedup_ci_low=s.ci_low if s else None,
                   speedup_ci_high=s.ci_high if s else None)
        table.append({"run_id": run_id, **{c: doc.get(c) for c in cols[1:]},
                      "details": json.dumps(doc["details"], sort_keys=True)
                      if doc["details"] else ""})
    return csv_text(pd.DataFrame(table, columns=[*cols, "details"]))


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


STATUS_ICONS = {"ok": "", "error": "✖ error", "unsupported": "⊘ unsupported",
                "skipped": "⤼ skipped"}


def status_mark(m: Measurement) -> str:
    """A visible mark for tables: ok points read 'ok', others say what and why."""
    icon = STATUS_ICONS.get(m.status, m.status)
    if not icon:
        return "ok"
    msg = str(m.message).strip().splitlines()
    return f"{icon}: {cut(msg[0], MAX_CELL)}" if msg else icon  # in full: the CSV
