"""A workload's typed parameters and its catalog entry, torch-free: the nouns the catalog
(contract/catalog.py) and the model workloads' entries (contract/model_catalog.py)
are both made of."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

PARAM_TYPES = ("int", "float", "str", "choice")


class WorkloadError(ValueError):
    """Bad workload name or parameter; str() is one line naming the bad value."""


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: str  # one of PARAM_TYPES
    default: Any
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    help: str = ""

    def parse(self, raw: Any, workload: str) -> Any:
        """One raw value (text from a CLI flag or a form) to its typed value."""
        where = f"workload {workload!r} parameter {self.name!r}"
        text = str(raw).strip()
        if self.type == "choice":
            if text not in (self.choices or ()):
                raise WorkloadError(f"{where}: {text!r} is not one of "
                                    f"{', '.join(self.choices or ())}")
            return text
        if self.type == "str":
            return text
        kind = "an integer" if self.type == "int" else "a number"
        if not text.isascii():  # int() and float() read "２" as 2; URLs and specs refuse it
            raise WorkloadError(f"{where}: {text!r} is not {kind} (ASCII digits 0-9)")
        try:
            value = int(text) if self.type == "int" else float(text)
        except ValueError:
            raise WorkloadError(f"{where}: {text!r} is not {kind}") from None
        if self.type == "float" and not math.isfinite(value):
            raise WorkloadError(f"{where}: {text!r} is not a finite number")
        lo = self.min if self.min is not None else -math.inf
        hi = self.max if self.max is not None else math.inf
        if not lo <= value <= hi:
            raise WorkloadError(f"{where}: {text!r} is outside {lo:g}..{hi:g}")
        return value


@dataclass(frozen=True)
class WorkloadInfo:
    name: str
    description: str
    params: dict[str, ParamSpec]
    # Checks across parameters (typed values in, an error text or None out), run where
    # the single values are, so a queue without torch refuses what a build would.
    check: Callable[[Mapping[str, Any]], str | None] | None = None
    # The check instead of `check` where the input comes from a browser or the queue
    # (allow_import=False): stricter where a value could reach the disk or the network.
    check_untrusted: Callable[[Mapping[str, Any]], str | None] | None = None
