"""Check a topology file against a host: devices, bus-id spellings, NUMA/affinity, pairings, attributes.

Published cloud topology files carried wrong NUMA affinity for many months (user-needs.md); the NUMA and
affinity checks here are the ones that catch that class of mistake: every ``<cpu affinity>`` is compared with
the host's cpumap, and every GPU/NIC with the NUMA node sysfs reports for it.
"""

from __future__ import annotations

from typing import Sequence

from ncclctl.findings import Finding
from ncclctl.model import Node
from ncclctl.nccl.cpuset import cpu_ranges, kernel_cpumap, nccl_cpuset
from ncclctl.nccl.version import Version
from ncclctl.names import natural_key
from ncclctl.plan.paths import pcie_rank, pcie_path_type
from ncclctl.sysfs import normalize_bdf
from ncclctl.nccl.detect import ib_pci_busid, net_devices
from ncclctl.topo.interpret import TopoView, gpu_gpu, gpu_net
from ncclctl.topo.rules import rule


def _finding(rule_id: str, message: str, path: str, line: int | None = None, column: int | None = None,
             fix: str | None = None) -> Finding:
    r = rule(rule_id)
    return Finding(rule=rule_id, severity=r.severity, message=message, subject=path, line=line, column=column,
                   fix=fix or r.fix)


#: How many elements a finding that covers several names before "and N more" (the evidence and JSON list all).
_SHOWN = 8


def _one_fault(rule_id: str, items: Sequence[tuple[str, str, int | None]], path: str, single: str, head: str,
               tail: str = "") -> Finding:
    """One finding for the elements (or host devices) of one fault: ``items`` are (what the single message says,
    the short text naming the element, its line); one item keeps the single message, several become ``head``
    naming each, ``tail`` after them, every element in the evidence and (with lines) the JSON locations."""
    if len(items) == 1:
        return _finding(rule_id, single, path, items[0][2])
    shown = ", ".join(t for _, t, _ in items[:_SHOWN])
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    lines = [ln for _, _, ln in items if ln is not None]
    f = _finding(rule_id, f"{head}: {shown}{more}{tail}", path, lines[0] if lines else None)
    from dataclasses import replace

    return replace(f, evidence=tuple((f"line {ln}: " if ln is not None else "") + one for one, _, ln in items),
                   locations=tuple((ln, None, t) for _, t, ln in items if ln is not None) if lines else ())


def _canonical(busid: str) -> str | None:
    try:
        return normalize_bdf(busid)
    except ValueError:
        return None


def check_against_host(view: TopoView, node: Node, path: str) -> list[Finding]:
    out: list[Finding] = []
    host_gpus = {g.bdf: g for g in node.gpus}
    host_numa = {n.id: n for n in node.numa}
    nets = net_devices(node)
    host_nets = {nd.nic.name: nd for nd in nets}
    all_rdma = {n.name for n in node.nics}
    from ncclctl.nccl.transport import node_transport

    tr = node_transport(node, view.result.version) if any(n.name not in all_rdma for n in view.nets if n.name) else None
    socket_names = {sd.name for sd in tr.socket} if tr is not None and tr.name == "Socket" else set()

    for cpu in view.cpus:
        if cpu.numaid is None or cpu.numaid < 0:
            continue
        hnuma = host_numa.get(cpu.numaid)
        if hnuma is None:
            if node.numa:
                unbound = ("" if "affinity" in cpu.attrs else
                           f"; without affinity NCCL reads /sys/devices/system/node/node{cpu.numaid}/cpumap, finds "
                           "nothing and does not bind the threads of the GPUs under it")
                out.append(_finding("NTH011", f"<cpu numaid=\"{cpu.numaid}\">: this host's NUMA nodes are "
                                    f"{', '.join(str(n) for n in sorted(host_numa))}{unbound}", path, cpu.node.line,
                                    cpu.node.column))
            continue
        affinity = cpu.attrs.get("affinity")
        if affinity is not None and hnuma.cpumap:
            # The mask as NCCL reads it (ncclStrToCpuset) against the kernel's: a malformed mask is compared by
            # the CPUs NCCL binds to, not by its spelling.
            mine = nccl_cpuset(affinity, view.result.version)
            if mine != kernel_cpumap(hnuma.cpumap):
                other = [n.id for n in node.numa if n.id != cpu.numaid and n.cpumap
                         and kernel_cpumap(n.cpumap) == mine and mine]
                whose = f"; the file's mask is node {other[0]}'s cpumap (swapped?)" if other else ""
                out.append(_finding("NTH004", f"<cpu numaid=\"{cpu.numaid}\" affinity=\"{affinity}\">: NCCL binds "
                                    f"the GPUs under it to CPUs {cpu_ranges(mine)}; NUMA node {cpu.numaid} of this host "
                                    f"is CPUs {hnuma.cpulist or 'none'} (cpumap {hnuma.cpumap}){whose}", path,
                                    cpu.node.line, cpu.node.column))

    seen_gpus: set[str] = set()
    # PCI functions the file names without a <gpu>/<net> child (e.g. a --minimal skeleton): NCCL places the
    # device there and fills in the GPU or NIC itself, so the device is not missing from the file.
    file_pci: set[str] = set()
    stack = [view.result.root] if view.result.root is not None else []
    while stack:
        el = stack.pop()
        stack.extend(el.children)
        if el.name == "pci" and el.get("busid"):
            canon = _canonical(el.get("busid") or "")
            if canon is not None:
                file_pci.add(canon)
    host_list = f"(GPUs: {', '.join(sorted(host_gpus, key=natural_key)) or 'none'})"
    no_gpu: list[tuple[str, str, int | None]] = []
    numa_moved: list[tuple[str, str, int | None]] = []  # NTH005, GPUs and NICs
    for g in view.gpus:
        canon = _canonical(g.busid)
        pci_line = g.chain[-1].line if g.chain else g.node.line
        if canon is None or (canon not in host_gpus):
            if not g.busid.lower().startswith("ffff:"):
                no_gpu.append((f"GPU busid \"{g.busid}\" does not exist on this host {host_list}",
                               f"\"{g.busid}\" (line {pci_line})", pci_line))
            continue
        seen_gpus.add(canon)
        hg = host_gpus[canon]
        if g.busid != canon:
            out.append(_finding("NTH003", f"GPU busid \"{g.busid}\" is spelled differently from sysfs \"{canon}\": "
                                "NCCL compares strings and will not match it", path, pci_line))
        numa = node.numa_node_of(canon)
        if numa is not None and numa >= 0 and g.numaid is not None and g.numaid != numa:
            numa_moved.append((f"GPU {canon} is under <cpu numaid=\"{g.numaid}\"> but sits on NUMA node {numa} of this "
                               "host", f"GPU {canon} under {g.numaid}, on {numa} (line {pci_line})", pci_line))
        if g.dev is not None and g.dev != hg.index:
            out.append(_finding("NTH007", f"<gpu dev=\"{g.dev}\"> at {canon} is GPU {hg.index} on this host",
                                path, g.node.line, g.node.column))
        if g.sm is not None and hg.sm is not None and g.sm != hg.sm:
            out.append(_finding("NTH008", f"<gpu sm=\"{g.sm}\"> at {canon}: the GPU is sm{hg.sm}", path, g.node.line))
        if g.nvlinks and hg.source == "nvml":
            file_total = sum(c for _, c, _ in g.nvlinks)
            host_total = len([link for link in hg.active_nvlinks if link.p2p_supported is not False])
            if file_total != host_total:
                out.append(_finding("NTH009", f"GPU {hg.index} ({canon}): the file lists {file_total} NVLinks, the "
                                    f"host has {host_total} active", path, g.node.line))
    if no_gpu:
        out.append(_one_fault("NTH001", no_gpu, path, no_gpu[0][0], f"{len(no_gpu)} GPU bus ids of the file do not "
                              "exist on this host", f" {host_list}"))
    absent = [(f"GPU {hg.index} ({bdf}) is not in the file", f"GPU {hg.index} ({bdf})", None)
              for bdf, hg in sorted(host_gpus.items(), key=lambda kv: natural_key(kv[0]))
              if bdf not in seen_gpus and bdf not in file_pci]
    if absent:
        out.append(_one_fault("NTH002", absent, path, absent[0][0], f"{len(absent)} GPUs of this host are not in the "
                              "file"))

    seen_nets: set[str] = set()
    not_rdma: list[tuple[str, str, int | None]] = []
    moved: list[tuple[str, str, int | None]] = []
    differ: list[tuple[str, str, int | None]] = []
    rdma_list = f"({', '.join(sorted(all_rdma, key=natural_key)) or 'none'})"
    for n in view.nets:
        if n.name is None:
            continue
        line = n.node.line
        if n.name not in all_rdma and n.name in socket_names:
            continue  # a device of NCCL's Socket transport on this host (the transport NCCL uses here)
        if n.name not in all_rdma:
            not_rdma.append((f"<net name=\"{n.name}\"> is not an RDMA device of this host {rdma_list}",
                             f"{n.name} (line {line})", line))
            continue
        seen_nets.add(n.name)
        nd = host_nets.get(n.name)
        if nd is None:
            continue  # present but no active port: NCCL does not report it; nothing to compare
        expected_busid = nd.busid
        if n.busid and not n.busid.lower().startswith("ffff:"):
            canon = _canonical(n.busid)
            if canon is not None and canon != expected_busid and ib_pci_busid(canon) == expected_busid:
                pass  # NTS029 already explains the .0/00 rule
            elif canon is not None and canon == expected_busid and n.busid != canon:
                out.append(_finding("NTH003", f"NIC busid \"{n.busid}\" is spelled differently from sysfs "
                                    f"\"{canon}\"", path, n.chain[-1].line if n.chain else line))
            elif canon is not None and ib_pci_busid(canon) != expected_busid:
                moved.append((f"<net name=\"{n.name}\"> sits under busid \"{n.busid}\", but the IB plugin reports "
                              f"{n.name} at {expected_busid}",
                              f"{n.name} under \"{n.busid}\" (line {line}; the plugin: {expected_busid})", line))
        numa = node.numa_node_of(nd.nic.bdf)
        if numa is not None and numa >= 0 and n.numaid is not None and n.numaid != numa:
            nic_line = n.chain[-1].line if n.chain else line
            numa_moved.append((f"NIC {n.name} is under <cpu numaid=\"{n.numaid}\"> but sits on NUMA node {numa} of "
                               "this host", f"NIC {n.name} under {n.numaid}, on {numa} (line {nic_line})", nic_line))
        diffs = []
        speed = n.attrs.get("speed")
        if speed is not None and nd.port.rate_gbps and speed.strip() != str(int(round(nd.port.rate_gbps * 1000))):
            diffs.append(f"speed {speed} (host {int(round(nd.port.rate_gbps * 1000))})")
        port = n.attrs.get("port")
        if port is not None and port.strip() != str(nd.nccl_port):
            diffs.append(f"port {port} (host {nd.nccl_port})")
        guid = n.attrs.get("guid")
        if guid is not None and nd.nic.sys_image_guid:
            try:
                if int(guid, 16) != int(nd.nic.sys_image_guid, 16):
                    diffs.append(f"guid {guid} (host {nd.nic.sys_image_guid})")
            except ValueError:
                diffs.append(f"guid {guid} (not hex)")
        if diffs:
            differ.append((f"<net name=\"{n.name}\">: " + ", ".join(diffs),
                           f"{n.name} (line {line}: {', '.join(diffs)})", line))
    if not_rdma:
        out.append(_one_fault("NTH001", not_rdma, path, not_rdma[0][0], f"{len(not_rdma)} <net> names of the file "
                              "are not RDMA devices of this host", f" {rdma_list}"))
    if moved:
        out.append(_one_fault("NTH001", moved, path, moved[0][0], f"{len(moved)} <net> elements sit under another "
                              "busid than the IB plugin reports them at"))
    if numa_moved:
        numa_moved.sort(key=lambda m: m[2] or 0)
        out.append(_one_fault("NTH005", numa_moved, path, numa_moved[0][0], f"{len(numa_moved)} devices are under "
                              "another <cpu numaid> than the NUMA node they sit on (the file's <cpu>, then this host's "
                              "node)"))
    if differ:
        out.append(_one_fault("NTH010", differ, path, differ[0][0], f"{len(differ)} <net> elements differ from "
                              "this host"))
    nics = [(f"RDMA NIC {name} (active) is not in the file", name, None) for name in sorted(host_nets, key=natural_key)
            if name not in seen_nets and host_nets[name].busid not in file_pci
            and (host_nets[name].nic.bdf or "") not in file_pci]
    if nics:
        out.append(_one_fault("NTH002", nics, path, nics[0][0], f"{len(nics)} active RDMA NICs of this host are not "
                              "in the file"))

    out.extend(_pairings(view, node, path))
    return out


def _file_id(n, attr: str) -> int | None:
    """A <net>'s rail=/plane= as NCCL 2.30.7 reads it (strtol into an int), None when absent or not a plain id
    (NTS090) or out of an int's range (NCCL keeps the low 32 bits of strtol's saturated value)."""
    from ncclctl.nccl.params import strtol

    text = n.attrs.get(attr)
    if text is None:
        return None
    num = strtol(text, 10)
    return num.value if num.whole and 0 <= num.value < 1 << 31 else None  # stored in an int


def _ids_str(rail: int | None, plane: int | None) -> str:
    return " ".join(f'{k}="{v}"' for k, v in (("rail", rail), ("plane", plane)) if v is not None)


def check_rail_ids(view: TopoView, node: Node, path: str, version, fleet=None) -> list[Finding]:
    """NTH040-NTH044: the rail=/plane= of the file's <net> elements against the host (its rail NICs, its
    NCCL_IB_HCA) and, with ``fleet`` (:class:`ncclctl.fabric.railids.PortIds` from --fabric/--rail-map), against the
    leaf each port lands on."""
    from ncclctl.nccl.railids import RAIL_IDS_SINCE

    out: list[Finding] = []
    host_nets = {nd.nic.name: nd for nd in net_devices(node)}

    def port_key(n) -> str:
        nd = host_nets.get(n.name or "")
        if nd is not None:
            return f"{n.name}:{nd.port.num}"
        return f"{n.name}:{(n.attrs.get('port') or '1').strip()}"

    railed = [n for n in view.nets if n.name is not None and ("rail" in n.attrs or "plane" in n.attrs)]
    if not railed:
        return out
    if version < RAIL_IDS_SINCE:
        first = railed[0]
        placed = []
        for n in railed:
            fid = fleet.ids.get(port_key(n)) if fleet is not None else None
            if fid is not None:
                placed.append(f"{port_key(n)} rail {fid.rail}" + ("" if fid.plane is None else f" plane {fid.plane}"))
        known = f"; the {fleet.source} ({fleet.detail}) has {', '.join(placed)}" if fleet is not None and placed else ""
        out.append(_finding("NTH044", f"{len(railed)} <net> carr{'ies' if len(railed) == 1 else 'y'} rail=/plane= "
                            f"({', '.join(f'{n.name} line {n.node.line}' for n in railed)}): NCCL {version} ignores "
                            f"them without a word (read from {RAIL_IDS_SINCE}) and keeps rings in a rail only by "
                            "NIC name with NCCL_CROSS_NIC=0" + known, path, first.node.line, first.node.column))
        return out
    from ncclctl.plan.rails import plan_rails

    rail_nics = {r.nic for r in plan_rails(node).rails}
    for n in railed:
        if n.name not in rail_nics and n.name in {x.name for x in node.nics}:
            ids = _ids_str(_file_id(n, "rail"), _file_id(n, "plane"))
            out.append(_finding("NTH043", f"<net name=\"{n.name}\" {ids}>"
                                f": {n.name} is no GPU's rail NIC on this host (rail NICs: "
                                f"{', '.join(sorted(rail_nics, key=natural_key)) or 'none'}); NCCL treats it as a "
                                "member of that rail", path, n.node.line, n.node.column))
    wrong: set[str] = set()
    if fleet is not None:
        for n in railed:
            key = port_key(n)
            fid = fleet.ids.get(key)
            rail, plane = _file_id(n, "rail"), _file_id(n, "plane")
            if fid is None:
                continue
            diffs = []
            if rail is not None and rail != fid.rail:
                diffs.append(f"rail {fid.rail}")
            if plane is not None and fid.plane is not None and plane != fid.plane:
                diffs.append(f"plane {fid.plane}")
            if not diffs:
                continue
            wrong.add(n.name or "")
            leaf = fleet.leaves.get(key)
            where = f"lands on leaf {leaf}, " if leaf else "is placed on "
            want = _ids_str(fid.rail if rail is not None else None, fid.plane if plane is not None else None)
            opt = "--fabric" if fleet.source == "fabric" else "--rail-map"
            out.append(_finding("NTH040", f"<net name=\"{n.name}\" {_ids_str(rail, plane)}>: port {key} {where}"
                                f"{' '.join(diffs)} ({fleet.detail})", path, n.node.line, n.node.column,
                                fix=f"write {want} on this <net> (ncclctl topo generate {opt} FILE writes the ids), "
                                    f"or recable {key} to the leaf of the rail it is labelled with"))
        groups: dict[tuple[int, int | None], list] = {}
        for n in railed:
            rail = _file_id(n, "rail")
            if rail is not None and port_key(n) in fleet.leaves:
                groups.setdefault((rail, _file_id(n, "plane")), []).append(n)
        for (rail, plane), members in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or -1)):
            leaves = {fleet.leaves[port_key(n)] for n in members}
            if len(leaves) < 2 or any(n.name in wrong for n in members):
                continue
            desc = ", ".join(f"{n.name} (line {n.node.line}) on {fleet.leaves[port_key(n)]}" for n in members)
            out.append(_finding("NTH042", f"<net> {_ids_str(rail, plane)} on {len(members)} NICs of this host whose "
                                f"ports land on {len(leaves)} leaves: {desc} ({fleet.detail}); NCCL takes them for "
                                "one rail", path, members[1].node.line, members[1].node.column))
    from ncclctl.nccl.lists import hca_ids, hca_selects
    from ncclctl.nccl.settings import ENV, resolve

    hca = resolve(node, version).effective("NCCL_IB_HCA")
    if hca is not None and hca.value and not hca.value.lstrip().startswith("^"):
        where = "the environment" if hca.source == ENV else f"{hca.source}" + (f":{hca.line}" if hca.line else "")
        for n in railed:
            nd = host_nets.get(n.name or "")
            if nd is None or not hca_selects(hca.value, [(nd.nic.name, nd.port.num)]):
                continue
            hrail, hplane = hca_ids(hca.value, nd.nic.name, nd.port.num)
            rail, plane = _file_id(n, "rail"), _file_id(n, "plane")
            diffs = []
            if rail is not None and hrail != -1 and rail != hrail:
                diffs.append(f"rail {hrail}")
            if plane is not None and hplane != -1 and plane != hplane:
                diffs.append(f"plane {hplane}")
            if diffs:
                out.append(_finding("NTH041", f"<net name=\"{n.name}\" {_ids_str(rail, plane)}>: NCCL_IB_HCA ({where}) "
                                    f"gives {n.name}:{nd.port.num} {' '.join(diffs)}; NCCL uses the file's ids (the "
                                    "file wins over the IB plugin's)", path, n.node.line, n.node.column,
                                    fix=f"make the file and NCCL_IB_HCA in {where} agree (regenerate both from one "
                                        "source: ncclctl topo generate --fabric, ncclctl conf generate --fabric)"))
    return out


def confirmed_values(view: TopoView, node: Node) -> frozenset[tuple[int, int, str]]:
    """The init-only attributes (rule NTS025) whose value is what NCCL would detect on this host, as (line,
    column, attribute) of their <gpu>/<net> element: ``dev`` and ``sm`` of a GPU this host has at that bus id,
    ``speed``, ``port``, ``guid`` and ``maxconn`` of a NIC as NCCL's IB plugin reports it here. What
    :func:`check_against_host` compares and finds equal (a differing value is NTH007, NTH008 or NTH010)."""
    out: set[tuple[int, int, str]] = set()
    host_gpus = {g.bdf: g for g in node.gpus}
    for g in view.gpus:
        hg = host_gpus.get(_canonical(g.busid) or "")
        if hg is None:
            continue
        where = (g.node.line, g.node.column)
        if g.dev is not None and g.dev == hg.index:
            out.add((*where, "dev"))
        if g.sm is not None and hg.sm is not None and g.sm == hg.sm:
            out.add((*where, "sm"))
    for c in view.cpus:  # NTS046: no NUMA node for the host's GPUs either, so NCCL binds no CPU set there too
        if c.numaid is None or c.numaid >= 0 or "affinity" in c.attrs:
            continue
        under = [host_gpus.get(_canonical(g.busid) or "") for g in view.gpus if g.numaid == c.numaid]
        devs = [node.pci_device(hg.bdf) for hg in under if hg is not None]
        if under and all(d is not None and (d.numa_node is None or d.numa_node < 0) for d in devs) \
                and len(devs) == len(under):
            out.add((c.node.line, c.node.column, "affinity"))
    host_nets = {nd.nic.name: nd for nd in net_devices(node)}
    for n in view.nets:
        nd = host_nets.get(n.name or "")
        if nd is None:
            continue
        where = (n.node.line, n.node.column)
        host = {"port": str(nd.nccl_port)}
        if nd.port.rate_gbps:
            host["speed"] = str(int(round(nd.port.rate_gbps * 1000)))
        if nd.nic.max_qp:
            host["maxconn"] = str(nd.nic.max_qp)
        for attr, value in host.items():
            if (n.attrs.get(attr) or "").strip() == value:
                out.add((*where, attr))
        guid = n.attrs.get("guid")
        if guid is not None and nd.nic.sys_image_guid:
            try:
                if int(guid, 16) == int(nd.nic.sys_image_guid, 16):
                    out.add((*where, "guid"))
            except ValueError:
                pass
    socket: dict = {}
    if any(n.name and n.name not in host_nets for n in view.nets):
        from ncclctl.nccl.transport import node_transport

        tr = node_transport(node, view.result.version)
        socket = {sd.name: sd for sd in tr.socket} if tr.name == "Socket" else {}
    for n in view.nets:
        sd = socket.get(n.name or "")
        if sd is None:
            continue
        where = (n.node.line, n.node.column)
        # What the Socket plugin reports for it (transport/net_socket.cc): speed, port 0, guid = its index,
        # maxconn 65536, no GPUDirect RDMA.
        for attr, want in (("speed", sd.speed), ("port", 0), ("guid", sd.dev), ("maxconn", 65536), ("gdr", 0)):
            try:
                if int((n.attrs.get(attr) or "x").strip(), 0) == want:
                    out.add((*where, attr))
            except ValueError:
                pass
    return frozenset(out)


def _pairings(view: TopoView, node: Node, path: str) -> list[Finding]:
    """Each GPU's nearest NICs in the file against the host (bare metal: PCIe; VMs: NUMA locality)."""
    out: list[Finding] = []
    host_gpus = {g.bdf: g for g in node.gpus}
    nics = {n.name: n for n in node.nics}
    # (name, <net>) of the file's nets that are RDMA devices of this host with a PCI address
    file_nets = [(n.name, n) for n in view.nets if n.name is not None and n.name in nics and nics[n.name].bdf]
    if not file_nets:
        return out
    for g in view.gpus:
        canon = _canonical(g.busid)
        if canon not in host_gpus:
            continue
        ranked = [(pcie_rank(gpu_net(view, g, n)), name, n) for name, n in file_nets]
        best = min(r for r, _, _ in ranked)
        file_near = sorted({name for r, name, _ in ranked if r == best}, key=natural_key)
        file_type = gpu_net(view, g, next(n for r, _, n in ranked if r == best))
        if node.is_virtual:
            gnuma = node.numa_node_of(canon)
            wrong = [name for name in file_near
                     if gnuma is not None and gnuma >= 0 and node.numa_node_of(nics[name].bdf) not in (None, -1, gnuma)]
            if wrong and file_type in ("PIX", "PXB"):
                out.append(_finding("NTH006", f"GPU {host_gpus[canon].index} ({canon}, NUMA {gnuma}) is paired with "
                                    f"{', '.join(wrong)} on another NUMA node of this VM", path, g.node.line))
            continue
        host_types = {name: pcie_path_type(node, canon, nics[name].bdf) or "SYS" for name in nics if nics[name].bdf}
        candidates = [name for name in host_types if name in {nm for nm, _ in file_nets}]
        if not candidates:
            continue
        hbest = min(pcie_rank(host_types[name]) for name in candidates)
        host_near = sorted((name for name in candidates if pcie_rank(host_types[name]) == hbest), key=natural_key)
        if file_near != host_near:
            out.append(_finding(
                "NTH006",
                f"GPU {host_gpus[canon].index} ({canon}): nearest NIC in the file is {', '.join(file_near)} "
                f"({file_type}); on this host it is {', '.join(host_near)} ({host_types[host_near[0]]})",
                path, g.node.line))
    return out


def check_graph_against_host(result, node: Node, path: str, *, nets_available: int | None = None) -> list[Finding]:
    """A graph file (parsed by NCCL's reader, ncclctl.nccl.xml) against a host: GPU devs, GPU count, net devs, node-wide use."""
    from ncclctl.nccl.params import strtol

    out: list[Finding] = []
    root = result.root
    if root is None or root.name != "graphs":
        return out
    indices = {g.index for g in node.gpus}
    devs: dict[int, str] | None = None
    if nets_available is None:
        devs = _nccl_net_devs(node, result.version)
        if devs is None:
            from ncclctl.nccl.lists import hca_selects
            from ncclctl.nccl.settings import effective_setting

            ports = [(nd.nic.name, nd.port.num) for nd in net_devices(node)]
            hca = effective_setting(node, "NCCL_IB_HCA")
            nets_available = len(hca_selects(hca, ports)) if hca else len(ports)
    n_nets = len(devs) if devs is not None else nets_available or 0
    counted: set[int] = set()
    for graph in root.children:
        if graph.name != "graph":
            continue
        for ch in graph.children:
            if ch.name != "channel":
                continue
            gpus = [c for c in ch.children if c.name == "gpu"]
            for el in ch.children:
                dev_text = el.get("dev")
                if dev_text is None or el.name not in ("gpu", "net") or el.has("rank"):
                    continue
                dev = strtol(dev_text, 16).value
                if el.name == "gpu" and dev not in indices:
                    out.append(_finding("NTH012", f"<gpu dev=\"{dev_text}\"> is GPU {dev}; this host has GPUs "
                                        f"{', '.join(map(str, sorted(indices))) or 'none'}", path, el.line, el.column))
                if el.name == "net" and (dev not in devs if devs is not None else dev >= n_nets):
                    if devs is not None:
                        have = ", ".join(f"{d} ({name})" for d, name in sorted(devs.items())) or "none"
                        msg = (f"<net dev=\"{dev_text}\"> is net {dev}; NCCL's net devices on this host, after "
                               f"NCCL_IB_HCA and NIC fusion, are {have}")
                    else:
                        msg = f"<net dev=\"{dev_text}\"> is net {dev}; NCCL will have {n_nets} net device(s) on this host"
                    out.append(_finding("NTH014", msg, path, el.line, el.column))
            if gpus and len(gpus) != len(indices) and id(graph) not in counted and (strtol(graph.get("id") or "0").value != 3):
                counted.add(id(graph))
                out.append(_finding("NTH013", f"channels list {len(gpus)} GPU(s); this host has {len(indices)}",
                                    path, ch.line, ch.column))
    return out


def _nccl_net_devs(node: Node, version: Version) -> dict[int, str] | None:
    """NCCL's NET devices on ``node`` (dev -> name) as its model numbers them: the IB plugin's view after the
    host's NCCL_IB_HCA, then NIC fusion at NCCL_NET_MERGE_LEVEL (a fused card's ports become one virtual dev with
    a new number, and the physical devs are gone), for the NCCL ``version`` the file is read for. None when the model
    cannot be built (then the plain count)."""
    from ncclctl.errors import InputError
    from ncclctl.nccl.predict import inputs_for_node, predict_xml
    from ncclctl.nccl.system import NET

    try:
        data, inputs, down = inputs_for_node(node, nodes=2, env={}, version=version, gdr="auto", source="host")
        pred = predict_xml(data, inputs=inputs, down=down, channels=False)
    except (InputError, RuntimeError):
        return None
    return {n.dev: n.name for n in pred.system.nodes[NET]}


def graph_file_in_etc(node: Node) -> list[Finding]:
    out = []
    for conf in node.facts.conf_files:
        if conf.path != "/etc/nccl.conf":
            continue
        for lineno, line in enumerate(conf.text.splitlines(), 1):
            if line.startswith("NCCL_GRAPH_FILE="):
                out.append(_finding("NTH015", f"/etc/nccl.conf sets {line.strip()}", conf.path, lineno))
    return out


__all__ = ["check_against_host", "check_rail_ids", "check_graph_against_host", "confirmed_values", "graph_file_in_etc"]
_ = gpu_gpu
