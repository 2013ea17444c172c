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
from typing import Any

from runner.core.placement import PlacementError, format_cpus, parse_cpus

STOP_GRACE_S = 60.0  # a worker stops the job in flight at once; then SIGKILL
POLL_S = 0.1  # how often the launcher looks at its workers and at the signals it got
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
                log: Callable[[str], None] = print, grace_s: float = STOP_GRACE_S,
                poll_s: float = POLL_S) -> int:
    """Start one worker per entry and wait for them; Ctrl-C, SIGTERM or a hang-up stops
    them all (SIGTERM to each, SIGKILL to any still there after `grace_s`, at once on a
    second signal). Returns 130 when stopped, else the worst exit status of the workers.

    Whatever ends the launcher ends its workers: the signals only set a flag (a signal
    landing inside Popen must not lose a child), a log line that cannot be written (the
    ssh session closed, the `tee` died) is dropped, any error still stops them on its way
    out, and a worker whose launcher is SIGKILLed gets SIGTERM from the kernel."""
    procs: list[subprocess.Popen] = []
    signals: list[int] = []
    say = _never_raising(log)
    previous = _catch(lambda signum, _frame: signals.append(signum))
    try:
        for e in entries:
            if signals:
                break
            argv = worker_argv(base, e, passthrough)
            procs.append(subprocess.Popen(argv, start_new_session=True,
                                          preexec_fn=_die_with_parent(os.getpid()),
                                          env={**os.environ, **child_env(e["gpu"])}))
            cpus = format_cpus(e["cpus"]) if e["cpus"] else "any"
            say(f"started {e['name']} (pid {procs[-1].pid}): GPU {e['gpu']}, CPUs {cpus}")
        while not signals and any(p.poll() is None for p in procs):
            time.sleep(poll_s)
        if not signals:
            return max(p.returncode for p in procs)
        say(f"stopping {len(procs)} worker(s)")
        return 130
    finally:
        # Normally only the stopped path has workers left; after an error, all of them.
        _stop(procs, grace_s, signals, poll_s)
        for signum, handler in previous.items():
            signal.signal(signum, handler)



def _catch(handler) -> dict[int, Any]:
    """Route Ctrl-C, SIGTERM and SIGHUP to `handler`; returns what to put back. SIGHUP
    only when it is not ignored: under nohup the launcher and its workers stay up."""
    previous: dict[int, Any] = {}
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        current = signal.getsignal(signum)
        if signum == signal.SIGHUP and current is signal.SIG_IGN:
            continue
        previous[signum] = current
        signal.signal(signum, handler)
    return previous


def _never_raising(log: Callable[[str], None]) -> Callable[[str], None]:
    def say(line: str) -> None:
        try:
            log(line)
        except (OSError, ValueError):  # a reader gone (EPIPE), a closed stream
            _silence(sys.stderr)
    return say


def _silence(stream) -> None:
    """Point a stream whose reader is gone at /dev/null, so that what is left in its
    buffer, and Python's flush at exit, fail nowhere."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """Linux: the worker gets SIGTERM when the launcher dies, even by SIGKILL
    (PR_SET_PDEATHSIG), so no worker outlives it unattended."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def arm() -> None:  # in the child, between fork and exec
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the launcher died before it was armed
            os._exit(1)

    return arm


def _stop(procs: list[subprocess.Popen], grace_s: float, signals: list[int],
          poll_s: float) -> None:
    # Their own sessions: a terminal's Ctrl-C reaches the launcher only, which then
    # stops each worker once, the same way whichever signal it got.
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
    seen, deadline = len(signals), time.monotonic() + grace_s
    # Another Ctrl-C or SIGTERM while they stop: no more grace.
    while (any(p.poll() is None for p in procs) and time.monotonic() < deadline
           and len(signals) == seen):
        time.sleep(poll_s)
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
