"""`python -m runner ...`: the command line.

Each sub-command lives in runner/ops/commands/<noun>.py and exposes
`register(subparsers) -> None`, which adds its parser(s) and sets `func=run` on them, where
`run(args) -> int` returns the exit status. Validation errors are raised as `UsageError`
(or BundleError / OutputError / DatabaseError / WorkloadError): main() prints exactly one
line on stderr and exits 2, with nothing written. A command that sets `one_line=True`
(check, export: CI reads their exit status) never ends in a traceback: anything else that
breaks is one line and exit 2 too.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

# Sub-command modules, in --help order. Imported at parse time, so they must not import
# torch at module level (import/export/list run on machines without it).
COMMAND_MODULES = (
    "runner.ops.commands.sweep",
    "runner.ops.commands.store",
    "runner.ops.commands.check",
    "runner.ops.commands.jobs",
    "runner.ops.commands.hosts",
    "runner.ops.commands.serve",
    "runner.ops.commands.slurm",
    "runner.ops.commands.capture",
)


class UsageError(Exception):
    """Bad input from the command line; str() is the one line the user sees."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own errors: one line too, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m runner",
                     description="launchbench: what CUDA Graphs buy, measured.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _known_errors() -> tuple[type[BaseException], ...]:
    from contract.bundle import BundleError
    from contract.outfile import OutputError

    errors: list[type[BaseException]] = [UsageError, BundleError, OutputError]
    for mod, cls in (("contract.catalog", "WorkloadError"), ("db.engine", "DatabaseError"),
                     ("db.store", "RunNotFound"), ("db.access", "ReadOnlyError"),
                     ("runner.ops.slurm", "SlurmError")):
        try:
            errors.append(getattr(importlib.import_module(mod), cls))
        except (ImportError, AttributeError):
            pass  # e.g. a GPU host without SQLAlchemy: db errors cannot happen there
    return tuple(errors)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        rc = int(args.func(args) or 0)
        if sys.stdout is not None:  # None: started with stdout closed (`>&-`)
            sys.stdout.flush()  # inside the try: a closed pipe is said here, not at exit
        return rc
    except BrokenPipeError:
        # `list | head -1`: the reader has what it wanted and left. Exit quietly, as a
        # unix filter does; point stdout at devnull so the exit-time flush stays silent.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except _known_errors() as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"error: {msg}", file=sys.stderr)
        return 2
    except Exception as e:
        # A command a CI job reads by its exit status (check, export) never ends in a
        # traceback: Python's exit 1 would read as "regression". Exit 2 says it judged
        # nothing; the line says what broke.
        if not getattr(args, "one_line", False):
            raise
        msg = (str(e).strip().splitlines() or [""])[0][:200]
        print(f"error: {args.command} failed ({type(e).__name__}: {msg}); nothing was "
              "judged or written. This is a bug: please report it", file=sys.stderr)
        return 2


def console() -> None:
    """The `launchbench` console script: the same as `python -m runner`."""
    # Started in the background (`cmd &`, a CI runner), a process inherits SIGINT as
    # ignored and Python then leaves it so: Ctrl-C (`kill -INT`) must still stop a sweep
    # or a worker cleanly, however its parent was started.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
