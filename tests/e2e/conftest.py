"""The browser tests' fixtures: a dashboard server and a database engine per module, one
chromium per module, and a fresh browser context per test, so that every test opens its
links like a new visitor would. The server and the waits are tests/e2e_support.py's.

Settings a module may give (the module's own, like its pytestmark):

    DASHBOARD_ENV = {"LAUNCHBENCH_READ_ONLY": "1"}   # the server's environment
    VIEWPORT = {"width": 1280, "height": 800}       # the page's size (else 1400x1000)

or parametrize the server indirectly:
    @pytest.mark.parametrize("dashboard", [{"db_url": url, "env": {...}, "seed": False}],
                             indirect=True)

Module scope, not session: `make test` runs `pytest -n auto --dist loadfile`, a file to a
worker, so a server per module starts once per file and no file reads another's writes.
Nothing here imports playwright or the database at module level: the GPU host collects
this folder without them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import must_skip
from tests.e2e_support import CHROMIUM, CHROMIUM_ARGS, Dashboard, streamlit_server

VIEWPORT = {"width": 1400, "height": 1000}
# Streamlit's first render of a page under a loaded xdist worker on a small host.
PAGE_TIMEOUT_MS = 60_000


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
def db(dashboard):
    """An engine on the dashboard's database, for the module's reads and imports."""
    from db.engine import make_engine

    engine = make_engine(dashboard.db_url)
    yield engine
    engine.dispose()


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
def page(request, browser):
    """A page in a fresh browser context: no cookies, no session state, like a new user
    opening a shared link; the module's VIEWPORT, else 1400x1000."""
    context = browser.new_context(viewport=getattr(request.module, "VIEWPORT", VIEWPORT))
    p = context.new_page()
    p.set_default_timeout(PAGE_TIMEOUT_MS)
    yield p
    context.close()
