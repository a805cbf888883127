"""Access to NCCL 2.30.7's own results (tests/data/nccl_expected/2.30.7.json) and the model run on the same input.

Shared by the tests of the NCCL model (paths, search, connect, tuning, topo predict)."""

from __future__ import annotations

import functools
import json

from conftest import HOSTS, REPO

DATA = REPO / "tests" / "data" / "nccl_expected" / "2.30.7.json"


@functools.lru_cache(maxsize=1)
def expected() -> dict:
    return json.loads(DATA.read_text())


def cases(graph: str | None = "nccl") -> list[str]:
    return sorted(k for k in expected()["cases"] if graph is None or k.endswith(f"|graph={graph}"))


@functools.lru_cache(maxsize=None)
def topo_xml(fixture: str) -> bytes:
    """What `ncclctl topo generate` writes for a fixture key (``name`` or ``name/profile=P``)."""
    from ncclctl.probe import probe
    from ncclctl.nccl.detect import generate_for

    name, _, profile = fixture.partition("/profile=")
    return generate_for(probe(str(HOSTS / name)), profile=profile or None)[0]


def case_env(case: dict) -> dict[str, str]:
    inp = case["input"]
    env = dict(inp.get("env") or {})
    if inp.get("NCCL_IB_HCA") is not None:
        env["NCCL_IB_HCA"] = inp["NCCL_IB_HCA"]
    return env


def model_system(case_id: str):
    """(case, Built, System) with NCCL's pipeline up to the trimmed, recomputed paths."""
    from ncclctl.nccl.build import Plugin, build
    from ncclctl.nccl.paths import compute_paths, trim_system
    from ncclctl.nccl.system import GPU, Params
    from ncclctl.nccl.xml import parse_nccl_xml

    case = expected()["cases"][case_id]
    inp = case["input"]
    root = parse_nccl_xml(topo_xml(inp["fixture"])).root
    built = build(root, Params(env=case_env(case)), Plugin(gdr=bool(inp["gdr"])))
    sysm = built.system
    compute_paths(sysm)
    trim_system(sysm, inp["nodes"] * len(sysm.nodes[GPU]))
    compute_paths(sysm)
    return case, built, sysm


def assert_paths_like_nccl(sysm, case: dict) -> None:
    """The model's GPU order, GPU-GPU and GPU-NET paths, GPUDirect RDMA decisions and the NETs each GPU uses across
    channels against NCCL's recorded ``case`` (the keys a case does not record are not checked)."""
    from ncclctl.nccl.paths import check_gdr, get_local_net, path_str
    from ncclctl.nccl.system import GPU, MAXCHANNELS, NET

    nets = sysm.nodes[NET]
    by_dev = {g.dev: g for g in sysm.nodes[GPU]}
    assert [g.dev for g in sysm.nodes[GPU]] == case["gpus"]
    for dev, row in case["gpu_gpu"].items():
        g = by_dev[int(dev)]
        assert [path_str(g.paths[GPU][sysm.index(by_dev[d])]) for d in case["gpus"]] == row, f"GPU {dev}"
    for dev, row in case.get("gpu_net", {}).items():
        assert [path_str(p) for p in by_dev[int(dev)].paths[NET]] == row, f"GPU {dev}"
    for dev, row in case.get("gdr", {}).items():
        g = by_dev[int(dev)]
        mine = [f"{check_gdr(sysm, g.rank, n, 1)[0]}{check_gdr(sysm, g.rank, n, 0)[0]}" for n in range(len(nets))]
        assert mine == row, f"GPU {dev}"
    for dev, names in case.get("local_nets", {}).items():
        g = by_dev[int(dev)]
        used: list[str] = []
        for c in range(MAXCHANNELS):
            n = get_local_net(sysm, g.rank, c)
            if n < 0 or (c and nets[n].name == used[0]):
                break
            used.append(nets[n].name)
        assert used == names, f"GPU {dev}"
