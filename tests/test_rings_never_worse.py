"""Every graph file `rings graph` writes is, in NCCL 2.30.7's own code, at least as good as NCCL's own choice for
the jobs it is made for (multi-node, GPUDirect RDMA as on the host, NCCL_IB_HCA as pinned), and better where the
settings hold NCCL's search back (tests/data/nccl_expected: `graph=file` cases load `rings graph --force` output)."""

from __future__ import annotations

import pytest

from nccl_expected import cases, expected


def _best(case: dict) -> float:
    t = case["tuning_allreduce"]
    return max(max(t["ring"]), max(t["tree"]))


FILE_CASES = [c for c in cases("file") if "|hca=rails|" in c and "|gdr=1|" in c and "|N=1|" not in c
              and ("|env=|" in c or "|env=NCCL_PXN_DISABLE=1|" in c or "|env=NCCL_CROSS_NIC" in c)]


def test_there_are_cases():
    assert len(FILE_CASES) >= 24


@pytest.mark.parametrize("case_id", FILE_CASES)
def test_file_never_worse_than_nccls_own_search(case_id):
    data = expected()["cases"]
    f, n = data[case_id], data[case_id.replace("graph=file", "graph=nccl")]
    assert not f["ring"].get("missing_nets") and not f["tree"].get("missing_nets")
    assert f["ring"]["nChannels"] >= n["ring"]["nChannels"]
    assert _best(f) >= _best(n) * 0.999
    for algo in ("ring", "tree"):
        assert set(f["protocols"][algo]) >= set(n["protocols"][algo]), algo
    if "|env=|" in case_id:  # the node's own settings: the file is NCCL's own layout, nothing more
        assert f["ring"] == n["ring"] and f["connect"] == n["connect"]


def test_pxn_disable_on_a_vm_the_file_turns_ring_ll128_back_on():
    data = expected()["cases"]
    key = "cloud-vm-flat|N=2|gdr=1|hca=rails|env=NCCL_PXN_DISABLE=1|graph="
    assert "LL128" not in data[key + "nccl"]["protocols"]["ring"]
    assert data[key + "file"]["protocols"]["ring"] == ["LL", "LL128", "Simple"]
    assert data[key + "file"]["tuning_allreduce"]["ring"][1] == 156.59
