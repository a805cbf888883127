"""Which NCCL a job on this host would load: the ``libnccl.so`` files where the loader and Python environments
find them, and the release each one is, read from the library's own version string (never by loading it: a node
without a working GPU, or a snapshot, must answer too).

NCCL compiles its banner into the library (``init.cc``: ``"NCCL version " MAJOR.MINOR.PATCH SUFFIX "+cuda"
CUDA_MAJOR.CUDA_MINOR``, the first line of every NCCL_DEBUG=VERSION/INFO run); it sits in the ELF file's
``.rodata`` section, which is read alone (a few MB of a library of hundreds).

Live, the places searched are those a job's loader or framework uses: ``LD_LIBRARY_PATH``, the directories of
``/etc/ld.so.conf`` (and its ``include`` files), the usual system and CUDA library folders, and the Python
environments' ``nvidia/nccl/lib`` (the ``nvidia-nccl-cu*`` wheels PyTorch, JAX and others load) and ``torch/lib``.
A snapshot stores what was found in ``nccl.json``.
"""

from __future__ import annotations

import glob
import os
import re
import struct
from typing import Any

from ncclctl.model import NcclLibrary

#: ``NCCL version 2.28.9+cuda13.0`` (a suffix such as ``a`` or ``-rc1`` may follow the patch number).
_BANNER = re.compile(rb"NCCL version (\d{1,3})\.(\d{1,3})\.(\d{1,3})([A-Za-z0-9._-]{0,16})\+cuda(\d{1,3})\.(\d{1,3})")
_NAMES = re.compile(r"libnccl\.so(\.\d+){0,3}$")
#: Read at most this much of a library (its section headers and .rodata).
MAX_RODATA = 64 << 20
_SYSTEM_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/powerpc64le-linux-gnu",
                "/usr/lib64", "/usr/lib", "/usr/local/lib", "/usr/local/lib64", "/usr/local/cuda/lib64",
                "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda/targets/sbsa-linux/lib",
                "/usr/local/nccl/lib", "/opt/nccl/lib", "/opt/nvidia/nccl/lib")
_PY_GLOBS = ("/usr/lib/python3*/dist-packages", "/usr/local/lib/python3*/dist-packages",
             "/usr/local/lib/python3*/site-packages", "/opt/conda/lib/python3*/site-packages",
             "/opt/conda/envs/*/lib/python3*/site-packages", "/root/.local/lib/python3*/site-packages",
             "/home/*/.local/lib/python3*/site-packages", "/opt/*/lib/python3*/site-packages",
             "/opt/*/venv/lib/python3*/site-packages", "/usr/lib64/python3*/site-packages")


def library_version(path: str) -> tuple[str, str | None] | None:
    """(release, CUDA version) from the banner in ``path``'s ``.rodata`` (the whole file up to MAX_RODATA when it is
    not an ELF file with section headers), or None when there is none."""
    try:
        with open(path, "rb") as fh:
            data = _rodata(fh)
    except (OSError, struct.error, ValueError):
        return None
    m = _BANNER.search(data) if data else None
    if m is None:
        return None
    release = f"{int(m.group(1))}.{int(m.group(2))}.{int(m.group(3))}" + m.group(4).decode()
    return release, f"{int(m.group(5))}.{int(m.group(6))}"


def _rodata(fh) -> bytes:
    head = fh.read(64)
    if head[:4] != b"\x7fELF" or head[4] != 2:  # not a 64-bit ELF file: look at its first bytes only
        return head + fh.read(MAX_RODATA - len(head))
    end = "<" if head[5] == 1 else ">"
    shoff, = struct.unpack_from(end + "Q", head, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", head, 0x3A)
    if shentsize < 64 or not 0 < shnum <= 4096 or shstrndx >= shnum:
        raise ValueError("no usable section headers")
    fh.seek(shoff)
    table = fh.read(shentsize * shnum)
    if len(table) < shentsize * shnum:
        raise ValueError("section headers cut")
    sections = [struct.unpack_from(end + "IIQQQQ", table, i * shentsize) for i in range(shnum)]
    _name, _type, _flags, _addr, str_off, str_size = sections[shstrndx]
    fh.seek(str_off)
    names = fh.read(min(str_size, 1 << 20))
    for name_off, _t, _f, _a, off, size in sections:
        end_name = names.find(b"\0", name_off)
        if names[name_off:end_name] == b".rodata":
            fh.seek(off)
            return fh.read(min(size, MAX_RODATA))
    raise ValueError("no .rodata section")


def _ld_so_conf_dirs(path: str = "/etc/ld.so.conf", depth: int = 0) -> list[str]:
    out: list[str] = []
    if depth > 3:
        return out
    from ncclctl.errors import InputError  # noqa: PLC0415
    from ncclctl.inputs import read_text  # noqa: PLC0415

    try:
        lines = read_text(path, "host").splitlines()
    except InputError:  # missing, not a regular file, over the cap, not UTF-8: no folders from it
        return out
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("include "):
            pattern = line[len("include "):].strip()
            if not pattern.startswith("/"):
                pattern = os.path.join(os.path.dirname(path), pattern)
            for inc in sorted(glob.glob(pattern))[:64]:
                out += _ld_so_conf_dirs(inc, depth + 1)
        elif line.startswith("/"):
            out.append(line)
    return out


def _candidates(env: dict[str, str]) -> list[tuple[str, str]]:
    """(folder, where it comes from) in the order a user would look."""
    out: list[tuple[str, str]] = []
    for d in (env.get("LD_LIBRARY_PATH") or "").split(":"):
        if d.startswith("/"):
            out.append((d, "LD_LIBRARY_PATH"))
    out += [(d, "ld.so.conf") for d in _ld_so_conf_dirs()]
    out += [(d, "system") for d in _SYSTEM_DIRS]
    out += [(d, "system") for d in sorted(glob.glob("/usr/local/cuda-*/lib64"))]
    sites: list[str] = []
    for prefix in (env.get("VIRTUAL_ENV"), env.get("CONDA_PREFIX")):
        if prefix and prefix.startswith("/"):
            sites += sorted(glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages")))
    import sys  # noqa: PLC0415

    sites += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    for pattern in _PY_GLOBS:
        sites += sorted(glob.glob(pattern))
    for site in dict.fromkeys(sites):
        out.append((os.path.join(site, "nvidia", "nccl", "lib"), "python: nvidia-nccl wheel"))
        out.append((os.path.join(site, "torch", "lib"), "python: torch"))
    return out


def find_libraries(env: dict[str, str]) -> list[NcclLibrary]:
    """Every distinct NCCL library in the places searched (live host only), with its release."""
    seen: set[str] = set()
    out: list[NcclLibrary] = []
    for folder, where in _candidates(env):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if not _NAMES.match(name):
                continue
            path = os.path.join(folder, name)
            real = os.path.realpath(path)
            if real in seen or not os.path.isfile(real):
                continue
            seen.add(real)
            found = library_version(real)
            out.append(NcclLibrary(path=path, version=found[0] if found else None,
                                   cuda=found[1] if found else None, where=where))
            if len(out) >= 64:
                return out
    return out


def to_doc(libs: list[NcclLibrary] | tuple[NcclLibrary, ...]) -> dict[str, Any]:
    return {"libraries": [{"path": lib.path, "version": lib.version, "cuda": lib.cuda, "where": lib.where}
                          for lib in libs]}


def from_doc(doc: Any, path: str) -> tuple[NcclLibrary, ...]:
    from ncclctl.errors import InputError  # noqa: PLC0415

    fix = "re-capture the host with 'ncclctl snapshot' (nccl.json: {\"libraries\": [{\"path\", \"version\", ...}]})"
    if not isinstance(doc, dict) or not isinstance(doc.get("libraries"), list):
        raise InputError("not an NCCL library list (no 'libraries' list)", path=path, fix=fix)
    out = []
    for i, e in enumerate(doc["libraries"][:64]):
        if not isinstance(e, dict) or not isinstance(e.get("path"), str) or not all(
                isinstance(e.get(k), (str, type(None))) for k in ("version", "cuda", "where")):
            raise InputError(f"library entry {i} is not {{path, version, cuda, where}} strings", path=path, fix=fix)
        out.append(NcclLibrary(path=e["path"], version=e.get("version"), cuda=e.get("cuda"), where=e.get("where")))
    return tuple(out)
