"""The fabric graph: switches, HCAs, links with width/speed/rate, and the hosts behind the HCAs.

Built from ``ibnetdiscover`` (topology file or ``-p``), ``iblinkinfo`` (via their parsers, which return a
:class:`~ncclctl.parsers.ibnetdiscover.Fabric`), or, for RoCE/Ethernet fabrics, from each host's LLDP neighbours
in its node model (``NetDev.lldp``: the switch is the chassis, the switch port the LLDP port id).

The representation is flat on purpose (a fabric file reaches millions of lines): switches are small objects (there
are few), HCAs are tuples in a dict keyed by GUID, and each HCA-switch link is one tuple in a dict keyed by
``(hca_guid, hca_port)``; switch-switch links are tuples in a list. Building is one pass over the parsed nodes and
one over their ports (dict look-ups only), so it is linear in the size of the fabric.

A link is listed from both ends in ``ibnetdiscover`` output; both ends are cross-checked (FAB011 when they name
different peers, FAB006 when two switch ports reach one HCA port, the signature of two HCAs sharing a GUID). Links
to GUIDs the file never describes (a truncated capture) still count: the far end is known from the link line
(kind, description), and one FAB010 finding says how many such GUIDs there are.
"""

from __future__ import annotations

import os

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import contains, itemgetter, mul, not_
from typing import Any

from ncclctl.errors import InputError, ParseError
from ncclctl.fabric.rules import RULES
from ncclctl.findings import Finding
from ncclctl.parsers.ibnetdiscover import LANE_GBPS, FabricPort
from ncclctl.record import record

#: Kinds of fabric input, as ``detect_kind`` names them.
KINDS = {
    "ibnetdiscover": "ibnetdiscover topology file",
    "ibnetdiscover-ports": "ibnetdiscover -p ports report",
    "iblinkinfo": "iblinkinfo output",
    "lldp": "LLDP neighbours of the inventory hosts",
}

#: (switch guid, switch port, width like "4x" or None, speed like "NDR" or None, rate Gb/s or None, line)
Link = tuple
#: (desc, ports known to exist on the HCA, line of its block)
HcaInfo = tuple

_FIX = "pass the unmodified output of ibnetdiscover, ibnetdiscover -p or iblinkinfo"
_NO_HOST = {"localhost", "localhost.localdomain", "(none)"}
_REPORT_CAP = 20  # per-HCA findings of one rule beyond this are summed up in one finding


@dataclass
class Switch:
    guid: str
    desc: str
    nports: int
    line: int
    lid: int | None = None
    kind: str = "switch"  # switch | router
    #: False when the switch is only known as the far end of a link (no block of its own in the file).
    described: bool = True


@dataclass
class FabricGraph:
    source: str
    kind: str
    switches: dict[str, Switch] = field(default_factory=dict)
    hcas: dict[str, HcaInfo] = field(default_factory=dict)
    hca_links: dict[tuple[str, int], Link] = field(default_factory=dict)
    #: (switch a, port a, switch b, port b, width, speed, rate, line), each link once
    switch_links: list[tuple] = field(default_factory=list)
    #: links that join two HCAs (back-to-back) or routers: counted, not used
    other_links: int = 0
    #: HCA ports cabled straight to another HCA (no switch between): (guid, port) -> (remote guid, remote port)
    direct: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    #: GUIDs of the CAs that are a switch's SHARP Aggregation Node (the switch's own virtual CA, described
    #: "Mellanox Technologies Aggregation Node", with the switch's system image GUID): not hosts, and a switch that
    #: carries one is not a leaf for it.
    aggregation: set[str] = field(default_factory=set)
    _level: dict | None = field(default=None, repr=False, compare=False)

    # -- derived -------------------------------------------------------------------------------------------------

    def downlinks(self) -> Counter:
        """Switch guid -> number of ports linked to HCAs."""
        return Counter(link[0] for link in self.hca_links.values())

    def uplinks(self) -> Counter:
        """Switch guid -> number of ports linked to other switches."""
        c: Counter = Counter()
        for a, _pa, b, _pb, *_ in self.switch_links:
            c[a] += 1
            c[b] += 1
        return c

    def uplink_gbps(self) -> dict[str, float]:
        """Switch guid -> summed rate of its switch-facing links (unknown rates count as 0)."""
        out: dict[str, float] = {}
        for a, _pa, b, _pb, _w, _s, rate, _line in self.switch_links:
            r = rate or 0.0
            out[a] = out.get(a, 0.0) + r
            out[b] = out.get(b, 0.0) + r
        return out

    def host_links(self):
        """The HCA links of hosts: ``(hca guid, port) -> link``, SHARP Aggregation Nodes left out."""
        agg = self.aggregation
        if not agg:
            return self.hca_links.items()
        return ((k, v) for k, v in self.hca_links.items() if k[0] not in agg)

    def layers(self) -> dict[str, int]:
        """Switch guid -> tier: 1 for leaves, 2 for their neighbours (spines), 3 (core)... Switches unreachable
        from any leaf get 0. Computed once (the graph is not changed after it is built).

        Leaves are the switches with hosts below them: a SHARP Aggregation Node (the switch's own CA) does not make
        its switch a leaf. A switch with hosts that is linked mostly to other switches with hosts is a spine that
        carries a host (a UFM server or a login node cabled to a spine): leaves are not linked to each other."""
        if self._level is not None:
            return self._level
        adj: dict[str, set[str]] = {}
        sl = self.switch_links  # each pair of switches once (parallel links join the same two)
        for a, b in dict.fromkeys(zip(map(itemgetter(0), sl), map(itemgetter(2), sl))):
            sa = adj.get(a)
            if sa is None:
                sa = adj[a] = set()
            sa.add(b)
            sb = adj.get(b)
            if sb is None:
                sb = adj[b] = set()
            sb.add(a)
        level = dict.fromkeys(self.switches, 0)
        with_hosts = (set(map(itemgetter(0), self.hca_links.values())) if not self.aggregation else
                      {link[0] for _k, link in self.host_links()})
        demoted = set()
        for s in with_hosts:
            nb = adj.get(s)
            if nb and len(nb) >= 2:
                inside = sum(1 for t in nb if t in with_hosts)
                if 2 * inside > len(nb):
                    demoted.add(s)
        frontier = sorted(with_hosts - demoted) if len(demoted) < len(with_hosts) else sorted(with_hosts)
        for s in frontier:
            level[s] = 1
        depth = 1
        while frontier:
            depth += 1
            nxt = []
            for s in frontier:
                for t in adj.get(s, ()):
                    if level.get(t, 0) == 0:
                        level[t] = depth
                        nxt.append(t)
            frontier = sorted(nxt)
        self._level = level
        return level

    def rates(self) -> Counter:
        """Link label (``4xNDR (400 Gb/s)``) -> number of links, over HCA and switch links."""
        c: Counter = Counter()
        for link in self.hca_links.values():
            c[rate_label(link[2], link[3], link[4])] += 1
        for link in self.switch_links:
            c[rate_label(link[4], link[5], link[6])] += 1
        return c

    def summary(self) -> dict:
        level = self.layers()
        tiers = Counter(level.values())
        names = {1: "leaf", 2: "spine", 3: "core"}
        layers = {names.get(t, f"tier{t}") if t else "unconnected": n for t, n in sorted(tiers.items())}
        return {
            "source": self.source,
            "kind": self.kind,
            "switches": len(self.switches),
            "hcas": len(self.hcas) - len(self.aggregation),
            "aggregation_nodes": len(self.aggregation),
            "links": len(self.hca_links) + len(self.switch_links) + self.other_links,
            "hca_links": len(self.hca_links),
            "switch_links": len(self.switch_links),
            "other_links": self.other_links,
            "layers": layers,
            "rates": dict(sorted(self.rates().items(), key=lambda kv: (-kv[1], kv[0]))),
        }


def rate_label(width: str | None, speed: str | None, rate: float | None) -> str:
    gbps = f"{rate:g} Gb/s" if rate else "rate unknown"
    if width and speed:
        return f"{width}{speed} ({gbps})"
    if width:
        return f"{width} ({gbps})"
    return gbps


def switch_label(g: FabricGraph, guid: str | None) -> str:
    """A switch as findings name it: its description and GUID (an LLDP switch: its name), the GUID alone without a
    description, ``?`` for none."""
    if guid is None:
        return "?"
    sw = g.switches.get(guid)
    if sw is None or not sw.desc:
        return guid
    return f"{sw.desc!r} ({guid})" if not guid.startswith("lldp:") else f"{sw.desc!r}"


def switch_ref(g: FabricGraph, guid: str | None) -> dict | None:
    """A switch as JSON documents name it: ``{"guid", "desc"}``; None for none."""
    if guid is None:
        return None
    sw = g.switches.get(guid)
    return {"guid": guid, "desc": sw.desc if sw else None}


def finding(rule_id: str, message: str, *, subject: str, line: int | None = None, severity=None,
            evidence: tuple[str, ...] = (), host: str | None = None) -> Finding:
    """A fabric finding; ``host``: the host it is about, when there is one (per-host config ignores)."""
    r = RULES[rule_id]
    return Finding(rule=rule_id, severity=severity or r.severity, message=message, subject=subject, line=line,
                   fix=r.fix, evidence=evidence, host=host)


# ---------------------------------------------------------------------------------------------------------------
# Reading a fabric file

_P_LINE = re.compile(r"^(SW|CA|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s")
_TOPO_NODE = re.compile(r'^(Switch|Ca|Rt)\s+\d+\s+"[SHR]-')
_LINK_MODE = re.compile(r'^0x[0-9a-fA-F]+\s+"')


def detect_kind(text: str, *, source: str) -> str:
    """The kind of fabric output, from its first meaningful line."""
    for lineno, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if not s or s.startswith("#") or s.startswith("ibwarn:"):
            continue
        if s.startswith(("vendid=", "devid=", "sysimgguid=", "switchguid=", "caguid=", "rtguid=")) or _TOPO_NODE.match(s):
            return "ibnetdiscover"
        if _P_LINE.match(s):
            return "ibnetdiscover-ports"
        if s.startswith(("Switch: 0x", "Switch 0x", "CA: ", "Router: ")) or _LINK_MODE.match(s) or (
                "==(" in s and ")==>" in s):  # a port line: with --line, or filtered by grep without its header
            return "iblinkinfo"
        raise ParseError(f"not ibnetdiscover or iblinkinfo output: {s[:80]!r}", path=source, line=lineno, fix=_FIX)
    raise InputError("no fabric in the file (empty, or only comments)", path=source,
                     fix="capture it with: ibnetdiscover > fabric.txt (on a host with access to the subnet manager)")


def read_fabric_text(path: str) -> str:
    from ncclctl.inputs import decode, read_bytes

    data = read_bytes(path, "fabric")
    assert data is not None
    return decode(data, path, fix=_FIX)


def parse_fabric_text(text: str, *, source: str):
    """(kind, Fabric): the parser is chosen by content (after a pasted prompt and command echo)."""
    from ncclctl.parsers._common import paste_text

    text, _pasted = paste_text(text, ("ibnetdiscover", "iblinkinfo"))
    kind = detect_kind(text, source=source)
    if kind == "iblinkinfo":
        try:
            from ncclctl.parsers.iblinkinfo import parse_iblinkinfo
        except ImportError:  # pragma: no cover - the parser ships with ncclctl; guard for partial installs
            raise InputError("iblinkinfo output is not supported by this ncclctl build", path=source,
                             fix="give ibnetdiscover output instead") from None
        return kind, parse_iblinkinfo(text, source=source)
    from ncclctl.parsers.ibnetdiscover import parse_ibnetdiscover

    return kind, parse_ibnetdiscover(text, source=source)


def accelerator() -> Any:
    """The C readers (``ncclctl.fabric._fastread``), or None: not built (no compiler at install time) or turned off
    with ``NCCLCTL_PURE_PYTHON=1`` (the tests run both)."""
    import os

    if os.environ.get("NCCLCTL_PURE_PYTHON"):
        return None
    try:
        from ncclctl.fabric import _fastread
    except ImportError:
        return None
    return _fastread



# ---------------------------------------------------------------------------------------------------------------
# Building


def from_fabric(fabric, *, source: str, kind: str = "ibnetdiscover") -> FabricGraph:
    """The graph of a parsed :class:`~ncclctl.parsers.ibnetdiscover.Fabric`.

    A fast pass handles the usual case (every link listed from both ends, consistently, every node described
    once) without indexing every port; when its counts do not add up, the careful pass below redoes the work and
    says what is wrong.
    """
    g = _from_fabric_fast(fabric, source=source, kind=kind)
    if g is None:
        g = _from_fabric_careful(fabric, source=source, kind=kind)
    _mark_aggregation(g, fabric)
    for note in getattr(fabric, "notes", ()):
        g.findings.append(finding("FAB019", note, subject=source))
    return g


_AN_DESC = "Aggregation Node"


def _mark_aggregation(g: FabricGraph, fabric) -> None:
    """SHARP Aggregation Nodes: a CA described as an Aggregation Node (the firmware's "Mellanox Technologies
    Aggregation Node"), or one inside a switch (its system image GUID is the switch's GUID; only the topology form
    prints it)."""
    switches = g.switches
    agg = g.aggregation
    hcas = g.hcas
    for guid, (desc, _ports, _line) in hcas.items():
        if _AN_DESC in desc:
            agg.add(guid)
    for n in fabric.nodes:
        sysimg = n.sysimgguid
        if sysimg is not None and sysimg != n.guid and n.kind == "ca" and sysimg in switches and n.guid in hcas:
            agg.add(n.guid)


def is_aggregation_desc(desc: str) -> bool:
    """The node description of a SHARP Aggregation Node ("Mellanox Technologies Aggregation Node")."""
    return _AN_DESC.lower() in desc.lower()


def _known_ports(n, listed_ports: bool) -> tuple[int, ...]:
    """Ports an HCA is known to have: all of them for the topology form (it prints the port count), else those
    the output lists without a link (their linked ports are added from the links)."""
    if listed_ports:
        return tuple(range(1, n.nports + 1))
    unlinked = getattr(n, "unlinked", ())
    return tuple(sorted({p.port for p in unlinked})) if unlinked else ()


def _rate(width: str | None, speed: str | None, _cache: dict = {}) -> float | None:  # noqa: B006 - memo
    key = (width, speed)
    try:
        return _cache[key]
    except KeyError:
        pass
    rate = None
    if width and speed and speed in LANE_GBPS:
        try:
            rate = int(width[:-1]) * LANE_GBPS[speed]
        except ValueError:
            rate = None
    _cache[key] = rate
    return rate


#: The key of the claims' fingerprints: a random number drawn once per process, the first item of every claim
#: tuple hashed (:func:`claim`). A file cannot choose GUIDs whose fingerprints cancel without knowing it, whatever
#: PYTHONHASHSEED says (with a fixed seed, string hashes are public); the C reader keys its SipHash the same way.
CLAIM_KEY = int.from_bytes(os.urandom(8), "little")


def claim(link: tuple) -> int:
    """The fingerprint of one end's claim of a link, (guid, port, remote guid, remote port): the claims of both
    ends are compared as sums of these. The hash of the claim behind :data:`CLAIM_KEY` (unknown to the file's
    author). A tuple's hash is nearly linear in its items (additions and rotations), so plain sums of hashes could
    agree for two swapped links (seen for a swapped pair of spine link lines in 1 hash seed of 8); the sums of the
    hashes and of their squares (both exact, packed into one integer: the first sum stays far below 2**128) agree
    only when the claims do."""
    h = hash((CLAIM_KEY, *link))
    return h + (h * h << 128)


def claims(links) -> int:
    """The sum of :func:`claim` over an iterable of claim tuples ``(CLAIM_KEY, guid, port, remote guid, remote
    port)`` (the key first, as ``zip(repeat(CLAIM_KEY), ...)`` gives them), with C loops."""
    hs = list(map(hash, links))
    return sum(hs) + (sum(map(mul, hs, hs)) << 128)


def _from_fabric_fast(fabric, *, source: str, kind: str) -> FabricGraph | None:
    """One pass; None when anything is unusual. Both ends of every link must agree: the multiset of links as the
    HCAs list them must equal the multiset as the switches list them (compared by count and by the sum of the
    claims' fingerprints (:func:`claim`), which needs no per-port index), and likewise for the two ends of
    switch-switch links."""
    g = FabricGraph(source=source, kind=kind)
    listed_ports = kind == "ibnetdiscover"
    hcas = g.hcas
    switches = g.switches
    hca_links = g.hca_links
    switch_links = g.switch_links
    ca_claims = sw_claims = fwd = bwd = 0
    acc_ca = acc_sw = 0
    for n in fabric.nodes:
        guid = n.guid
        if n.kind == "ca":
            if guid in hcas:
                return None
            hcas[guid] = (n.desc, _known_ports(n, listed_ports), n.line)
            for p in n.ports:
                if p.remote_kind == "ca" or not p.remote_guid:
                    return None
                ca_claims += 1
                acc_ca += claim((guid, p.port, p.remote_guid, p.remote_port))
                w, sp = p.width, p.speed
                hca_links[(guid, p.port)] = (p.remote_guid, p.remote_port, w, sp, _rate(w, sp), p.line)
        else:
            if guid in switches:
                return None
            switches[guid] = Switch(guid=guid, desc=n.desc, nports=n.nports, line=n.line, lid=n.lid, kind=n.kind)
            for p in n.ports:
                rguid = p.remote_guid
                if not rguid:
                    return None
                if p.remote_kind == "ca":
                    sw_claims += 1
                    acc_ca -= claim((rguid, p.remote_port, guid, p.port))
                elif guid < rguid or (guid == rguid and p.port < p.remote_port):
                    fwd += 1
                    acc_sw += claim((guid, p.port, rguid, p.remote_port))
                    w, sp = p.width, p.speed
                    switch_links.append((guid, p.port, rguid, p.remote_port, w, sp, _rate(w, sp), p.line))
                else:
                    bwd += 1
                    acc_sw -= claim((rguid, p.remote_port, guid, p.port))
    if (acc_ca or acc_sw or ca_claims != sw_claims or fwd != bwd or len(hca_links) != ca_claims
            or not hcas.keys().isdisjoint(switches.keys())):
        return None
    if any(link[0] not in switches for link in hca_links.values()):
        return None
    return g


def _from_fabric_careful(fabric, *, source: str, kind: str) -> FabricGraph:
    g = FabricGraph(source=source, kind=kind)
    kinds: dict[str, str] = {}
    first_line: dict[str, int] = {}
    nodes = []
    listed_ports = kind == "ibnetdiscover"  # the topology form lists every node with its port count
    for n in fabric.nodes:
        if n.guid in kinds:
            g.findings.append(finding(
                "FAB006", f"GUID {n.guid} is described twice (line {first_line[n.guid]} and line {n.line}): "
                          f"{_desc_of(g, n.guid)!r} and {n.desc!r}",
                subject=source, line=n.line))
            continue
        kinds[n.guid] = n.kind
        first_line[n.guid] = n.line
        nodes.append(n)
        if n.kind == "ca":
            g.hcas[n.guid] = (n.desc, _known_ports(n, listed_ports), n.line)
        else:
            g.switches[n.guid] = Switch(guid=n.guid, desc=n.desc, nports=n.nports, line=n.line, lid=n.lid, kind=n.kind)

    ends: dict[tuple[str, int], FabricPort] = {}
    for n in nodes:
        guid = n.guid
        for p in n.ports:
            key = (guid, p.port)
            if key in ends:
                if kind == "ibnetdiscover-ports":
                    g.findings.append(finding(
                        "FAB006", f"GUID {guid} port {p.port} is listed twice (lines {ends[key].line} and {p.line}): "
                                  "two devices share this GUID", subject=source, line=p.line))
                else:
                    g.findings.append(finding(
                        "FAB011", f"port {p.port} of {n.desc or guid} is listed twice (lines {ends[key].line} and "
                                  f"{p.line})", subject=source, line=p.line))
                continue
            ends[key] = p

    undescribed: dict[str, int] = {}
    unresolved: list[int] = []
    hca_links = g.hca_links
    switches = g.switches
    for key, p in ends.items():
        rguid, rport = p.remote_guid, p.remote_port
        if not rguid:
            unresolved.append(p.line)  # the output names the far end by LID only and the scan did not reach it
            continue
        rkey = (rguid, rport)
        back = ends.get(rkey)
        if back is not None:
            if back.remote_guid != key[0] or back.remote_port != key[1]:
                rkind = kinds.get(rguid, p.remote_kind)
                if rkind == "ca" and kinds.get(key[0]) != "ca":
                    g.findings.append(finding(
                        "FAB006", f"HCA {back_desc(g, rguid)!r} ({rguid}) port {rport} is reached from "
                                  f"{_sw_desc(g, key[0])} port {key[1]} (line {p.line}) but its own port says "
                                  f"{_sw_desc(g, back.remote_guid)} port {back.remote_port} (line {back.line}): two "
                                  "HCAs share this GUID, or the file was edited", subject=source, line=p.line))
                else:
                    g.findings.append(finding(
                        "FAB011", f"{_node_desc(g, key[0])} port {key[1]} says it reaches {_node_desc(g, rguid)} port "
                                  f"{rport} (line {p.line}), whose port says {_node_desc(g, back.remote_guid)} port "
                                  f"{back.remote_port} (line {back.line})", subject=source, line=p.line))
                continue  # the far end's own (consistent) view is recorded from there
            elif rkey < key:
                continue  # recorded from the other end
        elif rguid not in kinds:
            # The far end has no block of its own: a truncated capture (or iblinkinfo, which lists switches only).
            if rguid not in undescribed:
                undescribed[rguid] = p.line
            rk = p.remote_kind
            kinds[rguid] = rk
            if rk == "ca":
                g.hcas[rguid] = (p.remote_desc or "", (), p.line)
            else:
                switches[rguid] = Switch(guid=rguid, desc=p.remote_desc or "", nports=0, line=p.line, kind=rk,
                                         described=False)
        lkind = kinds[key[0]]
        rkind = kinds.get(rguid, p.remote_kind)
        rate = _rate(p.width, p.speed)
        if lkind == "ca" and rkind != "ca":
            hca_links[key] = (rguid, rport, p.width, p.speed, rate, p.line)
        elif rkind == "ca" and lkind != "ca":
            line = back.line if back is not None else p.line
            prev = hca_links.get(rkey)
            if prev is not None:
                g.findings.append(finding(
                    "FAB006", f"HCA {back_desc(g, rguid)!r} ({rguid}) port {rport} is reached from two switch ports: "
                              f"{_sw_desc(g, prev[0])} port {prev[1]} and {_sw_desc(g, key[0])} port {key[1]}: two "
                              "HCAs share this GUID", subject=source, line=p.line))
                continue
            hca_links[rkey] = (key[0], key[1], p.width, p.speed, rate, line)
        elif lkind != "ca" and rkind != "ca":
            g.switch_links.append((key[0], key[1], rguid, rport, p.width, p.speed, rate, p.line))
        else:
            g.other_links += 1
            if lkind == "ca" and rkind == "ca":
                g.direct[key] = rkey
                g.direct[rkey] = key
    if unresolved:
        g.findings.append(finding(
            "FAB010", f"{len(unresolved)} link(s) lead to nodes the output does not identify (first at line "
                      f"{unresolved[0]}); those links are left out (capture iblinkinfo --line, or ibnetdiscover)",
            subject=source, line=unresolved[0]))
    if undescribed and kind != "iblinkinfo":
        (guid0, line0) = next(iter(undescribed.items()))
        g.findings.append(finding(
            "FAB010", f"{len(undescribed)} GUID(s) reached by links have no block in the file (first: {guid0} at "
                      f"line {line0}); the output looks truncated, its far ends are taken from the link lines",
            subject=source, line=line0))
    return g


def _desc_of(g: FabricGraph, guid: str) -> str:
    if guid in g.hcas:
        return g.hcas[guid][0]
    sw = g.switches.get(guid)
    return sw.desc if sw else ""


def back_desc(g: FabricGraph, guid: str) -> str:
    return _desc_of(g, guid)


def _sw_desc(g: FabricGraph, guid: str) -> str:
    sw = g.switches.get(guid)
    if sw is None:
        return guid
    return f"{sw.desc!r} ({guid})" if sw.desc else guid


def _node_desc(g: FabricGraph, guid: str) -> str:
    d = _desc_of(g, guid)
    return f"{d!r} ({guid})" if d else guid


def norm_guid(text: str | None) -> str | None:
    """``0xA088C20300A96623`` / ``a088:c203:00a9:6623`` -> ``a088c20300a96623``."""
    if not text:
        return None
    s = text.strip().lower()
    if s.startswith("0x"):
        s = s[2:]
    s = s.replace(":", "")
    if not s or any(c not in "0123456789abcdef" for c in s):
        return None
    return s.rjust(16, "0")


def from_lldp(hosts, *, source: str) -> FabricGraph:
    """The graph of a RoCE/Ethernet fabric seen through LLDP: ``hosts`` is ``[(name, Node, line)]``.

    Each RDMA NIC with an Ethernet port becomes an HCA ``"<host> <nic>"``; its port's netdev's LLDP neighbour names
    the switch (chassis id, else chassis name) and the switch port (port id, else its description); a RoCE LAG port
    (netdev a bond) takes the neighbour of the bond's first slave. A port that is not ACTIVE, or has no LLDP
    neighbour, has no link. Switch-switch links are not visible: every switch is a leaf.
    """
    g = FabricGraph(source=source, kind="lldp")
    owner: dict[str, str] = {}
    claimed: dict[tuple[str, str], str] = {}
    from ncclctl.names import natural_key

    for name, node, line in hosts:
        netdevs = {nd.name: nd for nd in node.netdevs}
        for nic in sorted(node.nics, key=lambda n: natural_key(n.name)):
            eth = [p for p in nic.ports if p.link_layer == "Ethernet"]
            if not eth:
                continue
            guid = norm_guid(nic.node_guid) or f"{name}/{nic.name}"
            if guid in owner:
                g.findings.append(finding(
                    "FAB006", f"{name} {nic.name} has GUID {guid}, as {owner[guid]} has: two HCAs share this GUID "
                              "(node models copied from one host?)", subject=source, line=line))
                continue
            owner[guid] = f"{name} {nic.name}"
            g.hcas[guid] = (f"{name} {nic.name}", tuple(p.num for p in eth), line)
            for port in eth:
                ndname = port.netdev or (nic.netdevs[0] if len(nic.netdevs) == 1 else None)
                nd = netdevs.get(ndname) if ndname else None
                lldp = nd.lldp if nd is not None else None
                if lldp is None and nd is not None and nd.kind == "bond":
                    # RoCE LAG: LLDP runs on the bond's slaves; the first slave with a neighbour stands for the
                    # port (an MLAG pair's second switch is not a second rail).
                    slaves = sorted((d for d in node.netdevs if d.master == nd.name and d.lldp is not None),
                                    key=lambda d: natural_key(d.name))
                    if slaves:
                        ndname, lldp = f"{nd.name} via {slaves[0].name}", slaves[0].lldp
                if not port.is_active or lldp is None or not (lldp.chassis_id or lldp.chassis_name):
                    continue
                ident = (lldp.chassis_id or lldp.chassis_name or "").lower()
                sw = "lldp:" + ident
                if sw not in g.switches:
                    g.switches[sw] = Switch(guid=sw, desc=lldp.chassis_name or lldp.chassis_id or "", nports=0,
                                            line=line)
                swport = lldp.port_id or lldp.port_descr or "?"
                who = f"{name} {nic.name} ({ndname})"
                if (sw, swport) in claimed:
                    g.findings.append(finding(
                        "FAB011", f"{who} and {claimed[(sw, swport)]} both report switch "
                                  f"{g.switches[sw].desc!r} port {swport} as their LLDP neighbour (stale LLDP data?)",
                        subject=source, line=line))
                claimed[(sw, swport)] = who
                width = port.active_width.lower() if port.active_width else None
                rate = port.rate_gbps or (nd.speed_mbps / 1000.0 if nd is not None and nd.speed_mbps else None)
                g.hca_links[(guid, port.num)] = (sw, swport, width, None, rate, line)
    return g


# ---------------------------------------------------------------------------------------------------------------
# Hosts behind the HCAs


@dataclass(slots=True)
class Endpoint:
    """One HCA port of a host: the unit a rail is made of."""

    host: str
    hca: str
    port: int
    guid: str
    line: int
    link: Link | None

    @property
    def key(self) -> str:
        return f"{self.hca}:{self.port}"


def host_endpoints(g: FabricGraph, *, known_hosts: dict[str, int | None] | None = None,
                   model_guids: dict[str, tuple[str, str]] | None = None,
                   host_guids: dict[tuple[str, str], str] | None = None,
                   unknown_out: list | None = None) -> tuple[dict[str, dict[str, Endpoint]], list[Finding]]:
    """Host -> {"<hca>:<port>": Endpoint} from the HCAs' node descriptions ("<host> <hca>", as rdma-ndd writes them).

    ``known_hosts`` (the inventory) restricts hosts to those names (a fully qualified name matches its short name).
    ``model_guids`` (GUID -> (host, nic) from node models) places HCAs whose description names no host;
    ``host_guids`` ((host, nic) -> GUID) checks the fabric's GUID against the model's (FAB014).
    SHARP Aggregation Nodes are not hosts and are left out. HCAs that name no host are FAB007 findings, one per HCA
    (the first 20); with ``unknown_out`` they are appended there as :class:`UnknownHca` instead, for the caller to
    place (:func:`unknown_findings`, the layout's unnamed host positions).
    """
    out: dict[str, dict[str, Endpoint]] = {}
    findings: list[Finding] = []
    unknown: list[tuple[str, str, int]] = []
    src = g.source
    links = g.hca_links
    agg = g.aggregation
    fast = None
    if known_hosts is None and model_guids is None and host_guids is None:  # a fabric file alone
        fast = accelerator()
    res = fast.endpoints(g.hcas, links, agg, _NO_HOST, Endpoint) if fast is not None else None
    # linked ports the HCA's port list lacks (the ports form lists only unlinked ones), in link order, where the
    # links are not paired with the HCAs (below): found with C loops, else by a loop
    extra_ports: dict[str, tuple[int, ...]] = {}
    # the usual fabric: at most one link per HCA, in the HCAs' order (the readers put each HCA's links right after
    # it): the loop takes each HCA's link in step with it (no look-up, no extra_ports). ``paired`` holds, per HCA,
    # its (key, link) or None (no link).
    paired: Any = None
    if res is not None:  # the loop below in C, for the usual fabric (else the loop, which reports the rest)
        out, unknown = res
    else:
        hcas_get = g.hcas.get
        keys_ = list(links)
        infos: list[Any] = []
        link_guids = list(map(itemgetter(0), keys_))
        hca_guids = list(g.hcas)
        if link_guids == hca_guids:  # one link each (the ports form)
            paired = links.items()
        elif (len(linked := set(link_guids)) == len(link_guids)
              and list(compress(hca_guids, has := list(map(linked.__contains__, hca_guids)))) == link_guids):
            step = iter(links.items())  # some HCAs have no link (the topology form)
            paired = [next(step) if h else None for h in has]
        del link_guids, hca_guids
        if paired is None:
            infos = list(map(hcas_get, map(itemgetter(0), keys_)))
            if None not in infos:
                listed = list(map(contains, map(itemgetter(1), infos), map(itemgetter(1), keys_)))
                if not all(listed):
                    extra = list(compress(keys_, map(not_, listed)))
                    extra_ports = dict(zip(map(itemgetter(0), extra), zip(map(itemgetter(1), extra))))
                    if len(extra_ports) != len(extra):  # an HCA with two such ports
                        extra_ports = _extra_ports(keys_, hcas_get)
            else:
                extra_ports = _extra_ports(keys_, hcas_get)
        del keys_, infos
    keys: dict[tuple[str, int], str] = {}  # one "<hca>:<port>" string per distinct pair
    links_get = links.get
    last_host: str | None = None
    eps: dict[str, Endpoint] = {}
    lport = link = None
    for (guid, (desc, ports, line)), lk in (zip(g.hcas.items(), repeat(None) if paired is None else paired)
                                            if res is None else ()):
        if agg and guid in agg:
            continue
        toks = desc.split()
        host = hca = None
        if len(toks) == 2:
            host, hca = toks
            if (host[0] in "lL(" or not host.isascii()) and host.lower() in _NO_HOST:
                host = None  # rdma-ndd ran before the hostname was set
            elif known_hosts is not None and host not in known_hosts:
                short = host.split(".", 1)[0]
                host = short if short in known_hosts else None
        if host is None and model_guids is not None and guid in model_guids:
            host, hca = model_guids[guid]
            if len(toks) == 2:
                findings.append(finding(
                    "FAB014", f"{host} {hca}: the fabric describes GUID {guid} as {desc!r}, the node model of {host} "
                              "has it; the model wins", subject=src, line=line, host=host))
        if host is None:
            unknown.append((guid, desc, line))
            continue
        assert hca is not None  # set together with host, from the description or from model_guids
        if host_guids is not None:
            expected = host_guids.get((host, hca))
            if expected is not None and expected != guid:
                findings.append(finding(
                    "FAB014", f"{host} {hca}: the fabric's GUID is {guid}, the host's node model says {expected}",
                    subject=src, line=line, host=host))
        if host != last_host:  # a host's HCAs are usually listed one after the other
            mine = out.get(host)
            if mine is None:
                mine = out[host] = {}
            eps = mine
            last_host = host
        if lk is not None:  # paired: this HCA's one link (an HCA without one: the look-up below finds none)
            (_, lport), link = lk
            all_ports = ports if lport in ports else ports + (lport,) if ports else (lport,)
        else:
            more = extra_ports.get(guid)
            all_ports = ports if more is None else ports + more if ports else more
            if not all_ports:
                all_ports = (1,)
        for port in all_ports:
            ep = Endpoint(host, hca, port, guid, line,
                          link if lk is not None and port == lport else links_get((guid, port)))
            k = keys.get((hca, port))
            if k is None:
                k = keys[(hca, port)] = f"{hca}:{port}"
            prev = eps.setdefault(k, ep)
            if prev is not ep:
                findings.append(finding(
                    "FAB012", f"{host} {hca}: the description {desc!r} is used by two HCAs ({prev.guid} at line "
                              f"{prev.line} and {guid} at line {line}); the second is ignored",
                    subject=src, line=line))
    if unknown_out is not None:
        known = known_hosts is not None
        unknown_out.extend(UnknownHca(guid, desc, line, _unknown_why(desc, known)) for guid, desc, line in unknown)
        return out, findings
    for i, (guid, desc, line) in enumerate(unknown):
        if i == _REPORT_CAP:
            findings.append(finding(
                "FAB007", f"... and {len(unknown) - _REPORT_CAP} more HCA(s) whose description names no "
                          f"{'inventory ' if known_hosts is not None else ''}host", subject=src, line=line))
            break
        findings.append(finding("FAB007", f"HCA {guid}: description {desc!r} {_unknown_why(desc, known_hosts is not None)}; "
                                          "the HCA is left out", subject=src, line=line))
    return out, findings


def _extra_ports(keys, hcas_get) -> dict[str, tuple[int, ...]]:
    """HCA -> its linked ports its port list lacks, in link order (``keys``: the links' (guid, port))."""
    out: dict[str, list[int]] = {}
    for guid, port in keys:
        info = hcas_get(guid)
        if info is not None and port not in info[1]:
            ports = out.get(guid)
            if ports is None:
                out[guid] = [port]
            else:
                ports.append(port)
    return {guid: tuple(ports) for guid, ports in out.items()}


@record
class UnknownHca:
    """An HCA whose node description names no (inventory) host: ``why`` is ``default`` (not '<host> <hca>': the
    firmware's description, rdma-ndd not running), ``localhost`` (the host's name was unset when rdma-ndd ran) or
    ``not-inventory`` (a host the inventory lacks)."""

    guid: str
    desc: str
    line: int
    why: str


def _unknown_why(desc: str, known: bool) -> str:
    toks = desc.split()
    if len(toks) != 2:
        return "default"
    if toks[0].lower() in _NO_HOST:
        return "localhost"
    return "not-inventory" if known else "default"


WHY_TEXT = {
    "default": "is not '<host> <hca>' (the adapter's firmware default: rdma-ndd has not set it)",
    "localhost": "names no real host (rdma-ndd ran before the hostname was set)",
    "not-inventory": "names no inventory host",
}


def unknown_findings(g: FabricGraph, unknown: list[UnknownHca]) -> list[Finding]:
    """FAB007 for HCAs that name no host: one finding per description (firmware defaults are usually shared by
    dozens of HCAs) or, for hosts the inventory lacks, per host; the first 20 such findings, then a count."""
    groups: dict[tuple[str, str], list[UnknownHca]] = {}
    for u in unknown:
        toks = u.desc.split()
        if u.why == "not-inventory":
            key = (u.why, toks[0])
        elif u.why == "localhost":
            key = (u.why, toks[0].lower())
        else:
            key = (u.why, " ".join(toks))
        groups.setdefault(key, []).append(u)
    out: list[Finding] = []
    for i, ((why, label), us) in enumerate(sorted(groups.items(), key=lambda kv: kv[1][0].line)):
        if i == _REPORT_CAP:
            rest = sum(len(v) for v in list(groups.values())[_REPORT_CAP:])
            out.append(finding("FAB007", f"... and {rest} more HCA(s) whose description names no host",
                               subject=g.source, line=us[0].line))
            break
        first = us[0]
        if len(us) == 1:
            msg = f"HCA {first.guid}: description {first.desc!r} {WHY_TEXT[why]}; the HCA is left out"
        elif why == "localhost":
            from ncclctl.names import natural_key

            hcas = ", ".join(sorted({u.desc.split()[1] for u in us}, key=natural_key))
            msg = (f"{len(us)} HCAs ({hcas}) name the host {first.desc.split()[0]!r}: rdma-ndd ran before the "
                   f"hostname was set (first: {first.guid} at line {first.line}); they are left out")
        elif why == "not-inventory":
            from ncclctl.names import natural_key

            hcas = ", ".join(sorted({u.desc.split()[1] for u in us}, key=natural_key))
            msg = f"host {label} ({len(us)} HCAs: {hcas}) names no inventory host; its HCAs are left out"
        else:
            msg = (f"{len(us)} HCAs: description {' '.join(first.desc.split())!r} {WHY_TEXT[why]} (first: "
                   f"{first.guid} at line {first.line}); they are left out")
        out.append(finding("FAB007", msg, subject=g.source, line=first.line,
                           host=label if why == "not-inventory" else None))
    return out
