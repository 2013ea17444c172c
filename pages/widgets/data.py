"""The pages' one door to the database (tests/test_import_rules.py: no other module of pages/,
nor app.py, imports db/ or sqlalchemy): the cached engine, first-start seeding, every query
a page shows, cached through one helper (`cached`), and the few writes a page makes
(import, delete, the queue's live reads). No widgets here, no SQL (db/'s), no maths
(pages/logic/).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from numbers import Integral
from typing import Any, TypeVar

import pandas as pd
import streamlit as st
from sqlalchemy.exc import SQLAlchemyError as SQLAlchemyError

from contract import bundle as fmt
from contract import graph_memory as gm
from contract.measurement import Measurement
from contract.queue import Job, JobProgress, Worker
from contract.run_summary import RunHeader, RunListing, RunSummary
from contract.trace import PointTrace
from db import engine as db_engine

# What the pages catch, answer with or read, passed on from db/ under the same names (the
# `x as x` form marks a name this module hands on): a page never imports db/ itself.
from db import graph_memory as dbgm
from db import hosts, jobs, liveness, queries, store
from db import serve as dbserve
from db.access import ReadOnlyError as ReadOnlyError
from db.access import read_only as read_only
from db.access import require_writable
from db.engine import DatabaseError as DatabaseError
from db.engine import default_url, make_engine
from db.jobs import JobFinished as JobFinished
from db.jobs import JobNotFound as JobNotFound
from db.jobs import can_serve as can_serve
from db.samples import SAMPLES, SeedResult, seed_if_empty
from db.store import RunNotFound as RunNotFound
from pages.logic import board as boards
from pages.logic import uploads

T = TypeVar("T")

# Query results live this long at most; data_v (queries.data_version) in each cache key
# already invalidates them as soon as anything is written, by this process or by a worker
# elsewhere. (Its name must not start with "_": st.cache_data does not hash those.)
CACHE_TTL_S = 60


def db_url() -> str:
    return default_url()


def shown_url(url: str | None = None) -> str:
    """The database URL without its password, for the sidebar."""
    return db_engine.shown_url(url or db_url())


@st.cache_resource(show_spinner=False)
def _engine_for(url: str, read_only: bool):
    # One engine (and connection pool) per database URL and mode for the whole server
    # process. A read-only engine opens the database read-only and never migrates it.
    return make_engine(url, read_only=read_only)


def _engine(url: str):
    return _engine_for(url, read_only())


def engine():
    return _engine(db_url())


@st.cache_resource(show_spinner="Importing the sample runs...")
def _seed(url: str, folder: str) -> SeedResult:
    # Once per server process and database: a database emptied later is not refilled.
    return seed_if_empty(_engine(url), folder)


def seed(folder: str | None = None) -> SeedResult:
    try:
        return _seed(db_url(), str(folder or SAMPLES))
    except SQLAlchemyError as e:
        # The app still opens (the pages say what they can); the sidebar names the cause.
        first = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
        return SeedResult(errors=[f"cannot import the samples: {first}"])


def version() -> tuple:
    return queries.data_version(engine())


# --- the one cached-query helper -----------------------------------------------------------

_QUERIES: dict[str, Callable[..., Any]] = {}


def _frozen(value: Any) -> Any:
    """An argument as a cache key: sequences (a list, a pandas column of ids) as tuples,
    numpy's integers as int, so equal arguments hit the same entry."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (list, tuple, pd.Series, pd.Index)):
        return tuple(_frozen(v) for v in value)
    return value


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False, max_entries=512)
def _cached(url: str, data_v: tuple, name: str, args: tuple, kwargs: tuple) -> Any:
    return _QUERIES[name](_engine(url), *args, **dict(kwargs))


def cached(query: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """query(engine, *args, **kwargs), cached per database URL, database state (data_v:
    a write anywhere changes it) and arguments. `query` is a module-level function of
    db/ (or of this module), named in the key by its module and name."""
    name = f"{query.__module__}.{query.__qualname__}"
    _QUERIES.setdefault(name, query)
    return _cached(db_url(), version(), name, _frozen(args),
                   tuple(sorted((k, _frozen(v)) for k, v in kwargs.items())))


def clear_caches() -> None:
    """After a write in this process (import, launch): drop every cached query result."""
    st.cache_data.clear()


# --- what the pages read, each through cached ----------------------------------------------

def runs(gpus: Sequence[str] = (), workloads: Sequence[str] = (),
         torches: Sequence[str] = ()) -> list[RunListing]:
    """Every run (filtered), newest first, with its point and noise counts."""
    return cached(queries.runs_list, gpus=gpus, workloads=workloads, torches=torches)


def _board(engine, gpus: tuple, workloads: tuple, torches: tuple) -> pd.DataFrame:
    # The whole table per database state and filters: a rerun, another reader, another
    # session reads it back in milliseconds. The summaries go straight from the query
    # into the board: the points they are built from are never pickled into the cache.
    listed = runs(gpus, workloads, torches)
    by_kind: defaultdict[str, list[int]] = defaultdict(list)
    for r in listed:
        by_kind[r.header.kind].append(r.header.id)
    summaries = queries.run_summaries(engine, tuple(by_kind["sweep"]))
    return boards.board(listed, {s.header.id: s for s in summaries},
                        queries.serve_key_results(engine, tuple(by_kind["serve"])),
                        dbgm.attributions(engine, tuple(by_kind["graph-memory"])))


def board(gpus: Sequence[str] = (), workloads: Sequence[str] = (),
          torches: Sequence[str] = ()) -> pd.DataFrame:
    """The Runs page's table (pages.logic.board.board), cached per database state."""
    return cached(_board, gpus, workloads, torches)


def _serve_run(engine, run_id: int) -> tuple:
    return (dbserve.serve_run(engine, run_id), dbserve.serve_results(engine, run_id),
            dbserve.serve_profile(engine, run_id), dbserve.serve_requests(engine, run_id))


def serve_run(run_id: int) -> tuple:
    """A serve run's (header, config), results, per-size profile and requests."""
    return cached(_serve_run, run_id)


def filter_options() -> dict:
    return cached(queries.run_filter_options)


def headers(ids: Sequence[int]) -> list[RunHeader]:
    """The runs' headers (those that exist), in the order asked."""
    return cached(queries.run_headers, ids)


def header(run_id: int) -> RunHeader | None:
    found = headers([run_id])
    return found[0] if found else None


def summaries(ids: Sequence[int]) -> list[RunSummary]:
    """The runs' summaries (contract/run_summary.py), in the order asked: every
    page that quotes a run's key figure reads it here."""
    return cached(queries.run_summaries, ids)


def summary(run_id: int) -> RunSummary | None:
    found = summaries([run_id])
    return found[0] if found else None


def points(ids: Sequence[int]) -> dict[int, list[Measurement]]:
    """The runs' points as records, by run id."""
    return cached(queries.points, ids)


def run_points(run_id: int) -> list[Measurement]:
    return points([run_id])[int(run_id)]


def key_points(ids: Sequence[int]) -> dict[int, list[Measurement]]:
    """The points of many runs, without raw samples (Trends, the Launch estimate)."""
    return cached(queries.points, ids, queries.KEY_POINT_COLUMNS)


def history_points(ids: Sequence[int]) -> pd.DataFrame:
    """The runs' points as runner/history reads them (a frame: its change points)."""
    return cached(queries.runs_points, ids)


def serve_keys(ids: Sequence[int]) -> pd.DataFrame:
    return cached(queries.serve_key_results, ids)


def series_headers(workload: str, gpu: str) -> list[RunHeader]:
    """The sweeps of `workload` on `gpu`, oldest first (Trends)."""
    return cached(queries.series_headers, workload, gpu)


def traces(ids: Sequence[int], batch: int) -> list[PointTrace]:
    return cached(queries.point_traces, ids, batch)


def serve_runs() -> pd.DataFrame:
    return cached(dbserve.serve_runs)


def graph_memory_runs() -> pd.DataFrame:
    """Every stored graph-memory run, newest first (db/graph_memory.py)."""
    return cached(dbgm.graph_memory_runs)


def graph_memory_doc(run_id: int) -> gm.GraphMemoryDoc:
    """A stored graph-memory run as a document: gm.curve() and the curve charts read it.
    RunNotFound / NotGraphMemory as db.graph_memory.graph_memory_doc raises them."""
    return cached(dbgm.graph_memory_doc, int(run_id))


# --- writes, each followed by dropping the cached reads --------------------------------------

# What a refused or failed write raises: read-only mode, no such run, the database.
WRITE_ERRORS = (PermissionError, LookupError, SQLAlchemyError)


def import_uploads(engine, files) -> list[uploads.UploadResult]:
    """Import each uploaded (file name, bytes) in its own transaction (logic/uploads.py
    says what each gets). Refused as a whole in read-only share mode (ReadOnlyError).
    `engine`: this door's engine() on a page; a test passes its own."""
    require_writable("import bundles")
    results = uploads.import_each(
        files, lambda doc, name: store.import_safely(engine, doc, name))
    if any(r.ok for r in results):
        clear_caches()
    return results


def export_bundle(run_id: int) -> fmt.BundleDoc:
    """The stored run as a bundle document (RunNotFound when there is none)."""
    return store.export_bundle(engine(), run_id)


def delete_run(run_id: int) -> int:
    """Delete the run, its points and sections; the number of points deleted."""
    facts = store.delete_run(engine(), run_id)
    clear_caches()
    return facts.points


# --- the Launch page's live reads: every second, uncached ----------------------------------

def db_now():
    return jobs.db_now(engine())


def live_workers() -> list[Worker]:
    return jobs.live_workers(engine())


def get_job(job_id: int, now) -> Job:
    return jobs.get_job(engine(), job_id, now=now)


def job_progress(job: Job, now) -> JobProgress:
    return jobs.progress(job, now)


def queue_place(job: Job) -> tuple[int, list[Job]]:
    return jobs.queue_place(engine(), job)


def list_jobs(limit: int, now) -> list[Job]:
    return jobs.list_jobs(engine(), limit=limit, now=now)


def lost_runs(now) -> list[int]:
    return liveness.lost_runs(engine(), now)


def reap_lost() -> None:
    jobs.reap_lost(engine())


def hosts_text(workers: list[Worker]) -> str:
    """One line per host of the live workers ('4 workers on host X (timing: ...)')."""
    return " · ".join(hosts.describe(h, ws) for h, ws in hosts.by_host(workers).items())


def past_durations(workload: str | None, gpu: str | None) -> pd.DataFrame:
    return queries.past_durations(engine(), workload, gpu)


def gpu_memory(gpu: str | None) -> int | None:
    return queries.gpu_memory(engine(), gpu)
