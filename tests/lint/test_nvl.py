"""NVLink-domain family (NVL001-NVL006): every host fixture pinned, the health mask decoded as nvml.h defines it,
IMEX and NCCL MNNVL/NVLS settings, through the API and the CLI."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from conftest import HOSTS, run_cli
from ncclctl.model import decode_fabric_health, fabric_health_problems, nvlink_domain_gpus
from ncclctl.registry import all_rules

from .family import assert_host, assert_pinned, family_lint, node, with_env

FAMILY = tuple(r.id for r in all_rules() if r.family == "nvlink-domain")

EXPECTED = {
    "cloud-vm-flat": set(),
    "cpu-only": set(),
    "dgx-a100": set(),
    "dgx-h100": set(),
    "dgx-h100-nvlink-missing": set(),
    "dgx-h100-port-down": set(),
    "dgx-h100-x8-link": set(),
    "gb200-nvl72": set(),
    "gb200-nvl72-clique-split": {("NVL005", "error", "GPU3")},
    "gb200-nvl72-degraded": {("NVL002", "warning", "GPU2")},
    "gb200-nvl72-fabric-incomplete": {("NVL001", "error", "GPU1")},
    "gb200-nvl72-imex-down": {("NVL004", "error", "nvidia-imex")},
    "gb200-nvl72-no-imex-channel": {("NVL003", "error", "nvidia-caps-imex-channels")},
    "gb300-dd": set(),  # a Data Direct tray recorded without fabric info
    "gb300-dd-acs-off": set(),
    "gb300-dd-split-iommu": set(),
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
    assert FAMILY == ("NVL001", "NVL002", "NVL003", "NVL004", "NVL005", "NVL006")


def test_every_fixture_is_pinned():
    assert_pinned(EXPECTED)


@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_findings_per_host(host):
    assert_host(lint(node(host)), EXPECTED[host])


# Health mask ---------------------------------------------------------------------------------------

def test_0xaa_is_fully_healthy():
    assert [(n, t) for n, _, t in decode_fabric_health(0xAA)] == [
        ("DEGRADED_BW", "FALSE"), ("ROUTE_RECOVERY", "FALSE"), ("ROUTE_UNHEALTHY", "FALSE"),
        ("ACCESS_TIMEOUT_RECOVERY", "FALSE"), ("INCORRECT_CONFIGURATION", "NOT_SUPPORTED"),
        ("PARTITION_ASSIGNED", "NOT_SUPPORTED"), ("GFM_STATE", "NOT_SUPPORTED")]
    assert fabric_health_problems(0x51AA) == ()  # every newer field at its healthy value
    assert fabric_health_problems(0xAA) == ()
    assert fabric_health_problems(0x1AA) == ()  # INCORRECT_CONFIGURATION NONE: newer drivers
    assert fabric_health_problems(0) == ()      # every field NOT_SUPPORTED


@pytest.mark.parametrize("mask,field,value", [
    (0xA9, "DEGRADED_BW", "TRUE"), (0xA6, "ROUTE_RECOVERY", "TRUE"), (0x9A, "ROUTE_UNHEALTHY", "TRUE"),
    (0x6A, "ACCESS_TIMEOUT_RECOVERY", "TRUE"), (0x2AA, "INCORRECT_CONFIGURATION", "INCORRECT_SYSGUID"),
    (0x4AA, "INCORRECT_CONFIGURATION", "NO_PARTITION"), (0x5AA, "INCORRECT_CONFIGURATION", "INSUFFICIENT_NVLINKS"),
    (0xAB, "DEGRADED_BW", "RESERVED(3)"), (0x2AA, "INCORRECT_CONFIGURATION", "INCORRECT_SYSGUID"),
    (0x6AA, "INCORRECT_CONFIGURATION", "INCOMPATIBLE_GPU_FW"), (0x20AA, "PARTITION_ASSIGNED", "FALSE"),
    (0x80AA, "GFM_STATE", "DISCONNECTED"),
])
def test_each_field_decoded(mask, field, value):
    assert fabric_health_problems(mask) == ((field, value),)


def _gpu_health(n, index, mask, summary=None):
    gpus = tuple(dataclasses.replace(g, fabric_health_mask=mask, fabric_health_summary=summary)
                 if g.index == index else g for g in n.gpus)
    return dataclasses.replace(n, gpus=gpus)


@pytest.mark.parametrize("mask,summary,severity", [
    (0xA9, 3, "warning"), (0x9A, 1, "error"), (0x4AA, 1, "error"), (0xAA, 2, "error"), (0xAA, 3, "warning"),
    (0x20AA, 1, "error"), (0x80AA, 1, "warning")])
def test_health_grading(mask, summary, severity):
    found = lint(_gpu_health(node("gb200-nvl72"), 1, mask, summary), ("NVL002",))
    assert [(f.subject, f.severity.value) for f in found] == [("GPU1", severity)]
    assert f"0x{mask:x}" in found[0].evidence[0]


def test_healthy_mask_no_finding():
    assert lint(_gpu_health(node("gb200-nvl72"), 0, 0xAA, 1), ("NVL002",)) == []


# Registration and cliques --------------------------------------------------------------------------

def test_non_domain_nodes_are_not_judged():
    for host in ("dgx-h100", "grace-hopper", "pcie-server"):
        assert nvlink_domain_gpus(node(host)) == ()
    assert len(nvlink_domain_gpus(node("gb200-nvl72"))) == 4


def test_status_not_success_is_not_registered():
    n = node("gb200-nvl72")
    gpus = tuple(dataclasses.replace(g, fabric_status=10) if g.index == 2 else g for g in n.gpus)
    found = lint(dataclasses.replace(n, gpus=gpus), ("NVL001",))
    assert [f.subject for f in found] == ["GPU2"]
    assert "status 10 (not success)" in found[0].message


def test_gpu002_leaves_domain_gpus_to_nvl001():
    from ncclctl.lint.engine import Config, run
    from ncclctl.lint.context import Ctx

    found = run(Ctx(node=node("gb200-nvl72-fabric-incomplete")), Config(), only=("GPU002", "NVL001"))
    assert [(f.rule, f.subject) for f in found] == [("NVL001", "GPU1")]


def test_sentinel_clique_on_one_tray_is_not_a_split():
    # GB300 fixture: every GPU reports 32766 (default partition): one clique, nothing to say at node level.
    assert {g.fabric_clique_id for g in node("gb300-nvl72").gpus} == {32766}
    assert lint(node("gb300-nvl72")) == []


def test_same_clique_other_cluster_is_a_split():
    n = node("gb200-nvl72")
    gpus = tuple(dataclasses.replace(g, fabric_cluster_uuid="11111111-2222-3333-4444-555555555555")
                 if g.index == 0 else g for g in n.gpus)
    found = lint(dataclasses.replace(n, gpus=gpus), ("NVL005",))
    assert [f.subject for f in found] == ["GPU0"]


# IMEX --------------------------------------------------------------------------------------------

def _imex(n, **kw):
    return dataclasses.replace(n, facts=dataclasses.replace(n.facts, imex=dataclasses.replace(n.facts.imex, **kw)))


def test_node_absent_from_its_node_list():
    n = _imex(node("gb200-nvl72"), nodes=("10.20.1.11", "10.20.1.12"))
    found = lint(n, ("NVL004",))
    assert [(f.subject, f.severity.value) for f in found] == [("/etc/nvidia-imex/nodes_config.cfg", "error")]
    assert "10.20.1.14" in found[0].message


def test_node_list_by_hostname_counts():
    n = _imex(node("gb200-nvl72"), nodes=("gb200-r01-t04", "gb200-r01-t05"))
    assert lint(n, ("NVL004",)) == []


def test_node_list_missing():
    found = lint(_imex(node("gb200-nvl72"), nodes=None), ("NVL004",))
    assert [f.subject for f in found] == ["/etc/nvidia-imex/nodes_config.cfg"]


def test_domain_not_up_and_peer_not_ready_are_warnings():
    n = node("gb200-nvl72")
    peers = tuple(dataclasses.replace(p, status="UNAVAILABLE") if p.index == 7 else p for p in n.facts.imex.peers)
    found = lint(_imex(n, peers=peers, domain_state="DEGRADED"), ("NVL004",))
    assert sorted((f.severity.value, f.message.split(":")[0]) for f in found) == [
        ("warning", "1 IMEX peer(s) not READY"), ("warning", "IMEX domain state is DEGRADED, not UP")]


def test_channel_not_wanted_when_mnnvl_off():
    n = with_env(node("gb200-nvl72-no-imex-channel"), NCCL_MNNVL_ENABLE="0")
    assert lint(n, ("NVL003",)) == []


def test_channel_folder_empty_and_no_major():
    found = lint(_imex(node("gb200-nvl72"), channels=(), channels_major=None), ("NVL003",))
    assert "has no channelN device" in found[0].message
    assert "NVreg_CreateImexChannel0=1" in found[0].fix


# NCCL settings -------------------------------------------------------------------------------------

@pytest.mark.parametrize("env,subject,severity", [
    ({"NCCL_MNNVL_ENABLE": "0"}, "NCCL_MNNVL_ENABLE", "warning"),
    ({"NCCL_NVLS_ENABLE": "0"}, "NCCL_NVLS_ENABLE", "warning"),
    ({"NCCL_MNNVL_CLIQUE_ID": "7"}, "NCCL_MNNVL_CLIQUE_ID", "warning"),
    ({"NCCL_MNNVL_UUID": "1"}, "NCCL_MNNVL_UUID", "warning"),
])
def test_settings_on_a_domain_node(env, subject, severity):
    found = lint(with_env(node("gb200-nvl72"), **env), ("NVL006",))
    assert [(f.subject, f.severity.value) for f in found] == [(subject, severity)]


@pytest.mark.parametrize("env", [{"NCCL_MNNVL_ENABLE": "2"}, {"NCCL_MNNVL_ENABLE": "1"}, {"NCCL_NVLS_ENABLE": "1"}])
def test_settings_that_agree(env):
    assert lint(with_env(node("gb200-nvl72"), **env), ("NVL006",)) == []


def test_mnnvl_forced_without_fabric():
    found = lint(with_env(node("dgx-h100"), NCCL_MNNVL_ENABLE="1"), ("NVL006",))
    assert [(f.subject, f.severity.value) for f in found] == [("NCCL_MNNVL_ENABLE", "error")]
    assert lint(with_env(node("dgx-h100"), NCCL_MNNVL_ENABLE="0"), ("NVL006",)) == []


# CLI ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("host,rule", [("gb200-nvl72-no-imex-channel", "NVL003"), ("gb200-nvl72-imex-down", "NVL004"),
                                       ("gb200-nvl72-degraded", "NVL002"), ("gb200-nvl72-clique-split", "NVL005"),
                                       ("gb200-nvl72-fabric-incomplete", "NVL001")])
def test_cli_failing_and_passing(host, rule):
    r = run_cli("lint", "--root", str(HOSTS / host), "--rule", ",".join(FAMILY), "--format", "json",
                "--fail-on", "warning")
    assert r.returncode == 1, r.stderr
    (f,) = json.loads(r.stdout)["findings"]
    assert f["rule"] == rule and f["fix"] and f["evidence"]
    ok = run_cli("lint", "--root", str(HOSTS / "gb200-nvl72"), "--rule", rule, "--fail-on", "warning")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_cli_settings_from_env_json(tmp_path):
    root = tmp_path / "gb200"
    shutil.copytree(HOSTS / "gb200-nvl72", root, symlinks=True)
    env = json.loads((root / "env.json").read_text())
    env["NCCL_MNNVL_ENABLE"] = "0"
    (root / "env.json").write_text(json.dumps(env))
    r = run_cli("lint", "--root", str(root), "--rule", "NVL006")
    assert r.returncode == 0 and "NCCL_MNNVL_ENABLE: warning: NVL006" in r.stdout, r.stdout + r.stderr
    assert run_cli("lint", "--root", str(root), "--rule", "NVL006", "--fail-on", "warning").returncode == 1


def test_cli_bad_node_list_is_a_clear_error(tmp_path):
    root = tmp_path / "gb200"
    shutil.copytree(HOSTS / "gb200-nvl72", root, symlinks=True)
    (root / "etc/nvidia-imex/nodes_config.cfg").write_text("10.20.1.11\nnot an address!\n")
    r = run_cli("lint", "--root", str(root), "--rule", "NVL004")
    assert r.returncode not in (0, 1), r.stdout
    assert "nodes_config.cfg:2" in r.stderr and "Traceback" not in r.stderr


def test_cli_explain_every_rule():
    for rule_id in FAMILY:
        r = run_cli("explain", rule_id)
        assert r.returncode == 0 and rule_id in r.stdout and "Fix:" in r.stdout
