"""The kernel chain: `kernels` tiny dependent elementwise kernels, one after another.

Two users, one code: the `kernel-chain` workload (a step is one chain on a tensor of
`batch` elements, so the chain's kernel time grows with batch while its launch count
does not), and the host's launch-cost calibration (runner/core/timing.py,
Clock.launch_probe), which is the same chain at its smallest: one element, timed on the
host. So the calibration figure a run carries is the per-kernel cost of this workload at
batch 1, eager.

Why multiply by -1: each kernel reads the one before's output (a real dependency, as in
a model), every result is exact in every dtype (a fused compiled chain and eager's
kernel-by-kernel chain agree to the bit, even in bfloat16), and values never grow.
The first kernel writes a new tensor and the rest work in place, so a step launches
exactly `kernels` kernels, allocates once, and never mutates its input (a mutated input
would make reduce-overhead skip CUDA graphs).

Imports torch lazily: the workload's catalog entry is torch-free.
"""

from __future__ import annotations


def chain(x, kernels: int):
    """`kernels` dependent elementwise kernels on x; returns the last one's output."""
    y = x.mul(-1.0)
    for _ in range(kernels - 1):
        y.mul_(-1.0)
    return y


def build_module(kernels: int):
    """The chain as a parameter-free nn.Module (what the four modes wrap)."""
    from torch import nn

    class KernelChain(nn.Module):
        def __init__(self):
            super().__init__()
            self.kernels = kernels

        def forward(self, x):
            return chain(x, self.kernels)

    return KernelChain()
