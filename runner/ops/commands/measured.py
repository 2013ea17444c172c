"""The skeleton of the commands that measure a run and store it (sweep, serve,
graph-memory): parse -> resolve -> run -> store and print, each command filling in its
steps.

What lives here is what the three must do alike, in this order: every flag checked (the
command's own, then where the run goes, then the device and the workload) before
anything is built, measured or written; the database opened last, since opening a valid
URL creates its file; the engine disposed whatever happened; a run that ended without a
bug to show (the database went away, a capture ran out of memory) said in one `error:`
line with exit 1; the storage note last, on stderr; the exit code from the run's status.
torch and the database layer are imported inside the steps: the parser imports every
command module, on hosts that have neither.
"""

from __future__ import annotations

import argparse
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from contract import bundle as fmt
from contract import outfile
from runner.ops.cli import UsageError

CANCELLED_EXIT = 130  # what a shell reports for a process ended by Ctrl-C


class RunFailed(Exception):
    """The run ended without a bug to show; str() is the line after `error: `."""


@dataclass(frozen=True)
class Storage:
    """Where the run goes, from --db, --no-db and --out; `note` is said last (stderr)."""

    db: str | None
    out: str | None
    use_db: bool
    note: str | None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Storage:
        """Checks every storage flag up front, so bad ones fail before anything is
        measured."""
        from runner.ops.commands.store import NO_SQLALCHEMY, sqlalchemy_available

        if args.out:  # `-`: standard output, with every other line on stderr (main)
            fmt.check_writable(args.out, stdout=True)
        if args.no_db and args.db:
            raise UsageError(f"--no-db contradicts --db {args.db!r}: give one of them")
        use_db, note = not args.no_db, None
        if use_db and not sqlalchemy_available():
            if args.db or not args.out:
                raise UsageError(f"{NO_SQLALCHEMY}: install it, or write a bundle with "
                                 "--out FILE.json and import it where the database is")
            use_db = False
            note = (f"note: the database was not written: {NO_SQLALCHEMY}. Import the "
                    f"bundle where it is: python -m runner import {args.out}")
        if not use_db and not args.out:
            raise UsageError("--no-db without --out: the results would be written nowhere")
        return cls(db=args.db if use_db else None, out=args.out, use_db=use_db, note=note)

    def open(self) -> Any:
        """The engine, or None with --no-db."""
        from runner.ops.commands.store import open_engine

        return open_engine(self.db) if self.use_db else None


class MeasuringCommand(ABC):
    """One command's steps; `main` runs them in the skeleton's order. Steps keep what
    they work out on `self` for the steps after them."""

    # Sweep and serve write each part as it is measured (the database is opened before
    # the run); graph-memory stores its whole series once it is measured.
    writes_as_it_goes = True

    @abstractmethod
    def parse(self, args: argparse.Namespace) -> None:
        """The command's own flags, each error a UsageError naming the flag."""

    @abstractmethod
    def resolve(self, args: argparse.Namespace, storage: Storage) -> None:
        """The device and the workload (the model too, where building it is a check)."""

    @abstractmethod
    def run(self, engine: Any, storage: Storage) -> str:
        """Measure (and, writing as it goes, store); returns the run's status."""

    @abstractmethod
    def report(self, status: str, engine: Any, storage: Storage) -> None:
        """What happened, on stdout; a command that does not write as it goes stores its
        run here, after its table (`engine` is None then)."""

    def exit_code(self, status: str) -> int:
        return 0 if status == "done" else (CANCELLED_EXIT if status == "cancelled" else 1)

    def main(self, args: argparse.Namespace) -> int:
        self.parse(args)
        storage = Storage.from_args(args)
        if storage.out == outfile.STDOUT:
            # The bundle alone on stdout (issue 46): the run's lines go to stderr.
            with outfile.reserved_stdout():
                return self._main(args, storage)
        return self._main(args, storage)

    def _main(self, args: argparse.Namespace, storage: Storage) -> int:
        self.resolve(args, storage)
        engine = storage.open() if self.writes_as_it_goes else None
        try:
            status = self.run(engine, storage)
        except RunFailed as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        finally:
            if engine is not None:
                engine.dispose()
        self.report(status, engine, storage)
        if storage.note:
            print(storage.note, file=sys.stderr)
        return self.exit_code(status)
