"""Share links: reading run ids out of URL parameters and writing URLs that reproduce a view.

Pure functions (no streamlit): the URL is the whole state of a view, so parsing it is
worth testing on its own.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

from runner.format.bundle import MODES


@dataclass(frozen=True)
class PageSpec:
    file: str        # relative to the repository root
    title: str
    icon: str
    url_path: str    # the share-link contract of DESIGN.md ("Dashboard URLs")
    listed: bool     # in the menu; the run page needs ?run=ID, so only links lead there


# The one table of pages: app.py builds the navigation from it (a page whose file is not
# there yet is left out), pages link to each other through it. launch and serve are built
# by other parts of the project.
PAGES = {
    "runs": PageSpec("pages/runs.py", "Runs", ":material/list:", "", True),
    "run": PageSpec("pages/run.py", "Run", ":material/monitoring:", "run", False),
    "compare": PageSpec("pages/compare.py", "Compare", ":material/compare_arrows:",
                        "compare", True),
    "trend": PageSpec("pages/trend.py", "Trends", ":material/trending_up:", "trend", True),
    "launch": PageSpec("pages/launch.py", "Launch", ":material/rocket_launch:", "launch",
                       True),
    "serve": PageSpec("pages/serve.py", "Serve", ":material/dynamic_feed:", "serve", True),
    "import": PageSpec("pages/import_export.py", "Import / export", ":material/swap_vert:",
                       "import", True),
}
RUNS, RUN, COMPARE, IMPORT = (PAGES[n].url_path for n in ("runs", "run", "compare", "import"))
MAX_COMPARE = 12  # more curves than this are unreadable in one chart


def unknown_page(asked: str | None) -> str | None:
    """The asked URL path when no page has it (/nosuchpage), else None. `asked` is the
    page name the browser asked for ('' or None for the root)."""
    name = (asked or "").strip("/")
    known = {p.url_path for p in PAGES.values()}
    return None if name in known else name


class LinkError(ValueError):
    """A URL parameter that cannot be used. str() is the one line shown on the page."""


def parse_run_id(text: str | None, param: str = "run") -> int:
    """One run id from a URL parameter; LinkError naming the bad value otherwise."""
    if text is None or not str(text).strip():
        raise LinkError(f"no run given: add ?{param}=ID to the URL (a run id from the "
                        "Runs page)")
    s = str(text).strip()
    if not (s.isascii() and s.isdigit()) or len(s) > 12:
        raise LinkError(f"?{param}={s[:40]!r} is not a run id: expected a positive whole "
                        "number such as ?run=3")
    value = int(s)
    if value < 1:
        raise LinkError(f"?{param}={s!r} is not a run id: ids start at 1")
    return value


def parse_run_ids(values: Iterable[str], param: str = "run") -> tuple[list[int], list[str]]:
    """Several run ids (repeated ?run=, or comma separated): (ids in order without
    duplicates, one error line per bad value). Good ids are kept beside the errors so a
    compare link with one typo still shows the rest."""
    ids: list[int] = []
    errors: list[str] = []
    for value in values:
        for part in str(value).split(","):
            if not part.strip():
                continue
            try:
                rid = parse_run_id(part, param)
            except LinkError as e:
                errors.append(str(e))
                continue
            if rid not in ids:
                ids.append(rid)
    if len(ids) > MAX_COMPARE:
        errors.append(f"{len(ids)} runs asked for; showing the first {MAX_COMPARE}")
        ids = ids[:MAX_COMPARE]
    return ids, errors


def missing_runs(asked: Iterable[int], found: Iterable[int]) -> list[str]:
    """One line per asked id that the database does not hold."""
    have = {int(i) for i in found}
    return [f"run {rid} does not exist in this database (it may live in another one: "
            "import its bundle on the Import page)" for rid in asked if int(rid) not in have]


def page_url(base: str | None, page: str, params: dict[str, object] | None = None) -> str:
    """The URL of `page` with `params` (list values repeat the key), next to `base` (the
    app's URL as the browser sees it, any page). Without a base: a root-relative link."""
    query = urlencode(
        [(k, str(x)) for k, v in (params or {}).items()
         for x in (v if isinstance(v, (list, tuple)) else [v]) if x is not None and x != ""])
    if not base:
        path = "/" + page
        return f"{path}?{query}" if query else path
    parts = urlsplit(base)
    prefix = parts.path.rstrip("/")
    # Strip the page segment the base URL may carry (st.context.url names the page).
    for known in (p.url_path for p in PAGES.values()):
        if known and prefix.endswith("/" + known):
            prefix = prefix[: -len(known) - 1]
            break
    path = f"{prefix}/{page}" if page else f"{prefix}/"
    return urlunsplit((parts.scheme, parts.netloc, path, query, ""))


def run_url(base: str | None, run_id: int, batch: int | None = None) -> str:
    """/run?run=ID, with &batch=N when a batch size's timeline is shown."""
    return page_url(base, RUN, {"run": run_id, "batch": batch})


def compare_url(base: str | None, run_ids: Iterable[int], batch: int | None = None) -> str:
    return page_url(base, COMPARE, {"run": [int(r) for r in run_ids], "batch": batch})


def measure_command(header: dict, batch_sizes: Iterable[int], modes: Iterable[str]) -> str:
    """The sweep command that measures the same workload here (for runs that carry no
    command of their own, such as published figures)."""
    params = header.get("workload_params") or {}
    argv = ["python", "-m", "runner", "sweep", "--workload", str(header["workload"])]
    for k in sorted(params):
        argv += ["--param", f"{k}={params[k]}"]
    argv += ["--batch-sizes", ",".join(str(b) for b in sorted(set(batch_sizes))),
             "--modes", ",".join(m for m in MODES if m in set(modes))]
    return shlex.join(argv)
