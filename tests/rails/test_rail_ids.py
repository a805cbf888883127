"""Rail/plane ids from the fabric, a rail map or subnets, written for NCCL 2.30.7+ only (``rails``, ``conf
generate``, ``topo generate`` with ``--fabric``/``--rail-map``), on the fixtures of fixtures/fabric/planes."""

from __future__ import annotations

import json

import pytest

from conftest import HOSTS, REPO, run_cli

PLANES = REPO / "fixtures" / "fabric" / "planes"
MODELS = REPO / "fixtures" / "fabric" / "ib-small" / "models"
HCAS = ["mlx5_0:1", "mlx5_3:1", "mlx5_4:1", "mlx5_5:1", "mlx5_6:1", "mlx5_9:1", "mlx5_10:1", "mlx5_11:1"]


def rails_json(*args: str) -> dict:
    r = run_cli("rails", *args, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def ids(doc: dict) -> list[tuple[str, int, int | None]]:
    return [(r["hca"], r["rail_id"], r["plane_id"]) for r in doc["rails"]]


@pytest.mark.parametrize("fabric", ["dual-plane.txt", "dual-plane-unnamed.txt"])
@pytest.mark.parametrize("host", ["gpu01", "gpu02", "gpu03", "gpu04"])
def test_dual_plane_ids_are_a_fleet_fact(fabric, host):
    # every node: HCAs 0-3 on plane 0, rails 0-3; HCAs 4-7 on plane 1, rails 0-3 (from names, or spines and order)
    doc = rails_json("--model", str(MODELS / f"{host}.json"), "--fabric", str(PLANES / fabric))
    assert doc["rail_ids"]["source"] == "fabric"
    assert ids(doc) == [(h, k % 4, k // 4) for k, h in enumerate(HCAS)]
    assert doc["nccl_ib_hca"] == "=" + ",".join(f"{h}:{k % 4}:{k // 4}" for k, h in enumerate(HCAS))
    assert doc["nccl_net_merge_policy"] is None  # one port per card: nothing to fuse at the default level


def test_pci_order_differs_from_leaf_order_the_fabric_wins():
    doc = rails_json("--model", str(MODELS / "gpu03.json"), "--fabric", str(PLANES / "pci-order.txt"))
    assert [(r["hca"], r["rail"], r["rail_id"]) for r in doc["rails"]][1:3] == [("mlx5_3:1", 1, 2),
                                                                              ("mlx5_4:1", 2, 1)]
    r = run_cli("rails", "--model", str(MODELS / "gpu03.json"), "--fabric", str(PLANES / "pci-order.txt"))
    assert "mlx5_3:1       rail 2   (PCIe order says rail 1)" in r.stdout
    # the other nodes' PCIe order matches the leaves
    doc = rails_json("--model", str(MODELS / "gpu01.json"), "--fabric", str(PLANES / "pci-order.txt"))
    assert [r["rail_id"] for r in doc["rails"]] == list(range(8))


def test_version_gate_and_notes():
    args = ("--model", str(MODELS / "gpu02.json"), "--fabric", str(PLANES / "wrong-rail.txt"))
    doc = rails_json(*args, "--nccl-version", "2.30.4")
    assert doc["nccl_ib_hca"] == "=" + ",".join(HCAS)
    assert "NCCL 2.30.4 reads no rail/plane ids" in doc["rail_ids"]["not_written"]
    doc = rails_json(*args)
    assert doc["nccl_ib_hca"].split(",")[3] == "mlx5_5:1:5"
    assert doc["rail_ids"]["not_written"] is None


def test_conf_generate_writes_extended_hca_and_merge_policy_for_a_dual_port_card(tmp_path):
    rmap = tmp_path / "map.yaml"
    rmap.write_text("hosts:\n  pcie-server-01:\n    mlx5_0:1: {rail: 0, plane: 0}\n    mlx5_1:1: {rail: 1, plane: 0}\n")
    host = json.loads(run_cli("probe", "--root", str(HOSTS / "pcie-server"), "--format", "json").stdout)["hostname"]
    rmap.write_text(rmap.read_text().replace("pcie-server-01", host))
    r = run_cli("conf", "generate", "--root", str(HOSTS / "pcie-server"), "--rail-map", str(rmap))
    assert r.returncode == 0, r.stderr
    assert "NCCL_IB_HCA==mlx5_0:1:0:0,mlx5_1:1:1:0\n" in r.stdout
    assert "NCCL_NET_MERGE_POLICY=RAIL\n" in r.stdout
    r = run_cli("conf", "generate", "--root", str(HOSTS / "pcie-server"), "--rail-map", str(rmap),
                "--nccl-version", "2.29.7")
    assert r.returncode == 0, r.stderr
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n" in r.stdout and "MERGE_POLICY" not in r.stdout
    assert "NCCL 2.29.7 reads no rail/plane ids" in r.stderr
    # what conf generate wrote, the model reads: two devices on their own rails, not one fused device
    doc = json.loads(run_cli("topo", "predict", "--root", str(HOSTS / "pcie-server"), "--env",
                             "NCCL_IB_HCA==mlx5_0:1:0:0,mlx5_1:1:1:0", "--env", "NCCL_NET_MERGE_POLICY=RAIL",
                             "--format", "json").stdout)
    assert [(n["name"], n["rail"]) for n in doc["nets"]] == [("mlx5_0", 0), ("mlx5_1", 1)]


def test_without_a_source_output_is_unchanged():
    a = run_cli("conf", "generate", "--root", str(HOSTS / "dgx-h100"))
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_3:1," in a.stdout and a.stderr == ""


def test_topo_generate_writes_rail_plane_for_2_30_7_only_and_validates_clean(tmp_path):
    args = ("topo", "generate", "--model", str(MODELS / "gpu01.json"), "--fabric", str(PLANES / "dual-plane.txt"))
    out = tmp_path / "topo.xml"
    r = run_cli(*args, "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert 'name="mlx5_6" dev="' in text and 'rail="0" plane="1"' in text
    assert text.count(' rail="') == 8
    r = run_cli("topo", "validate", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "NTS09" not in r.stdout
    r = run_cli(*args, "--nccl-version", "2.30.4")
    assert r.returncode == 0 and ' rail="' not in r.stdout and "reads no rail/plane ids" in r.stderr


def test_subnet_and_lldp_sources(tmp_path):
    doc = rails_json("--root", str(HOSTS / "hgx-h100-roce"), "--rail-map", str(PLANES / "roce-subnets.yaml"))
    assert doc["rail_ids"]["source"] == "subnet" and [r["rail_id"] for r in doc["rails"]] == list(range(8))
    doc = rails_json("--model", str(REPO / "fixtures/fabric/roce-small/models/roce03-miscabled.json"),
                     "--rail-map", str(PLANES / "roce-switches.yaml"))
    assert doc["rail_ids"]["source"] == "inventory"
    assert [r["rail_id"] for r in doc["rails"]] == [0, 1, 3, 2, 4, 5, 6, 7]
    # a map that covers no port: PCIe order, said, and not written
    m = tmp_path / "m.yaml"
    m.write_text("subnets:\n  192.168.0.0/16: {rail: 0}\n")
    doc = rails_json("--root", str(HOSTS / "hgx-h100-roce"), "--rail-map", str(m))
    assert doc["rail_ids"]["source"] == "pcie" and "per-node guess" in doc["rail_ids"]["not_written"]
    assert doc["nccl_ib_hca"] == "=" + ",".join(f"mlx5_{k}:1" for k in range(8))


@pytest.mark.parametrize("text,msg", [
    ("- a\n", "a rail map is a mapping"),
    ("switches: [a]\n", "switches: must be a mapping"),
    ("switches:\n  leaf1: {rail: x}\n", "rail 'x' is not an integer"),
    ("switches:\n  leaf1: {rail: -1}\n", "is not an integer from 0"),
    ("switches:\n  leaf1: {rail: 1, color: red}\n", "expected {rail: N}"),
    ("subnets:\n  10.0.0.300/24: {rail: 1}\n", "is not an IPv4 subnet"),
    ("hosts:\n  n1: 3\n", "must map ports"),
    ("planes: {}\n", "a rail map is a mapping"),
    ("switches:\n  leaf1: {rail: true}\n", "is not an integer"),
    (": : :\n", ""),
])
def test_bad_rail_maps_are_input_errors(tmp_path, text, msg):
    m = tmp_path / "m.yaml"
    m.write_text(text)
    r = run_cli("rails", "--root", str(HOSTS / "dgx-h100"), "--rail-map", str(m))
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and str(m) in r.stderr and msg in r.stderr


def test_bad_fabric_and_unknown_host(tmp_path):
    f = tmp_path / "f.txt"
    f.write_bytes(b"\xff\xfe garbage\n")
    r = run_cli("rails", "--root", str(HOSTS / "dgx-h100"), "--fabric", str(f))
    assert r.returncode in (2, 3) and "Traceback" not in r.stderr
    doc = rails_json("--model", str(MODELS / "gpu01.json"), "--fabric", str(PLANES / "dual-plane.txt"),
                     "--host", "nosuch")
    assert doc["rail_ids"]["source"] == "pcie" and "the fabric has no host nosuch" in doc["rail_ids"]["notes"]


def test_rail_only_fabric_gets_cross_nic_0():
    # wrong-rail.txt / pci-order.txt: a spine per rail, no switch path between rails; dual-plane.txt: spines join the
    # rails of a plane
    r = run_cli("conf", "generate", "--model", str(MODELS / "gpu01.json"), "--fabric", str(PLANES / "pci-order.txt"))
    assert r.returncode == 0, r.stderr
    assert "NCCL_CROSS_NIC=0\n" in r.stdout
    r = run_cli("conf", "generate", "--model", str(MODELS / "gpu01.json"), "--fabric", str(PLANES / "dual-plane.txt"))
    assert r.returncode == 0, r.stderr
    assert "NCCL_CROSS_NIC" not in r.stdout
    doc = rails_json("--model", str(MODELS / "gpu01.json"), "--fabric", str(PLANES / "pci-order.txt"))
    assert doc["nccl_cross_nic"] == "0" and doc["rail_ids"]["rail_only_fabric"] is True
    doc = rails_json("--model", str(MODELS / "gpu01.json"), "--fabric", str(PLANES / "pci-order.txt"),
                     "--nccl-version", "2.29.7")
    assert doc["nccl_cross_nic"] is None
