"""The docs/ screenshots of the dashboard, remade from the shipped samples: Run (H200
`mlp`), Compare (H200 vs the published L40S and V100 runs), Compare's "which GPU gains more"
(H100 vs H200 mlp), Trend (the default view) and Serve, each in chromium at 1280x800
scrolled to the charts, as a reader first sees them.

A `streamlit run app.py` over a temp SQLite file seeded with data/samples (as a first
start does); nothing else is read or written outside --out.

usage: python bench/page_pictures.py [--out docs] [--only compare-gpus.png ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
H200_MLP_UUID = "edde740d-b50e-4c82-bbac-4d39143e876a"  # data/samples/h200-mlp.json
# The default mlp sweep on two GPUs, same tree and night (Compare's "which GPU gains more").
H200_MLP_DEFAULT_UUID = "cbff278b-b140-455b-8d2c-91151fb58e32"  # h200-mlp-default.json
H100_MLP_UUID = "f7b02541-70ce-4943-9867-08e41caebdf7"  # data/samples/h100-mlp.json

from tests.e2e_support import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    SETTLED,
    streamlit_server,
)

# Scrolls the first element whose text starts with `t` to the top of the view.
SCROLL = """(t) => {
  const el = [...document.querySelectorAll('h1, h2, h3, p, div[data-testid="stAlert"]')]
    .find(e => e.textContent.trim().startsWith(t));
  // Clear of Streamlit's fixed header (the toolbar's status and menu sit in it).
  if (el) { el.style.scrollMarginTop = '64px'; el.scrollIntoView({block: 'start'}); }
  return !!el;
}"""


def sample_ids(db_url: str) -> dict[str, int]:
    from db import queries
    from db.engine import make_engine

    engine = make_engine(db_url)
    try:
        runs = queries.runs_frame(engine)
    finally:
        engine.dispose()
    sweeps = runs[runs["kind"] == "sweep"]

    def one(gpu: str, workload: str | None = None) -> int:
        rows = sweeps[sweeps["gpu_name"].fillna("").str.contains(gpu)]
        rows = rows[rows["workload"] == workload] if workload else rows
        return int(rows["id"].iloc[0])

    # The H200 mlp runs by their uuids: later sweeps of the same mlp share its GPU.
    def by_uuid(uuid: str) -> int:
        return int(runs.loc[runs["uuid"] == uuid, "id"].iloc[0])

    return {"h200": by_uuid(H200_MLP_UUID), "h200_default": by_uuid(H200_MLP_DEFAULT_UUID),
            "h100": by_uuid(H100_MLP_UUID), "l40s": one("L40S"), "v100": one("V100"),
            "serve": int(runs.loc[runs["kind"] == "serve", "id"].iloc[0])}


def pictures(ids: dict[str, int]) -> dict[str, tuple[str, str]]:
    """file name -> (page path, the text scrolled to the top)."""
    return {
        "screenshot-run-1280.png": (f"run?run={ids['h200']}", "Run "),
        "screenshot-compare-1280.png": (
            f"compare?run={ids['h200']}&run={ids['l40s']}&run={ids['v100']}",
            "Not comparable"),
        # The default view: the series with the most runs (the CPU torch series).
        "screenshot-trend-1280.png": ("trend", "Change points"),
        "screenshot-serve-1280.png": (f"serve?run={ids['serve']}",
                                      "Latency: one request"),
        # Which GPU gains more from graphs: the H100's and H200's default mlp sweeps.
        "compare-gpus.png": (f"compare?run={ids['h100']}&run={ids['h200_default']}",
                             "Which GPU gains more"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs")
    ap.add_argument("--only", nargs="+", metavar="FILE",
                    help="remake only these pictures (file names as in docs/)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from db.engine import make_engine
    from db.samples import seed_if_empty

    with tempfile.TemporaryDirectory(prefix="lb-pictures-") as tmp:
        db_url = f"sqlite:///{Path(tmp) / 'lb.db'}"
        engine = make_engine(db_url)
        seed_if_empty(engine)
        engine.dispose()
        ids = sample_ids(db_url)
        with streamlit_server(db_url, log_dir=Path(tmp)) as server, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                for name, (path, top) in pictures(ids).items():
                    if args.only and name not in args.only:
                        continue
                    context = browser.new_context(viewport={"width": 1280, "height": 800})
                    page = context.new_page()
                    page.set_default_timeout(60_000)
                    page.goto(server.url(path))
                    page.wait_for_function(SETTLED)
                    # Twice: tables drawn after the first scroll move what lies below them.
                    for _ in range(2):
                        time.sleep(1.0)  # the scroll and Vega's last repaint
                        found = page.evaluate(SCROLL, top)
                    if not found:
                        print(f"{name}: {top!r} not found; the top of the page instead")
                    time.sleep(0.5)
                    page.screenshot(path=str(args.out / name))
                    context.close()
                    print(f"wrote {args.out / name} ({path})")
            finally:
                browser.close()


if __name__ == "__main__":
    main()
