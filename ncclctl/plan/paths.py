"""Derived topology: path types between GPUs and NICs in NCCL/nvidia-smi vocabulary (pure).

Vocabulary (``nvidia-smi topo -m``): ``X`` self, ``NV#`` a bonded set of # NVLinks (directly or through
NVSwitches), ``PIX`` at most one PCIe switch, ``PXB`` several switches without a host bridge, ``PHB`` through a
host bridge (same root complex), ``NODE`` between host bridges of one NUMA node, ``SYS`` across the inter-socket
link. NCCL calls both NODE and PHB "PHB".

Switches are counted the way NCCL walks sysfs: each switch is one upstream port with its downstream ports, so a
GPU and a NIC under the same switch are PIX even though three bridge functions lie between them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ncclctl.names import natural_key
from ncclctl.record import record

if TYPE_CHECKING:  # ncclctl.model is a large import
    from ncclctl.model import Gpu, Nic, Node

#: PCIe path types from closest to farthest.
PCIE_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")
_RANK = {name: i for i, name in enumerate(PCIE_ORDER)}


def pcie_rank(path_type: str) -> int:
    """Order of a path type for comparisons; NV# is closer than any PCIe type."""
    if path_type.startswith("NV"):
        return -1
    return _RANK.get(path_type, len(PCIE_ORDER))


def _chain(node: Node, bdf: str | None) -> tuple[str, ...] | None:
    if bdf is None:
        return None
    dev = node.pci_device(bdf)
    return dev.path if dev else None


def pcie_path_type(node: Node, a: str | None, b: str | None) -> str | None:
    """PCIe path type between two functions (by bus id); None when either is not placed."""
    pa, pb = _chain(node, a), _chain(node, b)
    if pa is None or pb is None:
        return None
    if pa[0] != pb[0]:
        na, nb = node.numa_node_of(a), node.numa_node_of(b)
        return "NODE" if na == nb else "SYS"
    common = 0
    while common < min(len(pa), len(pb)) and pa[common] == pb[common]:
        common += 1
    if common <= 1:
        return "PHB"  # only the root complex in common: different root ports
    lca = pa[common - 1]
    switches: set[str] = set()
    for chain in (pa, pb):
        for comp in chain[common:]:
            dev = node.pci_device(comp)
            if dev is not None and dev.role == "switch_upstream":
                switches.add(comp)
    lca_dev = node.pci_device(lca)
    if lca_dev is not None:
        if lca_dev.role == "switch_upstream":
            switches.add(lca)
        elif lca_dev.role == "switch_downstream" and lca_dev.parent:
            switches.add(lca_dev.parent)
        elif lca_dev.role == "root_port" and common == 2:
            # Both under the same root port: one device is the other's ancestor, or a bridge-less split.
            pass
    return "PIX" if len(switches) <= 1 else "PXB"


def nvlink_count(a: Gpu, b: Gpu) -> int:
    """Active NVLinks joining two GPUs: direct links, or min of both GPUs' links into NVSwitches."""
    direct = sum(1 for link in a.active_nvlinks if link.remote_type == "gpu" and link.remote_bdf == b.bdf)
    if direct:
        return direct
    sa = sum(1 for link in a.active_nvlinks if link.remote_type == "nvswitch")
    sb = sum(1 for link in b.active_nvlinks if link.remote_type == "nvswitch")
    if sa and sb:
        return min(sa, sb)
    return 0


def gpu_gpu_type(node: Node, a: Gpu, b: Gpu) -> str:
    if a.index == b.index:
        return "X"
    n = nvlink_count(a, b)
    if n:
        return f"NV{n}"
    return pcie_path_type(node, a.bdf, b.bdf) or "SYS"


def gpu_nic_type(node: Node, g: Gpu, n: Nic) -> str:
    return pcie_path_type(node, g.bdf, n.bdf) or "SYS"


@record
class Matrix:
    """The GPU/NIC path matrix in ``nvidia-smi topo -m`` form, with CPU/NUMA affinity and the NIC legend."""
    labels: tuple[str, ...]
    cells: tuple[tuple[str, ...], ...]
    cpu_affinity: tuple[str, ...]
    numa_affinity: tuple[str, ...]
    nic_legend: tuple[tuple[str, str], ...]


def nics_in_order(node: Node) -> tuple[Nic, ...]:
    return tuple(sorted(node.nics, key=lambda n: natural_key(n.name)))


def matrix(node: Node) -> Matrix:
    """The ``nvidia-smi topo -m`` matrix computed from the model."""
    from ncclctl.model import Gpu

    gpus = sorted(node.gpus, key=lambda g: g.index)
    nics = nics_in_order(node)
    labels = tuple([f"GPU{g.index}" for g in gpus] + [f"NIC{i}" for i in range(len(nics))])
    endpoints: list[Gpu | Nic] = [*gpus, *nics]
    rows = []
    for a in endpoints:
        row = []
        for b in endpoints:
            if a is b:
                row.append("X")
            elif isinstance(a, Gpu) and isinstance(b, Gpu):
                row.append(gpu_gpu_type(node, a, b))
            else:
                row.append(pcie_path_type(node, a.bdf, b.bdf) or "SYS")
        rows.append(tuple(row))
    numa_by_id = {n.id: n for n in node.numa}
    cpu_aff, numa_aff = [], []
    for e in endpoints:
        if not isinstance(e, Gpu):
            cpu_aff.append("")
            numa_aff.append("")
            continue
        numa = e.numa_node
        if numa is None or numa < 0 or numa not in numa_by_id:
            cpu_aff.append("N/A")
            numa_aff.append("N/A")
        else:
            cpu_aff.append(numa_by_id[numa].cpulist or "N/A")
            numa_aff.append(str(numa))
    legend = tuple((f"NIC{i}", n.name) for i, n in enumerate(nics))
    return Matrix(labels, tuple(rows), tuple(cpu_aff), tuple(numa_aff), legend)


def nearest_nics(node: Node) -> dict[int, tuple[str, ...]]:
    """Each GPU's closest RDMA NICs by path type (ties kept, natural name order)."""
    nics = nics_in_order(node)
    out: dict[int, tuple[str, ...]] = {}
    for g in sorted(node.gpus, key=lambda g: g.index):
        if not nics:
            out[g.index] = ()
            continue
        ranked = [(pcie_rank(gpu_nic_type(node, g, n)), n.name) for n in nics]
        best = min(r for r, _ in ranked)
        out[g.index] = tuple(name for r, name in ranked if r == best)
    return out


def derived(node: Node) -> dict:
    """The derived section of the JSON model."""
    gpus = sorted(node.gpus, key=lambda g: g.index)
    nics = nics_in_order(node)
    gpu_gpu = {str(a.index): {str(b.index): gpu_gpu_type(node, a, b) for b in gpus if b is not a} for a in gpus}
    gpu_nic = {str(g.index): {n.name: gpu_nic_type(node, g, n) for n in nics} for g in gpus}
    near = nearest_nics(node)
    return {
        "gpu_gpu": gpu_gpu,
        "gpu_nic": gpu_nic,
        "nearest_nics": {str(k): list(v) for k, v in near.items()},
        "virtual": node.is_virtual,
    }
