"""One host, several GPUs: a worker per GPU (`workers --per-gpu`), each pinned to its GPU
and, where `nvidia-smi topo -m` says which CPUs sit on that GPU's NUMA node, to those.

Why pin CPUs: a launch-bound step is a host figure, and a worker whose threads wander to
the far socket pays a cross-node hop per launch that its neighbour does not. Why
CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA's default order (fastest first) need not match
nvidia-smi's, so GPU N of `nvidia-smi` is GPU N of CUDA only in bus order.

Torch-free: GPUs are counted with `nvidia-smi -L`, in the launcher, and the workers are
plain child processes (`python -m runner worker --gpu N`), so a launcher stopped by
Ctrl-C or SIGTERM stops every one of them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

from runner.core.placement import PlacementError, format_cpus, parse_cpus

STOP_GRACE_S = 60.0  # a worker stops the job in flight at once; then SIGKILL
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # nvidia-smi underlines the header on some versions


class HostError(ValueError):
    """Bad flags or an unreadable host: one line."""


def parse_topology(text: str) -> dict[int, list[int]]:
    """GPU index -> the CPUs of its NUMA node, from `nvidia-smi topo -m`; GPUs whose
    affinity is not given (N/A, a VM) are left out."""
    lines = [_ANSI.sub("", line).rstrip("\n") for line in text.splitlines()]
    header = next((line.split("\t") for line in lines if "CPU Affinity" in line), None)
    if header is None:
        return {}
    column = [h.strip() for h in header].index("CPU Affinity")
    out = {}
    for line in lines:
        cells = line.split("\t")
        m = re.fullmatch(r"GPU(\d+)", cells[0].strip())
        if not m or len(cells) <= column:
            continue
        with contextlib.suppress(PlacementError):
            out[int(m.group(1))] = parse_cpus(cells[column])
    return out


def _smi(*args: str) -> str | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def count_gpus() -> int | None:
    """GPUs on this host (`nvidia-smi -L`); None when nvidia-smi cannot say."""
    text = _smi("-L")
    return None if text is None else sum(1 for line in text.splitlines()
                                         if line.startswith("GPU "))


def topology() -> dict[int, list[int]]:
    text = _smi("topo", "-m")
    return parse_topology(text) if text else {}


def parse_gpus(text: str) -> list[int]:
    """--gpus '0,2-3' -> [0, 2, 3]."""
    try:
        gpus = parse_cpus(text)  # the same N,N-M list syntax
    except PlacementError:
        raise HostError(f"--gpus {text!r} must be GPU indexes like 0,1 or 0-7") from None
    if len(gpus) > 64:
        raise HostError(f"--gpus {text!r} names {len(gpus)} GPUs; at most 64 per host")
    return gpus


def visible_gpus() -> list[int] | None:
    """The GPUs a worker may be started on: CUDA_VISIBLE_DEVICES when set (a scheduler's
    share of the host), else every GPU `nvidia-smi -L` lists; None when unknown."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        entries = [e.strip() for e in env.split(",") if e.strip()]
        if not all(e.isdigit() for e in entries):
            raise HostError(f"CUDA_VISIBLE_DEVICES={env!r} does not list GPU indexes: name "
                            "the GPUs with --gpus")
        return [int(e) for e in entries]
    n = count_gpus()
    return None if n is None else list(range(n))


def plan(gpus: Sequence[int] | None, *, pin_cpus: bool, host: str | None = None,
         visible: Callable[[], list[int] | None] = visible_gpus,
         topo: Callable[[], dict[int, list[int]]] = topology) -> list[dict]:
    """One entry per worker: name, gpu, cpus (None: not pinned). Raises HostError when
    the GPUs cannot be counted or a requested one is not visible."""
    seen = visible()
    if gpus is None:
        if seen is None:
            raise HostError("cannot count GPUs (no working nvidia-smi): name them with "
                            "--gpus, e.g. --gpus 0-3")
        if not seen:
            raise HostError("no visible GPU on this host: nothing to start")
        gpus = seen
    elif seen is not None and set(gpus) - set(seen):
        missing = sorted(set(gpus) - set(seen))
        raise HostError(f"--gpus names GPU {missing[0]}, which is not visible here "
                        f"(visible: {format_cpus(seen) or 'none'})")
    numa = topo() if pin_cpus else {}
    if pin_cpus and not numa:
        print("no CPU affinity in `nvidia-smi topo -m`: workers are not pinned to CPUs",
              file=sys.stderr)
    host = host or socket.gethostname()
    return [{"name": f"{host}-gpu{g}", "gpu": g, "cpus": numa.get(g)} for g in gpus]


def worker_argv(base: Sequence[str], entry: dict, passthrough: Sequence[str]) -> list[str]:
    argv = [*base, "--name", entry["name"], "--gpu", str(entry["gpu"])]
    if entry["cpus"]:
        argv += ["--cpus", format_cpus(entry["cpus"])]
    return argv + list(passthrough)


def run_per_gpu(entries: list[dict], base: Sequence[str], passthrough: Sequence[str], *,
                log: Callable[[str], None] = print, grace_s: float = STOP_GRACE_S) -> int:
    """Start one worker per entry and wait for them; Ctrl-C or SIGTERM stops them all
    (SIGTERM to each, SIGKILL to any still there after `grace_s`). Returns 130 when
    stopped, else the worst exit status of the workers."""
    procs: list[subprocess.Popen] = []

    def to_interrupt(_signum, _frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, to_interrupt)
    try:
        try:
            for e in entries:
                argv = worker_argv(base, e, passthrough)
                procs.append(subprocess.Popen(argv, start_new_session=True,
                                              env={**os.environ, **child_env(e['gpu'])}))
                cpus = format_cpus(e["cpus"]) if e["cpus"] else "any"
                log(f"started {e['name']} (pid {procs[-1].pid}): GPU {e['gpu']}, CPUs {cpus}")
            return max(p.wait() for p in procs)
        except KeyboardInterrupt:
            log(f"stopping {len(procs)} worker(s)")
            _stop(procs, grace_s)
            return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop(procs: list[subprocess.Popen], grace_s: float) -> None:
    # Their own sessions: a terminal's Ctrl-C reaches the launcher only, which then
    # stops each worker once, the same way whichever signal it got.
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    try:
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
    except KeyboardInterrupt:  # a second Ctrl-C or SIGTERM: no more grace
        pass
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def child_env(gpu: int) -> dict[str, str]:
    """What `worker --gpu N` sets before torch is imported."""
    return {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": str(gpu)}


def pin(gpu: int | None, cpus: str | None) -> dict:
    """Apply `worker --gpu/--cpus` to this process (before torch is imported); returns the
    worker-table fields that record it."""
    if gpu is not None:
        os.environ.update(child_env(gpu))
    if cpus is not None:
        from runner.core.placement import pin_cpus

        try:
            pin_cpus(parse_cpus(cpus))
        except PlacementError as e:
            raise HostError(f"--cpus: {e}") from None
    from runner.core.placement import placement

    here = placement()
    return {"host_slot": gpu, "cuda_visible_devices": here["cuda_visible_devices"],
            "cpus": here["cpus"]}
