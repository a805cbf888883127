"""fabric graph: ibnetdiscover (both forms) and LLDP into one model; `fabric load`; hostlists."""

from __future__ import annotations

import json

import pytest

from conftest import REPO, run_cli
from ncclctl.fabric import graph as G
from ncclctl.fabric.sources import load_fabric_file
from ncclctl.fabric.hostlist import compress
from tests.fabric.hostlist_expand import expand
from ncclctl.fabric.sources import load_input
from ncclctl.fabric.synth import SynthSpec, synth
from ncclctl.parsers.ibnetdiscover import parse_ibnetdiscover

IB = REPO / "fixtures" / "fabric" / "ib-small"
ROCE = REPO / "fixtures" / "fabric" / "roce-small"


def by_desc(g: G.FabricGraph) -> dict:
    """(HCA description, port) -> (switch description, switch port, rate): comparable across input forms."""
    return {(g.hcas[h][0], p): (g.switches[link[0]].desc, link[1], link[4]) for (h, p), link in g.hca_links.items()}


def test_topology_and_ports_forms_give_the_same_graph():
    topo = load_fabric_file(str(IB / "ibnetdiscover.txt"))
    ports = load_fabric_file(str(IB / "ibnetdiscover-p.txt"))
    assert (topo.kind, ports.kind) == ("ibnetdiscover", "ibnetdiscover-ports")
    assert by_desc(topo) == by_desc(ports) and len(by_desc(topo)) == 32
    assert len(topo.switch_links) == len(ports.switch_links) == 32
    for g in (topo, ports):
        s = g.summary()
        assert s["layers"] == {"leaf": 16, "spine": 8}
        assert s["rates"] == {"4xNDR (400 Gb/s)": 64}
        assert not g.findings
    # every leaf: 2 hosts down, 2 uplinks up (1:1)
    assert set(topo.downlinks().values()) == {2} and {topo.uplinks()[s] for s in topo.downlinks()} == {2}


def test_fast_and_careful_builders_agree():
    """The fast pass (hash-checked link ends) and the careful one (a full port index) build the same graph."""
    fab = parse_ibnetdiscover(synth(SynthSpec(nodes=70, miscable=3, down=4, seed=5)).text)
    fast = G._from_fabric_fast(fab, source="f", kind="ibnetdiscover")
    careful = G._from_fabric_careful(fab, source="f", kind="ibnetdiscover")
    assert fast is not None
    assert fast.hca_links == careful.hca_links
    assert sorted(fast.switch_links) == sorted(careful.switch_links)
    assert fast.hcas == careful.hcas and fast.switches.keys() == careful.switches.keys()
    # one inconsistent end sends the fast pass to the careful one, which names the problem
    text = synth(SynthSpec(nodes=8, group=4)).text
    bad = text.replace('[2]\t"H-043f720300000100"[1]', '[2]\t"H-043f720300000200"[1]', 1)
    assert bad != text
    fab = parse_ibnetdiscover(bad)
    assert G._from_fabric_fast(fab, source="f", kind="ibnetdiscover") is None
    g = G.from_fabric(fab, source="f", kind="ibnetdiscover")
    # leaf port 2 now reaches node 2's HCA, which leaf port 3 reaches too; node 1's HCA still names port 2
    assert sorted(f.rule for f in g.findings) == ["FAB006", "FAB011"]


def test_lldp_graph_from_inventory_models():
    inp = load_input(None, str(ROCE / "inventory.yaml"))
    g = inp.graph
    assert g.kind == "lldp" and len(g.switches) == 16 and len(g.hca_links) == 32
    assert sorted(inp.endpoints) == ["roce01", "roce02", "roce03", "roce04"]
    ep = inp.endpoints["roce03"]["mlx5_2:1"]
    assert g.switches[ep.link[0]].desc == "su2-rail2-leaf" and ep.link[1] == "swp1s0" and ep.link[4] == 400.0
    assert g.summary()["layers"] == {"leaf": 16} and not inp.findings


def test_fabric_load_cli(tmp_path):
    r = run_cli("fabric", "load", str(IB / "ibnetdiscover.txt"), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    f = doc["fabric"]
    assert (f["switches"], f["hcas"], f["links"], f["hosts"]) == (24, 32, 64, 4)
    assert f["host_names"] == "gpu[01-04]" and doc["ok"] is True and doc["findings"] == []
    text = run_cli("fabric", "load", "--inventory", str(ROCE / "inventory.yaml"))
    assert text.returncode == 0, text.stderr
    assert "16 leaf" in text.stdout and "hosts: 4: roce[01-04]" in text.stdout


def test_detect_kind():
    assert G.detect_kind("#\n# Topology file\nvendid=0x2c9\n", source="x") == "ibnetdiscover"
    assert G.detect_kind("SW     1  4 0x043f720100000000 4x NDR - SW 17 2 0x1 ( 'a' - 'b' )\n", source="x") == \
        "ibnetdiscover-ports"
    assert G.detect_kind("Switch: 0x7cfe900300a5a2c0 MF0;leaf01:MQM9700/U1:\n", source="x") == "iblinkinfo"
    assert G.detect_kind("CA: node17 mlx5_0:\n", source="x") == "iblinkinfo"


@pytest.mark.parametrize("names, expected", [
    (["node01", "node02", "node03", "node05"], "node[01-03,05]"),
    (["node9", "node10", "node11"], "node[9-11]"),
    (["node099", "node100"], "node[099-100]"),
    (["node08", "node09", "node10", "node9"], "node[08-10],node9"),
    (["a", "node1", "b"], "a,b,node1"),
    (["gpu7", *(f"node{i:05d}" for i in range(1, 33))], "gpu7,node[00001-00032]"),
    (["su01", "su02", "su10"], "su[01-02,10]"),
])
def test_hostlist(names, expected):
    assert compress(names) == expected
    assert sorted(expand(expected)) == sorted(names)


def test_hostlist_of_a_name_with_a_number_no_host_has():
    # a fuzzed NCCL log gave a host name ending in 4,400 digits: int() refuses it; such a name is kept as it is
    from ncclctl.fabric.hostlist import compress

    huge = "a" + "1" * 4400
    out = compress([huge, "gpu01", "gpu02"])
    assert huge in out and "gpu[01-02]" in out
