#!/bin/bash
# Issue 38's device calls, one script (run from the repository root on the GPU host, with
# the dashboard's wheels carried in .whl so that every GPU test runs):
#   bash bench/h200_capture_energy.sh capture   graph-memory for every built-in CUDA
#                                               workload (samples: mlp, hf decode), then
#                                               pytest -m gpu
#   bash bench/h200_capture_energy.sh energy    bench/energy_check.py; the default
#                                               16-point mlp sweep and an hf decode sweep
#                                               (3 processes, energy on): samples, and
#                                               issue 39's wall time and host split
#   bash bench/h200_capture_energy.sh tests     pytest -m gpu, twice
#   bash bench/h200_capture_energy.sh rep       three mlp 1,8,64 runs: interval coverage
#   bash bench/h200_capture_energy.sh check     bench/energy_check.py, graph-memory refusing
#                                               train-step, then pytest -m gpu once
# Labels name the GPU the driver reports (the device may lend an H100 for an H200).
# Outputs under $OUT; a short table last.
set -u
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
OUT=${OUT:-/tmp/lb-out}; mkdir -p "$OUT"
start=$(date +%s)
stamp() { echo "== $1 at +$(( $(date +%s) - start ))s"; }
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed 's/^NVIDIA //; s/ .*//')
python3 -c "import torch, transformers, platform; print('torch', torch.__version__, 'cuda', \
torch.version.cuda, 'transformers', transformers.__version__, 'python', platform.python_version())"

gm() {  # name secs workload sizes [params...]
  local name=$1 secs=$2 workload=$3 sizes=$4; shift 4
  local extra=(); for p in "$@"; do extra+=(--param "$p"); done
  stamp "graph-memory $name"
  timeout "$secs" python3 -m runner graph-memory --workload "$workload" --sizes "$sizes" \
    --pool both "${extra[@]}" --label "$GPU graph memory: $workload${*:+ ($*)}" --no-db \
    --out "$OUT/$name.json" > "$OUT/$name.log" 2>&1
  echo "$name rc=$?"; tail -3 "$OUT/$name.log"
}

gpu_tests() {  # log name
  stamp "pytest -m gpu ($1)"
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider -o addopts="--strict-markers -ra" \
    tests > "$OUT/$1.log" 2>&1
  echo "pytest rc=$?"
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/$1.log" | tail -8
}

case "${1:-}" in
capture)
  gm gm-mlp 60 mlp 1,2,4,8,16,32,64,128,256,512
  gm gm-hf-small-llama 120 hf-causal-lm 1,2,4,8,16,32,64,128,256 model=small-llama
  {  # every other built-in CUDA workload, two sizes each: does it run
    for w in "hf-causal-lm model=tiny-llama" "hf-causal-lm model=tiny-llama phase=prefill" \
             "hf-causal-lm model=small-llama phase=prefill" \
             "hf-causal-lm model=llama-3.2-1b-shape" "timm model=resnet18" \
             "transformer-decode" "kernel-chain" "train-step"; do
      set -- $w; name=$1; shift
      extra=(); for p in "$@"; do extra+=(--param "$p"); done
      echo "### $w"
      timeout 90 python3 -m runner graph-memory --workload "$name" --sizes 1,8 --pool both \
        "${extra[@]}" --no-db --out /tmp/gm-check.json 2>&1 | grep -v "captured, pools" | tail -12
      echo "rc=${PIPESTATUS[0]}"
    done
  } > "$OUT/gm-all.log" 2>&1
  grep -E "^###|^rc=|error" "$OUT/gm-all.log"
  gpu_tests pytest-1
  ;;
energy)
  stamp energy-check
  timeout 200 python3 bench/energy_check.py --out "$OUT/energy-check.txt" > "$OUT/energy-check.log" 2>&1
  echo "energy-check rc=$?"
  # Issue 39's default 16-point sweep (target: 60 s), with energy: the shipped sample.
  stamp mlp-sweep
  t0=$(date +%s)
  timeout -s INT 200 python3 -m runner sweep --workload mlp --batch-sizes 1,8,64,8192 \
    --modes eager,compile,reduce-overhead,cuda-graph --timing standard --processes 3 \
    --label "$GPU mlp" --no-db --out "$OUT/h200-mlp-energy.json" > "$OUT/mlp-sweep.log" 2>&1
  echo "mlp-sweep rc=$? wall $(( $(date +%s) - t0 ))s"
  stamp hf-sweep
  t0=$(date +%s)
  timeout -s INT 200 python3 -m runner sweep --workload hf-causal-lm --param model=small-llama \
    --param layers=4 --batch-sizes 1,8,64 --modes eager,compile,reduce-overhead,cuda-graph \
    --timing standard --processes 3 --label "$GPU hf-causal-lm decode" --no-db \
    --out "$OUT/h200-hf-decode-energy.json" > "$OUT/hf-sweep.log" 2>&1
  echo "hf-sweep rc=$? wall $(( $(date +%s) - t0 ))s"
  echo "---- energy check"; tail -12 "$OUT/energy-check.log"
  echo "---- mlp sweep"; grep -vE "^\s*$|Warning|warn" "$OUT/mlp-sweep.log" | tail -24
  ;;
check)
  stamp energy-check
  timeout 240 python3 bench/energy_check.py --out "$OUT/energy-check.txt" > "$OUT/energy-check.log" 2>&1
  echo "energy-check rc=$?"
  stamp graph-memory-train-step
  timeout 90 python3 -m runner graph-memory --workload train-step --sizes 1,8 --no-db \
    --out /tmp/gm-train.json > "$OUT/gm-train.log" 2>&1
  echo "graph-memory train-step rc=$? (2: refused, as it should be)"; tail -2 "$OUT/gm-train.log"
  gpu_tests pytest-check
  echo "---- energy check"; grep -v Warn "$OUT/energy-check.log" | tail -11
  ;;
tests)
  gpu_tests pytest-2
  gpu_tests pytest-3
  ;;
rep)
  stamp repeatability
  python3 bench/repeatability.py run --out "$OUT" --workloads mlp --sizes mlp=1,8,64 --runs 3 \
    --processes 3 > "$OUT/rep.log" 2>&1
  echo "repeatability rc=$?"
  python3 bench/repeatability.py report "$OUT" | tail -30
  ;;
*) echo "usage: $0 capture|energy|tests|rep|check"; exit 2 ;;
esac
stamp done
