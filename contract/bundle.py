"""The result bundle: one run as a JSON file (docs/ARCHITECTURE.md, "The result bundle").

Standard library only, so a GPU host with nothing but torch can write one, and the
database layer (which must not import torch) can read one.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypedDict, cast

from contract import bundle_schema as bschema
from contract import figure_rules as rules
from contract import graph_memory as gm
from contract import outfile
from contract.json_shape import JsonObject
from contract.limits import (
    INT32_MAX,
    INT64_MAX,
    INT64_MIN,
    MAX_BUNDLE_BYTES,
    MAX_BUNDLE_TRACE_EVENTS,
    MAX_JSON_DEPTH,
    MAX_LIST,
    MAX_NODES,
    MAX_STRING,
)
from contract.measurement import (
    MEASUREMENT_FIELDS,
    NUMBER_FIELDS,
    TRACE_FIELD,
    Measurement,
)
from contract.run_record import ENVIRONMENT_FIELDS, RUN_FIELDS, EnvironmentJson, RunJson
from contract.serve_record import SectionError, ServeSectionJson, validate_section
from contract.trace import TraceError, validate_trace

# Read by callers as fmt.MODES, fmt.RUN_STATUSES...: the bundle's words, from the one list.
from contract.vocab import DEVICES, MODES, POINT_STATUSES, RUN_STATUSES  # noqa: F401

FORMAT = "launchbench.run"
# Version 2 (serve runs) adds run.kind and an optional top-level "serve" section
# (contract/serve_record.py); version 1 files read as sweeps. Version 3 (interleaved rounds)
# adds the interval fields below: samples_ms holds one figure per round, aligned by index
# across the modes of one batch size, and launch_us_rounds the host's launch cost in each
# round. Older bundles read with those fields null: "no interval". Version 4 (issue 12) adds
# each measurement's "trace": one profiled step's timeline (contract/trace.py), null
# where none was kept (a CPU run, an older bundle, a failed point). Version 5 (issue 28)
# adds each measurement's energy figures (contract/measurement.py,
# ENERGY_NUMBER_FIELDS) and energy_unavailable_reason; older bundles read with them null:
# "not measured". A graph-memory run (issue 27) has run.kind "graph-memory", no
# measurements and a top-level "graph_memory" section (contract/graph_memory.py); a
# reader that predates it refuses the kind in one line ("run.kind ... is not one of").
# Version 6 (issue 39) adds each measurement's split of the step (SPLIT_NUMBER_FIELDS:
# GPU busy, launch cost, the rest; contract/host_split.py) and, in details, the
# speedup projected to reference launch costs; older bundles read with them null.
# Version 7 (issue 44) adds each measurement's memory_cost_bytes (what the mode keeps
# beyond eager, each measured alone from a clean state) and, in details, its baseline
# and the clean start's check (contract/measurement.py, Memory); older bundles read
# with it null: "measured before the isolated memory pass".
VERSION = 7
SUPPORTED_VERSIONS = (1, 2, 3, 4, 5, 6, 7)

# reserved_delta_bytes may be negative (before version 7, setup could free cached
# blocks), and so may a memory cost (a mode that keeps less than eager: no cuBLAS
# workspace of its own, say) and energy above idle (a mode drawing about idle power,
# within the counter's error); the rest cannot.
SIGNED_FIELDS = ("reserved_delta_bytes", "memory_cost_bytes", "energy_above_idle_mj_per_step")
# Figures stored in integer columns: whole numbers within the column, never 1e30.
INTEGER_FIELDS = {"samples": INT32_MAX, "graph_pool_bytes": INT64_MAX,
                  "peak_allocated_bytes": INT64_MAX, "reserved_delta_bytes": INT64_MAX,
                  "memory_cost_bytes": INT64_MAX}
# The bundle's JSON Schema (contract/bundle_schema.py), from the lists above; a point's
# alone for a writer's check_measurement.
_SCHEMA = bschema.schema(VERSION, SUPPORTED_VERSIONS, FORMAT,
                         environment_fields=ENVIRONMENT_FIELDS, run_fields=RUN_FIELDS,
                         number_fields=NUMBER_FIELDS, signed_fields=SIGNED_FIELDS,
                         integer_fields=INTEGER_FIELDS)
_POINT_SCHEMA = {"$schema": _SCHEMA["$schema"], "$defs": _SCHEMA["$defs"],
                 "$ref": "#/$defs/measurement"}


class BundleError(ValueError):
    """A bundle that cannot be read or does not follow the format. str() is one line."""


# The keys only some bundles hold: a base of total=False marks them so (NotRequired is
# Python 3.11's; the project reads on 3.10).
class _Sections(TypedDict, total=False):
    serve: ServeSectionJson  # a serve run's only (version 2 on)
    graph_memory: gm.GraphMemorySection  # a graph-memory run's only (gm.SECTION)


class BundleDoc(_Sections):
    """A bundle's object, as make_bundle writes it and validate() checks it: the run's
    records, each point's JSON (contract/measurement.py Measurement.to_json's,
    MEASUREMENT_FIELDS then its trace) and the section of a serve or graph-memory run."""
    format: str
    version: int
    environment: EnvironmentJson
    run: RunJson
    measurements: list[JsonObject]


class Bundle(dict[str, Any]):
    """A bundle (a BundleDoc) as validate() returns it, and so read() and loads(): checked
    against the format and normalised where it entered. db/store.py import_bundle stores
    it as it is and checks only a plain dict (one built in code), so a file is checked
    once on its way to the database. Changed after the check, it is a plain dict's to
    check again: pass it through validate()."""


# C0 controls other than tab, newline and carriage return (PostgreSQL refuses NUL in text
# and jsonb; the rest have no business in a label) and lone UTF-16 surrogates (no UTF-8
# encoding exists for them, so they cannot be stored or sent to a browser).
_BAD_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


def _short(text: str) -> str:
    return repr(text[:40]) + ("..." if len(text) > 40 else "")


def check_plain(doc: Any, where: str = "bundle") -> None:
    """Bounds on a whole parsed document, without recursion (a 5,000-deep list must not
    raise RecursionError): depth, count of values, string length and characters, integers
    within signed 64 bits, finite numbers, list lengths. BundleError names the path."""
    stack: list[tuple[Any, int, str]] = [(doc, 1, where)]
    nodes = 0
    while stack:
        v, depth, path = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise BundleError(f"{where} holds more than {MAX_NODES} values")
        if isinstance(v, str):
            _check_string(v, path)
        elif isinstance(v, bool) or v is None:
            continue
        elif isinstance(v, int):
            if not INT64_MIN <= v <= INT64_MAX:
                raise BundleError(f"{path}: integer {_short(str(v))} is outside signed "
                                  "64 bits")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise BundleError(f"{path} {v!r} is not a finite number")
        elif isinstance(v, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise BundleError(f"{path}: nested deeper than {MAX_JSON_DEPTH} levels")
            if isinstance(v, dict):
                for k, x in v.items():
                    if not isinstance(k, str):
                        raise BundleError(f"{path}: key {k!r} is not text")
                    _check_string(k, f"{path} key")
                    stack.append((x, depth + 1, f"{path}.{k[:40]}"))
            else:
                if len(v) > MAX_LIST:
                    raise BundleError(f"{path}: {len(v)} items, more than {MAX_LIST}")
                stack.extend((x, depth + 1, f"{path}[{i}]") for i, x in enumerate(v))
        else:
            raise BundleError(f"{path}: a {type(v).__name__} is not a JSON value")


def _check_string(v: str, path: str) -> None:
    if len(v) > MAX_STRING:
        raise BundleError(f"{path}: text of {len(v)} characters, more than {MAX_STRING}")
    bad = _BAD_CHARS.search(v)
    if bad:
        raise BundleError(f"{path}: text {_short(v)} holds the character "
                          f"U+{ord(bad.group()):04X} (control characters and lone "
                          "surrogates are refused)")


def empty_measurement(mode: str, batch_size: int) -> JsonObject:
    """A measurement's JSON with every figure unknown (a bundle built by hand; the runner
    builds a Measurement)."""
    return Measurement(mode, batch_size).to_json()


def make_bundle(environment: Mapping[str, Any], run: Mapping[str, Any],
                measurements: Sequence[Measurement | Mapping[str, Any]],
                serve: ServeSectionJson | None = None,
                graph_memory: gm.GraphMemorySection | None = None) -> BundleDoc:
    """The bundle of one run; a typed Measurement turns to JSON here."""
    points: list[Mapping[str, Any]] = [m.to_json() if isinstance(m, Measurement) else m
                                       for m in measurements]
    kind = run.get("kind") or ("serve" if serve is not None else
                               "graph-memory" if graph_memory is not None else "sweep")
    doc: BundleDoc = {
        "format": FORMAT,
        "version": VERSION,
        # The field lists are the TypedDicts' keys (contract/run_record.py), which a
        # comprehension over them cannot show the checker.
        "environment": cast(EnvironmentJson, {f: environment.get(f)
                                              for f in ENVIRONMENT_FIELDS}),
        "run": cast(RunJson, {**{f: run.get(f) for f in RUN_FIELDS}, "kind": kind}),
        "measurements": [{**{f: m.get(f) for f in MEASUREMENT_FIELDS},
                          TRACE_FIELD: t} for m, t in zip(points, _traces_within_budget(points),
                                                          strict=True)],
    }
    if serve is not None:
        doc["serve"] = serve
    if graph_memory is not None:
        doc["graph_memory"] = graph_memory
    return doc


def contents(doc: BundleDoc | Bundle) -> str:
    """What a validated bundle holds, in a few words (import and export say it): a
    graph-memory run has captures, not points."""
    sec = doc.get("graph_memory")  # gm.SECTION, spelled as the TypedDict's key
    if sec is not None:
        n = sum(len(v) for v in sec["series"].values())
        return f"graph-memory, {n} captures of {len(sec['sizes'])} sizes"
    return f"{len(doc['measurements'])} points"


def graph_memory_doc(doc: Any, source: str) -> gm.GraphMemoryDoc:
    """A graph-memory run's document (graph_memory.read_doc's form, what curve() reads)
    from either file form: a bundle of kind graph-memory (graph-memory --out, export) or
    the older launchbench.graph-memory document. GraphMemoryError names `source`."""
    if isinstance(doc, dict) and doc.get("format") == FORMAT:
        try:
            return gm.doc_from_bundle(validate(doc), source)
        except BundleError as e:
            raise gm.GraphMemoryError(f"{source}: {e}") from None
    return gm.read_doc(doc, source)


def _events(trace: Any) -> int:
    if not isinstance(trace, dict):
        return 0
    return sum(len(v) for v in (trace.get("cpu"), trace.get("gpu")) if isinstance(v, list))


def _traces_within_budget(measurements: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Each point's trace, in order, until MAX_BUNDLE_TRACE_EVENTS; None after that."""
    out: list[Any] = []
    used = 0
    for m in measurements:
        t = m.get(TRACE_FIELD)
        used += _events(t)
        out.append(t if used <= MAX_BUNDLE_TRACE_EVENTS else None)
    return out


def parse_time(value: Any) -> datetime | None:
    """ISO 8601 text to an aware datetime (naive means UTC); None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def bundle_schema() -> dict[str, Any]:
    """This launchbench's bundle as a JSON Schema (contract/bundle_schema.py, published
    as docs/bundle.schema.json), built from the lists above."""
    return _SCHEMA


def _check_shape(doc: Any, required: bool, point: bool = False) -> None:
    """The JSON Schema's check (jsonschema, imported there). `required`: a bundle read
    from elsewhere must be checked, so a missing jsonschema is one line; a writer's own
    typed records are checked where it is installed. `point`: `doc` is one
    measurement."""
    if not bschema.available():
        if required:
            raise BundleError("reading a bundle needs the jsonschema package: pip install "
                              "-r requirements.txt (or pip install jsonschema)")
        return
    try:
        bschema.check(doc, _POINT_SCHEMA if point else _SCHEMA)
    except bschema.SchemaError as e:
        raise BundleError(str(e)) from None


def validate(doc: Any, now: datetime | None = None) -> Bundle:
    """Check a parsed bundle; return it normalised, or raise BundleError naming the value.
    Its shape by the JSON Schema (needs jsonschema), then what a schema cannot say.
    `now`: the clock a run's times are held to (default: this machine's)."""
    return _checked(doc, now, schema_required=True)


def _checked(doc: Any, now: datetime | None, schema_required: bool) -> Bundle:
    if not isinstance(doc, dict):
        raise BundleError(f"not a launchbench bundle: top level is {type(doc).__name__}, "
                          "expected an object")
    check_plain(doc)
    _check_shape(doc, schema_required)
    env, run = doc["environment"], doc["run"]
    for f in ("created_at", "finished_at"):
        if run.get(f) is not None and parse_time(run[f]) is None:
            raise BundleError(f"run.{f} {_short(str(run[f]))} is not an ISO 8601 date-time")
    kind = run.get("kind") or "sweep"
    if doc["version"] == 1 and (kind != "sweep" or "serve" in doc):
        raise BundleError("a version 1 bundle holds a sweep only (serve runs are version 2)")
    serve = _validate_serve(doc.get("serve"), kind)
    graph_memory = _validate_graph_memory(doc.get(gm.SECTION), kind, doc["measurements"])
    events = sum(_events(m.get(TRACE_FIELD)) for m in doc["measurements"]
                 if isinstance(m, dict))
    if events > MAX_BUNDLE_TRACE_EVENTS:
        raise BundleError(f"bundle holds {events} trace events, more than "
                          f"{MAX_BUNDLE_TRACE_EVENTS}")
    seen = set()
    for i, m in enumerate(doc["measurements"]):
        _check_trace(f"measurement {i}", m)
        key = (m["mode"], m["batch_size"])
        if key in seen:
            raise BundleError(f"measurement {i}: duplicate point mode={key[0]!r} "
                              f"batch_size={key[1]}")
        seen.add(key)
    _check_figures(doc["measurements"], env.get("gpu_memory_bytes"), run, now)
    out = {
        "format": FORMAT,
        "version": doc["version"],
        "environment": {f: env.get(f) for f in ENVIRONMENT_FIELDS},
        "run": {**{f: run.get(f) for f in RUN_FIELDS},
                "source": run.get("source") or "measured", "kind": kind,
                "workload_params": run.get("workload_params") or {}},
        "measurements": [{**{f: m.get(f) for f in MEASUREMENT_FIELDS},
                          "samples_ms": m.get("samples_ms") or [],
                          "launch_us_rounds": m.get("launch_us_rounds") or [],
                          "details": m.get("details") or {},
                          "message": m.get("message") or "",
                          TRACE_FIELD: m.get(TRACE_FIELD)}
                         for m in doc["measurements"]],
    }
    if serve is not None:
        out["serve"] = serve
    if graph_memory is not None:
        out[gm.SECTION] = graph_memory
    return Bundle(out)


def _check_figures(measurements: list[Any], gpu_memory: int | None, run: dict[str, Any],
                   now: datetime | None) -> None:
    """Figures that contradict each other or physical sense (contract/figure_rules.py),
    after every shape is known good."""
    try:
        for i, m in enumerate(measurements):
            rules.check_point(f"measurement {i} ({m['mode']} batch {m['batch_size']})", m,
                              gpu_memory)
        rules.check_times(parse_time(run.get("created_at")),
                          parse_time(run.get("finished_at")), now)
    except rules.FigureError as e:
        raise BundleError(str(e)) from None


def _validate_graph_memory(section: Any, kind: str, measurements: list[Any]
                           ) -> gm.GraphMemorySection | None:
    """A graph-memory run carries its section and no points; any other run no section."""
    if section is None:
        if kind == "graph-memory":
            raise BundleError(f"run.kind is 'graph-memory' but the bundle has no "
                              f"{gm.SECTION!r} section")
        return None
    if kind != "graph-memory":
        raise BundleError(f"bundle has a {gm.SECTION!r} section but run.kind is {kind!r}")
    if measurements:
        raise BundleError(f"a graph-memory run has no measurements; this one has "
                          f"{len(measurements)}")
    try:
        return gm.validate_section(section)
    except gm.GraphMemoryError as e:
        raise BundleError(str(e)) from None


def _validate_serve(section: Any, kind: str) -> ServeSectionJson | None:
    """A serve run carries its serve section and a sweep none (format version 2)."""
    if section is None:
        if kind == "serve":
            raise BundleError("run.kind is 'serve' but the bundle has no 'serve' section")
        return None
    if kind != "serve":
        raise BundleError(f"bundle has a 'serve' section but run.kind is {kind!r}")

    try:
        return validate_section(section)
    except SectionError as e:
        raise BundleError(str(e)) from None


def _check_trace(where: str, m: dict[str, Any]) -> None:
    """A point's trace has its own shape (contract/trace.py)."""
    if m.get(TRACE_FIELD) is not None:
        try:
            validate_trace(m[TRACE_FIELD], f"{where}: trace")
        except TraceError as e:
            raise BundleError(str(e)) from None


def check_measurement(m: Any) -> None:
    """One point as a writer (a sweep, a worker) is about to store it: the same bounds an
    imported bundle meets, so what a run writes can always be exported and imported (its
    shape by the schema where jsonschema is installed: a GPU host with torch alone
    stores typed records)."""
    check_plain(m, "measurement")
    if not isinstance(m, dict):
        raise BundleError(f"measurement: expected an object, got {type(m).__name__}")
    where = f"measurement ({m.get('mode')} batch {m.get('batch_size')})"
    try:
        _check_shape(m, required=False, point=True)
    except BundleError as e:
        raise BundleError(f"{where}: {e}") from None
    _check_trace(where, m)
    try:
        rules.check_point(where, m)
    except rules.FigureError as e:
        raise BundleError(str(e)) from None


class DuplicateKey(ValueError):
    """A JSON object that names a key twice. str() is one line naming the key."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook for every bundle read: an object that names a key twice
    is refused (json.loads keeps the last silently: a file could show one figure to a
    reviewer and store another)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKey(f"the key {_short(k)} appears twice in one object (which "
                               "one counts is not clear: refused)")
        out[k] = v
    return out


def loads(text: str, name: str = "bundle", now: datetime | None = None) -> Bundle:
    if len(text) > MAX_BUNDLE_BYTES:
        raise BundleError(f"{name} is {len(text) / 1024 / 1024:.1f} MB: over the "
                          f"{MAX_BUNDLE_BYTES >> 20} MB limit for a bundle")
    try:
        doc = json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKey as e:
        raise BundleError(f"{name}: {e}") from None
    except json.JSONDecodeError as e:
        raise BundleError(f"{name} is not valid JSON (truncated or corrupt?): {e}") from None
    except RecursionError:
        raise BundleError(f"{name}: JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as e:  # an integer literal of thousands of digits
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise BundleError(f"{name} cannot be read as JSON: {first}") from None
    return validate(doc, now)


def read(path: str | os.PathLike[str]) -> Bundle:
    p = Path(path)
    if not p.exists():
        raise BundleError(f"bundle file {str(p)!r} does not exist")
    if not p.is_file():
        raise BundleError(f"bundle file {str(p)!r} is not a file")
    if p.stat().st_size > MAX_BUNDLE_BYTES:
        raise BundleError(f"bundle file {str(p)!r} is {p.stat().st_size / 1024 / 1024:.1f} "
                          f"MB: over the {MAX_BUNDLE_BYTES >> 20} MB limit for a bundle")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BundleError(f"cannot read bundle file {str(p)!r}: {e}") from None
    return loads(text, name=f"bundle file {str(p)!r}")


# A list of numbers (and nulls) only: written on one line. Samples and trace events
# one value per line would triple a traced bundle's size (a trace event is such a list).
_NUMBER_LIST = re.compile(r"\[(?:\s*(?:-?[\d.eE+-]+|null)\s*,)*\s*(?:-?[\d.eE+-]+|null)?\s*\]")
_SPACE = re.compile(r"\s+")


def dumps(doc: Mapping[str, Any]) -> str:
    text = json.dumps(doc, indent=1, sort_keys=False, allow_nan=False)
    return _NUMBER_LIST.sub(lambda m: _SPACE.sub("", m.group()), text) + "\n"


def check_writable(path: str | os.PathLike[str], flag: str = "--out", *,
                   stdout: bool = False) -> Path:
    """Fail early (before any measuring) when the bundle could not be written: the safe
    writer's checks and probe (contract/outfile.py). Returns the file to write (a
    symlink's target); `stdout`: `-` may name standard output, returned as Path("-")
    (written once the command keeps standard output for it: outfile.reserved_stdout)."""
    try:
        out = outfile.checked(path, flag, stdout=stdout)
    except outfile.OutputError as e:
        raise BundleError(str(e)) from None
    return out.path if out.path is not None else Path(outfile.STDOUT)


def write(path: str | os.PathLike[str], doc: Mapping[str, Any]) -> Path:
    """Write atomically: a reader never sees half a file, a crash leaves the old one.
    Checked as a read would check it, the schema's part where jsonschema is installed
    (a GPU host with torch alone writes typed records)."""
    return write_text(path, dumps(_checked(doc, None, schema_required=False)))


def write_text(path: str | os.PathLike[str], text: str, flag: str = "--out") -> Path:
    """Any file a command writes, through the safe writer (contract/outfile.py):
    atomically, through a symlink, never over a device, a FIFO or a directory."""
    try:  # `-`: standard output, only while a command keeps it for this (--out -)
        out = outfile.output(path, flag, stdout=outfile.stdout_reserved())
        out.write(text)
    except outfile.OutputError as e:
        raise BundleError(str(e)) from None
    return out.path if out.path is not None else Path(outfile.STDOUT)


if __name__ == "__main__":  # python -m contract.bundle > docs/bundle.schema.json
    import sys

    sys.stdout.write(bschema.dumps(bundle_schema()))
