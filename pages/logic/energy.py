"""A run's energy figures as the pages read them (issue 28): the points that have one,
why a run has none, and each mode's largest gain in words (the headline's own energy words
come from the run's summary, contract/run_summary.py). No charts here (pages/charts/
draws them).

Energy per step comes from the GPU's energy counter over windows apart from the rounds
(runner/core/energy.py). A point without a figure carries the reason (no CUDA device, no
NVML, --no-energy); a point from before bundle version 5 carries neither.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from contract import verdict as vd
from contract.energy import IdlePower, above_idle_within_error
from contract.measurement import Measurement
from contract.numbers import number_or_none
from contract.run_summary import less_energy
from contract.speedups import in_mode_order, usable

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


def energy_points(points: Sequence[Measurement]) -> list[Measurement]:
    """The ok points with an energy figure, in mode order."""
    return [m for m in in_mode_order(usable(points))
            if number_or_none(m.energy.energy_mj_per_step) is not None]


def within_error(m: Measurement) -> bool:
    """Is this point's energy above idle inside the counter's error (contract/
    energy.py's rule, on the point's own windows and idle window)?"""
    e, idle = m.energy.get(), m.energy.idle
    # A NoIdle (why no idle power was read) has no idle window to bound the error by:
    # the rule reads it as no idle at all.
    return bool(e is not None and e.available and above_idle_within_error(
        e, idle if isinstance(idle, IdlePower) else None))


def gain_verdict(m: Measurement) -> str | None:
    e = m.energy
    return vd.verdict(e.energy_gain, e.energy_gain_ci_low, e.energy_gain_ci_high)


def gain_text(m: Measurement) -> str:
    e = m.energy
    return vd.quoted(e.energy_gain, e.energy_gain_ci_low, e.energy_gain_ci_high)


def mj_text(value: float | None) -> str:
    """An energy in mJ to three significant figures, never in e-notation: '17.1 mJ',
    '1,140 mJ' (':.3g' wrote eager's 1,140 mJ on the H200 decode sample as 1.14e+03)."""
    if value is None:
        return "—"
    v = float(value)
    return f"{v:,.0f} mJ" if abs(v) >= 1000 else f"{v:.3g} mJ"


def above_idle_text(value: float | None, within: bool) -> str:
    """An energy above idle as every table shows it: never a number inside the error."""
    if within:
        return WITHIN_ERROR
    return "—" if value is None else mj_text(value)


def left_out_text(points: Sequence[Measurement]) -> str | None:
    """Which points the above-idle chart leaves out, mode by mode: a mode drawn there as one
    dot (or none) is one whose other energies above idle are within the counter's error,
    e.g. 'Not drawn above idle, within the counter's error: compile at batches 1, 8, 64'.
    None when every point is drawn."""
    out: dict[str, list[int]] = {}
    for m in energy_points(points):
        if within_error(m):
            out.setdefault(m.mode, []).append(m.batch_size)
    if not out:
        return None
    said = [f"{mode} at batch{'es' if len(b) > 1 else ''} {', '.join(map(str, b))}"
            for mode, b in out.items()]
    return f"Not drawn above idle, {WITHIN_ERROR}: " + "; ".join(said) + "."


def has_energy(points: Sequence[Measurement]) -> bool:
    return bool(energy_points(points))


PUBLISHED_NONE = ("No energy figures: published figures, and their source gives none "
                  "(energy is measured by launchbench's runner only).")


def missing_reason(points: Sequence[Measurement], published: bool = False) -> str:
    """Why a run has no energy figure, in one line: the reason its points recorded (the
    most common one), that its source gives none (a `published` run: it was never
    measured here, so "measured before launchbench recorded energy" was untrue), or that
    it predates energy."""
    reasons = Counter(m.energy.unavailable_reason for m in points
                      if m.energy.unavailable_reason)
    if not reasons:
        return PUBLISHED_NONE if published else NOT_RECORDED
    return f"No energy figures: {reasons.most_common(1)[0][0]}."


def _watts(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f} W"


def _against_eager(gain: float) -> str:
    """'85% less energy per step than eager', or 'the same energy per step as eager'
    ('the same ... than eager' read wrong)."""
    said = less_energy(gain)
    return f"{said} {'as' if said.startswith('the same') else 'than'} eager"


def _best_line(mode: str, rows: list[Measurement], eager: dict[int, Measurement]) -> str:
    # The one rule (contract/verdict.py): an inconclusive gain is never the best.
    ranked = [m for m in rows if gain_verdict(m) in vd.RANKABLE]
    if not ranked:
        return (f"Energy: {mode}: every energy gain over eager is inconclusive "
                f"(e.g. batch {rows[0].batch_size}: {gain_text(rows[0])}).")
    r = max(ranked, key=lambda m: float(m.energy.energy_gain or 0))
    e = r.energy
    line = (f"Energy: {mode} at batch {r.batch_size}: {mj_text(e.energy_mj_per_step)} per "
            f"step: {_against_eager(float(e.energy_gain or 0))} ({gain_text(r)})")
    if r.batch_size in eager:
        base = eager[r.batch_size].energy
        line += (f"; eager {mj_text(base.energy_mj_per_step)}; average power "
                 f"{_watts(e.avg_power_w)} against eager's {_watts(base.avg_power_w)}")
    return line + "."


def findings(points: Sequence[Measurement]) -> list[str]:
    """Per graph mode, its largest energy gain over eager in words, with the interval and
    both energies per step, e.g. 'Energy: cuda-graph at batch 8: 17.0 mJ per step against
    eager's 107 mJ: 84% less (6.2x, 95% 5.9-6.5x), 126 W against 118 W'. Empty where the
    run has no energy gain."""
    found = energy_points(points)
    eager = {m.batch_size: m for m in found if m.mode == "eager"}
    by_mode: dict[str, list[Measurement]] = {}
    for m in found:
        if m.mode != "eager" and number_or_none(m.energy.energy_gain) is not None:
            by_mode.setdefault(m.mode, []).append(m)
    return [_best_line(mode, rows, eager) for mode, rows in by_mode.items()]
