"""NCCL's channel search (``src/graph/search.cc``) and the ``topo.cc`` queries it uses, as Python.

Read side by side with NCCL 2.30.7 (commit 5067397c): every function here is named after the NCCL function it
ports (``ncclTopoCompute`` is :func:`compute`, ``ncclTopoSearchRecGpu`` is ``_Search.rec_gpu``...), keeps its
control flow (the ``goto search``/``goto done`` passes of ``ncclTopoCompute`` are a loop over the same states) and
its arithmetic: bandwidths are C ``float`` (:func:`~ncclctl.nccl.system.f32` after every operation NCCL does in
single precision, ``SUB_ROUND`` included), ``int`` truncations where NCCL assigns a float to an int, and the
search budget is NCCL's own (``NCCL_SEARCH_TIMEOUT`` steps per search, ``NCCL_SEARCH_GLOBAL_TIMEOUT`` in all),
counted in the same recursion steps, so a search that times out in NCCL times out here at the same point and
the result is the same graph.

One file on purpose (1,500 lines): it mirrors ``search.cc`` function for function, so that a diff of a new NCCL
release's ``search.cc`` maps onto one place here; splitting it along other lines would lose that.

Inputs: a :class:`~ncclctl.nccl.system.System` with its paths computed (:mod:`ncclctl.nccl.paths`, after
``ncclTopoTrimSystem``), then :func:`search_init` (``ncclTopoSearchInit``). :func:`compute` fills a
:class:`Graph` like ``ncclTopoCompute``; :func:`ring_and_tree` runs the two searches ``init.cc`` runs.

Not modelled (an explicit :class:`NotModelled` is raised, never a guess): the NVLS and CollNet Direct patterns
(``ncclTopoSearchTryNvls``/``ncclTopoSearchTryCollnetDirect``), graphs with ``collNet`` set, and input that makes
NCCL read or write past its arrays (undefined behaviour). Search behaviour is 2.30.7's; the rail/plane checks of
``ncclTopoSearchCheckNet`` are gated on the release (they came with 2.30.7), earlier releases' searches differ in
more ways than that (see :data:`SEARCH_MODEL_SINCE`).
"""

from __future__ import annotations

import math
import sys
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Sequence

from ncclctl.errors import ExitCode, NcclctlError
from ncclctl.nccl.paths import cpu_type, netdevs_policy
from ncclctl.nccl.system import (
    CPU, CPU_ARCH_POWER, CPU_ARCH_X86, CPU_VENDOR_AMD, CPU_VENDOR_INTEL, DEV, GPU, LINK_NVL, LINK_PCI, LOC_BW,
    MAXCHANNELS, NET, NVS, PATH_DIS, PATH_LOC, PATH_NVB, PATH_NVL, PATH_P2C, PATH_PHB, PATH_PIX, PATH_PXB,
    PATH_PXN, PATH_SYS, PATH_TYPE_STR, UNDEF, Link, Node, Path, System, f32,
)
from ncclctl.nccl.version import Version

if TYPE_CHECKING:
    from ncclctl.nccl.xml import XmlNode

# --------------------------------------------------------------------------------------------------
# Markers


class NotModelled(NcclctlError):
    """NCCL would do something this model does not follow (NVLS, CollNet, MNNVL, undefined behaviour): the
    message says what. Never a guess."""

    exit_code = ExitCode.UNAVAILABLE


class NcclFailure(NcclctlError):
    """NCCL itself fails here (its communicator init returns an error, or it crashes): the message says why,
    with NCCL's own log line where it prints one."""

    exit_code = ExitCode.INVALID_INPUT


# --------------------------------------------------------------------------------------------------
# Constants (graph.h, search.cc)

PATTERN_BALANCED_TREE, PATTERN_SPLIT_TREE, PATTERN_TREE, PATTERN_RING, PATTERN_NVLS, PATTERN_COLLNET_DIRECT = \
    1, 2, 3, 4, 5, 6
PATTERN_NAMES = {1: "BALANCED_TREE", 2: "SPLIT_TREE", 3: "TREE", 4: "RING", 5: "NVLS", 6: "COLLNET_DIRECT"}
_TREES = (PATTERN_BALANCED_TREE, PATTERN_TREE, PATTERN_SPLIT_TREE)

NCCL_TOPO_MAX_NODES = 640
SEARCH_GLOBAL_TIMEOUT = 1 << 19
SEARCH_TIMEOUT = 1 << 14
SEARCH_TIMEOUT_TREE = 1 << 14
SEARCH_TIMEOUT_SAMECHANNELS = 1 << 8
FORCED_ORDER_PCI, FORCED_ORDER_REPLAY = 1, 2

#: ``NCCL_GRAPH_XML_VERSION``.
GRAPH_XML_VERSION = 1

#: The speeds NCCL tries, GB/s per channel, as C floats (``speedArrayIntra``... in search.cc).
SPEED_INTRA = tuple(f32(x) for x in (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0))
SPEED_INTER = tuple(f32(x) for x in (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0,
                                     4.0, 3.0, 2.4, 1.2, 0.24, 0.12))
SM90_SPEED_INTRA = tuple(f32(x) for x in (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0))
SM90_SPEED_INTER = tuple(f32(x) for x in (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                                          3.0, 2.4, 1.2, 0.24, 0.12))
SM100_SPEED_INTRA = tuple(f32(x) for x in (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0,
                                           18.0))
SM100_SPEED_INTER = tuple(f32(x) for x in (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                           15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12))

#: ``kvDictLinkType`` (search.cc): the path types a graph file may name. C2C, NET and DIS are missing from it:
#: NCCL reads them as LOC (the dictionary's fallback) and cannot write them (``ncclTopoGetXmlFromGraphs`` fails).
LINK_TYPE_DICT: tuple[tuple[str, int], ...] = (
    ("LOC", PATH_LOC), ("NVL", PATH_NVL), ("NVB", PATH_NVB), ("PIX", PATH_PIX), ("PXB", PATH_PXB),
    ("P2C", PATH_P2C), ("PXN", PATH_PXN), ("PHB", PATH_PHB), ("SYS", PATH_SYS),
)

#: The search code modelled is 2.30.7's. ``crossNic=2`` (NIC pairs, odd channels forced onto the previous
#: channel's NICs) exists from 2.20.3; the rail/plane checks of ``ncclTopoSearchCheckNet`` from 2.30.7 (gated
#: here). Other differences of earlier searches are not modelled: :func:`version_caveats` lists them.
SEARCH_MODEL_SINCE = Version(2, 20, 3)
RAIL_AWARE_SINCE = Version(2, 30, 7)

_INT64_MASK = (1 << 64) - 1


def version_caveats(version: Version) -> list[str]:
    """What the search model cannot follow for ``version`` (empty for the releases it is exact for)."""
    if version < SEARCH_MODEL_SINCE:
        return [f"NCCL {version}'s channel search differs from 2.30.7's (no crossNic=2 NIC pairing before "
                "2.20.3, a 15% bonus to rings not crossing NICs): the channels shown are 2.30.7's"]
    return []


# --------------------------------------------------------------------------------------------------
# The graph (struct ncclTopoGraph)


class Graph:
    """``struct ncclTopoGraph``: inputs ``id``, ``pattern``, ``cross_nic``, ``coll_net``, ``min_channels``,
    ``max_channels``; outputs the rest. ``intra[c * ngpus + i]`` is the rank of the i-th GPU of channel c,
    ``inter[2c]``/``inter[2c + 1]`` the NET ids the channel enters and leaves by (multi-node only)."""

    __slots__ = ("id", "pattern", "cross_nic", "coll_net", "min_channels", "max_channels", "n_channels",
                 "bw_intra", "bw_inter", "latency_inter", "type_intra", "type_inter", "same_channels", "n_hops",
                 "intra", "inter")

    def __init__(self, id: int = 0, pattern: int = PATTERN_RING, min_channels: int = 1,
                 max_channels: int = MAXCHANNELS // 2, coll_net: int = 0) -> None:
        self.id = id
        self.pattern = pattern
        self.cross_nic = 0
        self.coll_net = coll_net
        self.min_channels = min_channels
        self.max_channels = max_channels
        self.n_channels = 0
        self.bw_intra = 0.0
        self.bw_inter = 0.0
        self.latency_inter = 0.0
        self.type_intra = 0
        self.type_inter = 0
        self.same_channels = 0
        self.n_hops = 0
        self.intra: list[int] = []
        self.inter: list[int] = [0] * (MAXCHANNELS * 2)

    def copy(self) -> "Graph":
        g = Graph.__new__(Graph)
        g.copy_from(self)
        return g

    def copy_from(self, o: "Graph") -> None:
        """``memcpy(this, o, sizeof(struct ncclTopoGraph))``."""
        self.id, self.pattern, self.cross_nic, self.coll_net = o.id, o.pattern, o.cross_nic, o.coll_net
        self.min_channels, self.max_channels, self.n_channels = o.min_channels, o.max_channels, o.n_channels
        self.bw_intra, self.bw_inter, self.latency_inter = o.bw_intra, o.bw_inter, o.latency_inter
        self.type_intra, self.type_inter = o.type_intra, o.type_inter
        self.same_channels, self.n_hops = o.same_channels, o.n_hops
        self.intra = o.intra[:]
        self.inter = o.inter[:]

    def ensure(self, ngpus: int) -> None:
        """Room for MAXCHANNELS channels of ``ngpus`` ranks (NCCL's arrays are fixed-size and zeroed)."""
        need = MAXCHANNELS * max(ngpus, 1)
        if len(self.intra) < need:
            self.intra.extend([0] * (need - len(self.intra)))

    def channel(self, c: int, ngpus: int) -> list[int]:
        return self.intra[c * ngpus:(c + 1) * ngpus]

    def channels(self, ngpus: int) -> list[list[int]]:
        return [self.channel(c, ngpus) for c in range(self.n_channels)]

    def nets(self, c: int) -> tuple[int, int]:
        return self.inter[2 * c], self.inter[2 * c + 1]

    @property
    def pattern_name(self) -> str:
        return PATTERN_NAMES.get(self.pattern, "?")

    def __repr__(self) -> str:
        return (f"<Graph id={self.id} {self.pattern_name} {self.n_channels}x {self.bw_intra:g}/{self.bw_inter:g} "
                f"{_type_str(self.type_intra)}/{_type_str(self.type_inter)} crossNic={self.cross_nic}>")


def _type_str(t: int) -> str:
    return PATH_TYPE_STR[t] if 0 <= t < len(PATH_TYPE_STR) else str(t)


# --------------------------------------------------------------------------------------------------
# C arithmetic helpers


def _roundf(x: float) -> float:
    """C ``roundf``: half away from zero (``x`` is a float, so ``x + 0.5`` is exact in double)."""
    return float(math.floor(x + 0.5)) if x >= 0 else -float(math.floor(-x + 0.5))


def sub_round(a: float, b: float) -> float:
    """``SUB_ROUND(a, b)``: ``a = roundf((a - b) * 1000) / 1000`` in single precision."""
    return f32(_roundf(f32(f32(a - b) * 1000.0)) / 1000.0)


#: sub_round(a, b) by b, then by a (only the pairs that invert exactly; see _sub).
_SUB_BY_B: dict[float, dict[float, float]] = {}
_BW = attrgetter("bw")
#: INTEL_P2P_OVERHEAD(bw) by bw.
_PCI_OVERHEAD: dict[float, float] = {}
#: Bandwidth operations that did not invert exactly so far (see _sub).
_DIRTY = [0]


def _sub_table(b: float) -> dict[float, float]:
    """The remembered results of taking ``b`` off a bandwidth (see :func:`_sub`), by that bandwidth."""
    t = _SUB_BY_B.get(b)
    if t is None:
        if len(_SUB_BY_B) > 1 << 12:
            _SUB_BY_B.clear()
        t = _SUB_BY_B[b] = {}
    return t


def _sub(a: float, b: float) -> float:
    """:func:`sub_round`, remembered: a search applies the same few (link bandwidth, channel bandwidth) pairs
    over and over. A pair whose result does not come back to ``a`` when ``b`` is given back is not remembered
    and counts in :data:`_DIRTY` each time it is used (the memo of search subtrees relies on exact give-backs)."""
    t = _sub_table(b)
    r = t.get(a)
    if r is None:
        r = sub_round(a, b)
        if sub_round(r, -b) != a:
            _DIRTY[0] += 1
            return r
        if len(t) > 1 << 16:
            t.clear()
        t[a] = r
    return r


#: Whole MB/s values under this (in MB/s) go through SUB_ROUND exactly (see _Search._exact_speed).
_EXACT_BELOW = 4096 * 1000


def _g(milli: int) -> float:
    """The single-precision value of ``milli`` MB/s in GB/s, as SUB_ROUND leaves it."""
    return f32(milli / 1000.0)


def _milli(x: float) -> int | None:
    """``x`` GB/s as whole MB/s, None when it is not a whole number of them."""
    m = round(x * 1000)
    return m if _g(m) == x else None


def _c_int(x: float) -> int:
    """A C float-to-int conversion (truncation toward zero)."""
    return int(x)






def _divup(x: int, y: int) -> int:
    return (x + y - 1) // y


def _system_id(node_id: int) -> int:
    """``NCCL_TOPO_ID_SYSTEM_ID`` (an arithmetic shift of the int64 id)."""
    return node_id >> 56


def _topo_id(system_id: int, local_id: int) -> int:
    """``NCCL_TOPO_ID(systemid, localid)`` as an int64."""
    v = ((system_id << 56) + (local_id & 0x00FFFFFFFFFFFFFF)) & _INT64_MASK
    return v - (1 << 64) if v >= 1 << 63 else v


# --------------------------------------------------------------------------------------------------
# topo.cc / topo.h queries the search uses


def get_comp_cap(system: System) -> tuple[int, int]:
    """``ncclTopoGetCompCap``: (min, max) compute capability over the DEV nodes."""
    devs = system.nodes[DEV]
    if not devs:
        raise NcclFailure("the topology has no GPU device (ncclTopoGetCompCap fails)")
    caps = [d.sm for d in devs]
    return min(caps), max(caps)


def gpu_path_range(system: System, type_: int) -> tuple[int, int]:
    """``ncclTopoGetGpuMinPath`` and ``ncclTopoGetGpuMaxPath`` (paths.cc): the best and worst path type from any
    GPU to any node of ``type_`` (SYS and LOC when there is none)."""
    best, worst = PATH_SYS, PATH_LOC
    for i, gpu in enumerate(system.nodes[GPU]):
        paths = gpu.paths.get(type_)
        if paths is None:
            continue
        for j in range(len(system.nodes[type_])):
            if type_ == GPU and i == j:
                continue
            best = min(best, paths[j].type)
            worst = max(worst, paths[j].type)
    return best, worst


def split_nvlink(system: System) -> bool:
    """``ncclTopoSplitNvLink`` (paths.cc): exactly two NVLink domains of more than one GPU (two sockets with
    NVLink inside each and QPI between)."""
    n = len(system.nodes[GPU])
    domain = list(range(n))
    for g, gpu in enumerate(system.nodes[GPU]):
        for p in range(g + 1, n):
            if gpu.paths[GPU][p].type == PATH_NVL:
                domain[p] = domain[g]
    counts = [0] * n
    for d in domain:
        counts[d] += 1
    return sum(1 for c in counts if c > 1) == 2


def _local_net(system: System, rank: int, channel: int) -> int:
    """``ncclTopoGetLocalNet`` as the search calls it: a GPU without any path to a NET fails NCCL's init."""
    from ncclctl.nccl.paths import get_local_net

    n = get_local_net(system, rank, channel)
    if n < 0:
        raise NcclFailure(f"Could not find any local path from gpu rank {rank} to net.")
    return n


def get_local_net_count_by_bw(system: System, gpu: int) -> tuple[int, float]:
    """``ncclTopoGetLocalNetCountByBw``: how many of its local NICs a GPU needs to match its own bandwidth to
    the CPU, and their total bandwidth."""
    from ncclctl.nccl.paths import get_local_cpu

    c = get_local_cpu(system, gpu)
    if c < 0:
        raise NcclFailure(f"Error : could not find CPU close to GPU {gpu}")
    node = system.nodes[GPU][gpu]
    gpu_bw = node.paths[CPU][c].bw
    count, total = 0, 0.0
    first = None
    for ch in range(MAXCHANNELS):
        n = _local_net(system, node.rank, ch)
        net_id = system.nodes[NET][n].id
        if ch == 0:
            first = net_id
        elif first == net_id:
            break
        total = f32(total + node.paths[NET][n].bw)
        count += 1
        if total >= gpu_bw:
            break
    return count, total


# --------------------------------------------------------------------------------------------------
# ncclTopoSearchInit


def _max_bw(system: System, dev: Node, type_: int) -> float:
    best = 0.0
    for p in dev.paths.get(type_, ())[: len(system.nodes[type_])]:
        if p.count == 0:
            continue
        best = max(best, p.bw)
    return best


def _total_bw(dev: Node) -> float:
    nvl, pci = 0.0, 0.0
    for link in dev.links:
        if link.type == LINK_NVL:
            nvl = f32(nvl + link.bw)
        if link.type == LINK_PCI:
            pci = link.bw
    return max(pci, nvl)


def search_init(system: System) -> None:
    """``ncclTopoSearchInit``: ``system.max_bw`` (the best per-channel bandwidth from a GPU device to a NET, or
    to another GPU device on a single node) and ``system.total_bw`` (a device's NVLink total, or its PCI link)."""
    system.max_bw = 0.0
    system.total_bw = 0.0
    if system.inter == 0 and len(system.nodes[GPU]) == 1:
        system.max_bw = LOC_BW
        system.total_bw = LOC_BW
        return
    for dev in system.nodes[DEV]:
        system.max_bw = max(system.max_bw, _max_bw(system, dev, NET if system.inter else DEV))
        system.total_bw = max(system.total_bw, _total_bw(dev))


# --------------------------------------------------------------------------------------------------
# The recursive search




def _prepare_path(path: Path, start: Node) -> tuple[list[tuple[Link, bool, Link | None, int]], bool]:
    """What ``followPath`` works out for a path each time, once: per link (link, is PCI, reverse link, reverse
    cost kind: 0 none, 1 ``fw / 8`` into a pre-Ampere GPU device from a non-GPU start, 2 ``fw`` into a POWER CPU
    over NVLink), and whether PCI links pay the Intel root complex overhead (a PHB path from a GPU through an
    Intel x86 CPU)."""
    overhead = False
    if path.type == PATH_PHB and start.type == GPU:
        for link in path.links:
            node = link.rem
            if node.type == CPU and node.arch == CPU_ARCH_X86 and node.vendor == CPU_VENDOR_INTEL:
                overhead = True
    steps = []
    node = start
    for link in path.links:
        rem = link.rem
        kind = 0
        if rem.type == DEV and rem.sm < 80 and start.type != GPU:
            kind = 1
        elif rem.type == CPU and rem.arch == CPU_ARCH_POWER and link.type == LINK_NVL:
            kind = 2
        rev = None
        if kind:
            rev = next((l for l in rem.links if l.rem is node and l.type == link.type), None)
        steps.append((link, link.type == LINK_PCI, rev, kind))
        node = rem
    return steps, overhead


def _follow_path(prepared: tuple[list[tuple[Link, bool, Link | None, int]], bool], max_steps: int,
                 bw: float) -> int:
    """``followPath``: take ``bw`` off the first ``max_steps`` links of a path (more on PCI links behind an
    Intel root complex, and reverse-direction costs before Ampere and on POWER NVLink); stop at the first link
    without enough left. Returns the number of links taken."""
    steps, overhead = prepared
    pci_bw = f32(f32(bw * 6) / 5) if overhead else bw  # INTEL_P2P_OVERHEAD
    for i in range(max_steps):
        link, is_pci, rev, kind = steps[i]
        fw = pci_bw if is_pci else bw
        if kind == 0:
            lb = link.bw
            if lb < fw:
                return i
            link.bw = _sub(lb, fw)
            continue
        if rev is None:
            raise NcclFailure(f"Could not find rev link for {link.rem!r}")
        rev_bw = f32(fw / 8) if kind == 1 else fw
        if link.bw < fw or (rev_bw and rev.bw < rev_bw):
            return i
        link.bw = _sub(link.bw, fw)
        if rev_bw:
            rev.bw = _sub(rev.bw, rev_bw)
    return max_steps


class _Search:
    """The state ``ncclTopoCompute`` shares with its recursive helpers, plus caches of what cannot change
    during a search (local NETs per GPU and channel, NET preference lists, GPU scores' static parts)."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.nodes = system.nodes
        self.gpus = system.nodes[GPU]
        self.nets = system.nodes[NET]
        self.ngpus = len(self.gpus)
        self.has_nvs = len(system.nodes[NVS]) > 0
        self.inter = system.inter
        self.rail_aware = system.params.version >= RAIL_AWARE_SINCE
        self.mnnvl_rail_per_host = system.params.get("MNNVL_RAIL_PER_HOST", 0)
        self.scatter = system.params.get("MNNVL_SCATTER_NETS_ENABLE", 1)
        self.n_hosts = max(1, len(system.host_hashes))
        self.gpu_index = {id(g): i for i, g in enumerate(self.gpus)}
        self.rank_index: dict[int, int] = {}
        for i, g in enumerate(self.gpus):
            self.rank_index.setdefault(g.rank, i)
        self.net_id_index: dict[int, int] = {}
        for i, n in enumerate(self.nets):
            self.net_id_index.setdefault(n.id, i)
        self._local_net: dict[tuple[int, int], int] = {}
        self._select: dict[tuple[int, int], list[int]] = {}
        self._local_gpus: dict[int, tuple[list[int], int]] = {}
        self._pci_bw: dict[int, int] = {}
        self._edges: dict[tuple[int, int, int, int], tuple] = {}
        self._sorted: dict[tuple[int, int], list[tuple[int, tuple[int, int]]]] = {}
        self._nvs_near: dict[tuple[int, int], tuple[int, ...]] = {}
        self._same_port: dict[int, list[Node]] = {}
        self.steps = 0  # recursion steps taken (diagnostics)
        self.skipped = 0  # steps charged for channel starts found in the memo
        self.copies = 0
        #: The budget left after each search (-1: stopped at the best graph possible): what steers ncclTopoCompute.
        self.budgets: list[int] = []
        #: Channel starts already searched (see _memo_try); reset for every search (a new tmp graph).
        self.memo: dict[tuple, int] | None = {} if MEMO else None
        self.links: list[Link] = [l for lst in system.nodes for n in lst for l in n.links]
        # The previous channel is read below a channel start when rings pair NICs (crossNic=2), and replayed
        # on a single node (and with sameChannels, by a forced replay, which is in the key anyway).
        self.prev_matters = False
        #: Whole searches already run this pass (see search()).
        self.searches: dict[tuple, int] = {}
        #: Searches that found nothing at a speed, by everything else in their key, with what decides whether the
        #: same search at a lower speed takes the same steps (see _slower).
        self.by_speed: dict[tuple, list[tuple]] = {}
        #: While a search records (see _slower): the bandwidths at its start (milli-GB/s by link, GB/s by NET),
        #: its tightest failed link check (O, O - left + asked), its failed NET checks (see _nets_failed).
        self.recording = False
        self._orig: dict[int, int] = {}
        self._orig_net: list[float] = []
        self.fail_link: tuple[int, int] = (0, 1)
        self.fail_nets_seen: set[tuple[int, float, int]] = set()
        self.fail_bad = False
        self._exact_speeds: dict[tuple, bool] = {}
        self._speed_ok: bool | None = None
        self.intra_types = tuple(sorted({p.type for g in self.gpus for p in g.paths.get(GPU, ())}))
        self.inter_types = tuple(sorted({p.type for g in self.gpus for p in g.paths.get(NET, ())} |
                                        {p.type for n in self.nets for p in n.paths.get(GPU, ())}))

    def search(self, graph: Graph, save: Graph, time: list[int]) -> None:
        """One search of ``ncclTopoCompute`` (``ncclTopoSearchRec`` from no channel), skipped when a search that
        behaves the same was run before in this pass without finding a better graph: same pattern, speeds,
        channel bounds, crossNic and sameChannels, path types that let the same paths through (a typeIntra
        between two path types the system has is the same as the lower one) and the same bandwidths left. It
        then ends with the same budget left, as NCCL's would."""
        key = (graph.pattern, graph.same_channels, graph.cross_nic, graph.bw_intra, graph.bw_inter,
               graph.min_channels, graph.max_channels, graph.coll_net, time[0],
               self._type_class(graph.type_intra, self.intra_types),
               self._type_class(graph.type_inter, self.inter_types), self._state(graph))
        left = self.searches.get(key) if MEMO else None
        speed = _milli(graph.bw_intra) if SPEED_MEMO and MEMO and graph.bw_intra == graph.bw_inter else None
        key2 = key[:3] + key[5:]
        if left is None and speed is not None and self.speed_ok():
            left = self._slower(key2, speed, graph)
            if left is not None:
                self.searches[key] = left
        else:
            speed = None
        if left is not None:
            self.skipped += time[0] - max(left, 0)
            time[0] = left
            self.budgets.append(left)
            return
        copies = self.copies
        self.new_search(graph)
        if speed is not None and not self._start_recording():
            speed = None
        try:
            self.rec(graph, save, time)
        finally:
            self.recording = False
        if self.copies == copies and self._state(graph) == key[-1] and time[0] >= 0:
            self.searches[key] = time[0]
            nets = self._nets_failed() if speed is not None else frozenset()
            if speed is not None and not self.fail_bad:
                pci = any(e[2] == 1 for e in self._edges.values())
                half = graph.pattern == PATTERN_BALANCED_TREE
                if not any(e[2] == 2 for e in self._edges.values()) and self._exact_speed(speed, pci, half):
                    self.by_speed.setdefault(key2, []).append(
                        (speed, _c_int(graph.bw_inter), time[0], self.fail_link, nets, pci, half))
        self.budgets.append(time[0])

    # -- the same search at a lower speed

    def speed_ok(self) -> bool:
        """Can :meth:`_slower` reason about this system: no two NETs on one NIC port (a NET's bandwidth then
        only goes down by whole amounts it has, and comes back exactly). Links are checked per search
        (:meth:`_start_recording`, :meth:`_exact_speed`)."""
        if self._speed_ok is None:
            ports = [(n.asic, n.port) for n in self.nets]
            self._speed_ok = len(set(ports)) == len(ports)
        return self._speed_ok

    def _start_recording(self) -> bool:
        """Record this search (False: a link bandwidth is not a whole number of MB/s, nothing recorded)."""
        orig = {}
        for l in self.links:
            m = _milli(l.bw)
            if m is None:
                return False
            orig[id(l)] = m
        self.recording = True
        self._orig = orig
        self._orig_net = [n.bw for n in self.nets]
        self.fail_link = (0, 1)
        self.fail_nets_seen = set()
        self.fail_bad = False
        return True

    def _link_failed(self, link: Link, fw: float) -> None:
        """A recorded search found ``link`` with less than ``fw`` left: keep the check that a lower speed would
        pass first. The link had O at the start and has O - T left, T and ``fw`` both in proportion to the speed
        B, so at B' the same check fails while B' (O - V + F) > O B, V and F being what is left and asked at B."""
        o = self._orig[id(link)]
        d = o - round(link.bw * 1000) + round(fw * 1000)
        bo, bd = self.fail_link
        if o * bd > bo * d:
            self.fail_link = (o, d)

    def _nets_failed(self) -> frozenset[tuple[float, int]]:
        """The NET checks a recorded search failed, (NET index, bandwidth left, integer bandwidth asked), as
        {(O, k + 1)}: the NET had O at the start and k channels' bandwidth taken; at a lower integer bandwidth b'
        the check fails while (k + 1) b' > O. (fail_bad: not a whole number of channels' bandwidth.)"""
        out = set()
        for n, left, bw in self.fail_nets_seen:
            o = self._orig_net[n]
            k = round((o - left) / bw) if bw > 0 else 0
            if bw <= 0 or o - k * bw != left:
                self.fail_bad = True
            out.add((o, k + 1))
        return frozenset(out)

    def _exact_speed(self, speed: int, pci: bool, half: bool) -> bool:
        """Are the amounts a search at ``speed`` (MB/s) takes off links (the speed, its half for balanced trees'
        NET paths, the Intel PCI overhead's 6/5 of either on PCI links) whole numbers of MB/s in proportion to the
        speed, and does ``SUB_ROUND`` take them off and give them back exactly on every link? Below 4,096 GB/s it
        does for any whole MB/s values (single precision keeps a value within 0.37 MB/s of the decimal through the
        rounding: tests/test_nccl_search.py), above it is checked value by value."""
        big = set()
        for link in self.links:
            m = _milli(link.bw)
            if m is None:
                return False
            if m >= _EXACT_BELOW:
                big.add((m, pci and link.type == LINK_PCI))
        ck = (speed, pci, half, tuple(sorted(big)))
        r = self._exact_speeds.get(ck)
        if r is None:
            r = self._exact_speeds[ck] = self._check_exact(speed, pci, half, ck[3])
        return r

    @staticmethod
    def _check_exact(speed: int, pci: bool, half: bool, big: tuple[tuple[int, bool], ...]) -> bool:
        b = _g(speed)
        plain = {speed: b}
        if half:
            if speed % 2 or f32(b / 2) != _g(speed // 2):
                return False
            plain[speed // 2] = f32(b / 2)
        over = dict(plain)
        if pci:
            for a, fa in plain.items():
                if (a * 6) % 5 or f32(f32(fa * 6) / 5) != _g(a * 6 // 5):
                    return False
                over[a * 6 // 5] = _g(a * 6 // 5)
        for o, is_pci in big:
            amounts = over if is_pci else plain
            unit = 0
            for a in amounts:
                unit = math.gcd(unit, a)
            if (o - _EXACT_BELOW) // unit * len(amounts) > 20000:
                return False
            for x in range(o, _EXACT_BELOW - 1, -unit):
                gx = _g(x)
                for a, fa in amounts.items():
                    if x >= a and (sub_round(gx, fa) != _g(x - a) or sub_round(_g(x - a), -fa) != gx):
                        return False
        return True

    def _slower(self, key2: tuple, speed: int, graph: Graph) -> int | None:
        """The budget left by this search, when a search with the same key at a higher speed found nothing
        and a search at ``speed`` takes exactly the same steps (else None).

        Exactness: a search reads the speed only in its bandwidth checks and in ``ncclTopoCompareGraphs``. With
        every bandwidth a whole number of MB/s and the amounts taken in proportion to the speed
        (:meth:`_exact_speed`), what a link has left is its start value less the speed times a number fixed by the
        steps taken so far, exactly. A check passed at the higher speed passes at the lower one; a failed one
        still fails while the speed is above the point recorded by :meth:`_link_failed` (and
        :meth:`_nets_failed` for the NETs' integer bandwidth). With every check the same, the lower search takes
        the same steps, finds graphs of fewer GB/s than the higher one did (none of which was better than the
        best graph, which only improves) and so copies nothing and ends with the same budget."""
        ib = _c_int(graph.bw_inter)
        for hi, hib, left, (lo, ld), nets, pci, half in self.by_speed.get(key2, ()):
            if hi <= speed or speed * ld <= lo * hi:
                continue
            if any(k1 * ib <= o for o, k1 in nets):
                continue
            if not self._exact_speed(speed, pci, half):
                continue
            return left
        return None

    @staticmethod
    def _type_class(t: int, present: tuple[int, ...]) -> int:
        """How many of the path types present are within ``t``: the search only compares path types against
        ``t``, so two values with the same count let the same paths through."""
        return sum(1 for p in present if p <= t)

    def new_search(self, graph: Graph) -> None:
        """Start one search with ``graph``'s parameters: the memo of channel starts only holds within it."""
        if self.memo is not None:
            self.memo = {}
        self.prev_matters = bool(self.inter) and graph.pattern == PATTERN_RING and graph.cross_nic == 2

    # -- queries (cached: paths do not change during a search)

    def gpu_of_rank(self, rank: int) -> int:
        g = self.rank_index.get(rank, -1)
        if g < 0:
            raise NcclFailure(f"Could not find gpu rank {rank}")
        return g

    def net_of_id(self, id_: int) -> int:
        n = self.net_id_index.get(id_, -1)
        if n < 0:
            raise NcclFailure(f"Could not find net id {id_ & _INT64_MASK:x}")
        return n

    def local_net(self, g: int, c: int) -> int:
        key = (g, c)
        n = self._local_net.get(key)
        if n is None:
            n = self._local_net[key] = _local_net(self.system, self.gpus[g].rank, c)
        return n

    def pref_nets_channel_first(self, gpu: int, nets: list[int]) -> None:
        for g in range(self.ngpus):
            if gpu != -1 and gpu != g:
                continue
            local: list[int] = []
            for c in range(MAXCHANNELS):
                n = self.local_net(g, c)
                if local and n == local[0]:
                    break
                local.append(n)
            for n in local:
                if n not in nets:
                    nets.append(n)

    def pref_nets_gpu_first(self, gpu: int, nets: list[int]) -> None:
        gpu_ids = list(range(self.ngpus)) if gpu == -1 else [gpu]
        gpu_count = len(gpu_ids)
        first: list[int] = [0] * len(gpu_ids)
        for c in range(MAXCHANNELS):
            for i, g in enumerate(gpu_ids):
                if g == -1:
                    continue
                n = self.local_net(g, c)
                if c == 0:
                    first[i] = n
                if c > 0 and first[i] == n:
                    gpu_ids[i] = -1
                    gpu_count -= 1
                    continue
                if n not in nets:
                    nets.append(n)
            if gpu_count == 0:
                break

    def select_nets(self, type_inter: int, gpu: int) -> list[int]:
        """``ncclTopoSelectNets``: the NETs to try, preferred ones first (each GPU's local NETs in channel
        order), then every other NET by path type up to ``type_inter``."""
        key = (type_inter, gpu)
        cached = self._select.get(key)
        if cached is not None:
            return cached
        nets: list[int] = []
        if self.n_hosts > 1 and self.scatter:
            self.pref_nets_gpu_first(gpu, nets)
        else:
            self.pref_nets_channel_first(gpu, nets)
        kind, count = netdevs_policy(self.system)
        max_dev = count if kind == "MAX" else 0
        if gpu == -1:
            max_dev *= self.ngpus
        if kind != "MAX":
            max_dev = NCCL_TOPO_MAX_NODES
        if len(nets) < max_dev:
            self._add_by_type(type_inter, gpu, nets, max_dev)
        self._select[key] = nets
        return nets

    def _add_by_type(self, type_inter: int, gpu: int, nets: list[int], max_dev: int) -> None:
        """Then the other NETs, path type by path type up to ``type_inter`` (at most ``max_dev`` in all)."""
        n_nets = min(len(self.nets), MAXCHANNELS)
        for t in range(type_inter + 1):
            for g in range(self.ngpus):
                if gpu != -1 and gpu != g:
                    continue
                paths = self.gpus[g].paths[NET]
                for n in [n for n in range(n_nets) if paths[n].type == t]:
                    if n not in nets:
                        nets.append(n)
                    if len(nets) >= max_dev:
                        return

    def local_gpus(self, n: int) -> tuple[list[int], int]:
        r = self._local_gpus.get(n)
        if r is None:
            from ncclctl.nccl.paths import get_local

            r = self._local_gpus[n] = get_local(self.system, NET, n, GPU)
        return r

    def gpu_pci_bw(self, g: int) -> int:
        """``gpuPciBw``: min of the GPU device's PCI uplink and the link back (as an int), -1 without one."""
        v = self._pci_bw.get(g)
        if v is None:
            v = -1
            dev = self.gpus[g].parent
            if dev is not None:
                for gl in dev.links:
                    if gl.type != LINK_PCI:
                        continue
                    pci = gl.rem
                    found = False
                    for pl in pci.links:
                        if pl.rem is not dev:
                            continue
                        v = _c_int(min(gl.bw, pl.bw))
                        found = True
                        break
                    if found:
                        break
            self._pci_bw[g] = v
        return v

    # -- bandwidth accounting

    def edge(self, type1: int, index1: int, type2: int, index2: int) -> tuple:
        """What ``ncclTopoFollowPath`` looks up for a pair of nodes, once: (path type, reverse path type, how the
        links are taken (0: plain, 1: plain with the Intel PCI overhead, 2: with reverse-direction costs), the
        links (0: the links; 1: (link, is PCI) pairs; 2: :func:`_prepare_path`), link count, destination node,
        intra-node)."""
        key = (type1, index1, type2, index2)
        e = self._edges.get(key)
        if e is None:
            node1 = self.nodes[type1][index1]
            node2 = self.nodes[type2][index2]
            path = node1.paths[type2][index2]
            rev = node2.paths.get(type1)
            rtype = rev[index1].type if rev is not None else PATH_DIS
            prepared = _prepare_path(path, node1)
            steps, overhead = prepared
            links: Any
            if any(kind for _, _, _, kind in steps):
                mode, links = 2, prepared
            elif overhead:
                mode, links = 1, [(link, is_pci) for link, is_pci, _, _ in steps]
            else:
                mode, links = 0, [link for link, _, _, _ in steps]
            e = self._edges[key] = (path.type, rtype, mode, links, len(steps), node2,
                                    type1 in (GPU, NVS) and type2 in (GPU, NVS))
        return e

    def take(self, graph: Graph, e: tuple) -> Node | None:
        """``ncclTopoFollowPath(..., mult=1)`` on an :meth:`edge` (NCCL's search calls it with 1 and -1 only: see
        :meth:`give`): take the graph's bandwidth off every link of the path and return the node reached; None
        (nothing taken) when the path type is worse than the graph allows (both ways for trees) or a link lacks
        bandwidth."""
        ptype, rtype, mode, links, count, node2, intra = e
        if intra:
            bw, typ = graph.bw_intra, graph.type_intra
        else:
            bw, typ = graph.bw_inter, graph.type_inter
        if ptype >= PATH_DIS or ptype > typ:
            return None
        if rtype > typ and graph.pattern in _TREES:
            return None
        if mode == 0:
            sub = _SUB_BY_B.get(bw)
            if sub is None:
                sub = _sub_table(bw)
            i = 0
            for link in links:
                lb = link.bw
                if lb < bw:
                    break
                r = sub.get(lb)
                link.bw = _sub(lb, bw) if r is None else r
                i += 1
            if i < count:
                if self.recording:
                    self._link_failed(links[i], bw)
                for link in links[:i]:
                    link.bw = _sub(link.bw, -bw)
                return None
        elif mode == 1:
            pci_bw = _PCI_OVERHEAD.get(bw)
            if pci_bw is None:
                pci_bw = _PCI_OVERHEAD[bw] = f32(f32(bw * 6) / 5)  # INTEL_P2P_OVERHEAD
            i = 0
            for link, is_pci in links:
                fw = pci_bw if is_pci else bw
                lb = link.bw
                if lb < fw:
                    break
                link.bw = _sub(lb, fw)
                i += 1
            if i < count:
                if self.recording:
                    link, is_pci = links[i]
                    self._link_failed(link, pci_bw if is_pci else bw)
                for link, is_pci in links[:i]:
                    link.bw = _sub(link.bw, -(pci_bw if is_pci else bw))
                return None
        else:
            step = _follow_path(links, count, bw)
            if step < count:
                _follow_path(links, step, -bw)
                return None
        graph.n_hops += count
        return node2

    def give(self, graph: Graph, e: tuple) -> None:
        """``ncclTopoFollowPath(..., mult=-1)``: give back what :meth:`take` took on the same edge (with the
        graph's bandwidth as it was then)."""
        _, _, mode, links, count, _, intra = e
        bw = graph.bw_intra if intra else graph.bw_inter
        if mode == 0:
            nb = -bw
            sub = _SUB_BY_B.get(nb)
            if sub is None:
                sub = _sub_table(nb)
            for link in links:
                lb = link.bw
                r = sub.get(lb)
                link.bw = _sub(lb, nb) if r is None else r
        elif mode == 1:
            pci_bw = _PCI_OVERHEAD[bw]
            for link, is_pci in links:
                link.bw = _sub(link.bw, -(pci_bw if is_pci else bw))
        else:
            _follow_path(links, count, -bw)
        graph.n_hops -= count

    # -- ordering

    def next_gpu_sort(self, graph: Graph, g0: int, sort_net: int) -> list[int]:
        """``ncclTopoSearchNextGpuSort``: the GPUs to try after GPU ``g0``, best first; on NVSwitch systems only
        the ring neighbours (next, then previous; the reverse for split/balanced trees)."""
        flag = 1 << graph.n_channels
        gpus = self.gpus
        if self.has_nvs:
            key = (g0, graph.pattern)
            near = self._nvs_near.get(key)
            if near is None:
                near = self._nvs_near[key] = self._nvs_neighbours(g0, graph.pattern)
            return [g for g in near if not gpus[g].used & flag]
        n = self.net_of_id(graph.inter[graph.n_channels * 2]) if sort_net else -1
        order = self._sorted.get((g0, n))
        if order is None:
            order = self._sorted[(g0, n)] = self._order(g0, n)
        cand = [(g, sig) for g, sig in order if not gpus[g].used & flag]
        if sort_net == -1 and cand and all(sig == cand[0][1] for _, sig in cand):
            return [g for g, _ in reversed(cand)]
        return [g for g, _ in cand]

    def _nvs_neighbours(self, g0: int, pattern: int) -> tuple[int, ...]:
        """On NVSwitch systems: the ring neighbours of ``g0`` NCCL tries, in its order. NCCL sorts all candidates,
        then moves the neighbours it prefers to the front one after the other (next, then previous; the reverse
        for split/balanced trees) and keeps only those: the order of the others never matters."""
        ngpus = self.ngpus
        prev_gpu = (g0 - 1 + ngpus) % ngpus
        next_gpu = (g0 + 1) % ngpus
        first: tuple[int, ...]
        if pattern == PATTERN_RING:
            first = (next_gpu, prev_gpu)
        elif pattern in (PATTERN_SPLIT_TREE, PATTERN_BALANCED_TREE):
            first = (prev_gpu, next_gpu)
        else:
            first = (next_gpu,)
        if next_gpu == prev_gpu:
            first = first[:1]
        paths = self.gpus[g0].paths[GPU]
        # each one moved to the front: the last moved comes first
        return tuple(reversed([fg for fg in first if fg != g0 and paths[fg].links]))

    def _order(self, g0: int, n: int) -> list[tuple[int, tuple[int, int]]]:
        """The GPUs reachable from ``g0`` in ``cmpScore`` order (NET bandwidth to ``n``, the GPU's PCI bandwidth,
        hops from the NET, then bandwidth and hops from ``g0``, then distance in index order), each with its
        intra-node score (``cmpIntraScores``). A total order, so sorting all of them once and dropping the used
        ones later gives what NCCL's qsort of the unused ones gives."""
        gpus = self.gpus
        ngpus = self.ngpus
        paths = gpus[g0].paths[GPU]
        net_paths = self.nets[n].paths[GPU] if n >= 0 else None
        scores = []
        for i in range(1, ngpus):
            g = (g0 + i) % ngpus
            p = paths[g]
            if not p.links:
                continue
            intra = (_c_int(p.bw), len(p.links))
            if net_paths is not None:
                np_ = net_paths[g]
                key = (-_c_int(np_.bw), -self.gpu_pci_bw(g), len(np_.links), -intra[0], intra[1], i)
            else:
                key = (0, 0, 0, -intra[0], intra[1], i)
            scores.append((key, g, intra))
        scores.sort()
        return [(g, intra) for _, g, intra in scores]

    def replay_get_gpu(self, graph: Graph, step: int) -> int:
        """``ncclTopoReplayGetGpu``: the GPU at ``step + 1`` in the previous channel."""
        if graph.n_channels == 0:
            raise NcclFailure("ncclTopoReplayGetGpu without a channel to replay")
        rank = graph.intra[(graph.n_channels - 1) * self.ngpus + step + 1]
        g = self.rank_index.get(rank, -1)
        if g < 0:
            raise NcclFailure(f"ncclTopoReplayGetGpu: no GPU has rank {rank}")
        return g

    # -- recursion

    def try_gpu(self, graph: Graph, save: Graph, step: int, back_to_net: int, back_to_first: int,
                forced: int, time: list[int], type_: int, index: int, g: int, pre: list | None = None) -> None:
        """``ncclTopoSearchTryGpu``. Channel starts (step 0) go through :meth:`_memo_try`; ``pre`` lets the
        starts tried from one state share its snapshot."""
        if step == 0 and self.memo is not None:
            self._memo_try(graph, save, back_to_net, back_to_first, forced, time, type_, index, g, pre)
            return
        self._try_gpu(graph, save, step, back_to_net, back_to_first, forced, time, type_, index, g)

    def _state(self, graph: Graph) -> tuple:
        """Everything a search subtree changes and restores: link and NET bandwidths, hops, latency."""
        return (tuple(map(_BW, self.links)), tuple(map(_BW, self.nets)), graph.n_hops, graph.latency_inter)

    def _memo_try(self, graph: Graph, save: Graph, back_to_net: int, back_to_first: int, forced: int,
                  time: list[int], type_: int, index: int, g: int, pre: list | None) -> None:
        """A channel start, skipped when the same start was searched before from the same state without finding
        a better graph (the search budget is still charged, step for step).

        Exactness: NCCL's search is deterministic; the subtree below a channel start reads only the state in the
        key (bandwidths left on links and NETs, hops so far, the channel's start and what it reads of the previous
        channel: its GPU order for a replay, the NET it entered on for crossNic pairing on an odd channel) and the
        best graph so far, which only improves during a search.
        A subtree that found nothing better, left every bandwidth as it found it and completed within budget
        in ``S`` steps does the same again: NCCL would spend ``S`` steps (or run out of time inside it) and
        change nothing, which is what skipping it does."""
        nch = graph.n_channels
        ngpus = self.ngpus
        prev: tuple | int | None = None
        if nch > 0:
            if forced == FORCED_ORDER_REPLAY:  # the replay reads the previous channel's GPU order
                prev = (tuple(graph.intra[(nch - 1) * ngpus:nch * ngpus]), graph.inter[2 * nch - 2],
                        graph.inter[2 * nch - 1])
            elif self.prev_matters and nch & 1:
                # crossNic pairing: an odd channel must leave on the NET the previous one entered on (its own
                # start was picked by rec_net from the previous channel's exit, and is in the key); an even
                # channel reads nothing of the previous one
                prev = graph.inter[2 * nch - 2]
        dirty = _DIRTY[0]
        if pre is not None and pre[0] == dirty and pre[1] is not None:
            state = pre[1]
        else:
            state = self._state(graph)
            if pre is not None:
                pre[0], pre[1] = dirty, state
        start = graph.inter[2 * nch] if self.inter else 0
        key = (nch, back_to_net, back_to_first, forced, type_, index, g, start, prev, state)
        memo = self.memo
        assert memo is not None
        cost = memo.get(key)
        if cost is not None:
            if time[0] > 0:
                self.skipped += min(cost, time[0])
                time[0] = max(0, time[0] - cost)
            return
        before = time[0]
        copies = self.copies
        hops, lat = graph.n_hops, graph.latency_inter
        self._try_gpu(graph, save, 0, back_to_net, back_to_first, forced, time, type_, index, g)
        # Neutral: every bandwidth taken was given back exactly (no SUB_ROUND pair that does not invert).
        if (self.copies == copies and time[0] > 0 and before > 0 and _DIRTY[0] == dirty
                and graph.n_hops == hops and graph.latency_inter == lat):
            memo[key] = before - time[0]

    def _try_gpu(self, graph: Graph, save: Graph, step: int, back_to_net: int, back_to_first: int,
                 forced: int, time: list[int], type_: int, index: int, g: int) -> None:
        flag = 1 << graph.n_channels
        if type_ == -1:  # a channel's first GPU without a NET: no path to take
            start = self.gpus[g]
            start.used ^= flag
            self.rec_gpu(graph, save, g, step, back_to_net, back_to_first, forced, time)
            start.used ^= flag
            return
        e = self.edge(type_, index, GPU, g)
        gpu = self.take(graph, e)
        if gpu is not None:
            gpu.used ^= flag
            self.rec_gpu(graph, save, g, step, back_to_net, back_to_first, forced, time)
            gpu.used ^= flag
            self.give(graph, e)

    def check_net(self, graph: Graph, start: Node, n: int, step: int) -> bool:
        """``ncclTopoSearchCheckNet``: may the channel that entered on ``start`` leave on NET ``n``?"""
        net = self.nets[n]
        if self.rail_aware and net.plane != UNDEF and start.plane != UNDEF and net.plane != start.plane:
            return False
        if graph.pattern == PATTERN_TREE and net.id != start.id:
            return False
        if graph.pattern == PATTERN_RING and graph.cross_nic == 2:
            if graph.n_channels & 1 and net.id != graph.inter[(graph.n_channels - 1) * 2]:
                return False
        elif graph.cross_nic == 0:
            if self.rail_aware and net.rail != UNDEF and start.rail != UNDEF:
                if net.rail != start.rail:
                    return False
            elif self.mnnvl_rail_per_host and _system_id(net.id) != _system_id(start.id):
                if net.pci_id != start.pci_id or net.port != start.port:
                    return False
            else:
                if net.asic != start.asic or net.port != start.port:
                    return False
        if graph.pattern == PATTERN_BALANCED_TREE and step != 0 and net.id != graph.inter[graph.n_channels * 2 + 1]:
            return False
        return True

    def rec_gpu(self, graph: Graph, save: Graph, g: int, step: int, back_to_net: int, back_to_first: int,
                forced: int, time: list[int]) -> None:
        """``ncclTopoSearchRecGpu``: place GPU ``g`` at ``step`` of the current channel and go on."""
        if time[0] <= 0:
            return
        time[0] -= 1
        self.steps += 1
        ngpus = self.ngpus
        if step == ngpus:
            graph.n_channels += 1
            if compare_graphs(graph, save):
                self.copies += 1
                save.copy_from(graph)
                if graph.n_channels == graph.max_channels:
                    time[0] = -1
            if graph.n_channels < graph.max_channels:
                self.rec(graph, save, time)
            graph.n_channels -= 1
            return
        graph.intra[graph.n_channels * ngpus + step] = self.gpus[g].rank
        pattern = graph.pattern
        if step == back_to_net:
            if self.inter:
                self.rec_net_out(graph, save, g, step, back_to_first, forced, time)
        elif pattern == PATTERN_NVLS or pattern == PATTERN_COLLNET_DIRECT:
            raise NotModelled(f"the {PATTERN_NAMES[pattern]} search pattern is not modelled")
        elif step < ngpus - 1:
            if forced == FORCED_ORDER_PCI:
                nxt = [step + 1]
            elif forced == FORCED_ORDER_REPLAY:
                nxt = [self.replay_get_gpu(graph, step)]
            else:
                sort_net = 0 if back_to_net == -1 else 1 if back_to_net == step + 1 else -1
                nxt = self.next_gpu_sort(graph, g, sort_net)
            for ng in nxt:
                self._try_gpu(graph, save, step + 1, back_to_net, back_to_first, forced, time, GPU, g, ng)
        elif step == back_to_first:
            p = self.gpu_of_rank(graph.intra[graph.n_channels * ngpus])
            e = self.edge(GPU, g, GPU, p)
            if self.take(graph, e) is not None:
                self.rec_gpu(graph, save, p, step + 1, back_to_net, -1, forced, time)
                self.give(graph, e)
        else:
            self.rec_gpu(graph, save, g, ngpus, -1, -1, forced, time)

    def rec_net_out(self, graph: Graph, save: Graph, g: int, step: int, back_to_first: int, forced: int,
                    time: list[int]) -> None:
        """The part of ``ncclTopoSearchRecGpu`` at ``backToNet``: leave through each NET GPU ``g`` may use, in
        turn. (Apart from rec_gpu, whose every call pays for the size of its frame.)"""
        pattern = graph.pattern
        start = self.nets[self.net_of_id(graph.inter[graph.n_channels * 2])]
        for n in self.select_nets(graph.type_inter, g):
            if not self.check_net(graph, start, n, step):
                continue
            next_back = -1
            save_bw = graph.bw_inter
            if pattern == PATTERN_BALANCED_TREE:
                if step == 0:
                    next_back = 1
                graph.bw_inter = f32(graph.bw_inter / 2)
            e = self.edge(GPU, g, NET, n)
            net = self.take(graph, e)
            graph.bw_inter = save_bw
            if net is not None:
                graph.inter[graph.n_channels * 2 + 1] = net.id
                self.rec_gpu(graph, save, g, step, next_back, back_to_first, forced, time)
                if pattern == PATTERN_BALANCED_TREE:
                    graph.bw_inter = f32(graph.bw_inter / 2)
                self.give(graph, e)
                graph.bw_inter = save_bw

    def rec_net(self, graph: Graph, save: Graph, back_to_net: int, back_to_first: int, time: list[int]) -> None:
        """``ncclTopoSearchRecNet``: start a channel from each NET in turn (the NET's bandwidth is reserved on
        every NET of the same NIC port while the channel is searched)."""
        bw = _c_int(graph.bw_inter)
        nets = self.select_nets(graph.type_inter, -1)
        count = len(nets)
        all_nets = self.nets
        for i in range(count):
            n = nets[(graph.n_channels + i) % count]
            net = all_nets[n]
            if graph.coll_net and net.coll == 0:
                continue
            if net.bw < bw:
                if self.recording:
                    self.fail_nets_seen.add((n, net.bw, bw))
                continue
            if graph.pattern == PATTERN_RING and graph.cross_nic == 2 and (graph.n_channels & 1) and \
                    net.id != graph.inter[(graph.n_channels - 1) * 2 + 1]:
                continue
            graph.inter[graph.n_channels * 2] = net.id
            graph.latency_inter = net.latency
            same_port = self._same_port.get(n)
            if same_port is None:
                same_port = self._same_port[n] = [m for m in all_nets if m.asic == net.asic and m.port == net.port]
            for m in same_port:
                old = m.bw
                m.bw = f32(m.bw - bw)
                if f32(m.bw + bw) != old:
                    _DIRTY[0] += 1
            pre: list = [0, None]
            if graph.n_channels > 0 and graph.same_channels == 1:
                g = self.replay_get_gpu(graph, -1)
                self.try_gpu(graph, save, 0, back_to_net, back_to_first, FORCED_ORDER_REPLAY, time, NET, n, g, pre)
            else:
                if graph.n_channels == 0 and not self.has_nvs:
                    t = [1 << 10]
                    self.try_gpu(graph, save, 0, back_to_net, back_to_first, FORCED_ORDER_PCI, t, NET, n, 0, pre)
                    if t[0] == -1:
                        time[0] = -1
                local_gpu = net.local_gpu
                if local_gpu != -1:
                    self.try_gpu(graph, save, 0, back_to_net, back_to_first, 0, time, NET, n, local_gpu, pre)
                local_gpus, path_type = self.local_gpus(n)
                if path_type == PATH_DIS:
                    # NCCL's ncclTopoGetLocal only reports DIS by leaving its output unset: a NET no GPU reaches.
                    # NCCL then reads an uninitialized value (and would skip the NET without giving its
                    # bandwidth back).
                    raise NotModelled(f"{net.name or 'a NET'} has no path to any GPU: NCCL's search reads an "
                                      "uninitialized path type here")
                for lg in local_gpus:
                    if lg == local_gpu:
                        continue
                    self.try_gpu(graph, save, 0, back_to_net, back_to_first, 0, time, NET, n, lg, pre)
            for m in same_port:
                m.bw = f32(m.bw + bw)

    def params_for(self, pattern: int) -> tuple[int, int]:
        """``ncclTopoSearchParams``: (backToNet, backToFirstRank)."""
        if self.inter:
            if pattern == PATTERN_RING:
                return self.ngpus - 1, -1
            if pattern == PATTERN_SPLIT_TREE:
                return 1, -1
            return 0, -1
        return -1, (self.ngpus - 1 if pattern == PATTERN_RING else -1)

    def rec(self, graph: Graph, save: Graph, time: list[int]) -> None:
        """``ncclTopoSearchRec``: search one more channel."""
        back_to_net, back_to_first = self.params_for(graph.pattern)
        if self.inter:
            try:
                self.rec_net(graph, save, back_to_net, back_to_first, time)
            except NcclFailure:
                pass  # NCCL ignores ncclTopoSearchRecNet's return value
            return
        if graph.pattern == PATTERN_NVLS:
            raise NotModelled("the NVLS search pattern is not modelled")
        pre: list = [0, None]
        if graph.n_channels == 0:
            self.try_gpu(graph, save, 0, back_to_net, back_to_first, FORCED_ORDER_PCI, time, -1, -1, 0, pre)
        else:
            g = self.replay_get_gpu(graph, -1)
            self.try_gpu(graph, save, 0, back_to_net, back_to_first, FORCED_ORDER_REPLAY, time, -1, -1, g, pre)
        if graph.same_channels == 0 or graph.n_channels == 0:
            for g in range(self.ngpus):
                self.try_gpu(graph, save, 0, back_to_net, back_to_first, 0, time, -1, -1, g, pre)


def compare_graphs(graph: Graph, ref: Graph) -> bool:
    """``ncclTopoCompareGraphs``: is ``graph`` better than ``ref`` (enough channels, more total bandwidth,
    else as much with fewer hops)?"""
    if graph.n_channels < graph.min_channels:
        return False
    if graph.pattern == PATTERN_NVLS:
        raise NotModelled("the NVLS search pattern is not modelled")
    a = f32(graph.n_channels * graph.bw_intra)
    b = f32(ref.n_channels * ref.bw_intra)
    if a > b:
        return True
    if a < b:
        return False
    return graph.pattern == ref.pattern and graph.cross_nic == ref.cross_nic and graph.n_hops < ref.n_hops


def dup_channels(graph: Graph, cc_min: int, ngpus: int) -> None:
    """``ncclTopoDupChannels``: fast channels are doubled (half the bandwidth each), except on sm > 80 when they
    are under 50 GB/s and there are more than 4."""
    if graph.n_channels == 0 or graph.pattern == PATTERN_NVLS:
        return
    if graph.bw_intra < 25.0:
        return
    if cc_min > 80 and graph.bw_intra < 50.0 and graph.n_channels > 4:
        return
    n = graph.n_channels
    dup = min(n * 2, graph.max_channels)
    graph.intra[n * ngpus:dup * ngpus] = graph.intra[:(dup - n) * ngpus]
    graph.inter[n * 2:dup * 2] = graph.inter[:(dup - n) * 2]
    graph.bw_intra = f32(graph.bw_intra / _divup(dup, n))
    graph.bw_inter = f32(graph.bw_inter / _divup(dup, n))
    graph.n_channels = dup


# --------------------------------------------------------------------------------------------------
# ncclTopoCompute


def compute(system: System, graph: Graph, *, graph_file: bytes | None = None,
            graph_path: str | None = None) -> Graph:
    """``ncclTopoCompute``: search ``graph``'s channels on ``system`` (``search_init`` done). ``graph_file``
    is the content of ``NCCL_GRAPH_FILE`` when set: its graph with the same id is loaded and trusted, and
    the search only runs when it gives no channel. Returns ``graph``."""
    cc_min, _ = get_comp_cap(system)
    ngpus = len(system.nodes[GPU])
    ndevs = len(system.nodes[DEV])
    graph.ensure(ngpus)
    if graph.coll_net:
        raise NotModelled("CollNet graphs are not modelled")
    param_cross_nic = system.params.get("CROSS_NIC", 2)
    cross_nic = _c_int_param(param_cross_nic) if len(system.nodes[NET]) > 1 and graph.pattern in (
        PATTERN_RING, PATTERN_BALANCED_TREE, PATTERN_SPLIT_TREE) else 0
    graph.cross_nic = 1 if cross_nic == 1 else 0
    graph.bw_intra = graph.bw_inter = 0.0
    graph.latency_inter = 0.0
    min_type_intra, min_type_inter = PATH_LOC, PATH_PIX
    max_type_intra, max_type_inter = PATH_SYS, PATH_SYS
    if ngpus > 1:
        min_type_intra, max_type_intra = gpu_path_range(system, GPU)
    if system.inter:
        min_type_inter, max_type_inter = gpu_path_range(system, NET)
        max_type_intra = max_type_inter
    if cc_min < 90:
        max_type_inter = PATH_SYS  # Ampere's BALANCED_TREE may need to come back through SYS or PHB
    graph.type_intra = min_type_intra
    graph.type_inter = min_type_inter
    graph.n_channels = 0
    try_same = 0 if graph.pattern == PATTERN_NVLS else 1
    graph.same_channels = try_same
    cpu_arch, cpu_vendor, _ = cpu_type(system)

    if graph_file is not None:
        load_graph_file(system, graph, graph_file, path=graph_path)
        if graph.n_channels > 0:
            return graph

    if graph.pattern in (PATTERN_NVLS, PATTERN_COLLNET_DIRECT):
        raise NotModelled(f"the {PATTERN_NAMES[graph.pattern]} search is not modelled")
    if ngpus == 1 and graph.pattern != PATTERN_RING:
        graph.pattern = PATTERN_TREE
    if graph.pattern == PATTERN_RING and split_nvlink(system):
        # Two NVLink domains joined by a slower link: Tree needs at least 2 channels, and Ring the same.
        if graph.max_channels >= 2 and graph.min_channels == 1:
            graph.min_channels = 2

    s = _Search(system)
    tmp = graph.copy()
    if system.inter == 0:
        speeds = SM100_SPEED_INTRA if cc_min >= 100 else SM90_SPEED_INTRA if cc_min >= 90 else SPEED_INTRA
    else:
        speeds = SM100_SPEED_INTER if cc_min >= 100 else SM90_SPEED_INTER if cc_min >= 90 else SPEED_INTER
    nspeeds = len(speeds)
    pass_ = 1
    si = 0
    max_bw = system.max_bw
    total_bw = system.total_bw
    if ndevs > 1 and graph.pattern != PATTERN_RING:
        total_bw = f32(total_bw * (ndevs * 1.0 / (ndevs - 1)))
    while (speeds[si] > max_bw or f32(speeds[si] * graph.min_channels) > total_bw) and si < nspeeds - 1:
        si += 1
    tmp.bw_intra = tmp.bw_inter = speeds[si]
    global_timeout = SEARCH_GLOBAL_TIMEOUT
    time = [0]

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        goto_search = True
        while True:
            if goto_search:
                # search:
                time = [SEARCH_TIMEOUT_SAMECHANNELS if tmp.same_channels else
                        SEARCH_TIMEOUT_TREE if tmp.pattern == PATTERN_TREE else SEARCH_TIMEOUT]
                tmp.n_channels = 0
                global_timeout -= time[0]
                s.search(tmp, graph, time)
                goto_search = False
                # Optimal solution, stop here (else fall through to "done" after pass 1's options)
                if time[0] != -1 and f32(graph.n_channels * graph.bw_inter) < system.total_bw and pass_ == 1:
                    # First pass, no solution yet: try other options.
                    if tmp.same_channels == 1 and not (cpu_arch == CPU_ARCH_X86 and cpu_vendor == CPU_VENDOR_AMD
                                                       and tmp.type_intra == PATH_SYS):
                        tmp.same_channels = 0
                        goto_search = True
                        continue
                    tmp.same_channels = try_same
                    if time[0] != -1:
                        global_timeout += time[0]
                    else:
                        global_timeout = SEARCH_GLOBAL_TIMEOUT
                    if not (global_timeout < 0 and graph.n_channels):
                        goto_search = _pass1_options(tmp, graph, cc_min, try_same, min_type_intra,
                                                     max_type_intra, min_type_inter, max_type_inter, cross_nic,
                                                     system.inter)
                        if goto_search:
                            continue
                        # Decrease bw until we find a solution
                        if si < nspeeds - 1 and (graph.n_channels == 0 or
                                                 f32(speeds[si + 1] / graph.bw_inter) > .49):
                            si += 1
                            tmp.bw_inter = tmp.bw_intra = speeds[si]
                            goto_search = True
                            continue
                        si = 0
                        while speeds[si] > max_bw and si < nspeeds - 1:
                            si += 1
                        tmp.bw_intra = tmp.bw_inter = speeds[si]
            # done:
            if pass_ == 1:
                time = [-1]
                dup_channels(graph, cc_min, ngpus)
                s.searches.clear()  # the best graph may have lost bandwidth (channels capped): start over
                s.by_speed.clear()
                tmp.copy_from(graph)
                si = 0
                while speeds[si] > graph.bw_inter and si < nspeeds - 1:
                    si += 1
                tmp.bw_intra = tmp.bw_inter = speeds[si]
                tmp.min_channels = graph.n_channels
                pass_ = 2
            if pass_ == 2:
                if time[0] != 0 and si > 0:
                    if graph.pattern == PATTERN_RING:
                        si -= 1
                        tmp.bw_intra = tmp.bw_inter = speeds[si]  # increase bw for Ring
                        goto_search = True
                        continue
                    if graph.pattern == PATTERN_NVLS:
                        raise NotModelled("the NVLS search is not modelled")
                    if tmp.bw_intra == graph.bw_intra and tmp.bw_intra < f32(tmp.bw_inter * 2):
                        si -= 1
                        tmp.bw_intra = speeds[si]  # increase bwIntra for trees (2 nodes or collnet)
                        goto_search = True
                        continue
                time = [-1]
                tmp.copy_from(graph)
            break
    finally:
        sys.setrecursionlimit(limit)
    s_steps = s.steps

    if graph.n_channels == 0 and graph.coll_net == 0 and graph.pattern != PATTERN_NVLS:
        # "Could not find a path for pattern %d, falling back to simple order"
        for i in range(ngpus):
            graph.intra[i] = system.nodes[GPU][i].rank
        graph.bw_intra = f32(0.1)
        graph.type_intra = PATH_SYS
        nets = s.select_nets(-1, 0)
        graph.inter[0] = system.nodes[NET][nets[0]].id if nets else -1
        nets = s.select_nets(-1, ngpus - 1)
        graph.inter[1] = system.nodes[NET][nets[0]].id if nets else -1
        if graph.inter[0] != -1 and graph.inter[1] != -1:
            graph.bw_inter = f32(0.1)
            graph.type_inter = PATH_SYS
        else:
            graph.inter[0] = graph.inter[1] = -1
            graph.bw_inter = 0.0
            graph.type_inter = PATH_DIS
        graph.n_channels = 1
    _LAST_STEPS[graph.id] = s_steps
    _LAST_BUDGETS[graph.id] = tuple(s.budgets)
    return graph


def _pass1_options(tmp: Graph, graph: Graph, cc_min: int, try_same: int, min_type_intra: int,
                   max_type_intra: int, min_type_inter: int, max_type_inter: int, cross_nic: int,
                   inter: int) -> bool:
    """The ``goto search`` options of ``ncclTopoCompute``'s first pass after the same-channels retry, in NCCL's
    order: a simpler tree (sm90+), a worse intra-node path type, a worse NIC path type, crossNic. True: search
    again with ``tmp`` as changed; False: every option is spent (``tmp`` reset to its start values)."""
    if cc_min >= 90 and tmp.pattern == PATTERN_BALANCED_TREE:
        tmp.pattern = PATTERN_TREE
        return True
    tmp.pattern = graph.pattern
    max_intra = tmp.type_inter if inter else max_type_intra
    if tmp.type_intra < max_intra and (graph.n_channels == 0 or tmp.type_intra < graph.type_intra):
        tmp.type_intra += 1
        if tmp.type_intra < PATH_DIS:
            return True
    tmp.type_intra = min_type_intra
    if inter and tmp.type_inter < max_type_inter and (
            graph.n_channels == 0 or tmp.type_inter < graph.type_inter or tmp.type_inter < PATH_PXN):
        tmp.type_inter += 1
        if tmp.type_inter < PATH_DIS:
            return True
    tmp.type_inter = min_type_inter
    if cross_nic == 2 and tmp.cross_nic == 0 and graph.pattern in (PATTERN_RING, PATTERN_BALANCED_TREE):
        tmp.cross_nic = 2  # try again with crossNic if permitted
        return True
    tmp.cross_nic = 1 if cross_nic == 1 else 0
    return False


#: Recursion steps the last :func:`compute` of each graph id took (diagnostics and benchmarks).
_LAST_STEPS: dict[int, int] = {}
#: The budget left after each search of the last :func:`compute` of each graph id, in order.
_LAST_BUDGETS: dict[int, tuple[int, ...]] = {}
#: Skip repeated channel starts and whole searches (``_Search._memo_try``, ``_Search.search``). Off only to
#: check that the memos are exact (same graphs, same budget left after every search).
MEMO = True
#: Skip a search that a search at a higher speed shows to take the same steps and find nothing
#: (``_Search._slower``). Off only to check that it is exact.
SPEED_MEMO = True


def _c_int_param(v: int) -> int:
    """An int64 ``NCCL_PARAM`` value stored in an ``int``."""
    from ncclctl.nccl.params import to_int

    return to_int(v)


# --------------------------------------------------------------------------------------------------
# NCCL_GRAPH_FILE: ncclTopoGetGraphFromXml (what is checked and what is trusted)


def _attr_str(node: XmlNode, name: str, path: str | None) -> str:
    """``xmlGetAttrStr``: a missing attribute fails NCCL's init."""
    v = node.get(name)
    if v is None:
        raise NcclFailure(f"Attribute {name} of node {node.name} not found", path=path, line=node.line,
                          fix=f"add {name}=\"...\" to <{node.name}>")
    return v


def _attr_int(node: XmlNode, name: str, path: str | None) -> int:
    from ncclctl.nccl.params import c_int

    return c_int(_attr_str(node, name, path))


def _attr_float(node: XmlNode, name: str, path: str | None) -> float:
    from ncclctl.nccl.params import c_strtof

    return f32(c_strtof(_attr_str(node, name, path))[0])


def kv_link_type(value: str) -> int:
    """``kvConvertToInt(str, &type, kvDictLinkType)``: the first name ``value`` starts with; anything else is
    0 (LOC), NCCL's fallback ("KV Convert to int : could not find value")."""
    for name, v in LINK_TYPE_DICT:
        if value.startswith(name):
            return v
    return 0


def _channel_from_xml(xml_channel: XmlNode, c: int, system: System, graph: Graph, path: str | None) -> None:
    """``ncclTopoGetChannelFromXml``: ``<net dev>`` (hex) are stored as they are, one after the other; a
    ``<gpu>`` with a ``rank`` attribute stores that rank unchecked, one without looks its ``dev`` up among the
    system's GPUs and fails the init when none has it."""
    from ncclctl.nccl.params import c_int, strtol

    ngpus = len(system.nodes[GPU])
    n = g = 0
    for sub in xml_channel.children:
        dev = strtol(_attr_str(sub, "dev", path), 16).value
        if sub.name == "net":
            i = 2 * c + n
            if i >= 2 * MAXCHANNELS:
                raise NotModelled(f"graph channel {c} writes past NCCL's {MAXCHANNELS}-channel NET array "
                                  "(undefined behaviour)", path=path, line=sub.line)
            graph.inter[i] = dev
            n += 1
        elif sub.name == "gpu":
            rank_s = sub.get("rank")
            if rank_s is not None:
                rank = c_int(rank_s)
            else:
                rank = -1
                for gpu in system.nodes[GPU]:
                    parent_id = gpu.parent.id if gpu.parent is not None else gpu.id
                    if _topo_id(_system_id(parent_id), gpu.dev) == dev:
                        rank = gpu.rank
                if rank == -1:
                    raise NcclFailure(f"XML Import Channel : dev {dev} not found.", path=path, line=sub.line,
                                      fix="name a GPU of this node (its NVML index) or give rank=")
            i = ngpus * c + g
            if i >= MAXCHANNELS * NCCL_TOPO_MAX_NODES:
                raise NotModelled(f"graph channel {c} writes past NCCL's GPU array (undefined behaviour)",
                                  path=path, line=sub.line)
            if i >= len(graph.intra):
                graph.intra.extend([0] * (i + 1 - len(graph.intra)))
            graph.intra[i] = rank
            g += 1


def _graph_from_xml(xml_graph: XmlNode, system: System, graph: Graph, path: str | None) -> int | None:
    """``ncclTopoGetGraphFromXmlSub``: loads the ``<graph>`` whose id is ``graph.id``; returns the number of
    channel elements read (None when the element is not for this graph or is skipped)."""
    if _attr_int(xml_graph, "id", path) != graph.id:
        return None
    cross_nic = _attr_int(xml_graph, "crossnic", path)
    if system.params.get("CROSS_NIC", 2) == 0 and cross_nic == 1:
        return None
    graph.cross_nic = cross_nic
    graph.pattern = _attr_int(xml_graph, "pattern", path)
    graph.n_channels = _attr_int(xml_graph, "nchannels", path)
    graph.bw_intra = _attr_float(xml_graph, "speedintra", path)
    graph.bw_inter = _attr_float(xml_graph, "speedinter", path)
    lat = xml_graph.get("latencyinter")
    if lat is None:
        graph.latency_inter = 0.0
    else:
        from ncclctl.nccl.params import c_strtof

        graph.latency_inter = f32(c_strtof(lat)[0])
    for attr in ("typeintra", "typeinter"):
        v = xml_graph.get(attr)
        if v is None:
            raise NcclFailure(f"<graph> without {attr}: NCCL reads a NULL string here and crashes "
                              "(segmentation fault)", path=path, line=xml_graph.line, fix=f"add {attr}=")
        if attr == "typeintra":
            graph.type_intra = kv_link_type(v)
        else:
            graph.type_inter = kv_link_type(v)
    graph.same_channels = _attr_int(xml_graph, "samechannels", path)
    for c, sub in enumerate(xml_graph.children):
        _channel_from_xml(sub, c, system, graph, path)
    if graph.n_channels > MAXCHANNELS:
        raise NotModelled(f"nchannels={graph.n_channels} is over NCCL's {MAXCHANNELS} channels (NCCL reads past "
                          "its arrays: undefined behaviour)", path=path, line=xml_graph.line)
    return len(xml_graph.children)


def load_graph_file(system: System, graph: Graph, data: bytes, *, path: str | None = None) -> int | None:
    """The ``NCCL_GRAPH_FILE`` branch of ``ncclTopoCompute``: read ``data`` with NCCL's XML reader and load the
    ``<graph>`` elements whose id is ``graph.id`` into ``graph`` (the last one wins), exactly as NCCL does.
    Trusted as written: ``pattern``, ``crossnic``, ``nchannels``, speeds, types (unknown names are LOC),
    ``samechannels``, net ids, GPU ranks. Checked: the XML syntax and version, the presence of each required
    attribute, and GPU ``dev`` values when no ``rank`` is given. Returns the channel element count of the last
    graph loaded (None: none for this id)."""
    from ncclctl.nccl.xml import parse_nccl_xml

    graph.ensure(len(system.nodes[GPU]))
    res = parse_nccl_xml(data, kind="graph", nccl_version=system.params.version, path=path)
    if res.fatal is not None:
        raise NcclFailure(res.fatal.message, path=path, line=res.fatal.line, column=res.fatal.column)
    root = res.root
    loaded = None
    if root is None:
        return None
    for sub in root.children:
        got = _graph_from_xml(sub, system, graph, path)
        if got is not None:
            loaded = got
    return loaded


# --------------------------------------------------------------------------------------------------
# ncclTopoGetXmlFromGraphs (NCCL_GRAPH_DUMP_FILE)


def _kv_link_str(t: int) -> str:
    for name, v in LINK_TYPE_DICT:
        if v == t:
            return name
    raise NcclFailure(f"KV Convert to str : could not find value {t} in dictionary (NCCL cannot write path type "
                      f"{_type_str(t)} to a graph file; ncclTopoDumpGraphs fails)")


def _hex_long(v: int) -> str:
    """``%#lx`` of an int64 (as unsigned): ``0`` for 0, ``0x1b`` otherwise."""
    v &= _INT64_MASK
    return "0" if v == 0 else f"{v:#x}"


def _fmt_g(x: float) -> str:
    """``%g`` of a float (promoted to double)."""
    return "%g" % x


def graphs_to_xml(system: System, graphs: Sequence[Graph]) -> bytes:
    """``ncclTopoGetXmlFromGraphs`` + ``ncclTopoDumpXmlToFile``: the bytes NCCL writes to
    ``NCCL_GRAPH_DUMP_FILE`` for these graphs (NCCL dumps ring, tree, collnet direct, collnet chain and NVLS, in
    that order; see :func:`unsearched_graph` for the ones init never searched). Attributes in NCCL's order,
    floats as ``%g``, devs as ``%#lx``, two-space indent, childless elements self-closed."""
    ngpus = len(system.nodes[GPU])
    lines = [f'<graphs version="{GRAPH_XML_VERSION}">']
    for g in graphs:
        head = (f'  <graph id="{g.id}" pattern="{g.pattern}" crossnic="{g.cross_nic}" nchannels="{g.n_channels}" '
                f'speedintra="{_fmt_g(g.bw_intra)}" speedinter="{_fmt_g(g.bw_inter)}" '
                f'latencyinter="{_fmt_g(g.latency_inter)}" typeintra="{_kv_link_str(g.type_intra)}" '
                f'typeinter="{_kv_link_str(g.type_inter)}" samechannels="{g.same_channels}"')
        if g.n_channels <= 0:
            lines.append(head + "/>")
            continue
        lines.append(head + ">")
        for c in range(g.n_channels):
            lines.append("    <channel>")
            if system.inter:
                lines.append(f'      <net dev="{_hex_long(g.inter[2 * c])}"/>')
            for i in range(ngpus):
                rank = g.intra[ngpus * c + i]
                dev = -1
                for gpu in system.nodes[GPU]:
                    if gpu.rank == rank:
                        dev = _topo_id(_system_id(gpu.id), gpu.dev)
                if dev == -1:
                    raise NcclFailure(f"XML Export Channel : rank {rank} not found.")
                lines.append(f'      <gpu dev="{_hex_long(dev)}" rank="{rank}"/>')
                if g.id == 3:
                    break  # NVLS graphs only use the first GPU
            if system.inter:
                lines.append(f'      <net dev="{_hex_long(g.inter[2 * c + 1])}"/>')
            lines.append("    </channel>")
        lines.append("  </graph>")
    lines.append("</graphs>")
    return ("\n".join(lines) + "\n").encode()


def unsearched_graph(id: int, pattern: int, *, coll_net: int = 0, min_channels: int = 0,
                     max_channels: int = 0) -> Graph:
    """A graph as ``init.cc`` leaves it when it does not search it (memset to 0, then id, pattern, collNet and
    the channel bounds): how the CollNet and NVLS graphs appear in a dump when those are off."""
    g = Graph(id, pattern, min_channels, max_channels, coll_net)
    return g


# --------------------------------------------------------------------------------------------------
# What init.cc does


def ring_and_tree(system: System, *, graph_file: bytes | None = None,
                  graph_path: str | None = None) -> tuple[Graph, Graph]:
    """What ``initTransportsRank`` runs on a system with its paths computed and trimmed: ``ncclTopoSearchInit``,
    then the ring search (pattern RING, 1..MAXCHANNELS/2 channels), then the tree search (BALANCED_TREE, as many
    channels as the ring; NCCL may settle on TREE). Returns (ring, tree)."""
    search_init(system)
    ring = Graph(0, PATTERN_RING, 1, MAXCHANNELS // 2)
    compute(system, ring, graph_file=graph_file, graph_path=graph_path)
    tree = Graph(1, PATTERN_BALANCED_TREE, ring.n_channels, ring.n_channels)
    compute(system, tree, graph_file=graph_file, graph_path=graph_path)
    return ring, tree


def last_steps() -> dict[int, int]:
    """Recursion steps the last :func:`compute` of each graph id took."""
    return dict(_LAST_STEPS)


def last_budgets() -> dict[int, tuple[int, ...]]:
    """The budget left after each search of the last :func:`compute` of each graph id (NCCL's ``time``)."""
    return dict(_LAST_BUDGETS)


def channel_summary(system: System, graph: Graph) -> list[dict]:
    """Each channel as ``{"ranks": [...], "devs": [...], "net_in": (index, name) | None, "net_out": ...}``."""
    ngpus = len(system.nodes[GPU])
    out = []
    for c in range(graph.n_channels):
        ranks = graph.intra[c * ngpus:(c + 1) * ngpus]
        devs = []
        for r in ranks:
            g = system.gpu_by_rank(r)
            devs.append(system.nodes[GPU][g].dev if g >= 0 else -1)
        entry: dict = {"ranks": ranks, "devs": devs, "net_in": None, "net_out": None}
        if system.inter:
            for key, nid in (("net_in", graph.inter[2 * c]), ("net_out", graph.inter[2 * c + 1])):
                n = system.net_index(nid)
                entry[key] = (n, system.nodes[NET][n].name if n >= 0 else None)
        out.append(entry)
    return out
