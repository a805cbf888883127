"""NCCL's system build and path computation (ncclctl.nccl.build / ncclctl.nccl.paths) against NCCL's own code.

Expected values: what NCCL 2.30.7 (commit 5067397c2676d5aed50042fc39e5c8ee96eb0027) computed, run on CPU over the
topology file ``ncclctl topo generate --root fixtures/hosts/<fixture>`` writes, 2 nodes, with GPUDirect RDMA
available (gdr 1) or not (gdr 0), NCCL_IB_HCA as ``ncclctl rails`` prints it or unset. Node fusion off
(NCCL_NET_MERGE_LEVEL=LOC) where the run was made without the plugin's makeVDevice.
Cells: "TYPE/bw/hops" from GPU rank 0 to each NET; NCCL's first GPU (index 0, NCCL's order) to each GPU as "TYPE/bw".
"""

from __future__ import annotations

import pytest

from ncclctl.nccl.build import Plugin, build
from ncclctl.nccl.paths import check_gdr, compute_paths, get_local_net, path_str, trim_system
from ncclctl.nccl.system import GPU, NET, Params
from ncclctl.probe import probe
from ncclctl.nccl.detect import generate_for
from ncclctl.nccl.xml import parse_nccl_xml

from conftest import HOSTS

NCCL_2_30_7 = {
    'cloud-vm-flat|rails|1': ('=mlx5_ib0,mlx5_ib1,mlx5_ib2,mlx5_ib3,mlx5_ib4,mlx5_ib5,mlx5_ib6,mlx5_ib7', ['mlx5_ib0', 'mlx5_ib1', 'mlx5_ib2', 'mlx5_ib3', 'mlx5_ib4', 'mlx5_ib5', 'mlx5_ib6', 'mlx5_ib7'],
        {'mlx5_ib0': 'PIX/48/4', 'mlx5_ib1': 'PXN/48/8', 'mlx5_ib2': 'PXN/48/8', 'mlx5_ib3': 'PXN/48/8', 'mlx5_ib4': 'PXN/48/8', 'mlx5_ib5': 'PXN/48/8', 'mlx5_ib6': 'PXN/48/8', 'mlx5_ib7': 'PXN/48/8'},
        ['LOC/5000', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8']),
    'dgx-a100|allhca|0': (None, ['mlx5_4', 'mlx5_5', 'mlx5_2', 'mlx5_3', 'mlx5_0', 'mlx5_1', 'mlx5_10', 'mlx5_11', 'mlx5_8', 'mlx5_9', 'mlx5_6', 'mlx5_7'],
        {'mlx5_0': 'PHB/24/6', 'mlx5_1': 'PHB/24/6', 'mlx5_10': 'SYS/16/6', 'mlx5_11': 'SYS/16/6', 'mlx5_2': 'SYS/16/7', 'mlx5_3': 'SYS/16/7', 'mlx5_4': 'SYS/16/6', 'mlx5_5': 'SYS/16/6', 'mlx5_6': 'SYS/16/7', 'mlx5_7': 'SYS/16/7', 'mlx5_8': 'SYS/16/7', 'mlx5_9': 'SYS/16/7'},
        ['LOC/5000', 'NVL/240', 'NVL/240', 'NVL/240', 'NVL/240', 'NVL/240', 'NVL/240', 'NVL/240']),
    'dgx-a100|rails|1': ('=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9', ['mlx5_2', 'mlx5_3', 'mlx5_0', 'mlx5_1', 'mlx5_8', 'mlx5_9', 'mlx5_6', 'mlx5_7'],
        {'mlx5_0': 'PIX/24/4', 'mlx5_1': 'PIX/24/4', 'mlx5_2': 'PXN/24/8', 'mlx5_3': 'PXN/24/8', 'mlx5_6': 'PXN/24/8', 'mlx5_7': 'PXN/24/8', 'mlx5_8': 'PXN/24/8', 'mlx5_9': 'PXN/24/8'},
        ['LOC/5000', 'NVL/240', 'NVL/240', 'NVL/240', 'NVL/240', 'NVL/240', 'NVL/240', 'NVL/240']),
    'dgx-h100-nvlink-missing|rails|1': ('=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11', ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9', 'mlx5_10', 'mlx5_11'],
        {'mlx5_0': 'PIX/48/4', 'mlx5_10': 'PXN/48/8', 'mlx5_11': 'PXN/48/8', 'mlx5_3': 'PXN/48/8', 'mlx5_4': 'PXN/48/8', 'mlx5_5': 'PXN/48/8', 'mlx5_6': 'PXN/48/8', 'mlx5_9': 'PXN/48/8'},
        ['LOC/5000', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/329.6', 'NVL/370.8', 'NVL/370.8']),
    'dgx-h100|allhca|1': (None, ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7', 'mlx5_8', 'mlx5_9', 'mlx5_10', 'mlx5_11'],
        {'mlx5_0': 'PIX/48/4', 'mlx5_1': 'PHB/25/5', 'mlx5_10': 'PXN/48/8', 'mlx5_11': 'PXN/48/8', 'mlx5_2': 'PHB/25/5', 'mlx5_3': 'PXN/48/8', 'mlx5_4': 'PXN/48/8', 'mlx5_5': 'PXN/48/8', 'mlx5_6': 'PXN/48/8', 'mlx5_7': 'SYS/22/6', 'mlx5_8': 'SYS/22/6', 'mlx5_9': 'PXN/48/8'},
        ['LOC/5000', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8']),
    'dgx-h100|rails|0': ('=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11', ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9', 'mlx5_10', 'mlx5_11'],
        {'mlx5_0': 'PHB/48/6', 'mlx5_10': 'SYS/22/7', 'mlx5_11': 'SYS/22/7', 'mlx5_3': 'PHB/48/6', 'mlx5_4': 'PHB/48/6', 'mlx5_5': 'PHB/48/6', 'mlx5_6': 'SYS/22/7', 'mlx5_9': 'SYS/22/7'},
        ['LOC/5000', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8']),
    'dgx-h100|rails|1': ('=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11', ['mlx5_0', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_9', 'mlx5_10', 'mlx5_11'],
        {'mlx5_0': 'PIX/48/4', 'mlx5_10': 'PXN/48/8', 'mlx5_11': 'PXN/48/8', 'mlx5_3': 'PXN/48/8', 'mlx5_4': 'PXN/48/8', 'mlx5_5': 'PXN/48/8', 'mlx5_6': 'PXN/48/8', 'mlx5_9': 'PXN/48/8'},
        ['LOC/5000', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8']),
    'grace-hopper|rails|0': ('=mlx5_0', ['mlx5_0'],
        {'mlx5_0': 'P2C/48/4'},
        ['LOC/5000']),
    'grace-hopper|rails|1': ('=mlx5_0', ['mlx5_0'],
        {'mlx5_0': 'P2C/48/4'},
        ['LOC/5000']),
    'hgx-h100-roce|rails|1': ('=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7', ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3', 'mlx5_4', 'mlx5_5', 'mlx5_6', 'mlx5_7'],
        {'mlx5_0': 'PIX/48/4', 'mlx5_1': 'PXN/48/8', 'mlx5_2': 'PXN/48/8', 'mlx5_3': 'PXN/48/8', 'mlx5_4': 'PXN/48/8', 'mlx5_5': 'PXN/48/8', 'mlx5_6': 'PXN/48/8', 'mlx5_7': 'PXN/48/8'},
        ['LOC/5000', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8', 'NVL/370.8']),
    'pcie-server-roce-lag|rails|1': ('=mlx5_bond_0', ['mlx5_bond_0'],
        {'mlx5_bond_0': 'PIX/24/4'},
        ['LOC/5000', 'PIX/24', 'PIX/24', 'PIX/24']),
}

_XML: dict[str, bytes] = {}


def topo_xml(fixture: str) -> bytes:
    if fixture not in _XML:
        _XML[fixture] = generate_for(probe(str(HOSTS / fixture)))[0]
    return _XML[fixture]


def system_for(fixture: str, env: dict, gdr: bool, nodes: int = 2):
    root = parse_nccl_xml(topo_xml(fixture)).root
    built = build(root, Params(env=env), Plugin(gdr=gdr))
    sysm = built.system
    compute_paths(sysm)
    trim_system(sysm, nodes * len(sysm.nodes[GPU]))
    compute_paths(sysm)
    return built, sysm


@pytest.mark.parametrize("case", sorted(NCCL_2_30_7))
def test_paths_match_nccl(case):
    fixture, hca, gdr = case.split("|")
    hca_value, nets, rank0, gg0 = NCCL_2_30_7[case]
    env = {"NCCL_NET_MERGE_LEVEL": "LOC"}
    if hca_value:
        env["NCCL_IB_HCA"] = hca_value
    _, sysm = system_for(fixture, env, gdr == "1")
    assert [n.name for n in sysm.nodes[NET]] == nets
    g0 = sysm.nodes[GPU][sysm.gpu_by_rank(0)]
    mine = {sysm.nodes[NET][i].name: f"{path_str(p)}/{p.count}" for i, p in enumerate(g0.paths[NET])}
    assert mine == rank0
    assert [path_str(p) for p in sysm.nodes[GPU][0].paths[GPU]] == gg0


# NIC fusion (topo.cc ncclTopoMakeVNics/AutoMerge + net_ib ncclIbMakeVDeviceInternal, read from NCCL 2.30.7): the two
# functions of pcie-server's ConnectX card (mlx5_0 = 1d:00.0, mlx5_1 = 1d:00.1, NCCL puts both under 1d:00.0) are
# PATH_PORT apart, so at the default NCCL_NET_MERGE_LEVEL (PORT) the plugin fuses them: one NET "mlx5_0+mlx5_1", dev
# index 2 (after the 2 physical devices), speed the sum.
def test_dual_port_card_is_fused_into_one_virtual_nic():
    built, sysm = system_for("pcie-server", {}, True)
    assert [(n.name, n.dev, n.bw) for n in sysm.nodes[NET]] == [("mlx5_0+mlx5_1", 2, 25.0)]
    assert any("fuses mlx5_0, mlx5_1" in n for n in built.notes)


@pytest.mark.parametrize("env", [{"NCCL_NET_MERGE_LEVEL": "LOC"}, {"NCCL_IB_MERGE_NICS": "0"}])
def test_fusion_off_keeps_physical_devices(env):
    _, sysm = system_for("pcie-server", env, True)
    assert [(n.name, n.dev) for n in sysm.nodes[NET]] == [("mlx5_0", 0), ("mlx5_1", 1)]


def test_nccl_ib_hca_port_is_the_ibv_port():
    # NCCL's XML port for mlx5_1 is 2 (ibv port 1 + one earlier device on the card); NCCL_IB_HCA matches ibv ports.
    _, sysm = system_for("pcie-server", {"NCCL_IB_HCA": "=mlx5_1:1"}, True)
    assert [n.name for n in sysm.nodes[NET]] == ["mlx5_1"]
    _, sysm = system_for("pcie-server", {"NCCL_IB_HCA": "=mlx5_1:2"}, True)
    assert [n.name for n in sysm.nodes[NET]] == []


def test_gdr_decision_and_reason():
    hca = NCCL_2_30_7["dgx-h100|rails|1"][0]
    _, sysm = system_for("dgx-h100", {"NCCL_IB_HCA": hca}, True)
    mode, why = check_gdr(sysm, 0, 0, 0)
    assert mode == 1 and "PIX" in why
    _, sysm = system_for("dgx-h100", {"NCCL_IB_HCA": hca, "NCCL_NET_GDR_LEVEL": "LOC"}, True)
    mode, why = check_gdr(sysm, 0, 0, 0)
    assert mode == 0 and "NCCL_NET_GDR_LEVEL LOC" in why
    g0 = sysm.nodes[GPU][sysm.gpu_by_rank(0)]
    assert path_str(g0.paths[NET][0]) == "PHB/48"  # traffic staged through the CPU
    _, sysm = system_for("dgx-h100", {"NCCL_IB_HCA": hca}, False)
    mode, why = check_gdr(sysm, 0, 0, 0)
    assert mode == 0 and "nvidia_peermem" in why


def test_local_net_per_gpu_is_its_rail():
    # With the rails selected, each GPU's channel-0 NET is the NIC on its own PCIe switch (PIX).
    hca = NCCL_2_30_7["dgx-h100|rails|1"][0]
    _, sysm = system_for("dgx-h100", {"NCCL_IB_HCA": hca}, True)
    nets = [sysm.nodes[NET][get_local_net(sysm, r, 0)].name for r in range(8)]
    assert nets == hca.lstrip("=").split(",")
