"""The dashboard as a browser sees it: a real `streamlit run app.py` on a free port against
a database, Debian's chromium (driven by Playwright, no browser download), and the waits
for streamlit's rendering. Plain functions, so that bench/ (page pictures, page speed) runs
the same server and browser as the tests; tests/e2e/conftest.py makes fixtures of them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT, free_port

CHROMIUM = "/usr/bin/chromium"
# Headless, no GPU, and nothing that phones home: the test machine may have no network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
START_TIMEOUT_S = 60


@dataclass(frozen=True)
class Dashboard:
    base_url: str   # e.g. http://127.0.0.1:41234 (no trailing slash)
    db_url: str
    log: Path       # the server's stdout + stderr, for failure messages

    def url(self, path: str = "") -> str:
        return f"{self.base_url}/{path.lstrip('/')}"


@contextmanager
def streamlit_server(db_url: str, env: dict[str, str] | None = None,
                     log_dir: Path | None = None) -> Iterator[Dashboard]:
    """Run `streamlit run app.py` against `db_url` until the block ends."""
    port = free_port()
    log = Path(log_dir or ROOT / ".e2e-artifacts") / f"streamlit-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, "LAUNCHBENCH_DB": db_url, **(env or {})}
    # The dashboard's own settings (.streamlit/config.toml: address, headless, no file
    # watcher, no magic), so that the tests and bench/page_speed.py measure what
    # `make dashboard` serves; only the port is the test's.
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
           "--server.port", str(port)]
    with open(log, "w") as out:
        # A new session so that teardown can end the server and only its own children.
        proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode}: "
                                   f"{log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not answer within {START_TIMEOUT_S} s: "
                                   f"{log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield Dashboard(base, db_url, log)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


# The page's script has finished, no element waits for its script chunk (a skeleton
# stands for it meanwhile) and every chart has drawn its text (the pictures in
# bench/page_pictures.py and the layout test wait for the same moment).
SETTLED = """() => {
  const app = document.querySelector("[data-testid='stApp']");
  const charts = [...document.querySelectorAll("[data-testid='stVegaLiteChart']")];
  return app && app.getAttribute('data-test-script-state') === 'notRunning' &&
         !document.querySelector("[data-testid='stMain'] [data-testid='stSkeleton']") &&
         charts.length > 0 && charts.every(c => c.querySelector('svg.marks text'));
}"""


def download_report(page, url: str, path: Path) -> Path:
    """The run's HTML report, downloaded from the Import/export page at `url` to `path`."""
    page.goto(url)
    wait_for_app(page, "Export a run")
    with page.expect_download() as dl:
        page.get_by_role("button", name="Report (.html, opens offline)").click()
    dl.value.save_as(path)
    return path


def wait_for_app(page, text: str | None = None) -> None:
    """Wait until streamlit has rendered the page (and `text`, when given)."""
    page.wait_for_selector("[data-testid='stApp']")
    if text:
        page.get_by_text(text, exact=False).first.wait_for()
    # Streamlit shows a running indicator while the script runs.
    page.wait_for_function(
        "() => !document.querySelector(\"[data-testid='stStatusWidget'] "
        "[data-testid='stStatusWidgetRunningIcon']\")")


def rendered_charts(page) -> int:
    """Charts Vega actually drew (a canvas or svg inside each chart element)."""
    return page.locator("[data-testid='stVegaLiteChart'] canvas, "
                        "[data-testid='stVegaLiteChart'] svg.marks").count()
