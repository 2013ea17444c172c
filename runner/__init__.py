"""The runner: what CUDA Graphs buy, measured on a GPU host (`python -m runner`).

Four packages, one floor above the other (docs/ARCHITECTURE.md, "Rooms and floors"), all
on the top-level contract/ (typed records, the bundle format, vocabularies, limits,
specs; standard library only): core/ (the measuring core, on torch), serve/ (the serve
scenario, on the core), history/ (change points across stored runs) and ops/ (the
command line, the worker, sinks, executors; on all of them and on db/). Each imports
only from the floors below it; db/ imports nothing of the runner and pages/ only two
entries of ops/ and history/; tests/test_import_rules.py holds them to it. How the core
measures: docs/MEASUREMENT.md.
"""
