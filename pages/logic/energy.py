"""A run's energy figures as the pages read them (issue 28): the points that have one,
why a run has none, and each mode's largest gain in words (the headline's own energy words
come from the run's summary, contract/run_summary.py). No charts here (pages/charts/
draws them).

Energy per step comes from the GPU's energy counter over windows apart from the rounds
(runner/core/energy.py). A point without a figure carries the reason (no CUDA device, no
NVML, --no-energy); a point from before bundle version 5 carries neither.
"""

from __future__ import annotations

import pandas as pd

from contract import verdict as vd
from contract.energy import above_idle_within_error
from contract.run_summary import less_energy
from pages.logic import analysis

ENERGY_COLUMNS = ("energy_mj_per_step", "energy_mj_per_step_ci_low",
                  "energy_mj_per_step_ci_high", "avg_power_w", "idle_power_w",
                  "energy_above_idle_mj_per_step", "energy_gain", "energy_gain_ci_low",
                  "energy_gain_ci_high")
# The rule in one line (contract/energy.py on_step; docs/MEASUREMENT.md, "Energy per
# step"): the windows measure power well, the rounds measure the step.
RULE = ("Energy per step = the energy windows' mean power x the timed step (the rounds' "
        "median), so energy and time per step never disagree.")
WITHIN_ERROR = "within the counter's error"
CAPTION = (RULE + " Power from the GPU's energy counter (NVML), read over windows after the "
           "timing rounds, the modes interleaved; above idle: less the device's idle power, "
           f"read once before the sweep ({WITHIN_ERROR} where the difference is smaller "
           "than the counter can tell, and then not drawn).")
NOT_RECORDED = ("No energy figures: this run was measured before launchbench recorded "
                "energy (bundle version 5).")


def energy_points(points: pd.DataFrame) -> pd.DataFrame:
    """The ok points with an energy figure, energy columns numeric (NaN: unknown)."""
    ok = analysis.usable(points)
    if ok.empty:
        return pd.DataFrame(columns=["mode", "batch_size", *ENERGY_COLUMNS,
                                     "above_idle_within_error", "energy_gain_verdict"])
    df = ok[["mode", "batch_size"]].assign(
        **{c: analysis.numeric_column(ok, c) for c in ENERGY_COLUMNS})
    df["above_idle_within_error"] = [within_error(r) for _, r in ok.iterrows()]
    df["energy_gain_verdict"] = [vd.verdict(g, lo, hi) for g, lo, hi in zip(
        df["energy_gain"], df["energy_gain_ci_low"], df["energy_gain_ci_high"], strict=True)]
    return df[df["energy_mj_per_step"].notna()]


def within_error(row) -> bool:
    """Is this point's energy above idle inside the counter's error (contract/
    energy.py's rule, on the point's own windows and idle window)?"""
    m = analysis.point_record(row)
    e = m.energy.get()
    return bool(e is not None and e.available and above_idle_within_error(e, m.energy.idle))


def above_idle_text(value, within: bool) -> str:
    """An energy above idle as every table shows it: never a number inside the error."""
    if within:
        return WITHIN_ERROR
    return "—" if pd.isna(value) else f"{value:.3g} mJ"


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
        # The one rule (contract/verdict.py): an inconclusive gain is never the best.
        ranked = rows[rows["energy_gain_verdict"].isin(vd.RANKABLE)]
        if ranked.empty:
            r = rows.iloc[0]
            lines.append(f"Energy: {mode}: every energy gain over eager is inconclusive "
                         f"(e.g. batch {int(r['batch_size'])}: " + vd.quoted(
                             r["energy_gain"], r["energy_gain_ci_low"],
                             r["energy_gain_ci_high"]) + ").")
            continue
        r = ranked.loc[ranked["energy_gain"].idxmax()]
        b = int(r["batch_size"])
        gain = vd.quoted(r["energy_gain"], r["energy_gain_ci_low"], r["energy_gain_ci_high"])
        line = (f"Energy: {mode} at batch {b}: {r['energy_mj_per_step']:.3g} mJ per step"
                f": {less_energy(r['energy_gain'])} than eager ({gain})")
        if b in eager.index:
            e = eager.loc[b]
            line += (f"; eager {e['energy_mj_per_step']:.3g} mJ; average power "
                     f"{r['avg_power_w']:.0f} W against eager's {e['avg_power_w']:.0f} W")
        lines.append(line + ".")
    return lines
