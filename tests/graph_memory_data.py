"""Graph-memory runs for tests, built by the torch-free path from the H200 probe's own rows
(bench/results/h200-capture-memory-*.json): no figure here is invented. The environment
is the probe's host as far as the probe file says (an H200, torch 2.11)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from contract import bundle as fmt
from contract import graph_memory as gm

ROOT = Path(__file__).resolve().parents[1]


def probe_rows(variant: str, shape: str = "mlp") -> list[gm.Capture]:
    doc = json.loads((ROOT / f"bench/results/h200-capture-memory-{shape}.json").read_text())
    return [gm.Capture(r["batch"], r["capture_s"], r["pool_bytes"], r["allocated_bytes"],
                          r["device_used_bytes"]) for r in doc["variants"][variant]["rows"]]


def probe_bundle(shape: str = "mlp", run_uuid: str | None = None,
                 label: str | None = None) -> dict:
    """A bundle of kind graph-memory: the probe's shared-clear and private-clear series."""
    series = {"shared": probe_rows("shared-clear", shape),
              "private": probe_rows("private-clear", shape)}
    sizes = [r.batch_size for r in series["shared"]]
    env = {"device": "cuda", "gpu_name": "NVIDIA H200", "gpu_count": 1,
           "torch_version": "2.11.0+cu130"}
    run = {"uuid": run_uuid or str(uuid.uuid4()), "workload": shape, "dtype": None,
           "created_at": "2026-11-30T12:00:00+00:00",
           "finished_at": "2026-11-30T12:00:05+00:00", "status": "done", "label": label,
           "command": f"python -m runner graph-memory --workload {shape} --pool both"}
    return fmt.make_bundle(env, run, [], graph_memory=gm.make_section(sizes, series))
