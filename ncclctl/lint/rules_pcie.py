"""PCIe rules: ACS redirect on P2P paths, IOMMU translation, downtrained links, GPU<->NIC distance.

Grounding: host-facts.md sections 1.3 (link speeds), 1.6 (ACS), 1.7 (IOMMU), 7.1-7.3 and 7.10; NCCL
``src/graph/paths.cc`` (``ncclTopoCheckP2p``, ``ncclTopoCheckGdr``, ``ncclGetLevel``) for which pairs NCCL drives
peer-to-peer and how far apart it lets a GPU and a NIC be before it gives up on GPUDirect RDMA.

NCCL's settings are read through :mod:`ncclctl.nccl` (the lint context's ``ctx.nccl`` in rules, :func:`resolve` in
the node-level helpers that tests call directly).
"""

from __future__ import annotations

from typing import Iterable

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx, rdma_nics
from ncclctl.registry import Hit, Option, rule
from ncclctl.model import Gpu, Nic, Node, PciDevice
from ncclctl.nccl.settings import resolve
from ncclctl.nccl.values import PATH_LEVELS, disables_p2p, read_level
from ncclctl.record import record

E = Severity.ERROR
W = Severity.WARNING
I = Severity.INFO  # noqa: E741

# --------------------------------------------------------------------------------------------------
# NCCL path levels (src/graph/topo.cc topoPathTypeStr; order = closeness)

NCCL_PATHS = tuple(name for name, _ in PATH_LEVELS)
_NCCL_RANK = {name: i for i, name in enumerate(NCCL_PATHS)}


def nccl_rank(path_type: str) -> int:
    """NCCL's order of a path type; nvidia-smi's NODE is NCCL's PHB, NV# is NVL."""
    if path_type.startswith("NV") and path_type not in _NCCL_RANK:
        return _NCCL_RANK["NVL"]
    if path_type == "NODE":
        return _NCCL_RANK["PHB"]
    return _NCCL_RANK[path_type]


@record
class Level:
    """An effective NCCL distance limit: ``name`` (a NCCL path type) and where it came from."""

    name: str
    source: str  # "default" or "NAME=value"

    @property
    def rank(self) -> int:
        return _NCCL_RANK[self.name]


def user_level(node: Node, level_env: str, disable_env: str | None = None) -> Level | None:
    """``ncclGetLevel`` (:func:`ncclctl.nccl.values.read_level`): ``<disable_env>`` reading as 1 means LOC;
    ``<level_env>`` is a path name (exact, case-sensitive) or an old-style number; anything else is ignored by
    NCCL (None here, like unset)."""
    nccl = resolve(node)
    if disable_env:
        raw = nccl.value(disable_env)
        if raw is not None and disables_p2p(raw):
            return Level("LOC", f"{disable_env}={raw}")
    raw = nccl.value(level_env)
    if raw is None:
        return None
    r = read_level(raw)
    return Level(r.level, f"{level_env}={raw}") if r.level is not None else None


def p2p_level(node: Node) -> Level:
    """The GPU<->GPU P2P limit (``ncclTopoCheckP2p``): PXB, SYS on x86 AMD hosts with at most two GPUs."""
    user = user_level(node, "NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE")
    if user is not None:
        return user
    if node.cpu.arch == "x86_64" and node.cpu.vendor == "AuthenticAMD" and len(node.gpus) <= 2:
        return Level("SYS", "default (x86 AMD, <= 2 GPUs)")
    return Level("PXB", "default")


def gdr_level(node: Node) -> Level:
    """The GPU<->NIC GPUDirect RDMA limit (``ncclTopoCheckGdr``): P2C when NCCL_NET_GDR_C2C (default 1), else PXB;
    NCCL_NET_GDR_LEVEL overrides."""
    user = user_level(node, "NCCL_NET_GDR_LEVEL")
    if user is not None:
        return user
    nccl = resolve(node)
    raw = nccl.value("NCCL_NET_GDR_C2C")
    if nccl.int("NCCL_NET_GDR_C2C", 1):
        # P2C only differs from PXB where a GPU has C2C links (Grace); elsewhere say PXB, as the docs do.
        c2c = any(g.c2c is not None and g.c2c.count > 0 for g in node.gpus)
        return Level("P2C" if c2c else "PXB", "default")
    return Level("PXB", f"NCCL_NET_GDR_C2C={raw}")


def gpu_nic_nccl_path(node: Node, gpu: Gpu, nic: Nic) -> str:
    """The GPU->NIC path type as NCCL computes it: PCIe type, except that a C2C-attached GPU (Grace) reaching a NIC
    through its own CPU is P2C (paths.cc: GPU->CPU is C2C and NIC->CPU is PHB)."""
    from ncclctl.plan.paths import pcie_path_type

    t = pcie_path_type(node, gpu.bdf, nic.bdf) or "SYS"
    if gpu.c2c is not None and gpu.c2c.count > 0 and t in ("PHB", "NODE"):
        gnuma = gpu.numa_node if gpu.numa_node is not None else node.numa_node_of(gpu.bdf)
        if gnuma is not None and gnuma == node.numa_node_of(nic.bdf):
            return "P2C"
    return "PHB" if t == "NODE" else t


# --------------------------------------------------------------------------------------------------
# Naming devices in messages


def _names(node: Node) -> dict[str, tuple[str, str]]:
    """bus id -> (its name in messages, its short name), for the GPUs, NICs, NVSwitches and netdevs: built once
    per node (rules name devices of every pair they report; a scan per name was quadratic in GPUs)."""
    cache = node.__dict__.get("_lint_names")
    if cache is not None:
        return cache
    gpus: dict[str, int] = {}
    for g in node.gpus:
        gpus.setdefault(g.bdf, g.index)  # the first GPU of a bus id, as a scan finds it
    nics: dict[str, list[str]] = {}
    for n in node.nics:
        if n.bdf is not None:
            nics.setdefault(n.bdf, []).append(n.name)
    switches = {s.bdf for s in node.nvswitches}
    nds: dict[str, list[str]] = {}
    for nd in node.netdevs:
        if nd.bdf is not None:
            nds.setdefault(nd.bdf, []).append(nd.name)
    out: dict[str, tuple[str, str]] = {}
    for bdf in {*gpus, *nics, *switches, *nds}:
        if bdf in gpus:
            out[bdf] = (f"GPU{gpus[bdf]} ({bdf})", f"GPU{gpus[bdf]}")
            continue
        short = "/".join(nics[bdf]) if bdf in nics else bdf
        if bdf in nics:
            out[bdf] = (f"{short} ({bdf})", short)
        elif bdf in switches:
            out[bdf] = (f"NVSwitch {bdf}", short)
        else:
            out[bdf] = (f"{'/'.join(nds[bdf])} ({bdf})", short)
    object.__setattr__(node, "_lint_names", out)
    return out


def describe(node: Node, bdf: str) -> str:
    """``GPU2 (0000:52:00.0)``, ``mlx5_4 (0000:4f:00.0)``, ``switch downstream port 0000:4e:03.0``..."""
    known = _names(node).get(bdf)
    if known is not None:
        return known[0]
    dev = node.pci_device(bdf)
    role = {"root_port": "root port", "switch_upstream": "switch upstream port",
            "switch_downstream": "switch downstream port", "bridge": "bridge"}.get(dev.role if dev else "", "device")
    return f"{role} {bdf}"


def short_name(node: Node, bdf: str) -> str:
    known = _names(node).get(bdf)
    return known[1] if known is not None else bdf


# --------------------------------------------------------------------------------------------------
# ACS (host-facts.md 1.6): control register bits, as lspci prints them

ACS_BITS = (("SrcValid", 0x01), ("TransBlk", 0x02), ("ReqRedir", 0x04), ("CmpltRedir", 0x08),
            ("UpstreamFwd", 0x10), ("EgressCtrl", 0x20), ("DirectTrans", 0x40))
ACS_REQ_REDIR, ACS_CMPLT_REDIR, ACS_EGRESS_CTRL = 0x04, 0x08, 0x20
ACS_REDIRECTING = ACS_REQ_REDIR | ACS_CMPLT_REDIR | ACS_EGRESS_CTRL


def acs_text(value: int) -> str:
    return " ".join(f"{name}{'+' if value & bit else '-'}" for name, bit in ACS_BITS)


def acs_bridges(node: Node, a: str, b: str) -> list[PciDevice]:
    """The downstream-facing ports where ACS decides the fate of P2P between functions ``a`` and ``b``.

    A peer-to-peer TLP climbs from its endpoint until it reaches the lowest common ancestor of the two devices,
    entering that switch (or the root complex) through one downstream port and leaving through another; ACS
    Request/Completion Redirect and Egress Control act at those ingress ports. So the ports that matter are the
    two children of the lowest common ancestor on the pair's paths: the switch downstream ports under a shared
    switch (PIX/PXB), or the root ports when the pair crosses the host bridge (PHB/NODE/SYS). Downstream ports of
    deeper switches forward the TLP upstream anyway (its target is not their peer) and are not judged.
    """
    da, db = node.pci_device(a), node.pci_device(b)
    if da is None or db is None:
        return []
    pa, pb = da.path, db.path
    common = 0
    while common < min(len(pa), len(pb)) and pa[common] == pb[common]:
        common += 1
    idx = max(common, 1)  # different root complexes: their root ports
    out = []
    for chain in (pa, pb):
        if idx < len(chain) - 1:  # never the endpoint itself
            dev = node.pci_device(chain[idx])
            if dev is not None and dev.role in ("root_port", "switch_downstream"):
                out.append(dev)
    return out


@record
class P2pPair:
    a: str  # bdf
    b: str
    kind: str  # "gpu-gpu" or "gpu-nic"
    path: str  # NCCL path type
    level: Level


def _near(node: Node, a_bdfs: list[str], b_bdfs: list[str], rank: int,
          numa_a: list[int | None] | None = None) -> set[tuple[int, int]]:
    """Index pairs (i, j) of ``a_bdfs`` x ``b_bdfs`` whose path can be within NCCL rank ``rank``: every pair that
    can matter, found through buckets of the PCIe tree instead of comparing every pair (2,048 GPUs: 2 M pairs).

    PIX/PXB need the same root port (the first two components of the PCIe path), PHB/NODE the same root complex
    or NUMA node (:func:`ncclctl.plan.paths.pcie_path_type`), SYS any pair. ``numa_a`` (GPU<->NIC only) adds, from
    P2C on, the NICs of each C2C-attached GPU's own NUMA node (:func:`gpu_nic_nccl_path`). A superset: callers
    still compute each candidate's path."""
    def chains(bdfs: list[str]) -> list[tuple[str, ...] | None]:
        out = []
        for bdf in bdfs:
            dev = node.pci_device(bdf)
            out.append(dev.path if dev else None)
        return out

    ca, cb = chains(a_bdfs), chains(b_bdfs)
    if rank >= _NCCL_RANK["SYS"]:
        return {(i, j) for i in range(len(a_bdfs)) for j in range(len(b_bdfs))}
    keys: list = []
    if rank >= _NCCL_RANK["PHB"]:  # PHB (same root complex) and NODE (same NUMA node), which NCCL calls PHB
        keys = [lambda c, bdf: ("rc", c[0]), lambda c, bdf: ("numa", node.numa_node_of(bdf))]
    elif rank >= _NCCL_RANK["PIX"]:
        keys = [lambda c, bdf: ("port", c[:2]) if len(c) >= 2 else None]
    buckets: dict[object, list[int]] = {}
    for j, (c, bdf) in enumerate(zip(cb, b_bdfs)):
        if c is None:
            continue  # not placed: SYS
        for key in keys:
            k = key(c, bdf)
            if k is not None:
                buckets.setdefault(k, []).append(j)
        buckets.setdefault(("p2c", node.numa_node_of(bdf)), []).append(j)
    found: set[tuple[int, int]] = set()
    for i, (c, bdf) in enumerate(zip(ca, a_bdfs)):
        if c is None:
            continue
        for key in keys:
            k = key(c, bdf)
            if k is not None:
                found.update((i, j) for j in buckets.get(k, ()))
        if numa_a is not None and numa_a[i] is not None and rank >= _NCCL_RANK["P2C"]:
            found.update((i, j) for j in buckets.get(("p2c", numa_a[i]), ()))
    return found


def p2p_pairs(node: Node) -> list[P2pPair]:
    """The GPU<->GPU and GPU<->NIC pairs NCCL drives peer-to-peer over PCIe on this host: GPU pairs without NVLink
    within the P2P level, GPU<->RDMA NIC pairs within the GPUDirect RDMA level.

    Only the pairs that can be within the levels are compared (:func:`_near`), and each GPU's NVLink peers are
    indexed once: linear in the devices under the default levels (quadratic only in the pairs a level of SYS
    admits, which the answer lists anyway)."""
    from ncclctl.plan.paths import pcie_path_type

    pairs: list[P2pPair] = []
    gpus = sorted((g for g in node.gpus if node.pci_device(g.bdf)), key=lambda g: g.index)
    bdfs = [g.bdf for g in gpus]
    # nvlink_count(a, b) > 0: a has an active link to b, or both have active links into NVSwitches.
    direct = [{link.remote_bdf for link in g.active_nvlinks if link.remote_type == "gpu"} for g in gpus]
    switched = [any(link.remote_type == "nvswitch" for link in g.active_nvlinks) for g in gpus]
    p2p = p2p_level(node)
    for i, j in sorted(_near(node, bdfs, bdfs, p2p.rank)):
        if j <= i:
            continue
        ga, gb = gpus[i], gpus[j]
        if gb.bdf in direct[i] or (switched[i] and switched[j]):
            continue  # P2P goes over NVLink, not PCIe
        t = pcie_path_type(node, ga.bdf, gb.bdf) or "SYS"
        if nccl_rank(t) <= p2p.rank:
            pairs.append(P2pPair(ga.bdf, gb.bdf, "gpu-gpu", "PHB" if t == "NODE" else t, p2p))
    gdr = gdr_level(node)
    nics = rdma_nics(node)
    gnuma = [(g.numa_node if g.numa_node is not None else node.numa_node_of(g.bdf))
             if g.c2c is not None and g.c2c.count > 0 else None for g in gpus]
    nic_bdfs = [n.bdf for n in nics if n.bdf is not None]
    assert len(nic_bdfs) == len(nics)  # rdma_nics has only NICs placed on PCI
    for i, j in sorted(_near(node, bdfs, nic_bdfs, gdr.rank, gnuma)):
        g, n = gpus[i], nics[j]
        t = gpu_nic_nccl_path(node, g, n)
        if nccl_rank(t) <= gdr.rank:
            pairs.append(P2pPair(g.bdf, nic_bdfs[j], "gpu-nic", t, gdr))
    return pairs


@record
class AcsProblem:
    bridge: PciDevice
    pairs: tuple[P2pPair, ...]


def platform_ports(node: Node) -> set[str]:
    """The ports whose ACS the platform rule (PCI007) judges with rdma_topo's masks: on Data Direct and Grace NUMA
    platforms the 'redirect off' rule (PCI001) leaves them alone."""
    from ncclctl.plan.acs import platform

    return {r.bdf for r in platform(node).requirements}


def acs_unknown(node: Node) -> dict[str, list[P2pPair]]:
    """Bridges on a P2P pair's turn-around whose ACS state could not be read (config space short: not root)."""
    found: dict[str, list[P2pPair]] = {}
    skip = platform_ports(node)
    for pair in p2p_pairs(node):
        for br in acs_bridges(node, pair.a, pair.b):
            if br.acs_unknown and br.bdf not in skip:
                found.setdefault(br.bdf, []).append(pair)
    return found


def acs_problems(node: Node) -> list[AcsProblem]:
    """Bridges with ACS redirect/egress control enabled where it acts on a P2P pair NCCL uses."""
    found: dict[str, list[P2pPair]] = {}
    bridges: dict[str, PciDevice] = {}
    skip = platform_ports(node)
    for pair in p2p_pairs(node):
        for br in acs_bridges(node, pair.a, pair.b):
            if br.acs_ctrl is not None and br.acs_ctrl & ACS_REDIRECTING and br.bdf not in skip:
                found.setdefault(br.bdf, []).append(pair)
                bridges[br.bdf] = br
    return [AcsProblem(bridges[bdf], tuple(pairs)) for bdf, pairs in sorted(found.items())]


@rule(
    "PCI001", "acs-redirect-on-p2p-path", E, "ACS redirects GPU peer-to-peer traffic through the root complex",
    what="A PCIe switch downstream port or root port with ACS Request Redirect, Completion Redirect or Egress "
         "Control enabled, sitting where the traffic of a GPU<->GPU or GPU<->NIC pair that NCCL drives "
         "peer-to-peer turns around (the two ports below the pair's common switch, or the root ports when the pair "
         "crosses the host bridge). Ports on paths that carry no such traffic are ignored: the ports in front of "
         "NVSwitch management endpoints, GPU pairs joined by NVLink, pairs farther apart than NCCL_P2P_LEVEL / "
         "NCCL_NET_GDR_LEVEL allow. Platform: classic PCIe hosts (HGX/DGX H100/H200/A100 with Broadcom or Microchip "
         "switches, PCIe servers). On Grace platforms that NVIDIA's rdma_topo recognises (ConnectX-8 Data Direct "
         "trays such as GB300, and Grace/Vera root ports with a GPU of their own such as GH200) the Grace/Vera root "
         "ports and ConnectX switch ports need specific ACS bits instead, some of them redirect bits: PCI007 judges "
         "those ports and this rule leaves them alone.",
    why="With redirect on, every peer-to-peer TLP is sent up to the root complex (and through the IOMMU) instead of "
        "across the switch: GPU<->NIC GPUDirect RDMA and PCIe GPU<->GPU P2P lose most of their bandwidth or hang. "
        "NCCL shows it as collectives stuck or far below line rate, or the IB transport fails with "
        "'NET/IB: Got completion from peer ... with status=...' (a local protection error, for which NCCL prints "
        "'HINT: In many cases this error occurs when ACS is enabled which would break GPU Direct RDMA protocol', "
        "net_ib/common.h; reports: NVIDIA/nccl#304, #523 'vendor err 81', #2079 all-reduce deadlock).",
    detect="The ACS extended capability (id 0x000d) in each bridge's config space "
           "(/sys/bus/pci/devices/<bdf>/config, readable in full only by root; the same word as "
           "'setpci -s <bdf> ECAP_ACS+0x6.w' and the 'ACSCtl:' line of 'lspci -vvv'): bits ReqRedir (0x04), "
           "CmpltRedir (0x08), EgressCtrl (0x20). The pairs come from the PCIe tree (sysfs realpaths), NVLink "
           "connectivity (NVML) and NCCL's levels: NCCL_P2P_LEVEL/NCCL_P2P_DISABLE (default PXB; SYS on x86 AMD "
           "with <= 2 GPUs) and NCCL_NET_GDR_LEVEL (default PXB, P2C on C2C systems), read from the environment "
           "and nccl.conf as NCCL does. SrcValid alone does not redirect and is not reported. When a bridge's "
           "extended config space cannot be read (not root: sysfs gives 64 or 256 bytes), the rule cannot judge it "
           "and says so in one info finding naming those bridges, rather than passing silently.",
    fix="Disable ACS (or IO virtualization / VT-d / AMD-Vi when no VM or VFIO needs it) in the BIOS; or clear the "
        "control word after every boot with 'setpci -s <bdf> ECAP_ACS+0x6.w=0000' (as root, e.g. from a systemd "
        "unit); or boot with 'pci=disable_acs_redir=<bdf>;<bdf>...'. 'pci=noacs' is not a mainline kernel option.",
)
def acs_redirect(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    for prob in acs_problems(node):
        br = prob.bridge
        ctrl = br.acs_ctrl or 0
        on = [name for name, bit in ACS_BITS if ctrl & bit and bit & ACS_REDIRECTING]
        shown = []
        for p in prob.pairs[:6]:
            shown.append(f"{short_name(node, p.a)}<->{short_name(node, p.b)} ({p.path})")
        more = f" and {len(prob.pairs) - 6} more" if len(prob.pairs) > 6 else ""
        evidence = [f"ACSCtl=0x{ctrl:04x} ({acs_text(ctrl)})"]
        if br.acs_cap is not None:
            evidence.append(f"ACSCap=0x{br.acs_cap:04x} ({acs_text(br.acs_cap)})")
        levels = sorted({f"{p.kind}: {p.level.name} ({p.level.source})" for p in prob.pairs})
        evidence.append("levels " + "; ".join(levels))
        bus = br.bdf
        yield Hit(
            bus,
            f"{describe(node, bus)} has ACS {'+'.join(on)} enabled on the peer-to-peer path of "
            f"{', '.join(shown)}{more}: that traffic is redirected through the root complex",
            fix=f"setpci -s {bus} ECAP_ACS+0x6.w=0000 (as root, after every boot), or boot with "
                f"pci=disable_acs_redir={bus}, or disable ACS / IO virtualization for this slot in the BIOS",
            evidence=tuple(evidence),
        )
    unknown = acs_unknown(node)
    if unknown:
        bridges = sorted(unknown)
        devs = [d for b in bridges if (d := node.pci_device(b)) is not None]  # (all: acs_bridges gives node devices)
        sizes = sorted({str(d.config_bytes) for d in devs if d.config_bytes is not None})
        pairs = len({(p.a, p.b) for ps in unknown.values() for p in ps})
        yield Hit(
            bridges[0] if len(bridges) == 1 else "",
            f"ACS not checked on {len(bridges)} bridge(s) on the peer-to-peer paths of {pairs} GPU<->GPU/NIC pair(s): their "
            f"extended PCI config space was not readable ({' or '.join(sizes) + ' bytes' if sizes else 'no config file'}"
            "; only root reads past 64 bytes), so redirect could be on unseen",
            fix="run 'ncclctl lint' (or 'ncclctl snapshot') as root; or check by hand: "
                "sudo lspci -vvv -s <bdf> | grep ACSCtl",
            evidence=tuple(describe(node, b) for b in bridges[:8])
            + ((f"and {len(bridges) - 8} more",) if len(bridges) > 8 else ()),
            severity=I,
        )


# --------------------------------------------------------------------------------------------------
# ACS and IOMMU groups on Grace platforms (rdma-core kernel-boot/rdma_topo, PR #1725): ncclctl.plan.acs


def _mask_bits(mask: str) -> str:
    """``xx110x1`` -> ``UpstreamFwd+ CmpltRedir+ ReqRedir- SrcValid+`` (the bits the mask fixes)."""
    names = dict((bit, name) for name, bit in ACS_BITS)
    out = []
    for i, c in enumerate(reversed(mask)):
        if c in "01":
            out.append(f"{names[1 << i]}{'+' if c == '1' else '-'}")
    return " ".join(reversed(out))


@rule(
    "PCI007", "acs-mask-for-platform", E, "ACS bits differ from what the Grace / Data Direct platform requires",
    what="Platform: Grace hosts that NVIDIA's rdma_topo recognises. On a ConnectX-8 Data Direct tray (GB200/GB300: "
         "the NIC's separate DMA function and the GPU below one ConnectX PCIe switch on a Grace root port) each "
         "port needs rdma_topo's mask: the switch port toward the DMA function xx110x1 (UpstreamFwd, CmpltRedir, "
         "SrcValid on, ReqRedir off), the switch port toward the GPU xx101x1 (ReqRedir on, CmpltRedir off), the "
         "Grace root port xx111x0 (SrcValid off), every other ConnectX switch port and Grace/Vera root port the "
         "kernel default xx111x1. On Grace hosts whose GPUs sit on their own root ports (GH200-class) every "
         "Grace/Vera root port and ConnectX switch port keeps the kernel default. On servers whose GPU and ConnectX "
         "PF share a ConnectX PCIe switch (rdma_topo's 'Inline', no DMA function) the NIC's and the GPU's switch "
         "ports, their root port and every other ConnectX switch port need xx000x0 on bare metal, or, where the NICs "
         "expose ATS (VMs), the NIC's port 1x111x1 and the rest the kernel default. A port whose ACS control word "
         "breaks its mask is reported, with the platform named. Classic PCIe hosts (HGX/DGX with other switches, "
         "PCIe servers, VMs) are not judged here: PCI001 (redirect off) applies there.",
    why="On Data Direct trays GPUDirect RDMA reaches GPU memory through the DMA function: its requests must go "
        "straight across the ConnectX switch to the GPU while completions and everything else stay isolated. "
        "Blanket 'ACS off' (the classic advice) or the kernel default both break that: NVIDIA measured all_reduce at "
        "about 360 GB/s with wrong ACS and 426-431 GB/s with rdma_topo's masks on GB300 (NVIDIA/nodewright-packages "
        "#111), and DMA-BUF registration (mlx5dv_reg_dmabuf_mr) fails until the masks are right.",
    detect="The platform and masks as rdma-core's kernel-boot/rdma_topo computes them (device ids: Grace root ports "
           "10de:22b1/22b2/22b8, Vera 10de:2f95/2f96, ConnectX switch ports 15b3:197c/1979, the ConnectX-8 DMA "
           "function 15b3:2100), compared with the ACS control word in each port's config space "
           "(/sys/bus/pci/devices/<bdf>/config, readable in full by root only; 'setpci -s <bdf> ECAP_ACS+0x6.w'). "
           "Ports whose config space could not be read are named in one info finding.",
    fix="Boot with the kernel argument rdma_topo computes: 'rdma_topo write-grub-acs' writes "
        "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX pci=config_acs=\\\"<mask>@<bdf>;...\\\"\" to "
        "/etc/default/grub.d/config-acs.cfg and runs update-grub (the finding prints the value); reboot. Kernels "
        "without config_acs: 'rdma_topo setpci-acs' (setpci -r -s <bdf> ECAP_ACS+0x6.w=<value> after every boot), "
        "which leaves the IOMMU groups as booted (PCI008) and needs the GPU driver's "
        "NVreg_GrdmaPciTopoCheckOverride=1. Never turn ACS off wholesale on these platforms.",
)
def acs_platform_mask(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    from ncclctl.plan.acs import CLASSIC, apply_mask, config_acs, mask_ok, platform

    node = ctx.node
    plat = platform(node)
    if plat.kind == CLASSIC:
        return
    arg = config_acs(node, plat)
    boot = (f"boot with pci=config_acs=\"{arg}\" (rdma_topo write-grub-acs; update-grub; reboot)" if arg else
            "reboot without ACS overrides (the kernel sets its default when the IOMMU is on)")
    unknown = []
    for r in plat.requirements:
        dev = node.pci_device(r.bdf)
        if dev is None:
            continue
        if dev.acs_ctrl is None:
            unknown.append(r.bdf)
            continue
        if mask_ok(dev.acs_ctrl, r.mask):
            continue
        want = apply_mask(dev.acs_ctrl, r.mask)
        yield Hit(
            r.bdf,
            f"{describe(node, r.bdf)} ({r.role}) has ACS control {dev.acs_ctrl:07b}, which breaks the mask {r.mask} "
            f"({_mask_bits(r.mask)}) that rdma_topo requires on a {plat.name}",
            fix=f"{boot}; or, until a reboot: setpci -r -s {r.bdf} ECAP_ACS+0x6.w={want:04x} "
                "(rdma_topo setpci-acs; IOMMU groups stay as booted)",
            evidence=(f"platform: {plat.name}",
                      f"ACSCtl=0x{dev.acs_ctrl:04x} ({acs_text(dev.acs_ctrl)})",
                      f"required: {r.mask} ({_mask_bits(r.mask)}) -> 0x{want:04x}"),
        )
    for bdf in plat.unrecognized:
        yield Hit(bdf, f"Data Direct DMA function {bdf} is not below a ConnectX switch on a Grace root port next to "
                       "exactly one GPU: rdma_topo reports an unexpected topology and computes no masks for it",
                  fix="run 'rdma_topo topo' and 'rdma_topo check' on the node and report the layout to the vendor",
                  severity=W)
    if unknown:
        yield Hit(unknown[0] if len(unknown) == 1 else "",
                  f"ACS not checked on {len(unknown)} port(s) of a {plat.name}: their extended PCI config space was "
                  "not readable (only root reads past 64 bytes)",
                  fix="run 'ncclctl lint' (or 'ncclctl snapshot') as root, or 'sudo rdma_topo check'",
                  evidence=tuple(describe(node, b) for b in unknown[:8]), severity=I)


@rule(
    "PCI008", "iommu-group-for-platform", E, "IOMMU groups or ATS wrong for GPUDirect RDMA on a Grace platform",
    what="Platform: Grace hosts that NVIDIA's rdma_topo recognises. On a ConnectX-8 Data Direct tray (GB200/GB300) "
         "the GPU and the NIC's DMA function of each complex must be in one IOMMU group. On Grace hosts whose GPUs "
         "sit on their own root ports (GH200-class) every GPU and ConnectX PF of a NUMA node must have an IOMMU "
         "group of its own, and the ConnectX PFs must not expose ATS. Classic PCIe hosts are not judged here. The "
         "IOMMU mode of each group (identity, DMA, DMA-FQ) is shown as evidence; PCI002 judges it. On servers "
         "whose GPU and ConnectX PF share a ConnectX switch (rdma_topo's 'Inline'): on bare metal NIC and GPU in one "
         "group (or no IOMMU), with ATS (VMs) in different groups.",
    why="The GPU driver checks, before it lets a NIC register GPU memory (GPUDirect RDMA over DMA-BUF or "
        "nvidia_peermem), that the DMA function and the GPU share an IOMMU group (the group is how the kernel says "
        "peer-to-peer between them is possible); when they do not, registration fails unless the driver's "
        "NVreg_GrdmaPciTopoCheckOverride=1 switches the check off, and NCCL falls back to staging through host memory "
        "or fails. Groups form once, at boot, from the ACS bits then: ACS fixed later with setpci leaves them split.",
    detect="/sys/bus/pci/devices/<bdf>/iommu_group of the GPU, the DMA function and the ConnectX PFs, "
           "/sys/kernel/iommu_groups/<g>/type, and the ATS extended capability (id 0x000f) in the ConnectX PFs' "
           "config space (root only), as rdma-core's kernel-boot/rdma_topo check does; the DMA function is paired "
           "with its PF by the VPD V3 board UUID (/sys/bus/pci/devices/<bdf>/vpd, root only).",
    fix="Set the ACS masks at boot (PCI007: pci=config_acs=... from 'rdma_topo write-grub-acs', update-grub, reboot) "
        "so the kernel forms the groups from them; setpci after boot does not regroup. On GH200-class hosts keep the "
        "kernel's default ACS and turn ATS off on the ConnectX (mlxconfig -d <dev> set ATS_ENABLED=0) unless the host "
        "runs VMs.",
)
def iommu_platform_group(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    from ncclctl.plan.acs import CLASSIC, DATA_DIRECT, INLINE, config_acs, device_type, platform

    node = ctx.node
    plat = platform(node)
    if plat.kind == CLASSIC:
        return
    types = dict(node.facts.iommu_group_types)

    def group(bdf: str) -> str:
        dev = node.pci_device(bdf)
        g = dev.iommu_group if dev else None
        return "none" if g is None else f"{g} ({types.get(g, 'type unknown')})"

    if plat.kind == INLINE:
        for ic in plat.inline:
            nd, gd = node.pci_device(ic.nic), node.pci_device(ic.gpu)
            assert nd is not None and gd is not None
            ng, gg = nd.iommu_group, gd.iommu_group
            if plat.virt:
                wrong = ng is None or gg is None or ng == gg
                want = "in different IOMMU groups (VMs: the NIC exposes ATS)"
            else:
                wrong = not (ng is None and gg is None) and ng != gg
                want = "in one IOMMU group (bare metal)"
            if not wrong:
                continue
            yield Hit(ic.nic, f"{describe(node, ic.nic)} and {describe(node, ic.gpu)} are not {want}: "
                              f"{group(ic.nic)} vs {group(ic.gpu)} on a {plat.name}",
                      fix=f"boot with pci=config_acs=\"{config_acs(node, plat)}\" (rdma_topo write-grub-acs; "
                          "update-grub; reboot) so the groups form from the right ACS bits",
                      evidence=(f"platform: {plat.name}", f"{ic.nic}: iommu_group {group(ic.nic)}",
                                f"{ic.gpu}: iommu_group {group(ic.gpu)}", f"NIC ATS: {nd.ats}"))
        return
    if plat.kind == DATA_DIRECT:
        for c in plat.complexes:
            dma, gpu = node.pci_device(c.dma), node.pci_device(c.gpu)
            assert dma is not None and gpu is not None  # the complex was built from the node's devices
            if dma.iommu_group is not None and dma.iommu_group == gpu.iommu_group:
                continue
            nic = f" of {describe(node, c.nic)}" if c.nic else ""
            yield Hit(
                c.dma,
                f"Data Direct DMA function {c.dma}{nic} and {describe(node, c.gpu)} are in different IOMMU groups "
                f"({group(c.dma)} vs {group(c.gpu)}): the GPU driver refuses GPUDirect RDMA through the DMA function "
                f"on a {plat.name}",
                fix=f"boot with pci=config_acs=\"{config_acs(node, plat)}\" (rdma_topo write-grub-acs; update-grub; "
                    f"reboot): the groups form at boot, and root port {c.root_port} with SrcValid off puts the "
                    "segment in one; setpci after boot does not regroup, and NVreg_GrdmaPciTopoCheckOverride=1 only "
                    "switches the driver's check off",
                evidence=(f"platform: {plat.name}", f"DMA function {c.dma}: iommu_group {group(c.dma)}",
                          f"GPU {c.gpu}: iommu_group {group(c.gpu)}",
                          f"segment: root port {c.root_port} -> switch {c.usp} -> ports {c.dma_dsp} (DMA), "
                          f"{c.gpu_dsp} (GPU)"),
            )
        return
    # Grace NUMA: GPUs and ConnectX PFs each in an IOMMU group of their own, per NUMA node; no ATS on the PFs.
    by_numa: dict[int | None, list[PciDevice]] = {}
    for d in node.pci:
        if device_type(d) in ("nvgpu", "cx_nic") and d.numa_node is not None and d.numa_node >= 0:
            by_numa.setdefault(d.numa_node, []).append(d)
    for numa, devs in sorted(by_numa.items(), key=lambda kv: kv[0] or 0):
        if not any(device_type(d) == "nvgpu" for d in devs) or not any(device_type(d) == "cx_nic" for d in devs):
            continue
        missing = [d.bdf for d in devs if d.iommu_group is None]
        groups = [d.iommu_group for d in devs if d.iommu_group is not None]
        shared = sorted({g for g in groups if groups.count(g) > 1})
        if missing or shared:
            bad = [d.bdf for d in devs if d.iommu_group is None or d.iommu_group in shared]
            who = ", ".join(describe(node, b) for b in bad)
            yield Hit(
                bad[0],
                f"NUMA node {numa}: {who} " + ("have no IOMMU group" if missing and not shared else
                                               f"share IOMMU group(s) {', '.join(map(str, shared))}")
                + f"; on a {plat.name} each GPU and ConnectX PF needs a group of its own",
                fix="boot with the kernel's default ACS on the Grace root ports (no pci=config_acs / "
                    "disable_acs_redir overrides for them) and the IOMMU on; reboot",
                evidence=(f"platform: {plat.name}",) + tuple(f"{describe(node, d.bdf)}: iommu_group {group(d.bdf)}"
                                                             for d in devs),
            )
        for d in devs:
            if device_type(d) == "cx_nic" and d.ats:
                yield Hit(d.bdf, f"{describe(node, d.bdf)} exposes ATS; on a {plat.name} without VMs rdma_topo "
                                 "requires it off",
                          fix=f"mlxconfig -d {d.bdf} set ATS_ENABLED=0 and reboot (keep it on only where VMs use "
                              "the NIC)",
                          evidence=(f"platform: {plat.name}", f"{d.bdf}: ATS extended capability (id 0x000f) present"))


# --------------------------------------------------------------------------------------------------
# IOMMU (host-facts.md 1.7, 7.2)


def cmdline_iommu(cmdline: str | None) -> tuple[str | None, list[str]]:
    """The IOMMU intent on a kernel command line: ("pt" | "translated" | "off" | None, the tokens that decided).
    Later tokens override earlier ones, as the kernel parses them in order."""
    mode: str | None = None
    seen: list[str] = []
    for tok in (cmdline or "").split():
        key, _, val = tok.partition("=")
        vals = val.split(",")
        if key == "iommu":
            if "pt" in vals:
                mode = "pt"
            elif "nopt" in vals:
                mode = "translated"
            elif "off" in vals:
                mode = "off"
            else:
                continue
        elif key == "iommu.passthrough":
            mode = "pt" if val.lower() in ("1", "y", "on", "true") else "translated"
        elif key in ("intel_iommu", "amd_iommu"):
            if "off" in vals:
                mode = "off"
            elif "on" in vals and mode is None:
                mode = "translated"  # enabled, default domain translated unless pt is given
            else:
                continue
        elif key == "iommu.strict":
            pass
        else:
            continue
        seen.append(tok)
    return mode, seen


def _iommu_vendor(units: tuple[str, ...]) -> str:
    if any(u.startswith("dmar") for u in units):
        return "intel"
    if any(u.startswith("ivhd") for u in units):
        return "amd"
    if any(u.startswith("smmu") for u in units):
        return "arm"
    return "unknown"


@rule(
    "PCI002", "iommu-translating-dma", W, "IOMMU translates GPU/NIC DMA on bare metal (not passthrough)",
    what="An active IOMMU whose default domain for the GPUs' and RDMA NICs' IOMMU groups is DMA or DMA-FQ "
         "(translated) instead of identity (passthrough), on a bare-metal host; or, when the kernel does not show "
         "group types, a command line that turns the IOMMU on without passthrough. Graded error when ACS redirect "
         "is also enabled on a P2P path (PCI001): then every peer-to-peer transfer is redirected and translated. "
         "Inside a VM a translating (virtual) IOMMU is expected and the finding is only informational. Platform: "
         "every bare-metal host, classic and Grace alike (rdma_topo does not judge the mode; on Grace platforms "
         "PCI008 judges which devices share a group).",
    why="Translated DMA puts the IOMMU between the NIC and GPU memory: GPUDirect RDMA and PCIe P2P either fail "
        "(IOMMU faults, 'DMAR: DRHD: handling fault' in the kernel log, NCCL hangs or IB completion errors) or run "
        "much slower, and NVIDIA does not support IOMMU-translated P2P on bare-metal PCIe systems; with an active "
        "IOMMU the kernel also enables ACS redirect on every port.",
    detect="/sys/class/iommu (dmar*/ivhd*/smmu*: an IOMMU driver is active), "
           "/sys/kernel/iommu_groups/<group>/type for the groups of every GPU and RDMA NIC "
           "(/sys/bus/pci/devices/<bdf>/iommu_group; kernel >= 5.11), and /proc/cmdline (iommu=pt|nopt|off, "
           "iommu.passthrough=, intel_iommu=on|off, amd_iommu=off) as the fallback. A VM is recognised by the "
           "x86 'hypervisor' CPU flag in /proc/cpuinfo or by a flat PCIe tree (GPUs on root buses, no switches).",
    fix="Boot with iommu=pt (Intel/AMD; iommu.passthrough=1 on Arm) added to GRUB_CMDLINE_LINUX in "
        "/etc/default/grub, run update-grub (or grub2-mkconfig) and reboot; or disable VT-d/AMD-Vi in the BIOS when "
        "no VFIO/SR-IOV needs it. Drop iommu.strict=1 and iommu=nopt.",
)
def iommu_translating(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    facts = node.facts
    if not node.gpus or not facts.iommu_units:
        return
    types = dict(facts.iommu_group_types)
    devices = [(f"GPU{g.index}", g.bdf) for g in sorted(node.gpus, key=lambda g: g.index)]
    devices += [(n.name, n.bdf) for n in rdma_nics(node) if n.bdf]  # (rdma_nics has only placed NICs)
    translated, known = [], 0
    for name, bdf in devices:
        dev = node.pci_device(bdf)
        if dev is None or dev.iommu_group is None:
            continue
        t = types.get(dev.iommu_group)
        if t is None:
            continue
        known += 1
        if t in ("DMA", "DMA-FQ"):
            translated.append((name, bdf, dev.iommu_group, t))
    mode, tokens = cmdline_iommu(facts.cmdline)
    evidence = [f"/sys/class/iommu: {', '.join(facts.iommu_units)}",
                f"/proc/cmdline IOMMU options: {' '.join(tokens) or '(none)'}"]
    if known:
        if not translated:
            return
        for name, bdf, group, t in translated[:8]:
            evidence.append(f"{name} {bdf}: iommu_group {group} type {t}")
        names = ", ".join(n for n, *_ in translated[:8]) + (f" and {len(translated) - 8} more" if len(translated) > 8 else "")
        what = f"the IOMMU translates DMA of {names} (group type {'/'.join(sorted({t for *_, t in translated}))})"
    else:
        if mode != "translated":
            return  # no group types and no explicit translated intent: cannot tell
        what = "the IOMMU is on without passthrough (kernel command line) and group types are not available"
    vendor = _iommu_vendor(facts.iommu_units)
    pt = "iommu.passthrough=1" if vendor == "arm" else "iommu=pt"
    drop = [t for t in tokens if t.startswith("iommu.strict") or t in ("iommu=nopt", "iommu.passthrough=0")]
    fix = (f"add {pt} to the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, update-grub, reboot)"
           + (f" and remove {' '.join(drop)}" if drop else "")
           + "; or disable IO virtualization in the BIOS if no VM/VFIO uses it")
    if not ctx.is_bare_metal:
        yield Hit("/proc/cmdline", f"{what}; this node is a VM, where a virtual IOMMU is expected",
                  fix="inside a VM keep the vIOMMU; for GPUDirect RDMA have the hypervisor enable ATS on the NIC "
                      "(mlxconfig ... set ATS_ENABLED=1) and configure ACS on the host's bridges",
                  evidence=tuple(evidence), severity=I)
        return
    acs = acs_problems(node)
    severity = None
    if acs:
        severity = E
        evidence.append("ACS redirect also enabled on P2P paths at " + ", ".join(p.bridge.bdf for p in acs[:6]))
        what += ", and ACS redirect is on for their P2P paths (PCI001)"
    yield Hit("/proc/cmdline", f"{what} on a bare-metal host", fix=fix, evidence=tuple(evidence), severity=severity)


# --------------------------------------------------------------------------------------------------
# PCIe links (host-facts.md 1.3, 7.3)


@record
class Link:
    """The PCIe link above ``dev`` (between it and its parent port, or the root bus when it has none)."""

    dev: PciDevice
    port: PciDevice | None
    cur_width: int | None
    max_width: int | None  # what both ends support
    dev_max_width: int | None
    port_max_width: int | None
    cur_gen: int | None
    max_gen: int | None
    dev_max_gen: int | None
    port_max_gen: int | None
    #: GPU/RDMA NIC endpoints whose traffic crosses this link.
    carries: tuple[str, ...]


def _gen(text: str | None) -> int | None:
    from ncclctl.sysfs import link_speed_gen

    try:
        return link_speed_gen(text)
    except ValueError:
        return None


def _positive(*values: int | None) -> list[int]:
    return [v for v in values if v]


def links(node: Node) -> list[Link]:
    """Every PCIe link of the model, described from the device below it (a link is reported once)."""
    gpu_by_bdf = {g.bdf: g for g in node.gpus}
    data_endpoints = set(gpu_by_bdf) | {n.bdf for n in rdma_nics(node) if n.bdf}  # (only placed NICs anyway)
    below: dict[str, list[str]] = {}
    for bdf in data_endpoints:
        dev = node.pci_device(bdf)
        if dev is None:
            continue
        for comp in dev.path[1:]:
            below.setdefault(comp, []).append(bdf)
    from ncclctl.names import natural_key

    def order(bdf: str) -> tuple:  # GPUs by index, then NICs by name
        g = gpu_by_bdf.get(bdf)
        return (0, g.index, ()) if g is not None else (1, 0, natural_key(short_name(node, bdf)))

    out = []
    for dev in node.pci:
        if dev.role in ("root_port", "switch_downstream") or dev.is_vf:
            # A root port's or switch downstream port's link status describes the link *below* it, which is
            # reported from the device there; VFs have no link of their own.
            continue
        port = node.pci_device(dev.parent) if dev.parent else None
        cur_w = dev.current_link_width or (port.current_link_width if port else None)
        cur_g = _gen(dev.current_link_speed) or (_gen(port.current_link_speed) if port else None)
        dmw, pmw = dev.max_link_width, port.max_link_width if port else None
        dmg, pmg = _gen(dev.max_link_speed), _gen(port.max_link_speed) if port else None
        g = gpu_by_bdf.get(dev.bdf)
        if g is not None and not cur_w and g.pcie_curr_width:
            cur_w = g.pcie_curr_width  # NVML when sysfs has nothing
        if g is not None and not dmw and g.pcie_max_width:
            dmw = g.pcie_max_width
        widths, gens = _positive(dmw, pmw), _positive(dmg, pmg)
        out.append(Link(dev=dev, port=port, cur_width=cur_w or None, max_width=min(widths) if widths else None,
                        dev_max_width=dmw or None, port_max_width=pmw or None, cur_gen=cur_g,
                        max_gen=min(gens) if gens else None, dev_max_gen=dmg, port_max_gen=pmg,
                        carries=tuple(sorted(below.get(dev.bdf, []), key=order))))
    return out


def _link_subject(node: Node, link: Link) -> str:
    d = describe(node, link.dev.bdf)
    if link.dev.role in ("switch_upstream", "bridge") and link.carries:
        who = ", ".join(short_name(node, b) for b in link.carries[:4]) + (" ..." if len(link.carries) > 4 else "")
        d += f", the uplink of {who}"
    return d


def _link_evidence(node: Node, link: Link, kind: str) -> tuple[str, ...]:
    dev, port = link.dev, link.port
    ev = []
    if kind == "width":
        ev.append(f"{dev.bdf}: current_link_width={dev.current_link_width} max_link_width={dev.max_link_width}")
        if port is not None:
            ev.append(f"{port.bdf} (port above): current_link_width={port.current_link_width} "
                      f"max_link_width={port.max_link_width}")
    else:
        ev.append(f"{dev.bdf}: current_link_speed={dev.current_link_speed!r} max_link_speed={dev.max_link_speed!r}")
        if port is not None:
            ev.append(f"{port.bdf} (port above): current_link_speed={port.current_link_speed!r} "
                      f"max_link_speed={port.max_link_speed!r}")
    for g in node.gpus:
        if g.bdf == dev.bdf and (g.pcie_curr_width or g.pcie_curr_gen):
            ev.append(f"NVML GPU{g.index}: gen {g.pcie_curr_gen}/{g.pcie_max_gen} width x{g.pcie_curr_width}/"
                      f"x{g.pcie_max_width} (current/max)")
    return tuple(ev)


def _in_scope(node: Node, link: Link, all_links: bool) -> bool:
    """Links that carry GPU or RDMA NIC data (the device itself, or a switch above one); all with all_links."""
    return all_links or bool(link.carries)


@rule(
    "PCI003", "pcie-link-width-degraded", E, "PCIe link trained narrower than both ends support",
    what="A PCIe link of a GPU, an RDMA NIC, or a switch above one, running with fewer lanes than both the device and "
         "the port above it support (e.g. x8 where both are x16). A device wider than its slot (an x16 card in an "
         "x8 slot) is not a training fault; it is reported as info, because it still halves the bandwidth.",
    why="A lost lane group halves (or worse) the PCIe bandwidth of everything behind the link: GPU<->NIC "
        "GPUDirect RDMA, host<->GPU copies and NCCL's PCIe P2P. The slowest rail then sets the pace of every "
        "collective, so one x8 GPU caps the whole job's bus bandwidth.",
    detect="sysfs current_link_width of the device (or of the port above it) against min(max_link_width of the "
           "device, max_link_width of the port above it); NVML current/max width for GPUs when sysfs has none. "
           "Same link as 'lspci -vvv' LnkSta 'Width x8 (downgraded)' vs LnkCap. Width is not lowered by power "
           "management, so any shortfall is a fault.",
    fix="Reseat the GPU/NIC (or its riser/cable/retimer), check the slot's bifurcation setting in the BIOS, update "
        "the BMC/switch firmware; move the card to a full-width slot when the slot itself is narrower.",
    options=(Option("all_links", bool, False, "also check links that carry no GPU or RDMA NIC traffic "
                                               "(management NICs, NVSwitch management links, storage)"),),
)
def link_width(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    for link in links(node):
        if not _in_scope(node, link, opts["all_links"]):
            continue
        if not link.cur_width or not link.max_width:
            continue  # width 0 / unknown: link down or not reported (VFs, VMs)
        if link.cur_width < link.max_width:
            yield Hit(link.dev.bdf,
                      f"PCIe link of {_link_subject(node, link)} trained at x{link.cur_width}; both ends support "
                      f"x{link.max_width}",
                      fix=f"reseat {describe(node, link.dev.bdf)} (and its riser/cable), check the BIOS bifurcation "
                          f"of the slot behind port {link.port.bdf if link.port else link.dev.bdf}; "
                          f"verify with: lspci -vvv -s {link.dev.bdf} | grep -E 'LnkCap|LnkSta'",
                      evidence=_link_evidence(node, link, "width"))
        elif (link.dev_max_width and link.port_max_width and link.dev_max_width > link.port_max_width
              and link.dev.role == "endpoint"):
            yield Hit(link.dev.bdf,
                      f"{describe(node, link.dev.bdf)} is an x{link.dev_max_width} device in an "
                      f"x{link.port_max_width} slot (port {link.port.bdf if link.port else '?'}): it runs at "
                      f"x{link.cur_width} by design, with {link.port_max_width}/{link.dev_max_width} of its bandwidth",
                      fix=f"move {describe(node, link.dev.bdf)} to an x{link.dev_max_width} slot if its bandwidth "
                          f"matters for NCCL",
                      evidence=_link_evidence(node, link, "width"), severity=I)


@rule(
    "PCI004", "pcie-link-speed-degraded", W, "PCIe link trained at a lower speed than both ends support",
    what="A PCIe link of an RDMA NIC or of a switch above a GPU/NIC running at a lower generation than both ends "
         "support (e.g. 16 GT/s where both do 32 GT/s). GPU links are skipped by default: an idle NVIDIA GPU lowers "
         "its own link speed (to 2.5 GT/s) for power saving and raises it under load, so a low speed on an idle GPU "
         "is normal. NICs and switches do not do that.",
    why="A Gen4 link where Gen5 is possible halves the bandwidth behind it: a 400 Gb/s NIC needs Gen5 x16 "
        "(about 50 GB/s), so at Gen4 it cannot reach line rate and NCCL's bus bandwidth on that rail drops.",
    detect="sysfs current_link_speed (or the port above) against min(max_link_speed of the device, max_link_speed of "
           "the port above it), parsing both kernel spellings ('32.0 GT/s PCIe', '32 GT/s'); 'Unknown' is skipped. "
           "With check_gpus, GPU links too (run the lint while the GPUs are busy).",
    fix="Reseat the card/riser/retimer, check the slot's PCIe generation setting in the BIOS (often 'Auto' vs a "
        "forced Gen), update NIC/switch firmware; a GPU that stays slow under load needs the same treatment.",
    options=(Option("check_gpus", bool, False, "also judge GPU links (only meaningful while the GPUs are busy: idle "
                                                "GPUs lower their link speed)"),
             Option("all_links", bool, False, "also check links that carry no GPU or RDMA NIC traffic")),
)
def link_speed(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    from ncclctl.sysfs import GEN_SPEED_STRING

    node = ctx.node
    gpus = {g.bdf for g in node.gpus}
    for link in links(node):
        if not _in_scope(node, link, opts["all_links"]):
            continue
        if link.dev.bdf in gpus and not opts["check_gpus"]:
            continue
        if not link.cur_gen or not link.max_gen or link.cur_gen >= link.max_gen:
            continue
        cur, mx = GEN_SPEED_STRING[link.cur_gen], GEN_SPEED_STRING[link.max_gen]
        yield Hit(link.dev.bdf,
                  f"PCIe link of {_link_subject(node, link)} runs at {cur} (Gen{link.cur_gen}); both ends support "
                  f"{mx} (Gen{link.max_gen})",
                  fix=f"reseat {describe(node, link.dev.bdf)} (riser/retimer), check the BIOS PCIe speed of the slot "
                      f"behind port {link.port.bdf if link.port else link.dev.bdf}, update firmware; verify with: "
                      f"lspci -vvv -s {link.dev.bdf} | grep -E 'LnkCap|LnkSta'",
                  evidence=_link_evidence(node, link, "speed"))


# --------------------------------------------------------------------------------------------------
# GPU <-> rail NIC distance (host-facts.md 7.10; NCCL ncclTopoCheckGdr)


def _topology_file(ctx: Ctx) -> str | None:
    f = ctx.nccl.value("NCCL_TOPO_FILE")
    if f:
        return f"NCCL_TOPO_FILE={f}"
    if ctx.node.facts.virtual_topology is not None:
        return ctx.node.facts.virtual_topology.path
    return None


@rule(
    "PCI005", "gpu-nic-beyond-gdr-level", W, "GPU and its rail NIC too far apart for GPUDirect RDMA",
    what="A GPU whose rail NIC (the closest RDMA NIC, as 'ncclctl rails' assigns them) is farther away on PCIe than "
         "NCCL's GPUDirect RDMA level: through the CPU (PHB/NODE: warning) or across sockets (SYS: error), with "
         "the default NCCL_NET_GDR_LEVEL of PXB (P2C for Grace C2C GPUs reaching a NIC of their own CPU) or the "
         "level set in the environment/nccl.conf. Not reported when NCCL reaches the NIC through PXN (an "
         "NVLink-connected GPU that is close to the NIC). On a VM with flat PCIe and no topology file it is an info: "
         "NCCL sees the same flat tree unless NCCL_TOPO_FILE describes the host.",
    why="ncclTopoCheckGdr disables GPUDirect RDMA when the GPU->NIC distance exceeds the level (NCCL logs "
        "'GPU Direct RDMA Disabled for GPU ... / HCA ...' with NCCL_DEBUG_SUBSYS=NET) and stages every message "
        "through host memory: inter-node bandwidth drops by up to half and CPU/memory load rises.",
    detect="The rail plan (PCIe path types from the sysfs tree, NUMA nodes), the GPU's C2C links from NVML, "
           "NVLink peers, and NCCL_NET_GDR_LEVEL, NCCL_NET_GDR_C2C, NCCL_PXN_DISABLE from the environment and "
           "nccl.conf, parsed as NCCL does (path names are exact and case-sensitive; an invalid value is ignored).",
    fix="Put each GPU and its NIC under the same PCIe switch (the rail-optimized layout), fix BIOS NUMA/NPS "
        "settings, or, if the host bridge handles P2P well (measure with ib_write_bw --use_cuda), set "
        "NCCL_NET_GDR_LEVEL=PHB deliberately.",
)
def gpu_nic_distance(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    from ncclctl.plan.paths import nvlink_count

    node = ctx.node
    plan = ctx.rails
    if plan is None or not plan.rails:
        return
    level = gdr_level(node)
    if not ctx.is_bare_metal:
        topo = _topology_file(ctx)
        if topo is None and level.rank < _NCCL_RANK["PHB"]:
            yield Hit(ctx.host,
                      "this VM shows flat PCIe (every GPU and NIC on its own root bus): NCCL sees every GPU<->NIC "
                      "pair as PHB/SYS and disables GPUDirect RDMA unless NCCL_TOPO_FILE gives it the host topology; "
                      "GPU<->NIC pairing here comes from NUMA nodes only",
                      fix="set NCCL_TOPO_FILE to the provider's topology file for this VM size (or one generated "
                          "with 'ncclctl topo generate' from the bare-metal layout)",
                      evidence=tuple(f"GPU{r.gpus[0]} -> {r.nic}: {r.path}" for r in plan.rails[:4]),
                      severity=I)
        return
    pxn_off = ctx.nccl.int("NCCL_PXN_DISABLE", 0) == 1
    pxn_limit = _NCCL_RANK["P2C"] if ctx.nccl.int("NCCL_PXN_C2C", 1) else _NCCL_RANK["PXB"]
    gpus = sorted(node.gpus, key=lambda g: g.index)
    for g in gpus:
        rail = plan.gpu_rail(g.index)
        if rail is None:
            continue
        nic = node.nic(rail.nic)
        if nic is None or nic.bdf is None:
            continue
        t = gpu_nic_nccl_path(node, g, nic)
        if nccl_rank(t) <= level.rank:
            continue
        via = None
        if not pxn_off:
            for p in gpus:
                if p is g or not nvlink_count(g, p):
                    continue
                pt = gpu_nic_nccl_path(node, p, nic)
                if nccl_rank(pt) <= min(level.rank, pxn_limit):
                    via = p
                    break
        if via is not None:
            continue  # PXN: NCCL sends through the NVLink peer that is close to the NIC, with GDR
        severity = E if t == "SYS" else None
        yield Hit(f"GPU{g.index}",
                  f"GPU{g.index} ({g.bdf}) and its rail NIC {rail.nic} ({nic.bdf}) are {t} apart, beyond "
                  f"NCCL_NET_GDR_LEVEL {level.name} ({level.source}): NCCL disables GPUDirect RDMA for this pair",
                  fix=(f"move {rail.nic} or GPU{g.index} under a common PCIe switch"
                       + (", or remove the override " + level.source if level.source != "default" else "")
                       + ("; or set NCCL_NET_GDR_LEVEL=PHB if host-bridge P2P performs well (measure first)"
                          if t == "PHB" else "")),
                  evidence=(f"PCIe path GPU{g.index} {g.bdf} -> {rail.nic} {nic.bdf}: {t}",
                            f"GPUDirect RDMA level: {level.name} ({level.source})",
                            f"NUMA: GPU {g.numa_node}, NIC {node.numa_node_of(nic.bdf)}"),
                  severity=severity)


# --------------------------------------------------------------------------------------------------
# PCI006 NUMA affinity unknown on a multi-node host (host-facts.md 7.16)


@rule(
    "PCI006", "numa-affinity-unknown", W, "GPUs or RDMA NICs without a NUMA node on a multi-NUMA host",
    what="A host with two or more NUMA nodes that have CPUs, where GPUs or RDMA NICs report no NUMA node "
         "(/sys/bus/pci/devices/<bdf>/numa_node is -1): the firmware gave no proximity (ACPI _PXM/SRAT) for "
         "their PCI root.",
    why="NCCL places each PCI device under the CPU of its numa_node; with -1 it builds a <cpu numaid=\"-1\"> "
        "that is no socket at all. GPU<->NIC pairing can no longer tell a NIC across the inter-socket link from "
        "a local one, and NCCL's proxy and network threads are not pinned to the GPU's socket: lower and "
        "unstable network bandwidth, and on VMs the GPU/NIC pairing NCCL_TOPO_FILE exists to fix.",
    detect="numa_node of every GPU and RDMA NIC PCI function, against the online NUMA nodes that have CPUs "
           "(/sys/devices/system/node/node*/cpulist). Single-node hosts (where -1 is normal) are not judged.",
    fix="Enable NUMA / ACPI SRAT in the BIOS (NUMA per socket, no node interleaving) and update the BIOS; on a VM "
        "the hypervisor must publish PCI proximity (vNUMA). Until then, write an NCCL_TOPO_FILE with the right "
        "numaid for each device ('ncclctl topo generate --spec').",
)
def numa_unknown(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    cpu_nodes = [n.id for n in node.numa if n.cpulist]
    if len(cpu_nodes) < 2:
        return
    devs = [(f"GPU{g.index}", g.bdf) for g in sorted(node.gpus, key=lambda g: g.index)]
    devs += [(n.name, n.bdf) for n in rdma_nics(node) if n.bdf]  # (rdma_nics has only placed NICs)
    unknown = [(name, bdf) for name, bdf in devs if bdf and node.numa_node_of(bdf) in (None, -1)]
    if not unknown:
        return
    shown = ", ".join(f"{name} ({bdf})" for name, bdf in unknown[:8]) + (
        f" and {len(unknown) - 8} more" if len(unknown) > 8 else "")
    yield Hit("", f"{len(unknown)} of {len(devs)} GPUs/RDMA NICs have no NUMA node on a host with "
                  f"{len(cpu_nodes)} CPU NUMA nodes: {shown}; NCCL cannot tell which socket they belong to",
              evidence=(f"NUMA nodes with CPUs: {', '.join(map(str, cpu_nodes))}",
                        *(f"{name} {bdf}: numa_node={node.numa_node_of(bdf)}" for name, bdf in unknown[:8])))
