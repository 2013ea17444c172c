"""What a mode keeps on the GPU: each mode set up alone from a clean state (issue 44).

The question is "what does this mode cost me in memory?", so the answer is what running
the mode keeps on the GPU beyond what eager keeps at the same batch size. Measured after
the point's rounds, energy and profile, one mode at a time (runner/core/point.py,
memory_pass): from a clean state (Dynamo, graph trees and their pools, cuBLAS workspaces
and the allocator's cache all released; only the model and its inputs allocated) the
mode is set up, stepped, its cached free blocks released, and the allocator read; then
it is torn down to the clean state again before the next mode.

Why alone and not around each mode's setup while the others live (the method before
version 7): the modes of a batch size are prepared side by side for the interleaved
rounds, so each setup started with the earlier modes' pools and workspaces alive and
the figures mixed them: on the H100 and the H200 a cuda-graph point always started with
reduce-overhead's pool, and a cold compile's autotuning buffer (Inductor's benchmarker
allocates the L2's size: 50 MiB on the H100, 60 on the H200) landed in reduce-overhead's
pool in some runs and not others (34 or 84-94 MiB for one point;
bench/results/h100-memory-energy-probe.txt). In the pass the compile is warm (the
point's own setup filled Inductor's on-disk cache), so no benchmarking runs.

Graph memory does not show in allocated bytes once capture ends: it stays reserved in
the graph's private pool. torch.cuda.memory_snapshot() tags each segment with its
segment_pool_id; (0, 0) is the default pool, anything else a private (graph) pool. torch
2.14 has per-pool statistics, 2.11 does not, so the snapshot is the portable way. Imports
torch lazily (only ever called on a CUDA device).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contract.measurement import Memory, MemorySnapshot

DEFAULT_POOL = (0, 0)


@dataclass(frozen=True)
class MemState:
    allocated: int
    reserved: int
    device_used: int  # total - free from the driver: includes graph objects, workspaces
    pools: dict[tuple[int, int], int] = field(default_factory=dict)  # pool -> reserved
    private_segments: tuple[int, ...] = ()  # sizes of private-pool segments (diagnosis)

    def private_bytes(self, exclude: set | frozenset = frozenset()) -> int:
        return sum(b for p, b in self.pools.items() if p != DEFAULT_POOL and p not in exclude)

    def snapshot(self) -> MemorySnapshot:
        """The figures a point keeps of this state."""
        return MemorySnapshot(
            allocated_bytes=self.allocated, reserved_bytes=self.reserved,
            device_used_bytes=self.device_used, private_pool_bytes=self.private_bytes(),
            private_pools=len([p for p in self.pools if p != DEFAULT_POOL]),
            private_segments=list(self.private_segments))


def pool_bytes(snapshot: list[dict]) -> dict[tuple[int, int], int]:
    """Reserved bytes per pool id from torch.cuda.memory_snapshot() segments."""
    pools: dict[tuple[int, int], int] = {}
    for seg in snapshot:
        pid = seg.get("segment_pool_id", DEFAULT_POOL)
        pid = tuple(pid) if isinstance(pid, (list, tuple)) else DEFAULT_POOL
        pools[pid] = pools.get(pid, 0) + int(seg.get("total_size", 0))
    return pools


def state(device: str) -> MemState:
    import torch

    torch.cuda.synchronize(device)
    free, total = torch.cuda.mem_get_info(device)
    snap = torch.cuda.memory_snapshot()
    private = tuple(sorted(int(s.get("total_size", 0)) for s in snap
                           if tuple(s.get("segment_pool_id") or DEFAULT_POOL) != DEFAULT_POOL))
    return MemState(allocated=torch.cuda.memory_allocated(device),
                    reserved=torch.cuda.memory_reserved(device),
                    device_used=total - free, pools=pool_bytes(snap),
                    private_segments=private)


def reset_peak(device: str) -> None:
    import torch

    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)


def peak_allocated(device: str) -> int:
    import torch

    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device))


@dataclass(frozen=True)
class Kept:
    """One mode alone: the clean state it started from, the state once set up and stepped
    (cached free blocks released: only what the mode holds stays reserved), the
    allocator's peak during its steps, and whether its compile missed Inductor's cache."""
    m0: MemState
    m1: MemState
    peak: int
    compile_cold: bool = False

    @property
    def reserved(self) -> int:
        """Everything the mode keeps in the allocator over its clean start."""
        return self.m1.reserved - self.m0.reserved


def clean(device: str) -> MemState:
    """The allocator with nothing cached: workspaces dropped, free blocks released."""
    import torch

    torch.cuda.synchronize(device)
    clear_cublas_workspaces()
    torch.cuda.empty_cache()
    return state(device)


def released(device: str) -> MemState:
    """The state with the cache's free blocks released: what is still reserved is held
    (a live graph's private pool keeps its segments whatever is free in them)."""
    import torch

    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    return state(device)


def figures(k: Kept, base: MemState, eager: int | None) -> Memory:
    """A point's memory record from its mode's pass. `base`: the pass's first clean state
    (a later mode's clean start that allocates more, or holds a private pool, is a
    leftover); `eager`: eager's kept bytes at this batch size (None: no cost)."""
    old = set(k.m0.pools)
    return Memory(
        graph_pool_bytes=k.m1.private_bytes(old), peak_allocated_bytes=k.peak - k.m0.allocated,
        reserved_delta_bytes=k.reserved,
        memory_cost_bytes=None if eager is None else k.reserved - eager,
        m0=k.m0.snapshot(), m1=k.m1.snapshot(),
        device_used_delta_bytes=k.m1.device_used - k.m0.device_used,
        leftover_private_pools_at_m0=len(old - {DEFAULT_POOL}),
        leftover_bytes_at_m0=k.m0.allocated - base.allocated,
        eager_reserved_delta_bytes=eager, memory_compile_cold=k.compile_cold)


def clear_cublas_workspaces() -> None:
    """cuBLAS keeps one workspace (~32 MiB on Hopper) per handle and stream, allocated
    from whatever pool was current: one made during a capture pins that graph's pool
    after the graph is gone, and one left from an earlier point changes what the next
    point's setup allocates. Seen on the H200: a leftover 34 MiB private pool at the
    next point's M0, and graph pools of 34 or 94 MiB for the same shape by history."""
    import torch

    fn = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if fn is not None:
        fn()
