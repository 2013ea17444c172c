"""A run's own records, as the runner writes them: the Environment it was measured on and
its header, Run (the bundle's "environment" and "run" objects; docs/ARCHITECTURE.md,
"The result bundle").

Typed so that the sweep, serve and graph-memory commands, the sinks and db/ hand each
other named fields, and JSON is made only where a record leaves for a bundle (to_json)
or comes back from one or from the database (from_json). What a reader gets back with
the database's id, the status as shown and the key figures is run_summary.py's
RunHeader. Standard library only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict, cast


class EnvironmentJson(TypedDict):
    """A bundle's "environment" object: Environment's fields, in the bundle's order
    (ENVIRONMENT_FIELDS, below, is read from here)."""
    device: str | None
    gpu_name: str | None
    gpu_count: int | None
    sm_count: int | None
    gpu_memory_bytes: int | None
    driver_version: str | None
    cuda_version: str | None
    torch_version: str | None
    triton_version: str | None
    python_version: str | None
    hostname: str | None
    cpu_model: str | None


class RunJson(TypedDict):
    """A bundle's "run" object: Run's fields, in the bundle's order (RUN_FIELDS, below, is
    read from here); created_at and finished_at ISO 8601 text."""
    uuid: str
    workload: str
    # free-form per workload, as Run holds them (contract/params.py checks them)
    workload_params: Mapping[str, Any]
    dtype: str | None
    created_at: str
    finished_at: str | None
    status: str
    label: str | None
    source: str
    command: str | None
    kind: str


# The keys of each object, in order: one list, the JSON shape's.
ENVIRONMENT_FIELDS = tuple(EnvironmentJson.__annotations__)
RUN_FIELDS = tuple(RunJson.__annotations__)


@dataclass(frozen=True)
class Environment:
    """What a run was measured on (runner/core/environment.py capture() fills it).
    Unknown is None: a CPU run has no GPU fields, a published run few of any."""
    device: str | None = None  # "cuda" or "cpu"
    gpu_name: str | None = None
    gpu_count: int | None = None
    sm_count: int | None = None
    gpu_memory_bytes: int | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    torch_version: str | None = None
    triton_version: str | None = None
    python_version: str | None = None
    hostname: str | None = None
    cpu_model: str | None = None

    def to_json(self) -> EnvironmentJson:
        return cast(EnvironmentJson, {f: getattr(self, f) for f in ENVIRONMENT_FIELDS})

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Environment:
        """From a bundle's (validated) environment object or a row's fields; keys it
        does not know are left out, missing ones are unknown."""
        return cls(**{f: doc.get(f) for f in ENVIRONMENT_FIELDS})


@dataclass(frozen=True)
class Run:
    """A run's header as its writer knows it: what is measured, by which command, when,
    and how it ended. `created_at` and `finished_at` are ISO 8601 text, as the bundle
    holds them; status goes running -> done, cancelled or failed (finished())."""
    uuid: str
    workload: str
    created_at: str
    # the workload's parameters: free-form per workload (contract/params.py checks
    # them), so a mapping, stored in a JSON column as they are
    workload_params: Mapping[str, Any] = field(default_factory=dict)
    dtype: str | None = None
    finished_at: str | None = None
    status: str = "running"
    label: str | None = None
    source: str = "measured"  # measured or published
    command: str | None = None  # the command line that made it, for the Reproduce view
    kind: str = "sweep"  # sweep, serve or graph-memory (contract/vocab.py RUN_KINDS)

    def finished(self, status: str, at: str) -> Run:
        return dataclasses.replace(self, status=status, finished_at=at)

    def to_json(self) -> RunJson:
        out = {f: getattr(self, f) for f in RUN_FIELDS}
        out["workload_params"] = dict(self.workload_params)
        return cast(RunJson, out)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Run:
        """From a bundle's (validated) run object: a missing kind is a sweep's (version
        1), a missing source a measured run's."""
        return cls(uuid=doc["uuid"], workload=doc["workload"], created_at=doc["created_at"],
                   workload_params=doc.get("workload_params") or {}, dtype=doc.get("dtype"),
                   finished_at=doc.get("finished_at"), status=doc["status"],
                   label=doc.get("label"), source=doc.get("source") or "measured",
                   command=doc.get("command"), kind=doc.get("kind") or "sweep")
