"""What the `kernel-chain` and `train-step` workloads add to the Run and Compare pages,
as pure functions of the run's header and points (records; each table's frame is made
here, the pages draw them; the pool chart is pages/charts/workload_charts.py's).

kernel-chain: per-kernel figures (step / kernels) beside per-step ones, and the interview
note's hand calculation redone with this run's own launch cost and kernel time. The
note's model: with N kernels, a launch cost L and a kernel time K, eager costs about
N x max(L, K) (the slower of host and GPU sets the pace) and one graph about N x K + L
(the kernels back to back, one launch). The note's own figures: N 100, L 5 us, K 2 us:
500 us eager, 205 us in a graph.

train-step: what each mode's memory is made of, and for reduce-overhead its CUDA Graph
trees (graphs recorded, their kinds and pool) beside the forward and backward graphs
captured separately, each in its own pool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import pandas as pd

from contract.measurement import Measurement
from contract.numbers import number_or_none
from contract.run_summary import RunHeader
from pages.logic.comparing import short_names
from pages.logic.metrics import title

RAW_CUDA_NOTE = ("NVIDIA's V100 figures are raw CUDA runtime launches from C++: no "
                 "Python, no PyTorch dispatcher, no caching allocator. A kernel-chain point "
                 "measured here pays all of those on every eager launch, so its eager "
                 "per-kernel cost is higher by what PyTorch adds, not by what the GPU does.")


class NoteExample(NamedTuple):
    """The interview note's own figures: N kernels, a launch cost L, a kernel time K."""
    kernels: int
    launch_us: float
    kernel_us: float


NOTE_EXAMPLE = NoteExample(kernels=100, launch_us=5.0, kernel_us=2.0)
MIB = 1024 * 1024




def _mapping(v: Any) -> Mapping:
    return v if isinstance(v, Mapping) else {}


def _mib(v: Any) -> float | None:
    """A byte count in MiB; None where it is unknown."""
    n = number_or_none(v)
    return None if n is None else n / MIB


def chain_kernels(header: RunHeader) -> int | None:
    """The chain length of a kernel-chain run; None for any other workload."""
    if header.workload != "kernel-chain":
        return None
    # A workload's parameters are named by the workload (contract/params.py): a
    # published or hand-written bundle may leave the chain length out.
    params = header.workload_params
    k = (number_or_none(params["kernels"]) if isinstance(params, dict) and "kernels" in params
         else None)
    return int(k) if k and k > 0 else None


def per_kernel_us(m: Measurement, kernels: int) -> float | None:
    """One kernel's share of a step (us): step / kernels, or a published per-kernel
    figure where the publication gives only that."""
    step = number_or_none(m.timing.step_ms)
    if step is not None:
        return step * 1e3 / kernels
    return number_or_none(m.launches.per_kernel_us)


def per_kernel_table(points: Sequence[Measurement], header: RunHeader) -> pd.DataFrame:
    """Per batch and mode: the step and each kernel's share of it, the GPU's time per
    kernel, and launches per step."""
    k = chain_kernels(header)
    if k is None or not points:
        return pd.DataFrame()
    rows = []
    for m in (p for p in points if p.status == "ok"):
        busy = number_or_none(m.launches.gpu_busy_ms)
        kernels_run = number_or_none(m.launches.gpu_kernels_per_step)
        step = number_or_none(m.timing.step_ms)
        rows.append({
            "batch (elements)": int(m.batch_size), "mode": m.mode,
            "step us": None if step is None else step * 1e3,
            "per kernel us": per_kernel_us(m, k),
            "GPU per kernel us": (busy * 1e3 / kernels_run if busy and kernels_run
                                  else number_or_none(m.launches.kernel_us)),
            "host launches": number_or_none(m.launches.host_launches_per_step),
            "graph launches": number_or_none(m.launches.graph_launches_per_step),
        })
    return pd.DataFrame(rows).sort_values(["batch (elements)", "mode"]).reset_index(drop=True)


def estimate(kernels: int, launch_us: float, kernel_us: float) -> tuple[float, float]:
    """The note's model: (eager us, one graph us) for a chain of `kernels`."""
    return kernels * max(launch_us, kernel_us), kernels * kernel_us + launch_us


def hand_calculation(points: Sequence[Measurement], header: RunHeader) -> pd.DataFrame:
    """Per batch size with an eager point: the note's estimate from this run's measured
    launch cost (the host probe) and kernel time (eager's GPU busy time per kernel),
    beside the measured eager and cuda-graph steps."""
    k = chain_kernels(header)
    if k is None or not points:
        return pd.DataFrame()
    at: dict[int, dict[str, Measurement]] = {}
    for m in points:
        if m.status == "ok":
            at.setdefault(m.batch_size, {})[m.mode] = m
    rows = []
    for batch, by_mode in sorted(at.items()):
        if "eager" not in by_mode:
            continue
        eager = by_mode["eager"]
        launch = number_or_none(eager.intervals.launch_us)
        busy = number_or_none(eager.launches.gpu_busy_ms)
        n = number_or_none(eager.launches.gpu_kernels_per_step)
        if launch is None or not busy or not n:
            continue
        kernel = busy * 1e3 / n
        est_eager, est_graph = estimate(k, launch, kernel)
        graph_ms = (number_or_none(by_mode["cuda-graph"].timing.step_ms)
                    if "cuda-graph" in by_mode else None)
        # Headers in the note's letters (HAND_LEGEND says them): the whole table fits the
        # page at 1280 px; in words, eight columns did not.
        rows.append({"batch (elements)": int(batch), "N": k, "L": launch, "K": kernel,
                     "eager: N x max(L, K)": est_eager,
                     "eager measured": (number_or_none(eager.timing.step_ms) or 0) * 1e3,
                     "graph: N x K + L": est_graph,
                     "graph measured": graph_ms * 1e3 if graph_ms else None})
    return pd.DataFrame(rows)


HAND_LEGEND = ("N: kernels a step; L: the host's launch cost, measured (us); K: one "
               "kernel's time, measured (us); the estimates and the measured steps in us.")


def note_text() -> str:
    n, launch, kernel = NOTE_EXAMPLE
    eager, graph = estimate(n, launch, kernel)
    return (f"The interview note's hand calculation: {n} kernels, {launch:g} us per launch, "
            f"{kernel:g} us per kernel: about {eager:g} us eager (N x launch) and "
            f"{graph:g} us under one graph (N x kernel + one launch). Below, the same sums "
            "with this run's measured launch cost (the host probe, one trivial kernel "
            "launch) and kernel time (eager's GPU busy time per kernel), beside what the "
            "steps measured. " + HAND_LEGEND)


def compare_per_kernel(points: Mapping[int, Sequence[Measurement]],
                       headers: Sequence[RunHeader]) -> pd.DataFrame:
    """Compare: per-kernel figures of every kernel-chain run side by side (published
    V100 figures next to measured points)."""
    names = short_names(headers)
    frames = []
    for header in headers:
        table = per_kernel_table(points.get(header.id, []), header)
        if table.empty:
            continue
        table.insert(0, "run", names[int(header.id)])
        table.insert(1, "source", header.source)
        frames.append(table)
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    # A figure a run lacks (a published row has no measured step) is unknown, shown as a
    # blank cell: a column of numbers and None reads "None" in the table otherwise.
    for col in out.columns:
        known = out[col].dropna()
        if all(number_or_none(v) is not None for v in known):  # an empty column too
            out[col] = pd.to_numeric(out[col], errors="coerce")
    return out


def has_published_raw_cuda(headers: Sequence[RunHeader]) -> bool:
    """A published kernel-chain run (raw CUDA, no PyTorch) is among these runs."""
    return any(h.workload == "kernel-chain" and h.source == "published" for h in headers)


# The train-step tables' memory columns under the names the Points view gives the same
# figures (contract/metrics.py's titles): one name a figure on every page.
POOL_COL, PEAK_COL, KEPT_COL = (title("graph_pool_bytes"), title("peak_allocated_bytes"),
                                title("reserved_delta_bytes"))


def train_memory_table(points: Sequence[Measurement], header: RunHeader) -> pd.DataFrame:
    """train-step: each mode's memory (MiB) and whether its parameters match eager's after
    the step. reduce-overhead's trees are train_trees_table's."""
    if header.workload != "train-step" or not points:
        return pd.DataFrame()
    rows = [{"batch": int(m.batch_size), "mode": m.mode,
             POOL_COL: _mib(m.memory.graph_pool_bytes),
             PEAK_COL: _mib(m.memory.peak_allocated_bytes),
             KEPT_COL: _mib(m.memory.reserved_delta_bytes),
             "params match eager": m.setup.correct}
            for m in (p for p in points if p.status == "ok")]
    return pd.DataFrame(rows).sort_values(["batch", "mode"]).reset_index(drop=True)


def train_trees_table(points: Sequence[Measurement], header: RunHeader) -> pd.DataFrame:
    """train-step, the points whose CUDA Graph trees or separate captures were recorded
    (reduce-overhead's): the graphs the trees recorded and their one shared pool, beside
    the forward and backward graphs captured separately, each in its own pool (MiB)."""
    if header.workload != "train-step" or not points:
        return pd.DataFrame()
    rows = []
    for m in (p for p in points if p.status == "ok"):
        # The JSON the runner stored for the trees (the edge: db's JSON column).
        trees, sep = _mapping(m.setup.cudagraph_trees), m.memory.separate_graphs
        if "graphs" not in trees and not sep:
            continue
        rows.append({
            "batch": int(m.batch_size), "mode": m.mode,
            "graphs recorded": (f"{trees.get('forward', 0)} forward + "
                                f"{trees.get('backward', 0)} backward, "
                                f"{_count(trees.get('pools', 0), 'pool')}"
                                if "graphs" in trees else None),
            POOL_COL: _mib(m.memory.graph_pool_bytes),
            "forward alone (MiB)": _mib(sep.forward_pool_bytes) if sep else None,
            "backward alone (MiB)": _mib(sep.backward_pool_bytes) if sep else None,
            "separate sum (MiB)": _mib(sep.sum_bytes) if sep else None})
    if not rows:
        return pd.DataFrame()
    out = pd.DataFrame(rows).sort_values(["batch", "mode"]).reset_index(drop=True)
    # One mode (reduce-overhead's, as the section's caption says): a column repeating it
    # would push the table past the page at 1280 px.
    return out.drop(columns="mode") if out["mode"].nunique() == 1 else out


def _count(n: object, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def train_pool_frame(points: Sequence[Measurement], header: RunHeader
                     ) -> pd.DataFrame | None:
    """reduce-overhead per batch size: the trees' one shared pool beside the forward and
    backward graphs captured separately, in MiB (pages/charts/workload_charts.py stacks
    them): what sharing the pool saves. None where no point recorded the separate
    captures."""
    if header.workload != "train-step" or not points:
        return None
    rows = []
    for m in (p for p in points if p.mode == "reduce-overhead" and p.status == "ok"):
        sep = m.memory.separate_graphs
        pool = number_or_none(m.memory.graph_pool_bytes)
        fwd = number_or_none(sep.forward_pool_bytes) if sep else None
        bwd = number_or_none(sep.backward_pool_bytes) if sep else None
        if pool is None or fwd is None or bwd is None:
            continue
        b = int(m.batch_size)
        rows += [{"batch": b, "how": "trees: one shared pool", "part": "shared pool",
                  "MiB": pool / MIB},
                 {"batch": b, "how": "separate pools", "part": "forward alone",
                  "MiB": fwd / MIB},
                 {"batch": b, "how": "separate pools", "part": "backward alone",
                  "MiB": bwd / MIB}]
    return pd.DataFrame(rows) if rows else None


@dataclass(frozen=True)
class Section:
    title: str
    caption: str
    table: pd.DataFrame
    pools: pd.DataFrame | None = None  # train_pool_frame's, drawn beside the table


def run_sections(header: RunHeader, points: Sequence[Measurement]) -> list[Section]:
    """The sections the Run page shows for these workloads."""
    out = []
    kernels = per_kernel_table(points, header)
    if not kernels.empty:
        caption = (f"A step is {chain_kernels(header)} dependent elementwise kernels on "
                   "batch elements; per kernel = step / kernels. "
                   + (RAW_CUDA_NOTE if header.source == "published" else
                      "NVIDIA's V100 reference (a published run) measured raw CUDA "
                      "launches: " + RAW_CUDA_NOTE.split(": ", 1)[1]))
        out.append(Section("Per kernel", caption, kernels))
        calc = hand_calculation(points, header)
        if not calc.empty:
            out.append(Section("The hand calculation, measured", note_text(), calc))
    memory = train_memory_table(points, header)
    if not memory.empty:
        out.append(Section("Training memory", "Graph pool, peak during a step and what stays "
                           "kept in the allocator per mode, and whether the parameters "
                           "match eager's after the step.", memory,
                           train_pool_frame(points, header)))
    trees = train_trees_table(points, header)
    if not trees.empty:
        out.append(Section("Graph trees against separate captures", "reduce-overhead's "
                           "CUDA Graph trees keep forward and backward graphs in one shared "
                           "pool; the forward and backward graphs captured separately, each "
                           "in its own pool, are the reference for what that sharing saves "
                           "(captured from eager kernels after the mode's own figures were "
                           "taken).", trees))
    return out
