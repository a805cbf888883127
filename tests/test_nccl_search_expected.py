"""The NCCL model's ring and tree search, multi-node connect and AllReduce tuning against NCCL 2.30.7's own results on
the cases of tests/data/nccl_expected/2.30.7.json (NCCL commit 5067397c; see the README there): every graph-file case
and every search case but the slow ones below.

SLOW: multi-node cases where NCCL's own search spends 10^5 to 10^6 recursion steps (8 GPUs on an NVSwitch, the NICs
only reachable through the CPU: GPUDirect RDMA off, or A100/missing-NVLink bandwidths that never fill the channels).
The model follows those steps too (seconds each in Python); all of them matched NCCL when this file was written,
and tests/test_nccl_search.py keeps one (dgx-h100, 2 nodes, GDR off) in the suite.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest

from conftest import REPO
from nccl_expected import cases, expected, model_system

from ncclctl.nccl.connect import connect
from ncclctl.nccl.search import PATTERN_NAMES, ring_and_tree, search_init
from ncclctl.nccl.system import CPU, GPU, NET, PATH_TYPE_STR
from ncclctl.nccl.tuning import PROTOS, tune

SLOW = frozenset(c + "|graph=nccl" for c in """
    cloud-vm-flat/profile=h100|N=2|gdr=0|hca=all|env=
    cloud-vm-flat/profile=h100|N=2|gdr=0|hca=rails|env=
    cloud-vm-flat/profile=h100|N=4|gdr=0|hca=all|env=
    cloud-vm-flat/profile=h100|N=4|gdr=0|hca=rails|env=
    cloud-vm-flat|N=2|gdr=0|hca=all|env=
    cloud-vm-flat|N=2|gdr=0|hca=rails|env=
    cloud-vm-flat|N=2|gdr=1|hca=all|env=NCCL_NET_GDR_LEVEL=LOC
    cloud-vm-flat|N=2|gdr=1|hca=rails|env=NCCL_NET_GDR_LEVEL=LOC
    cloud-vm-flat|N=4|gdr=0|hca=all|env=
    cloud-vm-flat|N=4|gdr=0|hca=rails|env=
    dgx-a100|N=2|gdr=0|hca=all|env=
    dgx-a100|N=2|gdr=0|hca=rails|env=
    dgx-a100|N=2|gdr=1|hca=all|env=NCCL_IB_MERGE_NICS=0
    dgx-a100|N=2|gdr=1|hca=all|env=
    dgx-a100|N=4|gdr=0|hca=all|env=
    dgx-a100|N=4|gdr=0|hca=rails|env=
    dgx-a100|N=4|gdr=1|hca=all|env=
    dgx-a100|N=4|gdr=1|hca=rails|env=
    dgx-h100-nvlink-missing|N=2|gdr=0|hca=all|env=
    dgx-h100-nvlink-missing|N=2|gdr=0|hca=rails|env=
    dgx-h100-nvlink-missing|N=2|gdr=1|hca=all|env=
    dgx-h100-nvlink-missing|N=2|gdr=1|hca=rails|env=
    dgx-h100-nvlink-missing|N=4|gdr=0|hca=all|env=
    dgx-h100-nvlink-missing|N=4|gdr=0|hca=rails|env=
    dgx-h100-nvlink-missing|N=4|gdr=1|hca=all|env=
    dgx-h100-nvlink-missing|N=4|gdr=1|hca=rails|env=
    dgx-h100-port-down|N=2|gdr=0|hca=all|env=
    dgx-h100-port-down|N=2|gdr=0|hca=rails|env=
    dgx-h100-port-down|N=4|gdr=0|hca=all|env=
    dgx-h100-port-down|N=4|gdr=0|hca=rails|env=
    dgx-h100-x8-link|N=2|gdr=0|hca=all|env=
    dgx-h100-x8-link|N=2|gdr=0|hca=rails|env=
    dgx-h100-x8-link|N=4|gdr=0|hca=all|env=
    dgx-h100-x8-link|N=4|gdr=0|hca=rails|env=
    dgx-h100|N=2|gdr=0|hca=all|env=
    dgx-h100|N=2|gdr=0|hca=rails|env=
    dgx-h100|N=2|gdr=1|hca=all|env=NCCL_NET_GDR_LEVEL=LOC
    dgx-h100|N=2|gdr=1|hca=rails|env=NCCL_NET_GDR_LEVEL=LOC
    dgx-h100|N=4|gdr=0|hca=all|env=
    dgx-h100|N=4|gdr=0|hca=rails|env=
    hgx-h100-roce-pfc-off|N=2|gdr=0|hca=all|env=
    hgx-h100-roce-pfc-off|N=2|gdr=0|hca=rails|env=
    hgx-h100-roce-pfc-off|N=4|gdr=0|hca=all|env=
    hgx-h100-roce-pfc-off|N=4|gdr=0|hca=rails|env=
    hgx-h100-roce|N=2|gdr=0|hca=all|env=
    hgx-h100-roce|N=2|gdr=0|hca=rails|env=
    hgx-h100-roce|N=4|gdr=0|hca=all|env=
    hgx-h100-roce|N=4|gdr=0|hca=rails|env=
""".split())


@functools.lru_cache(maxsize=None)
def graph_file(fixture: str) -> bytes:
    """The graph file of a graph=file case: what its `graph_cmd` (ncclctl rings graph) prints."""
    cmd = expected()["inputs"][fixture]["graph_cmd"].split()[1:]
    out = subprocess.run([sys.executable, "-m", "ncclctl", *cmd], capture_output=True, cwd=REPO, check=True)
    return out.stdout


def graph_summary(sysm, g, plugin_names: dict[int, str]) -> dict:
    """A graph as the data file writes it; a NET id the system lacks (fused away) by its plugin device name."""
    ngpus = len(sysm.nodes[GPU])
    dev_of = {n.rank: n.dev for n in sysm.nodes[GPU]}

    def net_name(net_id: int) -> str | None:
        if not sysm.inter:
            return None
        i = sysm.net_index(net_id)
        return sysm.nodes[NET][i].name if i >= 0 else plugin_names.get(net_id)

    chans = [[net_name(g.inter[2 * c]), [dev_of.get(r, r) for r in g.intra[c * ngpus:(c + 1) * ngpus]],
              net_name(g.inter[2 * c + 1])] for c in range(g.n_channels)]
    num = (lambda x: int(x) if x == int(x) else round(x, 4))
    return dict(bwInter=num(g.bw_inter), bwIntra=num(g.bw_intra), channels=chans, crossNic=g.cross_nic,
                nChannels=g.n_channels, pattern=PATTERN_NAMES[g.pattern], typeInter=PATH_TYPE_STR[g.type_inter],
                typeIntra=PATH_TYPE_STR[g.type_intra])


def tree_text(ch) -> str:
    return " ".join(f"{t.up}>" + ",".join(str(x) for x in t.down if x >= 0) if any(x >= 0 for x in t.down)
                    else f"{t.up}" for t in ch)


@pytest.mark.parametrize("case_id", [c for c in cases(None) if c not in SLOW])
def test_search_connect_tuning_match_nccl(case_id):
    case, _, sysm = model_system(case_id)
    inp = case["input"]
    search_init(sysm)
    gfile = graph_file(inp["fixture"]) if inp["graph_file"] else None
    ring, tree = ring_and_tree(sysm, graph_file=gfile)
    nodes, ngpus, sm = inp["nodes"], len(sysm.nodes[GPU]), sysm.nodes[GPU][0].sm
    plugin = {row[0]: row[1] for row in case["nets"]}
    for name, g in (("ring", ring), ("tree", tree)):
        exp = {k: v for k, v in case[name].items() if k != "missing_nets"}
        exp["channels"] = [[a or None, b, c or None] for a, b, c in exp["channels"]]
        assert graph_summary(sysm, g, plugin) == exp, name
    con = connect(ring, tree, ngpus, nodes, sysm.params, min_comp_cap=sm)
    assert con.n_channels == case["connect"]["nChannels"]
    if "rings" in case["connect"]:
        assert con.rings == case["connect"]["rings"] * case["connect"].get("rings_repeat", 1)
        assert [tree_text(ch) for ch in con.trees] == case["connect"]["trees"]
    tun = tune(ring, tree, n_nodes=nodes, n_ranks=nodes * ngpus, min_comp_cap=sm, max_comp_cap=sm,
               cpu_vendor=sysm.nodes[CPU][0].vendor, params=sysm.params)
    if case.get("tuning_allreduce"):
        for a in ("ring", "tree"):
            assert [round(x, 2) for x in tun.bandwidth[a]] == case["tuning_allreduce"][a], a
    if case.get("protocols"):
        for a in ("ring", "tree"):
            assert [p for p, on in zip(PROTOS, tun.enabled[a]) if on] == case["protocols"][a], a
