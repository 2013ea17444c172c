"""Bundle and URL text is shown as text, never as Markdown (issue 29, item 1).

A bundle whose gpu_name, torch_version, label or workload holds an image or a link made
every reader's browser fetch the image and showed a clickable link. Here the same bundle
goes through every page in AppTest (the Markdown source each element carries) and in
chromium against a local HTTP server that counts the requests it gets: none may come."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode, urlsplit

import pytest

from db import queries
from db.store import import_bundle
from pages.logic.links import RUN_VIEWS
from pages.logic.plain import plain
from tests import hostile

VIEWPORT = {"width": 1280, "height": 800}  # conftest's page takes it

# Unescaped Markdown: a link or image opening, a raw tag.
LIVE = re.compile(r"(?<!\\)\[[^\]]*(?<!\\)\]\(|(?<!\\)<\w")
# GFM autolinks bare URLs and addresses in the text after escapes are resolved.
AUTOLINK = re.compile(r"https?://|www\.|\w@\w", re.IGNORECASE)


def live(text: str) -> bool:
    return bool(LIVE.search(text) or AUTOLINK.search(re.sub(r"\\(.)", r"\1", text)))


def payloads(host: str) -> dict[str, str]:
    """The attacks the helper's own tests try (tests/hostile.py has the bundles)."""
    p = hostile.payloads(host)
    return {k: p[k] for k in ("image", "link", "bare", "tag", "protocol-relative",
                              "heading", "autolink")}


# --- the helper ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(payloads("http://h")))
def test_plain_leaves_no_markdown_and_keeps_every_character(name):
    text = payloads("http://127.0.0.1:9")[name]
    shown = plain(text)
    assert not live(shown), shown
    # What the reader sees: the text itself (and an invisible joiner).
    assert re.sub(r"\\(.)", r"\1", shown).replace("\u2060", "") == text


def test_plain_keeps_a_string_on_one_line():
    assert plain("a\n# heading\r\n- item\tx") == "a # heading - item x"
    assert [plain(s) for s in ("# h", "- i", "1. n", "> q")] == [
        r"\# h", r"\- i", r"1\. n", r"\> q"]
    assert plain(None) == ""


# --- every page through AppTest ----------------------------------------------------------

# Strings a page hands streamlit that it shows as text, never as Markdown: Vega specs (SVG
# text), table data and column names (drawn on a canvas), code blocks, and the options of
# a selectbox or multiselect (plain text in streamlit's widgets; a radio's options, a
# label, a help tooltip, a tab or expander label and every body are Markdown).
AS_TEXT = {("UnknownElement", "spec"), ("Code", "body"), ("Json", "body"),
           ("Dataframe", "columns"), ("Dataframe", "data"), ("Multiselect", "options"),
           ("Selectbox", "options"), ("Multiselect", "default"), ("Selectbox", "default")}
# A widget's id and the values it holds are state, never drawn as Markdown.
STATE_FIELDS = ("id", "form_id", "raw_values", "raw_value", "default", "value")


def _strings(msg, path: str = ""):
    """Every string field of a protobuf message, with its field path."""
    for fd, v in msg.ListFields():
        items = v if (hasattr(v, "__len__") and not isinstance(v, (str, bytes))
                      and not hasattr(v, "ListFields")) else [v]
        for x in items:
            if isinstance(x, str):
                yield f"{path}.{fd.name}" if path else fd.name, x
            elif hasattr(x, "ListFields"):
                yield from _strings(x, f"{path}.{fd.name}" if path else fd.name)


def markdown_strings(at) -> list[tuple[str, str]]:
    """(element.field, text) for every string of the page that streamlit may render as
    Markdown: bodies, labels, help, tab and expander labels, radio options..."""
    out = []
    for tree in (at.main, at.sidebar):
        for node in tree:
            proto = getattr(node, "proto", None)
            if proto is None:
                continue
            kind = type(node).__name__
            for field, text in _strings(proto):
                top = field.split(".")[0]
                if (kind, top) not in AS_TEXT and top not in STATE_FIELDS:
                    out.append((f"{kind}.{field}", text))
    return out


def _hostile_runs(engine, host: str) -> dict[str, int]:
    ids = {name: import_bundle(engine, make(host))[0] for name, make in (
        ("sweep", hostile.hostile_bundle), ("published", hostile.published_hostile),
        ("serve", hostile.hostile_serve), ("graph-memory", hostile.hostile_graph_memory))}
    ids["other"] = import_bundle(engine, hostile.hostile_bundle(host, uuid="hostile-2",
                                                                 gpu_tail=" B"))[0]
    return ids


def _views(ids: dict[str, int], host: str) -> list[tuple[str, dict]]:
    """Every page, each Run view, the timelines (their Perfetto downloads) and the
    parameters a share link may carry."""
    p = hostile.payloads(host)
    rid, other, pub = (str(ids[k]) for k in ("sweep", "other", "published"))
    trend = {"workload": f"mlp {p['link']}", "gpu": p["image"]}
    return [("pages/runs.py", {}),
            ("pages/runs.py", {"gpu": p["image"], "workload": p["protocol-relative"]}),
            *[("pages/run.py", {"run": rid, "view": v}) for v in RUN_VIEWS],
            ("pages/run.py", {"run": rid, "batch": "8"}),
            ("pages/run.py", {"run": pub}),
            ("pages/run.py", {"run": str(ids["graph-memory"])}),
            ("pages/compare.py", {"run": [rid, other, pub], "batch": "8"}),
            ("pages/trend.py", trend),
            ("pages/trend.py", {**trend, "params": p["heading"]}),
            ("pages/serve.py", {"run": str(ids["serve"])}),
            ("pages/serve.py", {"run": str(ids["serve"]), "curve": str(ids["graph-memory"])}),
            ("pages/import.py", {"run": rid}),
            ("pages/import.py", {"run": str(ids["graph-memory"])}),
            ("pages/launch.py", {})]


def test_no_page_hands_bundle_text_to_markdown(dash):
    host = "http://127.0.0.1:9"
    ids = _hostile_runs(dash.engine, host)
    found = {}
    for page, params in _views(ids, host):
        at = dash.open(page, **params)
        # An st.html body (or an iframe's srcdoc) is HTML the page writes itself (the
        # timeline's scroll script): no bundle text may reach it at all; everything else
        # must hold no live Markdown.
        leaks = [(field, text[:80]) for field, text in markdown_strings(at)
                 if (host in text if field.endswith((".srcdoc", "Html.body")) else live(text))]
        if leaks:
            found[(page, str(params)[:60])] = leaks
        if page == "pages/run.py" and params.get("view") == RUN_VIEWS[0]:
            # Shown, as text: the reader still learns what the bundle says.
            texts = [t for _, t in markdown_strings(at)]
            assert any(plain(f"mlp {hostile.payloads(host)['link']}") in t
                       for t in texts), texts
    assert not found, found


def test_the_rendered_run_page_has_no_link_or_image_from_the_bundle(dash):
    """The same through streamlit's own Markdown renderer would need a browser: see the
    chromium test below. Here: the title and caption are the escaped text."""
    host = "http://127.0.0.1:9"
    rid = import_bundle(dash.engine, hostile.hostile_bundle(host))[0]
    at = dash.open("pages/run.py", run=str(rid))
    header = queries.run_header(dash.engine, rid)
    # The label opens the line under the headline, as escaped text.
    assert at.caption[0].value.startswith(plain(header.label)) if header.label else True
    assert plain(hostile.payloads(host)["image"]) in at.title[0].value


# --- in chromium: nothing fetched, nothing clickable ---------------------------------------

class _Counter(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture
def counting_server():
    """A local HTTP server that records every request; its URL is the payloads' host."""
    handler = type("Counter", (_Counter,), {"hits": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler.hits
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


# The page files' paths in the URL (pages/logic/links.py PAGES).
URL_PATHS = {"pages/runs.py": "", "pages/run.py": "run", "pages/compare.py": "compare",
             "pages/trend.py": "trend", "pages/serve.py": "serve",
             "pages/import.py": "import", "pages/launch.py": "launch"}
SCRIPT_DONE = """() => {
  const app = document.querySelector("[data-testid='stApp']");
  return app && app.getAttribute('data-test-script-state') === 'notRunning';
}"""


def _foreign(url: str, own: str) -> bool:
    """A request to any origin but the dashboard's (data: and blob: stay in the page)."""
    parts = urlsplit(url)
    return parts.scheme not in ("data", "blob", "about") and parts.netloc != own


@pytest.mark.e2e
def test_no_page_makes_the_browser_request_another_host(tmp_path, counting_server, page):
    """Every page, with the shipped samples and a bundle of every attack the issues name
    (an image in gpu_name, behind a protocol-relative URL, in a heading; a link, a raw
    tag, an autolink, a reference image), in chromium: the browser asks the dashboard
    for everything it loads and no other host for anything (issue 48, item 1). The
    payloads point at a local counting server, so a leak is seen twice: as a request the
    browser made, and as a hit on that server."""
    from db.engine import make_engine
    from db.samples import seed_if_empty
    from tests.e2e_support import download_report, streamlit_server, wait_for_app

    host, hits = counting_server
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    engine = make_engine(url)
    seed_if_empty(engine)
    ids = _hostile_runs(engine, host)
    engine.dispose()
    asked: list[tuple[str, str]] = []
    where = ["start"]
    page.context.on("request", lambda r: asked.append((where[0], r.url)))
    with streamlit_server(url, {}, tmp_path) as dash:
        own = urlsplit(dash.base_url).netloc
        for script, params in _views(ids, host):
            path = f"{URL_PATHS[script]}?{urlencode(params, doseq=True)}"
            where[0] = path
            page.goto(dash.url(path))
            wait_for_app(page)
            page.wait_for_function(SCRIPT_DONE)
            page.wait_for_timeout(1200)  # images load after the first paint
            assert page.locator("[data-testid='stException']").count() == 0, path
        # Tooltips: a chart's points hovered on Compare, where a run's name (its GPU)
        # is in every tooltip; vega's tooltip shows it as text.
        where[0] = "tooltips"
        page.goto(dash.url(f"compare?run={ids['sweep']}&run={ids['other']}"))
        wait_for_app(page)
        page.wait_for_function(SCRIPT_DONE)
        marks = page.locator("[data-testid='stVegaLiteChart'] svg.marks g.mark-symbol path")
        marks.first.wait_for()
        for i in range(min(4, marks.count())):
            marks.nth(i).hover(force=True)
            page.wait_for_timeout(300)
        tip = page.locator("#vg-tooltip-element")
        assert tip.count() and "127.0.0.1" in tip.inner_text()  # the text is there
        assert "<img" not in tip.inner_html() and "<a " not in tip.inner_html()
        # The HTML report, opened as a reader opens the downloaded file.
        where[0] = "report"
        report = download_report(page, dash.url(f"import?run={ids['sweep']}"),
                                 tmp_path / "report.html")
        page.set_content(report.read_text(encoding="utf-8"))
        page.wait_for_timeout(1500)
        assert "Re-login here" in page.inner_text("body")
        page.goto(dash.url(f"run?run={ids['sweep']}"))
        wait_for_app(page, "Re-login here")  # the label is there, as text
        page.wait_for_timeout(2000)
        page.screenshot(path=str(tmp_path / "run.png"))
    # set_content's page is about:blank: only a request to a host is foreign there.
    foreign = [(path, u) for path, u in asked if _foreign(u, own)]
    assert foreign == [] and hits == [], (foreign[:5], hits[:5])


def test_the_no_run_message_names_streamlits_parameter_limit():
    """3,000 repeated ?run= reach the page as none at all: streamlit drops a query string
    of more than its limit of parameters whole. The message names that limit."""
    from streamlit.runtime.state import query_params

    from pages.logic import links

    assert links.MAX_URL_FIELDS == query_params.CLIENT_STATE_QUERY_STRING_MAX_FIELDS
    assert query_params.sanitize_query_string("&".join(["run=1"] * 3000)) == ""
    with pytest.raises(links.LinkError, match="more than 1,000 parameters"):
        links.parse_run_id(None)
