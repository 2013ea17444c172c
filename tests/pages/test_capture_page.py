"""The Serve page's capture-size section through AppTest, and its pure helpers
(pages/logic/capture_advice.py). Distributions are the samples in tests/data/capture/."""

from __future__ import annotations

import json

import pytest

from contract import capture_sizes as cs
from contract import graph_memory as gm
from pages.charts import capture_charts
from pages.logic import capture_advice as ca
from tests.apptest import open_app
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "capture"


@pytest.fixture
def page(app_db_url):
    return open_app("pages/serve.py", capture="True")  # the section opened


def test_paste_a_vllm_table_and_copy_the_config(page):
    page.text_area(key="cap_text").set_value(
        (DATA / "vllm_cudagraph_metrics.log").read_text()).run()
    assert not page.exception
    table = next(d.value for d in page.dataframe if "List" in d.value.columns)
    assert list(table["List"])[0] == "proposed" and table.iloc[0]["Largest"] == 131
    code = "\n".join(c.value for c in page.code)
    assert '"max_cudagraph_capture_size": 131' in code
    page.radio(key="cap_engine").set_value("sglang").run()
    assert "--cuda-graph-bs " in "\n".join(c.value for c in page.code)


def test_bad_distribution_and_tiny_budget_say_one_line(page):
    page.text_area(key="cap_text").set_value("4\n-2\n").run()
    assert any("line 2: batch size -2 is below 1" in e.value for e in page.error)
    page.text_area(key="cap_text").set_value("4\n8\n")
    page.number_input(key="cap_budget").set_value(2.0).run()
    assert any("below one graph" in e.value for e in page.error)
    assert not page.exception


def test_curve_charts_and_comparison_frame():
    rows = [gm.Capture(b, 0.01, 34 << 20, 0, (34 << 20) + i * (1 << 18))
            for i, b in enumerate((512, 64, 8, 1))]
    doc = gm.make_doc({"gpu_name": "GPU"}, {"workload": "mlp"}, [1, 8, 64, 512],
                      {"shared": rows})
    curve, back = ca.curve_from_text(json.dumps(doc))
    assert back is not None and curve.per_graph_bytes == 1 << 18
    total, added = capture_charts.curve_charts(back)
    assert total.to_dict()["mark"]["type"] == "line"
    a = ca.advise_text("1\n3\n8\n", "torch", 100, curve=curve)
    frame = ca.comparison_frame(a)
    assert frame.iloc[1]["Padding waste"] == "0.0%"
    with pytest.raises(gm.GraphMemoryError, match="uploaded curve"):
        ca.curve_from_text("{not json")
    assert ca.curve_from_text(None)[0] is cs.DEFAULT_CURVE


def test_the_section_is_drawn_only_while_open(app_db_url):
    """Closed (the default), none of its widgets is sent; ?capture=True opens it, as does
    the Run page's ?curve= link; a value other than True or False is named, and closed."""
    closed = open_app("pages/serve.py")
    assert not closed.text_area and not closed.number_input and not closed.radio
    assert open_app("pages/serve.py", curve="1").text_area(key="cap_text") is not None
    odd = open_app("pages/serve.py", capture="yes")
    assert not odd.text_area
    assert any("?capture='yes' is not True or False" in w.value for w in odd.warning)
