"""A full disk while writing: every writer type answers exit 3 naming the file, keeps the old file whole and
leaves no temp file (nor a backup made for the failed write).

The disk is a real one: a 64 KiB tmpfs mounted in the test's folder and filled up (needs root and mount(2);
skipped with the reason otherwise). fsync failures, which tmpfs cannot produce, are injected.
"""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from conftest import HOSTS, run_cli
from ncclctl import fileio
from ncclctl.errors import InputError

ENOSPC_FIX = "(fix: free space or choose another folder)"


@pytest.fixture
def full_disk(tmp_path):
    """A filled 64 KiB tmpfs holding ``old.conf`` (b"old\\n") and ``snap/`` (an earlier snapshot)."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill (needs root): {proc.stderr.strip() or proc.returncode}")
    try:
        (mnt / "old.conf").write_bytes(b"old\n")
        (mnt / "snap").mkdir()
        (mnt / "snap" / "manifest.json").write_bytes(b"{}\n")
        fill(mnt)
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def fill(mnt, *, leave_pages: int = 0) -> None:
    """Fill the tmpfs with ``filler`` until ``leave_pages`` pages are free (0: until ENOSPC)."""
    fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while os.statvfs(mnt).f_bavail > leave_pages or not leave_pages:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC and not leave_pages, exc
    finally:
        os.close(fd)


def entries(mnt):
    return sorted(os.listdir(mnt))


BEFORE = ["filler", "old.conf", "snap"]

WRITERS = {
    "conf": ["conf", "generate", "--root", str(HOSTS / "hgx-h100-roce")],
    "topo": ["topo", "generate", "--root", str(HOSTS / "dgx-h100")],
    "graph": ["rings", "graph", "--root", str(HOSTS / "dgx-h100"), "--force"],
    "facts": ["facts", "--root", str(HOSTS / "dgx-h100")],
    "synth": ["fabric", "synth", "--nodes", "4"],
}


@pytest.mark.parametrize("writer,extra", [(w, x) for w in sorted(WRITERS) for x in ([], ["--backup"])
                                          if not (x and w == "synth")])  # fabric synth has no --backup
def test_cli_writer_on_a_full_disk(full_disk, writer, extra):
    target = full_disk / "old.conf"
    r = run_cli(*WRITERS[writer], "-o", str(target), *extra)
    assert r.returncode == 3, r.stderr
    assert f"{target}: cannot write the file: No space left on device {ENOSPC_FIX}" in r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert target.read_bytes() == b"old\n" and entries(full_disk) == BEFORE


@pytest.mark.parametrize("how", ["-o", "--tar"])
@pytest.mark.parametrize("name", ["snap", "new"])
def test_snapshot_on_a_full_disk(full_disk, how, name):
    target = full_disk / name
    r = run_cli("snapshot", "--root", str(HOSTS / "cpu-only"), how, str(target))
    assert r.returncode == 3, r.stderr
    assert f"{target}: cannot write the snapshot in {full_disk}: No space left on device {ENOSPC_FIX}" in r.stderr
    assert "Traceback" not in r.stderr
    assert entries(full_disk) == BEFORE and os.listdir(full_disk / "snap") == ["manifest.json"]
    assert (full_disk / "snap" / "manifest.json").read_bytes() == b"{}\n"


def test_backup_copy_on_a_full_disk_is_removed(full_disk, monkeypatch):
    """Where a hard link is impossible the backup is a copy; a copy cut short by the full disk is removed."""
    target = full_disk / "old.conf"
    (full_disk / "filler").unlink()
    fill(full_disk, leave_pages=1)  # room for the new file (one page), none for a copy of the old one as well

    def no_hard_links(src, dst, **kw):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_hard_links)
    with pytest.raises(InputError) as err:
        fileio.emit(str(target), b"new\n", backup=True)
    assert err.value.path.startswith(f"{target}.") and err.value.message == "cannot keep a backup: No space left on device"
    assert err.value.fix == "free space or choose another folder"
    assert target.read_bytes() == b"old\n" and entries(full_disk) == BEFORE


@pytest.mark.parametrize("backup", [False, True])
def test_fsync_failure_keeps_the_old_file(tmp_path, monkeypatch, backup):
    target = tmp_path / "f.conf"
    target.write_bytes(b"old\n")

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(InputError) as err:
        fileio.emit(str(target), b"new\n", backup=backup)
    assert str(err.value) == f"{target}: cannot write the file: No space left on device {ENOSPC_FIX}"
    assert target.read_bytes() == b"old\n" and os.listdir(tmp_path) == ["f.conf"]


def test_folder_fsync_failure_after_the_rename_says_so(tmp_path, monkeypatch):
    target = tmp_path / "f.conf"
    target.write_bytes(b"old\n")
    real_fsync, calls = os.fsync, []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 2:  # the folder's
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(InputError, match="the file was replaced, but its folder could not be flushed") as err:
        fileio.emit(str(target), b"new\n")
    assert err.value.path == str(target)
    assert target.read_bytes() == b"new\n" and os.listdir(tmp_path) == ["f.conf"]
