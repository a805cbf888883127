"""NCCL's in-memory topology (``struct ncclTopoSystem``, ``src/graph/topo.h``) as Python objects.

This is the data the model of NCCL's decisions works on: :mod:`ncclctl.nccl.build` fills it from a topology XML
the way ``ncclTopoGetSystemFromXml`` does, :mod:`ncclctl.nccl.paths` adds the paths (``paths.cc``),
:mod:`ncclctl.nccl.search` finds the ring/tree channels (``search.cc``), :mod:`ncclctl.nccl.connect` joins them
across nodes (``connect.cc``) and :mod:`ncclctl.nccl.tuning` derives protocols and bandwidths (``tuning.cc``).
Names, constants and orderings follow NCCL (2.30.7, commit 5067397c) so the code can be read side by side with
NCCL's; indices into ``System.nodes[type]`` play the role of NCCL's node pointers' array positions.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Mapping

from ncclctl.nccl.params import param_int
from ncclctl.nccl.version import DEFAULT, Version
from ncclctl.record import record

_F32 = struct.Struct("f")


def f32(x: float) -> float:
    """``x`` rounded to a C ``float``: NCCL keeps every bandwidth in single precision, and its comparisons (a
    link with 48.0 left against a 48.000001 request) depend on it."""
    return _F32.unpack(_F32.pack(x))[0]

# Node types (topo.h)
GPU, PCI, NVS, CPU, NIC, NET, GIN, RMA, DEV, CXB = range(10)
NODE_TYPES = 10
NODE_TYPE_STR = ("GPU", "PCI", "NVS", "CPU", "NIC", "NET", "GIN", "RMA", "DEV", "CXB")

# Link types (topo.h): they share numbers with the path types they produce.
LINK_LOC, LINK_NVL, LINK_C2C, LINK_PCI, LINK_SYS, LINK_NET = 0, 1, 3, 4, 9, 10
LINK_TYPE_STR = ("LOC", "NVL", "", "C2C", "PCI", "", "", "", "", "SYS", "NET")

# Path types (graph.h)
PATH_LOC, PATH_NVL, PATH_NVB, PATH_C2C, PATH_PIX, PATH_PXB, PATH_P2C, PATH_PXN, PATH_PHB, PATH_SYS, PATH_NET, \
    PATH_DIS = range(12)
PATH_PORT = PATH_NVL
PATH_TYPE_STR = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS")

# Bandwidths, GB/s (topo.h)
LOC_BW = 5000.0
MLOPART_LOC_BW = 2618.0
SM60_NVLINK_BW, SM70_NVLINK_BW, SM80_NVLINK_BW, SM90_NVLINK_BW, SM86_NVLINK_BW, SM100_NVLINK_BW = \
    18.0, 20.0, 20.0, 20.6, 12.0, 40.1
PCI_BW = 12.0
AMD_BW = 16.0
# 2.31: AMD_ZEN12_BW (= AMD_BW), AMD_ZEN34_BW, AMD_ZEN5_BW (topo.h)
AMD_ZEN34_BW = 24.0
AMD_ZEN5_BW = 32.0
BDW_QPI_BW, SKL_QPI_BW, SRP_QPI_BW, ERP_QPI_BW = 6.0, 10.0, 22.0, 40.0
ZPI_BW, YONGFENG_ZPI_BW = 6.0, 9.0
P9_BW = 32.0
ARM_BW = 6.0
NET_BW = 12.0

# CPU arch/vendor/model (graph.h)
CPU_ARCH_X86, CPU_ARCH_POWER, CPU_ARCH_ARM, CPU_ARCH_MIXED = 1, 2, 3, 4
CPU_VENDOR_INTEL, CPU_VENDOR_AMD, CPU_VENDOR_ZHAOXIN, CPU_VENDOR_MIXED = 1, 2, 3, 4
CPU_MODEL_INTEL_BDW, CPU_MODEL_INTEL_SKL, CPU_MODEL_INTEL_SRP, CPU_MODEL_INTEL_ERP = 1, 2, 3, 4
CPU_MODEL_YONGFENG = 1
# 2.31 (graph.h): AMD generations
CPU_MODEL_AMD_ZEN12, CPU_MODEL_AMD_ZEN34, CPU_MODEL_AMD_ZEN5 = 1, 2, 3

UNDEF = -1
MAXCHANNELS = 64


def nvlink_bw(sm: int) -> float:
    """``ncclTopoNVLinkBw``: GB/s per NVLink by compute capability."""
    return (SM100_NVLINK_BW if sm >= 100 else SM90_NVLINK_BW if sm >= 90 else SM86_NVLINK_BW if sm == 86
            else SM80_NVLINK_BW if sm >= 80 else SM70_NVLINK_BW if sm >= 70 else SM60_NVLINK_BW if sm >= 60
            else SM80_NVLINK_BW)


@dataclass(eq=False)
class Link:
    """``struct ncclTopoLink``."""

    type: int
    bw: float
    rem: "Node"


@dataclass(eq=False)
class Path:
    """``struct ncclTopoLinkList``: the hops from a node to another, the bottleneck bw and the path type."""

    links: list[Link] = field(default_factory=list)
    bw: float = 0.0
    type: int = PATH_DIS

    @property
    def count(self) -> int:
        return len(self.links)


@dataclass(eq=False)
class Node:
    """``struct ncclTopoNode``. Only the fields of the node's type are meaningful (NCCL uses a union)."""

    type: int
    id: int
    links: list[Link] = field(default_factory=list)
    #: paths[t][i]: path from this node to node i of type t (filled by ncclctl.nccl.paths).
    paths: dict[int, list[Path]] = field(default_factory=dict)
    used: int = 0
    # GPU
    dev: int = UNDEF  # GPU: NVML dev; NET: plugin dev; DEV: NVML dev
    rank: int = UNDEF
    sm: int = UNDEF  # cudaCompCap
    gdr: int = 0  # GPU: gdrSupport; NET: gdrSupport
    mlopart: int = UNDEF
    parent: "Node | None" = None  # GPU: its DEV node
    # DEV
    n_gpus: int = 0
    # PCI / DEV
    device: int = 0
    # NET
    name: str = ""  # NET: the plugin's device name (mlx5_0, mlx5_0+mlx5_1 when fused)
    pci_id: int = 0
    asic: int = 0
    port: int = UNDEF
    bw: float = 0.0
    latency: float = 0.0
    coll: int = 0
    max_channels: int = 0
    local_gpu: int = UNDEF
    rail: int = UNDEF
    plane: int = UNDEF
    # CPU
    arch: int = UNDEF
    vendor: int = UNDEF
    model: int = UNDEF
    affinity: str = ""
    #: The XML busid (PCI/GPU/NIC nodes) or numaid (CPU), for messages.
    label: str = ""

    def __repr__(self) -> str:
        return f"<{NODE_TYPE_STR[self.type]} {self.label or hex(self.id)}>"


@record
class Params:
    """The NCCL_* settings NCCL sees (environment over conf files, already merged) and the release modelled.

    ``get("CROSS_NIC", 2)`` reads ``NCCL_CROSS_NIC`` the way ``NCCL_PARAM`` does (``strtoll``; unset, empty or
    unparsable gives the default)."""

    env: Mapping[str, str] = field(default_factory=dict)
    version: Version = DEFAULT

    def get(self, name: str, default: int) -> int:
        return param_int(self.env.get("NCCL_" + name), default)

    def str(self, name: str) -> str | None:
        return self.env.get("NCCL_" + name)


@dataclass(eq=False)
class System:
    """``struct ncclTopoSystem`` (one host: ``systemId`` 0)."""

    nodes: list[list[Node]] = field(default_factory=lambda: [[] for _ in range(NODE_TYPES)])
    host_hashes: list[int] = field(default_factory=list)
    system_id: int = 0
    max_bw: float = 0.0
    total_bw: float = 0.0
    inter: int = 0
    params: Params = field(default_factory=Params)
    #: What the model could not follow (unknown values NCCL would read differently, features not modelled).
    caveats: list[str] = field(default_factory=list)
    #: The net plugin whose devices are the NETs: ``IB`` or ``Socket`` (``none``/``external``: no NET modelled).
    transport: str = "IB"

    def index(self, node: Node) -> int:
        lst = self.nodes[node.type]
        for i, n in enumerate(lst):
            if n is node:
                return i
        raise ValueError(f"{node!r} is not in the system")

    def get(self, type_: int, id_: int) -> Node | None:
        """``ncclTopoGetNode``."""
        for n in self.nodes[type_]:
            if n.id == id_:
                return n
        return None

    def create(self, type_: int, id_: int) -> Node:
        """``ncclTopoCreateNode``."""
        n = Node(type=type_, id=id_)
        if type_ == NET:
            n.asic = 0
        self.nodes[type_].append(n)
        return n

    def remove(self, type_: int, index: int) -> None:
        """``ncclTopoRemoveNode``: drop the node and every link to it (paths must be recomputed)."""
        dead = self.nodes[type_][index]
        for lst in self.nodes:
            for n in lst:
                if n is dead:
                    continue
                n.links = [l for l in n.links if l.rem is not dead]
        if type_ == DEV:
            for g in self.nodes[GPU]:
                if g.parent is dead:
                    g.parent = None
        del self.nodes[type_][index]

    def gpu_by_rank(self, rank: int) -> int:
        """``ncclTopoRankToIndex`` (-1 when absent)."""
        for i, g in enumerate(self.nodes[GPU]):
            if g.rank == rank:
                return i
        return -1

    def net_index(self, id_: int) -> int:
        """``ncclTopoIdToIndex(system, NET, id)`` (-1 when absent)."""
        for i, n in enumerate(self.nodes[NET]):
            if n.id == id_:
                return i
        return -1


def connect(node: Node, rem: Node, type_: int, bw: float) -> None:
    """``ncclTopoConnectNodes``: add bw to the existing link of that type to ``rem`` (NVLinks aggregate), else
    append one; then keep links sorted by bw, descending (a stable insertion sort, as NCCL's)."""
    for i, link in enumerate(node.links):
        if link.rem is rem and link.type == type_:
            break
    else:
        i = len(node.links)
        node.links.append(Link(type_, 0.0, rem))
    link = node.links[i]
    link.bw = f32(link.bw + bw)
    # Move the link up while the previous one has less bw (NCCL: stop at prev.bw >= bw).
    while i > 0 and node.links[i - 1].bw < link.bw:
        node.links[i] = node.links[i - 1]
        i -= 1
    node.links[i] = link
