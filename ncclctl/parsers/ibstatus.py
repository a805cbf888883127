"""Parser for ``ibstatus`` (the infiniband-diags shell script that prints sysfs port state).

Layout per port (a blank line between ports)::

    Infiniband device 'mlx5_0' port 1 status:
    <TAB>default gid:<TAB> fe80:0000:0000:0000:0015:5dff:fd34:11eb
    <TAB>base lid:<TAB> 0x33bf
    <TAB>sm lid:<TAB><TAB> 0x1
    <TAB>state:<TAB><TAB> 4: ACTIVE
    <TAB>phys state:<TAB> 5: LinkUp
    <TAB>rate:<TAB><TAB> 200 Gb/sec (4X HDR)
    <TAB>link_layer:<TAB> InfiniBand

LIDs are hex (the sysfs spelling, unlike ibstat's decimal); ``default gid`` is ``unknown`` where the port has no
GID table entry; ``rate`` is the sysfs string (aggregate Gb/s, lanes and generation). Pasted copies are re-indented
(spaces, a markdown code block's 4 columns), carry a prompt and the command, or are cut: a port block cut before
its ``state`` line is left out and said in :attr:`IbstatusOutput.notes`; what came before is kept.
"""

from __future__ import annotations

import re
from dataclasses import field

from ncclctl.parsers._common import cut_here, paste_body, perr, run_parser, split_lines, strip_ansi
from ncclctl.record import record

__all__ = ["IbstatusOutput", "IbstatusPort", "parse_ibstatus"]

_FIX = "pass the output of `ibstatus` (TABs or spaces are both fine)"
_HEAD_RE = re.compile(r"Infiniband device '(?P<dev>[^']{1,64})' port (?P<port>[0-9]{1,3}) status:")
_STATE_RE = re.compile(r"(?P<num>[0-9]{1,2}):[ \t]*(?P<name>[A-Za-z_]+)")
_RATE_RE = re.compile(r"(?P<gbps>[0-9]{1,5}(?:\.[0-9]{1,3})?)[ \t]*Gb/sec(?:[ \t]*\((?P<width>[0-9]{1,2})X[ \t]*"
                      r"(?P<speed>[A-Z0-9]{2,6})?\))?")
_KEYS = {"default gid": "gid", "base lid": "base_lid", "sm lid": "sm_lid", "state": "state",
         "phys state": "phys_state", "rate": "rate", "link_layer": "link_layer"}


@record
class IbstatusPort:
    device: str
    port: int
    #: ``ACTIVE``, ``DOWN``, ``INIT``, ``ARMED`` as printed, with the state number
    state: str
    state_num: int
    phys_state: str | None
    phys_state_num: int | None
    rate_gbps: float | None
    #: lanes (``4`` for ``4X``) and the generation name (``HDR``), None when the rate string lacks them
    width: int | None
    speed: str | None
    link_layer: str | None
    default_gid: str | None
    base_lid: int | None
    sm_lid: int | None
    rate_raw: str | None = None
    line: int = field(default=0, compare=False)


@record
class IbstatusOutput:
    ports: tuple[IbstatusPort, ...]
    #: what the output lacked: a port block cut before its state, lines the paste elided
    notes: tuple[str, ...] = ()


def parse_ibstatus(text: str, *, source: str = "ibstatus") -> IbstatusOutput:
    """Parse ``ibstatus`` output; empty output gives no ports."""
    return run_parser(_parse, text, source, "ibstatus")


def _parse(text: str, source: str) -> IbstatusOutput:
    lines, _pasted = paste_body([strip_ansi(x) for x in split_lines(text)], ("ibstatus",))
    ports: list[IbstatusPort] = []
    notes: list[str] = []
    cur: dict | None = None

    def finish(end: int) -> None:
        nonlocal cur
        if cur is None:
            return
        b, cur = cur, None
        if "state" not in b:
            notes.append(f"{b['device']} port {b['port']} (line {b['line']}): the block ends before its 'state:' "
                         f"line (the output is cut at line {end}); the port is left out")
            return
        num, name = b["state"]
        phys = b.get("phys_state")
        rate = b.get("rate")
        ports.append(IbstatusPort(device=b["device"], port=b["port"], state=name, state_num=num,
                                  phys_state=phys[1] if phys else None, phys_state_num=phys[0] if phys else None,
                                  rate_gbps=rate[0] if rate else None, width=rate[1] if rate else None,
                                  speed=rate[2] if rate else None, link_layer=b.get("link_layer"),
                                  default_gid=b.get("gid"), base_lid=b.get("base_lid"), sm_lid=b.get("sm_lid"),
                                  rate_raw=rate[3] if rate else None, line=b["line"]))

    for lineno, raw in enumerate(lines, 1):
        s = raw.strip()
        if not s:
            continue
        m = _HEAD_RE.fullmatch(s)
        if m:
            finish(lineno - 1)
            cur = {"device": m["dev"], "port": int(m["port"]), "line": lineno}
            continue
        if cur is None:
            raise perr(source, lineno, f"unexpected line before the first \"Infiniband device '...' port N status:\" "
                                       f"line: {s[:80]!r}", _FIX)
        key, sep, value = s.partition(":")
        key = " ".join(key.split())
        value = value.strip()
        if not sep or key not in _KEYS:
            if cut_here(lines, lineno):
                notes.append(f"line {lineno}: the output is cut in the middle of a line ({s[:40]!r})")
                continue
            raise perr(source, lineno, f"{cur['device']} port {cur['port']}: cannot read {s[:80]!r}", _FIX)
        slot = _KEYS[key]
        if slot in ("state", "phys_state"):
            sm = _STATE_RE.fullmatch(value)
            if sm is None:
                raise perr(source, lineno, f"{key}: expected '<n>: <NAME>', got {value!r}", _FIX)
            cur[slot] = (int(sm["num"]), sm["name"])
        elif slot in ("base_lid", "sm_lid"):
            try:
                cur[slot] = int(value, 16) if value.lower().startswith("0x") else int(value)
            except ValueError:
                raise perr(source, lineno, f"{key}: expected a hex LID (0x1f), got {value!r}", _FIX) from None
        elif slot == "rate":
            rm = _RATE_RE.fullmatch(value)
            if rm is None:
                raise perr(source, lineno, f"rate: expected '<n> Gb/sec (4X NDR)', got {value!r}", _FIX)
            cur[slot] = (float(rm["gbps"]), int(rm["width"]) if rm["width"] else None, rm["speed"], value)
        elif slot == "gid":
            cur[slot] = None if value == "unknown" else value
        else:
            cur[slot] = value
    finish(len(lines))
    return IbstatusOutput(ports=tuple(ports), notes=tuple(notes))
