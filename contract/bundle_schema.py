"""The result bundle's shape as a JSON Schema (issue 45, item 5), published as
docs/bundle.schema.json and checked by the `jsonschema` library where a bundle is read.

The schema is built here from the contract's own lists (the fields of each object, the
vocabularies, the limits), so a field or a word is stated once: the database's columns,
the records and the schema read the same names. `python -m contract.bundle` prints
it; tests/contract/test_bundle_schema.py holds docs/bundle.schema.json equal to it.

What the schema says is the shape: which objects and fields, their types, their words
(modes, statuses), their lengths and bounds. What it cannot say stays in Python
(contract/bundle.py validate): bounds over the whole document before any field is read
(check_plain: depth, size, characters, 64-bit integers, no NaN), a run's kind against its
sections, points given twice, a trace's own shape (contract/trace.py), the serve and
graph-memory sections' (their modules), and figures against each other
(contract/figure_rules.py).

Why jsonschema: the reference implementation of the standard (MIT, kept by the JSON
Schema organisation's members), already installed with Altair, and a published schema is
what any other tool can read a bundle against. It is imported inside check() only:
writing a bundle on a GPU host with torch alone needs no third-party package (the
writer's records are typed, so the shape is theirs by construction), while reading one
from elsewhere needs it (the `db` extra and requirements.txt install it).

A new bundle version that adds a field: the field in its record's list (e.g.
contract/measurement.py NUMBER_FIELDS, and INTEGER_FIELDS in contract/bundle.py when it
holds whole bytes), VERSION and SUPPORTED_VERSIONS in contract/bundle.py, then
`python -m contract.bundle > docs/bundle.schema.json`. Standard library only at
import.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from contract.limits import (
    ENVIRONMENT_TEXT_LIMITS,
    INT64_MAX,
    MAX_BATCH_SIZE,
    MAX_MESSAGE,
    MAX_POINTS,
    RUN_TEXT_LIMITS,
)
from contract.vocab import (
    CUDAGRAPH_STATUSES,
    DEVICES,
    MODES,
    POINT_STATUSES,
    RUN_KINDS,
    RUN_STATUSES,
    SOURCES,
    STOP_REASONS,
)

DIALECT = "https://json-schema.org/draft/2020-12/schema"
# One round's figure in samples_ms and launch_us_rounds: the lists that hold up to 100,000
# numbers each, which _validator checks in one loop (see there).
ROUND_ITEM = {"type": "number", "minimum": 0}


class SchemaError(ValueError):
    """A bundle that does not have the schema's shape. str() is one line naming the
    field."""


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`, or null."""
    out = dict(schema)
    t = out.get("type")
    if t is not None:
        out["type"] = [*([t] if isinstance(t, str) else t), "null"]
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


def _text(limit: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": limit}


def _words(values: Sequence[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def _environment(fields: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["device"],
        "properties": {
            **{f: _nullable(_text(ENVIRONMENT_TEXT_LIMITS[f]))
               for f in fields if f in ENVIRONMENT_TEXT_LIMITS},
            "device": _words(DEVICES),
            **{f: {"type": ["integer", "null"], "minimum": 0, "maximum": INT64_MAX}
               for f in ("gpu_count", "sm_count", "gpu_memory_bytes")},
        },
    }


def _run(fields: Sequence[str]) -> dict[str, Any]:
    named = {"type": "string", "minLength": 1, "pattern": r"\S"}  # not only blanks
    return {
        "type": "object",
        "required": ["uuid", "workload", "created_at", "status"],
        "properties": {
            **{f: _nullable(_text(RUN_TEXT_LIMITS[f])) for f in fields
               if f in RUN_TEXT_LIMITS},
            "uuid": {**named, "maxLength": RUN_TEXT_LIMITS["uuid"]},
            "workload": {**named, "maxLength": RUN_TEXT_LIMITS["workload"]},
            "workload_params": {"type": ["object", "null"]},
            "created_at": {**named, "description": "ISO 8601 date-time; no offset: UTC"},
            "finished_at": {"type": ["string", "null"],
                            "description": "ISO 8601 date-time; no offset: UTC"},
            "status": _words(RUN_STATUSES),
            "source": _nullable(_words(SOURCES)),
            "kind": {**_nullable(_words(RUN_KINDS)),
                     "description": "absent or null: a sweep (version 1)"},
        },
    }


def _figure(top: int | None, signed: bool) -> dict[str, Any]:
    """A measurement's figure: a number (a whole one up to `top` where the database
    holds it in an integer column), at least 0 unless `signed`, or null."""
    low = (-top - 1 if top else None) if signed else 0
    return {"type": ["integer" if top else "number", "null"],
            **({"minimum": low} if low is not None else {}),
            **({"maximum": top} if top else {})}


def _measurement(number_fields: Sequence[str], signed_fields: Sequence[str],
                 integer_fields: Mapping[str, int]) -> dict[str, Any]:
    rounds = {"type": ["array", "null"], "items": ROUND_ITEM}
    return {
        "type": "object",
        "required": ["mode", "batch_size", "status"],
        "properties": {
            "mode": _words(MODES),
            "batch_size": {"type": "integer", "minimum": 1, "maximum": MAX_BATCH_SIZE},
            "status": _words(POINT_STATUSES),
            "message": _nullable(_text(MAX_MESSAGE)),
            **{f: _figure(integer_fields.get(f), f in signed_fields) for f in number_fields},
            "cudagraph_status": _nullable(_words(CUDAGRAPH_STATUSES)),
            **{f: {"type": ["boolean", "null"]} for f in ("correct", "noisy",
                                                           "host_unstable")},
            "stop_reason": _nullable(_words(STOP_REASONS)),
            "energy_unavailable_reason": _nullable(_text(MAX_MESSAGE)),
            "samples_ms": rounds,
            "launch_us_rounds": rounds,
            "details": {"type": ["object", "null"],
                        "description": "free: keys the record declares "
                                       "(contract/measurement.py) and any others, kept"},
            "trace": {"type": ["object", "null"],
                      "description": "one profiled step (contract/trace.py)"},
        },
    }


def schema(version: int, supported: Sequence[int], fmt: str, *,
           environment_fields: Sequence[str], run_fields: Sequence[str],
           number_fields: Sequence[str], signed_fields: Sequence[str],
           integer_fields: Mapping[str, int]) -> dict[str, Any]:
    """The bundle's JSON Schema (draft 2020-12) for this launchbench, which reads the
    `supported` versions and writes `version` (contract/bundle.py fills the lists)."""
    return {
        "$schema": DIALECT,
        "$id": f"urn:launchbench:bundle:{version}",
        "title": f"launchbench result bundle, version {version}",
        "description": "One run as a JSON file (docs/ARCHITECTURE.md, \"The result "
                       "bundle\"). Generated by contract/bundle_schema.py; reads versions "
                       f"{', '.join(map(str, supported))}, each of which only adds "
                       "fields (absent or null in an older bundle).",
        "type": "object",
        "required": ["format", "version", "environment", "run", "measurements"],
        "properties": {
            "format": {"const": fmt},
            "version": {"type": "integer", "enum": list(supported)},
            "environment": {"$ref": "#/$defs/environment"},
            "run": {"$ref": "#/$defs/run"},
            "measurements": {"type": "array", "maxItems": MAX_POINTS,
                             "items": {"$ref": "#/$defs/measurement"}},
            "serve": {"type": "object",
                      "description": "a serve run's (contract/serve_record.py)"},
            "graph_memory": {"type": "object",
                             "description": "a graph-memory run's (contract/graph_memory.py)"},
        },
        "$defs": {"environment": _environment(environment_fields), "run": _run(run_fields),
                  "measurement": _measurement(number_fields, signed_fields,
                                              integer_fields)},
    }


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


# --- checking a bundle against it ------------------------------------------------------

_VALIDATORS: dict[int, Any] = {}


def available() -> bool:
    """Is the jsonschema package installed here (reading a bundle needs it)?"""
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        return False
    return True


def _validator(doc_schema: dict[str, Any]) -> Any:
    """A Draft 2020-12 validator whose "integer" is a whole number written as one (1.0
    is a number, not an integer: a database's integer column refuses it), cached.

    Its "items" checks a list against ROUND_ITEM in one loop, and hands jsonschema the
    first item that fails: the library's per-item descent took 24 s over a million
    samples (a bundle within its limits), the loop a tenth of a second. Same verdict,
    same error, same path; any other "items" is the library's own."""
    import jsonschema

    key = id(doc_schema)
    if key not in _VALIDATORS:
        base = jsonschema.Draft202012Validator
        checker = base.TYPE_CHECKER.redefine(
            "integer", lambda _, x: isinstance(x, int) and not isinstance(x, bool))
        library_items = base.VALIDATORS["items"]

        def items(validator: Any, subschema: Any, instance: Any, schema: Any) -> Any:
            if subschema != ROUND_ITEM or not isinstance(instance, list):
                yield from library_items(validator, subschema, instance, schema)
                return
            for i, x in enumerate(instance):
                if isinstance(x, bool) or not isinstance(x, (int, float)) or not x >= 0:
                    yield from validator.descend(x, subschema, path=i)
                    return

        cls = jsonschema.validators.extend(base, validators={"items": items},
                                           type_checker=checker)
        cls.check_schema(doc_schema)
        _VALIDATORS[key] = cls(doc_schema)
    return _VALIDATORS[key]


def check(doc: Any, doc_schema: dict[str, Any]) -> None:
    """SchemaError naming the first field of `doc` that does not fit `doc_schema`
    (document order, top level first); ImportError without jsonschema."""
    error = next(iter(_validator(doc_schema).iter_errors(doc)), None)
    if error is not None:
        raise SchemaError(error_text(error))


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 42 else text[:40] + "..."


def _where(path: Sequence[Any]) -> tuple[str, str]:
    """(the object, the field) a JSON path names, as the bundle's messages say them:
    ('measurement 3', 'stop_reason'), ('run', 'status'), ('bundle', 'version')."""
    parts = list(path)
    if parts[:1] == ["measurements"] and len(parts) > 1:
        head, rest = f"measurement {parts[1]}", parts[2:]
    elif parts and parts[0] in ("environment", "run", "serve", "graph_memory"):
        head, rest = str(parts[0]), parts[1:]
    else:
        head, rest = "bundle", parts
    field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in rest).lstrip(".")
    return head, field


def _types(t: Any) -> str:
    names = {"object": "an object", "array": "a list", "string": "text",
             "number": "a number", "integer": "a whole number", "boolean": "true or false",
             "null": "null"}
    ts = [t] if isinstance(t, str) else list(t)
    return " or ".join(names.get(x, x) for x in ts)


def error_text(error: Any) -> str:
    """One line for a jsonschema ValidationError: where, the value, what is wrong."""
    head, field = _where(error.absolute_path)
    value, kind, want = error.instance, error.validator, error.validator_value
    name = f"{head}.{field}" if field and head != "bundle" else (field or head)
    if head.startswith("measurement") and field:
        name = f"{head}: {field}"
    if field == "format" and head == "bundle":
        shown = _short(value)
        return f"wrong format {shown}: expected {want!r}"
    if field == "version" and head == "bundle":
        reads = ", ".join(map(str, error.schema.get("enum", [])))
        return f"unsupported bundle version {_short(value)}: this launchbench reads {reads}"
    if kind == "required":
        missing = next((r for r in want if r not in value), "?")
        where = f"{name}.{missing}" if name != "bundle" else f"bundle field {missing!r}"
        return f"{where} is missing"
    if kind == "type":
        if not field and head == "bundle":
            return (f"not a launchbench bundle: top level is {type(value).__name__}, "
                    "expected an object")
        return f"{name} {_short(value)} must be {_types(want)}"
    if kind == "enum":
        words = [w for w in want if w is not None]
        return (f"{name} {_short(value)} is not one of {', '.join(map(str, words))}"
                + (" or null" if None in want else ""))
    if kind == "const":
        return f"{name} {_short(value)}: expected {want!r}"
    if kind == "minimum":
        return (f"{name} {_short(value)} is negative" if want == 0 else
                f"{name} {_short(value)} is below {want}")
    if kind == "maximum":
        return f"{name} {_short(value)} is above {want}"
    if kind in ("minLength", "pattern"):
        return f"{name} {_short(value)} must be a non-empty string"
    if kind == "maxLength":
        return f"{name} {_short(value)} is longer than {want} characters"
    if kind == "maxItems":
        return f"{name} holds {len(value)} items, more than {want}"
    return f"{name}: {error.message[:120]}"
