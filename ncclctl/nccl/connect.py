"""How NCCL joins the channels of each node into rings and trees across nodes (``src/graph/connect.cc``,
``trees.cc``, ``rings.cc``, and the steps of ``init.cc`` around them), for N identical nodes.

Every node runs the same search on the same hardware, so node ``k``'s graphs are node 0's with ranks shifted by
``k * G`` (rank = node * G + local rank, G GPUs per node). :func:`connect` then does what each rank's
``ncclTopoPreset`` and ``ncclTopoPostset`` do:

* rings: channel c of node n receives on its first GPU from the previous node's last GPU of channel c; with
  ``crossNic == 2`` (NCCL pairs NICs: channel c enters on NIC a and leaves on NIC b, channel c^1 the other way)
  odd nodes swap channels c and c^1 ("Alternate rings to avoid crossing rails", from NCCL 2.20.3), so the NIC
  node k sends on is the NIC node k+1 receives on;
* trees: NCCL's double binary tree over nodes (``ncclGetDtree``: a binary tree and its mirror, or a shifted
  copy for an odd node count), each node's channel chain hanging from the GPU the tree pattern says;
* channel counts: every search channel becomes two (the second tree), sm90+ multi-node jobs double again while
  the ring's ``bwIntra`` is over 45 GB/s and there are fewer than 16, then ``NCCL_MIN/MAX_NCHANNELS``
  (``NCCL_MIN/MAX_NRINGS``) and ``NCCL_MIN/MAX_CTAS`` apply.

Not modelled (stated in :attr:`Connected.caveats`, never guessed): CollNet and NVLS channels, networks with a
device-side unpack (GPUDirect TCPX; the IB and socket plugins are host networks), ``NCCL_WORK_ARGS_BYTES``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ncclctl.nccl.search import PATTERN_SPLIT_TREE, PATTERN_TREE, Graph, NcclFailure
from ncclctl.nccl.system import MAXCHANNELS, Params
from ncclctl.nccl.version import Version

#: ``NCCL_MAX_TREE_ARITY``.
MAX_TREE_ARITY = 3
#: ``NCCL_CONFIG_UNDEF_INT`` (INT_MIN).
CONFIG_UNDEF_INT = -(1 << 31)
#: The release that brought the odd-node ring alternation (and crossNic=2 NIC pairs): NCCL 2.20.3
#: (NVIDIA/nccl b6475625, "Add support for alternating rings, allow for cross-nic rings without cross-rail
#: communication"). Before it, every node walks its rings in the same channel order.
ALTERNATE_RINGS_SINCE = Version(2, 20, 3)


# --------------------------------------------------------------------------------------------------
# trees.cc


def btree(nranks: int, rank: int) -> tuple[int, int, int, int | None]:
    """``ncclGetBtree``: (up, down0, down1, parentChildType) of ``rank`` in NCCL's binary tree over
    ``nranks`` (parentChildType: 0 when the rank is its parent's first child, 1 its second; None for the root,
    where NCCL leaves it unset)."""
    bit = 1
    while bit < nranks:
        if bit & rank:
            break
        bit <<= 1
    if rank == 0:
        return -1, -1, (bit >> 1 if nranks > 1 else -1), None
    up = (rank ^ bit) | (bit << 1)
    if up >= nranks:
        up = rank ^ bit
    child_type = 0 if rank < up else 1
    lowbit = bit >> 1
    down0 = -1 if lowbit == 0 else rank - lowbit
    down1 = -1 if lowbit == 0 else rank + lowbit
    while down1 >= nranks:
        down1 = -1 if lowbit == 0 else rank + lowbit
        lowbit >>= 1
    return up, down0, down1, child_type


def dtree(nranks: int, rank: int) -> tuple[tuple[int, int, int, int | None], tuple[int, int, int, int | None]]:
    """``ncclGetDtree``: the two trees' (up, down0, down1, parentChildType): a binary tree, and its mirror
    (even ``nranks``) or its copy shifted by one (odd)."""
    t0 = btree(nranks, rank)
    if nranks % 2 == 1:
        shift = (rank - 1 + nranks) % nranks
        u, d0, d1, ct = btree(nranks, shift)
        t1 = (-1 if u == -1 else (u + 1) % nranks, -1 if d0 == -1 else (d0 + 1) % nranks,
              -1 if d1 == -1 else (d1 + 1) % nranks, ct)
    else:
        u, d0, d1, ct = btree(nranks, nranks - 1 - rank)
        t1 = (-1 if u == -1 else nranks - 1 - u, -1 if d0 == -1 else nranks - 1 - d0,
              -1 if d1 == -1 else nranks - 1 - d1, ct)
    return t0, t1


# --------------------------------------------------------------------------------------------------
# Channel limits (connect.cc ncclMinNchannels/ncclMaxNchannels, init.cc NCCL_MIN/MAX_CTAS)


def _int(v: int) -> int:
    from ncclctl.nccl.params import to_int

    return to_int(v)


def min_nchannels(params: Params) -> int:
    """``ncclMinNchannels``: NCCL_MIN_NRINGS, overridden by NCCL_MIN_NCHANNELS, within 0..MAXCHANNELS."""
    n = 0
    if params.get("MIN_NRINGS", -2) != -2:
        n = _int(params.get("MIN_NRINGS", -2))
    if params.get("MIN_NCHANNELS", -2) != -2:
        n = _int(params.get("MIN_NCHANNELS", -2))
    return max(0, min(n, MAXCHANNELS))


def max_nchannels(params: Params, caveats: list[str] | None = None) -> int:
    """``ncclMaxNchannels``: NCCL_MAX_NRINGS, overridden by NCCL_MAX_NCHANNELS, within 1..MAXCHANNELS."""
    n = MAXCHANNELS
    if params.get("MAX_NRINGS", -2) != -2:
        n = _int(params.get("MAX_NRINGS", -2))
    if params.get("MAX_NCHANNELS", -2) != -2:
        n = _int(params.get("MAX_NCHANNELS", -2))
    if params.str("WORK_ARGS_BYTES") not in (None, "") and caveats is not None:
        caveats.append("NCCL_WORK_ARGS_BYTES also caps the channel count (by the kernel argument size); that cap "
                       "is not modelled")
    n = min(n, MAXCHANNELS)
    return max(n, 1)


def ctas(params: Params) -> tuple[int, int]:
    """The communicator's (minCTAs, maxCTAs): defaults 1 and MAXCHANNELS, NCCL_MIN_CTAS / NCCL_MAX_CTAS when
    positive, capped at MAXCHANNELS, min no more than max."""
    lo, hi = 1, MAXCHANNELS
    v = _int(params.get("MIN_CTAS", CONFIG_UNDEF_INT))
    if v != CONFIG_UNDEF_INT and v > 0:
        lo = v
    v = _int(params.get("MAX_CTAS", CONFIG_UNDEF_INT))
    if v != CONFIG_UNDEF_INT and v > 0:
        hi = v
    lo, hi = min(lo, MAXCHANNELS), min(hi, MAXCHANNELS)
    if lo > hi:
        lo = hi
    return lo, hi


# --------------------------------------------------------------------------------------------------
# Preset / Postset


@dataclass
class _TopoRanks:
    """``struct ncclTopoRanks`` (zeroed, as init.cc's calloc leaves it)."""

    cross_nic_ring: int
    recv: list[int]
    send: list[int]
    prev: list[int]
    next: list[int]
    to_parent: list[int]
    to_child0: list[int]
    to_child1: list[int]


@dataclass
class Tree:
    """A rank's place in one tree channel (``ncclTree``): the rank above and up to three below."""
    up: int = -1
    down: list[int] = field(default_factory=lambda: [-1, -1, -1])


@dataclass
class Connected:
    """What the ranks end up with: the final channel count, each channel's ring (the order of ranks from rank 0,
    as NCCL logs ``Channel 00/16 : 0 7 6 ...``) and each rank's ring neighbours and tree links per channel."""

    n_nodes: int
    n_ranks: int
    #: Search channels both graphs share (``min(tree, ring)``), before any duplication.
    search_channels: int
    #: ``comm->nChannels`` after Postset.
    n_channels: int
    #: rings[c]: ranks in ring order from rank 0 (``ncclBuildRings``).
    rings: list[list[int]]
    #: ring_prev[c][r], ring_next[c][r].
    ring_prev: list[list[int]]
    ring_next: list[list[int]]
    #: trees[c][r]: rank r's tree links on channel c.
    trees: list[list[Tree]]
    #: Why the channel count changed, step by step (for the report).
    steps: list[str] = field(default_factory=list)
    #: Whether odd nodes walked their rings with channel pairs swapped.
    alternated: bool = False
    caveats: list[str] = field(default_factory=list)


def _shift(intra: list[int], k: int) -> list[int]:
    return [x + k for x in intra]


def connect(ring: Graph, tree: Graph, ngpus: int, nodes: int, params: Params, *, min_comp_cap: int,
            net_device_unpack: bool = False) -> Connected:
    """``ncclTopoPreset`` + ``ncclTopoPostset`` for ``nodes`` identical nodes of ``ngpus`` GPUs each, from node
    0's ring and tree graphs (ranks 0..ngpus-1). ``min_comp_cap``: the job's lowest compute capability."""
    G, N = ngpus, nodes
    R = G * N
    nch = min(ring.n_channels, tree.n_channels)
    caveats: list[str] = []
    steps = [f"{nch} search channels (min of ring {ring.n_channels} and tree {tree.n_channels})"]
    # --- Preset, every rank
    tops: list[_TopoRanks] = []
    chans: list[list[Tree]] = []  # per rank, 2*nch channels (channel c + nch is the duplicate)
    child0 = 0 if tree.pattern == PATTERN_TREE else 1
    child1 = 1 if tree.pattern == PATTERN_SPLIT_TREE else 0
    for r in range(R):
        node = r // G
        t = _TopoRanks(ring.cross_nic, *[[0] * MAXCHANNELS for _ in range(7)])
        rc = [Tree() for _ in range(nch)]
        for c in range(nch):
            ring_intra = _shift(ring.intra[c * G:(c + 1) * G], node * G)
            tree_intra = _shift(tree.intra[c * G:(c + 1) * G], node * G)
            for i in range(G):
                if ring_intra[i] == r:
                    t.recv[c] = ring_intra[0]
                    t.send[c] = ring_intra[G - 1]
                    t.prev[c] = -1 if i == 0 else ring_intra[i - 1]
                    t.next[c] = -1 if i == G - 1 else ring_intra[i + 1]
                if tree_intra[i] == r:
                    t.to_parent[c] = tree_intra[0]
                    t.to_child0[c] = tree_intra[child0]
                    t.to_child1[c] = tree_intra[child1]
                    rc[c].up = -1 if i == 0 else tree_intra[i - 1]
                    rc[c].down[0] = -1 if i == G - 1 else tree_intra[i + 1]
        chans.append(rc + [Tree(x.up, x.down[:]) for x in rc])
        tops.append(t)
    # nodes, as init.cc finds them (by the first rank of ring channel 0)
    first_ranks: list[int] = []
    rank_to_node = []
    for r in range(R):
        fr = tops[r].recv[0]
        if fr not in first_ranks:
            first_ranks.append(fr)
        rank_to_node.append(first_ranks.index(fr))
    n_nodes = len(first_ranks)
    node_first = [next(r for r in range(R) if rank_to_node[r] == n) for n in range(n_nodes)]
    # --- Postset
    alternate = params.version >= ALTERNATE_RINGS_SINCE
    alternated = False
    for r in range(R):
        if alternate and tops[r].cross_nic_ring == 2 and nch % 2 == 0 and rank_to_node[r] % 2 == 1:
            alternated = True
            t = tops[r]
            for c in range(0, nch, 2):
                for arr in (t.recv, t.send, t.prev, t.next):
                    arr[c], arr[c ^ 1] = arr[c ^ 1], arr[c]
    if alternated:
        steps.append("odd nodes walk channel pairs (c, c^1) swapped (crossNic=2: each node receives on the NIC "
                     "the previous node sent on)")
    ring_prev = [[tops[r].prev[c] for r in range(R)] for c in range(nch)]
    ring_next = [[tops[r].next[c] for r in range(R)] for c in range(nch)]
    for c in range(nch):
        recv = [tops[node_first[n]].recv[c] for n in range(n_nodes)]
        send = [tops[node_first[n]].send[c] for n in range(n_nodes)]
        for n in range(n_nodes):
            ring_prev[c][recv[n]] = send[(n - 1 + n_nodes) % n_nodes]
            ring_next[c][send[n]] = recv[(n + 1) % n_nodes]
    # connectTrees
    for r in range(R):
        node = rank_to_node[r]
        (t0u, t0d0, t0d1, t0ct), (t1u, t1d0, t1d1, t1ct) = dtree(n_nodes, node)
        t0ct = 0 if t0ct is None else t0ct
        t1ct = 0 if t1ct is None else t1ct
        for c in range(nch):
            ttp = [tops[node_first[n]].to_parent[c] for n in range(n_nodes)]
            ttc0 = [tops[node_first[n]].to_child0[c] for n in range(n_nodes)]
            ttc1 = [tops[node_first[n]].to_child1[c] for n in range(n_nodes)]
            ch0, ch1 = chans[r][c], chans[r][c + nch]
            if r == ttp[node]:
                if t0u != -1:
                    ch0.up = (ttc0 if t0ct == 0 else ttc1)[t0u]
                if t1u != -1:
                    ch1.up = (ttc0 if t1ct == 0 else ttc1)[t1u]
            if r == ttc0[node]:
                _set_down(ch0, ttp, t0d0)
                _set_down(ch1, ttp, t1d0)
            if r == ttc1[node]:
                _set_down(ch0, ttp, t0d1)
                _set_down(ch1, ttp, t1d1)
    # duplicate for the second tree
    ring_prev = ring_prev + [p[:] for p in ring_prev]
    ring_next = ring_next + [p[:] for p in ring_next]
    n = min(MAXCHANNELS, nch * 2)
    trees = [[chans[r][c] for r in range(R)] for c in range(2 * nch)]
    steps.append(f"{n} channels: each search channel twice (the double binary tree's second tree)")

    def copy_channels(start: int, end: int) -> int:
        c = start
        while c < end:
            src = c - start
            if c < len(ring_prev):
                ring_prev[c], ring_next[c], trees[c] = ring_prev[src][:], ring_next[src][:], trees[src][:]
            else:
                ring_prev.append(ring_prev[src][:])
                ring_next.append(ring_next[src][:])
                trees.append(trees[src][:])
            c += 1
        return c

    if min_comp_cap >= 90 and n_nodes > 1 and ring.bw_intra > 45.0 and n < 16:
        n = copy_channels(n, 2 * n)
        steps.append(f"{n} channels: sm{min_comp_cap} across nodes with ring bwIntra {ring.bw_intra:g} > 45 GB/s "
                     "and fewer than 16 channels (4 compute channels per search channel)")
    if net_device_unpack and n_nodes > 1 and n < 16 and params.get("UNPACK_DOUBLE_NCHANNELS", 1):
        n = copy_channels(n, 2 * n)
        steps.append(f"{n} channels: device-unpack network across nodes")
    lo, hi = ctas(params)
    cap = min(min(max_nchannels(params, caveats), n), hi)
    if cap != n:
        steps.append(f"{cap} channels: NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS")
    n = cap
    floor = max(min_nchannels(params), lo)
    m = copy_channels(n, floor)
    if m != n:
        steps.append(f"{m} channels: NCCL_MIN_NCHANNELS / NCCL_MIN_CTAS (the first {n} repeated)")
    n = m
    rings = [build_ring(ring_next[c], 0, R, c) for c in range(n)]
    return Connected(n_nodes=n_nodes, n_ranks=R, search_channels=nch, n_channels=n, rings=rings,
                     ring_prev=ring_prev[:n], ring_next=ring_next[:n], trees=trees[:n], steps=steps,
                     alternated=alternated, caveats=caveats)


def _set_down(tree: Tree, indexes: list[int], d: int) -> None:
    """``setTreeDown``."""
    if d == -1:
        return
    for x in range(MAX_TREE_ARITY):
        if tree.down[x] < 0:
            tree.down[x] = indexes[d]
            return
    raise NcclFailure(f"Internal error : tree already has {MAX_TREE_ARITY} children "
                      f"({tree.down[0]} {tree.down[1]} {tree.down[2]})")


def build_ring(next_: list[int], rank: int, nranks: int, c: int) -> list[int]:
    """``ncclBuildRings`` for one channel: the ranks from ``rank`` following ``next``; NCCL's init fails when the
    ring does not come back or misses a rank."""
    out = []
    cur = rank
    seen = set()
    for _ in range(nranks):
        seen.add(cur)
        out.append(cur)
        if not 0 <= cur < nranks:
            raise NcclFailure(f"Error : ring {c} goes to rank {cur}, outside the communicator")
        cur = next_[cur]
    if cur != rank:
        raise NcclFailure(f"Error : ring {c} does not loop back to start ({cur} != {rank})")
    for i in range(nranks):
        if i not in seen:
            raise NcclFailure(f"Error : ring {c} does not contain rank {i}")
    return out
