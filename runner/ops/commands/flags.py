"""What the commands share, stated once: argparse parent parsers for the flags that
`sweep`, `enqueue` and `serve` have in common, and the aligned text table their printers
(and `list`) write. Imported at parse time: no torch, no database here."""

from __future__ import annotations

import argparse
from collections.abc import Container, Sequence

from contract import bundle as fmt
from contract.vocab import TIMINGS

DB_HELP = "database URL (default: $LAUNCHBENCH_DB, else sqlite:///data/launchbench.db)"


def _parent() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False)


def workload_flags(workload_help: str, device_help: str) -> argparse.ArgumentParser:
    """--workload, --device, --label, --param: what to run and how it is named."""
    p = _parent()
    p.add_argument("--workload", required=True, metavar="NAME", help=workload_help)
    p.add_argument("--device", choices=fmt.DEVICES, help=device_help)
    p.add_argument("--label", metavar="TEXT", help="a note shown beside the run")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="workload parameter, repeatable (e.g. --param depth=8)")
    return p


def sweep_flags(batch_sizes_help: str, quick_help: str) -> argparse.ArgumentParser:
    """--batch-sizes, --modes, --timing, --quick: the points of a sweep (sweep, enqueue)."""
    p = _parent()
    p.add_argument("--batch-sizes", required=True, metavar="LIST", help=batch_sizes_help)
    p.add_argument("--modes", default=",".join(fmt.MODES), metavar="LIST",
                   help=f"comma-separated from {', '.join(fmt.MODES)} (default: all)")
    p.add_argument("--timing", choices=TIMINGS, help="timing preset (default: standard)")
    p.add_argument("--quick", action="store_true", help=quick_help)
    return p


def db_flag() -> argparse.ArgumentParser:
    """--db: every command that reads or writes the database."""
    p = _parent()
    p.add_argument("--db", metavar="URL", help=DB_HELP)
    return p


def storage_flags(no_db_help: str) -> argparse.ArgumentParser:
    """--db, --no-db, --out: where a run measured here goes (sweep, serve)."""
    p = argparse.ArgumentParser(add_help=False, parents=[db_flag()])
    p.add_argument("--no-db", action="store_true", help=no_db_help)
    p.add_argument("--out", metavar="FILE.json",
                   help="also write the run as a bundle file, or - for standard output "
                        "(then every other line goes to standard error)")
    return p


def device(requested: str | None, command: str) -> str:
    """--device checked on this machine (runner/core/device.py pick_device), as a usage
    error naming the flag; torch is imported then (by the core), never at parse time."""
    from runner.core.device import DeviceError, pick_device, torch_installed
    from runner.ops.cli import UsageError

    if not torch_installed():  # measuring needs it: say so before anything else
        raise UsageError(f"{command} needs torch, which is not installed here")
    try:
        return pick_device(requested)
    except DeviceError as e:
        raise UsageError(f"--device {requested}: {e.reason}") from None


class _All:
    def __contains__(self, _column: object) -> bool:
        return True


ALL = _All()


def table(rows: Sequence[Sequence[str]], *, left: Container[int] = ()) -> list[str]:
    """Rows of cells as lines: each column as wide as its widest cell, columns two spaces
    apart, the columns in `left` (indices, or ALL) padded on the right and the others on
    the left (numbers line up), trailing blanks stripped."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i in left else c.rjust(w)
                      for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
            for row in rows]
