"""First-start data: an empty database gets the shipped sample bundles imported.

Used by the dashboard (app start) and by tests, so both see the same data the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import exists, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from contract import bundle as fmt
from db.access import read_only
from db.models import RunRow
from db.store import import_bundle

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"


@dataclass
class SeedResult:
    imported: list[int] = field(default_factory=list)   # run ids created now
    errors: list[str] = field(default_factory=list)     # one line per unreadable file
    skipped: bool = False                               # the database already had runs


def is_empty(engine: Engine) -> bool:
    with engine.connect() as c:
        return not c.execute(select(exists().where(RunRow.id.is_not(None)))).scalar()


def seed_if_empty(engine: Engine, folder: str | Path = SAMPLES) -> SeedResult:
    """Import every ``*.json`` bundle in `folder` when the runs table is empty.

    Idempotent: a database with any run is left alone, and each bundle is keyed by its
    uuid, so two dashboards starting at once import each sample once. A bad file is
    reported and skipped; it never stops the others. A read-only share deployment writes
    nothing, samples included."""
    result = SeedResult()
    if read_only() or not is_empty(engine):
        result.skipped = True
        return result
    folder = Path(folder)
    for path in sorted(folder.glob("*.json")):
        try:
            run_id, created = import_bundle(engine, fmt.read(path))
        except fmt.BundleError as e:
            result.errors.append(f"{path.name}: {e}")
            continue
        except IntegrityError:
            # Another process imported the same uuid between our check and our insert.
            continue
        if created:
            result.imported.append(run_id)
    return result
