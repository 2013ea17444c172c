"""The sub-commands of `python -m runner`, one module per noun: sweep, store (import,
export, list, delete), jobs (enqueue, jobs, cancel, worker), hosts (workers), serve,
slurm (slurm-script), capture (advise-capture, graph-memory); flags.py holds the flags
and the table several share. Each module has `register(subparsers)`, which sets
`func=run` with `run(args) -> int` (runner/ops/cli.py).

All are imported whenever the parser is built, so at module level they import only the
standard library, contract/ and torch-free modules of the runner; torch, the
measuring core and db/ inside functions: import, export and list run without torch.
"""
