#!/bin/bash
# Does the sweep process's own Inductor compile pool help a first default sweep (issue 47
# item 4)? Its repeat children already run with one compile thread (runner/core/repeat.py
# CHILD_ENV); the sweep process starts torch's pool of compile workers on its first
# compile. On a GPU host: warm the interpreter's bytecode and the OS's file cache, then
# run the default sweep three times, each on its own cold Inductor and Triton caches: the
# pool as torch sets it, one compile thread, the pool again (the two pool runs show what
# order alone moves). Prints each run's wall time and where it went (bench/sweep_time.py).
#   usage: bash bench/compile_threads.sh [pool|threads ...]   (OUT=dir for the tables)
set -u
OUT=${OUT:-/tmp/lb-compile-threads}; WORK=/tmp/lb-compile-threads-work
mkdir -p "$OUT" "$WORK"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton, torch._dynamo, torch._inductor.compile_fx; \
print('torch', torch.__version__, 'cpus', __import__('os').cpu_count())"
one() {  # name [VAR=value ...]
  local name=$1; shift
  local cache; cache=$(mktemp -d /tmp/lb-inductor.XXXXXX)
  env "$@" TORCHINDUCTOR_CACHE_DIR="$cache" TRITON_CACHE_DIR="$cache/triton" \
    python3 bench/sweep_time.py --no-triton --out "$WORK" --name "$name" > "$WORK/$name.out" 2>&1
  cp "$WORK/$name-time.txt" "$OUT/" 2>/dev/null
  echo "== $name ($*)"; grep -E "wall|setup|CLI start|repeat" "$WORK/$name-time.txt" \
    || tail -5 "$WORK/$name.out"
}
# Runs in the order given (default: pool threads pool), each named by its place.
n=0
for kind in ${@:-pool threads pool}; do
  n=$((n + 1))
  if [ "$kind" = threads ]; then one "threads-$n" TORCHINDUCTOR_COMPILE_THREADS=1
  else one "pool-$n"; fi
done
