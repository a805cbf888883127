"""NCCL 2.31.0a7's own results (tests/data/nccl_expected/2.31.0a7.json: NVIDIA/nccl commit 86fa684d3bd5, the 2.31.0
pre-release, src/graph and src/tuning run on CPU) against NCCL 2.30.7's (2.30.7.json, commit 5067397c) on the same
case ids and inputs: every difference is listed here, and ncclctl's model run for 2.31 gives the 2.31 values.

What the differences mean is in ncclctl/nccl/changes.py (rows checked "harness")."""

from __future__ import annotations

import functools
import json

import pytest

from conftest import REPO
from nccl_expected import assert_paths_like_nccl, case_env, expected, topo_xml

DATA = REPO / "tests" / "data" / "nccl_expected" / "2.31.0a7.json"


@functools.lru_cache(maxsize=1)
def new() -> dict:
    return json.loads(DATA.read_text(encoding="ascii"))


def _diff(a, b, path: str = "") -> list[str]:
    """Where two case values differ: the JSON paths (``/gpu_net/0[4]``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            out += _diff(a.get(k), b.get(k), f"{path}/{k}") if k in a and k in b else [f"{path}/{k}"]
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += _diff(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [path]


def _fields(paths: list[str]) -> set[str]:
    """``/gpu_net/0[4]`` -> ``gpu_net``; ``/tuning_allreduce/tree[2]`` -> ``tuning_allreduce/tree``."""
    out = set()
    for p in paths:
        parts = p.strip("/").split("/")
        head = parts[0]
        if head in ("tuning_allreduce", "protocols") and len(parts) > 1:
            head += "/" + parts[1].split("[")[0]
        out.add(head.split("[")[0])
    return out


#: Case id -> the fields whose values differ from 2.30.7's; every other case of the file is identical.
#: 2.31/amd-zen-bw: cloud-vm-flat's 2 AMD EPYC 9V84 (Zen 4, familyid 175) sockets are 24 GB/s apart, not 16, so
#: paths through both CPUs (P2P or PXN off, GDR off) gain bandwidth.
#: 2.31/tree-two-nodes: tree bandwidths at 2 nodes from min(bwIntra, bwInter) (tuning_allreduce/tree alone).
#: 2.31/ll128-path-rule: LL128 on where 2.30.7 turned it off for the path types (protocols and tuning of both
#: algorithms: PCIe-only A100 nodes even on 1 node, P2P or GPUDirect RDMA off).
KNOWN: dict[str, set[str]] = {
    "cloud-vm-flat|N=2|gdr=1|hca=all|env=NCCL_NET_GDR_LEVEL=LOC|graph=nccl": {"gpu_net", "protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "cloud-vm-flat|N=2|gdr=1|hca=all|env=NCCL_P2P_DISABLE=1|graph=nccl": {"gpu_gpu", "gpu_net", "protocols/ring", "protocols/tree", "ring", "tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "cloud-vm-flat|N=2|gdr=1|hca=all|env=NCCL_P2P_LEVEL=LOC|graph=nccl": {"gpu_gpu", "gpu_net", "protocols/ring", "protocols/tree", "ring", "tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "cloud-vm-flat|N=2|gdr=1|hca=all|env=NCCL_PXN_DISABLE=1|graph=nccl": {"gpu_net", "protocols/ring", "tuning_allreduce/ring"},
    "cloud-vm-flat|N=2|gdr=1|hca=rails|env=NCCL_NET_GDR_LEVEL=LOC|graph=nccl": {"gpu_net", "protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "cloud-vm-flat|N=2|gdr=1|hca=rails|env=NCCL_P2P_DISABLE=1|graph=nccl": {"gpu_gpu", "gpu_net", "protocols/ring", "protocols/tree", "ring", "tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "cloud-vm-flat|N=2|gdr=1|hca=rails|env=NCCL_P2P_LEVEL=LOC|graph=nccl": {"gpu_gpu", "gpu_net", "protocols/ring", "protocols/tree", "ring", "tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "cloud-vm-flat|N=2|gdr=1|hca=rails|env=NCCL_PXN_DISABLE=1|graph=nccl": {"gpu_net", "protocols/ring", "tuning_allreduce/ring"},
    "dgx-a100|N=2|gdr=1|hca=all|env=NCCL_IB_MERGE_NICS=0|graph=nccl": {"tuning_allreduce/tree"},
    "dgx-a100|N=2|gdr=1|hca=all|env=NCCL_NET_MERGE_LEVEL=LOC|graph=nccl": {"tuning_allreduce/tree"},
    "dgx-a100|N=2|gdr=1|hca=all|env=|graph=nccl": {"tuning_allreduce/tree"},
    "dgx-a100|N=2|gdr=1|hca=rails|env=NCCL_IB_MERGE_NICS=0|graph=nccl": {"tuning_allreduce/tree"},
    "dgx-a100|N=2|gdr=1|hca=rails|env=NCCL_NET_MERGE_LEVEL=LOC|graph=nccl": {"tuning_allreduce/tree"},
    "dgx-a100|N=2|gdr=1|hca=rails|env=|graph=nccl": {"tuning_allreduce/tree"},
    "dgx-h100|N=2|gdr=1|hca=all|env=NCCL_NET_GDR_LEVEL=LOC|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "dgx-h100|N=2|gdr=1|hca=all|env=NCCL_P2P_DISABLE=1|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "dgx-h100|N=2|gdr=1|hca=all|env=NCCL_P2P_LEVEL=LOC|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "dgx-h100|N=2|gdr=1|hca=rails|env=NCCL_NET_GDR_LEVEL=LOC|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "dgx-h100|N=2|gdr=1|hca=rails|env=NCCL_P2P_DISABLE=1|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "dgx-h100|N=2|gdr=1|hca=rails|env=NCCL_P2P_LEVEL=LOC|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "grace-hopper|N=2|gdr=1|hca=all|env=|graph=nccl": {"tuning_allreduce/tree"},
    "grace-hopper|N=2|gdr=1|hca=rails|env=|graph=nccl": {"tuning_allreduce/tree"},
    "pcie-server-roce-lag|N=1|gdr=1|hca=all|env=|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "pcie-server-roce-lag|N=1|gdr=1|hca=rails|env=|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "pcie-server-roce-lag|N=2|gdr=1|hca=all|env=|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "pcie-server-roce-lag|N=2|gdr=1|hca=rails|env=|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "pcie-server|N=1|gdr=1|hca=all|env=|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "pcie-server|N=1|gdr=1|hca=rails|env=|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "pcie-server|N=2|gdr=1|hca=all|env=NCCL_IB_MERGE_NICS=0|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "pcie-server|N=2|gdr=1|hca=all|env=NCCL_NET_MERGE_LEVEL=LOC|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "pcie-server|N=2|gdr=1|hca=all|env=|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "pcie-server|N=2|gdr=1|hca=rails|env=NCCL_IB_MERGE_NICS=0|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "pcie-server|N=2|gdr=1|hca=rails|env=NCCL_NET_MERGE_LEVEL=LOC|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
    "pcie-server|N=2|gdr=1|hca=rails|env=|graph=nccl": {"protocols/ring", "protocols/tree", "tuning_allreduce/ring", "tuning_allreduce/tree"},
}


def test_file_names_the_release_and_holds_2_30_7_cases():
    meta = new()["meta"]
    assert meta["nccl_version"] == "2.31.0a7"
    assert meta["nccl_commit"] == "86fa684d3bd5b6ac3414d6d024fdc6f65441cb81"
    assert meta["case_count"] == len(new()["cases"])
    assert set(new()["cases"]) <= set(expected()["cases"])
    for fx, entry in new()["inputs"].items():
        assert entry == expected()["inputs"][fx], fx  # the same topology, graph and rails inputs
    from test_nccl_expected_data import _canonical

    assert DATA.read_text(encoding="ascii") == _canonical(new())


def test_every_difference_from_2_30_7_is_known():
    got = {}
    for cid, case in new()["cases"].items():
        fields = _fields(_diff(case, expected()["cases"][cid]))
        if fields:
            got[cid] = fields
    assert got == KNOWN


def _model_cases() -> list[str]:
    """The cases that differ from 2.30.7 and the first of each fixture (the rest are 2.30.7's, checked there)."""
    firsts = {}
    for cid in sorted(new()["cases"]):
        firsts.setdefault(cid.split("|")[0], cid)
    return sorted(set(KNOWN) | set(firsts.values()))


@pytest.mark.parametrize("case_id", _model_cases())
def test_model_for_2_31_gives_its_paths_nics_and_gdr(case_id):
    from ncclctl.nccl.build import Plugin, build
    from ncclctl.nccl.paths import compute_paths, trim_system
    from ncclctl.nccl.system import GPU, Params
    from ncclctl.nccl.version import Version
    from ncclctl.nccl.xml import parse_nccl_xml

    case = new()["cases"][case_id]
    inp = case["input"]
    root = parse_nccl_xml(topo_xml(inp["fixture"])).root
    sysm = build(root, Params(env=case_env(case), version=Version(2, 31, 0)), Plugin(gdr=bool(inp["gdr"]))).system
    compute_paths(sysm)
    trim_system(sysm, inp["nodes"] * len(sysm.nodes[GPU]))
    compute_paths(sysm)
    assert_paths_like_nccl(sysm, case)


@pytest.mark.parametrize("case_id", sorted(k for k, v in KNOWN.items() if {"ring", "tree"} & v))
def test_model_for_2_31_finds_its_new_rings_and_trees(case_id):
    """Where 2.31's inter-socket bandwidth changes NCCL's search (cloud-vm-flat, P2P off), the model run for 2.31
    finds 2.31's ring and tree graphs, not 2.30.7's."""
    from test_nccl_search_expected import graph_summary

    from ncclctl.nccl.build import Plugin, build
    from ncclctl.nccl.paths import compute_paths, trim_system
    from ncclctl.nccl.search import ring_and_tree
    from ncclctl.nccl.system import GPU, Params
    from ncclctl.nccl.version import Version
    from ncclctl.nccl.xml import parse_nccl_xml

    case = new()["cases"][case_id]
    inp = case["input"]
    root = parse_nccl_xml(topo_xml(inp["fixture"])).root
    sysm = build(root, Params(env=case_env(case), version=Version(2, 31, 0)), Plugin(gdr=bool(inp["gdr"]))).system
    compute_paths(sysm)
    trim_system(sysm, inp["nodes"] * len(sysm.nodes[GPU]))
    compute_paths(sysm)
    ring, tree = ring_and_tree(sysm)
    assert graph_summary(sysm, ring, {}) == case["ring"] != expected()["cases"][case_id]["ring"]
    assert graph_summary(sysm, tree, {}) == case["tree"]
