"""A run's energy figures as the pages read them (issue 28): the points that have one,
why a run has none, and each mode's largest gain in words (the headline's own energy words
come from the run's summary, runner/format/run_summary.py). No charts here (pages/charts/
draws them).

Energy per step comes from the GPU's energy counter over windows apart from the rounds
(runner/core/energy.py). A point without a figure carries the reason (no CUDA device, no
NVML, --no-energy); a point from before bundle version 5 carries neither.
"""

from __future__ import annotations

import pandas as pd

from pages.logic import analysis
from runner.format.run_summary import less_energy

ENERGY_COLUMNS = ("energy_mj_per_step", "energy_mj_per_step_ci_low",
                  "energy_mj_per_step_ci_high", "avg_power_w", "idle_power_w",
                  "energy_above_idle_mj_per_step", "energy_gain", "energy_gain_ci_low",
                  "energy_gain_ci_high")
CAPTION = ("Energy per step from the GPU's energy counter (NVML), read over windows after "
           "the timing rounds, the modes interleaved; above idle: less the device's idle "
           "power, read once before the sweep (negative: within the counter's error of idle).")
NOT_RECORDED = ("No energy figures: this run was measured before launchbench recorded "
                "energy (bundle version 5).")


def energy_points(points: pd.DataFrame) -> pd.DataFrame:
    """The ok points with an energy figure, energy columns numeric (NaN: unknown)."""
    ok = analysis.usable(points)
    if ok.empty:
        return pd.DataFrame(columns=["mode", "batch_size", *ENERGY_COLUMNS])
    df = ok[["mode", "batch_size"]].assign(
        **{c: analysis.numeric_column(ok, c) for c in ENERGY_COLUMNS})
    return df[df["energy_mj_per_step"].notna()]


def has_energy(points: pd.DataFrame) -> bool:
    return not energy_points(points).empty


def missing_reason(points: pd.DataFrame) -> str:
    """Why a run has no energy figure, in one line: the reason its points recorded (the
    most common one), or that it predates energy."""
    reasons = (points["energy_unavailable_reason"].dropna()
               if "energy_unavailable_reason" in points else pd.Series(dtype=object))
    if reasons.empty:
        return NOT_RECORDED
    return f"No energy figures: {reasons.value_counts().index[0]}."


def findings(points: pd.DataFrame) -> list[str]:
    """Per graph mode, its largest energy gain over eager in words, with the interval and
    both energies per step, e.g. 'Energy: cuda-graph at batch 8: 17.0 mJ per step against
    eager's 107 mJ: 84% less (6.2x, 95% 5.9-6.5x), 126 W against 118 W'. Empty where the
    run has no energy gain."""
    df = energy_points(points)
    if df.empty:
        return []
    eager = df[df["mode"] == "eager"].set_index("batch_size")
    lines = []
    for mode, rows in df[df["energy_gain"].notna() & (df["mode"] != "eager")].groupby(
            "mode", sort=False):
        r = rows.loc[rows["energy_gain"].idxmax()]
        b = int(r["batch_size"])
        ci = ("" if pd.isna(r["energy_gain_ci_low"]) or pd.isna(r["energy_gain_ci_high"])
              else f", 95% {r['energy_gain_ci_low']:.2f}-{r['energy_gain_ci_high']:.2f}x")
        line = (f"Energy: {mode} at batch {b}: {r['energy_mj_per_step']:.3g} mJ per step"
                f": {less_energy(r['energy_gain'])} than eager ({r['energy_gain']:.2f}x{ci})")
        if b in eager.index:
            e = eager.loc[b]
            line += (f"; eager {e['energy_mj_per_step']:.3g} mJ; average power "
                     f"{r['avg_power_w']:.0f} W against eager's {e['avg_power_w']:.0f} W")
        lines.append(line + ".")
    return lines
