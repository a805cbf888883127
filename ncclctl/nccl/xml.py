"""A byte-for-byte reimplementation of NCCL's XML reader (``graph/xml.cc``), for diagnostics.

NCCL does not use an XML library: ``xmlGetChar``/``xmlGetValue``/``xmlGetToken``/``xmlSkipComment``/
``xmlGetNode`` read a strict subset of XML one byte at a time, and ``xmlLoadSub`` builds the node tree with
a table of element handlers per parent. This module follows that control flow exactly (reference
``nccl-format.md`` §1), so that:

* a file NCCL accepts gives the same tree (names, attributes in file order and values verbatim, i.e.
  entities are *not* decoded, only the first 16 attributes kept, ignored elements left out);
* a file NCCL rejects gives one fatal :class:`XmlDiagnostic` carrying NCCL's own wording (``XML Parse
  error : expecting '<', got '\\t'``) plus the line and column of the offending construct.

The reader is bounded: an explicit stack replaces NCCL's recursion, scans use ``bytes.find``/regexes, and it
never raises anything but :class:`~ncclctl.errors.InputError` (for input that is not bytes or cannot be read).

Version differences (``nccl_version``, default 2.30.7) that change parsing:

* single quotes close a value only from 2.27 (before, a value runs to the next ``"``);
* value length is checked only from 2.27 (before: a buffer overflow, still reported as an error);
* ``MAX_STR_LEN`` is 256 in 2.6-2.7 and 255 from 2.8 (longest name or value: ``MAX_STR_LEN - 2``);
* ``MAX_SUBS`` children per element: 32 before 2.21 (not checked: reported, parsing goes on), 128 in
  2.21-2.29.3, 640 from 2.29.7;
* node slots: 1024 before 2.21; from 2.21 256 (topology) and 4096 / 65536 (graph, 65536 from 2.29.7);
* ``<c2c>`` is read from 2.19 and ``<pcilink>`` from 2.22 (before, they are ignored elements).

Columns are 1-based and count characters (UTF-8 decoded, undecodable bytes count one each); lines count LF.

Untrusted input is bounded (see ``docs/reliability.md``): files over :data:`MAX_XML_BYTES`, markup
declarations (``<!DOCTYPE``, ``<!ENTITY`` ...: NCCL never reads them, and they are how external entities and
entity-expansion bombs get in), nesting deeper than :data:`MAX_XML_DEPTH`, more than :data:`MAX_XML_TAGS`
tags, :data:`MAX_XML_IGNORED` ignored elements or :data:`MAX_TAG_ATTRS` attributes in one tag are refused
with :class:`~ncclctl.errors.InputError` (exit 3) before they can cost time or memory. Each diagnostic rule
is listed at most :data:`MAX_DIAGS_PER_RULE` times. Positions are found through a sparse line index, so
memory stays proportional to the input and time linear in it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Literal

from ncclctl.errors import InputError
from ncclctl.findings import Severity
from ncclctl.nccl.params import c_int
from ncclctl.nccl.version import DEFAULT, Version, parse
from ncclctl.record import record

Kind = Literal["topology", "graph"]

MAX_ATTR_COUNT = 16
_BOM = b"\xef\xbb\xbf"

# Resource limits for untrusted input (far above anything NCCL can use: a topology file holds at most 256
# nodes, a graph file at most 65536; NCCL's own path search stops at NCCL_TOPO_XML_DEPTH_MAX = 256 levels).
#: Largest file read, in bytes.
MAX_XML_BYTES = 16 << 20
#: Deepest element nesting (libxml2's default limit too).
MAX_XML_DEPTH = 256
#: Most tags (start, self-closing, closing, comments) read in one file.
MAX_XML_TAGS = 200_000
#: Most ignored elements recorded (each becomes a finding).
MAX_XML_IGNORED = 10_000
#: Most attributes in one start tag (NCCL keeps 16 and drops the rest).
MAX_TAG_ATTRS = 1024
#: Diagnostics of one rule listed before the rest are summarized in one line.
MAX_DIAGS_PER_RULE = 1000
_LIMIT_FIX = ("NCCL topology and graph files are kilobytes of plain elements: check that this is the right file; "
              "docs/reliability.md lists ncclctl's input limits")
# Markup declarations: a DTD (internal subset or external) and what lives in one. Comments are skipped.
_DECL = re.compile(rb"<!(--|DOCTYPE|ENTITY|ELEMENT|ATTLIST|NOTATION)")

# Characters that end a token in xmlGetToken ('=' is handled before the terminator test).
_TOKEN_STOP = re.compile(rb"[ >/\n\r=]")
_SKIP_WS = re.compile(rb"[ \n\r]*")
_ENTITY = re.compile(rb"&(?:#[0-9]+|#x[0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")

TOPO_ELEMENTS = frozenset({"system", "cpu", "pci", "gpu", "nvlink", "c2c", "nic", "net", "pcilink"})
GRAPH_ELEMENTS = frozenset({"graphs", "graph", "channel", "net", "gpu"})


# --------------------------------------------------------------------------------------------------
# Values


@dataclass(eq=False)
class XmlNode:
    """One element NCCL keeps in its node array (ignored elements are not nodes)."""

    name: str
    attrs: tuple[tuple[str, str], ...]
    children: list["XmlNode"]
    line: int
    column: int
    closed_by_selfclose: bool
    parent: "XmlNode | None" = field(default=None, repr=False)
    offset: int = 0
    #: Attributes from the 17th on, which NCCL drops (``Ignoring extra attributes``).
    dropped_attrs: tuple[tuple[str, str], ...] = ()

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value NCCL's ``xmlGetAttr`` returns: the first attribute with that name."""
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    def has(self, key: str) -> bool:
        return any(k == key for k, _ in self.attrs)

    def keys(self) -> list[str]:
        return [k for k, _ in self.attrs]

    def iter(self) -> Iterator["XmlNode"]:
        """Pre-order walk of this node and its descendants (iterative)."""
        stack: list[XmlNode] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def ancestors(self) -> Iterator["XmlNode"]:
        p = self.parent
        while p is not None:
            yield p
            p = p.parent

    def start_tag(self, limit: int = 160) -> str:
        text = "<" + self.name + "".join(f' {k}="{v}"' for k, v in self.attrs) + ">"
        return text if len(text) <= limit else text[: limit - 4] + " ...>"


@record
class XmlDiagnostic:
    """Something the reader found: ``fatal`` ones are where NCCL stops with ``ncclInternalError``."""

    rule: str
    severity: Severity
    message: str
    line: int
    column: int
    fatal: bool = False
    #: NCCL's own log line for it, when there is one.
    nccl_message: str | None = None


@record
class IgnoredElement:
    """An element NCCL skips together with its subtree (INFO ``Ignoring element``, or silently)."""

    name: str
    line: int
    column: int
    parent: XmlNode | None
    #: ``wrong-root`` | ``stray-close`` | ``misplaced`` | ``unknown`` | ``version`` | ``leaf-child``
    reason: str
    attrs: tuple[tuple[str, str], ...] = ()

    @property
    def parent_name(self) -> str | None:
        return None if self.parent is None else self.parent.name


@dataclass
class ParseResult:
    """What NCCL's XML reader makes of a file: the kept tree, the fatal error if it stops, and every diagnostic."""
    kind: Kind
    version: Version
    roots: list[XmlNode]
    fatal: XmlDiagnostic | None
    diagnostics: list[XmlDiagnostic]
    ignored: list[IgnoredElement]
    #: Node slots used (NCCL's ``xml->maxIndex``).
    node_count: int
    max_nodes: int

    @property
    def ok(self) -> bool:
        return self.fatal is None

    @property
    def root(self) -> XmlNode | None:
        """The node NCCL uses: the first kept top-level element (``xml->nodes[0]``)."""
        return self.roots[0] if self.roots else None

    def all_diagnostics(self) -> list[XmlDiagnostic]:
        return self.diagnostics + ([self.fatal] if self.fatal else [])


# --------------------------------------------------------------------------------------------------
# Version-dependent constants


def max_str_len(version: Version) -> int:
    return 256 if version < Version(2, 8, 0) else 255


def max_subs(version: Version) -> int:
    if version >= Version(2, 29, 7):
        return 640
    if version >= Version(2, 21, 0):
        return 128
    return 32


def max_nodes(kind: Kind, version: Version) -> int:
    if version < Version(2, 21, 0):
        return 1024
    if kind == "topology":
        return 256
    return 65536 if version >= Version(2, 29, 7) else 4096


def _handlers(kind: Kind, version: Version) -> dict[str | None, frozenset[str]]:
    """Parent name (None: top level) -> child element names NCCL has a handler for."""
    if kind == "graph":
        return {
            None: frozenset({"graphs"}),
            "graphs": frozenset({"graph"}),
            "graph": frozenset({"channel"}),
            "channel": frozenset({"net", "gpu"}),
            "net": frozenset(),
            "gpu": frozenset(),
        }
    pci = {"pci", "gpu", "nic"}
    if version >= Version(2, 22, 0):
        pci.add("pcilink")
    gpu = {"nvlink"}
    if version >= Version(2, 19, 0):
        gpu.add("c2c")
    return {
        None: frozenset({"system"}),
        "system": frozenset({"cpu"}),
        "cpu": frozenset({"pci", "nic"}),
        "pci": frozenset(pci),
        "gpu": frozenset(gpu),
        "nic": frozenset({"net"}),
        "net": frozenset(),
        "nvlink": frozenset(),
        "c2c": frozenset(),
        "pcilink": frozenset(),
    }


# --------------------------------------------------------------------------------------------------
# The reader


def show_char(b: int | None) -> str:
    """How a byte appears in a message: ``'\\t'``, ``'x'``, ``'\\xef'``, ``EOF``."""
    if b is None:
        return "EOF"
    named = {9: "\\t", 10: "\\n", 13: "\\r", 0: "\\0"}
    if b in named:
        return f"'{named[b]}'"
    if 32 <= b < 127:
        return f"'{chr(b)}'"
    return f"'\\x{b:02x}'"


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def show_text(s: str, limit: int = 60) -> str:
    """A name or value, made safe and short for a one-line message."""
    out = s.encode("unicode_escape", errors="backslashreplace").decode("ascii")
    return out if len(out) <= limit else out[: limit - 3] + "..."


def _cstr(raw: bytes) -> bytes:
    """What C string functions see: up to the first NUL."""
    i = raw.find(b"\0")
    return raw if i < 0 else raw[:i]


class _Fatal(Exception):
    def __init__(self, rule: str, nccl: str, explain: str, pos: int) -> None:
        super().__init__(nccl)
        self.rule, self.nccl, self.explain, self.pos = rule, nccl, explain, pos


class _Refused(Exception):
    """Input ncclctl refuses to read (unsafe or over a resource limit): becomes an InputError."""

    def __init__(self, message: str, pos: int, fix: str = _LIMIT_FIX) -> None:
        super().__init__(message)
        self.message, self.pos, self.fix = message, pos, fix


_LINE_BLOCK = 1 << 16


def _clean_split(data: bytes, p: int) -> bool:
    """Whether UTF-8 decoding (errors="replace") of ``data`` can be split before byte ``p`` without changing
    the result: ``p`` is not inside a multi-byte sequence (an ASCII or lead byte, or a continuation byte after
    three continuation bytes, which no sequence can reach)."""
    b = data[p]
    if b < 0x80 or b >= 0xC0:
        return True
    return p >= 3 and all(0x80 <= x < 0xC0 for x in data[p - 3:p])


class _LineIndex:
    """Line and column of a byte offset in O(distance to a checkpoint), with O(size / 64 KiB) memory.

    Checkpoints every 64 KiB (at clean UTF-8 split points) and a cache of the last position asked (the reader
    mostly moves forward) replace a list of every line start, which for a file of newlines costs ~36 bytes
    per byte. The result is exactly ``(LF count before pos + 1, len(line_start..pos decoded) + 1)``."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.n = len(data)
        self.cp_pos = [0]
        self.cp: list[tuple[int, int, int]] = [(0, 1, 1)]
        self.last = (0, 1, 1)

    def _advance(self, base: tuple[int, int, int], pos: int) -> tuple[int, int]:
        p, line, col = base
        data = self.data
        nl = data.count(b"\n", p, pos)
        if nl:
            start = data.rfind(b"\n", p, pos) + 1
            return line + nl, len(data[start:pos].decode("utf-8", errors="replace")) + 1
        return line, col + len(data[p:pos].decode("utf-8", errors="replace"))

    def _extend(self, pos: int) -> None:
        data, n = self.data, self.n
        while self.cp_pos[-1] + _LINE_BLOCK <= pos:
            p = self.cp_pos[-1] + _LINE_BLOCK
            while p < n and not _clean_split(data, p):
                p += 1
            if p >= n or p > pos:
                return
            line, col = self._advance(self.cp[-1], p)
            self.cp_pos.append(p)
            self.cp.append((p, line, col))

    def linecol(self, pos: int) -> tuple[int, int]:
        pos = max(0, min(pos, self.n))
        self._extend(pos)
        base = self.cp[bisect.bisect_right(self.cp_pos, pos) - 1]
        if base[0] <= self.last[0] <= pos:
            base = self.last
        line, col = self._advance(base, pos)
        if pos == self.n or _clean_split(self.data, pos):
            self.last = (pos, line, col)
        return line, col


@dataclass
class _Raw:
    """One xmlGetNode result."""

    type: str  # "open" | "single" | "close" | "none"
    name: str = ""
    pos: int = 0
    attrs: list[tuple[str, str]] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Frame:
    """An open element while reading: the kept node (if any) and which children it takes."""
    head: XmlNode | None  # kept node (None at top level or for an ignored element)
    head_name: str | None  # None only at top level
    head_pos: int
    allowed: frozenset[str]  # child names with a handler (empty: children ignored silently)
    ignored: bool
    subs_overflow_reported: bool = False
    stray: bool = False  # opened by a closing tag at top level


class _Reader:
    def __init__(self, data: bytes, kind: Kind, version: Version) -> None:
        self.data = data
        self.n = len(data)
        self.pos = 0
        self.kind: Kind = kind
        self.version = version
        self.max_str = max_str_len(version)
        self.diags: list[XmlDiagnostic] = []
        self.tag_pos = 0  # the '<' of the tag being read
        self.tags = 0  # tags read so far (MAX_XML_TAGS)
        self._index = _LineIndex(data)
        self._per_rule: dict[str, int] = {}

    # -- positions ---------------------------------------------------------------------------------
    def linecol(self, pos: int) -> tuple[int, int]:
        return self._index.linecol(pos)

    def diag(self, rule: str, severity: Severity, message: str, pos: int, nccl: str | None = None) -> None:
        seen = self._per_rule.get(rule, 0)
        self._per_rule[rule] = seen + 1
        if seen > MAX_DIAGS_PER_RULE:
            return
        line, col = self.linecol(pos)
        if seen == MAX_DIAGS_PER_RULE:
            message = (f"{rule} found more than {MAX_DIAGS_PER_RULE} times: only the first {MAX_DIAGS_PER_RULE} "
                       "are listed; the rest are not shown")
            nccl = None
        self.diags.append(XmlDiagnostic(rule, severity, message, line, col, False, nccl))

    # -- xmlGetToken / xmlGetValue -------------------------------------------------------------------
    def token(self, allow_value: bool) -> tuple[bytes, bytes | None, int, int, int]:
        """Returns (name, value or None, last byte, name position, value position)."""
        data, start, maxlen = self.data, self.pos, self.max_str
        m = _TOKEN_STOP.search(data, start)
        stop = m.start() if m else self.n
        run = stop - start
        if run >= maxlen:
            cut = _text(_cstr(data[start:start + maxlen - 1]))
            raise _Fatal("NTX016", f"Error : name {show_text(cut)} too long (max {maxlen})",
                         f"names are limited to {maxlen - 2} characters", start)
        if stop >= self.n:
            raise _Fatal("NTX007", "XML Parse : Unexpected EOF",
                         "the tag opened here is not finished when the file ends", self.tag_pos)
        c = data[stop]
        if c == 0x3D:  # '='
            name = data[start:stop]
            if not allow_value:
                shown = show_text(_text(_cstr(name)))
                raise _Fatal("NTX013", f"XML Parse : Unexpected value with name {shown}",
                             "an element name runs into '=' (a TAB or other non-space separator before "
                             "the attributes, or '=' in the first word of a comment)", stop)
            self.pos = stop + 1
            value_pos = self.pos
            value, last = self.value()
            return name, value, last, start, value_pos
        if run == maxlen - 1:
            cut = _text(_cstr(data[start:stop]))
            raise _Fatal("NTX016", f"Error : name {show_text(cut)} too long (max {maxlen})",
                         f"names are limited to {maxlen - 2} characters", start)
        self.pos = stop + 1
        return data[start:stop], None, c, start, start

    def value(self) -> tuple[bytes, int]:
        data = self.data
        if self.pos >= self.n:
            raise _Fatal("NTX007", "XML Parse : Unexpected EOF",
                         "the tag opened here is not finished when the file ends", self.tag_pos)
        q = data[self.pos]
        open_pos = self.pos
        if q not in (0x22, 0x27):
            raise _Fatal("NTX006", "XML Parse : Expected (double) quote.",
                         f"attribute values must be quoted, got {show_char(q)}", open_pos)
        new_quotes = self.version >= Version(2, 27, 0)
        close_q = q if new_quotes else 0x22
        if q == 0x27:
            if new_quotes:
                self.diag("NTV010", Severity.INFO,
                          "single-quoted value: accepted from NCCL 2.27 only (older versions read it up to "
                          "the next double quote)", open_pos)
            else:
                self.diag("NTV005", Severity.ERROR,
                          "single-quoted value: NCCL before 2.27 ends a value only at the next '\"', so this "
                          "value swallows the rest of the tag", open_pos)
        start = open_pos + 1
        idx = data.find(bytes([close_q]), start)
        maxlen = self.max_str
        if idx < 0:
            if new_quotes and self.n - start >= maxlen:
                raise _Fatal("NTX007", f"Error : value {show_text(_text(data[start:start + 40]))} too long "
                             f"(max {maxlen})",
                             f"the value opened here is never closed (missing or mismatched quote), so NCCL "
                             f"reads past its {maxlen - 2}-character limit", open_pos)
            quote = "'" if close_q == 0x27 else '"'
            raise _Fatal("NTX007", "XML Parse : Unexpected EOF",
                         f"the value opened here is never closed with {quote} (mismatched or missing quote)",
                         open_pos)
        length = idx - start
        raw = data[start:idx]
        if length >= maxlen - 1:
            shown = show_text(_text(raw[:40]))
            if new_quotes and b"\n" in raw:
                raise _Fatal("NTX007", f"Error : value {shown} too long (max {maxlen})",
                             f"the value opened here runs over {length} characters across lines: a missing or "
                             "mismatched quote", open_pos)
            if new_quotes:
                raise _Fatal("NTX015", f"Error : value {shown} too long (max {maxlen})",
                             f"the value has {length} characters; NCCL accepts at most {maxlen - 2}", open_pos)
            self.diag("NTX015", Severity.ERROR,
                      f"value of {length} characters: NCCL < 2.27 does not check value lengths (a value over "
                      f"{maxlen} characters overflows its buffer: undefined behaviour) and NCCL 2.27+ rejects "
                      f"values over {maxlen - 2} characters", open_pos)
        if b"\0" in raw:
            self.diag("NTX025", Severity.WARNING,
                      "NUL byte in a value: NCCL's C string ends there", open_pos)
        if b"&" in raw and _ENTITY.search(raw):
            self.diag("NTX024", Severity.WARNING,
                      f"value {show_text(_text(raw))} contains an entity reference: NCCL reads it verbatim "
                      "(no entity decoding)", open_pos)
        if idx + 1 >= self.n:
            raise _Fatal("NTX007", "XML Parse : Unexpected EOF", "the file ends right after a value", self.n)
        self.pos = idx + 2
        return raw, data[idx + 1]

    # -- xmlSkipComment ------------------------------------------------------------------------------
    def skip_comment(self, start_chars: bytes, nxt: int, lt_pos: int) -> None:
        window = (b"..." + start_chars + bytes([nxt]))[-3:]
        if window == b"-->":
            return
        data, pos = self.data, self.pos
        if window[1:] + data[pos:pos + 1] == b"-->":
            self.pos = pos + 1
            return
        if window[2:] + data[pos:pos + 2] == b"-->":
            self.pos = pos + 2
            return
        idx = data.find(b"-->", pos)
        if idx < 0:
            raise _Fatal("NTX012", "XML Parse error : unterminated comment",
                         "the comment opened here never ends with '-->'", lt_pos)
        self.pos = idx + 3

    # -- xmlGetNode ----------------------------------------------------------------------------------
    def get_node(self) -> _Raw:
        data = self.data
        while True:
            ws = _SKIP_WS.match(data, self.pos)
            assert ws is not None  # '[ \n\r]*' matches the empty string
            self.pos = ws.end()
            if self.pos >= self.n:
                return _Raw("none", pos=self.n)
            c = data[self.pos]
            if c != 0x3C:  # '<'
                nccl = f"XML Parse error : expecting '<', got {show_char(c)}"
                if self.pos == 0 and data.startswith(_BOM):
                    raise _Fatal("NTX004", nccl, "the file starts with a UTF-8 byte-order mark", 0)
                if c == 0x09:
                    raise _Fatal("NTX001", nccl, "NCCL skips only space, LF and CR between elements",
                                 self.pos)
                raise _Fatal("NTX005", nccl, "text outside tags (text content or text after the root)",
                             self.pos)
            lt_pos = self.tag_pos = self.pos
            self.tags += 1
            if self.tags > MAX_XML_TAGS:
                raise _Refused(f"more than {MAX_XML_TAGS:,} tags: over ncclctl's limit for NCCL XML", lt_pos)
            self.pos += 1
            raw_name, _, last, _, _ = self.token(False)
            cname = _cstr(raw_name)
            if cname.startswith(b"!--"):
                self.skip_comment(cname[3:], last, lt_pos)
                continue
            if b"\0" in raw_name:
                self.diag("NTX025", Severity.WARNING, "NUL byte in an element name: NCCL's C string ends there",
                          lt_pos)
            if cname == b"" and last == 0x2F:  # "</"
                raw_close, _, last2, _, _ = self.token(False)
                close = _text(_cstr(raw_close))
                if last2 != 0x3E:
                    raise _Fatal("NTX009",
                                 f"XML Parse error : unexpected trailing {show_char(last2)} in closing "
                                 f"tag {show_text(close)}",
                                 "closing tags must be exactly </name>", self.pos - 1)
                return _Raw("close", close, lt_pos)
            node = _Raw("open", _text(cname), lt_pos)
            empty_reported = False
            while last == 0x20:  # ' '
                key_pos = self.pos
                raw_key, raw_value, last, _, _ = self.token(True)
                key = _text(_cstr(raw_key))
                if b"\0" in raw_key:
                    self.diag("NTX025", Severity.WARNING, "NUL byte in an attribute name", key_pos)
                value = "" if raw_value is None else _text(_cstr(raw_value))
                if key == "":
                    if not empty_reported:
                        empty_reported = True
                        self.diag("NTX021", Severity.WARNING,
                                  f"extra space in <{show_text(node.name)}> start tag: NCCL adds an attribute "
                                  "with an empty name for each extra space (they count toward the 16-attribute "
                                  "limit)", key_pos if data[key_pos] == 0x20 else key_pos - 1)
                elif raw_value is None and key != "":
                    self.diag("NTX022", Severity.WARNING,
                              f"attribute {show_text(key)} on <{show_text(node.name)}> has no '=': NCCL stores it "
                              "with an empty value", key_pos)
                if len(node.attrs) + len(node.dropped) == MAX_TAG_ATTRS:
                    raise _Refused(f"<{show_text(node.name)}> has more than {MAX_TAG_ATTRS} attributes (or extra "
                                   f"spaces): over ncclctl's limit (NCCL keeps {MAX_ATTR_COUNT})", key_pos)
                if len(node.attrs) == MAX_ATTR_COUNT:
                    if not node.dropped:
                        self.diag("NTX017", Severity.ERROR,
                                  f"<{show_text(node.name)}> has more than {MAX_ATTR_COUNT} attributes: NCCL "
                                  f"drops {show_text(key)} and every later one (INFO 'XML Parse : Ignoring extra "
                                  f"attributes (max {MAX_ATTR_COUNT})')", key_pos,
                                  f"XML Parse : Ignoring extra attributes (max {MAX_ATTR_COUNT})")
                    node.dropped.append((key, value))
                else:
                    if key != "" and any(k == key for k, _ in node.attrs):
                        self.diag("NTX023", Severity.WARNING,
                                  f"attribute {show_text(key)} appears twice on <{show_text(node.name)}>: NCCL "
                                  "uses the first value", key_pos)
                    node.attrs.append((key, value))
            if last == 0x2F:  # '/'
                node.type = "single"
                _, _, last, _, _ = self.token(False)
                slash = True
            else:
                slash = False
            if last != 0x3E:  # '>'
                bad = self.pos - 1
                nccl = f"XML Parse : expected >, got {show_char(last)}"
                if node.name.startswith("?"):
                    raise _Fatal("NTX003", nccl, "XML declarations (<?xml ...?>) are not supported", lt_pos)
                if last in (0x0A, 0x0D):
                    raise _Fatal("NTX002", nccl, "a start tag must be on one line", bad)
                if slash:
                    raise _Fatal("NTX008", nccl, "'/' must be directly followed by '>'", bad)
                raise _Fatal("NTX014", nccl,
                             "attributes must be separated by exactly one space and the tag closed with '>'",
                             bad)
            return node


def _root_handler(kind: Kind, node: XmlNode, stray: bool) -> None:
    """``ncclTopoXmlLoadSystem`` / ``ncclTopoXmlGraphLoadGraphs`` run as soon as the root is read, before
    its children: a missing or wrong ``version`` stops the parse there."""
    rule = "NTS003" if kind == "topology" else "NTG003"
    what = "Topology" if kind == "topology" else "Graph"
    value = node.get("version")
    if value is None:
        nccl = f"Attribute version of node {node.name} not found"
        if stray:
            raise _Fatal("NTX020", nccl, f"</{node.name}> at top level closes nothing; NCCL reads it as a new "
                         f"<{node.name}> element without attributes", node.offset)
        raise _Fatal(rule, nccl, f"<{node.name}> needs version=\"1\"", node.offset)
    n = c_int(value)
    if n != 1:
        raise _Fatal(rule, f"XML {what} has wrong version {n}, 1 needed",
                     f"version={show_text(value)!r} is read as {n}; NCCL fails with ncclInvalidUsage", node.offset)


def _fatal_diag(reader: _Reader, f: _Fatal) -> XmlDiagnostic:
    line, col = reader.linecol(f.pos)
    return XmlDiagnostic(f.rule, Severity.ERROR, f"NCCL: {f.nccl} ({f.explain})", line, col, True, f.nccl)


def check_untrusted(data: bytes, *, path: str | None = None) -> None:
    """Refuse what no NCCL file contains and what could cost unbounded resources in any XML reader: a file
    over :data:`MAX_XML_BYTES` or a markup declaration (``<!DOCTYPE``, ``<!ENTITY``, ``<!ELEMENT``,
    ``<!ATTLIST``, ``<!NOTATION``: a DTD is how external entities and entity-expansion bombs get in).
    Declarations inside comments are skipped; anywhere else (even inside a value) they are refused."""
    if len(data) > MAX_XML_BYTES:
        raise InputError(f"file is {len(data):,} bytes, over ncclctl's {MAX_XML_BYTES >> 20} MiB limit for NCCL XML",
                         path=path, fix=_LIMIT_FIX)
    pos = 0
    while True:
        m = _DECL.search(data, pos)
        if m is None:
            return
        if m.group(1) == b"--":
            end = data.find(b"-->", m.end())
            if end < 0:
                return  # an unterminated comment: the reader reports it (NTX012)
            pos = end + 3
            continue
        line, col = _LineIndex(data).linecol(m.start())
        what = "a DTD (<!DOCTYPE ...>)" if m.group(1) == b"DOCTYPE" else f"a DTD declaration (<!{m.group(1).decode()} ...>)"
        raise InputError(f"{what} is not allowed: NCCL's reader cannot read one and ncclctl never loads DTDs or "
                         "resolves entities (external entities, entity expansion)", path=path, line=line,
                         column=col, fix="remove the declaration; NCCL topology and graph files have no DTD")


def parse_nccl_xml(data: bytes, *, kind: Kind = "topology",
                   nccl_version: object = DEFAULT, path: str | None = None) -> ParseResult:
    """Read ``data`` as NCCL ``nccl_version`` reads an ``NCCL_TOPO_FILE`` (kind ``topology``) or an
    ``NCCL_GRAPH_FILE`` (kind ``graph``).

    Unsafe input or input over a resource limit (see :func:`check_untrusted` and the ``MAX_*`` constants)
    raises :class:`~ncclctl.errors.InputError` naming ``path`` and the line."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise InputError(f"NCCL XML must be read as bytes, got {type(data).__name__}", path=path)
    if kind not in ("topology", "graph"):
        raise InputError(f"unknown NCCL XML kind {kind!r}", fix="use 'topology' or 'graph'")
    version = parse(nccl_version)
    check_untrusted(data, path=path)
    reader = _Reader(data, kind, version)
    try:
        return _parse(reader, data, kind, version)
    except _Refused as r:
        line, col = reader.linecol(r.pos)
        raise InputError(r.message, path=path, line=line, column=col, fix=r.fix) from None


def _parse(reader: _Reader, data: bytes, kind: Kind, version: Version) -> ParseResult:
    handlers = _handlers(kind, version)
    vocabulary = TOPO_ELEMENTS if kind == "topology" else GRAPH_ELEMENTS
    subs_cap = max_subs(version)
    subs_checked = version >= Version(2, 21, 0)
    node_cap = max_nodes(kind, version)
    roots: list[XmlNode] = []
    ignored: list[IgnoredElement] = []
    count = 0
    last_pos, last_name = 0, ""
    fatal: XmlDiagnostic | None = None
    stack = [_Frame(None, None, 0, handlers[None], False)]
    try:
        while stack:
            frame = stack[-1]
            if count == node_cap:
                ws = _SKIP_WS.match(data, reader.pos)
                assert ws is not None  # '[ \n\r]*' matches the empty string
                nxt = ws.end()
                raise _Fatal("NTX019", f"Error : XML parser is limited to {node_cap} nodes",
                             f"element number {node_cap} is the <{show_text(last_name)}> at line "
                             f"{reader.linecol(last_pos)[0]}; NCCL tests its {node_cap} node slots before "
                             f"reading each element, closing tag or the end of file, so at most {node_cap - 1} "
                             "elements fit", nxt)
            raw = reader.get_node()
            if raw.type == "none":
                if frame.head_name is not None:
                    # An ignored element shares its node slot with what is read under it, so NCCL prints
                    # an empty name for it.
                    nccl = "XML Parse : unterminated " + ("" if frame.ignored else show_text(frame.head_name))
                    decl = next((f for f in stack if f.head_name and f.head_name.startswith("?")), None)
                    stray_frame = next((f for f in stack if f.stray), None)
                    if stray_frame is not None and decl is None:
                        assert stray_frame.head_name is not None  # only the top-level frame has none; it is not stray
                        raise _Fatal("NTX020", nccl, f"</{show_text(stray_frame.head_name)}> at top level closes "
                                     "nothing; NCCL reads it as an element that is never closed",
                                     stray_frame.head_pos)
                    if decl is not None:
                        raise _Fatal("NTX003", nccl, "XML declarations (<?xml ...?>) are not supported; NCCL "
                                     "reads this one as an element that is never closed", decl.head_pos)
                    what = "ignored element" if frame.ignored else "element"
                    raise _Fatal("NTX011", nccl, f"the {what} <{show_text(frame.head_name)}> opened here is "
                                 "never closed", frame.head_pos)
                break
            if frame.head_name is not None and raw.type == "close":
                # Inside an ignored element NCCL reads into the ignored element's own slot, so the name
                # comparison is always equal: any closing tag closes it.
                if raw.name != frame.head_name and not frame.ignored:
                    raise _Fatal("NTX010", f"XML Mismatch : {show_text(frame.head_name)} / {show_text(raw.name)}",
                                 f"</{show_text(raw.name)}> closes <{show_text(frame.head_name)}> opened at line "
                                 f"{reader.linecol(frame.head_pos)[0]}", raw.pos)
                stack.pop()
                if frame.stray:
                    reader.diag("NTX020", Severity.ERROR,
                                f"</{show_text(frame.head_name)}> at top level closes nothing: NCCL reads it as an "
                                f"ignored element that swallows everything up to the next closing tag (line "
                                f"{reader.linecol(raw.pos)[0]})", frame.head_pos)
                continue
            line, col = reader.linecol(raw.pos)
            stray = raw.type == "close"  # a closing tag at top level is read as an element of that name
            if raw.name in frame.allowed:
                parent = frame.head
                if parent is not None:
                    if len(parent.children) == subs_cap and not frame.subs_overflow_reported:
                        if subs_checked:
                            raise _Fatal("NTX018", f"Error : XML parser is limited to {subs_cap} subnodes",
                                         f"<{parent.name}> at line {parent.line} has more than {subs_cap} "
                                         "child elements", raw.pos)
                        frame.subs_overflow_reported = True
                        reader.diag("NTX018", Severity.ERROR,
                                    f"<{parent.name}> at line {parent.line} has more than {subs_cap} child "
                                    f"elements: NCCL < 2.21 does not check this (buffer overflow, undefined "
                                    "behaviour)", raw.pos)
                node = XmlNode(raw.name, tuple(raw.attrs), [], line, col, raw.type == "single", parent,
                               raw.pos, tuple(raw.dropped))
                if parent is None:
                    roots.append(node)
                else:
                    parent.children.append(node)
                count += 1
                last_pos, last_name = raw.pos, node.name
                if parent is None:
                    _root_handler(kind, node, stray)
                if raw.type != "single":
                    if len(stack) > MAX_XML_DEPTH:
                        raise _Refused(f"elements nested more than {MAX_XML_DEPTH} levels deep: over ncclctl's "
                                       "limit for NCCL XML", raw.pos)
                    stack.append(_Frame(node, node.name, raw.pos, handlers.get(node.name, frozenset()), False))
            else:
                if frame.ignored:
                    pass  # nested inside an ignored subtree: nothing to report
                else:
                    if stray:
                        reason = "stray-close"
                    elif frame.head_name is None:
                        reason = "wrong-root"
                    elif not frame.allowed:
                        reason = "leaf-child"
                    elif raw.name not in vocabulary:
                        reason = "unknown"
                    elif kind == "topology" and (raw.name, frame.head_name) in (("c2c", "gpu"), ("pcilink", "pci")):
                        reason = "version"
                    else:
                        reason = "misplaced"
                    if len(ignored) == MAX_XML_IGNORED:
                        raise _Refused(f"more than {MAX_XML_IGNORED:,} elements NCCL would ignore: over ncclctl's "
                                       "limit for NCCL XML", raw.pos)
                    ignored.append(IgnoredElement(raw.name, line, col, frame.head, reason, tuple(raw.attrs)))
                if raw.type != "single":
                    if len(stack) > MAX_XML_DEPTH:
                        raise _Refused(f"elements nested more than {MAX_XML_DEPTH} levels deep: over ncclctl's "
                                       "limit for NCCL XML", raw.pos)
                    stack.append(_Frame(None, raw.name, raw.pos, frozenset(), True, stray=stray))
    except _Fatal as f:
        fatal = _fatal_diag(reader, f)
    return ParseResult(kind, version, roots, fatal, reader.diags, ignored, count, node_cap)


def read_nccl_xml(path: str | Path, *, kind: Kind = "topology",
                  nccl_version: object = DEFAULT) -> ParseResult:
    """:func:`parse_nccl_xml` on a file; InputError if it cannot be read."""
    from ncclctl.inputs import read_bytes

    data = read_bytes(str(path), "xml")
    assert data is not None
    return parse_nccl_xml(data, kind=kind, nccl_version=nccl_version, path=str(path))


def sniff_kind(data: bytes) -> Kind | None:
    """``topology`` if the first element is ``<system>``, ``graph`` if it is ``<graphs>`` (or a ``<graph>`` written
    without its ``<graphs>`` root: a graph file all the same), else None."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise InputError(f"NCCL XML must be read as bytes, got {type(data).__name__}")
    reader = _Reader(data, "topology", DEFAULT)
    try:
        raw = reader.get_node()
    except (_Fatal, _Refused):
        return None
    if raw.type in ("open", "single"):
        if raw.name == "system":
            return "topology"
        if raw.name in ("graphs", "graph"):
            return "graph"
    return None
