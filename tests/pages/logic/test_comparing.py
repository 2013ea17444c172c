"""Several runs side by side (pages/logic/comparing.py), the Runs board's rows
(board.py) and the time split's chart frame, over records."""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd
import pytest

from contract.noise import NoiseCounts
from contract.run_summary import RunListing
from pages.charts import split_charts
from pages.logic import board, comparing, points_table
from tests.records import header, headers, points_of, pts
from tests.synthetic import sweep_bundle


def test_ratio_table_is_baseline_over_run_and_keeps_gaps():
    h = headers({"id": 1, "gpu_name": "A"}, {"id": 2, "gpu_name": "B"})
    h3 = [*h, header(id=3, gpu_name="C")]
    p = {1: pts([("eager", 8, 2.0), ("eager", 64, 4.0), ("eager", 512, 5.0)]),
         2: pts([("eager", 8, 1.0), ("eager", 64, None)]), 3: pts([("eager", 64, 8.0)])}
    t = comparing.ratio_table(p, h3, baseline=1).set_index("batch_size")
    col = "#2 B vs #1"  # short names (names_legend says each whole)
    assert t.at[8, col] == 2.0
    assert pd.isna(t.at[64, col])
    assert t.at[64, "#3 C vs #1"] == 0.5  # run 3 takes twice as long
    assert 512 not in t.index  # one run only: no ratio to show
    assert "#1 A vs #2" in list(comparing.ratio_table(p, h, baseline=2).columns)
    assert t.at[8, f"{col} 95%"] == "no interval"  # no step-time intervals in these points


def test_ratio_table_marks_ratios_within_noise():
    h = headers({"id": 1, "gpu_name": "A"}, {"id": 2, "gpu_name": "B"})
    iv = lambda lo, hi: {"step_ms_ci_low": lo, "step_ms_ci_high": hi}  # noqa: E731
    p = {1: pts([("eager", 8, 2.0, iv(1.9, 2.1)), ("eager", 64, 1.0, iv(0.95, 1.05)),
                 ("eager", 512, 1.0)]),
         2: pts([("eager", 8, 1.0, iv(0.95, 1.05)), ("eager", 64, 0.97, iv(0.9, 1.02)),
                 ("eager", 512, 1.0)])}
    t = comparing.ratio_table(p, h, baseline=1).set_index("batch_size")
    col = "#2 B vs #1 95%"
    assert t.at[8, col] == "faster (1.81-2.21x)"
    assert t.at[64, col].startswith("within noise (")  # 1.03x, but the intervals overlap
    assert t.at[512, col] == "no interval"


def test_environment_diff_lists_only_differences_and_the_launch_cost():
    h = headers({"id": 1, "gpu_name": "A"}, {"id": 2, "gpu_name": "B", "source": "published"})
    d = comparing.environment_diff(h)
    assert set(d["field"]) == {"gpu_name", "source"}
    counts = comparing.environment_diff(headers({"id": 1, "sm_count": 132},
                                                {"id": 2, "sm_count": None}))
    assert list(counts.iloc[0, 1:3]) == ["132", "—"]
    assert len(comparing.environment_diff(h, only_differences=False)) > len(d)
    a = points_of(sweep_bundle(batches=(1, 8), launch_us=12.0, overrides={
        ("compile", 8): {"launch_us": 19.0}, ("eager", 1): {"launch_us": 7.0}}))
    b = points_of(sweep_bundle(batches=(8,), intervals=False))
    diff = comparing.environment_diff(h, points={1: a, 2: b}).set_index("field")
    row = diff.loc[comparing.LAUNCH_FIELD]
    assert list(row.iloc[:2]) == ["12.0 us (7.0-19.0)", "—"] and row["differs"]
    assert comparing.LAUNCH_FIELD not in set(comparing.environment_diff(h)["field"])


def test_series_name_marks_published_runs():
    assert comparing.series_name(header(gpu_name="NVIDIA L40S", torch_version="2.8.0",
                                        source="published")) == \
        "NVIDIA L40S · torch 2.8.0 (published)"
    assert comparing.series_name(header(gpu_name=None, torch_version="2.13")) == \
        "CPU · torch 2.13"
    assert comparing.series_name(header(gpu_name=None, hostname="box",
                                        torch_version="2.13")) == "CPU (box) · torch 2.13"


def test_status_marks_show_message():
    p = pts([("eager", 8, 1.0), ("compile", 8, None)])
    assert [points_table.status_mark(m) for m in p] == ["ok", "✖ error: boom"]


def test_time_split_frame_busy_fraction_idle_and_launch_time():
    p = pts([("eager", 8, 2.0, {"gpu_busy_ms": 0.5}), ("cuda-graph", 8, 0.5,
                                                      {"gpu_busy_ms": 0.52}),
             ("compile", 8, 1.0)])
    ts = split_charts.time_split_frame(p).set_index("mode")
    assert ts.at["eager", "busy_fraction"] == pytest.approx(0.25)
    assert ts.at["eager", "idle_ms"] == pytest.approx(1.5)
    assert ts.at["cuda-graph", "idle_ms"] == 0  # noise above the step is not negative idle
    assert pd.isna(ts.at["compile", "busy_fraction"])
    a = points_of(sweep_bundle(batches=(8,), launch_us=12.0))
    at = split_charts.time_split_frame(a).set_index(["mode", "batch_size"])
    # eager: 64 launches x 12 us = 0.768 ms of host launch time per step.
    assert at.at[("eager", 8), "host_launch_ms"] == pytest.approx(64 * 12.0 / 1000)
    old = split_charts.time_split_frame(points_of(sweep_bundle(batches=(8,),
                                                               intervals=False)))
    assert old["host_launch_ms"].isna().all()  # unknown, not 0
    assert split_charts.time_split_frame(pts([("eager", 8, None)])).empty


def test_runs_table_noise_column():
    h = header(id=1, created_at=datetime(2026, 1, 1, tzinfo=timezone.utc), gpu_name="A",
               torch_version="2", workload_params={}, label=None)
    run = RunListing(h, points=40, ok_points=40, noise=NoiseCounts(40, 40, 3, 0))
    assert board.runs_table([run]).at[0, "noise"] == "3 of 40 points noisy"
    serve = RunListing(header(id=2, kind="serve"), points=0)
    assert board.runs_table([serve]).at[0, "noise"] == "—"


def test_the_dash_of_each_drawn_mode_is_named():
    from types import SimpleNamespace as S

    from pages.logic.comparing import dash_legend

    line = dash_legend([[S(mode="eager"), S(mode="reduce-overhead"), S(mode="cuda-graph")]])
    assert line.startswith("Lines: reduce-overhead long dashes, cuda-graph solid;")
    assert "compile" not in line  # not drawn, not named
    assert dash_legend([]) == ""


def test_side_by_side_tables_leave_out_runs_without_the_figure():
    import pandas as pd

    from contract.run_summary import RunHeader
    from pages.logic.comparing import _side_by_side, without

    hs = [RunHeader(id=i, uuid=str(i), workload="mlp", status="done", gpu_name=g)
          for i, g in ((1, "A"), (2, "B"))]
    t = _side_by_side({("cuda-graph", 8): {1: 38.0}}, hs, "MiB")
    assert [c for c in t.columns if c.endswith(" MiB")] == ["#1 A MiB"]
    assert without(t, hs, "MiB") == ["#2 B"]  # named whole where it is said in words
    assert isinstance(t, pd.DataFrame)


def test_tables_name_runs_short_and_one_line_says_each_whole():
    from pages.logic.names import short_device

    assert [short_device({"gpu_name": g}) for g in (
        "NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB", "NVIDIA L40S", "NVIDIA H200",
        "NVIDIA GeForce RTX 4090", None)] == ["H100", "V100", "L40S", "H200", "RTX 4090",
                                             "CPU"]
    h = headers({"id": 9, "gpu_name": "NVIDIA H100 80GB HBM3"}, {"id": 16, "gpu_name": "B"})
    assert comparing.short_names(h) == {9: "#9 H100", 16: "#16 B"}
    assert comparing.names_legend(h) == ("In the tables: #9 H100 is #9 NVIDIA H100 80GB "
                                         "HBM3 · torch 2.0; #16 B is #16 B · torch 2.0.")
