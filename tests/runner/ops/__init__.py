"""Tests of runner/ops/: the command line, the workers and their hosts, the local launcher
and Slurm."""
