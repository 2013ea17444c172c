"""A seeded, time-bounded fuzz of the importers (issue 11): real bundles from data/samples,
mutated at random paths with hostile values, go through the CLI's import path on SQLite
and PostgreSQL. No traceback ever; the database unchanged on every refusal; accepted
bundles render their pages under AppTest. Each run prints its figures (pytest -rP)."""

from __future__ import annotations

import json
import random
import time
import uuid

import pytest

from contract import bundle as fmt
from db.engine import make_engine
from runner.ops.cli import UsageError
from runner.ops.commands.store import import_one
from tests.conftest import ROOT
from tests.db_snapshot import snapshot

SAMPLES = sorted((ROOT / "data" / "samples").glob("*.json"))
SEED = 11
BUDGET_S = 6.0       # per backend: 100-150 tries on a 2-core machine, more on a fast one
MAX_TRIES = 400
PAGES_TO_RENDER = 3  # accepted bundles opened under AppTest (SQLite)
RAW = "__FUZZ_RAW__"

HOSTILE = [
    None, True, False, 0, -1, 1.5, -1e-300, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 1e30,
    "", " ", "x" * 300, "x" * 200_000, "\x00", "a\x07b", "\ud800", "\udfff", "é²",
    "2026-13-01", "eager", "running", "serve", [], {}, [1, 2, 3], {"a": {"b": [None]}},
    "RAW:NaN", "RAW:Infinity", "RAW:-Infinity", "RAW:1e400", "RAW:" + "9" * 5000,
    "RAW:" + "[" * 900 + "]" * 900, "RAW:" + "{\"a\":" * 40 + "1" + "}" * 40,
]


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:6]):  # a few items of each list are enough
            yield from _paths(v, (*prefix, i))


def mutate(rng: random.Random, doc: dict) -> str:
    """One to three mutations; returns the JSON text (raw JSON spliced in where needed)."""
    raw = None
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in _paths(doc) if p]
        path = rng.choice(paths)
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        op = rng.random()
        if op < 0.1 and isinstance(parent, dict):
            parent.pop(path[-1], None)
        elif op < 0.15 and isinstance(parent, list):
            parent.append(parent[path[-1]])  # a duplicate point, a repeated size
        elif op < 0.2 and isinstance(parent, dict):
            parent[rng.choice(["\x00k", "\ud800", "extra", "k" * 50])] = 1
        else:
            v = rng.choice(HOSTILE)
            if isinstance(v, str) and v.startswith("RAW:") and raw is None:
                raw = v[4:]
                v = RAW
            parent[path[-1]] = v
    if rng.random() < 0.8 and isinstance(doc.get("run"), dict):
        doc["run"]["uuid"] = uuid.UUID(int=rng.getrandbits(128)).hex  # else: a conflict
    text = json.dumps(doc, allow_nan=True)
    return text.replace(f'"{RAW}"', raw) if raw is not None else text


def fuzz(url: str, backend: str) -> dict:
    rng = random.Random(SEED)
    engine = make_engine(url)
    originals = [json.loads(p.read_text()) for p in SAMPLES]
    for doc in originals:  # stored first, so mutated uuids can also conflict
        import_one(engine, fmt.validate(json.loads(json.dumps(doc))), "sample")
    figures = {"tried": 0, "accepted": 0, "refused": 0, "tracebacks": 0,
               "changed_on_refusal": 0}
    accepted: list[tuple[int, str]] = []
    failures: list[str] = []
    deadline = time.monotonic() + BUDGET_S
    while figures["tried"] < MAX_TRIES and time.monotonic() < deadline:
        figures["tried"] += 1
        src = rng.randrange(len(originals))
        text = mutate(rng, json.loads(json.dumps(originals[src])))
        before = snapshot(engine)
        try:
            doc = fmt.loads(text, name="fuzz.json")
            run_id, created = import_one(engine, doc, "fuzz.json")
        except (fmt.BundleError, UsageError) as e:
            figures["refused"] += 1
            assert "\n" not in str(e).strip()
            if snapshot(engine) != before:
                figures["changed_on_refusal"] += 1
                failures.append(f"changed on refusal: {e}")
            continue
        except BaseException as e:  # noqa: BLE001 - exactly what must never happen
            figures["tracebacks"] += 1
            import traceback
            failures.append(f"traceback: {type(e).__name__}: {str(e)[:200]} "
                            + "".join(traceback.format_tb(e.__traceback__)[-2:]))
            continue
        if created:
            figures["accepted"] += 1
            accepted.append((run_id, doc["run"]["kind"]))
        else:
            figures["refused"] += 1  # the same content again: nothing added
    engine.dispose()
    line = (f"fuzz {backend}: seed {SEED}, tried {figures['tried']}, accepted "
            f"{figures['accepted']}, refused {figures['refused']}, tracebacks "
            f"{figures['tracebacks']}, database changed on refusal "
            f"{figures['changed_on_refusal']}")
    print(line)  # shown with -rP / -s; no file in /tmp that two runs would share
    assert not failures, failures[:5]
    assert figures["accepted"] and figures["refused"]
    return {"accepted": accepted}


def test_fuzz_imports_on_sqlite_and_accepted_bundles_render(app_db_url):
    from streamlit.testing.v1 import AppTest

    out = fuzz(app_db_url, "sqlite")
    accepted = out["accepted"]
    sweeps = [str(r) for r, kind in accepted if kind == "sweep"]
    opened = [(f"pages/{'serve' if kind == 'serve' else 'run'}.py", {"run": str(r)})
              for r, kind in accepted[:PAGES_TO_RENDER]]
    # Every accepted run at once: the runs list, the serve page's default (the newest
    # serve run), compare and downloads over the sweeps.
    opened += [("pages/runs.py", {}), ("pages/serve.py", {}),
               ("pages/compare.py", {"run": ",".join(sweeps[:8])}),
               ("pages/import.py", {"run": sweeps[0]} if sweeps else {})]
    # One session goes through them all, as a visitor clicking from page to page would:
    # a fresh session per page cost a full first run of the app each (seconds apiece).
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    for page, params in opened:
        at.switch_page(page)
        at.query_params = params
        at.run()
        assert not at.exception, (page, params, [e.value for e in at.exception][:1])


def test_fuzz_imports_on_postgresql(pg_url):
    fuzz(pg_url, "postgresql")


@pytest.mark.parametrize("seed", [1, 2])
def test_mutations_are_deterministic(seed):
    a = mutate(random.Random(seed), json.loads(SAMPLES[0].read_text()))
    b = mutate(random.Random(seed), json.loads(SAMPLES[0].read_text()))
    assert a == b
