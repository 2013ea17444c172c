"""Dynamic batch sizes: strategies, request streams, bucket choice, padding, the advisor.

Pure and torch-free: the serve runner, the database layer and the dashboard all use it.

Serving engines capture CUDA graphs for a fixed set of bucket sizes, pad each request up
to the smallest bucket that holds it and run eager above the largest (docs/MEASUREMENT.md,
"Dynamic batch sizes"). Two ways to state what padding costs, both kept because both are
quoted: `padding_waste` = padded rows / real rows - 1 (extra compute per useful row: batch
11 padded to 16 is 45% more rows) and `wasted_fraction` = pad rows / padded rows (the share
of the compute thrown away: 5 of 16 rows = 31%).
"""

from __future__ import annotations

import bisect
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from contract.limits import (
    MAX_BATCH_SIZE,
    MAX_BUCKETS,
    MAX_REQUESTS,
    MAX_SIZES_FILE_BYTES,
)
from contract.numbers import percentile

_INT = re.compile(r"[0-9]+\Z")  # ASCII digits only, as in URLs


class ServeInputError(ValueError):
    """A strategy, distribution or sizes file that cannot be used; str() is one line."""


# --- strategies --------------------------------------------------------------------------

@dataclass(frozen=True)
class Strategy:
    name: str  # as given and stored, e.g. "buckets:8/16/32" or "buckets:pow2-256"
    kind: str  # one of STRATEGY_KINDS
    buckets: tuple[int, ...] = ()  # ascending; empty unless kind == "buckets"


def _int_in_range(text: str, what: str, lo: int = 1, hi: int = MAX_BATCH_SIZE) -> int:
    t = text.strip()
    if not _INT.match(t):
        raise ServeInputError(f"{what}: {text!r} is not a whole number")
    n = int(t)
    if not lo <= n <= hi:
        raise ServeInputError(f"{what}: {n} is out of range ({lo} to {hi})")
    return n


def parse_buckets(text: str, where: str = "buckets") -> tuple[int, ...]:
    """'8/16/32' or 'pow2-256' (1, 2, 4, ..., 256) to ascending bucket sizes."""
    t = text.strip()
    if not t:
        raise ServeInputError(f"{where}: empty bucket list (e.g. buckets:8/16/32)")
    if t.startswith("pow2-"):
        top = _int_in_range(t[5:], f"{where} {t!r}")
        if top & (top - 1):
            raise ServeInputError(f"{where} {t!r}: {top} is not a power of two")
        return tuple(1 << i for i in range(top.bit_length()))
    parts = t.split("/")
    sizes = []
    for p in parts:
        if not p.strip():
            raise ServeInputError(f"{where} {t!r}: an empty bucket between '/'")
        sizes.append(_int_in_range(p, f"{where} {t!r}: bucket"))
    for a, b in zip(sizes, sizes[1:], strict=False):
        if b == a:
            raise ServeInputError(f"{where} {t!r}: bucket {a} appears twice")
        if b < a:
            raise ServeInputError(f"{where} {t!r}: buckets must be in ascending order "
                                  f"({a} before {b})")
    if len(sizes) > MAX_BUCKETS:
        raise ServeInputError(f"{where} {t!r}: {len(sizes)} buckets is too many (at most "
                              f"{MAX_BUCKETS})")
    return tuple(sizes)


def parse_strategy(text: str) -> Strategy:
    t = text.strip()
    if t in ("eager", "compile", "reduce-overhead"):
        return Strategy(t, t)
    if t.startswith("buckets:"):
        return Strategy(t, "buckets", parse_buckets(t[len("buckets:"):], f"strategy {t!r}"))
    if t == "buckets":
        raise ServeInputError("strategy 'buckets' needs sizes: buckets:8/16/32 or "
                              "buckets:pow2-256")
    raise ServeInputError(f"unknown strategy {t!r} (known: eager, compile, reduce-overhead, "
                          "buckets:8/16/32, buckets:pow2-N)")


def parse_strategies(text: str) -> tuple[Strategy, ...]:
    """Comma-separated strategies; bucket lists use '/' so the commas stay unambiguous."""
    items = [s for s in (text or "").split(",")]
    if not any(s.strip() for s in items):
        raise ServeInputError("no strategy given (e.g. eager,buckets:8/16/32)")
    out: list[Strategy] = []
    for item in items:
        if not item.strip():
            raise ServeInputError(f"strategies {text!r}: an empty item between commas")
        s = parse_strategy(item)
        if any(o.name == s.name for o in out):
            raise ServeInputError(f"strategy {s.name!r} appears twice")
        out.append(s)
    return tuple(out)


# --- batch-size distributions and the request stream -------------------------------------

@dataclass(frozen=True)
class Distribution:
    spec: str  # as given, e.g. "uniform:1-64"
    kind: str  # uniform | list | file
    low: int = 0
    high: int = 0
    values: tuple[int, ...] = ()  # list/file: drawn from with equal chance (repeats weigh)

    def draw(self, rng: random.Random) -> int:
        if self.kind == "uniform":
            return rng.randint(self.low, self.high)
        return self.values[rng.randrange(len(self.values))]

    def pmf(self) -> dict[int, float]:
        """Probability of each batch size."""
        if self.kind == "uniform":
            n = self.high - self.low + 1
            return {b: 1.0 / n for b in range(self.low, self.high + 1)}
        counts = Counter(self.values)
        return {b: c / len(self.values) for b, c in sorted(counts.items())}

    @property
    def max_size(self) -> int:
        return self.high if self.kind == "uniform" else max(self.values)


def parse_sizes_text(text: str, where: str) -> tuple[int, ...]:
    """Batch sizes one per line; blank lines and '#' comments skipped, anything else is junk."""
    sizes = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.split("#", 1)[0].strip()
        if not s:
            continue
        if not _INT.match(s):
            raise ServeInputError(f"{where} line {n}: {s[:40]!r} is not a batch size")
        sizes.append(_int_in_range(s, f"{where} line {n}"))
    if not sizes:
        raise ServeInputError(f"{where} holds no batch sizes")
    return tuple(sizes)


def read_input_file(path: str, where: str, max_bytes: int, error: type[ValueError],
                    errors: str = "strict") -> str:
    """The text of a file a person named (a sizes file, a serving log): one `error` line
    naming it when it is missing, not a file, too large or unreadable."""
    p = Path(path)
    if not p.exists():
        raise error(f"{where} does not exist")
    if not p.is_file():
        raise error(f"{where} is not a file")
    if p.stat().st_size > max_bytes:
        raise error(f"{where} is larger than {max_bytes >> 20} MiB")
    try:
        return p.read_text(encoding="utf-8", errors=errors)
    except (OSError, UnicodeDecodeError) as e:
        raise error(f"cannot read {where}: {e}") from None


def read_sizes_file(path: str) -> tuple[int, ...]:
    where = f"batch-size file {path!r}"
    return parse_sizes_text(read_input_file(path, where, MAX_SIZES_FILE_BYTES,
                                            ServeInputError), where)


def parse_distribution(text: str, *, allow_files: bool = True) -> Distribution:
    """'uniform:A-B', 'list:1,5,11' or a file of sizes ('file:PATH' or a bare path).

    allow_files=False where the text comes from a browser: a page never reads paths."""
    t = (text or "").strip()
    if not t:
        raise ServeInputError("empty batch-size distribution (e.g. uniform:1-64)")
    kind, colon, rest = t.partition(":")
    if colon and kind == "uniform":
        m = re.fullmatch(r"\s*([0-9]+)\s*-\s*([0-9]+)\s*", rest)
        if not m:
            raise ServeInputError(f"distribution {t!r}: expected uniform:A-B, e.g. uniform:1-64")
        lo = _int_in_range(m.group(1), f"distribution {t!r}")
        hi = _int_in_range(m.group(2), f"distribution {t!r}")
        if lo > hi:
            raise ServeInputError(f"distribution {t!r}: {lo} is above {hi}")
        return Distribution(t, "uniform", lo, hi)
    if colon and kind == "list":
        items = rest.split(",")
        if not rest.strip() or any(not i.strip() for i in items):
            raise ServeInputError(f"distribution {t!r}: expected list:1,5,11 (no empty item)")
        values = tuple(_int_in_range(i, f"distribution {t!r}") for i in items)
        return Distribution(t, "list", min(values), max(values), values)
    if colon and kind not in ("file",) and re.fullmatch(r"[a-z0-9_-]+", kind):
        raise ServeInputError(f"unknown distribution {t!r} (known: uniform:A-B, "
                              "list:1,5,11, a file of sizes one per line)")
    if not allow_files:
        raise ServeInputError(f"distribution {t!r}: files are accepted from the command "
                              "line only (use uniform:A-B or list:...)")
    values = read_sizes_file(rest if kind == "file" and colon else t)
    return Distribution(t, "file", min(values), max(values), values)


def request_stream(dist: Distribution, requests: int, seed: int) -> list[int]:
    """The batch size of each request, reproducible from the seed (random.Random's
    integer seeding and randrange are stable across Python versions)."""
    if not 1 <= requests <= MAX_REQUESTS:
        raise ServeInputError(f"requests {requests} is out of range (1 to {MAX_REQUESTS})")
    rng = random.Random(seed)
    return [dist.draw(rng) for _ in range(requests)]


# --- buckets and padding -----------------------------------------------------------------

def choose_bucket(batch: int, buckets: Sequence[int]) -> int | None:
    """The smallest bucket >= batch; None above the largest (eager fallback)."""
    i = bisect.bisect_left(buckets, batch)
    return buckets[i] if i < len(buckets) else None


def executed_rows(batch: int, buckets: Sequence[int]) -> int:
    b = choose_bucket(batch, buckets)
    return batch if b is None else b


@dataclass(frozen=True)
class BucketStats:
    requests: int
    real_rows: int
    executed_rows: int  # rows computed: the bucket for hits, the batch itself for fallbacks
    hits: int  # served by a bucket (padded or exact)
    exact: int  # hits that needed no padding
    fallbacks: int  # above the largest bucket: eager

    @property
    def padding_waste(self) -> float | None:
        return self.executed_rows / self.real_rows - 1 if self.real_rows else None

    @property
    def wasted_fraction(self) -> float | None:
        return 1 - self.real_rows / self.executed_rows if self.executed_rows else None

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.requests if self.requests else None

    @property
    def fallback_rate(self) -> float | None:
        return self.fallbacks / self.requests if self.requests else None


def bucket_stats(stream: Iterable[int], buckets: Sequence[int]) -> BucketStats:
    reqs = real = done = hits = exact = falls = 0
    for x in stream:
        b = choose_bucket(x, buckets)
        reqs, real = reqs + 1, real + x
        if b is None:
            falls, done = falls + 1, done + x
        else:
            hits, exact, done = hits + 1, exact + (b == x), done + b
    return BucketStats(reqs, real, done, hits, exact, falls)


def waste_by_batch(sizes: Iterable[int], buckets: Sequence[int]
                   ) -> list[dict[str, float | int | None]]:
    """One row per distinct batch size: its bucket (None: eager fallback) and the waste."""
    rows = []
    for x in sorted(set(sizes)):
        b = choose_bucket(x, buckets)
        rows.append({"batch_size": x, "bucket": b, "fallback": b is None,
                     "padded_rows": x if b is None else b,
                     "padding_waste": (b / x - 1) if b else 0.0,
                     "wasted_fraction": (1 - x / b) if b else 0.0})
    return rows


def latency_summary(latencies_ms: Sequence[float]) -> dict[str, float | None]:
    if not latencies_ms:
        return {"latency_ms_mean": None, "latency_ms_p50": None, "latency_ms_p99": None}
    return {"latency_ms_mean": math.fsum(latencies_ms) / len(latencies_ms),
            "latency_ms_p50": percentile(latencies_ms, 50),
            "latency_ms_p99": percentile(latencies_ms, 99)}


def empirical_pmf(stream: Iterable[int]) -> dict[int, float]:
    counts = Counter(stream)
    n = sum(counts.values())
    return {b: c / n for b, c in sorted(counts.items())}


def pow2_buckets(top: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to the first power of two >= top."""
    out, b = [1], 1
    while b < top:
        b *= 2
        out.append(b)
    return tuple(out)
