"""``topo predict`` rail alignment: ring and tree hops between nodes judged by rail/plane ids (the topology file's
rail=/plane=, NCCL_IB_HCA's extended fields, --fabric), the NETs each end uses as ncclTopoGetNetDev picks them, and
why a hop crosses.

Expected values: NCCL 2.30.7's own src/graph (NVIDIA/nccl commit 5067397c2676d5aed50042fc39e5c8ee96eb0027, run
unmodified on the CPU: ncclTopoGetSystem ... ncclTopoCompute, ncclTopoPreset/Postset), 2 nodes, GPUDirect RDMA on,
on the topology files ``topo generate --root fixtures/hosts/dgx-h100 --fabric fixtures/fabric/planes/F --host H``
writes (F/H: dual-plane.txt/gpu01, pci-order.txt/gpu03, wrong-rail.txt/gpu02), with NCCL_CROSS_NIC=0 and 2, with
and without NCCL_IB_HCA as ``ncclctl rails --fabric F --host H`` prints it. NCCL produced the same channels for all
three fabrics and both NCCL_IB_HCA settings (the values below); with 3 nodes and NCCL_CROSS_NIC=2 the rings of
channels 0 and 1 below (the ring GPU orders: channel k from GPU k down, with
NCCL_CROSS_NIC=2 odd channels up)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import HOSTS, REPO, run_cli

PLANES = REPO / "fixtures" / "fabric" / "planes"
DGX = str(HOSTS / "dgx-h100")
RAIL_NICS = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
CASES = [("dual-plane.txt", "gpu01"), ("pci-order.txt", "gpu03"), ("wrong-rail.txt", "gpu02")]

# --- NCCL 2.30.7 (5067397c), 2 nodes ------------------------------------------------------------------
NCCL_RING_GPUS = {
    "0": [[(k - i) % 8 for i in range(8)] for k in range(8)],
    "2": [[(k - i) % 8 for i in range(8)] if k % 2 == 0 else [(k + i) % 8 for i in range(8)] for k in range(8)],
}
NCCL_RINGS = {
    "0": [[0, 7, 6, 5, 4, 3, 2, 1, 8, 15, 14, 13, 12, 11, 10, 9], [0, 7, 6, 5, 4, 3, 2, 9, 8, 15, 14, 13, 12, 11, 10, 1]],
    "2": [[0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8], [0, 8, 15, 14, 13, 12, 11, 10, 9, 1, 2, 3, 4, 5, 6, 7]],
}
# ring (net in, net out) per search channel; crossNic 0: each channel in and out on GPU k's rail NIC
NCCL_RING_NETS = {
    "0": (0, [(n, n) for n in RAIL_NICS]),
    "2": (2, [("mlx5_0", "mlx5_3"), ("mlx5_3", "mlx5_0"), ("mlx5_4", "mlx5_5"), ("mlx5_5", "mlx5_4"),
              ("mlx5_6", "mlx5_9"), ("mlx5_9", "mlx5_6"), ("mlx5_10", "mlx5_11"), ("mlx5_11", "mlx5_10")]),
}
# tree: pattern TREE, crossNic 0, channel k in and out on RAIL_NICS[k], for either NCCL_CROSS_NIC
NCCL_TREE_NETS = [(n, n) for n in RAIL_NICS]
NCCL_CHANNELS = 16
# tree links between the nodes (child rank, parent rank) per channel: channel c < 8 hangs node 1's GPU c under
# node 0's GPU c, the second tree (c >= 8) the other way
NCCL_TREE_LINKS = [[(8 + c, c)] for c in range(8)] + [[(c, 8 + c)] for c in range(8)]
# 3 nodes, NCCL_CROSS_NIC=2, pci-order.txt/gpu03
NCCL_RINGS_CN2_N3 = [[0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8, 16, 23, 22, 21, 20, 19, 18, 17],
                     [0, 8, 15, 14, 13, 12, 11, 10, 9, 17, 18, 19, 20, 21, 22, 23, 16, 1, 2, 3, 4, 5, 6, 7]]


def topo_file(tmp_path: Path, fabric: str | None, host: str | None, name: str = "topo.xml") -> Path:
    """``topo generate --root dgx-h100 [--fabric F --host H]`` (through the API)."""
    from ncclctl.cli.common import load_node
    from ncclctl.fabric.railids import ids_from_options
    from ncclctl.plan.rails import plan_rails
    from ncclctl.nccl.detect import generate_for

    node = load_node(DGX, None)
    ids = None
    if fabric is not None:
        ids = ids_from_options(node, plan_rails(node), fabric_file=str(PLANES / fabric), rail_map=None, host=host)
    out = tmp_path / name
    out.write_bytes(generate_for(node, rail_ids=ids)[0])
    return out


def fabric_ids(fabric: str, host: str) -> dict[str, tuple[int, int | None]]:
    from ncclctl.fabric.railids import port_ids

    got = port_ids(None, fabric_file=str(PLANES / fabric), rail_map=None, host=host)
    assert got is not None
    return {k.split(":")[0]: (v.rail, v.plane) for k, v in got.ids.items()}


def rails_hca(fabric: str, host: str) -> str:
    """NCCL_IB_HCA as ``ncclctl rails --root dgx-h100 --fabric F --host H`` prints it (rail order, name:port:rail
    [:plane])."""
    ids = fabric_ids(fabric, host)
    return "=" + ",".join(f"{n}:1:{ids[n][0]}" + ("" if ids[n][1] is None else f":{ids[n][1]}") for n in RAIL_NICS)


def predict(path: Path, nodes: int, env: dict[str, str]):
    from ncclctl.nccl.predict import Inputs, predict_xml

    return predict_xml(path.read_bytes(), inputs=Inputs(source=str(path), nodes=nodes, env=env), path=str(path))


@pytest.mark.parametrize("fabric,host", CASES)
@pytest.mark.parametrize("cross_nic", ["0", "2"])
@pytest.mark.parametrize("with_hca", [False, True])
def test_channels_as_nccl_and_every_hop_in_its_rail(tmp_path, fabric, host, cross_nic, with_hca):
    f = topo_file(tmp_path, fabric, host)
    env = {"NCCL_CROSS_NIC": cross_nic}
    if with_hca:
        env["NCCL_IB_HCA"] = rails_hca(fabric, host)
    g = predict(f, 2, env).graphs
    crossnic, nets = NCCL_RING_NETS[cross_nic]
    ring, tree = g["ring"], g["tree"]
    assert ring["crossnic"] == crossnic and tree["crossnic"] == 0 and g["channels"] == NCCL_CHANNELS
    assert [(c["net_in"]["name"], c["net_out"]["name"]) for c in ring["channels"]] == nets
    assert [c["gpus"] for c in ring["channels"]] == NCCL_RING_GPUS[cross_nic]
    assert [(c["net_in"]["name"], c["net_out"]["name"]) for c in tree["channels"]] == NCCL_TREE_NETS
    assert g["rings"][:2] == NCCL_RINGS[cross_nic]
    entries = g["rail_aligned"]
    trees = [e for e in entries if e["graph"] == "tree"]
    assert [[(h["child_rank"], h["parent_rank"]) for h in e["hops"]] for e in trees] == NCCL_TREE_LINKS
    assert len([e for e in entries if e["graph"] == "ring"]) == 8
    ids = fabric_ids(fabric, host)
    for e in entries:
        assert e["aligned"], e
        for h in e["hops"]:
            for end in (h["send_end"], h["recv_end"]):
                assert (end["rail"], end["plane"]) == ids[end["net"]] and end["ids_from"] == "nccl"
            assert "reason" not in h


def test_three_nodes_cross_nic_2_the_wrap_around_hop_crosses_rails(tmp_path):
    f = topo_file(tmp_path, "pci-order.txt", "gpu03")
    g = predict(f, 3, {"NCCL_CROSS_NIC": "2"}).graphs
    assert g["rings"][:2] == NCCL_RINGS_CN2_N3
    bad = [e for e in g["rail_aligned"] if not e["aligned"]]
    assert [(e["graph"], e["channel"]) for e in bad] == [("ring", c) for c in range(8)]
    h = next(x for x in bad[0]["hops"] if not x["aligned"])
    # node 2's last GPU of channel 0 (rank 17, GPU 1) sends on the channel's exit NIC, node 0's rank 0 receives on
    # its entry NIC: mlx5_3 is on the rail-2 leaf in pci-order.txt
    assert (h["from_node"], h["to_node"]) == (2, 0)
    assert (h["send_end"]["net"], h["send_end"]["rail"], h["recv_end"]["net"], h["recv_end"]["rail"]) == \
        ("mlx5_3", 2, "mlx5_0", 0)
    assert "rails 2 and 0" in h["reason"] and "NCCL_CROSS_NIC=2" in h["reason"]
    assert "odd node count" in h["reason"] and "enters on mlx5_0 and leaves on mlx5_3" in h["reason"]
    # the hops between node 0 and 1, and 1 and 2, line up (the odd-node swap)
    assert [x["aligned"] for x in bad[0]["hops"]] == [True, True, False]
    # NCCL_CROSS_NIC=0: every hop stays in its rail
    g = predict(f, 3, {"NCCL_CROSS_NIC": "0"}).graphs
    assert all(e["aligned"] for e in g["rail_aligned"])


def test_nics_without_rail_ids_are_compared_by_name_and_the_fabric_judges_a_file(tmp_path):
    f = topo_file(tmp_path, None, None)
    assert ' rail="' not in f.read_text()
    g = predict(f, 3, {"NCCL_CROSS_NIC": "2"}).graphs
    h = next(x for e in g["rail_aligned"] if not e["aligned"] for x in e["hops"] if not x["aligned"])
    assert h["send_end"]["rail"] is None and "no rail id: compared by NIC" in h["reason"]
    # --fabric with a FILE: the fabric's ids judge the hops (NCCL does not see them)
    r = run_cli("topo", "predict", str(f), "-N", "3", "--fabric", str(PLANES / "pci-order.txt"), "--host", "gpu03",
                "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    h = next(x for e in doc["graphs"]["rail_aligned"] if not e["aligned"] for x in e["hops"] if not x["aligned"])
    assert h["send_end"] == {"net": "mlx5_3", "rail": 2, "plane": None, "ids_from": "fabric"}
    assert "rails 2 and 0" in h["reason"]
    assert any("judge rail alignment only" in n for n in doc["notes"])
    assert all(n["rail"] is None for n in doc["nets"])  # NCCL itself sees no ids


def test_rails_prints_the_hca_the_harness_ran_with():
    r = run_cli("rails", "--root", DGX, "--fabric", str(PLANES / "pci-order.txt"), "--host", "gpu03", "--format",
                "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["nccl_ib_hca"] == rails_hca("pci-order.txt", "gpu03")


def test_text_and_root_with_fabric(tmp_path):
    # --root with --fabric: the topology NCCL detects carries the ids (as topo generate --fabric writes it)
    r = run_cli("topo", "predict", "--root", DGX, "-N", "3", "--fabric", str(PLANES / "dual-plane.txt"), "--host",
                "gpu01", "--env", "NCCL_CROSS_NIC=2")
    assert r.returncode == 0, r.stderr
    assert "dev 4  mlx5_6" in r.stdout and "rail 0  plane 1" in r.stdout
    assert "Rail alignment over 3 nodes: 8 of 24 ring and tree channels cross rails between nodes (by rail ids):" \
        in r.stdout
    assert ("ring channel 0: node 2 sends on mlx5_3 (rail 1, plane 0), node 0 receives on mlx5_0 (rail 0, plane 0): "
            "rails 1 and 0") in r.stdout
    r = run_cli("topo", "predict", "--root", DGX, "-N", "2", "--fabric", str(PLANES / "dual-plane.txt"), "--host",
                "gpu01")
    assert r.returncode == 0, r.stderr
    assert "Rail alignment over 2 nodes: every ring and tree hop between nodes stays on one rail (by rail ids)" \
        in r.stdout


@pytest.mark.parametrize("args,msg", [
    (("FILE", "--fabric", "FAB"), "--fabric needs --host NAME"),
    (("FILE", "--rail-map", "FAB"), "--rail-map needs the node"),
    (("--root", DGX, "--host", "gpu01"), "give --fabric FILE or --rail-map FILE"),
])
def test_usage_errors(tmp_path, args, msg):
    f = topo_file(tmp_path, None, None)
    args = tuple(str(f) if a == "FILE" else str(PLANES / "dual-plane.txt") if a == "FAB" else a for a in args)
    r = run_cli("topo", "predict", *args)
    assert r.returncode == 2 and msg in r.stderr


def test_unknown_fabric_host_is_an_input_error(tmp_path):
    f = topo_file(tmp_path, None, None)
    r = run_cli("topo", "predict", str(f), "--fabric", str(PLANES / "dual-plane.txt"), "--host", "nosuch")
    assert r.returncode == 3 and "has no rail port of host nosuch" in r.stderr and "Traceback" not in r.stderr
