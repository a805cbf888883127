"""PCIe family (PCI001-PCI008): what it reports on every host fixture, the NCCL semantics it relies on, and
behaviour the case files cannot express (model edits for topologies no fixture has)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ncclctl.registry import all_rules
from ncclctl.lint.rules_pcie import acs_bridges, cmdline_iommu, user_level
from ncclctl.nccl.params import c_int as c_strtol
from ncclctl.model import ConfFile

from conftest import HOSTS, run_cli

from .family import assert_host, assert_pinned, family_lint, node

FAMILY = tuple(r.id for r in all_rules() if r.family == "pcie")

# Every host fixture -> the exact (rule, severity, subject) findings of the family. A new fixture must be added.
EXPECTED = {
    "cloud-vm-flat": {("PCI005", "info", "nd-h100-v5-0001")},
    "cpu-only": set(),
    # ConnectX-8 Data Direct trays (issue 32): rdma_topo check agrees port for port (tests/lint/test_rdma_topo_judge.py)
    "gb300-dd": set(),
    "gb300-dd-acs-off": {("PCI007", "error", f"{seg}:{port}") for seg in ("0000", "0002", "0010", "0012")
                         for port in ("00:00.0", "02:00.0")}
    | {("PCI007", "error", f"{seg}:{port}") for seg in ("0008", "0009", "0018", "0019")
       for port in ("00:00.0", "02:00.0", "02:01.0", "05:00.0")},
    "gb300-dd-split-iommu": {("PCI008", "error", f"{seg}:03:00.0") for seg in ("0008", "0009", "0018", "0019")},
    "dgx-a100": set(),
    "dgx-h100": set(),
    "dgx-h100-nvlink-missing": set(),
    "dgx-h100-port-down": set(),
    "dgx-h100-x8-link": {("PCI003", "error", "0000:52:00.0")},
    "gb200-nvl72": set(),
    "gb200-nvl72-clique-split": set(),
    "gb200-nvl72-degraded": set(),
    "gb200-nvl72-fabric-incomplete": set(),
    "gb200-nvl72-imex-down": set(),
    "gb200-nvl72-no-imex-channel": set(),
    "gb300-nvl72": set(),
    "grace-hopper": set(),
    "h200-vm-socket": set(),
    "hgx-h100-roce": set(),
    "hgx-h100-roce-pfc-off": set(),
    "pcie-cx8-inline": set(),
    "pcie-server": {("PCI001", "error", "0000:18:00.0"), ("PCI001", "error", "0000:18:04.0"),
                    ("PCI001", "error", "0000:18:08.0"), ("PCI001", "error", "0000:18:0c.0"),
                    ("PCI001", "error", "0000:18:10.0"), ("PCI002", "error", "/proc/cmdline")},
    "pcie-server-roce-lag": {("PCI001", "error", "0000:18:00.0"), ("PCI001", "error", "0000:18:04.0"),
                             ("PCI001", "error", "0000:18:08.0"), ("PCI001", "error", "0000:18:0c.0"),
                             ("PCI001", "error", "0000:18:10.0"), ("PCI002", "error", "/proc/cmdline")},
}


lint = family_lint(FAMILY)


def test_family_registered():
    assert FAMILY == ("PCI001", "PCI002", "PCI003", "PCI004", "PCI005", "PCI006", "PCI007", "PCI008")


def test_every_fixture_is_pinned():
    assert_pinned(EXPECTED)


@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_findings_per_host(host):
    assert_host(lint(node(host)), EXPECTED[host])


# --- NCCL's parsing of its own settings ------------------------------------------------------------


@pytest.mark.parametrize("text,value", [("1", 1), ("010", 8), ("0x1A", 26), ("3 # comment", 3), ("abc", 0),
                                        (" -2", -2), ("08", 0), ("", 0), ("0x", 0)])
def test_c_strtol(text, value):
    assert c_strtol(text) == value


def _with_env(n, **env):
    facts = dataclasses.replace(n.facts, nccl_env=tuple(sorted({**dict(n.facts.nccl_env), **env}.items())))
    return dataclasses.replace(n, facts=facts)


@pytest.mark.parametrize("env,level", [
    ({}, None),
    ({"NCCL_NET_GDR_LEVEL": "PHB"}, "PHB"),
    ({"NCCL_NET_GDR_LEVEL": "phb"}, None),  # strcmp: case matters, NCCL ignores it
    ({"NCCL_NET_GDR_LEVEL": "3"}, "PHB"),  # old numbering
    ({"NCCL_NET_GDR_LEVEL": "9"}, "SYS"),  # clamped
    ({"NCCL_NET_GDR_LEVEL": "PHB "}, None),  # no trimming
])
def test_user_level(env, level):
    got = user_level(_with_env(node("dgx-h100"), **env), "NCCL_NET_GDR_LEVEL")
    assert (got.name if got else None) == level


def test_p2p_disable_wins_over_level():
    n = _with_env(node("dgx-h100"), NCCL_P2P_DISABLE="1", NCCL_P2P_LEVEL="SYS")
    assert user_level(n, "NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE").name == "LOC"


def test_level_from_nccl_conf():
    n = node("dgx-h100")
    conf = ConfFile(path="/etc/nccl.conf", text="NCCL_NET_GDR_LEVEL=SYS\n")
    n = dataclasses.replace(n, facts=dataclasses.replace(n.facts, conf_files=(conf,)))
    assert user_level(n, "NCCL_NET_GDR_LEVEL").name == "SYS"


# --- PCI001: where ACS acts ------------------------------------------------------------------------


def test_acs_bridges_nested_switch_is_the_outer_turnaround():
    n = node("dgx-a100")  # GPU0 07:00.0 sits one switch deeper than its HCA 0c:00.0
    assert [b.bdf for b in acs_bridges(n, "0000:07:00.0", "0000:0c:00.0")] == ["0000:02:00.0", "0000:02:08.0"]


def test_acs_bridges_across_host_bridges_are_root_ports():
    n = node("dgx-h100")  # GPU0 (pci0000:15) and mlx5_3 (pci0000:3d)
    assert [b.bdf for b in acs_bridges(n, "0000:1b:00.0", "0000:40:00.0")] == ["0000:15:01.0", "0000:3d:01.0"]


def test_acs_follows_nccl_levels():
    n = node("pcie-server")
    # P2P off: GPU<->GPU pairs leave, but every GPU port still carries GPU<->NIC GPUDirect traffic.
    off = lint(_with_env(n, NCCL_P2P_DISABLE="1"), ("PCI001",))
    assert len(off) == 5 and not any("GPU0<->GPU1" in f.message for f in off)
    # P2P and GPUDirect both off: no peer-to-peer traffic at all, so ACS is harmless.
    assert lint(_with_env(n, NCCL_P2P_DISABLE="1", NCCL_NET_GDR_LEVEL="LOC"), ("PCI001",)) == []


# --- PCI002 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cmdline,mode", [
    ("ro quiet", None),
    ("intel_iommu=on", "translated"),
    ("intel_iommu=on iommu=pt", "pt"),
    ("iommu=pt intel_iommu=on", "pt"),
    ("iommu.passthrough=1", "pt"),
    ("iommu=pt iommu=nopt", "translated"),
    ("amd_iommu=off", "off"),
    ("intel_iommu=on,sm_on iommu.strict=1", "translated"),
])
def test_cmdline_iommu(cmdline, mode):
    assert cmdline_iommu(cmdline)[0] == mode


def test_iommu_in_a_vm_is_info():
    n = node("cloud-vm-flat")  # flat PCIe: a VM; give it a vIOMMU that translates
    gpu0 = n.pci_device(n.gpus[0].bdf)
    pci = tuple(dataclasses.replace(d, iommu_group=7) if d is gpu0 else d for d in n.pci)
    facts = dataclasses.replace(n.facts, iommu_units=("dmar0",), iommu_group_types=((7, "DMA"),))
    found = lint(dataclasses.replace(n, pci=pci, facts=facts), ("PCI002",))
    assert [(f.severity.value, f.subject) for f in found] == [("info", "/proc/cmdline")]
    assert "VM" in found[0].message and "ATS" in found[0].fix


# --- PCI005: topologies the fixtures do not have ---------------------------------------------------


def _without_nics(n, names):
    return dataclasses.replace(n, nics=tuple(x for x in n.nics if x.name not in names))


def test_rail_nic_across_sockets_is_an_error():
    n = node("dgx-h100")
    socket0 = {x.name for x in n.nics if n.numa_node_of(x.bdf) == 0}
    found = lint(_without_nics(n, socket0), ("PCI005",))
    # The rail plan gives GPU0 and GPU3 the HCAs of GPU4/GPU5 (NCCL reaches them by PXN over NVLink, with GDR);
    # GPU1 and GPU2 get the storage NICs on socket 1, which no GPU is close to: SYS, no GPUDirect RDMA.
    assert {(f.severity.value, f.subject) for f in found} == {("error", "GPU1"), ("error", "GPU2")}
    assert all("are SYS apart" in f.message for f in found)


def test_rail_nic_through_the_cpu_is_a_warning():
    n = _without_nics(node("dgx-h100"), {"mlx5_0"})  # GPU0's HCA missing: its next NIC is NODE
    found = lint(n, ("PCI005",))
    assert [(f.severity.value, f.subject) for f in found] == [("warning", "GPU0")]


def test_pxn_through_an_nvlink_peer_is_not_reported():
    # GPU0's HCA and the storage NICs gone: GPU0 shares mlx5_3 with GPU1, which is PIX to it and NVLinked to GPU0,
    # so NCCL uses PXN (GPU0 -> NVLink -> GPU1 -> mlx5_3) with GPUDirect RDMA.
    n = _without_nics(node("dgx-h100"), {"mlx5_0", "mlx5_1", "mlx5_2"})
    assert lint(n, ("PCI005",)) == []
    assert [f.subject for f in lint(_with_env(n, NCCL_PXN_DISABLE="1"), ("PCI005",))] == ["GPU0"]


# --- through the CLI -------------------------------------------------------------------------------


def test_cli_json_and_exit_code():
    r = run_cli("lint", "--root", str(HOSTS / "pcie-server"), "--rule", ",".join(FAMILY), "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert {(f["rule"], f["subject"]) for f in doc["findings"]} == {(rule, s) for rule, _, s in EXPECTED["pcie-server"]}
    acs = next(f for f in doc["findings"] if f["subject"] == "0000:18:10.0")
    assert acs["fix"].startswith("setpci -s 0000:18:10.0 ECAP_ACS+0x6.w=0000")
    assert "ACSCtl=0x001d (SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-)" \
        in acs["evidence"]


def test_cli_clean_host_and_deterministic_output():
    args = ("lint", "--root", str(HOSTS / "dgx-h100-x8-link"), "--rule", ",".join(FAMILY), "--format", "json")
    first, second = run_cli(*args), run_cli(*args)
    assert first.returncode == 1 and first.stdout == second.stdout
    clean = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--rule", ",".join(FAMILY))
    assert clean.returncode == 0, clean.stdout + clean.stderr
