"""The Runs board's point counts in words (issue 25): a CPU run's graph points are not
failures. Apart from tests/pages/test_board.py so the board's computation and its wording can
change independently."""

from __future__ import annotations

from pages.logic import board


def test_unsupported_points_are_named_apart_from_failures():
    cpu = {"device": "cpu", "points": 12, "ok_points": 6, "unsupported_points": 6}
    assert board.points_text(cpu) == "6/6 ok · 6 n/a on CPU"
    gpu = {"device": "cuda", "points": 12, "ok_points": 9, "unsupported_points": 1}
    assert board.points_text(gpu) == "9/11 ok · 1 unsupported"
    assert board.points_text({"points": 20, "ok_points": 20}) == "20/20 ok"
    assert board.points_text({"points": 4, "ok_points": 2, "unsupported_points": None}) \
        == "2/4 ok"  # older frames without the count
    assert board.points_text({"points": 0, "ok_points": 0}) == "0/0 ok"
