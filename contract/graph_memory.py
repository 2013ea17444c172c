"""A graph-memory run: one graph captured per size, largest first, and what each added.

Pure and torch-free: runner/core/graph_memory.py measures the rows on a GPU; this module
states the document they travel in, checks it, and attributes the memory:

- the per-capture fixed part (workspaces: cuBLAS's is 32 MiB on Hopper) and the per-size
  part (activations) come from the private-pool series, where every capture pays both:
  the pool added by capture i is fixed + per_row x size_i, a least-squares line;
- what a further size costs in one shared pool (the engines' way) comes from the shared
  series: after the first capture, the growth of the device's used memory per graph (pool
  growth plus the graphs' own driver-side objects, which the allocator does not see).

What the H200 probe (bench/results/h200-capture-memory-*.json) showed, and why the
measurement clears cuBLAS workspaces around each capture as CUDA graph trees do: cuBLAS
keeps one workspace per (handle, stream); cleared before a capture it is re-made inside
that capture's pool, so private pools pay it per capture (34 MiB each for the mlp) while
a shared pool pays it once (34 MiB for 10 graphs); never cleared, each capture's side
stream gets a fresh workspace outside the pools (33 MiB more allocated per capture).
CUBLAS_WORKSPACE_CONFIG=:0:0 made the shared pool 2 MiB, replays as fast on that mlp.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypedDict, cast

from contract.capture_sizes import Curve
from contract.run_record import EnvironmentJson, RunJson

FORMAT = "launchbench.graph-memory"
VERSION = 1
POOLS = ("shared", "private")


class GraphMemoryError(ValueError):
    """A graph-memory document or request that cannot be used; str() is one line."""


@dataclass(frozen=True)
class Capture:
    """After capturing `batch_size` (sizes taken largest first), cumulative over the
    series: bytes reserved by the pools it created, bytes allocated since it began, bytes
    the driver reports used since it began."""

    batch_size: int
    capture_s: float
    pool_reserved_bytes: int
    allocated_bytes: int
    device_used_bytes: int


class CaptureJson(TypedDict):
    """A Capture as a document's or a section's series holds it (asdict, ROW_FIELDS)."""
    batch_size: int
    capture_s: float
    pool_reserved_bytes: int
    allocated_bytes: int
    device_used_bytes: int


class Attribution(TypedDict, total=False):
    """attribute()'s figures: the private series' where it was measured, the shared
    series' where it was, the capture times from either."""
    fixed_bytes_per_capture: int
    per_row_bytes: float
    private_total_bytes: int
    shared_first_bytes: int
    shared_total_bytes: int
    shared_per_graph_bytes: float
    shared_saves_bytes: int  # both measured: the private total less the shared
    first_capture_s: float
    capture_s: float  # the median of the later captures


class GraphMemorySection(TypedDict):
    """The bundle's "graph_memory" section (below): sizes largest first, each pool's
    captures, the attribution recomputed from them."""
    sizes: list[int]
    series: dict[str, list[CaptureJson]]
    attribution: Attribution


class GraphMemoryDoc(GraphMemorySection):
    """A launchbench.graph-memory document as read_doc returns it: the run's records,
    the section's fields, and the rows back as Capture under "rows"."""
    format: str
    version: int
    environment: EnvironmentJson
    run: RunJson
    rows: dict[str, list[Capture]]


def marginal_bytes(rows: Sequence[Capture]) -> list[int]:
    """What each capture added to the pools (the first: everything it made)."""
    out, prev = [], 0
    for r in rows:
        out.append(r.pool_reserved_bytes - prev)
        prev = r.pool_reserved_bytes
    return out


def _line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares intercept and slope; a flat line through the mean with one size."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - slope * mx, slope


def attribute(series: Mapping[str, Sequence[Capture]]) -> Attribution:
    """The fixed and per-size parts, and the shared pool's cost per further graph."""
    out: Attribution = {}
    private, shared = series.get("private"), series.get("shared")
    if private:
        d = marginal_bytes(private)
        fixed, per_row = _line([r.batch_size for r in private], d)
        out["fixed_bytes_per_capture"] = round(fixed)
        out["per_row_bytes"] = max(0.0, per_row)
        out["private_total_bytes"] = private[-1].pool_reserved_bytes
    if shared:
        first = shared[0]
        n = len(shared)
        per_graph = ((shared[-1].device_used_bytes - first.device_used_bytes) / (n - 1)
                     if n > 1 else 0.0)
        out["shared_first_bytes"] = first.pool_reserved_bytes
        out["shared_total_bytes"] = shared[-1].pool_reserved_bytes
        out["shared_per_graph_bytes"] = max(0.0, per_graph)
        if private:
            out["shared_saves_bytes"] = (private[-1].pool_reserved_bytes
                                         - shared[-1].pool_reserved_bytes)
    rows = shared or private or ()
    if rows:
        rest = [r.capture_s for r in rows[1:]]
        out["first_capture_s"] = rows[0].capture_s
        out["capture_s"] = statistics.median(rest) if rest else rows[0].capture_s
    return out


def curve(doc: GraphMemoryDoc, source: str) -> Curve:
    """The advisor's pricing curve from a graph-memory document."""
    a = doc.get("attribution") or {}
    if "fixed_bytes_per_capture" not in a and "shared_first_bytes" not in a:
        raise GraphMemoryError(f"{source}: no attribution (neither pool was measured)")
    per_row = float(a.get("per_row_bytes", 0.0))
    if "fixed_bytes_per_capture" in a:
        fixed = int(a["fixed_bytes_per_capture"])
    else:  # shared only: its first capture holds the fixed part and the largest's rows
        fixed = int(a["shared_first_bytes"] - per_row * max(doc["sizes"]))
    return Curve(fixed_bytes=max(0, fixed), per_row_bytes=per_row,
                 per_graph_bytes=round(a.get("shared_per_graph_bytes", fixed)),
                 first_capture_s=float(a.get("first_capture_s", 0.0)),
                 capture_s=float(a.get("capture_s", 0.0)),
                 source=f"{source} ({doc.get('environment', {}).get('gpu_name') or '?'}, "
                        f"{doc.get('run', {}).get('workload', '?')})")


def make_doc(environment: Mapping[str, Any], run: Mapping[str, Any], sizes: Sequence[int],
             series: Mapping[str, Sequence[Capture]]) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "environment": dict(environment),
            "run": dict(run), "sizes": list(sizes),
            "series": {k: [cast(CaptureJson, asdict(r)) for r in v]
                       for k, v in series.items()},
            "attribution": attribute(series)}


def read_doc(doc: object, source: str) -> GraphMemoryDoc:
    """Check a document read from JSON; rows back as Capture under doc['rows']."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise GraphMemoryError(f"{source}: not a {FORMAT} document")
    if doc.get("version") != VERSION:
        raise GraphMemoryError(f"{source}: version {doc.get('version')!r} is not "
                               f"{VERSION}")
    series = doc.get("series")
    if not isinstance(series, dict) or not series or set(series) - set(POOLS):
        raise GraphMemoryError(f"{source}: series must be some of {', '.join(POOLS)}")
    rows: dict[str, list[Capture]] = {}
    for k, v in series.items():
        try:
            rows[k] = [Capture(**r) for r in v]
        except TypeError as e:
            raise GraphMemoryError(f"{source}: a {k} row is malformed ({e})") from None
    return cast(GraphMemoryDoc, {**doc, "rows": rows})


def parse_sizes(text: str) -> list[int]:
    """'1,2,4,...,512' -> the sizes largest first (the engines' capture order)."""
    out = []
    for item in (text or "").split(","):
        t = item.strip()
        if not t.isdigit() or int(t) < 1:
            raise GraphMemoryError(f"--sizes: {t!r} is not a batch size (whole, >= 1)")
        out.append(int(t))
    if len(set(out)) != len(out):
        raise GraphMemoryError("--sizes: a size appears twice")
    return sorted(out, reverse=True)


def table_rows(doc: GraphMemoryDoc) -> list[dict[str, Any]]:
    """One row per (pool, capture): for the chart and the printed table."""
    out = []
    for pool, rows in doc["rows"].items():
        for i, (r, d) in enumerate(zip(rows, marginal_bytes(rows), strict=True), 1):
            out.append({"pool": pool, "graphs": i, "batch_size": r.batch_size,
                        "pool_mib": r.pool_reserved_bytes / 2**20, "marginal_mib": d / 2**20,
                        "device_mib": r.device_used_bytes / 2**20,
                        "capture_s": r.capture_s})
    return out


# --- the bundle's "graph_memory" section (a run of kind graph-memory) ------------------------
# A stored graph-memory run travels as a launchbench.run bundle whose run.kind is
# "graph-memory", with no measurements and this section: the sizes and the raw series. The
# attribution is derived, so it is recomputed from the rows wherever a section is read: an
# edited file cannot carry figures its rows do not give.

SECTION = "graph_memory"
ROW_FIELDS = tuple(Capture.__dataclass_fields__)
assert tuple(CaptureJson.__annotations__) == ROW_FIELDS  # the shape written out above
SIGNED_ROW_FIELDS = ("allocated_bytes", "device_used_bytes")  # deltas: frees can win
MAX_SIZES = 1024  # far above any engine's list (vLLM 67, SGLang 52 by default)
_INT64 = 2**63 - 1


def make_section(sizes: Sequence[int], series: Mapping[str, Sequence[Capture]]
                 ) -> GraphMemorySection:
    return {"sizes": sorted(sizes, reverse=True),
            "series": {k: [cast(CaptureJson, asdict(r)) for r in v]
                       for k, v in series.items()},
            "attribution": attribute(series)}


def _row(pool: str, i: int, r: object) -> Capture:
    where = f"graph_memory.series.{pool}[{i}]"
    if not isinstance(r, dict) or set(r) != set(ROW_FIELDS):
        raise GraphMemoryError(f"{where}: expected exactly the fields {', '.join(ROW_FIELDS)}")
    for f in ROW_FIELDS:
        v = r[f]
        if f == "capture_s":
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e9
        else:
            lo = -_INT64 if f in SIGNED_ROW_FIELDS else (1 if f == "batch_size" else 0)
            ok = isinstance(v, int) and not isinstance(v, bool) and lo <= v <= _INT64
        if not ok:
            raise GraphMemoryError(f"{where}: {f} {v!r} is out of range")
    return Capture(**r)


def section_rows(sec: object) -> tuple[list[int], dict[str, list[Capture]]]:
    """Check a section; (sizes largest first, rows per pool) or GraphMemoryError naming the
    value. Every series captured every size, largest first: a run that failed part-way
    writes nothing (runner/ops/commands/capture.py), so anything else was edited."""
    if not isinstance(sec, dict):
        raise GraphMemoryError("graph_memory section must be an object")
    sizes = sec.get("sizes")
    if (not isinstance(sizes, list) or not sizes or len(sizes) > MAX_SIZES
            or not all(isinstance(b, int) and not isinstance(b, bool) and 1 <= b <= 1 << 24
                       for b in sizes) or len(set(sizes)) != len(sizes)):
        raise GraphMemoryError(f"graph_memory.sizes {str(sizes)[:60]} must be 1 to "
                               f"{MAX_SIZES} distinct batch sizes")
    order = sorted(sizes, reverse=True)
    series = sec.get("series")
    if not isinstance(series, dict) or not series or set(series) - set(POOLS):
        raise GraphMemoryError(f"graph_memory.series must be some of {', '.join(POOLS)}")
    rows: dict[str, list[Capture]] = {}
    for pool in POOLS:
        if pool not in series:
            continue
        if not isinstance(series[pool], list):
            raise GraphMemoryError(f"graph_memory.series.{pool} must be a list")
        rows[pool] = [_row(pool, i, r) for i, r in enumerate(series[pool])]
        got = [r.batch_size for r in rows[pool]]
        if got != order:
            raise GraphMemoryError(f"graph_memory.series.{pool}: sizes {str(got)[:60]} are "
                                   f"not {str(order)[:60]} (every size, largest first)")
    return order, rows


def validate_section(sec: object) -> GraphMemorySection:
    """The section normalised: sizes largest first, rows as dicts, attribution recomputed."""
    sizes, rows = section_rows(sec)
    return make_section(sizes, rows)


def doc_from_bundle(bundle: Mapping[str, Any], source: str) -> GraphMemoryDoc:
    """A validated launchbench.run bundle of kind graph-memory as a read_doc() document,
    so curve() and table_rows() read a stored run and a file alike."""
    if bundle["run"].get("kind") != "graph-memory" or SECTION not in bundle:
        raise GraphMemoryError(f"{source} is a {bundle['run'].get('kind') or 'sweep'} run, "
                               "not a graph-memory run")
    sec = bundle[SECTION]
    return read_doc({"format": FORMAT, "version": VERSION,
                     "environment": bundle["environment"], "run": bundle["run"],
                     "sizes": sec["sizes"], "series": sec["series"],
                     "attribution": sec["attribution"]}, source)
