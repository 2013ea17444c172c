#!/bin/bash
# One device call for the intervals work: optionally the GPU tests, then repeatability
# sweeps (bench/repeatability.py run) of one workload, then the report over all runs so
# far. Results under $OUT. usage (on the GPU host, from the repository root):
#   [PROCESSES=K] bash bench/repeatability_device.sh TESTS_S WORKLOAD SIZES RUNS [BASELINE_TREE]
# TESTS_S 0 skips the tests; BASELINE_TREE (the runner before rounds, carried with the
# call) also sweeps the same points once with it, for the wall-time ratio.
set -u
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
OUT=${OUT:-/tmp/lb-out}; mkdir -p "$OUT/rep"
T_TESTS=${1:-0}; WORKLOAD=$2; SIZES=$3; RUNS=${4:-3}; BASELINE=${5:-}
start=$(date +%s)
stamp() { echo "== $1 at +$(( $(date +%s) - start ))s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv | tee "$OUT/smi.txt"
python3 -c "import torch, platform; print('torch', torch.__version__, 'cuda', \
torch.version.cuda, torch.cuda.get_device_name(0), 'python', platform.python_version())"
nproc; grep -m1 "model name" /proc/cpuinfo
if [ "$T_TESTS" -gt 0 ]; then
  stamp tests
  timeout "$T_TESTS" python3 -m pytest -q -m gpu -p no:cacheprovider \
    tests/runner/core/test_gpu_runner.py tests/runner/serve/test_gpu_serve.py ${PYTEST_K:+-k "$PYTEST_K"} \
    -o addopts="--strict-markers -ra" > "$OUT/pytest.log" 2>&1
  echo "pytest rc=$?"
fi
stamp "sweeps $WORKLOAD"
python3 bench/repeatability.py run --out "$OUT/rep" --workloads "$WORKLOAD" \
  --sizes "$WORKLOAD=$SIZES" --runs "$RUNS" ${BASELINE:+--baseline "$BASELINE"} \
  --processes "${PROCESSES:-1}" \
  > "$OUT/rep.log" 2>&1
echo "repeatability rc=$?"
stamp done
[ -f "$OUT/pytest.log" ] && { echo "---- pytest"; grep -v DEBUG "$OUT/pytest.log" | grep -E "passed|failed|FAILED|Error|assert" | tail -25; }
grep -E "rc=|wall" "$OUT/rep.log"
echo "---- report"; python3 bench/repeatability.py report "$OUT/rep" | tail -45
