"""The Run page's Points view as one table a subject (issue 46): the points table
(points_table.py, up to 36 columns on a GPU run) cut into tables each led by the point's
mode and batch size and no wider than the page's column at 1280x800, so a reader sees a
whole table without scrolling sideways. A header is the figure's name where it fits, else
a short one whose tooltip gives the full name and unit; a column no subject names (one
added later) goes to the last table: none is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from contract.measurement import Measurement
from pages.logic import points_table as pt
from pages.logic.metrics import MISSING

# The Run page's main column at 1280x800 with the sidebar open, and an expander's inside:
# the grid's box (tests/e2e/audit.py measures every column's right edge against it).
PAGE_PX, FOLDED_PX = 820, 786
# The least room for a Note column (its first words and where the rest is); with less the
# table leaves it out: every note is in full under the tables (points_table.note_lines).
NOTE_LEAST_PX = 200
KEYS = ("Mode", "Batch size")
CI = "95% CI"


@dataclass(frozen=True)
class Subject:
    """One table's columns (the points table's names), the header each shows where it
    differs from that name, and whether it sits in an expander (read less often)."""
    title: str
    columns: tuple[str, ...]
    labels: dict[str, str]
    folded: bool = False


# Headers drop a unit their cells already carry ("0.765 ms"); a 95% interval sits right
# after its figure, under "95% CI" (its tooltip names the figure).
SUBJECTS: tuple[Subject, ...] = (
    Subject("Speed", ("Speedup over eager (x)", "Speedup over eager 95% CI", "Verdict",
                      "Step time (ms)", "Step time 95% CI", "Status"),
            {"Speedup over eager (x)": "Speedup over eager",
             "Speedup over eager 95% CI": CI, "Step time (ms)": "Step time",
             "Step time 95% CI": CI}),
    Subject("Memory", (pt.COST_COLUMN, "Graph pool (MiB)", pt.DEFAULT_COLUMN, pt.PEAK_COLUMN),
            {pt.COST_COLUMN: "Memory cost over eager", "Graph pool (MiB)": "Graph pool",
             pt.DEFAULT_COLUMN: "Default pool", pt.PEAK_COLUMN: "Peak during a step"}),
    Subject("Energy", ("Energy per step (mJ)", "Energy per step 95% CI",
                       "Energy gain over eager (x)", "Energy gain over eager 95% CI"),
            {"Energy per step (mJ)": "Energy per step", "Energy per step 95% CI": CI,
             "Energy gain over eager (x)": "Energy gain over eager",
             "Energy gain over eager 95% CI": CI}),
    Subject("Power and energy above idle", ("Average power (W)",
                                            "Energy per step above idle (mJ)"),
            {"Average power (W)": "Average power",
             "Energy per step above idle (mJ)": "Energy per step above idle"}, folded=True),
    Subject("Noise", ("Noise", pt.JUDGED_COLUMN, pt.PROCESS_COLUMN), {}, folded=True),
    Subject("Step time spread, latency and setup",
            ("Step time p10 (ms)", "Step time p90 (ms)", "Latency per call (ms)",
             "Setup (compile + capture) (s)"),
            {"Step time p10 (ms)": "Step time p10", "Step time p90 (ms)": "Step time p90",
             "Latency per call (ms)": "Latency per call",
             "Setup (compile + capture) (s)": "Setup (compile + capture)"}, folded=True),
    Subject("Launches and graphs",
            ("Host launch cost (us)", "Host launches per step", "Graph launches per step",
             "CUDA graph"), {"Host launch cost (us)": "Host launch cost",
                             "Host launches per step": "Host launches",
                             "Graph launches per step": "Graph launches"}, folded=True),
    Subject("The GPU's share of a step",
            ("GPU busy time (ms)", pt.SPLIT_COLUMN, "GPU busy fraction", pt.AT_COLUMN),
            {"GPU busy time (ms)": "GPU busy time",
             pt.AT_COLUMN: pt.AT_COLUMN.removeprefix("Speedup ").capitalize()}, folded=True),
    Subject("Output against eager's", ("Correct", "Max abs error vs eager"), {},
            folded=True),
)
# The Note column is no subject's: a note is a sentence, in full under the tables
# (points_table.note_lines); the Noise table shows as much of it as its room allows.


@dataclass(frozen=True)
class Table:
    """One subject's table as the page draws it: its frame (keys first), each column's
    header, tooltip and width in px."""
    title: str
    frame: pd.DataFrame
    labels: dict[str, str]
    helps: dict[str, str]
    widths: dict[str, int]
    folded: bool


def _help(column: str, label: str) -> str:
    """A header's tooltip: the figure's full name where the header is short."""
    if column == "Batch size":
        return "Batch size"
    if label == CI:
        return column.replace(" 95% CI", ": its 95% interval")
    return column if label != column else ""


def _short_status(status: str) -> str:
    """The Status cell's mark without its message ('✖ error'): the message is a sentence,
    listed under the tables (status_lines)."""
    return status.split(": ", 1)[0]


def status_lines(points: Sequence[Measurement]) -> list[str]:
    """Each point that gave no figure, with its message: 'compile at batch 8: ✖ error:
    ...' (the Status column shows the mark alone)."""
    return [f"{m.mode} at batch {m.batch_size}: {pt.status_mark(m)}"
            for r in pt.rows(points) if (m := r.m).status != "ok"]


def _table(subject: Subject, frame: pd.DataFrame) -> Table:
    labels = {c: subject.labels.get(c, "Batch" if c == "Batch size" else c)
              for c in frame.columns}
    if "Status" in frame:
        frame = frame.assign(Status=frame["Status"].astype(str).map(_short_status))
    box = FOLDED_PX if subject.folded else PAGE_PX
    widths = pt.column_widths(frame, widest=box, labels=labels)
    if pt.NOTE_COLUMN in frame:  # the note gets the room the other columns leave
        room = box - sum(w for c, w in widths.items() if c != pt.NOTE_COLUMN)
        if room >= NOTE_LEAST_PX:
            frame = pt.grid_notes(frame, widest=room)
            widths[pt.NOTE_COLUMN] = pt.column_widths(frame[[pt.NOTE_COLUMN]],
                                                      widest=room)[pt.NOTE_COLUMN]
        else:  # no room for a sentence: each note is whole under the tables all the same
            frame = frame.drop(columns=pt.NOTE_COLUMN)
            del widths[pt.NOTE_COLUMN], labels[pt.NOTE_COLUMN]
    return Table(subject.title, frame, labels,
                 {c: _help(c, labels[c]) for c in frame.columns}, widths, subject.folded)


def _blank(frame: pd.DataFrame) -> bool:
    return bool((frame.astype(str).isin([MISSING, ""])).all().all())


def subject_tables(table: pd.DataFrame) -> tuple[list[Table], list[str]]:
    """(the points table as SUBJECTS' tables, the subjects with no figure at all: a table
    of dashes says nothing, so the page names them instead of drawing them)."""
    keys = [c for c in KEYS if c in table.columns]
    named = {c for s in SUBJECTS for c in s.columns} | {pt.NOTE_COLUMN, *KEYS}
    rest = tuple(c for c in table.columns if c not in named)
    subjects = [*SUBJECTS, *([Subject("Other figures", rest, {}, folded=True)] if rest
                             else [])]
    out, empty = [], []
    for s in subjects:
        cols = [c for c in s.columns if c in table.columns]
        if s.title == "Noise" and pt.NOTE_COLUMN in table.columns:
            cols.append(pt.NOTE_COLUMN)
        if not cols:
            continue
        if _blank(table[cols]):
            empty.append(s.title)
            continue
        out.append(_table(s, table[keys + cols]))
    return out, empty
