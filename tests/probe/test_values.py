"""Single-value parsers: the spelling traps of host-facts.md (bus ids, link speeds, LIDs, GUIDs, cpumaps)."""

import pytest

from ncclctl import sysfs as V


@pytest.mark.parametrize("text,expected", [
    ("0000:19:00.0", "0000:19:00.0"),
    ("00000000:19:00.0", "0000:19:00.0"),   # NVML busId: 8-digit domain
    ("0000:1A:00.0", "0000:1a:00.0"),       # NVML busIdLegacy: upper case
    ("19:00.0", "0000:19:00.0"),            # lspci without -D
    ("0101:00:00.0", "0101:00:00.0"),       # Hyper-V domain
    ("10000:e0:17.0", "10000:e0:17.0"),     # Intel VMD domain (5 hex digits)
])
def test_normalize_bdf(text, expected):
    assert V.normalize_bdf(text) == expected


@pytest.mark.parametrize("bad", ["", "19:00", "zz:00.0", "0000:19:00.9", "0000:19:00.0x"])
def test_normalize_bdf_rejects(bad):
    with pytest.raises(ValueError):
        V.normalize_bdf(bad)


@pytest.mark.parametrize("text,gen", [
    ("32.0 GT/s PCIe", 5), ("32 GT/s", 5), ("16.0 GT/s PCIe", 4), ("16 GT/s", 4), ("8.0 GT/s PCIe", 3),
    ("8 GT/s", 3), ("5.0 GT/s PCIe", 2), ("5 GT/s", 2), ("2.5 GT/s PCIe", 1), ("2.5 GT/s", 1),
    ("64.0 GT/s PCIe", 6), ("Unknown", None), ("Unknown speed", None), ("", None),
])
def test_link_speed_gen(text, gen):
    assert V.link_speed_gen(text) == gen


@pytest.mark.parametrize("bad", ["fast", "32 GB/s", "7.0 GT/s PCIe", "32.0 GT/s PCIe/s"])
def test_link_speed_garbage(bad):
    with pytest.raises(ValueError):
        V.link_speed_gen(bad)


def test_cpulist_and_cpumap_agree():
    cpus = V.parse_cpulist("0-55,112-167")
    assert len(cpus) == 112 and cpus[0] == 0 and cpus[-1] == 167
    assert V.format_cpulist(cpus) == "0-55,112-167"
    mask = V.cpumap_from_cpus(cpus, 8)
    assert mask.count(",") == 7
    assert V.parse_cpumap(mask) == sum(1 << c for c in cpus)
    assert V.parse_cpulist("") == ()
    with pytest.raises(ValueError):
        V.parse_cpulist("5-3")
    with pytest.raises(ValueError):
        V.parse_cpumap("ffff,zz")


def test_numbered_state_and_rate():
    assert V.parse_numbered_state("4: ACTIVE") == (4, "ACTIVE")
    assert V.parse_numbered_state("5: LinkUp\n") == (5, "LinkUp")
    assert V.parse_numbered_state("7: Phy Test") == (7, "Phy Test")
    with pytest.raises(ValueError):
        V.parse_numbered_state("ACTIVE")
    assert V.parse_ib_rate("400 Gb/sec (4X NDR)") == 400.0
    assert V.parse_ib_rate("2.5 Gb/sec (1X SDR)") == 2.5
    assert V.parse_ib_rate("200 Gb/sec (2X NDR)") == 200.0
    with pytest.raises(ValueError):
        V.parse_ib_rate("Rate: 400")


def test_lids_are_hex_in_sysfs():
    # sysfs writes 0x6c where ibstat prints 108: the probe must read sysfs as hex.
    assert V.parse_hex("0x6c") == 108
    with pytest.raises(ValueError):
        V.parse_hex("108")


def test_guid_spellings():
    assert V.parse_guid("a088:c203:00e3:142a") == "0xa088c20300e3142a"
    assert V.parse_guid("0xa088c20300e3142a") == "0xa088c20300e3142a"
    with pytest.raises(ValueError):
        V.parse_guid("a088c203")


def test_gid_and_roce_mtu():
    g = V.parse_gid("0000:0000:0000:0000:0000:ffff:0ac8:010a")
    assert not V.gid_is_zero(g)
    assert V.gid_is_zero("0000:0000:0000:0000:0000:0000:0000:0000")
    assert V.roce_mtu_for_netdev_mtu(9000) == 4096
    assert V.roce_mtu_for_netdev_mtu(4200) == 4096
    assert V.roce_mtu_for_netdev_mtu(4191) == 2048
    assert V.roce_mtu_for_netdev_mtu(1500) == 1024


def test_hex_ids_verbatim():
    assert V.parse_hex_id("0x030200\n", 6) == "0x030200"
    with pytest.raises(ValueError):
        V.parse_hex_id("0x0302", 6)
    with pytest.raises(ValueError):
        V.parse_hex_id("0x10DE", 4)  # sysfs is lower case; upper case means a hand-edited file
