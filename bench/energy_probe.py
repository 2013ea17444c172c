"""How NVML's total-energy counter behaves on this GPU, and what a step costs in energy.

1. The counter's cadence: nvmlDeviceGetTotalEnergyConsumption (mJ) read in a tight loop for
   1 s, idle and under load: how many distinct values, how far apart in time they change.
2. Idle power over a 2 s window.
3. Energy per step of the launch-bound MLP (32 x Linear(256,256)+ReLU, fp32) at batch 1, 8
   and 8192, eager against a manual CUDA graph, over windows of WINDOW_S each, three
   windows per mode interleaved (eager, graph, eager, graph...).

usage (GPU host with nvidia-ml-py): python bench/energy_probe.py [--window 1.0]
"""

from __future__ import annotations

import argparse
import statistics
import time

import pynvml
import torch


def handle():
    pynvml.nvmlInit()
    uuid = str(torch.cuda.get_device_properties(0).uuid)
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        u = pynvml.nvmlDeviceGetUUID(h)
        u = u.decode() if isinstance(u, bytes) else u
        if u.replace("GPU-", "") == uuid.replace("GPU-", ""):
            return h
    return pynvml.nvmlDeviceGetHandleByIndex(0)


def cadence(h, seconds: float, work=None) -> str:
    reads, changes, last, t_last = 0, [], None, None
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        if work is not None:
            work()
        v = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        t = time.perf_counter()
        reads += 1
        if v != last:
            if last is not None:
                changes.append(t - t_last)
            last, t_last = v, t
    if not changes:
        return f"{reads} reads, no change"
    return (f"{reads} reads, {len(changes) + 1} distinct values, change every "
            f"{statistics.median(changes) * 1e3:.0f} ms (min {min(changes) * 1e3:.0f}, max "
            f"{max(changes) * 1e3:.0f})")


def window(h, fn, seconds: float) -> tuple[float, float, int]:
    """(mJ per step, W average, steps) over one window of at least `seconds`."""
    torch.cuda.synchronize()
    e0, t0, n = pynvml.nvmlDeviceGetTotalEnergyConsumption(h), time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(50):
            fn()
        n += 50
    torch.cuda.synchronize()
    e1, t1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(h), time.perf_counter()
    return (e1 - e0) / n, (e1 - e0) / 1e3 / (t1 - t0), n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=float, default=1.0)
    args = ap.parse_args()
    h = handle()
    print("GPU", pynvml.nvmlDeviceGetName(h), "driver", pynvml.nvmlSystemGetDriverVersion())
    print("idle cadence:", cadence(h, 1.0))
    torch.backends.cuda.matmul.allow_tf32 = False
    layers = []
    for _ in range(32):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda().eval()
    x8 = torch.randn(8, 256, device="cuda")
    with torch.no_grad():
        print("busy cadence:", cadence(h, 1.0, lambda: model(x8)))
        time.sleep(1.0)
        e0, t0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(h), time.perf_counter()
        time.sleep(2.0)
        e1, t1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(h), time.perf_counter()
        print(f"idle power {(e1 - e0) / 1e3 / (t1 - t0):.1f} W over {t1 - t0:.1f} s; "
              f"nvmlDeviceGetPowerUsage {pynvml.nvmlDeviceGetPowerUsage(h) / 1e3:.1f} W")
        for b in (1, 8, 8192):
            x = torch.randn(b, 256, device="cuda")
            sx = x.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    model(sx)
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                model(sx)

            def graph_step(sx=sx, x=x, g=g):
                sx.copy_(x)
                g.replay()
            steps = {"eager": lambda x=x: model(x), "cuda-graph": graph_step}
            got = {k: [] for k in steps}
            for _ in range(3):
                for k, fn in steps.items():
                    got[k].append(window(h, fn, args.window))
            for k, ws in got.items():
                mj = [w[0] for w in ws]
                watts = [w[1] for w in ws]
                print(f"batch {b:5d} {k:10s}: {statistics.median(mj):8.3f} mJ/step "
                      f"({min(mj):.3f}-{max(mj):.3f}), {statistics.median(watts):6.1f} W, "
                      f"{sum(w[2] for w in ws)} steps in 3 windows")
            del g


if __name__ == "__main__":
    main()
