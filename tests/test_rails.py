"""Rails on a node: assignment by PCIe locality, exact NCCL_IB_HCA, storage NICs excluded, down ports kept."""

from __future__ import annotations

import json

import pytest

from conftest import HOSTS, run_cli
from ncclctl.errors import InputError
from ncclctl.nccl.lists import hca_selects, parse_ib_hca
from ncclctl.probe import probe
from ncclctl.plan.rails import plan_rails


def all_ports(node):
    return [(n.name, p.num) for n in node.nics for p in n.ports]


@pytest.mark.parametrize("host,expected", [
    ("dgx-h100", ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]),
    ("dgx-a100", ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]),
    ("hgx-h100-roce", [f"mlx5_{i}" for i in range(8)]),
    ("cloud-vm-flat", [f"mlx5_ib{i}" for i in range(8)]),
])
def test_one_rail_per_gpu(host, expected):
    node = probe(str(HOSTS / host))
    plan = plan_rails(node)
    assert [plan.gpu_rail(i).nic for i in range(8)] == expected
    assert [r.rail for r in plan.rails] == list(range(8))
    # GPU k is on rail k, and every rail's NIC is the GPU's closest (PIX on bare metal).
    for g in node.gpus:
        assert plan.gpu_rail(g.index).rail == g.index
    if not node.is_virtual:
        assert {r.path for r in plan.rails} <= {"PIX", "PXB"} and plan.far_gpus == ()


def test_exact_hca_list_selects_exactly_the_rails():
    node = probe(str(HOSTS / "dgx-h100"))
    plan = plan_rails(node)
    hca = plan.nccl_ib_hca
    assert hca.startswith("=")
    wanted = {(r.nic, r.port) for r in plan.rails}
    assert hca_selects(hca, all_ports(node)) == wanted
    # Storage NIC mlx5_1 as a compute rail: without '=' it would also select mlx5_10 and mlx5_11.
    with_storage = plan_rails(node, ("mlx5_1", "mlx5_10", "mlx5_11")).nccl_ib_hca
    assert hca_selects(with_storage, all_ports(node)) == {("mlx5_1", 1), ("mlx5_10", 1), ("mlx5_11", 1)}
    assert hca_selects(with_storage[1:].replace(",mlx5_10:1,mlx5_11:1", ""), all_ports(node)) == {
        ("mlx5_1", 1), ("mlx5_10", 1), ("mlx5_11", 1)}
    assert hca_selects("mlx5_1", [("mlx5_1", 1), ("mlx5_10", 1), ("mlx5_11", 1)]) == {("mlx5_1", 1), ("mlx5_10", 1), ("mlx5_11", 1)}
    assert hca_selects("=mlx5_1", [("mlx5_1", 1), ("mlx5_10", 1)]) == {("mlx5_1", 1)}
    assert hca_selects("^=mlx5_1", [("mlx5_1", 1), ("mlx5_10", 1)]) == {("mlx5_10", 1)}
    assert hca_selects("mlx5_0:2", [("mlx5_0", 1), ("mlx5_0", 2)]) == {("mlx5_0", 2)}
    spec = parse_ib_hca("^=mlx5_0:1:3:0,mlx5_2")
    assert spec.exclude and spec.exact and spec.entries[0].port == 1 and spec.entries[1].port is None


def test_storage_nics_excluded_and_selectable():
    node = probe(str(HOSTS / "dgx-h100"))
    plan = plan_rails(node)
    assert plan.excluded == ("mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8")
    chosen = plan_rails(node, ("mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"))
    assert {r.nic for r in chosen.rails} <= {"mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"}
    assert chosen.far_gpus  # storage NICs are NODE/SYS from most GPUs
    with pytest.raises(InputError, match="mlx5_99"):
        plan_rails(node, ("mlx5_99",))


def test_down_port_stays_its_gpus_rail():
    plan = plan_rails(probe(str(HOSTS / "dgx-h100-port-down")))
    rail = plan.gpu_rail(1)
    assert rail.nic == "mlx5_3" and not rail.active and plan.down == (1,)
    assert "mlx5_3:1" in plan.nccl_ib_hca


def test_fewer_nics_than_gpus_dual_function_card():
    plan = plan_rails(probe(str(HOSTS / "pcie-server")))
    assert [(r.nic, r.gpus) for r in plan.rails] == [("mlx5_0", (0, 2)), ("mlx5_1", (1, 3))]
    assert plan.nccl_ib_hca == "=mlx5_0:1,mlx5_1:1"


def test_no_gpus():
    plan = plan_rails(probe(str(HOSTS / "cpu-only")))
    assert plan.rails == () and plan.nccl_ib_hca == ""


def test_cli_json_and_text():
    result = run_cli("rails", "--root", str(HOSTS / "dgx-h100"), "--format", "json")
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    assert doc["nccl_ib_hca"].startswith("=mlx5_0:1,mlx5_3:1") and len(doc["rails"]) == 8
    text = run_cli("rails", "--root", str(HOSTS / "dgx-h100-port-down")).stdout
    assert "PORT NOT ACTIVE" in text and "NCCL_IB_HCA==" in text
    bad = run_cli("rails", "--root", str(HOSTS / "dgx-h100"), "--compute-nics", "mlx5_99")
    assert bad.returncode == 3 and "mlx5_99" in bad.stderr


def test_roce_lag_is_one_bonded_rail():
    """mlx5_bond_0 (both ports of the card bonded, GIDs on bond0): one rail serving every GPU behind the card."""
    plan = plan_rails(probe(str(HOSTS / "pcie-server-roce-lag")))
    assert [(r.hca, r.netdev, r.gpus, r.path) for r in plan.rails] == [("mlx5_bond_0:1", "bond0", (0, 1, 2, 3), "PIX")]
    assert plan.nccl_ib_hca == "=mlx5_bond_0:1"
    assert hca_selects(plan.nccl_ib_hca, [("mlx5_bond_0", 1), ("mlx5_1", 1)]) == {("mlx5_bond_0", 1)}


def test_dual_port_device_gives_one_rail_per_port():
    """One RDMA device with two ports (a single-function dual-port card): each port is a rail, GPUs spread."""
    import dataclasses

    node = probe(str(HOSTS / "pcie-server"))
    nic0, nic1 = node.nic("mlx5_0"), node.nic("mlx5_1")
    port2 = dataclasses.replace(nic1.ports[0], num=2)
    dual = dataclasses.replace(nic0, ports=(nic0.ports[0], port2))
    node = dataclasses.replace(node, nics=(dual,))
    plan = plan_rails(node)
    assert [(r.hca, r.gpus) for r in plan.rails] == [("mlx5_0:1", (0, 2)), ("mlx5_0:2", (1, 3))]
    assert plan.nccl_ib_hca == "=mlx5_0:1,mlx5_0:2"
    assert hca_selects(plan.nccl_ib_hca, [("mlx5_0", 1), ("mlx5_0", 2), ("mlx5_01", 1)]) == {("mlx5_0", 1), ("mlx5_0", 2)}
