"""JSON-shaped dicts only at the edges (issue 36, item 4), counted so the count only falls.

The counts are the issue's, retired where the type checker covers them (issue 45 item 6;
test_the_checker_covers_every_room below holds the checker to every room). contract/ and
db/ are checked by mypy's strict flags, so each of their dicts says what it holds and an
Any there is a written choice at an edge (a JSON object becoming a record), not a shape
that slipped through. runner/, pages/ and app.py are checked at mypy's default strictness,
which takes `dict[str, Any]` as a type like any other: there the count stays. What is
counted: lines of runner/, pages/ and app.py naming `JsonObject` or `dict[str, Any]`,
tests excluded; the same as

    grep -rn "JsonObject\\|dict\\[str, Any\\]" runner pages app.py | wc -l

CEILING holds what was won and is lowered as edges are typed. A new name for a JSON
object would escape the count, so the only aliases allowed (anywhere) are JsonObject
(contract/json_shape.py) and TraceDoc (a stored trace, contract/trace.py), and each is
defined once.

In pages/, `.get("key")` reads a record by a string and silently gives None for a
misspelt key; records are read by attribute (docs/ARCHITECTURE.md, "Names: records and
rows"). Since pages/ is under mypy, a record's misspelt attribute and a `.get` on a record
(which has none) are the checker's errors, so the list of files once typed to records is
retired. The count stays for what mypy cannot see: a mapping's, a frame row's or any
untyped value's `.get`, and a TypedDict's, whose `.get` takes a misspelt key without a
word (mypy 2.4). What is not a record may use it, by name: st.query_params and
st.session_state. The other reads left are counted against READS_CEILING, which only
falls.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

CEILING = 0
READS_CEILING = 0

ROOMS = ("runner", "pages")  # contract/ and db/: mypy's strict flags (pyproject.toml)
JSON_SHAPE = re.compile(r"JsonObject|dict\[str, Any\]")
ALIAS = re.compile(r"^(\w+)\s*(?::\s*\w+\s*)?=\s*(?:dict\[str, Any\]|JsonObject)\s*$")
GET = re.compile(r"([\w.\]\[\"')]+)\.get\(\"")
NOT_RECORDS = ("st.query_params", "st.session_state")


def _sources(rooms=ROOMS):
    for room in rooms:
        yield from sorted((ROOT / room).rglob("*.py"))
    yield ROOT / "app.py"


def json_shaped_lines() -> list[str]:
    return [f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
            for p in _sources()
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if JSON_SHAPE.search(line)]


def record_reads() -> list[str]:
    out = []
    for p in sorted((ROOT / "pages").rglob("*.py")):
        for i, line in enumerate(p.read_text().splitlines(), 1):
            for m in GET.finditer(line):
                if m.group(1) not in NOT_RECORDS:
                    out.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    return out


def test_json_shaped_dicts_do_not_grow_back():
    lines = json_shaped_lines()
    assert len(lines) <= CEILING, "\n".join(lines)
    # Typing an edge lowers the count: lower CEILING with it.
    assert CEILING - len(lines) < 1, f"{len(lines)} lines: lower CEILING to {len(lines)}"


def test_no_other_alias_hides_a_json_object():
    aliases = [(p, m.group(1)) for p in _sources(("contract", "db", *ROOMS))
               for line in p.read_text().splitlines() if (m := ALIAS.match(line))]
    assert sorted(name for _, name in aliases) == ["JsonObject", "TraceDoc"], aliases


def test_pages_read_records_by_attribute():
    reads = record_reads()
    assert len(reads) <= READS_CEILING, "\n".join(reads)
    assert READS_CEILING - len(reads) < 5, f"{len(reads)} reads: lower READS_CEILING"


def test_the_checker_covers_every_room():
    # The counts above retired where mypy took over: they hold only while it checks
    # every room, the strict ones (contract/, db/) strictly.
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert set(config["files"]) == {"contract", "db", "runner", "pages", "app.py"}
    flags = {tuple(o["module"]): o for o in config["overrides"]}
    assert flags[("contract.*", "db.*")]["disallow_untyped_defs"] is True
    assert flags[("runner.*", "pages.*", "app")]["check_untyped_defs"] is True


def test_the_counter_sees_what_it_counts(tmp_path):
    # The patterns themselves: a JSON shape and a record read are found, a query
    # parameter is not taken for a record.
    assert JSON_SHAPE.search("def f(doc: JsonObject) -> dict[str, Any]:")
    assert ALIAS.match("Doc = dict[str, Any]") and not ALIAS.match("x = f(JsonObject)")
    found = [m.group(1) for m in GET.finditer('a = r.get("x") or st.query_params.get("y")')]
    assert found == ["r", "st.query_params"]
