"""Storage, the one package that speaks SQL: SQLAlchemy table models (models.py, each
named `...Row`), the engine factory (engine.py), schema versions through Alembic
(migrations/, migrate.py), writers (store.py: runs as they are measured and bundles in
and out; serve.py; graph_memory.py; rows.py, what they share), named queries returning
DataFrames or records (queries.py), the job queue (jobs.py), liveness of runs and jobs
(liveness.py), workers by host (hosts.py), read-only share mode (access.py) and the
first-start samples (samples.py).

Imports SQLAlchemy, Alembic, pandas and contract/ only: never torch, the measuring
core, the operations or pages/. Nothing connects at import time: every function takes
the engine as an argument.
"""
