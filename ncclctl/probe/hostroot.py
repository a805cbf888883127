"""The host root: the only way the probe touches files under /sys, /proc, /etc and friends.

``HostRoot("/")`` reads the live host; ``HostRoot("fixtures/hosts/dgx-h100")`` reads a captured tree laid
out the same way. Paths given to every method are absolute host paths (``/sys/class/net``); symlinks are
resolved component by component *inside* the root (absolute links restart at the root, as under chroot, and
``..`` stops at it), so a fixture's sysfs links work and nothing can escape the root. A :class:`Recorder` attached to the root sees every successful read, which is how
``ncclctl snapshot`` knows exactly which files the probe used.

Missing files return ``None`` (absence is information: no IOMMU, no peer memory). Files that exist but
cannot be read return ``None`` too and are noted in :attr:`HostRoot.denied` (unprivileged reads of
``config`` are normal). Structural damage in a fixture (a dangling or escaping symlink, a loop) is an
:class:`~ncclctl.errors.InputError` naming the path.

Names that are not UTF-8 (the kernel lets ``ip link set X name $'bad\\xff'`` through): :meth:`HostRoot.listdir`
leaves such an entry out and notes it in :attr:`HostRoot.undecodable` (shown with ``\\xNN`` escapes), and
:meth:`HostRoot.read_name` does the same for a file whose content is such a name. The probe turns the notes into
one ``unavailable`` entry, so no model, document or message ever carries an undecodable (surrogate-escaped) name.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass, field

from ncclctl.errors import InputError
from ncclctl.inputs import printable

_MAX_LINK_HOPS = 40


@dataclass
class Recorder:
    """Collects what the probe read: file bytes, symlink targets, listed folders."""

    files: dict[str, bytes] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    #: Entries of listed folders: path -> ("dir"|"file"|"link", link target or None, resolved path).
    entries: dict[str, tuple[str, str | None, str]] = field(default_factory=dict)
    #: Paths whose existence was tested (present ones are recreated as empty files or folders).
    probed: dict[str, str] = field(default_factory=dict)


def _decodable(name: str) -> bool:
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


class HostRoot:
    def __init__(self, root: str = "/", *, recorder: Recorder | None = None) -> None:
        self.root = os.path.abspath(root)
        self.live = self.root == "/"
        self.recorder = recorder
        self.denied: list[str] = []
        #: Host paths (shown with ``\xNN`` escapes) of entries left out because their name is not UTF-8.
        self.undecodable: list[str] = []
        self._lstat_cache: dict[str, os.stat_result | None] = {}
        self._real_cache: dict[str, str] = {}
        if not self.live and not os.path.isdir(self.root):
            raise InputError(
                "host root is not a directory",
                path=root,
                fix="pass a fixture directory written by 'ncclctl snapshot -o DIR'",
            )
        if not self.live:
            _check_host_marks(self.root, root)

    # Path helpers --------------------------------------------------------------------------------

    def host_path(self, path: str) -> str:
        """The on-disk path of a host path (``/sys/x`` -> ``<root>/sys/x``)."""
        if not path.startswith("/"):
            raise ValueError(f"host paths are absolute: {path!r}")
        return path if self.live else self.root + path

    def display(self, path: str) -> str:
        """How a host path is named in messages: the fixture path under --root, else the host path."""
        return self.host_path(path)

    def _lstat(self, path: str) -> os.stat_result | None:
        if path in self._lstat_cache:
            return self._lstat_cache[path]
        try:
            st: os.stat_result | None = os.lstat(self.host_path(path))
        except FileNotFoundError:
            st = None
        except NotADirectoryError:
            st = None
        except PermissionError:
            self.denied.append(path)
            st = None
        self._lstat_cache[path] = st
        return st

    def realpath(self, path: str, _hops: int = 0) -> str:
        """Resolve every symlink in ``path`` inside the root (a dangling link resolves to a missing path).

        Parents are resolved once and cached, so a new path usually costs one ``lstat`` of its last component.
        """
        cached = self._real_cache.get(path)
        if cached is not None:
            return cached
        stripped = path.rstrip("/")
        if not stripped:
            return "/"
        parent, _, name = stripped.rpartition("/")
        base = self.realpath(parent or "/", _hops)
        if name in ("", "."):
            result = base
        elif name == "..":
            result = base.rpartition("/")[0] or "/"
        else:
            candidate = ("" if base == "/" else base) + "/" + name
            st = self._lstat(candidate)
            if st is not None and stat.S_ISLNK(st.st_mode):
                if _hops >= _MAX_LINK_HOPS:
                    raise InputError(
                        "too many levels of symbolic links", path=self.display(candidate),
                        fix="the fixture has a symlink loop; re-capture it with 'ncclctl snapshot'",
                    )
                target = self._readlink_raw(candidate)
                # Absolute links (e.g. /var/run -> /run) mean "from the root", as under chroot: resolution
                # restarts at the host root and can never leave it.
                joined = target if target.startswith("/") else (("" if base == "/" else base) + "/" + target)
                result = self.realpath(joined, _hops + 1)
            else:
                result = candidate
        self._real_cache[path] = result
        return result

    def _readlink_raw(self, path: str) -> str:
        try:
            target = os.readlink(self.host_path(path))
        except OSError as exc:  # pragma: no cover - lstat said it is a link
            raise InputError(f"cannot read symlink: {exc.strerror}", path=self.display(path)) from None
        if self.recorder is not None:
            self.recorder.links[path] = target
        return target

    # Reads ---------------------------------------------------------------------------------------

    def exists(self, path: str) -> bool:
        try:
            real = self.realpath(path)
        except InputError:
            return False
        st = self._lstat(real)
        if st is not None and self.recorder is not None:
            self.recorder.probed[real] = "dir" if stat.S_ISDIR(st.st_mode) else "file"
        return st is not None

    def is_dir(self, path: str) -> bool:
        st = self._lstat(self.realpath(path))
        return st is not None and stat.S_ISDIR(st.st_mode)

    def read_bytes(self, path: str, *, limit: int | None = None, kind: str = "host") -> bytes | None:
        """The bytes of the file at host path ``path``, resolved inside the root; ``None`` when missing.

        Read through :mod:`ncclctl.inputs`: a regular file only (a FIFO, socket or device in a snapshot is an
        InputError, never a hang), at most ``kind``'s cap (an error beyond it, never a truncation). ``limit``
        reads only a prefix on purpose (PCI config space).
        """
        from ncclctl import inputs

        real = self.realpath(path)
        st = self._lstat(real)
        if st is None:
            if not self.live:
                self._dangling(path, real, kind)
            return None
        if stat.S_ISDIR(st.st_mode):
            self.denied.append(path)
            return None
        if not stat.S_ISREG(st.st_mode):
            raise inputs.not_regular(self.display(path), st.st_mode, inputs.KINDS[kind])
        try:
            data = inputs.read_bytes(self.host_path(real), kind, display=self.display(path), limit=limit,
                                     nofollow=True, raw_os_errors=True, prechecked=True)
        except FileNotFoundError:
            return None
        except (PermissionError, IsADirectoryError):
            self.denied.append(path)
            return None
        except OSError as exc:
            # sysfs answers EINVAL/EIO/ENODEV for attributes that exist but have no value now
            # (e.g. net/<if>/speed on an admin-down interface, unpopulated GID types).
            if exc.errno in (errno.EINVAL, errno.EIO, errno.ENODEV, errno.EOPNOTSUPP, errno.ENXIO):
                return None
            if exc.errno == errno.ELOOP:  # the last component became a link after it was resolved
                raise InputError("symlink where a file was resolved (the tree changed while it was read)",
                                 path=self.display(path), fix="re-capture the host with 'ncclctl snapshot'") from None
            raise InputError(f"cannot read: {exc.strerror}", path=self.display(path)) from None
        assert data is not None
        if self.recorder is not None:
            self.recorder.files[real] = data
        return data

    def _dangling(self, path: str, real: str, kind: str) -> None:
        """Refuse a path in a snapshot that leads to nothing in it, where the file cannot simply be missing.

        Links resolve inside the snapshot (as under chroot), so ``cmd/x.txt -> /dev/zero`` leads to
        ``<root>/dev/zero``, which no snapshot holds: the probe reads regular files only, so a snapshot carries
        nothing under ``/dev``, and on a host that path is a device (``NCCL_TOPO_FILE=/dev/zero``). A recorded
        output (``cmd/*.txt``, ``nvml.json``, ``env.json``) is a regular file ``ncclctl snapshot`` wrote, so a link
        there that leads nowhere is damage, not absence. Both are :class:`InputError`; other dangling links (a
        sysfs link to a device the snapshot did not capture) read as missing files."""
        from ncclctl import inputs

        spec = inputs.KINDS[kind]
        link = self._last_link(path)
        via = path
        if link is not None:
            via = f"a symlink to {self._readlink_raw(link)}" + (f" (at {self.display(link)})" if link != path else "")
        if real == "/dev" or real.startswith("/dev/"):
            raise InputError(f"not a regular file: {via} is in /dev, where a host has devices, not a {spec.what} "
                             "(a snapshot holds none there; ncclctl reads only regular files)",
                             path=self.display(path), fix=spec.fix)
        if link is not None and kind in ("cmd", "nvml", "env"):
            raise InputError(f"not a regular file: it is {via}, which leads to nothing in the snapshot, where a "
                             f"{spec.what} should be (ncclctl snapshot writes them as regular files)",
                             path=self.display(path), fix=spec.fix)

    def _last_link(self, path: str) -> str | None:
        """The last symlink met resolving ``path`` component by component (None when there is none)."""
        parts = [p for p in path.split("/") if p]
        found = None
        for i in range(len(parts)):
            here = "/" + "/".join(parts[: i + 1])
            real = self.realpath(here.rpartition("/")[0] or "/")
            st = self._lstat(("" if real == "/" else real) + "/" + parts[i])
            if st is not None and stat.S_ISLNK(st.st_mode):
                found = here
        return found

    def read_text(self, path: str, *, kind: str = "host") -> str | None:
        data = self.read_bytes(path, kind=kind)
        if data is None:
            return None
        from ncclctl.inputs import decode

        return decode(data, self.display(path), fix="the file is corrupt; re-capture the host with 'ncclctl snapshot'")

    def read_value(self, path: str) -> str | None:
        """A one-line sysfs attribute without its trailing newline."""
        text = self.read_text(path)
        return None if text is None else text.strip()

    def read_name(self, path: str) -> str | None:
        """A one-line attribute whose value names something (a netdev): like :meth:`read_value`, but a name that
        is not UTF-8 gives ``None`` and a note in :attr:`undecodable` instead of an error."""
        data = self.read_bytes(path)
        if data is None:
            return None
        try:
            return data.decode("utf-8").strip()
        except UnicodeDecodeError:
            shown = data.strip().decode("utf-8", "backslashreplace")
            self.undecodable.append(f"{path} ({shown})")
            return None

    def readlink(self, path: str) -> str | None:
        """The target of a symlink at ``path`` (the last component is not followed)."""
        parent, _, name = path.rstrip("/").rpartition("/")
        real_parent = self.realpath(parent or "/")
        link = (real_parent.rstrip("/") + "/" + name) if real_parent != "/" else "/" + name
        st = self._lstat(link)
        if st is None or not stat.S_ISLNK(st.st_mode):
            return None
        return self._readlink_raw(link)

    def link_basename(self, path: str) -> str | None:
        target = self.readlink(path)
        return None if target is None else target.rstrip("/").rpartition("/")[2]

    def resolve_link(self, path: str) -> str | None:
        """Follow the symlink at ``path``; InputError if it dangles. None if there is no link."""
        if self.readlink(path) is None:
            return None
        real = self.realpath(path)
        if self._lstat(real) is None:
            raise InputError(
                "dangling symlink", path=self.display(path),
                fix="the fixture is incomplete; re-capture it with 'ncclctl snapshot'",
            )
        return real

    def listdir(self, path: str) -> list[str]:
        """Sorted entries of a folder; empty when it does not exist. Names that are not UTF-8 are left out and
        noted in :attr:`undecodable`."""
        real = self.realpath(path)
        try:
            names = sorted(os.listdir(self.host_path(real)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except PermissionError:
            self.denied.append(path)
            return []
        if not all(map(_decodable, names)):
            self.undecodable.extend(f"{path.rstrip('/')}/{printable(n)}" for n in names if not _decodable(n))
            names = [n for n in names if _decodable(n)]
        if self.recorder is not None:
            self.recorder.dirs.add(real)
            for name in names:
                entry = f"{real.rstrip('/')}/{name}"
                st = self._lstat(entry)
                if st is None:
                    continue
                if stat.S_ISLNK(st.st_mode):
                    try:
                        target_real = self.realpath(entry)
                    except InputError:
                        continue
                    self.recorder.entries[entry] = ("link", os.readlink(self.host_path(entry)), target_real)
                else:
                    self.recorder.entries[entry] = ("dir" if stat.S_ISDIR(st.st_mode) else "file", None, entry)
        return names

    # Environment -----------------------------------------------------------------------------------

    def environ(self) -> dict[str, str]:
        """NCCL_* variables plus HOME/USER: from the process (live) or ``env.json`` (fixture)."""
        if self.live:
            keep = {k: v for k, v in os.environ.items() if k.startswith("NCCL_") or k in ("HOME", "USER")}
            if self.recorder is not None:
                self.recorder.files["/env.json"] = (json.dumps(keep, indent=2, sort_keys=True) + "\n").encode()
            return keep
        path = self.display("/env.json")
        raw = self.read_bytes("/env.json", kind="env")
        if raw is None:
            return {}
        from ncclctl.inputs import decode

        text = decode(raw, path, fix="env.json must be a JSON object of strings")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise InputError(f"cannot read recorded environment: {exc}", path=path,
                             fix="env.json must be a JSON object of strings") from None
        if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise InputError("recorded environment must be a JSON object of strings", path=path,
                             fix='write it as {"NCCL_IB_HCA": "=mlx5_0", ...}')
        return data


#: What every captured host has at least one of: a snapshot's manifest, the kernel's two trees, or one of the
#: recorded sources (a partial capture: NVML answers, command outputs, the environment).
HOST_MARKS = ("manifest.json", "proc", "sys", "nvml.json", "cmd", "env.json")


def _check_host_marks(real: str, shown: str) -> None:
    """Refuse a root that holds none of a host's marks (a typo, a parent folder, an empty folder): in a Slurm
    prolog or an NHC check it would otherwise read as a healthy host with nothing on it."""
    if any(os.path.lexists(os.path.join(real, m)) for m in HOST_MARKS):
        return
    try:
        children = sorted(os.listdir(real))
    except OSError:
        children = []
    hosts = [c for c in children if os.path.isfile(os.path.join(real, c, "manifest.json"))]
    if hosts:
        listed = ", ".join(hosts[:5]) + (f" and {len(hosts) - 5} more" if len(hosts) > 5 else "")
        raise InputError(f"not a host root but a folder of {len(hosts)} host(s): {listed}", path=shown,
                         fix=f"pass one of them (--root {os.path.join(shown, hosts[0])}), or check them all with "
                             f"'ncclctl fleet lint {shown}'")
    raise InputError("not a host root: it holds none of manifest.json, proc/, sys/, nvml.json, cmd/, env.json"
                     + (" (the folder is empty)" if not children else ""), path=shown,
                     fix="pass a folder written by 'ncclctl snapshot -o DIR' (or its .tar.gz), or drop --root to "
                         "check this host")
