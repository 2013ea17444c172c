"""The serve scenario (`python -m runner serve`): one reproducible stream of requests of
varying batch size replayed under each strategy (scenario.py), the bucket advisor's
profile of candidate sizes (profile.py), and what both share (context.py). The pure parts
(request streams, buckets, padding, the advisor's cost model, the bundle's serve section)
are contract/'s.

Imports torch, runner/core/ and contract/; never db/, pages/ or runner/ops/ (the
command and the storing are runner/ops/commands/serve.py's).
"""
