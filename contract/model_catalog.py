"""The models people run: `hf-causal-lm` (transformers) and `timm`, as catalog entries.

Torch-free and transformers-free, like the rest of the contract: the queue and the Launch form
check these parameters on machines with neither. What needs the packages (building the
model, asking timm whether a name exists) is runner/core/hf_models.py's and
runner/core/timm_models.py's.

Where a model comes from is user input that can reach the network or the disk, so it is
checked by who asks: the command line may name a built-in config, a local directory with
a config.json, or a hub id (whose config.json, never weights, transformers fetches); a
browser or a queued job only a built-in config or a directory under the admin-set
$LAUNCHBENCH_MODEL_DIR (nothing is downloaded or read elsewhere on a page's behalf).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from contract.params import ParamSpec, WorkloadInfo
from contract.vocab import DTYPES

MODELS_EXTRA = "pip install 'launchbench[models]'"
MODEL_DIR_ENV = "LAUNCHBENCH_MODEL_DIR"

# Built-in transformers configs: random weights need no download, only a shape. Llama-
# shaped (RMSNorm, rotary, grouped-query attention, SwiGLU): the decoder most people run.
HF_CONFIGS: Mapping[str, Mapping[str, Any]] = {  # read only: copied where changed
    # CPU CI: small enough to compile in seconds on two cores.
    "tiny-llama": dict(model_type="llama", hidden_size=256, intermediate_size=688,
                       num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                       vocab_size=4096, max_position_embeddings=4096),
    # The H200 sample: launch-bound at small batch, as a small served model is.
    "small-llama": dict(model_type="llama", hidden_size=1024, intermediate_size=2816,
                        num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=4,
                        vocab_size=32000, max_position_embeddings=4096),
    # Llama 3.2 1B's shape (random weights): what a real small deployment is.
    "llama-3.2-1b-shape": dict(model_type="llama", hidden_size=2048, intermediate_size=8192,
                               num_hidden_layers=16, num_attention_heads=32,
                               num_key_value_heads=8, vocab_size=128256,
                               max_position_embeddings=131072, rope_theta=500000.0,
                               tie_word_embeddings=True),
}
# --param overrides: our short name -> the transformers config attribute (configs map
# these standard names to their own, e.g. GPT-2's n_layer).
HF_OVERRIDES = {
    "layers": ("num_hidden_layers", "decoder layers"),
    "hidden": ("hidden_size", "model width"),
    "heads": ("num_attention_heads", "attention heads"),
    "kv_heads": ("num_key_value_heads", "key/value heads (grouped-query attention)"),
    "intermediate": ("intermediate_size", "MLP width"),
    "vocab": ("vocab_size", "vocabulary size"),
}
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+\Z")
_TIMM_NAME = re.compile(r"[a-z0-9][a-z0-9_]*(\.[a-z0-9_]+)?\Z")


def model_dir() -> str | None:
    d = os.environ.get(MODEL_DIR_ENV, "").strip()
    return os.path.realpath(d) if d else None


def _has_config(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "config.json"))


def model_source(text: str, *, trusted: bool) -> tuple[str, str]:
    """('builtin' | 'local' | 'hub', what to load) for a `model=` value, or ValueError
    naming it. trusted: the command line; else a browser or a queued job."""
    if text in HF_CONFIGS:
        return "builtin", text
    root = model_dir()
    if not trusted:
        if root is None:
            raise ValueError(f"model {text!r} is not a built-in config ({', '.join(HF_CONFIGS)}); "
                             f"local configs need {MODEL_DIR_ENV} set by the admin")
        path = os.path.realpath(os.path.join(root, text))
        if os.path.commonpath([root, path]) != root:
            raise ValueError(f"model {text!r} is outside {MODEL_DIR_ENV} ({root})")
        if not _has_config(path):
            raise ValueError(f"model {text!r}: no config.json in {path}")
        return "local", path
    looks_local = text.startswith(("/", ".", "~")) or os.path.isdir(os.path.expanduser(text))
    if looks_local:
        path = os.path.expanduser(text)
        if not os.path.isdir(path):
            raise ValueError(f"model {text!r}: no such directory")
        if not _has_config(path):
            raise ValueError(f"model {text!r}: no config.json in that directory")
        return "local", os.path.realpath(path)
    if _HUB_ID.match(text):
        return "hub", text
    raise ValueError(f"unknown model {text!r} (a built-in config: {', '.join(HF_CONFIGS)}; "
                     "a local directory with a config.json; or a hub id org/name)")


def local_config(text: str) -> dict[str, Any] | None:
    """The config's fields when they can be read without the network (None otherwise)."""
    if text in HF_CONFIGS:
        return dict(HF_CONFIGS[text])
    kind = path = None
    for trusted in (False, True):  # the admin's directory first, as the queue reads it
        try:
            kind, path = model_source(text, trusted=trusted)
            break
        except ValueError:
            continue
    if kind != "local" or path is None:
        return None
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _check_hf(p: Mapping[str, Any], trusted: bool) -> str | None:
    try:
        model_source(p["model"], trusted=trusted)
    except ValueError as e:
        return str(e)
    if p["phase"] == "decode" and p["position"] >= p["kv_len"]:
        return (f"decode position {p['position']} is past the cache (kv_len "
                f"{p['kv_len']}): the step writes its token at that position")
    if p["heads"] is not None and p["hidden"] is not None and p["hidden"] % p["heads"]:
        return f"hidden {p['hidden']} is not divisible by heads {p['heads']}"
    return None


def _check_timm(p: Mapping[str, Any]) -> str | None:
    if not _TIMM_NAME.match(p["model"]):
        return (f"model {p['model']!r} is not a timm model name (e.g. resnet50, "
                "vit_base_patch16_224; hub-hosted names are not fetched)")
    return None


def _dtype(default: str) -> ParamSpec:
    return ParamSpec("dtype", "choice", default, choices=DTYPES,
                     help="parameter and activation dtype")


_HF_PARAMS = {
    "model": ParamSpec("model", "str", "tiny-llama",
                       help="a built-in config (" + ", ".join(HF_CONFIGS) + "), a local "
                            "directory with a config.json, or a hub id (command line only); "
                            "random weights, nothing but the config is ever fetched"),
    "phase": ParamSpec("phase", "choice", "decode", choices=("decode", "prefill"),
                       help="decode: one token per sequence at a fixed position of a static "
                            "KV cache; prefill: seq tokens per sequence into a static cache"),
    "kv_len": ParamSpec("kv_len", "int", 256, 2, 131072,
                        help="static KV cache length in tokens (decode)"),
    "position": ParamSpec("position", "int", 128, 1, 131071,
                          help="where the decoded token sits: tokens already cached (decode)"),
    "seq": ParamSpec("seq", "int", 128, 1, 131072, help="tokens per sequence (prefill)"),
    "dtype": _dtype("bfloat16"),
    # Overrides of the config (None: the config's own value), for a smaller model.
    **{k: ParamSpec(k, "int", None, 1, 1_000_000, help=f"{what} (default: the config's)")
       for k, (_, what) in HF_OVERRIDES.items()},
}

MODEL_WORKLOADS: dict[str, WorkloadInfo] = {
    "hf-causal-lm": WorkloadInfo(
        "hf-causal-lm",
        "a transformers causal LM built from its config with random weights: a decode "
        "step against a StaticCache (rewound every step, so each does the same work) or "
        f"a prefill; batch = sequences. Needs {MODELS_EXTRA}",
        _HF_PARAMS,
        check=lambda p: _check_hf(p, trusted=True),
        check_untrusted=lambda p: _check_hf(p, trusted=False),
    ),
    "timm": WorkloadInfo(
        "timm",
        "a timm image model (pretrained=False, random weights), inference at the image "
        f"size of the model's config; batch = images. Needs {MODELS_EXTRA}",
        {"model": ParamSpec("model", "str", "resnet18", help="a timm model name"),
         "dtype": _dtype("float32")},
        check=_check_timm,
    ),
}


# --- memory: what the queue's estimate uses (contract/specs.py estimate_cost) -------

def hf_bytes(p: Mapping[str, Any], batch: int, graphs: bool, size: int) -> int | None:
    """Errs high, as the other estimates: weights, KV cache, every layer's activations
    kept by a graph's pool, logits twice. None: the config cannot be read offline."""
    cfg = local_config(p["model"])
    if cfg is None:
        return None
    for k, (attr, _) in HF_OVERRIDES.items():
        if p.get(k) is not None:
            cfg[attr] = p[k]
    try:
        h, layers = int(cfg["hidden_size"]), int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
        kv_heads = int(cfg.get("num_key_value_heads") or heads)
        inter = int(cfg.get("intermediate_size") or 4 * h)
        vocab = int(cfg["vocab_size"])
    except (KeyError, TypeError, ValueError):
        return None
    head_dim = int(cfg.get("head_dim") or h // heads)
    kv_dim = kv_heads * head_dim
    weights = (2 * vocab * h + layers * (2 * h * h + 2 * h * kv_dim + 3 * h * inter)) * size
    tokens = batch * (1 if p["phase"] == "decode" else p["seq"])
    ctx = p["kv_len"] if p["phase"] == "decode" else p["seq"]
    cache = layers * 2 * batch * ctx * kv_dim * size  # prefill writes a static cache too
    per_layer = tokens * (4 * h + 2 * kv_dim + 3 * inter) * size + tokens * heads * ctx * 8
    logits = 2 * batch * vocab * 4
    return int(weights + cache + (layers if graphs else 2) * per_layer + logits)
