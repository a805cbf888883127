"""topo predict: whether NCCL 2.30.7 turns on MNNVL at N nodes (init.cc's gate, mnnvl.cc's checks), from the GB200
and GB300 tray fixtures; re-implemented from NCCL's source and said to be unverified (the CPU harness stubs CUDA and
NVML, and ncclMnnvlCheck calls the CUDA driver)."""

from __future__ import annotations

import json

import pytest

from conftest import HOSTS, run_cli
from ncclctl.nccl.mnnvl import decide
from ncclctl.probe import probe

_NODES: dict = {}


def node(name):
    if name not in _NODES:
        _NODES[name] = probe(str(HOSTS / name))
    return _NODES[name]


@pytest.mark.parametrize("fixture,nodes,env,applies,clique,says", [
    ("gb200-nvl72", 2, {}, True, 8, "MNNVL 1, cliqueSize 8, nvlDomainSize 8"),
    ("gb200-nvl72", 18, {}, True, 72, "cliqueSize 72, nvlDomainSize 72"),
    ("gb300-nvl72", 4, {}, True, 16, "cliqueSize 16"),  # default partition: clique 32766 is still one clique
    ("gb200-nvl72", 1, {}, False, None, "one node: MNNVL is only checked for jobs across nodes"),
    ("gb200-nvl72", 1, {"NCCL_MNNVL_ENABLE": "1"}, True, 4, "NCCL_MNNVL_ENABLE=1"),
    ("gb200-nvl72", 2, {"NCCL_MNNVL_ENABLE": "0"}, False, None, "NCCL_MNNVL_ENABLE=0"),
    ("gb200-nvl72", 2, {"NCCL_P2P_DISABLE": "1"}, False, None, "P2P is off"),
    ("gb200-nvl72", 2, {"NCCL_CUMEM_ENABLE": "0"}, False, None, "MNNVL needs cuMem"),
    ("gb200-nvl72-fabric-incomplete", 2, {}, False, None, "GPU1's fabric state is IN_PROGRESS"),
    ("gb200-nvl72-clique-split", 2, {}, True, 6, "in 2 cliques"),
    ("gb200-nvl72-no-imex-channel", 2, {}, None, 8, "the FABRIC allocation fails"),
    ("gb200-nvl72-imex-down", 2, {}, None, 8, "export/import through IMEX fails"),
    ("dgx-h100", 2, {}, False, None, "the cluster UUID is zero"),
])
def test_decision(fixture, nodes, env, applies, clique, says):
    d = decide(node(fixture), nodes=nodes, env=env)
    assert d is not None and d.applies is applies, d
    if clique is not None:
        assert d.clique_size == clique
    assert says in " ".join(d.steps), d.steps
    assert (d.fails is not None) == (applies is None)
    assert bool(d.effects) == (applies is True)


def test_no_fabric_info_no_section():
    assert decide(node("cpu-only"), nodes=2, env={}) is None
    r = run_cli("topo", "predict", "--root", str(HOSTS / "cpu-only"), "-N", "2")
    assert "MNNVL" not in r.stdout


def test_more_nodes_than_the_domain():
    d = decide(node("gb200-nvl72"), nodes=20, env={})
    assert "IMEX node list names 18 trays: 20 nodes cannot all be in its NVLink domain" in " ".join(d.steps)


def test_cli_text_and_json():
    r = run_cli("topo", "predict", "--root", str(HOSTS / "gb200-nvl72"), "-N", "2")
    assert r.returncode == 0, r.stderr
    assert "MNNVL (multi-node NVLink, NCCL 2.30.7's init.cc/mnnvl.cc; re-implemented, unverified): yes" in r.stdout
    assert "the fused MNNVL search is not modelled" in r.stdout
    j = run_cli("topo", "predict", "--root", str(HOSTS / "gb200-nvl72-no-imex-channel"), "-N", "2", "--format", "json")
    doc = json.loads(j.stdout)["mnnvl"]
    assert doc["applies"] is None and "LOG030" in doc["fails"] and doc["verified"] is False
    off = run_cli("topo", "predict", "--root", str(HOSTS / "gb200-nvl72-no-imex-channel"), "-N", "2", "-e",
                  "NCCL_MNNVL_ENABLE=0")
    assert "MNNVL not checked: NCCL_MNNVL_ENABLE=0" in off.stdout
