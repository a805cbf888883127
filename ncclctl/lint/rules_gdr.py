"""GPUDirect RDMA rules: is there any way for the NIC to reach GPU memory (host-facts.md 6, 7.12)?

The decision itself lives in :mod:`ncclctl.nccl.gdr` (shared with ``topo predict``). NCCL's IB plugin advertises GPU pointers to the core in two ways (src/transport/net_ib/gdr.cc, init.cc):
``NCCL_PTR_CUDA`` when a peer-memory client is registered (any of the files in ``PEERMEM_FILES`` exists), and
``NCCL_PTR_DMABUF`` when ``ibv_reg_dmabuf_mr`` is supported by the kernel. The core uses DMA-BUF only when
NCCL_DMABUF_ENABLE (default 1) is on, the CUDA driver is >= 11.7 and the GPU reports
CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (src/init.cc ``dmaBufSupported``), which needs the open GPU kernel modules
(R515+, Turing or newer). When neither works, NCCL logs ``NET/IB : GPU Direct RDMA Disabled for HCA <n> '<name>'``
(src/graph/topo.cc) and every transfer is staged through host memory.
"""

from __future__ import annotations

from typing import Iterable

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx, rdma_nics
from ncclctl.registry import Hit, rule
from ncclctl.model import Node
from ncclctl.nccl.gdr import PEERMEM_FILES, dmabuf

E = Severity.ERROR
W = Severity.WARNING
I = Severity.INFO  # noqa: E741

def _applies(node: Node) -> bool:
    return bool(node.gpus) and bool(rdma_nics(node))


def _nic_list(node: Node) -> str:
    names = [n.name for n in rdma_nics(node)]
    return ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")


@rule(
    "GDR001", "no-gpudirect-rdma", E, "No GPUDirect RDMA path: no peer-memory module and no usable DMA-BUF",
    what="A node with GPUs and RDMA NICs where NCCL can register GPU memory with the NIC neither through a "
         "peer-memory client (nvidia_peermem, or the legacy nv_peer_mem) nor through DMA-BUF. Graded warning when "
         "no peer-memory module is loaded and the DMA-BUF prerequisites cannot all be confirmed.",
    why="NCCL then logs 'NET/IB : GPU Direct RDMA Disabled for HCA <n> '<name>'' for every HCA and stages all "
        "inter-node traffic through host memory (an extra copy per message, CPU proxy load): inter-node bandwidth "
        "roughly halves and GPU<->NIC PXN/GDR-based algorithms are off (NVIDIA/nccl#1343, #1537, #897).",
    detect="Peer memory: the files NCCL itself tests, /sys/module/nvidia_peermem/version, "
           "/sys/kernel/mm/memory_peers/nv_mem/version and .../nv_mem_nc/version. DMA-BUF: the open kernel module "
           "('Open Kernel Module' in /proc/driver/nvidia/version), kernel >= 5.12 (/proc/sys/kernel/osrelease), "
           "CUDA driver >= 11.7 (NVML; else driver branch >= 515), GPUs Turing or newer (NVML compute capability), "
           "and NCCL_DMABUF_ENABLE not 0 (environment / nccl.conf).",
    fix="Load the peer-memory module now and at every boot: 'modprobe nvidia-peermem' and "
        "'echo nvidia-peermem > /etc/modules-load.d/nvidia-peermem.conf' (needs an RDMA stack with peer-memory "
        "support, e.g. MLNX_OFED/DOCA-OFED); or switch to the open GPU kernel modules on a kernel >= 5.12 so NCCL "
        "uses DMA-BUF.",
)
def no_gdr(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    if not _applies(node) or node.facts.peermem:
        return
    d = dmabuf(node, ctx.nccl)
    if d.ok:
        return  # DMA-BUF works (GDR002 says so)
    evidence = ["no peer-memory file: " + ", ".join(f for _, f in PEERMEM_FILES)]
    if "nvidia_peermem" in node.facts.modules:
        evidence.append("/proc/modules lists nvidia_peermem but /sys/module/nvidia_peermem/version is missing")
    evidence += [f"DMA-BUF: {m}" for m in d.met]
    evidence += [f"DMA-BUF fails: {m}" for m in d.failed]
    evidence += [f"DMA-BUF unknown: {m}" for m in d.unknown]
    fix = "modprobe nvidia-peermem && echo nvidia-peermem > /etc/modules-load.d/nvidia-peermem.conf"
    if d.fixes:
        fix += "; or, for DMA-BUF: " + "; ".join(d.fixes)
    if d.failed:
        yield Hit(ctx.host,
                  f"no peer-memory module is loaded and DMA-BUF is unusable: {'; '.join(d.failed)}. NCCL will "
                  f"report 'GPU Direct RDMA Disabled' for {_nic_list(node)}",
                  fix=fix, evidence=tuple(evidence))
    else:
        yield Hit(ctx.host,
                  f"no peer-memory module is loaded and DMA-BUF cannot be confirmed (unknown: "
                  f"{'; '.join(d.unknown)}). NCCL may report 'GPU Direct RDMA Disabled' for {_nic_list(node)}",
                  fix=fix, evidence=tuple(evidence), severity=W)


@rule(
    "GDR002", "gpudirect-rdma-via-dmabuf", I, "GPUDirect RDMA relies on DMA-BUF (no peer-memory module)",
    what="A node with GPUs and RDMA NICs where no peer-memory module is loaded but every DMA-BUF prerequisite is "
         "met, so GPUDirect RDMA depends on DMA-BUF. This is NVIDIA's recommended setup on current stacks; it is "
         "reported so that a fleet where some nodes use nvidia_peermem and others DMA-BUF is visible.",
    why="NCCL uses DMA-BUF only from 2.13 (older NCCL, or a net plugin without regMrDmaBuf, then runs without "
        "GPUDirect RDMA), and only when ibv_reg_dmabuf_mr works for the HCA: an rdma-core older than 34 or an "
        "RDMA driver without dma-buf support silently disables it ('DMA-BUF is available on GPU device' missing "
        "from NCCL_DEBUG=INFO output).",
    detect="As GDR001: no peer-memory file, the open kernel module, kernel >= 5.12, CUDA driver >= 11.7, Turing or "
           "newer GPUs, NCCL_DMABUF_ENABLE not 0.",
    fix="Nothing to change if NCCL >= 2.13 and rdma-core >= 34 are used; confirm with NCCL_DEBUG=INFO "
        "('DMA-BUF is available on GPU device', 'GPU Direct RDMA Enabled for HCA'). Load nvidia-peermem if an "
        "older NCCL or net plugin must run here.",
)
def gdr_dmabuf_only(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    if not _applies(node) or node.facts.peermem:
        return
    d = dmabuf(node, ctx.nccl)
    if not d.ok:
        return  # GDR001's business
    yield Hit(ctx.host,
              f"no peer-memory module is loaded; GPUDirect RDMA for {_nic_list(node)} relies on DMA-BUF "
              f"({', '.join(d.met)})",
              evidence=tuple(f"DMA-BUF: {m}" for m in d.met) + ("no peer-memory file: " + ", ".join(f for _, f in PEERMEM_FILES),))
