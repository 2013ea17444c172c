"""A user factory whose model fakes a sticky CUDA error, for the CPU tests of the sweep's
fatal-error path (tests/runner/core/test_sticky_cuda_error.py).

The real thing poisons the process's CUDA context: every CUDA call after it fails. Here
a module-level flag plays the context: once the model has raised, every later call in
the same process raises too, and a fresh process (a new import) starts clean, as a new
CUDA context does.
"""

from __future__ import annotations

import torch
from torch import nn

MESSAGE = ("CUDA error: device-side assert triggered\nCUDA kernel errors might be "
           "asynchronously reported at some other API call")
_poisoned = False


class Sticky(nn.Module):
    def __init__(self, at: int, every: bool, calls: int):
        super().__init__()
        self.at, self.every, self.calls = at, every, calls
        self.seen = 0  # calls at a failing batch size so far
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        global _poisoned
        b = x.shape[0]
        failing = b == self.at or (self.every and b >= self.at)
        if failing:
            self.seen += 1
        if _poisoned or (failing and self.seen > self.calls):
            _poisoned = True
            raise RuntimeError(MESSAGE)
        return self.lin(x)


def sticky(at: str = "8", every: str = "0", calls: str = "0"):
    """Fails at batch `at` (and, with every=1, at every batch size from it on) after
    `calls` good calls there (calls=1: eager's reference passes, the first mode fails)."""
    model = Sticky(int(at), every == "1", int(calls))
    return model, lambda b, gen=None: torch.randn(b, 8, generator=gen)


class OutOfBounds(nn.Module):
    """The real thing on a GPU: at batch `at` an embedding lookup reads past its table,
    which CUDA's kernel answers with a device-side assert (sticky: the context is lost)."""

    def __init__(self, at: int):
        super().__init__()
        self.at = at
        self.emb = nn.Embedding(16, 8)

    def forward(self, x):
        idx = torch.arange(x.shape[0], device=x.device) % 16
        if x.shape[0] == self.at:
            idx = idx + 1000  # planted: rows 1000.. of a 16-row table
        return self.emb(idx) + x


def oob(at: str = "8"):
    model = OutOfBounds(int(at))
    return model, lambda b, gen=None: torch.randn(b, 8, generator=gen)
