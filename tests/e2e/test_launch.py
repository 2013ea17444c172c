"""Launching from the browser, end to end: Debian's chromium through Playwright against a
real `streamlit run app.py`; the page starts a real local worker that measures for real."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest

from db import jobs, store
from tests.e2e_support import wait_for_app

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def db(db, dashboard):
    """conftest's engine; the worker the page started ends with the module."""
    yield db
    from runner.ops.launcher import local_worker_pid

    pid = local_worker_pid(dashboard.db_url)
    if pid is not None:  # the worker the page started: ours to end, by its pid
        os.kill(pid, signal.SIGTERM)


def fill_form(page, batches: str, timing: str, label: str) -> None:
    # The host's defaults: on a CPU-only host no CUDA-graph mode is chosen (issue 46).
    page.get_by_role("button", name="Remove compile").click()  # waits for the form
    for mode in ("reduce-overhead", "cuda-graph"):
        remove = page.get_by_role("button", name=f"Remove {mode}")
        if remove.count():
            remove.click()
    page.get_by_role("spinbutton", name="depth").fill("2")
    page.get_by_role("spinbutton", name="width").fill("16")
    page.get_by_text("custom list").click()
    page.get_by_label("Custom batch sizes", exact=False).fill(batches)
    page.get_by_text(timing, exact=True).click()
    page.get_by_label("Label").fill(label)
    page.get_by_role("button", name="Launch").click()


def queued_id(page) -> int:
    banner = page.get_by_text(re.compile(r"Queued job \d+")).first
    banner.wait_for(timeout=30_000)
    return int(re.search(r"Queued job (\d+)", banner.inner_text()).group(1))


def test_launch_watch_progress_then_open_the_run(dashboard, db, page):
    page.goto(dashboard.url("launch"))
    wait_for_app(page, "Live workers")
    fill_form(page, "1,2,4,8", "quick", "e2e launch")
    job_id = queued_id(page)
    # Live progress without a reload: the fragment polls until the job is done.
    page.get_by_text(f"Job {job_id}: done").wait_for(timeout=120_000)
    page.get_by_text("4 of 4 points").first.wait_for()
    job = jobs.get_job(db, job_id)
    assert job.status == "done" and job.spec["label"] == "e2e launch"
    doc = store.export_bundle(db, job.run_id)
    assert [m["batch_size"] for m in doc["measurements"]] == [1, 2, 4, 8]
    assert all(m["status"] == "ok" and m["step_ms"] > 0 for m in doc["measurements"])
    # The worker the page started ran this job alone, then said goodbye, and the
    # dashboard reaped it: no <defunct> child waits for the next Launch, and no pid
    # file of it is left behind (issue 46).
    assert job.worker_name
    from sqlalchemy import select

    from db.models import WorkerRow
    from runner.ops.launcher import _state_path

    with db.connect() as c:
        pid = c.scalar(select(WorkerRow.pid).where(WorkerRow.id == job.worker_id))
    stat = Path(f"/proc/{pid}/stat")
    deadline = time.monotonic() + 30
    while stat.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not stat.exists(), f"the worker is still there: {stat.read_text()[:80]}"
    assert not _state_path(dashboard.db_url, "pid").exists()
    # Opened afresh at 1280x800, the followed job's bar is above the fold.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(dashboard.url(f"launch?job={job_id}"))
    wait_for_app(page, f"Job {job_id}: done")
    bar = page.locator("[data-testid='stProgress']").first.bounding_box()
    assert bar is not None and bar["y"] + bar["height"] <= 800, bar
    # ...and so is the Launch button, above it: a click shows its progress in view.
    button = page.get_by_role("button", name="Launch").bounding_box()
    assert button is not None and button["y"] + button["height"] <= bar["y"], (button, bar)
    page.get_by_text(f"Open run {job.run_id}").click()
    wait_for_app(page, "Every finding")
    page.wait_for_function(
        "() => document.querySelectorAll(\"[data-testid='stVegaLiteChart'] canvas, "
        "[data-testid='stVegaLiteChart'] svg.marks\").length >= 1")
    assert f"run={job.run_id}" in page.url
    assert "Traceback" not in page.content()


def test_cancel_a_running_job(dashboard, db, page):
    page.goto(dashboard.url("launch"))
    wait_for_app(page, "Live workers")
    # 64 points of standard timing: long enough to be caught running.
    fill_form(page, "1,2,3,...,64", "standard", "e2e cancel")
    job_id = queued_id(page)
    page.get_by_text(re.compile(r"^[1-9]\d* of 64 points")).first.wait_for(timeout=120_000)
    page.get_by_role("button", name="Cancel").click()
    page.get_by_text(f"Job {job_id}: cancelled").wait_for(timeout=60_000)
    job = jobs.get_job(db, job_id)
    assert job.status == "cancelled"
    doc = store.export_bundle(db, job.run_id)
    assert doc["run"]["status"] == "cancelled"
    assert 1 <= len(doc["measurements"]) < 64  # stopped between points, finished kept
    page.get_by_text(f"Open run {job.run_id}").wait_for()
