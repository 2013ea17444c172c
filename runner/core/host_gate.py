"""The host gate: what a point's timing sections do about other workers on the same host.

Why: launch-bound figures are host figures (docs/MEASUREMENT.md, "The host is part of the
measurement"). Eight workers on one 8-GPU node share one CPU; each reports its own GPU,
so a figure spoiled by a neighbour's timing looks like any other. A deployment chooses:

- `exclusive`: a host-wide lock around every timing section. Two workers never time at the
  same moment; compile, capture and warm-up still overlap, only timing waits its turn.
- `shared`: no lock. Each point records how many other workers were timing during its
  sections, and is flagged "host shared".

The lock is `flock` on a file in a host-local directory (default under the system temp
dir): the kernel drops it when its holder dies, SIGKILL included, so a killed worker never
wedges the host. A lock file shared over NFS would not be host-local: keep the directory
on a local disk.

Who is timing: each process that times keeps one registry file in the same directory,
named `w.<token>.<sections>.<state>`, and holds an flock on it for its life (a file
nobody holds belongs to a process that is gone: never "timing", and removed once an hour
old). The state is in the name and changes by rename, so a reader lists the directory and
never reads a half-written file. A section marks itself "timing" before its first
snapshot and "idle" after its last, and counts as "others" every process timing at its
start or end, or whose section count grew in between: every section whose timed window
overlaps this one's (a section that started and ended inside this one, its process gone
since, shows as a grown count). The snapshots are taken outside the timed window.

Who holds the lock (issue 46): the holder writes `timing.holder` (JSON: pid, command, the
job it runs, since when) once it has the lock and removes it before letting go, so a
process waiting for the lock can say whom it waits for (the Launch page shows it through
the waiting worker's job). An entry leaves with its process (atexit, which a SIGTERM
turned into an interrupt reaches too): under `shared` it stays, as a gone one, only while
another process is timing, whose section may need its grown count.

Torch-free and stdlib-only: the measuring core takes the gate from `current()`, which a
worker sets with `install()` or through LAUNCHBENCH_HOST_POLICY / LAUNCHBENCH_HOST_DIR
(what `--processes` children inherit).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import secrets
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from contract.vocab import HOST_POLICIES as POLICIES

DEFAULT_POLICY = "exclusive"
POLICY_VAR = "LAUNCHBENCH_HOST_POLICY"
DIR_VAR = "LAUNCHBENCH_HOST_DIR"
LOCK_NAME = "timing.lock"
HOLDER_NAME = "timing.holder"
# How often a waiter that reports whom it waits for looks again (a new holder is named).
POLL_S = 0.05
_STATES = ("idle", "waiting", "timing")
# How long the entry of a process that is gone stays: a section longer than this may miss
# one that timed during it and then exited.
KEEP_GONE_S = 3600.0


class HostGateError(ValueError):
    """A bad policy or directory: one line naming the value."""


def default_dir() -> Path:
    return Path(tempfile.gettempdir()) / "launchbench-host"


def check_policy(value: str) -> str:
    if value not in POLICIES:
        raise HostGateError(f"host policy {value!r} must be one of: {', '.join(POLICIES)}")
    return value


def check_dir(value: str | os.PathLike) -> Path:
    path = Path(value)
    try:
        if not path.is_dir() and path == default_dir():
            # Shared by every user's workers on the host, like /tmp itself: each may add
            # its own entries, and remove only its own.
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o1777)
        path.mkdir(parents=True, exist_ok=True)
        os.close(_open_lock(path))
    except OSError as e:
        raise HostGateError(f"host lock directory {str(value)!r} is not usable: "
                            f"{e.strerror or e}") from None
    return path


def _open_lock(directory: Path) -> int:
    # flock needs no write access: another user's lock file still locks, read-only.
    try:
        return os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:
        return os.open(directory / LOCK_NAME, os.O_RDONLY)


@dataclass(frozen=True)
class Holder:
    """Who holds the host's timing lock, as its holder wrote it: `since` is wall-clock
    seconds (time.time(): a waiter in another process reads it); `job` the queue's job
    it runs, None outside a worker."""

    pid: int
    command: str
    since: float
    job: int | None = None

    def text(self) -> str:
        """'pid 4242 (job 7: python -m runner worker --job 7), since 10:02:03 UTC'."""
        import datetime as dt

        when = dt.datetime.fromtimestamp(self.since, dt.timezone.utc)
        job = f"job {self.job}: " if self.job is not None else ""
        return f"pid {self.pid} ({job}{self.command}), since {when:%Y-%m-%d %H:%M:%S} UTC"


def _command_line() -> str:
    """This process's command line, shortened to one line's worth."""
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    text = shlex.join([os.path.basename(argv[0]), *argv[1:]])
    return text if len(text) <= 200 else text[:197] + "..."


def read_holder(directory: str | os.PathLike) -> Holder | None:
    """The lock's holder as its holder wrote it; None where nobody wrote one (the lock
    free, its holder between taking it and writing, or a file not ours)."""
    try:
        doc = json.loads((Path(directory) / HOLDER_NAME).read_text(encoding="utf-8"))
        return Holder(pid=int(doc["pid"]), command=str(doc["command"])[:200],
                      since=float(doc["since"]),
                      job=None if doc.get("job") is None else int(doc["job"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass
class Section:
    """What one timing section saw; `others` are the registry tokens of the processes
    timing during it."""

    policy: str
    wait_s: float = 0.0
    started: float | None = None  # time.monotonic(): one clock for every process on a host
    ended: float | None = None
    others: set[str] = field(default_factory=set)


def summary(sections: list[Section]) -> dict | None:
    """A point's `details["host"]` from its sections; None when nothing was gated."""
    if not sections:
        return None
    policy = sections[0].policy
    others = set().union(*(s.others for s in sections))
    return {"policy": policy, "shared": policy == "shared",
            "others_timing": len(others),
            "wait_s": sum(s.wait_s for s in sections),
            "windows": [[s.started, s.ended] for s in sections]}


class _Registry:
    """This process's entry in the host directory (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.token = f"{os.getpid()}-{secrets.token_hex(4)}"
        self.sections = 0
        self.state = "idle"
        # Locked under a name readers skip, then renamed: a reader never finds the entry
        # unlocked and takes it for a dead one.
        tmp = directory / f"new.{self.token}"
        self.fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        self.path = directory / self._name()
        os.rename(tmp, self.path)

    def _name(self) -> str:
        return f"w.{self.token}.{self.sections}.{self.state}"

    def set(self, state: str) -> None:
        if state == "timing":
            self.sections += 1
        self.state = state
        new = self.dir / self._name()
        os.rename(self.path, new)
        os.utime(new)  # the entry's age: when its owner last changed state
        self.path = new

    def others(self, now: float | None = None) -> dict[str, tuple[int, str]]:
        """token -> (sections, state) of every process but this one; the state of one
        that is gone is "gone" (its count still says whether it timed lately)."""
        now = time.time() if now is None else now
        seen = {}
        for name in os.listdir(self.dir):
            parts = name.split(".")
            if len(parts) != 4 or parts[0] != "w" or parts[3] not in _STATES:
                continue
            token, sections, state = parts[1], parts[2], parts[3]
            if token == self.token or not sections.isdigit():
                continue
            alive = _alive(self.dir / name, now)
            if alive is not None:
                seen[token] = (int(sections), state if alive else "gone")
        return seen


def _alive(path: Path, now: float) -> bool | None:
    """Whether a registry entry's owner still holds it; None once a dead one's entry is
    older than KEEP_GONE_S and removed."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return True  # renamed between the listing and now: its owner is at work
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    # Nobody holds it: its process is gone. Kept a while, so a section that was under
    # way when it timed and exited still counts it (its count grew).
    with contextlib.suppress(OSError):
        if now - path.stat().st_mtime > KEEP_GONE_S:
            path.unlink()
            return None
    return False


def overlapping(before: dict[str, tuple[int, str]],
                after: dict[str, tuple[int, str]]) -> set[str]:
    """Tokens of the processes timing at some moment between two snapshots: timing at
    either end, or with more sections at the end than at the start (a process first seen
    at the end started all its sections in between).

    One timing at the start and gone by the end is left out: the kernel releases a killed
    holder's timing lock and its registry entry one after the other, so the next holder
    can find the dead one's entry still held, "timing", at its start. (A process killed
    while timing during a section is missed the same way: rare, and never a live one.)"""
    out = set()
    for t, (n, state) in after.items():
        was_n, was = before.get(t, (0, ""))
        if n > was_n or (state != "gone" and "timing" in (state, was)):
            out.add(t)
    return out


class Gate:
    """`with gate.timing() as section:` around a timing section."""

    def __init__(self, policy: str = DEFAULT_POLICY, directory: str | os.PathLike | None = None,
                 *, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.policy = check_policy(policy)
        self.dir = check_dir(directory if directory is not None else default_dir())
        self.clock, self.wall, self.sleep = clock, wall, sleep
        self._registry: _Registry | None = None
        self._lock_fd: int | None = None
        # What the holder file names: the job this process runs (a worker sets it).
        self.job: int | None = None
        # on_wait(True, holder) when the lock is taken by another (holder None where it
        # wrote nothing yet), again when the holder changes, on_wait(False, None) once
        # the lock is ours: a worker puts it on its job (runner/ops/worker.py).
        self.on_wait: Callable[[bool, Holder | None], None] | None = None
        atexit.register(self.close)

    @property
    def registry(self) -> _Registry:
        if self._registry is None or self._registry.token.split("-")[0] != str(os.getpid()):
            self._registry = _Registry(self.dir)  # first use, or a forked child's own
        return self._registry

    @contextlib.contextmanager
    def timing(self) -> Iterator[Section]:
        reg = self.registry
        s = Section(self.policy)
        locked = False
        try:
            if self.policy == "exclusive":
                if self._lock_fd is None:
                    self._lock_fd = _open_lock(self.dir)
                reg.set("waiting")
                t0 = self.clock()
                self._acquire(self._lock_fd)
                locked = True
                s.wait_s = self.clock() - t0
                self._write_holder()
            reg.set("timing")
            before = reg.others()
            s.started = self.clock()
            yield s
            s.ended = self.clock()
            s.others = overlapping(before, reg.others())
        finally:
            with contextlib.suppress(OSError):
                reg.set("idle")
            if locked:  # locked: the lock file was opened above
                # Removed while still held: the next holder's own file is never lost.
                with contextlib.suppress(OSError):
                    (self.dir / HOLDER_NAME).unlink()
                fcntl.flock(cast(int, self._lock_fd), fcntl.LOCK_UN)

    def _acquire(self, fd: int) -> None:
        """The lock, blocking; with `on_wait`, polled instead, so the holder it waits
        for is reported (and reported again when another takes the lock first)."""
        if self.on_wait is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        told, last = False, None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = read_holder(self.dir)
                if not told or holder != last:
                    self._tell(True, holder)
                    told, last = True, holder
                self.sleep(POLL_S)
        if told:
            self._tell(False, None)

    def _tell(self, waiting: bool, holder: Holder | None) -> None:
        try:
            if self.on_wait is not None:
                self.on_wait(waiting, holder)
        except Exception:  # noqa: BLE001 - a report that fails never stops the timing
            pass

    def _write_holder(self) -> None:
        """Who holds the lock now (this process), written whole by a rename; a file
        another user left (a sticky directory) stays, and waiters read it as it is."""
        doc = {"pid": os.getpid(), "command": _command_line(), "since": self.wall(),
               "job": self.job}
        tmp = self.dir / f"holder.{os.getpid()}-{secrets.token_hex(4)}"
        try:
            tmp.write_text(json.dumps(doc), encoding="utf-8")
            os.rename(tmp, self.dir / HOLDER_NAME)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()

    def close(self) -> None:
        """At exit: this process's registry entry goes with it, unless, under `shared`,
        another process is timing now (its section counts this one by its grown count;
        it is then removed an hour on, as a killed process's is)."""
        reg = self._registry
        if reg is None or reg.token.split("-")[0] != str(os.getpid()):
            return  # none, or a forked parent's: not this process's to remove
        self._registry = None
        with contextlib.suppress(OSError):
            busy = self.policy == "shared" and any(
                state == "timing" for _, state in reg.others().values())
            if not busy:
                reg.path.unlink()
        with contextlib.suppress(OSError):
            os.close(reg.fd)


class NoGate:
    """Nothing installed: time as before, record nothing."""

    policy = None

    @contextlib.contextmanager
    def timing(self) -> Iterator[Section | None]:
        yield None


_installed: Gate | NoGate | None = None


def install(gate: Gate | NoGate | None) -> None:
    """Set this process's gate (None: back to what the environment says)."""
    global _installed
    _installed = gate


def export(policy: str, directory: str | os.PathLike | None) -> dict[str, str]:
    """The environment that gives a child process (a `--processes` repeat) the same gate."""
    return {POLICY_VAR: policy, DIR_VAR: str(directory if directory is not None
                                             else default_dir())}


def current() -> Gate | NoGate:
    """The installed gate, else one from LAUNCHBENCH_HOST_POLICY (unset: no gate)."""
    global _installed
    if _installed is None:
        policy = os.environ.get(POLICY_VAR)
        _installed = Gate(policy, os.environ.get(DIR_VAR) or None) if policy else NoGate()
    return _installed
