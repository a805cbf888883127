"""A topology XML to NCCL's :class:`~ncclctl.nccl.system.System`, the way ``ncclTopoGetSystem`` builds it.

Steps, each after NCCL 2.30.7 (``src/graph/topo.cc``, ``xml.cc``, ``transport/net_ib/init.cc``):

1. The file is read with NCCL's own reader (:func:`ncclctl.nccl.xml.parse_nccl_xml`).
2. Each rank's GPU gets ``keep``/``rank``/``gdr`` (``ncclTopoFillGpu``; ``gdr`` only when the file has none).
3. The network plugin is asked for its devices (:class:`Plugin`: the IB plugin's view, filtered by
   ``NCCL_IB_HCA``, sorted by PCI path) and every one it reports is filled in (``ncclTopoPopulateNics``: ``dev`` is
   the plugin index; ``speed``/``port``/``guid``/``gdr``... only where the file has none: the file wins).
4. NIC fusion (``ncclTopoMakeVNics``): devices at most ``NCCL_NET_MERGE_LEVEL`` apart (default PORT: two ports or
   two functions of one card) become one virtual device ``mlx5_0+mlx5_1`` with the summed speed and a new ``dev``
   index after the physical ones; the physical ones are dropped (``net="0"``, ``keep="0"``).
5. ``ncclTopoTrimXml`` drops every branch without a kept GPU or NET (a NIC the plugin does not report is gone).
6. ``ncclTopoGetSystemFromXml``: CPUs, PCI tree, GPUs (with their DEV node), NICs/NETs, NVLinks, C2C, PCI links,
   Broadcom switch flattening, CPU-CPU links, link sorting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ncclctl.errors import InputError
from ncclctl.nccl.changes import (AMD_ZEN_BW_SINCE, GNR_AS_ERP_SINCE, INTEL_GNR_SRF, NVLINK_TCLASS_REQUIRED_SINCE,
                                  amd_generation)
from ncclctl.nccl.params import strtoul
from ncclctl.nccl import system as s
from ncclctl.nccl.system import CPU, DEV, GPU, NET, NIC, NVS, PCI, Node, Params, System, connect, f32
from ncclctl.record import record


# --------------------------------------------------------------------------------------------------
# A mutable XML tree (NCCL edits the XML it read before building the system)

@dataclass(eq=False)
class X:
    """A node of the mutable XML tree NCCL edits before it builds the system."""
    name: str
    attrs: dict[str, str]
    subs: list["X"] = field(default_factory=list)
    parent: "X | None" = None

    def get(self, key: str) -> str | None:
        return self.attrs.get(key)

    def find_all(self, name: str) -> list["X"]:
        out, stack = [], [self]
        while stack:
            node = stack.pop()
            if node.name == name:
                out.append(node)
            stack.extend(reversed(node.subs))
        return out


def _copy(root) -> X:
    """Our mutable copy of a :class:`~ncclctl.nccl.xml.XmlNode` tree (first attribute of a name wins, as
    ``xmlGetAttr``)."""
    def one(n, parent: X | None) -> X:
        attrs: dict[str, str] = {}
        for k, v in n.attrs:
            attrs.setdefault(k, v)
        return X(n.name, attrs, [], parent)

    top = one(root, None)
    stack = [(root, top)]
    while stack:
        src, dst = stack.pop()
        for c in src.children:
            x = one(c, dst)
            dst.subs.append(x)
            stack.append((c, x))
    return top


def _int(node: X, key: str, default: int | None = None, *, what: str = "") -> int:
    """``xmlGetAttrInt`` (``strtol(str, NULL, 0)``) / ``xmlGetAttrIntDefault``."""
    from ncclctl.nccl.params import c_int

    v = node.get(key)
    if v is None:
        if default is None:
            raise InputError(f"<{node.name}> has no {key!r} attribute{what}: NCCL stops here (ncclInternalError)",
                             fix=f"add {key}=\"...\" to the <{node.name}> element")
        return default
    return c_int(v)


def _strtol(v: str | None, base: int = 0) -> int:
    from ncclctl.nccl.params import strtol

    return 0 if v is None else strtol(v, base).value or 0


def bus_id_to_int(busid: str) -> int:
    """``busIdToInt64``: the hex digits up to the first other character, dots and colons skipped (16 at most)."""
    digits = []
    for ch in busid:
        if ch in ".:":
            continue
        if ch in "0123456789abcdefABCDEF":
            digits.append(ch)
            if len(digits) == 16:
                break
        else:
            break
    return int("".join(digits), 16) if digits else 0


# --------------------------------------------------------------------------------------------------
# The network plugin's view

@record
class PluginDev:
    """One device as NCCL's IB plugin reports it (``ncclNetProperties_t``)."""

    name: str
    #: The XML ``<net>`` element it is (physical devices) or None (a virtual, fused device).
    port: int
    speed: int  # Mbps
    guid: int
    gdr: bool
    #: Physical member indices of a fused device; () for a physical one.
    members: tuple[int, ...] = ()
    #: The physical ``<net>`` elements (for fused devices, their members').
    xml: tuple[X, ...] = ()
    #: ``railId``/``planeId`` (2.30.7+): from the NCCL_IB_HCA entry that selected the port, else undefined (-1).
    rail: int = -1
    plane: int = -1


@record
class Plugin:
    """What the net plugin knows that a topology file does not: whether GPUDirect RDMA is possible (``nvidia_peermem``
    loaded or DMA-BUF usable) and which ports are usable (ACTIVE, of the right link layer)."""

    gdr: bool = True
    #: Names of ports known to be down (not ACTIVE): the plugin does not list them.
    down: frozenset[tuple[str, int]] = frozenset()
    #: The plugin's name in NCCL's messages: ``IB`` or ``Socket``.
    name: str = "IB"
    #: The Socket plugin's devices (:class:`ncclctl.nccl.transport.SocketDev`), in its order, when ``name`` is
    #: ``Socket``: NCCL takes them from the interfaces, not from the topology file.
    socket: tuple = ()


#: NCCL_NET_MERGE_POLICY and NCCL_IB_HCA's ``:rail:plane`` fields are read from this release on.
RAIL_IDS_SINCE = (2, 30, 7)


def merge_policy_rail(params: Params) -> bool:
    """``ncclTopoGetMergePolicy``: RAIL (case-insensitive) or ALL (the default; anything else warns and is ALL)."""
    v = params.str("NET_MERGE_POLICY")
    return v is not None and v.lower() == "rail"


def merge_level(params: Params) -> int:
    """``ncclTopoGetFusionEnv``: NCCL_NET_MERGE_LEVEL by name prefix (kvConvertToInt), default PORT."""
    v = params.str("NET_MERGE_LEVEL")
    if v is None:
        return s.PATH_PORT
    for name, level in (("LOC", s.PATH_LOC), ("PORT", s.PATH_PORT), ("PIX", s.PATH_PIX), ("PXB", s.PATH_PXB),
                        ("P2C", s.PATH_P2C), ("PXN", s.PATH_PXN), ("PHB", s.PATH_PHB), ("SYS", s.PATH_SYS)):
        if v.startswith(name):
            return level
    return 0  # kvConvertToInt falls back to the terminator's value (0 = LOC)


def _xml_path(nodes: list[X]) -> tuple[int, X | None]:
    """``ncclTopoGetPath``: the path type between XML ``<net>`` nodes and their first common PCI parent."""
    if len(nodes) == 1:
        common: X | None = nodes[0]
        path = s.PATH_LOC
    else:
        chains = []
        for n in nodes:
            chain = []
            t: X | None = n
            while t is not None:
                chain.append(t)
                t = None if t.name == "system" else t.parent
            chains.append(chain)
        common = None
        path = -1
        depth = 1
        while all(len(c) >= depth for c in chains):
            tops = [c[-depth] for c in chains]
            if all(t is tops[0] for t in tops):
                common = tops[0]
                depth += 1
                continue
            # Multi-port: every top has a busid equal but for its last character
            b0 = tops[0].get("busid")
            multi = b0 is not None
            if multi:
                assert b0 is not None
                for t in tops[1:]:
                    b = t.get("busid")
                    if b is None or len(b) != len(b0) or b[:-1] != b0[:-1]:
                        multi = False
                        break
            if multi:
                path = s.PATH_PORT
            break
        if path == -1:
            if common is None:
                path = s.PATH_DIS
            elif common.name == "system":
                path = s.PATH_SYS
            elif common.name == "cpu":
                path = s.PATH_PHB
            elif common.name in ("nic", "net"):
                path = s.PATH_PORT
            elif common.get("busid") is not None and all(
                    n.parent is None or n.parent.name != "nic" or n.parent.parent is None
                    or n.parent.parent.name != "pci" or n.parent.parent.parent is common for n in nodes):
                path = s.PATH_PIX
            else:
                path = s.PATH_PXB
    p = common
    while p is not None and p.name != "pci":
        p = p.parent
        if p is not None and p.name == "system":
            p = None
            break
    return path, (p if p is not None else common)


def plugin_devices(top: X, params: Params, plugin: Plugin, notes: list[str]) -> list[PluginDev]:
    """The IB plugin's physical device list for this XML: every ``<net>`` (a port), filtered by NCCL_IB_HCA, in
    PCI path order (``ncclIbCompareDevs``), then NCCL's fusion of devices at most NCCL_NET_MERGE_LEVEL apart."""
    from ncclctl.nccl.lists import hca_selects

    if plugin.name != "IB":  # Socket, or no plugin the model follows ("none", "external": no device)
        return _socket_devices(top, plugin, notes)
    nets = [n for n in top.find_all("net") if n.get("name")]
    # The ibv port: the XML holds NCCL's port = ibv port + the number of earlier devices on the same card.
    ports: list[tuple[X, str, int]] = []
    seen: dict[int, int] = {}
    for n in nets:
        name = n.get("name") or ""
        xml_port = _int(n, "port", 1) if n.get("port") is not None else 1
        nic = n.parent
        key = id(nic)
        earlier = seen.get(key, 0)
        seen[key] = earlier + 1
        ibv = xml_port - earlier if xml_port - earlier >= 1 else xml_port
        ports.append((n, name, ibv))
    hca = params.str("IB_HCA")
    if hca:
        chosen = hca_selects(hca, [(name, port) for _, name, port in ports])
        ports = [p for p in ports if (p[1], p[2]) in chosen]
    ports = [p for p in ports if (p[1], p[2]) not in plugin.down]

    def order(p: tuple[X, str, int]) -> tuple:
        node = p[0]
        d = node.get("dev")
        pci = node.parent.parent if node.parent is not None else None
        busid = pci.get("busid") if pci is not None and pci.name == "pci" else None
        return (_strtol(d) if d is not None else 1 << 30, busid or "", p[2])

    ports.sort(key=order)
    devs = []
    for node, name, ibv in ports:
        from ncclctl.nccl.lists import hca_ids

        speed = _int(node, "speed", 0) if node.get("speed") is not None else 0
        rail, plane = hca_ids(hca, name, ibv) if hca else (-1, -1)
        devs.append(PluginDev(name=name, port=_int(node, "port", 1) if node.get("port") is not None else 1,
                              speed=speed, guid=strtoul(node.get("guid") or "0", 16).value, gdr=plugin.gdr, xml=(node,),
                              rail=rail, plane=plane))
    return devs


def _socket_devices(top: X, plugin: Plugin, notes: list[str]) -> list[PluginDev]:
    """The Socket plugin's devices placed in the XML as ``ncclTopoFillNet`` places them: the ``<net>`` of that name
    when the file has one, else a new ``<nic><net>`` under the first CPU (a device whose PCI function is not in the
    file: NCCL would read its PCI path from sysfs, which a file does not carry). ``<net>`` elements of other names
    are not the plugin's: NCCL does not keep them. No fusion: the Socket plugin has no ``makeVDevice``."""
    by_name: dict[str, X] = {}
    for n in top.find_all("net"):
        name = n.get("name")
        if name and name not in by_name:
            by_name[name] = n
    devs = []
    for sd in plugin.socket:
        node = by_name.get(sd.name)
        if node is None:
            cpu = next(iter(top.find_all("cpu")), None)
            if cpu is None:
                cpu = X("cpu", {"numaid": "0"}, [], top)
                top.subs.append(cpu)
                notes.append("the topology has no <cpu>: NCCL adds one for the socket device")
            nic = next((c for c in cpu.subs if c.name == "nic"), None)
            if nic is None:
                nic = X("nic", {}, [], cpu)
                cpu.subs.append(nic)
            node = X("net", {"name": sd.name}, [], nic)
            nic.subs.append(node)
            if sd.busid is not None:
                notes.append(f"{sd.name}: its PCI device {sd.busid} is not in the topology file; placed under the "
                             "first CPU")
        devs.append(PluginDev(name=sd.name, port=0, speed=sd.speed, guid=sd.dev, gdr=False, xml=(node,)))
    return devs


def _populate(top: X, devs: list[PluginDev], params: Params, notes: list[str], *,
              socket: bool = False) -> None:
    """``ncclTopoPopulateNics`` for the physical devices, then ``ncclTopoMakeVNics``/``UpdateVNics``/populate the
    virtual ones (NCCL's IB plugin implements makeVDevice)."""
    for i, d in enumerate(devs):
        node = d.xml[0]
        node.attrs["keep"] = "1"
        node.attrs["dev"] = str(i)
        _init(node, "latency", "0")
        _init(node, "speed", str(d.speed))
        _init(node, "port", str(d.port))
        if d.rail != -1:
            _init(node, "rail", str(d.rail))
        if d.plane != -1:
            _init(node, "plane", str(d.plane))
        _init(node, "guid", f"{d.guid:#x}")
        _init(node, "maxconn", str(65536 if socket else s.MAXCHANNELS * 2048))
        _init(node, "gdr", "1" if d.gdr else "0")
        node.attrs["net"] = "1"
    level = merge_level(params)
    n_phys = len(devs)
    if n_phys == 0 or socket:
        return
    merge_nics = params.get("IB_MERGE_NICS", 1)
    rail_policy = merge_policy_rail(params)
    placed = [False] * n_phys
    paths = [[_xml_path([devs[i].xml[0], devs[j].xml[0]])[0] for j in range(n_phys)] for i in range(n_phys)]
    force = params.str("NET_FORCE_MERGE")
    if force:
        notes.append("NCCL_NET_FORCE_MERGE is set: forced NIC merges are not modelled (automatic fusion only)")
    vnics: list[list[int]] = []
    i = 0
    while i < n_phys:
        if not placed[i]:
            group = [i]
            placed[i] = True
            for j in range(n_phys):
                if paths[i][j] <= level and not placed[j] and j != i and (
                        not rail_policy or (devs[i].rail != -1 and devs[i].rail == devs[j].rail)):
                    group.append(j)
                    placed[j] = True
                if len(group) == 4:  # NCCL_NET_MAX_DEVS_PER_NIC
                    break
            if len(group) > 1:
                if merge_nics == 0:
                    # makeVDevice refuses (NCCL_IB_MERGE_NICS=0): unplace and mark the others disconnected
                    notes.append(f"NCCL_IB_MERGE_NICS=0: {', '.join(devs[g].name for g in group)} are not fused")
                    placed[i] = False
                    for g in group[1:]:
                        placed[g] = False
                        paths[i][g] = paths[g][i] = s.PATH_DIS
                    i = 0
                    continue
                vnics.append(group)
        i += 1
    for k, group in enumerate(vnics):
        members = [devs[g] for g in group]
        name = "+".join(m.name for m in members)
        for m in members:
            m.xml[0].attrs["net"] = "0"
            m.xml[0].attrs["keep"] = "0"
        path, parent = _xml_path([m.xml[0] for m in members])
        if parent is None:
            raise InputError(f"NCCL cannot fuse {name}: the devices have no common parent")
        if parent.name == "system":
            raise InputError(f"NCCL cannot fuse {name}: fusing NET devices from different NUMA domains is not "
                             "supported (NCCL stops)", fix="set NCCL_NET_MERGE_LEVEL=LOC, or select NICs of one "
                             "NUMA node with NCCL_IB_HCA")
        if parent.name == "cpu" or (parent.name == "pci" and parent.get("class") == "0x060400"):
            # ncclTopoMakePciParent: a made-up PCI device (unique busid) under the switch/CPU holds the vNIC
            src = members[0].xml[0].parent.parent if members[0].xml[0].parent is not None else None
            attrs = dict(src.attrs) if src is not None and src.name == "pci" else {}
            attrs["busid"] = _unique_busid(top, attrs.get("busid", "0000:00:00.0"))
            made = X("pci", attrs, [], parent)
            parent.subs.append(made)
            parent = made
        nic = next((c for c in parent.subs if c.name == "nic"), None)
        if nic is None:
            nic = X("nic", {}, [], parent)
            parent.subs.append(nic)
        m0 = members[0]
        speed = sum(m.speed if m.xml[0].get("speed") is None else _int(m.xml[0], "speed", 0) for m in members)
        attrs = {"name": name, "keep": "1", "dev": str(n_phys + k), "latency": "0", "speed": str(speed),
                 "port": str(m0.port)}
        # net_ib makeVDevice: the rail of a fused device with different (or undefined) rails is undefined; its
        # plane is the virtual bit (1 << 14) plus one bit per member plane index (index 0: undefined plane).
        if m0.rail != -1 and all(m.rail == m0.rail for m in members):
            attrs["rail"] = str(m0.rail)
        planes = [-1]
        for d in devs:
            if d.plane not in planes:
                planes.append(d.plane)
        attrs["plane"] = str((1 << 14) | sum(1 << planes.index(m.plane) for m in members))
        attrs.update({"guid": f"{m0.guid:#x}", "maxconn": str(s.MAXCHANNELS * 2048), "gdr": "1" if m0.gdr else "0",
                      "net": "1"})
        node = X("net", attrs, [], nic)
        nic.subs.append(node)
        notes.append(f"NCCL fuses {', '.join(m.name for m in members)} into one virtual NIC {name} (dev "
                     f"{n_phys + k}, {speed // 1000} Gb/s): NCCL_NET_MERGE_LEVEL "
                     f"{s.PATH_TYPE_STR[level] if level != s.PATH_PORT else 'PORT'} (default PORT)"
                     + ("" if "rail" in attrs or rail_policy else
                        f"; rails {', '.join(str(m.rail) if m.rail != -1 else '?' for m in members)} fused: "
                        "the fused device has no rail (NCCL_NET_MERGE_POLICY=RAIL keeps rails apart)"
                        if any(m.rail != -1 for m in members) else ""))


def fusion_growth(root, params: Params, plugin: Plugin | None = None) -> int:
    """How many elements NCCL's NIC fusion (``ncclTopoMakeVNics``: the virtual ``<net>``, and the made-up
    ``<pci>``/``<nic>`` holding it) adds to the XML of a topology file on every rank."""
    top = _copy(root)
    before = len(_all(top))
    _populate(top, plugin_devices(top, params, plugin or Plugin(), []), params, [])
    return len(_all(top)) - before


def _all(top: X) -> list[X]:
    out, stack = [], [top]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n.subs)
    return out


def _unique_busid(top: X, busid: str) -> str:
    used = {n.get("busid") for n in top.find_all("pci")}
    v = bus_id_to_int(busid)
    for _ in range(100):
        v += 1
        cand = f"{v >> 20:04x}:{(v >> 12) & 0xff:02x}:{(v >> 4) & 0xff:02x}.{v & 0xf:x}"
        if cand not in used:
            return cand
    raise InputError("NCCL could not make a unique busid for a fused NIC")


def _copy_tree(top: X) -> tuple[X, list[X]]:
    """A deep copy of the tree and its ``<gpu>`` elements in document order."""
    gpus: list[X] = []

    def rec(n: X, parent: X | None) -> X:
        c = X(n.name, dict(n.attrs), [], parent)
        if n.name == "gpu":
            gpus.append(c)
        c.subs = [rec(sub, c) for sub in n.subs]
        return c

    return rec(top, None), gpus


def _fuse(dst: X, src: X) -> X:
    """``ncclTopoFuseXml``: each child of ``src`` merges into the first child of ``dst`` with the same name and the
    same attributes (``xmlFindNode``), else is appended."""
    def rec(d: X, sp: X) -> None:
        for sn in sp.subs:
            match = next((dn for dn in d.subs if dn.name == sn.name and dn.attrs == sn.attrs), None)
            if match is None:
                sn.parent = d
                d.subs.append(sn)
            else:
                rec(match, sn)

    rec(dst, src)
    return dst


def _init(node: X, key: str, value: str) -> None:
    """``xmlInitAttr*``: set only when absent (the file wins over the plugin)."""
    node.attrs.setdefault(key, value)


def _trim(node: X) -> bool:
    """``ncclTopoTrimXmlRec``: True when the subtree holds a kept node."""
    if node.attrs.get("keep") == "1":
        del node.attrs["keep"]
        return True
    keep = False
    for sub in list(node.subs):
        if _trim(sub):
            keep = True
    if not keep and node.name in ("pci", "cpu", "nic", "net") and node.parent is not None:
        node.parent.subs.remove(node)
    return keep


# --------------------------------------------------------------------------------------------------
# ncclTopoGetSystemFromXml

_PCI_CLASS = (("0x060400", PCI), ("0x080100", PCI), ("0x068000", NVS), ("0x068001", CPU), ("0x03", GPU),
              ("0x02", NIC))
_PCI_GEN = (("2.5 GT/s", 15), ("5 GT/s", 30), ("8 GT/s", 60), ("16 GT/s", 120), ("32 GT/s", 240),
            ("2.5 GT/s PCIe", 15), ("5.0 GT/s PCIe", 30), ("8.0 GT/s PCIe", 60), ("16.0 GT/s PCIe", 120),
            ("32.0 GT/s PCIe", 240), ("64.0 GT/s PCIe", 480))


def _kv(value: str, table: tuple[tuple[str, int], ...], default: int) -> int:
    """``kvConvertToInt``: the first key that is a prefix of the value."""
    for key, v in table:
        if value.startswith(key):
            return v
    return default


def pci_link_bw(speed: str, width: int) -> float:
    """NCCL's bandwidth (GB/s) of a ``<pci>`` link: ``link_width`` lanes (0 read as 16) times the per-lane rate of
    the first ``link_speed`` key that prefixes the value (6 Gb/s, Gen3, when none does), over 8 bits."""
    return f32((width or 16) * _kv(speed, _PCI_GEN, 60) / 80.0)


def _device(node: X) -> int:
    ret = 0
    for key, shift in (("vendor", 48), ("device", 32), ("subsystem_vendor", 16), ("subsystem_device", 0)):
        v = node.get(key)
        if v is not None:
            ret += (_strtol(v) & 0xffffffffffff) << shift
    return ret & 0xffffffffffffffff


def _local_id(system_id: int, local: int) -> int:
    return (system_id << 56) + (local & 0x00ffffffffffffff)


def _find_local_cpu(node: Node, frm: Node | None = None) -> Node | None:
    if node.type == CPU:
        return node
    for link in node.links:
        if link.type == s.LINK_PCI and link.rem is not frm and link.rem.type in (PCI, CPU):
            cpu = _find_local_cpu(link.rem, node)
            if cpu is not None:
                return cpu
    return None


def _inter_cpu_bw(cpu: Node) -> float:
    if cpu.arch == s.CPU_ARCH_POWER:
        return s.P9_BW
    if cpu.arch == s.CPU_ARCH_ARM:
        return s.ARM_BW
    bw = s.LOC_BW
    if cpu.arch == s.CPU_ARCH_X86 and cpu.vendor == s.CPU_VENDOR_INTEL:
        bw = {s.CPU_MODEL_INTEL_ERP: s.ERP_QPI_BW, s.CPU_MODEL_INTEL_SRP: s.SRP_QPI_BW,
              s.CPU_MODEL_INTEL_SKL: s.SKL_QPI_BW}.get(cpu.model, s.BDW_QPI_BW)
    if cpu.arch == s.CPU_ARCH_X86 and cpu.vendor == s.CPU_VENDOR_AMD:
        # 2.31 (changes.py "2.31/amd-zen-bw"): by generation; before, every AMD CPU is AMD_BW (cpu.model unset)
        bw = {s.CPU_MODEL_AMD_ZEN5: s.AMD_ZEN5_BW, s.CPU_MODEL_AMD_ZEN34: s.AMD_ZEN34_BW}.get(cpu.model, s.AMD_BW)
    if cpu.arch == s.CPU_ARCH_X86 and cpu.vendor == s.CPU_VENDOR_ZHAOXIN:
        bw = s.YONGFENG_ZPI_BW if cpu.model == s.CPU_MODEL_YONGFENG else s.ZPI_BW
    return bw


class _Builder:
    def __init__(self, system: System) -> None:
        self.sys = system

    def add_cpu(self, xc: X) -> None:
        numa = _int(xc, "numaid")
        system_id = 0  # one host: every <cpu> has the same host_hash (NCCL overwrites it)
        cpu = self.sys.create(CPU, _local_id(system_id, numa))
        cpu.label = f"numa {numa}"
        cpu.affinity = xc.get("affinity") or ""
        arch = xc.get("arch")
        if arch is None:
            raise InputError("<cpu> has no 'arch' attribute: NCCL stops here (ncclInternalError)",
                             fix='add arch="x86_64" (or arm64, ppc64)')
        cpu.arch = _kv(arch, (("x86_64", s.CPU_ARCH_X86), ("arm64", s.CPU_ARCH_ARM), ("ppc64", s.CPU_ARCH_POWER)), 0)
        if cpu.arch == s.CPU_ARCH_X86:
            vendor = xc.get("vendor")
            if vendor is None:
                raise InputError("<cpu arch=\"x86_64\"> has no 'vendor' attribute: NCCL stops here",
                                 fix='add vendor="GenuineIntel" or "AuthenticAMD"')
            cpu.vendor = _kv(vendor, (("GenuineIntel", s.CPU_VENDOR_INTEL), ("AuthenticAMD", s.CPU_VENDOR_AMD),
                                      ("CentaurHauls", s.CPU_VENDOR_ZHAOXIN), ("  Shanghai  ", s.CPU_VENDOR_ZHAOXIN)),
                             0)
            if cpu.vendor == s.CPU_VENDOR_INTEL:
                fam, model = _int(xc, "familyid"), _int(xc, "modelid")
                # 2.31 (changes.py "2.31/intel-gnr-erp"): Granite Rapids / Sierra Forest are read as Emerald Rapids
                gnr = self.sys.params.version >= GNR_AS_ERP_SINCE and fam == 6 and model in INTEL_GNR_SRF
                cpu.model = (s.CPU_MODEL_INTEL_ERP if fam == 6 and model >= 0xCF or gnr else
                             s.CPU_MODEL_INTEL_SRP if fam == 6 and model >= 0x8F else
                             s.CPU_MODEL_INTEL_SKL if fam == 6 and model >= 0x55 else s.CPU_MODEL_INTEL_BDW)
            elif cpu.vendor == s.CPU_VENDOR_AMD and self.sys.params.version >= AMD_ZEN_BW_SINCE:
                gen = amd_generation(_int(xc, "familyid"))
                cpu.model = (s.CPU_MODEL_AMD_ZEN5 if gen == "zen5" else s.CPU_MODEL_AMD_ZEN34 if gen == "zen34" else
                             s.CPU_MODEL_AMD_ZEN12)
            elif cpu.vendor == s.CPU_VENDOR_ZHAOXIN:
                fam, model = _int(xc, "familyid"), _int(xc, "modelid")
                if fam == 7 and model == 0x5B:
                    cpu.model = s.CPU_MODEL_YONGFENG
        for sub in xc.subs:
            if sub.name == "pci":
                self.add_pci(sub, cpu, system_id, numa)
            elif sub.name == "nic":
                nic_id = _local_id(system_id, (numa << 56) + 0)
                nic = self.sys.get(NIC, nic_id)
                if nic is None:
                    nic = self.sys.create(NIC, nic_id)
                    nic.label = f"numa {numa} nic"
                    connect(cpu, nic, s.LINK_PCI, s.LOC_BW)
                    connect(nic, cpu, s.LINK_PCI, s.LOC_BW)
                self.add_nic(sub, nic, system_id)

    def add_nic(self, xn: X, nic: Node, system_id: int) -> None:
        from ncclctl.nccl.params import strtoul

        for xnet in xn.subs:
            if xnet.name != "net" or xnet.get("dev") is None:
                continue
            if _int(xnet, "net", 1) == 0:
                continue  # gin/rma-only or fused-away devices
            dev = _int(xnet, "dev")
            net = self.sys.create(NET, _local_id(system_id, dev))
            net.dev = dev
            net.name = xnet.get("name") or f"dev{dev}"
            net.label = net.name
            guid = xnet.get("guid")
            # topo.cc: strtoull(guid, NULL, 16) (a guid with the top bit set must not clamp to LONG_MAX)
            net.asic = strtoul(guid, 16).value if guid is not None else net.id
            mbps = _int(xnet, "speed", 0)
            if mbps <= 0:
                mbps = 10000
            net.bw = f32(mbps / 8000.0)
            lat = xnet.get("latency")
            net.latency = float(lat) if lat is not None and re.fullmatch(r"\s*[-+]?[0-9.eE+-]+", lat) else 0.0
            net.port = _int(xnet, "port", 0)
            net.gdr = _int(xnet, "gdr", 0)
            net.max_channels = _int(xnet, "maxconn", s.MAXCHANNELS)
            net.coll = _int(xnet, "coll", 0)
            net.rail = _int(xnet, "rail", s.UNDEF)
            net.plane = _int(xnet, "plane", s.UNDEF)
            connect(nic, net, s.LINK_NET, net.bw)
            connect(net, nic, s.LINK_NET, net.bw)

    def add_pci(self, xp: X, parent: Node, system_id: int, numa: int) -> None:
        cls = xp.get("class")
        busid = xp.get("busid")
        if cls is None or busid is None:
            raise InputError(f"<pci> {'busid ' + busid + ' ' if busid else ''}has no "
                             f"{'class' if cls is None else 'busid'} attribute: NCCL stops here (ncclInternalError)",
                             fix="add the missing attribute (see ncclctl topo validate)")
        type_ = _kv(cls, _PCI_CLASS, PCI)
        bus = bus_id_to_int(busid)
        width = _int(xp, "link_width")
        speed_s = xp.get("link_speed")
        if speed_s is None:
            raise InputError(f"<pci busid=\"{busid}\"> has no link_speed: NCCL stops here (ncclInternalError)",
                             fix="add link_speed=\"16.0 GT/s PCIe\" (or the link's speed)")
        bw = pci_link_bw(speed_s, width)
        for xg in xp.subs:
            if xg.name != "gpu":
                continue
            if xg.get("rank") is None:
                return  # a GPU not in the job: the whole PCI node is skipped
            self.add_gpu(xp, xg, parent, system_id, bus, bw)
        node: Node | None = None
        xnic = next((c for c in xp.subs if c.name == "nic"), None)
        if xnic is not None:
            nic_id = _local_id(system_id, (numa << 56) + bus)
            nic = self.sys.get(NIC, nic_id)
            if nic is None:
                nic = self.sys.create(NIC, nic_id)
                nic.label = busid
                node = nic
            self.add_nic(xnic, nic, system_id)
        elif type_ == PCI:
            node = self.sys.create(PCI, _local_id(system_id, bus))
            node.label = busid
            node.device = _device(xp)
            for sub in xp.subs:
                if sub.name != "pcilink":
                    self.add_pci(sub, node, system_id, numa)
        if node is not None:
            connect(node, parent, s.LINK_PCI, bw)
            connect(parent, node, s.LINK_PCI, bw)

    def add_gpu(self, xp: X, xg: X, parent: Node, system_id: int, bus: int, bw: float) -> None:
        if bus & 0x3:
            raise InputError(f"GPU busid {xp.get('busid')} has non-zero bits in the MLOPart mask: NCCL stops here")
        mlo = _int(xg, "mlopart", s.UNDEF)
        sm = _int(xg, "sm")
        dev_bus = bus
        if mlo != s.UNDEF and self.sys.params.get("TOPO_SPLIT_MLOPART", 1):
            if mlo >= 2:
                raise InputError(f"MLOPart index {mlo} out of range (max 1): NCCL stops here")
            dev_bus = bus | (((mlo << 1) | 1) & 0x3)
        dev_id = _local_id(system_id, dev_bus)
        devnode = self.sys.get(DEV, dev_id)
        if devnode is None:
            devnode = self.sys.create(DEV, dev_id)
            devnode.label = xp.get("busid") or ""
            devnode.device = _device(xp)
            devnode.sm = sm
            devnode.dev = _int(xg, "dev")
            connect(devnode, parent, s.LINK_PCI, bw)
            connect(parent, devnode, s.LINK_PCI, bw)
            for sib in self._dev_nodes(dev_id):
                if sib is devnode:
                    continue
                connect(devnode, sib, s.LINK_LOC, s.MLOPART_LOC_BW)
                connect(sib, devnode, s.LINK_LOC, s.MLOPART_LOC_BW)
        gpu = self.sys.create(GPU, _local_id(system_id, (devnode.n_gpus << 40) | (dev_bus & ((1 << 40) - 1))))
        gpu.label = xp.get("busid") or ""
        gpu.rank = _int(xg, "rank")
        gpu.sm = sm
        gpu.dev = _int(xg, "dev")
        gpu.gdr = _int(xg, "gdr")
        gpu.mlopart = mlo
        gpu.parent = devnode
        connect(devnode, gpu, s.LINK_LOC, s.LOC_BW)
        connect(gpu, devnode, s.LINK_LOC, s.LOC_BW)
        devnode.n_gpus += 1

    def _dev_nodes(self, base_id: int) -> list[Node]:
        return [d for d in self.sys.nodes[DEV] if (d.id & ~0x3) == (base_id & ~0x3)]

    def _gpu_dev(self, xg: X, busid: str | None, system_id: int) -> Node | None:
        bus = bus_id_to_int(busid or "")
        mlo = _int(xg, "mlopart", s.UNDEF)
        dev_bus = bus | (((mlo << 1) | 1) & 0x3) if mlo != s.UNDEF and self.sys.params.get(
            "TOPO_SPLIT_MLOPART", 1) else bus
        return self.sys.get(DEV, _local_id(system_id, dev_bus))

    def _primary(self, xg: X) -> bool:
        mine = _int(xg, "mlopart", s.UNDEF)
        assert xg.parent is not None
        for sib in xg.parent.subs:
            if sib.name != "gpu":
                continue
            if sib is xg:
                break
            if _int(sib, "mlopart", s.UNDEF) == mine or not self.sys.params.get("TOPO_SPLIT_MLOPART", 1):
                return False
        return True

    def walk(self, node: X, busid: str | None, visit) -> None:
        stack = [(node, busid)]
        while stack:
            n, b = stack.pop()
            if visit(n, b):
                continue
            nb = n.get("busid") or b
            for sub in reversed(n.subs):
                stack.append((sub, nb))

    def _link_owner(self, n: X, busid: str | None, what: str) -> Node | None:
        """The DEV node an ``<nvlink>``/``<c2c>`` belongs to (``ncclTopoGetGpuDevNode``); None when NCCL skips the
        element (not the DEV's primary GPU, or a GPU not in the job). A kept GPU without its DEV stops NCCL."""
        xg = n.parent
        assert xg is not None
        if not self._primary(xg):
            return None
        devnode = self._gpu_dev(xg, busid, 0)
        if devnode is None and xg.get("rank") is not None:
            raise InputError(f"{what} error: could not find the GPU {busid} (NCCL stops)")
        return devnode

    def add_nvlinks(self, top: X) -> None:
        def visit(n: X, busid: str | None) -> bool:
            if n.name != "nvlink":
                return False
            devnode = self._link_owner(n, busid, "NVLink")
            if devnode is None:
                return True
            local = len(self._dev_nodes(devnode.id))
            count = _int(n, "count")
            tclass = n.get("tclass")
            if tclass is None:
                raise InputError(f"<nvlink> of GPU {busid} has no tclass: NCCL stops here (2.31 and later; before, "
                                 "NCCL filled it for the GPUs of the job)",
                                 fix='add tclass="0x068000" (NVSwitch) or "0x030200" (GPU)')
            target_type = _kv(tclass, _PCI_CLASS, PCI)
            nvl_bw = s.nvlink_bw(devnode.sm)
            if target_type == GPU:
                target = n.get("target")
                if target is None:
                    raise InputError(f"<nvlink> of GPU {busid} has no target: NCCL stops here")
                rem = self._dev_nodes(_local_id(0, bus_id_to_int(target)))
                for r in rem:
                    connect(devnode, r, s.LINK_NVL, f32(count * nvl_bw / len(rem) / local))
            else:
                remote: Node | None
                if target_type == CPU:
                    remote = _find_local_cpu(devnode)
                else:
                    if not self.sys.nodes[NVS]:
                        remote = self.sys.create(NVS, 0)
                        remote.label = "nvswitch"
                    else:
                        remote = self.sys.nodes[NVS][0]
                if remote is not None:
                    connect(devnode, remote, s.LINK_NVL, f32(count * nvl_bw / local))
                    connect(remote, devnode, s.LINK_NVL, f32(count * nvl_bw / local))
            return True

        self.walk(top, None, visit)

    def add_c2c(self, top: X) -> None:
        def visit(n: X, busid: str | None) -> bool:
            if n.name != "c2c":
                return False
            devnode = self._link_owner(n, busid, "C2C")
            if devnode is None:
                return True
            sibs = len(self._dev_nodes(devnode.id))
            c2c_bw = f32(_int(n, "bw") * _int(n, "count") / 1000.0)
            cpu = _find_local_cpu(devnode)
            if cpu is None:
                return True
            if sibs > 1:
                xid = devnode.id & ~0x3
                bridge = self.sys.get(s.CXB, xid)
                if bridge is None:
                    bridge = self.sys.create(s.CXB, xid)
                    connect(bridge, cpu, s.LINK_C2C, c2c_bw)
                    connect(cpu, bridge, s.LINK_C2C, c2c_bw)
                connect(devnode, bridge, s.LINK_C2C, c2c_bw)
                connect(bridge, devnode, s.LINK_C2C, c2c_bw)
            else:
                connect(devnode, cpu, s.LINK_C2C, c2c_bw)
                connect(cpu, devnode, s.LINK_C2C, c2c_bw)
            return True

        self.walk(top, None, visit)

    def add_pci_links(self, top: X) -> None:
        def visit(n: X, busid: str | None) -> bool:
            if n.name != "pcilink":
                return False
            pci = self.sys.get(PCI, _local_id(0, bus_id_to_int(busid or "")))
            if pci is None:
                raise InputError(f"<pcilink> under {busid}: NCCL could not find that PCI switch (NCCL stops)")
            target = n.get("target")
            if target is None:
                raise InputError(f"<pcilink> under {busid} has no target: NCCL stops here")
            remote = self.sys.get(PCI, _local_id(0, bus_id_to_int(target)))
            if remote is not None:
                connect(pci, remote, s.LINK_LOC, s.LOC_BW)
            return True

        self.walk(top, None, visit)

    def flatten_bcm(self) -> None:
        """``ncclTopoFlattenBcmSwitches``: a Broadcom Gen4/Gen5 switch's second level is folded into the first."""
        def gen(device: int, level: int) -> int:
            if (device & 0xfffffffffffff000) == 0x1000c0101000a000:
                return 4
            if (device & 0xfffffffffffff000) == (0x1000c03010000000 | level * 0x1000):
                return 5
            return 0

        restart = True
        while restart:
            restart = False
            for sw in self.sys.nodes[PCI]:
                g = gen(sw.device, 0)
                if not g:
                    continue
                subs = [l.rem for l in sw.links if l.rem.type == PCI and gen(l.rem.device, 1) == g]
                sw.links = [l for l in sw.links if l.rem not in subs]
                for sub in subs:
                    for l in sub.links:
                        if l.rem is sw:
                            continue
                        sw.links.append(s.Link(l.type, l.bw, l.rem))
                        for rl in l.rem.links:
                            if rl.rem is sub:
                                rl.rem = sw
                                break
                    self.sys.remove(PCI, self.sys.index(sub))
                sw.device |= 0xffff
                restart = True
                break

    def connect_cpus(self) -> None:
        cpus = self.sys.nodes[CPU]
        for a in cpus:
            for b in cpus:
                if a is not b:
                    connect(a, b, s.LINK_SYS, _inter_cpu_bw(a))

    def sort(self) -> None:
        """``ncclTopoSortSystem``: NVLinks, PCI down, PCI up (the up link last), SYS."""
        def rec(node: Node, up: Node | None) -> None:
            if up is not None:
                for i, l in enumerate(node.links):
                    if l.rem is up:
                        node.links.append(node.links.pop(i))
                        break
            for l in list(node.links):
                if l.type == s.LINK_PCI and l.rem is not up:
                    rec(l.rem, node)

        for cpu in self.sys.nodes[CPU]:
            rec(cpu, None)


@dataclass
class Built:
    """The system NCCL builds from a topology, with the plugin's devices and the job's GPUs."""
    system: System
    #: The plugin's devices after filtering and fusion, by NCCL dev index: (name, dev, speed Mb/s, members).
    nets: list[tuple[str, int, int, tuple[str, ...]]]
    #: GPUs in the job: (rank, busid, NVML dev).
    gpus: list[tuple[int, str, int]]
    notes: list[str]


def _fill_nvlink_tclass(top: X, xgpus: list[X], params: Params, notes: list[str]) -> None:
    """Before 2.31, ``ncclTopoGetXmlFromGpu`` gives each local GPU's ``<nvlink>`` without ``tclass`` the class of
    its target (read from sysfs: here the file's ``<pci>`` of that bus id) or else an NVSwitch's (changes.py
    "2.31/nvlink-tclass"; 2.31 stops instead)."""
    classes = {(x.get("busid") or "").lower(): x.get("class") for x in top.find_all("pci")}
    filled = []
    for g in xgpus:
        for n in g.subs:
            if n.name != "nvlink" or n.get("tclass") is not None:
                continue
            target = (n.get("target") or "").lower()
            tclass = classes.get(target) if target != "fffffff:ffff:ff" else None
            n.attrs["tclass"] = tclass or "0x068000"
            filled.append(f"{target or '?'} -> {n.attrs['tclass']}")
    if filled:
        notes.append(f"{len(filled)} <nvlink> without tclass: NCCL {params.version} fills it with the target's PCI "
                     f"class, else an NVSwitch's ({', '.join(sorted(set(filled))[:4])}); NCCL 2.31 and later stop "
                     "here (attribute tclass not found)")


def build(root, params: Params, plugin: Plugin | None = None, *, gpus: tuple[int, ...] | None = None) -> Built:
    """NCCL's system for one node of a job from a parsed topology file (``root``: the ``<system>`` XmlNode).

    ``gpus``: NVML dev numbers of the GPUs the job uses (default: all), ranks given in that order."""
    plugin = plugin or Plugin()
    notes: list[str] = []
    top = _copy(root)
    if top.name != "system":
        raise InputError(f"the file's root element is <{top.name}>, not <system>: NCCL finds no topology",
                         fix="give a topology file (NCCL_TOPO_FILE), not a graph file")
    # GPUs: ncclTopoFillGpu per local rank (rank, keep, gdr), ranks in NVML dev order
    xgpus = [g for g in top.find_all("gpu")]
    entries = []
    for g in xgpus:
        pci = g.parent
        busid = pci.get("busid") if pci is not None else None
        entries.append((_int(g, "dev", 1 << 30) if g.get("dev") is not None else 1 << 30, busid or "", g))
    entries.sort(key=lambda e: (e[0], e[1]))
    chosen = [e for e in entries if gpus is None or e[0] in gpus]
    if gpus is not None:
        missing = sorted(set(gpus) - {e[0] for e in entries})
        if missing:
            raise InputError(f"GPU dev {', '.join(map(str, missing))} is not in the topology file",
                             fix="name GPUs by their dev attribute")
    devs = plugin_devices(top, params, plugin, notes)
    _populate(top, devs, params, notes, socket=plugin.name == "Socket")
    if params.version < NVLINK_TCLASS_REQUIRED_SINCE:
        _fill_nvlink_tclass(top, [e[2] for e in chosen], params, notes)
    # Each local rank keeps its own GPU and the plugin's NICs, trims, and the ranks' trees are fused in rank order
    # (ncclTopoGetSystem: ncclTopoTrimXml, then ncclTopoFuseXml per local rank): a GPU whose PCI branch holds no
    # NIC joins the tree only with its own rank, after the branches rank 0 brought, which decides NCCL's GPU order.
    gpu_list = []
    order = {id(g): i for i, g in enumerate(xgpus)}
    fused: X | None = None
    for rank, (dev, busid, g) in enumerate(chosen):
        mine, copies = _copy_tree(top)
        xg = copies[order[id(g)]]
        xg.attrs["keep"] = "1"
        xg.attrs["rank"] = str(rank)
        _init(xg, "gdr", "1" if plugin.gdr else "0")
        _trim(mine)
        fused = mine if fused is None else _fuse(fused, mine)
        gpu_list.append((rank, busid, dev))
    if fused is None:
        _trim(top)
        fused = top
    top = fused
    system = System(params=params, transport=plugin.name)
    b = _Builder(system)
    for sub in top.subs:
        if sub.name == "cpu":
            b.add_cpu(sub)
    b.add_nvlinks(top)
    b.add_c2c(top)
    b.add_pci_links(top)
    b.flatten_bcm()
    b.connect_cpus()
    b.sort()
    nets = []
    for n in system.nodes[NET]:
        members = tuple(n.name.split("+")) if "+" in n.name else ()
        nets.append((n.name, n.dev, int(round(n.bw * 8000)), members))
    return Built(system=system, nets=nets, gpus=gpu_list, notes=notes)
