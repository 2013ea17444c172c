"""What energy windows add to a sweep's wall time (issue 28: at most +15%).

Times a short `mlp` sweep as the CLI runs it (no energy: the windows are not wired into
runner/core/point.py yet), then, per batch size, prepares the same modes and times what
the integration will add to each point: the idle window and the energy windows
(runner/core/energy.py). Prints both, the growth (energy seconds / sweep seconds), and
each mode's energy per step with its interval and its gain over eager.

Once point.py runs the windows itself, this becomes `sweep` against `sweep --no-energy`.

On a GPU host with nvidia-ml-py the counter is NVML's. Elsewhere (or with --fake) it is
tests/fake_energy.py's counter on the wall clock (ticks every 80 ms, constant power): real
steps on the CPU, fake joules, so the script runs end to end and the seconds the windows
cost are real. Run so far on CPU only (no GPU in that session), to show it runs:
  python bench/energy_overhead.py --device cpu --modes eager --batches 1,8 --timing quick
gave sweep 9.9 s, windows 13.0 s (+131%) on a 2-core host shared with four other jobs
(31 ms per eager mlp step there): a run of the code, not a figure. The figure needs the
H200. Arithmetic to expect there: a window costs its 1 s, ~1 counter step (~0.1 s) to
settle and ~half a step to end, so 4 modes x 3 windows + the idle window is ~15 s per
batch size, against ~17 s per batch size of the shipped H200 mlp sweep (117 s for 7 sizes,
standard, --processes 3): far over +15% unless windows, modes or the idle window shrink.

usage: python bench/energy_overhead.py [--device cuda] [--batches 1,8,64]
       [--modes eager,compile,reduce-overhead,cuda-graph] [--timing standard]
       [--windows 3] [--window-s 1.0] [--fake]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.core import energy, modes  # noqa: E402
from runner.core.energy_counter import open_counter  # noqa: E402
from runner.core.point import reset_state  # noqa: E402
from runner.core.sweep import SweepSpec, run_sweep, validate_spec  # noqa: E402
from runner.core.timing import TIMING_PRESETS, Clock, gc_paused, warm_up  # noqa: E402

ISSUE_LIMIT = 0.15


class Quiet:
    def start(self, environment, run):
        pass

    def point(self, m):
        self.last = m

    def update(self, m):
        pass

    def finish(self, status):
        self.status = status


def counter_for(device: str, fake: bool):
    if not fake:
        got = open_counter(device)
        if not isinstance(got, str):
            return got, "nvml"
        print(f"no NVML counter ({got}): the fake counter on the wall clock stands in")
    from tests.fake_energy import FakeDevice

    return FakeDevice(wall=True, wall_power_w=100.0).counter(), "fake (wall clock, 100 W)"


def energy_pass(spec: SweepSpec, counter, config: energy.EnergyConfig) -> float:
    """Seconds of idle + energy windows over every batch size, modes prepared as a point
    prepares them (their setup is not counted: the point has already paid it)."""
    import torch

    workload = validate_spec(spec)
    clock = Clock(spec.device)
    timing = TIMING_PRESETS[spec.timing]
    total = 0.0
    for b in spec.batch_sizes:
        t0 = time.perf_counter()
        idle = energy.idle_power(counter, clock.sync, config)
        idle_s = time.perf_counter() - t0
        torch.manual_seed(0)
        model, make_input = workload.build(spec.device)
        x = make_input(b, torch.Generator().manual_seed(b))
        steps, iters, keep = {}, {}, []
        with torch.no_grad():
            for mode in spec.modes:
                try:
                    p = modes.prepare(mode, model, x, spec.device)
                except modes.Unsupported as e:  # graphs on a CPU
                    print(f"  {mode}: {e}")
                    continue
                keep.append(p)
                with gc_paused():
                    iters[mode] = warm_up(p.step, clock, timing).iters_per_block
                steps[mode] = p.step
            t0 = time.perf_counter()
            with gc_paused():
                got = energy.measure_energy(steps, iters, clock.sync, counter, config,
                                            idle=idle)
            windows_s = time.perf_counter() - t0
        total += idle_s + windows_s
        idle_text = idle if isinstance(idle, str) else f"{idle.power_w:.1f} W"
        print(f"batch {b}: idle {idle_text} ({idle_s:.2f} s), windows {windows_s:.2f} s")
        for mode, e in got.items():
            if not e.available:
                print(f"  {mode:16s} unavailable: {e.unavailable_reason}")
                continue
            gain = "" if e.energy_gain is None else (
                f", {e.energy_gain:.2f}x less than eager ({e.energy_gain_ci_low:.2f}-"
                f"{e.energy_gain_ci_high:.2f})")
            print(f"  {mode:16s} {e.energy_mj_per_step:9.3f} mJ/step "
                  f"({e.energy_mj_per_step_ci_low:.3f}-{e.energy_mj_per_step_ci_high:.3f}), "
                  f"{e.avg_power_w:6.1f} W, above idle {e.energy_above_idle_mj_per_step:.3f}"
                  f" mJ/step{gain}")
        del keep, steps, model
        reset_state(spec.device)
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--modes", default="eager,compile,reduce-overhead,cuda-graph")
    ap.add_argument("--timing", default="standard")
    ap.add_argument("--windows", type=int, default=energy.EnergyConfig.windows)
    ap.add_argument("--window-s", type=float, default=energy.EnergyConfig.window_s)
    ap.add_argument("--fake", action="store_true", help="the fake counter, even on a GPU")
    args = ap.parse_args()
    spec = SweepSpec(workload="mlp", batch_sizes=tuple(int(b) for b in args.batches.split(",")),
                     modes=tuple(args.modes.split(",")), device=args.device,
                     timing=args.timing, label="energy overhead")
    config = energy.EnergyConfig(windows=args.windows, window_s=args.window_s)
    counter, kind = counter_for(args.device, args.fake or not args.device.startswith("cuda"))
    print(f"counter: {kind}; {len(spec.modes)} modes x {config.windows} windows of >= "
          f"{config.window_s:g} s, idle {config.idle_s:g} s, per batch size")

    t0 = time.perf_counter()
    sink = Quiet()
    run_sweep(spec, sink)
    sweep_s = time.perf_counter() - t0
    print(f"sweep without energy: {sweep_s:.1f} s ({sink.status})")

    energy_s = energy_pass(spec, counter, config)
    growth = energy_s / sweep_s
    print(f"energy windows: {energy_s:.1f} s; the sweep's wall time would grow by "
          f"{growth:.0%} (issue 28 allows {ISSUE_LIMIT:.0%}): "
          f"{'within' if growth <= ISSUE_LIMIT else 'OVER'}")


if __name__ == "__main__":
    main()
