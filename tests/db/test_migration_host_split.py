"""Migration 0011 (bundle version 6, issue 39): old points get the split of their step from
their own stored figures, by the runner's rule; points without those figures stay null."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from contract.host_split import split
from db import migrate
from tests.old_database import old_database


def test_old_points_get_their_split(tmp_path):
    engine = old_database(tmp_path, "0010_graph_memory")
    with engine.begin() as c:  # a second point, launch-bound, with every figure
        c.execute(text("insert into measurements(run_id, mode, batch_size, status, message, "
                       "cudagraph_status, samples_ms, details, step_ms, gpu_busy_ms, "
                       "host_launches_per_step, graph_launches_per_step, launch_us) values "
                       "(1, 'eager', 1, 'ok', '', 'n/a', '[]', '{}', 0.8, 0.1, 64, 0, 7.0)"))
    migrate.upgrade(engine)
    assert migrate.current(engine) == migrate.head()
    with engine.connect() as c:
        rows = {r.batch_size: r for r in c.execute(text(
            "select batch_size, split_gpu_ms, split_launch_ms, split_rest_ms "
            "from measurements"))}
    want = split(0.8, 0.1, 64, 7.0)
    got = rows[1]
    assert (got.split_gpu_ms, got.split_launch_ms, got.split_rest_ms) == pytest.approx(
        (want.gpu_ms, want.launch_ms, want.rest_ms))
    assert got.split_launch_ms == pytest.approx(0.448)
    assert rows[8].split_gpu_ms is None  # the point with no figures stays unknown
    engine.dispose()
