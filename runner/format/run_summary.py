"""One stored run as `runner list` shows it: what tells runs apart (db/queries.py list_runs
reads it; runner/ops/commands/store.py prints it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class RunSummary:
    id: int
    uuid: str
    created_at: datetime | None
    workload: str
    status: str  # "lost" for a running run whose writer went silent (db/liveness.py)
    kind: str = "sweep"  # sweep, serve or graph-memory (runner/format/vocab.py RUN_KINDS)
    label: str | None = None
    source: str | None = None
    device: str | None = None
    gpu_name: str | None = None
    torch_version: str | None = None


__all__ = ["RunSummary"]
