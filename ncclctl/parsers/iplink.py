"""Parsers for ``ip -j -d link show`` (JSON) and ``ip -d link show`` (text), iproute2 ip/ipaddress.c.

JSON: one array of objects. Keys used here: ``ifindex``, ``link`` (parent name, printed *before*
``ifname``; ``null`` when IFLA_LINK is 0), ``link_index`` + ``link_netnsid`` (parent in another
netns), ``ifname``, ``flags``, ``mtu``, ``master``, ``operstate``, ``link_type``, ``address``,
``linkinfo.{info_kind, info_data, info_slave_kind}``, ``altnames``.

Text, per link (``-d``)::

    10: bond0.100@bond0: <BROADCAST,MULTICAST,M-DOWN> mtu 1500 qdisc noop master br-0 state DOWN ...
        link/ether 00:0c:29:19:bd:e7 brd ff:ff:ff:ff:ff:ff promiscuity 1 minmtu 0 maxmtu 65535
        vlan protocol 802.1Q id 100 <REORDER_HDR>
        bridge_slave state disabled priority 32 ...
        altname enp26s0f0np0

The first continuation line is ``link/<type> [<address>] [brd|peer <addr>] [link-netnsid N] ...``;
``-d`` then prints the link kind on a new line (``    <kind> ...``) and the slave kind on another
(``    <kind>_slave ...``); ``altname`` lines come last. ``name@parent`` shows the parent, ``@NONE``
when IFLA_LINK is 0 and ``@ifN`` when the parent lives in another namespace. ``ip -c`` adds ANSI
colours. Indentation is not relied upon: a line is a new link iff it looks like ``N: name: <...>``.
"""

from __future__ import annotations

import re
from dataclasses import field

from ncclctl.parsers._common import (
    dec,
    json_array_offsets,
    load_json,
    perr,
    run_parser,
    split_lines,
    strip_ansi,
)
from ncclctl.record import record

__all__ = ["IpLink", "parse_ip_link_json", "parse_ip_link_text"]

_JSON_FIX = "pass the unedited output of `ip -j -d link show`"
_TEXT_FIX = "pass the unedited output of `ip -d link show`"

_HEAD_RE = re.compile(
    r"(?P<idx>[0-9]{1,10}):[ \t]+(?P<name>[^\s:]+):[ \t]+<(?P<flags>[^>]*)>(?P<rest>.*)", re.ASCII
)
_KIND_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}", re.ASCII)
#: Continuation lines that are not a link kind.
_NOT_KIND = frozenset(
    {"altname", "alias", "vf", "prog/xdp", "prog/xdpgeneric", "prog/xdpdrv", "prog/xdpoffload",
     "RX:", "TX:", "RX", "TX", "netns-immutable", "ingress-qos-map", "egress-qos-map",
     # `ip -d addr show` output mixes address lines in; accept it too
     "inet", "inet6", "valid_lft"}
)  # fmt: skip
_ADDR_STOP = frozenset(
    {"brd", "peer", "permaddr", "promiscuity", "allmulti", "minmtu", "maxmtu", "link-netnsid",
     "link-netns", "new-netns", "new-netnsid", "new-ifindex", "protodown"}
)  # fmt: skip


@record
class IpLink:
    """One interface of ``ip -d link show`` (or ``ip -j -d link``)."""
    ifindex: int
    #: Interface name without the ``@parent`` suffix.
    ifname: str
    #: ``UP``, ``LOWER_UP``, ``NO-CARRIER``, ``M-DOWN``, ... in printed order.
    flags: tuple[str, ...]
    mtu: int | None
    #: ``UP``, ``DOWN``, ``UNKNOWN``, ``LOWERLAYERDOWN``, ``DORMANT``, ``NOTPRESENT``, ``TESTING``.
    operstate: str | None
    #: ``ether``, ``infiniband``, ``loopback``, ``none``, ... (the word after ``link/``).
    link_type: str | None
    #: Hardware address (20 bytes on IPoIB); None for ``link/none``.
    address: str | None
    #: ``linkinfo.info_kind``: ``vlan``, ``bond``, ``bridge``, ``veth``, ``macvlan``, ``ipoib``, ...
    kind: str | None
    #: ``linkinfo.info_slave_kind``: ``bond``, ``bridge``, ``team``, ... when this link is a port.
    slave_kind: str | None
    master: str | None
    #: Parent link name (VLAN's lower device, veth peer, ...); None when unknown/absent.
    link: str | None
    #: Parent ifindex when it lives in another network namespace (``@if5`` / ``link_index``).
    link_index: int | None
    link_netnsid: int | None
    vlan_id: int | None
    vlan_protocol: str | None
    altnames: tuple[str, ...] = ()
    line: int = field(default=0, compare=False)

    @property
    def is_up(self) -> bool:
        return "UP" in self.flags


def parse_ip_link_json(text: str, *, source: str = "ip -j -d link show") -> tuple[IpLink, ...]:
    """Parse ``ip -j [-d] [-p] link show`` output. Empty output gives ``()``."""
    return run_parser(_parse_json, text, source, "ip -j link")


def parse_ip_link_text(text: str, *, source: str = "ip -d link show") -> tuple[IpLink, ...]:
    """Parse ``ip [-d] [-c] link show`` text output. Empty output gives ``()``."""
    return run_parser(_parse_text, text, source, "ip link")


# -------------------------------------------------------------------------------------------- JSON


def _parse_json(text: str, source: str) -> tuple[IpLink, ...]:
    if not text.strip():
        return ()
    doc = load_json(text, source, "ip -j link", _JSON_FIX)
    if not isinstance(doc, list):
        raise perr(source, 1, "ip -j link output must be a JSON array", _JSON_FIX)
    offsets = json_array_offsets(text)
    links: list[IpLink] = []
    line, at = 1, 0  # the line of each element, counted on from the previous one: linear, not from the start each time
    for i, obj in enumerate(doc):
        if i < len(offsets):
            line += text.count("\n", at, offsets[i])
            at = offsets[i]
        links.append(_link_from_json(obj, i, line if i < len(offsets) else 1, source))
    return tuple(links)


def _str_or_none(obj: dict, key: str, i: int, line: int, source: str) -> str | None:
    v = obj.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise perr(source, line, f"link #{i}: '{key}' must be a string, got {v!r}", _JSON_FIX)
    return v


def _int_or_none(obj: dict, key: str, i: int, line: int, source: str) -> int | None:
    v = obj.get(key)
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool):
        raise perr(source, line, f"link #{i}: '{key}' must be an integer, got {v!r}", _JSON_FIX)
    return v


def _link_from_json(obj: object, i: int, line: int, source: str) -> IpLink:
    if not isinstance(obj, dict):
        raise perr(source, line, f"link #{i} is not a JSON object", _JSON_FIX)
    ifname = _str_or_none(obj, "ifname", i, line, source)
    ifindex = _int_or_none(obj, "ifindex", i, line, source)
    if ifname is None or ifindex is None:
        raise perr(source, line, f"link #{i} lacks 'ifname' or 'ifindex'", _JSON_FIX)
    flags = obj.get("flags", [])
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise perr(source, line, f"{ifname}: 'flags' must be an array of strings", _JSON_FIX)
    altnames = obj.get("altnames", [])
    if not isinstance(altnames, list) or not all(isinstance(a, str) for a in altnames):
        raise perr(source, line, f"{ifname}: 'altnames' must be an array of strings", _JSON_FIX)

    kind = slave_kind = vlan_proto = None
    vlan_id = None
    info = obj.get("linkinfo")
    if info is not None:
        if not isinstance(info, dict):
            raise perr(source, line, f"{ifname}: 'linkinfo' must be an object", _JSON_FIX)
        kind = _str_or_none(info, "info_kind", i, line, source)
        slave_kind = _str_or_none(info, "info_slave_kind", i, line, source)
        data = info.get("info_data")
        if kind == "vlan" and data is not None:
            if not isinstance(data, dict):
                raise perr(source, line, f"{ifname}: 'info_data' must be an object", _JSON_FIX)
            vlan_id = _int_or_none(data, "id", i, line, source)
            vlan_proto = _str_or_none(data, "protocol", i, line, source)
            if vlan_id is not None and not 0 <= vlan_id <= 4095:
                raise perr(source, line, f"{ifname}: VLAN id {vlan_id} out of range", _JSON_FIX)

    return IpLink(
        ifindex=ifindex,
        ifname=ifname,
        flags=tuple(flags),
        mtu=_int_or_none(obj, "mtu", i, line, source),
        operstate=_str_or_none(obj, "operstate", i, line, source),
        link_type=_str_or_none(obj, "link_type", i, line, source),
        address=_str_or_none(obj, "address", i, line, source),
        kind=kind,
        slave_kind=slave_kind,
        master=_str_or_none(obj, "master", i, line, source),
        link=_str_or_none(obj, "link", i, line, source),
        link_index=_int_or_none(obj, "link_index", i, line, source),
        link_netnsid=_int_or_none(obj, "link_netnsid", i, line, source),
        vlan_id=vlan_id,
        vlan_protocol=vlan_proto,
        altnames=tuple(altnames),
        line=line,
    )


# -------------------------------------------------------------------------------------------- text


class _Text:
    __slots__ = (
        "ifindex", "ifname", "flags", "mtu", "operstate", "master", "link", "link_index",
        "link_netnsid", "link_type", "address", "kind", "slave_kind", "vlan_id", "vlan_proto",
        "altnames", "line", "saw_link_line",
    )  # fmt: skip

    def __init__(self, ifindex: int, ifname: str, line: int) -> None:
        self.ifindex = ifindex
        self.ifname = ifname
        self.line = line
        self.flags: tuple[str, ...] = ()
        self.mtu: int | None = None
        self.operstate: str | None = None
        self.master: str | None = None
        self.link: str | None = None
        self.link_index: int | None = None
        self.link_netnsid: int | None = None
        self.link_type: str | None = None
        self.address: str | None = None
        self.kind: str | None = None
        self.slave_kind: str | None = None
        self.vlan_id: int | None = None
        self.vlan_proto: str | None = None
        self.altnames: list[str] = []
        self.saw_link_line = False

    def build(self) -> IpLink:
        return IpLink(
            ifindex=self.ifindex,
            ifname=self.ifname,
            flags=self.flags,
            mtu=self.mtu,
            operstate=self.operstate,
            link_type=self.link_type,
            address=self.address,
            kind=self.kind,
            slave_kind=self.slave_kind,
            master=self.master,
            link=self.link,
            link_index=self.link_index,
            link_netnsid=self.link_netnsid,
            vlan_id=self.vlan_id,
            vlan_protocol=self.vlan_proto,
            altnames=tuple(self.altnames),
            line=self.line,
        )


def _parse_text(text: str, source: str) -> tuple[IpLink, ...]:
    links: list[IpLink] = []
    cur: _Text | None = None
    seen: dict[int, int] = {}
    for lineno, raw in enumerate(split_lines(text), 1):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        m = _HEAD_RE.fullmatch(line)
        if m:
            if cur is not None:
                links.append(cur.build())
            idx = int(m["idx"])
            if idx in seen:
                raise perr(source, lineno, f"ifindex {idx} listed twice (line {seen[idx]})", _TEXT_FIX)
            seen[idx] = lineno
            cur = _head(idx, m["name"], m["flags"], m["rest"], lineno, source)
            continue
        if cur is None:
            raise perr(
                source,
                lineno,
                f"expected a line like '2: eth0: <...> mtu 1500 ...', got {line[:80]!r}",
                _TEXT_FIX,
            )
        _continuation(cur, line.split(), lineno, source)
    if cur is not None:
        links.append(cur.build())
    return tuple(links)


def _head(idx: int, name: str, flags: str, rest: str, lineno: int, source: str) -> _Text:
    ifname, at, parent = name.partition("@")
    if not ifname:
        raise perr(source, lineno, f"empty interface name in {name!r}", _TEXT_FIX)
    cur = _Text(idx, ifname, lineno)
    if at:
        if parent == "NONE" or not parent:
            cur.link = None
        else:
            cur.link = parent
    cur.flags = tuple(f for f in flags.split(",") if f)
    tokens = rest.split()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok in ("mtu", "master", "state", "qdisc", "mode", "group", "qlen"):
            if nxt is None:
                raise perr(source, lineno, f"{ifname}: '{tok}' without a value (truncated?)", _TEXT_FIX)
            if tok == "mtu":
                cur.mtu = dec(nxt, source, lineno, f"{ifname}: mtu", _TEXT_FIX)
            elif tok == "master":
                cur.master = nxt
            elif tok == "state":
                cur.operstate = nxt
            i += 2
        else:
            i += 1
    return cur


def _continuation(cur: _Text, tokens: list[str], lineno: int, source: str) -> None:
    first = tokens[0]
    if first.startswith("link/"):
        if cur.saw_link_line:
            return  # e.g. "vf 0 link/ether ..." is handled below; a 2nd link/ line is ignored
        cur.saw_link_line = True
        cur.link_type = first[5:] or None
        if len(tokens) > 1 and tokens[1] not in _ADDR_STOP:
            cur.address = tokens[1]
        for j, tok in enumerate(tokens[:-1]):
            if tok == "link-netnsid" and tokens[j + 1].isascii() and tokens[j + 1].isdigit():
                cur.link_netnsid = int(tokens[j + 1][:10])
        if cur.link is not None and cur.link_netnsid is not None:
            lm = re.fullmatch(r"if([0-9]{1,10})", cur.link, re.ASCII)
            if lm:  # "veth0@if5 ... link-netnsid 0": parent ifindex 5 in another namespace
                cur.link_index = int(lm[1])
                cur.link = None
        return
    if first == "altname":
        if len(tokens) < 2:
            raise perr(source, lineno, f"{cur.ifname}: 'altname' without a name", _TEXT_FIX)
        cur.altnames.append(tokens[1])
        return
    if first in _NOT_KIND or first.startswith("prog/") or first[:1].isdigit():
        return  # alias, vf list, xdp program, -s statistics
    if not _KIND_RE.fullmatch(first):
        raise perr(
            source, lineno, f"{cur.ifname}: cannot interpret line {' '.join(tokens)[:80]!r}", _TEXT_FIX
        )
    if first.endswith("_slave"):
        if cur.slave_kind is None:
            cur.slave_kind = first[: -len("_slave")]
        return
    if cur.kind is not None:
        return  # a second kind-like line (unknown detail line): keep the first
    cur.kind = first
    if first == "vlan":
        for j, tok in enumerate(tokens[:-1]):
            nxt = tokens[j + 1]
            if tok == "id":
                vid = dec(nxt, source, lineno, f"{cur.ifname}: vlan id", _TEXT_FIX)
                if vid > 4095:
                    raise perr(source, lineno, f"{cur.ifname}: VLAN id {vid} out of range", _TEXT_FIX)
                cur.vlan_id = vid
            elif tok == "protocol":
                cur.vlan_proto = nxt
