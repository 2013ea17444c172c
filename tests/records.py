"""Records for tests: points as `Measurement`s and run headers, built as the database's
one converter (db/records.py) builds them, from a bundle's fields."""

from __future__ import annotations

from typing import Any

from contract import bundle as fmt
from contract.measurement import Measurement
from contract.run_summary import RunHeader


def pts(rows) -> list[Measurement]:
    """Points from (mode, batch, step_ms[, extra fields]) tuples; a None step is an error
    point whose message is 'boom'."""
    out = []
    for mode, batch, step, *extra in rows:
        m = fmt.empty_measurement(mode, batch)
        m.update(step_ms=step)
        if step is None:
            m.update(status="error", message="boom")
        if extra:
            m.update(extra[0])
        out.append(Measurement.from_json(m))
    return out


def points_of(doc: dict[str, Any]) -> list[Measurement]:
    """A bundle's measurements (validated) as records."""
    return [Measurement.from_json(m) for m in fmt.validate(doc)["measurements"]]


BASE = {"kind": "sweep", "workload": "mlp", "workload_params": {"depth": 2},
        "dtype": "float32", "source": "measured", "gpu_name": "G", "torch_version": "2.0",
        "uuid": "u", "status": "done"}


def header(**fields: Any) -> RunHeader:
    return RunHeader(**{**BASE, "id": 1, **fields})


def headers(*rows: dict[str, Any]) -> list[RunHeader]:
    return [header(**r) for r in rows]
