"""The skeleton sweep, serve and graph-memory share (runner/ops/commands/measured.py): the
order of its steps is what keeps a bad flag from writing anything, so it is tested here on
a command with no GPU work in it."""

import argparse

import pytest

from runner.ops.cli import UsageError
from runner.ops.commands.measured import MeasuringCommand, RunFailed


class Fake(MeasuringCommand):
    def __init__(self, status="done", fail=None, writes_as_it_goes=True):
        self.status, self.fail, self.writes_as_it_goes = status, fail, writes_as_it_goes
        self.steps = []

    def parse(self, args):
        self.steps.append("parse")

    def resolve(self, args, storage):
        self.steps.append("resolve")

    def run(self, engine, storage):
        self.steps.append(("run", engine is not None))
        if self.fail:
            raise self.fail
        return self.status

    def report(self, status, engine, storage):
        self.steps.append(("report", status))


def _args(*, db=None, no_db=False, out=None):
    return argparse.Namespace(db=db, no_db=no_db, out=out)


def test_bad_storage_flags_stop_before_the_workload_is_resolved(tmp_path):
    cmd = Fake()
    with pytest.raises(UsageError, match="--no-db without --out"):
        cmd.main(_args(no_db=True))
    assert cmd.steps == ["parse"]


@pytest.mark.parametrize("status, code", [("done", 0), ("cancelled", 130), ("failed", 1)])
def test_the_exit_code_follows_the_run_status(tmp_path, status, code):
    cmd = Fake(status=status)
    assert cmd.main(_args(no_db=True, out=str(tmp_path / "b.json"))) == code
    assert cmd.steps == ["parse", "resolve", ("run", False), ("report", status)]


def test_a_command_that_stores_at_the_end_leaves_no_database_when_its_run_fails(
        tmp_path, capsys):
    db = tmp_path / "never.db"
    cmd = Fake(fail=RunFailed("capture failed, nothing written"), writes_as_it_goes=False)
    assert cmd.main(_args(db=f"sqlite:///{db}")) == 1
    assert capsys.readouterr().err == "error: capture failed, nothing written\n"
    assert not db.exists() and cmd.steps[-1] == ("run", False)


def test_a_command_that_writes_as_it_goes_gets_the_database_for_its_run(tmp_path):
    db = tmp_path / "runs.db"
    cmd = Fake()
    assert cmd.main(_args(db=f"sqlite:///{db}")) == 0
    assert ("run", True) in cmd.steps and db.exists()


def test_a_bug_in_the_run_is_not_turned_into_one_line(tmp_path):
    cmd = Fake(fail=KeyError("a bug"))
    with pytest.raises(KeyError):
        cmd.main(_args(no_db=True, out=str(tmp_path / "b.json")))
