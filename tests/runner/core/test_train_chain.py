"""train-step and kernel-chain on the CPU: parameters checked with one clear error, the
chain's launches counted at the op level, the host probe sharing the chain's code, the
training reference and its verdict, and small real sweeps (eager and compile measured,
the graph modes `unsupported`). Compiles are few and tiny: compile is slow on 2 cores."""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from contract.specs import check_sweep
from runner.core import chain as chain_mod
from runner.core.sweep import SweepSpec, run_sweep
from runner.core.timing import Clock
from runner.core.training import CHECK_STEPS
from runner.core.workloads import WorkloadError, resolve
from runner.ops.sinks import MemorySink


class OpCount(TorchDispatchMode):
    """The aten ops a block runs: on a GPU each is one kernel launch."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def sweep(workload, params, modes, batch=4) -> dict[str, dict]:
    sink = MemorySink()
    run_sweep(SweepSpec(workload=workload, params=params, batch_sizes=(batch,), modes=modes,
                        device="cpu", timing="quick"), sink)
    assert sink.status == "done"
    return {m.mode: m.to_json() for m in sink.measurements}


@pytest.mark.parametrize("name,params,needle", [
    ("kernel-chain", {"kernels": "0"}, "parameter 'kernels': '0' is outside 1..10000"),
    ("kernel-chain", {"depth": "3"}, "workload 'kernel-chain' has no parameter 'depth'"),
    ("train-step", {"model": "gpt"}, "'gpt' is not one of mlp, transformer"),
    ("train-step", {"model": "transformer", "width": "30", "heads": "4"},
     "workload 'train-step': width 30 is not divisible by heads 4"),
    ("train-step", {"seq": "x"}, "parameter 'seq': 'x' is not an integer"),
])
def test_parameters_are_checked_with_one_clear_line(name, params, needle):
    with pytest.raises(WorkloadError) as e:
        check_sweep({"workload": name, "params": params, "batch_sizes": [1],
                     "modes": ["eager"]})
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_heads_only_matter_for_the_transformer():
    # mlp ignores heads: a width the heads do not divide is fine there.
    assert resolve("train-step", {"width": "30", "heads": "4"}).params["model"] == "mlp"


def test_kernel_chain_is_kernels_dependent_ops_and_exact():
    model, make_input = resolve("kernel-chain", {"kernels": "7",
                                                 "dtype": "bfloat16"}).build("cpu")
    x = make_input(5, torch.Generator().manual_seed(0))
    assert x.shape == (5,) and x.dtype == torch.bfloat16
    with OpCount() as count, torch.no_grad():
        y = model(x)
    assert len(count.ops) == 7  # one kernel per link, the first one out of place
    assert torch.equal(y, -x)  # (-1)^7: exact in any dtype
    assert torch.equal(x, make_input(5, torch.Generator().manual_seed(0)))  # input kept


def test_the_host_probe_is_the_chain_at_batch_one(monkeypatch):
    seen = []
    real = chain_mod.chain

    def spy(x, kernels):
        seen.append((x.numel(), kernels))
        return real(x, kernels)

    monkeypatch.setattr(chain_mod, "chain", spy)
    assert Clock("cpu").launch_probe(50)() > 0
    assert seen == [(1, 50)]


def test_train_reference_and_verdict():
    task, make_input = resolve("train-step", {"depth": "2", "width": "64"}).build("cpu")
    batch = make_input(4, torch.Generator().manual_seed(0))
    before = [p.detach().clone() for p in task.params]
    with torch.enable_grad():
        ref = task.reference(batch)
    # The reference trained CHECK_STEPS steps and put the initial weights back.
    assert any(not torch.equal(r, b) for r, b in zip(ref, before, strict=True))
    assert all(torch.equal(p, b) for p, b in zip(task.params, before, strict=True))
    err, tol, rel = task.compare(ref, ref)
    assert err == 0 and rel == 0 and tol > 0
    # One element moved 2 * lr the wrong way (Adam's sign-like update on a tiny
    # gradient): elementwise far off, the update as a whole within tolerance...
    flipped = [r.clone() for r in ref]
    flipped[0].view(-1)[0] += 2e-3
    err, tol, rel = task.compare(flipped, ref)
    assert err == pytest.approx(2e-3, rel=1e-3) and rel <= tol
    # ...but a lost optimizer step is not.
    err, tol, rel = task.compare(before, ref)
    assert rel > tol


def test_fresh_leaves_train_the_models_own_weights_through_new_autograd_leaves():
    task, make_input = resolve("train-step", {"depth": "2", "width": "16"}).build("cpu")
    x, y = make_input(4, torch.Generator().manual_seed(0))
    leaves, loss = task.fresh_leaves()
    assert all(leaf is not p and leaf.data_ptr() == p.data_ptr()
               for leaf, p in zip(leaves, task.params, strict=True))
    with torch.enable_grad():
        assert torch.equal(loss(x, y), task.loss(x, y))
        opt = task.optimizer(leaves)
        task.eager_step(opt, x, y, loss)
    # The gradient went to the new leaves, the step moved the model's own weights...
    assert all(leaf.grad is not None for leaf in leaves)
    assert all(p.grad is None for p in task.params)
    assert any(not torch.equal(p, p0) for p, p0 in zip(task.params, task.initial, strict=True))
    # ...and restore() resets what the leaves see too.
    task.restore(opt)
    assert all(torch.equal(leaf, p0) for leaf, p0 in zip(leaves, task.initial, strict=True))


def test_train_step_transformer_runs_eager():
    ms = sweep("train-step", {"model": "transformer", "width": "8", "heads": "2",
                              "seq": "3"}, ("eager", "cuda-graph"), batch=2)
    m = ms["eager"]
    assert m["status"] == "ok" and m["step_ms"] > 0, m["message"]
    assert m["correct"] is True and m["details"]["correct_after_steps"] == CHECK_STEPS
    assert ms["cuda-graph"]["status"] == "unsupported"


def test_train_step_eager_and_compile_on_cpu_graph_modes_unsupported():
    ms = sweep("train-step", {"depth": "2", "width": "8"},
               ("eager", "compile", "reduce-overhead", "cuda-graph"))
    for mode in ("eager", "compile"):
        assert ms[mode]["status"] == "ok", (mode, ms[mode]["message"])
        assert ms[mode]["step_ms"] > 0 and ms[mode]["correct"] is True, mode
    for mode in ("reduce-overhead", "cuda-graph"):
        assert ms[mode]["status"] == "unsupported", mode
        assert "CUDA" in ms[mode]["message"]


def test_kernel_chain_eager_and_compile_on_cpu_graph_modes_unsupported():
    ms = sweep("kernel-chain", {"kernels": "4"},
               ("eager", "compile", "reduce-overhead", "cuda-graph"), batch=16)
    for mode in ("eager", "compile"):
        assert ms[mode]["status"] == "ok", (mode, ms[mode]["message"])
        assert ms[mode]["correct"] is True and ms[mode]["max_abs_err"] == 0, mode
    for mode in ("reduce-overhead", "cuda-graph"):
        assert ms[mode]["status"] == "unsupported", mode


def test_serve_refuses_a_training_step():
    from contract.buckets import ServeInputError
    from runner.serve.context import make_context

    with pytest.raises(ServeInputError, match="training step"):
        make_context(resolve("train-step", {"depth": "1", "width": "8"}), "cpu", [1], 0,
                     True)

