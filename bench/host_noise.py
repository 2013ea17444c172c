"""How steady is this host for launch-bound work? Read before trusting host-bound figures.

Times the `mlp` eager step at batch 8 (64 kernel launches, host-bound on most machines)
with a bare CUDA-event loop, run after run in one process: first pristine, then after ten
compiles and graph-tree recordings of the kind a sweep makes, after 15 s of rest, and after
Inductor's compile workers are shut down. Each line also shows how many CPU cores the whole
machine kept busy meanwhile and the CPU ticks of this process's children (compile workers).

What it showed on the lent H200 host (KVM guest, 16 vCPUs, torch 2.11): the same loop
moved between 1.01 and 1.49 ms from one 0.4 s run to the next with one core busy and idle
children, and the medians of the pristine, after-compile, rested and workers-shut-down
stretches (1.38, 1.41, 1.31, 1.25 ms) follow no order of what the process did, so that
drift comes from outside the process (another tenant, the host's clocks). One transient
was the process's own: on another machine of that kind the first compile of a fresh process
slowed the loop from 0.84 to 1.19 ms for about 6 s, while Inductor's new compile workers
started. bench/runner_bench.py's (c) prints the loop's own run-to-run spread beside each
comparison.

usage: python bench/host_noise.py      (needs CUDA; about 80 s)
"""
import os
import statistics
import time

import torch
from torch import nn


def sys_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


def children_cpu():
    pid = os.getpid()
    tot, n = 0, 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            kids = open(f"/proc/{pid}/task/{task}/children").read().split()
        except OSError:
            continue
        for k in kids:
            try:
                f = open(f"/proc/{k}/stat").read().rsplit(")", 1)[1].split()
                tot += int(f[11]) + int(f[12])
                n += 1
            except OSError:
                pass
    return tot, n


torch.manual_seed(0)


def mlp():
    layers = []
    for _ in range(32):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    return nn.Sequential(*layers).cuda().eval()


model = mlp()
x = torch.randn(8, 256, device="cuda")


def once(f, n=20, blocks=15):
    res = []
    for _ in range(blocks):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        a.record()
        for _ in range(n):
            f()
        b.record()
        b.synchronize()
        res.append(a.elapsed_time(b) / n)
    return statistics.median(res)


T0 = time.perf_counter()


def series(tag, f, k):
    vals = []
    for _ in range(k):
        b0, c0 = sys_busy(), children_cpu()
        v = once(f)
        b1, c1 = sys_busy(), children_cpu()
        busy = (b1[0] - b0[0]) / max(1, b1[1] - b0[1]) * 16
        vals.append(v)
        print(f"{tag} t={time.perf_counter()-T0:5.1f} {v:.4f} ms  busy_cores {busy:4.2f} "
              f"children {c1[1]} child_ticks+{c1[0]-c0[0]}",
              flush=True)
    print(f"== {tag}: median {statistics.median(vals):.4f} min {min(vals):.4f} "
          f"max {max(vals):.4f}", flush=True)


with torch.no_grad():
    f = lambda: model(x)  # noqa: E731
    for _ in range(200):
        f()
    series("pristine", f, 6)
    for i, b in enumerate((1, 2, 4, 16, 32, 64, 128, 256, 512, 1024)):
        m2 = mlp()
        xb = torch.randn(b, 256, device="cuda")
        c = torch.compile(m2, mode="reduce-overhead" if i % 2 else None, dynamic=False)
        for _ in range(3):
            c(xb)
        del c, m2
        torch._dynamo.reset()
    print(f"compiled 10 at t={time.perf_counter()-T0:.1f}", flush=True)
    series("after-compiles", f, 20)
    time.sleep(15)
    series("after-sleep15", f, 6)
    try:
        from torch._inductor.async_compile import shutdown_compile_workers
        shutdown_compile_workers()
        print("workers shut down", flush=True)
    except Exception as e:
        print("no shutdown", e)
    series("after-shutdown", f, 6)
    import gc
    gc.collect()
    series("after-gc", f, 4)
