"""The launch page through streamlit's AppTest: defaults that queue a valid job, every bad
field refused with its message and nothing queued, read-only mode, the followed job."""

from __future__ import annotations

from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from contract.queue import Job, JobProgress, Worker
from contract.specs import SweepSpec
from db import jobs
from db.engine import make_engine
from pages.logic import launch_estimate as le
from pages.logic import launch_form as lf
from tests.apptest import open_app, texts


@pytest.fixture
def engine(app_db_url):
    e = make_engine(app_db_url)
    # A live CPU worker: submitting must not start a real one from inside the test.
    jobs.register_worker(e, name="test-worker", hostname="here", pid=1, gpu_name=None,
                         has_cuda=False, torch_version="2.x")
    yield e
    e.dispose()


def open_launch(**params) -> AppTest:
    return open_app("pages/launch.py", **params)


def submit(at: AppTest) -> AppTest:
    at.button[0].click()  # the form's Launch button comes first
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_defaults_queue_a_valid_job(engine):
    at = open_launch()
    at.text_input(key="lf_label").set_value("from the form")
    at.radio(key="lf_timing").set_value("quick")
    submit(at)
    [job] = jobs.list_jobs(engine)
    assert job.status == "queued" and job.label == "from the form"
    assert job.spec["workload"] == "mlp" and job.spec["params"]["depth"] == "32"
    # A small sweep, fit for the host (issue 46): the only live worker has no CUDA, so
    # no CUDA-graph mode and no NVML energy (56 points with both, before).
    assert job.spec["batch_sizes"] == [1, 8, 64] and job.spec["timing"] == "quick"
    assert job.spec["modes"] == ["eager", "compile"] and job.spec["energy"] is False
    assert any(f"Queued job {job.id}" in t for t in texts(at, "success"))
    assert at.query_params["job"] in (str(job.id), [str(job.id)])
    assert f"Job {job.id}: queued" in texts(at, "subheader")
    assert "test-worker" in str(at.dataframe[-1].value)  # the live workers table


@pytest.mark.parametrize("key, value, message", [
    ("lf_custom", "1,0,8", "out of range"),
    ("lf_custom", "1,eight", "'eight' is not a whole number"),
    ("lf_custom", "", "give at least one batch size"),
    ("lf_label", "two\nlines", "control character"),
    ("lf_target", "gpu\tbox", "control character"),
])
def test_bad_fields_are_named_and_nothing_is_queued(engine, key, value, message):
    at = open_launch()
    at.radio(key="lf_preset").set_value(lf.CUSTOM)
    at.text_input(key=key).set_value(value)
    submit(at)
    assert any(message in t for t in texts(at, "error")), texts(at, "error")
    assert jobs.list_jobs(engine) == []


def test_no_mode_is_refused(engine):
    at = open_launch()
    at.multiselect(key="lf_modes").set_value([])
    submit(at)
    assert "choose at least one mode" in texts(at, "error")
    assert jobs.list_jobs(engine) == []


def test_switching_workload_shows_its_bounded_parameters(engine):
    at = open_launch()
    at.selectbox(key="lf_workload").set_value("transformer-decode").run()
    kv = at.number_input(key="lf_p_transformer-decode_kv_len")
    assert kv.value == 128 and "allowed: 1 to 65,536" in kv.help


def test_followed_job_shows_progress_cancel_and_run_link(engine):
    job_id = jobs.enqueue(engine, {"workload": "mlp", "batch_sizes": [1, 2], "modes":
                                   ["eager"], "device": "cpu", "timing": "quick"})
    at = open_launch(job=str(job_id))
    assert f"Job {job_id}: queued" in texts(at, "subheader")
    at.button(key=f"cancel_{job_id}").click().run()
    assert jobs.get_job(engine, job_id).status == "cancelled"
    at = open_launch(job="abc")
    assert "?job='abc' is not a job id" in texts(at, "warning")
    at = open_launch(job="999")
    assert "job 999 does not exist" in texts(at, "warning")
    at = open_launch(job="²")
    assert "?job='²' is not a job id" in texts(at, "warning")


def test_read_only_mode_has_no_form_and_no_cancel(engine, monkeypatch):
    job_id = jobs.enqueue(engine, {"workload": "mlp", "batch_sizes": [1], "modes":
                                   ["eager"], "device": "cpu", "timing": "quick"})
    monkeypatch.setenv("LAUNCHBENCH_READ_ONLY", "1")
    at = open_launch(job=str(job_id))
    assert any("Read-only share mode" in t for t in texts(at, "info"))
    assert not [b for b in at.button if b.label in ("Launch", "Cancel")]
    assert f"Job {job_id}: queued" in texts(at, "subheader")  # reading still works
    assert jobs.get_job(engine, job_id).status == "queued"


def test_form_check_is_pure_and_never_accepts_import_paths():
    good = lf.FormValues(workload="mlp", params={"depth": 2, "width": 16, "dtype": "float32"},
                         modes=["eager"], batch_preset=lf.CUSTOM,
                         custom_batches="1,2,4,...,64", timing="quick", device="cpu",
                         target=" NVIDIA H200 ", label="")
    checked = lf.check(good)
    assert checked.errors == {} and checked.target == "NVIDIA H200"
    assert checked.spec.batch_sizes == (1, 2, 4, 8, 16, 32, 64)
    assert checked.spec.params == {"depth": "2", "width": "16", "dtype": "float32"}
    bad = lf.check(replace(good, workload="os:system", device="tpu", timing="x"))
    assert set(bad.errors) == {"workload", "device", "timing"} and bad.spec is None
    assert "at most 200" in lf.check(replace(good, label="x" * 201)).errors["label"]
    bad = lf.check(replace(good, params={"depth": 0, "width": 16, "dtype": "float32"}))
    assert "outside" in bad.errors["param.depth"]


def test_estimate_only_from_runs_on_the_device_that_runs_it(engine):
    # The case: a CPU worker takes the job (the live test-worker here). The page
    # once said "about 12 s" from an H200 run and the sweep took 53 s: the estimate comes
    # from the shipped CPU series of mlp (data/samples/cpu-mlp-torch-*.json), never the
    # GPU runs; a workload with no CPU run gets none (below).
    at = open_launch()
    [info] = [t for t in texts(at, "info") if "point(s)" in t]
    assert info.startswith("6 point(s) · about ")  # the CPU default: 2 modes x 3
    assert "from 4 past run(s) of mlp on CPU" in info
    at.text_input(key="lf_target").set_value("NVIDIA H200").run()
    [info] = [t for t in texts(at, "info") if "point(s)" in t]
    assert info.startswith("6 point(s) · about ") and "of mlp on NVIDIA H200" in info
    at.selectbox(key="lf_workload").set_value("transformer-decode").run()
    at.text_input(key="lf_target").set_value("test-worker").run()  # a worker's name: its device
    [info] = [t for t in texts(at, "info") if "point(s)" in t]
    assert "no estimate: first run of transformer-decode on CPU" in info


def test_the_device_whose_runs_estimate_a_job():
    cpu = Worker(id=1, name="box", gpu_name=None)
    h200 = Worker(id=2, name="big", gpu_name="NVIDIA H200", has_cuda=True)
    serve = jobs.can_serve
    assert lf.history_gpu("cpu", "", [h200], serve, None) == "cpu"
    assert lf.history_gpu("auto", "big", [cpu, h200], serve, "cpu") == "NVIDIA H200"
    assert lf.history_gpu("auto", "NVIDIA L40S", [cpu], serve, "cpu") == "NVIDIA L40S"
    assert lf.history_gpu("auto", "", [cpu], serve, None) == "cpu"  # the one who can
    assert lf.history_gpu("cuda", "", [cpu, h200], serve, None) == "NVIDIA H200"
    assert lf.history_gpu("auto", "", [cpu, h200], serve, "cpu") is None  # either may
    assert lf.history_gpu("auto", "", [], serve, "cpu") == "cpu"  # Launch starts one here
    assert lf.history_gpu("cuda", "", [], serve, "cpu") is None  # and it cannot serve it
    job = Job(id=3, status="running", device="auto", worker_name="big")
    assert lf.job_gpu(job, [cpu, h200]) == "NVIDIA H200"
    assert lf.job_gpu(replace(job, worker_name="gone"), [cpu]) is None
    assert lf.job_gpu(replace(job, device="cpu"), []) == "cpu"


def test_estimate_is_pure_arithmetic_over_past_runs():
    import pandas as pd

    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    history = pd.DataFrame([  # queries.past_durations' columns
        {"run_id": 1, "points": 10, "point_wall_s": 50.0, "created_at": t0, "finished_at": t0},
        {"run_id": 2, "points": 4, "point_wall_s": float("nan"), "created_at": t0,
         "finished_at": t0 + pd.Timedelta(seconds=40)},
        {"run_id": 3, "points": 0, "point_wall_s": float("nan"), "created_at": t0,
         "finished_at": t0}])
    assert le.per_point_s(history) == [5.0, 10.0]
    est = le.estimate(SweepSpec("mlp", batch_sizes=(1, 8), modes=("eager",) * 3),
                      history, "NVIDIA H200")
    assert (est.points, est.seconds) == (6, 45.0)
    assert est.text() == ("6 point(s) · about 45s (from 2 past run(s) of mlp on NVIDIA H200, "
                          "7.5 s per point)")
    spec = SweepSpec("mlp", batch_sizes=(1,), modes=("eager",), timing="quick")
    none = le.estimate(spec, history.iloc[0:0], "CPU")
    assert none.seconds is None and none.text() == ("1 point(s) · no estimate: first run of "
                                                    "mlp on CPU")
    unknown = le.estimate(spec, history, None)  # the device is not known: no borrowing
    assert unknown.seconds is None and "no estimate: which device runs it" in unknown.basis


def test_a_job_no_live_worker_can_serve_says_so_before_launch(engine):
    at = open_launch()
    assert not [w for w in texts(at, "warning") if "worker" in w]
    at.selectbox(key="lf_device").set_value("cuda").run()
    assert any(w.startswith("No live worker has CUDA. Start `python -m runner worker")
               for w in texts(at, "warning")), texts(at, "warning")
    at.selectbox(key="lf_device").set_value("auto").run()
    at.text_input(key="lf_target").set_value("H100").run()
    [w] = [w for w in texts(at, "warning") if "target" in w]
    assert "No worker matches target 'H100' (live workers: test-worker (cpu))" in w
    assert "--name H100" in w


def test_an_out_of_range_parameter_is_named_beside_its_field(engine):
    at = open_launch()
    at.number_input(key="lf_p_mlp_depth").set_value(99999).run()
    assert any("outside" in e and "99999" in e for e in texts(at, "error")), texts(at, "error")
    submit(at)
    assert "Not launched: fix the parameter marked below." in texts(at, "error")
    assert jobs.list_jobs(engine) == []


def test_estimate_counts_compile_apart_from_past_compiles_or_says_first_compile():
    import pandas as pd

    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    spec = SweepSpec("mlp", batch_sizes=(1, 8), modes=("eager", "compile"), timing="quick")
    # The case: no past run of mlp on CPU, a sweep with compile. No figure is
    # made up; the compiles other workloads took on CPU are quoted, not added.
    first = le.estimate(spec, None, "CPU", None, [37.5, 31.0, 4.2])
    assert first.seconds is None
    assert first.basis == ("no estimate: first run of mlp on CPU; compiles took 4-38 s "
                           "here on CPU")
    # One past run of 4 points: 28 s of wall, of which its two compiles took 11 + 5 s.
    history = pd.DataFrame([{"run_id": 7, "points": 4, "point_wall_s": 28.0,
                             "created_at": t0, "finished_at": t0}])
    from contract.measurement import Measurement

    rows = [{"mode": "eager", "status": "ok", "details": {"phase_s": {"setup": 0.1}}},
            {"mode": "compile", "status": "ok", "details": {"phase_s": {"setup": 11.0}}},
            {"mode": "compile", "status": "ok", "details": {"phase_s": {"setup": 5.0}}},
            {"mode": "compile", "status": "error", "details": {}}]
    past = {7: [Measurement.from_json({"batch_size": 1, **r}) for r in rows]}
    est = le.estimate(replace(spec, batch_sizes=(1, 8, 64)), history, "CPU", past)
    # base (28 - 16) / 4 = 3 s per point x 6, plus 3 compiled points x the 8 s mean
    assert est.seconds == pytest.approx(6 * 3.0 + 3 * 8.0)
    assert est.basis == ("from 1 past run(s) of mlp on CPU, 3.0 s per point + 8 s per "
                         "compiled point (past compiles)")
    # Past runs without compiled points: their base, a floor (the compiles left out).
    eager_only = {7: [m for m in past[7] if m.mode == "eager"]}
    est = le.estimate(spec, history, "CPU", eager_only, [37.5])
    assert est.seconds == pytest.approx(4 * 28.0 / 4) and est.at_least
    assert est.text() == ("4 point(s) · at least 28s (from 1 past run(s) of mlp on CPU, "
                          "7.0 s per point; its 2 compiled point(s) not counted: no past "
                          "compile of mlp on CPU; compiles took 38 s here on CPU)")
    # Older runs that compiled without recording it: compiles stay inside their figure.
    blind = {7: [Measurement.from_json({"batch_size": 1, **r, "details": {}}) for r in rows]}
    assert le.estimate(spec, history, "CPU", blind).seconds == pytest.approx(28.0)
    # An eager-only sweep pays no compile.
    assert le.estimate(replace(spec, modes=("eager",)), history, "CPU", past).seconds == \
        pytest.approx(2 * 3.0)


def test_time_left_uses_the_estimate_until_a_point_is_measured():
    # A cold compile: 40 s in, no point measured; the estimate said 128 s.
    left, basis = le.time_left(JobProgress(remaining_s=None, elapsed_s=40.0), 128.0)
    assert left == 88.0 and "estimate" in basis
    assert le.time_left(JobProgress(remaining_s=30.0, elapsed_s=90.0), 128.0) == (
        30.0, "from the points measured so far")
    assert le.time_left(JobProgress(remaining_s=None, elapsed_s=None), 128.0) == (None, "")
    assert le.time_left(JobProgress(remaining_s=None, elapsed_s=5.0), None,
                        "eager batch 1") == (None, "still running: eager batch 1")


def test_time_left_never_reads_zero_while_something_still_runs():
    # The sweep read "0 s" for its last 30 s: the estimate had passed, then all
    # points were measured while the last profiled pass and the run's write went on.
    now = "compile batch 64: profiled pass"
    assert le.time_left(JobProgress(remaining_s=None, elapsed_s=200.0), 128.0, now) == (
        None, f"past the estimate of 2m 08s; still running: {now}")
    assert le.time_left(JobProgress(remaining_s=0.0, elapsed_s=50.0, done=9, total=9),
                        None, now) == (None, f"all 9 points measured; still running: {now}")


def test_the_bar_is_the_points_measured_and_nothing_in_flight():
    # Issue 46: "0 of 4 points measured" beside a bar a quarter full (both modes set up,
    # the timing waiting 12 minutes for the host's lock). The phase is said in words.
    from contract.point_text import describe, parse

    spec = {"modes": ["eager", "compile"]}

    def at(current, done=0, status="running"):
        job = Job(id=1, status=status, spec=spec, current_point=describe(current))
        return le.bar_fraction(job, JobProgress(None, None, done=done, total=4))

    assert parse(describe(("compile", 8, "setup"))) == ("compile", 8, "setup")
    assert parse("eager batch 64") == ("eager", 64, None)
    assert parse("repeat pass 1/2 batch 8") == ("repeat pass 1/2", 8, None)
    assert parse("done") is None and parse(None) is None
    # the sweep: 2 modes x 2 batch sizes, both set up at batch 1, timing waits
    for current in (("2 modes", 1), ("compile", 1, "setup"), ("2 modes", 1, "timing"),
                    ("compile", 1, "profiling")):
        assert at(current) == 0.0, current
    assert at(("compile", 8, "setup"), done=2) == 2 / 4
    assert at(None, done=4, status="done") == 1.0
    assert le.bar_fraction(Job(id=1, status="queued", spec=spec),
                           JobProgress(None, None, done=0, total=None)) is None


# --- what the followed job waits for (issue 46) ---------------------------------------------

def _worker(name, cuda=False, wid=1):
    return Worker(id=wid, name=name, gpu_name="NVIDIA H100" if cuda else None, has_cuda=cuda)


def test_defaults_fit_the_host_the_job_runs_on():
    cpu, gpu = _worker("c"), _worker("g", cuda=True)
    graphs = {"reduce-overhead", "cuda-graph"}
    for workers, here in (([cpu], None), ([cpu], "NVIDIA H100"), ([], "cpu")):
        d = lf.host_defaults(workers, here)
        assert not graphs & set(d.modes) and d.energy is False, (workers, here)
        assert d.modes == ("eager", "compile")
    for workers, here in (([gpu], "cpu"), ([cpu, gpu], None), ([], "NVIDIA H100"), ([], None)):
        d = lf.host_defaults(workers, here)
        assert graphs <= set(d.modes) and d.energy is True, (workers, here)
    for d in (lf.host_defaults([cpu], None), lf.host_defaults([gpu], None)):
        sizes = lf.batch_sizes(d.batch_preset, d.custom_batches)
        assert len(sizes) * len(d.modes) <= 12  # a small sweep, never 56 points


def test_a_queued_job_says_its_place_and_the_worker_it_waits_for():
    from db.jobs import can_serve
    from pages.logic.job_wait import waiting_for

    job = Job(id=9, status="queued", device="cpu")
    busy = Job(id=4, status="running", worker_name="c")
    assert waiting_for(job, 0, [], [], can_serve) == (
        "First in the queue; waiting for a worker to claim it: no live worker (start "
        "python -m runner worker where it can run).")
    assert waiting_for(job, 0, [], [], can_serve, starting=4242) == (
        "First in the queue; waiting for the worker started on this machine (pid 4242) "
        "to start up and claim it.")
    assert "no live worker has CUDA" in waiting_for(replace(job, device="cuda"), 0, [],
                                                    [_worker("c")], can_serve)
    assert waiting_for(job, 2, [busy], [_worker("c")], can_serve) == (
        "2 job(s) queued before it, taken first; waiting for a worker to claim it: c runs "
        "job 4.")
    assert "(d can, within a second)" in waiting_for(
        job, 0, [busy], [_worker("c"), _worker("d", wid=2)], can_serve)
    aimed = replace(job, target="H200")
    assert "no live worker serves target 'H200'" in waiting_for(aimed, 0, [], [_worker("c")],
                                                               can_serve)
    slurm = replace(job, executor="slurm", slurm_job_id="77", gpu_type="h100")
    assert waiting_for(slurm, 0, [], [], can_serve).endswith(
        "waiting for Slurm job 77 to start on a h100 node.")
    assert waiting_for(replace(job, status="running"), 0, [], [], can_serve) is None
    # Waiting for the lock: who holds it, since when, and how long so far (the DB's now).
    from datetime import datetime, timezone

    from contract.queue import lock_wait_message

    waits = replace(job, status="running", message=lock_wait_message(
        "pid 7 (job 3: python -m runner worker), since 2026-12-06 10:02:03 UTC"))
    now = datetime(2026, 12, 6, 10, 14, 7, tzinfo=timezone.utc)
    assert waiting_for(waits, 0, [], [], can_serve, now=now) == (
        "Waiting for this host's timing lock, held by pid 7 (job 3: python -m runner "
        "worker), since 2026-12-06 10:02:03 UTC (held 12m 04s so far). Its points are "
        "timed once the holder's timing section ends.")
    assert "so far" not in waiting_for(waits, 0, [], [], can_serve)  # no clock: not said
    assert waiting_for(replace(job, status="done"), 0, [], [], can_serve) is None


def test_a_job_waiting_for_the_timing_lock_says_who_holds_it_and_since_when(engine):
    from contract.queue import lock_wait_message

    spec = {"workload": "mlp", "batch_sizes": [1, 8], "modes": ["eager", "compile"],
            "device": "cpu", "timing": "quick"}
    first, second, third = (jobs.enqueue(engine, spec) for _ in range(3))
    [worker] = jobs.live_workers(engine)
    assert jobs.claim_next(engine, worker).id == first
    jobs.heartbeat(engine, worker.id, first,
                   progress=(0, 4, "2 modes batch 1: timing (the modes' rounds, interleaved)"))
    holder = "pid 1717 (python -m runner sweep), since 2026-12-06 10:02:03 UTC"
    jobs.note(engine, first, lock_wait_message(holder))
    at = open_launch(job=str(first))
    from pages.logic.plain import plain

    [waiting] = [w for w in texts(at, "warning") if "timing lock" in w]
    assert waiting.startswith(plain(f"Waiting for this host's timing lock, held by {holder} "
                                    "(held "))
    assert waiting.endswith(plain(" so far). Its points are timed once the holder's "
                                  "timing section ends."))
    bar = at.get("progress")[0]
    assert bar.value == 0 and bar.proto.text.startswith("0 of 4 points measured · waiting")
    at = open_launch(job=str(second))
    assert ("First in the queue; waiting for a worker to claim it: test-worker runs job "
            f"{first}.") in texts(at, "warning")
    at = open_launch(job=str(third))
    assert ("1 job(s) queued before it, taken first; waiting for a worker to claim it: "
            f"test-worker runs job {first}.") in texts(at, "warning")
    jobs.note(engine, first, "")  # the lock taken: the wait is no longer said
    at = open_launch(job=str(first))
    assert not [w for w in texts(at, "warning") if "timing lock" in w]
    jobs.finish(engine, first, "done")
    jobs.note(engine, first, lock_wait_message(holder))  # a job that ended keeps its verdict
    assert jobs.get_job(engine, first).message == ""
