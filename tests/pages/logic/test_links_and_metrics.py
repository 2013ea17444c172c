"""Links and the metrics table's words: run ids from a URL, page URLs, the command that
measures a run again, and every figure's title, unit and text."""

from __future__ import annotations

import pytest

from contract import bundle as fmt
from pages.logic import links, metrics
from tests.records import header


@pytest.mark.parametrize("bad", ["abc", "-1", "0", "1.5", "", "9" * 20, "1;drop"])
def test_parse_run_id_refuses_with_the_value_named(bad):
    with pytest.raises(links.LinkError) as e:
        links.parse_run_id(bad)
    if bad.strip() and bad != "0":
        assert repr(bad[:40]) in str(e.value) or bad in str(e.value)


def test_parse_run_ids_keeps_good_ids_beside_errors():
    ids, errors = links.parse_run_ids(["3", "x", "5,3", "7"])
    assert ids == [3, 5, 7] and len(errors) == 1 and "'x'" in errors[0]
    assert links.missing_runs([3, 9], [3]) == [links.missing_runs([9], [])[0]]


def test_page_urls_replace_the_current_page_and_repeat_params():
    base = "http://127.0.0.1:8501/run"
    assert links.run_url(base, 4) == "http://127.0.0.1:8501/run?run=4"
    assert links.compare_url("http://h:1/app/", [1, 2]) == "http://h:1/app/compare?run=1&run=2"
    assert links.page_url(None, "", {"gpu": ["A B"], "torch": []}) == "/?gpu=A+B"


def test_measure_command_for_a_run_without_one():
    cmd = links.measure_command(header(workload="mlp",
                                       workload_params={"width": 256, "depth": 32}),
                                [8192, 8, 8], ["compile", "eager", "eager"])
    assert cmd == ("python -m runner sweep --workload mlp --param depth=32 --param width=256 "
                   "--batch-sizes 8,8192 --modes eager,compile")


def test_metrics_format_interval():
    assert metrics.format_interval("speedup", 6.5, 7.6) == "6.50-7.60x"
    assert metrics.format_interval("step_ms", 1.23, 1.3) == "1.230-1.300 ms"
    # A clamped low end bounds nothing, for a time as for a ratio (issue 46).
    assert metrics.format_interval("step_ms", 0.0, 30.584) == "≤30.584 ms"
    assert metrics.format_interval("speedup", 0.0, 4.9) == "≤4.90x, no lower bound"
    assert metrics.format_interval("speedup", None, 7.6) == metrics.NO_INTERVAL
    assert metrics.format_interval("speedup", float("nan"), 7.6) == metrics.NO_INTERVAL


def test_metrics_format_units_and_unknown():
    assert metrics.format_value("step_ms", 1.23456) == "1.235 ms"
    assert metrics.format_value("graph_pool_bytes", 32 * 1024 * 1024) == "32.0 MiB"
    assert metrics.format_value("speedup", 9.4) == "9.40x"
    assert metrics.format_value("busy_fraction", 0.5) == "50%"
    assert metrics.format_value("step_ms", None) == metrics.MISSING
    assert metrics.format_value("step_ms", float("nan")) == metrics.MISSING
    assert metrics.title("step_ms") == "Step time (ms)"
    with pytest.raises(KeyError):
        metrics.metric("nope")


def test_every_number_field_has_a_metric():
    assert set(fmt.NUMBER_FIELDS) - {"samples"} <= set(metrics.METRICS) | {"samples"}
    for name in fmt.NUMBER_FIELDS:
        metrics.metric(name)


def test_every_page_file_is_named_as_its_url():
    """Streamlit also reads pages/*.py as pages of their own (its folder convention),
    before app.py's navigation runs: a URL that names no such file (/import served by
    pages/import_export.py) got its "Page not found" dialog over a page that did open,
    and the dialog left the page's buttons unclickable. So each page's file is its URL."""
    from pathlib import Path

    from pages.logic.links import PAGES

    for key, spec in PAGES.items():
        if spec.url_path:  # "" is the default page at "/"
            assert Path(spec.file).stem == spec.url_path, (key, spec.file, spec.url_path)


def test_a_report_names_its_dashboard_only_where_others_can_reach_it():
    """A report is a file mailed away: a dashboard on 127.0.0.1 or localhost is no place
    to send its reader; a shared host's run link is kept."""
    assert links.report_origin("http://127.0.0.1:8501", 7) is None
    assert links.report_origin("http://localhost:8501/", 7, 8) is None
    assert links.report_origin(None, 7) is None
    assert links.report_origin("https://bench.example.org", 7, 8) == \
        "https://bench.example.org/run?run=7&batch=8"
