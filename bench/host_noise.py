"""How steady is this host for launch-bound work? Read before trusting host-bound figures.

Times the `mlp` eager step at batch 8 (64 kernel launches, host-bound on most machines)
with a bare CUDA-event loop, run after run in one process: first pristine, then after ten
compiles and graph-tree recordings of the kind a sweep makes, after 15 s of rest, after
Inductor's compile workers are shut down, and last in turn with a fresh process. Each line
also shows how many CPU cores the whole machine kept busy and the CPU ticks of this
process's children (compile workers).

What it showed on the lent H200 host (KVM guest, 16 vCPUs, torch 2.11), three runs:
- The host drifts on its own: with one core busy and idle children, the same loop in one
  process moved between about 0.9 and 1.6 ms from one 0.4 s run to the next, and a
  pristine process was as slow as 1.46 ms while the same process after compiles and 15 s
  of rest ran at 1.01 ms.
- Compiled state may add to it: in 3 of 3 back-to-back pairs a fresh process ran faster
  than the process that had compiled (0.95 vs 1.24, 1.04 vs 1.31, 1.46 vs 1.57 ms). Three
  pairs under this much drift do not settle it. runner_bench.py's (c) cannot see such an
  effect, since its runner and independent loop share one process.
- The first compile of a fresh process once slowed the loop from 0.84 to 1.19 ms for
  about 6 s while Inductor's compile workers started.

usage: python bench/host_noise.py      (needs CUDA; about 80 s)
"""
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runner_bench import bare_mlp, event_blocks_ms  # noqa: E402


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


T0 = time.perf_counter()


def series(tag, f, k):
    vals = []
    for _ in range(k):
        b0, c0 = sys_busy(), children_cpu()
        v = statistics.median(event_blocks_ms(f, 20))
        b1, c1 = sys_busy(), children_cpu()
        busy = (b1[0] - b0[0]) / max(1, b1[1] - b0[1]) * (os.cpu_count() or 1)
        vals.append(v)
        print(f"{tag} t={time.perf_counter()-T0:5.1f} {v:.4f} ms  busy_cores {busy:4.2f} "
              f"children {c1[1]} child_ticks+{c1[0]-c0[0]}", flush=True)
    print(f"== {tag}: median {statistics.median(vals):.4f} min {min(vals):.4f} "
          f"max {max(vals):.4f}", flush=True)


def main() -> None:
    torch.manual_seed(0)
    model = bare_mlp()
    x = torch.randn(8, 256, device="cuda")
    with torch.no_grad():
        def f():
            return model(x)

        for _ in range(200):
            f()
        series("pristine", f, 6)
        for i, b in enumerate((1, 2, 4, 16, 32, 64, 128, 256, 512, 1024)):
            xb = torch.randn(b, 256, device="cuda")
            c = torch.compile(bare_mlp(), mode="reduce-overhead" if i % 2 else None,
                              dynamic=False)
            for _ in range(3):
                c(xb)
            del c
            torch._dynamo.reset()
        print(f"compiled 10 at t={time.perf_counter()-T0:.1f}", flush=True)
        series("after-compiles", f, 20)
        time.sleep(15)
        series("after-sleep15", f, 6)
        try:
            from torch._inductor.async_compile import shutdown_compile_workers
            shutdown_compile_workers()
            print("workers shut down", flush=True)
        except Exception as e:  # older torch: no pool to shut down
            print("no shutdown", e)
        series("after-shutdown", f, 6)
        # The same loop at the same moment in a fresh process: if it is fast while this
        # one is slow, the slowdown is this process's state, not the host's.
        for _ in range(3):
            subprocess.run([sys.executable, __file__, "--fresh"], check=True)
            series("this-process", f, 3)


def fresh() -> None:
    torch.manual_seed(0)
    model = bare_mlp()
    x = torch.randn(8, 256, device="cuda")
    with torch.no_grad():
        def f():
            return model(x)

        for _ in range(200):
            f()
        series("fresh-process", f, 3)


if __name__ == "__main__":
    fresh() if "--fresh" in sys.argv else main()
