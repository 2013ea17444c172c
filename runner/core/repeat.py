"""`--processes K`: the timed rounds of every batch size, repeated in K - 1 fresh processes.

Why (pyperf's reason, measured on the lent H200): some host states last as long as a
process, or tens of seconds of one (the launch cost sat at ~11 us in one process and at
~8 us in the next), and two processes in the same state still differed by ~3%. Rounds
inside one process cannot see past that; a fresh process draws a new state.

Why whole passes, run after the sweep's own: each child runs every batch size of the
sweep in turn (one process start and one torch import per pass, not per point), so the
K samples of one batch size lie a pass apart in time (the slow host episodes seen there
last ~5-30 s) rather than back to back. The sweep's own process measures each batch size
first, as always (memory, profile, latency come from it alone), and stores each point
at once: a sweep killed in its first pass keeps every point it finished (before, the
children ran first and a kill there left nothing). A child then builds the workload,
prepares every mode (warm from the on-disk compile caches), warms up, times its rounds
and prints them, one JSON line per batch size; the sweep pools them with the rounds so
far, each process a cluster (runner/core/stats.py), and replaces the stored points, which
say how many processes they hold (details.processes).

The child is `python -m runner.core.repeat` with the request as JSON on stdin: a plain
subprocess, so nothing of the parent's CUDA context, Dynamo caches or allocator leaks in.

Why the children start with the sweep (issue 47): a child spends its first seconds on
things that measure nothing: the interpreter, torch's import (~3.5 s on the H100 host)
and the workload's library. Started when the sweep starts (`Children`), each does those
while the sweep's own pass runs, then waits on stdin, holding no CUDA context (`warm`
says why); the sweep sends `go` (with the batch sizes that got rounds) to one
child at a time, so the passes still run one after another, a pass apart in time, and
no two processes ever time at once. docs/MEASUREMENT.md, "Processes", has the H100's
figures.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

from contract.specs import SweepSpec
from runner.core.rounds import RepeatError, Rounds

CHILD_TIMEOUT_S = 1800


def to_json(r: Rounds) -> dict:
    return dataclasses.asdict(r)


def from_json(doc: dict) -> Rounds:
    order = [tuple(o) for o in doc["order"]]
    return Rounds(samples_ms={k: list(v) for k, v in doc["samples_ms"].items()},
                  host_ms={k: list(v) for k, v in doc["host_ms"].items()},
                  launch_us=list(doc["launch_us"]), order=order,
                  process=list(doc.get("process") or [0] * len(order)),
                  failed=dict(doc["failed"]), stop_reason=doc["stop_reason"],
                  seconds=float(doc["seconds"]))


def child(module: str, spec: SweepSpec, stderr, *, hold: bool = False,
          env: dict[str, str] | None = None, **popen: Any) -> subprocess.Popen:
    """`python -m module` with `spec` (its to_json, the one serialised form) as the first
    line on stdin, one JSON line per result on stdout. Shared with runner/core/rescue.py.
    `hold`: stdin stays open for the `go` line (Children). `env`: variables added to
    this process's environment for the child (ones already set here win)."""
    root = str(Path(__file__).resolve().parents[2])  # the repository: where -m resolves
    env = {**(env or {}), **os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.Popen([sys.executable, "-m", module], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=stderr, text=True,
                            env=env, **popen)
    stdin = cast(IO[str], proc.stdin)  # stdin=PIPE: never None
    stdin.write(json.dumps(spec.to_json()) + "\n")
    if hold:
        stdin.flush()
    else:
        stdin.close()
    return proc


class Children:
    """The sweep's K - 1 repeat processes, started at once with the sweep and held until
    their turn (the module's docstring says why). close() ends any not used."""

    def __init__(self, spec: SweepSpec):
        self.spec = spec
        self.held: list[tuple[subprocess.Popen, Any]] = []
        for _ in range(1, spec.processes):
            # stderr to a file, not a pipe: compile warnings could fill a pipe nobody
            # reads while the child's stdout is being read, and both would wait forever.
            err = tempfile.TemporaryFile("w+")
            self.held.append((_held_child(spec, err), err))

    def go(self, batch_sizes: tuple[int, ...]) -> tuple[subprocess.Popen, Any]:
        """The next held child, told to run its pass over `batch_sizes`."""
        proc, err = self.held.pop(0)
        send_go(proc, batch_sizes)
        return proc, err

    def close(self) -> None:
        while self.held:
            proc, err = self.held.pop()
            try:
                if proc.stdin is not None:
                    proc.stdin.close()  # EOF: a held child exits without a pass
            except OSError:
                pass
            end(proc, err)


# A repeat child compiles nothing new: the sweep's own pass, which runs first, left every
# graph of every batch size in Inductor's on-disk caches, so a child only loads them. With
# its default, Inductor starts a pool of compile workers (one a core, up to 32) at a
# child's first compile, each a Python process importing torch: seconds of CPU on the
# host while that child prepares and times its first batch size, for nothing to compile.
# One compile thread means no pool; what little a cache hit compiles runs in-process.
CHILD_ENV = {"TORCHINDUCTOR_COMPILE_THREADS": "1"}


def _held_child(spec: SweepSpec, stderr) -> subprocess.Popen:
    """A repeat child that warms up and then waits for its `go` line."""
    return child("runner.core.repeat", spec, stderr, hold=True, env=CHILD_ENV)


def send_go(proc: subprocess.Popen, batch_sizes: tuple[int, ...]) -> None:
    """A held child (child(hold=True)) released: its batch sizes, then EOF on stdin
    (wait_for_go is its side). Shared with runner/core/compile_ahead.py."""
    try:
        if proc.stdin is not None:
            proc.stdin.write(json.dumps({"go": list(batch_sizes)}) + "\n")
            proc.stdin.close()
    except OSError:  # it died while held: its stderr says why (passes reads it)
        pass


def _child(spec: SweepSpec, stderr) -> subprocess.Popen:
    """A repeat child told to run at once (one not started with the sweep)."""
    proc = _held_child(spec, stderr)
    send_go(proc, spec.batch_sizes)
    return proc


def end(proc: subprocess.Popen, err) -> str:
    """A child done with: killed if it still runs, its stderr file (`err`) read and
    closed; returns that file's last line."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    err.seek(0)
    tail = (err.read().strip().splitlines() or ["no output"])[-1]
    err.close()
    return tail


def read_spec() -> SweepSpec:
    """A child's side of child(): the spec its parent checked (the first line)."""
    return SweepSpec.from_json(json.loads(sys.stdin.readline()))


def wait_for_go() -> tuple[int, ...] | None:
    """A child's side of Children.go (or of _child, which sends it at once): the batch
    sizes to run, or None at EOF (the sweep ended without this pass)."""
    line = sys.stdin.readline()
    if not line:
        return None
    return tuple(int(b) for b in json.loads(line)["go"])


def passes(spec: SweepSpec, *, on_batch: Callable[[int, int], None] | None = None,
           should_stop: Callable[[], bool] | None = None,
           on_rounds: Callable[[int, int, object], None] | None = None,
           children: Children | None = None) -> dict[int, list]:
    """Run spec.processes - 1 child passes over spec.batch_sizes, one after the other
    (`children`: the ones started with the sweep; without, each is started here).

    Returns batch size -> one entry per pass: its Rounds, or a RepeatError saying why that
    pass has none for this batch size. on_batch(pass, batch) is called before each batch
    size a child starts (progress); on_rounds(pass, batch, entry) as soon as an entry is
    known (the sweep updates that batch size's stored points then); should_stop() ends
    the children early."""
    out: dict[int, list] = {b: [] for b in spec.batch_sizes}
    for i in range(1, spec.processes):
        if should_stop is not None and should_stop():
            break
        if children is not None and children.held:
            proc, err = children.go(spec.batch_sizes)
        else:
            err = tempfile.TemporaryFile("w+")  # a file, not a pipe: see Children
            proc = _child(spec, err)
        seen: set[int] = set()
        try:
            if on_batch is not None:
                on_batch(i, spec.batch_sizes[0])
            for line in cast(IO[str], proc.stdout):  # stdout=PIPE (child): never None
                doc = json.loads(line)
                b = int(doc["batch_size"])
                seen.add(b)
                out[b].append(from_json(doc["rounds"]) if "rounds" in doc
                              else RepeatError(f"repeat process {i}: {doc['error']}"))
                if on_rounds is not None:
                    on_rounds(i, b, out[b][-1])
                rest = [x for x in spec.batch_sizes if x not in seen]
                if rest and on_batch is not None:
                    on_batch(i, rest[0])
                if should_stop is not None and should_stop():
                    proc.terminate()
                    break
            proc.wait(timeout=CHILD_TIMEOUT_S)
        finally:
            tail = end(proc, err)
        for b in spec.batch_sizes:
            if b not in seen:
                out[b].append(RepeatError(
                    f"repeat process {i} exited {proc.returncode}: {tail[:300]}"))
                if on_rounds is not None:
                    on_rounds(i, b, out[b][-1])
    return out


def warm(spec: SweepSpec):
    """What a held child does before its turn: the imports (torch, the core, the
    workload's library) and nothing that touches the GPU. Returns the resolved workload.

    Not the CUDA context: on the H100, a sweep whose two held children had each made a
    context and imported Inductor timed launch-bound steps ~40% slower (eager batch 1:
    1.23 ms against 0.88 ms in the same call without them;
    bench/results/h100-session-held-contexts.txt). Dynamo's and Inductor's modules are
    imported (CPU work, no CUDA call) only where CHILD_ENV holds: then no compile pool
    can start in this process; bench/sweep_time.py checks the step times on the GPU."""
    import gc

    import torch  # noqa: F401 - the import is the point: seconds, now

    from contract.vocab import COMPILED_MODES
    from runner.core import point  # noqa: F401 - the core's imports, now
    from runner.core.workloads import resolve

    workload = resolve(spec.workload, dict(spec.params))
    if set(COMPILED_MODES) & set(spec.modes) and \
            os.environ.get("TORCHINDUCTOR_COMPILE_THREADS") == "1":
        import torch._dynamo  # noqa: F401
        import torch._inductor.compile_fx  # noqa: F401
    gc.freeze()  # what the imports made lives on: later collections skip it
    return workload


def main() -> int:
    import gc

    from runner.core.point import time_batch_rounds
    from runner.core.timing import TIMING_PRESETS, for_processes

    spec = read_spec()
    workload = warm(spec)
    batch_sizes = wait_for_go()
    if batch_sizes is None:
        return 0
    config = for_processes(TIMING_PRESETS[spec.timing], spec.processes)
    for batch in batch_sizes:
        try:
            r = time_batch_rounds(workload, spec.modes, int(batch), spec.device, config)
            line = {"batch_size": batch, "rounds": to_json(r)}
        except Exception as e:  # noqa: BLE001 - this batch size only; the pass goes on
            line = {"batch_size": batch, "error": f"{type(e).__name__}: {e}"[:300]}
        print(json.dumps(line), flush=True)
        # As the sweep does after each point: each gc.collect before a timed section
        # (gc_paused) then scans only new objects. Seen on the H100: ~1 s a batch size
        # of collections in a child otherwise (bench/results/h100-memory-energy-probe.txt).
        gc.freeze()
    return 0


if __name__ == "__main__":
    sys.exit(main())
