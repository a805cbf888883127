"""Layout from real-world fabrics (issue 16): SHARP Aggregation Nodes, management hosts, hosts without names, missing
leaves, the fabric's own numbering, three tiers. The fabrics are authored (fixtures/fabric/build_quirks.py) to
reproduce what real SuperPOD captures show."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO, run_cli
from ncclctl.fabric.naming import find_field, template, with_number

QUIRKS = REPO / "fixtures" / "fabric" / "quirks"
SUPERPOD = str(QUIRKS / "superpod-quirks.txt")
THREE = str(QUIRKS / "three-tier.txt")


def rails_json(path: str, *args: str) -> dict:
    r = run_cli("fabric", "rails", path, "--format", "json", "--show-info", *args)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def superpod() -> dict:
    return rails_json(SUPERPOD)


def by_rule(doc: dict, rule: str) -> list[dict]:
    return [f for f in doc["findings"] if f["rule"] == rule]


def test_the_authored_fabrics_are_what_the_builder_writes():
    r = subprocess.run([sys.executable, str(REPO / "fixtures" / "fabric" / "build_quirks.py"), "--check"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr


def test_spines_with_aggregation_nodes_are_spines_and_the_nodes_are_no_hosts():
    r = run_cli("fabric", "load", SUPERPOD, "--format", "json")
    doc = json.loads(r.stdout)["fabric"]
    # 19 leaves (5 groups x 4 rails, one missing) and 2 spines, every one with its SHARP Aggregation Node
    assert doc["layers"] == {"leaf": 19, "spine": 2}
    assert doc["aggregation_nodes"] == 21 and doc["hcas"] == 80
    assert "Aggregation" not in doc["host_names"] and "Mellanox" not in doc["host_names"]
    text = run_cli("fabric", "load", SUPERPOD).stdout
    assert "switches: 21 (19 leaf, 2 spine)" in text and "SHARP aggregation nodes: 21" in text


def test_management_hosts_are_out_of_the_layout_and_the_order(superpod):
    out = {f["message"].split(":")[0]: f["message"] for f in by_rule(superpod, "FAB015")}
    assert set(out) == {"A00-UFM-01", "ubuntu"}
    assert "2 HCA(s) (mlx5_0, mlx5_1) where the compute hosts have 4" in out["ubuntu"]
    assert "the name says management" in out["A00-UFM-01"]
    assert all(f["severity"] == "info" for f in by_rule(superpod, "FAB015"))
    # no false cabling errors for them
    assert not [f for f in by_rule(superpod, "FAB001") if f["message"].split()[0] in out]
    assert {x["host"] for x in superpod["not_in_layout"]} == set(out)
    for fmt in ("hostfile", "slurm", "slurm-block", "json", "text"):
        r = run_cli("fabric", "order", SUPERPOD, "--format", fmt)
        assert r.returncode == 0, r.stderr
        body = r.stdout
        lines = [x for x in body.splitlines() if not x.startswith("#") and "left out" not in x
                 and "not_in_layout" not in x]
        if fmt == "json":
            d = json.loads(body)
            assert set(d["not_in_layout"]) == set(out) and not set(out) & set(d["order"])
        else:
            assert not any("ubuntu" in x or "A00-UFM-01" in x for x in lines), (fmt, body)
    tree = run_cli("fabric", "order", SUPERPOD, "--format", "slurm").stdout
    assert "# not in the rail layout (management hosts?): A00-UFM-01,ubuntu" in tree


def test_an_inventory_makes_every_listed_host_a_compute_host(tmp_path):
    # with an inventory nothing is set apart: the hosts are the inventory's (fixtures/fabric/ib-small is clean)
    r = run_cli("fabric", "rails", "--inventory", str(REPO / "fixtures" / "fabric" / "ib-small" / "inventory.yaml"),
                "--format", "json", "--show-info")
    doc = json.loads(r.stdout)
    assert doc["not_in_layout"] == [] and not by_rule(doc, "FAB015")


def test_every_host_is_in_the_output_or_in_a_finding(superpod):
    load = json.loads(run_cli("fabric", "load", SUPERPOD, "--format", "json").stdout)
    named = {h for g in superpod["groups"] for h in g["hosts"]} | set(superpod["unplaced"])
    named |= {x["host"] for x in superpod["not_in_layout"]}
    # every host the descriptions name is in a group, unplaced, or out of the layout with a finding
    from ncclctl.fabric.hostlist import compress
    assert compress(named) == load["fabric"]["host_names"]
    # and the hosts without a name: one finding per position, with the name its neighbours suggest
    unnamed = {(u["group"], u["port"]): u for u in superpod["unnamed"]}
    assert set(unnamed) == {("su02", 4), ("su03", 3)}
    assert unnamed[("su02", 4)]["likely"] == "r07-dgx-02-c04" and unnamed[("su02", 4)]["rails"] == [0, 1, 2, 3]
    assert unnamed[("su03", 3)]["likely"] == "r07-dgx-03-c03" and unnamed[("su03", 3)]["rails"] == [0, 1, 2]
    fab016 = {f["message"].split(":")[0]: f["message"] for f in by_rule(superpod, "FAB016")}
    assert "localhost" in fab016["su03"] and "probably r07-dgx-03-c03" in fab016["su03"]
    assert "default description" in fab016["su02"] and "probably r07-dgx-02-c04" in fab016["su02"]
    # a named host's single HCA with the default description is that host's, not a new host
    stray = [f for f in by_rule(superpod, "FAB007") if "r07-dgx-02-c02" in f["message"]]
    assert len(stray) == 1 and "probably r07-dgx-02-c02's rail-1 HCA" in stray[0]["message"]
    slurm = run_cli("fabric", "order", SUPERPOD, "--format", "slurm").stdout
    assert "r07-dgx-02-c04 (su02 port 4)" in slurm and "r07-dgx-03-c03 (su03 port 3)" in slurm


def test_a_missing_leaf_is_one_finding_naming_its_position(superpod):
    missing = by_rule(superpod, "FAB017")
    assert len(missing) == 1
    msg = missing[0]["message"]
    assert msg.startswith("su03: the rail-3 leaf is missing (fabric rail 04, a switch named like "
                          "'MF0;R07-IB-LEAF-04-03:MQM9790/U1')")
    assert "r07-dgx-03-c[01-02,04]" in msg
    # no per-host findings for that rail
    assert not [f for f in superpod["findings"] if f["rule"] in ("FAB002", "FAB003") and "(rail 3)" in f["message"]
                and "r07-dgx-03" in f["message"]]
    assert superpod["missing_leaves"][0]["hosts"] == ["r07-dgx-03-c01", "r07-dgx-03-c02", "r07-dgx-03-c04"]


def test_groups_carry_the_fabrics_own_numbers_and_names_are_checked(superpod):
    assert [g["name"] for g in superpod["groups"]] == ["su02", "su03", "su04", "su05", "su06"]
    assert superpod["numbering"]["leaf_rail"]["template"] == "#;#-IB-LEAF-#-#:#/#"
    names = sorted(f["message"] for f in by_rule(superpod, "FAB018"))
    assert len(names) == 3
    assert any("'MF0;R07-IB-LEAF-04-02:MQM9790/U1'" in m and "named for rail 3 (fabric rail 04)" in m
               and "use it as rail 2" in m for m in names)
    assert any(m.startswith("r07-dgx-03-c09: its name says group 03") and "leaves of su04" in m for m in names)
    # the real swap is still caught, and only it
    mis = {(p["host"], p["rail"]) for p in superpod["problems"] if p["problem"] == "miscabled"}
    assert mis == {("r07-dgx-04-c01", 0), ("r07-dgx-04-c01", 1)}


def test_three_tier_fabrics():
    load = json.loads(run_cli("fabric", "load", THREE, "--format", "json").stdout)["fabric"]
    assert load["layers"] == {"leaf": 8, "spine": 4, "core": 2}
    doc = rails_json(THREE)
    assert doc["tiers"] == 3 and [g["name"] for g in doc["groups"]] == ["su01", "su02", "su03", "su04"]
    o = json.loads(run_cli("fabric", "order", THREE, "--format", "json").stdout)
    hops = o["cost"]["hops_per_step"]
    # per rail: 4 steps inside a leaf (2 hops), 2 between the groups of one pod (4 hops: leaf-spine-leaf) and 2
    # between the pods (6 hops: through the core)
    assert hops["histogram"] == {"2": 8, "4": 4, "6": 4} and hops["max"] == 6
    # a two-tier fabric never costs 6 hops
    two = json.loads(run_cli("fabric", "order", SUPERPOD, "--format", "json").stdout)["cost"]["hops_per_step"]
    assert two["max"] == 4 and "6" not in two["histogram"]


@pytest.mark.parametrize("name, expect", [
    ("MF0;A09-P1-IBLEAF-04-02:MQM9701/U1", ("#;#-#-IBLEAF-#-#:#/#", ("0", "09", "1", "04", "02", "9701", "1"))),
    ("a06-p1-dgx-02-c01", ("#-#-dgx-#-#", ("06", "1", "02", "01"))),
    ("MF0;g000-rail1-leaf:MQM9700/U1", ("#;#-#-leaf:#/#", ("0", "000", "1", "9700", "1"))),
    ("ubuntu", ("ubuntu", ())),
])
def test_name_templates(name, expect):
    assert template(name) == expect


def test_name_fields_number_labels_and_extrapolate():
    leaves = [(f"MF0;B09-P1-IBLEAF-{r + 1:02d}-{g:02d}:MQM9701/U1", r) for g in (5, 6, 7) for r in (0, 1, 3)]
    fld = find_field(leaves)
    assert fld is not None and fld.index == 3 and fld.printed == {0: "01", 1: "02", 3: "04"}
    # rail 2 has no leaf: its number is extrapolated, and a sibling's name gives the missing leaf's
    assert fld.printed_for(2) == "03"
    assert fld.rename("MF0;B09-P1-IBLEAF-02-05:MQM9701/U1", 2) == "MF0;B09-P1-IBLEAF-03-05:MQM9701/U1"
    assert with_number("a06-p1-dgx-02-c01", 3, "17") == "a06-p1-dgx-02-c17"
    # a global leaf counter does not number rails; nor does a constant
    counted = [(f"leaf{i:03d}", i % 4) for i in range(16)]
    assert find_field(counted) is None
    assert find_field([("spine", 0), ("spine", 1)]) is None


OUTPUTS = REPO / "fixtures" / "outputs"


def test_filtered_iblinkinfo_is_read_and_said():
    doc = rails_json(str(OUTPUTS / "iblinkinfo-grep-active.txt"))
    assert [g["hosts"] for g in doc["groups"]] == [["gpu07", "gpu08"]]
    assert doc["groups"][0]["leaves"][0]["guid"] == "lid:3"
    filtered = by_rule(doc, "FAB019")
    assert len(filtered) == 1 and "filtered (grep?)" in filtered[0]["message"]


def test_back_to_back_hcas_are_not_down_links():
    doc = rails_json(str(OUTPUTS / "iblinkinfo-back-to-back.txt"))
    b2b = by_rule(doc, "FAB020")
    assert {f["message"].split()[0] for f in b2b} == {"lab01", "lab02"}
    assert "cabled straight to HCA lab02 mlx5_0" in next(f["message"] for f in b2b if f["message"].startswith("lab01"))
    assert not by_rule(doc, "FAB002")
    assert {p["problem"] for p in doc["problems"]} == {"back-to-back"}
