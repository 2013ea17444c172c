"""The processes the tests start: each ends with its test, none outlives the session.

How they are found: the pytest process puts a session token in its environment
(SESSION_VAR), and while a test or a function-scoped fixture runs, that test's id
(TEST_VAR). Every child inherits both, and so do its children: a daemon that left for its
own session, a worker the dashboard started, a Slurm batch job (sbatch exports the
submitter's environment), a browser's helpers, even once re-parented to PID 1. /proc then
says which processes are ours, with nothing for a test to register:

- after each test, whatever still carries its id is killed (with its process group when
  it leads one): `reap(test_id)`, from conftest's autouse fixture;
- at the session's end, anything still carrying the token (a module or session fixture
  that did not stop its server) is killed and fails the run: `leftovers()`.

A test that passes `env=` must build it on os.environ (`{**os.environ, ...}`), as the
suite does everywhere; a child started with a scrubbed environment is found only through
the process group of one that is not.

Processes of other users or of other pytest sessions on the machine (another engineer's
run, an xdist sibling) carry another token or none: never touched.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

SESSION_VAR = "LAUNCHBENCH_TEST_SESSION"
TEST_VAR = "LAUNCHBENCH_TEST_ID"
GONE_WITHIN_S = 10.0  # a SIGKILLed process is gone at once; this only bounds a stuck one


@dataclass(frozen=True)
class Proc:
    pid: int
    test: str        # the test id it carries ("" when started outside a test)
    command: str

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.command[:120]})" + (
            f" started by {self.test}" if self.test else "")


def start_session() -> str:
    """Give this pytest process (an xdist worker: each its own) a fresh token."""
    token = uuid.uuid4().hex
    os.environ[SESSION_VAR] = token
    os.environ.pop(TEST_VAR, None)
    return token


@contextmanager
def owned_by(test_id: str | None) -> Iterator[None]:
    """Children started inside the block carry `test_id` (None: no test's, the
    session's only)."""
    before = os.environ.get(TEST_VAR)
    if test_id:
        os.environ[TEST_VAR] = test_id
    else:
        os.environ.pop(TEST_VAR, None)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TEST_VAR, None)
        else:
            os.environ[TEST_VAR] = before


def _environ(pid: int) -> dict[bytes, bytes] | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read()
    except OSError:  # gone, or another user's: not ours either way
        return None
    return dict(item.partition(b"=")[::2] for item in raw.split(b"\0") if item)


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def _running(pid: int) -> bool:
    """Alive and not a zombie (a zombie has ended; only its parent's wait is missing)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def ours(token: str, test_id: str | None = None) -> list[Proc]:
    """Running processes of this session (of one test, when `test_id` is given)."""
    if not os.path.isdir("/proc"):
        return []  # not Linux: nothing to find (the suite targets Linux)
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        env = _environ(int(name))
        if not env or env.get(SESSION_VAR.encode()) != token.encode():
            continue
        test = env.get(TEST_VAR.encode(), b"").decode(errors="replace")
        if (test_id is None or test == test_id) and _running(int(name)):
            found.append(Proc(int(name), test, _command(int(name))))
    return found


def kill(procs: list[Proc]) -> None:
    """SIGKILL each, and its process group when it leads one (a child that left for its
    own session may have started others with a scrubbed environment); then wait until
    none runs. Never this process's own group."""
    mine = os.getpgrp()
    for p in procs:
        try:
            if os.getpgid(p.pid) == p.pid != mine:
                os.killpg(p.pid, signal.SIGKILL)
            else:
                os.kill(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    end = time.monotonic() + GONE_WITHIN_S
    while any(_running(p.pid) for p in procs) and time.monotonic() < end:
        time.sleep(0.01)


def reap(token: str, test_id: str) -> list[Proc]:
    """Kill what `test_id` started and left running; returns them."""
    left = ours(token, test_id)
    kill(left)
    return left
