"""Which PCIe platform a node is, for ACS and IOMMU advice, and the ACS masks each port needs there.

NVIDIA's ``rdma_topo`` (rdma-core ``kernel-boot/rdma_topo``, extended by rdma-core PR #1725) is the reference: it
sorts a host into one of three GPUDirect topologies and computes an ACS mask per port; this module follows it,
device by device, on the node model (pure, no I/O):

* **Data Direct** (``rdma_topo``'s "DMA-based"; GB200/GB300 compute trays): a ConnectX-8 has, besides its NIC PF, a
  separate *DMA function* (15b3:2100, class 0x080100; NCCL names its virtual device ``mlx5_N_dma``) below a
  ConnectX PCIe switch that also carries the GPU::

      Grace root port -> CX switch USP -+-> DSP -> DMA function
                                        +-> DSP -> CX switch USP -> DSP -> GPU

  The NIC PF is paired with its DMA function by the VPD ``V3`` board UUID. The DSP toward the DMA function needs
  ``xx110x1`` (UpstreamFwd, CmpltRedir, SrcValid on; ReqRedir off), the DSP toward the GPU ``xx101x1`` (ReqRedir on,
  CmpltRedir off), the root port ``xx111x0`` (SrcValid off: the whole segment forms one IOMMU group), every other
  ConnectX switch port and Grace/Vera root port the kernel default ``xx111x1``; and the GPU and the DMA function
  must share an IOMMU group.
* **Grace NUMA** (``rdma_topo``'s "NUMA-based"; GH200, GB200 without Data Direct): GPUs sit directly on Grace/Vera
  root ports, NICs on others; every Grace/Vera root port and ConnectX switch port keeps the kernel default, the
  GPUs and ConnectX PFs of a NUMA node each have their own IOMMU group, and the ConnectX PFs have no ATS.
* **Classic**: everything else (x86 HGX/DGX with Broadcom/Microchip switches, PCIe servers, VMs): ``rdma_topo``
  has no opinion ("No supported topology"); ncclctl's long-standing rule (ACS redirect off on the P2P paths,
  PCI001) applies.

A mask is ``rdma_topo``'s string, bit 6 first: ``1`` must be set, ``0`` must be clear, ``x`` is free. Bits: 0
SrcValid, 1 TransBlk, 2 ReqRedir, 3 CmpltRedir, 4 UpstreamFwd, 5 EgressCtrl, 6 DirectTrans.

* **Inline** (``rdma_topo``'s "Inline", added by PR #1725; x86 servers whose GPU and ConnectX PF share a ConnectX
  PCIe switch, no DMA function)::

      root port -> CX switch USP -+-> DSP -> NIC PF
                                  +-> DSP -> CX switch USP -> DSP -> GPU

  Bare metal (the NIC exposes no ATS): the NIC's DSP, the GPU's DSP, the root port and every other ConnectX switch
  port ``xx000x0`` (ACS off), NIC and GPU in one IOMMU group (or none). Virtualised (the NIC exposes ATS): the NIC's
  DSP ``1x111x1`` (DirectTrans on), the rest the kernel default, NIC and GPU in different groups. ``rdma_topo``
  decides "virtualised" from the NICs' ATS, all alike.
"""

from __future__ import annotations

from ncclctl.model import Node, PciDevice
from ncclctl.record import record

NVIDIA, MELLANOX = "0x10de", "0x15b3"
GRACE_RP = {"0x22b1", "0x22b2", "0x22b8"}  # NVIDIA Grace PCIe root port
VERA_RP = {"0x2f95", "0x2f96"}  # NVIDIA Vera PCIe root port
CX_NIC = {"0x1021", "0x1023", "0x1025"}  # ConnectX-7, ConnectX-8, ConnectX-9
CX_DMA = {"0x2100"}  # ConnectX-8 DMA function (Data Direct)
CX_SWITCH = {"0x197c", "0x1979"}  # ports of a ConnectX PCIe switch
BF3_SWITCH = {"0x197b"}  # ports of a BlueField-3 PCIe switch

DATA_DIRECT, GRACE_NUMA, INLINE, CLASSIC = "data-direct", "grace-numa", "inline", "classic"
PLATFORM_NAMES = {
    DATA_DIRECT: "ConnectX-8 Data Direct (GB200/GB300-class Grace tray)",
    GRACE_NUMA: "Grace with GPUs on their own root ports (GH200/GB200-class, no Data Direct)",
    INLINE: "ConnectX PCIe switch carrying a NIC and a GPU (no Data Direct)",
    CLASSIC: "classic PCIe (switches between GPUs and NICs, or none)",
}

DMA_DSP_MASK, GPU_DSP_MASK, DD_ROOT_MASK = "xx110x1", "xx101x1", "xx111x0"


def device_type(dev: PciDevice) -> str:
    """``rdma_topo``'s device type of a PCI function (its ``pci_device_types`` table), ``""`` for the rest."""
    if dev.vendor == NVIDIA and dev.role == "root_port":
        if dev.device in GRACE_RP:
            return "grace_rp"
        if dev.device in VERA_RP:
            return "vera_rp"
    if dev.vendor == MELLANOX:
        if dev.device in CX_NIC and not dev.is_bridge:
            return "cx_nic"
        if dev.device in CX_DMA:
            return "cx_dma"
        if dev.device in CX_SWITCH and dev.is_bridge:
            return "cx_switch"
        if dev.device in BF3_SWITCH and dev.is_bridge:
            return "bf3_switch"
    if dev.vendor == NVIDIA and dev.class_code.startswith("0x03"):
        return "nvgpu"
    if dev.role == "root_port":
        return "generic_rp"
    return ""


def kernel_default(dev: PciDevice) -> str:
    """The mask the kernel enables with an active IOMMU (SrcValid, ReqRedir, CmpltRedir, UpstreamFwd); a Vera root
    port advertises CmpltRedir read-only off."""
    return "xx101x1" if device_type(dev) == "vera_rp" else "xx111x1"


def mask_ok(value: int, mask: str) -> bool:
    """Whether ACS control word ``value`` satisfies ``mask`` (bit 6 first)."""
    return apply_mask(value, mask) == value


def apply_mask(value: int, mask: str) -> int:
    """``value`` with the mask's 1 bits set and 0 bits cleared (what ``rdma_topo setpci-acs`` writes)."""
    for i, c in enumerate(reversed(mask)):
        if c == "1":
            value |= 1 << i
        elif c == "0":
            value &= ~(1 << i) & 0xFFFF
    return value


@record
class DataDirect:
    """One Data Direct complex: the DMA function, its NIC PF (None when the VPD could not be read), the GPU and the
    ports the masks apply to."""
    dma: str
    nic: str | None
    gpu: str
    root_port: str
    usp: str
    dma_dsp: str
    gpu_dsp: str


@record
class Inline:
    """One Inline complex: a GPU and the ConnectX PF under the same ConnectX switch, and the ports the masks apply to."""
    nic: str
    gpu: str
    root_port: str
    nic_dsp: str
    gpu_dsp: str


@record
class Requirement:
    """The ACS mask one port needs and why (``role``, said in findings)."""
    bdf: str
    mask: str
    role: str


@record
class Platform:
    kind: str
    complexes: tuple[DataDirect, ...] = ()
    #: The ports judged on this platform, in bus-id order (empty on classic hosts).
    requirements: tuple[Requirement, ...] = ()
    #: Data Direct functions whose surroundings do not match the layout above (rdma_topo: "Unexpected topology").
    unrecognized: tuple[str, ...] = ()
    inline: tuple[Inline, ...] = ()
    #: Inline platforms: whether the host is set up for VMs (its NICs expose ATS), as rdma_topo decides it.
    virt: bool | None = None

    @property
    def name(self) -> str:
        return PLATFORM_NAMES[self.kind]

    def requirement(self, bdf: str) -> Requirement | None:
        for r in self.requirements:
            if r.bdf == bdf:
                return r
        return None


def _parent(node: Node, dev: PciDevice | None, kind: str) -> PciDevice | None:
    if dev is None or dev.parent is None:
        return None
    p = node.pci_device(dev.parent)
    return p if p is not None and device_type(p) == kind else None


def _complex(node: Node, dma: PciDevice) -> DataDirect | None:
    """``rdma_topo``'s ``__get_nvcx_complex``: DMA -> DSP -> USP -> Grace root port, and the one GPU below that root
    port reached through DSP -> USP -> DSP of ConnectX switches from the same USP."""
    dsp = _parent(node, dma, "cx_switch")
    usp = _parent(node, dsp, "cx_switch")
    rp = _parent(node, usp, "grace_rp")
    if dsp is None or usp is None or rp is None:
        return None
    gpus = [d for d in node.pci if device_type(d) == "nvgpu" and rp.bdf in d.path[:-1]]
    if len(gpus) != 1:
        return None
    gpu = gpus[0]
    dsp2 = _parent(node, gpu, "cx_switch")
    usp2 = _parent(node, dsp2, "cx_switch")
    dsp1 = _parent(node, usp2, "cx_switch")
    if dsp1 is None or _parent(node, dsp1, "cx_switch") is not usp:
        return None
    nic = None
    if dma.vpd_v3:
        pfs = sorted(d.bdf for d in node.pci if device_type(d) == "cx_nic" and d.vpd_v3 == dma.vpd_v3)
        nic = pfs[0] if pfs else None
    return DataDirect(dma=dma.bdf, nic=nic, gpu=gpu.bdf, root_port=rp.bdf, usp=usp.bdf, dma_dsp=dsp.bdf,
                      gpu_dsp=dsp1.bdf)


def _inline(node: Node, gpu: PciDevice) -> Inline | None:
    """``rdma_topo``'s ``__get_nvcx_inline_complex``: GPU -> DSP -> USP -> DSP -> shared USP (ConnectX switch
    ports), the first generic root port above, the ConnectX PF below the shared USP."""
    dsp2 = _parent(node, gpu, "cx_switch")
    usp2 = _parent(node, dsp2, "cx_switch")
    dsp1 = _parent(node, usp2, "cx_switch")
    shared = _parent(node, dsp1, "cx_switch")
    if dsp1 is None or shared is None:
        return None
    rp = next((b for b in reversed(shared.path[:-1]) if (d := node.pci_device(b)) is not None
               and device_type(d) == "generic_rp"), None)
    nics = sorted((d for d in node.pci if device_type(d) == "cx_nic" and shared.bdf in d.path[:-1]),
                  key=lambda d: d.bdf)
    if rp is None or not nics:
        return None
    nic = nics[0]
    nic_dsp = nic.path[nic.path.index(shared.bdf) + 1]
    return Inline(nic=nic.bdf, gpu=gpu.bdf, root_port=rp, nic_dsp=nic_dsp, gpu_dsp=dsp1.bdf)


def _inline_platform(node: Node, types: dict[str, str]) -> Platform:
    complexes = []
    for d in node.pci:
        if types[d.bdf] == "nvgpu":
            c = _inline(node, d)
            if c is None:
                return Platform(CLASSIC)  # rdma_topo: "No supported topology" for the whole host
            complexes.append(c)
    ats = {bool(dev.ats) for c in complexes if (dev := node.pci_device(c.nic)) is not None}
    if not complexes or len(ats) != 1:
        return Platform(CLASSIC)  # NICs with different ATS: rdma_topo cannot tell virt from bare metal
    virt = ats.pop()
    req: dict[str, Requirement] = {}
    for c in complexes:
        rp = node.pci_device(c.root_port)
        assert rp is not None
        if virt:
            req[c.nic_dsp] = Requirement(c.nic_dsp, "1x111x1", f"ConnectX switch port toward NIC {c.nic} (VMs)")
            req[c.gpu_dsp] = Requirement(c.gpu_dsp, "xx111x1", f"ConnectX switch port toward GPU {c.gpu} (VMs)")
            req[c.root_port] = Requirement(c.root_port, kernel_default(rp), f"root port above GPU {c.gpu} (VMs)")
        else:
            req[c.nic_dsp] = Requirement(c.nic_dsp, "xx000x0", f"ConnectX switch port toward NIC {c.nic}")
            req[c.gpu_dsp] = Requirement(c.gpu_dsp, "xx000x0", f"ConnectX switch port toward GPU {c.gpu}")
            req[c.root_port] = Requirement(c.root_port, "xx000x0", f"root port above GPU {c.gpu} and NIC {c.nic}")
    for d in node.pci:
        t = types[d.bdf]
        if d.bdf in req or not (t.endswith("switch") or t in ("grace_rp", "vera_rp")):
            continue
        if d.acs_ctrl is None and not d.acs_unknown:
            continue
        mask = kernel_default(d) if virt else "xx000x0"
        req[d.bdf] = Requirement(d.bdf, mask, "ConnectX/BlueField switch port" + (": the kernel default" if virt else ""))
    return Platform(INLINE, requirements=tuple(req[b] for b in sorted(req)),
                    inline=tuple(sorted(complexes, key=lambda c: c.nic)), virt=virt)


def platform(node: Node) -> Platform:
    """The node's platform and the ACS mask of every port judged there (``rdma_topo``'s ``compute_acs``)."""
    types = {d.bdf: device_type(d) for d in node.pci}
    if any(t == "cx_dma" for t in types.values()):
        kind = DATA_DIRECT
    elif any(types[d.bdf] == "nvgpu" and d.parent is not None and types.get(d.parent) in ("grace_rp", "vera_rp")
             for d in node.pci):
        kind = GRACE_NUMA
    elif {"cx_switch", "nvgpu", "cx_nic"} <= set(types.values()):
        return _inline_platform(node, types)
    else:
        return Platform(CLASSIC)
    req: dict[str, Requirement] = {}
    complexes, unrecognized = [], []
    if kind == DATA_DIRECT:
        for d in node.pci:
            if types[d.bdf] != "cx_dma":
                continue
            c = _complex(node, d)
            if c is None:
                unrecognized.append(d.bdf)
                continue
            complexes.append(c)
            req[c.dma_dsp] = Requirement(c.dma_dsp, DMA_DSP_MASK, f"ConnectX switch port toward DMA function {c.dma}")
            req[c.gpu_dsp] = Requirement(c.gpu_dsp, GPU_DSP_MASK, f"ConnectX switch port toward GPU {c.gpu}")
            req[c.root_port] = Requirement(c.root_port, DD_ROOT_MASK,
                                           f"Grace root port of the Data Direct segment of {c.dma}")
    for d in node.pci:
        t = types[d.bdf]
        if d.bdf in req or not (t.endswith("switch") or t in ("grace_rp", "vera_rp")):
            continue
        if d.acs_ctrl is None and not d.acs_unknown:
            continue  # no ACS capability: nothing to set (rdma_topo skips it too)
        what = "Grace/Vera root port" if t.endswith("_rp") else "ConnectX/BlueField switch port"
        req[d.bdf] = Requirement(d.bdf, kernel_default(d), f"{what}: the kernel default")
    return Platform(kind, tuple(sorted(complexes, key=lambda c: c.dma)),
                    tuple(req[b] for b in sorted(req)), tuple(sorted(unrecognized)))


def config_acs(node: Node, plat: Platform) -> str:
    """The ``pci=config_acs=`` value ``rdma_topo write-grub-acs`` writes: every mask that differs from the
    kernel default, in bus-id order."""
    out = []
    for r in plat.requirements:
        dev = node.pci_device(r.bdf)
        if dev is not None and r.mask != kernel_default(dev):
            out.append(f"{r.mask}@{r.bdf}")
    return ";".join(out)
