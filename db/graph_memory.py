"""Graph-memory runs in the database (issue 27): a RunRow of kind 'graph-memory' and its
captures, one row per (pool, capture). Written whole through db/store.py's import_bundle
(a series is measured before anything is stored), read back for bundles, the advisor's
curve and the dashboard (SQL only here, through select())."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from contract import bundle as fmt
from contract import graph_memory as gm
from db.models import EnvironmentRow, GraphMemoryCaptureRow, RunRow
from db.rows import RunNotFound, iso

if TYPE_CHECKING:
    import pandas as pd

KIND = "graph-memory"


class NotGraphMemory(LookupError):
    """A run id that exists but is no graph-memory run; str() is one line naming it."""


# --- the bundle's section, inside import_bundle's / export_bundle's session --------------

def add_section(session: Session, run_id: int, section: gm.GraphMemorySection) -> None:
    for pool, rows in section["series"].items():
        for i, r in enumerate(rows, 1):
            session.add(GraphMemoryCaptureRow(run_id=run_id, pool=pool, position=i,
                                              **{f: r[f] for f in gm.ROW_FIELDS}))  # type: ignore[literal-required]


def _rows(session: Session, run_ids: list[int]) -> list[GraphMemoryCaptureRow]:
    return list(session.scalars(select(GraphMemoryCaptureRow)
                                .where(GraphMemoryCaptureRow.run_id.in_(run_ids))
                                .order_by(GraphMemoryCaptureRow.run_id, GraphMemoryCaptureRow.pool,
                                          GraphMemoryCaptureRow.position)))


def _series(rows: list[GraphMemoryCaptureRow]) -> dict[str, list[gm.Capture]]:
    out: dict[str, list[gm.Capture]] = {}
    for r in rows:
        out.setdefault(r.pool, []).append(
            gm.Capture(**{f: getattr(r, f) for f in gm.ROW_FIELDS}))
    return {p: out[p] for p in gm.POOLS if p in out}  # the order the CLI measures in


def read_section(session: Session, run_id: int) -> gm.GraphMemorySection:
    series = _series(_rows(session, [run_id]))
    if not series:
        raise RunNotFound(f"run {run_id} is a graph-memory run without its captures")
    sizes = [r.batch_size for r in next(iter(series.values()))]
    return gm.make_section(sizes, series)


# --- reading for the CLI and the dashboard -----------------------------------------------

RUN_COLUMNS = ("id", "created_at", "workload", "workload_params", "dtype", "status", "label",
               "device", "gpu_name", "torch_version")


def graph_memory_runs(engine: Engine) -> pd.DataFrame:
    """Every graph-memory run, newest first: what a picker lists."""
    # pandas here, not at the top: db/store.py imports this module, and `import`, `sweep`
    # and the worker never needed pandas to start.
    import pandas as pd

    stmt = (select(RunRow.id, RunRow.created_at, RunRow.workload, RunRow.workload_params,
                   RunRow.dtype, RunRow.status, RunRow.label, EnvironmentRow.device,
                   EnvironmentRow.gpu_name, EnvironmentRow.torch_version)
            .join(EnvironmentRow, RunRow.environment_id == EnvironmentRow.id)
            .where(RunRow.kind == KIND).order_by(RunRow.created_at.desc(), RunRow.id.desc()))
    with engine.connect() as c:
        df = pd.DataFrame([dict(r._mapping) for r in c.execute(stmt)],
                          columns=list(RUN_COLUMNS))
    df["created_at"] = pd.to_datetime(df["created_at"], utc=True)  # stored as UTC
    return df


def attributions(engine: Engine, run_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Each run's attribution (contract/graph_memory.attribute) and its number of
    sizes, for the Runs board."""
    ids = [int(i) for i in run_ids]
    if not ids:
        return {}
    with Session(engine) as s:
        rows = _rows(s, ids)
    by_run: dict[int, list[GraphMemoryCaptureRow]] = {}
    for r in rows:
        by_run.setdefault(r.run_id, []).append(r)
    out = {}
    for rid, rs in by_run.items():
        series = _series(rs)
        out[rid] = {**gm.attribute(series), "sizes": len(next(iter(series.values())))}
    return out


def graph_memory_doc(engine: Engine, run_id: int) -> gm.GraphMemoryDoc:
    """A stored run as gm.read_doc() returns a document (for gm.curve, gm.table_rows).
    RunNotFound when no run has the id, NotGraphMemory when it is another kind."""
    with Session(engine) as s:
        row = s.get(RunRow, run_id)
        if row is None:
            raise RunNotFound(f"run {run_id} does not exist")
        if row.kind != KIND:
            raise NotGraphMemory(f"run {run_id} is a {row.kind} run, not a graph-memory run "
                                 "(python -m runner list shows each run's kind)")
        env = {f: getattr(row.environment, f) for f in fmt.ENVIRONMENT_FIELDS}
        run = {f: getattr(row, f) for f in fmt.RUN_FIELDS}
        run.update(created_at=iso(row.created_at), finished_at=iso(row.finished_at))
        section = read_section(s, run_id)
    return gm.doc_from_bundle({"environment": env, "run": run, gm.SECTION: section},
                              f"run {run_id}")
