"""The kernel-chain and train-step views (pages/logic/workload_views.py), the published
V100 sample, and the Run and Compare pages showing them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contract import bundle as fmt
from contract.measurement import Measurement
from db import queries
from db.samples import SAMPLES
from db.store import import_bundle
from pages.charts import workload_charts
from pages.logic import workload_views as wv
from tests.apptest import texts
from tests.records import header
from tests.synthetic import sweep_bundle

V100 = SAMPLES / "published-v100-cuda-graphs-blog.json"
CHAIN = header(workload="kernel-chain", workload_params={"kernels": 20})


def frame(doc: dict):
    """A bundle's points as records (unvalidated: the V100 sample's own fields)."""
    return [Measurement.from_json(m) for m in doc["measurements"]]


def test_v100_sample_holds_exactly_the_blogs_figures():
    doc = fmt.read(V100)
    run, env = doc["run"], doc["environment"]
    assert run["source"] == "published" and run["workload"] == "kernel-chain"
    assert "Getting Started with CUDA Graphs" in run["label"]
    assert run["workload_params"] == {"kernels": 20, "dtype": "float32"}
    assert (env["gpu_name"], env["cuda_version"], env["torch_version"]) == (
        "Tesla V100-SXM2-16GB", "10.1", None)
    got = {m["mode"]: m for m in doc["measurements"]}
    assert set(got) == {"eager", "cuda-graph"}
    assert got["eager"]["details"]["per_kernel_us"] == 3.8
    assert got["eager"]["details"]["per_kernel_us_sync_each_kernel"] == 9.6
    assert got["cuda-graph"]["details"]["per_kernel_us"] == 3.4
    for m in got.values():
        assert m["batch_size"] == 500000 and m["details"]["kernel_us"] == 2.9
        assert m["details"]["citation"] == run["label"]
        # Nothing derived: every contract figure the blog does not give is null.
        assert all(m[f] is None for f in fmt.NUMBER_FIELDS)


def test_per_kernel_figures_measured_and_published():
    measured = frame(sweep_bundle(workload="kernel-chain", params={"kernels": 20},
                                  batches=(8,), modes=("eager", "cuda-graph")))
    table = wv.per_kernel_table(measured, CHAIN).set_index("mode")
    eager = next(m for m in measured if m.mode == "eager")
    assert table.at["eager", "per kernel us"] == pytest.approx(eager.timing.step_ms * 1e3 / 20)
    assert table.at["eager", "GPU per kernel us"] == pytest.approx(
        eager.launches.gpu_busy_ms * 1e3 / eager.launches.gpu_kernels_per_step)
    published = wv.per_kernel_table(frame(fmt.read(V100)), replace(CHAIN, source="published"))
    assert published.set_index("mode")["per kernel us"].to_dict() == {"eager": 3.8,
                                                                       "cuda-graph": 3.4}
    assert published["GPU per kernel us"].tolist() == [2.9, 2.9]
    assert wv.per_kernel_table(measured, header(workload="mlp")).empty


def test_hand_calculation_redone_with_measured_figures():
    assert wv.estimate(100, 5.0, 2.0) == (500.0, 205.0)  # the interview note's figures
    assert "500 us eager" in wv.note_text() and "205 us under one graph" in wv.note_text()
    measured = frame(sweep_bundle(workload="kernel-chain", params={"kernels": 20},
                                  batches=(8,), modes=("eager", "cuda-graph"),
                                  launch_us=7.0))
    row = wv.hand_calculation(measured, CHAIN).iloc[0]
    eager = next(m for m in measured if m.mode == "eager")
    kernel = eager.launches.gpu_busy_ms * 1e3 / eager.launches.gpu_kernels_per_step
    assert row["L"] == 7.0 and row["K"] == kernel and row["N"] == 20
    assert row["eager: N x max(L, K)"] == 20 * max(7.0, kernel)
    assert row["graph: N x K + L"] == pytest.approx(20 * kernel + 7.0)
    graph = next(m for m in measured if m.mode == "cuda-graph")
    assert row["graph measured"] == pytest.approx(graph.timing.step_ms * 1e3)
    assert wv.HAND_LEGEND in wv.note_text()  # the letters said in words


def test_train_memory_table_reads_the_trees_and_the_separate_pools():
    doc = sweep_bundle(workload="train-step", batches=(8,),
                       modes=("eager", "reduce-overhead"))
    ro = next(m for m in doc["measurements"] if m["mode"] == "reduce-overhead")
    ro["details"].update(
        cudagraph_trees={"graphs": 2, "pools": 1, "forward": 1, "backward": 1, "nodes": []},
        separate_graphs={"forward_pool_bytes": 3 * wv.MIB, "backward_pool_bytes": wv.MIB,
                         "sum_bytes": 4 * wv.MIB, "method": "by hand"})
    train = header(workload="train-step")
    table = wv.train_trees_table(frame(doc), train)
    assert "mode" not in table  # reduce-overhead's alone: the caption says whose
    assert table.at[0, "graphs recorded"] == "1 forward + 1 backward, 1 pool"
    assert table.at[0, "separate sum (MiB)"] == 4.0 and len(table) == 1  # not eager's
    memory = wv.train_memory_table(frame(doc), train).set_index("mode")
    assert memory.at["reduce-overhead", wv.POOL_COL] == ro["graph_pool_bytes"] / wv.MIB
    assert list(memory.columns[1:]) == [wv.POOL_COL, "Peak during a step (MiB)",
                                        "Kept in the allocator (MiB)", "params match eager"]
    bars = wv.train_pool_frame(frame(doc), header(workload="train-step"))
    assert bars.groupby("how")["MiB"].sum().to_dict() == {
        "separate pools": 4.0, "trees: one shared pool": ro["graph_pool_bytes"] / wv.MIB}
    sections = wv.run_sections(header(workload="train-step"), frame(doc))
    assert [x.title for x in sections] == ["Training memory",
                                           "Graph trees against separate captures"]
    assert sections[0].pools is not None and workload_charts.train_pool_chart(sections[0].pools)


def test_run_and_compare_pages_show_per_kernel_figures_and_the_raw_cuda_note(dash):
    [v100] = [r.header.id for r in queries.runs_list(dash.engine)
              if r.header.uuid == "published-v100-cuda-graphs-blog"]
    h200, _ = import_bundle(dash.engine, sweep_bundle(
        workload="kernel-chain", params={"kernels": 20, "dtype": "float32"},
        batches=(8, 4096), modes=("eager", "cuda-graph")))
    at = dash.open("pages/run.py", run=str(h200), view="Points")
    heads = [str(h.value) for h in at.subheader]
    assert "Per kernel" in heads and "The hand calculation, measured" in heads
    assert any("raw CUDA" in c for c in texts(at, "caption"))
    at = dash.open("pages/run.py", run=str(v100), view="Points")
    assert "Per kernel" in [str(h.value) for h in at.subheader]
    at = dash.open("pages/compare.py", run=[str(h200), str(v100)])
    assert any("raw CUDA" in t for t in texts(at, "info"))
    assert "Per kernel (kernel-chain)" in [str(h.value) for h in at.subheader]
    table = next(d.value for d in at.dataframe if "per kernel us" in d.value.columns)
    assert set(table["run"]) == {f"#{h200} Synthetic GPU", f"#{v100} V100"}  # short
    assert any(f"#{v100} V100 is #{v100} Tesla V100" in t for t in texts(at, "caption"))


def test_run_page_shows_training_memory_with_its_chart(dash):
    doc = sweep_bundle(workload="train-step", params={"model": "mlp"}, batches=(8, 64),
                       modes=("eager", "reduce-overhead"))
    for m in doc["measurements"]:
        if m["mode"] == "reduce-overhead":
            m["details"]["separate_graphs"] = {"forward_pool_bytes": wv.MIB,
                                               "backward_pool_bytes": wv.MIB,
                                               "sum_bytes": 2 * wv.MIB,
                                               "method": "by hand"}
    rid, _ = import_bundle(dash.engine, doc)
    at = dash.open("pages/run.py", run=str(rid), view="Points")
    assert "Training memory" in [str(h.value) for h in at.subheader]
    assert any("shared pool" in str(c.value) for c in at.caption)
