"""`hf-causal-lm`: a transformers causal LM from its config, random weights, one step.

transformers is imported here only, when the workload is resolved or built: the measuring
core needs torch alone (runner/format/model_catalog.py says what the parameters are).

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
from typing import Any

import torch

from runner.format.catalog import WorkloadError
from runner.format.model_catalog import HF_CONFIGS, HF_OVERRIDES, MODELS_EXTRA, model_source

NAME = "hf-causal-lm"


def require_transformers():
    try:
        import transformers
    except ImportError:
        raise WorkloadError(f"workload {NAME!r} needs transformers: {MODELS_EXTRA}") from None
    return transformers


def load_config(params: dict[str, Any], trusted: bool = True):
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


def check(params: dict[str, Any], trusted: bool = True) -> None:
    """What resolve() checks before anything is built: the package, the config."""
    load_config(params, trusted)


def build(params: dict[str, Any], dtype, device: str):
    tf = require_transformers()
    cfg = load_config(params)
    with torch.device(device):
        lm = tf.AutoModelForCausalLM.from_config(cfg)
    lm = lm.to(dtype=dtype).eval()
    vocab = int(cfg.vocab_size)
    if params["phase"] == "prefill":
        model = Prefill(lm)
        seq = params["seq"]
    else:
        model = DecodeStep(lm, tf.StaticCache, params["kv_len"], params["position"])
        seq = 1

    def make_input(batch_size: int, generator=None):
        ids = torch.randint(0, vocab, (batch_size, seq), generator=generator)
        return ids.to(device)

    return model, make_input


def _kwargs_of(lm) -> set[str]:
    try:
        return set(inspect.signature(lm.forward).parameters)
    except (TypeError, ValueError):
        return set()


class _Step(torch.nn.Module):
    """Shared by both phases: a module whose forward returns logits only (a tensor, so
    the modes can clone and compare it), with the keyword names this transformers uses."""

    def __init__(self, lm) -> None:
        super().__init__()
        self.lm = lm
        names = _kwargs_of(lm)
        # transformers 5.x renamed past_key_values to cache in the forward signature.
        self.cache_kw = "cache" if "cache" in names else "past_key_values"
        self.keep_logits = "logits_to_keep" in names
        self.has_cache_position = "cache_position" in names


class Prefill(_Step):
    def forward(self, ids):
        # Only the last position's logits, as generate() asks: the next token's.
        extra = {"logits_to_keep": 1} if self.keep_logits else {}
        return self.lm(input_ids=ids, use_cache=False, **extra).logits


class DecodeStep(_Step):
    def __init__(self, lm, cache_cls, kv_len: int, position: int):
        super().__init__(lm)
        self.cache_cls, self.kv_len, self.position = cache_cls, kv_len, position
        self.cache = None

    def prepare_batch(self, batch_size: int) -> None:
        """A StaticCache of batch_size sequences with `position` tokens already in it, by
        an eager prefill of random tokens (fixed seed: the same for every mode). The
        prefill also allocates the cache's tensors and marks them static, outside any
        compiled region, as transformers wants."""
        device = self.lm.device
        self.cache = self.cache_cls(config=self.lm.config, max_cache_len=self.kv_len)
        gen = torch.Generator().manual_seed(1234)
        ids = torch.randint(0, int(self.lm.config.vocab_size), (batch_size, self.position),
                            generator=gen).to(device)
        with torch.no_grad():
            self.lm(input_ids=ids, use_cache=True, **{self.cache_kw: self.cache})
        self.counters = [layer for layer in getattr(self.cache, "layers", [])
                         if isinstance(getattr(layer, "cumulative_length", None),
                                       torch.Tensor)]
        self.position_ids = torch.full((batch_size, 1), self.position, dtype=torch.long,
                                       device=device)
        self.cache_position = torch.full((1,), self.position, dtype=torch.long,
                                         device=device)

    def rewind(self) -> None:
        for layer in self.counters:
            layer.cumulative_length.fill_(self.position)
            if hasattr(layer, "cumulative_length_int"):  # sliding-window layers
                layer.cumulative_length_int = self.position

    def forward(self, ids):
        self.rewind()
        extra: dict[str, Any] = {self.cache_kw: self.cache}
        if self.has_cache_position:  # older 5.x may still take it: the same position
            extra["cache_position"] = self.cache_position
        out = self.lm(input_ids=ids, position_ids=self.position_ids, use_cache=True,
                      **extra)
        return out.logits

    def cached_length(self) -> int:
        """The cache's running length now (tests: it never walks past position + 1)."""
        return int(self.counters[0].cumulative_length) if self.counters else -1
