"""The one table that knows each metric's label, unit, direction and display format.

Charts (axis titles, tooltips) and tables (column names, cell text) read it, so a unit is
written in exactly one place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MISSING = "—"  # what an unknown figure looks like; never 0
NO_INTERVAL = "no interval"  # a figure measured before intervals existed (bundle < 3)


@dataclass(frozen=True)
class Metric:
    label: str
    unit: str            # "" for a plain ratio or count
    direction: str | None  # "lower" / "higher" is better; None: neither (a count, a size)
    fmt: str             # str.format pattern for one value
    scale: float = 1.0   # stored value * scale = shown value (bytes -> MiB)

    @property
    def title(self) -> str:
        """Axis / column title with the unit, e.g. 'Step time (ms)'."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


MIB = 1 / (1024 * 1024)

METRICS: dict[str, Metric] = {
    "step_ms": Metric("Step time", "ms", "lower", "{:.3f}"),
    "step_ms_p10": Metric("Step time p10", "ms", "lower", "{:.3f}"),
    "step_ms_p90": Metric("Step time p90", "ms", "lower", "{:.3f}"),
    "step_ms_ci_low": Metric("Step time 95% CI low", "ms", "lower", "{:.3f}"),
    "step_ms_ci_high": Metric("Step time 95% CI high", "ms", "lower", "{:.3f}"),
    "latency_ms": Metric("Latency per call", "ms", "lower", "{:.3f}"),
    "eager_ms": Metric("Eager step time", "ms", "lower", "{:.3f}"),
    "speedup": Metric("Speedup over eager", "x", "higher", "{:.2f}x"),
    "speedup_ci_low": Metric("Speedup 95% CI low", "x", "higher", "{:.2f}x"),
    "speedup_ci_high": Metric("Speedup 95% CI high", "x", "higher", "{:.2f}x"),
    "ratio": Metric("Speed ratio", "x", "higher", "{:.2f}x"),
    # A host property (the CPU, driver and Python), not a GPU one: one trivial launch.
    "launch_us": Metric("Host launch cost", "us", "lower", "{:.1f}"),
    "host_launch_ms": Metric("Host launch time", "ms", None, "{:.3f}"),
    "setup_s": Metric("Setup (compile + capture)", "s", "lower", "{:.2f}"),
    "payback_steps": Metric("Steps to pay back setup", "steps", "lower", "{:,.0f}"),
    "saving_ms": Metric("Saving per step", "ms", "higher", "{:.3f}"),
    "samples": Metric("Timed blocks", "", None, "{:.0f}"),
    "host_launches_per_step": Metric("Host launches per step", "", "lower", "{:.1f}"),
    "graph_launches_per_step": Metric("Graph launches per step", "", None, "{:.1f}"),
    "gpu_kernels_per_step": Metric("GPU kernels per step", "", None, "{:.1f}"),
    "gpu_busy_ms": Metric("GPU busy time", "ms", None, "{:.3f}"),
    "idle_ms": Metric("GPU idle (launch gaps)", "ms", "lower", "{:.3f}"),
    "busy_fraction": Metric("GPU busy fraction", "", "higher", "{:.0%}"),
    "graph_pool_bytes": Metric("Graph pool", "MiB", "lower", "{:,.1f}", MIB),
    "peak_allocated_bytes": Metric("Peak allocated", "MiB", "lower", "{:,.1f}", MIB),
    # Negative where setup made the allocator release cached blocks (empty_cache): it
    # says what setup did to the reserve, not what the mode costs; pool + peak does that.
    "reserved_delta_bytes": Metric("Reserved change in setup", "MiB", None, "{:+,.1f}", MIB),
    "total_mib": Metric("Memory held (pool + peak)", "MiB", "lower", "{:,.1f}"),
    "extra_mib": Metric("Extra memory over eager", "MiB", "lower", "{:+,.1f}"),
    "max_abs_err": Metric("Max abs error vs eager", "", "lower", "{:.2e}"),
    "batch_size": Metric("Batch size", "", None, "{:,.0f}"),
}


def metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"no metric named {name!r} in pages.common.metrics.METRICS") from None


def title(name: str) -> str:
    return metric(name).title


def is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def shown(name: str, value: Any) -> float | None:
    """The value in display units (bytes -> MiB), None when unknown."""
    if is_missing(value):
        return None
    return float(value) * metric(name).scale


def format_interval(name: str, low: Any, high: Any) -> str:
    """A 95% interval as text, e.g. '6.50-7.60x' or '1.230-1.300 ms'; unknown bounds
    read 'no interval' (never a made-up one)."""
    lo, hi = shown(name, low), shown(name, high)
    if lo is None or hi is None:
        return NO_INTERVAL
    m = metric(name)
    a, b = m.fmt.format(lo), m.fmt.format(hi)
    if m.unit == "x":
        return f"{a.removesuffix('x')}-{b}"
    return f"{a}-{b} {m.unit}" if m.unit else f"{a}-{b}"


def format_value(name: str, value: Any) -> str:
    """One value as text with its unit; unknown shows as a dash, never as 0."""
    v = shown(name, value)
    if v is None:
        return MISSING
    m = metric(name)
    text = m.fmt.format(v)
    if m.unit and m.unit not in ("x",) and not text.endswith("%"):
        text = f"{text} {m.unit}"
    return text
