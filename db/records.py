"""The one converter from the database's rows to the contract's records (issue 45): a run
header, a point as a `Measurement`. Every read of db/ that hands a run or a point out goes
through here, so a column read back is turned into its field in one place; the pages,
the CLI and the reports get records, never rows or frames.

The rows come from SQLAlchemy `select()`s of the models' columns (queries.py), so their
values already have Python's types (None for unknown, bool for a yes/no, dict and list for
a JSON column); times are UTC, which SQLite hands back without a zone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import fields
from datetime import datetime, timezone
from typing import Any

from contract.measurement import Measurement
from contract.noise import NoiseCounts
from contract.run_summary import RunHeader, RunListing

_HEADER_FIELDS = tuple(f.name for f in fields(RunHeader))


def utc(t: datetime | None) -> datetime | None:
    """A stored time as an aware UTC datetime (SQLite keeps no zone; every stored time
    is UTC)."""
    if t is None or t.tzinfo is not None:
        return t
    return t.replace(tzinfo=timezone.utc)


def header(row: Mapping[Any, Any]) -> RunHeader:
    """A run header from a row holding its columns (others ignored, missing unknown)."""
    values = {k: row[k] for k in _HEADER_FIELDS if k in row}
    for k in ("created_at", "finished_at"):
        if k in values:
            values[k] = utc(values[k])
    return RunHeader(**values)


def measurement(row: Mapping[Any, Any],
                details: Collection[str] | None = None) -> Measurement:
    """A point from a row of the measurements table's columns (any subset: a column not
    selected is unknown). `details`: only these details keys are read (a point's details
    hold ~40 keys; the Runs board's summaries need two of 100,000 points')."""
    doc = dict(row)
    doc.pop("run_id", None)
    d = doc.get("details")
    if details is not None and isinstance(d, Mapping):
        doc["details"] = {k: d[k] for k in details if k in d}
    return Measurement.from_json(doc)


def listing(row: Mapping[Any, Any]) -> RunListing:
    counts = NoiseCounts(*(int(row.get(f) or 0) for f in (
        "ok_points", "interval_points", "noisy_points", "unstable_points")))
    return RunListing(header(row), int(row.get("points") or 0),
                      int(row.get("ok_points") or 0),
                      int(row.get("unsupported_points") or 0), counts)


__all__ = ["header", "listing", "measurement", "utc"]
