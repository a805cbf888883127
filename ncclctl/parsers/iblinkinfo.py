"""``iblinkinfo`` output (infiniband-diags ``iblinkinfo.c``), the default form and the ``--line``/``-l`` form.

Default form: a header per node, then one line per port (``print_node_header`` / ``print_port``)::

    Switch: 0x9c0591030012ab00 MF0;leaf01:MQM9700/U1:
               1    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>      22    1[  ] "node005 mlx5_0" ( )
               1    2[  ] ==(                Down/ Polling)==>             [  ] "" ( )
    CA: node005 mlx5_0:
          0xb83fd20300a1b2c3     22    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>       1    1[  ] "MF0;leaf01:MQM9700/U1" ( )

Port line: ``%6d %4d[%2s] ==(%3s %18s %6s/%8s)==>  `` = LID (the switch's LID on every switch port, the port's own
LID on a CA), port, external port, width, per-lane speed, port state, physical state; a CA port line starts with
its port GUID. Then the remote end: ``%6d %4d[%2s] "%s" (%s %s)`` = its LID, port, external port, node
description and the "Could be 4X" / "Could be 106.25 Gbps" hints when the link runs below what both ends support;
``[  ] "" ( )`` for a port that is down, ``"Port not available"`` for one whose far end was not discovered.
``--additional``/``-p`` appends `` (HOQ:%d VL_Stall:%d)`` inside ``==( )==>``.

``--line`` form: no headers; every line starts ``0x<port guid> "<node description, right-aligned to 30>"`` and the
remote end starts with its port GUID: ``... ==>  0x0002c90300a1b2c3     22    1[  ] "node005 mlx5_0" ( )``.

Mapping to :class:`~ncclctl.parsers.ibnetdiscover.Fabric`:

- Switch GUIDs come from the header (the port-0 GUID, which all switch ports report). CA node GUIDs are not in the
  output: the GUID of the CA's first listed port stands in (equal to the node GUID on ConnectX-4 and later, where
  each port is a device of its own).
- Without ``--line`` a remote end is named by LID only; it is resolved through the LIDs of the nodes the output
  lists (a switch's LID, each CA port's LID). A LID that no listed node has (``--switches-only``, a partial scan)
  or that two nodes claim, and LID 0 (no subnet manager has assigned LIDs), leave ``remote_guid`` empty and
  ``remote_kind`` ``"unknown"``; the LID and description are kept.
- ``--line`` does not print node types: a GUID listed on more than one port line, or with a port above 2, is a
  switch; otherwise a CA (routers are not told apart). A remote that is not listed itself is taken to be of the
  other kind than the local node (a switch's unlisted peer is a CA, as under ``--switches-only``), except that a
  remote port above 2 is always a switch port.
- Port state and physical state are kept on every port; ports without a remote (down, or not available) go to
  ``FabricNode.unlinked``. Widths become ``4x`` and speeds the IB names (``106.25 Gbps`` -> ``NDR``,
  ``10.0 Gbps (FDR10)`` -> ``FDR10``), as ibnetdiscover prints them; the "Could be" hints become ``max_width`` and
  ``max_speed``. ``undefined (N)``/``Extended speed`` values the tool prints for odd hardware become None.
- LIDs are decimal (``%6d``) in every version of the tool; a hex LID is an error.
"""

from __future__ import annotations

import gc
import re

from ncclctl.errors import ParseError
from ncclctl.parsers._common import as_text, paste_text
from ncclctl.parsers.ibnetdiscover import MAX_LINE, Fabric, FabricPort, _chunks, _mk_node, _mk_port

__all__ = ["parse_iblinkinfo", "SPEED_NAMES", "WIDTH_NAMES"]

_FIX = "pass the unmodified output of 'iblinkinfo' (or 'iblinkinfo --line'; that one names every remote by GUID)"

_HEADER = re.compile(r"(Switch|CA|Router):[ \t]+(.*):$")
_SW_HEADER = re.compile(r"0x([0-9a-fA-F]{1,16})(?:[ \t](.*))?$", re.DOTALL)
# The part before "==(": [0x<port guid> ["<desc>"]] <lid> <port>[<ext>]. A LID is 16 bits ("%6d"); more digits are
# accepted for synthetic fabrics larger than one subnet's 49,151 unicast LIDs.
_LOCAL = re.compile(r'(?:0x([0-9a-fA-F]{1,16})[ \t]+(?:"(.*?)"[ \t]+)?)?([0-9]{1,9})[ \t]+([0-9]{1,5})\[[ \t]*([0-9]{0,5})[ \t]*\]'
                    r"[ \t]*==\((.*?)\)==>[ \t]*(.*)$")
_REMOTE = re.compile(r'(?:0x([0-9a-fA-F]{1,16})[ \t]+)?([0-9]{1,9})[ \t]+([0-9]{1,5})\[[ \t]*([0-9]{0,5})[ \t]*\][ \t]*'
                     r'"(.*)"[ \t]*\((.*)\)$')
_DOWN_REMOTE = re.compile(r'\[[ \t]*\][ \t]*""[ \t]*\([ \t]*\)$')
_NOT_AVAILABLE = '"Port not available"'
_COULD_WIDTH = re.compile(r"Could be ([0-9]{1,2}X)\b")
_COULD_SPEED = re.compile(r"Could be ([0-9.]+ Gbps(?: \(FDR10\))?|FDR10)")
_UNKNOWN_VALUE = re.compile(r"\?\([0-9]+\)")

#: libibmad ``mad_dump_linkwidth``: width strings -> the ibnetdiscover spelling.
WIDTH_NAMES = {"1X": "1x", "2X": "2x", "4X": "4x", "8X": "8x", "12X": "12x"}
#: libibmad ``mad_dump_linkspeed`` / libibnetdisc ``ibnd_dump_agg_linkspeedext`` (per lane) -> IB speed names.
SPEED_NAMES = {"2.5 Gbps": "SDR", "5.0 Gbps": "DDR", "10.0 Gbps": "QDR", "10.0 Gbps (FDR10)": "FDR10",
               "14.0625 Gbps": "FDR", "25.78125 Gbps": "EDR", "53.125 Gbps": "HDR", "106.25 Gbps": "NDR",
               "212.5 Gbps": "XDR"}
_SPEED_NONE = ("Extended speed", "No Extended Speed")  # speed fields PortInfo leaves at 0
_STATES = {"NoChange", "Down", "Initialize", "Armed", "Active"}  # mad_dump_portstate
_PHYS = {"NoChange", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery",
         "PhyTest"}  # mad_dump_physportstate
_KIND = {"Switch": "switch", "CA": "ca", "Router": "router"}


def parse_iblinkinfo(text: str | bytes, *, source: str = "iblinkinfo") -> Fabric:
    """Either form (detected per line: ``--line`` lines start with a GUID and a quoted description)."""
    text = as_text(text, source, "iblinkinfo")
    gc_was_enabled = gc.isenabled()
    gc.disable()  # many small objects, no cycles: see parse_ibnetdiscover
    try:
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        text, _pasted = paste_text(text, ("iblinkinfo",))  # a pasted capture: the prompt and command echo
        return _Parser(source).run(text)
    except (ParseError, MemoryError):
        raise
    except Exception as exc:  # pragma: no cover - defensive: the parser's own bug must not escape as a crash
        raise ParseError(f"cannot parse: {type(exc).__name__}: {exc}", path=source, fix=_FIX) from None
    finally:
        if gc_was_enabled:
            gc.enable()


class _Node:
    """A node while its lines are read: ports are kept raw until every LID of the output is known."""

    __slots__ = ("kind", "guid", "desc", "lid", "line", "ports", "listed")

    def __init__(self, kind: str | None, guid: str, desc: str, line: int) -> None:
        self.kind = kind  # None in --line form until the end
        self.guid = guid  # "" for a CA header until its first port line
        self.desc = desc
        self.lid: int | None = None
        self.line = line
        # (port, ext, width, speed, state, phys, local port guid, remote tuple or None, max_w, max_s, line, lid)
        self.ports: list[tuple] = []
        self.listed = 0  # port lines seen with this GUID (the --line kind heuristic)


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.nodes: list[_Node] = []
        self.guids: dict[str, str] = {}
        self.strs: dict[str, str] = {}
        self.links: dict[str, tuple] = {}
        self.line_mode = False
        self.default_mode = False
        #: nodes of lines whose header was filtered out: ("ca", port guid) or ("switch", lid) -> node
        self.headerless: dict[tuple[str, object], _Node] = {}

    def err(self, message: str, line: int, fix: str = _FIX) -> ParseError:
        return ParseError(message, path=self.source, line=line, fix=fix)

    def guid(self, raw: str) -> str:
        g = self.guids.get(raw)
        if g is None:
            g = self.guids[raw] = raw.lower().rjust(16, "0")
        return g

    def run(self, text: str) -> Fabric:
        cur: _Node | None = None
        last_line_node: _Node | None = None
        lineno = 0
        total = text.count("\n") + (0 if text.endswith("\n") else 1)
        local_match, header_match = _LOCAL.match, _HEADER.match
        for lines in _chunks(text):
            for raw in lines:
                lineno += 1
                s = raw.strip()
                if not s or s[0] == "#":
                    continue
                if len(s) > MAX_LINE:  # the lazy groups of _LOCAL would take quadratic time on such a line
                    raise self.err(f"line of {len(s)} characters (the tool's are at most a few hundred): "
                                   f"{s[:60]!r}...", lineno, fix="this is not iblinkinfo output; " + _FIX)
                c = s[0]
                if c == "S" or c == "C" or c == "R":
                    hm = header_match(s)
                    if hm is not None:
                        cur = self.header(hm.group(1), hm.group(2), lineno)
                        self.default_mode = True
                        continue
                if c == "i" and s.startswith(("ibwarn:", "ibpanic:", "iberror:")):
                    if s.startswith("ibwarn:"):
                        continue
                    raise self.err(f"iblinkinfo failed: {s[:120]}", lineno,
                                   fix="run iblinkinfo again on a host with access to the subnet; the capture holds "
                                       "an error")
                if (c == "<" or c == ">") and s[1:2] == " ":
                    raise self.err("this is 'iblinkinfo --diff' output (lines marked < and >), not a fabric", lineno,
                                   fix="capture plain 'iblinkinfo' output")
                m = local_match(s)
                if m is None:
                    if lineno == total and not text.endswith("\n"):
                        raise self.err(f"incomplete last line: {s[:100]!r}", lineno,
                                       fix="the capture is truncated; capture the whole iblinkinfo output again")
                    raise self.err(f"unexpected line: {s[:100]!r}", lineno)
                pguid, ldesc, lid, port, ext, inner, remote = m.groups()
                if ldesc is not None:  # --line form: the line names its node
                    self.line_mode = True
                    g = self.guid(pguid)
                    if last_line_node is None or last_line_node.guid != g or cur is not None:
                        # "%30s": short descriptions are right-aligned with spaces
                        desc = ldesc.lstrip(" ") if len(ldesc) == 30 else ldesc
                        last_line_node = _Node(None, g, desc, lineno)
                        self.nodes.append(last_line_node)
                        cur = None
                    node = last_line_node
                    node.listed += 1
                else:
                    under: _Node | None = cur
                    if under is not None and (under.kind == "switch") != (pguid is None):
                        under = None  # a switch port line under a CA header, or the reverse: a header was filtered
                    if under is None:
                        # no header for this line: the output went through grep ("iblinkinfo | grep Up"). A CA
                        # line names its port GUID; a switch line only its switch's LID.
                        node = self.headerless_node(pguid, int(lid), lineno)
                        cur = None
                    else:
                        node = under
                        if node.kind != "switch" and not node.guid:
                            node.guid = self.guid(pguid)
                self.port(node, pguid, int(lid), int(port), ext, inner, remote, lineno)
        return self.finish()

    def headerless_node(self, pguid: str | None, lid: int, lineno: int) -> _Node:
        """The node of a port line without a header: a CA by its port GUID, a switch by its LID (its GUID is only in
        the header: the switch is named ``lid:<LID>``); descriptions are filled in from the remote ends that name
        them (:meth:`finish`)."""
        key: tuple[str, object] = ("ca", self.guid(pguid)) if pguid else ("switch", lid)
        node = self.headerless.get(key)
        if node is None:
            guid = key[1] if pguid else f"lid:{lid}"
            node = self.headerless[key] = _Node(key[0], str(guid), "", lineno)
            self.nodes.append(node)
        self.default_mode = True
        return node

    def header(self, word: str, rest: str, lineno: int) -> _Node:
        kind = _KIND[word]
        if kind == "switch":
            hm = _SW_HEADER.match(rest)
            if hm is None:
                raise self.err(f"switch header without its GUID: {rest[:80]!r}", lineno)
            node = _Node(kind, self.guid(hm.group(1)), hm.group(2) or "", lineno)
        else:
            node = _Node(kind, "", rest, lineno)
        self.nodes.append(node)
        return node

    def port(self, node: _Node, pguid: str | None, lid: int, port: int, ext: str, inner: str, remote: str,
             lineno: int) -> None:
        width, speed, state, phys = self.link(inner, lineno)
        if node.lid is None:
            node.lid = lid
        rem = None
        max_w = max_s = None
        rm = _REMOTE.match(remote)
        if rm is None:
            if remote != _NOT_AVAILABLE and not _DOWN_REMOTE.match(remote):
                raise self.err(f"cannot read the remote end: {remote[:100]!r}", lineno)
        else:
            rguid, rlid, rport, rext, rdesc, msgs = rm.groups()
            rdesc = self.strs.setdefault(rdesc, rdesc)
            rem = (self.guid(rguid) if rguid else None, int(rlid), int(rport), rdesc)
            if msgs.strip():
                wm = _COULD_WIDTH.search(msgs)
                sm = _COULD_SPEED.search(msgs)
                max_w = WIDTH_NAMES.get(wm.group(1)) if wm else None
                if sm:
                    max_s = "FDR10" if sm.group(1).startswith("FDR10") else SPEED_NAMES.get(sm.group(1))
        node.ports.append((port, int(ext) if ext else None, width, speed, state, phys,
                           self.guid(pguid) if pguid else None, rem, max_w, max_s, lineno, lid))

    def link(self, inner: str, lineno: int) -> tuple[str | None, str | None, str, str]:
        """(width, speed, state, physical state) of the text inside ``==( )==>`` (a handful of distinct texts make
        up a whole fabric: they are remembered)."""
        known = self.links.get(inner)
        if known is None:
            known = self.links[inner] = self.read_link(inner, lineno)
        return known

    def read_link(self, inner: str, lineno: int) -> tuple[str | None, str | None, str, str]:
        body = inner.split(") (HOQ:", 1)[0]  # --additional
        left, slash, phys = body.rpartition("/")
        toks = left.split()
        phys = phys.strip()
        if not slash or not toks:
            raise self.err(f"no port state in '==({inner[:60]})==>'", lineno)
        state = toks.pop()
        if state not in _STATES and not _UNKNOWN_VALUE.fullmatch(state):
            raise self.err(f"unknown port state {state!r}", lineno,
                           fix="expected Down, Initialize, Armed or Active; " + _FIX)
        if phys not in _PHYS and not _UNKNOWN_VALUE.fullmatch(phys):
            raise self.err(f"unknown physical port state {phys!r}", lineno,
                           fix="expected LinkUp, Polling, Disabled, Sleep, PortConfigurationTraining, "
                               "LinkErrorRecovery or PhyTest; " + _FIX)
        width = speed = None
        if toks:
            if toks[0] == "undefined" and len(toks) > 1 and toks[1].startswith("("):
                del toks[:2]
            else:
                width = WIDTH_NAMES.get(toks[0])
                if width is None:
                    raise self.err(f"unknown link width {toks[0]!r}", lineno, fix="expected 1X, 2X, 4X, 8X or 12X")
                del toks[0]
            text = " ".join(toks)
            speed = SPEED_NAMES.get(text)
            if speed is None and text and text not in _SPEED_NONE and not text.startswith("undefined ("):
                raise self.err(f"unknown link speed {text!r}", lineno,
                               fix="expected the per-lane speed as iblinkinfo prints it: " + ", ".join(SPEED_NAMES))
        return width, speed, state, phys

    def finish(self) -> Fabric:
        nodes = [n for n in self.nodes if n.guid]  # a CA header cut off before its first port line says nothing
        if self.line_mode:
            self.guess_kinds(nodes)
        by_guid: dict[str, _Node] = {}
        by_lid: dict[int, list[_Node]] = {}
        port_owner: dict[str, _Node] = {}  # CA/router port GUID -> its node
        for n in nodes:
            by_guid.setdefault(n.guid, n)
            if n.kind == "switch":
                if n.lid:
                    by_lid.setdefault(n.lid, []).append(n)
            for p in n.ports:
                if n.kind != "switch" and p[6]:
                    port_owner.setdefault(p[6], n)
        if not self.line_mode or self.default_mode:
            for n in nodes:
                if n.kind == "switch":
                    continue
                for p in n.ports:  # each CA port has its own LID
                    lid = p[11]
                    if lid:
                        bucket = by_lid.setdefault(lid, [])
                        if n not in bucket:
                            bucket.append(n)
        if self.headerless:
            # descriptions of header-less nodes from the remote ends that name their LIDs
            desc_of: dict[int, str] = {}
            for n in nodes:
                for p in n.ports:
                    rem = p[7]
                    if rem is not None and rem[1] and rem[3]:
                        desc_of.setdefault(rem[1], rem[3])
            for n in self.headerless.values():
                if not n.desc:
                    lids = [n.lid] if n.kind == "switch" else [p[11] for p in n.ports]
                    n.desc = next((desc_of[x] for x in lids if x in desc_of), "")
        out = []
        for n in nodes:
            linked: list[FabricPort] = []
            unlinked: list[FabricPort] = []
            nports = 0
            for port, ext, width, speed, state, phys, _pg, rem, max_w, max_s, line, _lid in n.ports:
                if port > nports:
                    nports = port
                if rem is None:
                    unlinked.append(_mk_port(port, "", "", 0, None, None, None, width, speed, ext, line, state, phys))
                    continue
                rguid, rlid, rport, rdesc = rem
                rkind, rnode_guid, rport_guid = self.resolve(n, rguid, rlid, rport, rdesc, by_guid, by_lid,
                                                             port_owner)
                linked.append(_mk_port(port, rkind, rnode_guid, rport, rport_guid, rdesc, rlid, width, speed, ext,
                                       line, state, phys, max_w, max_s))
            assert n.kind is not None  # from the header, or from guess_kinds in --line form
            out.append(_mk_node(n.kind, n.guid, nports, n.desc, n.lid, None, None, None, tuple(linked), n.line,
                                tuple(unlinked)))
        form = "iblinkinfo-line" if self.line_mode and not self.default_mode else "iblinkinfo"
        notes: tuple[str, ...] = ()
        if self.headerless:
            first = min(n.line for n in self.headerless.values())
            notes = (f"{len(self.headerless)} node(s) have port lines but no 'Switch:'/'CA:' header (first at line "
                     f"{first}): the output was filtered (grep?), so only the listed ports are known and switches "
                     "are named by their LID",)
        return Fabric(nodes=tuple(out), form=form, notes=notes)

    def resolve(self, n: _Node, rguid: str | None, rlid: int, rport: int, rdesc: str, by_guid: dict[str, _Node],
                by_lid: dict[int, list[_Node]], port_owner: dict[str, _Node]) -> tuple[str, str, str | None]:
        """(remote kind, remote node GUID, remote port GUID for a CA/router port) of one remote end."""
        if rguid is not None:  # --line: the remote's port GUID
            owner = port_owner.get(rguid) or by_guid.get(rguid)
            if owner is not None:
                assert owner.kind is not None  # finish() resolves after every kind is known
                return owner.kind, owner.guid, (rguid if owner.kind != "switch" else None)
            kind = "switch" if rport > 2 or n.kind != "switch" else "ca"
            return kind, rguid, (rguid if kind != "switch" else None)
        cands = by_lid.get(rlid, ()) if rlid else ()
        if len(cands) > 1:
            cands = [c for c in cands if c.desc == rdesc]
        if len(cands) == 1:
            owner = cands[0]
            assert owner.kind is not None  # finish() resolves after every kind is known
            if owner.kind == "switch":
                return "switch", owner.guid, None
            for p in owner.ports:  # the CA port with that LID (a dual-port CA has one LID per port)
                if p[11] == rlid and p[6]:
                    return owner.kind, owner.guid, p[6]
            return owner.kind, owner.guid, None
        return "unknown", "", None

    @staticmethod
    def guess_kinds(nodes: list[_Node]) -> None:
        listed: dict[str, int] = {}
        for n in nodes:
            if n.kind is None:
                listed[n.guid] = listed.get(n.guid, 0) + n.listed
        for n in nodes:
            if n.kind is None:
                many = listed[n.guid] > 1 or any(p[0] > 2 for p in n.ports)
                n.kind = "switch" if many else "ca"
