"""Which batch sizes to capture: the engines' default lists and rules, a graph-memory curve,
and an advisor that picks a capture list within a memory budget for a real distribution.

Pure and torch-free. A serving engine captures one CUDA graph per size, pads each batch up
to the next captured size and runs batches above the largest without graphs
(docs/MEASUREMENT.md, "Dynamic batch sizes"). What the advisor reports for a list, on a
distribution: padding waste (padded rows / real rows - 1, over the batches served by a
graph), the share of batches run without graphs, the graph pool's MiB by a curve, and the
capture seconds by the same curve.

The engines' rules, as read in their sources (cited where each is used):
- vLLM (vllm/config/vllm.py `VllmConfig._set_cudagraph_sizes`,
  vllm/config/compilation.py `CompilationConfig.post_init_cudagraph_sizes` and
  `adjust_cudagraph_sizes_for_spec_decode`): sizes are tokens per step. Default largest
  size min(max_num_seqs x (1 + speculative tokens) x 2, 512), clamped to
  max_num_batched_tokens; default list [1, 2, 4] + range(8, 256, 8) + range(256, max + 1,
  16), cut at the largest. A given list is de-duplicated and sorted; with sequence
  parallelism and TP > 1, sizes that are not multiples of TP are dropped; with speculative
  decoding every size is rounded up to a multiple of K + 1 (max(K + 1, TP) with sequence
  parallelism, which must be a multiple of both) and sizes above the largest are dropped;
  `max_cudagraph_capture_size` given beside a list must equal its largest size.
- SGLang (python/sglang/srt/server_args.py `_handle_gpu_memory_settings`,
  `_generate_cuda_graph_batch_sizes`; late-2025 layout, later moved into a
  cuda_graph_config group): sizes are running requests. Default largest `cuda_graph_max_bs`
  by GPU memory: < 20 GiB 8; < 35 GiB 24 (TP < 4) or 80; < 60 GiB 32 or 160; < 90 GiB and
  < 160 GiB 256 (TP < 4) or 512; above 512; unknown 160. Default list [1, 2, 4, 8, 12] +
  range(16, 257, 8) + range(272, 512, 16) + range(512, max + 1, 32); with speculative
  decoding range(1, 9) + range(10, 33, 2) + range(40, 65, 4) + range(72, 257, 8) +
  range(272, max + 1, 16). `--cuda-graph-bs` given sets max to its largest. Graph memory
  is reserved by a rule of thumb: cuda_graph_max_bs x 2 MB.
- torch.compile: `torch._inductor.config.triton.cudagraph_capture_sizes` (a tuple; None,
  the default, captures every shape; other shapes run without graphs,
  torch/_inductor/cudagraph_trees.py `is_cudagraph_capture_sizes`, which keys on the
  graph's symbolic int inputs: it acts on a graph compiled with a dynamic batch). Unlike
  the engines, torch pads nothing: the caller pads each batch up to the next size.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contract.capture_dist import BatchCounts

MIB = 1 << 20
ENGINES = ("vllm", "sglang", "torch")
MAX_GRAPHS = 256  # more graphs than this is a capture that takes minutes; also bounds the DP


class AdviceError(ValueError):
    """An engine setting or budget that cannot be used; str() is one line."""


# --- engine rules ----------------------------------------------------------------------------

@dataclass(frozen=True)
class EngineRules:
    engine: str  # vllm | sglang | torch
    spec_tokens: int = 0  # speculative tokens K (vLLM: sizes become multiples of K + 1)
    tp: int = 1  # tensor-parallel degree
    sequence_parallel: bool = False  # vLLM pass_config.enable_sp
    max_num_seqs: int = 256  # vLLM scheduler default for the default list's largest size
    max_num_batched_tokens: int | None = None  # vLLM: no graph above it
    gpu_mem_gib: float | None = None  # SGLang: picks the default cuda_graph_max_bs tier

    @property
    def multiple_of(self) -> int:
        """What every captured size must be a multiple of (vLLM's rule; 1 elsewhere)."""
        if self.engine != "vllm":
            return 1
        q = self.spec_tokens + 1
        if self.sequence_parallel and self.tp > 1:
            m = max(q, self.tp)
            if m % q or m % self.tp:  # vllm/config/compilation.py: the same refusal
                raise AdviceError(f"no size is a multiple of both {q} (speculative tokens "
                                  f"+ 1) and {self.tp} (tensor parallel, sequence "
                                  "parallelism on): change one of them")
            return m
        return q

    def default_max(self) -> int:
        if self.engine == "vllm":
            top = min(self.max_num_seqs * (self.spec_tokens + 1) * 2, 512)
            if self.max_num_batched_tokens is not None:
                top = min(top, self.max_num_batched_tokens)
            return top
        if self.engine == "sglang":
            g, small_tp = self.gpu_mem_gib, self.tp < 4
            if g is None:
                return 160
            if g < 20:
                return 8
            if g < 35:
                return 24 if small_tp else 80
            if g < 60:
                return 32 if small_tp else 160
            if g < 160:
                return 256 if small_tp else 512
            return 512
        return 512  # torch.compile has no default list: every shape is captured

    def default_sizes(self) -> tuple[int, ...]:
        """The list the engine captures when none is given."""
        top = self.default_max()
        if self.engine == "vllm":
            base = [s for s in (1, 2, 4) if s <= top]
            if top >= 8:
                base += list(range(8, min(top + 1, 256), 8))
            if top >= 256:
                base += list(range(256, top + 1, 16))
            return self.conform(base)
        if self.engine == "sglang":
            if self.spec_tokens:
                base = (list(range(1, 9)) + list(range(10, 33, 2)) + list(range(40, 65, 4))
                        + list(range(72, 257, 8)) + list(range(272, top + 1, 16)))
            else:
                base = ([1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 512, 16))
                        + list(range(512, top + 1, 32)))
            return tuple(s for s in base if s <= top)
        return ()  # torch: None captures every shape seen

    def conform(self, sizes: Sequence[int], top: int | None = None) -> tuple[int, ...]:
        """The list as the engine would capture it: vLLM's SP filter and speculative
        rounding (in that order, as in vllm/config/vllm.py then compilation.py)."""
        out = sorted(set(sizes))
        if self.engine != "vllm":
            return tuple(out)
        if self.max_num_batched_tokens is not None:
            out = [s for s in out if s <= self.max_num_batched_tokens]
        if self.sequence_parallel and self.tp > 1:
            out = [s for s in out if s % self.tp == 0]
        m = self.multiple_of
        top = out[-1] if top is None and out else top
        if m > 1 and out and top is not None:
            rounded = sorted({-(-s // m) * m for s in out if -(-s // m) * m <= top})
            if not rounded and m <= top:
                rounded = [m]
            out = rounded
        return tuple(out)

    def valid(self, size: int) -> bool:
        if self.engine == "vllm" and self.sequence_parallel and self.tp > 1 \
                and size % self.tp:
            return False
        return size % self.multiple_of == 0

    def round_up(self, size: int) -> int:
        m = self.multiple_of
        return -(-size // m) * m


def config_lines(engine: str, sizes: Sequence[int]) -> list[str]:
    """What to paste: the flag or setting that makes the engine capture exactly `sizes`."""
    s = sorted(sizes)
    if not s:
        raise AdviceError("an empty capture list has no config (run without graphs instead)")
    if engine == "vllm":
        cfg = json.dumps({"cudagraph_capture_sizes": s, "max_cudagraph_capture_size": s[-1]},
                         separators=(", ", ": "))
        return [f"--compilation-config '{cfg}'"]
    if engine == "sglang":
        return [f"--cuda-graph-bs {' '.join(map(str, s))}"]
    if engine == "torch":
        # cudagraph_trees.is_cudagraph_capture_sizes keys on a graph's int (symbolic size)
        # inputs: it acts on a graph compiled with a dynamic batch, and pads nothing.
        return ["# torch.compile(model, mode=\"reduce-overhead\", dynamic=True); pad each "
                "batch up to the next size yourself (torch pads nothing)",
                "import torch._inductor.config as inductor_config",
                f"inductor_config.triton.cudagraph_capture_sizes = {tuple(s)!r}"]
    raise AdviceError(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")


# --- the memory curve ----------------------------------------------------------------------

@dataclass(frozen=True)
class Curve:
    """Graph memory and capture time as a function of the captured list.

    One shared pool captured largest first (what vLLM, SGLang and CUDA graph trees do): the
    first capture pays the fixed part (workspaces: cuBLAS's 32 MiB on Hopper) and the
    largest size's activations; each further size adds `per_graph_bytes` (its graph's own
    blocks and driver objects), because its activations fit in what the largest left.
    Private pools instead pay the fixed part and activations once per size."""

    fixed_bytes: int  # per capture in private pools; once in a shared pool
    per_row_bytes: float  # activations per batch row
    per_graph_bytes: int  # what each further size adds in a shared pool
    first_capture_s: float  # the first capture (warm-up, workspace creation included)
    capture_s: float  # each further capture
    source: str  # where the figures come from, said beside every price

    def pool_bytes(self, sizes: Sequence[int], shared: bool = True) -> int:
        if not sizes:
            return 0
        if shared:
            return round(self.fixed_bytes + self.per_row_bytes * max(sizes)
                         + self.per_graph_bytes * (len(sizes) - 1))
        return round(len(sizes) * self.fixed_bytes + self.per_row_bytes * sum(sizes))

    def seconds(self, n: int) -> float:
        return 0.0 if n == 0 else self.first_capture_s + self.capture_s * (n - 1)


# The default curve, from what the repository ships (H200, torch 2.11, the launch-bound
# mlp, fp32): data/samples/h200-mlp.json's cuda-graph points (each size captured alone:
# 34 MiB from 1 to 256 rows, 36 MiB at 1024, 54 MiB at 4096 and 8192; a least-squares line
# through them gives 34.5 MiB + 2.9 KiB per row) and bench/results/
# h200-capture-memory-mlp.json's shared-clear variant (10 sizes, 512 down to 1, into one
# pool: the pool stays at 34 MiB and the device's used memory grows 2 MiB in all, 0.2 MiB
# per further graph; the first capture took 0.146 s, the others 0.006-0.013 s).
# tests/contract/test_capture_sizes.py recomputes these figures from those files.
DEFAULT_CURVE = Curve(fixed_bytes=36_138_327, per_row_bytes=2_979.0, per_graph_bytes=233_017,
                      first_capture_s=0.146, capture_s=0.008,
                      source="H200 mlp fp32 (data/samples/h200-mlp.json, bench/results/"
                             "h200-capture-memory-mlp.json)")


# --- evaluating a list ---------------------------------------------------------------------

@dataclass(frozen=True)
class Priced:
    sizes: tuple[int, ...]
    padding_waste: float  # padded rows / real rows - 1, batches served by a graph
    graphless_share: float  # share of batches above the largest size: no graph
    pool_bytes: int
    capture_s: float

    @property
    def pool_mib(self) -> float:
        return self.pool_bytes / MIB


def price(dist: BatchCounts | Mapping[int, float], sizes: Sequence[int], curve: Curve,
          shared: bool = True) -> Priced:
    counts = dist.counts if isinstance(dist, BatchCounts) else dist
    s = sorted(set(sizes))
    total = sum(counts.values())
    real = padded = graphless = 0.0
    for x, c in counts.items():
        i = bisect.bisect_left(s, x)
        if i == len(s):
            graphless += c
        else:
            real, padded = real + c * x, padded + c * s[i]
    waste = padded / real - 1 if real else 0.0
    return Priced(tuple(s), waste, graphless / total if total else 0.0,
                  curve.pool_bytes(s, shared), curve.seconds(len(s)))
