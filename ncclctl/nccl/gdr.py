"""Whether NCCL's IB plugin can give the NIC GPU memory (GPUDirect RDMA), the way NCCL decides it.

NCCL's IB plugin advertises GPU pointers to the core in two ways (src/transport/net_ib/gdr.cc, init.cc):
``NCCL_PTR_CUDA`` when a peer-memory client is registered (any of the files in ``PEERMEM_FILES`` exists), and
``NCCL_PTR_DMABUF`` when ``ibv_reg_dmabuf_mr`` is supported by the kernel. The core uses DMA-BUF only when
NCCL_DMABUF_ENABLE (default 1) is on, the CUDA driver is >= 11.7 and the GPU reports
CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (src/init.cc ``dmaBufSupported``), which needs the open GPU kernel modules
(R515+, Turing or newer). The lint rules (:mod:`ncclctl.lint.rules_gdr`) and the model (``topo predict``) both
ask this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ncclctl.model import Node
    from ncclctl.nccl.settings import Resolved

#: What NCCL checks for a peer-memory client (gdr.cc ibGdrSupportInitOnce): (module name, file). The probe records
#: the names of those present as ``facts.peermem``.
PEERMEM_FILES = (
    ("nvidia_peermem", "/sys/module/nvidia_peermem/version"),
    ("nv_mem", "/sys/kernel/mm/memory_peers/nv_mem/version"),
    ("nv_mem_nc", "/sys/kernel/mm/memory_peers/nv_mem_nc/version"),
)

MIN_KERNEL = (5, 12)  # RDMA dma-buf (ib_umem_dmabuf, ibv_reg_dmabuf_mr) merged in Linux 5.12
MIN_CUDA = 11070  # src/init.cc: cudaDriverVersion < 11070 -> no DMA-BUF
MIN_DRIVER = 515  # first driver branch with DMA-BUF export in the open kernel modules (CUDA 11.7)
MIN_SM = 75  # the open kernel modules (and DMA-BUF) support Turing and newer


def kernel_version(release: str | None) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", release or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def driver_major(version: str | None) -> int | None:
    m = re.match(r"(\d+)\.", version or "")
    return int(m.group(1)) if m else None


@dataclass
class DmaBuf:
    """Whether NCCL can use DMA-BUF for GPUDirect RDMA here: each condition is met, failed or unknown."""

    met: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.unknown


def dmabuf(node: Node, nccl: Resolved | None = None) -> DmaBuf:
    """``nccl``: the node's NCCL settings when the caller has them (``ctx.nccl``)."""
    f = node.facts
    d = DmaBuf()
    if nccl is None:
        from ncclctl.nccl.settings import resolve

        nccl = resolve(node)
    raw = nccl.value("NCCL_DMABUF_ENABLE")
    if nccl.int("NCCL_DMABUF_ENABLE", 1) == 0:  # NCCL_PARAM: empty or out of range keeps the default 1
        d.failed.append(f"NCCL_DMABUF_ENABLE={raw} turns DMA-BUF off")
        d.fixes.append("remove NCCL_DMABUF_ENABLE=0 from the environment / nccl.conf")
    if f.nvidia_module == "open":
        d.met.append("NVIDIA open kernel module")
    elif f.nvidia_module == "proprietary":
        d.failed.append("the proprietary NVIDIA kernel module is loaded, and DMA-BUF export needs the open modules")
        d.fixes.append("install the open GPU kernel modules of the same driver (e.g. nvidia-driver-<branch>-open, "
                       "or the .run installer with -m=kernel-open)")
    else:
        d.unknown.append("NVIDIA kernel module flavour (no /proc/driver/nvidia/version)")
    kv = kernel_version(f.kernel)
    if kv is None:
        d.unknown.append("kernel version")
    elif kv >= MIN_KERNEL:
        d.met.append(f"kernel {f.kernel} >= 5.12")
    else:
        d.failed.append(f"kernel {f.kernel} is older than 5.12 (no RDMA dma-buf support: ibv_reg_dmabuf_mr fails "
                        f"with EOPNOTSUPP)")
        d.fixes.append("move to a kernel >= 5.12 with rdma-core >= 34")
    if f.cuda_driver_version is not None:
        if f.cuda_driver_version >= MIN_CUDA:
            d.met.append(f"CUDA driver {f.cuda_driver_version // 1000}.{f.cuda_driver_version % 1000 // 10} >= 11.7")
        else:
            d.failed.append(f"CUDA driver {f.cuda_driver_version // 1000}.{f.cuda_driver_version % 1000 // 10} is "
                            f"older than 11.7")
            d.fixes.append("upgrade the NVIDIA driver to R515 or newer")
    else:
        major = driver_major(f.driver_version)
        if major is None:
            d.unknown.append("NVIDIA driver version")
        elif major >= MIN_DRIVER:
            d.met.append(f"driver {f.driver_version} >= R515")
        else:
            d.failed.append(f"driver {f.driver_version} is older than R515")
            d.fixes.append("upgrade the NVIDIA driver to R515 or newer")
    old = sorted(g.index for g in node.gpus if g.sm is not None and g.sm < MIN_SM)
    if old:
        d.failed.append("GPU" + ", GPU".join(map(str, old)) + " predate Turing (sm < 75): no DMA-BUF")
    return d


def gdr_from_node(node: Node) -> tuple[bool, str]:
    """Whether NCCL's IB plugin reports GPU pointers (``NCCL_PTR_CUDA`` via a peer-memory client, or DMA-BUF)."""
    if node.facts.peermem:
        return True, f"peer-memory client present ({', '.join(node.facts.peermem)})"
    d = dmabuf(node)
    if d.ok:
        return True, "DMA-BUF usable: " + ", ".join(d.met)
    if d.failed:
        return False, "no peer-memory module and no DMA-BUF: " + "; ".join(d.failed)
    return True, ("no peer-memory module; DMA-BUF assumed usable although " + ", ".join(d.unknown)
                  + " could not be checked")
