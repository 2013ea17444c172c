"""The one table that knows each metric's label, unit, direction and display format.

Charts (axis titles, tooltips) and tables (column names, cell text) read it, so a unit is
written in exactly one place.
"""

from __future__ import annotations

from dataclasses import dataclass

BYTES_PER_MIB = 2**20


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


_MIB_SCALE = 1 / BYTES_PER_MIB

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
    # Issue 44 (contract/memory.py): a mode's memory cost, what it keeps beyond eager,
    # and its parts; the peak during a step is transient, not kept.
    "memory_cost_bytes": Metric("Memory cost over eager", "MiB", "lower", "{:+,.1f}",
                                _MIB_SCALE),
    "graph_pool_bytes": Metric("Graph pool", "MiB", "lower", "{:,.1f}", _MIB_SCALE),
    "default_pool_bytes": Metric("Default pool", "MiB", "lower", "{:,.1f}", _MIB_SCALE),
    "peak_allocated_bytes": Metric("Peak during a step", "MiB", "lower", "{:,.1f}",
                                   _MIB_SCALE),
    # Since bundle 7 what the mode keeps in the allocator over its clean start; before,
    # how setup moved the reserve (negative where it released cached blocks).
    "reserved_delta_bytes": Metric("Kept in the allocator", "MiB", None, "{:+,.1f}",
                                   _MIB_SCALE),
    "max_abs_err": Metric("Max abs error vs eager", "", "lower", "{:.2e}"),
    "batch_size": Metric("Batch size", "", None, "{:,.0f}"),
    # Energy (issue 28): from the GPU's energy counter, over windows apart from the rounds.
    "energy_mj_per_step": Metric("Energy per step", "mJ", "lower", "{:.3f}"),
    "energy_mj_per_step_ci_low": Metric("Energy per step 95% CI low", "mJ", "lower",
                                        "{:.3f}"),
    "energy_mj_per_step_ci_high": Metric("Energy per step 95% CI high", "mJ", "lower",
                                         "{:.3f}"),
    "avg_power_w": Metric("Average power", "W", None, "{:.1f}"),
    "idle_power_w": Metric("Idle power", "W", None, "{:.1f}"),
    # Negative where a mode draws about idle power: within the counter's error of idle.
    "energy_above_idle_mj_per_step": Metric("Energy per step above idle", "mJ", "lower",
                                            "{:+.3f}"),
    "energy_gain": Metric("Energy gain over eager", "x", "higher", "{:.2f}x"),
    "energy_gain_ci_low": Metric("Energy gain 95% CI low", "x", "higher", "{:.2f}x"),
    "energy_gain_ci_high": Metric("Energy gain 95% CI high", "x", "higher", "{:.2f}x"),
    # Host and GPU apart (issue 39; contract/host_split.py): the step's three parts.
    "split_gpu_ms": Metric("Step: GPU busy", "ms", "lower", "{:.4f}"),
    "split_launch_ms": Metric("Step: launch cost (launches x probe)", "ms", "lower",
                              "{:.4f}"),
    "split_rest_ms": Metric("Step: rest of the host", "ms", "lower", "{:.4f}"),
}
