"""Tests of runner/, by its packages: the measuring core, the torch-free format leaf, the
operations (CLI, workers, executors) and serve scenarios."""
