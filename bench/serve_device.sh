#!/bin/bash
# One device call for serve (issue 5): the real serve run first (the shipped sample), then
# the GPU tests, then a short table. Results under $OUT. usage (on the GPU host):
#   bash bench/serve_device.sh [SERVE_S] [TESTS_S]
set -u
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
OUT=${OUT:-/tmp/lb-out}; mkdir -p "$OUT"
T_SERVE=${1:-220}; T_TESTS=${2:-110}
start=$(date +%s)
stamp() { echo "== $1 at +$(( $(date +%s) - start ))s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv | tee "$OUT/smi.txt"
python3 -c "import torch, platform; print('torch', torch.__version__, 'cuda', \
torch.version.cuda, torch.cuda.get_device_name(0), 'python', platform.python_version())"

stamp serve
# compile last: on this host's slow CPU its compiles are the slowest part; the bundle is
# rewritten after each strategy, so a time limit loses only what had not finished.
timeout "$T_SERVE" python3 -m runner serve --workload mlp \
  --strategies eager,buckets:8/16/32,buckets:pow2-256,reduce-overhead,compile \
  --requests 500 --batch-dist uniform:1-64 --seed 0 --no-db \
  --out "$OUT/h200-serve-mlp.json" \
  --label "H200 serve sample (mlp depth 32 width 256, 500 requests, uniform:1-64)" \
  > "$OUT/serve.log" 2>&1
echo "serve rc=$?"

stamp tests
timeout "$T_TESTS" python3 -m pytest -q -m gpu -p no:cacheprovider tests/runner/serve/test_gpu_serve.py \
  -o addopts="--strict-markers -ra" > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?"
stamp done

echo "---- pytest"; grep -v DEBUG "$OUT/pytest.log" | tail -20
echo "---- serve log"; grep -v "Warning\|warn" "$OUT/serve.log" | tail -14
[ -f "$OUT/h200-serve-mlp.json" ] && python3 - "$OUT/h200-serve-mlp.json" <<'EOF'
import json, sys
from contract import advisor, buckets
d = json.load(open(sys.argv[1]))
s, env = d["serve"], d["environment"]
print("----", env["gpu_name"], "torch", env["torch_version"], "requests", s["requests"])
for r in s["results"]:
    pool = r["graph_pool_bytes"]
    print(f"{r['strategy']:18} {r['status']:6} req/s={r['requests_per_s'] or 0:9.1f} "
          f"rows/s={r['rows_per_s'] or 0:10.0f} p50={r['latency_ms_p50'] or 0:.3f} "
          f"p99={r['latency_ms_p99'] or 0:.3f} graphs={r['graphs']} "
          f"pool_MiB={'-' if pool is None else f'{pool / 2**20:.1f}'} "
          f"setup_s={r['setup_s'] or 0:.2f} glaunch/req={r['graph_launches_per_request']} "
          f"correct={r['correct']} {r['message'][:80]}")
pts = [advisor.ProfilePoint(p["batch_size"], p["bucket_ms"], p["eager_ms"], p["pool_bytes"],
                            p["pool_extra_bytes"]) for p in s["profile"]]
if pts:
    a = advisor.advise(buckets.empirical_pmf(s["stream"]), pts)
    for name, p in (("advisor", a.recommended), ("pow2", a.pow2)):
        if p:
            print(f"{name}: {'/'.join(map(str, p.buckets))} rows/s={p.rows_per_s:.0f} "
                  f"pool_MiB={(p.pool_bytes or 0) / 2**20:.1f}")
EOF
