"""A lean reader: ``ibnetdiscover`` output straight into a :class:`~ncclctl.fabric.graph.FabricGraph`.

The general path (:func:`ncclctl.parsers.ibnetdiscover.parse_ibnetdiscover`, then
:func:`ncclctl.fabric.graph.from_fabric`) builds one ``FabricPort`` object per port and one ``FabricNode`` per
node, then walks them again to build the graph: at 32,768 nodes x 8 rails that is two million objects and most of
the run time. The fabric commands only need the graph, so this module reads the tool's exact layout with a few
regular expressions applied to whole stretches of text (C loops, ``findall``) and fills the graph's dicts and
lists directly: no object per port beyond the graph's own tuples.

It is a fast path, never a second parser: it accepts only input in the tool's own layout (TABs where
infiniband-diags writes them, no ``\\r``, only ASCII, no odd control characters, every link listed consistently
from both ends, every node described once) and returns ``None`` for anything else, so the general path, with all
its checks and findings, handles every other input. On what it accepts it builds the same graph, field for field
and in the same order, as the general path's fast pass (``_from_fabric_fast``); ``tests/fabric/test_fabric_lean.py``
compares the two on the synthetic fabrics (both forms, several sizes) and on every fixture.
"""

from __future__ import annotations

import re

from ncclctl.fabric.graph import FabricGraph, Switch, _rate
from ncclctl.parsers.ibnetdiscover import LANE_GBPS

#: Characters some line splitters treat as line ends or that ``str.strip`` removes: input holding one takes the
#: general path (so that both paths always see the same lines).
_ODD = re.compile(r"[\r\x0b\x0c\x1c-\x1f\x00]")

# --- topology form --------------------------------------------------------------------------------------------
# The text is read with a "\n" before every line (one is prepended), so that the patterns start with a literal
# (the regex engine then skips to each line start with a fast scan). The node line, as the general parser's fast
# pattern (_FAST_NODE) reads it:
_NODE = re.compile(r'\n(Switch|Ca|Rt)\t([0-9]{1,9}) "[SHR]-([0-9a-f]{16})"\t\t# "([^"\t\n]*)"([^\t\n]*)(?![^\n])')
# Link lines: exactly the general parser's _FAST_SW / _FAST_CA.
_LINK_SW = re.compile(r'\n\[([0-9]{1,9})\]\t"([SHR])-([0-9a-f]{16})"\[([0-9]{1,9})\](?:\([0-9a-f]{1,16}\) )?\t\t# '
                      r'"[^"\t\n]*" lid [0-9]{1,9} ([0-9]{1,2}x)(\w+)(?![^\n])')
_LINK_CA = re.compile(r'\n\[([0-9]{1,9})\]\([0-9a-f]{1,16}\) \t"([SHR])-([0-9a-f]{16})"\[([0-9]{1,9})\]\t\t# '
                      r'lid [0-9]{1,9} lmc [0-9]{1,9} "[^"\t\n]*" lid [0-9]{1,9} ([0-9]{1,2}x)(\w+)(?![^\n])')
#: The link lines at the start of a block's body.
_LINKS = re.compile(r"(?:\n\[[^\n]*)*")
#: What may follow them up to the next node line: blank lines, comments, and attribute lines in the forms the
#: general parser's fast path takes as they are (sysimgguid with a plain hex value).
_REST = re.compile(r"(?:\n(?![^\n])|\n#[^\n]*|\n(?:vendid|devid|switchguid|caguid|rtguid)=[^\n]*"
                   r"|\nsysimgguid=0x[0-9a-fA-F]+(?![^\n]))*")
_SYSIMG = re.compile(r"\nsysimgguid=0x([0-9a-fA-F]+)(?![^\n])")
_SW_EXTRA = re.compile(r"(?:(base|enhanced)\s+)?port\s+0\s+lid\s+(\d+)\s+lmc\s+(\d+)")
_KIND = {"S": "switch", "H": "ca", "R": "router", "Switch": "switch", "Ca": "ca", "Rt": "router",
         "SW": "switch", "CA": "ca", "RT": "router"}


def read_graph(text: str, *, source: str, kind: str) -> FabricGraph | None:
    """The graph of ``text`` (after :func:`~ncclctl.parsers._common.paste_text`) of the given ``kind``, or None
    when the input is anything but the tool's plain output (the general path then reads it)."""
    if _ODD.search(text) is not None or not text.isascii():
        return None
    if kind == "ibnetdiscover":
        return _topology("\n" + (text[:-1] if text.endswith("\n") else text), source)
    if kind == "ibnetdiscover-ports":
        return _ports(text if text.endswith("\n") else text + "\n", source)
    return None


def _topology(text: str, source: str) -> FabricGraph | None:
    parts = _NODE.split(text)
    # parts: [preamble, kind, nports, guid, desc, rest, body, kind, ...]
    pre = parts[0]
    tails = [pre]
    g = FabricGraph(source=source, kind="ibnetdiscover")
    hcas = g.hcas
    switches = g.switches
    hca_links = g.hca_links
    switch_links = g.switch_links
    lanes = LANE_GBPS
    widths: dict[str, str] = {}
    ints: dict[str, int] = {}
    sysimgs: list[tuple[str, str]] = []  # (CA guid, its system image GUID) where they differ
    sysimg = _last_sysimg(pre)
    lineno = pre.count("\n") + 1  # the line of the current node line
    ca_claims = sw_claims = fwd = bwd = 0
    acc_ca = acc_sw = 0
    rates: dict[tuple[str, str], float | None] = {}
    links_match = _LINKS.match
    sw_findall = _LINK_SW.findall
    ca_findall = _LINK_CA.findall
    kinds = _KIND
    for i in range(1, len(parts), 6):
        nkind, nports_s, guid, desc, rest, body = parts[i:i + 6]
        nports = int(nports_s)
        m = links_match(body)
        end = m.end()
        links = body[:end]
        tail = body[end:]
        if tail:
            tails.append(tail)
        nlines = links.count("\n")
        is_ca = nkind == "Ca"
        # routers' link lines are in the CA layout, as the general parser reads them (by "Switch" or not)
        recs = (sw_findall if nkind == "Switch" else ca_findall)(links) if nlines else ()
        if len(recs) != nlines:
            return None
        line = lineno + 1
        if is_ca:
            if guid in hcas or guid in switches:
                return None
            hcas[guid] = (desc, tuple(range(1, nports + 1)), lineno)
            if sysimg is not None and sysimg != guid:
                sysimgs.append((guid, sysimg))
            for port, rk, rguid, rport, width, speed in recs:
                if rk == "H" or speed not in lanes:
                    return None
                try:
                    p = ints[port]
                except KeyError:
                    p = ints[port] = int(port)
                if nports and p > nports + 64:
                    return None
                try:
                    rp = ints[rport]
                except KeyError:
                    rp = ints[rport] = int(rport)
                w = widths.get(width)
                if w is None:
                    w = widths[width] = width
                key = (w, speed)
                try:
                    rate = rates[key]
                except KeyError:
                    rate = rates[key] = _rate(w, speed)
                ca_claims += 1
                acc_ca += hash((guid, p, rguid, rp))
                hca_links[(guid, p)] = (rguid, rp, w, speed, rate, line)
                line += 1
        else:
            if guid in switches or guid in hcas:
                return None
            lid = None
            if nkind == "Switch" and rest:
                sm = _SW_EXTRA.search(rest)
                lid = int(sm.group(2)) if sm else None
            switches[guid] = Switch(guid=guid, desc=desc, nports=nports, line=lineno, lid=lid, kind=kinds[nkind])
            for port, rk, rguid, rport, width, speed in recs:
                if speed not in lanes:
                    return None
                try:
                    p = ints[port]
                except KeyError:
                    p = ints[port] = int(port)
                if nports and p > nports + 64:
                    return None
                try:
                    rp = ints[rport]
                except KeyError:
                    rp = ints[rport] = int(rport)
                if rk == "H":
                    sw_claims += 1
                    acc_ca -= hash((rguid, rp, guid, p))
                elif guid < rguid or (guid == rguid and p < rp):
                    fwd += 1
                    acc_sw += hash((guid, p, rguid, rp))
                    w = widths.get(width)
                    if w is None:
                        w = widths[width] = width
                    key = (w, speed)
                    try:
                        rate = rates[key]
                    except KeyError:
                        rate = rates[key] = _rate(w, speed)
                    switch_links.append((guid, p, rguid, rp, w, speed, rate, line))
                else:
                    bwd += 1
                    acc_sw -= hash((rguid, rp, guid, p))
                line += 1
        lineno += 1 + body.count("\n")
        sysimg = _last_sysimg(tail) if "sysimgguid=" in tail else None
    if not hcas and not switches:
        return None  # no node: the general path says so
    # Every tail is a run of whole lines, so the tails are all valid exactly when their concatenation is.
    if _REST.fullmatch("".join(tails)) is None:
        return None
    del tails
    if (acc_ca or acc_sw or ca_claims != sw_claims or fwd != bwd or len(hca_links) != ca_claims
            or not hcas.keys().isdisjoint(switches.keys())):
        return None
    for link in hca_links.values():
        if link[0] not in switches:
            return None
    _aggregation(g)
    agg = g.aggregation
    for guid, sysimg in sysimgs:
        if sysimg in switches:
            agg.add(guid)
    return g


def _last_sysimg(tail: str) -> str | None:
    """The system image GUID a block's attribute lines give the next node (the last one wins), normalised."""
    value = _SYSIMG.findall(tail)[-1]
    return value.lower().rjust(16, "0")


def _aggregation(g: FabricGraph) -> None:
    agg = g.aggregation
    for guid, (desc, _ports, _line) in g.hcas.items():
        if "Aggregation Node" in desc:
            agg.add(guid)


# --- ports form (-p) ------------------------------------------------------------------------------------------
# The general parser's _PORTS on one raw line: "\s" narrowed to " " and TAB, every run and field bounded (descriptions
# at 64 characters, the IB NodeDescription size) so that an
# accepted line is always shorter than the parser's line limit (MAX_LINE, 1,024 characters).
_W = r"[ \t]{1,30}"
_PLINE = re.compile(
    r"^[ \t]{0,30}(SW|CA|RT)" + _W + r"([0-9]{1,9})" + _W + r"([0-9]{1,9})" + _W + r"0x([0-9a-fA-F]{1,16})" + _W
    + r"([0-9]{1,2}x|\?\?)" + _W + r"([A-Za-z0-9_]{1,10}|\?\?\?)"
    r"(?:" + _W + r"-" + _W + r"(SW|CA|RT)" + _W + r"([0-9]{1,9})" + _W + r"([0-9]{1,9})" + _W
    + r"0x([0-9a-fA-F]{1,16})" + _W + r"\([ \t]{0,30}'([^'\n]{0,64})'" + _W + r"-" + _W + r"'([^'\n]{0,64})'"
    r"[ \t]{0,30}\)|[ \t]{1,64}'([^'\n]{0,64})')?[ \t]{0,30}$", re.M)


def _ports(text: str, source: str) -> FabricGraph | None:
    recs = _PLINE.findall(text)
    if len(recs) != text.count("\n"):
        return None  # a blank, comment or ibwarn line, or one in another layout: the general path
    by_guid: dict[str, list] = {}  # guid -> [kind, guid, nports, desc, lid, line, ports, unlinked ports]
    norm: dict[str, str] = {}
    kinds = _KIND
    lanes = LANE_GBPS
    line = 0
    for kind, lid, port, guid, width, speed, rkind, rlid, rport, rguid, ldesc, rdesc, udesc in recs:
        line += 1
        if speed == "???":
            speed = None
        elif speed not in lanes:
            return None
        if width == "??":
            width = None
        g = norm.get(guid)
        if g is None:
            g = norm[guid] = guid.lower().rjust(16, "0")
        entry = by_guid.get(g)
        if entry is None:
            entry = by_guid[g] = [kinds[kind], g, 0, ldesc or udesc or "", int(lid), line, [], []]
        elif not entry[3] and (ldesc or udesc):
            entry[3] = ldesc or udesc
        p = int(port)
        if p > entry[2]:
            entry[2] = p
        if rkind:
            rg = norm.get(rguid)
            if rg is None:
                rg = norm[rguid] = rguid.lower().rjust(16, "0")
            entry[6].append((p, kinds[rkind], rg, int(rport), width, speed, line))
        else:
            entry[7].append(p)
    if not by_guid:
        return None
    g = FabricGraph(source=source, kind="ibnetdiscover-ports")
    hcas = g.hcas
    switches = g.switches
    hca_links = g.hca_links
    switch_links = g.switch_links
    ca_claims = sw_claims = fwd = bwd = 0
    acc_ca = acc_sw = 0
    rates: dict = {}
    for nkind, guid, nports, desc, lid, nline, ports, unlinked in by_guid.values():
        if nkind == "ca":
            hcas[guid] = (desc, tuple(sorted(set(unlinked))) if unlinked else (), nline)
            for p, rk, rguid, rp, w, sp, line in ports:
                if rk == "ca":
                    return None
                ca_claims += 1
                acc_ca += hash((guid, p, rguid, rp))
                key = (w, sp)
                try:
                    rate = rates[key]
                except KeyError:
                    rate = rates[key] = _rate(w, sp)
                hca_links[(guid, p)] = (rguid, rp, w, sp, rate, line)
        else:
            switches[guid] = Switch(guid=guid, desc=desc, nports=nports, line=nline, lid=lid, kind=nkind)
            for p, rk, rguid, rp, w, sp, line in ports:
                if rk == "ca":
                    sw_claims += 1
                    acc_ca -= hash((rguid, rp, guid, p))
                elif guid < rguid or (guid == rguid and p < rp):
                    fwd += 1
                    acc_sw += hash((guid, p, rguid, rp))
                    key = (w, sp)
                    try:
                        rate = rates[key]
                    except KeyError:
                        rate = rates[key] = _rate(w, sp)
                    switch_links.append((guid, p, rguid, rp, w, sp, rate, line))
                else:
                    bwd += 1
                    acc_sw -= hash((rguid, rp, guid, p))
    if (acc_ca or acc_sw or ca_claims != sw_claims or fwd != bwd or len(hca_links) != ca_claims
            or not hcas.keys().isdisjoint(switches.keys())):
        return None
    for link in hca_links.values():
        if link[0] not in switches:
            return None
    _aggregation(g)
    return g

