"""Rails on a node: which NIC port each GPU uses, and the exact ``NCCL_IB_HCA`` that selects them (pure).

A rail is one port of an RDMA NIC (physical: a port that is down is still its GPU's rail, flagged). Each GPU gets the
closest rail by PCIe path (PIX, then PXB, PHB, NODE, SYS), ties broken by NUMA node, then by preferring rails
no GPU uses yet (so two GPUs behind one switch with two NICs take one each), then by name. Compute NICs are
those that are the closest NIC of some GPU; storage and in-band NICs further away are excluded unless
selected with ``compute_nics``. On flat-PCIe VMs (every path NODE/SYS) all RDMA ports are compute ports and
NUMA decides.

Rail numbers follow the GPUs: rail k is the rail of the lowest-indexed GPU that uses it, so on a one-NIC-per-GPU
node GPU k is on rail k, the convention rail-optimized fabrics are cabled by.
"""

from __future__ import annotations

import heapq

from ncclctl.errors import InputError
from ncclctl.model import Node
from ncclctl.names import natural_key
from ncclctl.plan.paths import pcie_path_type, pcie_rank
from ncclctl.model import IbPort, Nic
from ncclctl.record import record


@record
class Rail:
    rail: int
    nic: str
    port: int
    netdev: str | None
    bdf: str | None
    numa: int | None
    link_layer: str
    rate_gbps: float | None
    gpus: tuple[int, ...]
    #: Worst path type between the rail and its GPUs.
    path: str
    #: Port state: a down rail stays in the plan (and in NCCL_IB_HCA, which skips inactive ports).
    active: bool = True

    @property
    def hca(self) -> str:
        return f"{self.nic}:{self.port}"


@record
class RailPlan:
    rails: tuple[Rail, ...]
    #: NICs with an active port that were left out (storage, in-band, too far from every GPU).
    excluded: tuple[str, ...]
    #: GPUs whose closest rail is farther than PXB (NCCL then disables GPUDirect RDMA by default).
    far_gpus: tuple[int, ...]
    #: Rails whose port is not ACTIVE.
    down: tuple[int, ...] = ()

    def gpu_rail(self, gpu: int) -> Rail | None:
        return next((r for r in self.rails if gpu in r.gpus), None)

    @property
    def nccl_ib_hca(self) -> str:
        """``=mlx5_0:1,mlx5_3:1,...``: exact names (no prefix over-match) with explicit ports, in rail order."""
        return "=" + ",".join(r.hca for r in self.rails) if self.rails else ""


@record
class _Port:
    nic: Nic
    port: IbPort


def _ports(node: Node) -> list[_Port]:
    """Every port of every PCI-placed RDMA NIC, whatever its state: rails are physical."""
    out = [_Port(n, p) for n in node.nics if n.bdf for p in n.ports if p.link_layer in ("InfiniBand", "Ethernet")]
    out.sort(key=lambda e: (natural_key(e.nic.name), e.port.num))
    return out


class _Near:
    """For each GPU, the ports of ``pool`` at the smallest ``key`` (PCIe path rank, then NUMA), found through buckets
    of the PCIe tree instead of comparing every GPU with every port (2,048 GPUs x 1,024 NICs: 2 M paths).

    A port under the GPU's root port is PIX or PXB (computed exactly); else one under its root complex is PHB; else
    a placed port of its PCI NUMA node is NODE; else every port is SYS (:func:`ncclctl.plan.paths.pcie_path_type`).
    Within the last three tiers only NUMA decides, so their sets are shared by GPUs alike (``shared`` names them).
    """

    def __init__(self, node: Node, pool: list[_Port], key) -> None:
        self.node, self.pool, self.key = node, pool, key
        self.port: dict[tuple, list[int]] = {}
        self.rc: dict[str, list[int]] = {}
        self.rc_numa: dict[tuple, list[int]] = {}
        self.placed_numa: dict[int | None, list[int]] = {}
        self.numa: dict[int | None, list[int]] = {}
        for k, e in enumerate(pool):
            dev = node.pci_device(e.nic.bdf) if e.nic.bdf else None
            nn = node.numa_node_of(e.nic.bdf)
            self.numa.setdefault(nn, []).append(k)
            if dev is None:
                continue
            c = dev.path
            if len(c) >= 2:
                self.port.setdefault(c[:2], []).append(k)
            self.rc.setdefault(c[0], []).append(k)
            self.rc_numa.setdefault((c[0], nn), []).append(k)
            self.placed_numa.setdefault(nn, []).append(k)

    def best(self, g) -> tuple[tuple, tuple | None, list[int]]:
        """(the smallest key, the name of a set shared by GPUs alike or None, the ports at that key)."""
        node = self.node
        gnuma = g.numa_node if g.numa_node is not None else node.numa_node_of(g.bdf)
        dev = node.pci_device(g.bdf)
        if dev is not None:
            c = dev.path
            if len(c) >= 2 and c[:2] in self.port:
                members = self.port[c[:2]]
                keys = [self.key(g, self.pool[k]) for k in members]
                low = min(keys)
                return low, None, [k for k, kk in zip(members, keys) if kk == low]
            if c[0] in self.rc:
                same = self.rc_numa.get((c[0], gnuma)) if gnuma is not None else None
                if same:
                    return (pcie_rank("PHB"), 0), ("PHB", c[0], gnuma), same
                return (pcie_rank("PHB"), 1), ("PHB", c[0]), self.rc[c[0]]
            pn = node.numa_node_of(g.bdf)
            if pn in self.placed_numa:
                flag = 0 if gnuma is not None and gnuma == pn else 1
                return (pcie_rank("NODE"), flag), ("NODE", pn, flag), self.placed_numa[pn]
        if gnuma is not None and gnuma in self.numa:
            return (pcie_rank("SYS"), 0), ("SYS", gnuma), self.numa[gnuma]
        return (pcie_rank("SYS"), 1), ("SYS",), list(range(len(self.pool)))


def plan_rails(node: Node, compute_nics: tuple[str, ...] | None = None) -> RailPlan:
    ports = _ports(node)
    everything = tuple(sorted({e.nic.name for e in ports}, key=natural_key))
    if compute_nics is not None:
        unknown = [n for n in compute_nics if n not in everything]
        if unknown:
            raise InputError(f"--compute-nics names {', '.join(unknown)}, which is not an RDMA device of this host",
                             fix="RDMA devices: " + (", ".join(everything) or "none"))
        ports = [e for e in ports if e.nic.name in compute_nics]
    gpus = sorted(node.gpus, key=lambda g: g.index)
    if not gpus or not ports:
        return RailPlan(rails=(), excluded=everything, far_gpus=())

    def path(g, e: _Port) -> str:
        return pcie_path_type(node, g.bdf, e.nic.bdf) or "SYS"

    def key(g, e: _Port) -> tuple:
        gnuma = g.numa_node if g.numa_node is not None else node.numa_node_of(g.bdf)
        same_numa = gnuma is not None and gnuma == node.numa_node_of(e.nic.bdf)
        return (pcie_rank(path(g, e)), 0 if same_numa else 1)

    if compute_nics is None:
        # Compute ports: the closest (by path, then NUMA) of at least one GPU; the rest is storage/in-band.
        near = _Near(node, ports, key)
        close: set[int] = set()
        seen: set[tuple] = set()
        for g in gpus:
            _, shared, best = near.best(g)
            if shared is None or shared not in seen:
                close.update(best)
                if shared is not None:
                    seen.add(shared)
        compute = [e for k, e in enumerate(ports) if k in close]
    else:
        compute = list(ports)
    near = _Near(node, compute, key)
    usage: list[list[int]] = [[] for _ in compute]
    names = [natural_key(c.nic.name) for c in compute]
    heaps: dict[tuple, list[tuple]] = {}
    chosen: dict[int, int] = {}
    for g in gpus:
        # The closest port, then the least used, then by name: min over every compute port, found in the GPU's
        # closest ones (a heap per shared set, refreshed lazily: usage only grows).
        _, shared, best = near.best(g)
        if shared is None:
            k = min(best, key=lambda c: (len(usage[c]), names[c], compute[c].port.num, c))
        else:
            heap = heaps.get(shared)
            if heap is None:
                heap = heaps[shared] = [(len(usage[c]), names[c], compute[c].port.num, c) for c in best]
                heapq.heapify(heap)
            while heap[0][0] != len(usage[heap[0][3]]):
                top = heap[0]
                heapq.heapreplace(heap, (len(usage[top[3]]), *top[1:]))
            k = heap[0][3]
        usage[k].append(g.index)
        chosen[g.index] = k
    order: list[int] = []
    placed: set[int] = set()
    for g in gpus:
        if chosen[g.index] not in placed:
            placed.add(chosen[g.index])
            order.append(chosen[g.index])
    by_index = {}
    for g in reversed(gpus):
        by_index[g.index] = g  # node.gpu(i): the first GPU of that index
    rails, far, down = [], [], []
    for r, k in enumerate(order):
        e = compute[k]
        members = tuple(usage[k])
        paths = {i: path(by_index[i], e) for i in members}
        worst = max((paths[i] for i in members), key=pcie_rank)
        rails.append(Rail(rail=r, nic=e.nic.name, port=e.port.num, netdev=e.port.netdev, bdf=e.nic.bdf,
                          numa=node.numa_node_of(e.nic.bdf), link_layer=e.port.link_layer,
                          rate_gbps=e.port.rate_gbps, gpus=members, path=worst, active=e.port.is_active))
        far += [i for i in members if pcie_rank(paths[i]) > pcie_rank("PXB")]
        if not e.port.is_active:
            down.append(r)
    used = {r.nic for r in rails}
    excluded = tuple(n for n in everything if n not in used)
    return RailPlan(rails=tuple(rails), excluded=excluded, far_gpus=tuple(sorted(far)), down=tuple(down))


def plan_text(plan: RailPlan) -> str:
    if not plan.rails:
        return "no rails: the node has no GPUs or no active RDMA ports\n"
    lines = [f"{'rail':<5} {'HCA':<14} {'netdev':<14} {'bus id':<13} {'NUMA':<5} {'rate':<7} {'path':<5} GPUs"]
    for r in plan.rails:
        rate = f"{r.rate_gbps:g}G" if r.rate_gbps else "?"
        lines.append(f"{r.rail:<5} {r.hca:<14} {r.netdev or '-':<14} {r.bdf or '-':<13} "
                     f"{'-' if r.numa is None else r.numa:<5} {rate:<7} {r.path:<5} {','.join(map(str, r.gpus))}"
                     + ("" if r.active else "   PORT NOT ACTIVE"))
    lines.append("")
    lines.append(f"NCCL_IB_HCA={plan.nccl_ib_hca}")
    if plan.excluded:
        lines.append(f"not compute (storage / in-band): {', '.join(plan.excluded)}")
    if plan.down:
        lines.append(f"rails with the port down: {', '.join(map(str, plan.down))} (NCCL will not use them until they are ACTIVE)")
    if plan.far_gpus:
        lines.append(f"GPUs farther than PXB from their rail (GPUDirect RDMA off by default): "
                     f"{', '.join(map(str, plan.far_gpus))}")
    return "\n".join(lines) + "\n"


def plan_doc(plan: RailPlan) -> dict:
    from ncclctl import JSON_SCHEMA_VERSION

    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "rails": [{"rail": r.rail, "hca": r.hca, "nic": r.nic, "port": r.port, "netdev": r.netdev, "bdf": r.bdf,
                   "numa": r.numa, "link_layer": r.link_layer, "rate_gbps": r.rate_gbps, "gpus": list(r.gpus),
                   "path": r.path, "active": r.active} for r in plan.rails],
        "nccl_ib_hca": plan.nccl_ib_hca,
        "excluded": list(plan.excluded),
        "far_gpus": list(plan.far_gpus),
        "down": list(plan.down),
    }
