"""The Launch page's widgets: a workload parameter's field, this session's id, and the
followed job's live view (progress, time left, Cancel). The page (pages/launch.py) lays
them out; the logic is pages/logic/launch_form.py's, the queue's reads and writes go
through the door (pages/widgets/data.py).
"""

from __future__ import annotations

import re

import streamlit as st

import runner.ops.slurm as slurm
from contract.limits import MAX_LABEL
from contract.queue import LOCK_WAIT, Job, JobProgress
from contract.specs import SweepSpec
from contract.vocab import FINISHED_STATUSES
from pages.logic import job_wait as jw
from pages.logic import launch_estimate as le
from pages.logic import launch_form as lf
from pages.logic.plain import plain
from pages.widgets import data
from pages.widgets.frame import PAGES
from runner.ops.launcher import local_worker_pid


def session_id() -> str | None:
    """This browser session's id: what the per-session queue cap counts by."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def param_widget(f: lf.ParamField, key: str):
    label, hint = f.name, lf.field_help(f)
    if f.kind == "choice":
        choices = list(f.choices)
        return st.selectbox(label, choices, index=choices.index(f.default), help=hint, key=key)
    # No bounds on the widget: a browser would only redden an out-of-range value and send
    # the old one; the check below says what is allowed, in words, beside the field.
    if f.kind == "int":
        return st.number_input(label, value=int(f.default), step=1, help=hint, key=key)
    if f.kind == "float":
        return st.number_input(label, value=float(f.default), help=hint, key=key)
    return st.text_input(label, str(f.default), max_chars=MAX_LABEL, help=hint, key=key)


def followed_job() -> int | None:
    """?job=ID: the job this page follows (a bad value gets one line)."""
    raw = st.query_params.get("job")
    if raw is None:
        return None
    if not re.fullmatch(r"[0-9]{1,12}", raw) or int(raw) < 1:
        st.warning(f"?job={raw!r} is not a job id")
        return None
    return int(raw)


def sweep_estimate(spec: SweepSpec | Job, gpu: str | None) -> le.Estimate:
    """How long `spec` takes on `gpu` ('cpu', a GPU's name, None: not known), from the
    past runs of its workload there; the compiles of any workload there are quoted
    where none of its own was measured."""
    where = {None: None, "cpu": "CPU"}.get(gpu, gpu)
    if where is None:
        return le.estimate(spec, None, None)
    history = data.past_durations(spec.workload, gpu)
    # Their points' details hold each compile's time: the estimate counts it apart.
    past = data.key_points([int(i) for i in history["run_id"]])
    compiles = None
    if not le.past_setups(past):
        others = data.past_durations(None, gpu)
        seen = le.past_setups(data.key_points([int(i) for i in others["run_id"]]))
        compiles = [s for run in seen.values() for s in run] or None
    return le.estimate(spec, history, where, past, compiles)


def job_estimate(job: Job) -> float | None:
    """The job's duration as estimated for the device of the worker that took it, worked
    out once per job and session (the live view redraws every second)."""
    key = f"_estimate_{job.id}"
    if key not in st.session_state:
        gpu = lf.job_gpu(job, data.live_workers())
        if gpu is None:
            return None  # not cached: known once its worker shows among the live ones
        st.session_state[key] = sweep_estimate(job, gpu).seconds
    return st.session_state[key]


def launch_row(summary: str, checked: lf.Checked, engine, cluster, memory: int | None,
               gpu_type: str | None) -> None:
    """What the sweep costs in one line beside the Launch button, at the top of the page
    (the followed job's progress comes right under it); on a click, the job queued, or
    why not."""
    c1, c2 = st.columns([5, 1], vertical_alignment="center")
    c1.info(summary, icon=":material/timer:")
    if not c2.button("Launch", type="primary", key="lf_launch", width="stretch"):
        return
    for key, message in checked.errors.items():
        # A parameter's message already stands beside its field.
        st.error("Not launched: fix the parameter marked below." if
                 key.startswith("param.") else message)
    if checked.spec is None:
        return
    try:
        queued = slurm.queue_sweep(
            engine, checked.spec, data.db_url(), cluster, gpu_type=gpu_type,
            target=checked.target, session=session_id(), memory_bytes=memory,
            start_worker=True)
    except (ValueError, data.ReadOnlyError, OSError, slurm.SlurmError) as e:
        st.error(str(e))
        return
    st.query_params["job"] = str(queued.job_id)
    st.success(f"Queued job {queued.job_id}" + (
        f" as Slurm job {queued.slurm_job_id} (GPU type {gpu_type})."
        if queued.slurm_job_id else " and started a worker on this machine."
        if queued.worker_pid else "."))


def waiting_text(job: Job) -> str | None:
    """What the job waits for (pages/logic/job_wait.py), from the queue's rows."""
    if job.shown not in ("queued", "running"):
        return None
    if job.shown != "queued":  # running: only its own message can say it waits
        return jw.waiting_for(job, 0, [], [], data.can_serve, now=data.db_now())
    ahead, running = data.queue_place(job)
    return jw.waiting_for(job, ahead, running, data.live_workers(), data.can_serve,
                          local_worker_pid(data.db_url()))


def show_job(job: Job, p: JobProgress, locked: bool) -> None:
    """The followed job: progress, times, worker, Cancel, and its run once it ended."""
    st.subheader(f"Job {job.id}: {job.shown_status}")
    total = p.total or 0
    waiting = waiting_text(job)
    if waiting:  # the answer to "why does nothing move?" comes first (issue 46)
        st.warning(plain(waiting), icon=":material/hourglass_top:")
    # The bar is the points measured, no more; the text names what is in flight.
    now = "waiting (above)" if waiting and job.status == "running" else \
        lf.describe_point(job)
    st.progress(le.bar_fraction(job, p) or 0.0,
                text=f"{p.done} of {total} points measured · {now}")
    c1, c2, c3 = st.columns(3)
    c1.metric("Elapsed", le.format_seconds(p.elapsed_s))
    running = job.status == "running"
    left, basis = le.time_left(p, job_estimate(job), job.current_point) if running \
        else (None, "")
    c2.metric("Estimated time left", le.format_seconds(left) if left is not None or
              not running else "unknown", help=basis or None)
    none = f"Slurm job {job.slurm_job_id}" if job.slurm_job_id else "waiting for one"
    c3.metric("Worker", job.worker_name or none)
    # No honest figure: say what is still running instead (unless it waits: said above).
    if left is None and basis and not waiting:
        st.caption(plain(f"Time left: {basis}."))
    # A lock wait its worker never cleared (it was lost meanwhile) is no verdict.
    if job.message and not waiting and not job.message.startswith(LOCK_WAIT):
        st.caption(plain(job.message))
    if job.shown_status == "lost":
        st.warning("Its worker stopped heartbeating: the job is lost. Its finished points "
                   "stay in its run.")
    if job.status in ("queued", "running") and not locked:
        if job.cancel_requested:
            st.caption("Cancel requested: it stops after the point in flight.")
        elif st.button("Cancel", key=f"cancel_{job.id}"):
            try:
                slurm.cancel(data.engine(), job.id)  # plus scancel for a Slurm job
            except (data.JobFinished, data.ReadOnlyError, slurm.SlurmError) as e:
                st.warning(str(e))
            st.rerun(scope="fragment")
    if job.run_id is not None and job.status in FINISHED_STATUSES:
        st.page_link(PAGES["run"], label=f"Open run {job.run_id}",
                     icon=":material/monitoring:", query_params={"run": str(job.run_id)})
