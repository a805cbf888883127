"""Writing files the way a configuration-management module does: atomic, idempotent, check/diff/backup.

Every command that writes a file (``-o PATH``) goes through :func:`emit`:

* **atomic**: the bytes go to a temp file in the same folder, which is fsynced, given the old file's mode, owner
  and SELinux label, and moved over the target with ``os.replace``; then the folder is fsynced. A reader sees the
  old file or the new one, never a half-written one, and a crash leaves no partial file behind.
* **idempotent**: nothing is written when the file already holds exactly these bytes (``changed`` is False and
  the file's mtime does not move).
* **check**: compute and report, write nothing (Ansible's check mode).
* **diff**: a unified diff of the change, plus Ansible's ``{"before", "after", "before_header", "after_header"}``
  record, which ``ansible-playbook --diff`` renders.
* **backup**: keep the previous file as ``PATH.YYYYmmdd-HHMMSS~`` (a hard link to the old inode, so mode, owner and
  mtime are the old ones), like Ansible's ``backup: yes``; only when the file really changes.

A symlink at ``PATH`` is followed: the file it points to is replaced and the link stays (``sed -i
--follow-symlinks``), so ``/etc/nccl.conf -> /shared/nccl.conf`` keeps working.
"""

from __future__ import annotations

import difflib
import errno
import os
import stat
import tempfile
import time
from dataclasses import dataclass

from ncclctl.errors import InputError


@dataclass(frozen=True)
class WriteResult:
    """What :func:`emit` did (or, in check mode, would do)."""

    changed: bool
    #: The path as the caller gave it.
    path: str
    msg: str
    #: Ansible's diff record (``before``/``after`` and their headers) when a diff was asked for and the file
    #: changes; ``None`` otherwise.
    diff: dict | None = None
    #: The same change as a unified diff (``--- PATH`` / ``+++ PATH``); ``None`` when not asked or unchanged.
    unified: str | None = None
    #: Where the previous file was kept (``--backup``), when a backup was made.
    backup: str | None = None
    check: bool = False
    #: True when the file did not exist before.
    created: bool = False

    def record(self) -> dict:
        """The Ansible-style result: ``changed``, ``path``, ``diff``, ``msg`` (+ ``backup_file``, ``check_mode``)."""
        return {"changed": self.changed, "path": self.path, "diff": self.diff, "msg": self.msg,
                "backup_file": self.backup, "check_mode": self.check}


def emit(path: str, data: bytes, *, check: bool = False, diff: bool = False, backup: bool = False,
         mode: int = 0o644) -> WriteResult:
    """Make ``path`` hold ``data``; see the module docstring. New files get ``mode`` minus the umask.

    Raises :class:`InputError` (exit 3) naming the path when the target is a folder or not a regular file, the
    current file cannot be read, or the folder does not exist or is not writable (except in check mode, where a
    missing folder is reported as a change that would be made).
    """
    target = _resolve(path)
    folder = os.path.dirname(target)
    old = _read_current(target, path)
    changed = old != data
    want_diff = diff and changed
    ansible_diff, unified = (_diffs(path, old, data) if want_diff else (None, None))
    if not changed:
        return WriteResult(changed=False, path=path, msg=f"{path} is up to date", check=check)
    created = old is None
    if check:
        what = "created" if created else "changed"
        msg = f"{path} would be {what} (check mode: nothing written)"
        if created and not os.path.isdir(folder):
            msg += f"; the folder {folder} does not exist yet"
        return WriteResult(changed=True, path=path, msg=msg, diff=ansible_diff, unified=unified, check=True,
                           created=created)
    if not os.path.isdir(folder):
        raise InputError("the folder does not exist", path=folder, fix="create it first")
    kept = _backup(target, path) if backup and not created else None
    _replace(target, data, mode=mode)
    msg = f"{path} {'created' if created else 'changed'} ({len(data)} bytes)"
    if kept:
        msg += f"; previous file kept as {kept}"
    return WriteResult(changed=True, path=path, msg=msg, diff=ansible_diff, unified=unified, backup=kept,
                       created=created)


def write_atomic(path: str, data: bytes, *, mode: int = 0o644) -> bool:
    """Write ``data`` to ``path`` only when the bytes differ. Returns True when the file changed."""
    return emit(path, data, mode=mode).changed


# --------------------------------------------------------------------------------------------------


def _resolve(path: str) -> str:
    """The file to replace: ``path`` itself, or where its symlink (chain) points."""
    target = os.path.abspath(path)
    if os.path.islink(target):
        target = os.path.realpath(target)
    return target


def _read_current(target: str, shown: str) -> bytes | None:
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot look at the current file: {exc.strerror}", path=shown) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError("is a directory", path=shown, fix="give a file path")
    if not stat.S_ISREG(st.st_mode):
        raise InputError("is not a regular file (a device, socket or FIFO)", path=shown,
                         fix="give the path of a regular file")
    try:
        with open(target, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise InputError(f"cannot read the current file: {exc.strerror}", path=shown,
                         fix="run with the rights to read and replace it") from None


def _text(data: bytes | None) -> str | None:
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _diffs(path: str, old: bytes | None, new: bytes) -> tuple[dict, str]:
    before, after = _text(old), _text(new)
    if before is None or after is None:
        note = f"Binary files {path} differ\n"
        return {"before_header": path, "after_header": path, "src_binary": before is None,
                "dst_binary": after is None, "prepared": note}, note
    lines = list(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                      fromfile="/dev/null" if old is None else path, tofile=path, lineterm="\n"))
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:  # the last line of a file without a final newline, as diff(1) prints it
            out.append(line + "\n\\ No newline at end of file\n")
    return {"before": before, "after": after, "before_header": path if old is not None else "/dev/null",
            "after_header": path}, "".join(out)


def _backup(target: str, shown: str) -> str:
    """Keep the current file as ``target.YYYYmmdd-HHMMSS~`` (``~1``, ``~2``... if that name is taken)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime())
    for n in range(1000):
        name = f"{target}.{stamp}~" if n == 0 else f"{target}.{stamp}~{n}"
        try:
            os.link(target, name)
            return name
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK, errno.EOPNOTSUPP):
                raise InputError(f"cannot keep a backup: {exc.strerror}", path=name) from None
            import shutil

            if os.path.exists(name):
                continue
            try:
                shutil.copy2(target, name)
            except OSError as exc2:
                raise InputError(f"cannot keep a backup: {exc2.strerror}", path=name) from None
            return name
    raise InputError("cannot find a free backup name", path=shown, fix="remove old backups")  # pragma: no cover


def _replace(target: str, data: bytes, *, mode: int) -> None:
    folder = os.path.dirname(target)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError) and not os.path.isdir(folder or "."):
            raise InputError("the folder does not exist", path=folder, fix="create it first") from None
        raise InputError(f"cannot write here: {exc.strerror}", path=folder,
                         fix="run with the rights to write this folder, or choose another path") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            os.chmod(tmp, st.st_mode & 0o7777)
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except PermissionError:
                pass  # not root: the file becomes ours, as with any editor
            _copy_selinux_label(target, tmp)
        else:
            os.chmod(tmp, mode & ~_umask())
        os.replace(tmp, target)
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _copy_selinux_label(src: str, dst: str) -> None:
    try:
        label = os.getxattr(src, "security.selinux")
    except (OSError, AttributeError):
        return  # no SELinux (ENODATA/ENOTSUP) or no xattr support
    try:
        os.setxattr(dst, "security.selinux", label)
    except OSError:
        pass


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
