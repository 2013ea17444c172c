"""What does one more captured batch size cost in graph memory, and what avoids it?

Captures one CUDA graph per batch size, largest first (the serving engines' order), and
after each capture reads the new private pools' reserved bytes, allocated bytes and the
driver's used memory. Each variant runs in a fresh process (the allocator and cuBLAS keep
state per process):

  private-clear   one private pool per graph, cuBLAS workspaces cleared around each capture
                  (what CUDA graph trees and runner/serve do)
  shared-clear    one shared pool (torch.cuda.graph_pool_handle()), cleared around each
  private-keep    private pools, workspaces never cleared
  shared-keep     shared pool, never cleared
  ws-4m           shared-clear with CUBLAS_WORKSPACE_CONFIG=:4096:1 (one 4 MiB workspace)
  ws-none         shared-clear with CUBLAS_WORKSPACE_CONFIG=:0:0 (no workspace)

Then every graph is replayed and checked against eager, and a few sizes are timed (CUDA
events, median of 50 blocks of 20 replays) so a workspace setting that slows kernels shows.

usage (GPU host): python bench/capture_memory_probe.py [--shape mlp|wide] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SIZES = [512, 256, 128, 64, 32, 16, 8, 4, 2, 1]
VARIANTS = {
    "private-clear": ({}, "private", True),
    "shared-clear": ({}, "shared", True),
    "private-keep": ({}, "private", False),
    "shared-keep": ({}, "shared", False),
    "ws-4m": ({"CUBLAS_WORKSPACE_CONFIG": ":4096:1"}, "shared", True),
    "ws-none": ({"CUBLAS_WORKSPACE_CONFIG": ":0:0"}, "shared", True),
}
MIB = 1 << 20


def child(shape: str, pool_kind: str, clear: bool) -> dict:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    if shape == "mlp":  # the launch-bound classic: 32 x Linear(256,256)+ReLU, fp32
        width, depth, dtype = 256, 32, torch.float32
    else:  # activations large enough to see the per-size part: 8 x Linear(4096), bf16
        width, depth, dtype = 4096, 8, torch.bfloat16
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to("cuda", dtype).eval()
    clear_ws = getattr(torch._C, "_cuda_clearCublasWorkspaces", lambda: None)

    def private_bytes(old: set) -> int:
        total = 0
        for seg in torch.cuda.memory_snapshot():
            pid = tuple(seg.get("segment_pool_id") or (0, 0))
            if pid != (0, 0) and pid not in old:
                total += int(seg["total_size"])
        return total

    with torch.no_grad():
        torch.cuda.synchronize()
        old = {tuple(s.get("segment_pool_id") or (0, 0)) for s in torch.cuda.memory_snapshot()}
        alloc0 = torch.cuda.memory_allocated()
        free0, _ = torch.cuda.mem_get_info()
        pool = torch.cuda.graph_pool_handle() if pool_kind == "shared" else None
        graphs, rows = {}, []
        for b in SIZES:
            x = torch.randn(b, width, device="cuda", dtype=dtype)
            t0 = time.perf_counter()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    model(x)
            torch.cuda.current_stream().wait_stream(side)
            if clear:
                clear_ws()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                y = model(x)
            if clear:
                clear_ws()
            torch.cuda.synchronize()
            cap_s = time.perf_counter() - t0
            graphs[b] = (g, x, y)
            free, _ = torch.cuda.mem_get_info()
            rows.append({"batch": b, "capture_s": cap_s,
                         "pool_bytes": private_bytes(old),
                         "allocated_bytes": torch.cuda.memory_allocated() - alloc0,
                         "device_used_bytes": free0 - free})
        worst = 0.0
        for g, x, y in graphs.values():  # replay in capture order, check each
            x.copy_(torch.randn_like(x))
            g.replay()
            ref = model(x)
            err = float((y.float() - ref.float()).abs().max() / ref.float().abs().max())
            worst = max(worst, err)
        timed = {}
        for b in (512, 8, 1):
            g = graphs[b][0]
            start, end = torch.cuda.Event(True), torch.cuda.Event(True)
            blocks = []
            for _ in range(50):
                start.record()
                for _ in range(20):
                    g.replay()
                end.record()
                end.synchronize()
                blocks.append(start.elapsed_time(end) / 20)
            blocks.sort()
            timed[str(b)] = blocks[len(blocks) // 2]
    return {"rows": rows, "worst_rel_err": worst, "replay_ms": timed,
            "torch": torch.__version__}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="mlp", choices=("mlp", "wide"))
    ap.add_argument("--json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _env, pool_kind, clear = VARIANTS[args.child]
        print(json.dumps(child(args.shape, pool_kind, clear)))
        return
    results = {}
    for name, (env, _pool, _clear) in VARIANTS.items():
        p = subprocess.run([sys.executable, __file__, "--shape", args.shape, "--child", name],
                           env={**os.environ, **env}, capture_output=True, text=True,
                           timeout=300)
        if p.returncode:
            results[name] = {"error": p.stderr.strip().splitlines()[-1:]}
            continue
        results[name] = json.loads(p.stdout.strip().splitlines()[-1])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"shape": args.shape, "sizes": SIZES, "variants": results}, f, indent=1)
    print(f"shape {args.shape}: pool MiB after each capture, largest first "
          f"({', '.join(map(str, SIZES))})")
    for name, r in results.items():
        if "error" in r:
            print(f"  {name:14s} error: {r['error']}")
            continue
        pools = " ".join(f"{row['pool_bytes'] / MIB:5.0f}" for row in r["rows"])
        last = r["rows"][-1]
        print(f"  {name:14s} {pools} | alloc {last['allocated_bytes'] / MIB:5.1f} device "
              f"{last['device_used_bytes'] / MIB:5.0f} MiB | err {r['worst_rel_err']:.1e} | "
              "replay ms " + " ".join(f"b{b}={ms:.4f}" for b, ms in r["replay_ms"].items()))


if __name__ == "__main__":
    main()
