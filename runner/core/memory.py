"""Device memory around one point: allocator snapshots attributed to pools.

Graph memory does not show in allocated bytes once capture ends: it stays reserved in the
graph's private pool. torch.cuda.memory_snapshot() tags each segment with its
segment_pool_id; (0, 0) is the default pool, anything else a private (graph) pool. Sum
segment sizes by pool. torch 2.14 has reserved_bytes_by_private_pools stats, 2.11 does
not, so the snapshot is the portable way.

Three snapshots per mode (docs/MEASUREMENT.md, "Memory"): M0 before setup, M1 after setup,
M2 after warm-up, each after a sync. Imports torch lazily (only ever called on a CUDA device).
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


def figures(m0: MemState, m1: MemState, m2: MemState, peak: int) -> Memory:
    """A point's memory record from the three snapshots.

    graph_pool_bytes counts pools that did not exist at M0 only, so a pool some earlier
    point failed to release is never charged to this one. Taken at M2: a pool can still
    grow on the first replays.
    """
    old = set(m0.pools)
    return Memory(
        graph_pool_bytes=max(m1.private_bytes(old), m2.private_bytes(old)),
        peak_allocated_bytes=peak, reserved_delta_bytes=m1.reserved - m0.reserved,
        m0=m0.snapshot(), m1=m1.snapshot(), m2=m2.snapshot(),
        device_used_delta_bytes=m1.device_used - m0.device_used,
        leftover_private_pools_at_m0=len(old - {DEFAULT_POOL}))


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
