"""Launch (/launch): queue a sweep, watch it run live, cancel it, see queue and workers.
The job followed lives in the URL (?job=ID), so a reload or a shared link shows it too."""

import importlib.util

import streamlit as st

import runner.ops.slurm as slurm
from contract.limits import MAX_LABEL
from contract.vocab import TIMINGS
from pages.logic import launch_form as lf
from pages.logic.plain import plain
from pages.widgets import data, frame, url
from pages.widgets import job_view as jv
from runner.ops.launcher import local_device

frame.ensure_frame()
st.title("Launch a sweep")
engine = data.engine()
locked = data.read_only()
cluster, broken = None, None
try:  # the admin's settings (environment, config file), never the browser's
    cluster = slurm.executor_config()
except slurm.SlurmError as e:
    broken = f"Launching is off: the Slurm executor is misconfigured: {e}"


@st.fragment(run_every=1.0)
def followed() -> None:
    """The job this page follows (?job=ID), live, right under the Launch button: both
    stay on the first screen at 1280x800, so a click on Launch shows its progress where
    the eye is (issue 46: below the form, the bar came 625 px above the view and the
    button below the fold). Called after the form, which sets ?job= on Launch."""
    job_id = jv.followed_job()
    if job_id is None:
        return
    now = data.db_now()
    try:
        job = data.get_job(job_id, now)
    except data.JobNotFound as e:
        st.warning(str(e))
        return
    jv.show_job(job, data.job_progress(job, now), locked)


# The Launch row (what the sweep costs, the button) and the followed job sit above the
# settings; the settings fill them, so they are drawn into these containers afterwards.
top = st.container()

# --- settings: the form -----------------------------------------------------------------
if locked:
    top.info("Read-only share mode: launching and cancelling are turned off here. Queue "
             "sweeps where the database is writable, or with `python -m runner enqueue`.")
elif broken:
    top.error(broken)
else:
    workers = data.live_workers()
    here = local_device()
    # Fit the host it runs on (issue 46): a CPU-only host gets no CUDA-graph mode and no
    # NVML energy by default; every host a small sweep.
    defaults = lf.host_defaults(workers, here)
    workload = st.selectbox("Workload", list(lf.WORKLOADS), key="lf_workload",
                            index=list(lf.WORKLOADS).index(defaults.workload))
    st.caption(lf.WORKLOADS[workload].description)
    fields, params = lf.param_fields(workload), {}
    columns = st.columns(len(fields))
    for f, col in zip(fields, columns, strict=True):
        with col:  # keyed per workload: switching workloads brings its defaults
            params[f.name] = jv.param_widget(f, f"lf_p_{workload}_{f.name}")
    modes = st.multiselect("Modes", list(lf.MODES), list(defaults.modes), key="lf_modes")
    c1, c2 = st.columns(2)
    presets = [*lf.BATCH_PRESETS, lf.CUSTOM]
    preset = c1.radio("Batch sizes", presets, key="lf_preset",
                      index=presets.index(defaults.batch_preset))
    custom = c2.text_input("Custom batch sizes (comma-separated, `...` continues a "
                           "series)", defaults.custom_batches, key="lf_custom")
    c1, c2, c3 = st.columns(3)
    timing = c1.radio("Timing", list(TIMINGS), horizontal=True,
                      index=list(TIMINGS).index(defaults.timing), key="lf_timing")
    device = c2.selectbox("Device", list(lf.DEVICES), format_func=lambda d: lf.DEVICES[d],
                          key="lf_device")
    if cluster is None:
        target = c3.text_input("Target (worker or GPU name; empty: any)",
                               key="lf_target", max_chars=MAX_LABEL)
    else:  # only the configured types, each with its queue state from squeue
        target, queue = "", slurm.queue_state(cluster)
        gpu_type = c3.selectbox("GPU type (Slurm)", list(cluster.gpu_types),
                                format_func=lambda t: f"{t} · {queue[t]}",
                                key="lf_gpu_type")
    c1, c2 = st.columns(2)
    label = c1.text_input("Label", key="lf_label", max_chars=MAX_LABEL)
    energy = c2.checkbox("Measure energy per step (NVML: about 15% more time)",
                         defaults.energy, key="lf_energy",
                         help="A GPU's energy counter, read after each batch size's timing")
    # Checked on every change, so a bad field says so beside it before Launch.
    checked = lf.check(lf.FormValues(workload=workload, params=params, modes=modes,
                                     batch_preset=preset, custom_batches=custom,
                                     timing=timing, device=device, target=target,
                                     label=label, energy=energy))
    for name, message in lf.field_errors(checked.errors, [f.name for f in fields]).items():
        columns[[f.name for f in fields].index(name)].error(message)
    st.caption(lf.limits_text(None, "any GPU"))
    memory, refusal, summary = None, None, "Fix the fields marked below to launch."
    if checked.spec is not None:
        gpu = gpu_type if cluster is not None else lf.history_gpu(
            device, checked.target, workers, data.can_serve, here)
        summary = jv.sweep_estimate(checked.spec, gpu).text()
        memory = data.gpu_memory(gpu)
        cost, refusal = lf.cost(checked.spec, memory)
        st.caption(cost)
    with top:
        jv.launch_row(summary, checked, engine, cluster, memory,
                      gpu_type if cluster is not None else None)
    if checked.spec is not None:
        reason = None if cluster is not None else lf.no_worker_reason(
            workers, device, checked.target, importlib.util.find_spec("torch") is not None,
            data.can_serve)
        if reason:
            top.warning(reason)
        if refusal:
            top.error(f"Cannot be queued: {refusal}")


# --- load + show, live ------------------------------------------------------------------
@st.fragment(run_every=1.0)
def live() -> None:
    # Reads only, every second: "lost" is decided at read time (db/liveness.py); workers,
    # `runner sweep` and the button below persist it. reconcile writes only when a Slurm
    # job in flight has ended (else it is one read).
    if not locked:
        slurm.reconcile(engine)  # a job whose Slurm job ended fails with Slurm's reason
    now = data.db_now()
    st.subheader("Queue")
    queue = data.list_jobs(20, now)
    lost = [j.id for j in queue if j.shown_status == "lost"]
    lost_runs = [] if locked else data.lost_runs(now)
    if (lost or lost_runs) and not locked and st.button(
            f"Mark {len(lost)} lost job(s) and {len(lost_runs)} lost run(s) failed",
            key="reap_lost",
            help="Their writers (a worker, a `runner sweep`) stopped heartbeating: record "
                 "them as failed. Workers and `runner sweep` do this too when they run."):
        try:
            data.reap_lost()
        except data.ReadOnlyError as e:
            st.warning(str(e))
        st.rerun(scope="fragment")
    st.dataframe(lf.queue_rows(queue, url.app_url()), hide_index=True,
                 column_config={"run": st.column_config.LinkColumn("run", display_text=
                                                                   r"run=(\d+)")})
    st.subheader("Live workers")
    workers = data.live_workers()
    if workers:
        st.caption(plain(data.hosts_text(workers)))
        st.dataframe(lf.worker_rows(workers), hide_index=True)
    elif cluster is not None:
        st.caption("No live worker. Slurm starts one per job, on a node of its GPU type.")
    else:
        st.caption("No live worker. Launching starts one on this machine; GPU hosts run "
                   "`python -m runner worker` against this database.")


with top:
    followed()
live()
