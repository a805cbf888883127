"""Where the three old strtol copies disagreed, the C reading wins; one test per edge case that changed.

* ``NCCL_PARAM`` variables (``ncclLoadParam``): an empty value keeps the default (the lint PCIe/GDR copy read 0).
* ``int x = strtol(...)`` (ncclGetLevel, NCCL_IB_ADDR_RANGE's mask, atoi in NCCL_IB_HCA ports): the value is cut
  to 32 bits (the copies kept Python's unbounded integers).
* White space is C's (the PCIe copy's ``\\s`` also skipped Unicode spaces and \\x1c-\\x1f).
* strtol saturates at LONG_MIN/LONG_MAX (the XML reader's copy did so only past 64 digits), and where NCCL reads
  an unsigned value (``strtoull`` for a ``<net>`` GUID) strtoul saturates at ULONG_MAX.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from functools import lru_cache

import pytest

from conftest import HOSTS
from ncclctl.lint.context import Ctx
from ncclctl.lint.engine import Config, run
from ncclctl.nccl.gdr import dmabuf
from ncclctl.lint.rules_pcie import gdr_level, user_level
from ncclctl.lint.rules_roce import select_gid
from ncclctl.model import Gid
from ncclctl.nccl.lists import hca_selects, parse_ib_hca
from ncclctl.nccl.params import LONG_MAX, strtol
from ncclctl.nccl.values import read_level
from ncclctl.probe import probe


@lru_cache(maxsize=None)
def node(name: str):
    return probe(str(HOSTS / name))


def with_env(n, **env):
    merged = {**dict(n.facts.nccl_env), **env}
    return dataclasses.replace(n, facts=dataclasses.replace(n.facts, nccl_env=tuple(sorted(merged.items()))))


# --- NCCL_PARAM: empty keeps the default, out of range keeps the default --------------------------------------

@pytest.mark.parametrize("value,off", [("0", True), ("", False), ("   ", True), ("0x0", True), ("1", False),
                                       ("99999999999999999999", False), ("4294967296", False)])
def test_dmabuf_enable_is_an_nccl_param(value, off):
    d = dmabuf(with_env(node("pcie-server"), NCCL_DMABUF_ENABLE=value))
    assert any("NCCL_DMABUF_ENABLE" in m for m in d.failed) == off, d.failed


@pytest.mark.parametrize("value,source", [("", "default"), ("1", "default"), ("0", "NCCL_NET_GDR_C2C=0"),
                                          ("99999999999999999999", "default")])
def test_net_gdr_c2c_is_an_nccl_param(value, source):
    assert gdr_level(with_env(node("grace-hopper"), NCCL_NET_GDR_C2C=value)).source == source


# --- (int)strtol: 32-bit truncation ---------------------------------------------------------------------------

@pytest.mark.parametrize("value,level", [
    ("1", "LOC"), ("4294967297", "LOC"),  # int disable = strtol(...) == 1
    ("0", None), ("2", None), ("4294967296", None), ("\x1c1", None), ("\u00a01", None),  # C isspace only
])
def test_p2p_disable_reads_as_an_int(value, level):
    got = user_level(with_env(node("dgx-h100"), NCCL_P2P_DISABLE=value), "NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE")
    assert (got.name if got else None) == level


@pytest.mark.parametrize("value,level,how", [
    ("3", "PHB", "legacy"), ("9", "SYS", "legacy"), ("4294967296", "LOC", "legacy"), ("4294967299", "PHB", "legacy"),
    ("2147483648", None, "legacy"),  # negative as an int: outside levelsOldToNew
    ("\u0663", None, "ignored"),  # not an ASCII digit: ignored
])
def test_legacy_level_number_is_an_int(value, level, how):
    r = read_level(value)
    assert (r.level, r.how) == (level, how)
    got = user_level(with_env(node("dgx-h100"), NCCL_NET_GDR_LEVEL=value), "NCCL_NET_GDR_LEVEL")
    assert (got.name if got else None) == level


def test_out_of_table_legacy_level_is_reported():
    found = run(Ctx(node=with_env(node("dgx-h100"), NCCL_P2P_LEVEL="2147483648")), Config(),
                only=("NCCL016",))
    assert [f.subject for f in found] == ["NCCL_P2P_LEVEL"] and "undefined behaviour" in found[0].message


def test_p2p_disable_lint_agrees_with_the_level_model():
    n = with_env(node("dgx-h100"), NCCL_P2P_DISABLE="4294967297", NCCL_P2P_LEVEL="SYS")
    found = run(Ctx(node=n), Config(), only=("NCCL016",))
    # Read as 1: P2P is disabled (no "only a value that reads as 1" warning) and the level is shadowed (info).
    assert [(f.subject, f.severity.value) for f in found] == [("NCCL_P2P_LEVEL", "info")], found


def test_ib_hca_port_goes_through_atoi():
    spec = parse_ib_hca("=mlx5_0:4294967297,mlx5_1:4294967295")
    assert [(e.name, e.port) for e in spec.entries] == [("mlx5_0", 1), ("mlx5_1", None)]  # -1: every port
    assert hca_selects("=mlx5_0:4294967297", [("mlx5_0", 1), ("mlx5_0", 2)]) == {("mlx5_0", 1)}


def _gid(index: int, addr: str, gtype: str) -> Gid:
    hexed = ipaddress.IPv6Address(addr).packed.hex()
    return Gid(index=index, gid=":".join(hexed[i:i + 4] for i in range(0, 32, 4)), type=gtype, netdev="ens1np0")


@pytest.mark.parametrize("mask,index", [("16", 5), ("4294967312", 5), ("40", 3), ("x", 3)])
def test_addr_range_mask_is_an_int(mask, index):
    # (int)strtol(mask, NULL, 10): 2**32 + 16 is 16; 40 is too long for IPv4 (no range); no digits is /0, which
    # matches every address (the first RoCE v2 IPv4 GID).
    table = [(0, "fe80::1", "IB/RoCE v1"), (1, "fe80::1", "RoCE v2"), (2, "::ffff:10.200.0.12", "IB/RoCE v1"),
             (3, "::ffff:10.200.0.12", "RoCE v2"), (4, "::ffff:192.168.7.12", "IB/RoCE v1"),
             (5, "::ffff:192.168.7.12", "RoCE v2")]
    hgx = node("hgx-h100-roce")
    hgx = with_env(dataclasses.replace(hgx, facts=dataclasses.replace(hgx.facts, nccl_env=tuple(
        kv for kv in hgx.facts.nccl_env if kv[0] != "NCCL_IB_GID_INDEX"))), NCCL_IB_ADDR_RANGE=f"192.168.0.0/{mask}")
    nic = hgx.nics[0]
    port = dataclasses.replace(nic.ports[0], gids=tuple(_gid(*t) for t in table))
    assert select_gid(Ctx(node=hgx), nic, port).index == index


# --- saturation ------------------------------------------------------------------------------------------------

def test_xml_numbers_saturate_like_strtol():
    r = strtol("99999999999999999999")
    assert (r.value, r.whole, r.overflow) == (LONG_MAX, True, True)


def test_net_guids_are_unsigned_64_bit():
    """``net->net.asic = strtoull(guid, NULL, 16)``: GUIDs with the top bit set stay distinct (a signed strtol
    would saturate them all to LONG_MAX and report every NIC as the same port)."""
    from pathlib import Path

    from ncclctl.topo.validate import validate_topology

    data = (Path(HOSTS).parent / "topo" / "invalid" / "NTS032-repeated-guid-port.xml").read_bytes()
    dup = [f.rule for f in validate_topology(data, path="t.xml") if f.rule == "NTS032"]
    high = data.replace(b'guid="0xa0b0c0"', b'guid="0xa088c20300d06583"', 1)
    high = high.replace(b'guid="0xa0b0c0"', b'guid="0xa088c20300d06584"', 1)
    assert dup == ["NTS032"] and b"0xa0b0c0" not in high
    assert [f.rule for f in validate_topology(high, path="t.xml") if f.rule == "NTS032"] == []
