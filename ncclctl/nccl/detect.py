"""The topology NCCL's detection builds from the node model, written as NCCL topology XML (``NCCL_TOPO_FILE``).

The output follows NCCL's own dialect (nccl-format.md §1, §1.2): no declaration, 2-space indentation, one
start tag per line, double quotes, children in ascending bus-id order, at most 255 elements. Every ``<cpu>`` and
``<pci>`` carries the complete attribute set NCCL would otherwise fill (§2.5 step 7), so ranks never fuse into
duplicates; ids and class codes are byte-identical to sysfs.

Bare metal mirrors the real PCIe tree the way NCCL walks sysfs: each switch is one ``<pci>`` named by its
upstream port (the downstream port and root port are skipped, two path components per level). Virtual machines
(flat PCIe) get synthesized switches ``ffff:ff:NN.0`` from a layout (a built-in profile or a YAML spec), with the
VM's real GPU/NIC bus ids under them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ncclctl.errors import InputError, UsageError
from ncclctl.model import Gpu, IbPort, Nic, Node, PciDevice
from ncclctl.nccl.version import DEFAULT, Version
from ncclctl.names import natural_key
from ncclctl.sysfs import GEN_SPEED_STRING, link_speed_gen
from ncclctl.record import record

if TYPE_CHECKING:
    from ncclctl.nccl.railids import RailIds

MAX_ELEMENTS = 255
MAX_VALUE_LEN = 253
NVLINK_SENTINEL = "fffffff:ffff:ff"
NVSWITCH_CLASS = "0x068000"


# --------------------------------------------------------------------------------------------------
# A tiny element tree and NCCL-dialect serializer


@dataclass
class El:
    """An element of the topology being written: name, attributes in NCCL's order, children."""
    name: str
    attrs: list[tuple[str, str]]
    children: list["El"] = field(default_factory=list)

    def count(self) -> int:
        return 1 + sum(c.count() for c in self.children)


def serialize(root: El) -> bytes:
    lines: list[str] = []

    def emit(el: El, depth: int) -> None:
        pad = "  " * depth
        attrs = "".join(f' {k}="{_check_value(k, v)}"' for k, v in el.attrs)  # never write what NCCL misreads
        if el.children:
            lines.append(f"{pad}<{el.name}{attrs}>")
            for c in el.children:
                emit(c, depth + 1)
            lines.append(f"{pad}</{el.name}>")
        else:
            lines.append(f"{pad}<{el.name}{attrs}/>")

    emit(root, 0)
    return ("\n".join(lines) + "\n").encode("ascii")


def _check_value(name: str, value: str) -> str:
    if any(c in value for c in '"\n\r\t') or len(value) > MAX_VALUE_LEN:
        raise InputError(f"attribute {name}={value[:40]!r} cannot be written in NCCL's XML dialect",
                         fix="values must be shorter than 254 characters and contain no quotes, tabs or newlines")
    try:
        value.encode("ascii")
    except UnicodeEncodeError:
        raise InputError(f"attribute {name}={value[:40]!r} is not ASCII") from None
    return value


# --------------------------------------------------------------------------------------------------
# Attribute builders


@record
class Options:
    """How to write the topology: NCCL version, minimal skeleton, which NICs, rail/plane ids on the NETs."""
    nccl_version: Version = DEFAULT
    #: Only the cpu/pci skeleton: GPU and NIC <pci> elements without <gpu>/<nic> children. NCCL matches them by
    #: bus id and fills the devices itself (the form cloud providers ship).
    minimal: bool = False
    #: RDMA device names to include (None: every RDMA NIC with an active port).
    nics: tuple[str, ...] | None = None
    #: ``"mlx5_0:1"`` (ibv port) -> (rail, plane or None): written as ``<net rail= plane=>`` (NCCL 2.30.7+ only;
    #: the caller passes them only for a target that reads them).
    rail_ids: tuple[tuple[str, int, int | None], ...] = ()
    #: The Socket plugin's devices (:class:`ncclctl.nccl.transport.SocketDev`) when NCCL uses sockets: written as
    #: NCCL's detection writes them (under their PCI function, else under the first CPU).
    socket: tuple = ()


def _speed_string(gen: int | None, opts: Options, where: str) -> str:
    """The link_speed string NCCL knows for a PCIe generation, in the spelling the target version reads."""
    if gen is None:
        gen = 3  # NCCL's own fallback for unknown speeds; we write it explicitly
    v = opts.nccl_version
    if v >= Version(2, 11, 0):
        return GEN_SPEED_STRING[gen]
    # Before 2.11 NCCL's kvDictPciGen knew only the old kernel spellings, up to "16 GT/s".
    old = {1: "2.5 GT/s", 2: "5 GT/s", 3: "8 GT/s", 4: "16 GT/s"}
    if gen not in old:
        raise InputError(f"{where} is a PCIe Gen{gen} link, which NCCL {v} cannot express",
                         fix="target NCCL 2.11 or newer (--nccl-version 2.11)")
    return old[gen]


def _link(node: Node, dev: PciDevice) -> tuple[int | None, int | None]:
    """(gen, width) as NCCL computes it from sysfs: min of the device's and its parent port's maximum.

    A device straight under a root complex (a VM's GPU or NIC on bus 00 with no bridge above it) has no parent port:
    NCCL's read of ``../max_link_width`` finds no file, ``strtol("")`` gives 0 and NCCL writes ``link_width="0"``
    (min of the device's width and 0; read back as 16), while the unreadable port speed stays FLT_MAX so the
    device's own speed is written. Seen on a real H200 VM with NCCL 2.28.9 (its topology dump, 2026-11-28)."""
    gens, widths = [], []
    root_attached = dev.parent is None and len(dev.path) == 2
    for d in (dev, node.pci_device(dev.parent) if dev.parent else None):
        if d is None:
            continue
        try:
            g = link_speed_gen(d.max_link_speed)
        except ValueError:
            g = None
        if g:
            gens.append(g)
        if d.max_link_width:
            widths.append(d.max_link_width)
    if root_attached and widths:
        widths.append(0)
    return (min(gens) if gens else None, min(widths) if widths else None)


#: From NCCL 2.30 the link attributes of a device NVML knows (a GPU) come from NVML's current PCIe link width and
#: generation instead of sysfs (``nvmlDeviceGetCurrPcieLinkWidth``: absent from the 2.29.7 library's strings,
#: present in 2.30.7's, and in 2.30.7's xml.cc). NVML's current width is the trained width: a GPU that trained at x8
#: is x8 to NCCL 2.30 while sysfs' max_link_width still says 16. The speed stays the device's maximum here: NCCL
#: reads it with a CUDA context open (the link at full speed), while a snapshot of an idle GPU may show a
#: power-saving Gen1.
GPU_LINK_FROM_NVML = Version(2, 30, 0)


def _pci_attrs(node: Node, dev: PciDevice, opts: Options, *, busid: str | None = None,
               gpu: bool = False) -> list[tuple[str, str]]:
    gen, width = _link(node, dev)
    if gpu and opts.nccl_version >= GPU_LINK_FROM_NVML:
        width = dev.current_link_width or dev.max_link_width or 16
    attrs = [("busid", busid or dev.bdf), ("class", dev.class_code)]
    if opts.nccl_version >= Version(2, 9, 0):
        attrs += [("vendor", dev.vendor), ("device", dev.device)]
        if dev.subsystem_vendor and dev.subsystem_device:
            attrs += [("subsystem_vendor", dev.subsystem_vendor), ("subsystem_device", dev.subsystem_device)]
    attrs += [("link_speed", _speed_string(gen, opts, f"PCI device {dev.bdf}")),
              ("link_width", str(16 if width is None else width))]
    return attrs


#: From 2.31 NCCL's detection writes the CPUID family as is, adding the extended family only to family 15 (AMD: 25
#: for Zen 3/4, 26 for Zen 5), and adds the extended model only for families 6 and 15; 2.30.7 and older wrote family
#: + (extended family << 4) (AMD: 175, 191) and always added the extended model (graph/xml.cc at 2.30.7, 5067397c,
#: and 2.31.0a7, 86fa684d). 2.31's reader takes both AMD spellings.
CPUID_FAMILY_AS_IS = Version(2, 31, 0)


def cpu_ids(cpu, version: Version) -> tuple[int | None, int | None]:
    """(familyid, modelid) as NCCL ``version``'s detection writes them for ``cpu`` (/proc/cpuinfo's family and model:
    Linux adds the extended family to family 15 and the extended model from family 6 on)."""
    fam, model = cpu.family, cpu.model
    if version < CPUID_FAMILY_AS_IS:
        return cpu.nccl_familyid, model
    if fam is not None and model is not None and fam != 6 and fam < 0xF:
        model &= 0xF  # 2.31 adds the extended model only for families 6 and 15 (Zhaoxin, family 7: the base model)
    return fam, model


def _cpu_attrs(node: Node, numa: int, opts: "Options") -> list[tuple[str, str]]:
    cpu = node.cpu
    numa_node = next((n for n in node.numa if n.id == numa), None)
    attrs = [("numaid", str(numa))]
    affinity = numa_node.cpumap if numa_node is not None else None
    if numa < 0:
        # No NUMA node: NCCL reads /sys/devices/system/node/node-1/cpumap (2.30: node4294967295), finds nothing and
        # leaves the CPU without affinity ("Affinity for GPU N is empty, ignoring": the GPU's threads stay unbound).
        # Seen in real NCCL 2.28.9's own dump of an H200 VM (no affinity attribute); written the same here, so the
        # file makes NCCL do what it does on the host (the GPUs' local_cpus are in 'ncclctl probe', not in the file).
        affinity = None
    if affinity:
        if len(affinity) > MAX_VALUE_LEN:
            raise InputError(f"NUMA node {numa}'s cpumap is {len(affinity)} characters, beyond NCCL's 253-character limit",
                             fix="NCCL cannot take this affinity from a file; generate without it is not supported yet")
        attrs.append(("affinity", affinity))
    if cpu.arch not in ("x86_64", "arm64", "ppc64"):
        raise InputError(f"unknown CPU architecture {cpu.arch!r}: NCCL knows x86_64, arm64 and ppc64",
                         fix="probe the host again; /proc/cpuinfo was not recognised")
    attrs.append(("arch", cpu.arch))
    if cpu.arch == "x86_64":
        # NCCL fills vendor/familyid/modelid only on x86 builds (from CPUID), so only there are they "complete".
        attrs.append(("vendor", cpu.vendor))
        familyid, modelid = cpu_ids(cpu, opts.nccl_version)
        if familyid is not None:
            attrs.append(("familyid", str(familyid)))
        if modelid is not None:
            attrs.append(("modelid", str(modelid)))
    return attrs


def ib_pci_busid(bdf: str) -> str:
    """The bus id NCCL's IB plugin reports: function forced to 0, device forced to 00 (NCCL_IB_MERGE_VFS=1)."""
    return bdf[:-4] + "00.0"


@record
class NetDev:
    """One NCCL net device: an ACTIVE port of an RDMA NIC, as the IB plugin enumerates it."""

    nic: Nic
    port: IbPort
    dev: int
    nccl_port: int
    busid: str


def net_devices(node: Node, selected: tuple[str, ...] | None = None) -> list[NetDev]:
    """NCCL's IB plugin view: active ports in PCI order, dev index, port = ibport + realPort."""
    entries: list[tuple[str, Nic, IbPort]] = []  # (the NIC's bdf, NIC, port)
    for nic in node.nics:
        if selected is not None and nic.name not in selected:
            continue
        if nic.bdf is None:
            continue
        for port in nic.ports:
            if port.is_active and port.link_layer in ("InfiniBand", "Ethernet"):
                entries.append((nic.bdf, nic, port))
    entries.sort(key=lambda e: (_bdf_int(e[0]), e[2].num))
    out: list[NetDev] = []
    for i, (bdf, nic, port) in enumerate(entries):
        busid = ib_pci_busid(bdf)
        real_port = sum(1 for prev in out if prev.busid == busid)
        out.append(NetDev(nic=nic, port=port, dev=i, nccl_port=port.num + real_port, busid=busid))
    return out


def _bdf_int(bdf: str) -> int:
    return int(bdf.replace(":", "").replace(".", ""), 16)


def _net_el(node: Node, nd: NetDev, opts: Options) -> El:
    attrs = [("name", nd.nic.name)]
    if not opts.minimal:
        attrs.append(("dev", str(nd.dev)))
        if nd.port.rate_gbps:
            attrs.append(("speed", str(int(round(nd.port.rate_gbps * 1000)))))
        attrs.append(("port", str(nd.nccl_port)))
        rid = next((r for r in opts.rail_ids if r[0] == f"{nd.nic.name}:{nd.port.num}"), None)
        if rid is not None:
            attrs.append(("rail", str(rid[1])))
            if rid[2] is not None:
                attrs.append(("plane", str(rid[2])))
        if nd.nic.sys_image_guid:
            attrs.append(("guid", f"0x{int(nd.nic.sys_image_guid, 16):x}"))
        if nd.nic.max_qp:
            attrs.append(("maxconn", str(nd.nic.max_qp)))
        # Not written: gdr. It is init-only, and gdr="1" makes NCCL skip its own check of plugin support: a file
        # copied to a node where nvidia-peermem is not loaded would then break jobs. NCCL detects it correctly.
    return El("net", [(k, _check_value(k, v)) for k, v in attrs])


def _gpu_el(node: Node, gpu: Gpu, opts: Options) -> El:
    attrs = [("dev", str(gpu.index))]
    if gpu.sm is not None:
        attrs.append(("sm", str(gpu.sm)))
    el = El("gpu", attrs)
    if opts.minimal:
        return el
    groups: dict[tuple[str, str], int] = {}
    for link in gpu.active_nvlinks:
        if link.p2p_supported is False:
            continue
        if link.remote_type == "gpu" and link.remote_bdf:
            peer = node.pci_device(link.remote_bdf)
            key = (link.remote_bdf, peer.class_code if peer else "0x030200")
        elif link.remote_type == "nvswitch":
            key = (link.remote_bdf or NVLINK_SENTINEL, NVSWITCH_CLASS)
        elif link.remote_type == "cpu":
            key = (link.remote_bdf or NVLINK_SENTINEL, "0x068001")
        else:
            key = (link.remote_bdf or NVLINK_SENTINEL, NVSWITCH_CLASS)  # NCCL assumes NVSwitch when unknown
        groups[key] = groups.get(key, 0) + 1
    for (target, tclass), count in sorted(groups.items()):
        el.children.append(El("nvlink", [("target", target), ("count", str(count)), ("tclass", tclass)]))
    if gpu.c2c is not None:
        if opts.nccl_version < Version(2, 19, 0):
            raise InputError(f"GPU {gpu.index} is attached to its CPU over C2C, which NCCL {opts.nccl_version} "
                             "cannot describe", fix="target NCCL 2.19 or newer (--nccl-version 2.19)")
        el.children.append(El("c2c", [("bw", str(gpu.c2c.max_bw or 0)), ("count", str(gpu.c2c.count))]))
    return el


# --------------------------------------------------------------------------------------------------
# Bare metal


def _xml_parent(dev: PciDevice) -> str | None:
    """NCCL's sysfs walk: the XML parent is two path components up when that is a PCI function, else the CPU."""
    if len(dev.path) >= 4:
        return dev.path[-3]
    return None


def generate(node: Node, opts: Options = Options(), *, layout: "VirtualLayout | None" = None) -> bytes:
    if opts.nccl_version < Version(2, 6, 0):
        raise UsageError("NCCL reads topology files from 2.6 on", fix="use --nccl-version 2.6 or newer")
    if not node.gpus:
        raise InputError("the node has no GPUs: there is nothing for NCCL to read in a topology file",
                         fix="generate it on (or from a snapshot of) a GPU node")
    if layout is not None:
        root = _virtual(node, layout, opts)
    else:
        root = _bare_metal(node, opts)
    if not opts.minimal:
        _socket_nets(root, opts)
    n = root.count()
    if n > MAX_ELEMENTS:
        raise InputError(
            f"the topology needs {n} XML elements; NCCL accepts at most {MAX_ELEMENTS} (256 node slots)",
            fix="use --minimal, or restrict the NICs with --nics (storage NICs rarely belong in the file)",
        )
    return serialize(root)


def _socket_net_el(sd) -> El:
    # gdr="0" is what the Socket plugin always reports (host memory only): unlike gdr="1" it cannot enable
    # anything NCCL would not detect itself.
    attrs = [("name", sd.name), ("dev", str(sd.dev)), ("speed", str(sd.speed)), ("port", "0"),
             ("guid", f"{sd.dev:#x}"), ("maxconn", "65536"), ("gdr", "0")]
    return El("net", [(k, _check_value(k, v)) for k, v in attrs])


def _socket_nets(root: El, opts: Options) -> None:
    """The socket devices not placed under their PCI function go under the first CPU, as ``ncclTopoFillNet``
    attaches a device that is not a PCI function (or whose function the layout does not hold)."""
    placed = {c.attrs[0][1] for c in _walk(root) if c.name == "net" and c.attrs}
    rest = [sd for sd in opts.socket if sd.name not in placed]
    if not rest:
        return
    cpu = next((c for c in root.children if c.name == "cpu"), None)
    if cpu is None:
        return
    nic = next((c for c in cpu.children if c.name == "nic"), None)
    if nic is None:
        nic = El("nic", [])
        cpu.children.append(nic)
    nic.children.extend(_socket_net_el(sd) for sd in rest)


def _walk(el: El):
    stack = [el]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(e.children)


def _endpoints(node: Node, opts: Options) -> tuple[list[Gpu], dict[str, list[NetDev]], list[NetDev]]:
    gpus = sorted(node.gpus, key=lambda g: g.index)
    nets = net_devices(node, opts.nics)
    by_busid: dict[str, list[NetDev]] = {}
    for nd in nets:
        by_busid.setdefault(nd.busid, []).append(nd)
    return gpus, by_busid, nets


def _bare_metal(node: Node, opts: Options) -> El:
    gpus, nets_by_busid, _ = _endpoints(node, opts)
    for g in gpus:
        if node.pci_device(g.bdf) is None:
            raise InputError(f"GPU {g.index} ({g.bdf}) has no PCI placement in the model",
                             fix="probe with sysfs visible, or describe the layout with --spec")
    # Elements: bdf -> El; parent links follow NCCL's two-components-up walk.
    elements: dict[str, El] = {}
    parents: dict[str, str | None] = {}
    cpus: dict[int, El] = {}

    def numa_of(dev: PciDevice) -> int:
        return dev.numa_node if dev.numa_node is not None else -1

    def attach(dev: PciDevice, el: El) -> None:
        parent_bdf = _xml_parent(dev)
        while parent_bdf is not None:
            pdev = node.pci_device(parent_bdf)
            if pdev is None:
                parent_bdf = None
                break
            if parent_bdf not in elements:
                elements[parent_bdf] = El("pci", _pci_attrs(node, pdev, opts))
                attach(pdev, elements[parent_bdf])
            break
        if parent_bdf is None:
            numa = numa_of(dev)
            if numa not in cpus:
                cpus[numa] = El("cpu", _cpu_attrs(node, numa, opts))
            cpus[numa].children.append(el)
        else:
            elements[parent_bdf].children.append(el)
        parents[dev.bdf] = parent_bdf

    for g in gpus:
        dev = node.pci_device(g.bdf)
        assert dev is not None
        el = El("pci", _pci_attrs(node, dev, opts, gpu=True))
        if not opts.minimal:
            el.children.append(_gpu_el(node, g, opts))
        elements[g.bdf] = el
        attach(dev, el)
    for busid, nets in sorted(nets_by_busid.items()):
        dev = node.pci_device(busid) or node.pci_device(nets[0].nic.bdf or "")
        if dev is None:
            continue
        el = El("pci", _pci_attrs(node, dev, opts, busid=busid))
        if not opts.minimal:
            el.children.append(El("nic", [], [_net_el(node, nd, opts) for nd in nets]))
        if busid in elements:
            raise InputError(f"{busid} is both a GPU and a NIC", fix="report this host layout as a bug")
        elements[busid] = el
        attach(dev, el)
    if not opts.minimal:
        for sd in opts.socket:
            sdev = node.pci_device(sd.busid) if sd.busid else None
            if sdev is None:
                continue  # placed under the first CPU by _socket_nets
            holder = elements.get(sdev.bdf)
            if holder is None:
                holder = elements[sdev.bdf] = El("pci", _pci_attrs(node, sdev, opts))
                attach(sdev, holder)
            nic = next((c for c in holder.children if c.name == "nic"), None)
            if nic is None:
                nic = El("nic", [])
                holder.children.append(nic)
            nic.children.append(_socket_net_el(sd))
    system = El("system", [("version", "1")])
    for numa in sorted(cpus):
        system.children.append(cpus[numa])
    _sort(system)
    return system


def _sort(el: El) -> None:
    def key(c: El) -> tuple:
        attrs = dict(c.attrs)
        return (c.name != "pci", _bdf_int(attrs["busid"]) if "busid" in attrs else 0)

    if el.name in ("cpu", "pci"):
        el.children.sort(key=key)
    for c in el.children:
        _sort(c)


# --------------------------------------------------------------------------------------------------
# Virtual machines: synthesized switches


@record
class VirtualSwitch:
    """A PCIe switch made up for a VM (the GPUs and NICs that share it), as cloud topology files declare them."""
    gpus: tuple[int, ...]
    nics: tuple[str, ...]
    numa: int | None = None


@record
class VirtualLayout:
    """A VM's made-up switches and their link speed/width (a cloud provider's topology file layout)."""
    name: str
    switches: tuple[VirtualSwitch, ...]
    link_speed: str | None = None
    link_width: int | None = None


#: Built-in layouts: (description, GPUs per switch, NICs per switch).
PROFILES = {
    "h100": ("H100-class 8 GPU + 8 NIC: one NIC per GPU, one virtual switch per pair", 1, 1),
    "a100": ("A100-class 8 GPU + 8 NIC: two GPU/NIC pairs per virtual switch", 2, 2),
    "pairs": ("generic: GPU i with NIC i, one virtual switch per pair", 1, 1),
}


def profile_layout(node: Node, name: str, nics: tuple[str, ...] | None = None) -> VirtualLayout:
    if name not in PROFILES:
        raise UsageError(f"unknown profile {name!r}", fix="choose one of: " + ", ".join(sorted(PROFILES)))
    _, per_gpu, per_nic = PROFILES[name]
    gpus = sorted(g.index for g in node.gpus)
    nic_names = sorted({nd.nic.name for nd in net_devices(node, nics)}, key=natural_key)
    if name in ("h100", "a100") and (len(gpus) != 8 or len(nic_names) != 8):
        raise InputError(f"profile {name!r} describes 8 GPUs and 8 NICs; this host has {len(gpus)} GPUs and "
                         f"{len(nic_names)} active RDMA NICs", fix="use --profile pairs or a --spec layout")
    switches = []
    for k in range(0, max(len(gpus), 1), per_gpu):
        g = tuple(gpus[k:k + per_gpu])
        j = (k // per_gpu) * per_nic
        n = tuple(nic_names[j:j + per_nic])
        if g or n:
            switches.append(VirtualSwitch(gpus=g, nics=n))
    used = {n for s in switches for n in s.nics}
    for extra in nic_names:
        if extra not in used:
            switches.append(VirtualSwitch(gpus=(), nics=(extra,)))
    return VirtualLayout(name=name, switches=tuple(switches))


def load_spec(text: str, *, path: str) -> VirtualLayout:
    """Read a layout spec (YAML; schema ``schemas/topo-spec.schema.json``)."""
    from ncclctl.yamlio import load

    data, _ = load(text, path, max_depth=16, fix="a layout spec is a small flat mapping")
    if not isinstance(data, dict):
        raise InputError("a layout spec is a mapping with a 'switches' list", path=path,
                         fix="see 'ncclctl schema topo-spec'")
    allowed = {"version", "name", "switches", "link_speed", "link_width"}
    unknown = sorted((k for k in data if k not in allowed), key=str)
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r}", path=path, fix="allowed keys: " + ", ".join(sorted(allowed)))
    if data.get("version", 1) != 1:
        raise InputError(f"unsupported spec version {data.get('version')!r}", path=path, fix="use version: 1")
    sw_raw = data.get("switches")
    if not isinstance(sw_raw, list) or not sw_raw:
        raise InputError("'switches' must be a non-empty list", path=path, fix="list one entry per virtual switch")
    switches = []
    for i, s in enumerate(sw_raw):
        where = f"switches[{i}]"
        if not isinstance(s, dict):
            raise InputError(f"{where} must be a mapping with 'gpus' and 'nics'", path=path)
        bad = sorted((k for k in s if k not in ("gpus", "nics", "numa")), key=str)
        if bad:
            raise InputError(f"{where}: unknown key {bad[0]!r}", path=path, fix="allowed keys: gpus, nics, numa")
        gpus = s.get("gpus", [])
        nics = s.get("nics", [])
        if not isinstance(gpus, list) or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in gpus):
            raise InputError(f"{where}.gpus must be a list of NVML GPU indices", path=path)
        if not isinstance(nics, list) or not all(isinstance(x, str) and x for x in nics):
            raise InputError(f"{where}.nics must be a list of RDMA device names", path=path)
        numa = s.get("numa")
        if numa is not None and (not isinstance(numa, int) or isinstance(numa, bool) or numa < -1):
            raise InputError(f"{where}.numa must be a NUMA node number", path=path)
        if not gpus and not nics:
            raise InputError(f"{where} is empty", path=path, fix="give at least one GPU or NIC")
        switches.append(VirtualSwitch(gpus=tuple(gpus), nics=tuple(nics), numa=numa))
    speed = data.get("link_speed")
    if speed is not None:
        try:
            if not isinstance(speed, str) or link_speed_gen(speed) is None:
                raise ValueError(speed)
        except ValueError:
            raise InputError(f"link_speed {speed!r} is not a PCIe speed string", path=path,
                             fix='use the kernel spelling, e.g. "32.0 GT/s PCIe"') from None
    width = data.get("link_width")
    if width is not None and (not isinstance(width, int) or isinstance(width, bool) or width not in (1, 2, 4, 8, 16, 32)):
        raise InputError(f"link_width {width!r} is not a PCIe width", path=path, fix="use 1, 2, 4, 8 or 16")
    name = data.get("name", "spec")
    return VirtualLayout(name=str(name), switches=tuple(switches), link_speed=speed, link_width=width)


def _virtual(node: Node, layout: VirtualLayout, opts: Options) -> El:
    gpus = {g.index: g for g in node.gpus}
    nets = net_devices(node, opts.nics)
    nets_by_nic: dict[str, list[NetDev]] = {}
    for nd in nets:
        nets_by_nic.setdefault(nd.nic.name, []).append(nd)
    seen_gpu: set[int] = set()
    seen_nic: set[str] = set()
    cpus: dict[int, El] = {}
    for k, sw in enumerate(layout.switches):
        if k > 0x1F:
            raise InputError("more than 32 virtual switches", fix="group GPUs and NICs into fewer switches")
        busid = f"ffff:ff:{k + 1:02x}.0"
        members: list[tuple[str, El, PciDevice | None]] = []
        numas = set()
        for gi in sw.gpus:
            if gi in seen_gpu:
                raise InputError(f"GPU {gi} appears in two virtual switches", fix="list each GPU once")
            seen_gpu.add(gi)
            g = gpus.get(gi)
            if g is None:
                raise InputError(f"the layout names GPU {gi}, which this host does not have",
                                 fix=f"GPUs present: {sorted(gpus)}")
            dev = node.pci_device(g.bdf)
            el = El("pci", _leaf_attrs(node, g.bdf, dev, layout, opts, default_class="0x030200"))
            if not opts.minimal:
                el.children.append(_gpu_el(node, g, opts))
            members.append((g.bdf, el, dev))
            if g.numa_node is not None:
                numas.add(g.numa_node)
        for name in sw.nics:
            if name in seen_nic:
                raise InputError(f"NIC {name} appears in two virtual switches", fix="list each NIC once")
            seen_nic.add(name)
            nds = nets_by_nic.get(name)
            if not nds:
                known = sorted(nets_by_nic, key=natural_key)
                raise InputError(f"the layout names NIC {name}, which has no active RDMA port on this host",
                                 fix=f"active RDMA NICs: {', '.join(known) or 'none'}")
            busid_nic = nds[0].busid
            dev = node.pci_device(nds[0].nic.bdf or "")
            el = El("pci", _leaf_attrs(node, busid_nic, dev, layout, opts, default_class="0x020700"))
            if not opts.minimal:
                el.children.append(El("nic", [], [_net_el(node, nd, opts) for nd in nds]))
            members.append((busid_nic, el, dev))
            numa = node.numa_node_of(nds[0].nic.bdf)
            if numa is not None:
                numas.add(numa)
        numa = sw.numa if sw.numa is not None else (min(n for n in numas if n >= 0) if any(n >= 0 for n in numas) else -1)
        gen = link_speed_gen(layout.link_speed) if layout.link_speed else _best_gen(node, members)
        width = layout.link_width or 16
        sw_el = El("pci", [("busid", busid), ("class", "0x060400"),
                           ("link_speed", _speed_string(gen, opts, f"virtual switch {busid}")), ("link_width", str(width))])
        sw_el.children = [el for _, el, _ in sorted(members, key=lambda m: _bdf_int(m[0]))]
        if numa not in cpus:
            cpus[numa] = El("cpu", _cpu_attrs(node, numa, opts))
        cpus[numa].children.append(sw_el)
    system = El("system", [("version", "1")])
    for numa in sorted(cpus):
        system.children.append(cpus[numa])
    _sort(system)
    return system


def _best_gen(node: Node, members: list[tuple[str, El, PciDevice | None]]) -> int | None:
    gens = []
    for _, _, dev in members:
        if dev is None:
            continue
        for s in (dev.max_link_speed, dev.current_link_speed):
            try:
                g = link_speed_gen(s)
            except ValueError:
                g = None
            if g:
                gens.append(g)
    gpu_gens = [g.pcie_max_gen for g in node.gpus if g.pcie_max_gen]
    return max(gens + gpu_gens) if gens or gpu_gens else None


def _leaf_attrs(node: Node, busid: str, dev: PciDevice | None, layout: VirtualLayout, opts: Options,
                *, default_class: str) -> list[tuple[str, str]]:
    """A GPU/NIC under a virtual switch: real ids from sysfs, explicit class and link attributes."""
    if dev is None:
        attrs = [("busid", busid), ("class", default_class)]
        gen = link_speed_gen(layout.link_speed) if layout.link_speed else None
        attrs += [("link_speed", _speed_string(gen, opts, busid)), ("link_width", str(layout.link_width or 16))]
        return attrs
    attrs = _pci_attrs(node, dev, opts, busid=busid)
    # Hyper-V and friends report Unknown/0 for virtual functions: write what the layout says instead.
    gen, width = _link(node, dev)
    if gen is None or not width:
        gen2 = link_speed_gen(layout.link_speed) if layout.link_speed else _best_gen(node, [(busid, El("x", []), dev)])
        attrs = [(k, v) for k, v in attrs if k not in ("link_speed", "link_width")]
        attrs += [("link_speed", _speed_string(gen2, opts, busid)), ("link_width", str(width or layout.link_width or 16))]
    return attrs


def generate_for(node: Node, *, nccl_version: Version = DEFAULT, minimal: bool = False,
                 nics: tuple[str, ...] | None = None, spec: str | None = None,
                 profile: str | None = None, rail_ids: "RailIds | None" = None,
                 socket: tuple | None = None) -> tuple[bytes, VirtualLayout | None, str | None]:
    """``ncclctl topo generate``: the file for ``node`` with the layout chosen from ``spec`` (a YAML file read
    through the input door), ``profile``, or, on a flat-PCIe VM, the ``pairs`` profile. ``(bytes, layout or None for
    bare metal, a note for the user or None)``."""
    if rail_ids is not None:
        from ncclctl.nccl.railids import emit_note, written

        ids = written(rail_ids, nccl_version)
    else:
        ids = None
    if socket is None:
        from ncclctl.nccl.transport import node_transport

        tr = node_transport(node, nccl_version)
        socket = tr.socket if tr.name == "Socket" else ()
    if socket:
        nics = ()  # the IB plugin is not in use: NCCL's detection holds only the socket devices
    opts = Options(nccl_version=nccl_version, minimal=minimal, nics=nics,
                   rail_ids=tuple((k, v.rail, v.plane) for k, v in sorted(ids.ids.items())) if ids else (),
                   socket=socket)
    layout, message = None, None
    if rail_ids is not None:
        why = emit_note(rail_ids, nccl_version)
        if minimal and ids:
            why = "--minimal writes no <net>: the rail/plane ids are not written"
        extra = [*rail_ids.notes, *([why] if why else [])]
        if extra:
            message = "; ".join(extra)
    if spec is not None and profile is not None:
        raise UsageError("give --spec or --profile, not both")
    if spec is not None:
        from ncclctl.inputs import read_text

        layout = load_spec(read_text(spec, "spec"), path=spec)
    elif profile is not None:
        layout = profile_layout(node, profile, opts.nics)
    elif node.is_virtual and node.gpus and net_devices(node, opts.nics):
        layout = profile_layout(node, "pairs", opts.nics)
        message = ("flat PCIe (virtual machine) detected: pairing GPU i with NIC i under virtual switches; use "
                   "--profile or --spec to choose the layout") + (f"; {message}" if message else "")
    elif node.is_virtual and node.gpus:
        message = ("flat PCIe (virtual machine) with no RDMA NIC: the GPUs are written where the VM shows them"
                   + (f", NCCL's socket device{'s' if len(socket) != 1 else ''} "
                      + ", ".join(sd.name for sd in socket) if socket else "")
                   + "; no pairing to do") + (f"; {message}" if message else "")
    return generate(node, opts, layout=layout), layout, message
