"""The storage tests' engine: one per test, on SQLite and on PostgreSQL (conftest's any_url),
disposed after."""

from __future__ import annotations

import pytest


@pytest.fixture
def engine(any_url):
    from db.engine import make_engine

    e = make_engine(any_url)
    yield e
    e.dispose()
