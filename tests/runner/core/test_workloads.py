"""The workload registry: torch-free at import, strict validation, buildable models."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runner.core.workloads import WORKLOADS, WorkloadError, resolve
from tests.conftest import ROOT


def test_registry_imports_without_torch():
    # The dashboard builds its launch form from the registry on machines without torch.
    code = ("import sys; import runner.core.workloads as w; "
            "assert 'torch' not in sys.modules, 'torch imported'; print(sorted(w.WORKLOADS))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    assert "mlp" in out.stdout and "transformer-decode" in out.stdout


def test_mlp_defaults_are_the_seed_experiment():
    w = resolve("mlp", {})
    assert w.params == {"depth": 32, "width": 256, "dtype": "float32"}
    assert w.dtype == "float32"
    assert set(WORKLOADS["mlp"].params) == {"depth", "width", "dtype"}


def test_params_are_typed_and_validated():
    w = resolve("mlp", {"depth": "2", "width": " 16 ", "dtype": "bfloat16"})
    assert w.params == {"depth": 2, "width": 16, "dtype": "bfloat16"}
    assert w.dtype == "bfloat16"


@pytest.mark.parametrize("name,params,needle", [
    ("nope", {}, "'nope'"),
    ("", {}, "unknown workload"),
    ("mlp", {"depth": "x"}, "'x' is not an integer"),
    ("mlp", {"depth": "0"}, "'0' is outside"),
    ("mlp", {"depth": "2.5"}, "'2.5'"),
    ("mlp", {"dtype": "float8"}, "'float8' is not one of"),
    ("mlp", {"colour": "red"}, "no parameter 'colour'"),
    ("transformer-decode", {"kv_len": "-1"}, "'-1'"),
    ("tests.gpu_models:nothing_here", {}, "no callable 'nothing_here'"),
    ("no_such_module_xyz:f", {}, "cannot import 'no_such_module_xyz'"),
    ("bad name:f", {}, "not of the form"),
    ("tests.gpu_models:failing", {"bogus": "1"}, "do not fit the factory"),
])
def test_bad_input_is_one_line_naming_the_value(name, params, needle):
    with pytest.raises(WorkloadError) as e:
        resolve(name, params)
    msg = str(e.value)
    assert needle in msg and "\n" not in msg


def test_factories_only_where_imports_are_allowed():
    with pytest.raises(WorkloadError, match="command line only"):
        resolve("tests.gpu_models:failing", {}, allow_import=False)
    assert resolve("tests.gpu_models:failing", {"fail_at": "2"}).params == {"fail_at": "2"}


def test_factory_must_return_a_pair():
    w = resolve("tests.gpu_models:not_a_pair", {})
    with pytest.raises(WorkloadError, match="must return"):
        w.build("cpu")


def test_mlp_builds_and_runs():
    import torch

    model, make_input = resolve("mlp", {"depth": "3", "width": "8"}).build("cpu")
    assert sum(isinstance(m, torch.nn.Linear) for m in model.modules()) == 3
    x = make_input(5, torch.Generator().manual_seed(0))
    assert x.shape == (5, 8) and x.dtype == torch.float32
    assert model(x).shape == (5, 8)
    # Same seed, same input: points of a sweep see reproducible data.
    assert torch.equal(x, make_input(5, torch.Generator().manual_seed(0)))


def test_transformer_decode_builds_a_static_cache_and_does_not_mutate_it():
    import torch

    w = resolve("transformer-decode", {"layers": "2", "d_model": "32", "heads": "4",
                                       "kv_len": "6", "vocab": "50", "dtype": "float32"})
    model, make_input = w.build("cpu")
    model.prepare_batch(3)
    ids = make_input(3, torch.Generator().manual_seed(0))
    assert ids.shape == (3,) and ids.dtype == torch.long
    cache = model.layers[0].k_cache.clone()
    assert cache.shape == (3, 4, 6, 8)
    with torch.no_grad():
        out = model(ids)
    assert out.shape == (3, 50) and torch.isfinite(out).all()
    assert torch.equal(cache, model.layers[0].k_cache)


def test_transformer_decode_heads_must_divide_width():
    # Refused where the parameters are checked (no torch needed), not at build time.
    with pytest.raises(WorkloadError, match="d_model 30 is not divisible by heads 4"):
        resolve("transformer-decode", {"d_model": "30", "heads": "4"})
