"""`python -m runner sweep`: measure a workload over batch sizes and modes, store the run.

Every flag is checked before anything is measured or written; the measuring itself is
runner/core/sweep.py's. torch and the database layer are imported inside run(): the parser
imports this module on machines that have neither.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from contract import bundle as fmt
from contract import outfile, specs
from contract import verdict as vd
from contract.catalog import WORKLOADS
from contract.limits import MAX_BATCH_SIZE, MAX_LABEL, MAX_PROCESSES
from contract.measurement import Measurement
from contract.vocab import DEFAULT_PROCESSES
from runner.ops.cli import UsageError
from runner.ops.commands import flags
from runner.ops.commands.measured import MeasuringCommand, RunFailed, Storage

PARAM_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")


def register(sub) -> None:
    p = sub.add_parser(
        "sweep", help="measure a workload over batch sizes and modes",
        description="Measure a workload over batch sizes in each mode, show progress, "
                    "store the run in the database and/or a bundle file, print its id and "
                    "a table of step times and speedups over eager.",
        parents=[
            flags.workload_flags(f"built-in workload ({', '.join(WORKLOADS)}) or "
                                 "module.path:factory",
                                 "default: cuda when available, else cpu"),
            flags.sweep_flags("comma-separated, e.g. 1,8,64; `1,2,4,...,8192` fills in a "
                              f"doubling (or even) series; each 1..{MAX_BATCH_SIZE}",
                              "same as --timing quick (tests)"),
            flags.storage_flags("write only the --out bundle (a host with no route to the "
                                "database)")])
    p.add_argument("--processes", metavar="K",
                   help="time each batch size's rounds in K fresh processes and pool them, "
                        "so host states that last a process are covered "
                        f"(1..{MAX_PROCESSES}; default by timing preset: "
                        + ", ".join(f"{k} {v}" for k, v in DEFAULT_PROCESSES.items()) + ")")
    p.add_argument("--no-energy", dest="energy", action="store_false",
                   help="skip the energy windows (NVML's energy counter, read after each "
                        "batch size's rounds: at most ~15%% more wall time); the points "
                        "then say energy was turned off")
    p.set_defaults(func=run)


# --- parsing: each error is one line naming the flag and the value ---------------------

def parse_batch_sizes(text: str) -> tuple[int, ...]:
    """The contract's parser (the Launch form uses it too), its message under the flag."""
    try:
        return specs.parse_batch_sizes(text)
    except specs.SpecError as e:
        raise UsageError(f"--batch-sizes: {e}") from None


def parse_modes(text: str) -> tuple[str, ...]:
    modes = [s.strip() for s in text.split(",")]
    for m in modes:
        if m not in fmt.MODES:
            raise UsageError(f"--modes: unknown mode {m!r} (known: {', '.join(fmt.MODES)})")
    if len(set(modes)) != len(modes):
        dup = next(m for m in modes if modes.count(m) > 1)
        raise UsageError(f"--modes: {dup!r} appears twice")
    return tuple(modes)


def parse_params(items: list[str]) -> dict[str, str]:
    """KEY=VALUE strings to a dict; the workload checks names, types and ranges."""
    params: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not PARAM_KEY.match(key):
            raise UsageError(f"--param {item!r} is not KEY=VALUE (e.g. --param depth=8)")
        if not value.strip():
            raise UsageError(f"--param {item!r} has no value")
        if key in params:
            raise UsageError(f"--param {key!r} is given twice")
        params[key] = value.strip()
    return params


def parse_label(text: str | None) -> str | None:
    if text is None:
        return None
    if not text.strip():
        raise UsageError("--label is empty: leave it out or give some text")
    if len(text) > MAX_LABEL:
        raise UsageError(f"--label {text[:30]!r}... is {len(text)} characters (at most "
                         f"{MAX_LABEL})")
    if any(ord(ch) < 32 for ch in text):
        raise UsageError(f"--label {text!r} contains a control character (newline, tab...)")
    return text.strip()


def parse_processes(text: str | None, timing: str) -> int:
    if text is None:
        return DEFAULT_PROCESSES[timing]
    if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", text or ""):
        raise UsageError(f"--processes {text!r} is not a whole number")
    n = int(text)
    if not 1 <= n <= MAX_PROCESSES:
        raise UsageError(f"--processes {n} is out of range (1 to {MAX_PROCESSES})")
    return n


def parse_timing(args: argparse.Namespace) -> str:
    if args.quick and args.timing not in (None, "quick"):
        raise UsageError(f"--quick contradicts --timing {args.timing}: give one of them")
    return "quick" if args.quick else (args.timing or "standard")


# --- output ------------------------------------------------------------------------------

def _cell(m: Measurement | None) -> str:
    if m is None:
        return "-"
    if m.timing.step_ms is None:
        return m.status or "?"
    return f"{m.timing.step_ms:.3f}" + ("*" if m.timing.noisy else "")


# Marks after a speedup cell, and the footnote each one earns (in this order).
DISAGREE = "#"


def _medians_disagree(m: Measurement, eager: Measurement | None) -> bool:
    """The one rule (contract/verdict.py medians_disagree) on a table cell's point."""
    return vd.medians_disagree(eager.timing.step_ms if eager else None, m.timing.step_ms,
                               m.intervals.speedup_ci_low, m.intervals.speedup_ci_high)


def _speedup_cell(m: Measurement | None, eager: Measurement | None) -> str:
    """The paired speedup with its 95% interval, by the one rule (contract/
    verdict.py): an inconclusive one shows only its interval; a ratio of medians for an
    older run, which has no interval."""
    if m is not None and m.intervals.speedup is not None:
        x, low, high = m.intervals.speedup, m.intervals.speedup_ci_low, \
            m.intervals.speedup_ci_high
        band = "" if low is None or high is None else (
            # a low end at 0 bounds nothing (contract/verdict.py OPEN_BELOW): no '0.00-'
            f" (≤{vd.x_text(high)})" if low <= 0 else f" ({vd.x_text(low)}-{vd.x_text(high)})")
        said = vd.verdict(x, low, high)
        figure = "inconclusive" if said == vd.INCONCLUSIVE else f"{vd.x_text(x)}x"
        marks = (DISAGREE if _medians_disagree(m, eager) else "") + (
            "*" if m.timing.noisy else "")
        return f"{figure}{band}{marks}"
    e = eager.timing.step_ms if eager else None
    t = m.timing.step_ms if m else None
    return f"{vd.x_text(e / t)}x" if e and t else "-"


def _energy_cell(m: Measurement | None) -> str:
    e = m.energy.energy_mj_per_step if m is not None else None
    return "-" if e is None else f"{e:.3g}"


def format_table(measurements: list[Measurement], modes: tuple[str, ...]) -> str:
    """Step ms per mode and speedup over eager (95% interval) per batch size, as aligned
    text, with which statistic each column is, the host's launch cost and what the marks
    mean below."""
    by_point = {(m.mode, m.batch_size): m for m in measurements}
    batches = sorted({m.batch_size for m in measurements})
    others = [m for m in modes if m != "eager"] if "eager" in modes else []
    header = ["batch", *(f"{m} ms" for m in modes), *(f"{m} x" for m in others)]
    # Energy columns only where some point has the figure (issue 28); else one footnote.
    energy = any(m.energy.energy_mj_per_step is not None for m in measurements)
    header += [f"{m} mJ" for m in modes] if energy else []
    rows = [header]
    for b in batches:
        row = [str(b), *(_cell(by_point.get((m, b))) for m in modes)]
        eager = by_point.get(("eager", b))
        row += [_speedup_cell(by_point.get((m, b)), eager) for m in others]
        if energy:
            row += [_energy_cell(by_point.get((m, b))) for m in modes]
        if any(m.intervals.host_unstable for m in measurements if m.batch_size == b):
            row[0] += "!"
        rows.append(row)
    lines = flags.table(rows)
    return "\n".join(lines + _footnotes(measurements, "\n".join(lines[1:]), bool(others)))


def _footnotes(measurements: list[Measurement], body: str, ratios: bool) -> list[str]:
    from runner.core import stats

    launch = [m.intervals.launch_us for m in measurements
              if m.intervals.launch_us is not None]
    notes = []
    paired = any(m.intervals.speedup is not None for m in measurements)
    if ratios:
        # Two statistics side by side: say which each is, so a reader does not divide
        # one column by another and expect the third.
        notes.append("ms: each mode's median step time over its own rounds; x: " + (
            "median of the per-round paired ratios eager/mode, not the ratio of the two "
            "medians" if paired else "eager's median step / the mode's (no paired rounds "
            "in this run)"))
    if launch:
        notes.append(f"host launch cost: {stats.percentile(launch, 50):.1f} us per kernel "
                     f"launch (median over points; {min(launch):.1f}-{max(launch):.1f})")
    if paired:
        k = max(m.intervals.processes or 1 for m in measurements)
        notes.append("speedups: 95% interval in brackets" + (
            f" (rounds of {k} processes, the spread between them included)" if k > 1 else
            " (one process: states of the host that last a process are not covered; see "
            "--processes)"))
    reasons = {r for m in measurements if (r := m.energy.unavailable_reason) is not None}
    if any(m.energy.energy_mj_per_step is not None for m in measurements):
        notes.append("mJ: energy per step = the GPU's mean power over energy windows "
                     "after the rounds (its energy counter) x the median step time")
    elif reasons:
        notes.append(f"energy: not measured: {sorted(reasons)[0]}")
    if "inconclusive" in body:
        notes.append(vd.RULE_TEXT)
    if DISAGREE in body:
        notes.append(f"{DISAGREE} the ratio of the medians lies outside the paired "
                     f"interval: {vd.DISAGREE_WHY}")
    if any(m.timing.noisy for m in measurements):
        notes.append("* noisy: the interval ended wider than its target: +-2% as "
                     "measured, +-10% on the host-normalised rounds where the host's launch "
                     "cost sets the figure (docs/MEASUREMENT.md)")
    if any(m.intervals.host_unstable for m in measurements):
        notes.append("! host unstable: the launch cost moved during that batch size's "
                     "rounds")
    return notes


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """`kill` ends a sweep like Ctrl-C does: run cancelled, finished points kept."""
    def handler(_signum, _frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# --- the command -------------------------------------------------------------------------

def _database_errors() -> tuple[type[BaseException], ...]:
    """SQLAlchemy's error class, or none on a GPU host without SQLAlchemy (no database
    is written there, so no database error can happen)."""
    try:
        from sqlalchemy.exc import SQLAlchemyError
    except ImportError:
        return ()
    return (SQLAlchemyError,)


def _reap_lost(engine: Any) -> None:
    """A writer persists what readers already show: runs (and jobs) whose writer went
    silent become failed (db/jobs.py reap_lost). Best effort: the sweep is what was
    asked for, so a database hiccup here is left to the sweep's own writes to report."""
    from db import jobs
    from db.access import read_only

    if read_only():
        return
    try:
        jobs.reap_lost(engine)
    except _database_errors():
        pass


class Sweep(MeasuringCommand):
    def parse(self, args: argparse.Namespace) -> None:
        self.sizes = parse_batch_sizes(args.batch_sizes)
        self.modes = parse_modes(args.modes)
        self.params = parse_params(args.param)
        self.timing = parse_timing(args)
        self.label = parse_label(args.label)
        self.processes = parse_processes(args.processes, self.timing)

    def resolve(self, args: argparse.Namespace, storage: Storage) -> None:
        self.device = flags.device(args.device, "sweep")

        from runner.core import host_gate
        from runner.core.sweep import SweepSpec, validate_spec
        from runner.core.workloads import WorkloadError

        self.spec = SweepSpec(workload=args.workload, params=self.params,
                              batch_sizes=self.sizes, modes=self.modes, device=self.device,
                              timing=self.timing, label=self.label,
                              processes=self.processes, energy=args.energy)
        try:
            self.workload = validate_spec(self.spec)  # the one check: run_sweep trusts it
            host_gate.current()  # a bad LAUNCHBENCH_HOST_POLICY/_DIR: said before any point
        except WorkloadError:
            raise  # already one line naming the value; main() prints it
        except ValueError as e:
            raise UsageError(str(e)) from None

    def run(self, engine: Any, storage: Storage) -> str:
        from runner.core.sweep import run_sweep
        from runner.ops.progress import Progress
        from runner.ops.sinks import BundleSink, DbSink, MemorySink, Tee

        if engine is not None:
            _reap_lost(engine)
        self.memory = memory = MemorySink()
        sinks: list[Any] = [memory]
        self.db_sink = DbSink(engine) if engine is not None else None
        if self.db_sink is not None:
            sinks.append(self.db_sink)
        self.bundle_sink = BundleSink(storage.out) if storage.out else None
        if self.bundle_sink is not None:
            sinks.append(self.bundle_sink)
        sink = Tee(*sinks)
        progress = Progress()
        try:
            with _sigterm_as_interrupt():
                try:
                    return run_sweep(self.spec, sink, progress=progress,
                                     command=self.spec.command(), workload=self.workload)
                except KeyboardInterrupt:
                    # run_sweep handles Ctrl-C itself; a second one during its clean-up
                    # lands here, before or after it finished the run.
                    status = memory.status or "cancelled"
                    if memory.status is None:
                        sink.finish(status)
                    return status
                except Exception as e:
                    if memory.started and memory.status is None:
                        try:
                            sink.finish("failed")  # keeps the finished points in the bundle
                        except Exception:  # noqa: BLE001 - the first error is the one to show
                            pass
                    if not isinstance(e, _database_errors()):
                        raise  # a bug: the traceback is what a maintainer needs
                    # The database went away mid-sweep (server down, disk full): not a bug.
                    first = (str(getattr(e, "orig", None) or e).strip().splitlines()
                             or [""])[0]
                    kept = (f"; the bundle {storage.out} keeps the "
                            f"{len(memory.measurements)} finished points"
                            if self.bundle_sink is not None and self.bundle_sink.written
                            else "")
                    raise RunFailed(f"the database failed during the sweep: {first}{kept}"
                                    ) from None
        finally:
            progress.close()

    def report(self, status: str, engine: Any, storage: Storage) -> None:
        from runner.ops.commands.store import shown_url

        ms = self.memory.measurements
        counts = {s: sum(1 for m in ms if m.status == s) for s in fmt.POINT_STATUSES}
        run_uuid = self.memory.run.uuid if self.memory.run is not None else None
        run_ref = self.db_sink.run_id if self.db_sink is not None else run_uuid
        extra = ", ".join(f"{n} {s}" for s, n in counts.items() if n and s != "ok")
        print(f"run {run_ref} {status}: {len(ms)} points" + (f" ({extra})" if extra else ""))
        if self.db_sink is not None:
            print(f"stored in {shown_url(str(engine.url))} (uuid {run_uuid})")
        if self.bundle_sink is not None and self.bundle_sink.written and storage.out:
            print(f"bundle written to {outfile.shown(storage.out)}")
        if ms:
            print(format_table(ms, self.modes))

    def exit_code(self, status: str) -> int:
        from runner.core import cuda_fatal

        lost = cuda_fatal.summary(self.memory.measurements)
        if lost:
            print(f"error: {lost}", file=sys.stderr)
            if self.device != "cpu":  # objects of a dead CUDA context can abort in their
                # destructors
                sys.stdout.flush(), sys.stderr.flush()
                os._exit(1)
        return super().exit_code(status)


def run(args: argparse.Namespace) -> int:
    return Sweep().main(args)
