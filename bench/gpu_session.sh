#!/bin/bash
# Device calls for issues 44 and 47 (run from the repository root on the GPU host, with
# the dashboard's wheels carried in .whl so that every GPU test runs):
#   bash bench/gpu_session.sh sweeps  the default sweep (wall time, where it goes, the
#                                     cuda-graph step against triton) and two more for
#                                     repeatability (time and memory), where a repeat pass
#                                     spends its time, the energy check, the hf decode sweep
#   bash bench/gpu_session.sh samples the memory check (mlp, hf decode), the timm resnet18
#                                     sweep, graph-memory runs of mlp, timm and (not on
#                                     the H100, whose ships) hf decode,
#                                     then pytest -m gpu in the time left
#   bash bench/gpu_session.sh mixed   the default sweep timed, then the samples stage
#   bash bench/gpu_session.sh gpus    issue 47 on a second GPU: the default sweep timed,
#                                     graph-memory runs of hf decode and timm resnet18,
#                                     two repeats for the memory spread
#   bash bench/gpu_session.sh memory  the memory check alone (mlp and hf decode), with the
#                                     call's whole budget
#   bash bench/gpu_session.sh cold    issue 47: the default sweep on empty caches without
#                                     and with the compile helpers, then warm; whether
#                                     idle prepared processes slow a timed one
#                                     (bench/held_probe.py); where a fresh host's compile
#                                     time goes (bench/compile_probe.py)
#   bash bench/gpu_session.sh ahead   the compile helpers set to auto:
#                                     the helpers' GPU test, the default sweep on this
#                                     fresh host's caches, two repeats on the caches
#                                     it left, their coverage, then every GPU test in
#                                     the time left
#   bash bench/gpu_session.sh bytecode a fresh host as pip leaves it (torch's bytecode
#                                     on disk, empty compile caches): the default
#                                     sweep, two repeats and their coverage, the
#                                     sweep with the compile helpers, the GPU tests
#   bash bench/gpu_session.sh fresh   the compile helpers under auto on a fresh host
#                                     (bytecode on disk, empty caches): the default
#                                     sweep, two repeats, their coverage; the sweep
#                                     without helpers on empty caches and the coverage
#                                     of the runs without helpers; every GPU test in
#                                     the time left
#   bash bench/gpu_session.sh tests   every GPU test file in the call's budget
#   bash bench/gpu_session.sh last    the default sweep timed once on a fresh host as
#                                     pip leaves it, then every GPU test in the time left
#   bash bench/gpu_session.sh one     the default sweep timed once as the host is lent
#                                     (helpers: auto unless the variable says)
#   bash bench/gpu_session.sh verify  after a runner change: every GPU test file, the
#                                     memory check (mlp and hf decode), the default sweep
#                                     timed
# Outputs under $OUT (at most 8 files come back: the bundles and one text of tables);
# labels name the GPU the driver reports. A short table last.
set -u
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
OUT=${OUT:-/tmp/lb-out}; mkdir -p "$OUT"
WORK=/tmp/lb-work; mkdir -p "$WORK/rep"
BUDGET=${BUDGET:-580}
start=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - start) )); }
stamp() { echo "== $1 at +$(( $(date +%s) - start ))s" | tee -a "$OUT/tables.txt"; }
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw \
  --format=csv,noheader | tee -a "$OUT/tables.txt"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | sed 's/^NVIDIA //; s/ .*//')
gpu=$(echo "$GPU" | tr 'A-Z' 'a-z')
python3 -c "import torch, transformers, timm, platform; print('torch', torch.__version__, \
'cuda', torch.version.cuda, 'transformers', transformers.__version__, 'timm', \
timm.__version__, 'python', platform.python_version())" | tee -a "$OUT/tables.txt"

run() {  # name seconds command...: output appended to tables.txt
  local name=$1 secs=$2; shift 2
  [ "$(left)" -lt 20 ] && { echo "skip $name: no time left" | tee -a "$OUT/tables.txt"; return; }
  [ "$secs" -gt "$(left)" ] && secs=$(left)
  stamp "$name"
  timeout -s INT "$secs" "$@" > "$WORK/$name.log" 2>&1
  echo "$name rc=$?" | tee -a "$OUT/tables.txt"
  grep -vE "Warning|warn\(|^\s*$" "$WORK/$name.log" | tail -40 >> "$OUT/tables.txt"
}

sweep() {  # name seconds workload sizes processes [params...]
  local name=$1 secs=$2 workload=$3 sizes=$4 k=$5; shift 5
  local extra=(); for p in "$@"; do extra+=(--param "$p"); done
  run "$name" "$secs" python3 -m runner sweep --workload "$workload" "${extra[@]}" \
    --batch-sizes "$sizes" --modes eager,compile,reduce-overhead,cuda-graph \
    --timing standard --processes "$k" --no-db --out "$OUT/$name.json" \
    --label "$GPU $workload${*:+ ($*)}"
}

gm() {  # name seconds workload sizes [params...]
  local name=$1 secs=$2 workload=$3 sizes=$4; shift 4
  local extra=(); for p in "$@"; do extra+=(--param "$p"); done
  run "$name" "$secs" python3 -m runner graph-memory --workload "$workload" "${extra[@]}" \
    --sizes "$sizes" --pool both --label "$GPU graph memory: $workload${*:+ ($*)}" \
    --no-db --out "$OUT/$name.json"
}

gpu_tests() {  # seconds [pytest args]: every GPU test file, its log under $OUT, its
  # verdicts in tables.txt
  local secs=$1; shift
  stamp "pytest -m gpu"
  timeout "$secs" python3 -m pytest -v -m gpu -p no:cacheprovider \
    -o addopts="--strict-markers -ra" "$@" $(grep -rl "mark.gpu" tests --include="test_*.py") \
    > "$WORK/pytest.log" 2>&1
  echo "pytest rc=$?" | tee -a "$OUT/tables.txt"
  cp "$WORK/pytest.log" "$OUT/" 2>/dev/null
  grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|^E  " "$WORK/pytest.log" | tail -60 \
    >> "$OUT/tables.txt"
}

pyc() {  # how many of torch's modules have their bytecode on disk
  python3 -c "import torch, pathlib; p = pathlib.Path(torch.__file__).parent; \
print('torch .pyc files:', len(list(p.rglob('*.pyc'))), 'for', len(list(p.rglob('*.py'))), \
'.py')" | tee -a "$OUT/tables.txt"
}

bytecode() {  # torch's, triton's and transformers' bytecode written, as pip leaves a host
  pyc
  stamp compileall
  for m in torch triton transformers; do
    d=$(python3 -c "import $m, os; print(os.path.dirname($m.__file__))" 2>/dev/null) &&
      timeout 120 python3 -m compileall -q -j 16 "$d" > /dev/null 2>&1
    echo "compileall $m rc=$?" | tee -a "$OUT/tables.txt"
  done
  pyc
}

repeat_waits() {  # how often each repeat of three_runs waited for compile helpers
  for i in 2 3; do
    grep -c "waiting for the later" "$WORK/rep-$i.log" 2>/dev/null |
      sed "s/^/rep-$i helper waits: /" | tee -a "$OUT/tables.txt"
  done
}

sweep_timed() {  # the default sweep timed once (bench/sweep_time.py: wall, phases, the
  # cuda-graph step against triton): its bundle under $OUT, its figures in tables.txt
  run sweep-time 120 python3 bench/sweep_time.py --out "$WORK/rep" --name "$gpu-mlp-1"
  cp "$WORK/rep/$gpu-mlp-1.json" "$OUT/$gpu-mlp.json" 2>/dev/null
  cat "$WORK/rep/$gpu-mlp-1-time.txt" >> "$OUT/tables.txt" 2>/dev/null
}

three_runs() {  # the default sweep timed (sweep_timed), two repeats, their coverage
  # and memory spread (bench/repeatability.py); the three bundles under $OUT
  sweep_timed
  for i in 2 3; do  # a repeat takes about a minute: none started that could not end
    [ "$(left)" -lt 60 ] && { echo "skip rep-$i: $(left) s left" | tee -a "$OUT/tables.txt"; continue; }
    run "rep-$i" 100 python3 -m runner sweep --workload mlp --batch-sizes 1,8,64,8192 \
      --no-db --out "$WORK/rep/$gpu-mlp-$i.json" --label "$GPU mlp (repeat $i)"
  done
  run repeatability 30 python3 bench/repeatability.py report "$WORK/rep"
  cp "$WORK/rep/$gpu-mlp-2.json" "$WORK/rep/$gpu-mlp-3.json" "$OUT/" 2>/dev/null
}

stage=${1:-sweeps}
if [ "$stage" = sweeps ]; then
  # 1. The default sweep, timed, and the cuda-graph step against triton; two more runs.
  three_runs
  if [ "${PROFILE:-0}" = 1 ]; then  # a diagnostic, shipped from the H100 already
    run repeat-profile 45 python3 bench/repeat_profile.py --top 45
    cp "$WORK/repeat-profile.log" "$OUT/" 2>/dev/null
  fi
  # 2. Energy against the long loop.
  run energy-check 100 python3 bench/energy_check.py --loop-s 2 \
    --points mlp:1,mlp:8192,hf:1 --out "$WORK/energy-check.txt"
  cp "$WORK/energy-check.txt" "$OUT/" 2>/dev/null
  if [ "$gpu" = h100 ]; then  # the H100's hf decode sample ships already: timm's does not
    sweep "$gpu-timm-resnet18" 110 timm 1,8,64 3 model=resnet18
  else
    sweep "$gpu-hf-causal-lm-decode" 90 hf-causal-lm 1,8,64 1 model=small-llama layers=4
  fi
elif [ "$stage" = gpus ]; then
  # Issue 47 first, on a GPU whose older samples ship (the H200): the default sweep timed,
  # the graph-memory runs the H100 has and it lacks, then the two repeats for the memory
  # spread; each step only while the call's budget lasts.
  sweep_timed
  gm "$gpu-graph-memory-hf-small-llama" 90 hf-causal-lm 1,2,4,8,16,32,64,128,256 \
    model=small-llama
  gm "$gpu-graph-memory-timm-resnet18" 60 timm 1,2,4,8,16,32,64 model=resnet18
  for i in 2 3; do
    run "rep-$i" 100 python3 -m runner sweep --workload mlp --batch-sizes 1,8,64,8192 \
      --no-db --out "$WORK/rep/$gpu-mlp-$i.json" --label "$GPU mlp (repeat $i)"
  done
  run repeatability 30 python3 bench/repeatability.py report "$WORK/rep"
elif [ "$stage" = verify ]; then
  gpu_tests 240
  run memory-check 170 python3 bench/memory_check.py --points hf:1,mlp:1 \
    --out "$OUT/$gpu-memory-check.txt"
  sweep_timed
elif [ "$stage" = cold ]; then
  # Is torch's bytecode on disk? A pip install writes it; without it every process of
  # a sweep compiles the sources of each torch module it imports (this script's processes
  # write none: PYTHONDONTWRITEBYTECODE).
  pyc  # (both sweeps below run in the same state, whichever it is)
  python3 -c "import torch; torch.zeros(1).cuda()"  # the libraries read from disk once
  # The default sweep on empty Inductor and Triton caches (a fresh host's), without and
  # with the compile helpers (runner/core/compile_ahead.py); their GPU tests; then the
  # sweep again with them on the caches left (a warm host's).
  ahead() {
    local t=$1 c="$WORK/cache-${1%-warm}"
    local e=(env TRITON_CACHE_DIR="$c/triton" TORCHINDUCTOR_CACHE_DIR="$c/ind")
    if [ "$t" = off ]; then e+=(LAUNCHBENCH_COMPILE_AHEAD=0); else e+=(LAUNCHBENCH_COMPILE_AHEAD=1); fi
    run "sweep-ahead-$t" 120 "${e[@]}" python3 bench/sweep_time.py --out "$WORK/rep" \
      --name "$gpu-ahead-$t"
    cat "$WORK/rep/$gpu-ahead-$t-time.txt" >> "$OUT/tables.txt" 2>/dev/null
    cp "$WORK/rep/$gpu-ahead-$t.log" "$OUT/" 2>/dev/null
  }
  ahead off
  ahead on
  run gpu-ahead-tests 120 python3 -m pytest -q -m gpu -p no:cacheprovider \
    -o addopts="--strict-markers -ra" tests/runner/core/test_gpu_runner.py \
    -k "later_batch_sizes or cold_or_warm"
  ahead on-warm
  run held-probe 90 python3 bench/held_probe.py
  run compile-probe 150 python3 bench/compile_probe.py --cases serial,parallel,warm,profile
  cp "$WORK/compile-probe.log" "$OUT/" 2>/dev/null
elif [ "$stage" = ahead ]; then
  # The compile helpers where the cache is empty (auto): their GPU test with its log
  # (on caches of its own); the default sweep on this fresh host's own
  # caches (helpers on), twice more on the caches it left (helpers off), their coverage;
  # every other GPU test in the time left.
  run ahead-test 150 python3 -m pytest -q -m gpu -p no:cacheprovider \
    -o addopts="--strict-markers -ra" tests/runner/core/test_gpu_runner.py \
    -k later_batch_sizes
  cp "$WORK/ahead-test.log" "$OUT/" 2>/dev/null
  export LAUNCHBENCH_COMPILE_AHEAD=auto
  three_runs
  cp "$WORK/rep/$gpu-mlp-1.log" "$OUT/" 2>/dev/null
  repeat_waits
  unset LAUNCHBENCH_COMPILE_AHEAD
  gpu_tests "$(( $(left) - 10 ))" --deselect \
    tests/runner/core/test_gpu_runner.py::test_later_batch_sizes_find_their_compile_on_disk
elif [ "$stage" = fresh ]; then
  # The helpers under auto on a fresh host as pip leaves it (bytecode on disk, caches
  # of their own and empty): the default sweep (helpers on, as auto finds no graph),
  # two repeats on the caches it left (auto: helpers off), their coverage; then the
  # sweep without helpers on empty caches again, and the coverage of the three runs
  # without helpers. Tells whether a run with helpers reads apart from its repeats.
  bytecode
  c="$WORK/cache-$(date +%s)"
  export TRITON_CACHE_DIR="$c/a/triton" TORCHINDUCTOR_CACHE_DIR="$c/a/ind"
  export LAUNCHBENCH_COMPILE_AHEAD=auto
  three_runs
  repeat_waits
  export TRITON_CACHE_DIR="$c/b/triton" TORCHINDUCTOR_CACHE_DIR="$c/b/ind"
  export LAUNCHBENCH_COMPILE_AHEAD=0
  if [ "${WITHOUT:-1}" = 0 ] || [ "$(left)" -lt 90 ]; then  # WITHOUT=0: tests first
    echo "skip sweep-time-4: WITHOUT=${WITHOUT:-1}, $(left) s left" | tee -a "$OUT/tables.txt"
  else
    mkdir -p "$WORK/rep-b"
    run sweep-time-4 120 python3 bench/sweep_time.py --out "$WORK/rep-b" --name "$gpu-mlp-4"
    cat "$WORK/rep-b/$gpu-mlp-4-time.txt" >> "$OUT/tables.txt" 2>/dev/null
    cp "$WORK/rep-b/$gpu-mlp-4.json" "$OUT/" 2>/dev/null
    cp "$WORK"/rep/"$gpu"-mlp-[23].json "$WORK/rep-b/" 2>/dev/null
    run repeatability-b 30 python3 bench/repeatability.py report "$WORK/rep-b"
  fi
  # Every GPU test in the time left, under the default setting and the tests' own caches
  # (tests/conftest.py), as a GPU host runs them.
  unset LAUNCHBENCH_COMPILE_AHEAD TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR
  if [ "$(left)" -gt 60 ]; then gpu_tests "$(( $(left) - 10 ))"; fi
elif [ "$stage" = tests ]; then  # every GPU test file, nothing else
  gpu_tests "$(( $(left) - 10 ))"
elif [ "$stage" = last ]; then
  # A call with little time left: the default sweep timed once on this fresh host as pip
  # leaves it (bytecode written, empty caches, helpers as the default says), then every
  # GPU test in the time left.
  bytecode
  unset LAUNCHBENCH_COMPILE_AHEAD
  sweep_timed
  gpu_tests "$(( $(left) - 10 ))"
elif [ "$stage" = one ]; then
  # The default sweep timed once on this host as lent (no bytecode, empty caches), the
  # helpers as LAUNCHBENCH_COMPILE_AHEAD says (auto here): a call with little time left.
  export LAUNCHBENCH_COMPILE_AHEAD=${LAUNCHBENCH_COMPILE_AHEAD:-auto}
  sweep_timed
elif [ "$stage" = bytecode ]; then
  # A fresh host as pip leaves it: torch's, triton's and transformers' bytecode on disk
  # (the lent image has none, so every process of a sweep compiles their sources as it
  # imports them), Inductor's and Triton's caches empty. The default sweep there, two
  # repeats on the caches it left and their coverage (no compile helpers in any: does
  # the first run on a fresh machine read apart?), then the sweep with the helpers on
  # caches of their own (their imports are the shorter with bytecode); the GPU tests
  # in the time left.
  bytecode
  three_runs
  c="$WORK/cache-helpers"
  run sweep-helpers 120 env TRITON_CACHE_DIR="$c/triton" TORCHINDUCTOR_CACHE_DIR="$c/ind" \
    LAUNCHBENCH_COMPILE_AHEAD=1 python3 bench/sweep_time.py --out "$WORK/rep-h" \
    --name "$gpu-helpers"
  cat "$WORK/rep-h/$gpu-helpers-time.txt" >> "$OUT/tables.txt" 2>/dev/null
  cp "$WORK/rep-h/$gpu-helpers.json" "$OUT/" 2>/dev/null
  gpu_tests "$(( $(left) - 10 ))"
elif [ "$stage" = memory ]; then
  run memory-check "$(( $(left) - 15 ))" python3 bench/memory_check.py --points hf:1,mlp:1 \
    --out "$OUT/$gpu-memory-check.txt"
else
  if [ "$stage" = mixed ]; then  # one call on a GPU whose repeat runs already ship
    run sweep-time 120 python3 bench/sweep_time.py --out "$WORK/rep" --name "$gpu-mlp-1"
    cat "$WORK/rep/$gpu-mlp-1-time.txt" >> "$OUT/tables.txt" 2>/dev/null
  fi
  run memory-check 200 python3 bench/memory_check.py --out "$WORK/memory-check.txt"
  cp "$WORK/memory-check.txt" "$OUT/" 2>/dev/null
  sweep "$gpu-timm-resnet18" 110 timm 1,8,64 3 model=resnet18
  gm "$gpu-graph-memory-mlp" 50 mlp 1,2,4,8,16,32,64,128,256,512
  gm "$gpu-graph-memory-timm-resnet18" 60 timm 1,2,4,8,16,32,64 model=resnet18
  if [ "$gpu" != h100 ]; then  # the H100's ships already (data/samples/README.md)
    gm "$gpu-graph-memory-hf-small-llama" 90 hf-causal-lm 1,2,4,8,16,32,64,128,256 \
      model=small-llama
  fi
  gpu_tests "$(( $(left) - 10 ))"
fi
stamp done
grep -E "^==|rc=|waits|wall|MISS|coverage|memory:|agree|within their|passed|failed|do_bench|setup:|\.pyc|compileall|alone|holders|ms a step| s  " \
  "$OUT/tables.txt" | tail -70
