"""GPU family (GPU001-GPU004): every host fixture pinned, NVLink expectations, Fabric Manager cases, CLI."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import HOSTS, run_cli
from ncclctl.errors import UsageError

from ncclctl.lint.engine import Config, RuleConfig
from ncclctl.registry import all_rules
from ncclctl.lint.rules_gpu import expected_nvlinks, parse_expected

from .family import assert_host, assert_pinned, family_lint, node

FAMILY = tuple(r.id for r in all_rules() if r.family == "gpu")

EXPECTED = {
    "cloud-vm-flat": set(),
    "cpu-only": set(),
    "gb300-dd": set(),
    "gb300-dd-acs-off": set(),
    "gb300-dd-split-iommu": set(),
    "dgx-a100": set(),
    "dgx-h100": set(),
    "dgx-h100-nvlink-missing": {("GPU001", "error", "GPU5")},
    "dgx-h100-port-down": set(),
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
    assert FAMILY == ("GPU001", "GPU002", "GPU003", "GPU004", "GPU005")


def test_every_fixture_is_pinned():
    assert_pinned(EXPECTED)


@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_findings_per_host(host):
    assert_host(lint(node(host)), EXPECTED[host])


@pytest.mark.parametrize("name,count", [("NVIDIA H100 80GB HBM3", 18), ("NVIDIA A100-SXM4-80GB", 12),
                                        ("NVIDIA A100-SXM4-40GB", 12), ("Tesla V100-SXM2-32GB", 6),
                                        ("NVIDIA GH200 480GB", 18), ("NVIDIA H200", 18), ("NVIDIA B200", 18),
                                        ("NVIDIA L40S", None), ("NVIDIA H100 PCIe", None), ("NVIDIA H200 NVL", None)])
def test_datasheet_table(name, count):
    gpu = dataclasses.replace(node("dgx-h100").gpus[0], name=name)
    got = expected_nvlinks(gpu, [])
    assert (got[0] if got else None) == count


def test_site_entries_come_first():
    gpu = node("dgx-h100").gpus[0]
    assert expected_nvlinks(gpu, parse_expected(["*H100*=16"]))[0] == 16
    with pytest.raises(UsageError):
        parse_expected(["H100"])


def test_unknown_model_is_compared_with_its_peers():
    # An SKU the table does not know (renamed) falls back to "as many as the other GPUs of that model here".
    n = node("dgx-h100-nvlink-missing")
    n = dataclasses.replace(n, gpus=tuple(dataclasses.replace(g, name="NVIDIA H800 80GB HBM3") for g in n.gpus))
    found = lint(n, ("GPU001",))
    assert [f.subject for f in found] == ["GPU5"]
    assert "other NVIDIA H800 80GB HBM3 GPUs on this node have 18" in " ".join(found[0].evidence)


def test_standalone_gh200_without_fabric_is_not_judged():
    # One GH200 with no NVLink switch: links inactive, fabric NOT_SUPPORTED -> nothing to say.
    n = node("grace-hopper")
    links = tuple(dataclasses.replace(link, active=False) for link in n.gpus[0].nvlinks)
    gpu = dataclasses.replace(n.gpus[0], nvlinks=links, fabric_state=0)
    assert lint(dataclasses.replace(n, gpus=(gpu,)), ("GPU001",)) == []
    # The same GPU in a rack (fabric state known) with its links down is a finding.
    gpu = dataclasses.replace(n.gpus[0], nvlinks=links)
    assert [f.subject for f in lint(dataclasses.replace(n, gpus=(gpu,)), ("GPU001",))] == ["GPU0"]


def test_option_from_config():
    cfg = Config(rules=(("GPU001", RuleConfig(options=(("expected_nvlinks", ("NVIDIA L40S=4",)),))),))
    found = lint(node("pcie-server"), ("GPU001",), cfg)
    assert sorted(f.subject for f in found) == ["GPU0", "GPU1", "GPU2", "GPU3"]


def test_fabric_manager_unknown_state_is_not_guessed():
    # A live probe that could not ask systemctl (fabric_manager None) and Ampere (no fabric state): no finding.
    n = node("dgx-a100")
    n = dataclasses.replace(n, facts=dataclasses.replace(n.facts, fabric_manager=None))
    assert lint(n, ("GPU002",)) == []


def test_cli_bad_option_is_a_config_error(tmp_path):
    cfg = tmp_path / ".ncclctl.yaml"
    cfg.write_text("rules:\n  GPU001:\n    options:\n      expected_nvlinks: [\"NVIDIA H800*\"]\n")
    r = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--config", str(cfg), "--rule", "GPU001")
    assert r.returncode == 3
    assert f"{cfg}:4:" in r.stderr and "PATTERN=COUNT" in r.stderr


def test_cli_json():
    r = run_cli("lint", "--root", str(HOSTS / "dgx-h100-nvlink-missing"), "--rule", ",".join(FAMILY),
                "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    (f,) = doc["findings"]
    assert (f["rule"], f["subject"]) == ("GPU001", "GPU5")
    assert "link 16: inactive (far end nvswitch 0000:05:00.0)" in f["evidence"]
