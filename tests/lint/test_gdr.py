"""GPUDirect RDMA family (GDR001-GDR002): every host fixture pinned, the DMA-BUF conditions NCCL applies, CLI."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import HOSTS, run_cli

from ncclctl.registry import all_rules
from ncclctl.nccl.gdr import dmabuf, driver_major, kernel_version

from .family import assert_host, assert_pinned, family_lint, node

FAMILY = tuple(r.id for r in all_rules() if r.family == "gpudirect")

EXPECTED = {
    "cloud-vm-flat": set(),
    "cpu-only": set(),
    "gb300-dd": {("GDR002", "info", "gb300-tray-11")},
    "gb300-dd-acs-off": {("GDR002", "info", "gb300-tray-12")},
    "gb300-dd-split-iommu": {("GDR002", "info", "gb300-tray-13")},
    "dgx-a100": set(),
    "dgx-h100": set(),
    "dgx-h100-nvlink-missing": set(),
    "dgx-h100-port-down": set(),
    "dgx-h100-x8-link": set(),
    "gb200-nvl72": {("GDR002", "info", "gb200-r01-t04")},
    "gb200-nvl72-clique-split": {("GDR002", "info", "gb200-r01-t04")},
    "gb200-nvl72-degraded": {("GDR002", "info", "gb200-r01-t04")},
    "gb200-nvl72-fabric-incomplete": {("GDR002", "info", "gb200-r01-t04")},
    "gb200-nvl72-imex-down": {("GDR002", "info", "gb200-r01-t04")},
    "gb200-nvl72-no-imex-channel": {("GDR002", "info", "gb200-r01-t04")},
    "gb300-nvl72": {("GDR002", "info", "gb300-r01-t07")},
    "grace-hopper": {("GDR002", "info", "gh200-node-05")},
    "h200-vm-socket": set(),
    "hgx-h100-roce": set(),
    "hgx-h100-roce-pfc-off": set(),
    "pcie-cx8-inline": set(),
    "pcie-server": {("GDR002", "info", "pcie-srv-03")},
    "pcie-server-roce-lag": {("GDR002", "info", "pcie-srv-04")},
}


lint = family_lint(FAMILY)


def test_family_registered():
    assert FAMILY == ("GDR001", "GDR002")


def test_every_fixture_is_pinned():
    assert_pinned(EXPECTED)


@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_findings_per_host(host):
    assert_host(lint(node(host)), EXPECTED[host])


@pytest.mark.parametrize("text,value", [("6.8.0-45-generic", (6, 8)), ("5.15.0-1046-nvidia", (5, 15)),
                                        ("5.4.0-150-generic", (5, 4)), ("", None), ("garbage", None)])
def test_kernel_version(text, value):
    assert kernel_version(text) == value


def test_driver_major():
    assert driver_major("560.35.03") == 560 and driver_major("") is None


def _edit(n, *, gpus=None, **facts):
    out = dataclasses.replace(n, facts=dataclasses.replace(n.facts, **facts))
    return dataclasses.replace(out, gpus=gpus) if gpus is not None else out


@pytest.mark.parametrize("edit,reason", [
    ({"kernel": "5.10.0-28-amd64"}, "older than 5.12"),
    ({"cuda_driver_version": 11060}, "older than 11.7"),
    ({"cuda_driver_version": None, "driver_version": "510.108.03"}, "older than R515"),
    ({"nvidia_module": "proprietary"}, "proprietary"),
    ({"nccl_env": (("NCCL_DMABUF_ENABLE", "0"),)}, "NCCL_DMABUF_ENABLE=0"),
])
def test_each_dmabuf_condition_is_enforced(edit, reason):
    n = _edit(node("pcie-server"), **edit)  # open module 560 on 6.8: DMA-BUF works until one condition breaks
    assert dmabuf(node("pcie-server")).ok
    d = dmabuf(n)
    assert not d.ok and any(reason in m for m in d.failed), d.failed
    found = lint(n)
    assert [(f.rule, f.severity.value) for f in found] == [("GDR001", "error")]
    assert reason in found[0].message


def test_pre_turing_gpu_cannot_dmabuf():
    n = node("pcie-server")
    gpus = tuple(dataclasses.replace(g, sm=70) if g.index == 2 else g for g in n.gpus)
    assert "GPU2 predate Turing (sm < 75): no DMA-BUF" in dmabuf(_edit(n, gpus=gpus)).failed


def test_no_rdma_nic_means_nothing_to_say():
    n = dataclasses.replace(_edit(node("pcie-server"), nvidia_module="proprietary"), nics=())
    assert lint(n) == []


def test_peermem_satisfies_nccl_even_without_dmabuf():
    n = _edit(node("pcie-server"), nvidia_module="proprietary", peermem=("nvidia_peermem",))
    assert lint(n) == []


def test_cli():
    r = run_cli("lint", "--root", str(HOSTS / "grace-hopper"), "--rule", "GDR001,GDR002", "--format", "json")
    assert r.returncode == 0, r.stderr  # an info does not fail the default --fail-on error
    doc = json.loads(r.stdout)
    assert [(f["rule"], f["severity"]) for f in doc["findings"]] == [("GDR002", "info")]
    r = run_cli("lint", "--root", str(HOSTS / "grace-hopper"), "--rule", "GDR002", "--fail-on", "info")
    assert r.returncode == 1
