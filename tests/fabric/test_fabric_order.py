"""fabric order: crossings at the lower bound, the naive order beside it, the cost model, every output form."""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO, run_cli
from ncclctl.fabric.cost import CostParams, FabricCapacity, parse_size, ring_cost
from ncclctl.fabric.graph import from_fabric, host_endpoints
from tests.fabric.hostlist_expand import expand
from ncclctl.fabric.layout import analyze
from ncclctl.fabric.order import crossings, plan_order
from ncclctl.fabric.sources import FabricInput
from ncclctl.fabric.synth import SynthSpec, synth
from ncclctl.parsers.ibnetdiscover import parse_ibnetdiscover

IB = REPO / "fixtures" / "fabric" / "ib-small"


def layout_of(text: str):
    g = from_fabric(parse_ibnetdiscover(text), source="fabric.txt", kind="ibnetdiscover")
    eps, found = host_endpoints(g)
    return analyze(FabricInput(graph=g, endpoints=eps, findings=g.findings + found))


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory):
    """128 hosts, 4 groups, host numbers interleaved across groups: the sorted-name order is the worst case."""
    path = tmp_path_factory.mktemp("fabric") / "interleaved.txt"
    path.write_text(synth(SynthSpec(nodes=128, host_order="interleaved")).text)
    return str(path)


def test_order_reaches_the_lower_bound_and_beats_sorted_names(interleaved):
    lay = layout_of(open(interleaved).read())
    o = plan_order(lay)
    assert len(o.hosts) == 128 and sorted(o.hosts) == sorted(o.naive)
    assert o.crossings == o.lower_bound == 4
    assert o.naive_crossings == 128  # every sorted-name neighbour sits in another group
    assert crossings(o.hosts, lay.host_group) == 4
    # same leaf on every rail for consecutive hosts inside a group: 2 hops; group boundaries: 4
    assert o.cost["hops_per_step"]["histogram"] == {"2": 124 * 8, "4": 4 * 8}
    assert o.naive_cost["hops_per_step"]["mean"] == 4.0
    assert o.cost["latency_us"] < o.naive_cost["latency_us"]
    # a non-blocking fabric (32 down, 32 up per leaf) keeps full bandwidth either way...
    assert o.cost["bottleneck_gbps"] == o.naive_cost["bottleneck_gbps"] == 400.0
    assert o.params["oversubscription"]["leaf_down_up_ratio"] == 1.0
    # ...a 2:1 oversubscribed one halves the naive order's uplink share, not this order's
    big = CostParams(message_bytes=16 << 30, oversubscription=2.0)
    o2 = plan_order(lay, params=big)
    assert o2.cost["bottleneck_gbps"] == 400.0 and o2.naive_cost["bottleneck_gbps"] == 200.0
    assert o2.cost["busbw_GBps"] > 1.8 * o2.naive_cost["busbw_GBps"]


def test_oversubscription_from_leaf_port_counts():
    # groups of 40 on 64-port leaves: 40 down, 24 up
    lay = layout_of(synth(SynthSpec(nodes=80, group=40, spines_per_rail=4, host_order="interleaved")).text)
    cap = FabricCapacity(lay, None)
    assert cap.ratio == round(40 / 24, 2) and cap.source == "leaf port counts"
    o = plan_order(lay)
    # sorted names: all 40 hosts of a leaf cross the spine at once over 24 uplinks
    assert o.naive_cost["bottleneck_gbps"] == pytest.approx(400 * 24 / 40)
    assert o.cost["bottleneck_gbps"] == 400.0


def test_cost_model_basics():
    lay = layout_of(synth(SynthSpec(nodes=8, group=8)).text)
    one_group = ring_cost(sorted(lay.hosts), lay, CostParams())
    assert one_group["hops_per_step"] == {"mean": 2.0, "max": 2, "histogram": {"2": 64, "4": 0}}
    assert one_group["ranks"] == 64 and one_group["crossing_steps"] == 0
    # bandwidth-bound: busbw approaches rails x link rate / 8 (400 GB/s for 8 x 400G)
    huge = ring_cost(sorted(lay.hosts), lay, CostParams(message_bytes=1 << 40))
    assert 390 < huge["busbw_GBps"] < 400
    small = ring_cost(sorted(lay.hosts), lay, CostParams(message_bytes=1 << 20))
    assert small["busbw_GBps"] < huge["busbw_GBps"] / 10  # latency-bound
    single = ring_cost(["node00001"], lay, CostParams())
    assert single["busbw_GBps"] is None and "single host" in single["note"]
    assert parse_size("1G") == 1 << 30 and parse_size("256M") == 256 << 20 and parse_size("4096") == 4096
    assert parse_size("64KiB") == 64 << 10


def test_miscabled_hosts_go_to_the_group_boundary():
    result = synth(SynthSpec(nodes=64, miscable=2, seed=3))
    lay = layout_of(result.text)
    o = plan_order(lay)
    bad = {m[0] for m in result.miscabled}
    for _name, hosts in o.segments:
        tail = [h for h in hosts if h in bad]
        assert hosts[len(hosts) - len(tail):] == tail
    assert o.crossings == o.lower_bound == 2


def test_cli_formats(interleaved, tmp_path):
    r = run_cli("fabric", "order", interleaved, "--format", "hostfile")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 128 and all(re.fullmatch(r"node\d{5} slots=8", x) for x in lines)
    assert lines[:2] == ["node00001 slots=8", "node00005 slots=8"]
    hosts = [x.split()[0] for x in lines]

    tree = run_cli("fabric", "order", interleaved, "--format", "slurm").stdout
    switches = dict(re.findall(r"^SwitchName=(\S+) (?:Nodes|Switches)=(\S+)$", tree, flags=re.M))
    # the groups carry the fabric's own numbers (its leaves are named g000-rail0-leaf ...)
    assert switches["spine"] == "g[000-003]"
    assert [h for name in ("g000", "g001", "g002", "g003") for h in expand(switches[name])] == hosts
    assert switches["g000"].startswith("node[00001,00005,")

    block = run_cli("fabric", "order", interleaved, "--format", "slurm-block").stdout
    blocks = re.findall(r"^BlockName=(\S+) Nodes=(\S+)$", block, flags=re.M)
    assert [b for b, _ in blocks] == ["g000", "g001", "g002", "g003"] and "\nBlockSizes=32\n" in block

    doc = json.loads(run_cli("fabric", "order", interleaved, "--format", "json", "--slots", "4").stdout)
    assert doc["order"] == hosts and doc["slots"] == 4 and doc["crossings"] == doc["lower_bound"] == 4
    assert doc["naive"]["crossings"] == 128 and doc["cost_model"]["message_bytes"] == 1 << 30
    assert doc["cost"]["ranks"] == 128 * 4

    text = run_cli("fabric", "order", interleaved, "--oversubscription", "2", "--message-size", "16G").stdout
    row = next(x for x in text.splitlines() if x.startswith("spine crossings"))
    assert row.split()[-2:] == ["4", "128"]
    assert re.search(r"bottleneck \(Gb/s\)\s+400\.0\s+200\.0", text)


def test_output_file_is_written_atomically_and_deterministic(tmp_path):
    out = tmp_path / "hosts.txt"
    args = ("fabric", "order", "--inventory", str(IB / "inventory.yaml"), "--format", "hostfile", "-o", str(out))
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == "".join(f"gpu0{i} slots=8\n" for i in range(1, 5))
    assert "created" in r.stderr and "ring crossings 2 (lower bound 2" in r.stderr
    r2 = run_cli(*args)
    assert "up to date" in r2.stderr
    a = run_cli("fabric", "order", "--inventory", str(IB / "inventory-miscabled.yaml"), "--format", "json")
    b = run_cli("fabric", "order", "--inventory", str(IB / "inventory-miscabled.yaml"), "--format", "json")
    assert a.stdout == b.stdout and a.returncode == 0
    assert "fabric error(s)" in a.stderr


def test_512_nodes_end_to_end(tmp_path):
    """The one larger test: 512 nodes x 8 rails with faults, rails and order through the CLI."""
    result = synth(SynthSpec(nodes=512, miscable=8, down=8, seed=42, host_order="random"))
    path = tmp_path / "f512.txt"
    path.write_text(result.text)
    r = run_cli("fabric", "rails", str(path), "--format", "json")
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and len(doc["groups"]) == 16
    mis = {(p["host"], p["rail"]) for p in doc["problems"] if p["problem"] == "miscabled"}
    down = {(p["host"], p["rail"]) for p in doc["problems"] if p["problem"] == "down"}
    assert down == set(result.down)
    assert mis == {(h, x) for h, a, b in result.miscabled for x in (a, b)} - down
    o = json.loads(run_cli("fabric", "order", str(path), "--format", "json").stdout)
    assert o["crossings"] == o["lower_bound"] == 16 and o["naive"]["crossings"] > 400


def test_order_without_comparisons_renders_the_same_hostfile_and_slurm(interleaved):
    """compare=False (what `fabric order -f hostfile|slurm|slurm-block` without -o runs): the same order and the
    same bytes for those forms; the sorted-name order and the cost model are left out."""
    from ncclctl.fabric.order import render_order

    lay = layout_of(open(interleaved).read())
    full = plan_order(lay, slots=8)
    bare = plan_order(lay, slots=8, compare=False)
    assert bare.hosts == full.hosts and bare.crossings == full.crossings
    assert bare.naive == [] and bare.naive_crossings == -1 and bare.cost == {} and full.cost
    for fmt in ("hostfile", "slurm", "slurm-block"):
        assert render_order(bare, lay, fmt) == render_order(full, lay, fmt)
