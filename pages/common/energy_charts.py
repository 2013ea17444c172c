"""The energy-per-step chart of a run (issue 28), drawn as the step-time chart is (log-log,
95% interval as error bars): energy per step follows step time at small batch. Energy
above idle may be negative (a mode drawing about idle power, within the counter's error),
so that chart has a linear axis and a rule at 0.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from pages.common.chart_layout import chart_title, fitted
from pages.common.charts import (
    _batch_tip,
    _batch_x,
    _error_bars,
    _lines_and_points,
    _log_y,
    _mode_color,
    _mode_tip,
    _tip,
)
from pages.common.energy import energy_points
from pages.common.metrics import title


def energy_chart(points: pd.DataFrame, above_idle: bool = False) -> alt.LayerChart | None:
    """Energy per step (mJ) against batch size, per mode, each point's 95% interval as an
    error bar; `above_idle`: the energy above the device's idle draw instead (linear axis,
    no interval). None when no point has the figure."""
    df = energy_points(points)
    field = "energy_above_idle_mj_per_step" if above_idle else "energy_mj_per_step"
    df = df[df[field].notna()]
    if df.empty:
        return None
    color = _mode_color(df["mode"])
    tips = [_mode_tip(), _batch_tip(), *(_tip(c, ".3f") for c in (
        "energy_mj_per_step", "energy_mj_per_step_ci_low", "energy_mj_per_step_ci_high",
        "energy_above_idle_mj_per_step")), _tip("avg_power_w", ".1f"),
        _tip("idle_power_w", ".1f"), _tip("energy_gain", ".2f")]
    if above_idle:
        y = alt.Y(f"{field}:Q", title=title(field))
        layers = _lines_and_points(_batch_x(), y, color, tips, by=["mode"])
        zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(
            strokeDash=[4, 4], color="#444").encode(y="y:Q")
        return fitted(alt.layer(*layers, zero, data=df), chart_title(
            "Energy per step above idle", "median; dashed line: the device's idle draw"))
    cols = ["energy_mj_per_step", "energy_mj_per_step_ci_low", "energy_mj_per_step_ci_high"]
    values = df[cols].to_numpy().ravel()
    layers = _lines_and_points(_batch_x(), _log_y(field, values), color, tips, by=["mode"])
    bars = _error_bars(df, cols[1], cols[2], _log_y(cols[1], values, field), color)
    return fitted(alt.layer(*layers, *([bars] if bars is not None else []), data=df),
                  chart_title("Energy per step", "median over windows, 95% interval"))
