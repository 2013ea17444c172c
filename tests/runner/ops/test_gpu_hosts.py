"""`workers --per-gpu` on real GPUs (run on a lent GPU host:
pytest -m gpu tests/runner/ops/test_gpu_hosts.py).

One worker per GPU that nvidia-smi lists, each pinned (CUDA_VISIBLE_DEVICES, and the CPUs
`nvidia-smi topo -m` gives its NUMA node); one small CUDA job per worker. What must hold
on any host with one GPU or more: every GPU got its worker and its job, each point says
which GPU and CPUs it ran on, and with the default `exclusive` policy no two points'
timed windows overlap. With two GPUs or more the jobs really run side by side.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from itertools import combinations

import pytest
from sqlalchemy import select

from db import jobs
from db.engine import make_engine
from db.models import MeasurementRow, RunRow
from runner.core.placement import parse_cpus
from runner.ops import host
from tests.conftest import ROOT

pytestmark = pytest.mark.gpu
JOB = {"workload": "mlp", "params": {"depth": "4", "width": "64"}, "batch_sizes": [1, 8, 64],
       "modes": ["eager", "cuda-graph"], "device": "cuda", "timing": "quick"}


def test_one_pinned_worker_per_gpu_and_timing_never_overlaps(sqlite_url, tmp_path):
    n = host.count_gpus()
    assert n, "nvidia-smi lists no GPU"
    numa = host.topology()
    engine = make_engine(sqlite_url)
    ids = [jobs.enqueue(engine, JOB) for _ in range(n)]
    launcher = subprocess.Popen(
        [sys.executable, "-m", "runner", "workers", "--per-gpu", "--pin-cpus", "--db",
         sqlite_url, "--host-lock-dir", str(tmp_path)], cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"})
    try:
        end = time.monotonic() + 900
        while {jobs.get_job(engine, i).status for i in ids} != {"done"}:
            assert time.monotonic() < end and launcher.poll() is None, "jobs not done"
            time.sleep(1)
        workers = jobs.live_workers(engine)
    finally:
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=120) == 130
    names = sorted(w.name for w in workers)
    assert names == sorted(f"{socket.gethostname()}-gpu{g}" for g in range(n))
    assert sorted(w.host_slot for w in workers) == list(range(n))
    with engine.connect() as c:
        rows = c.execute(select(RunRow.id, MeasurementRow.status, MeasurementRow.details)
                         .join(MeasurementRow.run)).all()
    engine.dispose()
    assert rows and all(r.status == "ok" for r in rows)
    gpus = {r.details["host"]["cuda_visible_devices"] for r in rows}
    assert gpus == {str(g) for g in range(n)}  # each job on its own worker's GPU
    for r in rows:
        h = r.details["host"]
        assert h["policy"] == "exclusive" and h["others_timing"] == 0
        want = numa.get(int(h["cuda_visible_devices"]))
        if want:  # pinned within its GPU's NUMA node where nvidia-smi says which (a
            # container's cpuset may allow only part of it)
            assert set(parse_cpus(h["cpus"])) <= set(want)
    # Every mode of one batch size shares its rounds, so their points list the same windows.
    windows = sorted({tuple(w) for r in rows for w in r.details["host"]["windows"]})
    for (a0, a1), (b0, b1) in combinations(windows, 2):
        assert a1 <= b0 or b1 <= a0
