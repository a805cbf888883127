"""Parser for ``ibv_devinfo [-v]`` and ``ibv_devinfo -l`` (rdma-core libibverbs/examples/devinfo.c).

Per device::

    hca_id:<TAB>mlx5_0
    <TAB>transport:<TAB><TAB><TAB>InfiniBand (0)
    <TAB>fw_ver:<TAB><TAB><TAB><TAB>28.41.1000        (omitted when empty)
    <TAB>node_guid:<TAB><TAB><TAB>58a2:e103:001a:677e
    <TAB>sys_image_guid:<TAB><TAB><TAB>58a2:e103:001a:677e
    <TAB>vendor_id:<TAB><TAB><TAB>0x02c9              (IEEE OUI, not the PCI vendor id)
    <TAB>vendor_part_id:<TAB><TAB><TAB>4129           (PCI device id, decimal)
    <TAB>hw_ver:<TAB><TAB><TAB><TAB>0x0
    <TAB>board_id:<TAB><TAB><TAB>DEL0000000036        (omitted when unreadable)
    <TAB>phys_port_cnt:<TAB><TAB><TAB>1
    [-v: ~50 more device lines, some without a colon (flag lists, "core clock not supported") and
     some followed by blank lines]
    <TAB><TAB>port:<TAB>1
    <TAB><TAB><TAB>state:<TAB><TAB><TAB>PORT_ACTIVE (4)
    <TAB><TAB><TAB>max_mtu:<TAB><TAB>4096 (5)
    <TAB><TAB><TAB>active_mtu:<TAB><TAB>4096 (5)
    <TAB><TAB><TAB>sm_lid:<TAB><TAB><TAB>5790
    <TAB><TAB><TAB>port_lid:<TAB><TAB>3697
    <TAB><TAB><TAB>port_lmc:<TAB><TAB>0x00
    <TAB><TAB><TAB>link_layer:<TAB><TAB>InfiniBand
    [-v: max_msg_sz, port_cap_flags, ..., gid_tbl_len, active_width: 4X (2),
     active_speed: 100.0 Gbps (128), effective_speed: 400.0 Gbps (optional),
     phys_state: LINK_UP (5) (IB transport only), GID[  0]:<TAB><TAB>fe80:...[, RoCE v2]]
    <blank line>

Quirks kept in mind: an unknown enum prints as ``invalid MTU (0)`` / ``invalid speed (512)`` /
``invalid widthX (3)`` (the ``X`` is appended after the word); ``active_speed`` is the *per-lane*
speed; RoCE v1 GIDs are printed as 8 groups of 4 hex digits while RoCE v2 GIDs go through
``inet_ntop`` (``::ffff:10.200.1.10``); GIDs whose interface id is zero are not printed. Errors are
printed on stderr: ``No IB devices found`` (treated as an empty result), ``Failed to ...``,
``IB device 'x' wasn't found``.
"""

from __future__ import annotations

import re
from dataclasses import field

from ncclctl.parsers._common import (
    dec,
    dec_or_hex,
    flt,
    guid,
    hex0x,
    last_line,
    perr,
    run_parser,
    split_lines,
    strip_ansi,
)
from ncclctl.record import record

__all__ = [
    "DevinfoGid",
    "DevinfoHca",
    "DevinfoPort",
    "parse_ibv_devinfo",
    "parse_ibv_devinfo_list",
]

_FIX = "pass the complete, unedited output of `ibv_devinfo` or `ibv_devinfo -v`"

_HCA_RE = re.compile(r"hca_id:[ \t]*(?P<name>\S+)", re.ASCII)
_ENUM_RE = re.compile(r"(?P<text>.*?)[ \t]*\((?P<num>-?[0-9]{1,10})\)", re.ASCII)
_GID_RE = re.compile(
    r"GID\[[ \t]*(?P<idx>[0-9]{1,6})\][ \t]*:[ \t]*(?P<gid>[0-9A-Fa-f:.]+?)"
    r"(?:[ \t]*,[ \t]*(?P<type>RoCE v[12]|Invalid gid type))?",
    re.ASCII,
)
_WIDTH_RE = re.compile(r"[0-9]{1,2}X", re.ASCII)
_SPEED_RE = re.compile(r"(?P<num>[0-9]{1,6}(?:\.[0-9]{1,6})?)[ \t]*Gbps", re.ASCII)
_LIST_HEAD_RE = re.compile(r"(?P<n>[0-9]{1,6})[ \t]+HCAs?[ \t]+found:", re.ASCII)

_DEVICE_REQUIRED = (
    "transport",
    "node_guid",
    "sys_image_guid",
    "vendor_id",
    "vendor_part_id",
    "hw_ver",
    "phys_port_cnt",
)
_PORT_REQUIRED = ("state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc", "link_layer")
_PORT_KEYS = frozenset(
    _PORT_REQUIRED
    + (
        "max_msg_sz",
        "port_cap_flags",
        "port_cap_flags2",
        "max_vl_num",
        "bad_pkey_cntr",
        "qkey_viol_cntr",
        "sm_sl",
        "pkey_tbl_len",
        "gid_tbl_len",
        "subnet_timeout",
        "init_type_reply",
        "active_width",
        "active_speed",
        "effective_speed",
        "phys_state",
    )
)


@record
class DevinfoGid:
    """One GID line of ``ibv_devinfo -v``."""
    index: int
    #: As printed: 8 groups of 4 hex digits (IB / RoCE v1) or compressed ``inet_ntop`` (RoCE v2).
    gid: str
    #: ``"v1"``/``"v2"`` from the ``, RoCE vN`` suffix (Ethernet link layer only), else None.
    roce_version: str | None


@record
class DevinfoPort:
    """One port block of ``ibv_devinfo -v``."""
    num: int
    #: ``PORT_ACTIVE``, ``PORT_DOWN``, ``PORT_INIT``, ``PORT_ARMED`` (or ``invalid state``).
    state: str
    state_num: int
    #: Bytes (256..4096); None when devinfo printed ``invalid MTU``.
    max_mtu: int | None
    max_mtu_enum: int
    active_mtu: int | None
    active_mtu_enum: int
    sm_lid: int
    port_lid: int
    port_lmc: int
    #: ``InfiniBand``, ``Ethernet``, ``Unspecified`` or ``Unknown``.
    link_layer: str
    # ---- ``-v`` only (None / () without it) ----
    #: ``"1X"``, ``"2X"``, ``"4X"``, ``"8X"``, ``"12X"``; None if invalid or absent.
    active_width: str | None = None
    active_width_enum: int | None = None
    #: Per-lane signalling speed in Gb/s (``25.0 Gbps (32)`` -> 25.0). Multiply by the width.
    active_speed_gbps: float | None = None
    active_speed_enum: int | None = None
    #: ``effective_speed:`` (whole port, Gb/s) when this rdma-core prints it.
    effective_speed_gbps: float | None = None
    #: ``LINK_UP``, ``POLLING``, ... (IB transport only).
    phys_state: str | None = None
    phys_state_num: int | None = None
    gid_tbl_len: int | None = None
    port_cap_flags: int | None = None
    gids: tuple[DevinfoGid, ...] = ()
    line: int = field(default=0, compare=False)

    @property
    def width_lanes(self) -> int | None:
        return int(self.active_width[:-1]) if self.active_width else None


@record
class DevinfoHca:
    """One ``hca_id`` block of ``ibv_devinfo -v``: the device and its ports."""
    name: str
    #: ``InfiniBand`` (also for RoCE), ``iWARP``, ``usNIC``, ...
    transport: str
    fw_ver: str | None
    node_guid: int
    sys_image_guid: int
    #: IEEE OUI (0x02c9 = Mellanox).
    vendor_id: int
    #: PCI device id in decimal (4129 = ConnectX-7).
    vendor_part_id: int
    #: As printed, e.g. ``0x0``.
    hw_ver: str
    board_id: str | None
    phys_port_cnt: int
    ports: tuple[DevinfoPort, ...]
    line: int = field(default=0, compare=False)
    #: ``-v`` only: the device's max_qp, which NCCL's IB plugin reports as ``maxComms`` (XML ``maxconn``).
    max_qp: int | None = None


def parse_ibv_devinfo(text: str, *, source: str = "ibv_devinfo") -> tuple[DevinfoHca, ...]:
    """Parse ``ibv_devinfo`` or ``ibv_devinfo -v`` output (``-d``/``-i`` filtered output too).

    Empty output and ``No IB devices found`` give ``()``.
    """
    return run_parser(_parse, text, source, "ibv_devinfo")


def parse_ibv_devinfo_list(text: str, *, source: str = "ibv_devinfo -l") -> tuple[str, ...]:
    """Parse ``ibv_devinfo -l``: ``2 HCAs found:`` then one TAB-indented device name per line."""
    return run_parser(_parse_list, text, source, "ibv_devinfo -l")


class _Hca:
    __slots__ = ("name", "line", "fields", "ports", "port")

    def __init__(self, name: str, line: int) -> None:
        self.name = name
        self.line = line
        self.fields: dict[str, tuple[str, int]] = {}
        self.ports: list[DevinfoPort] = []
        self.port: _Port | None = None


class _Port:
    __slots__ = ("num", "line", "fields", "gids")

    def __init__(self, num: int, line: int) -> None:
        self.num = num
        self.line = line
        self.fields: dict[str, tuple[str, int]] = {}
        self.gids: list[DevinfoGid] = []


def _tool_error(line: str) -> bool:
    return (
        line.startswith("Failed to")
        or (line.startswith("IB device '") and line.endswith("wasn't found"))
        or line.startswith("Invalid port requested")
    )


def _parse(text: str, source: str) -> tuple[DevinfoHca, ...]:
    lines = split_lines(text)
    hcas: list[DevinfoHca] = []
    hca: _Hca | None = None
    no_devices_line = 0

    for lineno, raw in enumerate(lines, 1):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        if line == "No IB devices found":
            no_devices_line = lineno
            continue
        if _tool_error(line):
            raise perr(
                source,
                lineno,
                f"ibv_devinfo failed: {line}",
                "the command reported an error; check the device name/port and the RDMA driver, "
                "then capture the output again",
            )
        m = _HCA_RE.fullmatch(line)
        if m:
            if hca is not None:
                hcas.append(_finish_hca(hca, source, lineno - 1))
            hca = _Hca(m["name"], lineno)
            continue
        if hca is None:
            raise perr(
                source,
                lineno,
                f"unexpected line before the first 'hca_id:' line: {line[:80]!r}",
                _FIX,
            )

        gm = _GID_RE.fullmatch(line)
        if gm:
            if hca.port is None:
                raise perr(source, lineno, f"{hca.name}: GID line before any 'port:' line", _FIX)
            gtype = gm["type"]
            hca.port.gids.append(
                DevinfoGid(
                    index=int(gm["idx"]),
                    gid=gm["gid"],
                    roce_version=gtype[-2:] if gtype and gtype.startswith("RoCE") else None,
                )
            )
            continue

        key, sep, value = line.partition(":")
        key = key.strip()
        value = value.strip()
        if not sep:
            if hca.port is None:
                continue  # -v device section: flag lists, "core clock not supported", ...
            raise perr(
                source,
                lineno,
                f"{hca.name} port {hca.port.num}: cannot interpret line {line[:80]!r}",
                _FIX,
            )
        if key == "port":
            if hca.port is not None:
                hca.ports.append(_finish_port(hca, hca.port, source, lineno - 1))
            num = dec(value, source, lineno, f"{hca.name}: port number", _FIX)
            hca.port = _Port(num, lineno)
            continue
        if hca.port is not None:
            if key in _PORT_KEYS:
                if key in hca.port.fields:
                    raise perr(
                        source,
                        lineno,
                        f"{hca.name} port {hca.port.num}: '{key}' given twice",
                        _FIX,
                    )
                hca.port.fields[key] = (value, lineno)
            # other keys: newer devinfo additions, ignored
            continue
        if key in hca.fields and key in _DEVICE_REQUIRED + ("fw_ver", "board_id"):
            raise perr(source, lineno, f"{hca.name}: '{key}' given twice", _FIX)
        hca.fields.setdefault(key, (value, lineno))

    if hca is not None:
        hcas.append(_finish_hca(hca, source, last_line(lines)))
    if no_devices_line and hcas:
        raise perr(
            source,
            no_devices_line,
            "'No IB devices found' mixed with device output",
            _FIX,
        )
    return tuple(hcas)


def _vs(f: dict[str, tuple[str, int]], key: str, source: str) -> tuple[str, str, int]:
    """``(value, source, line)`` of a recorded field, in the order the converters take them."""
    value, line = f[key]
    return value, source, line


def _enum(value: str, source: str, line: int, what: str) -> tuple[str, int]:
    m = _ENUM_RE.fullmatch(value)
    if not m:
        raise perr(source, line, f"{what}: expected '<text> (<n>)', got {value!r}", _FIX)
    return m["text"], int(m["num"])


def _mtu(value: str, source: str, line: int, what: str) -> tuple[int | None, int]:
    text, num = _enum(value, source, line, what)
    if text.startswith("invalid"):
        return None, num
    return dec(text, source, line, what, _FIX), num


def _finish_port(hca: _Hca, p: _Port, source: str, end_line: int) -> DevinfoPort:
    f = p.fields
    where = f"{hca.name} port {p.num}"
    for key in _PORT_REQUIRED:
        if key not in f:
            raise perr(
                source, end_line, f"{where}: block ends without '{key}:' (truncated output?)", _FIX
            )
    st_text, st_num = _enum(*_vs(f, "state", source), f"{where}: state")
    max_mtu, max_enum = _mtu(*_vs(f, "max_mtu", source), f"{where}: max_mtu")
    act_mtu, act_enum = _mtu(*_vs(f, "active_mtu", source), f"{where}: active_mtu")

    def num(key: str, hex_only: bool = False) -> int | None:
        if key not in f:
            return None
        v, ln = f[key]
        if hex_only:
            return hex0x(v, source, ln, f"{where}: {key}", _FIX)
        return dec_or_hex(v, source, ln, f"{where}: {key}", _FIX)

    width = width_enum = None
    if "active_width" in f:
        wt, width_enum = _enum(*_vs(f, "active_width", source), f"{where}: active_width")
        width = wt if _WIDTH_RE.fullmatch(wt) else None

    speed = speed_enum = None
    if "active_speed" in f:
        stext, speed_enum = _enum(*_vs(f, "active_speed", source), f"{where}: active_speed")
        sm = _SPEED_RE.fullmatch(stext)
        if sm:
            speed = float(sm["num"])
        elif not stext.startswith("invalid"):
            raise perr(
                source, f["active_speed"][1], f"{where}: cannot read active_speed {stext!r}", _FIX
            )

    eff = None
    if "effective_speed" in f:
        v, ln = f["effective_speed"]
        sm = _SPEED_RE.fullmatch(v)
        if not sm:
            eff = flt(v, source, ln, f"{where}: effective_speed", _FIX)
        else:
            eff = float(sm["num"])

    phys = phys_num = None
    if "phys_state" in f:
        phys, phys_num = _enum(*_vs(f, "phys_state", source), f"{where}: phys_state")

    def req(key: str) -> int:
        v, ln = f[key]
        return dec_or_hex(v, source, ln, f"{where}: {key}", _FIX)

    return DevinfoPort(
        num=p.num,
        state=st_text,
        state_num=st_num,
        max_mtu=max_mtu,
        max_mtu_enum=max_enum,
        active_mtu=act_mtu,
        active_mtu_enum=act_enum,
        sm_lid=req("sm_lid"),
        port_lid=req("port_lid"),
        port_lmc=req("port_lmc"),
        link_layer=f["link_layer"][0],
        active_width=width,
        active_width_enum=width_enum,
        active_speed_gbps=speed,
        active_speed_enum=speed_enum,
        effective_speed_gbps=eff,
        phys_state=phys,
        phys_state_num=phys_num,
        gid_tbl_len=num("gid_tbl_len"),
        port_cap_flags=num("port_cap_flags", hex_only=True),
        gids=tuple(p.gids),
        line=p.line,
    )


def _finish_hca(hca: _Hca, source: str, end_line: int) -> DevinfoHca:
    if hca.port is not None:
        hca.ports.append(_finish_port(hca, hca.port, source, end_line))
        hca.port = None
    f = hca.fields
    for key in _DEVICE_REQUIRED:
        if key not in f:
            raise perr(
                source,
                end_line,
                f"{hca.name}: device block ends without '{key}:' (truncated output?)",
                _FIX,
            )
    transport, _ = _enum(*_vs(f, "transport", source), f"{hca.name}: transport")

    def val(key: str) -> str:
        return f[key][0]

    return DevinfoHca(
        name=hca.name,
        transport=transport,
        fw_ver=val("fw_ver") if "fw_ver" in f else None,
        node_guid=guid(*_vs(f, "node_guid", source), f"{hca.name}: node_guid", _FIX),
        sys_image_guid=guid(*_vs(f, "sys_image_guid", source), f"{hca.name}: sys_image_guid", _FIX),
        vendor_id=hex0x(*_vs(f, "vendor_id", source), f"{hca.name}: vendor_id", _FIX),
        vendor_part_id=dec(*_vs(f, "vendor_part_id", source), f"{hca.name}: vendor_part_id", _FIX),
        hw_ver=val("hw_ver"),
        board_id=(val("board_id") or None) if "board_id" in f else None,
        phys_port_cnt=dec(*_vs(f, "phys_port_cnt", source), f"{hca.name}: phys_port_cnt", _FIX),
        ports=tuple(hca.ports),
        line=hca.line,
        max_qp=dec(*_vs(f, "max_qp", source), f"{hca.name}: max_qp", _FIX) if "max_qp" in f else None,
    )


def _parse_list(text: str, source: str) -> tuple[str, ...]:
    lines = split_lines(text)
    expected: int | None = None
    head_line = 0
    names: list[str] = []
    for lineno, raw in enumerate(lines, 1):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        m = _LIST_HEAD_RE.fullmatch(line)
        if m and expected is None:
            expected = int(m["n"])
            head_line = lineno
            continue
        if expected is None:
            raise perr(
                source,
                lineno,
                f"expected 'N HCAs found:' first, got {line[:80]!r}",
                "pass the unedited output of `ibv_devinfo -l`",
            )
        if len(line.split()) != 1:
            raise perr(source, lineno, f"expected one device name, got {line[:80]!r}", _FIX)
        names.append(line)
    if expected is not None and expected != len(names):
        raise perr(
            source,
            head_line,
            f"header announces {expected} HCA(s) but {len(names)} name(s) follow (truncated?)",
            "pass the complete output of `ibv_devinfo -l`",
        )
    return tuple(names)
