"""ncclctl's ACS/IOMMU verdicts against NVIDIA's rdma_topo (issue 32 item 4).

rdma-core's ``kernel-boot/rdma_topo`` (at rdma-core 691953d8d, after PR #1725) was run outside the repository as
``rdma_topo check -F <dump>`` on a dump of every host fixture and of every PCI007/PCI008 case (the dump holds, per
PCI function of the fixture, what rdma_topo's ``dump`` command records: realpath, config space, modalias built
from the ids, iommu_group, numa_node, vpd). What it decided is written down here; rdma_topo's code is not in the
repository. The tests check that ncclctl reaches the same verdicts from the same trees:

* "unsupported" (rdma_topo: "No supported topology detected", exit 100): ncclctl sees a classic platform, and
  PCI007/PCI008 say nothing (PCI001's classic verdicts stand);
* otherwise the ports whose ACS rdma_topo judged are the ports PCI007 judges, the ports it failed are PCI007's
  subjects, and its failed IOMMU group / ATS checks are PCI008's subjects.
"""

from __future__ import annotations

import pytest

from conftest import host_names
from ncclctl.lint.context import Ctx
from ncclctl.lint.engine import Config, run
from ncclctl.plan.acs import CLASSIC, DATA_DIRECT, GRACE_NUMA, INLINE, platform
from ncclctl.probe import probe

from .cases import load_case_files, materialize
from .family import node

_DD_PORTS = frozenset({f"{seg}:{port}" for seg in ("0000", "0002", "0010", "0012") for port in ("00:00.0", "02:00.0")}
                      | {f"{seg}:{port}" for seg in ("0008", "0009", "0018", "0019")
                         for port in ("00:00.0", "02:00.0", "02:01.0", "05:00.0")})
_DMA = frozenset({"0008:03:00.0", "0009:03:00.0", "0018:03:00.0", "0019:03:00.0"})
_UNSUPPORTED = {"topology": None}

#: rdma_topo check, per host fixture: its topology ("DMA-based", "NUMA-based" or None for "No supported topology"),
#: the ports whose ACS it judged, those it failed, and the subjects of its failed IOMMU group / ATS checks.
_GB200_RPS = {f"{d:04x}:00:00.0" for d in (0x01, 0x02, 0x08, 0x09, 0x11, 0x12, 0x18, 0x19)}
RDMA_TOPO = {
    "cloud-vm-flat": _UNSUPPORTED,
    "cpu-only": _UNSUPPORTED,
    "dgx-a100": _UNSUPPORTED,
    "dgx-h100": _UNSUPPORTED,
    "dgx-h100-nvlink-missing": _UNSUPPORTED,
    "dgx-h100-port-down": _UNSUPPORTED,
    "dgx-h100-x8-link": _UNSUPPORTED,
    "h200-vm-socket": _UNSUPPORTED,
    "hgx-h100-roce": _UNSUPPORTED,
    "hgx-h100-roce-pfc-off": _UNSUPPORTED,
    "pcie-server": _UNSUPPORTED,
    "pcie-server-roce-lag": _UNSUPPORTED,
    "pcie-cx8-inline": {"topology": "Inline", "ports": {"0000:10:01.0", "0000:12:00.0", "0000:12:01.0", "0000:15:00.0",
                                                     "0000:30:01.0", "0000:32:00.0", "0000:32:01.0", "0000:35:00.0"},
                        "acs_fail": set(), "other_fail": set()},
    "grace-hopper": {"topology": "NUMA-based", "ports": {"0001:00:00.0", "0009:00:00.0"}, "acs_fail": set(),
                     "other_fail": set()},
    # rdma_topo check -F on the GB200/GB300 NVL72 trays (issue 30's fixtures; rdma-core 691953d8d): "All NUMA-based
    # complexes have correct PCI topology", the 8 Grace root ports OK at 0011101 = xx111x1, no ATS on the ConnectX
    # PFs, unique groups per NUMA node. With the root ports at ACS 0 (as first authored) it FAILs all 8.
    "gb200-nvl72": {"topology": "NUMA-based", "ports": _GB200_RPS, "acs_fail": set(), "other_fail": set()},
    "gb200-nvl72-clique-split": {"topology": "NUMA-based", "ports": _GB200_RPS, "acs_fail": set(), "other_fail": set()},
    "gb200-nvl72-degraded": {"topology": "NUMA-based", "ports": _GB200_RPS, "acs_fail": set(), "other_fail": set()},
    "gb200-nvl72-fabric-incomplete": {"topology": "NUMA-based", "ports": _GB200_RPS, "acs_fail": set(), "other_fail": set()},
    "gb200-nvl72-imex-down": {"topology": "NUMA-based", "ports": _GB200_RPS, "acs_fail": set(), "other_fail": set()},
    "gb200-nvl72-no-imex-channel": {"topology": "NUMA-based", "ports": _GB200_RPS, "acs_fail": set(), "other_fail": set()},
    "gb300-nvl72": {"topology": "NUMA-based", "ports": _GB200_RPS, "acs_fail": set(), "other_fail": set()},
    "gb300-dd": {"topology": "DMA-based", "ports": _DD_PORTS, "acs_fail": set(), "other_fail": set()},
    # "FAIL ACS for grace_rp 0000:00:00.0 has incorrect values 0000000 != xx111x1" ... 24 lines
    "gb300-dd-acs-off": {"topology": "DMA-based", "ports": _DD_PORTS, "acs_fail": set(_DD_PORTS), "other_fail": set()},
    # "FAIL Kernel iommu_group for DMA 0009:03:00.0 and GPU 0009:06:00.0 are not equal 39 != 43" ... 4 lines
    "gb300-dd-split-iommu": {"topology": "DMA-based", "ports": _DD_PORTS, "acs_fail": set(), "other_fail": set(_DMA)},
}

#: rdma_topo check on the materialized PCI007/PCI008 cases that differ from their base fixture: failed ACS ports and
#: failed group/ATS subjects (rdma_topo names the DMA function, or for NUMA groups the node's devices).
RDMA_TOPO_CASES = {
    ("PCI007", "gb300-dma-port-at-kernel-default"): ({"0009:02:00.0"}, set()),  # 0011101 != xx110x1
    ("PCI007", "gh200-grace-root-ports-acs-off"): ({"0001:00:00.0", "0009:00:00.0"}, set()),  # 0000000 != xx111x1
    ("PCI007", "gb300-egress-control-is-free"): (set(), set()),
    ("PCI008", "gb300-one-gpu-in-its-own-group"): (set(), {"0009:03:00.0"}),  # not equal 100 != 39
    ("PCI008", "gh200-gpu-and-nic-share-a-group"): (set(), {"NUMA node 0"}),  # share ... NUMA node 0: [23, 23]
    ("PCI007", "inline-nic-port-at-kernel-default"): ({"0000:12:00.0"}, set()),  # 0011101 != xx000x0
}


def test_inline_with_ats_is_judged_as_virtualised_like_rdma_topo():
    """Both NICs of pcie-cx8-inline exposing ATS: rdma_topo decides 'virt' and fails the eight ports at 0 (NIC ports
    against 1x111x1, the rest against the kernel default xx111x1) and the two missing IOMMU groups."""
    import dataclasses

    n = node("pcie-cx8-inline")
    n = dataclasses.replace(n, pci=tuple(dataclasses.replace(d, ats=True) if d.bdf in ("0000:13:00.0", "0000:33:00.0")
                                         else d for d in n.pci))
    plat = platform(n)
    assert plat.kind == INLINE and plat.virt is True
    assert {r.bdf: r.mask for r in plat.requirements if r.mask == "1x111x1"}.keys() == {"0000:12:00.0", "0000:32:00.0"}
    acs, other, _ = _verdicts(n)
    assert acs == RDMA_TOPO["pcie-cx8-inline"]["ports"]
    assert other == {"0000:13:00.0", "0000:33:00.0"}  # "Kernel iommu_group is missing for cx_nic ..."

_KIND = {"DMA-based": DATA_DIRECT, "NUMA-based": GRACE_NUMA, "Inline": INLINE, None: CLASSIC}


def _verdicts(n):
    found = run(Ctx(node=n), Config(), only=("PCI007", "PCI008"))
    acs = {f.subject for f in found if f.rule == "PCI007" and f.severity.value == "error"}
    other = {f.subject for f in found if f.rule == "PCI008"}
    return acs, other, found


def test_every_fixture_was_judged():
    assert sorted(RDMA_TOPO) == host_names()


@pytest.mark.parametrize("host", sorted(RDMA_TOPO))
def test_fixture_verdicts_agree_with_rdma_topo(host):
    want = RDMA_TOPO[host]
    n = node(host)
    plat = platform(n)
    assert plat.kind == _KIND[want["topology"]]
    acs, other, found = _verdicts(n)
    if want["topology"] is None:
        assert not found and not plat.requirements
        return
    assert {r.bdf for r in plat.requirements} == want["ports"]
    assert acs == want["acs_fail"]
    assert other == want["other_fail"]


@pytest.mark.parametrize("rule,name", sorted(RDMA_TOPO_CASES))
def test_case_verdicts_agree_with_rdma_topo(rule, name, tmp_path):
    acs_fail, other_fail = RDMA_TOPO_CASES[(rule, name)]
    case = next(c for c in load_case_files()[rule]["cases"] if c["name"] == name)
    acs, other, found = _verdicts(probe(str(materialize(case, tmp_path))))
    assert acs == acs_fail
    if other_fail == {"NUMA node 0"}:
        assert len(other) == 1 and any("NUMA node 0" in f.message for f in found if f.rule == "PCI008")
    else:
        assert other == other_fail
