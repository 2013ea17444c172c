#!/bin/bash
# One device call: the GPU tests (optional), then sample sweeps through the shipped CLI,
# each a `name:seconds:workload:batch sizes:processes[:params]` argument, each bundle
# written to $OUT/<name>.json and its log to $OUT/<name>.log; a short table last.
# usage (on the GPU host, from the repository root):
#   TESTS="tests/runner/core/test_gpu_x.py ..." bash bench/device_samples.sh NAME:SECS:WORKLOAD:SIZES:K[:P=V,...] ...
# The transformers and timm samples (issue 26; the H200 image has both packages):
#   TESTS="tests/runner/core/test_gpu_models.py" TESTS_S=150 bash bench/device_samples.sh \
#     h200-hf-causal-lm-decode:170:hf-causal-lm:1,8,64:1:model=small-llama,layers=4 \
#     h200-timm-resnet18:70:timm:1,8,64:1:model=resnet18
# (4 of small-llama's 8 layers: each compiled mode costs a Dynamo trace of every layer on
# the host's slow CPU, and the sweep must fit the device time)
# A sweep stopped by its time limit (SIGINT, like Ctrl-C) still writes its finished points,
# with the run marked cancelled.
set -u
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
OUT=${OUT:-/tmp/lb-out}; mkdir -p "$OUT"
start=$(date +%s)
stamp() { echo "== $1 at +$(( $(date +%s) - start ))s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
python3 -c "import torch, platform; print('torch', torch.__version__, 'cuda', \
torch.version.cuda, 'python', platform.python_version())"
if [ -n "${TESTS:-}" ]; then
  stamp tests
  timeout "${TESTS_S:-240}" python3 -m pytest -q -m gpu -p no:cacheprovider $TESTS \
    -o addopts="--strict-markers -ra" > "$OUT/pytest.log" 2>&1
  echo "pytest rc=$?"
fi
for spec in "$@"; do
  IFS=: read -r name secs workload sizes k params <<< "$spec"
  extra=()
  for p in ${params//,/ }; do extra+=(--param "$p"); done
  stamp "$name"
  timeout -s INT "$secs" python3 -m runner sweep --workload "$workload" \
    --batch-sizes "$sizes" --modes eager,compile,reduce-overhead,cuda-graph \
    --timing standard --processes "$k" "${extra[@]}" \
    --label "H200 $workload${params:+ ($params)}" --no-db --out "$OUT/$name.json" \
    > "$OUT/$name.log" 2>&1
  echo "$name rc=$?"
done
stamp done
[ -f "$OUT/pytest.log" ] && { echo "---- pytest"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -15; }
for spec in "$@"; do
  name=${spec%%:*}; echo "---- $name"; grep -vE "^\s*$|Warning|warn" "$OUT/$name.log" | tail -14
done
