"""The NCCL model's system, paths, GPUDirect RDMA decisions and NET choice against NCCL 2.30.7's own results on
every case of tests/data/nccl_expected/2.30.7.json (NCCL commit 5067397c; see the README there)."""

from __future__ import annotations

import pytest

from nccl_expected import cases, model_system

from ncclctl.nccl.paths import check_gdr, get_local_net, path_str
from ncclctl.nccl.system import GPU, NET, MAXCHANNELS


@pytest.mark.parametrize("case_id", cases("nccl"))
def test_system_paths_gdr_and_nets_match_nccl(case_id):
    case, _, sysm = model_system(case_id)
    nets = sysm.nodes[NET]
    assert [[n.dev, n.name, round(n.bw, 3), n.port, n.gdr] for n in nets] == \
        [[d, nm, round(bw, 3), port, gdr] for d, nm, bw, port, gdr in case["system_nets"]]
    by_dev = {g.dev: g for g in sysm.nodes[GPU]}
    assert [g.dev for g in sysm.nodes[GPU]] == case["gpus"]
    for dev, row in case["gpu_gpu"].items():
        g = by_dev[int(dev)]
        assert [path_str(g.paths[GPU][sysm.index(by_dev[d])]) for d in case["gpus"]] == row, f"GPU {dev}"
    for dev, row in case["gpu_net"].items():
        assert [path_str(p) for p in by_dev[int(dev)].paths[NET]] == row, f"GPU {dev}"
    for dev, row in case["gdr"].items():
        g = by_dev[int(dev)]
        mine = [f"{check_gdr(sysm, g.rank, n, 1)[0]}{check_gdr(sysm, g.rank, n, 0)[0]}" for n in range(len(nets))]
        assert mine == row, f"GPU {dev}"
    for dev, names in case["local_nets"].items():
        g = by_dev[int(dev)]
        used = []
        for c in range(MAXCHANNELS):
            n = get_local_net(sysm, g.rank, c)
            if n < 0 or (c and nets[n].name == used[0]):
                break
            used.append(nets[n].name)
        assert used == names, f"GPU {dev}"
