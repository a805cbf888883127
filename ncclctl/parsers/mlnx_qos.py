"""Parser for ``mlnx_qos -i <if>`` (Mellanox/mlnx-tools python/mlnx_qos, ``pretty_print``).

The tool prints, in this order (lines 3 and 4 are conditional)::

    ****** WARNING: lldpad service is running and may overwrite your settings ******   (+ blank)
    DCBX mode: OS controlled                      | Firmware controlled
    Priority trust state: dscp                    | pcp | none (when unsupported)
    dscp2prio mapping:                            (trust dscp only)
    <TAB>prio:0 dscp:07,06,05,04,03,02,01,00,       (wrapped every 8 values: "prio:0" repeats)
    Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=2097152
    Cable len: 7
    PFC configuration:
    <TAB>priority    0   1   2   3   4   5   6   7
    <TAB>enabled     0   0   0   1   0   0   0   0   <- "%1d   " each: 3 trailing spaces
    <TAB>buffer      0   0   0   1   0   0   0   0   <- only when buffers are supported
    tc: 0 ratelimit: unlimited, tsa: ets, bw: 50%
    <TAB> priority:  0
    ...

Other lines it can print before that: ``Priority trust state is not supported on your system``,
``Buffers commands are not supported on your system``, ``Rate limit is not supported on your
system!``. When the rate limits cannot be read at all the ``tc: N ratelimit: X, `` prefix is lost
and the line is just ``ets, bw: 50%`` / ``strict`` (an IndexError swallowed by the tool); such TCs get
``tc=None``. The dscp2prio lines come from sysfs (ascending DSCPs) or the DCB APP table (table
order); a DSCP may appear under two priorities when the APP table holds both.

Lines are recognised by keyword, not by position or indentation.
"""

from __future__ import annotations

import re
from dataclasses import field

from ncclctl.parsers._common import dec, last_line, perr, run_parser, split_lines, strip_ansi
from ncclctl.record import record

__all__ = ["MlnxQos", "MlnxQosTc", "parse_mlnx_qos"]

_FIX = "pass the unedited output of `mlnx_qos -i <interface>`"

_NOTICES = (
    "Priority trust state is not supported on your system",
    "Buffers commands are not supported on your system",
    "Rate limit is not supported on your system!",
)
_PRIO_DSCP_RE = re.compile(r"prio:[ \t]*(?P<prio>[0-9]{1,3})[ \t]+dscp:[ \t]*(?P<list>.*)", re.ASCII)
_TC_RE = re.compile(
    r"tc:[ \t]*(?P<tc>[0-9]{1,3})[ \t]+ratelimit:[ \t]*(?P<rate>[^,]*?)[ \t]*,[ \t]*tsa:[ \t]*(?P<tsa>.*)",
    re.ASCII,
)
_TSA_RE = re.compile(r"(?P<tsa>ets|strict|vendor|unknown)(?:[ \t]*,[ \t]*bw:[ \t]*(?P<bw>[0-9]{1,3})[ \t]*%)?", re.ASCII)
_RATE_RE = re.compile(r"(?P<num>[0-9]{1,9}(?:\.[0-9]{1,6})?)[ \t]*Gbps", re.ASCII)
_TC_PRIO_RE = re.compile(r"priority:[ \t]*(?P<p>[0-9]{1,3})", re.ASCII)


@record
class MlnxQosTc:
    #: Traffic class number; None when mlnx_qos lost the ``tc: N ratelimit: ...`` prefix.
    tc: int | None
    #: As printed: ``unlimited`` or ``12.5 Gbps``; None when the prefix was lost.
    ratelimit: str | None
    #: ``12.5`` for ``12.5 Gbps``; None for ``unlimited`` / unknown.
    ratelimit_gbps: float | None
    #: ``ets``, ``strict``, ``vendor`` or ``unknown``.
    tsa: str
    #: ETS bandwidth share (``bw: 50%``), None for non-ETS classes.
    bw_percent: int | None
    #: Priorities mapped to this TC (the ``priority:`` lines that follow).
    priorities: tuple[int, ...]
    line: int = field(default=0, compare=False)


@record
class MlnxQos:
    #: ``OS controlled`` or ``Firmware controlled`` as printed; None if the line is missing.
    dcbx_mode: str | None
    #: ``pcp``, ``dscp``, or None when mlnx_qos printed ``none`` (trust state unsupported).
    trust: str | None
    #: ``(dscp, prio)`` pairs, sorted; empty unless trust is dscp.
    dscp2prio: tuple[tuple[int, int], ...]
    #: PFC on/off for priorities 0..7.
    pfc_enabled: tuple[bool, ...]
    #: prio -> receive buffer for priorities 0..7 (the ``buffer`` row), None when not printed.
    pfc_buffer: tuple[int, ...] | None
    #: The 8 receive buffer sizes in bytes, None when not printed.
    buffer_sizes: tuple[int, ...] | None
    max_buffer_size: int | None
    cable_len: int | None
    tcs: tuple[MlnxQosTc, ...]
    #: True when the lldpad warning was printed (lldpad may overwrite these settings).
    lldpad_warning: bool = False
    #: Other informational lines ("... is not supported on your system").
    notices: tuple[str, ...] = ()

    def prios_for_dscp(self, dscp: int) -> tuple[int, ...]:
        return tuple(sorted({p for d, p in self.dscp2prio if d == dscp}))

    @property
    def pfc_priorities(self) -> tuple[int, ...]:
        return tuple(i for i, on in enumerate(self.pfc_enabled) if on)


def parse_mlnx_qos(text: str, *, source: str = "mlnx_qos") -> MlnxQos:
    """Parse ``mlnx_qos -i <if>`` output. Empty output is an error (the tool always prints)."""
    return run_parser(_parse, text, source, "mlnx_qos")


class _Tc:
    __slots__ = ("tc", "rate", "rate_gbps", "tsa", "bw", "prios", "line")

    def __init__(
        self,
        tc: int | None,
        rate: str | None,
        rate_gbps: float | None,
        tsa: str,
        bw: int | None,
        line: int,
    ) -> None:
        self.tc = tc
        self.rate = rate
        self.rate_gbps = rate_gbps
        self.tsa = tsa
        self.bw = bw
        self.prios: list[int] = []
        self.line = line


def _eight(values: list[str], source: str, lineno: int, what: str, maxv: int | None) -> tuple[int, ...]:
    if len(values) != 8:
        raise perr(source, lineno, f"{what}: expected 8 values, got {len(values)}", _FIX)
    out = tuple(dec(v, source, lineno, what, _FIX) for v in values)
    if maxv is not None and any(v > maxv for v in out):
        raise perr(source, lineno, f"{what}: values must be 0..{maxv}, got {' '.join(values)}", _FIX)
    return out


def _parse(text: str, source: str) -> MlnxQos:
    lines = split_lines(text)
    seen: dict[str, int] = {}
    dcbx: str | None = None
    trust_raw: str | None = None
    pairs: list[tuple[int, int]] = []
    pfc_enabled: tuple[int, ...] | None = None
    pfc_buffer: tuple[int, ...] | None = None
    buffer_sizes: tuple[int, ...] | None = None
    max_buffer: int | None = None
    cable_len: int | None = None
    tcs: list[_Tc] = []
    lldpad = False
    notices: list[str] = []

    def once(key: str, lineno: int) -> None:
        if key in seen:
            raise perr(source, lineno, f"'{key}' appears twice (line {seen[key]} too)", _FIX)
        seen[key] = lineno

    for lineno, raw in enumerate(lines, 1):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        if "WARNING" in line and "lldpad" in line:
            lldpad = True
            continue
        if line in _NOTICES:
            notices.append(line)
            continue
        tokens = line.split()
        head = tokens[0]

        if line.startswith("DCBX mode:"):
            once("DCBX mode", lineno)
            dcbx = line.partition(":")[2].strip()
            if dcbx not in ("OS controlled", "Firmware controlled"):
                raise perr(source, lineno, f"unknown DCBX mode {dcbx!r}", _FIX)
        elif line.startswith("Priority trust state:"):
            once("Priority trust state", lineno)
            trust_raw = line.partition(":")[2].strip()
            if trust_raw not in ("pcp", "dscp", "none"):
                raise perr(source, lineno, f"unknown trust state {trust_raw!r}", _FIX)
        elif line == "dscp2prio mapping:":
            once("dscp2prio mapping", lineno)
        elif head.startswith("prio:"):
            m = _PRIO_DSCP_RE.fullmatch(line)
            if not m:
                raise perr(source, lineno, f"cannot read dscp2prio line {line[:80]!r}", _FIX)
            prio = int(m["prio"])
            if prio > 7:
                raise perr(source, lineno, f"dscp2prio: priority {prio} out of range 0..7", _FIX)
            items = [v.strip() for v in m["list"].split(",")]
            if items and items[-1] == "":
                items.pop()  # every value is followed by a comma
            if not items:
                raise perr(source, lineno, f"dscp2prio: no DSCP values for prio {prio}", _FIX)
            for item in items:
                d = dec(item, source, lineno, f"dscp2prio prio {prio}", _FIX)
                if d > 63:
                    raise perr(source, lineno, f"dscp2prio: DSCP {d} out of range 0..63", _FIX)
                pairs.append((d, prio))
        elif line.startswith("Receive buffer size (bytes):"):
            once("Receive buffer size", lineno)
            items = [v.strip() for v in line.partition(":")[2].split(",")]
            items = [v for v in items if v]
            if items and items[-1].startswith("max_buffer_size="):
                max_buffer = dec(
                    items.pop()[len("max_buffer_size=") :], source, lineno, "max_buffer_size", _FIX
                )
            buffer_sizes = _eight(items, source, lineno, "Receive buffer size", None)
        elif line.startswith("Cable len:"):
            once("Cable len", lineno)
            cable_len = dec(line.partition(":")[2].strip(), source, lineno, "Cable len", _FIX)
        elif line == "PFC configuration:":
            once("PFC configuration", lineno)
        elif head == "priority":
            once("priority row", lineno)
            if tokens[1:] != [str(i) for i in range(8)]:
                raise perr(source, lineno, f"unexpected PFC priority header {line!r}", _FIX)
        elif head == "enabled":
            once("enabled row", lineno)
            pfc_enabled = _eight(tokens[1:], source, lineno, "PFC enabled", 1)
        elif head == "buffer":
            once("buffer row", lineno)
            pfc_buffer = _eight(tokens[1:], source, lineno, "PFC buffer", 7)
        elif head == "tc:":
            m = _TC_RE.fullmatch(line)
            if not m:
                raise perr(source, lineno, f"cannot read traffic-class line {line[:80]!r}", _FIX)
            tsa, bw = _tsa(m["tsa"], source, lineno)
            rate = m["rate"]
            rm = _RATE_RE.fullmatch(rate)
            if rate != "unlimited" and not rm:
                raise perr(source, lineno, f"cannot read ratelimit {rate!r}", _FIX)
            tc = int(m["tc"])
            if any(t.tc == tc for t in tcs):
                raise perr(source, lineno, f"traffic class {tc} listed twice", _FIX)
            tcs.append(_Tc(tc, rate, float(rm["num"]) if rm else None, tsa, bw, lineno))
        elif _TSA_RE.fullmatch(line):
            tsa, bw = _tsa(line, source, lineno)
            tcs.append(_Tc(None, None, None, tsa, bw, lineno))
        elif head.startswith("priority:"):
            m = _TC_PRIO_RE.fullmatch(line)
            if not m:
                raise perr(source, lineno, f"cannot read TC priority line {line[:80]!r}", _FIX)
            if not tcs:
                raise perr(source, lineno, "'priority:' line before any 'tc:' line", _FIX)
            p = int(m["p"])
            if p > 7:
                raise perr(source, lineno, f"priority {p} out of range 0..7", _FIX)
            tcs[-1].prios.append(p)
        else:
            raise perr(
                source,
                lineno,
                f"cannot interpret line {line[:100]!r}",
                _FIX + "; if mlnx_qos printed an error, fix that first",
            )

    if trust_raw is None:
        raise perr(
            source,
            last_line(lines),
            "no 'Priority trust state:' line (empty or truncated output?)",
            _FIX,
        )
    if pfc_enabled is None:
        raise perr(
            source,
            last_line(lines),
            "no PFC 'enabled' row (truncated output?)",
            _FIX,
        )
    return MlnxQos(
        dcbx_mode=dcbx,
        trust=None if trust_raw == "none" else trust_raw,
        dscp2prio=tuple(sorted(set(pairs))),
        pfc_enabled=tuple(v == 1 for v in pfc_enabled),
        pfc_buffer=pfc_buffer,
        buffer_sizes=buffer_sizes,
        max_buffer_size=max_buffer,
        cable_len=cable_len,
        tcs=tuple(
            MlnxQosTc(
                tc=t.tc,
                ratelimit=t.rate,
                ratelimit_gbps=t.rate_gbps,
                tsa=t.tsa,
                bw_percent=t.bw,
                priorities=tuple(t.prios),
                line=t.line,
            )
            for t in tcs
        ),
        lldpad_warning=lldpad,
        notices=tuple(notices),
    )


def _tsa(text: str, source: str, lineno: int) -> tuple[str, int | None]:
    m = _TSA_RE.fullmatch(text.strip())
    if not m:
        raise perr(source, lineno, f"cannot read tsa {text!r}", _FIX)
    bw = int(m["bw"]) if m["bw"] is not None else None
    if bw is not None and bw > 100:
        raise perr(source, lineno, f"ETS bandwidth {bw}% > 100%", _FIX)
    if m["tsa"] == "ets" and bw is None:
        raise perr(source, lineno, "ETS class without 'bw: N%'", _FIX)
    return m["tsa"], bw
