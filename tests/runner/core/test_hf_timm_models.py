"""hf-causal-lm and timm on the CPU: parameters refused in one line before anything is
built, the decode step's cache rewind, a real eager + compile sweep of the default, the
memory estimate, and the Launch form's view of them."""

from __future__ import annotations

import json
import sys

import pytest

from contract.catalog import check_workload
from contract.model_catalog import MODEL_DIR_ENV, MODELS_EXTRA
from contract.specs import estimate_cost
from runner.core.sweep import SweepSpec, run_sweep
from runner.core.workloads import WorkloadError, resolve
from runner.ops.sinks import MemorySink

transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("params, expected", [
    ({"model": "no-such-model"}, "unknown model 'no-such-model'"),
    ({"model": "/no/such/dir"}, "model '/no/such/dir': no such directory"),
    ({"position": "256"}, "decode position 256 is past the cache (kv_len 256)"),
    ({"phase": "sideways"}, "'sideways' is not one of decode, prefill"),
    ({"layers": "0"}, "parameter 'layers': '0' is outside 1..1e+06"),
    ({"hidden": "100", "heads": "3"}, "hidden 100 is not divisible by heads 3"),
    ({"wat": "1"}, "has no parameter 'wat'"),
])
def test_bad_hf_parameters_are_refused_in_one_line(params, expected):
    with pytest.raises(WorkloadError) as e:
        resolve("hf-causal-lm", params)
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_a_config_path_without_config_json_is_refused(tmp_path):
    with pytest.raises(WorkloadError, match="no config.json"):
        resolve("hf-causal-lm", {"model": str(tmp_path)})


def test_a_local_config_loads_and_overrides_apply(tmp_path):
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=3, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=128)
    cfg.save_pretrained(tmp_path)
    from runner.core import hf_models

    w = resolve("hf-causal-lm", {"model": str(tmp_path), "layers": "1", "kv_len": "64",
                                 "position": "8"})
    loaded = hf_models.load_config(w.params)
    assert loaded.num_hidden_layers == 1 and loaded.hidden_size == 64


def test_a_cache_longer_than_the_model_allows_is_refused():
    with pytest.raises(WorkloadError, match="kv_len 8192 is past the model's "
                                            "max_position_embeddings 4096"):
        resolve("hf-causal-lm", {"kv_len": "8192"})


def test_browser_input_names_only_builtin_configs_or_the_admin_dir(tmp_path, monkeypatch):
    monkeypatch.delenv(MODEL_DIR_ENV, raising=False)
    check_workload("hf-causal-lm", {"model": "small-llama"}, allow_import=False)
    for model in ("meta-llama/Llama-3.2-1B", str(tmp_path)):
        with pytest.raises(WorkloadError, match=MODEL_DIR_ENV):
            check_workload("hf-causal-lm", {"model": model}, allow_import=False)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "config.json").write_text(json.dumps(
        {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "vocab_size": 128}))
    monkeypatch.setenv(MODEL_DIR_ENV, str(tmp_path))
    check_workload("hf-causal-lm", {"model": "mine"}, allow_import=False)
    # The queue's memory estimate reads the same config.json, offline.
    assert estimate_cost("hf-causal-lm", {"model": "mine"}, [8], ["eager"]).memory_bytes > 0
    with pytest.raises(WorkloadError, match="is outside"):
        check_workload("hf-causal-lm", {"model": "../etc"}, allow_import=False)
    with pytest.raises(WorkloadError, match="is outside"):
        check_workload("hf-causal-lm", {"model": "/etc"}, allow_import=False)
    # A hub id stays refused from a browser (nothing is downloaded on a page's behalf).
    with pytest.raises(WorkloadError, match="no config.json"):
        check_workload("hf-causal-lm", {"model": "meta-llama/x"}, allow_import=False)


def test_without_the_extra_the_workload_says_which_one(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import fails as if absent
    with pytest.raises(WorkloadError) as e:
        resolve("hf-causal-lm", {})
    assert str(e.value) == f"workload 'hf-causal-lm' needs transformers: {MODELS_EXTRA}"


def test_decode_steps_rewind_the_cache_and_never_walk_off_it():
    """transformers 5 writes at the layer's running length: without the rewind, 1,000
    steps at one position would write 1,000 slots (and a 256-slot cache overflows)."""
    import torch

    w = resolve("hf-causal-lm", {"dtype": "float32", "layers": "1", "kv_len": "16",
                                 "position": "8"})
    model, make_input = w.build("cpu")
    model.prepare_batch(2)
    assert model.cached_length() == 8  # the prefill filled positions 0..7
    x = make_input(2, torch.Generator().manual_seed(0))
    with torch.no_grad():
        first = model(x)
        for _ in range(1000):
            out = model(x)
            assert model.cached_length() == 9  # wrote slot 8, and only slot 8
    assert torch.equal(first, out)


def test_decode_step_is_the_true_next_token_after_its_prefix():
    """The rewound step reads exactly the prefix (mask and positions right): its logits
    are those of a full forward over prefix + token, eager and compiled."""
    import torch

    w = resolve("hf-causal-lm", {"dtype": "float32", "layers": "2", "kv_len": "32",
                                 "position": "8"})
    model, make_input = w.build("cpu")
    model.prepare_batch(2)
    prefix = torch.randint(0, 4096, (2, 8), generator=torch.Generator().manual_seed(1234))
    x = make_input(2, torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = model.lm(input_ids=torch.cat([prefix, x], 1), use_cache=False).logits[:, -1:]
        assert torch.allclose(model(x), full, atol=1e-4)
        compiled = torch.compile(model, dynamic=False)
        compiled(x)
        assert torch.allclose(compiled(x), full, atol=1e-4)


def test_prefill_returns_the_next_tokens_logits():
    import torch

    w = resolve("hf-causal-lm", {"dtype": "float32", "layers": "1", "phase": "prefill",
                                 "seq": "5"})
    model, make_input = w.build("cpu")
    model.prepare_batch(3)
    x = make_input(3, torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = model(x)
        full = model.lm(input_ids=x, use_cache=False).logits[:, -1:]
        for _ in range(3):  # rewound: every prefill writes slots 0..4 again
            assert torch.equal(model(x), out) and model.cached_length() == 5
    assert out.shape == (3, 1, 4096) and torch.allclose(out, full, atol=1e-4)


def test_default_decode_step_runs_eager_and_compile_and_matches():
    sink = MemorySink()
    status = run_sweep(SweepSpec(workload="hf-causal-lm", batch_sizes=(2,),
                                 modes=("eager", "compile"), device="cpu",
                                 timing="quick"), sink)
    assert status == "done"
    for m in (p.to_json() for p in sink.measurements):
        assert m["status"] == "ok", m["message"]
        assert m["correct"] is True and m["step_ms"] > 0
    assert sink.run.workload_params["model"] == "tiny-llama"


def test_memory_estimate_covers_builtin_configs_and_refuses_hub_ids_like_the_queue():
    small = estimate_cost("hf-causal-lm", {"model": "small-llama"}, [1], ["eager"])
    big = estimate_cost("hf-causal-lm", {"model": "small-llama"}, [64],
                        ["eager", "reduce-overhead"])
    assert 0 < small.memory_bytes < big.memory_bytes
    with pytest.raises(WorkloadError, match=MODEL_DIR_ENV):  # the queue's check: no hub
        estimate_cost("hf-causal-lm", {"model": "org/model"}, [1], ["eager"])
    refused = estimate_cost("hf-causal-lm", {"model": "llama-3.2-1b-shape",
                                             "kv_len": "131072", "position": "8"},
                            [4096], ["reduce-overhead"]).refusal()
    assert refused and "device memory" in refused


def test_timm_names_are_checked_in_the_leaf_and_by_timm():
    with pytest.raises(WorkloadError, match="not a timm model name"):
        check_workload("timm", {"model": "hf-hub:org/model"})
    try:
        import timm  # noqa: F401
    except Exception:  # noqa: BLE001 - torchvision does not load beside a CPU torch
        with pytest.raises(WorkloadError, match="timm"):
            resolve("timm", {})
        return
    with pytest.raises(WorkloadError, match="unknown timm model 'resnet_nope'"):
        resolve("timm", {"model": "resnet_nope"})


def test_launch_form_offers_the_model_workloads_without_cli_only_overrides():
    from pages.logic import launch_form

    names = [f.name for f in launch_form.param_fields("hf-causal-lm")]
    assert names[:2] == ["model", "phase"] and "layers" not in names
    checked = launch_form.check(launch_form.FormValues(
        workload="hf-causal-lm", params={"model": "tiny-llama"}, modes=["eager"],
        batch_preset=launch_form.CUSTOM, custom_batches="1", timing="quick", device="cpu"))
    assert checked.errors == {} and checked.spec.workload == "hf-causal-lm"
    refused = launch_form.check(launch_form.FormValues(
        workload="hf-causal-lm", params={"model": "meta-llama/Llama-3.2-1B"},
        modes=["eager"], batch_preset=launch_form.CUSTOM, custom_batches="1",
        timing="quick", device="cpu"))
    assert refused.errors and "LAUNCHBENCH_MODEL_DIR" in " ".join(refused.errors.values())
