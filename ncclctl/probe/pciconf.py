"""PCI config space and VPD, read from their bytes: the extended capability list (ACS, ATS) and the VPD
resources and keywords (the ConnectX V3 pairing). Pure: bytes in, values out; :mod:`ncclctl.probe.pci` reads them
for the model, :mod:`ncclctl.probe.redact` rewrites VPD keywords.
"""

from __future__ import annotations


def find_ext_cap(config: bytes, cap_id: int) -> int | None:
    """Walk the PCIe extended capability list (from 0x100): the offset of capability ``cap_id``, or None."""
    offset = 0x100
    seen = set()
    while offset and offset not in seen and offset + 4 <= len(config):
        seen.add(offset)
        header = int.from_bytes(config[offset:offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == cap_id:
            return offset
        nxt = (header >> 20) & 0xFFC
        offset = nxt if nxt >= 0x100 else 0
    return None


def find_acs(config: bytes) -> tuple[int, int] | None:
    """The ACS extended capability (id 0x000d): (capability, control)."""
    if len(config) < 0x108:
        return None
    offset = find_ext_cap(config, 0x000D)
    if offset is None or offset + 8 > len(config):
        return None
    cap = int.from_bytes(config[offset + 4:offset + 6], "little")
    ctrl = int.from_bytes(config[offset + 6:offset + 8], "little")
    return cap, ctrl


def vpd_resources(vpd: bytes):
    """PCI VPD resources (PCI Local Bus spec 3.0 section 6.28 / PCIe 6.0 section 6.27): (tag, start of data,
    length) up to the end tag; a truncated or malformed tail ends the walk."""
    pos = 0
    while pos < len(vpd):
        tag = vpd[pos]
        if tag in (0x78, 0x79):  # small / large resource end tag
            return
        if tag & 0x80:
            if pos + 3 > len(vpd):
                return
            length, start = int.from_bytes(vpd[pos + 1:pos + 3], "little"), pos + 3
        else:
            length, start = tag & 0x07, pos + 1
        if start + length > len(vpd):
            return
        yield tag, start, length
        pos = start + length


def vpd_fields(vpd: bytes):
    """The keywords of the VPD-R (0x90) and VPD-W (0x91) resources: (keyword, start of value, length)."""
    for tag, start, length in vpd_resources(vpd):
        if tag not in (0x90, 0x91):
            continue
        pos, end = start, start + length
        while pos + 3 <= end:
            key, n = vpd[pos:pos + 2], vpd[pos + 2]
            if pos + 3 + n > end:
                break
            yield key.decode("latin-1"), pos + 3, n
            pos += 3 + n


def vpd_keywords(vpd: bytes) -> dict[str, str]:
    """VPD keyword values as text (the first of each keyword); non-ASCII values are left out."""
    out: dict[str, str] = {}
    for key, start, n in vpd_fields(vpd):
        try:
            out.setdefault(key, vpd[start:start + n].decode("ascii").strip())
        except UnicodeDecodeError:
            continue
    return out
