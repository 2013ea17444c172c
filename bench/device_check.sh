#!/bin/bash
# One device call: GPU tests, the runner bench, then (optionally) shipped-CLI sample
# sweeps. Results under $OUT. usage (on the GPU host):
#   [PYTEST_K=expr] [BENCH_ARGS=--drift] bash bench/device_check.sh TESTS_S BENCH_S \
#     "WORKLOAD..." SWEEP_S      (0 seconds skips a part)
set -u
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
OUT=${OUT:-/tmp/lb-out}; mkdir -p "$OUT"
T_TESTS=${1:-150}; T_BENCH=${2:-420}; SAMPLES=${3:-}; T_SWEEP=${4:-300}
start=$(date +%s)
stamp() { echo "== $1 at +$(( $(date +%s) - start ))s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv | tee "$OUT/smi.txt"
python3 -c "import torch, platform; print('torch', torch.__version__, 'cuda', \
torch.version.cuda, torch.cuda.get_device_name(0), 'python', platform.python_version())"
if [ "$T_TESTS" -gt 0 ]; then
  stamp tests
  timeout "$T_TESTS" python3 -m pytest -q -m gpu -p no:cacheprovider \
    tests/runner/core/test_gpu_runner.py tests/runner/serve/test_gpu_serve.py ${PYTEST_K:+-k "$PYTEST_K"} \
    -o addopts="--strict-markers -ra" > "$OUT/pytest.log" 2>&1
  echo "pytest rc=$?"
fi
if [ "$T_BENCH" -gt 0 ]; then
  stamp bench
  timeout "$T_BENCH" python3 bench/runner_bench.py ${BENCH_ARGS:-} --out "$OUT/bench.json" > "$OUT/bench.log" 2>&1
  echo "bench rc=$?"
fi
for w in $SAMPLES; do
  stamp "sweep $w"
  s0=$(date +%s)
  timeout "$T_SWEEP" python3 -m runner sweep --workload "$w" \
    --batch-sizes 1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192 \
    --modes eager,compile,reduce-overhead,cuda-graph --no-db --out "$OUT/h200-$w.json" \
    --label "H200 sample sweep ($w, all modes, batch 1..8192)" > "$OUT/sweep-$w.log" 2>&1
  echo "sweep $w rc=$? wall_s=$(( $(date +%s) - s0 ))"
done
stamp done
[ -f "$OUT/pytest.log" ] && { echo "---- pytest"; grep -v DEBUG "$OUT/pytest.log" | tail -25; }
for w in $SAMPLES; do echo "---- sweep $w"; tail -17 "$OUT/sweep-$w.log"; done
[ -f "$OUT/bench.log" ] && { echo "---- bench"; grep -v Warning "$OUT/bench.log" | grep -v "^  warn\|_warn_once" | tail -90; }
