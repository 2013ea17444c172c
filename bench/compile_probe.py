"""Where a default sweep's compile time goes on a fresh host, and what would cut it (issue 47).

Each case runs fresh processes on empty Inductor and Triton caches of its own (so a cold
host is had again on a warm machine), preparing the default mlp's compiled modes
(compile, reduce-overhead) at 1, 8, 64 and 8192 as the sweep does (runner/core/modes.py),
and prints the seconds each took:

- serial: one process, the four batch sizes in turn, Inductor's default compile pool;
- serial-1: the same with one compile thread (no pool: TORCHINDUCTOR_COMPILE_THREADS=1);
- parallel: four processes at once, one batch size each (one compile thread each), then
  a serial process on the caches they filled (what the sweep's own pass would pay after);
- warm: a serial process again on serial's caches;
- profile: on those warm caches, batch 1 prepared, then batch 8's compiled modes under
  cProfile: where a warm-cache compile (each repeat child's, each later sweep's) goes.

usage (GPU host): python bench/compile_probe.py [--cases serial,serial-1,parallel,warm,profile]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1, 8, 64, 8192)
MODES = ("compile", "reduce-overhead")


def child(sizes: list[int], device: str) -> None:
    t0 = time.perf_counter()
    import torch

    from runner.core.modes import prepare
    from runner.core.workloads import resolve

    out: dict = {"import_s": time.perf_counter() - t0}
    modes = MODES if device == "cuda" else MODES[:1]  # no graphs on a CPU
    torch.manual_seed(0)
    model, make_input = resolve("mlp", {}).build(device)
    if device == "cuda":
        torch.cuda.synchronize()
    out["build_s"] = time.perf_counter() - t0 - out["import_s"]
    with torch.no_grad():
        for b in sizes:
            x = make_input(b, torch.Generator().manual_seed(b))
            for mode in modes:
                p = prepare(mode, model, x, device)
                out[f"{mode} {b}"] = p.setup_s
        if os.environ.get("LB_PROBE_PROFILE"):
            import cProfile
            import pstats

            x = make_input(8, torch.Generator().manual_seed(8))
            prof = cProfile.Profile()
            prof.enable()
            for mode in modes:
                out[f"{mode} 8 profiled"] = prepare(mode, model, x, device).setup_s
            prof.disable()
            st = pstats.Stats(prof, stream=sys.stderr)
            st.strip_dirs().sort_stats("cumulative").print_stats(45)
    out["total_s"] = time.perf_counter() - t0
    print(json.dumps(out), flush=True)


def spawn(sizes, cache: str, threads: int | None, device: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCHINDUCTOR_CACHE_DIR": cache + "/ind",
           "TRITON_CACHE_DIR": cache + "/triton"}
    env.pop("TORCHINDUCTOR_COMPILE_THREADS", None)
    if threads:
        env["TORCHINDUCTOR_COMPILE_THREADS"] = str(threads)
    return subprocess.Popen([sys.executable, __file__, "--child", ",".join(map(str, sizes)),
                             "--device", device],
                            env=env, stdout=subprocess.PIPE, text=True, cwd=ROOT)


def collect(procs) -> list[dict]:
    docs = []
    for p in procs:
        lines = [json.loads(line) for line in p.stdout if line.startswith("{")]
        p.wait()
        docs.append(lines[-1] if lines else {"failed": p.returncode})
    return docs


def show(name: str, wall: float, docs: list[dict]) -> str:
    parts = [f"{name:<22} wall {wall:6.1f} s"]
    for d in docs:
        if "failed" in d:
            parts.append(f"  failed rc={d['failed']}")
            continue
        comp = sum(v for k, v in d.items() if k.startswith("compile "))
        ro = sum(v for k, v in d.items() if k.startswith("reduce-overhead "))
        each = " ".join(f"{k.split()[-1]}:{d[k]:.1f}" for k in d if k.startswith("compile "))
        parts.append(f"  import {d['import_s']:.1f} build {d['build_s']:.1f} compile "
                     f"{comp:.1f} ({each}) reduce-overhead {ro:.1f}")
    return "\n".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--cases", default="serial,serial-1,parallel,warm,profile")
    a = ap.parse_args()
    if a.child:
        child([int(s) for s in a.child.split(",")], a.device)
        return 0
    sizes = [int(s) for s in a.sizes.split(",")]
    root = tempfile.mkdtemp(prefix="lb-compile-probe-")
    lines = []
    for case in a.cases.split(","):
        cache = f"{root}/serial" if case == "warm" else f"{root}/{case}"
        t0 = time.perf_counter()
        if case == "parallel":
            docs = collect([spawn([b], cache, 1, a.device) for b in sizes])
            lines.append(show(f"parallel ({len(sizes)} procs)", time.perf_counter() - t0, docs))
            t0 = time.perf_counter()
            docs = collect([spawn(sizes, cache, None, a.device)])
            lines.append(show("serial after parallel", time.perf_counter() - t0, docs))
            continue
        if case == "profile":
            os.environ["LB_PROBE_PROFILE"] = "1"
            cache = f"{root}/serial"
            sizes_now = [1]
        else:
            sizes_now = sizes
        docs = collect([spawn(sizes_now, cache, 1 if case == "serial-1" else None, a.device)])
        os.environ.pop("LB_PROBE_PROFILE", None)
        lines.append(show(case, time.perf_counter() - t0, docs))
        print(lines[-1], flush=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
