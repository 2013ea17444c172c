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
    """The job this page follows (?job=ID), live. Drawn at the top (its container comes
    before the form) so its progress bar stays above the fold at 1280x800: below the
    form it started at about 1,100 px. Called after the form, which sets ?job= on Launch."""
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


top = st.container()

# --- settings: the form -----------------------------------------------------------------
if locked:
    st.info("Read-only share mode: launching and cancelling are turned off here. Queue "
            "sweeps where the database is writable, or with `python -m runner enqueue`.")
elif broken:
    st.error(broken)
else:
    workload = st.selectbox("Workload", list(lf.WORKLOADS), key="lf_workload",
                            index=list(lf.WORKLOADS).index(lf.DEFAULTS["workload"]))
    st.caption(lf.WORKLOADS[workload].description)
    fields, params = lf.param_fields(workload), {}
    columns = st.columns(len(fields))
    for f, col in zip(fields, columns, strict=True):
        with col:  # keyed per workload: switching workloads brings its defaults
            params[f.name] = jv.param_widget(f, f"lf_p_{workload}_{f.name}")
    modes = st.multiselect("Modes", list(lf.MODES), lf.DEFAULTS["modes"], key="lf_modes")
    c1, c2 = st.columns(2)
    preset = c1.radio("Batch sizes", [*lf.BATCH_PRESETS, lf.CUSTOM], key="lf_preset")
    custom = c2.text_input("Custom batch sizes (comma-separated, `...` continues a "
                           "series)", lf.DEFAULTS["custom_batches"], key="lf_custom")
    c1, c2, c3 = st.columns(3)
    timing = c1.radio("Timing", list(TIMINGS), horizontal=True,
                      index=list(TIMINGS).index("standard"), key="lf_timing")
    device = c2.selectbox("Device", list(lf.DEVICES), format_func=lf.DEVICES.get,
                          key="lf_device")
    if cluster is None:
        target = c3.text_input("Target (worker or GPU name; empty: any)",
                               key="lf_target", max_chars=MAX_LABEL)
    else:  # only the configured types, each with its queue state from squeue
        target, queue = "", slurm.queue_state(cluster)
        gpu_type = c3.selectbox("GPU type (Slurm)", list(cluster.gpu_types),
                                format_func=lambda t: f"{t} · {queue[t]}",
                                key="lf_gpu_type")
    label = st.text_input("Label", key="lf_label", max_chars=MAX_LABEL)
    energy = st.checkbox("Measure energy per step (NVML, after each batch size's timing: "
                         "about 15% more time)", True, key="lf_energy")
    st.caption(lf.limits_text(None, "any GPU"))
    # Checked on every change, so a bad field says so beside it before Launch.
    checked = lf.check(lf.FormValues(workload=workload, params=params, modes=modes,
                                     batch_preset=preset, custom_batches=custom,
                                     timing=timing, device=device, target=target,
                                     label=label, energy=energy))
    for name, message in lf.field_errors(checked.errors, [f.name for f in fields]).items():
        columns[[f.name for f in fields].index(name)].error(message)
    memory, refusal = None, None
    if checked.spec is not None:
        workers = data.live_workers()
        gpu = gpu_type if cluster is not None else lf.history_gpu(
            device, checked.target, workers, data.can_serve, local_device())
        st.info(jv.sweep_estimate(checked.spec, gpu).text(), icon=":material/timer:")
        memory = data.gpu_memory(gpu)
        cost, refusal = lf.cost(checked.spec, memory)
        st.caption(cost)
        if refusal:
            st.error(f"Cannot be queued: {refusal}")
        reason = None if cluster is not None else lf.no_worker_reason(
            workers, device, checked.target, importlib.util.find_spec("torch") is not None,
            data.can_serve)
        if reason:
            st.warning(reason)
    submitted = st.button("Launch", type="primary", key="lf_launch")
    if submitted:
        for key, message in checked.errors.items():
            # A parameter's message already stands beside its field.
            st.error("Not launched: fix the parameter marked above." if
                     key.startswith("param.") else message)
        if checked.spec is not None:
            try:
                queued = slurm.queue_sweep(
                    engine, checked.spec, data.db_url(), cluster,
                    gpu_type=gpu_type if cluster is not None else None,
                    target=checked.target, session=jv.session_id(), memory_bytes=memory,
                    start_worker=True)
            except (ValueError, data.ReadOnlyError, OSError, slurm.SlurmError) as e:
                st.error(str(e))
            else:
                st.query_params["job"] = str(queued.job_id)
                st.success(f"Queued job {queued.job_id}" + (
                    f" as Slurm job {queued.slurm_job_id} (GPU type {gpu_type})."
                    if queued.slurm_job_id else " and started a worker on this machine."
                    if queued.worker_pid else "."))


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
