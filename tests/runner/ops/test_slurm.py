"""The Slurm executor: config and script as data, then a real one-node Slurm (munged +
slurmctld + slurmd, fake GPUs; tests/slurm_cluster.py) running real workers against the
PostgreSQL server. Every wait polls with a generous deadline: nothing here times Slurm."""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select

from contract import queue
from db import jobs, store
from db.engine import make_engine
from db.models import JobRow, MeasurementRow, RunRow
from runner.ops import slurm
from tests.conftest import ROOT, must_skip

APP = str(ROOT / "app.py")
TINY = {"workload": "mlp", "params": {"depth": "1", "width": "4"}, "batch_sizes": [1],
        "modes": ["eager"], "device": "cpu", "timing": "quick"}
# Hundreds of points: Slurm ends it (scancel) long before it could finish.
LONG = {**TINY, "batch_sizes": list(range(1, 501))}


def write_config(path: Path, out_dir: Path, **settings) -> Path:
    lines = [f'{k} = "{v}"' for k, v in settings.items()]
    lines += [f'python = "{sys.executable}"', f'workdir = "{ROOT}"',
              f'sbatch_flags = ["--output={out_dir}/slurm-%j.out", "--open-mode=append"]',
              "[gpu_types.v100]", "gres = true", 'constraint = "v100"']
    path.write_text("\n".join(lines) + "\n")
    return path


# --- without Slurm: the config and the script are data -----------------------------------

def test_config_and_script(tmp_path):
    path = tmp_path / "slurm.toml"
    path.write_text('partition = "gpu"\naccount = "perf"\ntime_limit = "02:00:00"\n'
                    'sbatch_flags = ["--qos=bench"]\npython = "/opt/lb venv/bin/python"\n'
                    '[gpu_types.v100]\ngres = true\n[gpu_types.h100]\nconstraint = "h100"\n')
    cfg = slurm.load_config(path)
    assert list(cfg.gpu_types) == ["v100", "h100"]
    text = slurm.script(queue.Job(id=7, gpu_type="v100", spec=TINY), cfg)
    for line in ("#SBATCH --job-name=launchbench-7", "#SBATCH --partition=gpu",
                 "#SBATCH --account=perf", "#SBATCH --time=02:00:00",
                 "#SBATCH --gres=gpu:v100:1", "#SBATCH --qos=bench",
                 "exec '/opt/lb venv/bin/python' -m runner worker --once --job 7"):
        assert line in text.splitlines(), text
    assert "--constraint" not in text and "postgres" not in text  # no URL in the script
    h100 = slurm.script(queue.Job(id=8, gpu_type="h100", spec=TINY), cfg)
    assert "#SBATCH --constraint=h100" in h100 and "--gres" not in h100
    with pytest.raises(slurm.SlurmError, match="unknown GPU type 'a100'.*v100, h100"):
        slurm.script(queue.Job(id=9, gpu_type="a100", spec=TINY), cfg)


@pytest.mark.parametrize("text, match", [
    ('[gpu_types.v100]\ngres = true\npartition = "a b"', "GPU type 'v100' must be"),
    ('partition = "a\\nb"\n[gpu_types.v100]\ngres = true', "without spaces"),
    ('time_limit = "soon"\n[gpu_types.v100]\ngres = true', "not a Slurm time"),
    ('sbatch_flags = ["rm"]\n[gpu_types.v100]\ngres = true', "sbatch_flags"),
    ('[gpu_types.v100]\n', "needs gres or constraint"),
    ('partition = "gpu"', "at least one GPU type"),
    ('shell = "x"\n[gpu_types.v100]\ngres = true', "unknown setting 'shell'"),
    ("[[", "slurm.toml"),
])
def test_bad_config_is_one_clear_line(tmp_path, text, match):
    path = tmp_path / "slurm.toml"
    path.write_text(text)
    with pytest.raises(slurm.SlurmError, match=match) as e:
        slurm.load_config(path)
    assert "\n" not in str(e.value)


def test_claims_never_run_a_slurm_job_twice_or_elsewhere(sqlite_engine):
    job_id = jobs.enqueue(sqlite_engine, TINY, executor="slurm", gpu_type="v100")
    w = queue.Worker(id=jobs.register_worker(sqlite_engine, name="w", hostname="h", pid=1,
                                             gpu_name=None, has_cuda=False,
                                             torch_version="2.x"),
                     name="w", gpu_name=None, has_cuda=False)
    assert jobs.claim_next(sqlite_engine, w) is None  # a local worker leaves it to Slurm
    assert jobs.claim_job(sqlite_engine, w, job_id, "41").status == "running"
    assert jobs.claim_job(sqlite_engine, w, job_id, "41") is None  # a requeued copy
    assert jobs.get_job(sqlite_engine, job_id).slurm_job_id == "41"
    assert jobs.end_unfinished(sqlite_engine, job_id, "failed", "Slurm job 41 ended TIMEOUT")
    assert not jobs.finish(sqlite_engine, job_id, "done")  # that verdict stands


def test_executor_setting_and_cli_without_slurm(sqlite_url, tmp_path, monkeypatch, capsys):
    from runner.ops.cli import main

    base = ["enqueue", "--db", sqlite_url, "--workload", "mlp", "--batch-sizes", "1"]
    monkeypatch.setenv("LAUNCHBENCH_EXECUTOR", "k8s")
    assert main(base) == 2 and "is not one of local, slurm" in capsys.readouterr().err
    monkeypatch.setenv("LAUNCHBENCH_EXECUTOR", "local")
    assert main([*base, "--gpu-type", "v100"]) == 2
    assert "needs LAUNCHBENCH_EXECUTOR=slurm" in capsys.readouterr().err
    monkeypatch.setenv("LAUNCHBENCH_EXECUTOR", "slurm")
    monkeypatch.setenv("LAUNCHBENCH_SLURM_CONFIG", str(tmp_path / "none.toml"))
    assert main(base) == 2 and "no Slurm config at" in capsys.readouterr().err
    cfg = write_config(tmp_path / "slurm.toml", tmp_path)
    monkeypatch.setenv("LAUNCHBENCH_SLURM_CONFIG", str(cfg))
    assert main(base) == 2 and "--gpu-type is required" in capsys.readouterr().err
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch here
    assert main([*base, "--gpu-type", "v100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "sbatch not found on PATH" in err
    assert jobs.list_jobs(make_engine(sqlite_url)) == []  # nothing left queued
    job_id = jobs.enqueue(make_engine(sqlite_url), TINY, executor="slurm", gpu_type="v100")
    assert main(["slurm-script", str(job_id), "--db", sqlite_url]) == 0
    assert f"--once --job {job_id}" in capsys.readouterr().out


# --- a real Slurm ------------------------------------------------------------------------

@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    from tests.slurm_cluster import SlurmCluster, missing

    why = missing()
    if why:
        must_skip(why)
    c = SlurmCluster(tmp_path_factory.mktemp("slurm")).start()
    mp = pytest.MonkeyPatch()
    mp.setenv("SLURM_CONF", str(c.conf))  # for sbatch/squeue/scontrol, and the batch jobs
    try:
        yield c
    finally:
        mp.undo()
        c.stop()


@pytest.fixture
def on_slurm(cluster, pg_url, tmp_path, monkeypatch):
    """The slurm executor configured against the test cluster; yields (engine, url)."""
    monkeypatch.setenv("LAUNCHBENCH_EXECUTOR", "slurm")
    monkeypatch.setenv("LAUNCHBENCH_SLURM_CONFIG",
                       str(write_config(tmp_path / "slurm.toml", tmp_path)))
    monkeypatch.setenv("LAUNCHBENCH_DB", pg_url)
    monkeypatch.delenv("LAUNCHBENCH_READ_ONLY", raising=False)
    engine = make_engine(pg_url)
    yield engine, pg_url
    cluster.run("scancel", "--user=root", check=False)  # nothing outlives its test
    engine.dispose()


def wait_for(predicate, what: str, timeout_s: float = 120.0, every_s: float = 0.5,
             detail=lambda: ""):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out waiting for {what}\n{detail()}")


def slurm_state(cluster, sid: str) -> str:
    out = cluster.run("scontrol", "show", "job", "-o", sid, check=False).stdout
    m = re.search(r"JobState=(\S+)", out)
    return m.group(1) if m else ""


def outputs(tmp_path: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("slurm-*.out"))


def runs(engine) -> int:
    with engine.connect() as c:
        return c.scalar(select(func.count()).select_from(RunRow))


def test_form_launch_on_v100_runs_under_slurm_once(on_slurm, cluster, tmp_path):
    from streamlit.testing.v1 import AppTest

    engine, _url = on_slurm
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/launch.py").run()
    before = runs(engine)  # the dashboard loads its samples into an empty database
    box = at.selectbox(key="lf_gpu_type")
    assert box.options == ["v100 · 0 running, 0 pending"]  # only the configured types
    assert not [t for t in at.text_input if t.key == "lf_target"]
    at.number_input(key="lf_p_mlp_depth").set_value(1)
    at.number_input(key="lf_p_mlp_width").set_value(4)
    at.multiselect(key="lf_modes").set_value(["eager"])
    at.radio(key="lf_preset").set_value("custom list")
    at.text_input(key="lf_custom").set_value("1")
    at.radio(key="lf_timing").set_value("quick")
    at.selectbox(key="lf_device").set_value("cpu")  # the GPUs are fake
    at.button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    [job] = jobs.list_jobs(engine)
    assert f"Queued job {job.id} as Slurm job {job.slurm_job_id} (GPU type v100)." \
        in [s.value for s in at.success]
    assert job.executor == "slurm" and job.gpu_type == "v100"
    sid = job.slurm_job_id
    done = wait_for(lambda: (j := jobs.get_job(engine, job.id)).status in jobs.FINISHED_STATUSES
                    and j, "the job to finish")
    assert done.status == "done", (done.message, outputs(tmp_path))
    assert done.slurm_job_id == sid and done.worker_name
    doc = store.export_bundle(engine, done.run_id)
    assert doc["run"]["status"] == "done" and len(doc["measurements"]) == 1
    assert wait_for(lambda: slurm_state(cluster, sid) == "COMPLETED", "Slurm's COMPLETED")
    # Slurm requeues the batch job: its second start must refuse the job, not rerun it.
    cluster.run("scontrol", "requeue", sid)
    # Slurm holds a requeued job (its old credential is revoked within the same second;
    # a start then is refused): a start a few seconds on is the shortest safe wait.
    cluster.run("scontrol", "update", f"JobId={sid}", "StartTime=now+3")
    wait_for(lambda: "refusing to claim it again" in outputs(tmp_path), "the requeued copy",
             detail=lambda: outputs(tmp_path) + cluster.run("scontrol", "show", "job",
                                                            sid).stdout)
    assert wait_for(lambda: slurm_state(cluster, sid) == "COMPLETED", "the copy's end")
    assert jobs.get_job(engine, job.id).status == "done"
    assert runs(engine) == before + 1


def settled(engine, job_id: int):
    """Reconcile as the Launch page does every second; the job once it has ended."""
    slurm.reconcile(engine)
    job = jobs.get_job(engine, job_id)
    return job.status in jobs.FINISHED_STATUSES and job


def _running(engine, job_id: int):
    job = jobs.get_job(engine, job_id)
    assert job.status in ("queued", "running"), job.message
    return job.status == "running" and job.points_done >= 1 and job


def test_outside_scancel_fails_the_job_with_slurms_reason(on_slurm, cluster, tmp_path):
    engine, url = on_slurm
    job_id, sid = slurm.submit(engine, LONG, "v100", url)
    wait_for(lambda: _running(engine, job_id), "a point done under Slurm")
    cluster.run("scancel", sid)  # from outside: launchbench did not ask
    job = wait_for(lambda: settled(engine, job_id), "the job to end")
    assert job.status == "failed", outputs(tmp_path)
    assert f"Slurm job {sid} ended CANCELLED" in job.message
    assert store.export_bundle(engine, job.run_id)["run"]["status"] == "failed"


def test_cancel_from_cli_and_dashboard_runs_scancel(on_slurm, cluster, tmp_path, capsys):
    from streamlit.testing.v1 import AppTest

    from runner.ops.cli import main

    engine, url = on_slurm
    running, sid = slurm.submit(engine, LONG, "v100", url)
    wait_for(lambda: _running(engine, running), "a point done under Slurm")
    assert main(["cancel", str(running), "--db", url]) == 0
    assert "is running: it stops" in capsys.readouterr().out
    job = wait_for(lambda: settled(engine, running), "the cancelled job to end")
    assert job.status == "cancelled", (job.message, outputs(tmp_path))
    assert wait_for(lambda: slurm_state(cluster, sid) == "CANCELLED", "Slurm's CANCELLED")
    held = slurm.load_config(write_config(tmp_path / "held.toml", tmp_path))
    held = dataclasses.replace(held, sbatch_flags=(*held.sbatch_flags, "--hold"))
    queued, sid = slurm.submit(engine, TINY, "v100", url, held)  # stays pending
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/launch.py")
    at.query_params = {"job": str(queued)}
    at.run()
    assert at.selectbox(key="lf_gpu_type").options == ["v100 · 0 running, 1 pending"]
    at.button(key=f"cancel_{queued}").click().run()  # (AppTest cannot rerun a fragment)
    assert jobs.get_job(engine, queued).status == "cancelled"
    assert wait_for(lambda: slurm_state(cluster, sid) == "CANCELLED", "scancel of the held")


def test_time_limit_fails_the_job(on_slurm, cluster, tmp_path, monkeypatch):
    engine, url = on_slurm
    config = slurm.load_config(write_config(tmp_path / "limited.toml", tmp_path,
                                            time_limit="1"))
    job_id, sid = slurm.submit(engine, LONG, "v100", url, config)
    wait_for(lambda: _running(engine, job_id), "a point done under Slurm")
    assert "TimeLimit=00:01:00" in cluster.run("scontrol", "show", "job", sid).stdout
    with engine.connect() as lock, lock.begin():
        # Hold the job's row: the worker's next heartbeat waits on it, so the sweep
        # outlasts the limit however fast this machine is (a hung worker, in effect).
        assert lock.execute(select(JobRow.status).where(JobRow.id == job_id)
                            .with_for_update()).scalar() == "running"
        # Slurm limits are whole minutes; moving the end time in is the admin's way to
        # make the limit hit now (slurmctld checks limits only every few seconds).
        # Retried: on the loaded 2-core machine slurmctld once refused it (exit 1, seen
        # once in a full run), as it answers late; each refusal is kept for the message.
        refused: list[str] = []

        def end_now() -> bool:
            r = cluster.run("scontrol", "update", f"JobId={sid}", "EndTime=now",
                            check=False)
            refused.extend([] if r.returncode == 0 else
                           [f"exit {r.returncode}: {r.stderr.strip()} (job "
                            f"{slurm_state(cluster, sid)})"])
            return r.returncode == 0

        wait_for(end_now, "scontrol to take EndTime=now", timeout_s=60,
                 detail=lambda: "\n".join(refused[-3:]))
        wait_for(lambda: slurm_state(cluster, sid) == "TIMEOUT", "Slurm's TIMEOUT")
    job = wait_for(lambda: settled(engine, job_id), "the job to fail")
    assert job.status == "failed", outputs(tmp_path)
    assert f"Slurm job {sid} ended TIMEOUT (TimeLimit)" in job.message


def test_a_job_killed_before_claiming_is_reconciled(on_slurm, cluster):
    engine, url = on_slurm
    config = slurm.load_config(slurm.config_path())
    # A batch job that cannot start its worker (the interpreter is missing on the node).
    broken = dataclasses.replace(config, python="/nonexistent/python")
    job_id, sid = slurm.submit(engine, TINY, "v100", url, broken)
    wait_for(lambda: slurm_state(cluster, sid) == "FAILED", "the batch job to fail")
    assert jobs.get_job(engine, job_id).status == "queued"  # nobody claimed it
    [(ended, message)] = slurm.reconcile(engine)  # what the page and the workers run
    assert ended == job_id and message.startswith(f"Slurm job {sid} ended FAILED")
    assert "exit code 127:0" in message
    assert jobs.get_job(engine, job_id).status == "failed"
    assert slurm.reconcile(engine) == []


def test_bad_input_refused_on_the_form_and_in_the_cli(on_slurm, cluster, tmp_path,
                                                     monkeypatch, capsys):
    from streamlit.testing.v1 import AppTest

    from runner.ops.cli import main

    engine, url = on_slurm
    with pytest.raises(slurm.SlurmError, match="unknown GPU type 'a100'"):
        slurm.submit(engine, TINY, "a100", url)
    argv = ["enqueue", "--db", url, "--workload", "mlp", "--batch-sizes", "1", "--device",
            "cpu", "--quick"]
    assert main([*argv, "--gpu-type", "a100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown GPU type 'a100'" in err
    monkeypatch.setenv("LAUNCHBENCH_SLURM_CONFIG", str(write_config(
        tmp_path / "nope.toml", tmp_path, partition="nope")))
    assert main([*argv, "--gpu-type", "v100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Slurm refused the job: Invalid partition" in err
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/launch.py").run()
    at.radio(key="lf_timing").set_value("quick")
    at.button[0].click().run()
    assert [e.value for e in at.error] == ["Slurm refused the job: Invalid partition name "
                                           "specified"]
    assert not at.success
    assert jobs.list_jobs(engine) == []  # nothing left queued as if it would run


# Three rounds of two: enough to see Slurm hold the third job back and to race the
# claims; each batch job starts a Python with torch, so every round costs seconds.
SLURM_JOBS = 6


def test_jobs_over_two_gpus_each_run_once(on_slurm, cluster, tmp_path):
    engine, url = on_slurm
    submitted = dict(slurm.submit(engine, TINY, "v100", url) for _ in range(SLURM_JOBS))
    busiest = 0

    def all_done():
        nonlocal busiest
        running = cluster.run("squeue", "-h", "-t", "RUNNING", "-o", "%i").stdout.split()
        busiest = max(busiest, len(running))
        rows = [jobs.get_job(engine, j) for j in submitted]
        assert not [r for r in rows if r.status in ("failed", "cancelled")], \
            [r.message for r in rows]
        return all(r.status == "done" for r in rows) and rows

    rows = wait_for(all_done, f"{SLURM_JOBS} jobs done", timeout_s=400, every_s=0.5)
    assert busiest <= 2  # one fake GPU each: Slurm never ran a third at once
    assert {r.slurm_job_id for r in rows} == set(submitted.values())
    # Each batch job's worker exits on its own after its job: none is left running for
    # the teardown's scancel (or the suite's reaper) to end.
    wait_for(lambda: {slurm_state(cluster, s) for s in submitted.values()} == {"COMPLETED"},
             "every batch job COMPLETED")
    claims = Counter(int(m) for m in re.findall(r"^claimed job (\d+)$", outputs(tmp_path),
                                                re.M))
    assert set(claims) == set(submitted) and set(claims.values()) == {1}
    with engine.connect() as c:
        assert c.scalar(select(func.count()).select_from(RunRow)) == SLURM_JOBS
        assert c.scalar(select(func.count()).select_from(MeasurementRow)) == SLURM_JOBS
    assert len({r.run_id for r in rows}) == SLURM_JOBS
