"""InfiniBand family (IB001-IB007): every host fixture pinned, grading of compute vs storage ports, NCCL's
integer parsing and port selection, the CLI."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import HOSTS, run_cli
from ncclctl.lint.context import Ctx

from ncclctl.registry import all_rules
from ncclctl.lint.context import nccl_ports
from ncclctl.lint.rules_ib import compute_ports, port_lanes
from ncclctl.nccl.params import param_int as nccl_int
from ncclctl.model import ConfFile
from ncclctl.probe import probe

from .cases import load_case_files, materialize
from .family import assert_host, assert_pinned, case_findings, family_lint, node, with_env

FAMILY = tuple(r.id for r in all_rules() if r.family == "infiniband")

# (rule, severity, subject) per host fixture. Only the broken variant with a disabled rail has IB findings; the
# healthy hosts (dgx-h100, dgx-a100, grace-hopper, cloud VM, RoCE hosts) must stay clean.
EXPECTED = {
    "cloud-vm-flat": set(),
    "cpu-only": set(),
    "gb300-dd": set(),
    "gb300-dd-acs-off": set(),
    "gb300-dd-split-iommu": set(),
    "dgx-a100": set(),
    "dgx-h100": set(),
    "dgx-h100-nvlink-missing": set(),
    "dgx-h100-port-down": {("IB001", "error", "mlx5_3")},
    "dgx-h100-x8-link": set(),
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
    "pcie-server": set(),
    "pcie-server-roce-lag": set(),
}


lint = family_lint(FAMILY)


def test_family_registered():
    assert FAMILY == ("IB001", "IB002", "IB003", "IB004", "IB005", "IB006", "IB007")


def test_every_fixture_is_pinned():
    assert_pinned(EXPECTED)


@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_findings_per_host(host):
    assert_host(lint(node(host)), EXPECTED[host])


def test_output_is_deterministic():
    n = node("dgx-h100-port-down")
    assert lint(n) == lint(probe(str(HOSTS / "dgx-h100-port-down")))


# Grading: a broken rail is an error, a broken storage port a warning (option non_compute) ---------------------

def test_storage_port_down_is_a_warning(tmp_path):
    found = case_findings("IB001", "storage-port-polling", tmp_path)
    assert [(f.severity.value, f.subject) for f in found] == [("warning", "mlx5_4")]
    assert "not a compute port" in found[0].message and "mlxlink -d mlx5_4 -m" in found[0].fix


def test_compute_port_down_fix_names_the_port():
    (f,) = lint(node("dgx-h100-port-down"), only=("IB001",))
    assert f.severity.value == "error"
    assert "ibportstate -C mlx5_3 -D 0 1 enable" in f.fix
    assert set(f.evidence) >= {"state=DOWN", "phys_state=Disabled"}


def test_compute_ports_follow_rails_and_nccl_ib_hca():
    dgx = node("dgx-h100")
    compute = {"mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"}
    assert {n for n, _ in compute_ports(Ctx(node=dgx))} == compute
    # NCCL_IB_HCA naming a storage port makes it a compute port too (NCCL will use it).
    env = with_env(dgx, NCCL_IB_HCA="=mlx5_0,mlx5_1")
    assert {n for n, _ in compute_ports(Ctx(node=env))} == compute | {"mlx5_1"}
    # Without NCCL_IB_HCA NCCL would open every port; with NCCL_IB_DISABLE none.
    nocfg = dataclasses.replace(dgx, facts=dataclasses.replace(dgx.facts, conf_files=()))
    assert len(nccl_ports(Ctx(node=nocfg))) == 12
    assert nccl_ports(Ctx(node=with_env(dgx, NCCL_IB_DISABLE="1"))) == set()


def test_nccl_ib_hca_from_the_user_conf_wins(tmp_path):
    """The user conf file is read before /etc/nccl.conf: its NCCL_IB_HCA decides which ports are compute."""
    dgx = node("dgx-h100")
    user = ConfFile(path="/root/.nccl.conf", text="NCCL_IB_HCA==mlx5_1\n")
    facts = dataclasses.replace(dgx.facts, conf_files=(user,) + dgx.facts.conf_files)
    ctx = Ctx(node=dataclasses.replace(dgx, facts=facts))
    assert nccl_ports(ctx) == {("mlx5_1", 1)}


# Rate, width, SM ----------------------------------------------------------------------------------------------

def test_rate_reference_is_per_link_layer():
    """dgx-h100 with NCCL_IB_HCA naming the 200 Gb/s storage RoCE ports too: they are compared with each other,
    not with the 400 Gb/s InfiniBand rails."""
    n = with_env(node("dgx-h100"), NCCL_IB_HCA="mlx5")
    assert lint(n, only=("IB002",)) == []


def test_rate_option_and_message(tmp_path):
    found = case_findings("IB002", "one-rail-trained-hdr", tmp_path)
    assert [f.subject for f in found] == ["mlx5_5"]
    assert "active_speed=50.0 Gbps per lane" in found[0].evidence


@pytest.mark.parametrize("width,rate,lanes", [("4X", None, 4), (None, "200 Gb/sec (2X NDR)", 2),
                                              (None, "100 Gb/sec (1X NDR)", 1), ("1X", "400 Gb/sec (4X NDR)", 1),
                                              (None, "Unknown", None), (None, None, None)])
def test_port_lanes(width, rate, lanes):
    port = dataclasses.replace(node("grace-hopper").nics[0].ports[0], active_width=width, rate=rate)
    assert port_lanes(port) == lanes


def test_ib_rules_ignore_ports_of_other_link_layers():
    """The RoCE hosts have 4X/2X Ethernet ports with LID 0 and SM LID 0: no width, SM or IB MTU findings."""
    for host in ("hgx-h100-roce", "pcie-server", "dgx-h100"):
        assert lint(node(host), only=("IB003", "IB004", "IB006")) == []


def test_init_port_is_ib004_not_ib001(tmp_path):
    case = next(c for c in load_case_files()["IB004"]["cases"] if c["name"] == "init-waiting-for-sm")
    n = probe(str(materialize(case, tmp_path)))
    found = lint(n)
    assert [(f.rule, f.subject) for f in found] == [("IB004", "mlx5_0")]
    assert "sminfo -C mlx5_0 -P 1" in found[0].fix


def test_firmware_baseline_is_majority_then_newest():
    dgx = node("dgx-h100")
    nics = list(dgx.nics)
    # Two compute HCAs on 28.41.1000, six on 28.39.2048: the majority wins, the two newer ones are reported.
    for i, nic in enumerate(nics):
        if nic.name in ("mlx5_0", "mlx5_3"):
            nics[i] = dataclasses.replace(nic, fw_ver="28.41.1000")
    found = lint(dataclasses.replace(dgx, nics=tuple(nics)), only=("IB005",))
    assert sorted(f.subject for f in found) == ["mlx5_0", "mlx5_3"]
    assert "versions: 28.39.2048 x6, 28.41.1000 x2" in found[0].evidence
    # A tie: the older one is off the baseline.
    two = tuple(dataclasses.replace(n, fw_ver=v) for n, v in zip(nics[:2], ("28.39.2048", "28.43.1014")))
    two = tuple(dataclasses.replace(n, board_id="MT_0000000838") for n in two)
    found = lint(dataclasses.replace(dgx, nics=two), only=("IB005",))
    assert [(f.subject, f.evidence[0]) for f in found] == [(two[0].name, "fw_ver=28.39.2048")]


# NCCL's integer parsing (ncclLoadParam: strtoll base 0) -------------------------------------------------------

@pytest.mark.parametrize("text,value", [(None, -1), ("", -1), ("106", 106), ("0x6a", 106), ("0152", 106),
                                        ("106 # DSCP 26", 106), ("  106", 106), ("auto", 0), ("-1", -1),
                                        ("08", 0), ("99999999999999999999", -1), ("+3", 3)])
def test_nccl_int(text, value):
    assert nccl_int(text, -1) == value


# CLI ----------------------------------------------------------------------------------------------------------

def test_cli_lint_port_down_json():
    r = run_cli("lint", "--root", str(HOSTS / "dgx-h100-port-down"), "--rule", ",".join(FAMILY), "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    found = [(f["rule"], f["severity"], f["subject"]) for f in doc["findings"]]
    assert found == [("IB001", "error", "mlx5_3")]


def test_cli_explain_and_option_config(tmp_path):
    r = run_cli("explain", "IB001")
    assert r.returncode == 0 and "non_compute" in r.stdout and "NET/IB : No device found." in r.stdout
    cfg = tmp_path / "ncclctl.yaml"
    cfg.write_text("rules:\n  IB002: {options: {min_rate_gbps: 400}}\n")
    r = run_cli("lint", "--root", str(HOSTS / "dgx-a100"), "--rule", "IB002", "--config", str(cfg), "--format", "json")
    assert r.returncode == 1, r.stderr
    assert len(json.loads(r.stdout)["findings"]) == 8
