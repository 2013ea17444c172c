"""The runner: what CUDA Graphs buy, measured on a GPU host (`python -m runner`).

Four packages, one floor above the other (docs/ARCHITECTURE.md, "Rooms and floors"):
format/ (the leaf: typed records, the bundle format, vocabularies, limits, specs;
standard library only), core/ (the measuring core, on torch), serve/ (the serve scenario,
on the core) and ops/ (the command line, the worker, sinks, executors; on all of them and
on db/). Each imports only from the floors below it; db/ and pages/ import format/ alone
of the runner (pages also two entries of ops/), and tests/test_import_rules.py holds them
to it. How the core measures: docs/MEASUREMENT.md.
"""
