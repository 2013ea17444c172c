"""Tests of contract/, the torch-free leaf: bundles, the typed point, verdicts, buckets
and capture sizes, sweep specs."""
