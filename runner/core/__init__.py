"""The measuring core: workloads and the four modes, timing, interleaved rounds and their
intervals, profiling, memory, energy, the host gate, one batch size (point.py), the sweep
(sweep.py), and the fresh processes of `--processes` (repeat.py) and of a lost CUDA
context (rescue.py). The method and its reasons: docs/MEASUREMENT.md.

Imports torch, the standard library and contract/ (optionally transformers and timm
for their workloads, nvidia-ml-py for energy, triton for its version); never db/, pages/,
runner/ops/ or runner/serve/, so a GPU host needs torch alone to produce a result file.
"""
