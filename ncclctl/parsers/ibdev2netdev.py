"""Parser for MLNX_OFED / DOCA ``ibdev2netdev`` (ofed_scripts/ibdev2netdev, a bash script).

Three line shapes exist, all printed with ``echo``:

* default: ``mlx5_0 port 1 ==> ens1f0np0 (Up)``; the state comes from ``/sys/class/net/<if>/carrier``:
  ``Up``, ``Down`` or ``NA`` (empty when the netdev has no ``dev_id`` file);
* ``-v``: ``<pci> <ibdev> (<MT id> - <part number>) <VPD description> fw <fw> port <n> (<IB state>)
  ==> <netdev> (<state>)``; the IB state is ``printf "%-6s"`` padded (``(DOWN  )``), the part number
  is padded to 11 and the description to 15 characters (``(MT4120 - NA)`` when the VPD is unreadable,
  and then the description is empty), the description itself may contain parentheses, and the PCI
  address is empty when the script cannot find it (the line then starts with a space);
* very old OFED: ``mlx4_0 port 1 <===> eth2`` (no state).
"""

from __future__ import annotations

import re
from dataclasses import field

from ncclctl.parsers._common import perr, run_parser, split_lines, strip_ansi
from ncclctl.record import record

__all__ = ["Ibdev2NetdevEntry", "parse_ibdev2netdev"]

_FIX = "pass the unedited output of `ibdev2netdev` or `ibdev2netdev -v`"

_SHORT_RE = re.compile(
    r"(?P<ibdev>\S+)[ \t]+port[ \t]+(?P<port>[0-9]{1,5})[ \t]+==>[ \t]+(?P<netdev>\S+)"
    r"[ \t]*\((?P<state>[^()]*)\)",
    re.ASCII,
)
_OLD_RE = re.compile(
    r"(?P<ibdev>\S+)[ \t]+port[ \t]+(?P<port>[0-9]{1,5})[ \t]+<===>[ \t]+(?P<netdev>\S+)", re.ASCII
)
_VERBOSE_RE = re.compile(
    r"(?:(?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])[ \t]+)?"
    r"(?P<ibdev>\S+)[ \t]+\((?P<devid>[^ ()]*)[ \t]+-[ \t]+(?P<part>[^()]*?)[ \t]*\)"
    r"(?P<desc>.*)[ \t]fw[ \t]+(?P<fw>\S+)[ \t]+port[ \t]+(?P<port>[0-9]{1,5})"
    r"[ \t]+\((?P<ibstate>[^()]*?)[ \t]*\)[ \t]+==>[ \t]+(?P<netdev>\S+)[ \t]*\((?P<state>[^()]*)\)",
    re.ASCII,
)


@record
class Ibdev2NetdevEntry:
    ibdev: str
    port: int
    netdev: str
    #: ``Up``, ``Down``, ``NA`` or ``""`` (carrier); None for the old ``<===>`` form.
    state: str | None
    # ---- ``-v`` only ----
    #: PCI function, e.g. ``0000:1a:00.0`` (None when the script could not find it or without -v).
    pci_bdf: str | None = None
    #: ``MT4129`` (``MT`` + PCI device id in decimal) or ``NA``.
    hca_type: str | None = None
    #: Board part number from the VPD (``MCX75310AAS-NEAT``) or ``NA``.
    part_number: str | None = None
    #: VPD product name, trailing padding removed; None when empty.
    description: str | None = None
    fw_ver: str | None = None
    #: IB port state word from sysfs (``ACTIVE``, ``DOWN``, ``INIT``, ``ARMED``) or ``NA``.
    port_state: str | None = None
    line: int = field(default=0, compare=False)


def parse_ibdev2netdev(text: str, *, source: str = "ibdev2netdev") -> tuple[Ibdev2NetdevEntry, ...]:
    """Parse ``ibdev2netdev`` / ``ibdev2netdev -v`` output; empty output gives ``()``."""
    return run_parser(_parse, text, source, "ibdev2netdev")


def _parse(text: str, source: str) -> tuple[Ibdev2NetdevEntry, ...]:
    out: list[Ibdev2NetdevEntry] = []
    for lineno, raw in enumerate(split_lines(text), 1):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        m = _SHORT_RE.fullmatch(line)
        if m:
            out.append(
                Ibdev2NetdevEntry(
                    ibdev=m["ibdev"],
                    port=int(m["port"]),
                    netdev=m["netdev"],
                    state=m["state"].strip(),
                    line=lineno,
                )
            )
            continue
        m = _VERBOSE_RE.fullmatch(line)
        if m:
            desc = " ".join(m["desc"].split())
            out.append(
                Ibdev2NetdevEntry(
                    ibdev=m["ibdev"],
                    port=int(m["port"]),
                    netdev=m["netdev"],
                    state=m["state"].strip(),
                    pci_bdf=m["pci"],
                    hca_type=m["devid"] or None,
                    part_number=m["part"].strip() or None,
                    description=desc or None,
                    fw_ver=m["fw"],
                    port_state=m["ibstate"].strip() or None,
                    line=lineno,
                )
            )
            continue
        m = _OLD_RE.fullmatch(line)
        if m:
            out.append(
                Ibdev2NetdevEntry(
                    ibdev=m["ibdev"],
                    port=int(m["port"]),
                    netdev=m["netdev"],
                    state=None,
                    line=lineno,
                )
            )
            continue
        raise perr(
            source,
            lineno,
            f"cannot interpret line {line[:100]!r}; expected '<ibdev> port <n> ==> <netdev> (<state>)'",
            _FIX,
        )
    return tuple(out)
