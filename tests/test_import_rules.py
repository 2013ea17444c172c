"""The house's floors, checked from the source: who may import whom (issue 10).

Walks the AST of every module under runner/, db/ and pages/ (imports inside functions
count too: a lazy import is still a dependency) and asserts
- the leaf (runner/format/) imports nothing of ours outside itself, and no torch;
- db/ and pages/ import only the leaf of runner/ (pages also the operations entries
  runner/ops/launcher.py and, for a Slurm executor, runner/ops/slurm.py), never the
  measuring core, the serve scenario, the CLI or torch;
- the measuring core and the serve scenario never import db/, pages/ or operations;
- no two modules import each other, directly or round a longer circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("runner", "db", "pages")
LEAF = "runner.format"
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


def test_db_imports_only_the_leaf_of_runner():
    assert _offenders(("db",), lambda i: _in(i, "db", LEAF)) == []


def test_pages_import_db_the_leaf_and_the_operations_entries():
    assert _offenders(("pages",), lambda i: _in(i, "pages", "db", LEAF, PAGES_ENTRY,
                                                 SLURM_ENTRY)) == []


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
    assert "runner.format.bundle" in MODULES and "db.store" in MODULES
    assert "runner.format.bundle" in _ours("db.store")
    assert any(i == "torch" for i in GRAPH["runner.core.point"]) or \
        "torch" in _imports("runner.core.modes", MODULES["runner.core.modes"])
