"""ACS and IOMMU advice by platform (issue 32): ConnectX-8 Data Direct trays (GB300), Grace hosts with GPUs on their
own root ports (GH200), classic PCIe hosts. The platform model (ncclctl.plan.acs), PCI007/PCI008 through the API
and the command line, and PCI001 leaving the Grace platforms' ports alone."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import HOSTS, run_cli
from ncclctl.plan.acs import (CLASSIC, DATA_DIRECT, GRACE_NUMA, apply_mask, config_acs, device_type, mask_ok,
                              platform)

from .family import family_lint, node

lint = family_lint(("PCI001", "PCI007", "PCI008"))


def _replace_pci(n, bdf, **changes):
    pci = tuple(dataclasses.replace(d, **changes) if d.bdf == bdf else d for d in n.pci)
    return dataclasses.replace(n, pci=pci)


@pytest.mark.parametrize("value,mask,ok", [
    (0x19, "xx110x1", True), (0x39, "xx110x1", True), (0x1D, "xx110x1", False), (0x00, "xx110x1", False),
    (0x15, "xx101x1", True), (0x1C, "xx111x0", True), (0x1D, "xx111x0", False), (0x5F, "xx111x1", True),
])
def test_mask_semantics_follow_rdma_topo(value, mask, ok):
    assert mask_ok(value, mask) is ok
    assert mask_ok(apply_mask(value, mask), mask)


def test_platform_of_each_kind():
    assert platform(node("dgx-h100")).kind == CLASSIC
    assert platform(node("pcie-server")).kind == CLASSIC
    assert platform(node("cloud-vm-flat")).kind == CLASSIC
    gh = platform(node("grace-hopper"))
    assert gh.kind == GRACE_NUMA and not gh.complexes
    assert [(r.bdf, r.mask) for r in gh.requirements] == [("0001:00:00.0", "xx111x1"), ("0009:00:00.0", "xx111x1")]
    dd = platform(node("gb300-dd"))
    assert dd.kind == DATA_DIRECT and not dd.unrecognized


def test_data_direct_complexes_pair_as_rdma_topo_topo_prints_them():
    # NIC PF / DMA function / GPU as `rdma_topo topo -F <dump of the fixture>` printed them (and NVIDIA's guide
    # prints the first three for a GB300 tray).
    n = node("gb300-dd")
    got = {(c.nic, c.dma, c.gpu) for c in platform(n).complexes}
    assert got == {("0000:03:00.0", "0009:03:00.0", "0009:06:00.0"), ("0002:03:00.0", "0008:03:00.0", "0008:06:00.0"),
                   ("0010:03:00.0", "0019:03:00.0", "0019:06:00.0"), ("0012:03:00.0", "0018:03:00.0", "0018:06:00.0")}
    types = {d.bdf: device_type(d) for d in n.pci}
    assert types["0009:03:00.0"] == "cx_dma" and types["0000:03:00.0"] == "cx_nic"
    assert types["0009:00:00.0"] == "grace_rp" and types["0009:02:01.0"] == "cx_switch"
    pf = n.pci_device("0000:03:00.0")
    assert pf is not None and pf.vpd_v3 and pf.ats is False


def test_config_acs_value_is_what_rdma_topo_write_grub_acs_writes():
    # rdma_topo's PCITopo.compute_acs on the fixture's dump, formatted as cmd_write_grub_acs does.
    expected = ("xx111x0@0008:00:00.0;xx110x1@0008:02:00.0;xx101x1@0008:02:01.0;xx111x0@0009:00:00.0;"
                "xx110x1@0009:02:00.0;xx101x1@0009:02:01.0;xx111x0@0018:00:00.0;xx110x1@0018:02:00.0;"
                "xx101x1@0018:02:01.0;xx111x0@0019:00:00.0;xx110x1@0019:02:00.0;xx101x1@0019:02:01.0")
    n = node("gb300-dd")
    assert config_acs(n, platform(n)) == expected
    assert config_acs(node("grace-hopper"), platform(node("grace-hopper"))) == ""
    # The healthy fixture booted with exactly that argument.
    assert f'pci=config_acs="{expected}"' in (n.facts.cmdline or "")


def test_pci001_leaves_grace_ports_to_pci007():
    # Grace root ports carry ReqRedir/CmpltRedir by design (xx111x1, xx111x0): the classic rule must not ask to clear
    # them. Before issue 32 PCI001 reported both root ports of a GH200 at the kernel default.
    for host in ("gb300-dd", "grace-hopper"):
        assert not [f for f in lint(node(host)) if f.rule == "PCI001"], host


def test_gdr_root_ports_unknown_acs_is_said_once_by_pci007():
    n = node("gb300-dd")
    for bdf in ("0009:00:00.0", "0009:02:00.0"):
        n = _replace_pci(n, bdf, acs_ctrl=None, acs_cap=None, config_bytes=64)
    found = lint(n)
    assert [(f.rule, f.severity.value) for f in found] == [("PCI007", "info")]
    assert "0009:00:00.0" in " ".join(found[0].evidence) and "root" in found[0].fix


def test_ats_on_connectx_of_a_gh200_is_reported():
    n = _replace_pci(node("grace-hopper"), "0001:01:00.0", ats=True)
    found = [f for f in lint(n) if f.rule == "PCI008"]
    assert [(f.subject, f.severity.value) for f in found] == [("0001:01:00.0", "error")]
    assert "ATS_ENABLED=0" in (found[0].fix or "")


def test_dma_function_without_vpd_still_judged():
    # Without root the VPD is unreadable: the complex has no NIC name, masks and groups are still judged.
    n = node("gb300-dd-split-iommu")
    for d in n.pci:
        if d.vpd_v3:
            n = _replace_pci(n, d.bdf, vpd_v3=None)
    plat = platform(n)
    assert all(c.nic is None for c in plat.complexes) and len(plat.complexes) == 4
    assert sorted(f.subject for f in lint(n) if f.rule == "PCI008") == [
        "0008:03:00.0", "0009:03:00.0", "0018:03:00.0", "0019:03:00.0"]


def test_unrecognized_data_direct_layout_is_a_warning():
    n = node("gb300-dd")
    gpu = n.pci_device("0009:06:00.0")
    assert gpu is not None
    # The GPU moved out from under the shared switch: rdma_topo says "unexpected topology".
    n = _replace_pci(n, "0009:06:00.0", path=("pci0009:00", "0009:00:00.0", "0009:06:00.0"))
    found = [f for f in lint(n) if f.rule == "PCI007"]
    assert ("0009:03:00.0", "warning") in {(f.subject, f.severity.value) for f in found}


# --- through the command line ---------------------------------------------------------------------


def test_cli_acs_off_tray_fix_is_the_kernel_argument_never_a_blanket_disable():
    r = run_cli("lint", "--root", str(HOSTS / "gb300-dd-acs-off"), "-r", "PCI007", "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    found = doc["findings"]
    assert len(found) == 24
    dma_port = next(f for f in found if f["subject"] == "0009:02:00.0")
    assert "xx110x1" in dma_port["message"] and "Data Direct" in dma_port["message"]
    assert 'pci=config_acs="xx111x0@0008:00:00.0;' in dma_port["fix"]
    assert "setpci -r -s 0009:02:00.0 ECAP_ACS+0x6.w=0019" in dma_port["fix"]
    for f in found:
        assert "disable ACS" not in f["fix"] and "0000 (as root" not in f["fix"]


def test_cli_split_groups_and_healthy_tray():
    r = run_cli("lint", "--root", str(HOSTS / "gb300-dd-split-iommu"), "-r", "PCI007,PCI008")
    assert r.returncode == 1 and r.stdout.count("error: PCI008") == 4 and "error: PCI007" not in r.stdout, r.stdout
    assert 'pci=config_acs="xx111x0@0008:00:00.0;' in r.stdout
    r = run_cli("lint", "--root", str(HOSTS / "gb300-dd"), "-r", "PCI001,PCI002,PCI007,PCI008")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("rule,words", [
    ("PCI001", ("Platform: classic PCIe hosts", "PCI007")),
    ("PCI007", ("Platform: Grace hosts", "Data Direct", "pci=config_acs", "Classic PCIe hosts")),
    ("PCI008", ("Platform: Grace hosts", "IOMMU group", "NVreg_GrdmaPciTopoCheckOverride")),
])
def test_explain_says_which_platform_each_verdict_applies_to(rule, words):
    r = run_cli("explain", rule)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    for w in words:
        assert w in text, (rule, w)


def test_probe_summary_names_the_platform_and_the_data_direct_pairs():
    r = run_cli("probe", "--root", str(HOSTS / "gb300-dd-split-iommu"))
    assert r.returncode == 0, r.stderr
    assert "platform  ConnectX-8 Data Direct" in r.stdout
    assert "mlx5_0       0009:03:00.0  1    39 identity / 43 identity      no" in r.stdout
    r = run_cli("probe", "--root", str(HOSTS / "grace-hopper"))
    assert "platform  Grace with GPUs on their own root ports" in r.stdout
    r = run_cli("probe", "--root", str(HOSTS / "dgx-h100"))
    assert "platform" not in r.stdout  # classic hosts: the summary is as it was
