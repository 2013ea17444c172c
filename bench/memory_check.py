"""A mode's memory checked against an independent reading (issue 44, item 3).

For each point (mlp at batch 1, the hf-causal-lm decode step at batch 1):

1. the runner's figures: a sweep of the four modes (runner/core/memory.py's pass: each
   mode alone from a clean state), giving each mode's kept bytes (reserved_delta_bytes)
   and its memory cost over eager (memory_cost_bytes);
2. an independent reading: each mode in a fresh process of its own, set up by plain
   torch code written here (torch.compile, torch.compile(mode="reduce-overhead"), and a
   manual torch.cuda.CUDAGraph capture as torch's documentation shows it), not by the
   runner's builders. Around the setup and a few steps it reads torch.cuda's own counters
   (memory_reserved after empty_cache) and the driver's used memory (mem_get_info).

The two agree when the runner's kept bytes and the fresh process's are within 2 MiB or 5%
of each other, and so are the costs over eager. The driver's figure is printed beside
them: it also holds what the allocator never sees (graph objects, cuBLAS handles, a
first capture's one-time set-up in a fresh process), so it is a check, not the figure.

The runner's sweep runs first, so Inductor's on-disk cache is warm for the fresh
processes, as it is for the runner's own pass.

usage: python bench/memory_check.py [--out bench/results/h100-memory-check.txt]
       [--points mlp:1,hf:1] [--hf-model small-llama]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODES = ("eager", "compile", "reduce-overhead", "cuda-graph")
MIB = 1 << 20
ABS, REL = 2 * MIB, 0.05


def workload_of(kind: str, hf_model: str) -> tuple[str, dict[str, str]]:
    if kind == "mlp":
        return "mlp", {}
    return "hf-causal-lm", {"model": hf_model, "phase": "decode", "layers": "4"}


def runner_figures(name: str, params: dict, batch: int, out: Path) -> dict[str, dict]:
    """The runner's four points at one batch size, through the CLI (quick timing: the
    memory pass does not depend on it)."""
    extra = [a for k, v in params.items() for a in ("--param", f"{k}={v}")]
    cmd = [sys.executable, "-m", "runner", "sweep", "--workload", name, *extra,
           "--batch-sizes", str(batch), "--modes", ",".join(MODES), "--timing", "quick",
           "--processes", "1", "--no-energy", "--no-db", "--out", str(out)]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"runner sweep failed: {p.stderr[-1500:]}")
    doc = json.loads(out.read_text())
    return {m["mode"]: m for m in doc["measurements"]}


# The fresh process: plain torch, nothing of the runner's modes or memory code.
FRESH = r'''
import json, sys
import torch
sys.path.insert(0, sys.argv[1])
from runner.core.workloads import resolve
name, params, batch, mode = sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
torch.manual_seed(0)
model, make_input = resolve(name, params).build("cuda")
if hasattr(model, "prepare_batch"):
    model.prepare_batch(batch)
x = make_input(batch, torch.Generator().manual_seed(batch))

def read():
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    return torch.cuda.memory_reserved(), total - free

with torch.no_grad():
    r0, d0 = read()
    if mode == "eager":
        run = lambda: model(x)
    elif mode == "compile":
        run = torch.compile(model, dynamic=False)
        run_x = run
        run = lambda: run_x(x)
    elif mode == "reduce-overhead":
        ro = torch.compile(model, mode="reduce-overhead", dynamic=False)
        run = lambda: ro(x)
    else:
        static = x.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(static)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = model(static)
        def run():
            static.copy_(x)
            g.replay()
    for _ in range(6):
        run()
    r1, d1 = read()
print("FRESH " + json.dumps({"reserved": r1 - r0, "driver": d1 - d0}))
'''


def fresh(name: str, params: dict, batch: int, mode: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(FRESH)
    p = subprocess.run([sys.executable, f.name, str(ROOT), name, json.dumps(params),
                        str(batch), mode], capture_output=True, text=True, timeout=600)
    Path(f.name).unlink()
    got = [ln for ln in p.stdout.splitlines() if ln.startswith("FRESH ")]
    if not got:
        raise SystemExit(f"fresh {mode} failed: {p.stderr[-1500:]}")
    return json.loads(got[-1][6:])


def agree(a: float, b: float) -> bool:
    return abs(a - b) <= max(ABS, REL * max(abs(a), abs(b)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", default="mlp:1,hf:1")
    ap.add_argument("--hf-model", default="small-llama")
    ap.add_argument("--out", help="also write the table here")
    a = ap.parse_args()
    import torch

    out = Path(a.out) if a.out else None
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("")

    def say(line: str) -> None:  # each row as it comes, to the file too: a cut run keeps
        print(line, flush=True)  # what it had
        if out:
            with out.open("a") as f:
                f.write(line + "\n")

    say(f"GPU {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    say(f"{'workload':8} {'batch':>5} {'mode':16} {'runner kept':>11} {'fresh kept':>10} "
        f"{'runner cost':>11} {'fresh cost':>10} {'driver':>8}  verdict")
    ok = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for point in a.points.split(","):
            kind, _, b = point.partition(":")
            name, params = workload_of(kind, a.hf_model)
            batch = int(b)
            ours = runner_figures(name, params, batch, Path(tmp) / f"{kind}-{batch}.json")
            theirs = {mode: fresh(name, params, batch, mode) for mode in MODES}
            for mode in MODES:
                m, f = ours[mode], theirs[mode]
                if m["status"] != "ok" or m.get("reserved_delta_bytes") is None:
                    say(f"{kind:8} {batch:>5} {mode:16} runner: {m['status']} "
                                 f"{m.get('message') or m['details'].get('memory_error')}")
                    continue
                cost_fresh = f["reserved"] - theirs["eager"]["reserved"]
                good = (agree(m["reserved_delta_bytes"], f["reserved"])
                        and agree(m["memory_cost_bytes"], cost_fresh))
                ok, total = ok + good, total + 1
                say(f"{kind:8} {batch:>5} {mode:16} {m['reserved_delta_bytes'] / MIB:11.1f} "
                    f"{f['reserved'] / MIB:10.1f} {m['memory_cost_bytes'] / MIB:+11.1f} "
                    f"{cost_fresh / MIB:+10.1f} {f['driver'] / MIB:8.1f}  "
                    f"{'ok' if good else 'MISS'}")
    say(f"{ok} of {total} points agree (within 2 MiB or 5%: kept bytes and cost "
                 "over eager); MiB; kept = reserved after emptying the cache, over the "
                 "clean start; driver = the fresh process's used memory over its start")
    return 0 if ok == total else 1


if __name__ == "__main__":
    sys.exit(main())
