"""Tests of runner/serve/: serve scenarios on the CPU, and on a GPU (test_gpu_serve)."""
