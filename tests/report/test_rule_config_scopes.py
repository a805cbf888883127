"""`.ncclctl.yaml` configures every rule of the registry: file rules in topo/rings validate, fabric rules in fabric
load/rails (severity, off, per-host ignore), found by the same discovery as lint (--config, else ./.ncclctl.yaml)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import HOSTS, REPO, run_cli

GOLDEN_TOPO = REPO / "tests/golden/topo/dgx-h100.xml"  # dev/sm/speed/... pinned: NTS025 infos without a host
ROCE_MISCABLED = str(REPO / "fixtures/fabric/roce-small/inventory-miscabled.yaml")
TAB = '<system version="1">\n\t<cpu numaid="0"/>\n</system>\n'


def cfg(tmp_path, text: str) -> str:
    p = tmp_path / "conf.yaml"
    p.write_text(text)
    return str(p)


def rules_of(res) -> list[tuple[str, str]]:
    return [(f["rule"], f["severity"]) for f in json.loads(res.stdout)["findings"]]


def test_file_rule_off_and_regraded(tmp_path):
    assert {r for r, _ in rules_of(run_cli("topo", "validate", str(GOLDEN_TOPO), "-f", "json"))} == {"NTS025"}
    res = run_cli("topo", "validate", str(GOLDEN_TOPO), "-f", "json", "-c", cfg(tmp_path, "rules: {NTS025: off}\n"))
    doc = json.loads(res.stdout)
    assert doc["findings"] == [] and doc["config"].endswith("conf.yaml")
    bad = tmp_path / "tab.xml"
    bad.write_text(TAB)
    assert run_cli("topo", "validate", str(bad)).returncode == 1
    res = run_cli("topo", "validate", str(bad), "-f", "json", "-c", cfg(tmp_path, "rules: {tab-before-element: warning}\n"))
    assert res.returncode == 0 and ("NTX001", "warning") in rules_of(res)
    res = run_cli("topo", "validate", str(bad), "-c", cfg(tmp_path, "rules: {NTX001: warning}\n"), "--fail-on", "warning")
    assert res.returncode == 1 and ": warning: NTX001: " in res.stdout


def test_file_rule_ignored_for_the_host_checked_against(tmp_path):
    text = GOLDEN_TOPO.read_text().replace('<gpu dev="0" sm="90"', '<gpu dev="5" sm="90"', 1)
    bad = tmp_path / "t.xml"
    bad.write_text(text)
    args = ("topo", "validate", str(bad), "--root", str(HOSTS / "dgx-h100"), "-f", "json")
    assert "NTH007" in {r for r, _ in rules_of(run_cli(*args))}
    ignore = "ignore:\n  - {hosts: 'dgx-h100-*', rules: [NTH007]}\n"
    assert "NTH007" not in {r for r, _ in rules_of(run_cli(*args, "-c", cfg(tmp_path, ignore)))}
    other = "ignore:\n  - {hosts: 'gpu-*', rules: [NTH007]}\n"
    assert "NTH007" in {r for r, _ in rules_of(run_cli(*args, "-c", cfg(tmp_path, other)))}


def test_rings_validate_takes_the_config(tmp_path):
    graph = tmp_path / "g.xml"
    graph.write_text((REPO / "fixtures/topo/valid/nccl-example-graph.xml").read_text().replace("<graphs", "\t<graphs", 1))
    assert run_cli("rings", "validate", str(graph)).returncode == 1
    assert run_cli("rings", "validate", str(graph), "-c", cfg(tmp_path, "rules: {NTX001: info}\n")).returncode == 0


def test_fabric_rule_regraded_off_and_ignored_per_host(tmp_path):
    base = run_cli("fabric", "rails", "--inventory", ROCE_MISCABLED, "-f", "json")
    assert base.returncode == 1 and rules_of(base) == [("FAB001", "error")] * 2
    res = run_cli("fabric", "rails", "--inventory", ROCE_MISCABLED, "-f", "json",
                  "-c", cfg(tmp_path, "rules: {fabric-miscabled: {severity: warning}}\n"))
    assert res.returncode == 0 and rules_of(res) == [("FAB001", "warning")] * 2
    res = run_cli("fabric", "rails", "--inventory", ROCE_MISCABLED, "-c", cfg(tmp_path, "rules: {FAB001: off}\n"))
    assert res.returncode == 0 and "FAB001" not in res.stdout
    res = run_cli("fabric", "rails", "--inventory", ROCE_MISCABLED, "-f", "json",
                  "-c", cfg(tmp_path, "ignore:\n  - {hosts: roce03, rules: [FAB001]}\n"))
    assert res.returncode == 0 and rules_of(res) == []
    res = run_cli("fabric", "load", "--inventory", ROCE_MISCABLED, "-c", cfg(tmp_path, "rules: {FAB013: off}\n"))
    assert res.returncode == 0, res.stderr


def test_config_is_discovered_in_the_working_directory(tmp_path):
    (tmp_path / ".ncclctl.yaml").write_text("rules:\n  NTS025: warning\n")
    res = subprocess.run([sys.executable, "-m", "ncclctl", "topo", "validate", str(GOLDEN_TOPO), "-f", "json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=60)
    doc = json.loads(res.stdout)
    assert doc["config"] == str(tmp_path / ".ncclctl.yaml")
    # 20 pinned values (12 <gpu>, 8 <net>): one finding per fault (issue 28), each listing its elements
    assert {f["severity"] for f in doc["findings"]} == {"warning"} and doc["summary"]["warning"] == 2
    assert sorted(len(f["locations"]) for f in doc["findings"]) == [8, 12]


@pytest.mark.parametrize("text, words", [
    ("rules: {NTS025: {options: {x: 1}}}\n", "rule NTS025: has no options"),
    ("rules: {FAB001: loud}\n", "rule FAB001: 'loud' is not a setting"),
    ("rules: {NTX999: off}\n", "unknown rule 'NTX999'"),
    ("rules: {NTS025: off, init-only-override: warning}\n", "rule NTS025 is configured twice"),
    ("ignore:\n  - {hosts: '*', rules: [FAB0001]}\n", "unknown rule 'FAB0001' (fix: did you mean FAB001?"),
    ("rules: [NTS025]\n", "'rules' must be a mapping"),
])
def test_bad_config_for_table_rules_is_exit_3_naming_the_line(tmp_path, text, words):
    path = cfg(tmp_path, text)
    for args in (("topo", "validate", str(GOLDEN_TOPO)), ("fabric", "rails", "--inventory", ROCE_MISCABLED)):
        res = run_cli(*args, "-c", path)
        assert res.returncode == 3 and words in res.stderr and "conf.yaml:" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
