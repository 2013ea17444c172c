"""Compare across GPUs (issue 39 item 3, issue 37 "Comparing GPUs") on the shipped H200,
L40S and V100 samples: one rule for what can be compared (board and Compare), what else
differs besides the GPU, GPU busy against launch cost, the speedup at a common launch
cost beside the measured one, and the V100 quoted by the figures it has."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from contract.comparability import compare_rule
from contract.run_record import ENVIRONMENT_FIELDS
from contract.run_summary import RunHeader
from pages.logic import across_gpus, board, comparing, workload_views
from tests.conftest import ROOT
from tests.records import points_of

SAMPLES = {3: "h200-mlp", 9: "published-l40s-day25", 10: "published-v100-cuda-graphs-blog"}


@pytest.fixture(scope="module")
def three():
    docs = {i: json.loads((ROOT / f"data/samples/{n}.json").read_text())
            for i, n in SAMPLES.items()}
    points = {i: points_of(d) for i, d in docs.items()}
    fields = {f.name for f in dataclasses.fields(RunHeader)}
    headers = [RunHeader(**{k: v for k, v in {"id": i, "status": "done", **d["run"],
                                              **{f: d["environment"].get(f)
                                                 for f in ENVIRONMENT_FIELDS}}.items()
                            if k in fields}) for i, d in docs.items()]
    return headers, points


def test_board_and_compare_apply_one_rule(three):
    headers, _ = three
    refused, warned = compare_rule(headers)
    assert board.compare_refusal(headers) == refused == []
    assert any("workloads differ" in w for w in warned)
    assert [kind for kind, _ in comparing.caveats(headers, three[1])
            if kind == "warning"][0] == "warning"


def test_cross_gpu_line_names_host_torch_and_model(three):
    headers, points = three
    line = across_gpus.cross_gpu_differences(headers, points)
    assert "host (" in line and "launch 6.8 us" in line and "not recorded" in line
    assert "torch version (#3 2.11.0+cu130, #9 2.8.0" in line
    # The V100 blog names no torch: in words, never a bare dash.
    torch_part = line.split("torch version (")[1].split(")")[0]
    assert torch_part.endswith("not recorded") and "—" not in torch_part
    assert "model size/params" in line and "kernel-chain" in line
    same_gpu = [dataclasses.replace(h, gpu_name="A") for h in headers]
    assert across_gpus.cross_gpu_differences(same_gpu, points) is None


def test_gpu_host_table_normalises_measured_runs_only(three):
    headers, points = three
    table = across_gpus.gpu_host_table(points, headers, at_us=10.0)
    h200 = table[(table["run"].str.startswith("#3")) & (table["mode"] == "cuda-graph")
                 & (table["batch"] == 8)].iloc[0]
    assert h200["speedup at 10 us"] == "8.95x"
    assert h200["speedup (measured)"].startswith("5.42x")
    assert h200["GPU share"] == "92% GPU-bound" and h200["GPU busy ms"] == "0.125"
    l40s = table[table["run"].str.startswith("#9") & (table["mode"] != "eager")]
    assert set(l40s["speedup at 10 us"]) == {across_gpus.NOT_NORMALISED}
    v100 = table[table["run"].str.startswith("#10")]
    assert list(v100["speedup at 10 us"]) == [across_gpus.NOT_NORMALISED]
    assert "10 us a launch" in across_gpus.normalise_rule(10.0)


def test_v100_key_figure_agrees_with_its_per_kernel_rows(three):
    headers, points = three
    names = comparing.run_names(headers)
    key = pd.DataFrame([{"run": names[10], "key figure": "no speedup measured",
                         "memory cost": ""}])
    per_kernel = workload_views.compare_per_kernel(points, headers)
    short = comparing.short_names(headers)[10]  # the table's name; the key table's whole
    assert "cuda-graph" in set(per_kernel.loc[per_kernel["run"] == short, "mode"])
    got = across_gpus.key_figures_per_kernel(key, per_kernel).iloc[0]["key figure"]
    assert got.startswith("cuda-graph: 3.4 us a kernel against eager's 3.8 us (1.12x")


def test_a_figure_a_published_row_lacks_is_a_blank_cell_not_none(three):
    """Compare's per-kernel table mixed numbers and None in one column, which the table
    showed as the word "None" on the V100 rows."""
    headers, points = three
    per_kernel = workload_views.compare_per_kernel(points, headers)
    for col in per_kernel.columns:
        assert not any(v is None for v in per_kernel[col]), col
    assert not per_kernel.astype(str).isin(["None"]).any().any()
