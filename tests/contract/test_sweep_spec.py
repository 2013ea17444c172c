"""One path for a sweep spec (issue 24): checked once where it enters, then a SweepSpec,
serialised one way for the queue and for child processes; one writer of its command."""

from __future__ import annotations

import shlex

import pytest

from contract.specs import SweepSpec, check_sweep, sweep_command
from db import jobs

SPEC = SweepSpec(workload="mlp", params={"depth": "2", "width": "16"}, batch_sizes=(1, 8),
                 modes=("eager", "compile"), device="cpu", timing="quick", label="a b",
                 processes=2)


def test_the_json_form_round_trips_and_the_queue_leaves_processes_out():
    assert SweepSpec.from_json(SPEC.to_json()) == SPEC
    assert set(SPEC.to_json(queued=True)) == jobs.JOB_FIELDS
    assert check_sweep(SPEC.to_json()) == SPEC


def test_a_job_spec_is_a_sweep_spec_run_in_one_process():
    checked = jobs.check_spec(SPEC.to_json(queued=True))
    assert isinstance(checked, SweepSpec) and checked.processes == 1
    assert jobs.check_spec(checked) == checked  # checked where it entered: bounds only
    with pytest.raises(jobs.JobSpecError, match="unknown job spec field 'processes'"):
        jobs.check_spec(SPEC.to_json())


def test_one_writer_of_the_sweep_command():
    argv = shlex.split(SPEC.command())
    assert argv[:6] == ["python", "-m", "runner", "sweep", "--workload", "mlp"]
    for flag, value in (("--batch-sizes", "1,8"), ("--modes", "eager,compile"),
                        ("--device", "cpu"), ("--timing", "quick"), ("--processes", "2"),
                        ("--label", "a b")):
        assert argv[argv.index(flag) + 1] == value
    bare = sweep_command("mlp", {}, [4], ["eager"])
    assert bare == "python -m runner sweep --workload mlp --batch-sizes 4 --modes eager"
