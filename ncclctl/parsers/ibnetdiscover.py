"""``ibnetdiscover`` output (infiniband-diags): the topology-file form and the ``-p`` ports form.

Topology file (host-facts.md §4.5)::

    vendid=0x2c9
    devid=0xd2f2
    sysimgguid=0x9c0591030012ab00
    switchguid=0x9c0591030012ab00(9c0591030012ab00)
    Switch  129 "S-9c0591030012ab00"   # "MF0;leaf01:MQM9700/U1" enhanced port 0 lid 1 lmc 0
    [1]     "H-b83fd20300a1b2c3"[1](b83fd20300a1b2c3)     # "node005 mlx5_2" lid 22 4xNDR

    caguid=0xb83fd20300a1b2c3
    Ca      1 "H-b83fd20300a1b2c3"     # "node005 mlx5_2"
    [1](b83fd20300a1b2c3)   "S-9c0591030012ab00"[1]   # lid 22 lmc 0 "MF0;leaf01:MQM9700/U1" lid 1 4xNDR

Fields are separated by TABs in the real tool; people re-indent with spaces, so both are accepted. A link is
listed from both ends; :func:`parse_ibnetdiscover` keeps what each node block says, and ``links()`` of the result
deduplicates them.

The parser is single-pass and linear in the input size (fabric files reach 100 MB): one anchored regex per link
line, GUID and description strings interned through a dict (a leaf GUID is named by every port that faces it),
and the frozen dataclasses filled without their generated ``__init__`` (:func:`_mk_port`, 5x cheaper, same
instance layout). ``bench/parsers.py`` measures it against an ``awk`` pass over the same file.

The same :class:`Fabric` model is produced by :mod:`ncclctl.parsers.iblinkinfo`, which adds what only
``iblinkinfo`` prints: port state, physical state, unconnected ports and the "Could be" capability hints.
"""

from __future__ import annotations

import gc
import re
from dataclasses import field, fields

from ncclctl.errors import ParseError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time
    from collections.abc import Iterable, Iterator
from ncclctl.parsers._common import as_text, paste_text
from ncclctl.record import record

_FIX = "pass the unmodified output of 'ibnetdiscover' (or 'ibnetdiscover -p')"

_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]{1,16})"\s*(?:#\s*"(.*?)"(.*))?$')
#: A switch's own LID from its node line's comment; LIDs are 16-bit, so a longer number is no LID (and int() of
#: thousands of digits would raise).
_SW_EXTRA = re.compile(r"(?:(base|enhanced)\s+)?port\s+0\s+lid\s+(\d{1,9})\s+lmc\s+(\d{1,9})(?!\d)")
#: NodeInfo:NumPorts is an 8-bit field: no real node has more ports. Checked for HCAs (whose ports become the tuple
#: 1..N: a huge count would take gigabytes); a switch's count is only printed.
MAX_PORTS = 255
_LINK_SW = re.compile(
    r'^\[(\d+)\](?:\[ext (\d+)\])?\s+"([SHR])-([0-9a-fA-F]{1,16})"\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]{1,16})\))?'
    r'\s*(?:#\s*"(.*?)"\s*lid\s+(\d+)\s+(\d+x)(\w+)(.*))?$')
# A CA's link to a non-switch (back to back, or to a router) names the remote port GUID after the remote port.
_LINK_CA = re.compile(
    r'^\[(\d+)\](?:\(([0-9a-fA-F]{1,16})\))?\s+"([SHR])-([0-9a-fA-F]{1,16})"\[(\d+)\](?:\[ext \d+\])?'
    r'(?:\s*\(([0-9a-fA-F]{1,16})\))?'
    r'\s*(?:#\s*lid\s+(\d+)\s+lmc\s+(\d+)\s+"(.*?)"\s*lid\s+(\d+)\s+(\d+x)(\w+)(.*))?$')
# -p: "%2s %5d %2d 0x%016x %s %s" then " - %2s %5d %2d 0x%016x ( '%s' - '%s' )" for a connected port, or
# "%36s'%s'" (the local description) for a port without a remote (infiniband-diags ibnetdiscover.c,
# dump_ports_report). Width/speed print as "??"/"???" when PortInfo holds no valid value (down ports).
_PORTS = re.compile(
    r"^(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+(\d+x|\?\?)\s+(\w+|\?\?\?)"
    r"(?:\s+-\s+(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+\(\s*'(.*?)'\s+-\s+'(.*?)'\s*\)"
    r"|\s+'(.*)')?\s*$")

#: The tools' lines hold two node descriptions (64 bytes each) at most: a few hundred characters. Longer lines are
#: refused before the general patterns, whose lazy groups would take time quadratic in the length of such a line.
MAX_LINE = 1024

_KIND = {"S": "switch", "H": "ca", "R": "router", "Switch": "switch", "Ca": "ca", "Rt": "router",
         "SW": "switch", "CA": "ca", "RT": "router"}
#: Per-lane Gb/s of the IB speed names (SDR..XDR); FDR10 and FDR carry 64b/66b encoding.
LANE_GBPS = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0, "EDR": 25.0, "HDR": 50.0,
             "NDR": 100.0, "XDR": 200.0}


@record
class FabricPort:
    """One port of a node and what is cabled to it.

    ``remote_guid`` is the remote node's GUID (16 lower-case hex digits), or ``""`` when the output does not
    identify it (``iblinkinfo`` without ``--line`` names remotes by LID; a remote absent from a partial scan
    cannot be resolved). ``remote_kind`` is then ``"unknown"``.
    """

    port: int
    remote_kind: str
    remote_guid: str
    remote_port: int
    remote_port_guid: str | None = None
    remote_desc: str | None = None
    remote_lid: int | None = None
    width: str | None = None  # "4x"
    speed: str | None = None  # "NDR"
    ext: int | None = None
    line: int = field(default=0, compare=False)
    #: Logical port state as iblinkinfo prints it: Down, Initialize, Armed, Active (None: not in the output).
    state: str | None = None
    #: Physical port state: LinkUp, Polling, Disabled, Sleep, PortConfigurationTraining, LinkErrorRecovery, ...
    phys_state: str | None = None
    #: The width / speed both ends support when the link runs below it (iblinkinfo's "Could be 4X").
    max_width: str | None = None
    max_speed: str | None = None

    @property
    def rate_gbps(self) -> float | None:
        if not self.width or not self.speed or self.speed not in LANE_GBPS:
            return None
        return int(self.width[:-1]) * LANE_GBPS[self.speed]


@record
class FabricNode:
    kind: str  # switch | ca | router
    guid: str  # 16 lower-case hex digits, no 0x
    nports: int
    desc: str
    lid: int | None = None
    vendid: str | None = None
    devid: str | None = None
    sysimgguid: str | None = None
    #: Ports with something cabled to them (each link of the fabric shows up from both ends).
    ports: tuple[FabricPort, ...] = ()
    line: int = field(default=0, compare=False)
    #: Ports the output lists without a remote (iblinkinfo "Down/ Polling", ibnetdiscover -p unconnected
    #: lines): remote fields are empty, ``state``/``phys_state`` say why when the tool printed them.
    unlinked: tuple[FabricPort, ...] = ()


@record
class Fabric:
    nodes: tuple[FabricNode, ...]
    #: The output form it was read from: ibnetdiscover, ibnetdiscover-p, iblinkinfo or iblinkinfo-line.
    form: str = field(default="", compare=False)
    #: What the parser could not read whole (a filtered capture): sentences for the user.
    notes: tuple[str, ...] = field(default=(), compare=False)

    def node(self, guid: str) -> FabricNode | None:
        return self._index().get(guid)

    def _index(self) -> dict[str, FabricNode]:
        cache = self.__dict__.get("_idx")
        if cache is None:
            cache = {n.guid: n for n in self.nodes}
            object.__setattr__(self, "_idx", cache)
        return cache

    def links(self) -> list[tuple[str, int, str, int, FabricPort]]:
        """Each link once: (guid_a, port_a, guid_b, port_b, the FabricPort seen from a), a <= b. A link whose far
        end the output does not identify (``remote_guid == ""``, iblinkinfo without --line) is listed as seen from
        its known end."""
        seen: set[tuple[str, int, str, int]] = set()
        out = []
        for n in self.nodes:
            for p in n.ports:
                a, b = (n.guid, p.port), (p.remote_guid, p.remote_port)
                key = (a + b) if a <= b else (b + a)
                if key in seen:
                    continue
                seen.add(key)
                out.append((n.guid, p.port, p.remote_guid, p.remote_port, p))
        return out

    def duplicate_guids(self) -> dict[str, list[int]]:
        """GUIDs that more than one node block claims -> the line of each block (sorted by GUID)."""
        lines: dict[str, list[int]] = {}
        for n in self.nodes:
            lines.setdefault(n.guid, []).append(n.line)
        return {g: v for g, v in sorted(lines.items()) if len(v) > 1}

    def inactive_ports(self) -> list[tuple[FabricNode, FabricPort]]:
        """(node, port) for every port whose logical state is known and not Active (Down, Initialize, Armed), in
        the order of the output. Only ``iblinkinfo`` prints port states; for ibnetdiscover input this is empty.
        """
        return [(n, p) for n in self.nodes for p in sorted(n.ports + n.unlinked, key=_line_of)
                if p.state is not None and p.state != "Active"]


def _line_of(p: FabricPort) -> int:
    return p.line


# Fast construction: a frozen dataclass's __init__ goes through object.__setattr__ once per field (~1.2 us for a
# port); filling the instance dict directly is 5x cheaper. The keys are inserted in field order so that CPython
# keeps the compact key-sharing instance dict (160 bytes instead of 460 per port). test_ibnetdiscover checks
# that these build objects equal to the dataclass-built ones.
_new = object.__new__
_PORT_FIELDS = ("port", "remote_kind", "remote_guid", "remote_port", "remote_port_guid", "remote_desc", "remote_lid",
                "width", "speed", "ext", "line", "state", "phys_state", "max_width", "max_speed")
_NODE_FIELDS = ("kind", "guid", "nports", "desc", "lid", "vendid", "devid", "sysimgguid", "ports", "line", "unlinked")
if tuple(f.name for f in fields(FabricPort)) != _PORT_FIELDS or \
        tuple(f.name for f in fields(FabricNode)) != _NODE_FIELDS:  # pragma: no cover - guards edits above
    raise ImportError("ncclctl.parsers.ibnetdiscover: update _mk_port/_mk_node with the dataclass fields")


def _mk_port(port: int, remote_kind: str, remote_guid: str, remote_port: int, remote_port_guid: str | None,
             remote_desc: str | None, remote_lid: int | None, width: str | None, speed: str | None, ext: int | None,
             line: int, state: str | None = None, phys_state: str | None = None, max_width: str | None = None,
             max_speed: str | None = None) -> FabricPort:
    p = _new(FabricPort)
    d = p.__dict__
    d["port"] = port
    d["remote_kind"] = remote_kind
    d["remote_guid"] = remote_guid
    d["remote_port"] = remote_port
    d["remote_port_guid"] = remote_port_guid
    d["remote_desc"] = remote_desc
    d["remote_lid"] = remote_lid
    d["width"] = width
    d["speed"] = speed
    d["ext"] = ext
    d["line"] = line
    d["state"] = state
    d["phys_state"] = phys_state
    d["max_width"] = max_width
    d["max_speed"] = max_speed
    return p


def _mk_node(kind: str, guid: str, nports: int, desc: str, lid: int | None, vendid: str | None, devid: str | None,
             sysimgguid: str | None, ports: tuple[FabricPort, ...], line: int,
             unlinked: tuple[FabricPort, ...] = ()) -> FabricNode:
    n = _new(FabricNode)
    d = n.__dict__
    d["kind"] = kind
    d["guid"] = guid
    d["nports"] = nports
    d["desc"] = desc
    d["lid"] = lid
    d["vendid"] = vendid
    d["devid"] = devid
    d["sysimgguid"] = sysimgguid
    d["ports"] = ports
    d["line"] = line
    d["unlinked"] = unlinked
    return n


def _chunks(text: str, size: int = 1 << 20) -> Iterator[list[str]]:
    """The lines of ``text``, about ``size`` characters of them at a time: all at once, the list of lines would
    cost as much memory again as the parsed fabric; one at a time, a Python-level loop costs more than the split."""
    i, n = 0, len(text)
    while i < n:
        j = text.find("\n", i + size)
        if j < 0:
            j = n
        yield text[i:j].split("\n")
        i = j + 1


def _too_long(s: str, source: str, lineno: int) -> ParseError:
    return ParseError(f"line of {len(s)} characters (the tool's are at most a few hundred): {s[:60]!r}...",
                      path=source, line=lineno, fix="this is not the tool's output; " + _FIX)


def _guid(text: str) -> str:
    return text.lower().rjust(16, "0")


def parse_ibnetdiscover(text: str | bytes, *, source: str = "ibnetdiscover") -> Fabric:
    """The topology-file form (default output) or the ``-p`` ports form, detected from the content."""
    text = as_text(text, source, "ibnetdiscover")
    # The parse allocates a few objects per line and frees none: the cyclic GC would walk the growing heap again
    # and again (a third of the time at 4,096 nodes, superlinear beyond). Nothing here makes cycles.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        if "\r" in text:  # LF, CRLF and a lone CR end a line (as for editors and awk; not \x0b, \x1c, \u2028...)
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        text, _pasted = paste_text(text, ("ibnetdiscover",))  # a pasted capture: the prompt and command echo
        for lines in _chunks(text):
            for raw in lines:
                s = raw.strip()
                if not s or s.startswith("#"):
                    continue
                if len(s) <= MAX_LINE and _PORTS.match(s):
                    return _parse_ports(_chunks(text), source)
                return _parse_topology(_chunks(text), source)
        return Fabric(nodes=(), form="ibnetdiscover")
    except (ParseError, MemoryError):
        raise
    except Exception as exc:  # pragma: no cover - defensive: the parser's own bug must not escape as a crash
        raise ParseError(f"cannot parse: {type(exc).__name__}: {exc}", path=source, fix=_FIX) from None
    finally:
        if gc_was_enabled:
            gc.enable()


# Exact forms of the link and node patterns: the tool's own layout (infiniband-diags ibnetdiscover.c out_switch_port,
# out_ca_port, out_switch_detail, out_ca_detail: TABs where it writes them, "%016x" GUIDs in quotes, "%x" GUIDs in
# parentheses), applied to the raw line. They are tried first and are about twice as fast as stripping the line,
# replacing its TABs and matching the general pattern, which takes every other layout (re-indented, -g, -f). Every
# line they match, the general pattern matches after that clean-up with the same groups (narrower sub-patterns; no
# quote and no TAB inside the description, which the clean-up would have changed), so the result does not depend
# on which pattern matched; test_ibnetdiscover checks both paths against each other on mutated inputs. Numbers are
# bounded: a longer one goes to the general path, whose line-length limit keeps int() within its digit limit.
_FAST_SW = re.compile(r'\[([0-9]{1,9})\]\t"([SHR])-([0-9a-f]{16})"\[([0-9]{1,9})\](?:\(([0-9a-f]{1,16})\) )?\t\t# '
                      r'"([^"\t]*)" lid ([0-9]{1,9}) ([0-9]{1,2}x)(\w+)$')
_FAST_CA = re.compile(r'\[([0-9]{1,9})\]\([0-9a-f]{1,16}\) \t"([SHR])-([0-9a-f]{16})"\[([0-9]{1,9})\]\t\t# '
                      r'lid [0-9]{1,9} lmc [0-9]{1,9} "([^"\t]*)" lid ([0-9]{1,9}) ([0-9]{1,2}x)(\w+)$')
_FAST_NODE = re.compile(r'(Switch|Ca|Rt)\t([0-9]{1,9}) "[SHR]-([0-9a-f]{16})"\t\t# "([^"\t]*)"([^\t]*)$')
_ATTRS = ("vendid", "devid", "sysimgguid", "switchguid", "caguid", "rtguid")
_USED_ATTRS = ("vendid", "devid", "sysimgguid")
#: Set to False (tests only) to send every line through the general patterns.
_USE_FAST_PATH = True


def _parse_topology(chunks: Iterable[list[str]], source: str) -> Fabric:
    """Line by line. Each line is classified in this order: blank or comment, ``ib*`` error tail, ``key=value``
    attribute, node line, link line; anything else is an error. The fast paths (strict patterns on the raw line,
    chosen by its first character) only take lines that this order classifies the same way."""
    nodes: list[FabricNode] = []
    append_node = nodes.append
    attrs: dict[str, str] = {}
    cur: dict | None = None  # the instance dict of the open node block's FabricNode: finishing sets its ports
    nports_cur = 0
    is_switch = False
    ports: list[FabricPort] = []
    guids: dict[str, str] = {}  # raw GUID text -> the normalised string, one object per GUID
    gget = guids.get
    str_pool: dict[str, str] = {}
    strs = str_pool.setdefault  # descriptions and widths: one string object per distinct text
    ints: dict[str, int] = {}  # port numbers
    attr_lines: dict[str, tuple[str, str]] = {}  # vendid=/devid= lines, identical in thousands of blocks
    fast = _USE_FAST_PATH
    fast_sw, fast_ca, fast_node = _FAST_SW.match, _FAST_CA.match, _FAST_NODE.match
    new, port_cls, kinds, lanes, attr_keys, used_attrs = _new, FabricPort, _KIND, LANE_GBPS, _ATTRS, _USED_ATTRS

    lineno = 0
    for lines in chunks:
        for raw in lines:
            lineno += 1
            c = raw[:1]
            lm = None
            if fast:
                if c == "[":
                    if cur is not None:
                        lm = fast_sw(raw) if is_switch else fast_ca(raw)
                elif c == "v" or c == "d" or c == "s" or c == "c" or c == "r":
                    if c == "c" and raw.startswith("caguid="):  # one per CA block; its value is not used
                        if cur is not None:
                            cur["ports"] = tuple(ports)
                            cur, ports = None, []
                        continue
                    if c == "s" and raw.startswith("sysimgguid="):  # one per block, a different value each time
                        value = raw[11:]
                        if value.isalnum():  # no "(", no whitespace: the general clean-up leaves it as it is
                            if cur is not None:
                                cur["ports"] = tuple(ports)
                                cur, ports = None, []
                            attrs["sysimgguid"] = value
                            continue
                    kv = attr_lines.get(raw)
                    if kv is None:
                        key, eq, value = raw.partition("=")
                        if eq and key in attr_keys:
                            kv = (key, value.replace("\t", " ").split("(")[0].strip()) if key in used_attrs else ("", "")
                            if key == "vendid" or key == "devid":
                                attr_lines[raw] = kv
                    if kv is not None:
                        if cur is not None:
                            cur["ports"] = tuple(ports)
                            cur, ports = None, []
                        if kv[0]:
                            attrs[kv[0]] = kv[1]
                        continue
                elif c == "S" or c == "C" or c == "R":
                    m = fast_node(raw)
                    if m is not None:
                        if cur is not None:
                            cur["ports"] = tuple(ports)
                            ports = []
                        kind, nports, guid, desc, rest = m.groups()
                        node, nports_cur, is_switch = _open_node(kind, nports, guid, desc, rest, attrs, guids, lineno, source)
                        append_node(node)
                        cur = node.__dict__
                        attrs = {}
                        continue
                elif not raw:
                    if cur is not None:
                        cur["ports"] = tuple(ports)
                        cur, ports = None, []
                    continue
            if lm is not None:  # the hot path: one link line per port of the fabric
                ext = None
                if is_switch:
                    port, rk, rguid, rport, rpguid, rdesc, rlid, width, speed = lm.groups()
                else:
                    port, rk, rguid, rport, rdesc, rlid, width, speed = lm.groups()
                    rpguid = None
            else:  # the general path: every check, on the stripped line with TABs as spaces
                s = raw.strip().replace("\t", " ")
                if len(s) > MAX_LINE:
                    raise _too_long(s, source, lineno)
                c = s[:1]
                if c != "[":
                    if not c or c == "#":
                        if not c and cur is not None:
                            cur["ports"] = tuple(ports)
                            cur, ports = None, []
                        continue
                    if s.startswith(("ibwarn:", "ibpanic:", "iberror:")):
                        if s.startswith("ibwarn:"):
                            continue
                        raise ParseError(f"ibnetdiscover failed: {s[:120]}", path=source, line=lineno,
                                         fix="run ibnetdiscover again on a host with SM access; the capture holds an error")
                    key, eq, value = s.partition("=")
                    if eq and key in attr_keys:
                        if cur is not None:
                            cur["ports"] = tuple(ports)
                            cur, ports = None, []
                        attrs[key] = value.split("(")[0].strip()
                        continue
                    m = _NODE.match(s)
                    if m is None:
                        raise ParseError(f"unexpected line: {s[:100]!r}", path=source, line=lineno, fix=_FIX)
                    if cur is not None:
                        cur["ports"] = tuple(ports)
                        ports = []
                    kind, nports, _letter, guid, desc, rest = m.groups()
                    node, nports_cur, is_switch = _open_node(kind, nports, guid, desc, rest, attrs, guids, lineno, source)
                    append_node(node)
                    cur = node.__dict__
                    attrs = {}
                    continue
                if cur is None:
                    raise ParseError("link line outside a node block", path=source, line=lineno,
                                     fix="the output is truncated at the start; " + _FIX)
                ext = rpguid = None
                if is_switch:
                    lm = _LINK_SW.match(s)
                    if lm is None:
                        raise ParseError(f"malformed switch link line: {s[:100]!r}", path=source, line=lineno,
                                         fix=_FIX)
                    port, ext, rk, rguid, rport, rpguid, rdesc, rlid, width, speed, _ = lm.groups()
                else:
                    lm = _LINK_CA.match(s)
                    if lm is None:
                        raise ParseError(f"malformed link line: {s[:100]!r}", path=source, line=lineno, fix=_FIX)
                    port, _pguid, rk, rguid, rport, rpguid, _lid, _lmc, rdesc, rlid, width, speed, _ = lm.groups()
            if speed is not None and speed not in lanes:
                raise ParseError(f"unknown link speed {speed!r}", path=source, line=lineno,
                                 fix="expected SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR or XDR")
            try:  # a few hundred distinct port numbers: the miss (an exception) is rare
                p = ints[port]
            except KeyError:
                p = ints[port] = int(port)
            if nports_cur and p > nports_cur + 64:
                raise ParseError(f"port {p} beyond the node's {nports_cur} ports", path=source, line=lineno, fix=_FIX)
            try:
                rp = ints[rport]
            except KeyError:
                rp = ints[rport] = int(rport)
            g = gget(rguid)
            if g is None:
                g = guids[rguid] = rguid.lower().rjust(16, "0")
            if rpguid is not None:
                pg = gget(rpguid)
                if pg is None:
                    pg = guids[rpguid] = rpguid.lower().rjust(16, "0")
                rpguid = pg
            # _mk_port, inlined (this runs once per port). The fields after ``line`` (iblinkinfo's states and hints)
            # are None here and left to the class defaults: same value, smaller instance dict.
            fp = new(port_cls)
            d = fp.__dict__
            d["port"] = p
            d["remote_kind"] = kinds[rk]
            d["remote_guid"] = g
            d["remote_port"] = rp
            d["remote_port_guid"] = rpguid
            d["remote_desc"] = rdesc if rdesc is None else strs(rdesc, rdesc)
            d["remote_lid"] = int(rlid) if rlid else None
            d["width"] = width if width is None else strs(width, width)
            d["speed"] = speed
            d["ext"] = int(ext) if ext else None
            d["line"] = lineno
            ports.append(fp)
    if cur is not None:
        cur["ports"] = tuple(ports)
    return Fabric(nodes=tuple(nodes), form="ibnetdiscover")


def _open_node(kind: str, nports: str, guid: str, desc: str | None, rest: str | None, attrs: dict[str, str],
               guids: dict[str, str], lineno: int, source: str | None) -> tuple[FabricNode, int, bool]:
    """The FabricNode of a node line (its ports are set when the block ends), its port count, whether a switch."""
    lid = None
    if kind == "Switch" and rest:
        sm = _SW_EXTRA.search(rest)
        lid = int(sm.group(2)) if sm else None
    g = guids.get(guid)
    if g is None:
        g = guids[guid] = _guid(guid)
    sysimg = attrs.get("sysimgguid")
    if sysimg is not None:
        if sysimg.startswith("0x"):
            sg = guids.get(sysimg[2:])  # usually the node's own GUID, already normalised
            sysimg = sg if sg is not None else _guid(sysimg[2:])
        else:
            sysimg = None
    n = int(nports) if len(nports) <= 9 else MAX_PORTS + 1
    if n > MAX_PORTS and kind == "Ca":  # (an HCA's ports become the tuple 1..N)
        raise ParseError(f"{kind} {guid} claims {nports[:12]}{'...' if len(nports) > 12 else ''} ports; IB nodes have "
                         f"at most {MAX_PORTS} (NodeInfo:NumPorts is 8-bit)", path=source, line=lineno, fix=_FIX)
    node = _mk_node(_KIND[kind], g, n, desc or "", lid, attrs.get("vendid"), attrs.get("devid"), sysimg, (), lineno)
    return node, n, kind == "Switch"


def _parse_ports(chunks: Iterable[list[str]], source: str) -> Fabric:
    """``-p``: one line per port: ``CA 22 1 0x... 4x NDR - SW 1 17 0x... ( 'a' - 'b' )``. Node GUIDs are not in this
    form; port GUIDs stand in for them (a CA port GUID equals its node GUID on current HCAs; switch ports share it).
    A port without a remote (``SW 1 40 0x... 4x NDR   'desc'``) goes to the node's ``unlinked`` ports."""
    by_guid: dict[str, list] = {}  # guid -> [kind, guid, nports, desc, lid, line, ports, unlinked]
    interned: dict[str, str] = {}  # raw GUID text -> its normalised string
    desc_pool: dict[str, str] = {}
    intern = desc_pool.setdefault  # descriptions
    match, mk_port, kinds = _PORTS.match, _mk_port, _KIND
    lineno = 0
    for lines in chunks:
        for raw in lines:
            lineno += 1
            s = raw.strip()
            if not s or s.startswith("#") or s.startswith("ibwarn:"):
                continue
            if len(s) > MAX_LINE:
                raise _too_long(s, source, lineno)
            m = match(s)
            if m is None:
                raise ParseError(f"malformed ports line: {s[:100]!r}", path=source, line=lineno, fix=_FIX)
            kind, lid, port, guid, width, speed, rkind, rlid, rport, rguid, ldesc, rdesc, udesc = m.groups()
            if width == "??":
                width = None
            if speed == "???":
                speed = None
            elif speed not in LANE_GBPS:
                raise ParseError(f"unknown link speed {speed!r}", path=source, line=lineno, fix=_FIX)
            g = interned.get(guid)
            if g is None:
                g = interned[guid] = _guid(guid)
            entry = by_guid.get(g)
            if entry is None:
                entry = by_guid[g] = [kinds[kind], g, 0, ldesc or udesc or "", int(lid), lineno, [], []]
            elif not entry[3] and (ldesc or udesc):
                entry[3] = ldesc or udesc
            p = int(port)
            if p > entry[2]:
                entry[2] = p
            if rkind:
                rg = interned.get(rguid)
                if rg is None:
                    rg = interned[rguid] = _guid(rguid)
                entry[6].append(mk_port(p, kinds[rkind], rg, int(rport), None, intern(rdesc, rdesc), int(rlid),
                                        width, speed, None, lineno))
            else:
                entry[7].append(mk_port(p, "", "", 0, None, None, None, width, speed, None, lineno))
    nodes = tuple(_mk_node(kind, guid, nports, desc, lid, None, None, None, tuple(ports), line, tuple(unlinked))
                  for kind, guid, nports, desc, lid, line, ports, unlinked in by_guid.values())
    return Fabric(nodes=nodes, form="ibnetdiscover-p")
