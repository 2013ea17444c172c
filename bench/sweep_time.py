"""Where a default sweep's time goes, and whether its graph step still holds (issue 47).

1. Runs the default 16-point sweep through the CLI (`python -m runner sweep --workload mlp
   --batch-sizes 1,8,64,8192`: four modes, standard, 3 processes, energy on), reading its
   progress lines as they come: the wall time, the time to the first line (the CLI's
   start: interpreter, torch, the environment), and the time between consecutive lines,
   summed by phase (each batch size's setup per mode, rounds, energy windows, latency and
   profile, memory pass; each repeat pass per batch size). Target: within 60 s.
2. Checks the cuda-graph step against triton's GPU-only timing: for each batch size, the
   same model captured in a CUDA graph and timed by triton.testing.do_bench_cudagraph
   (median), against the sweep's cuda-graph median. Target: within 3%.

usage (GPU host): python bench/sweep_time.py [--out DIR] [--batch-sizes 1,8,64,8192]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LINE = re.compile(r"^sweep (\d+)/(\d+) points, (\d+)s elapsed, ETA [^:]*(?:: (.*))?$")


def run_sweep(out: Path, sizes: str) -> tuple[float, list[tuple[float, str]]]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "runner", "sweep", "--workload", "mlp", "--batch-sizes",
           sizes, "--no-db", "--out", str(out), "--label", "default sweep (sweep_time)"]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    events = []
    for line in p.stdout:
        events.append((time.perf_counter() - t0, line.rstrip()))
    p.wait()
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit("sweep failed:\n" + "\n".join(e[1] for e in events[-20:]))
    return wall, events


def phase_of(what: str) -> str:
    """'compile batch 8: setup (...)' -> 'setup compile'; 'repeat pass 1/2 batch 8' ->
    'repeat pass 1'; '4 modes batch 8: timing (...)' -> 'timing'."""
    if what.startswith("repeat pass"):
        return "repeat pass " + what.split()[2].split("/")[0]
    head, _, phase = what.partition(": ")
    if not phase:
        return "between points"
    name = phase.split(" (")[0].split()[0]
    mode = head.split(" batch")[0]
    return f"{name} {mode}" if name == "setup" else name


def breakdown(events: list[tuple[float, str]]) -> dict[str, float]:
    spent: dict[str, float] = defaultdict(float)
    progress = [(t, LINE.match(line)) for t, line in events]
    progress = [(t, m) for t, m in progress if m]
    if progress:
        spent["CLI start to first progress line"] = progress[0][0]
    for (t, m), (t_next, _) in zip(progress, progress[1:], strict=False):
        spent[phase_of(m.group(4) or "")] += t_next - t
    if progress:
        spent["after the last progress line"] = events[-1][0] - progress[-1][0]
    return dict(spent)


def compiled_setups(doc: dict) -> list[str]:
    """Each compiled point's setup seconds and Inductor's cache hits/misses in it: a cold
    compile or one that found its graph on disk (the sweep's helpers', an earlier run's)."""
    cells = []
    for m in doc["measurements"]:
        c = (m.get("details") or {}).get("compile") or {}
        if m["mode"] in ("compile", "reduce-overhead") and m.get("setup_s") is not None:
            cells.append(f"{m['mode']} {m['batch_size']}: {m['setup_s']:.1f} s "
                         f"({c.get('fxgraph_cache_hit', '?')} hit "
                         f"{c.get('fxgraph_cache_miss', '?')} miss)")
    return [f"   setup: {'; '.join(cells[i:i + 4])}" for i in range(0, len(cells), 4)]


def triton_check(doc: dict) -> list[str]:
    import torch
    from triton.testing import do_bench_cudagraph

    from runner.core.modes import warm_up_on_side_stream
    from runner.core.workloads import resolve

    lines = []
    steps = {m["batch_size"]: m["step_ms"] for m in doc["measurements"]
             if m["mode"] == "cuda-graph" and m["status"] == "ok"}
    for batch, ours in sorted(steps.items()):
        torch.manual_seed(0)
        model, make_input = resolve("mlp", {}).build("cuda")
        x = make_input(batch, torch.Generator().manual_seed(batch))
        with torch.no_grad():
            warm_up_on_side_stream(model, x)
            # do_bench_cudagraph captures the callable in graphs of its own and times
            # their replays: the same step as the sweep's cuda-graph mode, GPU time only.
            theirs = do_bench_cudagraph(lambda m=model, x=x: m(x), rep=200,
                                        return_mode="median")
        off = ours / theirs - 1
        lines.append(f"cuda-graph batch {batch:>5}: sweep {ours:.4f} ms, triton "
                     f"do_bench_cudagraph {theirs:.4f} ms: {off:+.1%} "
                     f"{'ok' if abs(off) <= 0.03 else 'MISS'}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/lb-sweep-time"))
    ap.add_argument("--batch-sizes", default="1,8,64,8192")
    ap.add_argument("--name", default="default")
    ap.add_argument("--no-triton", action="store_true")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    bundle = out / f"{a.name}.json"
    wall, events = run_sweep(bundle, a.batch_sizes)
    (out / f"{a.name}.log").write_text("\n".join(f"{t:8.2f} {line}" for t, line in events))
    spent = breakdown(events)
    lines = [f"default sweep wall {wall:.1f} s ({'ok' if wall <= 60 else 'MISS'}: target 60 s)"]
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        lines.append(f"   {s:6.1f} s  {name}")
    doc = json.loads(bundle.read_text())
    lines.append(f"   energy phase {sum(v for k, v in spent.items() if k == 'energy'):.1f} s "
                 f"= {spent.get('energy', 0) / wall:.0%} of the wall time (target <= 15%)")
    lines += compiled_setups(doc)
    if not a.no_triton:
        lines += triton_check(doc)
    text = "\n".join(lines)
    print(text)
    (out / f"{a.name}-time.txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
