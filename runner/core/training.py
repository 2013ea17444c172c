"""The `train-step` workload: one training step (forward, MSE loss, backward, AdamW step)
in the four modes, each checked against eager's parameters after CHECK_STEPS steps.

Imports torch: only runner.core.workloads' build function imports this module.

The runner measures inference models through runner/core/modes.py; a training step needs
its own mode builders, so the task object the workload builds carries them
(`prepare_mode`, called by modes.prepare) together with its own correctness reference
(`reference`): parameters after CHECK_STEPS steps from the same initial weights on the
same batch, which runner/core/point.py compares as it compares inference outputs.

The modes:
- eager: zero_grad(set_to_none), loss, backward, optimizer step;
- compile: the same with forward + loss through torch.compile (AOTAutograd compiles
  the backward too); the optimizer step stays eager;
- reduce-overhead: forward + loss through torch.compile(mode="reduce-overhead"): CUDA
  Graph trees record a forward and a backward graph, in one memory pool shared by the
  tree. Which graphs were recorded and their pool are read back from the tree manager
  (torch._inductor.cudagraph_trees, private API: read defensively). As a reference for
  what sharing saves, the eager forward + loss and its backward are also captured by
  hand, each in a pool of its own, after the mode's own memory figures are taken;
- cuda-graph: the whole step captured as PyTorch's CUDA semantics notes show it
  ("whole-network capture"): static input and target, AdamW(capturable=True) so its step
  count lives on the device, three warm-up steps on a side stream, grads set to None
  before capture so backward allocates them from the graph's pool. The timed step is
  two input copies and one replay.

The two hand captures (cuda-graph, and reduce-overhead's separate-pools reference) run on
fresh leaves: new Parameter tensors over the same storage (`fresh_leaves`). Autograd keeps
each leaf's AccumulateGrad node, and the node remembers the stream it was made on; after
eager steps on the default stream, a captured backward has to sync with that legacy
stream and the capture fails (cudaErrorStreamCaptureImplicit; measured on the H200 with
torch 2.11, PyTorch issue #137483). Fresh leaves get their nodes in the side-stream
warm-up, as PyTorch's whole-network example has them.

All modes share one model and its parameters (as inference modes share one model): they
train the same weights in turn, which changes nothing a timing sees. Each mode has its
own optimizer (its state is a cost that mode pays), and each correctness run first puts
the initial weights back and zeroes its optimizer's state in place, which is exactly a
fresh AdamW's state, at the same addresses a captured graph reads.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from contract.limits import TRAIN_TOLERANCE
from contract.measurement import SeparateGraphs
from contract.vocab import MODE_TABLE, Mode
from runner.core import memory
from runner.core.memory import clear_cublas_workspaces
from runner.core.modes import Prepared, Unsupported, graph_streams, setup_calls

LR = 1e-3
# Steps of the correctness check; the GPU tests ask for 10.
CHECK_STEPS = 10
WARMUP_STEPS = 3  # side-stream warm-up before a capture (torch.cuda.graphs' docs use 3)


class Block(nn.Module):
    """A pre-norm transformer block: self-attention (SDPA) and a 4x MLP."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2))
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


def build_task(params: Mapping[str, Any], dtype, device: str):
    """(TrainTask, make_input(batch_size, generator) -> (input, target))."""
    width = params["width"]
    shape: tuple[int, ...]
    if params["model"] == "transformer":
        net: nn.Module = nn.Sequential(*(Block(width, params["heads"])
                                         for _ in range(params["blocks"])))
        shape = (params["seq"], width)
    else:
        layers: list[nn.Module] = []
        for _ in range(params["depth"]):
            layers += [nn.Linear(width, width), nn.ReLU()]
        net, shape = nn.Sequential(*layers), (width,)
    net = net.to(device=device, dtype=dtype).train()

    def make_input(batch_size: int, generator=None):
        # Drawn on the CPU so a seeded generator gives the same batch on any device.
        x = torch.randn(batch_size, *shape, generator=generator)
        y = torch.randn(batch_size, *shape, generator=generator)
        return x.to(device=device, dtype=dtype), y.to(device=device, dtype=dtype)

    return TrainTask(net, device), make_input


class TrainTask:
    """What the runner calls "the model" for train-step (see the module docstring)."""

    needs_grad = True  # runner/core/point.py runs this workload with autograd on

    def __init__(self, net: nn.Module, device: str):
        self.net, self.device = net, device
        self.cuda = device.startswith("cuda")
        self.params = list(net.parameters())
        self.initial = [p.detach().clone() for p in self.params]

    def parameters(self):
        return iter(self.params)

    def loss(self, x, target):
        return F.mse_loss(self.net(x), target)

    def fresh_leaves(self):
        """(leaves, loss): new leaf tensors over the parameters' storage and the loss
        computed through them. Training on them trains the model's own weights (restore()
        resets both); their autograd nodes are new (see the module docstring)."""
        leaves: dict[str, torch.Tensor] = {name: nn.Parameter(p.detach())
                                           for name, p in self.net.named_parameters()}

        def loss(x, target):
            return F.mse_loss(torch.func.functional_call(self.net, leaves, (x,)), target)

        return list(leaves.values()), loss

    def optimizer(self, params=None) -> torch.optim.Optimizer:
        # capturable on CUDA in every mode, so all modes run the same optimizer code
        # (the step count on the device, no host sync) and only the launch path differs.
        return torch.optim.AdamW(self.params if params is None else params, lr=LR,
                                 capturable=self.cuda)

    def eager_step(self, opt, x, target, loss=None) -> None:
        opt.zero_grad(set_to_none=True)
        (loss or self.loss)(x, target).backward()
        opt.step()

    @torch.no_grad()
    def restore(self, opt) -> None:
        """Initial weights and a fresh optimizer state, in place (same addresses)."""
        for p, p0 in zip(self.params, self.initial, strict=True):
            p.copy_(p0)
        for state in opt.state.values():
            for v in state.values():
                if isinstance(v, torch.Tensor):
                    v.zero_()

    def _check(self, opt, step_on, batch) -> list:
        self.restore(opt)
        for _ in range(CHECK_STEPS):
            step_on(batch)
        return [p.detach().clone() for p in self.params]

    def reference(self, batch) -> list:
        """Eager's parameters after CHECK_STEPS steps: what every mode must match."""
        opt = self.optimizer()
        out = self._check(opt, lambda b: self.eager_step(opt, *b), batch)
        self.restore(opt)
        for p in self.params:
            p.grad = None
        return out

    def compare(self, params: list, reference: list) -> tuple[float, float, float]:
        """(max_abs_err, tolerance, relative error) of a mode's parameters after
        CHECK_STEPS steps against eager's: max_abs_err elementwise, as for inference;
        the verdict by the relative L2 distance of the updates (contract/limits.py,
        TRAIN_TOLERANCE, says why not elementwise)."""
        err = diff = moved = 0.0
        for p, r, p0 in zip(params, reference, self.initial, strict=True):
            p, r, p0 = p.double(), r.double(), p0.double()
            err = max(err, float((p - r).abs().max()) if r.numel() else 0.0)
            diff += float(((p - r) ** 2).sum())
            moved += float(((r - p0) ** 2).sum())
        rel = (diff ** 0.5) / (moved ** 0.5) if moved > 0 else diff ** 0.5
        dtype = str(self.initial[0].dtype).replace("torch.", "")
        return err, TRAIN_TOLERANCE.get(dtype, 0.0), rel

    def prepare_mode(self, mode: str, batch, device: str) -> Prepared:
        # The mode's entry of the table (contract/vocab.py) says how: compiled with its
        # compile mode, captured by hand, or eager (runner/core/modes.py reads it alike).
        entry = MODE_TABLE.get(mode)
        if entry is None:
            raise ValueError(f"unknown mode {mode!r}")
        if entry.graph and not self.cuda:
            raise Unsupported(f"{mode} needs CUDA graphs, which exist on CUDA devices only; "
                              f"this point runs on {device}")
        if entry.compiled:
            prepared = self._compile_mode(entry, *batch)
        else:
            prepared = (self._cuda_graph if entry.graph else self._eager)(*batch)
        prepared.details.update(correct_after_steps=CHECK_STEPS,
                                rel_err_measure="relative L2 distance of the parameter "
                                                "update from eager's")
        return prepared

    # --- the modes ------------------------------------------------------------------------

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def _timed(self, fn) -> float:
        self._sync()
        t0 = time.perf_counter()
        fn()
        self._sync()
        return time.perf_counter() - t0

    def _eager(self, x, y) -> Prepared:
        opt = self.optimizer()

        def step():
            self.eager_step(opt, x, y)

        t = self._timed(step)  # the first step: lazy init and the optimizer's state
        return Prepared(step=step, setup_s=t, setup_calls_s=[t], keep=[opt],
                        run=lambda b: self._check(opt, lambda bb: self.eager_step(opt, *bb),
                                                  b))

    def _compiled(self, x, y, calls: int, graphs: bool = False, **compile_kwargs) -> Prepared:
        opt = self.optimizer()
        fn = torch.compile(self.loss, dynamic=False, **compile_kwargs)

        def one(xx, yy):
            opt.zero_grad(set_to_none=True)
            if graphs:
                # One training iteration = one tree generation: the last step's outputs
                # (its grads) may be overwritten from here on.
                torch.compiler.cudagraph_mark_step_begin()
            fn(xx, yy).backward()
            opt.step()

        # reduce-overhead needs three calls (warm up, record, replay), compile two.
        setup = [self._timed(lambda: one(x, y)) for _ in range(calls)]
        return Prepared(step=lambda: one(x, y), setup_s=sum(setup), setup_calls_s=setup,
                        keep=[opt, fn], run=lambda b: self._check(opt, lambda bb: one(*bb), b))

    def _compile_mode(self, entry: Mode, x, y) -> Prepared:
        kwargs = {"mode": entry.compile_mode} if entry.compile_mode else {}
        prepared = self._compiled(x, y, setup_calls(entry), entry.graph, **kwargs)
        if entry.graph:  # CUDA Graph trees: what they recorded, and the separate pools
            prepared.details["cudagraph_trees"] = tree_graphs(self.device)
            prepared.separate_graphs = lambda: self.separate_graph_pools(x, y)
        return prepared

    def _cuda_graph(self, x, y) -> Prepared:
        leaves, loss = self.fresh_leaves()
        opt = self.optimizer(leaves)
        sx, sy = x.clone(), y.clone()
        self._sync()
        t0 = time.perf_counter()
        side, capture = graph_streams()  # never one stream (modes.graph_streams says why)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                self.eager_step(opt, sx, sy, loss)
        torch.cuda.current_stream().wait_stream(side)
        self._sync()
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)  # backward allocates grads from the graph's pool
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=capture):
            static_loss = loss(sx, sy)
            static_loss.backward()
            opt.step()
        self._sync()
        t2 = time.perf_counter()
        # The graph reads and writes these grads.
        grads = [p.grad for p in leaves]

        def step():
            sx.copy_(x)
            sy.copy_(y)
            graph.replay()

        def one(b):
            sx.copy_(b[0])
            sy.copy_(b[1])
            graph.replay()

        return Prepared(step=step, run=lambda b: self._check(opt, one, b),
                        setup_s=t2 - t0, setup_calls_s=[t1 - t0, t2 - t1], graph=graph,
                        keep=[opt, sx, sy, static_loss, grads, leaves])

    # --- reduce-overhead's reference: forward and backward in separate pools ---------------

    def separate_graph_pools(self, x, y) -> SeparateGraphs:
        """Capture eager forward + loss and its backward by hand, each in its own pool,
        and return their pool bytes: what reduce-overhead's shared pool is set against.
        The graphs are freed again before the next mode is prepared."""
        leaves, loss_fn = self.fresh_leaves()
        sx, sy = x.clone(), y.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                for p in leaves:
                    p.grad = None
                loss_fn(sx, sy).backward()
        torch.cuda.current_stream().wait_stream(side)
        for p in leaves:
            p.grad = None
        # As before every mode: a cuBLAS workspace left from the warm-up must not decide
        # which pool gets the next one.
        clear_cublas_workspaces()
        m0 = memory.state(self.device)
        fwd, bwd = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(fwd):
                loss = loss_fn(sx, sy)
            m1 = memory.state(self.device)
            with torch.cuda.graph(bwd):
                loss.backward()
            m2 = memory.state(self.device)
        finally:
            loss = None
            for p in leaves:
                p.grad = None
            fwd.reset()
            bwd.reset()
            del fwd, bwd
            clear_cublas_workspaces()
            gc.collect()
            torch.cuda.empty_cache()
        fwd_pools = set(m1.pools) - set(m0.pools)
        fwd_bytes = sum(m2.pools.get(p, 0) for p in fwd_pools)
        bwd_bytes = m2.private_bytes(set(m1.pools))
        return SeparateGraphs(forward_pool_bytes=fwd_bytes, backward_pool_bytes=bwd_bytes,
                              sum_bytes=fwd_bytes + bwd_bytes,
                              method="eager forward + loss and its backward captured by "
                                     "hand (torch.cuda.graph), each in a pool of its own")


def tree_graphs(device: str) -> dict:
    """The graphs CUDA Graph trees recorded on this device: id, kind (forward, backward,
    inference) and memory pool of each. Read from torch's private tree manager."""
    try:
        from torch._inductor import cudagraph_trees as ct

        index = torch.device(device).index
        manager = ct.get_manager(torch.cuda.current_device() if index is None else index,
                                 create_if_none_exists=False)
    except Exception as e:  # noqa: BLE001 - a private API: say what failed, measure on
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    if manager is None:
        return {"graphs": 0, "pools": 0, "nodes": []}
    nodes, stack = [], list(manager.get_roots())
    while stack:
        node = stack.pop()
        nodes.append(node)
        for children in node.children.values():
            stack.extend(children)
    kinds = getattr(manager, "id_to_mode", {})
    out = []
    for node in sorted(nodes, key=lambda n: n.id.id):
        kind = kinds.get(node.wrapped_function.id)
        pool = node.cuda_graphs_pool
        parent = getattr(node, "parent", None)
        out.append({"graph_id": node.id.id,
                    "kind": kind.name.lower() if kind is not None else None,
                    "pool": list(pool) if isinstance(pool, tuple) else str(pool),
                    "parent": parent.id.id if parent is not None else None})
    return {"graphs": len(out), "pools": len({str(n["pool"]) for n in out}),
            "forward": sum(n["kind"] == "forward" for n in out),
            "backward": sum(n["kind"] == "backward" for n in out), "nodes": out}
