"""Where one page's browser time goes (issue 46 item 4), beside bench/page_speed.py's
totals: one new visitor's visit in chromium, read through Chrome's DevTools protocol.

Printed, in seconds from navigation: every websocket message streamlit sent (decoded: the
element or block, a chart's spec size), every script chunk the page fetched and when it
arrived (the Vega chunk ArrowVegaLiteChart and its ~30 dependencies are fetched only when
the first chart's message arrives), and page_speed's stamps (first chart, settled). Then
the browser's main-thread CPU profile by script file and by function, inclusive (embed.*
is Vega and Vega-Lite: `vega-lite` is the spec's compile, `run`/`evaluate` the dataflow).

usage: python bench/page_trace.py --url http://127.0.0.1:8501 --path 'run?run=2&view=Speed'
                                  [--all-requests]
(a running dashboard, visited once first so that its caches are warm)
"""

from __future__ import annotations

import argparse
import base64
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.page_speed import STAMPS  # noqa: E402
from tests.e2e_support import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

WAIT = "() => window.__lb && window.__lb.ready !== null"
QUIET_MS = 1500


def message(payload: bytes) -> str:
    """One ForwardMsg in a few words: its kind, an element's type, a chart's sizes."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg()
    msg.ParseFromString(payload)
    kind = msg.WhichOneof("type")
    if kind != "delta":
        return str(kind)
    delta = msg.delta
    if delta.WhichOneof("type") == "add_block":
        return f"block {delta.add_block.WhichOneof('type')}"
    if delta.WhichOneof("type") != "new_element":
        return f"delta {delta.WhichOneof('type')}"
    element = delta.new_element.WhichOneof("type")
    if element == "vega_lite_chart":  # data inline in the spec, or as Arrow datasets
        chart = delta.new_element.vega_lite_chart
        return (f"chart (spec {len(chart.spec):,} B, {len(chart.datasets)} Arrow datasets "
                f"{sum(len(d.data.data) for d in chart.datasets):,} B)")
    return f"element {element}"


def listen(cdp, events: list[tuple[float, str]], all_requests: bool) -> list[float]:
    """Record the page's websocket messages and fetched chunks into `events` (DevTools
    timestamps); the list returned gets the page request's time, the visit's zero."""
    cdp.send("Network.enable")
    sent: dict[str, tuple[float, str]] = {}
    start: list[float] = []

    def request(p: dict) -> None:
        if not start:  # the page's own request: time zero
            start.append(p["timestamp"])
        sent[p["requestId"]] = (p["timestamp"], p["request"]["url"].split("/")[-1])

    def finished(p: dict) -> None:
        if p["requestId"] in sent:
            t0, name = sent[p["requestId"]]
            if all_requests or name.endswith(".js"):
                events.append((p["timestamp"],
                               f"fetched {name} ({(p['timestamp'] - t0) * 1000:.0f} ms)"))

    def frame(p: dict) -> None:
        r = p["response"]
        text = message(base64.b64decode(r["payloadData"])) if r["opcode"] == 2 else "text"
        events.append((p["timestamp"], f"ws < {text}"))

    cdp.on("Network.requestWillBeSent", request)
    cdp.on("Network.loadingFinished", finished)
    cdp.on("Network.webSocketFrameReceived", frame)
    cdp.on("Network.webSocketFrameSent",
           lambda p: events.append((p["timestamp"], "ws > (rerun request)")))
    return start


def visit(base: str, path: str, all_requests: bool) -> None:
    from playwright.sync_api import sync_playwright

    url = f"{base.rstrip('/')}/{path.lstrip('/')}"
    events: list[tuple[float, str]] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            warm = browser.new_context(viewport={"width": 1280, "height": 800})
            warm.add_init_script(STAMPS)
            page = warm.new_page()
            page.goto(url)
            page.wait_for_function(WAIT, timeout=60_000)
            warm.close()

            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.add_init_script(STAMPS)
            page = context.new_page()
            cdp = context.new_cdp_session(page)
            start = listen(cdp, events, all_requests)
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 200})
            cdp.send("Profiler.start")
            page.goto(url, wait_until="commit")
            page.wait_for_function(WAIT, timeout=60_000)
            page.wait_for_timeout(QUIET_MS)
            stamps = page.evaluate("() => window.__lb")
            profile = cdp.send("Profiler.stop")["profile"]
            context.close()
        finally:
            browser.close()
    print(f"{url}, a new visitor (stamps: " + ", ".join(
        f"{k} {v / 1000:.2f}" for k, v in stamps.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)) + ")")
    for t, what in sorted(events):
        print(f"  {t - start[0]:6.3f}  {what}")
    cpu(profile)


def cpu(profile: dict, top: int = 25) -> None:
    """The main thread's sampled CPU time by script file, then by function inclusive."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {c: n["id"] for n in profile["nodes"] for c in n.get("children", [])}
    own: collections.Counter[int] = collections.Counter()
    for sample, dt in zip(profile["samples"], profile["timeDeltas"], strict=True):
        own[sample] += dt
    by_file: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    for nid, t in own.items():
        frame = nodes[nid]["callFrame"]
        by_file[frame["url"].split("/")[-1] or frame["functionName"] or "(native)"] += t
        seen = set()
        while nid is not None:
            f = nodes[nid]["callFrame"]
            where = (f"{f['functionName'] or '(anonymous)'} {f['url'].split('/')[-1]}:"
                     f"{f['lineNumber']}:{f['columnNumber']}")
            if where not in seen:
                inclusive[where] += t
                seen.add(where)
            nid = parent.get(nid)
    print(f"\nmain thread, {sum(own.values()) / 1e6:.2f} s sampled; by script file (ms):")
    for name, t in by_file.most_common(top // 2):
        print(f"  {t / 1000:7.1f}  {name}")
    print("by function, inclusive (ms):")
    for name, t in inclusive.most_common(top):
        print(f"  {t / 1000:7.1f}  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="base URL of a running dashboard")
    ap.add_argument("--path", default="", help="the page, e.g. 'run?run=2&view=Speed'")
    ap.add_argument("--all-requests", action="store_true",
                    help="every request, not only script chunks")
    args = ap.parse_args()
    visit(args.url, args.path, args.all_requests)


if __name__ == "__main__":
    main()
