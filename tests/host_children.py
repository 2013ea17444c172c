"""Child processes for tests/runner/ops/test_hosts.py, sequenced by files (never by sleeps).

`gate DIR POLICY NAME`: enter a timing section of the host gate, create NAME.in, wait for
NAME.go, leave, and write NAME.out (the section as JSON).
`worker OUT`: a stand-in for `python -m runner worker`: writes OUT/<name>.json (its argv
and GPU environment), then waits for SIGTERM and writes OUT/<name>.stopped.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

# Run as a script, this file's folder (tests/) comes first on sys.path, and tests/runner/
# (the runner's tests) would shadow the runner package: the repository root goes first.
sys.path[0] = str(Path(__file__).resolve().parents[1])

GUARD_S = 300  # a failure guard only: the test that started us creates the file long before


def _wait_for(path: Path) -> None:
    end = time.monotonic() + GUARD_S
    while not path.exists():
        if time.monotonic() > end:
            sys.exit(f"timed out waiting for {path}")
        time.sleep(0.01)


def gate(directory: str, policy: str, name: str) -> None:
    from runner.core.host_gate import Gate

    here = Path(directory)
    g = Gate(policy, here)
    with g.timing() as s:
        (here / f"{name}.in").touch()
        _wait_for(here / f"{name}.go")
    doc = {"others": sorted(s.others), "wait_s": s.wait_s, "started": s.started,
           "ended": s.ended, "token": g.registry.token}
    (here / f"{name}.out.tmp").write_text(json.dumps(doc))
    os.rename(here / f"{name}.out.tmp", here / f"{name}.out")


def worker(out: str, argv: list[str]) -> None:
    name = argv[argv.index("--name") + 1]
    here = Path(out)

    def stop(_signum, _frame):
        (here / f"{name}.stopped").touch()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    doc = {"argv": argv, "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
           "CUDA_DEVICE_ORDER": os.environ.get("CUDA_DEVICE_ORDER")}
    (here / f"{name}.tmp").write_text(json.dumps(doc))
    os.rename(here / f"{name}.tmp", here / f"{name}.json")
    signal.pause() if hasattr(signal, "pause") else time.sleep(GUARD_S)
    time.sleep(GUARD_S)


if __name__ == "__main__":
    if sys.argv[1] == "gate":
        gate(*sys.argv[2:5])
    else:
        worker(sys.argv[2], sys.argv[3:])
