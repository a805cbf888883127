"""Which algorithms and protocols NCCL enables, and the bandwidth its tuning model gives each
(``src/graph/tuning.cc``, ``ncclTopoTuneModel``, NCCL 2.30.7), for ring and tree AllReduce.

NCCL picks an algorithm and protocol per collective call by comparing ``latency + size / bandwidth`` between the
enabled ones. The bandwidth is the search's per-channel bandwidth (``bwIntra`` on 1-2 nodes, ``bwInter`` beyond)
times the channel count, capped per protocol, and turned into an algorithm bandwidth. LL128 is only on by default
where NCCL trusts it: from sm90 up to PXN network paths (below sm90 up to PXB), NVLink or NVB inside the node,
GPUs of one architecture (or all sm90+), never below sm70 (``NCCL_LL128_C2C=0`` moves sm90 back to PXB).
``NCCL_PROTO`` and ``NCCL_ALGO`` (``parseList``) override: naming LL128 forces it on, excluding turns it off.

Not modelled (a caveat, never a guess): NVLS, CollNet and PAT bandwidths (they are not ring/tree), the CUDA 11.8
ring LL128 exception on sm90 with two ranks (pass ``cuda_11_8=True``), tuner plugins.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ncclctl.nccl.search import PATTERN_TREE, Graph, NcclFailure
from ncclctl.nccl.system import (CPU_VENDOR_AMD, CPU_VENDOR_MIXED, PATH_NVB, PATH_PXB, PATH_PXN, PATH_TYPE_STR,
                                 Params, f32)
from ncclctl.nccl.version import Version

FUNCS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
ALGOS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
PROTOS = ("LL", "LL128", "Simple")
ALLREDUCE = 4
TREE, RING = 0, 1
LL, LL128, SIMPLE = 0, 1, 2

# tunerConstants defaults (tuning.cc ncclTunerConstantsDefaults): [compCapIndex or cpu index][nodes index]
LL_MAX_BWS = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (2 * 141.0, 2 * 45.0, 2 * 35.0))
PER_CH_MAX_RING_LL128_BWS = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (40.0, 40.0, 40.0))
PER_CH_MAX_TREE_LL128_BWS = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
PER_CH_MAX_TREE_BWS = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))

#: ``parseList`` with function prefixes exists from 2.24 (before: a flat list, unknown names skipped).
PARSE_LIST_SINCE = Version(2, 24, 0)


def comp_cap_index(sm: int) -> int:
    """``NCCL_VOLTA/AMPERE/HOPPER/BLACKWELL_COMPCAP_IDX``."""
    return 3 if sm >= 100 else 2 if sm >= 90 else 1 if sm >= 80 else 0


# --------------------------------------------------------------------------------------------------
# NCCL_PROTO / NCCL_ALGO


def _strtok(s: str, delims: str) -> list[tuple[int, str]]:
    """C ``strtok``: the non-empty runs between delimiters, with their offsets."""
    out, i, n = [], 0, len(s)
    while i < n:
        while i < n and s[i] in delims:
            i += 1
        if i >= n:
            break
        j = i
        while j < n and s[j] not in delims:
            j += 1
        out.append((i, s[i:j]))
        i = j
    return out


def parse_list(value: str, prefixes: tuple[str, ...], elems: tuple[str, ...], table: list[list[int]],
               *, what: str = "NCCL_PROTO") -> None:
    """``parseList`` (tuning.cc): apply ``value`` (``[func:][^]e1,e2;func:[^]e3...``) to ``table[prefix][elem]``
    as NCCL does; what NCCL rejects (``ncclInvalidUsage``: communicator init fails) raises :class:`NcclFailure`."""
    for pos, full in _strtok(value, ";"):
        parts = [t for _, t in _strtok(full, ":")]
        if not parts:
            raise NcclFailure(f"{what}={value!r}: the entry {full!r} is only ':'; NCCL reads a NULL list here and "
                              "crashes", fix="write [function:]list, e.g. allreduce:^LL128")
        prefix: str | None = parts[0]
        elem_list = parts[1] if len(parts) > 1 else None
        if elem_list is None:
            if pos != 0:
                raise NcclFailure(f'All entries except the first must have a prefix: "{value}"',
                                  fix=f"put the entry without a function first in {what}, or give it one")
            elem_list, prefix = prefix, None
        assert elem_list is not None
        if elem_list.startswith("^"):
            unset, set_ = 1, 0
            elem_list = elem_list[1:]
        else:
            unset, set_ = 0, 1
        found = False
        for p, name in enumerate(prefixes):
            if prefix is not None and prefix.lower() != name.lower():
                continue
            found = True
            row = table[p]
            for e in range(len(elems)):
                row[e] = unset
            for _, elem in _strtok(elem_list, ","):
                for e, ename in enumerate(elems):
                    if elem.lower() == ename.lower():
                        row[e] = set_
                        break
                else:
                    raise NcclFailure(f'Unrecognized element token "{elem}" when parsing "{value}"',
                                      fix=f"{what} names: {', '.join(elems)}")
        if not found:
            raise NcclFailure(f'Unrecognized prefix token "{prefix}" when parsing "{value}"',
                              fix=f"functions: {', '.join(prefixes)}")


# --------------------------------------------------------------------------------------------------
# The model


@dataclass
class Tuning:
    """AllReduce per algorithm (``tree``, ``ring``) and protocol (``[LL, LL128, Simple]``): the bandwidth NCCL's
    model gives (GB/s of algorithm bandwidth, 0 when disabled) and whether the protocol is enabled, with why not."""

    bandwidth: dict[str, list[float]]
    enabled: dict[str, list[bool]]
    #: (algo, proto) -> why NCCL turns it off.
    why_off: dict[tuple[str, str], str] = field(default_factory=dict)
    caveats: list[str] = field(default_factory=list)

    def best(self) -> tuple[str, str, float]:
        """The highest bandwidth (what NCCL uses for large messages)."""
        best = ("", "", 0.0)
        for a in ("tree", "ring"):
            for p, bw in zip(PROTOS, self.bandwidth[a]):
                if bw > best[2]:
                    best = (a, p, bw)
        return best


def ll128_off_reason(type_intra: int, type_inter: int, min_comp_cap: int, max_comp_cap: int,
                     ll128_c2c: int = 1) -> str:
    """Why ``tuning.cc`` leaves LL128 off by default for a graph ("" when it is on): sm90+ allows network paths up
    to PXN (``NCCL_LL128_C2C=0``: PXB), older GPUs up to PXB; intra-node paths up to NVB; one architecture or all
    sm90+; sm70 or newer."""
    if ll128_c2c and min_comp_cap >= 90:
        if type_inter > PATH_PXN:
            return (f"network path {PATH_TYPE_STR[type_inter]} is beyond PXN (sm{min_comp_cap} allows LL128 up to "
                    "PXN)")
    elif type_inter > PATH_PXB:
        limit = "NCCL_LL128_C2C=0" if min_comp_cap >= 90 else f"sm{min_comp_cap}"
        return f"network path {PATH_TYPE_STR[type_inter]} is beyond PXB ({limit} allows LL128 up to PXB)"
    if type_intra > PATH_NVB:
        return f"intra-node path {PATH_TYPE_STR[type_intra]} is beyond NVB"
    if not (min_comp_cap == max_comp_cap or min_comp_cap >= 90):
        return f"GPUs of different architectures (sm{min_comp_cap} and sm{max_comp_cap})"
    if min_comp_cap < 70:
        return f"sm{min_comp_cap} is below sm70"
    return ""


def tune(ring: Graph, tree: Graph, *, n_nodes: int, n_ranks: int, min_comp_cap: int, max_comp_cap: int,
         cpu_vendor: int, params: Params, cuda_11_8: bool = False) -> Tuning:
    """``ncclTopoTuneModel`` for AllReduce with the ring and tree graphs as ``init.cc`` passes them (after the
    all-gather alignment: for identical nodes, the graphs as searched). ``cpu_vendor``: the CPU vendor of the
    nodes (multi-node LL bandwidth depends on it)."""
    caveats: list[str] = []
    bandwidth = {"tree": [0.0, 0.0, 0.0], "ring": [0.0, 0.0, 0.0]}
    enabled = {"tree": [True, True, True], "ring": [True, True, True]}
    why: dict[tuple[str, str], str] = {}
    if params.version < PARSE_LIST_SINCE and (params.str("PROTO") or params.str("ALGO")):
        caveats.append(f"NCCL {params.version} reads NCCL_PROTO/NCCL_ALGO as a flat list: read here as 2.24+ does")
    if n_ranks <= 1:
        for name in bandwidth:
            enabled[name] = [False, False, False]
        why[("all", "all")] = "one rank: no collective algorithm runs"
        return Tuning(bandwidth, enabled, why, caveats)
    cci = comp_cap_index(min_comp_cap)
    index2 = n_nodes - 1 if n_nodes <= 2 else 2
    index1 = cci if n_nodes == 1 else (1 if cpu_vendor in (CPU_VENDOR_AMD, CPU_VENDOR_MIXED) else 0)
    ll_max_bw = LL_MAX_BWS[index1][index2]
    per_ch_tree = PER_CH_MAX_TREE_BWS[cci][index2]
    per_ch_ring_ll128 = PER_CH_MAX_RING_LL128_BWS[cci][index2]
    per_ch_tree_ll128 = PER_CH_MAX_TREE_LL128_BWS[cci][index2]
    nsteps = 2 * (n_ranks - 1)
    graphs = {TREE: tree, RING: ring}
    max_tree_pattern = tree.pattern
    for a, g in graphs.items():
        for p in (LL, LL128, SIMPLE):
            bw = g.bw_intra if n_nodes <= 2 else g.bw_inter
            bus = f32(g.n_channels * bw)
            if a == RING and p == LL:
                bus = f32(min(ll_max_bw, bus * .5))
            if a == RING and p == LL128:
                bus = f32(min(bus * 0.92, g.n_channels * per_ch_ring_ll128))
            if a == TREE:
                bus = f32(min(bus * .92, g.n_channels * per_ch_tree))
            if a == TREE and p == LL:
                bus = f32(min(bus * 1.0 / 3.8, ll_max_bw))
            if a == TREE and p == LL128:
                bus = f32(min(bus * (7.0 / 9.0 if n_nodes == 1 else 120.0 / 128.0), g.n_channels * per_ch_tree_ll128))
            if a == TREE and max_tree_pattern == PATTERN_TREE:
                bus = f32(bus * .85)
            ratio = f32(1.0 * (n_ranks / nsteps)) if a == RING else f32(.5)
            bandwidth[ALGOS[a].lower()][p] = f32(bus * ratio)
    # Protocols/algorithms enabled, user overrides
    proto = [[2 if p == LL128 else 1 for p in range(3)] for _ in FUNCS]
    algo = [[1] * len(ALGOS) for _ in FUNCS]
    s = params.str("PROTO")
    if s is not None:
        parse_list(s, FUNCS, PROTOS, proto, what="NCCL_PROTO")
    s = params.str("ALGO")
    if s is not None:
        parse_list(s, FUNCS, ALGOS, algo, what="NCCL_ALGO")
    ll128_c2c = params.get("LL128_C2C", 1)
    for a, g in graphs.items():
        name = ALGOS[a].lower()
        for p in (LL, LL128, SIMPLE):
            pe = proto[ALLREDUCE][p]
            reason = ""
            if pe == 0:
                reason = "excluded by NCCL_PROTO"
            if pe == 2 and p == LL128:
                reason = ll128_off_reason(g.type_intra, g.type_inter, min_comp_cap, max_comp_cap, ll128_c2c)
                pe = 0 if reason else 1
                if pe and min_comp_cap == 90 and cuda_11_8 and a == RING and n_ranks == 2:
                    pe, reason = 0, "CUDA 11.8 on sm90 with two ranks (ring)"
            if algo[ALLREDUCE][a] == 0:
                pe, reason = 0, reason or "excluded by NCCL_ALGO"
            if pe == 0:
                bandwidth[name][p] = 0.0
                enabled[name][p] = False
                why[(name, PROTOS[p])] = reason
    return Tuning(bandwidth, enabled, why, caveats)
