"""Snapshot archives (``snapshot --tar``): unpacked member by member, bounded, confined, always cleaned up.

A ``.tar.gz`` may come from anyone and is read as root, so unpacking never trusts it:

* the archive itself goes through the input door (a regular file, at most ``KINDS["archive"]``, 256 MiB);
* members are read as a stream, one at a time, and counted: at most :data:`MAX_MEMBERS` members, at most
  :data:`MAX_UNPACKED` bytes unpacked in all (a member's declared size is checked before a byte of it is
  written, so one 8 GiB member in an 8 MB gzip is refused at once), and, past the first
  :data:`RATIO_FLOOR` bytes, at most :data:`MAX_RATIO` unpacked bytes per compressed byte (a gzip bomb);
* only folders, regular files and symbolic links; no hard links, devices, FIFOs or sockets; no absolute names,
  no ``..``, no member twice, no member below a symlink member;
* a symlink is kept only when it resolves inside the snapshot: an absolute target means "from the snapshot's
  root", as ``HostRoot`` reads it (``/var/run -> /run`` on every Debian host), and is rewritten relative to the
  link (``../run``), so the unpacked tree holds no link that points outside it; a relative target that climbs
  above the root is refused;
* file modes are 0644 and folders 0755 whatever the archive says (no set-uid bits, nothing unreadable);
* the temporary folder is removed on every path out, errors and Ctrl-C included (:func:`opened_root`).
"""

from __future__ import annotations

import contextlib
import io
import os
import posixpath
import shutil
from typing import IO, Iterator

from ncclctl.errors import InputError

#: Members in one archive. A DGX snapshot has about 1,600.
MAX_MEMBERS = 50_000
#: Bytes unpacked in all (file contents plus 512-byte headers). A DGX snapshot unpacks to about 1 MiB.
MAX_UNPACKED = 256 << 20
#: Unpacked bytes per compressed byte, checked once :data:`RATIO_FLOOR` bytes are unpacked. Snapshots compress
#: 10-40x (many small text files and mostly-zero tar headers); gzip bombs 1,000x.
MAX_RATIO = 200
RATIO_FLOOR = 8 << 20

_FIX = "pass a file written by 'ncclctl snapshot --tar'"


class _Counting:
    """A read-only file object that counts the compressed bytes read through it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.count += len(data)
        return data


def _refuse(path: str, message: str) -> InputError:
    return InputError(message, path=path, fix=_FIX)


def _member_name(path: str, name: str) -> str:
    """The member's path inside the root, normalised (``./a//b`` -> ``a/b``); refuses escapes."""
    if "\x00" in name:
        raise _refuse(path, f"member name with a NUL byte: {name!r}")
    if name.startswith("/"):
        raise _refuse(path, f"absolute member name {name!r}")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise _refuse(path, f"member name with '..': {name!r}")
    return "/".join(parts)


def _link_target(path: str, name: str, target: str) -> str:
    """A symlink target that stays inside the root, in the canonical form ``../../a/b`` relative to the link.

    Relative targets must climb only at their start (``../../devices/x``, the form sysfs and ``snapshot`` write):
    a ``..`` after a name could climb out through a symlinked folder (``d/../..`` with ``d -> /``), which no
    lexical check can rule out. Absolute targets mean "from the snapshot's root" and are rewritten relative.
    """
    if "\x00" in target or not target:
        raise _refuse(path, f"symlink {name!r} has an empty or NUL target")
    link_dir = posixpath.dirname("/" + name)
    depth = 0 if link_dir == "/" else link_dir.count("/")
    if target.startswith("/"):
        # chroot semantics; normpath stops '..' at the root as HostRoot does
        rel = posixpath.relpath(posixpath.normpath(target), link_dir)
        return rel
    parts = [p for p in target.split("/") if p not in ("", ".")]
    up = 0
    while up < len(parts) and parts[up] == "..":
        up += 1
    if ".." in parts[up:]:
        raise _refuse(path, f"symlink {name!r} -> {target!r} climbs ('..') after a name: not a snapshot link")
    if up > depth:
        raise _refuse(path, f"symlink {name!r} -> {target!r} points outside the snapshot")
    return "/".join(parts) or "."


def extract_tar(path: str, dest: str) -> int:
    """Unpack the snapshot archive ``path`` into the empty folder ``dest``; the number of members.

    See the module docstring for what is refused; every refusal is an :class:`InputError` (exit 3) naming the
    archive and the member. ``dest`` may hold a partial tree afterwards: the caller removes it
    (:func:`opened_root` does).
    """
    import struct
    import tarfile
    import zlib

    from ncclctl import inputs

    # The door's checks (regular file, size cap) on the archive itself, without reading it twice: open here and
    # check the descriptor the same way.
    spec = inputs.KINDS["archive"]
    try:
        import stat as _stat

        st = os.stat(path)
        if not _stat.S_ISREG(st.st_mode):
            raise inputs.not_regular(path, st.st_mode, spec)
        if st.st_size > spec.cap:
            raise inputs.too_big(path, st.st_size, spec)
        raw = io.BufferedReader(io.FileIO(path, "rb"), buffer_size=1 << 16)  # closed below
    except OSError as exc:
        raise InputError(f"cannot read the snapshot archive: {exc.strerror or exc}", path=path,
                         fix="check the path and its permissions") from None
    counting = _Counting(raw)
    stream: IO[bytes] | _Counting = counting
    if raw.peek(2)[:2] == b"\x1f\x8b":
        import gzip

        # gzip.GzipFile, not tarfile's own stream decompressor: it raises EOFError on a truncated stream, where
        # tarfile's would end quietly at the cut and hand over half a snapshot.
        # typeshed's GzipFile wants seek() too, which a sequential "rb" read never calls
        stream = gzip.GzipFile(fileobj=counting, mode="rb")  # type: ignore[call-overload]
    members = 0
    unpacked = 0
    seen: set[str] = set()
    links: set[str] = set()
    try:
        # typeshed types fileobj as a seekable, writable file; stream mode "r|*" only reads
        with tarfile.open(fileobj=stream, mode="r|*") as tar:  # type: ignore[call-overload]
            for member in tar:
                members += 1
                if members > MAX_MEMBERS:
                    raise _refuse(path, f"more than {MAX_MEMBERS:,} members: over ncclctl's limit for a snapshot")
                name = _member_name(path, member.name)
                if not name:
                    if member.isdir():
                        continue
                    raise _refuse(path, f"member {member.name!r} names the root itself")
                if name in seen:
                    raise _refuse(path, f"member {name!r} appears twice")
                seen.add(name)
                parent = name
                while "/" in parent:
                    parent = parent.rpartition("/")[0]
                    if parent in links:
                        raise _refuse(path, f"member {name!r} lies below the symlink {parent!r}")
                unpacked += 512 + max(0, member.size)
                if unpacked > MAX_UNPACKED:
                    raise _refuse(path, f"unpacks to more than {MAX_UNPACKED >> 20} MiB (member {name!r} declares "
                                        f"{member.size:,} bytes): over ncclctl's limit for a snapshot")
                full = os.path.join(dest, name)
                os.makedirs(os.path.dirname(full), mode=0o755, exist_ok=True)
                if member.isdir():
                    os.makedirs(full, mode=0o755, exist_ok=True)
                elif member.issym():
                    os.symlink(_link_target(path, name, member.linkname), full)
                    links.add(name)
                elif member.isfile():
                    src = tar.extractfile(member)
                    assert src is not None
                    fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
                    with os.fdopen(fd, "wb") as out:
                        while True:
                            chunk = src.read(1 << 20)
                            if not chunk:
                                break
                            out.write(chunk)
                else:
                    kind = ("a hard link" if member.islnk() else "a device" if member.isdev()
                            else "a FIFO" if member.isfifo() else f"type {member.type!r}")
                    raise _refuse(path, f"member {name!r} is {kind}: a snapshot holds only folders, files and "
                                        f"symlinks")
                if unpacked > RATIO_FLOOR and unpacked > MAX_RATIO * max(1, counting.count):
                    raise _refuse(path, f"compression ratio over {MAX_RATIO}:1 ({unpacked:,} bytes from "
                                        f"{counting.count:,}): a decompression bomb, not a snapshot")
            if members == 0:
                raise _refuse(path, "empty archive: no members")
    except InputError:
        raise
    except FileExistsError as exc:
        raise _refuse(path, f"member {os.path.relpath(exc.filename or '?', dest)!r} appears twice") from None
    except (tarfile.TarError, EOFError, OSError, ValueError, zlib.error, struct.error) as exc:
        # a damaged stream: gzip.BadGzipFile is an OSError, zlib.error and struct.error are not
        raise InputError(f"cannot read snapshot archive: {type(exc).__name__}: {exc}", path=path,
                         fix=_FIX) from None
    finally:
        raw.close()
    return members


@contextlib.contextmanager
def opened_root(path: str) -> Iterator[str]:
    """A snapshot folder as it is, or a ``.tar.gz`` unpacked into a temporary folder that is removed on every
    path out (the ``with`` block's end, an error, Ctrl-C)."""
    if os.path.isdir(path):
        yield path
        return
    if not os.path.lexists(path):
        raise InputError("no such host root", path=path, fix="pass a fixture folder or a snapshot .tar.gz")
    import tempfile  # (only a tar needs it: a folder root does not pay for the import)

    from ncclctl.errors import NcclctlError

    tmp = tempfile.mkdtemp(prefix="ncclctl-root-")
    try:
        extract_tar(path, tmp)
        try:
            yield tmp
        except NcclctlError as exc:
            # Name the member inside the archive (node.tar.gz!/sys/...), not the temporary folder that is gone.
            if exc.path and str(exc.path).startswith(tmp + "/"):
                exc.path = f"{path}!{str(exc.path)[len(tmp):]}"
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


__all__ = ["MAX_MEMBERS", "MAX_RATIO", "MAX_UNPACKED", "extract_tar", "opened_root"]
