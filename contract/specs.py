"""What to measure, as data: SweepSpec and ServeSpec, and the one function that checks
each.

A spec is checked once, where it enters: the CLI (runner/ops/commands/sweep.py, and
`enqueue`), the Launch form (pages/logic/launch_form.py), a job row a worker claims
(db/jobs.py check_spec); from there it travels as a SweepSpec, serialised one way
(to_json) for the queue and for child processes, and its command line is written by one
function (sweep_command). What the check needs from the machine (a CUDA device, importing
a user factory) is the measuring core's (runner/core/sweep.py validate_spec, prepare).
The serve CLI (runner/ops/commands/serve.py) builds a ServeSpec with check_serve().
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from contract.buckets import (
    Distribution,
    ServeInputError,
    Strategy,
    parse_distribution,
    parse_strategies,
)
from contract.catalog import WorkloadError, check_workload
from contract.limits import (
    DEFAULT_GPU_MEMORY_BYTES,
    MAX_BATCH_SIZE,
    MAX_BATCH_SIZES,
    MAX_LABEL,
    MAX_PROCESSES,
    MAX_REQUESTS,
    MAX_SEED,
    MEMORY_HEADROOM,
)
from contract.model_catalog import hf_bytes
from contract.vocab import DEFAULT_PROCESSES, JOB_DEVICES, MODE_TABLE, MODES, TIMINGS

ELLIPSIS = ("...", "\u2026")
_DEVICE = re.compile(r"cpu|cuda(:[0-9]+)?\Z")


class SpecError(WorkloadError):
    """A bad sweep spec, one line naming the value. A WorkloadError, so every front end
    that reports bad workload input as one line reports this the same way. `field` says
    which part of the spec it is about (a form shows it beside that field)."""

    def __init__(self, message: str, field: str = "spec"):
        super().__init__(message)
        self.field = field


class _QueuedSpecJson(TypedDict):
    workload: str
    params: dict[str, str]
    batch_sizes: list[int]
    modes: list[str]
    device: str
    timing: str
    label: str | None
    energy: bool


class SweepSpecJson(_QueuedSpecJson, total=False):
    """A SweepSpec as SweepSpec.to_json writes it: its fields, processes left out of a
    queued job's (the job runs in its worker's one process)."""
    processes: int


@dataclass(frozen=True)
class SweepSpec:
    workload: str
    params: dict[str, str] = field(default_factory=dict)
    batch_sizes: tuple[int, ...] = (1,)
    modes: tuple[str, ...] = ("eager",)
    device: str = "cpu"  # cpu, cuda, cuda:N; "auto" in a queued job (the worker's choice)
    timing: str = "standard"
    label: str | None = None
    # Fresh processes the timed phase of each batch size runs in, rounds pooled
    # (runner/core/repeat.py). Front ends default to DEFAULT_PROCESSES[timing].
    processes: int = 1
    # Energy windows after each batch size's rounds (issue 28; runner/core/energy.py);
    # False: none run (`--no-energy`), and every point says so instead of a figure.
    energy: bool = True

    def to_json(self, *, queued: bool = False) -> SweepSpecJson:
        """The spec as JSON data: the one form it travels in, to the queue (a job row's
        spec) and to the child processes of runner/core/repeat.py and rescue.py. A queued
        job leaves processes out: it runs in its worker's one process."""
        doc: SweepSpecJson = {
            "workload": self.workload, "params": dict(self.params),
            "batch_sizes": list(self.batch_sizes), "modes": list(self.modes),
            "device": self.device, "timing": self.timing, "label": self.label,
            "processes": self.processes, "energy": self.energy}
        if queued:
            del doc["processes"]
        return doc

    @classmethod
    def from_json(cls, doc: SweepSpecJson) -> SweepSpec:
        """Back from to_json, unchecked: for a child process handed a spec its parent
        checked. Anything from outside goes through check_sweep."""
        return cls(workload=doc["workload"], params=dict(doc["params"]),
                   batch_sizes=tuple(doc["batch_sizes"]), modes=tuple(doc["modes"]),
                   device=doc["device"], timing=doc["timing"], label=doc.get("label"),
                   processes=int(doc.get("processes", 1)),
                   energy=bool(doc.get("energy", True)))

    def command(self) -> str:
        """The CLI line that measures the same thing again (destinations left out: they
        say where results went, not what was measured)."""
        return sweep_command(self.workload, self.params, self.batch_sizes, self.modes,
                             device=self.device, timing=self.timing,
                             processes=self.processes, label=self.label,
                             energy=self.energy)


def sweep_command(workload: str, params: Mapping[str, Any], batch_sizes: Iterable[int],
                  modes: Iterable[str], *, device: str | None = None,
                  timing: str | None = None, processes: int = 1,
                  label: str | None = None, energy: bool = True) -> str:
    """`python -m runner sweep ...` for these values, every one quoted (shlex); a flag
    whose value is None (or processes 1) is left out, so the command's own default holds.
    The one writer of a sweep's command line: the CLI and worker record it in each run,
    the run page offers it for a run that carries none."""
    parts = ["python", "-m", "runner", "sweep", "--workload", workload]
    for key, value in params.items():
        parts += ["--param", f"{key}={value}"]
    parts += ["--batch-sizes", ",".join(map(str, batch_sizes)), "--modes", ",".join(modes)]
    for flag, value in (("--device", device), ("--timing", timing),
                        ("--processes", str(processes) if processes > 1 else None),
                        ("--label", label or None)):
        if value is not None:
            parts += [flag, value]
    if not energy:
        parts.append("--no-energy")
    return shlex.join(parts)


# --- text to values: each error names the value ------------------------------------------

def _batch_size(text: str) -> int:
    # [0-9], not \d: int() reads "２" (full-width) as 2, URLs refuse it; one rule, ASCII.
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise SpecError(f"{text!r} is not a whole number (digits 0-9)", "batch_sizes")
    n = int(text)
    if not 1 <= n <= MAX_BATCH_SIZE:
        raise SpecError(f"{n} is out of range (1 to {MAX_BATCH_SIZE})", "batch_sizes")
    return n


def _fill(before: list[int], end: int) -> list[int]:
    """The sizes strictly between before[-1] and end, continuing the series that the
    last three sizes before `...` set: constant ratio (1,2,4) or constant step (8,16,24)."""
    if len(before) < 3:
        raise SpecError("'...' needs three sizes before it (e.g. 1,2,4,...,8192)",
                        "batch_sizes")
    a, b, c = before[-3:]
    nxt: Callable[[int], int]
    if a * c == b * b and b % a == 0 and b // a >= 2:
        nxt = lambda x: x * (b // a)
    elif b - a == c - b and b > a:
        nxt = lambda x: x + (b - a)
    else:
        raise SpecError(f"{a},{b},{c},... is neither a doubling-like nor an evenly spaced "
                        "series", "batch_sizes")
    out: list[int] = []
    x = nxt(c)
    while x < end:
        out.append(x)
        x = nxt(x)
        if len(out) > MAX_BATCH_SIZES:
            raise SpecError(f"{a},{b},{c},...,{end} is more than {MAX_BATCH_SIZES} sizes",
                            "batch_sizes")
    if x != end:
        raise SpecError(f"the series {a},{b},{c},... does not reach {end}", "batch_sizes")
    return out


def parse_batch_sizes(text: str) -> tuple[int, ...]:
    """'1,8,64' or '1,2,4,...,8192' to sizes; SpecError names the bad one."""
    items = [s.strip() for s in text.split(",")]
    sizes: list[int] = []
    for i, item in enumerate(items):
        if item in ELLIPSIS:
            if i + 1 >= len(items) or items[i + 1] in ELLIPSIS:
                raise SpecError("'...' needs a last size after it", "batch_sizes")
            sizes.extend(_fill(sizes, _batch_size(items[i + 1])))
        else:
            sizes.append(_batch_size(item))
    seen: set[int] = set()
    for n in sizes:
        if n in seen:
            raise SpecError(f"{n} appears twice", "batch_sizes")
        seen.add(n)
    if len(sizes) > MAX_BATCH_SIZES:
        raise SpecError(f"{len(sizes)} sizes is too many (at most {MAX_BATCH_SIZES})",
                        "batch_sizes")
    return tuple(sizes)


def check_text(value: Any, what: str) -> str | None:
    """One line of at most MAX_LABEL characters (a label, a worker target), or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise SpecError(f"{what} {value!r} must be text", what)
    text = value.strip()
    if len(text) > MAX_LABEL:
        raise SpecError(f"{what} {text[:40]!r}... is {len(text)} characters long (at most "
                        f"{MAX_LABEL})", what)
    if any(ord(c) < 32 for c in text):
        raise SpecError(f"{what} {text!r} contains a control character", what)
    return text or None


# --- the one check ------------------------------------------------------------------------

def _distinct(values: Any, what: str, ok: Callable[[Any], bool],
              bad: Callable[[Any], str]) -> tuple[Any, ...]:
    if not isinstance(values, (list, tuple)) or not values:
        raise SpecError(f"no {what} given: expected a non-empty list {values!r}",
                        what.replace(" ", "_"))
    for i, v in enumerate(values):
        if not ok(v):
            raise SpecError(bad(v), what.replace(" ", "_"))
        if v in values[:i]:
            raise SpecError(f"{what.rstrip('s')} {v!r} is given twice", what.replace(" ", "_"))
    return tuple(values)


def _workload(raw: Mapping[str, Any], allow_import: bool) -> tuple[str, dict[str, str]]:
    """The spec's workload name and parameters, checked (sweep and serve alike)."""
    params = raw.get("params") or {}
    if not isinstance(params, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in params.items()):
        raise SpecError(f"workload params {params!r} must map names to text values", "params")
    name = raw.get("workload")
    if not isinstance(name, str):
        raise SpecError(f"workload {name!r} must be a registered workload name", "workload")
    name, _ = check_workload(name, params, allow_import=allow_import)
    return name, params


def check_sweep(spec: SweepSpec | Mapping[str, Any], *, allow_import: bool = True,
                queued: bool = False) -> SweepSpec:
    """Check a sweep spec (a SweepSpec or the same fields as a dict) and return it
    normalised, or raise SpecError / WorkloadError naming the bad value. `queued`: a job
    for whichever worker claims it, so device "auto" is allowed and a user factory is not
    (allow_import is then False)."""
    raw = dict(spec) if isinstance(spec, Mapping) else spec.__dict__
    name, params = _workload(raw, allow_import and not queued)
    sizes = _distinct(raw.get("batch_sizes"), "batch sizes",
                      lambda b: isinstance(b, int) and not isinstance(b, bool)
                      and 1 <= b <= MAX_BATCH_SIZE,
                      lambda v: f"batch size {v!r} must be an integer from 1 to "
                                f"{MAX_BATCH_SIZE}")
    modes = _distinct(raw.get("modes"), "modes", lambda m: m in MODES,
                      lambda v: f"unknown mode {v!r} (known: {', '.join(MODES)})")
    timing = raw.get("timing") or "standard"
    if timing not in TIMINGS:
        raise SpecError(f"unknown timing preset {timing!r} (known: {', '.join(TIMINGS)})",
                        "timing")
    device = raw.get("device") or ("auto" if queued else "cpu")
    if not (_DEVICE.match(str(device)) or (queued and device in JOB_DEVICES)):
        use = ", ".join(JOB_DEVICES) if queued else "cuda, cuda:N or cpu"
        raise SpecError(f"unknown device {device!r} (use {use})", "device")
    p = raw.get("processes")
    p = DEFAULT_PROCESSES[timing] if p is None else p
    if not isinstance(p, int) or isinstance(p, bool) or not 1 <= p <= MAX_PROCESSES:
        raise SpecError(f"processes {p!r} must be an integer from 1 to {MAX_PROCESSES}",
                        "processes")
    energy = raw.get("energy", True)
    if not isinstance(energy, bool):
        raise SpecError(f"energy {energy!r} must be true or false", "energy")
    return SweepSpec(workload=name, params=dict(params), batch_sizes=sizes, modes=modes,
                     device=device, timing=timing, label=check_text(raw.get("label"), "label"),
                     processes=p, energy=energy)


# --- cost: what a sweep asks of the machine, before it is queued ---------------------------
# An estimate from the model's shapes alone (no torch, nothing measured): the parameters,
# the KV cache and the activations a CUDA graph's pool can keep alive, at the largest
# batch size, in the workload's dtype. It errs high (every intermediate of a graph mode
# counted as kept), since its one use is to refuse what cannot fit, not to predict.

DTYPE_BYTES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class Cost:
    points: int  # modes x batch sizes
    memory_bytes: int | None  # estimated peak; None: no model of this workload's memory

    def refusal(self, available: int | None = None) -> str | None:
        """Why this cannot run on a device of `available` bytes (unknown: the default
        GPU's), as one line; None when it fits."""
        if self.memory_bytes is None:
            return None
        total = DEFAULT_GPU_MEMORY_BYTES if available is None else available
        allowed = int(total * MEMORY_HEADROOM)
        if self.memory_bytes <= allowed:
            return None
        return (f"needs about {gib(self.memory_bytes)} of device memory at its largest "
                f"batch size, more than the {gib(allowed)} allowed "
                f"({MEMORY_HEADROOM:.0%} of {gib(total)}): use fewer or smaller layers or "
                "batch sizes")


def gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**27 else f"{n / 2**20:,.1f} MiB"


def _mlp_bytes(p: Mapping[str, Any], batch: int, graphs: bool) -> int:
    w, depth, s = p["width"], p["depth"], DTYPE_BYTES[p["dtype"]]
    weights = depth * (w * w + w) * s
    # A graph's pool keeps each Linear's and ReLU's output; eager keeps two at a time.
    # Plus the float32 input on its way to the device and the eager reference output.
    live = (2 * depth + 2) if graphs else 4
    return int(weights + (live + 1) * batch * w * s + batch * w * 4)


def _decoder_bytes(p: Mapping[str, Any], batch: int, graphs: bool) -> int:
    layers, d, heads = p["layers"], p["d_model"], p["heads"]
    kv, vocab, s = p["kv_len"], p["vocab"], DTYPE_BYTES[p["dtype"]]
    weights = (2 * vocab * d + layers * (12 * d * d + 13 * d) + 2 * d) * s
    cache = layers * 2 * batch * kv * d * s + batch * kv * d * 4  # + one float32 draw
    # Per layer: attention scores (float32 softmax and a copy in dtype) and the MLP's
    # 4x-wide intermediates; a graph keeps every layer's, eager one layer's at a time.
    per_layer = batch * heads * (kv + 1) * (8 + s) + batch * d * 12 * s
    logits = 2 * batch * vocab * s  # the output and the eager reference
    return int(weights + cache + (layers if graphs else 2) * per_layer + logits)


def _train_bytes(p: Mapping[str, Any], batch: int, graphs: bool) -> int:
    w, s = p["width"], DTYPE_BYTES[p["dtype"]]
    if p["model"] == "transformer":
        tokens, heads = batch * p["seq"], p["heads"]
        weights = p["blocks"] * (12 * w * w + 13 * w) * s
        # Kept for backward per block: the 4x-wide MLP intermediates, q/k/v and the
        # float32 attention scores and their softmax.
        acts = p["blocks"] * (tokens * w * 16 * s + batch * heads * p["seq"] ** 2 * 8)
        io = tokens * w * s
    else:
        weights = p["depth"] * (w * w + w) * s
        acts = (2 * p["depth"] + 2) * batch * w * s  # every layer's output, for backward
        io = batch * w * s
    # Weights, grads and AdamW's two states; the eager reference run keeps its own copy;
    # a graph's pool holds a second set of activations and grads beside the live ones.
    return int(2 * 4 * weights + (2 if graphs else 1) * (acts + weights) + 4 * io)


def _chain_bytes(p: Mapping[str, Any], batch: int, graphs: bool) -> int:
    # The input, the tensor the chain works on in place, the eager reference and a graph's
    # static copy.
    return 4 * batch * DTYPE_BYTES[p["dtype"]]


# A workload's estimated peak bytes at a batch size, with or without graphs (None: the
# model cannot say).
_MEMORY_MODELS: dict[str, Callable[[Mapping[str, Any], int, bool], int | None]] = {
    "mlp": _mlp_bytes, "transformer-decode": _decoder_bytes, "train-step": _train_bytes,
    "kernel-chain": _chain_bytes,
    "hf-causal-lm": lambda p, b, g: hf_bytes(p, b, g, DTYPE_BYTES[p["dtype"]])}


def estimate_cost(workload: str, params: Mapping[str, str], batch_sizes: tuple[int, ...]
                  | list[int], modes: tuple[str, ...] | list[str]) -> Cost:
    """Points and estimated peak memory of a sweep of a registered workload. The peak
    is the largest batch size's: each point's graphs and compiled code are dropped
    before the next point (runner/core/point.py reset_state)."""
    name, typed = check_workload(workload, dict(params), allow_import=False)
    points = len(batch_sizes) * len(modes)
    model = _MEMORY_MODELS.get(name)
    if model is None or not batch_sizes or not modes:
        return Cost(points, None)
    graphs = any(MODE_TABLE[m].graph or MODE_TABLE[m].compiled for m in modes)
    return Cost(points, model(typed, max(batch_sizes), graphs))


# --- serve: one stream of requests under each strategy -----------------------------------

@dataclass(frozen=True)
class ServeSpec:
    workload: str
    strategies: tuple[Strategy, ...]
    dist: Distribution
    params: dict[str, str] = field(default_factory=dict)
    requests: int = 500
    seed: int = 0
    label: str | None = None


def _whole(value: Any, what: str, lo: int, hi: int) -> int:
    """A whole number from text (' 12 ') or an int; SpecError(field=what) names the value,
    not the field (a front end puts its own name for the field in front)."""
    if isinstance(value, str):
        if not re.fullmatch(r"\s*[0-9]+\s*", value):
            raise SpecError(f"{value!r} is not a whole number", what)
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise SpecError(f"{value!r} is not a whole number", what)
    if not lo <= value <= hi:
        raise SpecError(f"{value} is out of range ({lo} to {hi})", what)
    return value


def _serve_input(parse: Callable[..., Any], what: str, *args: Any, **kwargs: Any) -> Any:
    try:
        return parse(*args, **kwargs)
    except ServeInputError as e:
        raise SpecError(str(e), what) from None


def check_serve(spec: ServeSpec | Mapping[str, Any], *, allow_files: bool = True,
                allow_import: bool = True) -> ServeSpec:
    """Check a serve spec (a ServeSpec, or a dict whose strategies, batch_dist, requests
    and seed may still be text) and return it parsed, or raise SpecError / WorkloadError
    naming the bad value. Checked in the order the CLI has always reported: strategies,
    distribution, requests, seed, label, workload. allow_files=False where the text comes
    from a browser: a page never reads paths."""
    raw = dict(spec) if isinstance(spec, Mapping) else dict(spec.__dict__)
    strategies = raw.get("strategies")
    if not (isinstance(strategies, tuple) and all(isinstance(s, Strategy) for s in strategies)):
        text = strategies if isinstance(strategies, str) else ",".join(strategies or ())
        strategies = _serve_input(parse_strategies, "strategies", text)
    dist = raw.get("dist", raw.get("batch_dist"))
    if not isinstance(dist, Distribution):
        dist = _serve_input(parse_distribution, "batch_dist", dist, allow_files=allow_files)
    requests = _whole(raw.get("requests", 500), "requests", 1, MAX_REQUESTS)
    seed = _whole(raw.get("seed", 0), "seed", 0, MAX_SEED)
    label = check_text(raw.get("label"), "label")
    name, params = _workload(raw, allow_import)
    return ServeSpec(workload=name, strategies=strategies, dist=dist, params=dict(params),
                     requests=requests, seed=seed, label=label)
