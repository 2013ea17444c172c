#!/bin/bash
# The shipped CPU trend series (issue 40 item 5): one CPU sweep of the same workload under
# several torch releases, each from its own virtual environment holding torch alone (the
# runner needs nothing else to write a bundle), one after another so no two sweeps share
# the cores. Each bundle goes to $OUT/cpu-mlp-torch-<version>.json, its log beside it.
# usage (from the repository root; VENVS holds torch<version>/ made by
#   python3 -m venv $VENVS/torch2.12.0 && $VENVS/torch2.12.0/bin/pip install 'torch===2.12.0'):
#   VENVS=/work/venvs OUT=data/samples bash bench/cpu_torch_series.sh 2.11.0 2.12.0 2.13.0
# Settings (all sweeps alike): SIZES, MODES, TIMING, PROCESSES below or from the environment.
set -u
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
VENVS=${VENVS:-/work/venvs}
OUT=${OUT:-/tmp/lb-cpu-series}; mkdir -p "$OUT"
SIZES=${SIZES:-1,8,64}
MODES=${MODES:-eager,compile}
TIMING=${TIMING:-standard}
PROCESSES=${PROCESSES:-3}
uptime
for v in "$@"; do
  py="$VENVS/torch$v/bin/python"
  if [ ! -x "$py" ]; then
    echo "no venv for torch $v: $py" >&2
    exit 2
  fi
  "$py" -c "import torch; print('torch', torch.__version__, 'threads', torch.get_num_threads())" \
    2>/dev/null
  start=$(date +%s)
  "$py" -m runner sweep --workload mlp --device cpu --batch-sizes "$SIZES" --modes "$MODES" \
    --timing "$TIMING" --processes "$PROCESSES" \
    --label "CPU trend series: torch $v, its own venv" \
    --no-db --out "$OUT/cpu-mlp-torch-$v.json" > "$OUT/cpu-mlp-torch-$v.log" 2>&1
  rc=$?
  echo "torch $v: rc=$rc, $(( $(date +%s) - start )) s wall; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  tail -n 12 "$OUT/cpu-mlp-torch-$v.log" | grep -E '^ *(batch|[0-9])'
done
