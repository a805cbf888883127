"""Two of NCCL's layouts for one node and one set of settings, compared: what a graph file loses against NCCL's own
search (``rings graph`` writes no file that loses; ``rings validate --env`` reports one that does, NTG034).

NCCL's tuning credits a ring across two nodes with its intra-node speed (tuning.cc), so a file of more channels over a
slower NIC path can score higher in the tuning model while carrying less: the comparison is channels x the speed each
channel carries end to end, the path types at the NICs and inside the node, and the protocols the tuning leaves on.
"""

from __future__ import annotations

from typing import Any


def cross_nic_zero(env: dict[str, str]) -> bool:
    """NCCL_CROSS_NIC=0 as NCCL_PARAM reads it (strtoll: '0', '00', ' 0')."""
    from ncclctl.nccl.system import Params

    return Params(env=dict(env)).get("CROSS_NIC", 2) == 0


def per_channel(g: Any) -> float:
    """Channels x the bandwidth each carries end to end (the slower of the intra- and inter-node speed)."""
    return g.n_channels * min(g.bw_intra, g.bw_inter)


def protocols(pred: Any) -> set[str]:
    """``algo/proto`` pairs NCCL's tuning leaves on for AllReduce."""
    return {f"{a}/{p}" for a, protos in pred.graphs["allreduce"].items() for p, v in protos.items() if v["enabled"]}


def losses(loaded: Any, own: Any) -> list[str]:
    """Where ``loaded`` (a prediction with a graph file) does worse than ``own`` (NCCL's own search, same settings):
    ring and tree channels x bandwidth, path types at the NICs and inside the node, protocols turned off."""
    from ncclctl.nccl.search import _type_str

    out = []
    for kind in ("ring", "tree"):
        f, o = getattr(loaded, kind), getattr(own, kind)
        if f is None or o is None:
            continue
        if per_channel(f) < per_channel(o) * 0.999:
            out.append(f"{kind} {f.n_channels} x {min(f.bw_intra, f.bw_inter):g} GB/s against NCCL's own "
                       f"{o.n_channels} x {min(o.bw_intra, o.bw_inter):g}")
        if f.type_inter > o.type_inter and loaded.system.inter:
            out.append(f"{kind} {_type_str(f.type_inter)} at the NICs against NCCL's own {_type_str(o.type_inter)}")
        if f.type_intra > o.type_intra:
            out.append(f"{kind} {_type_str(f.type_intra)} inside the node against NCCL's own "
                       f"{_type_str(o.type_intra)}")
    if loaded.graphs and own.graphs:
        lost = protocols(own) - protocols(loaded)
        if lost:
            out.append(", ".join(sorted(lost)) + " off")
    return out


__all__ = ["cross_nic_zero", "losses", "per_channel", "protocols"]
