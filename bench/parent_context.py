"""Does a parent process holding a CUDA context slow its child's kernel launches?

`--processes K` times K - 1 passes in child processes while the sweep's own process has
already initialised CUDA. Three-process sweeps on the lent H200 read 10-11 us per launch
where one-process sweeps had read about 8 us. This bench separates the two explanations:
it starts a child that runs the runner's own launch probe (runner/core/timing.py), in
turns with the parent holding no CUDA context and holding one (a tensor on the GPU), and
prints the child's median us per launch for each turn.

usage: python bench/parent_context.py [--turns 4]      (needs CUDA; about 40 s)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from runner.core.timing import Clock
clock = Clock("cuda")
probe = clock.launch_probe(400)
for _ in range(20):  # warm-up: first launches pay for module loading
    probe()
xs = [probe() for _ in range(200)]
print(json.dumps(xs))
"""


def child_probe(hold_context: bool) -> list[float]:
    """One parent process (holding a CUDA context or not) that runs one probe child."""
    out = subprocess.run([sys.executable, __file__, "--parent",
                          "hold" if hold_context else "none"], capture_output=True,
                         text=True, check=True, env={**os.environ})
    return json.loads(out.stdout.strip().splitlines()[-1])


def parent(mode: str) -> int:
    held = None
    if mode == "hold":
        import torch

        held = torch.ones(1 << 20, device="cuda")  # creates the context, kept while the
        torch.cuda.synchronize()                   # child times
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], capture_output=True,
                         text=True, check=True)
    print(out.stdout.strip().splitlines()[-1])
    del held
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--parent", choices=("hold", "none"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.parent:
        return parent(args.parent)
    rows = []
    for turn in range(args.turns):
        for hold in (False, True) if turn % 2 == 0 else (True, False):
            xs = child_probe(hold)
            state = "parent holds context" if hold else "no parent context"
            rows.append((state, statistics.median(xs)))
            print(f"turn {turn} {state:>22}: median {rows[-1][1]:5.2f} us per launch "
                  f"(min {min(xs):5.2f}, max {max(xs):5.2f})", flush=True)
    for state in ("no parent context", "parent holds context"):
        meds = [m for s, m in rows if s == state]
        print(f"{state:>22}: {len(meds)} children, median of medians "
              f"{statistics.median(meds):.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
