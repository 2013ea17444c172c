"""Model factories for the runner's tests (`--workload tests.gpu_models:NAME` style).

Each factory returns (model, example_input_fn), the user-factory contract of
runner/core/workloads.py. Built on whatever device the runner asks for.
"""

from __future__ import annotations

import os
import time

import torch
from torch import nn


class MutatesInput(nn.Module):
    """Adds to its input in place: reduce-overhead must skip CUDA graphs for it."""

    def __init__(self, width: int):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        x.add_(1.0)
        return torch.relu(self.lin(x))


def mutated_input(width: str = "32", device: str = "cpu"):
    w = int(width)
    model = MutatesInput(w).to(device)
    return model, lambda batch, gen=None: torch.randn(batch, w, generator=gen).to(device)


class FailsAt(nn.Module):
    """Raises at one batch size, as a model that OOMs or breaks at a size would."""

    def __init__(self, width: int, fail_at: int, exc: type[BaseException]):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.fail_at, self.exc = fail_at, exc

    def forward(self, x):
        if x.shape[0] == self.fail_at:
            raise self.exc(f"planted failure at batch size {self.fail_at}")
        return self.lin(x)


def failing(fail_at: str = "3", width: str = "8"):
    w = int(width)
    return FailsAt(w, int(fail_at), RuntimeError), lambda batch: torch.randn(batch, w)


def interrupted(fail_at: str = "3", width: str = "8"):
    """Ctrl-C arriving while the point at `fail_at` is being measured."""
    w = int(width)
    return FailsAt(w, int(fail_at), KeyboardInterrupt), lambda batch: torch.randn(batch, w)


def not_a_pair():
    return nn.Linear(2, 2)


class Sleeps:
    """Sleeps LB_TEST_SLEEP seconds a step (0 unset): a sweep slow enough to be caught
    running, by a Ctrl-C or a kill. A plain callable, not a module: eager only."""

    def __init__(self):
        self.linear = nn.Linear(4, 4)

    def __call__(self, x):
        time.sleep(float(os.environ.get("LB_TEST_SLEEP", "0")))
        return self.linear(x)


def slow():
    return Sleeps(), lambda batch: torch.randn(batch, 4)
