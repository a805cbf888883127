"""``ncclctl snapshot``: capture a host into a fixture tree by recording what the probe reads.

The probe runs once with a :class:`~ncclctl.probe.hostroot.Recorder` on the host root and recording wrappers
on the runner and NVML source; the snapshot then writes back exactly those bytes, links and folders (pruned to
the PCI devices the model keeps and to non-zero GIDs). Probing the snapshot therefore yields the same model as
the probe that captured it. The tree is built in a temporary sibling folder and moved into place, so a crash
never leaves half a snapshot.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from ncclctl import __version__
from ncclctl.errors import InputError, NcclctlError, UsageError
from ncclctl.model import Node
from ncclctl.probe.assemble import probe
from ncclctl.probe.commands import LiveRunner, RecordedRunner, RecordingRunner, slug
from ncclctl.probe.hostroot import Recorder
from ncclctl.probe.nvml import LiveNvml, RecordedNvml
from ncclctl.probe.redact import redact_files as _redact

_BDF_COMPONENT = re.compile(r"^[0-9a-f]{4,5}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


class _RecordingNvml:
    def __init__(self, inner) -> None:
        self.inner = inner
        self.doc: dict | None = None

    def collect(self) -> dict:
        self.doc = self.inner.collect()
        return self.doc


@dataclass
class SnapshotResult:
    node: Node
    path: str
    files: int
    unavailable: list[dict] = field(default_factory=list)


def _device_of(path: str) -> str | None:
    """The PCI function a sysfs path belongs to (its last bus-id component), if any."""
    last = None
    for comp in path.split("/"):
        if _BDF_COMPONENT.match(comp):
            last = comp
    return last


def _keep(path: str, kept: set[str], data: bytes | None = None) -> bool:
    if path.startswith("/sys/"):
        dev = _device_of(path)
        if dev is not None and dev not in kept:
            return False
        if data is not None and "/gids/" in path and set(data.strip().replace(b":", b"")) <= {ord("0")}:
            return False
    return True


def capture(root: str | None = None) -> tuple[Node, Recorder, RecordingRunner, _RecordingNvml]:
    """Probe ``root`` (live when None) with recording on every seam."""
    recorder = Recorder()
    if root is None or root == "/":
        runner = RecordingRunner(LiveRunner())
        nvml = _RecordingNvml(LiveNvml())
    else:
        runner = RecordingRunner(RecordedRunner(os.path.abspath(root)))
        nvml = _RecordingNvml(RecordedNvml(os.path.abspath(root)))
    node = probe(root, runner=runner, nvml=nvml, recorder=recorder)
    return node, recorder, runner, nvml


def write_tree(dest: str, node: Node, recorder: Recorder, runner: RecordingRunner, nvml_doc: dict | None,
               *, redact: bool = False, source_root: str | None = None) -> int:
    import datetime as _dt
    kept = {d.bdf for d in node.pci}
    files: dict[str, bytes] = {}
    links: dict[str, str] = {}
    dirs: set[str] = set()
    for path, data in recorder.files.items():
        if _keep(path, kept, data):
            files[path] = data
    for path, link_target in recorder.links.items():
        if _keep(path, kept):
            links[path] = link_target
    for path in recorder.dirs:
        if _keep(path, kept):
            dirs.add(path)
    # Entries of listed folders that nothing else read (e.g. /sys/class/iommu/dmar0): recreate the name, and
    # for links a folder at the target so nothing dangles. Files are only written when their bytes were read.
    for path, (kind, target, real) in recorder.entries.items():
        if not _keep(path, kept) or path in files or path in links:
            continue
        if kind == "link" and target is not None:
            links[path] = target
            if _keep(real, kept) and real not in files:
                dirs.add(real)
        elif kind == "dir":
            dirs.add(path)
    for path, kind in recorder.probed.items():
        if _keep(path, kept) and path not in files and path not in links:
            if kind == "dir":
                dirs.add(path)
            else:
                files[path] = b""
    for res in runner.results:
        name = slug(res.argv)
        if res.ok:
            files[f"/cmd/{name}.txt"] = (res.stdout or "").encode()
        elif res.partial:
            # what the tool printed before it failed, and its error line: the recording reads as the live run did
            files[f"/cmd/{name}.txt"] = res.partial.encode()
        elif res.reason != "not captured":
            files[f"/cmd/{name}.err"] = (res.reason or "failed").encode() + b"\n"
    libs = node.facts.nccl_libraries
    if libs is not None and "/nccl.json" not in files:
        from ncclctl.probe.ncclib import to_doc

        files["/nccl.json"] = (json.dumps(to_doc(libs), indent=2, sort_keys=True) + "\n").encode()
    if nvml_doc is not None and nvml_doc.get("init") != "NotCaptured":
        files["/nvml.json"] = (json.dumps(nvml_doc, indent=2, sort_keys=True) + "\n").encode()
    unavailable = [{"source": u.source, "reason": u.reason, **({"detail": u.detail} if u.detail else {})}
                   for u in node.unavailable]
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc) if epoch and epoch.isdigit() else _dt.datetime.now(_dt.timezone.utc)
    manifest = {
        "format": 1,
        "ncclctl_version": __version__,
        "captured_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hostname": node.hostname,
        "kernel": node.facts.kernel,
        "machine": node.cpu.arch,
        "driver_version": node.facts.driver_version,
        "redacted": redact,
        "unavailable": unavailable,
    }
    if source_root is not None:
        manifest["captured_from"] = "fixture"
    files["/manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    if redact:
        files = _redact(files, links, node)
    count = 0
    for d in sorted(dirs):
        os.makedirs(dest + d, exist_ok=True)
    for path, target in sorted(links.items()):
        if target.startswith("/"):
            # /var/run -> /run on every Debian host: stored relative (../run), which is what HostRoot reads an
            # absolute link as (from the snapshot's root) and the only form a snapshot archive may carry.
            target = os.path.relpath(os.path.normpath(target), os.path.dirname(path))
        os.makedirs(os.path.dirname(dest + path), exist_ok=True)
        if os.path.lexists(dest + path):
            continue
        os.symlink(target, dest + path)
        count += 1
    for path, data in sorted(files.items()):
        full = dest + path
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if os.path.islink(full) or os.path.isdir(full):
            continue
        with open(full, "wb") as fh:
            fh.write(data)
        count += 1
    return count


def snapshot(out_dir: str | None = None, tar_path: str | None = None, *, redact: bool = False,
             root: str | None = None, follow: bool = False) -> SnapshotResult:
    """Capture the live host (or re-capture a fixture ``root``) into ``out_dir`` or a tar file.

    The target is found as every writer finds it (:func:`ncclctl.fileio.resolve_target`): a symlink at ``out_dir``
    or ``tar_path`` is replaced by the new folder or file (its target untouched); with ``follow`` the link is
    followed (not another user's link in a sticky world-writable folder) and what it points to is replaced."""
    import shutil
    import tempfile

    from ncclctl.fileio import resolve_target, write_error
    if (out_dir is None) == (tar_path is None):
        raise NcclctlError("give exactly one of -o DIR or --tar FILE", fix="ncclctl snapshot -o ./myhost")
    dest = out_dir if out_dir is not None else tar_path
    assert dest is not None  # exactly one of the two is given (checked above)
    if not dest:  # an unset shell variable ("-o $DIR"); "" would otherwise mean the current folder
        raise UsageError(f"{'-o' if out_dir is not None else '--tar'} is empty", fix="ncclctl snapshot -o ./myhost")
    node, recorder, runner, nvml = capture(root)
    target = resolve_target(dest, follow=follow)
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        raise InputError("the folder to write into does not exist", path=parent, fix="create it first")
    tmp = ""
    try:
        tmp = tempfile.mkdtemp(prefix=".ncclctl-snapshot-", dir=parent)
        count = write_tree(tmp, node, recorder, runner, nvml.doc, redact=redact,
                           source_root=None if root in (None, "/") else root)
        if tar_path is not None:
            _write_tar(tmp, target)
        else:
            _replace_dir(tmp, target)
            tmp = ""
    except OSError as exc:  # not writable, a file system without files (procfs), disk full
        raise write_error(exc, target, f"cannot write the snapshot in {parent}: {exc.strerror or exc}") from None
    finally:
        if tmp and os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return SnapshotResult(node=node, path=target, files=count,
                          unavailable=[{"source": u.source, "reason": u.reason} for u in node.unavailable])


def _replace_dir(tmp: str, target: str) -> None:
    """Move the finished tree ``tmp`` to ``target``: a new name, an empty folder, an earlier snapshot, or a symlink
    (the link is replaced, never followed: its target is not looked at or removed). Anything else is refused.
    The old entry is renamed aside first and put back if the move fails; only then is it removed (a folder with
    ``rmtree``, which does not follow links inside it; a link with ``unlink``)."""
    import shutil
    import stat
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        os.replace(tmp, target)
        return
    is_link = stat.S_ISLNK(st.st_mode)
    if not is_link and (not stat.S_ISDIR(st.st_mode) or (
            os.listdir(target) and not os.path.exists(os.path.join(target, "manifest.json")))):
        raise InputError("refusing to overwrite: not an empty folder or an earlier snapshot", path=target,
                         fix="choose a new folder for -o")
    old = target + ".old-" + os.path.basename(tmp)
    os.replace(target, old)
    try:
        os.replace(tmp, target)
    except OSError:
        os.replace(old, target)
        raise
    if is_link:
        os.unlink(old)
    else:
        shutil.rmtree(old, ignore_errors=True)


def _write_tar(tree: str, target: str) -> None:
    import gzip
    import tarfile
    import tempfile
    fd, tmp = tempfile.mkstemp(prefix=".ncclctl-tar-", dir=os.path.dirname(target))
    try:
        with os.fdopen(fd, "wb") as raw:
            # gzip header without a timestamp or name: the same tree gives the same bytes.
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
                    tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for dirpath, dirnames, filenames in os.walk(tree):
                    dirnames.sort()
                    for name in sorted(dirnames + filenames):
                        full = os.path.join(dirpath, name)
                        arc = os.path.relpath(full, tree)
                        info = tar.gettarinfo(full, arcname=arc)
                        info.uid = info.gid = 0
                        info.uname = info.gname = ""
                        info.mtime = 0
                        if info.isfile():
                            with open(full, "rb") as fh:
                                tar.addfile(info, fh)
                        else:
                            tar.addfile(info)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


__all__ = ["SnapshotResult", "capture", "snapshot", "write_tree"]

