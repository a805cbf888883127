#!/usr/bin/env python3
"""Extract the facts ncclctl's tables hold from a released NCCL library, and compare them with the tables.

Usage::

    python tools/nccl_extract.py PATH [--json] [--list] [--formats] [--no-load] [--no-compare]

``PATH`` is a ``libnccl.so[.2]`` or a wheel that holds one (``nvidia_nccl_cu12-X.Y.Z-*.whl``; the library is
copied out of the zip into a temporary directory). To check a new release::

    pip download --no-deps nvidia-nccl-cu12==2.33.1 -d /tmp/wheels   # outside the repository
    python tools/nccl_extract.py /tmp/wheels/nvidia_nccl_cu12-2.33.1-*.whl

then update ``ncclctl/nccl/variables.py`` (and ``version.py``'s RELEASES) by hand from the differences it prints,
reading NCCL's source of that release for each new name (its kind: ``NCCL_PARAM`` is ``int``, an
``ncclGetEnv`` string is ``str``, a registry parameter is ``typed``).

What it reads (standard library only; the library is never run in this process):

* **version**: ``ncclGetVersion`` in a child Python process through ctypes (the library loads without a GPU),
  else the ``NCCL version X.Y.Z`` string. ``--no-load`` never loads the library.
* **variables**: every ``NCCL_*`` name in the ELF ``.rodata`` section (strings in the debug sections, such as enum
  constant names, are left out). A name that is a string of its own is *read* (``NCCL_PARAM`` builds the
  literal ``"NCCL_" name``; ``ncclGetEnv`` takes the whole name); a name found only inside a longer string is
  *mentioned* (an API constant such as ``NCCL_CONFIG_INITIALIZER``, or a message that names a variable), and is
  listed apart: look those up in the source before adding them.
* **registry**: the output of ``ncclParamDumpAll`` with ``NCCL_PARAM_DUMP_ALL=1`` (2.30 and later): key, C type,
  flags (Private, Cached, NoEnvPluginInit, Sensitive, ...), default and accepted values of each parameter of the
  typed registry. The child runs with every ``NCCL_*`` variable of this environment removed.
* **readers**: how the code reads each name, from the x86-64 call sites (the wheels' libraries keep their symbol
  table): passed to ``ncclLoadParam`` is ``int`` (an ``NCCL_PARAM``: strtoll), with the default when the call site
  loads it as a constant; passed to ``ncclGetEnv`` is ``str``. Names read another way (the registry, a helper
  such as ncclGetLevel) have no entry.
* **defaults** (``--defaults``): the default of each ``int`` variable (its call sites' constant) and of each registry
  parameter (the dump's ``default=``), as rows for the ``_DEFAULTS`` table of ``ncclctl/nccl/variables.py``.
* **formats**: printf-style strings of ``.rodata``, and how many start with ``HINT:`` or name ``NCCL DIAG``/``ATTN``;
  **log formats**: the level (WARN, INFO, ATTN, TRACE, ...) each format is logged at, from the x86-64 calls of
  ncclDebugLog/ncclDebugLogInternal (level and format loaded as constants shortly before the call; a format
  passed another way has no level). ``--formats`` prints every string with its levels ('-': no call found).

The comparison (unless ``--no-compare``) imports ``ncclctl.nccl.variables`` from this checkout and lists: names
the library reads that the table does not know; names the table says this release still reads (from the table's
point of view at the library's version) that the library lacks (names the table marks ``plugin`` are read by the
plugins in NCCL's tree, not by libnccl, and are left out); and registry parameters whose table kind is not
``typed``, and names whose call sites say another kind than the table (``kind_differs``: library/table). Names and
numbers only: nothing of NCCL's text goes into the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

_NAME = re.compile(rb"NCCL_[A-Z0-9_]*[A-Z0-9]")
# One printf conversion: flags, width, precision, length, conversion.
_CONV = re.compile(r"%[-+ #0']*(\d+|\*)?(\.(\d+|\*))?(hh|h|ll|l|L|z|j|t)?[diouxXeEfgGaAcsp]")
# Bytes of a string: printable ASCII plus tab and newline.
_STRINGS = re.compile(rb"[\x20-\x7e\t\n]{4,}")


# --------------------------------------------------------------------------------------------------
# ELF


class _Elf:
    """The sections and symbols of a 64-bit little-endian ELF file (x86-64 for the code scan)."""

    def __init__(self, data: bytes) -> None:
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise SystemExit("not a 64-bit little-endian ELF file")
        self.data = data
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        heads = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
        names_off = heads[shstrndx][4]
        #: name -> (type, address, file offset, size)
        self.sections: dict[str, tuple[int, int, int, int]] = {}
        for name, kind, _flags, addr, off, size in heads:
            end = data.index(b"\0", names_off + name)
            self.sections[data[names_off + name:end].decode("ascii", "replace")] = (kind, addr, off, size)
        self.symbols: dict[str, int] = {}
        if ".symtab" in self.sections and ".strtab" in self.sections:
            _, _, off, size = self.sections[".symtab"]
            stroff = self.sections[".strtab"][2]
            for i in range(size // 24):
                name, _info, _other, _shndx, value, _size = struct.unpack_from("<IBBHQQ", data, off + i * 24)
                end = data.index(b"\0", stroff + name)
                self.symbols[data[stroff + name:end].decode("ascii", "replace")] = value

    def section(self, name: str) -> tuple[int, bytes]:
        """(address, bytes) of a section; (0, b"") when absent."""
        kind, addr, off, size = self.sections.get(name, (8, 0, 0, 0))
        return (addr, b"") if kind == 8 else (addr, self.data[off:off + size])  # 8: SHT_NOBITS

    def cstring(self, addr: int) -> str | None:
        for kind, base, off, size in self.sections.values():
            if kind != 8 and base and base <= addr < base + size:
                start = off + addr - base
                return self.data[start:self.data.index(b"\0", start)].decode("latin-1")
        return None


def _rodata_strings(elf: _Elf) -> list[tuple[str, bool]]:
    """(text, ends_at_nul) for each run of printable bytes in ``.rodata``."""
    _, ro = elf.section(".rodata")
    return [(m.group().decode("ascii"), ro[m.end():m.end() + 1] == b"\0") for m in _STRINGS.finditer(ro)]


# x86-64 instructions that set up the arguments of ncclLoadParam(name, default, uninitialized, &cache, &noCache)
# and ncclGetEnv(name), read backwards from the call: (length, test, meaning).
def _backwards(text: bytes, end: int, base: int) -> list[tuple]:
    out: list[tuple] = []
    p = end
    for _ in range(8):
        if p >= 7 and text[p - 7] in (0x48, 0x4C) and text[p - 6] == 0x8D and text[p - 5] & 0xC7 == 0x05:
            reg = (text[p - 5] >> 3 & 7) + (8 if text[p - 7] == 0x4C else 0)  # lea reg, [rip+disp32]
            out.append(("lea", reg, base + p + struct.unpack_from("<i", text, p - 4)[0]))
            p -= 7
        elif p >= 2 and text[p - 2:p] == b"\x31\xf6":  # xor esi, esi
            out.append(("arg2", 0))
            p -= 2
        elif p >= 5 and text[p - 5] == 0xBE:  # mov esi, imm32 (zero-extended)
            out.append(("arg2", struct.unpack_from("<I", text, p - 4)[0]))
            p -= 5
        elif p >= 7 and text[p - 7:p - 4] == b"\x48\xc7\xc6":  # mov rsi, simm32
            out.append(("arg2", struct.unpack_from("<i", text, p - 4)[0]))
            p -= 7
        elif p >= 10 and text[p - 10:p - 8] == b"\x48\xbe":  # movabs rsi, imm64
            out.append(("arg2", struct.unpack_from("<q", text, p - 8)[0]))
            p -= 10
        elif p >= 4 and text[p - 4:p] == b"\x48\x83\xce\xff":  # or rsi, -1
            out.append(("arg2", -1))
            p -= 4
        elif p >= 10 and text[p - 10] in (0x48, 0x49) and 0xB8 <= text[p - 9] <= 0xBF:  # movabs reg, imm64
            p -= 10
        elif p >= 3 and text[p - 3] in (0x48, 0x49, 0x4C, 0x4D) and text[p - 2] in (0x89, 0x8B) and text[p - 1] >= 0xC0:
            p -= 3  # mov reg, reg
        else:
            break
    return out


def _readers(elf: _Elf, names: dict[int, str]) -> dict[str, dict]:
    """How the code reads each name: ``int`` (passed to ncclLoadParam, with the default when the call site shows
    it) or ``str`` (passed to ncclGetEnv). Needs the symbol table (the wheels' libraries keep it)."""
    load = elf.symbols.get("_Z13ncclLoadParamPKcllPlPa")
    getenv = elf.symbols.get("_Z10ncclGetEnvPKc")
    if load is None and getenv is None:
        return {}
    base, text = elf.section(".text")
    out: dict[str, dict] = {}

    def note(name: str, kind: str, default: int | None) -> None:
        e = out.setdefault(name, {"kinds": set(), "defaults": set()})
        e["kinds"].add(kind)
        if default is not None:
            e["defaults"].add(default)

    for m in re.finditer(rb"[\xe8\xe9]", text):  # call / jmp rel32 (a tail call)
        i = m.start()
        if i + 5 > len(text):
            break
        target = base + i + 5 + struct.unpack_from("<i", text, i + 1)[0]
        if target not in (load, getenv):
            continue
        steps = _backwards(text, i, base)
        name = next((names.get(s[2]) for s in steps if s[0] == "lea" and s[1] == 7), None)  # rdi: the name
        if name:
            note(name, "int" if target == load else "str",
                 next((s[1] for s in steps if s[0] == "arg2"), None) if target == load else None)
    # Names whose address is loaded into some register shortly before a call to either function.
    for m in re.finditer(rb"[\x48\x4c]\x8d[\x05\x0d\x15\x1d\x25\x2d\x35\x3d]", text):
        i = m.start()
        name = names.get(base + i + 7 + struct.unpack_from("<i", text, i + 3)[0])
        if name is None or name in out:
            continue  # the calls found above say more (the default)
        for c in re.finditer(rb"[\xe8\xe9]", text[i + 7:i + 64]):
            j = i + 7 + c.start()
            if j + 5 <= len(text):
                target = base + j + 5 + struct.unpack_from("<i", text, j + 1)[0]
                if target in (load, getenv):
                    note(name, "int" if target == load else "str", None)
                    break
    # "int+str": an NCCL_PARAM that some code also reads as text (to tell "unset" from a value).
    return {n: {"kind": "+".join(sorted(e["kinds"])),
                "default": min(e["defaults"]) if len(e["defaults"]) == 1 else None} for n, e in out.items()}


# --------------------------------------------------------------------------------------------------
# Library


def _library(path: Path, tmp: str) -> Path:
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if re.search(r"/libnccl\.so(\.\d+)*$", n)]
            if not names:
                raise SystemExit(f"{path}: no libnccl.so in the wheel")
            target = Path(tmp) / "libnccl.so.2"
            target.write_bytes(zf.read(sorted(names)[0]))
            return target
    return path


_CHILD = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
v = ctypes.c_int(0)
rc = lib.ncclGetVersion(ctypes.byref(v))
print("VERSION", rc, v.value, flush=True)
if hasattr(lib, "ncclParamDumpAll"):
    lib.ncclParamDumpAll()
"""


def _load(lib: Path) -> tuple[int | None, str]:
    """ncclGetVersion's code and ncclParamDumpAll's output, from a child process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NCCL_")}
    env["NCCL_PARAM_DUMP_ALL"] = "1"
    try:
        run = subprocess.run([sys.executable, "-c", _CHILD, str(lib)], env=env, capture_output=True, text=True,
                             timeout=120, errors="replace")
    except subprocess.TimeoutExpired:
        return None, ""
    m = re.search(r"^VERSION 0 (\d+)$", run.stdout, re.M)
    return (int(m.group(1)) if m else None), run.stdout[m.end():] if m else ""


def _version_text(code: int) -> str:
    # NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z before 2.9, X*10000+Y*100+Z from 2.9 on.
    if code >= 10000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


_ENTRY = re.compile(r"^(NCCL_[A-Z0-9_]+) \((.+?)\)(?: \[([^\]]*)\])?(?: (.*))?$")


def parse_dump(text: str) -> dict[str, dict]:
    """``ncclParamDumpAll`` output: key -> type, flags, default, accepted (the first line of it), choices."""
    out: dict[str, dict] = {}
    cur: dict | None = None
    for line in text.splitlines():
        m = _ENTRY.match(line)
        if m:
            cur = out[m.group(1)] = {"type": m.group(2), "flags": [f.strip() for f in (m.group(3) or "").split(",")
                                                                   if f.strip()],
                                     "default": None, "accepted": None, "choices": []}
            continue
        if cur is None:
            continue
        s = line.strip()
        d = re.search(r"\bdefault=(.*)$", s)
        if s.startswith("Current value=") and d:
            cur["default"] = d.group(1).strip()
        elif s.startswith("Accepted value:"):
            cur["accepted"] = s.split(":", 1)[1].strip()
        elif line.startswith("        ") and s:
            cur["choices"].append(re.split(r"\s+-(?:\s|$)", s, maxsplit=1)[0])
    return out


# --------------------------------------------------------------------------------------------------
# Extraction


#: ncclDebugLogLevel values (src/nccl.h.in): 1-5 since 2.3; 6 is ATTN in 2.32.3 (the level its ATTN call sites pass).
_LEVELS = {0: "NONE", 1: "VERSION", 2: "WARN", 3: "INFO", 4: "ABORT", 5: "TRACE", 6: "ATTN"}


def _log_formats(elf: _Elf) -> dict[str, list[str]]:
    """format -> the levels the code logs it at: every call of ncclDebugLog/ncclDebugLogInternal (WARN, INFO, ATTN,
    TRACE macros) whose level (``mov edi, imm``) and format (``lea r9, [rip+...]``, the sixth argument of
    ncclDebugLogInternal; the fifth, r8, of ncclDebugLog) are set up in the 96 bytes before the call."""
    loggers = ("_Z20ncclDebugLogInternal17ncclDebugLogLevel", "_Z12ncclDebugLog17ncclDebugLogLevel")
    targets = {addr: ("r8" if name.startswith("_Z12ncclDebugLog") else "r9") for name, addr in elf.symbols.items()
               if name.startswith(loggers)}
    base, text = elf.section(".text")
    out: dict[str, set[str]] = {}
    for m in re.finditer(rb"[\xe8\xe9]", text):
        i = m.start()
        if i + 5 > len(text):
            break
        reg = targets.get(base + i + 5 + struct.unpack_from("<i", text, i + 1)[0])
        if reg is None:
            continue
        start = max(0, i - 96)
        window = text[start:i]
        leas = list(re.finditer(b"\x4c\x8d\x05" if reg == "r8" else b"\x4c\x8d\x0d", window))
        levels = list(re.finditer(rb"\xbf([\x00-\x07])\x00\x00\x00", window))  # mov edi, level
        if not leas or leas[-1].start() + 7 > len(window):
            continue
        at = leas[-1].start()
        fmt = elf.cstring(base + start + at + 7 + struct.unpack_from("<i", window, at + 3)[0])
        if fmt is None:
            continue
        level = _LEVELS.get(levels[-1].group(1)[0], "?") if levels else "?"
        out.setdefault(fmt, set()).add(level)
    return {f: sorted(v) for f, v in sorted(out.items())}


def extract(path: Path, *, load: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        lib = _library(path, tmp)
        elf = _Elf(lib.read_bytes())
        strings = _rodata_strings(elf)
        ro_base, ro = elf.section(".rodata")
        names = {ro_base + m.start(): m.group()[:-1].decode() for m in re.finditer(rb"NCCL_[A-Z0-9_]*[A-Z0-9]\0", ro)}
        readers = _readers(elf, names)
        logs = _log_formats(elf)
        code, dump = _load(lib) if load else (None, "")
    version = _version_text(code) if code else None
    if version is None:
        hits = (re.search(r"NCCL version (\d+\.\d+\.\d+)", s) for s, _ in strings if "NCCL version " in s)
        found = next((h for h in hits if h), None)
        version = found.group(1) if found else None
    read: set[str] = set()
    mentioned: set[str] = set()
    for text, at_nul in strings:
        raw = text.encode()
        for hit in _NAME.finditer(raw):
            name = hit.group().decode()
            before = raw[hit.start() - 1:hit.start()]
            # A string of its own: it ends the run at a NUL and does not end a sentence, a list or an assignment
            # (the bytes before it, if any, are other data that the scan ran into: "...linksNCCL_X", "0.0NCCL_X").
            alone = at_nul and hit.end() == len(raw) and (hit.start() == 0 or
                                                          not re.match(rb"[_\s=$(`'\"<,;:]", before))
            (read if alone else mentioned).add(name)
    mentioned -= read
    formats = sorted({s for s, _ in strings if _CONV.search(s) and not s.startswith("_Z")})
    registry = parse_dump(dump)
    return {
        "library": str(path),
        "version": version,
        "read": sorted(read),
        "mentioned": sorted(mentioned),
        "registry": registry,
        "readers": readers,
        "formats": formats,
        "hints": sorted({s.strip() for s, _ in strings if s.lstrip().startswith("HINT:")}),
        "log_formats": logs,
        "log_format_counts": {lvl: sum(1 for v in logs.values() if lvl in v) for lvl in sorted(
            {x for v in logs.values() for x in v})},
        "format_counts": {
            "printf_style": len(formats),
            "hint": sum(1 for s, _ in strings if s.lstrip().startswith("HINT:")),
            "diag": sum(1 for s in formats if "NCCL DIAG" in s or "DIAG" in s.split(" ", 1)[0]),
            "attn": sum(1 for s in formats if "ATTN" in s),
        },
    }


def compare(found: dict) -> dict:
    """The library's facts against ncclctl's variable table at the library's release."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from ncclctl.nccl.variables import KNOWN, kind_at  # noqa: PLC0415 - this checkout's table
    from ncclctl.nccl.version import parse  # noqa: PLC0415

    version = parse(found["version"]) if found["version"] else None

    def current(info) -> bool:
        return version is None or (info.since <= version and (info.until is None or info.until >= version))

    read = set(found["read"]) | set(found["registry"])
    table_now = {n for n, i in KNOWN.items() if current(i) and "plugin" not in i.flags}
    return {
        "unknown_to_ncclctl": sorted(n for n in read if n not in KNOWN),
        "known_but_not_current": sorted(n for n in read if n in KNOWN and not current(KNOWN[n])),
        "missing_from_library": sorted(table_now - read),
        "kind_differs": sorted(f"{n}:{e['kind']}/{KNOWN[n].kind}" for n, e in found["readers"].items()
                               if n in KNOWN and current(KNOWN[n]) and kind_at(n, version) not in e["kind"].split("+")),
        "registry_not_typed": sorted(n for n in found["registry"] if n in KNOWN and kind_at(n, version) != "typed"),
        "typed_not_in_registry": sorted(n for n in table_now if kind_at(n, version) == "typed" and found["registry"]
                                        and n not in found["registry"]),
        "sensitive_in_registry": sorted(n for n, e in found["registry"].items() if "Sensitive" in e["flags"]),
        "sensitive_in_table": sorted(n for n in table_now if "sensitive" in KNOWN[n].flags),
    }


def _log_coverage(found: dict, *, listing: bool) -> int:
    """Counts of the library's WARN/ATTN formats by the class ncclctl's reader gives them (a named class with its own
    rule or hint, a family of NCCL's code with where to look, or 'other'), and of its HINT/DIAG strings."""
    from collections import Counter

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from ncclctl.logs.check import OWN_RULE_WARNS, _hint_class
    from ncclctl.logs.parse import WARN_FAMILIES, warn_kind

    families = {k for _n, k in WARN_FAMILIES}
    warns = sorted(f for f, lv in found["log_formats"].items() if "WARN" in lv or "ATTN" in lv)
    kinds = {f: warn_kind(f) for f in warns}
    count = Counter(kinds.values())
    own = sum(n for k, n in count.items() if k in OWN_RULE_WARNS)
    fam = sum(n for k, n in count.items() if k in families)
    named = len(warns) - own - fam - count["other"]
    import hashlib

    from ncclctl.logs.warn_listed import LISTED

    listed = [f for f in warns if kinds[f] == "other" and hashlib.sha1(f.encode()).hexdigest()[:12] in LISTED]
    hints = [f for f in found.get("hints", []) if not f.startswith("HINT: To confirm")]
    hint_cls = Counter(_hint_class(f[5:].strip())[0] for f in hints)
    diags = [f for f in found["formats"] if "NCCL DIAG" in f]
    print(f"version: {found['version']}")
    print(f"WARN/ATTN formats: {len(warns)}: {own} in a class with a rule of its own, {named} in a named class "
          f"(LOG014 with its hint), {fam} in a family of NCCL's code (LOG014 warning, where to look), "
          f"{count['other']} other (LOG014 warning, the line itself)")
    print(f"other: {len(listed)} listed on purpose (ncclctl/logs/warn_listed.py), "
          f"{count['other'] - len(listed)} unclassified")
    print("classes: " + ", ".join(f"{k}={n}" for k, n in count.most_common()))
    print(f"HINT strings: {len(hints)}: " + ", ".join(f"{k}={n}" for k, n in hint_cls.most_common()))
    print(f"DIAG strings: {len(diags)} (read by LOG028 by their [OK]/[INFO]/[WARN]/[FAIL] tag)")
    if listing:
        for f in warns:
            print(f"{kinds[f]}\t{f!r}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", type=Path, help="libnccl.so[.2] or a wheel holding one")
    ap.add_argument("--json", action="store_true", help="one JSON document (facts and comparison)")
    ap.add_argument("--list", action="store_true", help="also list every variable name found")
    ap.add_argument("--formats", action="store_true", help="also print every printf-style string")
    ap.add_argument("--no-load", action="store_true", help="never load the library (no version call, no dump)")
    ap.add_argument("--no-compare", action="store_true", help="do not compare with ncclctl's tables")
    ap.add_argument("--log-coverage", action="store_true",
                    help="how ncclctl's log reader classes the library's WARN/ATTN formats, HINT and DIAG strings "
                         "(counts per class; --formats lists each with its class)")
    ap.add_argument("--defaults", action="store_true",
                    help="print only the defaults as rows for variables.py's _DEFAULTS table (NAME VALUE)")
    args = ap.parse_args(argv)
    found = extract(args.path, load=not args.no_load)
    if args.defaults:
        rows = {n: str(r["default"]) for n, r in found["readers"].items()
                if r["default"] is not None and "int" in r["kind"].split("+")}
        # Registry parameters other than strings (whose defaults may end in white space a row cannot keep).
        rows.update({n: e["default"] for n, e in found["registry"].items()
                     if e["type"] != "const char*" and e["default"] not in (None, "<unknown>", "<unset>")})
        width = max(map(len, rows), default=0)
        print(f"# {found['version']}")
        for name in sorted(rows):
            print(f"{name:<{width}} {rows[name]}")
        return 0
    if args.log_coverage:
        return _log_coverage(found, listing=args.formats)
    diff = None if args.no_compare else compare(found)
    if args.json:
        print(json.dumps({"facts": found, "compare": diff}, indent=1, sort_keys=True))
        return 0
    print(f"library: {found['library']}")
    print(f"version: {found['version']}")
    print(f"variables read: {len(found['read'])}; names only mentioned in messages: {len(found['mentioned'])}")
    print(f"registry parameters (ncclParamDumpAll): {len(found['registry'])}")
    c = found["format_counts"]
    print(f"printf-style strings: {c['printf_style']} (HINT: lines {c['hint']}, DIAG {c['diag']}, ATTN {c['attn']})")
    print(f"log formats by level (from the calls): {len(found['log_formats'])} "
          f"{' '.join(f'{k}={v}' for k, v in found['log_format_counts'].items())}")
    for key, e in sorted(found["registry"].items()):
        extra = f" choices={','.join(e['choices'])}" if e["choices"] else ""
        print(f"  {key} type={e['type']} flags={','.join(e['flags']) or '-'} default={e['default']}{extra}")
    if args.list:
        for name in found["read"]:
            r = found["readers"].get(name)
            how = "typed" if name in found["registry"] else (
                f"{r['kind']}" + (f" default={r['default']}" if r["default"] is not None else "") if r else "?")
            print(f"  {name} {how}")
    print("mentioned only:", " ".join(found["mentioned"]))
    if diff is not None:
        for key, names in diff.items():
            print(f"{key.replace('_', ' ')} ({len(names)}): {' '.join(names)}")
    if args.formats:
        for fmt in found["formats"]:
            print(f"{','.join(found['log_formats'].get(fmt, ['-']))}\t{fmt!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
