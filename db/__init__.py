"""Storage: SQLAlchemy models, the engine factory, writers, queries and bundle import/export.

Nothing here connects at import time and nothing here imports torch.
"""
