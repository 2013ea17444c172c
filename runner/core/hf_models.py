"""`hf-causal-lm`: a transformers causal LM from its config, random weights, one step.

transformers is imported here only, when the workload is resolved or built: the measuring
core needs torch alone (contract/model_catalog.py says what the parameters are).

The decode step is the case transformers' docs send to torch.compile(mode=
"reduce-overhead"): one token per sequence against a StaticCache. In transformers 5 a
static layer writes the new token at its own running length (`cumulative_length`, bumped
in place by every update), not at a position the caller passes: called again and again,
as a benchmark does, the step walks off the end of the cache (on the H200 a device-side
assert in an Inductor kernel, which took the CUDA context with it). So the step rewinds
every layer to the decode position before it runs, in place (the counters are static
tensors the compiled and captured step read and write). Each step then writes the same
slot and attends over the same prefix: the same work every time, a pure function of its
input, and the output of any mode can be compared with eager's.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, TypedDict

import torch

from contract.catalog import WorkloadError
from contract.model_catalog import HF_CONFIGS, HF_OVERRIDES, MODELS_EXTRA, model_source

NAME = "hf-causal-lm"


def require_transformers():
    try:
        import transformers
    except ImportError:
        raise WorkloadError(f"workload {NAME!r} needs transformers: {MODELS_EXTRA}") from None
    return transformers


def load_config(params: Mapping[str, Any], trusted: bool = True):
    """The transformers config the parameters name, overrides applied (no weights)."""
    tf = require_transformers()
    try:
        kind, what = model_source(params["model"], trusted=trusted)
    except ValueError as e:
        raise WorkloadError(f"workload {NAME!r}: {e}") from None
    try:
        if kind == "builtin":
            spec = dict(HF_CONFIGS[what])
            cfg = tf.AutoConfig.for_model(spec.pop("model_type"), **spec)
        else:
            cfg = tf.AutoConfig.from_pretrained(what)
    except Exception as e:  # noqa: BLE001 - a config that will not load is bad input
        first = (str(e).strip().splitlines() or [""])[0][:300]
        raise WorkloadError(f"workload {NAME!r}: model {params['model']!r} has no loadable "
                            f"config: {type(e).__name__}: {first}") from None
    for key, (attr, _) in HF_OVERRIDES.items():
        if params.get(key) is not None:
            setattr(cfg, attr, int(params[key]))
    limit = getattr(cfg, "max_position_embeddings", None)
    need = params["kv_len"] if params["phase"] == "decode" else params["seq"]
    if isinstance(limit, int) and need > limit:
        what = "kv_len" if params["phase"] == "decode" else "seq"
        raise WorkloadError(f"workload {NAME!r}: {what} {need} is past the model's "
                            f"max_position_embeddings {limit}")
    return cfg


def check(params: Mapping[str, Any], trusted: bool = True) -> None:
    """What resolve() checks before anything is built: the package, the config."""
    load_config(params, trusted)


def build(params: Mapping[str, Any], dtype, device: str):
    tf = require_transformers()
    cfg = load_config(params)
    with torch.device(device):
        lm = tf.AutoModelForCausalLM.from_config(cfg)
    lm = lm.to(dtype=dtype).eval()
    vocab = int(cfg.vocab_size)
    if params["phase"] == "prefill":
        seq = params["seq"]
        # A prefill into a static cache of exactly seq tokens, as generate() with a static
        # cache does. The cache also keeps transformers off its packed-sequence check
        # (taken when there is no cache: a host sync, which a CUDA graph capture refuses).
        model = CachedStep(lm, tf.StaticCache, kv_len=seq, position=0, tokens=seq)
    else:
        seq = 1
        model = CachedStep(lm, tf.StaticCache, kv_len=params["kv_len"],
                           position=params["position"], tokens=1)

    def make_input(batch_size: int, generator=None):
        ids = torch.randint(0, vocab, (batch_size, seq), generator=generator)
        return ids.to(device)

    return model, make_input


def _kwargs_of(lm) -> set[str]:
    try:
        return set(inspect.signature(lm.forward).parameters)
    except (TypeError, ValueError):
        return set()


class _StepInputs(TypedDict, total=False):
    """The step's inputs only some transformers versions take (CachedStep asks the
    model's forward for them by name)."""
    cache_position: torch.Tensor
    logits_to_keep: int


class CachedStep(torch.nn.Module):
    """`tokens` new tokens per sequence written at `position` of a StaticCache of kv_len
    (decode: 1 token at position; prefill: seq tokens at 0), rewound before each step.
    forward returns the last position's logits only: a tensor the modes can clone and
    compare, and what generate() asks for."""

    def __init__(self, lm, cache_cls, kv_len: int, position: int, tokens: int):
        super().__init__()
        self.lm, self.cache_cls = lm, cache_cls
        self.kv_len, self.position, self.tokens = kv_len, position, tokens
        names = _kwargs_of(lm)
        # transformers 5.17 takes past_key_values=, later 5.x cache=.
        self.cache_kw = "cache" if "cache" in names else "past_key_values"
        self.keep_logits = "logits_to_keep" in names
        self.has_cache_position = "cache_position" in names
        self.cache = None

    @torch.no_grad()
    def prepare_batch(self, batch_size: int) -> None:
        """A StaticCache of batch_size sequences, filled by an eager forward of random
        tokens (fixed seed: the same for every mode): decode's `position` tokens of
        context, or one prefill's worth. That first forward also allocates the cache's
        tensors and marks them static outside any compiled region, as transformers wants."""
        device = self.lm.device
        self.cache = self.cache_cls(config=self.lm.config, max_cache_len=self.kv_len)
        gen = torch.Generator().manual_seed(1234)
        fill = self.position or self.tokens
        ids = torch.randint(0, int(self.lm.config.vocab_size), (batch_size, fill),
                            generator=gen).to(device)
        self.lm(input_ids=ids, use_cache=True, **{self.cache_kw: self.cache})
        self.counters = [layer for layer in getattr(self.cache, "layers", [])
                         if isinstance(getattr(layer, "cumulative_length", None),
                                       torch.Tensor)]
        positions = torch.arange(self.position, self.position + self.tokens, device=device)
        self.position_ids = positions.unsqueeze(0).expand(batch_size, -1).contiguous()
        self.cache_position = positions

    def rewind(self) -> None:
        for layer in self.counters:
            layer.cumulative_length.fill_(self.position)
            if hasattr(layer, "cumulative_length_int"):  # sliding-window layers
                layer.cumulative_length_int = self.position

    def forward(self, ids):
        self.rewind()
        extra: _StepInputs = {}
        if self.has_cache_position:  # a transformers that still takes it: the same slots
            extra["cache_position"] = self.cache_position
        if self.keep_logits:
            extra["logits_to_keep"] = 1
        out = self.lm(input_ids=ids, position_ids=self.position_ids, use_cache=True,
                      **{self.cache_kw: self.cache}, **extra)
        return out.logits

    def cached_length(self) -> int:
        """The cache's running length now (tests: it never walks past position + tokens)."""
        return int(self.counters[0].cumulative_length) if self.counters else -1
