"""Sweep progress on stderr: points done, the point being measured, ETA.

A tqdm bar on a terminal; one plain line per point in a log file or where tqdm is not
installed (a GPU host needs nothing but torch). tqdm is imported here only, not by the
measuring core.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from contract.measurement import Measurement
from contract.point_text import describe, parse

__all__ = ["Progress", "describe", "parse"]


def _columns(stream) -> int:
    """Terminal width; 0 on a pseudo-terminal without a size, where a bar shows nothing."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 80  # a stream without a descriptor that says it is a terminal: trust it


class Progress:
    """progress(done, total, current, last) for run_sweep, on stderr: a tqdm bar (points
    done, the mode and phase in flight, ETA) on a terminal; one plain line per update in a
    log, or where tqdm is not installed (GPU hosts need only torch)."""

    def __init__(self, stream=None, clock=time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.clock = clock  # injected by tests
        self._tqdm: Any = None  # tqdm's class, where installed
        if self.stream.isatty() and _columns(self.stream) >= 40:
            try:
                from tqdm import tqdm as _tqdm

                self._tqdm = _tqdm
            except ImportError:
                pass
        self.bar: Any = None  # a tqdm bar, made at the first update
        self.t0: float | None = None

    def _write(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def __call__(self, done: int, total: int, current: tuple[str, int] | None,
                 last: Measurement | None) -> None:
        if self.t0 is None:
            self.t0 = self.clock()
        if last is not None and last.status == "error":
            first = ((last.message or "").strip().splitlines() or [""])[0]
            self._write(f"{last.mode} batch {last.batch_size}: error: "
                        f"{first[:300]}")
        # The last call has no current point: all points done is "finished"; fewer is
        # a sweep stopped early (Ctrl-C, kill, a cancelled job): "cancelled".
        now = (describe(current) if current
               else "finished" if done >= total else "cancelled")
        if self._tqdm is None:
            elapsed = self.clock() - self.t0
            # ETA from the average time per point so far: points differ a lot in cost
            # (compile vs eager), so the latest one alone says little about the rest.
            eta = f"{elapsed / done * (total - done):.0f}s" if done else "?"
            self._write(f"sweep {done}/{total} points, {elapsed:.0f}s elapsed, ETA {eta}: "
                        f"{now}")
            return
        if self.bar is None:
            self.bar = self._tqdm(total=total, unit="point", file=self.stream, smoothing=0,
                                  dynamic_ncols=True, desc="sweep")
        self.bar.total = total
        self.bar.set_postfix_str("" if now == "finished" else now, refresh=False)
        self.bar.update(done - self.bar.n)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
