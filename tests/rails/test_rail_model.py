"""NCCL 2.30.7's rail/plane ids in the model: NCCL_IB_HCA ``name:port:rail:plane`` gives the plugin devices their
ids (``misc/utils.cc`` parseStringList, ``net_ib/init.cc``), ``ncclTopoPopulateNics`` writes them on ``<net>``, and
``ncclTopoAutoMerge`` with ``NCCL_NET_MERGE_POLICY=RAIL`` fuses only devices of one defined rail."""

from __future__ import annotations

import json

import pytest

from conftest import HOSTS, run_cli
from ncclctl.nccl.lists import hca_ids
from test_nccl_model_paths import system_for


def test_hca_ids_first_matching_entry():
    assert hca_ids("=mlx5_0:1:0:0,mlx5_1:1:3:1", "mlx5_1", 1) == (3, 1)
    assert hca_ids("=mlx5_0:1:0", "mlx5_0", 1) == (0, -1)
    assert hca_ids("=mlx5_0:1", "mlx5_0", 1) == (-1, -1)
    assert hca_ids("mlx5", "mlx5_7", 1) == (-1, -1)
    assert hca_ids("=mlx5_0:2:4:1", "mlx5_0", 1) == (-1, -1)  # port does not match


def test_rails_of_a_dual_port_card_are_fused_by_default():
    built, sysm = system_for("pcie-server", {"NCCL_IB_HCA": "=mlx5_0:1:0:0,mlx5_1:1:1:0"}, True)
    from ncclctl.nccl.system import NET

    nets = sysm.nodes[NET]
    assert [(n.name, n.rail) for n in nets] == [("mlx5_0+mlx5_1", -1)]
    assert any("rails 0, 1 fused" in n for n in built.notes)


def test_merge_policy_rail_keeps_rails_apart():
    from ncclctl.nccl.system import NET

    _, sysm = system_for("pcie-server", {"NCCL_IB_HCA": "=mlx5_0:1:0:0,mlx5_1:1:1:0",
                                         "NCCL_NET_MERGE_POLICY": "rail"}, True)
    assert [(n.name, n.rail, n.plane) for n in sysm.nodes[NET]] == [("mlx5_0", 0, 0), ("mlx5_1", 1, 0)]


def test_merge_policy_rail_fuses_one_rail_and_undefined_rails_never():
    from ncclctl.nccl.system import NET

    _, sysm = system_for("pcie-server", {"NCCL_IB_HCA": "=mlx5_0:1:2:0,mlx5_1:1:2:1",
                                         "NCCL_NET_MERGE_POLICY": "RAIL"}, True)
    # one rail: fused, the rail kept; plane = virtual bit | one bit per member plane index (undefined is index 0)
    assert [(n.name, n.rail, n.plane) for n in sysm.nodes[NET]] == [("mlx5_0+mlx5_1", 2, (1 << 14) | 2 | 4)]
    _, sysm = system_for("pcie-server", {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "NCCL_NET_MERGE_POLICY": "RAIL"}, True)
    assert [n.name for n in sysm.nodes[NET]] == ["mlx5_0", "mlx5_1"]


def test_predict_shows_rail_and_plane_per_net():
    r = run_cli("topo", "predict", "--root", str(HOSTS / "pcie-server"), "--env",
                "NCCL_IB_HCA==mlx5_0:1:0:0,mlx5_1:1:1:1", "--env", "NCCL_NET_MERGE_POLICY=RAIL", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [(n["name"], n["rail"], n["plane"]) for n in doc["nets"]] == [("mlx5_0", 0, 0), ("mlx5_1", 1, 1)]
    r = run_cli("topo", "predict", "--root", str(HOSTS / "pcie-server"), "--env",
                "NCCL_IB_HCA==mlx5_0:1:0:0,mlx5_1:1:1:1", "--env", "NCCL_NET_MERGE_POLICY=RAIL")
    assert r.returncode == 0, r.stderr
    assert "mlx5_1" in r.stdout and "rail 1  plane 1" in r.stdout
    # without ids: nothing shown, JSON null
    doc = json.loads(run_cli("topo", "predict", "--root", str(HOSTS / "dgx-h100"), "--format", "json").stdout)
    assert all(n["rail"] is None and n["plane"] is None for n in doc["nets"])
