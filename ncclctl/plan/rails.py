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
        close: set[int] = set()
        for g in gpus:
            best = min(key(g, e) for e in ports)
            close |= {id(e) for e in ports if key(g, e) == best}
        compute = [e for e in ports if id(e) in close]
    else:
        compute = list(ports)
    usage: dict[int, list[int]] = {id(e): [] for e in compute}
    chosen: dict[int, _Port] = {}
    for g in gpus:
        e = min(compute, key=lambda c: (key(g, c), len(usage[id(c)]), natural_key(c.nic.name), c.port.num))
        usage[id(e)].append(g.index)
        chosen[g.index] = e
    order: list[_Port] = []
    for g in gpus:
        if chosen[g.index] not in order:
            order.append(chosen[g.index])
    rails, far, down = [], [], []
    for k, e in enumerate(order):
        members = tuple(usage[id(e)])
        worst = max((path(node.gpu(i), e) for i in members), key=pcie_rank)
        rails.append(Rail(rail=k, nic=e.nic.name, port=e.port.num, netdev=e.port.netdev, bdf=e.nic.bdf,
                          numa=node.numa_node_of(e.nic.bdf), link_layer=e.port.link_layer,
                          rate_gbps=e.port.rate_gbps, gpus=members, path=worst, active=e.port.is_active))
        far += [i for i in members if pcie_rank(path(node.gpu(i), e)) > pcie_rank("PXB")]
        if not e.port.is_active:
            down.append(k)
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
