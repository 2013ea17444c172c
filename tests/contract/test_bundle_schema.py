"""The bundle's shape as a published JSON Schema, checked by the jsonschema library
(issue 45, item 5): docs/bundle.schema.json is the schema validate() uses; every shipped
sample and every fuzz case is judged as before or better (nothing refused then is
accepted now); the contract still writes a bundle without jsonschema; adding a version
with one more field is one entry in a list."""

from __future__ import annotations

import hashlib
import json
import random
import sys

import pytest

from contract import bundle as fmt
from contract import bundle_schema as bschema
from tests.conftest import ROOT
from tests.db.test_import_fuzz import SAMPLES, mutate
from tests.synthetic import sweep_bundle

PUBLISHED = ROOT / "docs" / "bundle.schema.json"
JUDGED = ROOT / "tests" / "data" / "bundle_judgments_582829d.json"


def test_the_published_schema_is_the_one_validate_uses():
    published = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    assert published == fmt.bundle_schema(), (
        "docs/bundle.schema.json is stale: python -m contract.bundle > "
        "docs/bundle.schema.json")
    assert published["$id"].endswith(f":{fmt.VERSION}")
    assert published["properties"]["version"]["enum"] == list(fmt.SUPPORTED_VERSIONS)


def test_the_schema_is_a_valid_draft_2020_12_schema_any_tool_can_read():
    import jsonschema

    published = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(published)
    for path in SAMPLES:  # the library as any other tool runs it, no launchbench code
        jsonschema.validate(json.loads(path.read_text()), published,
                            cls=jsonschema.Draft202012Validator)


def _judged_cases() -> list[dict]:
    return json.loads(JUDGED.read_text(encoding="utf-8"))["cases"]


def _judged_samples() -> list[str]:
    """The samples the judgments were recorded over (those shipped at 582829d), in the
    order the fuzz drew from: samples shipped since are judged apart."""
    return [c["sample"] for c in _judged_cases() if c["seed"] is None]


def _case_text(case: dict, originals: dict[str, dict]) -> str:
    if case["seed"] is None:
        return (ROOT / "data" / "samples" / case["sample"]).read_text(encoding="utf-8")
    rng = random.Random(case["seed"])
    names = _judged_samples()
    src = rng.randrange(len(names))
    assert names[src] == case["sample"], "the samples changed: remake the judgments"
    text = mutate(rng, json.loads(json.dumps(originals[names[src]])))
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    assert digest == case["sha256"], "the fuzz mutations changed: remake the judgments"
    return text


def test_every_sample_and_fuzz_case_is_judged_as_before_or_better():
    originals = {p.name: json.loads(p.read_text()) for p in SAMPLES}
    looser, stricter = [], []
    for case in _judged_cases():
        text = _case_text(case, originals)
        try:
            fmt.loads(text, name="case.json")
            accepted, said = True, ""
        except fmt.BundleError as e:
            accepted, said = False, str(e)
            assert "\n" not in said and len(said) < 400, said  # one line, naming it
        if accepted and not case["accepted"]:
            looser.append(case)
        if case["accepted"] and not accepted:
            stricter.append((case["seed"], said))
    assert looser == []  # nothing refused before is accepted now
    samples = [c for c in _judged_cases() if c["seed"] is None]
    assert all(c["accepted"] for c in samples)
    # Every sample shipped since the judgments were recorded is accepted too.
    later = [p for p in SAMPLES if p.name not in set(_judged_samples())]
    for path in later:
        fmt.loads(path.read_text(encoding="utf-8"), name=path.name)
    # What is refused now that was taken before is refused for a reason the issues name:
    # figures that contradict each other or physical sense, or a shape the old hand
    # checks let through (a falsy non-list for a list).
    reasons = ("lies above", "lies below", "is above", "over an hour", "beyond any figure",
               "before 2000", "in the future", "is before run.created_at",
               "more than the GPU's memory", "must be", "is not one of")
    assert all(any(r in said for r in reasons) for _, said in stricter), stricter


@pytest.mark.parametrize("mutate_doc, expected", [
    (lambda d: d["measurements"][0].update(samples=8.0),
     "measurement 0: samples 8.0 must be a whole number or null"),
    (lambda d: d["measurements"][0].update(batch_size=True),
     "measurement 0: batch_size True must be a whole number"),
    (lambda d: d["measurements"][0].pop("status"), "measurement 0.status is missing"),
    (lambda d: d["run"].update(uuid="   "), "run.uuid '   ' must be a non-empty string"),
    (lambda d: d["environment"].update(gpu_count=-1), "environment.gpu_count -1 is negative"),
    (lambda d: d["measurements"][0].update(samples_ms=[1.0, True]),
     "measurement 0: samples_ms[1] True must be a number"),
    (lambda d: d.update(measurements=[{}] * 1025), "measurements holds 1025 items, more"),
])
def test_a_shape_the_schema_refuses_is_one_line_naming_the_field(mutate_doc, expected):
    doc = sweep_bundle(batches=(8,), modes=("eager",))
    mutate_doc(doc)
    with pytest.raises(fmt.BundleError) as e:
        fmt.validate(doc)
    assert str(e.value) == expected or str(e.value).startswith(expected), str(e.value)


@pytest.mark.parametrize("bad", [None, -1e-9, "x", True, [1.0], {}])
@pytest.mark.parametrize("at", [0, 7, 99_999])
def test_the_round_lists_loop_judges_as_the_library_does(bad, at):
    """samples_ms and launch_us_rounds are checked in one loop (the library's per-item
    descent took 24 s over a million samples): the same verdict, message and path as
    the stock validator's on the published schema."""
    import jsonschema

    doc = sweep_bundle(batches=(8,), modes=("eager",))
    rounds = [1.0] * 100_000
    rounds[at] = bad
    doc["measurements"][0]["launch_us_rounds"] = rounds
    stock = jsonschema.Draft202012Validator(fmt.bundle_schema())
    want = next(stock.iter_errors(doc))
    with pytest.raises(bschema.SchemaError) as e:
        bschema.check(doc, fmt.bundle_schema())
    assert str(e.value) == bschema.error_text(want)
    assert f"launch_us_rounds[{at}]" in str(e.value)
    doc["measurements"][0]["launch_us_rounds"] = [0, 1, 2.5, 1e9]
    bschema.check(doc, fmt.bundle_schema())
    assert not list(stock.iter_errors(doc))


def test_the_contract_writes_a_bundle_without_jsonschema_and_reading_says_what_is_missing(
        tmp_path, monkeypatch):
    """A GPU host with torch alone writes its bundle (the contract imports nothing
    third-party for it); reading one there says, in one line, what it needs."""
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import jsonschema fails
    assert not bschema.available()
    path = fmt.write(tmp_path / "run.json", sweep_bundle(batches=(8,)))
    m = json.loads(path.read_text())["measurements"][0]
    fmt.check_measurement(m)  # a writer's point, stored without the schema
    with pytest.raises(fmt.BundleError, match="needs the jsonschema package"):
        fmt.read(path)
    monkeypatch.delitem(sys.modules, "jsonschema")
    assert fmt.read(path)["measurements"]


def test_a_new_version_with_one_more_field_is_one_entry():
    """A next bundle version (here a made-up 8 with one more figure, whole bytes or null,
    as version 7 added memory_cost_bytes) is VERSION, SUPPORTED_VERSIONS and the field in
    its lists: the schema follows."""
    nxt = fmt.VERSION + 1
    v8 = bschema.schema(nxt, (*fmt.SUPPORTED_VERSIONS, nxt), fmt.FORMAT,
                        environment_fields=fmt.ENVIRONMENT_FIELDS,
                        run_fields=fmt.RUN_FIELDS,
                        number_fields=(*fmt.NUMBER_FIELDS, "example_bytes"),
                        signed_fields=fmt.SIGNED_FIELDS,
                        integer_fields={**fmt.INTEGER_FIELDS,
                                        "example_bytes": fmt.INT64_MAX})
    doc = sweep_bundle(batches=(8,), modes=("eager",))
    doc["version"] = nxt
    doc["measurements"][0]["example_bytes"] = 1 << 30
    bschema.check(doc, v8)
    doc["measurements"][0]["example_bytes"] = 1.5
    with pytest.raises(bschema.SchemaError, match="example_bytes 1.5 must be a whole"):
        bschema.check(doc, v8)
    doc["measurements"][0]["example_bytes"] = 1 << 30
    with pytest.raises(bschema.SchemaError, match=f"unsupported bundle version {nxt}"):
        bschema.check(doc, fmt.bundle_schema())
