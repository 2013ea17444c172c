"""A mode is one entry, and so is a run kind (issue 45, item 4; docs/ARCHITECTURE.md,
"Where a new thing goes"). The test copies the code, adds one entry to each table of
contract/vocab.py and nothing else, and shows every reader taking them up in a fresh
process: the runner's builder and compile watch, the bundle's check, the database's CHECK
(widened on a database made before the entries existed), the summary, the charts' marks
and the Runs board, the pickers and Compare's rule."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

from db.engine import make_engine
from tests.conftest import ROOT

ROOMS = ("contract", "db", "pages", "runner")

MODE_ENTRY = ('    Mode("max-autotune", compiled=True, graph=False, color="#9467bd", '
              'shape="diamond",\n         dash=(4, 1), '
              'compile_mode="max-autotune-no-cudagraphs"),\n')
KIND_ENTRY = ('    RunKind("profile", "profile run", None, curves=False,\n'
              '            elsewhere="on its own page"),\n')

CHECK = textwrap.dedent("""
    import json, sys
    from contract import bundle as fmt
    from contract.run_summary import RunListing
    from db import queries
    from db.engine import make_engine
    from db.store import import_bundle
    from pages.charts import run_charts
    from pages.logic import board, comparing, names
    from runner.core import compile_watch, modes
    from contract.comparability import compare_rule
    from contract.measurement import CompileCounters
    from tests.synthetic import sweep_bundle

    out = {}
    build = modes.builder("max-autotune")
    out["builder"] = [build.func.__name__, build.args[0].compile_mode]
    out["watch"] = compile_watch.cudagraph_status("max-autotune", None,
                                                  CompileCounters(unique_graphs=1))[0]
    engine = make_engine(sys.argv[1])  # made before the entries: its CHECKs widen here
    doc = sweep_bundle(modes=("eager", "compile"), batches=(8, 64), uuid="fake-mode")
    for m in doc["measurements"]:  # synthetic figures: compile's, under the new name
        m["mode"] = "max-autotune" if m["mode"] == "compile" else m["mode"]
    rid = import_bundle(engine, doc)[0]
    summary = queries.run_summary(engine, rid)
    out["key"] = summary.speedup_text()
    pts = queries.run_points(engine, rid)
    chart = run_charts.compare_chart(comparing.compare_speedups(
        {rid: pts}, queries.run_headers(engine, [rid]))).to_dict()
    out["shapes"] = [json.dumps(chart).count('"diamond"'), run_charts.MODE_DASHES["max-autotune"]]
    prof = sweep_bundle(modes=("eager",), batches=(8,), uuid="fake-kind")
    prof["run"]["kind"], prof["measurements"] = "profile", []
    pid = import_bundle(engine, prof)[0]
    listed = queries.runs_list(engine)
    table = board.board(listed, {s.header.id: s for s in queries.run_summaries(engine, [rid])})
    out["board"] = table.set_index("id").loc[pid, "key figure"]
    out["noun"] = names.run_choice(queries.run_header(engine, pid))
    out["refused"] = compare_rule(queries.run_headers(engine, [rid, pid]))[0]
    print(json.dumps(out))
""")


def _copy_with_entries(dest):
    for room in ROOMS:
        shutil.copytree(ROOT / room, dest / room,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", dest / "tests",
                    ignore=shutil.ignore_patterns("__pycache__", "e2e", "data"))
    vocab = dest / "contract" / "vocab.py"
    src = vocab.read_text()
    # One entry each, appended to its table: the whole change.
    mode_end = src.index(")}\nMODES = tuple(MODE_TABLE)")
    src = src[:mode_end] + MODE_ENTRY + src[mode_end:]
    kind_end = src.index(")}\nRUN_KINDS = tuple(RUN_KIND_TABLE)")
    src = src[:kind_end] + KIND_ENTRY + src[kind_end:]
    vocab.write_text(src)
    return src


def test_a_mode_and_a_run_kind_are_one_entry_each(tmp_path):
    url = f"sqlite:///{tmp_path / 'before.db'}"
    make_engine(url).dispose()  # a database of the code as it is: its CHECKs list four
    tree = tmp_path / "tree"
    tree.mkdir()
    changed = _copy_with_entries(tree)
    assert changed.count("\n") == (ROOT / "contract/vocab.py").read_text().count("\n") + 4
    done = subprocess.run([sys.executable, "-c", CHECK, url], cwd=tree, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(tree),
                                                       "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["builder"] == ["_compiled", "max-autotune-no-cudagraphs"]
    assert got["watch"] == "n/a"  # compiled, no graph: as compile
    assert got["key"].startswith("max-autotune at batch ")
    assert got["shapes"][0] >= 1 and got["shapes"][1] == [4, 1]
    assert got["board"] == "profile run"
    assert " profile run " in got["noun"]
    assert got["refused"] == [f"Run {2} is a profile run: Compare overlays sweeps. Open it "
                              "on its own page instead."]
