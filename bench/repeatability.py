"""Do the figures hold up on a second run? Sweeps in fresh processes, then coverage.

  run:    python bench/repeatability.py run --out DIR [--runs 3] [--baseline TREE]
          [--processes K]
          sweeps `mlp` and `transformer-decode` (all four modes) --runs times, each in a
          fresh process through the CLI, writing DIR/<workload>-<i>.json and each sweep's
          wall time to DIR/walls.json. --baseline TREE also sweeps the same points once
          with another checkout's runner (e.g. the one before interleaved rounds:
          `git archive 9603235 runner | tar -x -C TREE`) for the wall-time ratio.
  report: python bench/repeatability.py report DIR...
          for each speedup (mode over eager, per batch size): does each run's 95% interval
          hold every other run's median? Target: at least 80% of those checks. Also the
          widest GPU-bound speedup interval (target: half-width <= 2%), the wall time
          against the baseline (target: at most 1.3x), and beside the time coverage the
          memory spread (issue 44): each point's memory cost and graph pool across the
          runs, max - min (target: within 2 MiB).

The report reads only bundle files, so runs from several device calls can be pooled.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = {"mlp": "1,8,64,512,4096,8192", "transformer-decode": "1,2,4,8,16,32,64"}
MODES = "eager,compile,reduce-overhead,cuda-graph"
# A graph step is GPU bound when the GPU is busy for most of it: its speedup interval
# should then be tight whatever the host does.
GPU_BOUND = 0.8


def sweep(workload: str, sizes: str, out: Path, tree: Path, timing: str,
          processes: int = 1) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    extra = ["--processes", str(processes)] if processes > 1 else []
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "runner", "sweep", "--workload", workload,
                        "--batch-sizes", sizes, "--modes", MODES, "--timing", timing,
                        "--no-db", "--out", str(out), *extra,
                        "--label", f"repeatability bench ({workload}, {out.stem})"],
                       cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    print(f"{out.name}: rc={p.returncode} wall {wall:.0f} s", flush=True)
    if p.returncode != 0:
        print(p.stderr[-2000:], flush=True)
    else:
        print("\n".join(p.stdout.splitlines()[3:]), flush=True)
    return wall


def cmd_run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    walls_file = out / "walls.json"
    walls = json.loads(walls_file.read_text()) if walls_file.exists() else {}
    sizes = dict(SIZES)
    for item in args.sizes or []:
        w, _, s = item.partition("=")
        sizes[w] = s
    for workload in args.workloads.split(","):
        if args.baseline:
            name = f"baseline-{workload}.json"
            walls[name] = sweep(workload, sizes[workload], out / name, Path(args.baseline),
                                args.timing)
        for i in range(args.first, args.first + args.runs):
            name = f"{workload}-{i}.json"
            walls[name] = sweep(workload, sizes[workload], out / name, ROOT, args.timing,
                                args.processes)
        walls_file.write_text(json.dumps(walls, indent=1))


def _speedups(doc: dict) -> dict:
    out = {}
    for m in doc["measurements"]:
        if m["mode"] != "eager" and m.get("speedup") is not None and m["status"] == "ok":
            out[(m["mode"], m["batch_size"])] = m
    return out


def _gpu_bound_steps(files) -> list[float]:
    """Relative half-widths of graph-mode step times where the GPU is the limit: the
    figures that should repeat whatever the host does."""
    out = []
    for f in files:
        for m in json.loads(f.read_text())["measurements"]:
            busy, step = m.get("gpu_busy_ms"), m.get("step_ms")
            lo, hi = m.get("step_ms_ci_low"), m.get("step_ms_ci_high")
            if (m["mode"] in ("reduce-overhead", "cuda-graph") and busy and step and lo
                    and hi and busy / step >= GPU_BOUND):
                out.append(max(step - lo, hi - step) / step)
    return out


def _gpu_bound(m: dict) -> bool:
    busy, step = m.get("gpu_busy_ms"), m.get("step_ms")
    return bool(busy and step and busy / step >= GPU_BOUND)


MIB = 1 << 20
MEMORY_TARGET = 2 * MIB


def memory_spread(by_workload: dict[str, list[dict]]) -> None:
    """Each point's memory cost and graph pool over the runs (issue 44: the same within
    2 MiB); runs from before bundle version 7 have no cost and show '-'."""
    within = points = 0
    widest = 0
    for workload, docs in by_workload.items():
        keyed = [{(m["mode"], m["batch_size"]): m for m in d["measurements"]
                  if m["status"] == "ok"} for d in docs]
        keys = sorted(set.intersection(*(set(k) for k in keyed)))
        print(f"\n{workload}: memory cost over eager, MiB (graph pool), per run")
        for key in keys:
            ms = [k[key] for k in keyed]
            costs = [m.get("memory_cost_bytes") for m in ms]
            pools = [m.get("graph_pool_bytes") for m in ms]
            cells = "  ".join("      -" if c is None else
                              f"{c / MIB:+7.1f} ({(p or 0) / MIB:5.1f})"
                              for c, p in zip(costs, pools, strict=True))
            spread = None
            if all(c is not None for c in costs):
                spread = max(max(costs) - min(costs),
                             max(p or 0 for p in pools) - min(p or 0 for p in pools))
                points += 1
                within += spread <= MEMORY_TARGET
                widest = max(widest, spread)
            print(f"{key[0]:>16} {key[1]:>5}  {cells}  spread "
                  + ("-" if spread is None else f"{spread / MIB:.1f}"))
    if points:
        print(f"memory: {within}/{points} points within {MEMORY_TARGET // MIB} MiB across "
              f"runs, widest spread {widest / MIB:.1f} MiB")


def cmd_report(args) -> int:
    files = sorted(f for d in args.dirs for f in Path(d).glob("*.json")
                   if f.name != "walls.json" and not f.name.startswith("baseline-"))
    walls: dict[str, float] = {}
    for d in args.dirs:
        if (Path(d) / "walls.json").exists():
            walls.update(json.loads((Path(d) / "walls.json").read_text()))
    by_workload: dict[str, list[dict]] = {}
    for f in files:
        doc = json.loads(f.read_text())
        by_workload.setdefault(doc["run"]["workload"], []).append(doc)
    total = covered = 0
    widest = 0.0
    both: list[float] = []  # half-widths of speedups whose eager step is GPU-bound too
    for workload, docs in by_workload.items():
        runs = [_speedups(d) for d in docs]
        eager = [{m["batch_size"]: m for m in d["measurements"] if m["mode"] == "eager"}
                 for d in docs]
        print(f"\n{workload}: {len(docs)} runs")
        print(f"{'mode':>16} {'batch':>5}  " + "  ".join(
            f"{'run ' + str(i + 1):>20}" for i in range(len(runs))) + "  covered")
        keys = sorted(set.intersection(*(set(r) for r in runs)), key=lambda k: (k[0], k[1]))
        for key in keys:
            ms = [r[key] for r in runs]
            hits = pairs = 0
            for a, b in itertools.permutations(range(len(ms)), 2):
                lo, hi = ms[a]["speedup_ci_low"], ms[a]["speedup_ci_high"]
                pairs += 1
                hits += lo is not None and lo <= ms[b]["speedup"] <= hi
            total, covered = total + pairs, covered + hits
            cells = "  ".join(f"{m['speedup']:6.2f} ({m['speedup_ci_low'] or 0:5.2f}-"
                              f"{m['speedup_ci_high'] or 0:5.2f})" for m in ms)
            print(f"{key[0]:>16} {key[1]:>5}  {cells}  {hits}/{pairs}")
            for m, e in zip(ms, eager, strict=True):
                if (key[0] in ("reduce-overhead", "cuda-graph") and _gpu_bound(m)
                        and m["speedup_ci_high"]):
                    half = max(m["speedup"] - m["speedup_ci_low"],
                               m["speedup_ci_high"] - m["speedup"]) / m["speedup"]
                    widest = max(widest, half)
                    if _gpu_bound(e.get(key[1], {})):
                        both.append(half)
    memory_spread(by_workload)
    steps = _gpu_bound_steps(files)
    if steps:
        print(f"GPU-bound graph step times ({len(steps)} points with GPU busy >= "
              f"{GPU_BOUND:.0%} of the step): widest 95% half-width {max(steps):.1%}, "
              f"median {sorted(steps)[len(steps) // 2]:.1%}")
    if total:
        print(f"\ncoverage: {covered}/{total} = {covered / total:.0%} of other runs' medians "
              "inside a run's 95% interval (target >= 80%)")
    print(f"widest GPU-bound speedup half-width: {widest:.1%} (target <= 2%; the graph "
          "step is GPU-bound, eager's host-bound step still sets the ratio's spread)")
    print("speedups with eager GPU-bound too: " + (
        f"{len(both)}, widest half-width {max(both):.1%}" if both else "none in these runs"))
    for name, wall in sorted(walls.items()):
        if name.startswith("baseline-"):
            ours = [w for n, w in walls.items() if n.startswith(name[9:-5] + "-")]
            if ours:
                mean = sum(ours) / len(ours)
                print(f"wall {name[9:-5]}: {mean:.0f} s (mean of {len(ours)}) against "
                      f"{wall:.0f} s before rounds: {mean / wall:.2f}x (target <= 1.3x)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--runs", type=int, default=3)
    r.add_argument("--first", type=int, default=1, help="number of the first run")
    r.add_argument("--workloads", default="mlp,transformer-decode")
    r.add_argument("--sizes", action="append", metavar="WORKLOAD=LIST")
    r.add_argument("--timing", default="standard")
    r.add_argument("--baseline", metavar="TREE")
    r.add_argument("--processes", type=int, default=1, help="sweep's --processes")
    r.set_defaults(func=cmd_run)
    p = sub.add_parser("report")
    p.add_argument("dirs", nargs="+")
    p.set_defaults(func=cmd_report)
    args = ap.parse_args()
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
