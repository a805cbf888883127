"""Writing files: atomic, only on change, mode/owner kept, check/diff/backup, and the -o record of every writer."""

from __future__ import annotations

import json
import os
import stat

import pytest

from conftest import HOSTS, run_cli
from ncclctl import fileio
from ncclctl.errors import InputError

# -- the API ---------------------------------------------------------------------------------------


def test_create_then_unchanged_keeps_inode_and_mtime(tmp_path):
    p = tmp_path / "f.conf"
    first = fileio.emit(str(p), b"A=1\n")
    assert first.changed and first.created and p.read_bytes() == b"A=1\n"
    before = os.stat(p)
    os.utime(p, ns=(before.st_atime_ns, before.st_mtime_ns - 10**9))  # make a rewrite visible
    before = os.stat(p)
    again = fileio.emit(str(p), b"A=1\n")
    assert not again.changed and "up to date" in again.msg
    after = os.stat(p)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_change_replaces_atomically_and_leaves_no_temp_file(tmp_path):
    p = tmp_path / "f.conf"
    p.write_bytes(b"A=1\n")
    ino = os.stat(p).st_ino
    r = fileio.emit(str(p), b"A=2\n")
    assert r.changed and not r.created and p.read_bytes() == b"A=2\n"
    assert os.stat(p).st_ino != ino, "written in place instead of renamed over"
    assert sorted(os.listdir(tmp_path)) == ["f.conf"]


def test_failure_during_replace_removes_the_temp_file_and_keeps_the_old_file(tmp_path, monkeypatch):
    p = tmp_path / "f.conf"
    p.write_bytes(b"old\n")

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(InputError, match="cannot write the file: No space left on device") as err:
        fileio.emit(str(p), b"new\n")
    assert err.value.path == str(p) and err.value.fix == "free space or choose another folder"
    assert p.read_bytes() == b"old\n"
    assert sorted(os.listdir(tmp_path)) == ["f.conf"]


def test_mode_of_an_existing_file_is_kept(tmp_path):
    p = tmp_path / "f.conf"
    p.write_bytes(b"x\n")
    os.chmod(p, 0o600)
    fileio.emit(str(p), b"y\n")
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_owner_of_an_existing_file_is_kept(tmp_path):
    p = tmp_path / "f.conf"
    p.write_bytes(b"x\n")
    os.chown(p, 4242, 4343)
    fileio.emit(str(p), b"y\n")
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (4242, 4343)


def test_new_file_is_0644_minus_umask(tmp_path):
    old = os.umask(0o027)
    try:
        fileio.emit(str(tmp_path / "n.conf"), b"x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "n.conf").st_mode) == 0o640


def test_check_mode_reports_and_writes_nothing(tmp_path):
    p = tmp_path / "f.conf"
    r = fileio.emit(str(p), b"A=1\n", check=True)
    assert r.changed and r.check and "would be created" in r.msg and not p.exists()
    p.write_bytes(b"A=0\n")
    r = fileio.emit(str(p), b"A=1\n", check=True, diff=True)
    assert r.changed and "would be changed" in r.msg and p.read_bytes() == b"A=0\n"
    assert r.unified == f"--- {p}\n+++ {p}\n@@ -1 +1 @@\n-A=0\n+A=1\n"
    assert not fileio.emit(str(p), b"A=0\n", check=True).changed


def test_check_mode_into_a_folder_that_does_not_exist_yet(tmp_path):
    r = fileio.emit(str(tmp_path / "no" / "f.conf"), b"x\n", check=True)
    assert r.changed and "does not exist yet" in r.msg
    with pytest.raises(InputError, match="folder does not exist"):
        fileio.emit(str(tmp_path / "no" / "f.conf"), b"x\n")


def test_diff_is_ansible_shaped_and_unified(tmp_path):
    p = tmp_path / "f.conf"
    r = fileio.emit(str(p), b"A=1\nB=2\n", diff=True)
    assert r.diff == {"before": "", "after": "A=1\nB=2\n", "before_header": "/dev/null", "after_header": str(p)}
    assert r.unified.startswith(f"--- /dev/null\n+++ {p}\n@@ -0,0 +1,2 @@\n+A=1\n+B=2\n")
    r = fileio.emit(str(p), b"A=1\nB=3", diff=True)
    assert r.diff["before"] == "A=1\nB=2\n" and r.diff["after"] == "A=1\nB=3"
    assert r.unified.endswith("-B=2\n+B=3\n\\ No newline at end of file\n")
    assert fileio.emit(str(p), b"A=1\nB=3", diff=True).diff is None  # unchanged: nothing to show


def test_binary_diff_is_not_inlined(tmp_path):
    p = tmp_path / "b.bin"
    p.write_bytes(b"\xff\xfe")
    r = fileio.emit(str(p), b"\x00\xff", diff=True, check=True)
    assert r.diff["src_binary"] and "differ" in r.unified


def test_backup_keeps_the_previous_file_only_on_change(tmp_path):
    p = tmp_path / "nccl.conf"
    assert fileio.emit(str(p), b"A=1\n", backup=True).backup is None  # nothing to keep yet
    os.chmod(p, 0o640)
    r = fileio.emit(str(p), b"A=2\n", backup=True)
    assert r.backup and r.backup.startswith(f"{p}.") and r.backup.endswith("~")
    assert open(r.backup, "rb").read() == b"A=1\n" and p.read_bytes() == b"A=2\n"
    assert stat.S_IMODE(os.stat(r.backup).st_mode) == 0o640
    assert "kept as" in r.msg
    assert fileio.emit(str(p), b"A=2\n", backup=True).backup is None
    second = fileio.emit(str(p), b"A=3\n", backup=True)  # same second: a distinct name, the first one survives
    assert second.backup != r.backup and open(second.backup, "rb").read() == b"A=2\n"
    assert open(r.backup, "rb").read() == b"A=1\n"


def test_a_symlink_is_followed_and_kept_with_follow(tmp_path):
    """More on links (the default replaces them; hostile ones): test_writer_links.py."""
    real = tmp_path / "shared.conf"
    real.write_bytes(b"A=1\n")
    link = tmp_path / "nccl.conf"
    link.symlink_to(real)
    assert fileio.emit(str(link), b"A=2\n", follow=True).changed
    assert link.is_symlink() and real.read_bytes() == b"A=2\n"


def test_refuses_folders_and_special_files(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        fileio.emit(str(tmp_path), b"x")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        fileio.emit(str(fifo), b"x")


def test_write_atomic_is_emit(tmp_path):
    p = tmp_path / "f"
    assert fileio.write_atomic(str(p), b"1") is True
    assert fileio.write_atomic(str(p), b"1") is False


# -- every -o writer through the CLI ---------------------------------------------------------------

WRITERS = {
    "topo": ["topo", "generate", "--root", str(HOSTS / "dgx-h100")],
    "graph": ["rings", "graph", "--root", str(HOSTS / "dgx-h100"), "--force"],
    "conf": ["conf", "generate", "--root", str(HOSTS / "hgx-h100-roce")],
    "facts": ["facts", "--root", str(HOSTS / "dgx-h100")],
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_writer_check_write_idempotent_backup(writer, tmp_path):
    out = tmp_path / "out"
    base = [*WRITERS[writer], "-o", str(out), "--format", "json"]
    r = run_cli(*base, "--check", "--diff")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["changed"] is True and rec["check_mode"] is True and rec["path"] == str(out)
    assert rec["diff"]["before"] == "" and rec["diff"]["after"] and not out.exists()
    r = run_cli(*base)
    rec = json.loads(r.stdout)
    assert r.returncode == 0 and rec["changed"] is True and out.exists()
    assert rec["diff"] is None and rec["msg"] == f"{out} created ({out.stat().st_size} bytes)"
    content = out.read_bytes()
    assert content == rec_content(writer, tmp_path), "-o writes exactly what stdout shows"
    r = run_cli(*base, "--backup")
    rec = json.loads(r.stdout)
    assert rec["changed"] is False and rec["backup_file"] is None and "up to date" in rec["msg"]
    out.write_bytes(content + b"\n")
    r = run_cli(*base, "--backup", "--diff")
    rec = json.loads(r.stdout)
    assert rec["changed"] is True and out.read_bytes() == content
    assert open(rec["backup_file"], "rb").read() == content + b"\n"
    assert rec["diff"]["before"].endswith("\n\n") and rec["diff"]["after"] == content.decode()


def rec_content(writer: str, tmp_path) -> bytes:
    r = run_cli(*WRITERS[writer])
    assert r.returncode == 0, r.stderr
    return r.stdout.encode()


def test_text_mode_prints_diff_on_stdout_and_message_on_stderr(tmp_path):
    out = tmp_path / "nccl.conf"
    out.write_text("NCCL_IB_HCA=mlx5\n")
    r = run_cli(*WRITERS["conf"], "-o", str(out), "--check", "--diff")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"--- {out}\n+++ {out}\n") and "-NCCL_IB_HCA=mlx5\n" in r.stdout
    assert f"ncclctl: {out} would be changed (check mode: nothing written)" in r.stderr
    assert out.read_text() == "NCCL_IB_HCA=mlx5\n"


@pytest.mark.parametrize("flag", ["--check", "--diff", "--backup", "--follow"])
def test_write_flags_without_output_are_usage_errors(flag):
    r = run_cli("topo", "generate", "--root", str(HOSTS / "dgx-h100"), flag)
    assert r.returncode == 2 and f"{flag} only applies to a file written with -o" in r.stderr and "add -o FILE" in r.stderr


def test_unwritable_target_names_the_path(tmp_path):
    r = run_cli(*WRITERS["conf"], "-o", str(tmp_path / "missing" / "nccl.conf"))
    assert r.returncode == 3 and f"{tmp_path / 'missing'}: the folder does not exist" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs procfs")
def test_folder_that_takes_no_files_is_not_called_missing():
    """/proc exists but no file can be created in it: 'cannot write here', not 'the folder does not exist'."""
    r = run_cli(*WRITERS["conf"], "-o", "/proc/nccl.conf")
    assert r.returncode == 3 and "/proc: cannot write here" in r.stderr and "does not exist" not in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs procfs")
@pytest.mark.parametrize("how", [("-o", "/proc/ncclctl-snap"), ("--tar", "/proc/ncclctl-snap.tar.gz")])
def test_snapshot_into_an_unwritable_place_is_an_input_error(how):
    r = run_cli("snapshot", "--root", str(HOSTS / "cpu-only"), *how)
    assert r.returncode == 3, r.stderr
    assert f"{how[1]}: cannot write the snapshot in /proc" in r.stderr and "internal error" not in r.stderr
