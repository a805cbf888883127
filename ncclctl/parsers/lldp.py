"""Parsers for ``lldpctl -f json`` (lldpd src/client/json_writer.c) and
``lldptool -t -i <if> -V PFC`` (lldpad lldp_8021qaz_clif.c).

lldpd's JSON writer post-processes its tree (``json_element_cleanup``): a one-element array is
replaced by its element, an object whose only key is ``value`` by that value, and an object with a
string ``name`` member becomes ``{<name>: {...rest}}``; the strings ``yes``/``no``/``on``/``off``
become JSON booleans. Hence:

* ``lldp.interface`` is ``{"eth0": {...}}`` for one neighbour and ``[{"eth0": {...}}, {"eth1":
  {...}}]`` for several (the same interface name repeats when a port has two neighbours);
* ``chassis`` is ``{"<SysName>": {"id": {"type": "mac", "value": "..."}, ...}}``, or the bare
  ``{"id": ..., ...}`` when the neighbour sends no system name (and a system name such as ``id`` or
  ``port`` is a legal key, so keys alone do not tell the two apart);
* ``mgmt-ip`` is a string, or a list when several addresses are advertised;
* ``ttl`` sits under ``port`` (lldpd >= 0.9.6) or under ``chassis`` (older);
* no neighbours gives ``{"lldp": {}}``.

``lldpctl -f json0`` (and builds configured with ``--enable-json0``) skip the cleanup: every value
is wrapped in a list, plain values in ``{"value": ...}`` and names stay in ``"name"`` members; that
shape is accepted too.

lldptool prints ``IEEE 8021QAZ PFC TLV`` then TAB+space indented ``Willing: yes``, ``MACsec Bypass
Capable: no``, ``PFC capable traffic classes: 8`` and ``PFC enabled: 3 `` (each priority followed by
a space) or ``PFC enabled: none``.

``lldptool -t -n -i <if>`` (lldpad's neighbour TLVs, for hosts that run lldpad instead of lldpd) prints each TLV as
a header line (``Chassis ID TLV``, ``Port ID TLV``, ``Time to Live TLV``, ``Port Description TLV``, ``System Name
TLV``, ``Management Address TLV``, ..., ``End of LLDPDU TLV``) followed by TAB-indented lines. Chassis and port
ids carry their subtype as a prefix (lldpad lldp_mand_clif.c): ``MAC: 1c:34:da:..``, ``Ifname: swp1``,
``Local: ..``, ``IPv4: ..``, ``IPv6: ..``, ``Interface Alias: ..`` / ``IfAlias: ..``, ``Port Component: ..``,
``Chassis Component: ..``, ``Agent Circuit ID: ..``; string TLVs print the bare string (lldp_basman_clif.c).
"""

from __future__ import annotations

import re
from dataclasses import field

from ncclctl.parsers._common import (
    dec,
    json_line,
    last_line,
    load_json,
    perr,
    run_parser,
    split_lines,
    strip_ansi,
)
from ncclctl.record import record

__all__ = ["LldpNeighbor", "LldptoolPfc", "parse_lldpctl_json", "parse_lldptool_neighbor", "parse_lldptool_pfc"]

_JSON_FIX = "pass the unedited output of `lldpctl -f json`"
_PFC_FIX = "pass the unedited output of `lldptool -t -i <if> -V PFC` (add -n for the peer's TLV)"


@record
class LldpNeighbor:
    #: Local interface the neighbour was seen on.
    interface: str
    #: Switch system name (SysName); None if not advertised.
    chassis_name: str | None
    chassis_id: str | None
    #: ``mac``, ``local``, ``ifname``, ``ip``, ...
    chassis_id_type: str | None
    port_id: str | None
    port_id_type: str | None
    port_descr: str | None
    #: First management address (None if none).
    mgmt_ip: str | None
    ttl: int | None
    mgmt_ips: tuple[str, ...] = ()
    #: ``LLDP``, ``CDPv2``, ... (``via``).
    via: str | None = None
    line: int = field(default=0, compare=False)


@record
class LldptoolPfc:
    willing: bool
    macsec_bypass: bool | None
    #: ``PFC capable traffic classes``.
    pfc_cap: int
    #: Priorities with PFC enabled (``()`` for ``none``).
    enabled: tuple[int, ...]


def parse_lldpctl_json(text: str, *, source: str = "lldpctl -f json") -> tuple[LldpNeighbor, ...]:
    """Parse ``lldpctl -f json`` (or ``json0``). Empty output and ``{"lldp": {}}`` give ``()``."""
    return run_parser(_parse_json, text, source, "lldpctl -f json")


def parse_lldptool_pfc(text: str, *, source: str = "lldptool -t -V PFC") -> LldptoolPfc:
    """Parse ``lldptool -t [-n] -i <if> -V PFC``. Empty output is an error (no PFC TLV)."""
    return run_parser(_parse_pfc, text, source, "lldptool -V PFC")


def parse_lldptool_neighbor(text: str, *, source: str = "lldptool -t -n", interface: str = "") -> LldpNeighbor:
    """Parse ``lldptool -t -n -i <if>``: the neighbour's chassis, port, name and address. Output without a Chassis
    ID and a Port ID TLV (``Agent instance for device not found``, no neighbour yet) is an error."""
    return run_parser(lambda t, src: _parse_tool_neighbor(t, src, interface), text, source, "lldptool -t -n")


# ------------------------------------------------------------------------------------ lldpctl json


def _unwrap(v: object) -> object:
    """Undo json0 wrapping: ``[x]`` -> x, ``{"value": x}`` -> x."""
    for _ in range(8):
        if isinstance(v, list) and len(v) == 1:
            v = v[0]
        elif isinstance(v, dict) and len(v) == 1 and "value" in v:
            v = v["value"]
        else:
            break
    return v


def _text(v: object) -> str | None:
    v = _unwrap(v)
    if v is None:
        return None
    if isinstance(v, bool):  # lldpd turns "yes"/"on" into true, "no"/"off" into false
        return "yes" if v else "no"
    if isinstance(v, (str, int)) and not isinstance(v, bool):
        return str(v)
    return None


def _texts(v: object) -> tuple[str, ...]:
    if v is None:
        return ()
    items = v if isinstance(v, list) else [v]
    out = []
    for item in items:
        t = _text(item)
        if t is not None:
            out.append(t)
    return tuple(out)


def _id_pair(v: object) -> tuple[str | None, str | None]:
    v = _unwrap(v)
    if isinstance(v, dict):
        return _text(v.get("value")), _text(v.get("type"))
    return _text(v), None


def _is_id_object(v: object) -> bool:
    v = _unwrap(v)
    return isinstance(v, dict) and ("type" in v or "value" in v)


def _split_chassis(ch: object) -> tuple[str | None, dict]:
    ch = _unwrap(ch)
    if not isinstance(ch, dict):
        return None, {}
    if isinstance(ch.get("name"), (str, list, bool)):
        # json0 (``"name": [{"value": ...}]``), or a SysName that lldpd turned into a boolean
        # ("yes"/"no"/"on"/"off") and therefore did not use as the key
        return _text(ch.get("name")), ch
    if "id" in ch and _is_id_object(ch["id"]):
        return None, ch  # neighbour without a system name
    if len(ch) == 1:
        name, body = next(iter(ch.items()))
        body = _unwrap(body)
        if isinstance(body, dict):
            return name, body
    return None, ch


def _interfaces(lldp: object, text: str, source: str) -> list[tuple[str, object]]:
    """``(ifname, body)`` for every neighbour entry, in output order."""
    lldp = _unwrap(lldp)
    if lldp is None or lldp == {} or lldp == []:
        return []
    if not isinstance(lldp, dict):
        raise perr(source, json_line(text, '"lldp"'), "'lldp' must be an object", _JSON_FIX)
    iface = lldp.get("interface")
    if iface is None:
        return []
    entries = iface if isinstance(iface, list) else [iface]
    out: list[tuple[str, object]] = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise perr(
                source, json_line(text, '"interface"'), "interface entry is not an object", _JSON_FIX
            )
        name = entry.get("name")
        if isinstance(name, str) or (isinstance(name, list) and isinstance(_unwrap(name), str)):
            out.append((str(_unwrap(name)), entry))  # json0: {"name": "eth0", "chassis": ...}
            continue
        for ifname, body in entry.items():
            out.append((ifname, body))
    return out


def _parse_json(text: str, source: str) -> tuple[LldpNeighbor, ...]:
    if not text.strip():
        return ()
    doc = load_json(text, source, "lldpctl -f json", _JSON_FIX)
    doc = _unwrap(doc)
    if not isinstance(doc, dict) or "lldp" not in doc:
        raise perr(source, 1, "expected a JSON object with an 'lldp' key", _JSON_FIX)
    neighbors: list[LldpNeighbor] = []
    search_from = 0
    for ifname, body in _interfaces(doc["lldp"], text, source):
        line = json_line(text, f'"{ifname}"', search_from)
        pos = text.find(f'"{ifname}"', search_from)
        if pos >= 0:
            search_from = pos + 1
        body = _unwrap(body)
        if not isinstance(body, dict):
            raise perr(source, line, f"interface {ifname!r}: entry is not an object", _JSON_FIX)
        chassis_name, chassis = _split_chassis(body.get("chassis"))
        port = _unwrap(body.get("port"))
        if port is not None and not isinstance(port, dict):
            raise perr(source, line, f"interface {ifname!r}: 'port' is not an object", _JSON_FIX)
        port = port or {}
        cid, ctype = _id_pair(chassis.get("id"))
        pid, ptype = _id_pair(port.get("id"))
        mgmt = _texts(chassis.get("mgmt-ip"))
        ttl_raw = _text(port.get("ttl", chassis.get("ttl")))
        ttl = None
        if ttl_raw is not None:
            ttl = dec(ttl_raw, source, line, f"interface {ifname!r}: ttl", _JSON_FIX)
        neighbors.append(
            LldpNeighbor(
                interface=ifname,
                chassis_name=chassis_name,
                chassis_id=cid,
                chassis_id_type=ctype,
                port_id=pid,
                port_id_type=ptype,
                port_descr=_text(port.get("descr")),
                mgmt_ip=mgmt[0] if mgmt else None,
                ttl=ttl,
                mgmt_ips=mgmt,
                via=_text(body.get("via")),
                line=line,
            )
        )
    return tuple(neighbors)


# -------------------------------------------------------------------------------- lldptool -V PFC

_YES_NO = {"yes": True, "no": False}
_TLV_HEADER_RE = re.compile(r"(?:.*[ \t])?TLV|IEEE-DCBX Settings|Unidentified (?:Org Specific )?TLV", re.ASCII)
_PFC_KEYS = frozenset(
    ("Willing", "MACsec Bypass Capable", "PFC capable traffic classes", "PFC enabled")
)


def _parse_pfc(text: str, source: str) -> LldptoolPfc:
    lines = split_lines(text)
    fields: dict[str, tuple[str, int]] = {}
    section: str | None = None  # None: no TLV header seen (header-less paste)
    saw_pfc_header = False
    other: list[str] = []
    for lineno, raw in enumerate(lines, 1):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        if line == "IEEE 8021QAZ PFC TLV":
            if saw_pfc_header:
                raise perr(source, lineno, "PFC TLV printed twice", _PFC_FIX)
            saw_pfc_header = True
            section = "pfc"
            continue
        key, sep, value = line.partition(":")
        if not sep and _TLV_HEADER_RE.fullmatch(line):
            section = "other"  # another TLV (ETS, APP, ...): its lines are skipped
            continue
        if section == "other":
            continue
        key = " ".join(key.split())
        if sep and key in _PFC_KEYS:
            if key in fields:
                raise perr(source, lineno, f"'{key}' given twice", _PFC_FIX)
            fields[key] = (value.strip(), lineno)
            continue
        if not sep:
            raise perr(
                source,
                lineno,
                f"lldptool: {line[:100]}",
                "lldptool did not print the PFC TLV; check that lldpad runs and manages this "
                "interface (`lldptool -L -i <if> adminStatus=rxtx`)",
            )
        other.append(line)  # unknown "Key: value" line (or a tool error with a colon)
    for key in ("Willing", "PFC capable traffic classes", "PFC enabled"):
        if key not in fields:
            said = f"; lldptool said: {other[0][:100]!r}" if other else ""
            raise perr(
                source,
                last_line(lines),
                f"no '{key}:' line (empty or truncated output?){said}",
                _PFC_FIX,
            )

    def yn(key: str) -> bool:
        v, ln = fields[key]
        if v not in _YES_NO:
            raise perr(source, ln, f"{key}: expected yes/no, got {v!r}", _PFC_FIX)
        return _YES_NO[v]

    cap_v, cap_ln = fields["PFC capable traffic classes"]
    cap = dec(cap_v, source, cap_ln, "PFC capable traffic classes", _PFC_FIX)
    if cap > 8:
        raise perr(source, cap_ln, f"PFC capable traffic classes: {cap} > 8", _PFC_FIX)
    en_v, en_ln = fields["PFC enabled"]
    if en_v == "none":
        enabled: tuple[int, ...] = ()
    else:
        prios = [dec(t, source, en_ln, "PFC enabled", _PFC_FIX) for t in en_v.split()]
        if not prios or any(p > 7 for p in prios) or len(set(prios)) != len(prios):
            raise perr(source, en_ln, f"PFC enabled: bad priority list {en_v!r}", _PFC_FIX)
        enabled = tuple(prios)
    return LldptoolPfc(
        willing=yn("Willing"),
        macsec_bypass=yn("MACsec Bypass Capable") if "MACsec Bypass Capable" in fields else None,
        pfc_cap=cap,
        enabled=enabled,
    )


# ------------------------------------------------------------------------------ lldptool neighbour

_TOOL_FIX = "pass the unedited output of `lldptool -t -n -i <if>` (lldpad must run and see a neighbour)"
_TOOL_HEADER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ./()-]* TLV", re.ASCII)
#: Subtype prefixes of chassis / port ids (lldp_mand_clif.c) -> lldpctl's type names.
_ID_TYPES = {"MAC": "mac", "IPv4": "ip", "IPv6": "ip", "Ifname": "ifname", "Local": "local", "IfAlias": "ifalias",
             "Interface Alias": "ifalias", "Chassis Component": "chassis", "Port Component": "port",
             "Agent Circuit ID": "circuit"}


def _parse_tool_neighbor(text: str, source: str, interface: str) -> LldpNeighbor:
    lines = split_lines(text)
    tlvs: dict[str, tuple[list[str], int]] = {}
    current: list[str] | None = None
    for lineno, raw in enumerate(lines, 1):
        line = strip_ansi(raw).rstrip()
        if not line.strip():
            continue
        if line[0] in " \t":
            if current is None:
                raise perr(source, lineno, "indented line before any TLV header", _TOOL_FIX)
            current.append(line.strip())
            continue
        if not _TOOL_HEADER_RE.fullmatch(line):
            raise perr(source, lineno, f"lldptool: {line[:100]}", _TOOL_FIX)
        if line in tlvs and line != "Management Address TLV":
            raise perr(source, lineno, f"'{line}' printed twice", _TOOL_FIX)
        current = tlvs.setdefault(line, ([], lineno))[0]
    for need in ("Chassis ID TLV", "Port ID TLV"):
        if need not in tlvs:
            raise perr(source, last_line(lines), f"no '{need}' (no LLDP neighbour seen on this interface?)",
                       _TOOL_FIX)

    def ident(name: str) -> tuple[str | None, str | None]:
        body, ln = tlvs[name]
        if not body:
            raise perr(source, ln, f"'{name}' without a value", _TOOL_FIX)
        kind, sep, value = body[0].partition(": ")
        if not sep or kind not in _ID_TYPES or not value.strip():
            raise perr(source, ln + 1, f"{name}: unexpected value {body[0][:80]!r}", _TOOL_FIX)
        return _ID_TYPES[kind], value.strip()

    def string(name: str) -> str | None:
        body = tlvs.get(name, ([], 0))[0]
        return body[0] if body and body[0] else None

    chassis_type, chassis_id = ident("Chassis ID TLV")
    port_type, port_id = ident("Port ID TLV")
    ttl = None
    if "Time to Live TLV" in tlvs and tlvs["Time to Live TLV"][0]:
        ttl = dec(tlvs["Time to Live TLV"][0][0], source, tlvs["Time to Live TLV"][1] + 1, "TTL", _TOOL_FIX)
    addrs = tuple(b.partition(": ")[2] for b in tlvs.get("Management Address TLV", ([], 0))[0]
                  if b.startswith(("IPv4: ", "IPv6: ")))
    return LldpNeighbor(interface=interface, chassis_name=string("System Name TLV"), chassis_id=chassis_id,
                        chassis_id_type=chassis_type, port_id=port_id, port_id_type=port_type,
                        port_descr=string("Port Description TLV"), mgmt_ip=addrs[0] if addrs else None, ttl=ttl,
                        mgmt_ips=addrs, via="LLDP", line=tlvs["Chassis ID TLV"][1])
