"""Why memory and energy figures move (issue 44): a diagnosis on the GPU, before any fix.

Three questions, each printed as a short table:

1. memory  Who allocates the extra 50-60 MiB that a reduce-overhead pool sometimes keeps
           (84/94 MiB against 34) and that compile sometimes adds to reserved memory?
           A fresh process with an empty Inductor cache (cold) and one with the same cache
           (warm) each compile the `mlp` at batch 1 under torch's memory history, then list
           every segment over 1 MiB with the Python frames that allocated it.
2. counter How NVML's total-energy counter answers a step of load: a reader thread polls
           it while the GPU goes idle -> mlp 8192 eager (free-running) -> idle; the power
           per 50 ms after the load starts and stops shows the counter's lag and ramp.
3. windows The runner's energy windows (measure_energy, standard preset) against a
           threaded reader with a lead-in, Zeus's begin/end window (if zeus is
           importable) and the long loop of bench/energy_check.py, at mlp batch 1 and
           8192. (Its first run, bench/results/h100-memory-energy-probe.txt, was at tree
           582829d, when the runner's windows were the synchronised ones that issue 44
           replaced; "runner standard" there is that method.)

usage (GPU host): python bench/memory_energy_probe.py [--out DIR] [--part memory|counter|windows]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MiB = 1 << 20


# --- 1. memory -----------------------------------------------------------------------------

def memory_child() -> None:
    """In a child process: compile then reduce-overhead on the mlp at batch 1 under the
    memory history; print one JSON line with every segment over 1 MiB."""
    import torch

    from runner.core.memory import clear_cublas_workspaces, state
    from runner.core.workloads import resolve

    torch.cuda.memory._record_memory_history(max_entries=100000)
    w = resolve("mlp", {})
    torch.manual_seed(0)
    model, make_input = w.build("cuda")
    x = make_input(1, torch.Generator().manual_seed(1))
    out = {}
    with torch.no_grad():
        model(x)
        torch.cuda.synchronize()
        clear_cublas_workspaces()
        s0 = state("cuda")
        fn = torch.compile(model, dynamic=False)
        for _ in range(2):
            fn(x)
        s1 = state("cuda")
        clear_cublas_workspaces()
        s1b = state("cuda")
        fr = torch.compile(model, mode="reduce-overhead", dynamic=False)
        for _ in range(3):
            fr(x)
        s2 = state("cuda")
    out["reserved_mib"] = [s.reserved / MiB for s in (s0, s1, s1b, s2)]
    out["private_mib"] = [s.private_bytes() / MiB for s in (s0, s1, s1b, s2)]
    snap = torch.cuda.memory._snapshot()
    segs = []
    for seg in snap["segments"]:
        if seg["total_size"] < MiB:
            continue
        frames = []
        for b in seg.get("blocks", []):
            for f in b.get("frames", []):
                name = f"{Path(f['filename']).name}:{f['line']} {f['name']}"
                if any(k in f["filename"] for k in ("_inductor", "triton", "runner",
                                                    "benchmark", "cudagraph")):
                    frames.append(name)
            if frames:
                break
        segs.append({"pool": list(seg.get("segment_pool_id", (0, 0))),
                     "mib": seg["total_size"] / MiB,
                     "active_mib": seg.get("active_size", 0) / MiB,
                     "frames": frames[:6]})
    allocs = []
    for ev in snap.get("device_traces", [[]])[0]:
        if ev["action"] == "segment_alloc" and ev["size"] >= MiB:
            fr = [f"{Path(f['filename']).name}:{f['line']} {f['name']}"
                  for f in ev.get("frames", [])
                  if any(k in f["filename"] for k in ("_inductor", "triton", "runner",
                                                      "benchmark", "cudagraph"))]
            allocs.append({"mib": ev["size"] / MiB, "frames": fr[:6]})
    out["segments"], out["segment_allocs"] = segs, allocs
    print("PROBE " + json.dumps(out), flush=True)


def memory_part(out_dir: Path) -> list[str]:
    cache = tempfile.mkdtemp(prefix="lb-inductor-")
    lines = []
    for label in ("cold", "warm"):
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, __file__, "--memory-child"], env=env,
                           capture_output=True, text=True, timeout=240)
        got = [ln for ln in p.stdout.splitlines() if ln.startswith("PROBE ")]
        (out_dir / f"memory-{label}.log").write_text(p.stdout[-20000:] + p.stderr[-20000:])
        if not got:
            lines.append(f"memory {label}: rc={p.returncode} no result: "
                         f"{(p.stderr.strip().splitlines() or ['?'])[-1][:200]}")
            continue
        doc = json.loads(got[-1][6:])
        (out_dir / f"memory-{label}.json").write_text(json.dumps(doc, indent=1))
        lines.append(f"memory {label} ({time.perf_counter() - t0:.0f} s): reserved MiB "
                     f"before/after compile/after clear/after reduce-overhead "
                     f"{[round(v, 1) for v in doc['reserved_mib']]}, private "
                     f"{[round(v, 1) for v in doc['private_mib']]}")
        for a in doc["segment_allocs"]:
            lines.append(f"   alloc {a['mib']:7.1f} MiB  {' <- '.join(a['frames'][:4])}")
    # The runner itself, cold then warm: the points' memory figures.
    for label in ("cold", "warm"):
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache + "-sweep",
               "PYTHONPATH": str(ROOT)}
        bundle = out_dir / f"sweep-{label}.json"
        p = subprocess.run([sys.executable, "-m", "runner", "sweep", "--workload", "mlp",
                            "--batch-sizes", "1,8", "--timing", "quick", "--processes", "1",
                            "--no-energy", "--no-db", "--out", str(bundle)], env=env,
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
        if not bundle.exists():
            lines.append(f"sweep {label}: rc={p.returncode} "
                         f"{(p.stderr.strip().splitlines() or ['?'])[-1][:200]}")
            continue
        doc = json.loads(bundle.read_text())
        for m in doc["measurements"]:
            d = m.get("details") or {}
            lines.append(
                f"sweep {label} b{m['batch_size']:<3} {m['mode']:16} pool "
                f"{(m.get('graph_pool_bytes') or 0) / MiB:6.1f} reserved_delta "
                f"{(m.get('reserved_delta_bytes') or 0) / MiB:6.1f} peak "
                f"{(m.get('peak_allocated_bytes') or 0) / MiB:6.1f} leftover "
                f"{d.get('leftover_private_pools_at_m0')} used_delta "
                f"{(d.get('device_used_delta_bytes') or 0) / MiB:6.1f}")
    return lines


# --- 2. the counter's answer to a step of load ---------------------------------------------

class Reader(threading.Thread):
    """Polls NVML's energy counter as fast as it answers; keeps every change as
    (start of the read before, end of the detecting read, value)."""

    def __init__(self, nvml, handle):
        super().__init__(daemon=True)
        self.nvml, self.h = nvml, handle
        self.changes: list[tuple[float, float, float]] = []
        self.reads = 0
        self.read_s = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        last, t_prev = None, None
        while not self.stop.is_set():
            t0 = time.perf_counter()
            v = float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.h))
            t1 = time.perf_counter()
            self.reads += 1
            self.read_s += t1 - t0
            if last is not None and v != last:
                self.changes.append((t_prev, t1, v))
            last, t_prev = v, t0


def _nvml():
    import pynvml

    from runner.core.energy_counter import open_counter

    counter = open_counter("cuda")
    if isinstance(counter, str):
        raise SystemExit(counter)
    return pynvml, counter.handle, counter


def _mlp(batch: int):
    import torch

    from runner.core.modes import warm_up_on_side_stream
    from runner.core.workloads import resolve

    torch.manual_seed(0)
    model, make_input = resolve("mlp", {}).build("cuda")
    x = make_input(batch, torch.Generator().manual_seed(batch))
    with torch.no_grad():
        warm_up_on_side_stream(model, x)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            model(x)
    torch.cuda.synchronize()

    def eager():
        with torch.no_grad():
            model(x)
    return {"eager": eager, "cuda-graph": g.replay, "_keep": (model, x, g)}


def counter_part(out_dir: Path) -> list[str]:
    import torch

    nvml, h, _ = _nvml()
    steps = _mlp(8192)
    r = Reader(nvml, h)
    r.start()
    t_idle = time.perf_counter()
    time.sleep(0.6)
    t_load = time.perf_counter()
    while time.perf_counter() - t_load < 1.5:
        for _ in range(4):
            steps["eager"]()
    torch.cuda.synchronize()
    t_stop = time.perf_counter()
    time.sleep(0.8)
    r.stop.set()
    r.join()
    ch = r.changes
    (out_dir / "counter-step.json").write_text(json.dumps(
        {"t_idle": t_idle, "t_load": t_load, "t_stop": t_stop, "changes": ch,
         "reads": r.reads, "read_s": r.read_s}))
    gaps = [b[1] - a[1] for a, b in zip(ch, ch[1:], strict=False)]
    lines = [f"counter: {r.reads} reads, {r.read_s / max(1, r.reads) * 1e3:.2f} ms a read, "
             f"{len(ch)} changes; gap between changes median "
             f"{statistics.median(gaps) * 1e3:.0f} ms"]
    # Power between consecutive changes, stamped by its midpoint, relative to load start/stop.
    rows = []
    for a, b in zip(ch, ch[1:], strict=False):
        mid = (a[1] + b[1]) / 2
        p = (b[2] - a[2]) / 1e3 / (b[1] - a[1])
        rows.append((mid - t_load, mid - t_stop, p))
    for rel_load, rel_stop, p in rows:
        if -0.3 < rel_load < 0.8 or -0.2 < rel_stop < 0.6:
            lines.append(f"   t-load {rel_load * 1e3:+7.0f} ms  t-stop {rel_stop * 1e3:+7.0f} ms"
                         f"  {p:6.1f} W")
    return lines


# --- 3. windows against the long loop --------------------------------------------------------

def threaded_window(step, iters: int, nvml, h, lead_s: float, window_s: float) -> dict:
    """The mode runs with no sync (the GPU fed all along); a reader thread finds the
    counter's changes; the window spans the first change after lead_s to the first
    change window_s after it. Power only."""
    import torch

    torch.cuda.synchronize()
    r = Reader(nvml, h)
    t_start = time.perf_counter()
    r.start()
    e0 = e1 = None
    while e1 is None:
        for _ in range(iters):
            step()
        if e0 is None:
            e0 = next((c for c in r.changes if c[0] >= t_start + lead_s), None)
        if e0 is not None:
            e1 = next((c for c in r.changes if c[0] >= e0[1] + window_s), None)
        if time.perf_counter() - t_start > 5:
            break
    r.stop.set()
    r.join()
    torch.cuda.synchronize()
    if e1 is None:
        return {"power_w": float("nan")}
    t0, t1 = (e0[0] + e0[1]) / 2, (e1[0] + e1[1]) / 2
    return {"power_w": (e1[2] - e0[2]) / 1e3 / (t1 - t0), "seconds": t1 - t0,
            "edge_ms": ((e0[1] - e0[0]) + (e1[1] - e1[0])) * 1e3,
            "wall_s": time.perf_counter() - t_start}


def zeus_window(step, iters: int, seconds: float) -> dict:
    try:
        from zeus.monitor import ZeusMonitor
    except Exception as e:  # noqa: BLE001
        return {"power_w": float("nan"), "error": f"{type(e).__name__}: {e}"[:120]}
    import torch

    global _ZEUS
    if _ZEUS is None:
        _ZEUS = ZeusMonitor(gpu_indices=[torch.cuda.current_device()], cpu_indices=[])
    _ZEUS.begin_window("w")
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(iters):
            step()
    m = _ZEUS.end_window("w")
    return {"power_w": m.total_energy / m.time, "seconds": m.time}


_ZEUS = None


def windows_part(out_dir: Path, batches: list[int]) -> list[str]:
    import torch

    from runner.core.energy import ENERGY_PRESETS, measure_energy
    sys.path.insert(0, str(ROOT / "bench"))
    from energy_check import loop_reading

    nvml, h, counter = _nvml()
    lines = [f"{'batch':>5} {'mode':10} {'method':24} {'W':>7}  detail"]
    doc = {}
    for batch in batches:
        steps = _mlp(batch)
        modes = {k: v for k, v in steps.items() if not k.startswith("_")}
        # iters for ~2 ms (the runner's energy block) and ~10 ms blocks
        iters = {}
        for mode, fn in modes.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(20):
                fn()
            torch.cuda.synchronize()
            per = (time.perf_counter() - t0) / 20
            iters[mode] = max(1, round(0.010 / per))
        res: dict[str, dict[str, list]] = {m: {} for m in modes}

        def add(mode, method, got, res=res):
            res[mode].setdefault(method, []).append(got)

        for mode in modes:
            add(mode, "loop 2 s (before)", loop_reading(modes[mode], counter, 2.0,
                                                        torch.cuda.synchronize))
        for _ in range(2):
            got = measure_energy(modes, iters,
                                 torch.cuda.synchronize, counter, ENERGY_PRESETS["standard"])
            for mode, e in got.items():
                for w in e.windows:
                    add(mode, "runner standard", {"power_w": w.mj / 1e3 / w.seconds,
                                                  "seconds": w.seconds})
            for lead in (0.0, 0.1, 0.25):
                for mode in modes:
                    add(mode, f"thread lead {lead:.2f} win 0.2",
                        threaded_window(modes[mode], iters[mode], nvml, h, lead, 0.2))
            for mode in modes:
                add(mode, "zeus 0.3 s", zeus_window(modes[mode], iters[mode], 0.3))
        for mode in modes:
            add(mode, "loop 2 s (after)", loop_reading(modes[mode], counter, 2.0,
                                                       torch.cuda.synchronize))
        doc[str(batch)] = res
        for mode in modes:
            for method, got in res[mode].items():
                ws = [g["power_w"] for g in got]
                lines.append(f"{batch:>5} {mode:10} {method:24} "
                             f"{statistics.fmean(ws):7.1f}  {' '.join(f'{w:.0f}' for w in ws)}")
        del steps, modes
        torch.cuda.synchronize()
    (out_dir / "windows.json").write_text(json.dumps(doc, indent=1, default=str))
    return lines


# --- 4. where a repeat pass's time goes -------------------------------------------------------

def time_child() -> None:
    """In a child: wall time to torch imported, CUDA ready, the runner imported, then one
    repeat pass's phases per mode at batch 1 and 8192 (what `--processes` pays per pass)."""
    t = {"start": time.perf_counter()}
    import torch

    t["torch"] = time.perf_counter()
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    t["cuda"] = time.perf_counter()
    from contract.measurement import Measurement
    from runner.core import point
    from runner.core.timing import TIMING_PRESETS, for_processes
    from runner.core.workloads import resolve

    t["runner"] = time.perf_counter()
    wl = resolve("mlp", {})
    config = for_processes(TIMING_PRESETS["standard"], 3)
    out = {"imports": {k: round(v - t["start"], 2) for k, v in t.items()}, "batches": {}}
    modes = ("eager", "compile", "reduce-overhead", "cuda-graph")
    for batch in (1, 8192):
        t0 = time.perf_counter()
        ms = {m: Measurement(m, batch) for m in modes}
        for m in ms.values():
            m.timing.phase_s = {}
        shared = {}
        b = point._Batch(wl, batch, "cuda", config, ms, shared)
        b.run(None, rounds_only=True)
        b.prepared.clear()
        t1 = time.perf_counter()
        point.reset_state("cuda")
        out["batches"][batch] = {
            "wall": round(time.perf_counter() - t0, 2), "reset": round(time.perf_counter() - t1, 2),
            "shared": {k: round(v, 2) for k, v in shared.items()},
            "modes": {m: {k: round(v, 2) for k, v in ms[m].timing.phase_s.items()} for m in ms}}
    print("PROBE " + json.dumps(out), flush=True)


def time_part(out_dir: Path) -> list[str]:
    cache = tempfile.mkdtemp(prefix="lb-inductor-time-")
    lines = []
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    lines.append(f"time: python -c pass {time.perf_counter() - t0:.2f} s")
    for label in ("cold", "warm"):
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, __file__, "--time-child"], env=env,
                           capture_output=True, text=True, timeout=300)
        wall = time.perf_counter() - t0
        got = [ln for ln in p.stdout.splitlines() if ln.startswith("PROBE ")]
        if not got:
            lines.append(f"time {label}: rc={p.returncode} "
                         f"{(p.stderr.strip().splitlines() or ['?'])[-1][:200]}")
            continue
        doc = json.loads(got[-1][6:])
        (out_dir / f"time-{label}.json").write_text(json.dumps(doc, indent=1))
        lines.append(f"time {label}: process {wall:.1f} s; cumulative {doc['imports']}")
        for batch, d in doc["batches"].items():
            lines.append(f"   b{batch}: wall {d['wall']} s, reset {d['reset']} s, "
                         f"shared {d['shared']}")
            for m, ph in d["modes"].items():
                lines.append(f"      {m:16} {ph}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/lb-probe"))
    ap.add_argument("--part", action="append", choices=("memory", "counter", "windows", "time"))
    ap.add_argument("--batches", default="1,8192")
    ap.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--time-child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.memory_child:
        memory_child()
        return 0
    if a.time_child:
        time_child()
        return 0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = a.part or ["memory", "counter", "windows", "time"]
    lines: list[str] = []
    for part in parts:
        t0 = time.perf_counter()
        try:
            if part == "memory":
                lines += memory_part(out)
            elif part == "time":
                lines += time_part(out)
            elif part == "counter":
                lines += counter_part(out)
            else:
                lines += windows_part(out, [int(b) for b in a.batches.split(",")])
        except Exception as e:  # noqa: BLE001 - the other parts still run
            import traceback

            lines.append(f"{part}: {type(e).__name__}: {e}")
            (out / f"{part}-error.txt").write_text(traceback.format_exc())
        lines.append(f"== {part} took {time.perf_counter() - t0:.0f} s")
    (out / "probe.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
