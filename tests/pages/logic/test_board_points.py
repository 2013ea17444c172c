"""The Runs board's point counts in words (issue 25): a CPU run's graph points are not
failures. Apart from tests/pages/logic/test_board.py so the board's computation and its
wording can change independently."""

from __future__ import annotations

from contract.run_summary import RunListing
from pages.logic import board
from tests.records import header


def test_unsupported_points_are_named_apart_from_failures():
    cpu = RunListing(header(device="cpu"), points=12, ok_points=6, unsupported_points=6)
    assert board.points_text(cpu) == "6/6 ok · 6 n/a on CPU"
    gpu = RunListing(header(device="cuda"), points=12, ok_points=9, unsupported_points=1)
    assert board.points_text(gpu) == "9/11 ok · 1 unsupported"
    assert board.points_text(RunListing(header(), points=20, ok_points=20)) == "20/20 ok"
    assert board.points_text(RunListing(header(), points=0, ok_points=0)) == "0/0 ok"
