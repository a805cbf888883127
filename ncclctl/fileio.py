"""Writing files the way a configuration-management module does: atomic, idempotent, check/diff/backup.

Every command that writes a file (``-o PATH``) goes through :func:`emit`:

* **atomic**: the bytes go to a temp file in the same folder, which is fsynced, given the old file's mode, owner
  and SELinux label, and moved over the target with ``os.replace``; then the folder is fsynced. A reader sees the
  old file or the new one, never a half-written one, and a crash leaves no partial file behind.
* **other users' files**: an existing file that is another user's and world-writable, or another user's in a
  sticky world-writable folder (``/tmp``), gives the new file neither its owner nor its mode: it is replaced by a
  new inode owned by the caller with ``mode`` minus the umask, even when it already holds the bytes, and the
  message says so (:func:`_foreign`).
* **idempotent**: nothing is written when the file already holds exactly these bytes (``changed`` is False and
  the file's mtime does not move).
* **check**: compute and report, write nothing (Ansible's check mode).
* **diff**: a unified diff of the change, plus Ansible's ``{"before", "after", "before_header", "after_header"}``
  record, which ``ansible-playbook --diff`` renders.
* **backup**: keep the previous file as ``PATH.YYYYmmdd-HHMMSS~`` (a hard link to the old inode, so mode, owner and
  mtime are the old ones), like Ansible's ``backup: yes``; only when the file really changes.

Symlinks (Ansible ``copy``'s ``follow``):

* **default**: a symlink at ``PATH`` is replaced by the new regular file; the file it pointed to is not touched
  (``changed`` is True even when that file holds the same bytes: the link goes). The new file gets ``mode`` minus
  the umask and the caller as owner, never the link's owner.
* ``follow=True`` (``--follow``): the link (chain) is followed and the file at its end is replaced; the links stay,
  so ``/etc/nccl.conf -> /shared/nccl.conf`` keeps working.
* **protected symlinks**: no link is ever followed (neither a link at ``PATH`` with ``follow`` nor a link among the
  folders of ``PATH`` or of a link's destination) when it sits in a sticky world-writable folder (``/tmp``), is not
  owned by the caller (euid) and is not owned by the folder's owner: the kernel's ``fs.protected_symlinks`` rule,
  applied here because the path is resolved link by link in user space (:func:`resolve_target`) and the kernel's
  check would not see it (nor is the sysctl on everywhere). Such a path is :class:`InputError` (exit 3) naming the
  link and its owner.

Any ``OSError`` while writing (full disk, quota, read-only file system, no rights) is an :class:`InputError` naming
the file (:func:`write_error`); the old file stays whole, and the temp file and a backup made for this write are
removed.
"""

from __future__ import annotations

import difflib
import errno
import os
import stat
import tempfile
import time

from ncclctl.errors import InputError
from ncclctl.record import record


@record
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
         mode: int = 0o644, follow: bool = False) -> WriteResult:
    """Make ``path`` hold ``data``; see the module docstring. New files get ``mode`` minus the umask.

    ``follow``: write through a symlink at ``path`` instead of replacing the link (see the module docstring).

    Raises :class:`InputError` (exit 3) naming the path when the target is a folder or not a regular file, the
    current file cannot be read, a link may not be followed, the folder does not exist or is not writable (except
    in check mode, where a missing folder is reported as a change that would be made), or the write fails.
    """
    target = resolve_target(path, follow=follow)
    folder = os.path.dirname(target)
    old, link = _read_current(target, path)
    foreign = _foreign(target) if old is not None else None
    changed = link is not None or foreign is not None or old != data
    want_diff = diff and changed
    ansible_diff, unified = (_diffs(path, old, data, link=link) if want_diff else (None, None))
    if not changed:
        return WriteResult(changed=False, path=path, msg=f"{path} is up to date", check=check)
    created = old is None and link is None
    if check:
        if link is not None:
            msg = (f"{path} would be changed: the symlink to {link} would be replaced by a regular file "
                   f"(check mode: nothing written)")
        elif foreign is not None and old == data:
            msg = f"{path} would be replaced by a file of yours ({foreign}; check mode: nothing written)"
        else:
            msg = f"{path} would be {'created' if created else 'changed'} (check mode: nothing written)"
        if created and not os.path.isdir(folder):
            msg += f"; the folder {folder} does not exist yet"
        return WriteResult(changed=True, path=path, msg=msg, diff=ansible_diff, unified=unified, check=True,
                           created=created)
    if not os.path.isdir(folder):
        raise InputError("the folder does not exist", path=folder, fix="create it first")
    kept = _replace(target, path, data, mode=mode, backup=backup and not created, inherit=foreign is None)
    if link is not None:
        msg = (f"{path} changed: the symlink to {link} was replaced by a regular file ({len(data)} bytes; "
               f"its target is untouched; --follow writes through a link)")
    else:
        msg = f"{path} {'created' if created else 'changed'} ({len(data)} bytes)"
    if foreign is not None:
        msg += f"; {foreign}: the new file is yours, mode {mode & ~_umask():04o}"
    if kept:
        msg += f"; previous {'link' if link is not None else 'file'} kept as {kept}"
    return WriteResult(changed=True, path=path, msg=msg, diff=ansible_diff, unified=unified, backup=kept,
                       created=created)


def write_atomic(path: str, data: bytes, *, mode: int = 0o644, follow: bool = False) -> bool:
    """Write ``data`` to ``path`` only when the bytes differ. Returns True when the file changed."""
    return emit(path, data, mode=mode, follow=follow).changed


def resolve_target(path: str, *, follow: bool = False) -> str:
    """The absolute path whose directory entry a writer replaces, with every symlink on the way resolved.

    Every component is looked at with ``lstat`` and each symlink met is resolved here, one at a time (like
    ``realpath``), after :func:`_check_link` allowed following it: the links among the folders of ``path``, the
    links in a link's destination, and with ``follow`` the link (chain) at ``path`` itself. Without ``follow`` a
    symlink at ``path`` stays the last component: the writer replaces the link. A component that does not exist
    ends the look-up (the rest is joined as written). Raises :class:`InputError` for a link that may not be
    followed (the protected-symlinks rule) and for a loop (more than 40 links).
    """
    full = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    rest = [p for p in reversed(full.split("/")) if p not in ("", ".")]
    done = "/"
    hops = 0
    missing = False
    while rest:
        name = rest.pop()
        if name == "..":
            done = os.path.dirname(done)
            continue
        here = os.path.join(done, name)
        if missing:
            done = here
            continue
        try:
            st = os.lstat(here)
        except (FileNotFoundError, NotADirectoryError):
            missing = True
            done = here
            continue
        except OSError as exc:
            raise InputError(f"cannot look at this path: {exc.strerror}", path=here,
                             fix="run with the rights to read its folders, or choose another path") from None
        if not stat.S_ISLNK(st.st_mode) or (not rest and not follow):
            done = here
            continue
        hops += 1
        if hops > 40:
            raise InputError("too many levels of symbolic links", path=path, fix="fix the link loop")
        _check_link(here, st, done, last=not rest)
        dest = os.readlink(here)
        if dest.startswith("/"):
            done = "/"
        rest.extend(p for p in reversed(dest.split("/")) if p not in ("", "."))
    return done


def write_error(exc: OSError, path: str, message: str | None = None) -> InputError:
    """The :class:`InputError` for an ``OSError`` met while writing ``path``: the reason and its fix."""
    reason = exc.strerror or str(exc)
    fix = _WRITE_FIXES.get(exc.errno or 0, "choose a folder on a writable local file system with free space")
    return InputError(message or f"cannot write the file: {reason}", path=path, fix=fix)


_WRITE_FIXES = {
    errno.ENOSPC: "free space or choose another folder",
    errno.EDQUOT: "free space within your disk quota or choose another folder",
    errno.EROFS: "choose a folder on a writable file system",
    errno.EACCES: "run with the rights to write this folder, or choose another path",
    errno.EPERM: "run with the rights to write this folder, or choose another path",
}


# --------------------------------------------------------------------------------------------------


def _check_link(link: str, st: os.stat_result, folder: str, *, last: bool) -> None:
    """Refuse to follow ``link`` (in ``folder``, already resolved) where the kernel's protected_symlinks would.

    Allowed: the caller (euid) owns the link; the folder is not both sticky and world-writable; or the link's owner
    owns the folder.
    """
    if st.st_uid == os.geteuid():
        return
    try:
        fst = os.stat(folder)
    except OSError:
        return  # the folder was just walked; gone now: the write itself reports it
    if not (fst.st_mode & stat.S_ISVTX and fst.st_mode & stat.S_IWOTH) or st.st_uid == fst.st_uid:
        return
    dest = os.readlink(link)
    if last:
        fix = (f"remove the link if you did not make it; to replace the link itself leave out --follow; to write "
               f"the file it points to, give that path ({dest})")
    else:
        fix = f"give a path that does not pass through this link (it points to {dest})"
    raise InputError(f"refusing to follow this symlink: it is owned by {_user(st.st_uid)}, neither you nor the "
                     f"owner ({_user(fst.st_uid)}) of the sticky world-writable folder {folder}, so another user may "
                     "have planted it (the kernel's fs.protected_symlinks rule)", path=link, fix=fix)


def _user(uid: int) -> str:
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _read_current(target: str, shown: str) -> tuple[bytes | None, str | None]:
    """The current content of ``target`` (None when there is none) and, when it is a symlink, the link's text."""
    try:
        st = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        raise InputError(f"cannot look at the current file: {exc.strerror}", path=shown) from None
    if stat.S_ISLNK(st.st_mode):
        try:
            return None, os.readlink(target)
        except OSError as exc:
            raise InputError(f"cannot read the symlink: {exc.strerror}", path=shown) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError("is a directory", path=shown, fix="give a file path")
    if not stat.S_ISREG(st.st_mode):
        raise InputError("is not a regular file (a device, socket or FIFO)", path=shown,
                         fix="give the path of a regular file")
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            return fh.read(), None
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


def _diffs(path: str, old: bytes | None, new: bytes, *, link: str | None = None) -> tuple[dict, str]:
    """Ansible's diff record and the unified diff. A symlink being replaced is shown as an empty "before" whose
    header says so (``PATH (symlink to DEST, replaced)``): its target's content is not what is replaced."""
    before, after = _text(old), _text(new)
    from_header = f"{path} (symlink to {link}, replaced)" if link is not None else "/dev/null" if old is None else path
    if before is None or after is None:
        note = f"Binary files {path} differ\n"
        return {"before_header": from_header if link is not None else path, "after_header": path,
                "src_binary": before is None, "dst_binary": after is None, "prepared": note}, note
    lines = list(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                      fromfile=from_header, tofile=path, lineterm="\n"))
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:  # the last line of a file without a final newline, as diff(1) prints it
            out.append(line + "\n\\ No newline at end of file\n")
    return {"before": before, "after": after, "before_header": from_header, "after_header": path}, "".join(out)


def _backup(target: str, shown: str) -> str:
    """Keep the current file (or symlink) as ``target.YYYYmmdd-HHMMSS~`` (``~1``, ``~2``... if that name is taken).

    A hard link to the old inode; a symlink is kept as the link itself, never as its target. Where hard links are not
    possible, a copy (removed again if the copy fails half-way, e.g. on a full disk)."""
    import shutil

    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime())
    for n in range(1000):
        name = f"{target}.{stamp}~" if n == 0 else f"{target}.{stamp}~{n}"
        try:
            os.link(target, name, follow_symlinks=False)
            return name
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK, errno.EOPNOTSUPP):
                raise write_error(exc, name, f"cannot keep a backup: {exc.strerror}") from None
            if os.path.lexists(name):
                continue
            try:
                shutil.copy2(target, name, follow_symlinks=False)
            except OSError as exc2:
                _unlink_quietly(name)
                raise write_error(exc2, name, f"cannot keep a backup: {exc2.strerror}") from None
            return name
    raise InputError("cannot find a free backup name", path=shown, fix="remove old backups")  # pragma: no cover


def _foreign(target: str) -> str | None:
    """Why the file at ``target`` must not give its owner and mode to the new file, or None when it may.

    A writer keeps an existing file's owner and mode (an editor's and Ansible's behaviour) only where that cannot
    hand a file the caller writes to another user: the file is the caller's (euid), or it is neither
    world-writable nor another user's file in a sticky world-writable folder such as ``/tmp`` (where anyone may
    create it first, the case the kernel's ``fs.protected_regular`` guards). Otherwise the new file is a new inode
    with the caller as owner and the writer's mode (root writing ``/tmp/x/nccl.conf`` that another user created
    with mode 0666 leaves a root-owned 0644 file, not one that user can still change)."""
    try:
        st = os.lstat(target)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_uid == os.geteuid():
        return None
    what = f"the old file was owned by {_user(st.st_uid)}, mode {stat.S_IMODE(st.st_mode):04o}"
    if st.st_mode & stat.S_IWOTH:
        return what + " (writable by everyone)"
    folder = os.path.dirname(target)
    try:
        fst = os.stat(folder)
    except OSError:
        return None
    if fst.st_mode & stat.S_ISVTX and fst.st_mode & stat.S_IWOTH and st.st_uid != fst.st_uid:
        return what + f", in the sticky world-writable folder {folder} (anyone may have created it)"
    return None


def _replace(target: str, shown: str, data: bytes, *, mode: int, backup: bool, inherit: bool = True) -> str | None:
    """Write ``data`` to a temp file beside ``target``, keep a backup if asked, rename over ``target``, fsync the
    folder. The new file takes the old one's mode, owner and SELinux label when ``inherit`` (see :func:`_foreign`),
    else ``mode`` minus the umask and the caller as owner. Returns the backup's name. On any failure before the
    rename the old file (or link) is left as it was,
    and the temp file and the backup are removed; every ``OSError`` becomes an :class:`InputError` naming
    ``shown``."""
    folder = os.path.dirname(target)
    try:
        st: os.stat_result | None = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as exc:
        raise write_error(exc, shown) from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError) and not os.path.isdir(folder or "."):
            raise InputError("the folder does not exist", path=folder, fix="create it first") from None
        raise write_error(exc, folder, f"cannot write here: {exc.strerror}") from None
    kept = None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None and stat.S_ISREG(st.st_mode) and inherit:
            os.chmod(tmp, st.st_mode & 0o7777)
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except PermissionError:
                pass  # not root: the file becomes ours, as with any editor
            _copy_selinux_label(target, tmp)
        else:  # new, a symlink or another user's planted file being replaced: never take that owner or mode
            os.chmod(tmp, mode & ~_umask())
        if backup and st is not None:
            kept = _backup(target, shown)
        os.replace(tmp, target)
    except BaseException as exc:
        _unlink_quietly(tmp)
        if kept:
            _unlink_quietly(kept)
        if isinstance(exc, OSError):
            raise write_error(exc, shown) from None
        raise
    try:
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError as exc:
        raise write_error(exc, shown, f"the file was replaced, but its folder could not be flushed to disk: "
                                      f"{exc.strerror} (a crash now may lose the change)") from None
    return kept


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _copy_selinux_label(src: str, dst: str) -> None:
    try:
        label = os.getxattr(src, "security.selinux", follow_symlinks=False)
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
