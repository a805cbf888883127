"""Human renderings of a node (text summary, NUMA/PCIe tree, topology matrix) and its JSON document."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Callable

from ncclctl.model import FABRIC_STATE_NAMES, Node, PciDevice, nvlink_domain_gpus
from ncclctl.names import natural_key
from ncclctl.plan.paths import derived, matrix, nearest_nics, nics_in_order, gpu_nic_type


def node_document(node: Node) -> dict:
    """The stable ``probe --format json`` document: the model plus its derived topology."""
    doc = node.to_dict()
    doc["derived"] = derived(node)
    return doc


def dumps(doc: object) -> str:
    """Deterministic JSON: fixed indentation, key order as built, trailing newline.

    Byte-identical to ``json.dumps(doc, indent=2, ensure_ascii=False)``, but built with the C string encoder:
    ``json.dumps`` with ``indent`` falls back to the pure-Python encoder, which costs a DGX-sized model ~10 ms.
    Always encodable as UTF-8: a string with undecodable bytes (a surrogate-escaped path or environment value)
    has them written as the text ``\\xNN`` (:func:`ncclctl.inputs.printable`) instead of failing on write.
    No control character is written raw (``ensure_ascii=False`` leaves DEL and C1 raw; they become ``\\u009b``),
    so a document printed to a terminal cannot carry an escape sequence from its input.
    """
    out: list[str] = []
    _emit(doc, "", out)
    out.append("\n")
    return _finish("".join(out))


class _Streamed(list):
    """The pieces :func:`dump_to` has not written yet; a lazy sequence hands them to ``write`` between elements."""

    def __init__(self, write: Callable[[str], object]) -> None:
        super().__init__()
        self.write = write

    def flush(self) -> None:
        if self:
            text = "".join(self)
            self.clear()
            self.write(_finish(text))


def dump_to(doc: object, write: Callable[[str], object]) -> None:
    """:func:`dumps` written through ``write`` in pieces (the same text): a lazy sequence in ``doc`` (a type with
    ``__json_sequence__``, iterated once, such as ``log show``'s per-process list) is written element by element,
    so a document of millions of them is never held whole, nor its text. The pieces end between elements, where
    the escapes of :func:`dumps` (DEL/C1, surrogates: inside string literals) cannot be cut."""
    out = _Streamed(write)
    _emit(doc, "", out)
    out.append("\n")
    out.flush()


def _finish(text: str) -> str:
    if _C1.search(text) is not None:  # DEL and C1 controls (U+009B is a CSI) pass the encoder raw: escape them
        text = _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        import re

        from ncclctl.inputs import printable

        # Lone surrogates only occur inside string literals; the backslash of their escape must itself be escaped.
        text = re.sub("[\ud800-\udfff]+", lambda m: _encode_str(printable(m.group()))[1:-1], text)
    return text


def _emit(obj: object, pad: str, out: list[str]) -> None:
    if isinstance(obj, str):
        out.append(_encode_str(obj))
    elif obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, int):
        out.append(int.__repr__(obj))
    elif isinstance(obj, float):
        out.append(json.dumps(obj))
    elif isinstance(obj, dict):
        if not obj:
            out.append("{}")
            return
        inner = pad + "  "
        out.append("{\n")
        first = True
        for key, value in obj.items():
            if not first:
                out.append(",\n")
            first = False
            out.append(inner)
            out.append(_encode_str(str(key)))
            out.append(": ")
            _emit(value, inner, out)
        out.append("\n" + pad + "}")
    elif getattr(type(obj), "__json_sequence__", False):  # lazy: written as it is walked
        it = iter(obj)  # type: ignore[call-overload]
        value = next(it, _END)
        if value is _END:
            out.append("[]")
            return
        inner = pad + "  "
        out.append("[\n")
        while True:
            out.append(inner)
            _emit(value, inner, out)
            value = next(it, _END)
            if value is _END:
                break
            out.append(",\n")
            if len(out) > 8192 and isinstance(out, _Streamed):
                out.flush()
        out.append("\n" + pad + "]")
    elif isinstance(obj, (list, tuple)):
        if not obj:
            out.append("[]")
            return
        inner = pad + "  "
        if set(map(type, obj)) == _STR:  # a list of names (rule ids, hosts): one C-level join, not a call per item
            out.append("[\n" + inner + (",\n" + inner).join(map(_encode_str, obj)) + "\n" + pad + "]")
            return
        out.append("[\n")
        first = True
        for value in obj:
            if not first:
                out.append(",\n")
            first = False
            out.append(inner)
            _emit(value, inner, out)
        out.append("\n" + pad + "]")
    else:
        raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


_encode_str = json.encoder.encode_basestring
_STR = {str}
_END = object()
_C1 = re.compile("[\x7f-\x9f]")  # only ever inside a string literal: every structural character is ASCII


def _gen(speed: str | None) -> str:
    from ncclctl.sysfs import link_speed_gen

    try:
        g = link_speed_gen(speed)
    except ValueError:
        return "?"
    return f"Gen{g}" if g else "?"


def _link(dev: PciDevice | None) -> str:
    if dev is None or dev.current_link_width is None:
        return ""
    cur = f"{_gen(dev.current_link_speed)} x{dev.current_link_width}"
    mx = f"{_gen(dev.max_link_speed)} x{dev.max_link_width}"
    return cur if cur == mx else f"{cur} (max {mx})"


def text_summary(node: Node) -> str:
    cpu = node.cpu
    lines = [
        f"host      {node.hostname}",
        f"cpu       {cpu.arch}, {cpu.sockets} x {cpu.model_name or cpu.vendor}, {cpu.logical_cpus} CPUs, "
        f"{len(node.numa)} NUMA node(s)",
    ]
    facts = node.facts
    drv = facts.driver_version or "n/a"
    if facts.nvidia_module:
        drv += f" ({facts.nvidia_module} kernel module)"
    lines.append(f"kernel    {facts.kernel or 'n/a'}; NVIDIA driver {drv}")
    gdr = ", ".join(facts.peermem) if facts.peermem else "no peer-memory module"
    if not facts.iommu_units:
        iommu = "off"
    else:
        types = sorted({t for _, t in facts.iommu_group_types})
        iommu = "on (" + (", ".join(types) if types else "group types unknown") + ")"
    lines.append(f"gpudirect {gdr}; IOMMU {iommu}")
    if node.gpus:
        names = Counter(g.name for g in node.gpus)
        desc = ", ".join(f"{n} x {name}" for name, n in names.items())
        sms = sorted({g.sm for g in node.gpus if g.sm})
        lines.append(f"gpus      {desc}" + (f" (sm{'/'.join(map(str, sms))})" if sms else ""))
    else:
        lines.append("gpus      none")
    if node.nvswitches:
        lines.append(f"nvswitch  {len(node.nvswitches)} PCI-visible NVSwitch(es); fabric manager: {facts.fabric_manager or 'n/a'}")
    domain = nvlink_domain_gpus(node)
    if domain:
        cliques = sorted({(g.fabric_cluster_uuid or "-", g.fabric_clique_id) for g in domain}, key=str)
        states = sorted({FABRIC_STATE_NAMES.get(g.fabric_state, str(g.fabric_state)) for g in domain
                         if g.fabric_state is not None})
        masks = sorted({f"0x{g.fabric_health_mask:x}" for g in domain if g.fabric_health_mask is not None})
        lines.append("nvlink    multi-node domain " + "; ".join(f"cluster {u} clique {c}" for u, c in cliques)
                     + f"; fabric {'/'.join(states) or 'n/a'}; health mask {'/'.join(masks) or 'n/a'}")
        imex = facts.imex
        if imex is not None:
            chans = "none" if not imex.channels else ",".join(f"channel{c}" for c in imex.channels)
            nodes = "missing" if imex.nodes is None else f"{len(imex.nodes)} node(s)"
            lines.append(f"imex      service {imex.service or 'n/a'}; node list {nodes}; domain "
                         f"{imex.domain_state or 'n/a'}; channels {chans}")
    near = nearest_nics(node)
    if node.gpus:
        lines.append("")
        lines.append(f"{'GPU':<4} {'bus id':<13} {'NUMA':<5} {'NVLink':<7} {'PCIe':<22} nearest NIC(s)")
        for g in sorted(node.gpus, key=lambda g: g.index):
            nv = f"{len(g.active_nvlinks)}/{len(g.nvlinks)}" if g.nvlinks else "-"
            nics = near.get(g.index, ())
            nic = node.nic(nics[0]) if nics else None
            path = gpu_nic_type(node, g, nic) if nic is not None else ""
            numa = "-" if g.numa_node is None else str(g.numa_node)
            lines.append(f"{g.index:<4} {g.bdf:<13} {numa:<5} {nv:<7} {_link(node.pci_device(g.bdf)):<22} "
                         f"{','.join(nics) or '-'}{(' (' + path + ')') if path else ''}")
    if node.nics:
        lines.append("")
        lines.append(f"{'NIC':<12} {'bus id':<13} {'port':<5} {'state':<7} {'rate':<9} {'layer':<11} {'netdev':<14} MTU")
        netdevs = {n.name: n for n in node.netdevs}
        for nic in nics_in_order(node):
            for p in nic.ports:
                nd = netdevs.get(p.netdev or "")
                rate = f"{p.rate_gbps:g}G" if p.rate_gbps is not None else "?"
                mtu = str(nd.mtu) if nd and nd.mtu else (str(p.active_mtu) if p.active_mtu else "-")
                lines.append(f"{nic.name:<12} {nic.bdf or '-':<13} {p.num:<5} {p.state:<7} {rate:<9} {p.link_layer:<11} "
                             f"{p.netdev or '-':<14} {mtu}")
    lines += _platform_lines(node)
    if node.unavailable:
        lines.append("")
        lines.append("not seen:")
        for u in node.unavailable:
            if u.source == "nvml" and u.detail is None:  # initialisation: say what it means
                from ncclctl.model import describe_init_failure

                lines.append(f"  nvml: {describe_init_failure(u.reason)}")
                continue
            lines.append(f"  {u.source}: {u.reason}" + (f" ({u.detail})" if u.detail else ""))
    return "\n".join(lines) + "\n"


def _platform_lines(node: Node) -> list[str]:
    """The Grace platforms rdma_topo recognises (issue 32): which one, and on Data Direct trays each NIC's DMA
    function, its GPU and their IOMMU groups. Nothing on classic hosts."""
    from ncclctl.plan.acs import CLASSIC, platform

    plat = platform(node)
    if plat.kind == CLASSIC:
        return []
    lines = ["", f"platform  {plat.name}"]
    if not plat.complexes:
        return lines
    types = dict(node.facts.iommu_group_types)
    gpus = {g.bdf: g.index for g in node.gpus}

    def group(bdf: str) -> str:
        dev = node.pci_device(bdf)
        g = dev.iommu_group if dev else None
        return "-" if g is None else f"{g} {types.get(g, '?')}"

    lines.append(f"{'NIC':<12} {'DMA function':<13} {'GPU':<4} {'IOMMU group DMA / GPU':<30} NIC ATS")
    for c in plat.complexes:
        nic = ([n.name for n in node.nics if n.bdf == c.nic] or ["?"])[0] if c.nic else "?"
        pf = node.pci_device(c.nic) if c.nic else None
        ats = "-" if pf is None or pf.ats is None else ("yes" if pf.ats else "no")
        gi = gpus.get(c.gpu)
        lines.append(f"{nic:<12} {c.dma:<13} {'-' if gi is None else gi:<4} "
                     f"{group(c.dma) + ' / ' + group(c.gpu):<30} {ats}")
    return lines


def _describe(node: Node, dev: PciDevice, labels: dict[str, str]) -> str:
    role = {
        "root_port": "root port",
        "switch_upstream": "switch",
        "switch_downstream": "downstream port",
        "bridge": "bridge",
    }.get(dev.role)
    ids = f"{dev.vendor[2:]}:{dev.device[2:]}"
    parts = [dev.bdf]
    if dev.bdf in labels:
        parts.append(labels[dev.bdf])
    elif role:
        parts.append(role)
    else:
        parts.append(f"class {dev.class_code}")
    parts.append(f"[{ids}]")
    link = _link(dev)
    if link:
        parts.append(link)
    if dev.acs_ctrl:
        parts.append(f"ACSCtl=0x{dev.acs_ctrl:04x}")
    return " ".join(parts)


def tree(node: Node) -> str:
    """NUMA nodes, root complexes and the PCIe tree with GPUs and NICs labelled."""
    labels: dict[str, str] = {}
    for g in node.gpus:
        labels[g.bdf] = f"GPU{g.index} {g.name}"
    for s in node.nvswitches:
        labels[s.bdf] = "NVSwitch"
    for n in node.nics:
        if n.bdf:
            layer = n.link_layer or "?"
            extra = labels.get(n.bdf)
            labels[n.bdf] = (extra + " + " if extra else "") + f"NIC {n.name} ({layer})"
    for nd in node.netdevs:
        if nd.bdf and nd.bdf not in labels:
            labels[nd.bdf] = f"NIC {nd.name}"
    children: dict[str, list[str]] = {}
    roots: dict[str, set[int | None]] = {}
    for dev in node.pci:
        parent = dev.path[-2]
        children.setdefault(parent, []).append(dev.bdf)
        roots.setdefault(dev.root_complex, set()).add(dev.numa_node)
    lines: list[str] = []

    def walk(key: str, depth: int) -> None:
        for bdf in sorted(children.get(key, [])):
            dev = node.pci_device(bdf)
            if dev is None:
                continue
            lines.append("  " * depth + _describe(node, dev, labels))
            walk(bdf, depth + 1)

    numa_ids: list[int | None] = [n.id for n in node.numa] or [None]
    by_numa: dict[int | None, list[str]] = {}
    for rc, numas in roots.items():
        known = sorted(n for n in numas if n is not None and n >= 0)
        by_numa.setdefault(known[0] if known else None, []).append(rc)
    for nid in numa_ids + [None]:
        rcs = by_numa.pop(nid, None)
        numa = next((n for n in node.numa if n.id == nid), None)
        if numa is not None:
            cpus = numa.cpulist or "no CPUs (memory only)"
            lines.append(f"NUMA node {nid}: CPUs {cpus}")
        elif rcs:
            lines.append("NUMA node unknown")
        else:
            continue
        for rc in sorted(rcs or [], key=natural_key):
            lines.append(f"  {rc} (host bridge)")
            walk(rc, 2)
    nics_nopci = [n for n in node.nics if not n.bdf]
    if nics_nopci:
        lines.append("not placed on PCIe: " + ", ".join(n.name for n in nics_nopci))
    return "\n".join(lines) + "\n"


def matrix_text(node: Node) -> str:
    m = matrix(node)
    if not m.labels:
        return "no GPUs and no RDMA NICs: no topology matrix to show\n"
    width = max([len(x) for x in m.labels] + [4]) + 1
    header = " " * width + "".join(f"{label:<{width}}" for label in m.labels) + "CPU Affinity\tNUMA Affinity"
    lines = [header.rstrip()]
    for label, row, cpu, numa in zip(m.labels, m.cells, m.cpu_affinity, m.numa_affinity):
        line = f"{label:<{width}}" + "".join(f"{c:<{width}}" for c in row)
        if cpu or numa:
            line += f"{cpu}\t{numa}"
        lines.append(line.rstrip())
    lines += [
        "",
        "Legend:",
        "",
        "  X    = Self",
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes",
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
        "  PIX  = Connection traversing at most a single PCIe bridge",
        "  NV#  = Connection traversing a bonded set of # NVLinks",
    ]
    if m.nic_legend:
        lines += ["", "NIC Legend:", ""] + [f"  {label}: {name}" for label, name in m.nic_legend]
    return "\n".join(lines) + "\n"
