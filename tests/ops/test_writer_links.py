"""Hostile symlinks at a writer's target: every -o writer (fileio.emit / write_atomic) and snapshot -o / --tar.

Default: a symlink at the path is replaced by the new file (its target untouched). ``--follow``: the link is
followed, except another user's link in a sticky world-writable folder (the kernel's fs.protected_symlinks rule,
checked in user space for every link on the way): exit 3 naming the link and its owner.

The hostile cases need root (a link owned by another uid: ``os.lchown``); they are skipped otherwise.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from conftest import HOSTS, run_cli
from ncclctl import fileio
from ncclctl.errors import InputError
from ncclctl.probe.snapshot import snapshot

NOBODY = 65534
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="a link owned by another user needs root (os.lchown)")

TOPO = ["topo", "generate", "--root", str(HOSTS / "dgx-h100")]
CONF = ["conf", "generate", "--root", str(HOSTS / "hgx-h100-roce")]
SNAP = ["snapshot", "--root", str(HOSTS / "cpu-only")]


def sticky_dir(parent, name="tmp", owner=None):
    """A /tmp-like folder: mode 1777 (sticky, world-writable), owned by ``owner`` (default: us)."""
    d = parent / name
    d.mkdir()
    os.chmod(d, 0o1777)
    if owner is not None:
        os.chown(d, owner, owner)
    return d


def planted_link(folder, name, dest, uid=NOBODY):
    """A symlink ``folder/name -> dest`` owned by ``uid`` (as if that user had planted it)."""
    link = folder / name
    link.symlink_to(dest)
    os.lchown(link, uid, uid)
    return link


def victim(tmp_path, content=b"root:x:0:0\n"):
    v = tmp_path / "victim"
    v.write_bytes(content)
    os.chmod(v, 0o600)
    return v


# -- the API: a link we own -------------------------------------------------------------------------


def test_default_replaces_the_link_and_leaves_its_target(tmp_path):
    real = tmp_path / "shared.conf"
    real.write_bytes(b"A=1\n")
    link = tmp_path / "nccl.conf"
    link.symlink_to(real)
    r = fileio.emit(str(link), b"A=2\n")
    assert r.changed and not r.created and "symlink to" in r.msg and "replaced by a regular file" in r.msg
    assert not link.is_symlink() and link.read_bytes() == b"A=2\n"
    assert real.read_bytes() == b"A=1\n"
    assert sorted(os.listdir(tmp_path)) == ["nccl.conf", "shared.conf"]


def test_default_replaces_the_link_even_when_its_target_holds_the_same_bytes(tmp_path):
    real = tmp_path / "shared.conf"
    real.write_bytes(b"A=1\n")
    link = tmp_path / "nccl.conf"
    link.symlink_to(real)
    assert fileio.emit(str(link), b"A=1\n").changed
    assert not link.is_symlink() and not fileio.emit(str(link), b"A=1\n").changed


def test_follow_writes_through_the_link_and_keeps_it(tmp_path):
    real = tmp_path / "shared.conf"
    real.write_bytes(b"A=1\n")
    os.chmod(real, 0o640)
    link = tmp_path / "nccl.conf"
    link.symlink_to("shared.conf")  # relative, as ln -s writes it
    assert fileio.emit(str(link), b"A=2\n", follow=True).changed
    assert link.is_symlink() and real.read_bytes() == b"A=2\n"
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640
    assert not fileio.emit(str(link), b"A=2\n", follow=True).changed


def test_follow_a_chain_and_a_dangling_link(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("sub/../sub/c")
    fileio.emit(str(tmp_path / "a"), b"x\n", follow=True)
    assert (tmp_path / "sub" / "c").read_bytes() == b"x\n" and (tmp_path / "a").is_symlink()


def test_a_link_loop_is_an_input_error(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(InputError, match="too many levels of symbolic links"):
        fileio.emit(str(tmp_path / "a"), b"x", follow=True)
    fileio.emit(str(tmp_path / "a"), b"x")  # without --follow the loop is just a link to replace
    assert (tmp_path / "a").read_bytes() == b"x"


def test_check_and_diff_compare_against_what_would_be_replaced(tmp_path):
    real = tmp_path / "shared.conf"
    real.write_bytes(b"A=1\n")
    link = tmp_path / "nccl.conf"
    link.symlink_to(real)
    r = fileio.emit(str(link), b"A=1\n", check=True, diff=True)  # the link goes: a change, shown as such
    assert r.changed and r.check and "symlink to" in r.msg and "would be replaced" in r.msg
    assert r.diff["before"] == "" and r.diff["before_header"] == f"{link} (symlink to {real}, replaced)"
    assert r.unified.startswith(f"--- {link} (symlink to {real}, replaced)\n+++ {link}\n")
    assert not fileio.emit(str(link), b"A=1\n", check=True, diff=True, follow=True).changed
    r = fileio.emit(str(link), b"A=2\n", check=True, diff=True, follow=True)
    assert r.changed and r.diff["before"] == "A=1\n"
    assert r.unified == f"--- {link}\n+++ {link}\n@@ -1 +1 @@\n-A=1\n+A=2\n"
    assert link.is_symlink() and real.read_bytes() == b"A=1\n"


def test_backup_of_a_replaced_link_is_the_link(tmp_path):
    real = tmp_path / "shared.conf"
    real.write_bytes(b"A=1\n")
    link = tmp_path / "nccl.conf"
    link.symlink_to(real)
    r = fileio.emit(str(link), b"A=2\n", backup=True)
    assert r.backup and os.path.islink(r.backup) and os.readlink(r.backup) == str(real) and "previous link" in r.msg
    assert real.read_bytes() == b"A=1\n" and link.read_bytes() == b"A=2\n"


# -- the API: hostile links (root) -------------------------------------------------------------------


@ROOT_ONLY
def test_foreign_link_in_a_sticky_folder_is_not_followed(tmp_path):
    v = victim(tmp_path)
    tmp = sticky_dir(tmp_path)
    link = planted_link(tmp, "nccl.conf", v)
    with pytest.raises(InputError) as err:
        fileio.emit(str(link), b"pwned\n", follow=True)
    e = err.value
    assert e.path == str(link) and "uid 65534" in e.message and "fs.protected_symlinks" in e.message
    assert str(tmp) in e.message and "leave out --follow" in e.fix
    with pytest.raises(InputError, match="refusing to follow"):  # check mode does not look through it either
        fileio.emit(str(link), b"pwned\n", follow=True, check=True, diff=True)
    assert v.read_bytes() == b"root:x:0:0\n" and link.is_symlink()
    r = fileio.emit(str(link), b"new\n")  # default: the link itself is replaced
    assert r.changed and v.read_bytes() == b"root:x:0:0\n" and stat.S_IMODE(os.stat(v).st_mode) == 0o600
    st = os.lstat(link)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid(), "the new file must not take the link's owner"


@ROOT_ONLY
def test_dangling_foreign_link_is_not_followed_to_create_a_file(tmp_path):
    tmp = sticky_dir(tmp_path)
    target = tmp_path / "etc-cron.d-job"
    link = planted_link(tmp, "topo.xml", target)
    with pytest.raises(InputError, match="refusing to follow"):
        fileio.emit(str(link), b"x\n", follow=True)
    assert not target.exists()


@ROOT_ONLY
def test_link_owned_by_the_folders_owner_is_followed(tmp_path):
    v = victim(tmp_path)
    tmp = sticky_dir(tmp_path, owner=NOBODY)
    link = planted_link(tmp, "nccl.conf", v)
    assert fileio.emit(str(link), b"A=1\n", follow=True).changed
    assert v.read_bytes() == b"A=1\n" and link.is_symlink()


@ROOT_ONLY
@pytest.mark.parametrize("mode", [0o0777, 0o1775, 0o1755])
def test_only_sticky_and_world_writable_folders_protect(tmp_path, mode):
    """The kernel's rule: a folder that is not both sticky and world-writable does not stop a link."""
    v = victim(tmp_path)
    d = tmp_path / "d"
    d.mkdir()
    os.chmod(d, mode)
    link = planted_link(d, "nccl.conf", v)
    fileio.emit(str(link), b"A=1\n", follow=True)
    assert v.read_bytes() == b"A=1\n"


@ROOT_ONLY
def test_every_link_of_a_chain_is_checked(tmp_path):
    v = victim(tmp_path)
    tmp = sticky_dir(tmp_path)
    planted_link(tmp, "hop", v)                           # theirs
    ours = tmp / "nccl.conf"
    ours.symlink_to("hop")                                # ours, pointing at theirs
    with pytest.raises(InputError) as err:
        fileio.emit(str(ours), b"x\n", follow=True)
    assert err.value.path == str(tmp / "hop") and v.read_bytes() == b"root:x:0:0\n"


@ROOT_ONLY
@pytest.mark.parametrize("follow", [False, True])
def test_foreign_link_among_the_folders_is_refused(tmp_path, follow):
    """/tmp/d -> /etc planted by another user: /tmp/d/nccl.conf would land in /etc: refused with and without
    --follow (the kernel does the same for a folder link when the sysctl is on)."""
    tmp = sticky_dir(tmp_path)
    etc = tmp_path / "etc"
    etc.mkdir()
    link = planted_link(tmp, "d", etc)
    with pytest.raises(InputError) as err:
        fileio.emit(str(link / "nccl.conf"), b"x\n", follow=follow)
    assert err.value.path == str(link) and "does not pass through this link" in err.value.fix
    assert os.listdir(etc) == []


# -- the CLI ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cmd", [TOPO, CONF], ids=["topo", "conf"])
def test_cli_default_replaces_the_link_and_follow_writes_through(cmd, tmp_path):
    real = tmp_path / "shared"
    real.write_bytes(b"old\n")
    link = tmp_path / "out"
    link.symlink_to(real)
    r = run_cli(*cmd, "-o", str(link), "--follow", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["changed"] is True and link.is_symlink() and real.read_bytes() != b"old\n"
    written = real.read_bytes()
    real.write_bytes(b"old\n")
    r = run_cli(*cmd, "-o", str(link))
    assert r.returncode == 0, r.stderr
    assert "replaced by a regular file" in r.stderr
    assert not link.is_symlink() and link.read_bytes() == written and real.read_bytes() == b"old\n"


@ROOT_ONLY
@pytest.mark.parametrize("cmd", [TOPO, CONF], ids=["topo", "conf"])
def test_cli_foreign_link_in_sticky_folder(cmd, tmp_path):
    v = victim(tmp_path)
    tmp = sticky_dir(tmp_path)
    link = planted_link(tmp, "out", v)
    r = run_cli(*cmd, "-o", str(link), "--follow")
    assert r.returncode == 3 and "Traceback" not in r.stderr
    assert f"{link}: refusing to follow this symlink: it is owned by uid 65534" in r.stderr and "(fix: " in r.stderr
    r = run_cli(*cmd, "-o", str(link), "--follow", "--check", "--format", "json")
    assert r.returncode == 3 and json.loads(r.stdout)["error"]["path"] == str(link)
    r = run_cli(*cmd, "-o", str(link))
    assert r.returncode == 0, r.stderr
    assert v.read_bytes() == b"root:x:0:0\n" and not link.is_symlink() and os.lstat(link).st_uid == os.geteuid()


def test_follow_without_output_is_a_usage_error():
    for cmd in (TOPO, ["fabric", "synth", "--nodes", "4"]):
        r = run_cli(*cmd, "--follow")
        assert r.returncode == 2 and "--follow only applies to a file written with -o" in r.stderr, r.stderr


# -- snapshot -o DIR and --tar FILE ----------------------------------------------------------------------


def earlier_snapshot(path):
    path.mkdir()
    (path / "manifest.json").write_text("{}\n")
    return path


def test_snapshot_dir_default_replaces_the_link_not_its_target(tmp_path):
    old = earlier_snapshot(tmp_path / "old-snap")
    link = tmp_path / "snap"
    link.symlink_to(old)
    r = run_cli(*SNAP, "-o", str(link))
    assert r.returncode == 0, r.stderr
    assert not link.is_symlink() and (link / "manifest.json").read_text() != "{}\n"
    assert os.listdir(old) == ["manifest.json"] and (old / "manifest.json").read_text() == "{}\n"
    assert sorted(os.listdir(tmp_path)) == ["old-snap", "snap"], "no .old-/temp entry may be left"


def test_snapshot_dir_follow_replaces_an_earlier_snapshot_behind_the_link(tmp_path):
    (tmp_path / "store").mkdir()
    old = earlier_snapshot(tmp_path / "store" / "snap")
    link = tmp_path / "snap"
    link.symlink_to("store/snap")
    result = snapshot(str(link), root=str(HOSTS / "cpu-only"), follow=True)
    assert result.path == str(old) and link.is_symlink()
    assert (old / "manifest.json").read_text() != "{}\n" and sorted(os.listdir(tmp_path / "store")) == ["snap"]


def test_snapshot_dir_follow_still_refuses_a_foreign_folder(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    link = tmp_path / "snap"
    link.symlink_to(precious)
    r = run_cli(*SNAP, "-o", str(link), "--follow")
    assert r.returncode == 3 and "refusing to overwrite" in r.stderr
    assert os.listdir(precious) == ["notes.txt"] and link.is_symlink()


def test_snapshot_tar_default_replaces_the_link_follow_writes_through(tmp_path):
    real = tmp_path / "real.tar.gz"
    real.write_bytes(b"old")
    link = tmp_path / "host.tar.gz"
    link.symlink_to(real)
    r = run_cli(*SNAP, "--tar", str(link), "--follow")
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and real.read_bytes()[:2] == b"\x1f\x8b"
    real.write_bytes(b"old")
    r = run_cli(*SNAP, "--tar", str(link))
    assert r.returncode == 0, r.stderr
    assert not link.is_symlink() and link.read_bytes()[:2] == b"\x1f\x8b" and real.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["host.tar.gz", "real.tar.gz"]


@ROOT_ONLY
@pytest.mark.parametrize("how", ["-o", "--tar"])
def test_snapshot_foreign_link_in_sticky_folder(tmp_path, how):
    """The link points at a folder of ours holding an earlier snapshot (-o) or at a file (--tar): --follow is
    refused; the default replaces the link and the thing it points to stays as it was."""
    tmp = sticky_dir(tmp_path)
    if how == "-o":
        dest = earlier_snapshot(tmp_path / "precious")
    else:
        dest = victim(tmp_path)
    link = planted_link(tmp, "snap", dest)
    r = run_cli(*SNAP, how, str(link), "--follow")
    assert r.returncode == 3 and f"{link}: refusing to follow this symlink" in r.stderr and "uid 65534" in r.stderr
    r = run_cli(*SNAP, how, str(link))
    assert r.returncode == 0, r.stderr
    assert not link.is_symlink() and os.lstat(link).st_uid == os.geteuid()
    if how == "-o":
        assert os.listdir(dest) == ["manifest.json"] and (dest / "manifest.json").read_text() == "{}\n"
    else:
        assert dest.read_bytes() == b"root:x:0:0\n"
    assert sorted(os.listdir(tmp)) == ["snap"]


@ROOT_ONLY
def test_snapshot_follows_a_link_owned_by_the_folders_owner(tmp_path):
    tmp = sticky_dir(tmp_path, owner=NOBODY)
    dest = earlier_snapshot(tmp_path / "mine")
    link = planted_link(tmp, "snap", dest)
    r = run_cli(*SNAP, "-o", str(link), "--follow")
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and (dest / "manifest.json").read_text() != "{}\n"
