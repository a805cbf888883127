"""The one input door: every file ncclctl reads goes through here.

Snapshots, models, specs, configs and fabric dumps come from anyone and are read as root, so every read is:

* **a regular file only**: the path is ``stat``-ed first and opened ``O_NONBLOCK | O_NOCTTY``, then ``fstat``-ed
  again, so a FIFO, socket or device (``/dev/zero``, a terminal) is refused with exit 3 and never blocks;
* **bounded**: one documented size cap per kind of input (:data:`KINDS`), checked on the file's size (a 2 GiB
  sparse file is refused before a byte is read) and again while reading (procfs and sysfs report sizes of 0 or
  4096); a file over its cap is an error naming the file and the cap, never a silent truncation;
* **decoded strictly**: UTF-8 (a UTF-8 byte-order mark is dropped); a UTF-16/32 byte-order mark or an invalid byte
  is an error naming the file, the line and the fix.

Confinement to a snapshot root is :class:`ncclctl.probe.hostroot.HostRoot`'s job: it resolves a host path inside
the root and hands the resolved on-disk path to :func:`read_bytes` here with ``nofollow=True``.

The caps (``docs/reliability.md`` lists them for users):

========== ======== ======================================================================================
kind       cap      what
========== ======== ======================================================================================
host       4 MiB    a sysfs/procfs/etc file of a host or snapshot (``/proc/cpuinfo`` of a 512-CPU host: ~1 MiB)
cmd        16 MiB   a recorded command output (``cmd/*.txt``; live outputs have the same cap)
nvml       16 MiB   recorded NVML answers (``nvml.json``)
env        1 MiB    the recorded NCCL environment (``env.json``)
model      64 MiB   a node model (``--model``, inventory ``model:``)
spec       1 MiB    a virtual layout spec (``topo generate --spec``)
config     4 MiB    a lint configuration (``.ncclctl.yaml``)
expect     4 MiB    an expected-state profile (``--expect``)
rail map   4 MiB    rail/plane ids per switch, subnet or port (``--rail-map``)
textfile   4 MiB    a node's Prometheus textfile (``fleet lint --facts HOST.prom``)
inventory  64 MiB   a fleet inventory (``--inventory``)
xml        16 MiB   an NCCL topology or graph file
fabric     1 GiB    ibnetdiscover / iblinkinfo output
archive    256 MiB  a snapshot ``.tar.gz`` (compressed; see :mod:`ncclctl.probe.snapshot` for unpacking caps)
log        4 GiB    an NCCL_DEBUG log or nccl-tests output, plain or gzip (streamed; the cap counts unpacked bytes)
========== ======== ======================================================================================

Logs are the one kind that is streamed (:func:`iter_lines`), never read whole: a 1,024-rank job's INFO log is
200 MB and more. They are application output with NCCL lines mixed in, so they are decoded leniently (an invalid
byte becomes U+FFFD and is counted, not refused), a line longer than :data:`LINE_MAX` is cut there, and a gzip
stream that ends early ends the file (a log copied while the job ran) with a note.
"""

from __future__ import annotations

import os
import stat
from typing import Iterable, NamedTuple

from ncclctl.errors import InputError


class Kind(NamedTuple):
    cap: int
    #: What the file is, in messages ("node model").
    what: str
    #: The fix when the file is over its cap or not a regular file.
    fix: str


_MIB = 1 << 20

KINDS: dict[str, Kind] = {
    "host": Kind(4 * _MIB, "host file", "re-capture the host with 'ncclctl snapshot'"),
    "cmd": Kind(16 * _MIB, "recorded command output", "re-capture the host with 'ncclctl snapshot'"),
    "nvml": Kind(16 * _MIB, "recorded NVML answers", "re-capture the host with 'ncclctl snapshot'"),
    "env": Kind(1 * _MIB, "recorded environment", "re-capture the host with 'ncclctl snapshot'"),
    "model": Kind(64 * _MIB, "node model", "write one with: ncclctl probe --format json > model.json"),
    "spec": Kind(1 * _MIB, "layout spec", "a layout spec is a few lines of YAML; check the path"),
    "config": Kind(4 * _MIB, "config file", "a lint config is a few lines of YAML; check the path"),
    "expect": Kind(4 * _MIB, "expected-state profile", "write one with: ncclctl lint --write-expect FILE"),
    "rail map": Kind(4 * _MIB, "rail map", "a rail map is switches:/subnets:/hosts: YAML; check the path"),
    "facts": Kind(16 * _MIB, "facts document", "give files written by 'ncclctl facts' (Ansible's "
                  "/etc/ansible/facts.d/ncclctl.fact, fetched per host) or Ansible's JSON fact cache"),
    "textfile": Kind(4 * _MIB, "Prometheus textfile", "give the .prom file 'ncclctl lint --format prom' writes on "
                     "each node (a few kilobytes)"),
    "inventory": Kind(64 * _MIB, "inventory", "an inventory is 'hosts:' with one mapping per host; check the path"),
    "slurm": Kind(16 * _MIB, "Slurm topology file", "give Slurm's topology.conf (BlockName=... Nodes=... lines) or topology.yaml (25.05+)"),
    "xml": Kind(16 * _MIB, "NCCL XML file", "NCCL topology and graph files are a few kilobytes; check the path"),
    "fabric": Kind(1024 * _MIB, "fabric dump", "give the ibnetdiscover / iblinkinfo output file"),
    "archive": Kind(256 * _MIB, "snapshot archive", "pass a file written by 'ncclctl snapshot --tar'"),
    "log": Kind(4096 * _MIB, "log file", "give an NCCL_DEBUG=INFO log or nccl-tests output (plain text or .gz)"),
}

_TYPE_NAMES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symlink"))


def _size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= _MIB and n % _MIB == 0 else f"{n:,} bytes"


def _type_name(mode: int) -> str:
    for test, name in _TYPE_NAMES:
        if test(mode):
            return name
    return "not a regular file"


def not_regular(path: str, mode: int, kind: Kind) -> InputError:
    return InputError(f"not a regular file: it is {_type_name(mode)}, where a {kind.what} should be", path=path,
                      fix=kind.fix)


def too_big(path: str, size: int | None, kind: Kind) -> InputError:
    got = f"{size:,} bytes, " if size is not None else ""
    return InputError(f"file is larger than a {kind.what} may be: {got}over ncclctl's {_size_text(kind.cap)} limit",
                      path=path, fix=kind.fix)


def _missing(path: str, kind: Kind) -> InputError:
    # A kind's fix that already says "check the path" is about content or size (topology files are a few
    # kilobytes): for a file that is not there, the path is all there is to say.
    fix = "check the path" if "check the path" in kind.fix else f"check the path, or {kind.fix}"
    return InputError(f"no such {kind.what}", path=path, fix=fix)


def _os_error(path: str, exc: OSError, kind: Kind) -> InputError:
    return InputError(f"cannot read the {kind.what}: {exc.strerror or exc}", path=path,
                      fix="check the path and its permissions")


def read_bytes(path: str, kind: str, *, display: str | None = None, limit: int | None = None,
               nofollow: bool = False, raw_os_errors: bool = False,
               prechecked: bool = False) -> bytes | None:
    """The bytes of the regular file ``path``, refused over ``kind``'s cap.

    ``display``: how the file is named in errors (default ``path``). ``limit``: read only this many bytes, on
    purpose (PCI config space is 4096 bytes; more is not an error). ``nofollow``: the last component must not be a
    symlink (HostRoot has resolved it already).
    Errors are :class:`InputError` (exit 3). ``raw_os_errors``: operating-system errors (permission denied, a
    missing file, sysfs's EINVAL for an attribute without a value) are re-raised as they are, for HostRoot, which
    treats them as information; the type and size checks still raise InputError. ``prechecked``: the caller has
    ``lstat``-ed the path and seen a regular file (HostRoot caches that), so only the ``fstat`` after opening runs.
    """
    spec = KINDS[kind]
    shown = display or path
    if path == "-" and not nofollow and not raw_os_errors:  # standard input (a pipe: `ibstat | ncclctl parse ibstat -`)
        return _read_stdin(spec, display or "<stdin>", limit)
    try:
        return _read(path, spec, shown, limit, nofollow, prechecked)
    except InputError:
        raise
    except OSError as exc:
        if raw_os_errors:
            raise
        if isinstance(exc, FileNotFoundError):
            raise _missing(shown, spec) from None
        raise _os_error(shown, exc, spec) from None


def _read_stdin(spec: Kind, shown: str, limit: int | None) -> bytes:
    """Standard input to its end, refused past the kind's cap (a terminal gives what is typed until ctrl-D)."""
    import sys

    cap = spec.cap if limit is None else min(limit, spec.cap)
    raw = sys.stdin.buffer
    chunks, total = [], 0
    while total <= cap:
        chunk = raw.read(min(1 << 20, cap + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > cap and limit is None:
        raise too_big(shown, None, spec)
    return b"".join(chunks)[:cap]


def _read(path: str, spec: Kind, shown: str, limit: int | None, nofollow: bool, prechecked: bool) -> bytes:
    if not prechecked:
        try:
            st = os.stat(path, follow_symlinks=not nofollow)
        except NotADirectoryError:  # a parent is a file: missing, as for open()
            raise FileNotFoundError(path) from None
        if not stat.S_ISREG(st.st_mode):
            if stat.S_ISCHR(st.st_mode) and not nofollow and os.path.realpath(path) == os.devnull:
                return b""  # /dev/null given on purpose: an empty input, which the caller says is empty
            raise not_regular(shown, st.st_mode, spec)
    cap = spec.cap if limit is None else min(limit, spec.cap)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    if nofollow:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between stat and open
            raise not_regular(shown, st.st_mode, spec)
        if limit is None and st.st_size > spec.cap:  # a sparse file of 2 GiB is refused before reading
            raise too_big(shown, st.st_size, spec)
        # Read to end of file, whatever the first read returned: procfs hands out one page per read and reports
        # st_size 0, sysfs reports 4096 for every attribute, and a file may grow while it is read, so a short read
        # is never taken for the end (issue 25: /proc/cpuinfo and /proc/modules were cut after their first page).
        # The first read asks for 64 KiB (sysfs files are tiny, and a 1 MiB buffer per read costs an mmap/munmap
        # each time); a regular file over 1 MiB is read in one call (no pieces to join, half the copying).
        want = cap if limit is not None else cap + 1
        first = os.read(fd, min(65536 if st.st_size <= (1 << 20) else st.st_size + 1, want))
        if not first or len(first) >= want:
            data = first
        else:
            chunks = [first]
            total = len(first)
            while total < want:
                chunk = os.read(fd, min(1 << 20, want - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)
    if limit is None and len(data) > spec.cap:
        raise too_big(shown, None, spec)
    return data


def printable(text: str) -> str:
    """``text`` with every undecodable byte (a surrogate escape, as ``os.listdir`` returns it) written ``\\xNN``
    and any other lone surrogate ``\\udNNN``: valid UTF-8, readable, deterministic."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def decode(data: bytes, path: str, *, fix: str = "save the file as UTF-8 text") -> str:
    """Strict UTF-8 (a UTF-8 byte-order mark is dropped); errors name the line."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError("UTF-16 or UTF-32 text (byte-order mark at the start): ncclctl reads UTF-8", path=path,
                         line=1, fix="convert it, e.g. iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x})", path=path, line=line, column=column,
                         fix=fix) from None


def read_text(path: str, kind: str, *, display: str | None = None) -> str:
    """:func:`read_bytes` then :func:`decode`."""
    data = read_bytes(path, kind, display=display)
    assert data is not None
    return decode(data, display or path)


def read_json(path: str, kind: str, *, display: str | None = None):
    """A JSON document from a file of ``kind``; malformed JSON is an InputError naming the line."""
    import json

    text = read_text(path, kind, display=display)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not a valid JSON {KINDS[kind].what}: {exc.msg}", path=display or path, line=exc.lineno, column=exc.colno,
                         fix=KINDS[kind].fix) from None
    except (ValueError, RecursionError) as exc:  # nesting past the recursion limit, an integer of 4,300+ digits
        raise InputError(f"not a usable JSON {KINDS[kind].what}: {type(exc).__name__}", path=display or path, fix=KINDS[kind].fix) from None


#: The longest line a streamed log keeps; the rest of a longer line is dropped (and counted).
LINE_MAX = 64 << 10

_CHUNK = 1 << 20

#: A gzip stream past GZIP_FREE unpacked bytes may unpack to at most GZIP_RATIO bytes per compressed byte: NCCL
#: logs compress 10-50x, a bomb of log lines 300x and more (29 MB to 8 GiB), refused at once instead of after
#: gigabytes of parsing (the snapshot archives' rule).
GZIP_RATIO = 200
GZIP_FREE = 8 << 20


class LineStream:
    """What :func:`iter_lines` saw besides the lines: bytes read (unpacked), invalid bytes replaced, lines cut at
    :data:`LINE_MAX`, whether the input was gzip and whether its stream ended early."""

    def __init__(self, shown: str, *, line_max: int = LINE_MAX) -> None:
        self.shown = shown
        #: The longest line kept (:data:`LINE_MAX`; a reader of one-line JSON documents asks for more).
        self.line_max = line_max
        self.bytes = 0
        #: Bytes read from the file (compressed, for gzip): the ratio check's denominator.
        self.packed = 0
        self.gzip = False
        self.truncated_gzip = False
        self.replaced = 0
        self.cut_lines = 0
        self.cutting = False

    def notes(self) -> list[str]:
        out = []
        if self.truncated_gzip:
            out.append("the gzip stream ends early (a file copied while it was written?): read up to its end")
        if self.replaced:
            out.append(f"{self.replaced:,} line(s) with bytes that are not UTF-8 (read as U+FFFD)")
        if self.cut_lines:
            out.append(f"{self.cut_lines:,} line(s) longer than {self.line_max:,} bytes were cut there")
        return out


def _open_raw(path: str, spec: Kind, shown: str):
    """A regular file opened non-blocking (the checks of :func:`read_bytes`), as a binary file object."""
    try:
        st = os.stat(path)
    except NotADirectoryError:
        raise _missing(shown, spec) from None
    except FileNotFoundError:
        raise _missing(shown, spec) from None
    except OSError as exc:
        raise _os_error(shown, exc, spec) from None
    if not stat.S_ISREG(st.st_mode):
        raise not_regular(shown, st.st_mode, spec)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise _missing(shown, spec) from None
    except OSError as exc:
        raise _os_error(shown, exc, spec) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise not_regular(shown, st.st_mode, spec)
    if st.st_size > spec.cap:
        os.close(fd)
        raise too_big(shown, st.st_size, spec)
    return os.fdopen(fd, "rb", buffering=0)


def iter_lines(path: str, kind: str = "log", *, display: str | None = None, stream: LineStream | None = None,
               stdin=None):
    """The lines of a text file of ``kind``, streamed in batches (lists of str, without their line ends), plain or
    gzip (detected by its magic bytes). ``path`` ``-`` reads standard input (``stdin``: a binary file object, by
    default ``sys.stdin.buffer``). Unpacked bytes count against the kind's cap; invalid UTF-8 is replaced and
    counted in ``stream`` (a :class:`LineStream`), as are lines cut at :data:`LINE_MAX`. Errors are
    :class:`InputError` naming the file."""
    shown = display or ("<stdin>" if path == "-" else path)
    st = stream if stream is not None else LineStream(shown)
    return lines_of(iter_chunks(path, kind, display=display, stream=st, stdin=stdin), st)


def lines_of(chunks: Iterable[bytes], st: LineStream):
    """The batches of lines (:func:`iter_lines`) of the unpacked byte chunks of :func:`iter_chunks`."""
    rest = b""
    for data in chunks:
        rest, lines = _split(rest + data, st)
        if lines:
            yield lines
    if rest:
        yield _decode_lines(rest, st)


def text_of(chunks: Iterable[bytes], st: LineStream):
    """The unpacked byte chunks of :func:`iter_chunks` as str chunks, in any size, without regard to lines (a
    reader of one-line JSON documents). Invalid UTF-8 is replaced from the first invalid byte on, counted once in
    ``st.replaced`` (a one-line document is one line)."""
    import codecs

    dec = codecs.getincrementaldecoder("utf-8")("strict")
    strict = True
    for data in chunks:
        pending = dec.getstate()[0] if strict else b""
        try:
            text = dec.decode(data)
        except UnicodeDecodeError:
            strict = False
            st.replaced += 1
            dec = codecs.getincrementaldecoder("utf-8")("replace")
            text = dec.decode(pending + data)
        if text:
            yield text
    try:
        tail = dec.decode(b"", final=True)
    except UnicodeDecodeError:
        st.replaced += 1
        tail = dec.getstate()[0].decode("utf-8", "replace")
    if tail:
        yield tail


def iter_chunks(path: str, kind: str = "log", *, display: str | None = None, stream: LineStream | None = None,
                stdin=None):
    """The unpacked bytes of a file of ``kind`` (plain or gzip, ``-`` for standard input), in chunks of up to
    about 1 MiB, under the checks :func:`iter_lines` describes (the kind's cap, the gzip ratio)."""
    import sys
    import zlib

    spec = KINDS[kind]
    shown = display or ("<stdin>" if path == "-" else path)
    st = stream if stream is not None else LineStream(shown)
    if path == "-":
        raw = stdin if stdin is not None else sys.stdin.buffer
        close = False
    else:
        raw = _open_raw(path, spec, shown)
        close = True
    try:
        first = _read_some(raw, shown, spec)
        st.packed += len(first)
        inflate = None
        if first[:2] == b"\x1f\x8b":
            st.gzip = True
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data = first
        while True:
            if inflate is not None:
                try:
                    out = inflate.decompress(data, _CHUNK) if data else b""
                    while True:
                        if out:
                            st.bytes += len(out)
                            if st.bytes > spec.cap:
                                raise too_big(shown, None, spec)
                            if st.bytes > GZIP_FREE:
                                used = st.packed - len(inflate.unconsumed_tail) - len(inflate.unused_data)
                                if st.bytes > GZIP_RATIO * used:
                                    raise InputError(
                                        f"gzip stream unpacks to over {GZIP_RATIO} bytes per compressed byte "
                                        f"({st.bytes:,} bytes from {used:,}): a compression bomb, not a log",
                                        path=shown, fix="give the log uncompressed if it really is one")
                            yield out
                        if inflate.eof:
                            # concatenated gzip members (cat a.gz b.gz): start the next one
                            tail = inflate.unused_data
                            if not tail:
                                break
                            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                            out = inflate.decompress(tail, _CHUNK)
                            continue
                        if not inflate.unconsumed_tail:
                            break
                        out = inflate.decompress(inflate.unconsumed_tail, _CHUNK)
                except zlib.error as exc:
                    raise InputError(f"not a readable gzip stream ({exc})", path=shown,
                                     fix="give the log uncompressed, or check the .gz with 'gzip -t'") from None
            else:
                st.bytes += len(data)
                if st.bytes > spec.cap:
                    raise too_big(shown, None, spec)
                if data:
                    yield data
            if not data:
                break
            data = _read_some(raw, shown, spec)
            st.packed += len(data)
        if inflate is not None and not inflate.eof and st.bytes:
            st.truncated_gzip = True
    finally:
        if close:
            raw.close()


def _read_some(raw, shown: str, spec: Kind) -> bytes:
    try:
        return raw.read(_CHUNK) or b""
    except OSError as exc:
        raise _os_error(shown, exc, spec) from None


def _split(buf: bytes, st: LineStream) -> tuple[bytes, list[str]]:
    cut = buf.rfind(b"\n")
    line_max = st.line_max
    if cut < 0:
        if len(buf) > line_max:  # one endless line: keep its start, count it once
            if not st.cutting:
                st.cut_lines += 1
                st.cutting = True
            return buf[:line_max], []
        return buf, []
    if st.cutting:
        st.cutting = False
        first = buf.find(b"\n")
        buf = buf[:line_max] + buf[first:] if first > line_max else buf
        cut = buf.rfind(b"\n")
    return buf[cut + 1:], _decode_lines(buf[:cut], st)


def _decode_lines(body: bytes, st: LineStream) -> list[str]:
    """``body`` (lines joined by newlines, without the last one) as str lines: one decode of the whole body when it
    is valid UTF-8 (the common case), line by line with replacement otherwise; CR of CRLF ends dropped."""
    try:
        lines = body.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        lines = []
        for b in body.split(b"\n"):
            try:
                lines.append(b.decode("utf-8"))
            except UnicodeDecodeError:
                st.replaced += 1
                lines.append(b.decode("utf-8", "replace"))
    line_max = st.line_max
    if len(body) > line_max and max(map(len, lines)) > line_max:
        for i, line in enumerate(lines):
            if len(line) > line_max:
                st.cut_lines += 1
                lines[i] = line[:line_max]
    if "\r" in lines[-1] or any("\r" in x for x in lines[:64]):
        lines = [x[:-1] if x.endswith("\r") else x for x in lines]
    return lines


__all__ = ["KINDS", "LINE_MAX", "Kind", "LineStream", "decode", "iter_lines", "read_bytes", "read_json", "read_text"]
