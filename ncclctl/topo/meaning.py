"""What a topology file makes NCCL decide, from NCCL's own model (:mod:`ncclctl.nccl`): the checks of meaning that
need NCCL's derived paths (rules NTS070, NTH030) and the model :mod:`ncclctl.topo.explain` compares in ``topo diff``.

A file often leaves to NCCL what it detects on the host: skeleton files name the GPU and NIC PCI functions without
``<gpu>``/``<nic>`` children, CPUs without ``arch``, switches without ``link_speed``. :func:`complete` fills those in
the way NCCL does on a host that has the devices (a GPU at each GPU-class ``<pci>``, a NIC at each network-class
``<pci>``, ``""``/``0`` link attributes for a bus id it cannot read) so that the model sees the layout the file
imposes; what it had to assume is listed in :attr:`Completion.assumed`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from ncclctl.nccl.version import DEFAULT, Version
from ncclctl.nccl.xml import ParseResult, XmlNode
from ncclctl.record import record

if TYPE_CHECKING:  # pragma: no cover
    from ncclctl.findings import Finding
    from ncclctl.model import Node
    from ncclctl.nccl.predict import Prediction

#: The sm given to a GPU whose sm the file leaves to NCCL (paths and GPUDirect RDMA writes do not depend on it).
ASSUMED_SM = "80"


@dataclass(eq=False)
class _N:
    """A node of the completed tree (the ``name``/``attrs``/``children`` NCCL's model reads), with the file element
    it comes from (None for what :func:`complete` added)."""

    name: str
    attrs: list[tuple[str, str]]
    children: list["_N"] = field(default_factory=list)
    src: XmlNode | None = None

    def get(self, key: str) -> str | None:
        return next((v for k, v in self.attrs if k == key), None)

    def set(self, key: str, value: str) -> None:
        self.attrs.append((key, value))


@dataclass
class Completion:
    """What :func:`complete` added to let the model run, and where each GPU and NIC of the file is."""

    assumed: list[str] = field(default_factory=list)
    #: Bus id -> the file's ``<pci>`` of each GPU and NIC (given or completed).
    endpoints: dict[str, XmlNode] = field(default_factory=dict)
    #: Net name -> the file's ``<net>`` elements of that name (none for a completed NIC).
    nets: dict[str, list[XmlNode]] = field(default_factory=dict)
    #: Completed NIC name -> its bus id.
    nic_busid: dict[str, str] = field(default_factory=dict)


def _cls_type(cls: str | None) -> str | None:
    if cls is None:
        return None
    if cls.startswith("0x03"):
        return "gpu"
    if cls.startswith("0x02"):
        return "nic"
    return None


def complete(root: XmlNode, *, names: Mapping[str, str] | None = None) -> tuple[_N, Completion]:
    """The ``<system>`` tree with what NCCL fills in on a host that has the devices. ``names``: bus id -> the net
    device name the host reports there (else a completed NIC is named ``NIC@<busid>``)."""
    comp = Completion()
    counts = {"gpu": 0, "nic": 0, "cpu": 0, "link": 0, "sm": 0}

    def conv(x: XmlNode) -> _N | None:
        n = _N(x.name, [(k, v) for k, v in x.attrs if k], [], x)
        kids = [c for c in (conv(c) for c in x.children) if c is not None]
        n.children = kids
        if x.name == "cpu":
            if n.get("arch") is None:
                n.set("arch", "x86_64")
                counts["cpu"] += 1
            if (n.get("arch") or "").startswith("x86_64"):
                if n.get("vendor") is None:
                    n.set("vendor", "GenuineIntel")
                    counts["cpu"] += 1
                if (n.get("vendor") or "").startswith(("GenuineIntel", "CentaurHauls", "  Shanghai  ")):
                    for key, value in (("familyid", "6"), ("modelid", "143")):
                        if n.get(key) is None:
                            n.set(key, value)
                            counts["cpu"] += 1
        elif x.name == "gpu":
            if n.get("sm") is None:
                n.set("sm", ASSUMED_SM)
                counts["sm"] += 1
        elif x.name == "pci":
            busid = n.get("busid")
            kinds = {c.name for c in kids}
            if busid is None:
                return None
            if n.get("class") is None:
                fill = ("0x060400" if "pci" in kinds else "0x030200" if "gpu" in kinds else
                        "0x020000" if "nic" in kinds else None)
                if fill is None:
                    return None  # a leaf whose class NCCL reads from sysfs: unknown here (NCCL trims it anyway)
                n.set("class", fill)
            for key, value in (("link_speed", ""), ("link_width", "0")):
                if n.get(key) is None:
                    n.set(key, value)
                    counts["link"] += 1
            kind = _cls_type(n.get("class"))
            if not kids and kind == "gpu":
                n.children.append(_N("gpu", [("sm", ASSUMED_SM)], []))
                counts["gpu"] += 1
            elif not kids and kind == "nic":
                from ncclctl.nccl.build import pci_link_bw
                from ncclctl.nccl.params import strtol

                name = (names or {}).get(busid) or f"NIC@{busid}"
                # as fast as its PCI link (the plugin reports the port speed on the host)
                mbps = int(pci_link_bw(n.get("link_speed") or "", strtol(n.get("link_width") or "0").value or 0) * 8000)
                n.children.append(_N("nic", [], [_N("net", [("name", name), ("speed", str(mbps))], [])]))
                comp.nic_busid[name] = busid
                counts["nic"] += 1
            if "gpu" in {c.name for c in n.children} or "nic" in {c.name for c in n.children}:
                comp.endpoints.setdefault(busid, x)
        elif x.name == "net" and n.get("name") is not None:
            comp.nets.setdefault(n.get("name") or "", []).append(x)
        return n

    top = conv(root) or _N("system", [], [])
    # NVML indices for GPUs without dev, in bus id order after the ones the file gives
    gpus: list[tuple[str, _N]] = []
    stack = [(top, "")]
    while stack:
        node, busid = stack.pop()
        if node.name == "gpu":
            gpus.append((busid, node))
        for c in node.children:
            stack.append((c, (node.get("busid") or busid) if node.name == "pci" else busid))
    used = set()
    for _, g in gpus:
        dev = g.get("dev")
        if dev is not None:
            try:
                used.add(int(dev, 0))
            except ValueError:
                pass
    nxt = 0
    for _, g in sorted(gpus, key=lambda t: t[0]):
        if g.get("dev") is None:
            while nxt in used:
                nxt += 1
            g.set("dev", str(nxt))
            used.add(nxt)
    found = [f"{counts[k]} {w}{'s' if counts[k] != 1 else ''}" for k, w in (("gpu", "GPU"), ("nic", "NIC"))
             if counts[k]]
    if found:
        comp.assumed.append(f"{' and '.join(found)} where the file has a GPU- or network-class <pci> without one"
                            + (", each NIC as fast as its PCI link" if counts["nic"] else ""))
    if counts["sm"] or counts["gpu"]:
        comp.assumed.append(f"sm {ASSUMED_SM}")
    if counts["cpu"]:
        comp.assumed.append("x86_64 Intel CPUs")
    if counts["link"]:
        comp.assumed.append("Gen3 x16 links where link_speed/link_width are missing")
    return top, comp


def model(root: XmlNode, *, version: Version = DEFAULT, env: Mapping[str, str] | None = None, gdr: bool = True,
          names: Mapping[str, str] | None = None, nodes: int = 2,
          down: frozenset[tuple[str, int]] = frozenset(), channels: bool = False,
          completed: "tuple[_N, Completion] | None" = None) -> tuple["Prediction | None", Completion, str | None]:
    """NCCL's prediction for the completed file (a job of ``nodes`` nodes like this one), what was completed, and
    why there is no prediction (NCCL would stop, or the file has no GPU) when there is none. Paths, the NETs each
    GPU uses and GPUDirect RDMA only, unless ``channels`` (the ring/tree search, connect and tuning) is asked."""
    from ncclctl.errors import InputError
    from ncclctl.nccl.predict import Inputs, predict_tree

    tree, comp = completed if completed is not None else complete(root, names=names)
    inputs = Inputs(source="file", nodes=nodes, env=dict(env or {}), gdr=gdr, version=version)
    try:
        return predict_tree(tree, inputs=inputs, down=down, channels=channels), comp, None
    except InputError as exc:
        return None, comp, exc.message
    except RuntimeError as exc:  # the model's "no reverse link": NCCL fails the same way
        return None, comp, str(exc)


# --------------------------------------------------------------------------------------------------
# What NCCL decides per GPU


@record
class NetUse:
    """One NET a GPU uses, as NCCL's model decides it."""

    net: str
    path: str  # NCCL's path type
    bw: float
    gdr: bool  # GPUDirect RDMA for writes (receives)
    why: str


def gpu_uses(pred: "Prediction") -> dict[str, tuple[int, list[NetUse]]]:
    """Bus id -> (NVML dev, the NETs the GPU uses, in channel order)."""
    from ncclctl.nccl import system as s
    from ncclctl.nccl.paths import GDR_DISABLE

    sysm = pred.system
    nets = sysm.nodes[s.NET]
    names = [n.name for n in nets]
    out: dict[str, tuple[int, list[NetUse]]] = {}
    for gi, g in enumerate(sysm.nodes[s.GPU]):
        uses = []
        for name in pred.local_nets[gi]:
            p = g.paths[s.NET][names.index(name)]
            mode, why = pred.gdr[(g.rank, name)][1]
            uses.append(NetUse(name, s.PATH_TYPE_STR[p.type], round(p.bw, 2), mode != GDR_DISABLE, why))
        out[g.label] = (g.dev, uses)
    return out


def _rdma_nets(pred: "Prediction", comp: Completion) -> set[str]:
    """NETs GPUDirect RDMA could use as far as the file says: none of its members' <net> has gdr="0"."""
    from ncclctl.nccl import system as s
    from ncclctl.nccl.params import strtol

    out = set()
    for n in pred.system.nodes[s.NET]:
        members = n.name.split("+")
        if all(strtol(x.get("gdr") or "1").value != 0 for m in members for x in comp.nets.get(m, [])):
            out.add(n.name)
    return out


def _devs(devs: list[int]) -> str:
    """GPU0-3,6 for [0, 1, 2, 3, 6]."""
    from ncclctl.sysfs import format_cpulist

    return "GPU" + format_cpulist(sorted(devs))


# --------------------------------------------------------------------------------------------------
# NTS070: a layout that turns GPUDirect RDMA off everywhere

_BDF = re.compile(r"([0-9a-fA-F]{1,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])")


def on_root_bus(busid: str) -> bool:
    """Whether a GPU or NIC at ``busid`` sits directly on a root bus (bus 00, or a device number other than 00):
    behind a PCIe port an endpoint is device 00 of a bus above 00, so a discrete device on a root bus is the view a
    hypervisor gives (Hyper-V 0001:00:00.0, KVM 0000:00:0a.0, Nitro 0000:10:1c.0), not a bare-metal layout."""
    m = _BDF.fullmatch(busid.strip())
    if m is None:
        return False
    return int(m.group(2), 16) == 0 or int(m.group(3), 16) != 0


def under_guest_cpu(pci: XmlNode) -> bool:
    """Whether a GPU or NIC ``<pci>`` hangs directly off a ``<cpu numaid="-1">`` without affinity: what NCCL writes
    for a device whose sysfs ``numa_node`` is -1 under the root complex, the view a hypervisor gives a guest
    (KVM, Firecracker, Hyper-V) whatever its bus numbers; bare metal with NUMA gives the node and its cpumap."""
    from ncclctl.nccl.params import strtol

    parent = pci.parent
    if parent is None or parent.name != "cpu":
        return False
    numaid = parent.get("numaid")
    if numaid is None or strtol(numaid).value >= 0:
        return False
    return not (parent.get("affinity") or "").strip(" ,0")


def flat_layout(res: ParseResult) -> list[tuple[str, str, XmlNode]]:
    """(rule, message, element) for NTS070: in the model of the file, no GPU reaches a NIC closer than
    NCCL_NET_GDR_LEVEL, so GPUDirect RDMA is off for every GPU and every inter-node transfer is staged through
    host memory."""
    root = res.root
    if root is None:
        return []
    completed = complete(root)
    virtual = [b for b in sorted(completed[1].endpoints) if on_root_bus(b)]
    guest = [b for b, e in sorted(completed[1].endpoints.items()) if under_guest_cpu(e)]
    if not virtual and not guest:
        return []  # a bare-metal layout: NCCL detects the same without the file (NTH030 compares with the host)
    pred, comp, _ = model(root, version=res.version, completed=completed)
    if pred is None:
        return []
    rdma = _rdma_nets(pred, comp)
    uses = gpu_uses(pred)
    groups: dict[tuple[str, str], list[int]] = {}
    why = ""
    for busid, (dev, lst) in uses.items():
        mine = [u for u in lst if u.net in rdma]
        if not mine:
            return []
        for u in mine:
            if u.gdr or u.path not in ("PHB", "SYS") or not u.why.startswith("path "):
                return []
            groups.setdefault((u.net, u.path), []).append(dev)
            why = why or u.why
    if not groups:
        return []
    endpoints = [comp.endpoints[b] for b in sorted(comp.endpoints)]
    flat = all(e.parent is not None and e.parent.name == "cpu" for e in endpoints)
    shape = ("every GPU and NIC hangs directly off a <cpu>" if flat else "no GPU shares a PCI switch with a NIC")
    if virtual:
        shape += (f" in this VM layout (devices on a root bus: {', '.join(virtual[:3])}"
                  f"{', ...' if len(virtual) > 3 else ''})")
    else:
        shape += (f" in this VM layout (devices directly under a <cpu numaid=\"-1\"> without affinity, a "
                  f"hypervisor's view without NUMA information: {', '.join(guest[:3])}"
                  f"{', ...' if len(guest) > 3 else ''})")
    ordered = sorted(groups.items(), key=lambda kv: (min(kv[1]), kv[0]))
    pairs = ", ".join(f"{_devs(devs)} -> {net} {path}" for (net, path), devs in ordered[:4])
    if len(ordered) > 4:
        pairs += f" and {len(ordered) - 4} more"
    first = min(uses.items(), key=lambda kv: kv[1][0])[0]
    msg = (f"{shape}: NCCL's paths are {pairs}; GPUDirect RDMA is off for every GPU ({why}), so every "
           "inter-node transfer is staged through host memory")
    if comp.assumed:
        msg += " (assumed as NCCL finds them on the host: " + "; ".join(comp.assumed) + ")"
    return [("NTS070", msg, comp.endpoints.get(first, root))]


# --------------------------------------------------------------------------------------------------
# NTH030: GPUDirect RDMA this host has and the file takes away


def host_gdr_lost(res: ParseResult, node: "Node", path: str) -> list["Finding"]:
    """NTH030, bare-metal hosts: each GPU that NCCL would pair with a NIC over GPUDirect RDMA on this host (the
    hardware NCCL detects, the host's NCCL settings) but not with the file."""
    from ncclctl.findings import Finding
    from ncclctl.nccl.predict import inputs_for_node, predict_xml
    from ncclctl.sysfs import normalize_bdf
    from ncclctl.nccl.detect import generate_for, net_devices
    from ncclctl.topo.rules import rule

    if res.root is None or node.is_virtual or not node.gpus:
        return []
    _, inputs, down = inputs_for_node(node, nodes=2, env={}, version=res.version, gdr="auto", source="host")
    if not inputs.gdr:
        return []  # nothing to lose: the host has no GPUDirect RDMA
    from ncclctl.errors import InputError

    try:
        host = predict_xml(generate_for(node, nccl_version=res.version)[0], inputs=inputs, down=down, channels=False)
    except InputError:
        return []
    names: dict[str, str] = {}
    for nd in net_devices(node):
        names[nd.nic.bdf or nd.busid] = nd.nic.name
        names.setdefault(nd.busid, nd.nic.name)
    pred, comp, _ = model(res.root, version=res.version, env=inputs.env, gdr=True, names=names, down=down)
    if pred is None:
        return []

    def canon(b: str) -> str:
        try:
            return normalize_bdf(b)
        except ValueError:
            return b

    host_uses = {canon(b): v for b, v in gpu_uses(host).items()}
    r = rule("NTH030")
    out = []
    for busid, (dev, lst) in sorted(gpu_uses(pred).items()):
        h = host_uses.get(canon(busid))
        if h is None or not lst:
            continue
        hdev, hlst = h
        on = [u for u in hlst if u.gdr]
        if not on or any(u.gdr for u in lst):
            continue
        el = comp.endpoints.get(busid)
        gpu_el = next((c for c in el.children if c.name == "gpu"), None) if el is not None else None
        where = gpu_el or el
        host_side = ", ".join(f"{u.net} over {u.path}" for u in on)
        file_side = ", ".join(f"{u.net} over {u.path}" for u in lst)
        msg = (f"GPU {hdev} ({canon(busid)}): on this host NCCL uses {host_side} with GPUDirect RDMA; with this file "
               f"it uses {file_side} with GPUDirect RDMA off ({lst[0].why}): the GPU's inter-node traffic is staged "
               "through host memory")
        out.append(Finding("NTH030", r.severity, msg, path, where.line if where is not None else None,
                           where.column if where is not None else None, r.fix))
    return out
