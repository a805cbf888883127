"""PCI VPD and ATS as the probe reads them for ConnectX functions (the Data Direct pairing key, issue 32), and
VPD redaction: serial, board UUID and asset tag replaced, same length, checksum valid, one fake per value."""

from __future__ import annotations

import struct

from ncclctl.probe.pciconf import find_ext_cap, vpd_keywords
from ncclctl.probe.redact import Redactor


def vpd(name: str, fields: list[tuple[str, str]], writable: list[tuple[str, str]] = ()) -> bytes:
    """A VPD image as the PCI spec lays it out: identifier string, VPD-R with RV checksum, VPD-W, end tag."""
    ident = bytes([0x82]) + struct.pack("<H", len(name)) + name.encode()
    ro = b"".join(k.encode() + bytes([len(v)]) + v.encode() for k, v in fields)
    ro_len = len(ro) + 4  # + RV keyword (2), its length (1), one checksum byte
    head = ident + bytes([0x90]) + struct.pack("<H", ro_len) + ro + b"RV\x01"
    data = head + bytes([(-sum(head)) & 0xFF])
    if writable:
        rw = b"".join(k.encode() + bytes([len(v)]) + v.encode() for k, v in writable)
        data += bytes([0x91]) + struct.pack("<H", len(rw)) + rw
    return data + b"\x78"


IMG = vpd("NVIDIA ConnectX-8 SuperNIC", [("PN", "900-9X81Q-00CN-ST0"), ("SN", "MT2512XZ00AB"),
                                          ("V3", "4b1c7e2a9d3f11ef8000a088c2d0e1f2")], [("YA", "rack7-u12")])


def test_keywords():
    kw = vpd_keywords(IMG)
    assert kw["V3"] == "4b1c7e2a9d3f11ef8000a088c2d0e1f2" and kw["SN"] == "MT2512XZ00AB" and kw["YA"] == "rack7-u12"


def test_truncated_and_garbage_vpd_give_what_is_whole():
    assert vpd_keywords(IMG[:20]) == {}
    assert vpd_keywords(b"\xff" * 64) == {}
    assert vpd_keywords(b"") == {}


def test_redaction_replaces_serial_uuid_asset_tag_and_keeps_checksum():
    red = Redactor()
    out = red.vpd(IMG)
    assert len(out) == len(IMG)
    kw = vpd_keywords(out)
    assert kw["PN"] == "900-9X81Q-00CN-ST0"  # the part number says which product, not which board
    for key in ("SN", "V3", "YA"):
        assert kw[key] != vpd_keywords(IMG)[key] and len(kw[key]) == len(vpd_keywords(IMG)[key])
    end_rv = out.index(b"RV\x01") + 4
    assert sum(out[:end_rv]) & 0xFF == 0
    # The PF and the DMA function of one board carry the same V3: one fake, so they still pair.
    assert vpd_keywords(Redactor().vpd(IMG))["V3"] == kw["V3"]


def test_ats_capability_found_in_the_extended_list():
    cfg = bytearray(4096)
    struct.pack_into("<I", cfg, 0x100, 0x0001 | (2 << 16) | (0x150 << 20))  # AER -> ATS
    struct.pack_into("<I", cfg, 0x150, 0x000F | (1 << 16))
    assert find_ext_cap(bytes(cfg), 0x000F) == 0x150
    assert find_ext_cap(bytes(cfg), 0x000D) is None
    assert find_ext_cap(bytes(64), 0x000F) is None


def test_snapshot_keeps_vpd_and_config_and_redact_hides_the_board_ids(tmp_path):
    """A Data Direct tray through `snapshot` and `snapshot --redact`: the VPD and the PFs' config space are recorded
    (the probe read them), the serials and board UUIDs are gone from every file, the PF/DMA pairing and the lint
    verdicts survive."""
    import json
    import os

    from conftest import HOSTS, run_cli
    from ncclctl.plan.acs import platform
    from ncclctl.probe import probe

    src = HOSTS / "gb300-dd-split-iommu"
    originals = set()
    for dirpath, _, files in os.walk(src / "sys/devices"):
        if "vpd" in files:
            kw = vpd_keywords((open(os.path.join(dirpath, "vpd"), "rb")).read())
            originals |= {kw["SN"].encode(), kw["V3"].encode()}
    assert len(originals) == 8  # four boards: serial + V3 each (PF and DMA function share them)
    for extra in ((), ("--redact",)):
        out = tmp_path / ("red" if extra else "plain")
        r = run_cli("snapshot", "--root", str(src), "-o", str(out), *extra, env={"SOURCE_DATE_EPOCH": "1700000000"})
        assert r.returncode == 0, r.stderr
        vpds = [os.path.join(d, "vpd") for d, _, f in os.walk(out / "sys/devices") if "vpd" in f]
        assert len(vpds) == 8
        blobs = b"".join(open(os.path.join(d, f), "rb").read() for d, _, fs in os.walk(out) for f in fs
                         if not os.path.islink(os.path.join(d, f)))
        leaked = {o for o in originals if o in blobs}
        assert (leaked == originals) if not extra else not leaked
        n = probe(str(out))
        assert {(c.nic, c.dma) for c in platform(n).complexes} == {
            ("0000:03:00.0", "0009:03:00.0"), ("0002:03:00.0", "0008:03:00.0"),
            ("0010:03:00.0", "0019:03:00.0"), ("0012:03:00.0", "0018:03:00.0")}
        lint = run_cli("lint", "--root", str(out), "-r", "PCI007,PCI008", "--format", "json")
        assert sorted(f["subject"] for f in json.loads(lint.stdout)["findings"]) == [
            "0008:03:00.0", "0009:03:00.0", "0018:03:00.0", "0019:03:00.0"]
