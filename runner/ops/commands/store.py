"""`python -m runner import | export | list`: bundles in and out of the database.

The database layer (SQLAlchemy) is imported inside the commands, never at module level:
the CLI parser imports every command module, and a GPU host without SQLAlchemy must still
be able to run `sweep --out`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from contract import bundle as fmt
from contract import outfile
from contract.run_summary import RunSummary
from contract.vocab import EXPORT_FORMATS
from runner.ops.cli import UsageError
from runner.ops.commands.flags import ALL, db_flag, table

NO_SQLALCHEMY = ("SQLAlchemy is not installed here, so no database can be opened")


def sqlalchemy_available() -> bool:
    try:
        import sqlalchemy  # noqa: F401
    except ImportError:
        return False
    return True


def shown_url(url: str) -> str:
    """The URL as the user may see it: password hidden (db/engine.py's one redaction)."""
    import db.engine

    return db.engine.shown_url(url)


def _sqlite_file(url: str) -> Path | None:
    """The file a sqlite URL names (None for other backends or URLs make_engine rejects)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    if parsed.database == ":memory:":
        return None
    return Path(parsed.database).expanduser()


def open_engine(url: str | None, *, must_exist: bool = False):
    """An engine for `url` (default: $LAUNCHBENCH_DB or the local SQLite file).

    must_exist: for commands that only read (export), a SQLite file that is not there is
    an error rather than a new empty database left behind.
    """
    if not sqlalchemy_available():
        raise UsageError(f"{NO_SQLALCHEMY}: install the requirements (pip install -r "
                         "requirements.txt)")
    from db.engine import DatabaseError, default_url, make_engine

    url = url or default_url()
    if must_exist:
        path = _sqlite_file(url)
        if path is not None and not path.is_file():
            raise DatabaseError(f"database {shown_url(url)!r} does not exist "
                                f"(no file {str(path)!r})")
    return make_engine(url)


def register(sub) -> None:
    p = sub.add_parser("import", help="store a result bundle (JSON) in the database",
                       description="Store a result bundle in the database. Importing the "
                                   "same bundle twice adds nothing the second time.",
                       parents=[db_flag()])
    p.add_argument("file", metavar="FILE.json")
    p.set_defaults(func=run_import)

    p = sub.add_parser("export", help="write one run as a result bundle (JSON)",
                       description="Write one stored run as a result bundle file, or "
                                   "as the records of PyTorch's OSS benchmark database "
                                   "(--format pytorch-benchmark: one record per point "
                                   "and metric; points without a step time are left "
                                   "out and named).",
                       parents=[db_flag()])
    p.add_argument("run_id", metavar="RUN_ID", help="run id, as `list` shows it")
    p.add_argument("--out", metavar="FILE.json", required=True,
                   help="the file to write (replaced atomically; a symlink is written "
                        "through), or - for standard output")
    p.add_argument("--format", choices=EXPORT_FORMATS, default=EXPORT_FORMATS[0],
                   help="bundle (default): launchbench's own, which `import` reads back; "
                        "pytorch-benchmark: the JSON records PyTorch's benchmark "
                        "database uploader reads (docs/ARCHITECTURE.md, \"Results other "
                        "tools read\")")
    p.set_defaults(func=run_export, one_line=True)

    p = sub.add_parser("delete", help="remove one run, its points and its serve data",
                       description="Remove one stored run with its points and sections "
                                   "(refused in read-only share mode).",
                       parents=[db_flag()])
    p.add_argument("run_id", metavar="RUN_ID", help="run id, as `list` shows it")
    p.set_defaults(func=run_delete)

    p = sub.add_parser("list", help="one line per stored run",
                       description="One line per run, newest first: id, date (UTC), "
                                   "workload (with its kind unless a sweep: [serve], "
                                   "[graph-memory]), GPU (or cpu), torch version, status, "
                                   "label.",
                       parents=[db_flag()])
    p.set_defaults(func=run_list)


def run_import(args: argparse.Namespace) -> int:
    # Read and validate the whole file before touching the database: a bad file leaves
    # nothing behind, not even an empty database.
    try:
        doc = fmt.read(args.file)
    except fmt.BundleError as e:
        if args.file in str(e):
            raise
        # Validation names the field, not the file: say which file it was.
        raise fmt.BundleError(f"{args.file}: {e}") from None
    engine = open_engine(args.db)
    try:
        run_id, created = import_one(engine, doc, args.file)
    finally:
        engine.dispose()
    uuid = doc["run"]["uuid"]
    if created:
        print(f"imported run {run_id} (uuid {uuid}, {fmt.contents(doc)})")
    else:
        print(f"already imported: run {run_id} (uuid {uuid}); nothing added")
    return 0


def import_one(engine, doc: fmt.BundleDoc | fmt.Bundle, name: str) -> tuple[int, bool]:
    """db.store.import_safely, with read-only mode as a UsageError: one line either way."""
    from db.store import import_safely

    try:
        return import_safely(engine, doc, name)
    except PermissionError as e:  # db.access.ReadOnlyError: a read-only share deployment
        raise UsageError(str(e)) from None


def run_delete(args: argparse.Namespace) -> int:
    run_id = parse_run_id(args.run_id)
    engine = open_engine(args.db, must_exist=True)
    try:
        from db.store import delete_run

        try:
            facts = delete_run(engine, run_id)
        except PermissionError as e:
            raise UsageError(str(e)) from None
    finally:
        engine.dispose()
    print(f"deleted run {run_id} (uuid {facts.uuid}, {facts.workload}, "
          f"{facts.points} points)")
    return 0


MAX_RUN_ID = 2**63 - 1  # the largest id a BIGINT / SQLite INTEGER column holds


def parse_run_id(text: str) -> int:
    try:
        if not text.strip().isascii() or not text.strip().isdigit():
            raise ValueError(text)
        run_id = int(text.strip())
    except ValueError:
        raise UsageError(f"RUN_ID {text!r} is not a run id (a whole number, as `list` "
                         "shows)") from None
    if run_id < 1:
        raise UsageError(f"RUN_ID {text!r} is not a run id (ids start at 1)")
    if run_id > MAX_RUN_ID:
        # Past a 64-bit integer no database can hold it (SQLite raised OverflowError):
        # the same one line as any other id that is not there.
        raise UsageError(f"run {run_id} does not exist")
    return run_id


def run_export(args: argparse.Namespace) -> int:
    run_id = parse_run_id(args.run_id)
    out = outfile.checked(args.out, "--out")  # before the database: nothing half-done
    engine = open_engine(args.db, must_exist=True)
    try:
        from db.store import export_bundle

        doc = export_bundle(engine, run_id)
    finally:
        engine.dispose()
    # The file may be standard output (--out -): then what is said goes to stderr.
    say = sys.stderr if out.is_stdout else sys.stdout
    if args.format == "pytorch-benchmark":
        return _export_pytorch_benchmark(run_id, fmt.validate(doc), out, say)
    out.write(fmt.dumps(fmt.validate(doc)))
    print(f"exported run {run_id} (uuid {doc['run']['uuid']}, {fmt.contents(doc)}) to "
          f"{out}", file=say)
    return 0


def _export_pytorch_benchmark(run_id: int, bundle: fmt.Bundle, out: outfile.Output,
                              say) -> int:
    """The run's points as PyTorch benchmark records (contract/pytorch_benchmark.py),
    written atomically; a run the format cannot hold, or one with no point to give, is
    one line and nothing written."""
    from contract import pytorch_benchmark as pb

    try:
        export = pb.records(bundle)
    except pb.ExportError as e:
        raise UsageError(f"run {run_id}: {e}") from None
    if not export.records:
        raise UsageError(f"run {run_id} has no point with a step time "
                         f"({len(export.left_out)} left out: "
                         f"{'; '.join(map(str, export.left_out[:3]))}"
                         f"{'; ...' if len(export.left_out) > 3 else ''}); nothing written")
    out.write(pb.dumps(export))
    print(f"exported run {run_id} (uuid {bundle['run']['uuid']}) to {out}: "
          f"{len(export.records)} pytorch-benchmark records", file=say)
    for lo in export.left_out:
        print(f"  left out (no figure to give): {lo}", file=say)
    return 0


# `list`'s columns (issue 46: a table without a header, and "?" where a value was not
# recorded). A blank label is no label; a serve or graph-memory run's figures are read on
# its page, which its key figure cell says.
LIST_HEADER = ["id", "created (UTC)", "workload [kind]", "GPU or cpu", "torch", "status",
               "label", "key figure", "memory cost"]
NOT_RECORDED = "not recorded"


def format_runs(runs: list[RunSummary]) -> list[str]:
    """A header, then one aligned line per run (a pure function, so tests need no
    terminal): who and what, then the key figure and its memory cost as the dashboard
    quotes them (a sweep's only: serve and graph-memory runs are read on their pages).
    No runs: no lines."""
    rows = []
    for s in runs:
        r = s.header
        t = r.created_at
        date = t.strftime("%Y-%m-%d %H:%M") if t is not None else NOT_RECORDED
        torch = f"torch {r.torch_version}" if r.torch_version else f"torch {NOT_RECORDED}"
        kind = r.kind or "sweep"  # a sweep goes unmarked, as before kinds existed
        what = r.workload if kind == "sweep" else f"{r.workload} [{kind}]"
        figure = ([s.speedup_text(), s.memory_text() or "not measured"] if kind == "sweep"
                  else [f"on its {kind} page", ""])
        rows.append([str(r.id), date, what, r.where or NOT_RECORDED, torch, r.status,
                     r.label or "", *figure])
    return table([LIST_HEADER, *rows], left=ALL) if rows else []


def run_list(args: argparse.Namespace) -> int:
    if sqlalchemy_available():
        from db.engine import default_url

        url = args.db or default_url()
        path = _sqlite_file(url)
        if path is not None and not path.is_file():
            # Listing must not leave an empty database behind (a typo in --db would).
            print(f"no runs: database {shown_url(url)!r} does not exist yet",
                  file=sys.stderr)
            return 0
    engine = open_engine(args.db)
    try:
        from db.queries import list_runs

        runs = list_runs(engine)
    finally:
        engine.dispose()
    for line in format_runs(runs):
        print(line)
    if not runs:
        print(f"no runs stored in {shown_url(str(engine.url))}", file=sys.stderr)
    return 0
