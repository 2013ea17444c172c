"""End-to-end fixtures: a real `streamlit run app.py` on a free port against a temp
database, and Debian's chromium driven by Playwright (no browser download).

Reuse from another test module:

    pytest_plugins = ("tests.e2e_support",)         # the fixtures below
    pytestmark = pytest.mark.e2e
    DASHBOARD_ENV = {"LAUNCHBENCH_READ_ONLY": "1"}   # optional, per module

or parametrize the server indirectly:
    @pytest.mark.parametrize("dashboard", [{"db_url": url, "env": {...}, "seed": False}],
                             indirect=True)
One server per module (it takes a few seconds to start); one fresh browser context per
test, so every test opens its links like a new visitor would.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import must_skip

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
# Headless, no GPU, and nothing that phones home: the test machine may have no network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
           "--server.port", str(port), "--server.address", "127.0.0.1",
           "--server.headless", "true", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
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


@pytest.fixture(scope="module")
def dashboard(request, tmp_path_factory) -> Iterator[Dashboard]:
    """A dashboard server for this module. Settings: indirect param dict (db_url, env,
    seed) over the module's DASHBOARD_ENV; default: a fresh SQLite file with the samples
    imported (as the app does on first start)."""
    cfg = dict(getattr(request, "param", None) or {})
    db_url = cfg.get("db_url") or f"sqlite:///{tmp_path_factory.mktemp('dash') / 'lb.db'}"
    env = {**getattr(request.module, "DASHBOARD_ENV", {}), **cfg.get("env", {})}
    from db.engine import make_engine

    engine = make_engine(db_url)
    if cfg.get("seed", True):
        from db.samples import seed_if_empty

        seed_if_empty(engine)
    engine.dispose()
    with streamlit_server(db_url, env) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium through Playwright; skips (fails under CI=true) without it."""
    if not Path(CHROMIUM).exists():
        must_skip(f"{CHROMIUM} not found: apt-get install chromium (make system-deps)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        must_skip("playwright (python) is not installed: pip install -r requirements.txt")
    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    except Exception as e:  # noqa: BLE001 - any launch failure means no browser here
        pw.stop()
        must_skip(f"cannot launch {CHROMIUM}: {str(e).splitlines()[0]}")
    yield b
    b.close()
    pw.stop()


@pytest.fixture
def page(browser):
    """A page in a fresh browser context: no cookies, no session state, like a new user
    opening a shared link."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    p = context.new_page()
    p.set_default_timeout(30_000)
    yield p
    context.close()


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
