"""Energy per step checked against an independent reading (issue 38, item 4).

For each point (mlp at batch 1, 64 and 8192, and an hf-causal-lm decode step), in one
process:

1. the runner's own figures: run_sweep over the point's eager and cuda-graph modes at the
   standard preset, energy on (runner/core/energy.py: windows' power x the timed step);
2. an independent reading: a long loop of the same step (eager calls, or the replay of a
   manual torch.cuda.CUDAGraph) for at least --loop-s seconds (3 s), in blocks of about
   50 ms with one sync each (so the step runs at its free-running speed: a sync every
   50 ms costs nothing), read at the counter's ticks: the loop polls NVML after each
   block until the value changes, counts steps from that read, runs --loop-s without
   reading, then polls until the next change. Energy per step = the counter's span over
   the steps between the two detecting reads; each edge is seen at most one block late
   (~50 ms in 3 s: < 2%, mean zero).

The loop runs twice, before and after the runner's figures, and its reading is the mean
of the two: the GPU's power drifts as it warms (on the H200 the 8192 point's loop read
476 W, then 505 W a few seconds later), so a reading taken only after the runner's would
count that drift against it. The two loops' spread is printed ("drift").

Where ML.ENERGY's Zeus is installed, a third reading: ZeusMonitor's begin/end window
around 0.2 s of the same step (about the time the runner's windows give a mode), printed
as its difference from the loop ("zeus diff"), for docs/MEASUREMENT.md's comparison.

The two agree when |runner / loop - 1| is within 5% where the GPU is busy >= 80% of the
step (the runner's gpu_busy_ms over step_ms) and within 10% elsewhere. The loop's own
step (its seconds over its steps) is printed beside the runner's timed step: at
launch-bound points the host sets the step, and an hour's host state can move both.

usage: python bench/energy_check.py [--loop-s 3] [--out bench/results/h200-energy-check.txt]
       [--points mlp:1,mlp:64,mlp:8192,hf:1] [--hf-model small-llama]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contract.specs import check_sweep  # noqa: E402
from runner.core.energy_counter import open_counter  # noqa: E402
from runner.core.modes import warm_up_on_side_stream  # noqa: E402
from runner.core.sweep import SweepSpec, run_sweep  # noqa: E402
from runner.core.workloads import resolve  # noqa: E402
from runner.ops.sinks import MemorySink  # noqa: E402

BLOCK_S = 0.05
BUSY = 0.8  # GPU busy share of the step above which the 5% bar applies
TIGHT, LOOSE = 0.05, 0.10


def workload_of(kind: str, hf_model: str):
    if kind == "mlp":
        return "mlp", {}
    return "hf-causal-lm", {"model": hf_model, "phase": "decode"}


def runner_figures(name: str, params: dict, batch: int) -> dict:
    """The runner's eager and cuda-graph points of one batch size, energy on."""
    spec = check_sweep(SweepSpec(workload=name, params={k: str(v) for k, v in params.items()},
                                 batch_sizes=(batch,), modes=("eager", "cuda-graph"),
                                 device="cuda", timing="standard", energy=True))
    keep = MemorySink()
    run_sweep(spec, keep)
    return {m.mode: m for m in keep.measurements}


def loop_reading(step, counter, loop_s: float, sync) -> dict:
    """Energy per step of `step` over a loop of at least loop_s, between counter ticks."""
    n = 1
    t0 = time.perf_counter()  # block size: about BLOCK_S of steps
    for _ in range(3):
        step()
    sync()
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        if time.perf_counter() - t0 >= BLOCK_S or n >= 1 << 20:
            break
        n *= 2

    def block() -> int:
        for _ in range(n):
            step()
        sync()
        return n

    def until_change() -> tuple[float, float, int]:
        v0, steps = counter.read_mj(), 0
        while True:
            steps += block()
            v = counter.read_mj()
            if v != v0:
                return v, time.perf_counter(), steps

    e0, t0, _ = until_change()
    steps = 0
    while time.perf_counter() - t0 < loop_s:
        steps += block()
    e1, t1, tail = until_change()
    steps += tail
    return {"mj_per_step": (e1 - e0) / steps, "power_w": (e1 - e0) / 1e3 / (t1 - t0),
            "step_ms": (t1 - t0) * 1e3 / steps, "seconds": t1 - t0, "steps": steps}


ZEUS_S = 0.2  # about the runner's windows' time per mode at the standard preset


def zeus_reading(step, sync, seconds: float = ZEUS_S) -> float | None:
    """Energy per step from ML.ENERGY's Zeus (`pip install zeus`): its begin/end window
    around `seconds` of the step (Zeus syncs at both ends), for the comparison
    docs/MEASUREMENT.md draws ("Energy"). None where zeus is not installed."""
    global _ZEUS
    try:
        from zeus.monitor import ZeusMonitor
    except ImportError:
        return None
    import torch

    if _ZEUS is None:
        _ZEUS = ZeusMonitor(gpu_indices=[torch.cuda.current_device()], cpu_indices=[])
    sync()
    _ZEUS.begin_window("lb")
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        step()
        n += 1
    m = _ZEUS.end_window("lb")
    return m.total_energy * 1e3 / n


_ZEUS = None


def mean_reading(before: dict, after: dict) -> dict:
    """The two loops' mean, and how far the second moved from the first (energy per step)."""
    out = {k: (before[k] + after[k]) / 2 for k in ("mj_per_step", "power_w", "step_ms")}
    out["drift"] = after["mj_per_step"] / before["mj_per_step"] - 1
    zeus = [r["zeus"] for r in (before, after) if r.get("zeus") is not None]
    out["zeus"] = sum(zeus) / len(zeus) if zeus else None
    return out


def independent(name: str, params: dict, batch: int, counter, loop_s: float) -> dict:
    import torch

    w = resolve(name, {k: str(v) for k, v in params.items()})
    torch.manual_seed(0)
    model, make_input = w.build("cuda")
    if hasattr(model, "prepare_batch"):
        model.prepare_batch(batch)
    x = make_input(batch, torch.Generator().manual_seed(batch))
    out = {}
    with torch.no_grad():
        out["eager"] = loop_reading(lambda: model(x), counter, loop_s, torch.cuda.synchronize)
        out["eager"]["zeus"] = zeus_reading(lambda: model(x), torch.cuda.synchronize)
        warm_up_on_side_stream(model, x)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            model(x)
        out["cuda-graph"] = loop_reading(g.replay, counter, loop_s, torch.cuda.synchronize)
        out["cuda-graph"]["zeus"] = zeus_reading(g.replay, torch.cuda.synchronize)
    torch.cuda.synchronize()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loop-s", type=float, default=3.0)
    ap.add_argument("--points", default="mlp:1,mlp:64,mlp:8192,hf:1")
    ap.add_argument("--hf-model", default="small-llama")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    counter = open_counter("cuda")
    if isinstance(counter, str):
        print(f"no energy counter: {counter}", file=sys.stderr)
        return 2
    rows, failed = [], 0
    for item in a.points.split(","):
        kind, b = item.split(":")
        name, params = workload_of(kind, a.hf_model)
        batch = int(b)
        before = independent(name, params, batch, counter, a.loop_s)
        ms = runner_figures(name, params, batch)
        after = independent(name, params, batch, counter, a.loop_s)
        for mode in ("eager", "cuda-graph"):
            m, lp = ms[mode], mean_reading(before[mode], after[mode])
            e = m.energy
            if e.energy_mj_per_step is None:
                rows.append((kind, batch, mode, "-", "-", "-", "-", "-", "-", "-", "-", "-",
                             f"no figure: {e.unavailable_reason or m.message}"))
                failed += 1
                continue
            busy = (m.launches.gpu_busy_ms or 0) / m.timing.step_ms if m.timing.step_ms else 0
            bar = TIGHT if busy >= BUSY else LOOSE
            off = e.energy_mj_per_step / lp["mj_per_step"] - 1
            ok = abs(off) <= bar
            failed += not ok
            zeus = "-" if lp["zeus"] is None else f"{lp['zeus'] / lp['mj_per_step'] - 1:+.1%}"
            rows.append((kind, batch, mode, f"{e.energy_mj_per_step:.3f}",
                         f"{lp['mj_per_step']:.3f}", f"{off:+.1%}", f"{bar:.0%}",
                         f"{m.timing.step_ms:.4f}", f"{lp['step_ms']:.4f}",
                         f"{e.avg_power_w:.1f}/{lp['power_w']:.1f}", f"{lp['drift']:+.1%}",
                         zeus, f"busy {busy:.0%} {'ok' if ok else 'MISS'}"))
    head = ("workload", "batch", "mode", "runner mJ", "loop mJ", "diff", "bar",
            "runner ms", "loop ms", "W runner/loop", "drift", "zeus diff", "verdict")
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(v).rjust(w) for v, w in zip(r, widths, strict=True))
             for r in [head, *rows]]
    import torch

    text = (f"GPU {torch.cuda.get_device_name(0)}, torch {torch.__version__}\n"
            + "\n".join(lines) + f"\n{len(rows) - failed} of {len(rows)} within their bar"
            f" (zeus diff: ZeusMonitor's begin/end window of {ZEUS_S} s of the same step "
            "against the loop, where zeus is installed)")
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
