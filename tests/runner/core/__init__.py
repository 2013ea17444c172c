"""Tests of runner/core/: timing, rounds, sweeps, workloads, energy windows, profiling;
test_gpu_* need CUDA."""
