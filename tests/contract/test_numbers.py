"""number_or_none, the one reading of a figure that may be unknown (contract/numbers.py):
the pages, the Compare tables and the environment's clock readings all go through it, so a
bool or an infinity must read as "no figure" everywhere alike."""

import math
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from contract.numbers import number_or_none


@pytest.mark.parametrize("value, expected", [
    (3, 3.0), (-2.5, -2.5), (0, 0.0),
    (np.int64(7), 7.0), (np.float32(0.5), 0.5), (Decimal("1.25"), 1.25),
    ("1410", 1410.0), (" 62.5 ", 62.5),  # nvidia-smi's text
])
def test_a_finite_number_reads_as_a_float(value, expected):
    got = number_or_none(value)
    assert type(got) is float and got == expected


@pytest.mark.parametrize("value", [
    None, True, False, np.bool_(True), np.bool_(False),
    math.nan, math.inf, -math.inf, np.float64("nan"), np.float64("inf"), pd.NA,
    "inf", "nan", "", "fast", "[N/A]", [1.0], {"median": 1.0},
    10 ** 400,  # float() overflows: not a finite number, not a crash
])
def test_a_bool_a_non_finite_number_or_no_number_reads_as_none(value):
    assert number_or_none(value) is None


def test_a_yes_no_column_of_a_frame_is_not_a_count():
    # pandas hands back numpy bools for a bool column: the old page helper read them as 1.0.
    frame = pd.DataFrame({"noisy": [True, False], "step_ms": [1.5, math.nan]})
    assert [number_or_none(v) for v in frame["noisy"]] == [None, None]
    assert [number_or_none(v) for v in frame["step_ms"]] == [1.5, None]
