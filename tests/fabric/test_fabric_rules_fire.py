"""Every fabric rule of the registry is exercised: FAB012 here, the others in the fabric tests that assert them."""

from __future__ import annotations

import json
import re

from ncclctl.registry import rules_of

from conftest import REPO, run_cli

IB = REPO / "fixtures" / "fabric" / "ib-small"


def test_duplicate_node_description(tmp_path):
    fabric = tmp_path / "dup-desc.txt"
    fabric.write_text((IB / "ibnetdiscover.txt").read_text().replace('"gpu02 mlx5_0"', '"gpu01 mlx5_0"'))
    r = run_cli("fabric", "load", str(fabric), "--format", "json")
    assert r.returncode == 1, r.stderr
    found = json.loads(r.stdout)["findings"]
    assert [f["rule"] for f in found] == ["FAB012"]
    assert "used by two HCAs" in found[0]["message"] and found[0]["subject"] == str(fabric) and found[0]["line"]


def test_every_fabric_rule_is_asserted_by_a_fabric_test():
    text = "\n".join(p.read_text() for p in (REPO / "tests" / "fabric").glob("test_*.py")
                     if p.name != "test_fabric_rules_fire.py")
    text += "\n" + (REPO / "tests" / "fabric" / "test_fabric_rules_fire.py").read_text().split("def test_every")[0]
    asserted = set(re.findall(r"FAB\d{3}", text))
    assert sorted(r.id for r in rules_of(scope="fabric") if r.id not in asserted) == []
