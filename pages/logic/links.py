"""Share links: reading run ids out of URL parameters and writing URLs that reproduce a view.

Pure functions (no streamlit): the URL is the whole state of a view, so parsing it is
worth testing on its own.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

from contract.bundle import MODES
from contract.catalog import WORKLOADS, WorkloadError, check_workload, is_factory
from contract.run_summary import RunHeader
from contract.specs import sweep_command
from contract.vocab import DEVICES, TIMINGS


@dataclass(frozen=True)
class PageSpec:
    file: str        # relative to the repository root
    title: str
    icon: str
    url_path: str    # docs/ARCHITECTURE.md, "A shared link to a page"
    listed: bool     # in the menu; the run page needs ?run=ID, so only links lead there


# The one table of pages: app.py builds the navigation from it (a page whose file is
# missing, in a trimmed install, is left out), pages link to each other through it.
PAGES = {
    "runs": PageSpec("pages/runs.py", "Runs", ":material/list:", "", True),
    "run": PageSpec("pages/run.py", "Run", ":material/monitoring:", "run", False),
    "compare": PageSpec("pages/compare.py", "Compare", ":material/compare_arrows:",
                        "compare", True),
    "trend": PageSpec("pages/trend.py", "Trends", ":material/trending_up:", "trend", True),
    "launch": PageSpec("pages/launch.py", "Launch", ":material/rocket_launch:", "launch",
                       True),
    "serve": PageSpec("pages/serve.py", "Serve", ":material/dynamic_feed:", "serve", True),
    "import": PageSpec("pages/import.py", "Import / export", ":material/swap_vert:",
                       "import", True),
}
RUNS, RUN, COMPARE, IMPORT = (PAGES[n].url_path for n in ("runs", "run", "compare", "import"))
MAX_COMPARE = 12  # more curves than this are unreadable in one chart
# The Run page's views, one tab each, named in its URL as ?view=LABEL (the first is the
# default and leaves the parameter out). Renaming one breaks the links that name it.
VIEW_PARAM = "view"
RUN_VIEWS = ("Speed", "Memory", "Energy", "Time split", "Timeline", "Points", "Environment")
TIMELINE_VIEW = "Timeline"  # where a ?batch= link and a click on a speedup point go
# The timeline's "fit each to its own step" toggle, as ?fit=1 (off: left out): a shared
# link lost it and drew the other scale.
FIT_PARAM = "fit"
FLAG_VALUES = {"1": True, "0": False}


def unknown_page(asked: str | None) -> str | None:
    """The asked URL path when no page has it (/nosuchpage), else None. `asked` is the
    page name the browser asked for ('' or None for the root)."""
    name = (asked or "").strip("/")
    known = {p.url_path for p in PAGES.values()}
    return None if name in known else name


# Streamlit drops a query string of more than this many parameters whole (its
# CLIENT_STATE_QUERY_STRING_MAX_FIELDS; tests/e2e/test_untrusted_text.py holds them equal), so
# a page cannot tell 3,000 repeated ?run= from none: the message names the limit.
MAX_URL_FIELDS = 1000


class LinkError(ValueError):
    """A URL parameter that cannot be used. str() is the one line shown on the page."""


def parse_run_id(text: str | None, param: str = "run") -> int:
    """One run id from a URL parameter; LinkError naming the bad value otherwise."""
    if text is None or not str(text).strip():
        raise LinkError(f"no run given: add ?{param}=ID to the URL (a run id from the "
                        f"Runs page; a link with more than {MAX_URL_FIELDS:,} parameters "
                        "reaches the page with none: streamlit drops them all)")
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


def parse_flag(values: Iterable[str], param: str) -> bool:
    """An on/off URL parameter (?fit=1; absent: off); LinkError naming the bad value."""
    values = list(values)
    if not values:
        return False
    if values[-1] not in FLAG_VALUES:
        raise LinkError(f"?{param}={str(values[-1])[:40]!r} is not on or off: use "
                        f"?{param}=1 (on) or leave it out (off)")
    return FLAG_VALUES[values[-1]]


def run_url(base: str | None, run_id: int, batch: int | None = None,
            view: str | None = None, fit: bool = False) -> str:
    """/run?run=ID, with &batch=N when a batch size's timeline is shown, &view=LABEL
    when a view other than the first is open and &fit=1 when the timeline fits each lane
    to its own step: every toggle that changes what is drawn rides in the link."""
    return page_url(base, RUN, {"run": run_id, "batch": batch,
                                "view": None if view == RUN_VIEWS[0] else view,
                                FIT_PARAM: "1" if fit else None})


# A dashboard served to this machine alone: its address means nothing to anyone else.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "0.0.0.0", "::1")


def report_origin(base: str | None, run_id: int, batch: int | None = None) -> str | None:
    """The run's URL for a report's "made from" line: None when the dashboard answers on
    this machine only (a report is a file mailed away, and http://127.0.0.1:8501/... sent
    its reader to their own machine)."""
    host = urlsplit(base or "").hostname or ""
    return None if not base or host in LOCAL_HOSTS else run_url(base, run_id, batch)


def compare_url(base: str | None, run_ids: Iterable[int], batch: int | None = None) -> str:
    return page_url(base, COMPARE, {"run": [int(r) for r in run_ids], "batch": batch})


def given_params(header: RunHeader) -> dict:
    """The run's workload parameters that were given a value: a None one stands for "the
    model's own" (hf-causal-lm's layers=, hidden=, ... overrides) and is no flag to pass."""
    return {k: v for k, v in (header.workload_params or {}).items() if v is not None}


def measure_command(header: RunHeader, batch_sizes: Iterable[int], modes: Iterable[str]) -> str:
    """The sweep command that measures the same workload here (for runs that carry no
    command of their own, such as published figures)."""
    params = given_params(header)
    return sweep_command(str(header.workload), {k: params[k] for k in sorted(params)},
                         sorted(set(batch_sizes)), [m for m in MODES if m in set(modes)])


@dataclass(frozen=True)
class Reproduce:
    """What a run page offers to measure the run again: `command`, a line safe to paste
    (None when none is offered), and `note`, what to say beside or instead of it."""
    command: str | None
    note: str = ""


# The flags a stored sweep command may carry, each with the check its value must pass
# (None: a flag without a value). Anything else (--out, --db, a shell operator) means the
# stored line is not shown: a bundle is anyone's text, and a pasted --out can overwrite a
# file, a --db send results elsewhere.
_DIGITS = frozenset("0123456789,")
_SWEEP_FLAGS: dict[str, Callable[[str], bool] | None] = {
    "--batch-sizes": lambda v: bool(v) and set(v) <= _DIGITS,
    "--modes": lambda v: all(m in MODES for m in v.split(",")),
    "--device": lambda v: v in DEVICES,
    "--timing": lambda v: v in TIMINGS,
    "--processes": lambda v: v.isascii() and v.isdigit(),
    "--label": lambda v: True,
    "--quick": None,
}


def _stored_sweep(command: str, workload: str) -> str | None:
    """A stored `python -m runner sweep ...` line re-quoted token by token (shlex), or
    None when it holds anything but the flags above and this catalog workload."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if argv[:4] != ["python", "-m", "runner", "sweep"]:
        return None
    out, rest = argv[:4], argv[4:]
    params = WORKLOADS[workload].params
    while rest:
        flag = rest.pop(0)
        check = _SWEEP_FLAGS.get(flag)
        if flag in _SWEEP_FLAGS and check is None:
            out.append(flag)
            continue
        if not rest:
            return None
        value = rest.pop(0)
        ok = (value == workload if flag == "--workload"
              else value.split("=", 1)[0] in params and "=" in value if flag == "--param"
              else check is not None and check(value))
        if not ok:
            return None
        out += [flag, value]
    return shlex.join(out) if "--workload" in out else None


def reproduce(header: RunHeader, batch_sizes: Iterable[int], modes: Iterable[str]) -> Reproduce:
    """The command to offer for this run. Only a catalog workload gets one (its stored
    line when that is a plain sweep of it, else one built here, every value quoted with
    shlex); a `module:factory` workload would import and call code named by whoever made
    the bundle, so it gets words and no command."""
    workload = str(header.workload or "")
    params = given_params(header)
    if workload in WORKLOADS:
        try:
            check_workload(workload, {k: str(v) for k, v in params.items()},
                           allow_import=False)
        except WorkloadError as e:
            return Reproduce(None, f"No command offered: this run's parameters do not fit "
                                   f"the catalog's {workload}: {e}")
        stored = header.command
        line = _stored_sweep(stored, workload) if isinstance(stored, str) else None
        if line:
            return Reproduce(line)
        return Reproduce(measure_command(header, batch_sizes, modes),
                         "This run carries no command of its own"
                         + (" that is a plain sweep of its workload" if stored else "")
                         + ". To measure the same workload on your GPU:")
    if is_factory(workload):
        module, _, function = workload.rpartition(":")
        return Reproduce(None, f"No command offered: workload {workload!r} is not in the "
                               f"catalog. Measuring it would import the Python module "
                               f"{module!r} and call its function {function!r} with this "
                               "run's parameters: code chosen by whoever made this run. "
                               "Read it before you run anything.")
    return Reproduce(None, f"No command offered: workload {workload!r} is not in this "
                           "launchbench's catalog.")
