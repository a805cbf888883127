"""fabric rails: layout detection and the cabling check; exact recovery of `fabric synth` ground truth."""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO, run_cli
from ncclctl.fabric.graph import from_fabric, host_endpoints
from ncclctl.fabric.layout import analyze, parse_rate
from ncclctl.fabric.sources import FabricInput, load_input
from ncclctl.fabric.synth import SynthSpec, synth
from ncclctl.parsers.ibnetdiscover import parse_ibnetdiscover

IB = REPO / "fixtures" / "fabric" / "ib-small"
ROCE = REPO / "fixtures" / "fabric" / "roce-small"


def layout_of(text: str, **kw):
    g = from_fabric(parse_ibnetdiscover(text), source="fabric.txt", kind="ibnetdiscover")
    eps, found = host_endpoints(g)
    return analyze(FabricInput(graph=g, endpoints=eps, findings=g.findings + found), **kw)


def recovered(lay) -> tuple[set, set]:
    mis = {(p["host"], p["rail"]) for p in lay.problems if p["problem"] == "miscabled"}
    down = {(p["host"], p["rail"]) for p in lay.problems if p["problem"] == "down"}
    return mis, down


def truth(result) -> tuple[set, set]:
    down = set(result.down)
    # a swapped pair whose other end is down leaves one miscabled HCA
    mis = {(h, r) for h, a, b in result.miscabled for r in (a, b)} - down
    return mis, down


@pytest.mark.parametrize("spec", [
    SynthSpec(nodes=96, miscable=6, down=5, seed=1),
    SynthSpec(nodes=96, miscable=6, down=5, seed=2),
    SynthSpec(nodes=96, miscable=6, down=5, seed=3),
    SynthSpec(nodes=70, miscable=9, down=9, seed=11),  # a partly filled last group
    SynthSpec(nodes=40, rails=4, group=8, miscable=5, down=3, seed=4, host_order="random"),
    SynthSpec(nodes=12, rails=8, group=2, spines_per_rail=1, uplinks=2, miscable=2, down=1, seed=7),
])
def test_synth_ground_truth_is_recovered_exactly(spec):
    result = synth(spec)
    lay = layout_of(result.text)
    assert recovered(lay) == truth(result)
    groups = (spec.nodes + spec.group - 1) // spec.group
    assert len(lay.groups) == groups and lay.rails == spec.rails and not lay.unplaced
    # every finding is one of the faults: FAB001 (miscabled) or FAB002 (down)
    assert {f.rule for f in lay.findings} <= {"FAB001", "FAB002"}
    assert sum(f.rule == "FAB001" for f in lay.findings) == len(truth(result)[0])


def test_ties_in_two_host_groups_use_spine_planes_not_names():
    """gpu02's rails 1 and 2 are swapped in a two-host group: the votes tie, the rail's spine plane decides,
    even when the leaf names say nothing about rails."""
    result = synth(SynthSpec(nodes=4, rails=8, group=2, spines_per_rail=1, uplinks=2, miscable=1, down=1, seed=1))
    text = re.sub(r"MF0;g(\d+)-rail(\d+)-leaf", lambda m: f"leaf-{int(m.group(1)) * 8 + int(m.group(2)):02d}", result.text)
    text = re.sub(r"MF0;rail(\d+)-spine", lambda m: f"spine-{m.group(1)}-", text)
    assert "rail" not in text
    lay = layout_of(text)
    assert recovered(lay) == truth(result) == ({("node00002", 1), ("node00002", 2)}, {("node00001", 7)})


def test_ib_fixture_with_inventory(tmp_path):
    r = run_cli("fabric", "rails", "--inventory", str(IB / "inventory-miscabled.yaml"), "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    got = {(p["host"], p["hca"], p["rail"], p["problem"]) for p in doc["problems"]}
    assert got == {("gpu02", "mlx5_3", 1, "miscabled"), ("gpu02", "mlx5_4", 2, "miscabled"),
                   ("gpu01", "mlx5_11", 7, "down"), ("gpu04", "mlx5_10", 6, "narrow"),
                   ("gpu03", "mlx5_0", 0, "slow")}
    mis = next(p for p in doc["problems"] if p["hca"] == "mlx5_3")
    assert mis["expected"]["desc"] == "MF0;g000-rail1-leaf:MQM9700/U1"
    assert mis["actual"]["desc"] == "MF0;g000-rail2-leaf:MQM9700/U1" and mis["actual"]["port"] == 2
    assert doc["rail_source"] == "the hosts' rail tables" and doc["rails"] == 8
    assert [g["hostlist"] for g in doc["groups"]] == ["gpu[01-02]", "gpu[03-04]"]
    assert [g["name"] for g in doc["groups"]] == ["su1", "su2"]  # the inventory's group hints
    # text: node, HCA, port, expected switch, actual switch and port, at the file's line
    text = run_cli("fabric", "rails", "--inventory", str(IB / "inventory-miscabled.yaml")).stdout
    line = next(x for x in text.splitlines() if "FAB001" in x and "mlx5_3" in x)
    assert re.match(r"^.*ibnetdiscover-miscabled\.txt:\d+: error: FAB001: gpu02 mlx5_3 port 1 \(rail 1\): cabled to "
                    r"'MF0;g000-rail2-leaf:MQM9700/U1' \(043f720100000002\) port 2; expected "
                    r"'MF0;g000-rail1-leaf:MQM9700/U1' \(043f720100000001\)", line), line
    clean = run_cli("fabric", "rails", "--inventory", str(IB / "inventory.yaml"), "--format", "json")
    assert clean.returncode == 0 and json.loads(clean.stdout)["findings"] == []


def test_rails_follow_the_rail_table_not_name_order(tmp_path):
    """Without the inventory, rails are HCA names in natural order (mlx5_9 before mlx5_10); the DGX rail table
    agrees, and a missing HCA keeps the others on their rails."""
    text = (IB / "ibnetdiscover.txt").read_text()
    lay = layout_of(text)
    assert lay.rail_keys["gpu01"] == ("mlx5_0:1", "mlx5_3:1", "mlx5_4:1", "mlx5_5:1", "mlx5_6:1", "mlx5_9:1",
                                      "mlx5_10:1", "mlx5_11:1")
    inp = load_input(None, str(IB / "inventory.yaml"))
    assert inp.hosts["gpu01"].rails == lay.rail_keys["gpu01"]
    # drop gpu03's mlx5_4 entirely (block and the leaf's port line): real ibnetdiscover never lists a dead HCA
    guid = re.search(r'"H-([0-9a-f]+)"[^\n]*# "gpu03 mlx5_4"', text).group(1)
    kept = [line for line in text.split("\n") if guid not in line and 'Ca\t1 "H-' + guid not in line]
    lay = layout_of("\n".join(kept))
    assert [(p["host"], p["hca"], p["rail"], p["problem"]) for p in lay.problems] == [("gpu03", "mlx5_4", 2, "absent")]
    assert lay.host_rails["gpu03"][3].hca == "mlx5_5"


def test_ports_form_without_inventory():
    r = run_cli("fabric", "rails", str(IB / "ibnetdiscover-p.txt"), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["hosts"] == 4 and doc["rails"] == 8 and doc["problems"] == [] and len(doc["groups"]) == 2


def test_roce_lldp_fabric():
    r = run_cli("fabric", "rails", "--inventory", str(ROCE / "inventory-miscabled.yaml"), "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert {(p["host"], p["rail"], p["problem"]) for p in doc["problems"]} == {("roce03", 2, "miscabled"),
                                                                                 ("roce03", 3, "miscabled")}
    assert doc["fabric"]["kind"] == "lldp" and [g["hostlist"] for g in doc["groups"]] == ["roce[01-02]", "roce[03-04]"]
    assert run_cli("fabric", "rails", "--inventory", str(ROCE / "inventory.yaml")).returncode == 0


def test_expect_rate_and_sarif():
    path = str(IB / "ibnetdiscover.txt")
    assert parse_rate("4xNDR") == (400.0, "4x") and parse_rate("400G") == (400.0, None)
    assert parse_rate("2xHDR") == (100.0, "2x")
    r = run_cli("fabric", "rails", path, "--expect-rate", "800", "--format", "json")
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and [f["rule"] for f in doc["findings"]] == ["FAB004"] * 32
    r = run_cli("fabric", "rails", path, "--expect-rate", "8xNDR", "--format", "json")
    assert [f["rule"] for f in json.loads(r.stdout)["findings"]] == ["FAB005"] * 32
    assert run_cli("fabric", "rails", path, "--expect-rate", "4xHDR").returncode == 0
    r = run_cli("fabric", "rails", "--inventory", str(IB / "inventory-miscabled.yaml"), "--format", "sarif")
    sarif = json.loads(r.stdout)
    run = sarif["runs"][0]
    assert sarif["version"] == "2.1.0" and r.returncode == 1
    assert sorted(d["id"] for d in run["tool"]["driver"]["rules"]) == ["FAB001", "FAB002", "FAB004", "FAB005"]
    assert all(res["locations"][0]["physicalLocation"]["region"]["startLine"] > 0 for res in run["results"])


def _one_leaf_per_host_group(hosts: int, hcas: int) -> str:
    """A top-of-rack fabric: every HCA of a host on the same leaf (not rail-optimized)."""
    out = ["# Topology file"]
    leaf = "0000000000aa0000"
    out += ["", "vendid=0x2c9", "devid=0xd2f2", f"switchguid=0x{leaf}({leaf})",
            f'Switch\t64 "S-{leaf}"\t\t# "tor-1" enhanced port 0 lid 1 lmc 0']
    port = 0
    cas = []
    for h in range(hosts):
        for k in range(hcas):
            port += 1
            guid = f"{0xbb0000 + h * 16 + k:016x}"
            out.append(f'[{port}]\t"H-{guid}"[1]({guid}) \t\t# "host{h} mlx5_{k}" lid {10 + port} 4xHDR')
            cas += ["", "vendid=0x2c9", "devid=0x101b", f"caguid=0x{guid}", f'Ca\t1 "H-{guid}"\t\t# "host{h} mlx5_{k}"',
                    f'[1]({guid}) \t"S-{leaf}"[{port}]\t\t# lid {10 + port} lmc 0 "tor-1" lid 1 4xHDR']
    return "\n".join(out + cas) + "\n"


def test_top_of_rack_fabric_is_not_miscabled():
    lay = layout_of(_one_leaf_per_host_group(3, 4))
    assert lay.problems == [] and len(lay.groups) == 1
    assert [f.rule for f in lay.findings] == ["FAB013"] and "serves rails 0, 1, 2, 3" in lay.findings[0].message


def test_unexpected_hca_and_rails_option():
    text = _one_leaf_per_host_group(3, 4).replace('"host2 mlx5_3"', '"host2 mlx5_7"')
    lay = layout_of(text)
    assert [f.rule for f in lay.findings if f.rule != "FAB013"] == ["FAB009", "FAB003"]
    lay = layout_of(_one_leaf_per_host_group(3, 4), rails=6)
    assert lay.rails == 4 and any(f.rule == "FAB003" and "--rails 6" in f.message for f in lay.findings)


@pytest.mark.parametrize("form", ["ibnetdiscover-p", "iblinkinfo", "iblinkinfo-line"])
def test_every_input_form_recovers_the_ground_truth(tmp_path, form):
    """The same faulty fabric as ibnetdiscover -p / iblinkinfo (default and --line) output, detected by content.
    These tools never reach an HCA whose only link is down, so a down link shows as an absent HCA (FAB003)."""
    from ncclctl.fabric.synth import as_form

    result = synth(SynthSpec(nodes=100, miscable=4, down=4, seed=3))
    path = tmp_path / f"{form}.txt"
    path.write_text(as_form(result.text, form))
    r = run_cli("fabric", "rails", str(path), "--format", "json")
    doc = json.loads(r.stdout)
    assert r.returncode == 1, r.stderr
    mis, down = truth(result)
    assert {(p["host"], p["rail"]) for p in doc["problems"] if p["problem"] == "miscabled"} == mis
    assert {(p["host"], p["rail"]) for p in doc["problems"] if p["problem"] == "absent"} == down
    assert doc["fabric"]["kind"] == ("ibnetdiscover-ports" if form == "ibnetdiscover-p" else "iblinkinfo")
    assert len(doc["groups"]) == 4 and doc["rails"] == 8


def test_roce_lag_host_is_linked_through_its_bond_slaves(tmp_path):
    """A RoCE LAG host (mlx5_bond_0 on bond0): LLDP runs on the slaves, so the rail's link is the first slave's
    neighbour, not a missing link."""
    lag = REPO / "fixtures" / "hosts" / "pcie-server-roce-lag"
    inv = tmp_path / "inventory.yaml"
    inv.write_text(f"version: 1\nhosts:\n  lag01: {{snapshot: {lag}}}\n")
    r = run_cli("fabric", "rails", "--inventory", str(inv), "--format", "json")
    doc = json.loads(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert doc["problems"] == [] and not [f for f in doc["findings"] if f["rule"] in ("FAB002", "FAB003")]
    load = json.loads(run_cli("fabric", "load", "--inventory", str(inv), "--format", "json").stdout)
    assert load["fabric"]["hca_ports_linked"] == 1 and load["fabric"]["hca_links"] == 1


def test_roce_fabric_from_lldpad_neighbours(tmp_path):
    """A RoCE host running lldpad (no lldpctl): the switch port behind each rail comes from lldptool -t -n."""
    import shutil

    from ncclctl.probe import probe

    src = REPO / "fixtures" / "hosts" / "hgx-h100-roce"
    root = tmp_path / "roce"
    shutil.copytree(src, root, symlinks=True)
    (root / "cmd" / "lldpctl_-f_json.txt").unlink()
    rails = [f"ens{k + 1}np0" for k in range(8)]
    for k, ifname in enumerate(rails):
        (root / "cmd" / f"lldptool_-t_-n_-i_{ifname}.txt").write_text(
            f"Chassis ID TLV\n\tMAC: 1c:34:da:00:00:{k:02x}\nPort ID TLV\n\tIfname: swp12s0\nTime to Live TLV\n\t120\n"
            f"System Name TLV\n\trail{k}-leaf01\nEnd of LLDPDU TLV\n")
    node = probe(str(root))
    assert [node.netdev(i).lldp.chassis_name for i in rails] == [f"rail{k}-leaf01" for k in range(8)]
    inv = tmp_path / "inventory.yaml"
    inv.write_text(f"version: 1\nhosts:\n  roce12: {{snapshot: {root}}}\n")
    load = json.loads(run_cli("fabric", "load", "--inventory", str(inv), "--format", "json").stdout)
    assert load["fabric"]["hca_ports_linked"] == 8 and load["fabric"]["switches"] == 8
    # Without either LLDP source the rails have no links.
    for f in (root / "cmd").glob("lldptool_*"):
        f.unlink()
    load = json.loads(run_cli("fabric", "load", "--inventory", str(inv), "--format", "json").stdout)
    assert load["fabric"]["hca_ports_linked"] == 0
