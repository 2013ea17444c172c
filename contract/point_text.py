"""The point in flight as one line of text, and back: what the terminal's progress, the
worker's heartbeat (the jobs table keeps only text) and the Launch page's bar share.
Standard library only (the contract, which pages may import)."""

from __future__ import annotations

import re
from typing import Any

from contract.vocab import POINT_PHASES


def describe(current: tuple[Any, ...] | None) -> str | None:
    """The point in flight in words: 'compile batch 1: setup (compile or capture,
    warm-up)'; (what, batch) without a phase reads 'eager batch 64'. What the terminal,
    the worker's heartbeat and so the Launch page all show."""
    if not current:
        return None
    what, batch, *rest = current
    text = f"{what} batch {batch}"
    if rest and rest[0]:
        text += f": {POINT_PHASES.get(rest[0], rest[0])}"
    return text


_POINT = re.compile(r"(?P<what>.+) batch (?P<batch>\d+)(?:: (?P<phase>.+))?")
_PHASE_OF = {text: key for key, text in POINT_PHASES.items()}


def parse(text: str | None) -> tuple[str, int, str | None] | None:
    """describe()'s text back as (what, batch, phase key or None); None for anything else
    (a job's status). The Launch page reads a job's current point with it:
    the jobs table keeps the text only."""
    m = _POINT.fullmatch(text or "")
    if m is None:
        return None
    return m["what"], int(m["batch"]), _PHASE_OF.get(m["phase"]) if m["phase"] else None


