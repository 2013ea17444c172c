"""`--processes K`: the timed phase of one batch size, repeated in a fresh process.

Why (pyperf's reason): some host states last as long as a process does (where its memory
landed, which core it started on, the allocator's and the driver's layout). Rounds inside
one process cannot see past them; a fresh process draws a new one. A child builds the
workload, prepares every mode (warm from the on-disk compile caches the parent filled),
warms up, times its own rounds and prints them as JSON; the parent pools them with its
own (Rounds.extend) before computing the intervals.

The child is `python -m runner.core.repeat` with the request as JSON on stdin: a plain
subprocess, so nothing of the parent's CUDA context, Dynamo caches or allocator leaks in.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

from runner.core.rounds import Rounds

CHILD_TIMEOUT_S = 1800


class RepeatError(RuntimeError):
    """A repeat process failed; its last line of output says why."""


def to_json(r: Rounds) -> dict:
    return dataclasses.asdict(r)


def from_json(doc: dict) -> Rounds:
    return Rounds(samples_ms={k: list(v) for k, v in doc["samples_ms"].items()},
                  host_ms={k: list(v) for k, v in doc["host_ms"].items()},
                  launch_us=list(doc["launch_us"]),
                  order=[tuple(o) for o in doc["order"]], failed=dict(doc["failed"]),
                  stop_reason=doc["stop_reason"], seconds=float(doc["seconds"]))


def in_fresh_process(request: dict) -> Rounds:
    """Run one child for `request` (workload, params, modes, batch_size, device,
    timing) and return its rounds."""
    root = str(Path(__file__).resolve().parents[2])  # the repository: where -m resolves
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-m", "runner.core.repeat"], input=json.dumps(request),
                          capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RepeatError(f"repeat process exited {proc.returncode}: {tail[:300]}")
    return from_json(json.loads(lines[-1]))


def main() -> int:
    from runner.core.point import time_batch_rounds
    from runner.core.timing import TIMING_PRESETS
    from runner.core.workloads import resolve

    req = json.loads(sys.stdin.read())
    workload = resolve(req["workload"], dict(req["params"]))
    r = time_batch_rounds(workload, tuple(req["modes"]), int(req["batch_size"]),
                          req["device"], TIMING_PRESETS[req["timing"]])
    print(json.dumps(to_json(r)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
