"""Read-only share mode: `LAUNCHBENCH_READ_ONLY=1` makes this deployment read, never write.

The guard is called inside every write function the browser can reach (queue, cancel,
import), not only by the pages that hide their buttons: a hidden button is a UI nicety, the
refusal here is what makes a share deployment safe.
"""

from __future__ import annotations

import os

ENV_VAR = "LAUNCHBENCH_READ_ONLY"
_TRUE = ("1", "true", "yes", "on")


class ReadOnlyError(PermissionError):
    """A write refused in read-only share mode. str() is the one line the user sees."""


def read_only() -> bool:
    """Read at every call, not cached at import: tests and a restarted server flip it."""
    return os.environ.get(ENV_VAR, "").strip().lower() in _TRUE


def require_writable(action: str) -> None:
    """Raise ReadOnlyError naming `action` (e.g. "queue a job") in read-only mode."""
    if read_only():
        raise ReadOnlyError(f"read-only share mode ({ENV_VAR}=1): cannot {action}")
