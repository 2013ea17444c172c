"""The house's floors, checked from the source: who may import whom (issue 10).

Walks the AST of every module under contract/, runner/, db/ and pages/ (imports inside
functions count too: a lazy import is still a dependency) and asserts
- the contract (contract/), the floor every other room stands on, imports nothing of ours
  outside itself, and no torch;
- the top-level rooms stand in floors with no arrow up: contract <- db <- runner <- pages
  <- app (a room imports only rooms below it; issue 45);
- db/ imports nothing of runner/; pages/ import, of runner/, only the operations entries
  runner/ops/launcher.py and, for a Slurm executor, runner/ops/slurm.py, and the history,
  never the measuring core, the serve scenario, the CLI or torch;
- the measuring core and the serve scenario never import db/, pages/ or operations;
- the history (runner/history/, issue 40) imports only the contract of ours and, of third
  parties, neither torch, SQLAlchemy, Streamlit nor Altair; pages/ and the operations
  may import it;
- no two modules import each other, directly or round a longer circle;
- pages/ in its rooms (issue 36): logic/ imports neither streamlit, altair nor db/;
  charts/ no streamlit nor db/; widgets/data.py is the one door to db/ (and sqlalchemy)
  for every page, widget and app.py; no file in pages/ is over 400 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("contract", "runner", "db", "pages")
HISTORY = "runner.history"  # change points across runs: the CLI's and the Trends page's
DOOR = "pages.widgets.data"  # the pages' one door to the database
MAX_PAGES_LINES = 400
LEAF = "contract"
PAGES_ENTRY = "runner.ops.launcher"
SLURM_ENTRY = "runner.ops.slurm"  # the Launch page queues through Slurm when configured


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            if "migrations" in path.parts:
                continue  # alembic's scripts: run by alembic, imported by nothing
            out[_module_name(path)] = path
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Every module this one imports (absolute names; `from x import y` counts x.y when
    that is a module of ours, else x)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                pkg = pkg[:len(pkg) - (node.level - 1)]
                base = ".".join([*pkg, base] if base else pkg)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


MODULES = _modules()
GRAPH = {name: {i for i in _imports(name, path) if i in MODULES} |
         {i for i in _imports(name, path) if i.split(".")[0] == "torch"}
         for name, path in MODULES.items()}


def _ours(name: str) -> set[str]:
    return {i for i in GRAPH[name] if i in MODULES}


def _offenders(prefixes: tuple[str, ...], allowed) -> list[str]:
    return sorted(f"{m} imports {i}" for m in MODULES if m.startswith(prefixes)
                  for i in GRAPH[m] if not allowed(i))


def _in(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_leaf_imports_nothing_of_ours_and_no_torch():
    assert _offenders((LEAF,), lambda i: _in(i, LEAF)) == []


def test_db_imports_only_the_contract():
    assert _offenders(("db",), lambda i: _in(i, "db", LEAF)) == []


FLOORS = ("contract", "db", "runner", "pages", "app")  # bottom up: the top-level rooms


def test_no_room_imports_a_room_above_it():
    # The drawn tree's arrows between top-level rooms all point down (issue 45).
    modules = {**MODULES, "app": ROOT / "app.py"}
    up = sorted(f"{m} imports {i}" for m, path in modules.items()
                for i in _imports(m, path) if _top(i) in FLOORS
                and FLOORS.index(_top(i)) > FLOORS.index(_top(m)))
    assert up == []


def test_pages_import_db_the_leaf_and_the_operations_entries():
    assert _offenders(("pages",), lambda i: _in(i, "pages", "db", LEAF, HISTORY, PAGES_ENTRY,
                                                 SLURM_ENTRY)) == []


def test_the_history_stands_on_the_leaf_and_third_parties_only():
    assert _offenders((HISTORY,), lambda i: _in(i, HISTORY, LEAF)) == []
    banned = ("torch", "sqlalchemy", "streamlit", "altair", "db", "pages", "runner.ops",
              "runner.core", "runner.serve")
    assert _room_offenders(HISTORY, banned) == []
    # Its two readers: the check command and the Trends page's logic.
    readers = {m for m in MODULES if HISTORY in {_top_module(i) for i in GRAPH[m]}}
    assert any(_in(m, "runner.ops") for m in readers) and any(_in(m, "pages") for m in readers)


def test_the_operations_entries_for_pages_stay_narrow():
    # What pages reach through them must not drag in the CLI or the measuring core.
    assert _offenders((PAGES_ENTRY,), lambda i: _in(i, "db", LEAF)) == []
    assert _offenders((SLURM_ENTRY,), lambda i: _in(i, "db", LEAF, PAGES_ENTRY)) == []


def test_core_and_serve_never_reach_up():
    up = ("db", "pages", "runner.ops")
    assert _offenders(("runner.core",), lambda i: not _in(i, *up, "runner.serve")) == []
    assert _offenders(("runner.serve",), lambda i: not _in(i, *up)) == []


def test_no_import_circles():
    circles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for i in sorted(_ours(m)):
            # A package's __init__ importing its own submodules is the package, not a circle.
            if state.get(i) == 1 and not m.startswith(i + "."):
                circles.append(" -> ".join([*path[path.index(i):], i]))
            elif i not in state:
                visit(i, [*path, i])
        state[m] = 2

    for m in sorted(MODULES):
        if m not in state:
            visit(m, [m])
    assert circles == []


def test_the_walk_sees_the_house():
    # A guard for the test itself: a broken walk would pass every check above.
    assert "contract.bundle" in MODULES and "db.store" in MODULES
    assert "runner.ops.commands.store" in MODULES
    assert "contract.bundle" in _ours("db.store")
    assert any(i == "torch" for i in GRAPH["runner.core.point"]) or \
        "torch" in _imports("runner.core.modes", MODULES["runner.core.modes"])


# --- pages/ in rooms -------------------------------------------------------------------------

def _top(name: str) -> str:
    return name.split(".")[0]


def _top_module(name: str) -> str:
    """runner.history.changes -> runner.history (the room a module of ours lives in)."""
    return ".".join(name.split(".")[:2])


def _room_offenders(room: str, banned: tuple[str, ...]) -> list[str]:
    """Modules of `room` that import a banned package (third-party ones included, which
    GRAPH leaves out)."""
    return sorted(f"{m} imports {i}" for m, path in MODULES.items() if _in(m, room)
                  for i in _imports(m, path) if _in(i, *banned) or _top(i) in banned)


def test_pages_logic_imports_no_streamlit_altair_or_db():
    banned = ("streamlit", "altair", "vl_convert", "db", "sqlalchemy", "pages.charts",
              "pages.widgets")
    assert _room_offenders("pages.logic", banned) == []


def test_pages_charts_import_no_streamlit_or_db():
    assert _room_offenders("pages.charts", ("streamlit", "db", "sqlalchemy",
                                            "pages.widgets")) == []


def test_only_the_door_imports_db():
    pages = {m: p for m, p in MODULES.items() if _in(m, "pages") and m != DOOR}
    pages["app"] = ROOT / "app.py"
    offenders = sorted(f"{m} imports {i}" for m, path in pages.items()
                       for i in _imports(m, path) if _top(i) in ("db", "sqlalchemy"))
    assert offenders == []
    assert any(_top(i) == "db" for i in _imports(DOOR, MODULES[DOOR]))  # the door is there


def test_the_rooms_are_all_of_pages():
    # A module beside the page scripts would be taken for a page (streamlit's pages/
    # folder); every other module lives in one of the three rooms.
    rooms = ("pages.logic", "pages.charts", "pages.widgets")
    scripts = {p.stem for p in (ROOT / "pages").glob("*.py")}
    loose = [m for m in MODULES if _in(m, "pages") and not _in(m, *rooms)
             and m.split(".")[-1] not in scripts]
    assert loose == [] and not (ROOT / "pages" / "common").exists()


def test_no_pages_file_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "pages").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_PAGES_LINES}
    assert long == {}


def _module_level_imports(path: Path) -> set[str]:
    """The top packages a module imports outside any function (what importing it needs)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:
        nodes = [node]
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` and the like
            nodes = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
        for n in nodes:
            if isinstance(n, ast.Import):
                found.update(a.name.split(".")[0] for a in n.names)
            elif isinstance(n, ast.ImportFrom) and not n.level:
                found.add((n.module or "").split(".")[0])
    return found


def test_the_contract_stands_on_the_standard_library():
    """A GPU host with torch alone writes a bundle (issue 45, item 5): the contract imports
    only the standard library, and of third parties only jsonschema, inside the function
    that checks a bundle read from elsewhere (contract/bundle_schema.py)."""
    import sys

    third = {}
    for name, path in MODULES.items():
        if not _in(name, LEAF):
            continue
        outside = {i.split(".")[0] for i in _imports(name, path)} - set(
            sys.stdlib_module_names) - {LEAF, "__future__", ""}
        if outside:
            third[name] = outside
        at_import = _module_level_imports(path) - set(sys.stdlib_module_names) - {
            LEAF, "__future__", ""}
        assert not at_import, (name, at_import)
    assert third == {"contract.bundle_schema": {"jsonschema"}}, third
