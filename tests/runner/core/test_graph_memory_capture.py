"""graph-memory's capture loop on the CPU, its CUDA calls stood in for (issue 38): the
hf-causal-lm decode step crashed on the H200 in the side-stream warm-up ("'CachedStep'
object has no attribute 'counters'"): the loop never made the model's per-batch state.
The loop itself (sizes largest first, state per size, warm-up, capture, replay) runs here
for real on a transformers model; only the stream, graph and memory calls are fakes."""

from __future__ import annotations

import contextlib
import types

import pytest

pytest.importorskip("transformers")


@pytest.fixture
def cuda_calls(monkeypatch):
    """Streams, graphs and memory reads answered on the CPU: a graph 'capture' runs the
    model eagerly once; a replay counts. Returns the log of what ran, in order."""
    import torch

    from runner.core import graph_memory, memory

    log: list[str] = []

    class Stream:
        def wait_stream(self, other):
            pass

    class Graph:
        def replay(self):
            log.append("replay")

    @contextlib.contextmanager
    def graph(g, pool=None):
        log.append("capture")
        yield

    snap = types.SimpleNamespace(pools=set(), allocated=0, device_used=0,
                                 private_bytes=lambda old: 0)
    monkeypatch.setattr(torch.cuda, "Stream", Stream)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: Stream())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "graph", graph)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", Graph)
    monkeypatch.setattr(torch.cuda, "graph_pool_handle", lambda: object())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(graph_memory, "reset_state", lambda device: None)
    monkeypatch.setattr(memory, "state", lambda device: snap)
    monkeypatch.setattr(memory, "clear_cublas_workspaces", lambda: None)
    return log


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_hf_causal_lm_captures_every_size_largest_first(cuda_calls, phase):
    from runner.core.graph_memory import capture_series
    from runner.core.workloads import resolve

    w = resolve("hf-causal-lm", {"model": "tiny-llama", "phase": phase, "layers": "2"})
    model, make_input = w.build("cpu")
    seen = []
    prepare = model.prepare_batch

    def spy(b):
        seen.append(b)
        prepare(b)

    model.prepare_batch = spy
    rows = capture_series(model, make_input, [1, 4, 2], "shared", "cpu")
    assert [r.batch_size for r in rows] == [4, 2, 1]
    assert seen == [4, 2, 1]  # the state of each size, made before its warm-up
    assert cuda_calls == ["capture", "replay"] * 3  # each replays while its state lives
    assert model.cached_length() == model.position + model.tokens  # rewound each step


def test_a_model_without_per_batch_state_is_captured_as_before(cuda_calls):
    from runner.core.graph_memory import capture_series
    from runner.core.workloads import resolve

    model, make_input = resolve("mlp", {"width": "32", "depth": "2"}).build("cpu")
    rows = capture_series(model, make_input, [8, 1], "private", "cpu")
    assert [r.batch_size for r in rows] == [8, 1]
    assert cuda_calls == ["capture", "replay"] * 2


@pytest.mark.gpu
@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_hf_causal_lm_graph_memory_on_a_gpu(phase):
    """The H200 crash, for real: every size captured and replayed, pools measured."""
    import torch

    from runner.core.graph_memory import capture_series
    from runner.core.workloads import resolve

    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    w = resolve("hf-causal-lm", {"model": "tiny-llama", "phase": phase, "layers": "2"})
    model, make_input = w.build("cuda")
    for pool in ("shared", "private"):
        rows = capture_series(model, make_input, [1, 2, 4], pool)
        assert [r.batch_size for r in rows] == [4, 2, 1]
        assert all(r.pool_reserved_bytes > 0 for r in rows)
        # the pools only grow as the graphs are kept
        assert all(a.pool_reserved_bytes <= b.pool_reserved_bytes
                   for a, b in zip(rows[:-1], rows[1:], strict=True))


def test_a_training_step_is_refused_before_any_capture():
    """train-step crashed in the capture loop on the H100 ('TrainTask' object is not
    callable); it is now refused up front with the reason, inference workloads pass."""
    from runner.core.graph_memory import not_capturable
    from runner.core.workloads import resolve

    train, _ = resolve("train-step", {}).build("cpu")
    reason = not_capturable(train, "train-step")
    assert reason and "training step" in reason and "train-step" in reason
    mlp, _ = resolve("mlp", {}).build("cpu")
    assert not_capturable(mlp, "mlp") is None
