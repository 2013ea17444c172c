"""The command a run page offers (issue 29, item 3): runnable only for a catalog workload,
every value quoted; a `module:factory` workload gets words, never a copy button."""

from __future__ import annotations

import shlex

import pytest

from contract.run_summary import RunHeader
from db import queries
from db.samples import SAMPLES, seed_if_empty
from db.store import import_bundle
from pages.logic import links
from tests.records import header
from tests.synthetic import sweep_bundle

BATCHES, MODES = [1, 8], ["eager", "compile"]


def _header(**run) -> RunHeader:
    return header(**{"workload": "mlp", "workload_params": {"depth": 2, "width": 16},
                     "command": None, **run})


def test_a_factory_workload_gets_words_and_no_command():
    offer = links.reproduce(_header(workload="os:system",
                                    workload_params={"command": "touch pwned"}),
                            BATCHES, MODES)
    assert offer.command is None
    assert "'os'" in offer.note and "'system'" in offer.note and "import" in offer.note


def test_an_unknown_workload_gets_no_command():
    offer = links.reproduce(_header(workload="rm -rf ~"), BATCHES, MODES)
    assert offer.command is None and "not in this launchbench's catalog" in offer.note


def test_a_catalog_workload_without_command_gets_one_with_every_value_quoted():
    offer = links.reproduce(_header(), BATCHES, MODES)
    argv = shlex.split(offer.command)
    assert argv[:6] == ["python", "-m", "runner", "sweep", "--workload", "mlp"]
    assert "carries no command" in offer.note


def test_a_plain_stored_sweep_is_offered_as_stored():
    stored = shlex.join(["python", "-m", "runner", "sweep", "--workload", "mlp",
                         "--batch-sizes", "1,8", "--modes", "eager,compile", "--device",
                         "cuda", "--timing", "standard", "--param", "depth=2",
                         "--processes", "3", "--label", "it's $(mine); `x`"])
    offer = links.reproduce(_header(command=stored), BATCHES, MODES)
    assert offer.command == stored and offer.note == ""
    assert shlex.split(offer.command)[-1] == "it's $(mine); `x`"  # a quoted word


@pytest.mark.parametrize("stored", [
    "python -m runner sweep --workload mlp --batch-sizes 1 --modes eager; touch pwned",
    "python -m runner sweep --workload mlp --batch-sizes 1 --out /root/.bashrc",
    "python -m runner sweep --workload mlp --db postgresql://evil.example/x",
    "python -m runner sweep --workload os:system --param command=id",
    "touch pwned",
    "python -m runner sweep --workload mlp --param 'nosuch=1'",
    "python -m runner sweep --workload 'mlp",
])
def test_a_stored_line_with_anything_else_is_not_offered(stored):
    offer = links.reproduce(_header(command=stored), BATCHES, MODES)
    assert offer.command != stored and "pwned" not in (offer.command or "")
    assert shlex.split(offer.command)[:6] == ["python", "-m", "runner", "sweep",
                                             "--workload", "mlp"]


def test_every_shipped_sample_still_gets_a_command(sqlite_engine):
    seed_if_empty(sqlite_engine, SAMPLES)
    for r in queries.runs_list(sqlite_engine):
        if r.header.kind != "sweep":
            continue
        pts = queries.run_points(sqlite_engine, r.header.id)
        offer = links.reproduce(r.header, [m.batch_size for m in pts], [m.mode for m in pts])
        assert offer.command, (r.header.workload, offer.note)


def test_the_run_page_offers_no_copy_button_for_a_factory_workload(dash):
    doc = sweep_bundle(uuid="factory-1")
    doc["run"].update(workload="os:system", workload_params={"command": "touch pwned"})
    doc["run"].pop("command", None)
    rid = import_bundle(dash.engine, doc)[0]
    at = dash.open("pages/run.py", run=str(rid), view="Environment")
    assert not [c.value for c in at.code if "pwned" in c.value or "os:system" in c.value]
    assert any("system" in c.value and "import" in c.value for c in at.caption)
