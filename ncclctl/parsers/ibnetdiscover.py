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
deduplicates them. The parser is single-pass and linear in the input size (fabric files reach 100 MB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ncclctl.errors import ParseError

_FIX = "pass the unmodified output of 'ibnetdiscover' (or 'ibnetdiscover -p')"

_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]{1,16})"\s*(?:#\s*"(.*?)"(.*))?$')
_SW_EXTRA = re.compile(r"(?:(base|enhanced)\s+)?port\s+0\s+lid\s+(\d+)\s+lmc\s+(\d+)")
_LINK_SW = re.compile(
    r'^\[(\d+)\](?:\[ext (\d+)\])?\s+"([SHR])-([0-9a-fA-F]{1,16})"\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]{1,16})\))?'
    r'\s*(?:#\s*"(.*?)"\s*lid\s+(\d+)\s+(\d+x)(\w+)(.*))?$')
_LINK_CA = re.compile(
    r'^\[(\d+)\](?:\(([0-9a-fA-F]{1,16})\))?\s+"([SHR])-([0-9a-fA-F]{1,16})"\[(\d+)\](?:\[ext \d+\])?'
    r'\s*(?:#\s*lid\s+(\d+)\s+lmc\s+(\d+)\s+"(.*?)"\s*lid\s+(\d+)\s+(\d+x)(\w+)(.*))?$')
_PORTS = re.compile(
    r"^(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+(\d+x)\s+(\w+)"
    r"(?:\s+-\s+(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+\(\s*'(.*?)'\s+-\s+'(.*?)'\s*\))?\s*$")

_KIND = {"S": "switch", "H": "ca", "R": "router", "Switch": "switch", "Ca": "ca", "Rt": "router",
         "SW": "switch", "CA": "ca", "RT": "router"}
#: Per-lane Gb/s of the IB speed names (SDR..XDR); FDR10 and FDR carry 64b/66b encoding.
LANE_GBPS = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0, "EDR": 25.0, "HDR": 50.0,
             "NDR": 100.0, "XDR": 200.0}


@dataclass(frozen=True)
class FabricPort:
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

    @property
    def rate_gbps(self) -> float | None:
        if not self.width or not self.speed or self.speed not in LANE_GBPS:
            return None
        return int(self.width[:-1]) * LANE_GBPS[self.speed]


@dataclass(frozen=True)
class FabricNode:
    kind: str  # switch | ca | router
    guid: str  # 16 lower-case hex digits, no 0x
    nports: int
    desc: str
    lid: int | None = None
    vendid: str | None = None
    devid: str | None = None
    sysimgguid: str | None = None
    ports: tuple[FabricPort, ...] = ()
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Fabric:
    nodes: tuple[FabricNode, ...]

    def node(self, guid: str) -> FabricNode | None:
        return self._index().get(guid)

    def _index(self) -> dict[str, FabricNode]:
        cache = self.__dict__.get("_idx")
        if cache is None:
            cache = {n.guid: n for n in self.nodes}
            object.__setattr__(self, "_idx", cache)
        return cache

    def links(self) -> list[tuple[str, int, str, int, FabricPort]]:
        """Each link once: (guid_a, port_a, guid_b, port_b, the FabricPort seen from a), a <= b."""
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


def _guid(text: str) -> str:
    return text.lower().rjust(16, "0")


def parse_ibnetdiscover(text: str | bytes, *, source: str = "ibnetdiscover") -> Fabric:
    """The topology-file form (default output) or the ``-p`` ports form, detected from the content."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = text[: exc.start].count(b"\n") + 1
            raise ParseError("output is not UTF-8 text", path=source, line=line, fix=_FIX) from None
    try:
        lines = text.splitlines()
        for raw in lines:
            s = raw.strip()
            if not s or s.startswith("#"):
                continue
            if _PORTS.match(s):
                return _parse_ports(lines, source)
            break
        return _parse_topology(lines, source)
    except ParseError:
        raise
    except Exception as exc:  # pragma: no cover - defensive: the parser's own bug must not escape as a crash
        raise ParseError(f"cannot parse: {type(exc).__name__}: {exc}", path=source, fix=_FIX) from None


def _parse_topology(lines: list[str], source: str) -> Fabric:
    nodes: list[FabricNode] = []
    attrs: dict[str, str] = {}
    cur: dict | None = None
    ports: list[FabricPort] = []

    def finish() -> None:
        nonlocal cur, ports
        if cur is not None:
            nodes.append(FabricNode(ports=tuple(ports), **cur))
        cur, ports = None, []

    for lineno, raw in enumerate(lines, 1):
        s = raw.strip().replace("\t", " ")
        if not s or s.startswith("#"):
            if not s:
                finish()
            continue
        if s.startswith(("ibwarn:", "ibpanic:", "iberror:")):
            if s.startswith("ibwarn:"):
                continue
            raise ParseError(f"ibnetdiscover failed: {s[:120]}", path=source, line=lineno,
                             fix="run ibnetdiscover again on a host with SM access; the capture holds an error")
        key, eq, value = s.partition("=")
        if eq and key in ("vendid", "devid", "sysimgguid", "switchguid", "caguid", "rtguid"):
            finish()
            attrs[key] = value.split("(")[0].strip()
            continue
        m = _NODE.match(s)
        if m:
            finish()
            kind, nports, letter, guid, desc, rest = m.groups()
            lid = None
            if kind == "Switch" and rest:
                sm = _SW_EXTRA.search(rest)
                lid = int(sm.group(2)) if sm else None
            cur = {"kind": _KIND[kind], "guid": _guid(guid), "nports": int(nports), "desc": desc or "",
                   "lid": lid, "vendid": attrs.get("vendid"), "devid": attrs.get("devid"),
                   "sysimgguid": _guid(attrs["sysimgguid"][2:]) if attrs.get("sysimgguid", "").startswith("0x") else None,
                   "line": lineno}
            attrs = {}
            continue
        if s.startswith("["):
            if cur is None:
                raise ParseError("link line outside a node block", path=source, line=lineno,
                                 fix="the output is truncated at the start; " + _FIX)
            if cur["kind"] == "switch":
                lm = _LINK_SW.match(s)
                if not lm:
                    raise ParseError(f"malformed switch link line: {s[:100]!r}", path=source, line=lineno, fix=_FIX)
                port, ext, rk, rguid, rport, rpguid, rdesc, rlid, width, speed, _ = lm.groups()
            else:
                lm = _LINK_CA.match(s)
                if not lm:
                    raise ParseError(f"malformed link line: {s[:100]!r}", path=source, line=lineno, fix=_FIX)
                port, _pguid, rk, rguid, rport, _lid, _lmc, rdesc, rlid, width, speed, _ = lm.groups()
                ext, rpguid = None, None
            if speed is not None and speed not in LANE_GBPS:
                raise ParseError(f"unknown link speed {speed!r}", path=source, line=lineno,
                                 fix="expected SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR or XDR")
            p = int(port)
            if cur["nports"] and p > cur["nports"] + 64:
                raise ParseError(f"port {p} beyond the node's {cur['nports']} ports", path=source, line=lineno, fix=_FIX)
            ports.append(FabricPort(port=p, remote_kind=_KIND[rk], remote_guid=_guid(rguid), remote_port=int(rport),
                                    remote_port_guid=_guid(rpguid) if rpguid else None, remote_desc=rdesc,
                                    remote_lid=int(rlid) if rlid else None, width=width, speed=speed,
                                    ext=int(ext) if ext else None, line=lineno))
            continue
        raise ParseError(f"unexpected line: {s[:100]!r}", path=source, line=lineno, fix=_FIX)
    finish()
    return Fabric(nodes=tuple(nodes))


def _parse_ports(lines: list[str], source: str) -> Fabric:
    """``-p``: one line per port: ``CA 22 1 0x... 4x NDR - SW 1 17 0x... ( 'a' - 'b' )``. Node GUIDs are not in this
    form; port GUIDs stand in for them (a CA port GUID equals its node GUID on current HCAs; switch ports share it)."""
    by_guid: dict[str, dict] = {}
    for lineno, raw in enumerate(lines, 1):
        s = raw.strip()
        if not s or s.startswith("#") or s.startswith("ibwarn:"):
            continue
        m = _PORTS.match(s)
        if not m:
            raise ParseError(f"malformed ports line: {s[:100]!r}", path=source, line=lineno, fix=_FIX)
        kind, lid, port, guid, width, speed, rkind, rlid, rport, rguid, ldesc, rdesc = m.groups()
        if speed not in LANE_GBPS:
            raise ParseError(f"unknown link speed {speed!r}", path=source, line=lineno, fix=_FIX)
        g = _guid(guid)
        entry = by_guid.setdefault(g, {"kind": _KIND[kind], "guid": g, "nports": 0, "desc": ldesc or "",
                                       "lid": int(lid), "line": lineno, "ports": []})
        entry["nports"] = max(entry["nports"], int(port))
        if rkind:
            entry["ports"].append(FabricPort(port=int(port), remote_kind=_KIND[rkind], remote_guid=_guid(rguid),
                                             remote_port=int(rport), remote_desc=rdesc, remote_lid=int(rlid),
                                             width=width, speed=speed, line=lineno))
    nodes = tuple(FabricNode(kind=e["kind"], guid=e["guid"], nports=e["nports"], desc=e["desc"], lid=e["lid"],
                             ports=tuple(e["ports"]), line=e["line"]) for e in by_guid.values())
    return Fabric(nodes=nodes)
