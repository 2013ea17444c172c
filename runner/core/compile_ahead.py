"""A sweep's later batch sizes compiled ahead, in helper processes, while the first is set up.

Why (issue 47): on a host whose Inductor and Triton caches are empty (a fresh machine),
the sweep's own pass compiles each batch size's compiled modes cold in turn; on the H200
that was 16.2 s of setup compile and 6.6 s of reduce-overhead's, against 8.1 and 2.2 s on
warm caches. Each batch size is its own static specialization (modes.py, dynamic=False),
so its compile depends on nothing the others leave: helpers can compile them at the same
time, and the sweep's own compile of each then hits the on-disk caches, as its repeat
children's already do. bench/compile_probe.py measures the cases (serial, parallel).

No round is timed while a helper runs: the sweep waits for every helper to end before the
first batch size's rounds (`Ahead.wait`, measure_batch's `before_timing`). What the
helpers overlap is the first batch size's setup: compile, capture and warm-up, whose
length sets each round's steps (a GPU run has to show that the rounds and their coverage
hold). Its setup cost is still a cold compile's, and every later one a warm one, as
`details.compile` (cache hits) says point by point.

A helper is `python -m runner.core.compile_ahead` with the spec (its batch sizes the ones
to compile) on stdin: no CUDA state of the sweep's leaks in or out. It starts with the
sweep and imports torch, the core and Inductor while the sweep reads the idle power, as a
held repeat child does (repeat.warm: no CUDA context), and touches the GPU only once
released after it (`Ahead.go`): most of a helper's time was those imports (below). It
runs with one compile thread (repeat.CHILD_ENV): a pool of compile workers per helper
would put dozens of processes importing torch on the host at once. A helper that fails
costs only its cache entries: the sweep compiles those batch sizes itself, as before.

On by default where they can pay, a fresh host (DEFAULT below, `auto`). On two fresh
H100s (torch 2.11, 2026-12-07, bench/results/h100-compile-ahead/) whose helpers started
only after the idle power, they saved time on one and likely cost it on the other: 59.9
against 56.9 s on empty caches (every later batch size's compile hit the cache: 0.3 s
instead of 1.1-1.4 s; 3.6 s of waiting), then 64.7 s with 8.2 s of waiting, longer than
the 5.5 s or so their cache hits save. A helper's own time is mostly fixed (a process
importing torch and Inductor: 15-16.5 s on those hosts, whose image carries no torch
bytecode) against the 8-11 s of the first batch size's setup it overlaps. Started with
the sweep (held, as now), on two more fresh H100s given torch's bytecode as pip leaves a
host (bench/results/h100-fresh-host/, h100-fresh-host-2/), they saved 8.5 and 5.9 s:
56.3 s against 64.8 s and 57.4 s against 63.3 s on empty caches, 0.9 and 3.4 s of
waiting. The run with them read like its two repeats (coverage 67/72 = 93%; the run
without them on that host 74% against the same repeats), so the one earlier run with
them that read apart (65%, unheld helpers waited for 8.2 s) no longer stands for them. On
caches that already hold graphs they only cost (54.1 s, 3.6 s of waiting), hence `auto`:
LAUNCHBENCH_COMPILE_AHEAD=auto (the default) runs them where Inductor's FX graph cache
holds no graph yet (a fresh host), 1 always, 0 never.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from typing import Any

from contract.specs import SpecError, SweepSpec
from contract.vocab import COMPILED_MODES

HELPERS = 3  # at most: the default sweep's three later batch sizes at once
WAIT_S = 600  # a helper still compiling after this is killed (its batch sizes: cold)


# "auto" (the default: the module's docstring gives the H100s' figures) only on a fresh
# host (fresh_cache), "1" always, "0" never.
DEFAULT = "auto"
SETTINGS = ("auto", "1", "0")


def asked() -> str:
    """LAUNCHBENCH_COMPILE_AHEAD (DEFAULT where unset): auto, 1 (on) or 0 (off); anything
    else is a SpecError naming it, raised where the sweep is checked, before anything
    runs."""
    value = os.environ.get("LAUNCHBENCH_COMPILE_AHEAD", DEFAULT)
    if value not in SETTINGS:
        raise SpecError(f"LAUNCHBENCH_COMPILE_AHEAD={value!r}: use auto (compile helpers "
                        "on a fresh host only), 1 (always) or 0 (never)")
    return value


def fresh_cache() -> bool:
    """Inductor's on-disk FX graph cache holds no graph yet (a fresh host) and is on. A
    cache holding other workloads' graphs counts as warm: the helpers' saving (about 3 s
    on the H100) is smaller than what they cost where the graphs are there already."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    if os.environ.get("TORCHINDUCTOR_FX_GRAPH_CACHE") == "0":  # nothing to share
        return False
    root = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or default_cache_dir()
    graphs = os.path.join(root, "fxgraph")
    if not os.path.isdir(graphs):
        return True
    with os.scandir(graphs) as entries:
        return next(entries, None) is None


def wanted(spec: SweepSpec) -> bool:
    """Helpers only where asked for (asked(); under "auto" on a fresh host) and where
    they can save anything: compiled modes on CUDA, more than one batch size."""
    setting = asked()
    if setting == "0" or not (spec.device.startswith("cuda") and len(spec.batch_sizes) > 1
                              and any(m in COMPILED_MODES for m in spec.modes)):
        return False
    return setting == "1" or fresh_cache()


class Ahead:
    """The helpers of one sweep: started with it and held through its idle power (their
    imports only: no CUDA context, as a held repeat child), released after it (go),
    waited for before its first rounds."""

    def __init__(self, spec: SweepSpec):
        from runner.core.repeat import CHILD_ENV, child

        later = spec.batch_sizes[1:]
        self.shares = [later[i::HELPERS] for i in range(min(HELPERS, len(later)))]
        self.running: list[tuple[subprocess.Popen, Any]] = []
        self.released = False
        try:
            for share in self.shares:
                err = tempfile.TemporaryFile("w+")  # a file: nobody reads it live
                self.running.append((child("runner.core.compile_ahead",
                                           replace(spec, batch_sizes=tuple(share)), err,
                                           hold=True, env=CHILD_ENV), err))
        except BaseException:  # one failed to start: none of them outlives this
            self.close()
            raise

    def go(self) -> None:
        """Each helper's batch sizes sent: from now on it builds them on the device and
        compiles. Idempotent."""
        from runner.core import repeat

        if not self.released:
            self.released = True
            for (proc, _), share in zip(self.running, self.shares, strict=True):
                repeat.send_go(proc, tuple(share))

    def wait(self) -> None:
        """Every helper released and ended (killed after WAIT_S); idempotent."""
        from runner.core.repeat import end

        self.go()
        while self.running:
            proc, err = self.running.pop()
            try:
                proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                pass
            end(proc, err)

    def close(self) -> None:
        """A sweep ending early (cancelled, failed): helpers still held or compiling are
        killed, not waited for."""
        from runner.core.repeat import end

        while self.running:
            end(*self.running.pop())


def main() -> int:
    from runner.core import modes
    from runner.core.point import build_point, grad_mode, reset_state
    from runner.core.repeat import read_spec, wait_for_go, warm

    spec = read_spec()
    workload = warm(spec)  # torch, the core and Inductor imported while held
    batch_sizes = wait_for_go()
    if batch_sizes is None:  # the sweep ended before its idle power was done
        return 0
    for batch in batch_sizes:
        try:
            # Built as the sweep's own point is: the same graph, shapes and grad mode,
            # so the same cache keys.
            model, x, _ = build_point(workload, batch, spec.device)
            with grad_mode(model):
                for mode in spec.modes:
                    if mode in COMPILED_MODES:
                        modes.prepare(mode, model, x, spec.device)
        except Exception as e:  # noqa: BLE001 - this batch size only: the sweep compiles it
            print(f"compile ahead, batch {batch}: {type(e).__name__}: {e}"[:300],
                  file=sys.stderr)
        reset_state(spec.device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
