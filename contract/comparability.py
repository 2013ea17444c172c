"""Whether runs measure the same thing, once, over run headers (issue 45): what makes two
runs' curves comparable (the same kind, workload, parameters and precision), the lines a
page shows where they differ, and which runs Compare refuses. The Runs board and Compare
apply compare_rule; runner/history's series key reads comparable_params.

The board refused H200 + L40S + V100 ("workloads differ") while Compare drew the same
three runs. The rule: only another kind of run (serve, graph-memory) is refused, since it
has no speedup curve to overlay; runs of different workloads, parameters or precision can
be laid side by side (that is how a published figure is read against a measured one) but
every page that offers or shows them says what differs. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from contract.plain import MAX_CELL, cut
from contract.run_summary import RunHeader
from contract.vocab import RUN_KIND_TABLE

# What makes two runs' curves comparable: the same model at the same size and precision.
COMPARABLE_FIELDS = ("kind", "workload", "workload_params", "dtype")
_WHAT = {"kind": "run kinds", "workload": "workloads",
         "workload_params": "workload parameters", "dtype": "dtypes"}
# Where a run of another kind is read instead of on Compare (its entry of the run-kind
# table).
OTHER_KIND = {k.name: k.elsewhere for k in RUN_KIND_TABLE.values() if not k.curves}


def value_text(v: Any) -> str:
    """A stored value as a table shows it: a mapping as 'k=v, ...', unknown as a dash."""
    if isinstance(v, Mapping):
        return ", ".join(f"{k}={v[k]}" for k in sorted(v))
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))  # a count widened to float beside a missing value
    return str(v)


def comparable_params(params: Any, dtype: Any) -> Any:
    """The workload parameters as compared. The runner records the dtype among them too;
    it is compared once, as dtype, so a bundle that leaves it out of its parameters still
    compares: a dtype among them is dropped unless it differs from the run's."""
    if not isinstance(params, Mapping):
        return params
    if "dtype" in params and params["dtype"] not in (None, dtype):
        return dict(params)
    return {k: v for k, v in params.items() if k != "dtype"}


def header_params(header: RunHeader) -> Any:
    return comparable_params(header.workload_params, header.dtype)


def _field_text(h: RunHeader, field: str) -> str:
    return value_text(header_params(h) if field == "workload_params" else getattr(h, field))


def comparability(headers: Sequence[RunHeader]) -> list[str]:
    """One warning line per field that differs between the runs (kind, workload,
    parameters, dtype): their curves then measure different things."""
    warnings: list[str] = []
    if len(headers) < 2:
        return warnings
    for field in COMPARABLE_FIELDS:
        values = {h.id: _field_text(h, field) for h in headers}
        if len(set(values.values())) > 1:
            # Each value cut to a cell's length: one 100,000-character parameter held the
            # whole page (the values in full: the runs' parameters download, Compare).
            listed = "; ".join(f"run {rid}: {cut(v, MAX_CELL)}" for rid, v in values.items())
            warnings.append(f"Not comparable: {_WHAT[field]} differ ({listed}).")
    return warnings


def compare_rule(headers: Sequence[RunHeader]) -> tuple[list[str], list[str]]:
    """(refusals, warnings) for comparing these runs: a refusal per run that is not a
    sweep; a warning per field that makes the curves measure different things."""
    if len(headers) < 2:
        return [], []
    refusals = [f"Run {h.id} is a {h.kind} run: Compare overlays sweeps. Open "
                f"it {OTHER_KIND[h.kind]} instead." for h in headers if h.kind in OTHER_KIND]
    return refusals, comparability(headers)


__all__ = ["COMPARABLE_FIELDS", "OTHER_KIND", "comparability", "comparable_params",
           "compare_rule", "header_params", "value_text"]
