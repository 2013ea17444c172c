"""Reading results: named queries the CLI and the dashboard call (SQL lives only in db/)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from db.models import Environment, Run


def list_runs(engine: Engine) -> list[dict[str, Any]]:
    """Every run, newest first, with what tells runs apart: workload, GPU, torch, status."""
    stmt = (select(Run.id, Run.uuid, Run.created_at, Run.workload, Run.status, Run.label,
                   Run.source, Environment.device, Environment.gpu_name,
                   Environment.torch_version)
            .join(Environment, Run.environment_id == Environment.id)
            .order_by(Run.created_at.desc(), Run.id.desc()))
    with engine.connect() as c:
        return [dict(row._mapping) for row in c.execute(stmt)]
