"""Tests of db/: storage on SQLite and PostgreSQL, the job queue, liveness, read-only mode,
the importers."""
