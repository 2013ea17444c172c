"""The dashboard through streamlit's AppTest, as the page tests open it: `open_app` runs
the app and opens a page with its query string, `Dash` is a dashboard over a temp database
(conftest's `dash` fixture), and the rest read what a page shows."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from db import queries
from db.engine import make_engine
from db.samples import seed_if_empty
from db.store import import_bundle
from tests.conftest import ROOT
from tests.synthetic import sweep_bundle

APP = ROOT / "app.py"


def open_app(page: str | None = None, **params) -> AppTest:
    """The app run once (its first page), then `page` (e.g. "pages/run.py") with `params`
    as the query string; neither run may raise."""
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    if page:
        at.switch_page(page)
        at.query_params = dict(params)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    return at


class Dash:
    """One temp database, seeded as the app would seed it, and a way to open pages."""

    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        seed_if_empty(self.engine)
        self.published = int(queries.runs_frame(self.engine).query(
            "uuid == 'published-l40s-day25'")["id"].iloc[0])

    def add(self, **kw) -> int:
        return import_bundle(self.engine, sweep_bundle(**kw))[0]

    def open(self, page: str | None = None, **params) -> AppTest:
        return open_app(page, **params)


def texts(at: AppTest, kind: str) -> list[str]:
    return [str(e.value) for e in getattr(at, kind)]


def share_links(at: AppTest) -> list[str]:
    """The page's share link, its expander opened as a reader opens it (closed, the link
    is not drawn: pages/widgets/parts.py share_link)."""
    closed = texts(at, "code")
    at.session_state["share_link"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    opened = texts(at, "code")
    assert len(opened) == len(closed) + 1, (closed, opened)  # the link, drawn once open
    return [c for c in opened if c not in closed]


def run_views(dash: Dash, rid: int, views=None, **params) -> dict[str, AppTest]:
    """The Run page opened once per view (?view=LABEL): a view computes only its own tab."""
    from pages.logic.links import RUN_VIEWS

    return {v: dash.open("pages/run.py", run=str(rid), view=v, **params)
            for v in (views or RUN_VIEWS)}


def charts(at: AppTest) -> list:
    return [e for e in at.main if getattr(e, "type", "") in ("vega_lite_chart",
                                                              "arrow_vega_lite_chart")]
