"""What a mode costs in memory, and what it buys for it: pure pandas.

A mode's total is graph pool + peak allocated. "Peak allocated" alone hides the private
pool a CUDA graph keeps reserved (reduce-overhead looked cheapest at 8 MiB while holding
34-94 MiB of pool), so the two are shown stacked and traded against the speedup:
extra MiB over eager at the same batch size against speedup over eager.

The total is an upper bound of what a mode holds: tensors that live in the pool while the
peak is taken count in both parts. It never understates a cost, which is the error that
misled readers.

This "extra over eager" is the tradeoff chart's axis, named there. The memory cost a run
is quoted by (headline, board, reports) is the graph pool alone, as its summary defines
it (contract/run_summary.py, MEMORY_COST_LABEL).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contract.metrics import BYTES_PER_MIB
from contract.vocab import CUDA_GRAPH_MODES
from pages.logic import analysis

COST_COLUMNS = ["run_id", "mode", "batch_size", "pool_mib", "peak_mib", "total_mib",
                "extra_mib", "speedup", "speedup_ci_low", "speedup_ci_high", "pareto"]
PARTS = {"pool_mib": "Graph pool", "peak_mib": "Peak allocated"}


def memory_cost(points: pd.DataFrame) -> pd.DataFrame:
    """Per (run, mode, batch) with a memory figure: graph pool and peak allocated (MiB),
    their total, the extra over eager's total at the same batch (NaN without an eager
    figure), the speedup over eager with its interval, and `pareto`: no other mode at
    that batch is at least as fast for at most as much memory (and better on one).
    A missing graph pool counts as 0 only for eager and compile, which capture no graph."""
    ok = analysis.usable(points)
    if ok.empty:
        return pd.DataFrame(columns=COST_COLUMNS)
    peak = analysis.numeric_column(ok, "peak_allocated_bytes") / BYTES_PER_MIB
    pool = analysis.numeric_column(ok, "graph_pool_bytes") / BYTES_PER_MIB
    pool = pool.where(pool.notna() | ~ok["mode"].isin(("eager", "compile")) | peak.isna(), 0.0)
    df = ok[["run_id", "mode", "batch_size"]].assign(pool_mib=pool, peak_mib=peak)
    df["total_mib"] = df["pool_mib"] + df["peak_mib"]
    df = df.dropna(subset=["total_mib"])
    if df.empty:
        return pd.DataFrame(columns=COST_COLUMNS)
    eager = (df[df["mode"] == "eager"].set_index(["run_id", "batch_size"])["total_mib"]
             .rename("eager_mib"))
    df = df.join(eager, on=["run_id", "batch_size"])
    df["extra_mib"] = df["total_mib"] - df["eager_mib"]
    sp = analysis.speedups(points).set_index(["run_id", "mode", "batch_size"])[
        ["speedup", "speedup_ci_low", "speedup_ci_high"]]
    df = df.join(sp, on=["run_id", "mode", "batch_size"])
    df["pareto"] = _pareto(df)
    return analysis.in_mode_order(df[COST_COLUMNS])


def _pareto(df: pd.DataFrame) -> pd.Series:
    """True where no other mode of the same (run, batch) dominates: speedup >= and extra
    MiB <= with one of them strictly better. Points without both figures are never best.
    One self-join per call (each point against the other modes of its run and batch), so
    a page with many points does not loop row by row."""
    known_mask = (df["speedup"].notna() & df["extra_mib"].notna()).to_numpy()
    positions = np.flatnonzero(known_mask)
    cols = ["run_id", "batch_size", "speedup", "extra_mib"]
    known = df.loc[known_mask, cols].assign(_pos=positions)
    pairs = known.merge(known, on=["run_id", "batch_size"], suffixes=("", "_o"))
    pairs = pairs[pairs["_pos"] != pairs["_pos_o"]]
    dominates = ((pairs["speedup_o"] >= pairs["speedup"])
                 & (pairs["extra_mib_o"] <= pairs["extra_mib"])
                 & ((pairs["speedup_o"] > pairs["speedup"])
                    | (pairs["extra_mib_o"] < pairs["extra_mib"])))
    best = known_mask.copy()
    best[pairs.loc[dominates, "_pos"].to_numpy(dtype=int)] = False
    return pd.Series(best, index=df.index)


def stacked(cost: pd.DataFrame) -> pd.DataFrame:
    """The long frame a stacked bar reads: one row per (mode, batch, part) with its MiB,
    and the total beside it for the tooltip."""
    if cost.empty:
        return pd.DataFrame(columns=["mode", "batch_size", "part", "MiB", "total_mib"])
    long = cost.melt(id_vars=["mode", "batch_size", "total_mib"], value_vars=list(PARTS),
                     var_name="part", value_name="MiB").dropna(subset=["MiB"])
    long["part"] = long["part"].map(PARTS)
    return long.reset_index(drop=True)


def missing_reason(points: pd.DataFrame, device: str | None) -> str:
    """Why a run's Memory view has no chart, in one line. Memory is read from the CUDA
    allocator, so a CPU run (`device`, the run's environment's) has none to show: a blank
    view left the reader guessing (issue 37)."""
    if device == "cpu":
        graph = points[points["mode"].isin(CUDA_GRAPH_MODES)]
        refused = sorted(set(graph.loc[graph["status"] == "unsupported", "mode"]))
        said = (f" ({' and '.join(refused)} recorded as unsupported here)" if refused
                else "")
        return ("No memory figures: this run had no CUDA. Memory is read from the CUDA "
                "allocator (the graph pool kept after capture, the peak allocated); on a "
                "CPU there is no graph pool, and the graph modes are unsupported"
                f"{said}.")
    if analysis.usable(points).empty:
        return "No memory figures: no point of this run ended ok (see Points)."
    return ("No memory figures: its points recorded none (a run from before memory was "
            "measured, or a published figure without it).")
