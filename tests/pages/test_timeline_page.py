"""The step timeline on the Run and Compare pages through AppTest (issue 12): ?batch=
opens a batch size, a bad value gets one line naming it, and each point's trace
downloads as Perfetto JSON."""

from __future__ import annotations

import json

from tests.apptest import charts, share_links, texts


def timeline_spec(at) -> dict | None:
    """The stacked lane chart's spec (a vconcat; the run charts are single charts)."""
    for c in charts(at):
        spec = json.loads(c.proto.spec)
        if "vconcat" in spec:
            return spec
    return None


def test_run_page_draws_the_batch_from_the_url_and_refuses_a_bad_one(dash):
    rid = dash.add(batches=(1, 8, 64), modes=("eager", "cuda-graph"), traces=True)
    at = dash.open("pages/run.py", run=str(rid), batch="64")
    spec = timeline_spec(at)
    titles = [p["title"]["text"] for p in spec["vconcat"]]
    assert titles == ["eager", "cuda-graph"]  # eager on top, the graph below it
    assert all(p["title"]["subtitle"].startswith("GPU idle ") for p in spec["vconcat"])
    assert at.selectbox(key="timeline_batch").value == 64
    assert dict(at.query_params)["batch"] in ("64", ["64"])  # the link carries what is drawn
    assert len(at.get("download_button")) == 2
    assert not texts(at, "error")

    at = dash.open("pages/run.py", run=str(rid), batch="abc")
    errors = texts(at, "error")
    assert len(errors) == 1 and "?batch='abc' is not a batch size" in errors[0]
    assert at.selectbox(key="timeline_batch").value == 8 and timeline_spec(at)

    at = dash.open("pages/run.py", run=str(rid), batch="7")
    assert any("no point was measured at batch size 7 (measured: 1, 8, 64)" in e
               for e in texts(at, "error"))

    old = dash.add(batches=(8,), modes=("eager",))  # measured without traces
    at = dash.open("pages/run.py", run=str(old), batch="8")
    assert timeline_spec(at) is None
    assert any("No step timeline at batch size 8" in i for i in texts(at, "info"))


def test_compare_page_draws_one_lane_pair_per_run(dash):
    a = dash.add(gpu="GPU A", batches=(8,), modes=("eager", "cuda-graph"), traces=True)
    b = dash.add(gpu="GPU B", batches=(8,), modes=("eager", "cuda-graph"), traces=True,
                 scale=2.0)
    at = dash.open("pages/compare.py", run=[str(a), str(b)], batch="8")
    assert not texts(at, "error")
    spec = timeline_spec(at)
    assert len(spec["vconcat"]) == 2 and at.selectbox(key="timeline_mode").value == "eager"


def _scroll_scripts(at) -> list[str]:
    """The scroll-to-timeline scripts on the page (st.html, no height)."""
    found = []
    for el in at.get("html"):
        html = getattr(el.proto, "body", "") or ""
        if "scrollIntoView" in html:
            found.append(html)
    return found


def test_a_batch_link_scrolls_the_compare_page_to_the_timeline_once(dash):
    a = dash.add(gpu="GPU A", batches=(1, 8), modes=("eager", "cuda-graph"), traces=True)
    b = dash.add(gpu="GPU B", batches=(1, 8), modes=("eager", "cuda-graph"), traces=True)
    at = dash.open("pages/compare.py", run=[str(a), str(b)], batch="8")
    scripts = _scroll_scripts(at)
    assert len(scripts) == 1 and '"timeline"' in scripts[0]
    at.selectbox(key="timeline_batch").select(1).run()
    assert _scroll_scripts(at) == []  # picking another batch size does not jump the page
    plain = dash.open("pages/compare.py", run=[str(a), str(b)])
    assert _scroll_scripts(plain) == []
    plain.selectbox(key="timeline_batch").select(1).run()  # ?batch= now in the URL
    assert _scroll_scripts(plain) == []


def test_a_batch_link_opens_the_run_pages_timeline_view_and_a_plain_one_the_charts(dash):
    """The Run page has one view per tab (?view=): a ?batch= link opens Timeline, just
    under the headline, so nothing needs scrolling; a plain link opens Speed."""
    rid = dash.add(batches=(1, 8), modes=("eager", "cuda-graph"), traces=True)
    at = dash.open("pages/run.py", run=str(rid), batch="8")
    assert timeline_spec(at) and at.selectbox(key="timeline_batch").value == 8
    assert len(charts(at)) == 1 and _scroll_scripts(at) == []
    plain = dash.open("pages/run.py", run=str(rid))
    assert timeline_spec(plain) is None and len(charts(plain)) == 2  # speedup, step time
    named = dash.open("pages/run.py", run=str(rid), view="Timeline")
    assert named.selectbox(key="timeline_batch").value == 8  # the default batch size
    bad = dash.open("pages/run.py", run=str(rid), view="Nope")
    errors = texts(bad, "error")
    assert len(errors) == 1 and "?view='Nope' is not a view of this page" in errors[0]
    assert len(charts(bad)) == 2  # the default view instead


def test_the_fit_toggle_and_the_view_ride_in_share_links(dash):
    """Issue 37: ?fit=1 opens the timeline fitted, the toggle writes it back, a bad value
    gets one line; the Environment view's share box carries its view and the toggles."""
    rid = dash.add(batches=(1, 8), modes=("eager", "cuda-graph"), traces=True)
    at = dash.open("pages/run.py", run=str(rid), view="Timeline", batch="8", fit="1")
    assert at.toggle(key="timeline_fit").value is True
    assert dict(at.query_params)["fit"] in ("1", ["1"])
    at.toggle(key="timeline_fit").set_value(False).run()
    assert "fit" not in dict(at.query_params)
    at.toggle(key="timeline_fit").set_value(True).run()
    assert dict(at.query_params)["fit"] in ("1", ["1"])

    at = dash.open("pages/run.py", run=str(rid), view="Timeline", fit="yes")
    assert any("?fit='yes' is not on or off" in w for w in texts(at, "warning"))
    assert at.toggle(key="timeline_fit").value is False

    at = dash.open("pages/run.py", run=str(rid), view="Environment", batch="8", fit="1")
    shared = [c for c in share_links(at) if "/run?" in c]
    assert len(shared) == 1
    assert "view=Environment" in shared[0] and "fit=1" in shared[0] \
        and "batch=8" in shared[0], shared
