"""Compare's "which GPU gains more from graphs" (issue 47 item 1) on the shipped H100 and
H200 mlp sweeps, with the published L40S figures mixed in: per graph mode and batch each
GPU's speedup, at a common launch cost, its GPU busy time and launch cost, and the
answer only where the intervals part; the published run named as left out."""

from __future__ import annotations

from db import queries
from tests.apptest import share_links, texts
from tests.conftest import H100_MLP_UUID, H200_MLP_DEFAULT_UUID, H200_MLP_ENERGY_UUID


def _id(dash, uuid: str) -> int:
    runs = queries.runs_frame(dash.engine)
    return int(runs.loc[runs["uuid"] == uuid, "id"].iloc[0])


def _ids(dash, h200: str = H200_MLP_ENERGY_UUID):
    """The H100 mlp sample and an H200 sweep of the same mlp (same batch sizes): by
    default the one of a slower host, where the two GPUs' answers part at batch 64."""
    return _id(dash, H100_MLP_UUID), _id(dash, h200)


def _gains(at):
    return next(d.value for d in at.dataframe if "gains more" in d.value.columns)


def test_compare_says_which_gpu_gains_more_and_names_the_published_run(dash):
    h100, h200 = _ids(dash)
    at = dash.open("pages/compare.py", run=[str(h100), str(h200), str(dash.published)])
    assert "Which GPU gains more from graphs" in texts(at, "subheader")
    t = _gains(at).set_index(["mode", "batch", "GPU"])
    # two rows (one per GPU) for each graph mode and batch both sweeps share
    assert len(t) == 2 * 2 * 4 and t.index.is_unique
    # batch 64: the H200's interval lies above the H100's and stays above at 10 us a launch
    win = t.loc[("cuda-graph", 64, f"#{h200} H200")]
    assert win["gains more"] == "yes, also at 10 us"
    assert t.loc[("cuda-graph", 64, f"#{h100} H100")]["gains more"] == "no"
    assert float(win["at 10 us"].rstrip("x")) > float(
        t.loc[("cuda-graph", 64, f"#{h100} H100")]["at 10 us"].rstrip("x"))
    # batch 1: the intervals overlap, so neither is said to gain more
    assert set(t.loc[("cuda-graph", 1)]["gains more"]) == {"neither: overlap"}
    # the GPU's work and the host's launch cost are figures on every row, never "None"
    assert t["GPU busy ms"].str.match(r"^\d+\.\d{3}$").all()
    assert t["launch us"].str.match(r"^\d+\.\d$").all()
    assert "The H200 gains more at 2 of 8" in " ".join(texts(at, "markdown"))
    # the published L40S is no row of the answer, and is named as left out
    assert not t.index.get_level_values("GPU").str.contains("L40S").any()
    assert any("Not in this answer" in c and f"#{dash.published}" in c
               for c in texts(at, "caption"))


def test_the_same_sweep_from_one_tree_on_alike_hosts_gains_alike(dash):
    """The H200's sweep of the H100's night (h200-mlp-default.json): hosts alike (a
    launch 7.4-9.1 us against 7.6-9.0), GPU busy time alike at every point, and every
    interval overlapping, so the page names no GPU."""
    h100, h200 = _ids(dash, H200_MLP_DEFAULT_UUID)
    at = dash.open("pages/compare.py", run=[str(h100), str(h200)])
    t = _gains(at).set_index(["mode", "batch", "GPU"])
    assert len(t) == 2 * 2 * 4 and set(t["gains more"]) == {"neither: overlap"}
    busy = t["GPU busy ms"].astype(float).unstack("GPU")
    assert ((busy.max(axis=1) / busy.min(axis=1)) < 1.05).all(), busy
    assert any("Neither GPU gains more at any shared point" in m
               for m in texts(at, "markdown"))


def test_the_common_launch_cost_changes_the_projected_speedups(dash):
    h100, h200 = _ids(dash)
    at = dash.open("pages/compare.py", run=[str(h100), str(h200)])
    before = _gains(at)
    at.radio(key="at_us").set_value(at.radio(key="at_us").options[0]).run()
    after = _gains(at)
    assert [c for c in after.columns if c.startswith("at ")] != ["at 10 us"]
    assert before["speedup"].tolist() == after["speedup"].tolist()  # measured: unchanged


def test_one_gpu_gets_no_gains_section(dash):
    runs = queries.runs_frame(dash.engine)
    cpu = [str(i) for i in runs[runs["gpu_name"].isna() & (runs["kind"] == "sweep")]["id"]]
    at = dash.open("pages/compare.py", run=cpu[:2])
    assert "Which GPU gains more from graphs" not in texts(at, "subheader")


def test_the_share_link_keeps_the_timeline_mode_baseline_and_launch_cost(dash):
    """Issue 46: ?mode=, ?baseline= and ?at_us= restore Compare's choices and ride in its
    share link; a bad value gets one error naming it, and the default is shown."""
    a = dash.add(gpu="GPU A", batches=(8,), modes=("eager", "cuda-graph"), traces=True)
    b = dash.add(gpu="GPU B", batches=(8,), modes=("eager", "cuda-graph"), traces=True,
                 scale=2.0)
    at = dash.open("pages/compare.py", run=[str(a), str(b)], batch="8", mode="cuda-graph",
                   baseline=str(b), at_us="20")
    assert not texts(at, "error")
    assert at.selectbox(key="timeline_mode").value == "cuda-graph"
    assert at.radio(key="at_us").value == 20.0
    [shared] = [c for c in share_links(at) if "/compare?" in c]
    assert shared.endswith(f"?run={a}&run={b}&batch=8&mode=cuda-graph&baseline={b}"
                           "&at_us=20"), shared
    ratios = next(d.value for d in at.dataframe if "vs baseline" in d.value.columns)
    assert not ratios["run"].str.startswith(f"#{b} ").any()  # b is the baseline
    # a change is written back to the URL
    at.radio(key="at_us").set_value(5.0).run()
    assert dict(at.query_params)["at_us"] in ("5", ["5"])

    at = dash.open("pages/compare.py", run=[str(a), str(b)], batch="8", mode="warp",
                   baseline="99", at_us="7")
    errors = texts(at, "error")
    assert any("?mode='warp' is not one of eager, cuda-graph" in e for e in errors), errors
    assert any(f"?baseline='99' is not one of {a}, {b}; showing {a}" in e for e in errors)
    assert any("?at\\_us='7' is not one of 5, 10, 20; showing 10" in e for e in errors), errors
    assert at.radio(key="at_us").value == 10.0


def test_no_table_shows_none_beside_the_published_runs(dash):
    """Issue 46: with the published V100 (per-kernel figures, no batch or step time) and
    L40S (no memory) beside a measured run, no cell reads "None": an unknown one is the
    tables' dash, and a run without any memory figure has no column of blanks."""
    runs = queries.runs_frame(dash.engine)
    v100 = int(runs[runs["gpu_name"].fillna("").str.contains("V100")]["id"].iloc[0])
    h100, _ = _ids(dash)
    at = dash.open("pages/compare.py", run=[str(h100), str(dash.published), str(v100)])
    assert all(d.proto.placeholder == "—" for d in at.dataframe)
    host = next(d.value for d in at.dataframe if "GPU share" in d.value.columns)
    v100_row = host[host["run"].str.startswith(f"#{v100} ")].iloc[0]
    assert v100_row["batch"] is None or v100_row["batch"] != v100_row["batch"]  # unknown
    memory = next(d.value for d in at.dataframe if any(c.endswith(" MiB")
                                                       for c in d.value.columns))
    assert [c for c in memory.columns if c.endswith(" MiB")] == [
        c for c in memory.columns if c.startswith(f"#{h100} ")]
    assert any(f"#{dash.published} " in c and "No memory cost over eager measured" in c
               for c in texts(at, "caption"))
    assert any(c.startswith("Lines: ") and "dashes" in c for c in texts(at, "caption"))


def test_all_fields_are_drawn_only_once_opened(dash):
    """Closed (the default), Compare sends no table of every field; opened, it lists the
    fields both runs share too (their GPU and driver differ, the workload does not)."""
    h100, h200 = _ids(dash)
    at = dash.open("pages/compare.py", run=[str(h100), str(h200)])
    shown = len(at.table)
    at.session_state["all_fields"] = True
    at.run()
    assert not at.exception and len(at.table) == shown + 1
    every = at.table[-1].value
    assert set(every["differs"]) == {"yes", "no"}
