"""The page audit (issue 46 item 1), one test per page or view: every Run view of every
shipped sample, the Runs board, Compare of the shipped GPUs, Trends per series, Serve,
Launch, Import/export and the HTML reports, in chromium at 1280x800, judged by
tests/e2e/audit.py's checks (text or a grid cell cut, a word broken across lines, None /
nan / a Python repr shown, marks outside their plot or labels over them, a plot too small,
a batch axis that does not label exactly the measured sizes, a label naming a statistic
the figures do not use or calling a model measured, a report linking to the local server);
share links that must reopen the state they were read from; and, once every page was
read, no deprecation warning in the server's log.

One dashboard server and one browser page for the module: a Run view of the run already
open is reached by its tab (a rerun in the same session, as a reader clicks), the others
by loading their URL. The same cases print as a table with
`python bench/page_audit.py` (what the lead runs after merging the fixes).
"""

from __future__ import annotations

import pytest

# The faults still open are listed in tests/e2e/audit_known.txt (bench/page_audit.py
# --write-known): a test fails on any other, so a fixed fault cannot come back and a new
# page cannot add one; `python bench/page_audit.py` prints every fault, known ones too.
pytestmark = pytest.mark.e2e
VIEWPORT = {"width": 1280, "height": 800}


def _cases():
    from tests.e2e import audit

    cases = audit.cases_from_samples()
    return cases, audit.share_cases(cases)


try:
    CASES, SHARES = _cases()
except ImportError:  # the GPU host collects tests/e2e/ without the dashboard's packages
    CASES, SHARES = [], []


@pytest.fixture(scope="module")
def facts(db):
    from tests.e2e import audit

    found, cases = audit.facts_and_cases(db)
    # The cases were named from the sample files; the database must number them alike.
    assert [(c.name, c.path, c.means) for c in cases] == [
        (c.name, c.path, c.means) for c in CASES], "the samples imported in another order"
    return found


@pytest.fixture(scope="module")
def reader(browser):
    """One page for the whole audit (a new context per case would load streamlit's
    scripts each time; every case opens its own URL or tab)."""
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    context.close()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_page_shows_no_fault(dashboard, facts, reader, tmp_path, case):
    from tests.e2e import audit

    faults = audit.new_faults(audit.audit(
        case, audit.read_page(reader, dashboard.base_url, case, tmp_path), facts))
    assert not faults, f"{len(faults)} new fault(s):\n{audit.fault_table(faults)}"


@pytest.mark.parametrize("case", SHARES, ids=[c.name for c in SHARES])
def test_share_link_reopens_the_same_state(dashboard, browser, case):
    from tests.e2e import audit

    faults = audit.new_faults(audit.share_faults(browser, dashboard.base_url, case))
    assert not faults, audit.fault_table(faults)


def test_the_server_logged_no_deprecation_warning(dashboard):
    """After every page above was read (tests run in file order), the server's log holds
    no warning that an API the pages call is deprecated (components.v1.html was)."""
    from tests.e2e import audit

    faults = audit.new_faults(audit.log_faults(dashboard.log.read_text(errors="replace")))
    assert not faults, audit.fault_table(faults)
