"""Does an idle process that holds a prepared CUDA state slow another's timed steps?
(issue 47: whether a sweep's repeat children could prepare at the same time and then time
in turn, each waiting with its compiled modes and graphs while the other times.)

The parent times the default mlp's eager and cuda-graph steps at batch 1 (launch-bound:
host work shows first) and at 8192, with no other process, then with two idle processes
that each made a CUDA context, compiled the model (torch.compile, one compile thread) and
captured a graph, then with none again. Each figure: the median over 7 blocks of 400
steps, host time per step with one sync per block.

usage (GPU host): python bench/held_probe.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def holder() -> None:
    import torch

    from runner.core.modes import prepare
    from runner.core.workloads import resolve

    torch.manual_seed(0)
    model, make_input = resolve("mlp", {}).build("cuda")
    kept = []
    with torch.no_grad():
        for b in (1, 8192):
            x = make_input(b, torch.Generator().manual_seed(b))
            kept += [prepare(m, model, x, "cuda")
                     for m in ("compile", "reduce-overhead", "cuda-graph")]
    torch.cuda.synchronize()
    print("ready", flush=True)
    sys.stdin.readline()  # held until the parent closes stdin


def main() -> int:
    if sys.argv[1:] == ["--hold"]:
        holder()
        return 0
    import torch

    from runner.core.modes import prepare
    from runner.core.workloads import resolve

    torch.manual_seed(0)
    model, make_input = resolve("mlp", {}).build("cuda")
    steps = {}
    with torch.no_grad():
        for b in (1, 8192):
            x = make_input(b, torch.Generator().manual_seed(b))
            for m in ("eager", "cuda-graph"):
                steps[f"{m} {b}"] = prepare(m, model, x, "cuda")

    def time_all() -> dict[str, float]:
        out = {}
        for name, p in steps.items():
            blocks = []
            for _ in range(7):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(400):
                    p.step()
                torch.cuda.synchronize()
                blocks.append((time.perf_counter() - t0) / 400 * 1e3)
            out[name] = statistics.median(blocks)
        return out

    rows = [("alone", time_all())]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    held = [subprocess.Popen([sys.executable, __file__, "--hold"], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(2)]
    for h in held:
        assert h.stdout is not None and h.stdout.readline().strip() == "ready"
    time.sleep(2)  # their compile pools, if any, idle
    rows.append(("2 idle holders", time_all()))
    for h in held:
        assert h.stdin is not None
        h.stdin.close()
        h.wait()
    rows.append(("alone again", time_all()))
    names = list(rows[0][1])
    print(f"{'ms a step':<16}" + "".join(f"{n:>16}" for n in names))
    for label, got in rows:
        print(f"{label:<16}" + "".join(f"{got[n]:>16.4f}" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
