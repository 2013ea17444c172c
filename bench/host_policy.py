"""One host, two GPUs: what the host policy costs and buys (issue 16's proof).

  run:    python bench/host_policy.py run --out DIR [--gpus 0,1] [--sizes 1,8,64,512]
          [--modes eager,cuda-graph] [--timing standard] [--device cuda]
          the same `mlp` sweep three ways, each sweep a fresh `python -m runner sweep`
          process pinned to one GPU (CUDA_VISIBLE_DEVICES, bus order):
            alone      one sweep on the first GPU, nothing else running;
            shared     one sweep per GPU at once, LAUNCHBENCH_HOST_POLICY=shared;
            exclusive  one sweep per GPU at once, LAUNCHBENCH_HOST_POLICY=exclusive.
          Writes DIR/<way>-gpu<N>.json (bundles) and DIR/walls.json (each way's wall
          seconds, from the first start to the last exit) and DIR/how.json (the commands).
  report: python bench/host_policy.py report DIR
          per way and GPU: each speedup over eager with its 95% interval, the points'
          others_timing and wait, and the way's wall time.

`--device cpu` runs the same on a machine without GPUs (a smoke test of the script: CPU
figures say nothing about GPU launch overhead).
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
WAYS = ("alone", "shared", "exclusive")


def _sweep(out: Path, gpu: int, args, env: dict) -> tuple[list[str], subprocess.Popen]:
    cmd = [sys.executable, "-m", "runner", "sweep", "--workload", "mlp",
           "--batch-sizes", args.sizes, "--modes", args.modes, "--device", args.device,
           "--timing", args.timing, "--no-db", "--out", str(out),
           "--label", f"host policy bench: {out.stem}"]
    env = {**os.environ, **env, "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
           "CUDA_VISIBLE_DEVICES": str(gpu)}
    return cmd, subprocess.Popen(cmd, cwd=ROOT, env=env)


def run(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpus = [int(g) for g in args.gpus.split(",")]
    walls, how = {}, {}
    for way in WAYS:
        on = gpus[:1] if way == "alone" else gpus
        env = {} if way == "alone" else {
            "LAUNCHBENCH_HOST_POLICY": way,
            "LAUNCHBENCH_HOST_DIR": tempfile.mkdtemp(prefix=f"launchbench-{way}-")}
        t0 = time.monotonic()
        started = [_sweep(out / f"{way}-gpu{g}.json", g, args, env) for g in on]
        codes = [p.wait() for _, p in started]
        walls[way] = time.monotonic() - t0
        how[way] = {"commands": [c for c, _ in started], "gpus": on,
                    "policy": env.get("LAUNCHBENCH_HOST_POLICY"), "exit": codes}
        print(f"{way}: {walls[way]:.1f} s, exit {codes}", file=sys.stderr)
        if any(codes):
            return 1
    (out / "walls.json").write_text(json.dumps(walls, indent=1))
    (out / "how.json").write_text(json.dumps(how, indent=1))
    return 0


def report(args) -> int:
    d = Path(args.dir)
    walls = json.loads((d / "walls.json").read_text())
    for way in WAYS:
        print(f"== {way}: wall {walls[way]:.1f} s")
        for f in sorted(d.glob(f"{way}-gpu*.json")):
            doc = json.loads(f.read_text())
            for m in doc["measurements"]:
                h = m["details"].get("host") or {}
                iv = ("" if m.get("speedup") is None else
                      f"speedup {m['speedup']:.3f} [{m['speedup_ci_low']:.3f}, "
                      f"{m['speedup_ci_high']:.3f}]")
                print(f"  {f.stem:<16} {m['mode']:<16} batch {m['batch_size']:>5}  "
                      f"step {m['step_ms'] or float('nan'):.4f} ms  {iv:<34} "
                      f"others_timing={h.get('others_timing')} wait_s="
                      f"{h.get('wait_s', 0):.2f}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--gpus", default="0,1")
    r.add_argument("--sizes", default="1,8,64,512")
    r.add_argument("--modes", default="eager,cuda-graph")
    r.add_argument("--timing", default="standard")
    r.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    r.set_defaults(func=run)
    s = sub.add_parser("report")
    s.add_argument("dir")
    s.set_defaults(func=report)
    args = p.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
