"""Every file the command line writes, written one way (issue 48): a bundle (`--out`),
an export, JUnit XML (`--junit`) and the GitHub step summary.

The rules (docs/ARCHITECTURE.md, "Files the command line writes"):
- `-` is standard output;
- a path that is a directory, a character or block device, a FIFO or a socket is refused:
  writing replaces the file (a reader never sees half of one), and replacing
  `/dev/null` by a file of XML as root breaks the machine until someone recreates it;
- a symlink is written through: its target is replaced (or created), the link stays, as
  a shell's `>` does; the target is held to the same rules;
- a new file gets the mode the user's umask gives (0666 less the umask), a replaced
  file keeps its own mode;
- every refusal is one line naming the flag and the path, and comes before anything is
  measured or printed: `check` opens its outputs (a throwaway file in the directory, so a
  path it cannot write is known) before it reads a run.

Standard library only: a GPU host writes its bundle with this.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

STDOUT = "-"
# One line's worth of a path in a message.
_SHOWN = 120


# Standard output while it is kept for the file `-` names (reserved_stdout): what the
# command prints meanwhile goes to standard error.
_reserved: TextIO | None = None


def stdout_reserved() -> bool:
    return _reserved is not None


@contextlib.contextmanager
def reserved_stdout() -> Iterator[None]:
    """Keep standard output for the file `--out -` writes (issue 46): for as long as this
    lasts, file descriptor 1 is standard error's, so every other line (the command's own,
    a library's, a child process's, which inherit it) goes there, and only what an Output
    for `-` writes reaches standard output. A pipe then holds the JSON alone."""
    global _reserved
    sys.stdout.flush()
    kept, python_stdout = os.dup(1), sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr  # print() too, wherever sys.stdout wrote (not always fd 1)
    _reserved = os.fdopen(os.dup(kept), "w", encoding="utf-8")
    try:
        yield
    finally:
        stream, _reserved = _reserved, None
        with contextlib.suppress(OSError):
            stream.close()
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        sys.stdout = python_stdout
        os.dup2(kept, 1)
        os.close(kept)


def shown(given: str | os.PathLike[str]) -> str:
    """Where a file went, in a message: `-` is "standard output"."""
    text = os.fspath(given)
    return "standard output" if text == STDOUT else str(text)


class OutputError(ValueError):
    """A path that cannot be written as asked. str() is the one line the user sees."""


def _shown(path: str) -> str:
    return repr(path if len(path) <= _SHOWN else path[:_SHOWN] + "...")


def _kind(mode: int) -> str | None:
    """What a file of this st_mode is, when it is not one that may be replaced."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def _reason(e: OSError) -> str:
    return {errno.ENAMETOOLONG: "the file name is too long",
            errno.EACCES: "permission denied", errno.EPERM: "permission denied",
            errno.EROFS: "the file system is read-only", errno.ENOSPC: "no space left",
            errno.ENOENT: "no such directory", errno.ENOTDIR: "a part of it is not a "
            "directory"}.get(e.errno or 0, e.strerror or type(e).__name__)


def umask_mode() -> int:
    """0666 less the process's umask: the mode a new file gets from `open`."""
    mask = os.umask(0o022)  # read by setting; put back at once
    os.umask(mask)
    return 0o666 & ~mask


@dataclass(frozen=True)
class Output:
    """A checked output: standard output, or the file (symlinks resolved) to write."""

    flag: str
    given: str
    path: Path | None  # None: standard output

    @property
    def is_stdout(self) -> bool:
        return self.path is None

    def __str__(self) -> str:
        return "standard output" if self.path is None else self.given

    def _refuse(self, why: str) -> OutputError:
        return OutputError(f"{self.flag} {_shown(self.given)}: {why}")

    def _check_target(self) -> os.stat_result | None:
        """The target's stat where it exists (None where it does not), refusing a kind
        of file that must not be replaced and a directory that does not exist."""
        assert self.path is not None
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        except OSError as e:
            raise self._refuse(_reason(e)) from None
        if st is not None:
            kind = _kind(st.st_mode)
            if kind is not None:
                raise self._refuse(f"is {kind}; give a regular file's name"
                                   + (", or - for standard output" if kind != "a directory"
                                      else ""))
            return st
        parent = self.path.parent
        if not parent.is_dir():
            # Named as given where no symlink led elsewhere: 'no/such', not /abs/no/such.
            given = Path(self.given).parent
            named = given if os.path.realpath(given) == str(parent) else parent
            raise self._refuse(f"directory {_shown(str(named))} does not exist")
        return None

    def probe(self) -> None:
        """Prove the file can be written, leaving nothing behind: a throwaway file in its
        directory, and the name itself where no file holds it yet (a name too long for
        the file system, a directory such as /proc that takes no new file)."""
        if self.path is None:
            return
        existed = self._check_target() is not None
        try:
            fd, tmp = tempfile.mkstemp(prefix=".lb-", dir=self.path.parent)
            os.close(fd)
            os.unlink(tmp)
            if not existed:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.close(fd)
                os.unlink(self.path)
            elif not os.access(self.path, os.W_OK):
                raise PermissionError(errno.EACCES, "permission denied")
        except OSError as e:
            raise self._refuse(f"cannot be written ({_reason(e)})") from None

    def write(self, text: str) -> None:
        """Replace the file with `text` atomically (a reader never sees half of it, a
        crash leaves the old one), or print it on standard output."""
        if self.path is None:
            out = _reserved or sys.stdout
            out.write(text)
            out.flush()
            return
        st = self._check_target()  # again: the path may have changed since the probe
        mode = stat.S_IMODE(st.st_mode) if st is not None else umask_mode()
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=".lb-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                os.fchmod(f.fileno(), mode)
            os.replace(tmp, self.path)
        except OSError as e:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            raise self._refuse(f"cannot be written ({_reason(e)})") from None
        except BaseException:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            raise

    def append(self, text: str) -> None:
        """Add `text` at the end (a step summary, which its reader appends to), creating
        the file with the umask's mode where there is none."""
        if self.path is None:
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        self._check_target()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise self._refuse(f"cannot be written ({_reason(e)})") from None


def output(given: str | os.PathLike[str], flag: str, *, stdout: bool = True) -> Output:
    """`given` checked as where `flag` writes (not yet probed: see Output.probe).
    `stdout`: whether `-` may stand for standard output here (a command that prints its
    own table there says no)."""
    text = os.fspath(given)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise OutputError(f"{flag} {text!r} is empty: give a file name"
                          + (", or - for standard output" if stdout else ""))
    if "\x00" in text:
        raise OutputError(f"{flag} {_shown(text)}: a file name cannot hold a NUL character")
    if text == STDOUT:
        if not stdout:
            raise OutputError(f"{flag} -: this command prints its own lines on standard "
                              "output; give a file name")
        return Output(flag, text, None)
    # Through a symlink to its target (resolved now, so the link itself is never
    # replaced by a file); a dangling link's target is created.
    path = Path(os.path.realpath(text))
    return Output(flag, text, path)


def checked(given: str | os.PathLike[str], flag: str, *, stdout: bool = True) -> Output:
    """output() and its probe: the whole check a command makes before its work."""
    out = output(given, flag, stdout=stdout)
    out.probe()
    return out
