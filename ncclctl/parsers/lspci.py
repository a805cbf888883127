"""Parser for ``lspci -vvv`` (also ``-vvvnn``, ``-vvvs <slot>``, ``-D``): per device, what the ACS and
link-training checks need.

Layout::

    0000:40:01.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge (prog-if 00 [Normal decode])
    <TAB>NUMA node: 1
    <TAB>Capabilities: [58] Express (v2) Root Port (Slot+), MSI 00
    <TAB><TAB>LnkCap:<TAB>Port #0, Speed 16GT/s, Width x16, ASPM L1, Exit Latency L1 <64us
    <TAB><TAB>LnkSta:<TAB>Speed 16GT/s (ok), Width x16 (ok)
    <TAB>Capabilities: [2a0 v1] Access Control Services
    <TAB><TAB>ACSCap:<TAB>SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans+
    <TAB><TAB>ACSCtl:<TAB>SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
    <TAB>Kernel driver in use: pcieport

Only root sees the extended capabilities: without it lspci prints ``Capabilities: <access denied>`` (kept as
:attr:`LspciDevice.access_denied`). ACS flags become the ACS capability/control register bits (SrcValid 0x01,
TransBlk 0x02, ReqRedir 0x04, CmpltRedir 0x08, UpstreamFwd 0x10, EgressCtrl 0x20, DirectTrans 0x40), link speeds
the sysfs spelling (``16.0 GT/s PCIe``). Older lspci prints ``LnkSta: Speed 8GT/s, Width x16, TrErr- ...``
without ``(ok)``/``(downgraded)``. Pasted copies carry a prompt and the command, quote the text for mail
(``> ``), wrap long flag lines and elide (``....``): those are read or skipped, and :attr:`LspciOutput.notes`
says what was elided.
"""

from __future__ import annotations

import re
from dataclasses import field

from ncclctl.parsers._common import cut_here, ELISION_RE, paste_body, perr, run_parser, split_lines, strip_ansi
from ncclctl.sysfs import GEN_SPEED_STRING, link_speed_gen
from ncclctl.record import record

__all__ = ["ACS_FLAGS", "LspciDevice", "LspciOutput", "parse_lspci"]

_FIX = "pass the output of `sudo lspci -vvv` (root is needed for the ACS lines), from its first line"
_HEAD_RE = re.compile(r"(?:(?P<dom>[0-9a-fA-F]{4,5}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\.(?P<fn>[0-7])"
                      r"[ \t]+(?P<cls>[^:\[]+?)(?:[ \t]*\[(?P<cid>[0-9a-fA-F]{4})\])?:[ \t]*(?P<desc>.*)")
_EXPRESS_RE = re.compile(r"Express \(v[0-9]\) (?P<type>Root Port|Downstream Port|Upstream Port|Endpoint|Legacy "
                         r"Endpoint|Root Complex Integrated Endpoint|Root Complex Event Collector|PCI-Express to "
                         r"PCI/PCI-X Bridge|PCI/PCI-X to PCI-Express Bridge)")
_SPEED_RE = re.compile(r"Speed (?P<speed>[0-9.]+ ?GT/s|unknown)(?: \((?P<sq>ok|downgraded)\))?", re.IGNORECASE)
_WIDTH_RE = re.compile(r"Width x(?P<width>[0-9]{1,2})(?: \((?P<wq>ok|downgraded|strange)\))?")
_FLAG_RE = re.compile(r"([A-Za-z0-9_]+)([+-])")
_FLAGS_ONLY_RE = re.compile(r"(?:[A-Za-z0-9_]+[+-][ \t,]*)+")
#: lspci's ACS flag names and the register bits they show (PCIe base spec, ACS Capability/Control)
ACS_FLAGS = {"SrcValid": 0x01, "TransBlk": 0x02, "ReqRedir": 0x04, "CmpltRedir": 0x08, "UpstreamFwd": 0x10,
             "EgressCtrl": 0x20, "DirectTrans": 0x40}


@record
class LspciDevice:
    #: ``0000:40:01.1`` (the domain added when lspci left it out)
    bdf: str
    class_name: str
    description: str
    #: from ``Express (v2) <type>``: ``Root Port``, ``Downstream Port``, ``Upstream Port``, ``Endpoint``, ...
    port_type: str | None
    max_link_speed: str | None
    max_link_width: int | None
    current_link_speed: str | None
    current_link_width: int | None
    #: lspci's own verdict on LnkSta (``(downgraded)``), None when it prints none
    speed_downgraded: bool | None
    width_downgraded: bool | None
    acs_cap: int | None
    acs_ctrl: int | None
    numa_node: int | None
    driver: str | None
    #: ``Capabilities: <access denied>``: lspci ran without root and the extended capabilities (ACS) are unknown
    access_denied: bool
    line: int = field(default=0, compare=False)

    @property
    def is_bridge(self) -> bool:
        return self.class_name.lower().startswith(("pci bridge", "host bridge")) or self.port_type in (
            "Root Port", "Downstream Port", "Upstream Port")


@record
class LspciOutput:
    devices: tuple[LspciDevice, ...]
    notes: tuple[str, ...] = ()

    def by_bdf(self) -> dict[str, LspciDevice]:
        return {d.bdf: d for d in self.devices}


def parse_lspci(text: str, *, source: str = "lspci -vvv") -> LspciOutput:
    """Parse ``lspci -vvv``; empty output gives no devices."""
    return run_parser(_parse, text, source, "lspci -vvv")


def _speed(text: str | None, source: str, lineno: int) -> str | None:
    if not text or text.lower() == "unknown":
        return None
    value = text.replace(" ", "").replace("GT/s", " GT/s")
    try:
        gen = link_speed_gen(value)
    except ValueError:
        raise perr(source, lineno, f"unknown PCIe link speed {text!r}", _FIX) from None
    return GEN_SPEED_STRING.get(gen) if gen is not None else None


def _flags(value: str) -> int:
    bits = 0
    for name, sign in _FLAG_RE.findall(value):
        if sign == "+" and name in ACS_FLAGS:
            bits |= ACS_FLAGS[name]
    return bits


def _parse(text: str, source: str) -> LspciOutput:
    raw_lines = [strip_ansi(x) for x in split_lines(text)]
    notes: list[str] = []
    quoted = [x for x in raw_lines if x.strip()]
    if quoted and sum(1 for x in quoted if x.startswith(">")) * 2 > len(quoted):
        raw_lines = [x[2:] if x.startswith("> ") else x[1:] if x.startswith(">") else x for x in raw_lines]
        notes.append("the text is quoted for mail ('> '): the quote marks are ignored")
    lines, _pasted = paste_body(raw_lines, ("lspci",))
    devices: list[LspciDevice] = []
    cur: dict | None = None
    last_key: str | None = None

    def finish() -> None:
        nonlocal cur
        if cur is None:
            return
        c, cur = cur, None
        lnk_cap = c.get("LnkCap", "")
        lnk_sta = c.get("LnkSta", "")
        cap_s, cap_w = _SPEED_RE.search(lnk_cap), _WIDTH_RE.search(lnk_cap)
        sta_s, sta_w = _SPEED_RE.search(lnk_sta), _WIDTH_RE.search(lnk_sta)
        ln = c["line"]
        devices.append(LspciDevice(
            bdf=c["bdf"], class_name=c["cls"], description=c["desc"], port_type=c.get("type"),
            max_link_speed=_speed(cap_s["speed"], source, ln) if cap_s else None,
            max_link_width=int(cap_w["width"]) if cap_w else None,
            current_link_speed=_speed(sta_s["speed"], source, ln) if sta_s else None,
            current_link_width=int(sta_w["width"]) if sta_w else None,
            speed_downgraded=(sta_s["sq"] == "downgraded") if sta_s and sta_s["sq"] else None,
            width_downgraded=(sta_w["wq"] == "downgraded") if sta_w and sta_w["wq"] else None,
            acs_cap=_flags(c["ACSCap"]) if "ACSCap" in c else None,
            acs_ctrl=_flags(c["ACSCtl"]) if "ACSCtl" in c else None,
            numa_node=c.get("numa"), driver=c.get("driver"), access_denied=c.get("denied", False), line=ln))

    for lineno, raw in enumerate(lines, 1):
        s = raw.strip()
        if not s:
            continue
        if ELISION_RE.fullmatch(s):
            notes.append(f"line {lineno}: {s!r}: the paste leaves lines out here")
            continue
        indented = raw[:1] in (" ", "\t")
        m = None if indented else _HEAD_RE.fullmatch(s)
        if m:
            finish()
            dom = (m["dom"] or "0000").lower().rjust(4, "0")
            bdf = f"{dom}:{m['bus'].lower()}:{m['dev'].lower()}.{m['fn']}"
            if any(d.bdf == bdf for d in devices):
                raise perr(source, lineno, f"device {bdf} is listed twice", _FIX)
            cur = {"bdf": bdf, "cls": m["cls"].strip(), "desc": m["desc"].strip(), "line": lineno}
            last_key = None
            continue
        if cur is None:
            hint = (" (quoted-printable mail text? '=3D' and '=' line ends)" if "=3D" in text else
                    " (this is 'lspci -t' or 'lspci -nn' output?)" if s.startswith(("-[", "-+", "+-", "\\-", "|")) else "")
            raise perr(source, lineno, f"a line before the first device line (BB:DD.F class: name): {s[:80]!r}{hint}",
                       _FIX)
        if not indented and _FLAGS_ONLY_RE.fullmatch(s) and last_key in ("ACSCap", "ACSCtl", "LnkSta", "LnkCap"):
            cur[last_key] = cur[last_key] + " " + s  # a long flag line wrapped by the paste
            continue
        key, sep, value = s.partition(":")
        key = key.strip()
        value = value.strip()
        last_key = None
        if key in ("ACSCap", "ACSCtl", "LnkCap", "LnkSta") and sep:
            cur[key] = value
            last_key = key
        elif key == "Capabilities" and sep:
            if "<access denied>" in value:
                cur["denied"] = True
            em = _EXPRESS_RE.search(value)
            if em:
                cur["type"] = em["type"]
        elif key == "NUMA node" and value.lstrip("-").isdigit():
            cur["numa"] = int(value)
        elif key == "Kernel driver in use":
            cur["driver"] = value
        elif not indented and not sep:
            if cut_here(lines, lineno):
                notes.append(f"line {lineno}: the output is cut in the middle of a line ({s[:40]!r})")
                continue
            raise perr(source, lineno, f"unexpected line: {s[:80]!r}", _FIX)
        # every other line of a device (Control:, Region, DevCap, ...) is not needed
    finish()
    return LspciOutput(devices=tuple(devices), notes=tuple(notes))
