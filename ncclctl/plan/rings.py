"""NCCL graph XML (``NCCL_GRAPH_FILE``) with ring and tree channels pinned to rails (pure).

Channel c enters and leaves the node on the NIC of rail c (``crossnic="0"``): its first GPU is the GPU of rail c,
its last GPU the other GPU closest to that NIC, and the GPUs in between follow NVLink (any order on NVSwitch
systems) or PCIe locality. ``dev`` values are written the way NCCL 2.21+ writes them (``%#lx``: ``0``, ``0x1``...),
which older versions read identically for 0-9; no ``rank`` attributes, so one file serves every node.

Speeds come from the hardware through NCCL's own per-architecture candidate lists (nccl-format.md §3.5): the
largest candidate not above the per-channel share of the GPU's NVLink (or PCIe) bandwidth, and of the NIC.
"""

from __future__ import annotations

from dataclasses import dataclass

from ncclctl.errors import InputError
from ncclctl.model import Gpu, Node
from ncclctl.plan.paths import gpu_gpu_type, nvlink_count, pcie_path_type, pcie_rank
from ncclctl.sysfs import link_speed_gen
from ncclctl.plan.rails import RailPlan, plan_rails
from ncclctl.topo.generate import El, serialize

INTRA = {90: (60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3),
         100: (90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18),
         0: (40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3)}
INTER = {90: (48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12),
         100: (96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12),
         0: (48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12)}
MAX_CHANNELS = 32  # MAXCHANNELS/2: NCCL duplicates ring and tree channels into [n, 2n)


def nvlink_bw(sm: int | None) -> float:
    """Per-link NVLink GB/s by the source GPU's sm (topo.h:ncclTopoNVLinkBw, 2.27.5+)."""
    if sm is None:
        return 20.0
    if sm >= 100:
        return 40.1
    if sm >= 90:
        return 20.6
    if sm == 86:
        return 12.0
    if sm >= 70:
        return 20.0
    if sm >= 60:
        return 18.0
    return 20.0


def _arch(sm: int | None) -> int:
    if sm is not None and sm >= 100:
        return 100
    if sm is not None and sm >= 90:
        return 90
    return 0


def _candidate(limit: float, candidates: tuple[float, ...]) -> float:
    for c in candidates:
        if c <= limit + 1e-9:
            return c
    return candidates[-1]


def _fmt(v: float) -> str:
    return f"{v:g}"


def _hexdev(i: int) -> str:
    return "0" if i == 0 else f"{i:#x}"


@dataclass(frozen=True)
class Channel:
    gpus: tuple[int, ...]
    net: int  # plugin dev index of the rail's port


def _gpu_pcie_bw(node: Node, g: Gpu) -> float:
    dev = node.pci_device(g.bdf)
    gen = g.pcie_max_gen
    width = g.pcie_max_width
    if dev is not None:
        try:
            gen = gen or link_speed_gen(dev.max_link_speed)
        except ValueError:
            pass
        width = width or dev.max_link_width
    per_lane = {1: 15, 2: 30, 3: 60, 4: 120, 5: 240, 6: 480}.get(gen or 3, 60)
    return (width or 16) * per_lane / 80.0


def _order(node: Node, gpus: list[Gpu], first: Gpu, nic_bdf: str | None) -> list[Gpu]:
    """first, then the rest along NVLink/PCIe, ending on the other GPU closest to the channel's NIC."""
    rest = [g for g in gpus if g is not first]
    if not rest:
        return [first]
    n = len(gpus)

    def nic_rank(g: Gpu) -> int:
        return pcie_rank(pcie_path_type(node, g.bdf, nic_bdf) or "SYS") if nic_bdf else 0

    # Last: closest to the NIC; ties: the GPU that follows the first in index order (as NCCL's own rings do).
    last = min(rest, key=lambda g: (nic_rank(g), (g.index - first.index) % n))
    middle = [g for g in rest if g is not last]
    # Middle: a greedy walk, each step to the closest remaining GPU (NVLink first), index order on ties.
    ordered, cur = [first], first
    while middle:
        nxt = min(middle, key=lambda g: (pcie_rank(gpu_gpu_type(node, cur, g)) if not nvlink_count(cur, g) else -1,
                                         (g.index - first.index) % n))
        ordered.append(nxt)
        middle.remove(nxt)
        cur = nxt
    ordered.append(last)
    return ordered


def _plugin_devs(plan: RailPlan) -> dict[tuple[str, int], int]:
    """With NCCL_IB_HCA set to the rails, the IB plugin's dev index = rank of the port in PCI order."""
    keyed = sorted(plan.rails, key=lambda r: (int((r.bdf or "0").replace(":", "").replace(".", ""), 16), r.port))
    return {(r.nic, r.port): i for i, r in enumerate(keyed)}


def build_graphs(node: Node, plan: RailPlan | None = None) -> tuple[El, dict]:
    gpus = sorted(node.gpus, key=lambda g: g.index)
    if len(gpus) == 0:
        raise InputError("the node has no GPUs: there is nothing to put in a graph file",
                         fix="probe a GPU node (or a fixture of one)")
    plan = plan or plan_rails(node)
    # Only ACTIVE rails exist for NCCL's IB plugin: a down rail gets no channel, and the plugin's dev numbers
    # (PCI order among the selected active ports) skip it.
    down = [r.hca for r in plan.rails if not r.active]
    plan = RailPlan(rails=tuple(r for r in plan.rails if r.active), excluded=plan.excluded,
                    far_gpus=plan.far_gpus, down=())
    if not plan.rails:
        raise InputError("the node has no active RDMA rails: a graph file pins channels to NICs",
                         fix="check the NICs (ncclctl rails), or select them with --compute-nics")
    if len(plan.rails) > MAX_CHANNELS:
        raise InputError(f"{len(plan.rails)} rails exceed NCCL's {MAX_CHANNELS} ring channels",
                         fix="select fewer NICs with --compute-nics")
    devs = _plugin_devs(plan)
    channels = []
    for rail in plan.rails:
        first = node.gpu(rail.gpus[0])
        assert first is not None
        order = _order(node, gpus, first, rail.bdf)
        channels.append(Channel(gpus=tuple(g.index for g in order), net=devs[(rail.nic, rail.port)]))
    nch = len(channels)
    # Intra-node type: worst hop along the channels' GPU sequences (rings close back to the first GPU).
    worst_intra = "LOC" if len(gpus) == 1 else "NVL"
    by_index = {g.index: g for g in gpus}
    for ch in channels:
        seq = list(ch.gpus)
        for a, b in zip(seq, seq[1:] + seq[:1]):
            if a == b:
                continue
            t = gpu_gpu_type(node, by_index[a], by_index[b])
            if not t.startswith("NV"):
                t = {"NODE": "PHB"}.get(t, t)
                if worst_intra in ("LOC", "NVL") or pcie_rank(t) > pcie_rank(worst_intra):
                    worst_intra = t
    worst_inter = "PIX"
    for ch, rail in zip(channels, plan.rails):
        for gi in (ch.gpus[0], ch.gpus[-1]):
            t = pcie_path_type(node, by_index[gi].bdf, rail.bdf) or "SYS"
            t = {"NODE": "PHB"}.get(t, t)
            if pcie_rank(t) > pcie_rank(worst_inter):
                worst_inter = t
    sm = min((g.sm for g in gpus if g.sm is not None), default=None)
    arch = _arch(sm)
    if worst_intra in ("NVL", "LOC"):
        per_gpu = min(len([l for l in g.active_nvlinks if l.remote_type in ("nvswitch", "gpu")]) for g in gpus) * nvlink_bw(sm)
    else:
        per_gpu = min(_gpu_pcie_bw(node, g) for g in gpus)
    speed_intra = _candidate(per_gpu / nch if len(gpus) > 1 else INTRA[arch][0], INTRA[arch])
    nic_gbs = min((r.rate_gbps or 100.0) / 8.0 for r in plan.rails)
    speed_inter = _candidate(nic_gbs, INTER[arch])

    def graph(gid: int, pattern: int) -> El:
        g = El("graph", [("id", str(gid)), ("pattern", str(pattern)), ("crossnic", "0"), ("nchannels", str(nch)),
                         ("speedintra", _fmt(speed_intra)), ("speedinter", _fmt(speed_inter)), ("latencyinter", "0"),
                         ("typeintra", worst_intra if worst_intra != "LOC" else "NVL"), ("typeinter", worst_inter),
                         ("samechannels", "0")])
        for ch in channels:
            c = El("channel", [])
            c.children.append(El("net", [("dev", _hexdev(ch.net))]))
            c.children += [El("gpu", [("dev", _hexdev(i))]) for i in ch.gpus]
            c.children.append(El("net", [("dev", _hexdev(ch.net))]))
            g.children.append(c)
        return g

    root = El("graphs", [("version", "1")], [graph(0, 4), graph(1, 3)])
    info = {"nchannels": nch, "speedintra": speed_intra, "speedinter": speed_inter, "typeintra": worst_intra,
            "typeinter": worst_inter, "channels": [{"net_dev": c.net, "gpus": list(c.gpus)} for c in channels],
            "nccl_ib_hca": plan.nccl_ib_hca, "down_rails": down}
    return root, info


def generate_graph(node: Node, plan: RailPlan | None = None) -> bytes:
    root, _ = build_graphs(node, plan)
    return serialize(root)


def graph_file(node: Node, compute_nics: tuple[str, ...] | None = None) -> tuple[bytes, dict]:
    """``ncclctl rings graph``: the graph file's bytes for ``node`` and the channel plan (``info``)."""
    plan = plan_rails(node, compute_nics)
    tree, info = build_graphs(node, plan)
    return serialize(tree), info


def require_graph_file(path: str) -> None:
    """InputError when ``path`` is a topology file given to ``rings validate``."""
    from ncclctl.inputs import read_bytes
    from ncclctl.topo.ncclxml import sniff_kind

    data = read_bytes(path, "xml")
    if data is not None and sniff_kind(data) == "topology":
        raise InputError("this is a topology file (<system>), not a graph file", path=path,
                         fix="use 'ncclctl topo validate' for topology files")
