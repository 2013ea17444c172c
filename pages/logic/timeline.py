"""The step timeline's data (issue 12): the batch sizes and modes a run's traces cover,
the ?batch= check, and each trace (contract/trace.py) as frames on its step's own
time axis: events by lane, and the GPU's idle gaps. The chart is
pages/charts/timeline_chart.py's, the page glue pages/widgets/timeline_view.py's.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from contract import speedups as sp
from contract import trace as tr
from contract.limits import MAX_BATCH_SIZE
from contract.measurement import Measurement
from contract.numbers import number_or_none
from contract.trace import PointTrace
from contract.vocab import MODES

CPU_LANE, GPU_LANE = "CPU launches", "GPU kernels"
LANES = [CPU_LANE, GPU_LANE]
GAP_COLOR = "#f2b701"
# The batch size the article draws (and the one to open on when a run has it).
PREFERRED_BATCH = 8
PICK = "pick_batch"  # the speedup chart's click selection
STEP_TIMES_NOTE = tr.STEP_TIMES_NOTE


class BatchError(ValueError):
    """A ?batch= value that cannot be shown. str() is the one line on the page."""


def batch_sizes(points: Iterable[Measurement]) -> list[int]:
    """Batch sizes with at least one ok point, ascending."""
    return sorted({m.batch_size for m in points if m.status == "ok"})


def modes_at(points: Iterable[Measurement], batch: int) -> list[str]:
    """Modes with an ok point at `batch`, in mode order."""
    ok = {m.mode for m in points if m.status == "ok" and m.batch_size == batch}
    return [m for m in MODES if m in ok]


def parse_batch(text: str | None, options: Sequence[int]) -> int | None:
    """The batch size of ?batch=...; None when absent. BatchError names a value that is not
    a batch size, or one this run did not measure."""
    if text is None or not str(text).strip():
        return None
    s = str(text).strip()
    digits = len(str(MAX_BATCH_SIZE))  # refuse a long string before int() reads it
    if not (s.isascii() and s.isdigit()) or len(s) > digits:
        raise BatchError(f"?batch={s[:40]!r} is not a batch size: expected a whole number "
                         f"in ASCII digits from 1 to {MAX_BATCH_SIZE}, such as ?batch=8")
    if not 1 <= int(s) <= MAX_BATCH_SIZE:
        raise BatchError(f"?batch={s!r} is out of range: batch sizes run from 1 to "
                         f"{MAX_BATCH_SIZE} (contract/limits.py)")
    if int(s) not in options:
        have = ", ".join(str(b) for b in options) or "none"
        raise BatchError(f"?batch={int(s)}: no point was measured at batch size {int(s)} "
                         f"(measured: {have}); showing another")
    return int(s)


def default_batch(options: Sequence[int]) -> int | None:
    if not options:
        return None
    return PREFERRED_BATCH if PREFERRED_BATCH in options else min(options)


def headline_batch(points: Sequence[Measurement]) -> int | None:
    """The batch size the report draws: where the run's largest speedup is (of the modes'
    bests, inconclusive ones left out); without one, the default."""
    bests = [b for b in sp.mode_bests(sp.speedups(points)) if b.verdict != "inconclusive"]
    if bests:
        return max(bests, key=lambda b: b.speedup).batch_size
    return default_batch(batch_sizes(points))


def picked_batch(selection) -> int | None:
    """The batch size of a clicked point, from streamlit's selection state."""
    try:
        rows = selection[PICK]
        return int(rows[0]["batch_size"]) if rows else None
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def ordered(items: Sequence[PointTrace]) -> list[PointTrace]:
    """Traces in mode order (eager first, the graphs last), for stacking."""
    rank = {m: i for i, m in enumerate(MODES)}
    return sorted(items, key=lambda x: (rank.get(x.mode, len(rank)), x.run_id))


def frame(trace: dict) -> pd.DataFrame:
    """The trace's events on the step's own time axis: 0 at its first host call
    (contract/trace.py step_span); what lies before it is the profiler's lead-in."""
    lo, _ = tr.step_span(trace)
    rows = [dataclasses.asdict(e) for e in tr.events(trace)]  # the frame's rows
    df = pd.DataFrame(rows, columns=["lane", "kind", "name", "start_us", "end_us", "dur_us",
                                     "stream"])
    df["start_us"] -= lo
    df["end_us"] -= lo
    df["lane"] = df["lane"].map({"cpu": CPU_LANE, "gpu": GPU_LANE})
    df["what"] = df["kind"].map(tr.KIND_LABELS)
    df["stream"] = [("—" if pd.isna(v) else str(int(v))) for v in df["stream"]]
    return df


# The GPU lane's background: idle (waiting for the host) or, before a step whose host ran
# ahead, still busy with the previous step: not idle, so not the idle colour.
GAP_KINDS = {"idle": ("GPU idle, waiting for the host", GAP_COLOR),
             "queued": ("GPU busy with the previous step (the host ran ahead)", "#9e9e9e")}


def gaps_frame(trace: dict) -> pd.DataFrame:
    """The GPU lane's idle gaps, and a queued start where the host ran ahead, on the
    step's own time axis (frame's)."""
    g = tr.gpu_idle(trace)
    lo, _ = tr.step_span(trace)
    spans = [("queued", *g.queued)] if g.queued else []
    spans += [("idle", s, e) for s, e in g.gaps]
    return pd.DataFrame({"lane": GPU_LANE, "gap": [k for k, _, _ in spans],
                         "what": [GAP_KINDS[k][0] for k, _, _ in spans],
                         "start_us": [s - lo for _, s, _ in spans],
                         "end_us": [e - lo for _, _, e in spans],
                         "gap_us": [e - s for _, s, e in spans]})


def span_us(trace: dict) -> float:
    lo, hi = tr.step_span(trace)
    return hi - lo


def timed_ms(points: Mapping[int, Sequence[Measurement]], run_id: int, mode: str,
             batch: int) -> float | None:
    """The point's timed step (median of its rounds), to stand beside the profiled one."""
    for m in points.get(run_id, ()):
        if m.mode == mode and m.batch_size == batch and m.status == "ok":
            return number_or_none(m.timing.step_ms)
    return None


def chrome_trace_text(label: str, trace: dict) -> str:
    """One point's trace as Chrome trace / Perfetto JSON text."""
    return json.dumps(tr.chrome_trace([(label, trace)]), separators=(",", ":"))


def file_name(run_id: int, mode: str, batch: int) -> str:
    return f"launchbench-run-{run_id}-{mode}-b{batch}.trace.json"
