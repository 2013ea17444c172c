"""The safe writer behind every file the command line writes (issue 48, item 4): devices,
FIFOs, sockets and directories refused; symlinks written through; the umask's mode;
`-` for standard output; every refusal one line, nothing left behind."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from contract import outfile


def _char_device(tmp_path):
    """A character device in the temp dir: /dev/null's own node where mknod is allowed
    (root), else a symlink to /dev/null (resolved, it is the device itself). Either way
    the real /dev/null is never a path the writer is handed."""
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        node.symlink_to("/dev/null")
    assert stat.S_ISCHR(os.stat(node).st_mode)
    return node


def _fifo(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p)
    return p


def _socket(tmp_path):
    p = tmp_path / "sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()
    return p


@pytest.mark.parametrize("make, kind", [
    (_char_device, "a character device"), (_fifo, "a FIFO"), (_socket, "a socket"),
    (lambda t: t, "a directory")])
def test_a_special_file_is_refused_and_left_as_it_was(tmp_path, make, kind):
    path = make(tmp_path)
    before = os.stat(path)
    for write in (lambda o: o.probe(), lambda o: o.write("x"), lambda o: o.append("x")):
        with pytest.raises(outfile.OutputError) as e:
            write(outfile.output(path, "--junit"))
        assert kind in str(e.value) and "\n" not in str(e.value)
    after = os.stat(path)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (
        before.st_mode, before.st_ino, before.st_rdev)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".lb-")]


def test_a_device_behind_a_symlink_is_refused_and_the_link_kept(tmp_path):
    device = _char_device(tmp_path)
    link = tmp_path / "report.xml"
    link.symlink_to(device)
    with pytest.raises(outfile.OutputError, match="a character device"):
        outfile.checked(link, "--junit")
    with pytest.raises(outfile.OutputError, match="a character device"):
        outfile.output(link, "--junit").write("<xml/>")
    assert link.is_symlink() and stat.S_ISCHR(os.stat(link).st_mode)


def test_a_symlink_is_written_through_to_its_target(tmp_path):
    target = tmp_path / "real.xml"
    target.write_text("old")
    target.chmod(0o604)
    link = tmp_path / "link.xml"
    link.symlink_to(target)
    outfile.checked(link, "--junit").write("new")
    assert link.is_symlink() and target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o604  # a replaced file keeps its mode
    dangling = tmp_path / "dangling.xml"
    dangling.symlink_to(tmp_path / "made.xml")
    outfile.checked(dangling, "--out").write("made")
    assert dangling.is_symlink() and (tmp_path / "made.xml").read_text() == "made"


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_a_new_file_gets_the_umasks_mode(tmp_path, mask):
    old = os.umask(mask)
    try:
        outfile.checked(tmp_path / "a.json", "--out").write("{}")
        outfile.checked(tmp_path / "step_summary", "$GITHUB_STEP_SUMMARY").append("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o666 & ~mask
    assert stat.S_IMODE((tmp_path / "step_summary").stat().st_mode) == 0o666 & ~mask


def test_dash_is_standard_output(capsys):
    out = outfile.checked("-", "--out")
    assert out.is_stdout and str(out) == "standard output"
    out.write("records\n")
    assert capsys.readouterr().out == "records\n"
    with pytest.raises(outfile.OutputError, match="prints its own lines"):
        outfile.output("-", "--out", stdout=False)


@pytest.mark.parametrize("given, expected", [
    ("", "is empty"), ("  ", "is empty"), ("a\x00b", "NUL"),
    ("x" * 300 + ".xml", "the file name is too long"),
    ("/proc/x.xml", "cannot be written"),
    ("/nonexistent/dir/s.md", "directory '/nonexistent/dir' does not exist")])
def test_a_path_that_cannot_be_written_is_one_line_and_leaves_nothing(tmp_path, monkeypatch,
                                                                      given, expected):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(outfile.OutputError) as e:
        outfile.checked(given, "--junit")
    assert expected in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith("--junit ")
    assert list(tmp_path.iterdir()) == []


def test_an_atomic_write_replaces_a_file_whole(tmp_path):
    p = tmp_path / "b.json"
    p.write_text("old content that is longer")
    outfile.checked(p, "--out").write("new")
    assert p.read_text() == "new" and sorted(tmp_path.iterdir()) == [p]
