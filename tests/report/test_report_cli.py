"""Every command prints findings through the report door: grouped text, hidden infos, root-cause Nagios."""

from __future__ import annotations

import json
import re

import pytest

from conftest import HOSTS, REPO, run_cli

PFC_OFF = str(HOSTS / "hgx-h100-roce-pfc-off")
PCIE = str(HOSTS / "pcie-server")
SUMMARY = re.compile(r"^\S.*: \d+ errors?, \d+ warnings?, \d+ info( \([^()]*\))?$")


def test_lint_groups_the_seven_identical_roce001_findings():
    text = run_cli("lint", "--root", PFC_OFF, "-r", "ROCE001")
    lines = [ln for ln in text.stdout.splitlines() if ": error: ROCE001: " in ln]
    assert text.returncode == 1 and len(lines) == 2
    assert lines[0].startswith("ens1np0, ens2np0, ens3np0, ens4np0, ens5np0, ens7np0, ens8np0: error: ROCE001: ")
    assert lines[0].endswith("[7 alike; shown for ens1np0]") and lines[1].startswith("ens6np0: error: ROCE001: ")
    assert text.stdout.splitlines()[-1] == "hgx-roce-12: 8 errors, 0 warnings, 0 info (1 rule run)"
    doc = json.loads(run_cli("lint", "--root", PFC_OFF, "-r", "ROCE001", "-f", "json").stdout)
    assert [f["subject"] for f in doc["findings"]] == [f"ens{i}np0" for i in range(1, 9)]


def test_lint_hides_infos_unless_asked_and_machine_formats_keep_them():
    plain = run_cli("lint", "--root", PCIE)
    assert ": info: " not in plain.stdout
    assert plain.stdout.splitlines()[-1].endswith(" info hidden, --show-info shows it)") and " 1 info (" in plain.stdout.splitlines()[-1]
    shown = run_cli("lint", "--root", PCIE, "--show-info")
    assert "pcie-srv-03: info: GDR002: " in shown.stdout and shown.stdout.splitlines()[-1].endswith(" rules run)")
    assert plain.returncode == shown.returncode == 1
    doc = json.loads(run_cli("lint", "--root", PCIE, "-f", "json").stdout)
    assert doc["summary"]["info"] == 1 and any(f["rule"] == "GDR002" for f in doc["findings"])
    sarif = json.loads(run_cli("lint", "--root", PCIE, "-f", "sarif").stdout)
    assert any(r["ruleId"] == "GDR002" and r["level"] == "note" for r in sarif["runs"][0]["results"])


def test_fleet_text_hides_infos_too():
    res = run_cli("fleet", "lint", PCIE, str(HOSTS / "dgx-h100"))
    assert ": info: " not in res.stdout and res.stdout.splitlines()[-1].endswith("(info hidden, --show-info shows it)")
    shown = run_cli("fleet", "lint", PCIE, str(HOSTS / "dgx-h100"), "--show-info")
    assert "pcie-srv-03: info: GDR002: " in shown.stdout


def test_nagios_leads_with_the_down_port_not_the_hca_entry_naming_it():
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100-port-down"), "--nagios")
    first, *rest = res.stdout.splitlines()
    assert res.returncode == 2
    assert first.startswith("NCCLCTL CRITICAL - dgx-h100-01: 2 errors, 0 warnings: IB001 mlx5_3: mlx5_3 port 1 is DOWN")
    assert first.endswith("(+1 more)|errors=2 warnings=0 info=0")
    assert [ln.split(": ")[2] for ln in rest] == ["IB001", "NCCL011"]


@pytest.mark.parametrize("args", [
    ["lint", "--root", PCIE],
    ["topo", "validate", str(REPO / "tests/golden/topo/dgx-h100.xml")],
    ["rings", "validate", str(REPO / "fixtures/topo/valid/nccl-example-graph.xml")],
    ["fabric", "rails", "--inventory", str(REPO / "fixtures/fabric/roce-small/inventory-miscabled.yaml")],
    ["fabric", "load", str(REPO / "fixtures/fabric/ib-small/ibnetdiscover.txt")],
    ["fleet", "lint", "--inventory", str(REPO / "fixtures/fleet/dgx-pod/inventory.yaml")],
])
def test_every_command_ends_with_the_one_summary_line(args):
    res = run_cli(*args)
    assert res.returncode in (0, 1), res.stderr
    last = res.stdout.splitlines()[-1]
    if args[0] == "fleet":
        assert re.search(r"unreadable; \d+ errors?, \d+ warnings?, \d+ info$", last), last
    else:
        assert SUMMARY.match(last), last


@pytest.mark.parametrize("args", [
    ["topo", "validate", str(REPO / "tests/golden/topo/dgx-h100.xml")],
    ["fabric", "rails", "--inventory", str(REPO / "fixtures/fabric/roce-small/inventory-miscabled.yaml")],
])
def test_validators_speak_json_sarif_and_junit(args):
    doc = json.loads(run_cli(*args, "-f", "json").stdout)
    assert {"schema_version", "fail_on", "ok", "summary", "findings", "config"} <= set(doc)
    sarif = json.loads(run_cli(*args, "-f", "sarif").stdout)
    for d in sarif["runs"][0]["tool"]["driver"]["rules"]:
        assert d["name"] and d["fullDescription"]["text"] and d["help"]["markdown"]
    junit = run_cli(*args, "-f", "junit").stdout
    assert junit.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="ncclctl ')


@pytest.mark.parametrize("args, message", [
    (["lint", "--root", PCIE, "--rule", "NTS025"], "NTS025 is a file rule: lint does not run it"),
    (["lint", "--root", PCIE, "--rule", "FLT001"], "FLT001 is a fleet rule: lint does not run it"),
    (["topo", "validate", str(REPO / "tests/golden/topo/dgx-h100.xml"), "--rule", "IB001"],
     "IB001 is a node rule: topo validate does not run it"),
    (["fabric", "rails", str(REPO / "fixtures/fabric/ib-small/ibnetdiscover.txt"), "--rule", "init-only-override"],
     "NTS025 is a file rule: fabric rails does not run it"),
    (["topo", "validate", str(REPO / "tests/golden/topo/dgx-h100.xml"), "--rule", "NTS0025"], "did you mean NTS025?"),
])
def test_rule_of_another_scope_is_a_usage_error(args, message):
    res = run_cli(*args)
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_rule_filter_on_a_validator(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text('<system version="1">\n\t<cpu numaid="0"/>\n</system>\n')
    doc = json.loads(run_cli("topo", "validate", str(bad), "-f", "json").stdout)
    assert "NTX001" in {f["rule"] for f in doc["findings"]}
    res = run_cli("topo", "validate", str(bad), "-r", "unknown-element", "-f", "json")
    assert res.returncode == 0 and json.loads(res.stdout)["findings"] == []
    res = run_cli("topo", "validate", str(bad), "-r", "tab-before-element,NTS005")
    assert res.returncode == 1 and "NTX001" in res.stdout
