"""Real batch-size distributions for the capture-size advisor, read from what engines print.

Pure and torch-free (the CLI, the Serve page and the tests share it). Every reader returns
a `BatchCounts`: how often each batch size occurred, the format it was read as, and notes
to show beside the advice (a coarse histogram says so). Bad input raises `DistError`, one
line naming the line or value, before anything is computed or stored.

Formats, checked against the engines' sources (see each reader):
- plain: one batch size per line, or `size,count` (CSV; a header line is allowed).
- vLLM `--cudagraph-metrics` (vllm/config/observability.py `cudagraph_metrics`, logged at
  every logging interval): the table `CUDAGraphLogging.generate_metric_table()` logs
  (vllm/compilation/cuda_graph.py): `| Unpadded Tokens | Padded Tokens | Num Paddings |
  Runtime Mode | Count |`. Sizes are tokens per step; a log holds one table per logging
  interval (each reset after logging), so tables are summed.
- vLLM Prometheus: `vllm:iteration_tokens_total_bucket{...,le="N"} C` (a cumulative
  histogram of tokens per engine step; its buckets are the capture sizes in vLLM v1's
  `build_cudagraph_buckets`, or a fixed 1/8/16/.../8096 ladder). Counts between two bounds
  are spread evenly over the sizes between them: the text cannot say more.
- SGLang: `Decode batch. #running-req: N, ...` (scheduler_metrics_mixin.py
  `log_decode_stats`): logged once every `--decode-log-interval` (default 40) decode
  steps, so each line is a sample of the running batch, in requests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from contract.buckets import read_input_file
from contract.limits import MAX_BATCH_SIZE, MAX_SIZES_FILE_BYTES

FORMATS = ("auto", "plain", "vllm-metrics", "vllm-prometheus", "sglang-log")


class DistError(ValueError):
    """A distribution that cannot be used; str() is one line naming the line or value."""


@dataclass(frozen=True)
class BatchCounts:
    counts: Mapping[int, float]  # batch size -> how often (float: spread histogram counts)
    fmt: str  # one of FORMATS except auto
    unit: str  # "tokens" (vLLM steps) | "requests" (SGLang) | "batch" (plain)
    notes: tuple[str, ...] = field(default=())

    @property
    def total(self) -> float:
        return sum(self.counts.values())

    @property
    def max_size(self) -> int:
        return max(self.counts)

    def pmf(self) -> dict[int, float]:
        t = self.total
        return {b: c / t for b, c in sorted(self.counts.items())}

    def quantile(self, q: float) -> int:
        """The smallest size with at least q of the batches at or below it."""
        acc, t = 0.0, self.total
        for b, c in sorted(self.counts.items()):
            acc += c
            if acc >= q * t - 1e-9 * t:
                return b
        return self.max_size


def _whole(text: str, where: str, what: str, not_whole: str, least: int,
           most: int | None = None) -> int:
    """A whole number in [least, most] read from a log or file cell, or one line naming it
    (`not_whole` formats the cell's text when it is no whole number)."""
    t = text.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", t):
        raise DistError(f"{where}: " + not_whole.format(repr(t[:40])))
    n = int(t)
    if n < least:
        raise DistError(f"{where}: {what} {n} is " + ("negative" if least == 0 else
                                                       f"below {least}"))
    if most is not None and n > most:
        raise DistError(f"{where}: {what} {n} is above {most}")
    return n


def _size(text: str, where: str) -> int:
    return _whole(text, where, "batch size", "{} is not a whole batch size", 1, MAX_BATCH_SIZE)


def _count(text: str, where: str) -> int:
    return _whole(text, where, "count", "count {} is not a whole number", 0)


def _done(counts: dict[int, float], fmt: str, unit: str, where: str,
          notes: tuple[str, ...] = ()) -> BatchCounts:
    counts = {b: c for b, c in counts.items() if c > 0}
    if not counts:
        raise DistError(f"{where} holds no batch with a count above 0")
    return BatchCounts(dict(sorted(counts.items())), fmt, unit, notes)


# --- plain: sizes one per line, or size,count ---------------------------------------------

def parse_plain(text: str, where: str = "distribution") -> BatchCounts:
    counts: dict[int, float] = {}
    seen = 0
    for n, line in enumerate(text.splitlines(), 1):
        s = line.split("#", 1)[0].strip()
        if not s:
            continue
        seen += 1
        if "," in s:
            parts = [p.strip() for p in s.split(",")]
            if len(parts) != 2:
                raise DistError(f"{where} line {n}: expected size,count, got {s[:40]!r}")
            if seen == 1 and not re.fullmatch(r"[+-]?[0-9]+", parts[0]):
                continue  # a CSV header such as "batch_size,count"
            b = _size(parts[0], f"{where} line {n}")
            counts[b] = counts.get(b, 0) + _count(parts[1], f"{where} line {n}")
        else:
            b = _size(s, f"{where} line {n}")
            counts[b] = counts.get(b, 0) + 1
    if not seen:
        raise DistError(f"{where} is empty: no batch size in it")
    return _done(counts, "plain", "batch", where)


# --- vLLM --cudagraph-metrics table --------------------------------------------------------

_VLLM_HEADER = re.compile(r"\|\s*Unpadded Tokens\s*\|\s*Padded Tokens\s*\|\s*Num Paddings"
                          r"\s*\|\s*Runtime Mode\s*\|\s*Count\s*\|")


def parse_vllm_metrics(text: str, where: str = "distribution") -> BatchCounts:
    counts: dict[int, float] = {}
    tables = 0
    in_table = False
    for n, line in enumerate(text.splitlines(), 1):
        if _VLLM_HEADER.search(line):
            tables, in_table = tables + 1, True
            continue
        if not in_table:
            continue
        s = line.strip()
        if re.fullmatch(r"\|[-|\s]+\|", s):
            continue  # the |----|----| separator
        if not s.startswith("|"):
            in_table = False  # the table ends at the first line that is not a row
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if len(cells) != 5:
            raise DistError(f"{where} line {n}: a metrics row needs 5 cells, got "
                            f"{len(cells)}: {s[:60]!r}")
        b = _size(cells[0], f"{where} line {n} (Unpadded Tokens)")
        counts[b] = counts.get(b, 0) + _count(cells[4], f"{where} line {n} (Count)")
    if not tables:
        raise DistError(f"{where}: no vLLM --cudagraph-metrics table (a line '| Unpadded "
                        "Tokens | Padded Tokens | ... | Count |')")
    notes = (f"vLLM --cudagraph-metrics: {tables} table(s) summed; sizes are tokens per "
             "step (requests x (1 + speculative tokens) in uniform decode)",)
    return _done(counts, "vllm-metrics", "tokens", where, notes)


# --- vLLM Prometheus histogram -------------------------------------------------------------

_PROM = re.compile(r'^vllm:iteration_tokens_total_bucket\{(?P<labels>[^}]*)\}\s+'
                   r'(?P<value>\S+)')
_LE = re.compile(r'(?:^|,)\s*le="(?P<le>[^"]*)"')


def parse_vllm_prometheus(text: str, where: str = "distribution") -> BatchCounts:
    """Per series (labels other than le), cumulative counts at each bound; summed over
    series (engines, models), then spread evenly within each bucket."""
    series: dict[str, dict[float, float]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = _PROM.match(line.strip())
        if not m:
            continue
        labels = m.group("labels")
        le = _LE.search(labels)
        if not le:
            raise DistError(f"{where} line {n}: a histogram bucket without le=")
        try:
            bound = float(le.group("le"))
            value = float(m.group("value"))
        except ValueError:
            raise DistError(f"{where} line {n}: bucket {le.group('le')!r} or count "
                            f"{m.group('value')!r} is not a number") from None
        if value < 0:
            raise DistError(f"{where} line {n}: count {m.group('value')} is negative")
        key = _LE.sub("", labels)
        series.setdefault(key, {})[bound] = value
    if not series:
        raise DistError(f"{where}: no vllm:iteration_tokens_total_bucket line (Prometheus "
                        "text from vLLM's /metrics)")
    counts: dict[int, float] = {}
    beyond = 0.0
    for cum in series.values():
        prev_b, prev_c = 0, 0.0
        for bound in sorted(cum):
            c = cum[bound]
            if c < prev_c:
                raise DistError(f"{where}: bucket le={bound:g} holds {c:g}, fewer than "
                                f"the bucket below it ({prev_c:g}): not cumulative")
            in_bucket = c - prev_c
            if bound == float("inf"):
                beyond += in_bucket
                break
            hi = int(bound)
            if hi > prev_b and in_bucket > 0:
                share = in_bucket / (hi - prev_b)
                for b in range(prev_b + 1, hi + 1):
                    counts[b] = counts.get(b, 0) + share
            prev_b, prev_c = max(prev_b, hi), c
    notes = ["vLLM iteration_tokens_total: its buckets are coarse (the count between two "
             "bounds is spread evenly over the sizes between them; newer vLLM takes "
             "--custom-histogram-buckets '{\"iteration_tokens\": [...]}' for finer ones, "
             "or use --cudagraph-metrics); sizes are tokens per step, prefill steps "
             "included"]
    if beyond:
        notes.append(f"{beyond:g} steps were above the largest bucket bound and are left "
                     "out (their sizes are unknown)")
    return _done(counts, "vllm-prometheus", "tokens", where, tuple(notes))


# --- SGLang decode log lines ---------------------------------------------------------------

_SGLANG = re.compile(r"Decode batch\.?\s*#running-req:\s*(?P<n>[^,\s.]+)")


def parse_sglang_log(text: str, where: str = "distribution") -> BatchCounts:
    counts: dict[int, float] = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = _SGLANG.search(line)
        if m:
            b = _size(m.group("n"), f"{where} line {n} (#running-req)")
            counts[b] = counts.get(b, 0) + 1
    if not counts:
        raise DistError(f"{where}: no SGLang 'Decode batch. #running-req: N' line")
    notes = ("SGLang logs one 'Decode batch' line every --decode-log-interval (default 40) "
             "decode steps: each line is a sample; sizes are running requests",)
    return _done(counts, "sglang-log", "requests", where, notes)


# --- dispatch --------------------------------------------------------------------------------

READERS = {"plain": parse_plain, "vllm-metrics": parse_vllm_metrics,
           "vllm-prometheus": parse_vllm_prometheus, "sglang-log": parse_sglang_log}


def sniff(text: str) -> str:
    """Which format a text is in: the first recognisable marker wins."""
    if _VLLM_HEADER.search(text):
        return "vllm-metrics"
    if "vllm:iteration_tokens_total_bucket" in text:
        return "vllm-prometheus"
    if _SGLANG.search(text):
        return "sglang-log"
    return "plain"


def parse_text(text: str, fmt: str = "auto", where: str = "distribution") -> BatchCounts:
    if fmt not in FORMATS:
        raise DistError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    if not text.strip():
        raise DistError(f"{where} is empty: no batch size in it")
    if fmt == "auto":
        fmt = sniff(text)
        if fmt == "plain" and not _looks_plain(text):
            first = next(ln for ln in text.splitlines() if ln.strip())
            raise DistError(f"{where}: no recognisable line (not sizes one per line, nor a "
                            "vLLM metrics table, vLLM Prometheus text or SGLang 'Decode "
                            f"batch' log); first line: {first.strip()[:60]!r}")
    return READERS[fmt](text, where)


def _looks_plain(text: str) -> bool:
    for line in text.splitlines():
        s = line.split("#", 1)[0].strip()
        if s:
            return bool(re.match(r"[+-]?[0-9]", s)) or "," in s
    return True  # only comments: parse_plain says it is empty


def read_file(path: str, fmt: str = "auto") -> BatchCounts:
    # Serving logs run larger than a sizes file; undecodable bytes in a log line are no
    # reason to refuse the rest of it.
    text = read_input_file(path, f"distribution file {path!r}", MAX_SIZES_FILE_BYTES * 10,
                           DistError, errors="replace")
    return parse_text(text, fmt, f"{path}")
