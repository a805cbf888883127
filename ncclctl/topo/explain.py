"""``ncclctl topo diff``: what each change between two topology files means to NCCL.

:func:`ncclctl.topo.show.diff` lists the changes (facts keyed by identity, blind to formatting and order). This
module adds, for each change, what it means (a CPU set moved between NUMA nodes, the bandwidth NCCL computes for a
link before and after, a device moved under another switch or NUMA node), and then what NCCL decides differently,
from NCCL's own model of each file (:mod:`ncclctl.topo.meaning`): the NETs each GPU uses with their path types and
GPUDirect RDMA, each NET's path to each GPU, GPU-to-GPU paths, and the NUMA node (CPU set) each GPU's rank binds
to. Output is deterministic: changes in key order, consequences sorted by bus id and name.
"""

from __future__ import annotations

from typing import Any

from ncclctl.topo.interpret import TopoView
from ncclctl.nccl.xml import XmlNode
from ncclctl.record import record


# --------------------------------------------------------------------------------------------------
# Where things are in one file


@record
class _Place:
    kind: str  # GPU, NIC, switch, device
    numa: str | None  # numaid of the enclosing <cpu>
    parent: str  # "switch ffff:ff:01.0" or "CPU (NUMA node 0)"


def _numaid(node: XmlNode) -> str | None:
    p = node.parent
    while p is not None and p.name != "cpu":
        p = p.parent
    return p.get("numaid") if p is not None else None


def _kind(pci: XmlNode) -> str:
    names = {c.name for c in pci.children}
    cls = pci.get("class") or ""
    if "gpu" in names or (not pci.children and cls.startswith("0x03")):
        return "GPU"
    if "nic" in names or (not pci.children and cls.startswith("0x02")):
        return "NIC"
    if "pci" in names:
        return "switch"
    return "device"


def _parent(node: XmlNode) -> str:
    from ncclctl.topo.show import nearest_parent

    p = nearest_parent(node)
    if p is None:
        return "nothing"
    if p.name == "pci":
        return f"switch {p.get('busid')}"
    return f"the CPU of NUMA node {p.get('numaid')}"


def _places(view: TopoView) -> dict[str, _Place]:
    """``pci BUSID`` and ``net NAME`` -> where it sits."""
    out: dict[str, _Place] = {}
    root = view.result.root
    stack = [root] if root is not None else []
    while stack:
        el = stack.pop()
        stack.extend(el.children)
        if el.name == "pci" and el.get("busid") is not None:
            out[f"pci {el.get('busid')}"] = _Place(_kind(el), _numaid(el), _parent(el))
        elif el.name == "net" and el.get("name") is not None:
            nic = el.parent
            pci = nic.parent if nic is not None else None
            if pci is not None and pci.name == "pci":
                where = f"PCI device {pci.get('busid')} (under {_parent(pci)})"
            else:
                where = f"the CPU of NUMA node {_numaid(el)}"
            out[f"net {el.get('name')}"] = _Place("NIC", _numaid(el), where)
    return out


def _gpus_under(view: TopoView, numaid: str) -> list[str]:
    """Bus ids of the GPUs (given or left to NCCL) under ``<cpu numaid>``."""
    out = []
    for key, place in _places(view).items():
        if key.startswith("pci ") and place.kind == "GPU" and place.numa == numaid:
            out.append(key[4:])
    return sorted(out)


def _cpus(mask_text: str | None) -> tuple[str, int] | None:
    """``0000ffff,0000ffff`` -> ("0-15,32-47", 32); None when NCCL cannot read it as a CPU mask."""
    from ncclctl.sysfs import format_cpulist, parse_cpumap

    if mask_text is None:
        return None
    try:
        mask = parse_cpumap(mask_text)
    except ValueError:
        return None
    cpus = [i for i in range(mask.bit_length()) if mask >> i & 1]
    return format_cpulist(cpus) or "none", len(cpus)


def _cpus_text(mask_text: str | None) -> str:
    got = _cpus(mask_text)
    if mask_text is None:
        return "no affinity (NCCL binds no CPU set)"
    if got is None:
        return f"{mask_text!r} (not a CPU mask)"
    return f"CPUs {got[0]} ({got[1]})"


def _link_text(speed: str | None, width: str | None) -> str:
    from ncclctl.nccl.build import pci_link_bw
    from ncclctl.nccl.params import strtol

    if speed is None or width is None:
        return "left to NCCL (read from sysfs; Gen3 x16 for a bus id the host does not have)"
    w = strtol(width).value or 0
    return f"{pci_link_bw(speed, w):g} GB/s (x{w or 16} {speed or 'unknown speed: Gen3'})"


# --------------------------------------------------------------------------------------------------
# One change


def _meaning(c: dict, a: TopoView, b: TopoView, pa: dict[str, _Place], pb: dict[str, _Place]) -> list[str]:
    what: str = c["what"]
    kind = c["change"]
    out: list[str] = []
    if what.startswith("cpu numaid="):
        numa = what.split("=", 1)[1]
        if kind == "changed" and c["attr"] == "affinity":
            line = f"NUMA node {numa}: {_cpus_text(c['from'])} -> {_cpus_text(c['to'])}"
            had = [cpu.attrs.get("affinity") for cpu in a.cpus if str(cpu.numaid) != numa]
            others = [str(cpu.numaid) for cpu in a.cpus if str(cpu.numaid) != numa and cpu.attrs.get("affinity") == c["to"]]
            if c["to"] is not None and c["to"] in had and others:
                line += f", the CPU set NUMA node {', '.join(others)} had"
            out.append(line)
            gpus = _gpus_under(b, numa)
            if gpus:
                out.append(f"the ranks of the GPUs under it ({', '.join(gpus)}) bind their threads to these CPUs")
        elif kind == "changed" and c["attr"] in ("arch", "vendor", "familyid", "modelid"):
            out.append(f"NUMA node {numa}: the CPU type NCCL reads sets its inter-socket (SYS) bandwidth and P2P "
                       "level (see the paths below)")
        elif kind in ("added", "removed"):
            out.append(f"NUMA node {numa} {kind}" + (": its devices move with it" if kind == "removed" else ""))
        return out
    if what.startswith("pci "):
        busid = what[4:]
        place = (pb if kind != "removed" else pa).get(what)
        label = f"{place.kind} {busid}" if place else busid
        if kind == "changed":
            attr = c["attr"]
            if attr in ("link_speed", "link_width"):
                before, after = _attrs(a, busid), _attrs(b, busid)
                out.append(f"the link above {label}: NCCL computes "
                           f"{_link_text(before.get('link_speed'), before.get('link_width'))} -> "
                           f"{_link_text(after.get('link_speed'), after.get('link_width'))}")
            elif attr == "(parent)":
                old, new = pa.get(what), pb.get(what)
                line = f"{label} moved from under {old.parent if old else c['from']} to under {new.parent if new else c['to']}"
                if old and new and old.numa != new.numa:
                    line += f": NUMA node {old.numa} -> {new.numa}"
                out.append(line)
            elif attr == "class":
                out.append(f"NCCL now reads {busid} as {_class_name(c['to'])} (was {_class_name(c['from'])})")
        elif place is not None:
            where = f"under {place.parent}"
            out.append(f"{label} {kind} {where}" + (f" (NUMA node {place.numa})" if place.numa is not None else ""))
        return out
    if what.startswith("net "):
        name = what[4:]
        if kind == "changed" and c["attr"] == "speed":
            out.append(f"NCCL's bandwidth for {name}: {_net_bw(c['from'])} -> {_net_bw(c['to'])}")
        elif kind == "changed" and c["attr"] == "(parent)":
            old, new = pa.get(what), pb.get(what)
            line = f"NIC {name} moved from under {old.parent if old else c['from']} to under {new.parent if new else c['to']}"
            if old and new and old.numa != new.numa:
                line += f": NUMA node {old.numa} -> {new.numa}"
            out.append(line + " (its path to each GPU is below)")
        elif kind == "changed" and c["attr"] == "gdr":
            out.append(f"GPUDirect RDMA for {name} forced {'off' if (c['to'] or '1').strip() == '0' else 'on'} by the file"
                       if c["to"] is not None else f"GPUDirect RDMA for {name} left to the net plugin")
        elif kind in ("added", "removed"):
            out.append(f"network device {name} {kind}")
        return out
    if what.startswith("nvlink "):
        src, _, dst = what[7:].partition(" -> ")
        if kind == "changed" and c["attr"] == "count":
            out.append(f"NVLinks {src} -> {dst}: {c['from']} -> {c['to']}")
        elif kind in ("added", "removed"):
            self_target = src == dst
            out.append(f"NVLink {src} -> {dst} {kind}" + (" (it targets the GPU itself)" if self_target else ""))
        return out
    if what.startswith("gpu at ") and kind == "changed":
        busid = what[7:]
        attr = c["attr"]
        if attr == "dev":
            out.append(f"GPU {busid}: NVML index {c['from']} -> {c['to']} (NCCL uses the file's value as is)")
        elif attr == "sm":
            out.append(f"GPU {busid}: compute capability {c['from']} -> {c['to']} (NVLink bandwidth and tuning)")
        elif attr == "gdr":
            # <gpu gdr> is the GPU's own answer to CUDA's GPUDirect RDMA attribute: NCCL's dumps record it (gdr="1" on
            # every GPU that supports it) and a file that sets it replaces what the reading rank's CUDA says.
            to = (c["to"] or "").strip() if c["to"] is not None else None
            out.append(f"GPU {busid}: " + (
                "GPUDirect RDMA left to the reading rank's CUDA (the GPU's own support)" if to is None else
                "the GPU's GPUDirect RDMA support set to off (CUDA's own answer is replaced)" if to == "0" else
                f"the GPU's GPUDirect RDMA support set to {to} (what NCCL's own dump records on a GPU that has it; "
                "whether a NIC is used with GPUDirect RDMA is decided per GPU-NIC pair)"))
    return out


def _attrs(view: TopoView, busid: str) -> dict[str, str]:
    root = view.result.root
    stack = [root] if root is not None else []
    while stack:
        el = stack.pop()
        if el.name == "pci" and el.get("busid") == busid:
            return {k: v for k, v in el.attrs if k}
        stack.extend(el.children)
    return {}


def _class_name(cls: str | None) -> str:
    if cls is None:
        return "a class read from sysfs"
    for key, name in (("0x060400", "a PCI switch"), ("0x068000", "an NVSwitch"), ("0x068001", "a CPU"),
                      ("0x03", "a GPU"), ("0x02", "a NIC")):
        if cls.startswith(key):
            return f"{name} ({cls})"
    return f"a PCI switch ({cls}, not in NCCL's dictionary)"


def _net_bw(speed: str | None) -> str:
    from ncclctl.nccl.params import strtol

    if speed is None:
        return "the plugin's speed"
    mbps = strtol(speed).value or 0
    if mbps <= 0:
        mbps = 10000
    return f"{mbps / 8000:g} GB/s ({mbps} Mb/s)"


def _swaps(a: TopoView, b: TopoView) -> list[str]:
    """NUMA nodes whose CPU sets were exchanged (the same sets, assigned to other nodes)."""
    before = {str(c.numaid): c.attrs.get("affinity") for c in a.cpus}
    after = {str(c.numaid): c.attrs.get("affinity") for c in b.cpus}
    moved = sorted(n for n in before if n in after and before[n] != after[n])
    if len(moved) < 2 or sorted(str(before[n]) for n in moved) != sorted(str(after[n]) for n in moved):
        return []
    return [f"NUMA nodes {', '.join(moved)} exchanged their CPU sets: the ranks of their GPUs bind to the other "
            "nodes' CPUs (memory and interrupts stay where they were)"]


# --------------------------------------------------------------------------------------------------
# What NCCL decides differently


def _use(u) -> dict:
    return {"net": u.net, "path": u.path, "bw": u.bw, "gdr": u.gdr}


def _use_text(lst: list[dict]) -> str:
    if not lst:
        return "no NET"
    return ", ".join(f"{u['net']} {u['path']}/{u['bw']:g} GDR {'on' if u['gdr'] else 'off'}" for u in lst)


def _model_side(view: TopoView, version) -> tuple[Any, list[str], str | None]:
    from ncclctl.topo.meaning import model

    root = view.result.root
    if root is None:
        return None, [], "no <system>"
    pred, comp, why = model(root, version=version)
    return pred, comp.assumed, why


def consequences(a: TopoView, b: TopoView, version) -> dict:
    """NCCL's decisions for each file (a job of two such nodes, GPUDirect RDMA available), and what differs."""
    from ncclctl.nccl import system as s
    from ncclctl.nccl.paths import get_local_cpu
    from ncclctl.topo.meaning import gpu_uses

    pa, assumed_a, why_a = _model_side(a, version)
    pb, assumed_b, why_b = _model_side(b, version)
    doc: dict[str, Any] = {"model": {"old": {"assumed": assumed_a, "unavailable": why_a},
                                     "new": {"assumed": assumed_b, "unavailable": why_b}},
                           "gpu_nets": [], "net_paths": [], "gpu_paths": [], "gpu_cpus": [], "devices": []}
    if pa is None or pb is None:
        return doc

    def index(pred) -> dict[str, Any]:
        sysm = pred.system
        gpus = sysm.nodes[s.GPU]
        nets = sysm.nodes[s.NET]
        cpus = sysm.nodes[s.CPU]
        out: dict[str, Any] = {"uses": gpu_uses(pred), "net": {}, "gpu": {}, "cpu": {}}
        for gi, g in enumerate(gpus):
            for ni, n in enumerate(nets):
                p = g.paths[s.NET][ni]
                out["net"][(n.name, g.label)] = (s.PATH_TYPE_STR[p.type], round(p.bw, 2))
            for hi, h in enumerate(gpus):
                if g.label < h.label:
                    p = g.paths[s.GPU][hi]
                    out["gpu"][(g.label, h.label)] = (s.PATH_TYPE_STR[p.type], round(p.bw, 2))
            c = get_local_cpu(sysm, gi)
            if c >= 0:
                out["cpu"][g.label] = (cpus[c].label.replace("numa ", ""), cpus[c].affinity)
        return out

    ia, ib = index(pa), index(pb)
    for busid in sorted(set(ia["uses"]) | set(ib["uses"])):
        if busid not in ia["uses"] or busid not in ib["uses"]:
            doc["devices"].append({"gpu": busid, "only_in": "old" if busid in ia["uses"] else "new"})
            continue
        before = [_use(u) for u in ia["uses"][busid][1]]
        after = [_use(u) for u in ib["uses"][busid][1]]
        if before != after:
            doc["gpu_nets"].append({"gpu": busid, "dev": ib["uses"][busid][0], "before": before, "after": after})
    nets_a = {k[0] for k in ia["net"]}
    nets_b = {k[0] for k in ib["net"]}
    for name in sorted(nets_a ^ nets_b):
        doc["devices"].append({"net": name, "only_in": "old" if name in nets_a else "new"})
    for key in sorted(set(ia["net"]) & set(ib["net"])):
        if ia["net"][key] != ib["net"][key]:
            doc["net_paths"].append({"net": key[0], "gpu": key[1], "before": list(ia["net"][key]),
                                     "after": list(ib["net"][key])})
    for key in sorted(set(ia["gpu"]) & set(ib["gpu"])):
        if ia["gpu"][key] != ib["gpu"][key]:
            doc["gpu_paths"].append({"gpus": list(key), "before": list(ia["gpu"][key]), "after": list(ib["gpu"][key])})
    for busid in sorted(set(ia["cpu"]) & set(ib["cpu"])):
        if ia["cpu"][busid] != ib["cpu"][busid]:
            (na, ma), (nb, mb) = ia["cpu"][busid], ib["cpu"][busid]
            doc["gpu_cpus"].append({"gpu": busid, "before": {"numa": na, "affinity": ma},
                                    "after": {"numa": nb, "affinity": mb}})
    return doc


def explain(a: TopoView, b: TopoView, changes: list[dict], version) -> tuple[list[dict], list[str], dict]:
    """The changes with their ``meaning`` (list of sentences), file-level notes, and :func:`consequences`."""
    pa, pb = _places(a), _places(b)
    out = []
    said: set[tuple[str, str]] = set()
    for c in changes:
        meaning = []
        for m in _meaning(c, a, b, pa, pb):
            if (c["what"], m) not in said:  # link_speed and link_width of one link: one sentence
                said.add((c["what"], m))
                meaning.append(m)
        out.append({**c, "meaning": meaning})
    notes = _swaps(a, b)
    cons = consequences(a, b, version) if changes else {}
    return out, notes, cons


def consequence_lines(cons: dict) -> list[str]:
    """The human lines of :func:`consequences`."""
    lines: list[str] = []
    for side in ("old", "new"):
        m = cons.get("model", {}).get(side, {})
        if m.get("unavailable"):
            lines.append(f"  NCCL's model of the {side.upper()} file: not computed ({m['unavailable']})")
    for d in cons.get("devices", []):
        what = f"GPU {d['gpu']}" if "gpu" in d else f"NET {d['net']}"
        lines.append(f"  {what}: only in the {d['only_in'].upper()} file")
    for g in cons.get("gpu_nets", []):
        lines.append(f"  GPU{g['dev']} ({g['gpu']}) uses {_use_text(g['before'])} -> {_use_text(g['after'])}")
    def path(p: list) -> str:
        return f"{p[0]}/{p[1]:g}"

    # one line per NET (and per GPU for GPU pairs), GPUs with the same change grouped
    grouped: dict[tuple[str, str], dict[tuple[str, str], list[str]]] = {}
    for n in cons.get("net_paths", []):
        grouped.setdefault(("net", n["net"]), {}).setdefault((path(n["before"]), path(n["after"])), []).append(n["gpu"])
    for p in cons.get("gpu_paths", []):
        grouped.setdefault(("gpu", p["gpus"][0]), {}).setdefault((path(p["before"]), path(p["after"])), []).append(
            p["gpus"][1])
    for (kind, name), changes in sorted(grouped.items()):
        parts = [f"{', '.join(gpus)}: {before} -> {after}" for (before, after), gpus in sorted(changes.items(),
                                                                                             key=lambda kv: kv[1])]
        head = f"  {name} to GPU " if kind == "net" else f"  GPU {name} <-> "
        lines.append(head + "; ".join(parts))
    for c in cons.get("gpu_cpus", []):
        lines.append(f"  GPU {c['gpu']} binds to NUMA node {c['before']['numa']} {_cpus_text(c['before']['affinity'] or None)}"
                     f" -> NUMA node {c['after']['numa']} {_cpus_text(c['after']['affinity'] or None)}")
    if lines:
        assumed = sorted(set(cons["model"]["old"]["assumed"]) | set(cons["model"]["new"]["assumed"]))
        head = "What NCCL decides differently (its model of each file, 2 nodes, GPUDirect RDMA available"
        head += ("; assumed as NCCL finds them on the host: " + "; ".join(assumed) + "):") if assumed else "):"
        lines.insert(0, head)
    return lines
