"""Atomic, idempotent file writes: a temp file in the same folder, fsync, os.replace; mode and owner kept."""

from __future__ import annotations

import os
import tempfile

from ncclctl.errors import InputError


def write_atomic(path: str, data: bytes, *, mode: int = 0o644) -> bool:
    """Write ``data`` to ``path`` only when the bytes differ. Returns True when the file changed."""
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    try:
        with open(target, "rb") as fh:
            if fh.read() == data:
                return False
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise InputError("is a directory", path=path, fix="give a file path") from None
    except OSError as exc:
        raise InputError(f"cannot read the current file: {exc.strerror}", path=path) from None
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    except FileNotFoundError:
        raise InputError("the folder does not exist", path=folder, fix="create it first") from None
    except OSError as exc:
        raise InputError(f"cannot write here: {exc.strerror}", path=folder) from None
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
                pass
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
    return True


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
