"""Parser for ``ibstat`` (rdma-core infiniband-diags/ibstat.c).

Layout per CA (no blank lines between CAs)::

    CA 'mlx5_0'
    <TAB>CA type: MT4129
    <TAB>Number of ports: 1
    <TAB>Firmware version: 28.39.1002
    <TAB>Hardware version: 0
    <TAB>Node GUID: 0xa088c20300e3142a
    <TAB>System image GUID: 0xa088c20300e3142a
    <TAB>Port 1:
    <TAB><TAB>State: Active
    <TAB><TAB>Physical state: LinkUp
    <TAB><TAB>Rate: 400                    (``10 (FDR10)`` for FDR10, ``2.5`` for 1x SDR)
    <TAB><TAB>Effective speed: 400         (new rdma-core only, ``%g``)
    <TAB><TAB>Base lid: 0                  (decimal, unlike sysfs ``lid`` which is hex)
    <TAB><TAB>LMC: 0
    <TAB><TAB>SM lid: 0
    <TAB><TAB>Capability mask: 0x00010000
    <TAB><TAB>Port GUID: 0xa288c2fffee3142a
    <TAB><TAB>Link layer: Ethernet

The node-type word is ``CA``, ``Switch``, ``Router``, ``iWARP RNIC`` or ``???`` and the second line
repeats it (``Switch type:``). ``ibstat <ca> <port>`` prints ``CA: '<name>'`` followed by one port
block with *no* indentation and no CA-level fields (ibstat.c ``port_dump(..., alone=1)``).
Switches also list port 0. Error lines go to stderr but are often captured with ``2>&1``:
``ibwarn: [pid] fn: ...`` (non fatal, skipped) and ``ibpanic: [pid] fn: ...: <errno text>`` (fatal: ibstat
stops at the first CA it cannot stat and exits 255; the CAs printed before it are kept, the failure is
:attr:`IbstatCas.failure`, and the probe lists it under ``unavailable``; before any CA it is an error).

Indentation is not relied upon (pasted output is often re-indented with spaces); keys decide
whether a line belongs to the CA or to the current port.
"""

from __future__ import annotations

import re
from dataclasses import field

from ncclctl.errors import NcclctlError
from ncclctl.parsers._common import (
    dec,
    dec_or_hex,
    flt,
    guid,
    hex0x,
    last_line,
    paste_body,
    perr,
    run_parser,
    split_lines,
    strip_ansi,
)
from ncclctl.record import record

__all__ = ["IbstatCa", "IbstatCas", "IbstatPort", "parse_ibstat"]

_FIX = "pass the complete, unedited output of `ibstat` (TABs or spaces are both fine)"

_HEADER_RE = re.compile(
    r"(?P<type>CA|Switch|Router|iWARP RNIC|\?\?\?)(?P<colon>:)?[ \t]+'(?P<name>[^']*)'", re.ASCII
)
_PORT_RE = re.compile(r"Port[ \t]+(?P<num>[0-9]{1,5})[ \t]*:", re.ASCII)
_RATE_RE = re.compile(r"(?P<num>[0-9]{1,6}(?:\.[0-9]{1,3})?)(?:[ \t]*\((?P<note>[A-Za-z0-9]+)\))?")

_CA_KEYS = {
    "Number of ports": "num_ports",
    "Firmware version": "fw_ver",
    "Hardware version": "hw_ver",
    "Node GUID": "node_guid",
    "System image GUID": "sys_image_guid",
}
_PORT_KEYS = {
    "State": "state",
    "Physical state": "phys_state",
    "Rate": "rate",
    "Effective speed": "effective_speed",
    "Base lid": "base_lid",
    "LMC": "lmc",
    "SM lid": "sm_lid",
    "Capability mask": "cap_mask",
    "Port GUID": "port_guid",
    "Link layer": "link_layer",
}
_PORT_REQUIRED = (
    "State",
    "Physical state",
    "Rate",
    "Base lid",
    "LMC",
    "SM lid",
    "Capability mask",
    "Port GUID",
)
_CA_REQUIRED = (
    "type",
    "Number of ports",
    "Firmware version",
    "Hardware version",
    "Node GUID",
    "System image GUID",
)


@record
class IbstatPort:
    """One ``Port N:`` block."""

    num: int
    #: ``Active``, ``Down``, ``Initializing``, ``Armed`` (or ``???``), as printed.
    state: str
    #: ``LinkUp``, ``Polling``, ``Disabled``, ... as printed.
    phys_state: str
    #: Link rate in Gb/s (``Rate: 10 (FDR10)`` gives 10.0 and ``fdr10=True``).
    rate: float | None
    fdr10: bool
    #: ``Effective speed`` in Gb/s when this rdma-core prints it, else None.
    effective_speed: float | None
    #: Decimal in ibstat output (a ``0x``-prefixed value, the sysfs spelling, is accepted too; bare
    #: hex digits are rejected). Down IB ports show 65535 or 0: not a real LID.
    base_lid: int
    lmc: int
    sm_lid: int
    cap_mask: int
    port_guid: int
    #: ``InfiniBand`` / ``Ethernet`` (umad falls back to ``IB``); None if the line is missing.
    link_layer: str | None
    #: The ``Rate:`` value as printed, e.g. ``10 (FDR10)``.
    rate_raw: str
    line: int = field(default=0, compare=False)

    @property
    def is_sm(self) -> bool:
        """Capability-mask bit 1 (IsSM): this port hosts the subnet manager."""
        return bool(self.cap_mask & 0x2)


@record
class IbstatCa:
    """One CA (or switch/router) block.

    In the single-port form (``CA: 'mlx5_0'``) ibstat prints no CA-level lines, so ``ca_type``,
    ``num_ports``, ``fw_ver``, ``hw_ver``, ``node_guid`` and ``sys_image_guid`` are None and
    ``single_port`` is True. In the normal form they are always set.
    """

    name: str
    #: ``CA``, ``Switch``, ``Router``, ``iWARP RNIC`` or ``???``.
    node_type: str
    ca_type: str | None
    num_ports: int | None
    fw_ver: str | None
    hw_ver: str | None
    node_guid: int | None
    sys_image_guid: int | None
    ports: tuple[IbstatPort, ...]
    single_port: bool = False
    line: int = field(default=0, compare=False)


class IbstatCas(tuple):
    """The CAs of one ``ibstat`` output (a tuple of :class:`IbstatCa`). ``failure`` is the ``ibpanic:``/``iberror:``
    line that ended the output after some CAs were printed (ibstat stops at the first CA it cannot stat and exits
    255: the CAs before it are good), with its line number; None for a complete output."""

    failure: tuple[str, int] | None = None


def parse_ibstat(text: str, *, source: str = "ibstat") -> IbstatCas:
    """Parse ``ibstat`` / ``ibstat <ca>`` / ``ibstat -s`` / ``ibstat <ca> <port>`` output.

    Empty output gives ``()`` (no HCAs). An ``ibpanic:`` line after complete CAs keeps those CAs and is reported in
    :attr:`IbstatCas.failure`; one before any CA is an error (nothing was printed).
    """
    return run_parser(_parse, text, source, "ibstat")


class _CaBuilder:
    __slots__ = ("name", "node_type", "single", "line", "fields", "ports", "port")

    def __init__(self, name: str, node_type: str, single: bool, line: int) -> None:
        self.name = name
        self.node_type = node_type
        self.single = single
        self.line = line
        self.fields: dict[str, tuple[str, int]] = {}
        self.ports: list[IbstatPort] = []
        self.port: _PortBuilder | None = None


class _PortBuilder:
    __slots__ = ("num", "line", "fields")

    def __init__(self, num: int, line: int) -> None:
        self.num = num
        self.line = line
        self.fields: dict[str, tuple[str, int]] = {}


def _parse(text: str, source: str) -> IbstatCas:
    lines, _pasted = paste_body(split_lines(text), ("ibstat",))  # a pasted copy's prompt and command echo
    cas: list[IbstatCa] = []
    ca: _CaBuilder | None = None

    for lineno, raw in enumerate(lines, 1):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        if line.startswith(("ibpanic:", "iberror:")) and (cas or ca is not None):
            # ibstat printed the CAs before the one it could not stat, then gave up: keep them.
            if ca is not None:
                # The CA printed last is kept when its block is whole (every port it declares is there); one cut
                # off by the failure is dropped: the failure line names what is missing.
                try:
                    last = _finish_ca(ca, source, lineno - 1)
                    if last.num_ports is None or len(last.ports) >= last.num_ports:
                        cas.append(last)
                except NcclctlError:
                    pass
            out = IbstatCas(cas)
            out.failure = (line, lineno)
            return out
        if line.startswith(("ibpanic:", "iberror:")):
            raise perr(
                source,
                lineno,
                f"ibstat failed: {line}",
                "the command aborted; check that the CA named on the command line exists and that "
                "the ib_umad module is loaded, then capture the output again",
            )
        if line.startswith("ibwarn:"):
            continue  # non-fatal warning on stderr (e.g. "stat of IB device 'x' failed")

        m = _HEADER_RE.fullmatch(line)
        if m:
            if ca is not None:
                cas.append(_finish_ca(ca, source, lineno - 1))
            ca = _CaBuilder(m["name"], m["type"], m["colon"] is not None, lineno)
            continue
        if ca is None:
            raise perr(
                source,
                lineno,
                f"unexpected line before the first CA header: {line[:80]!r}",
                "ibstat output starts with a line like CA 'mlx5_0'; " + _FIX,
            )

        m = _PORT_RE.fullmatch(line)
        if m:
            if ca.port is not None:
                ca.ports.append(_finish_port(ca, ca.port, source, lineno - 1))
            num = int(m["num"])
            if any(p.num == num for p in ca.ports):
                raise perr(source, lineno, f"CA '{ca.name}': port {num} listed twice", _FIX)
            ca.port = _PortBuilder(num, lineno)
            continue

        key, sep, value = line.partition(":")
        if not sep:
            raise perr(source, lineno, f"CA '{ca.name}': cannot interpret line {line[:80]!r}", _FIX)
        key = " ".join(key.split())
        value = value.strip()
        if key in _PORT_KEYS:
            if ca.port is None:
                raise perr(
                    source,
                    lineno,
                    f"CA '{ca.name}': '{key}' appears before any 'Port N:' line",
                    _FIX,
                )
            if key in ca.port.fields:
                raise perr(
                    source, lineno, f"CA '{ca.name}' port {ca.port.num}: '{key}' given twice", _FIX
                )
            ca.port.fields[key] = (value, lineno)
        elif key in _CA_KEYS or key.endswith(" type"):
            slot = "type" if key.endswith(" type") else key
            if ca.port is not None or ca.ports:
                raise perr(
                    source,
                    lineno,
                    f"CA '{ca.name}': CA field '{key}' after a port block",
                    _FIX,
                )
            if slot in ca.fields:
                raise perr(source, lineno, f"CA '{ca.name}': '{key}' given twice", _FIX)
            ca.fields[slot] = (value, lineno)
        # any other "Key: value" line: unknown extra key from a newer ibstat; ignored.

    if ca is not None:
        cas.append(_finish_ca(ca, source, last_line(lines)))
    return IbstatCas(cas)


def _finish_port(ca: _CaBuilder, pb: _PortBuilder, source: str, end_line: int) -> IbstatPort:
    f = pb.fields
    where = f"CA '{ca.name}' port {pb.num}"
    for key in _PORT_REQUIRED:
        if key not in f:
            raise perr(
                source,
                end_line,
                f"{where}: block ends without '{key}:' (truncated output?)",
                _FIX,
            )

    rate_raw, rate_line = f["Rate"]
    m = _RATE_RE.fullmatch(rate_raw)
    if not m or (m["note"] is not None and m["note"] != "FDR10"):
        hint = ""
        if "Gb/sec" in rate_raw:
            hint = " ('Gb/sec (4X NDR)' is the sysfs/ibstatus spelling, ibstat prints a bare number)"
        raise perr(source, rate_line, f"{where}: cannot read Rate {rate_raw!r}{hint}", _FIX)
    rate = float(m["num"])

    eff: float | None = None
    if "Effective speed" in f:
        v, ln = f["Effective speed"]
        eff = flt(v, source, ln, f"{where}: Effective speed", _FIX)

    def num(key: str) -> int:
        v, ln = f[key]
        return dec_or_hex(v, source, ln, f"{where}: {key}", _FIX)

    cap_v, cap_ln = f["Capability mask"]
    pg_v, pg_ln = f["Port GUID"]
    link_layer = f["Link layer"][0] if "Link layer" in f else None
    return IbstatPort(
        num=pb.num,
        state=f["State"][0],
        phys_state=f["Physical state"][0],
        rate=rate,
        fdr10=m["note"] == "FDR10",
        effective_speed=eff,
        base_lid=num("Base lid"),
        lmc=num("LMC"),
        sm_lid=num("SM lid"),
        cap_mask=hex0x(cap_v, source, cap_ln, f"{where}: Capability mask", _FIX),
        port_guid=guid(pg_v, source, pg_ln, f"{where}: Port GUID", _FIX),
        link_layer=link_layer or None,
        rate_raw=rate_raw,
        line=pb.line,
    )


def _finish_ca(ca: _CaBuilder, source: str, end_line: int) -> IbstatCa:
    if ca.port is not None:
        ca.ports.append(_finish_port(ca, ca.port, source, end_line))
        ca.port = None
    f = ca.fields
    if ca.single and not f:
        return IbstatCa(
            name=ca.name,
            node_type=ca.node_type,
            ca_type=None,
            num_ports=None,
            fw_ver=None,
            hw_ver=None,
            node_guid=None,
            sys_image_guid=None,
            ports=tuple(ca.ports),
            single_port=True,
            line=ca.line,
        )
    for key in _CA_REQUIRED:
        if key not in f:
            label = f"{ca.node_type} type" if key == "type" else key
            raise perr(
                source,
                end_line,
                f"CA '{ca.name}': block ends without '{label}:' (truncated output?)",
                _FIX,
            )
    where = f"CA '{ca.name}'"
    np_v, np_ln = f["Number of ports"]
    ng_v, ng_ln = f["Node GUID"]
    sg_v, sg_ln = f["System image GUID"]
    return IbstatCa(
        name=ca.name,
        node_type=ca.node_type,
        ca_type=f["type"][0],
        num_ports=dec(np_v, source, np_ln, f"{where}: Number of ports", _FIX),
        fw_ver=f["Firmware version"][0],
        hw_ver=f["Hardware version"][0],
        node_guid=guid(ng_v, source, ng_ln, f"{where}: Node GUID", _FIX),
        sys_image_guid=guid(sg_v, source, sg_ln, f"{where}: System image GUID", _FIX),
        ports=tuple(ca.ports),
        single_port=ca.single,
        line=ca.line,
    )
