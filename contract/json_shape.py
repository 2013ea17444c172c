"""A record of known keys read back from a JSON object exactly, or not at all.

A point's details hold a few objects the runner writes with fixed keys (memory snapshots,
clocks, the separate captures, energy windows). The records read them as dataclasses, but
a bundle must export as it was imported: an object whose keys are not exactly the
record's fields, in its order (an older runner's, a hand-written file), is not read into
the record; the caller keeps it as it came. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

R = TypeVar("R")

# A JSON object as it is read or written at an edge, where no shape is promised: a
# bundle's measurement object (Measurement turns it into a record), its details keys no
# record declares, a JSON column of the database, a queued job's spec before its check.
# A documented shape is written out instead, as a TypedDict beside its record (BundleDoc,
# RunJson, ServeSectionJson...). Inside, records are typed (docs/ARCHITECTURE.md, "Names:
# records and rows").
JsonObject = dict[str, Any]


def exact(cls: type[R], value: Any) -> R | None:
    """`cls` from a JSON object with exactly its fields as keys, in order; else None."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]  # R: a dataclass
    if not isinstance(value, Mapping) or list(value) != names:
        return None
    return cls(**value)


def exact_list(cls: type[R], value: Any) -> list[R] | None:
    """A list of `cls` from a JSON array of such objects; None if any one is not."""
    if not isinstance(value, list):
        return None
    out = [exact(cls, v) for v in value]
    found = [r for r in out if r is not None]
    return found if len(found) == len(out) else None


def as_json(record: Any) -> Any:
    """The JSON object of a record read by `exact` (its fields in order), or a list of
    them; anything else as it is."""
    if isinstance(record, list):
        return [as_json(r) for r in record]
    if not hasattr(record, "__dataclass_fields__"):
        return record
    return {f.name: getattr(record, f.name) for f in fields(record)}
