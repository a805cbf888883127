"""The NCCL model's system, paths, GPUDirect RDMA decisions and NET choice against NCCL 2.30.7's own results on
every case of tests/data/nccl_expected/2.30.7.json (NCCL commit 5067397c; see the README there)."""

from __future__ import annotations

import pytest

from nccl_expected import assert_paths_like_nccl, cases, model_system

from ncclctl.nccl.system import NET


@pytest.mark.parametrize("case_id", cases("nccl"))
def test_system_paths_gdr_and_nets_match_nccl(case_id):
    case, _, sysm = model_system(case_id)
    nets = sysm.nodes[NET]
    assert [[n.dev, n.name, round(n.bw, 3), n.port, n.gdr] for n in nets] == \
        [[d, nm, round(bw, 3), port, gdr] for d, nm, bw, port, gdr in case["system_nets"]]
    assert {"gpu_net", "gdr", "local_nets"} <= case.keys()  # every 2.30.7 case records them all
    assert_paths_like_nccl(sysm, case)
