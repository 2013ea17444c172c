"""The page audit (issue 46 item 1) from the command line: every page, Run view, Compare,
Trends series, Serve, Launch, Import/export and HTML report of the shipped samples, read in
chromium at 1280x800 and judged by tests/e2e/audit.py's checks; the faults printed as a
table (page | check | element | text), then the share links' faults and a count per check.
The exit status is 1 when a fault was found.

tests/e2e/test_audit.py runs the same cases under pytest, one test each.

usage: python bench/page_audit.py [--only TEXT] [--url BASE --db URL] [--no-share]
                                 [--write-known]
(--only: the cases whose name holds TEXT; --url/--db: audit a running dashboard over that
database instead of starting one over the samples; --write-known: record the faults found
as the known open ones, tests/e2e/audit_known.txt, which the test tolerates and no more)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e import audit  # noqa: E402
from tests.e2e_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402


def run(base_url: str, db_url: str, only: str | None, share: bool) -> list[audit.Fault]:
    from playwright.sync_api import sync_playwright

    from db.engine import make_engine

    engine = make_engine(db_url)
    try:
        facts, every = audit.facts_and_cases(engine)
    finally:
        engine.dispose()
    cases = [c for c in every if not only or only.lower() in c.name.lower()]
    faults: list[audit.Fault] = []
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as tmp:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport=audit.VIEWPORT, accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(60_000)
        for case in cases:
            t0 = time.perf_counter()
            found = audit.audit(case, audit.read_page(page, base_url, case, Path(tmp)), facts)
            print(f"{time.perf_counter() - t0:5.1f} s  {len(found):3d} fault(s)  {case.name}",
                  file=sys.stderr)
            faults += found
        if share:
            for case in audit.share_cases(every):
                if not only or only.lower() in case.name.lower():
                    faults += audit.share_faults(browser, base_url, case)
        browser.close()
    return faults


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="audit only the cases whose name holds this text")
    ap.add_argument("--url", help="base URL of a running dashboard (needs --db)")
    ap.add_argument("--db", help="that dashboard's database URL")
    ap.add_argument("--no-share", action="store_true", help="skip the share-link checks")
    ap.add_argument("--write-known", action="store_true",
                    help=f"record the faults as the known open ones ({audit.KNOWN_FILE})")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.url:
        if not args.db:
            ap.error("--url needs --db (the cases come from its runs)")
        faults = run(args.url.rstrip("/"), args.db, args.only, not args.no_share)
    else:
        from db.engine import make_engine
        from db.samples import seed_if_empty

        with tempfile.TemporaryDirectory(prefix="lb-page-audit-") as tmp:
            db_url = f"sqlite:///{Path(tmp) / 'lb.db'}"
            engine = make_engine(db_url)
            seed_if_empty(engine)
            engine.dispose()
            with streamlit_server(db_url, log_dir=Path(tmp)) as server:
                faults = run(server.base_url, db_url, args.only, not args.no_share)
                # (its log: a deprecated call the pages made while they were read)
                faults += audit.log_faults(server.log.read_text(errors="replace"))
    print(audit.fault_table(faults))
    if args.write_known:
        audit.write_known(faults)
        print(f"recorded {len(faults)} known fault(s) in {audit.KNOWN_FILE}")
    print(f"\n{len(faults)} fault(s) in {time.perf_counter() - t0:.0f} s: " + ", ".join(
        f"{n} {check}" for check, n in Counter(f.check for f in faults).most_common()))
    sys.exit(1 if faults else 0)


if __name__ == "__main__":
    main()
