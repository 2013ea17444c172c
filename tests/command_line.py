"""The command line run in this process, as a user would type it: exit code and what it
printed, argparse's own refusals (SystemExit) included."""

from __future__ import annotations

from runner.ops.cli import main


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """`launchbench ARGV...` here; (exit code, stdout, stderr) read from `capsys`."""
    try:
        rc = main(list(argv))
    except SystemExit as e:  # argparse's own errors
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err
