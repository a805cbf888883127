"""What NCCL understands from a topology file: CPUs, switches, GPUs, NICs/nets and links (pure).

Built on :mod:`ncclctl.nccl.xml` (the tree NCCL keeps). The view follows ``ncclTopoAddPci`` (nccl-format.md
§2.2): a ``<pci>`` holding a ``<gpu>`` is a GPU; one holding a ``<nic>`` is a NIC (its other children ignored);
a bridge-class ``<pci>`` with children is a switch. Path types between GPUs and NICs are computed on the file's
own tree, in the same vocabulary as the probe: NV#, PIX, PXB, PHB (same CPU), SYS (different CPUs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ncclctl.errors import InputError
from ncclctl.nccl.version import DEFAULT
from ncclctl.nccl.xml import ParseResult, XmlNode, parse_nccl_xml

NVSWITCH_CLASS = "0x068000"


@dataclass
class FileGpu:
    dev: int | None
    busid: str
    sm: int | None
    numaid: int | None
    chain: tuple[XmlNode, ...]  # <pci> ancestors from the top, the GPU's own <pci> last
    node: XmlNode
    nvlinks: list[tuple[str | None, int, str | None]] = field(default_factory=list)  # (target, count, tclass)
    c2c: tuple[int, int] | None = None


@dataclass
class FileNet:
    name: str | None
    busid: str
    numaid: int | None
    chain: tuple[XmlNode, ...]
    node: XmlNode
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass
class FileCpu:
    numaid: int | None
    attrs: dict[str, str]
    node: XmlNode


@dataclass
class TopoView:
    result: ParseResult
    cpus: list[FileCpu]
    gpus: list[FileGpu]
    nets: list[FileNet]
    switches: list[XmlNode]

    def gpu_by_busid(self, busid: str) -> FileGpu | None:
        return next((g for g in self.gpus if g.busid == busid), None)


def _int(v: str | None) -> int | None:
    if v is None:
        return None
    try:
        return int(v.strip(), 0)
    except ValueError:
        try:
            return int(v.strip(), 10)
        except ValueError:
            return None


def load_view(data: bytes, *, path: str, nccl_version: object = DEFAULT) -> TopoView:
    result = parse_nccl_xml(data, kind="topology", nccl_version=nccl_version, path=path)
    if result.fatal is not None:
        d = result.fatal
        raise InputError(f"NCCL cannot read this file: {d.message}", path=path, line=d.line, column=d.column,
                         fix="run 'ncclctl topo validate' for every problem and its fix")
    root = result.root
    if root is None or root.name != "system":
        raise InputError("no <system> root: NCCL would ignore this file", path=path,
                         fix='the root element must be <system version="1">')
    return interpret(result)


def interpret(result: ParseResult) -> TopoView:
    cpus: list[FileCpu] = []
    gpus: list[FileGpu] = []
    nets: list[FileNet] = []
    switches: list[XmlNode] = []
    root = result.root
    if root is None:
        return TopoView(result, cpus, gpus, nets, switches)
    for cpu in root.children:
        if cpu.name != "cpu":
            continue
        numaid = _int(cpu.get("numaid"))
        cpus.append(FileCpu(numaid=numaid, attrs=dict(cpu.attrs), node=cpu))
        stack: list[tuple[XmlNode, tuple[XmlNode, ...]]] = [(c, ()) for c in reversed(cpu.children)]
        while stack:
            el, chain = stack.pop()
            if el.name == "nic":  # NIC directly under a CPU
                for net in el.children:
                    if net.name == "net":
                        nets.append(FileNet(net.get("name"), "", numaid, chain, net, dict(net.attrs)))
                continue
            if el.name != "pci":
                continue
            here = chain + (el,)
            gpu = next((c for c in el.children if c.name == "gpu"), None)
            nic = next((c for c in el.children if c.name == "nic"), None)
            if gpu is not None:
                g = FileGpu(dev=_int(gpu.get("dev")), busid=el.get("busid") or "", sm=_int(gpu.get("sm")),
                            numaid=numaid, chain=here, node=gpu)
                for link in gpu.children:
                    if link.name == "nvlink":
                        g.nvlinks.append((link.get("target"), _int(link.get("count")) or 0, link.get("tclass")))
                    elif link.name == "c2c":
                        g.c2c = (_int(link.get("bw")) or 0, _int(link.get("count")) or 0)
                gpus.append(g)
                continue
            if nic is not None:
                for net in nic.children:
                    if net.name == "net":
                        nets.append(FileNet(net.get("name"), el.get("busid") or "", numaid, here, net, dict(net.attrs)))
                continue
            if any(c.name == "pci" for c in el.children):
                switches.append(el)
            for c in reversed(el.children):
                stack.append((c, here))
    return TopoView(result, cpus, gpus, nets, switches)


def path_type(a: tuple[XmlNode, ...], numa_a: int | None, b: tuple[XmlNode, ...], numa_b: int | None,
              same_cpu: bool) -> str:
    """PIX/PXB/PHB/SYS between two endpoints of the file (chains of <pci> from the CPU down)."""
    if not same_cpu:
        return "SYS"
    common = 0
    while common < min(len(a), len(b)) and a[common] is b[common]:
        common += 1
    if common == 0:
        return "PHB"
    # Switches crossed: the common switch plus every switch below it on either side.
    crossed = 1 + max(0, len(a) - 1 - common) + max(0, len(b) - 1 - common)
    return "PIX" if crossed <= 1 else "PXB"


def _cpu_of(view: TopoView, chain: tuple[XmlNode, ...], node: XmlNode) -> XmlNode | None:
    top = chain[0] if chain else node
    p = top.parent
    while p is not None and p.name != "cpu":
        p = p.parent
    return p


def gpu_gpu(view: TopoView, a: FileGpu, b: FileGpu) -> str:
    if a is b:
        return "X"
    direct = sum(c for t, c, _ in a.nvlinks if t and _norm(t) == _norm(b.busid))
    if direct:
        return f"NV{direct}"
    sa = sum(c for t, c, tc in a.nvlinks if (tc or "").startswith(NVSWITCH_CLASS))
    sb = sum(c for t, c, tc in b.nvlinks if (tc or "").startswith(NVSWITCH_CLASS))
    if sa and sb:
        return f"NV{min(sa, sb)}"
    same = _cpu_of(view, a.chain, a.node) is _cpu_of(view, b.chain, b.node)
    return path_type(a.chain, a.numaid, b.chain, b.numaid, same)


def gpu_net(view: TopoView, g: FileGpu, n: FileNet) -> str:
    same = _cpu_of(view, g.chain, g.node) is _cpu_of(view, n.chain, n.node)
    return path_type(g.chain, g.numaid, n.chain, n.numaid, same)


def _norm(busid: str) -> int:
    digits = "".join(ch for ch in busid.lower() if ch in "0123456789abcdef")
    return int(digits[:16] or "0", 16)


def matrix(view: TopoView) -> tuple[list[str], list[list[str]]]:
    gpus = sorted(view.gpus, key=lambda g: (g.dev if g.dev is not None else 1 << 30, g.busid))
    labels = [f"GPU{g.dev}" if g.dev is not None else f"GPU@{g.busid}" for g in gpus]
    labels += [n.name or f"net@{n.busid}" for n in view.nets]
    rows: list[list[str]] = []
    for g in gpus:
        rows.append([gpu_gpu(view, g, h) for h in gpus] + [gpu_net(view, g, n) for n in view.nets])
    for n in view.nets:
        row = [gpu_net(view, g, n) for g in gpus]
        for m in view.nets:
            if m is n:
                row.append("X")
            else:
                same = _cpu_of(view, n.chain, n.node) is _cpu_of(view, m.chain, m.node)
                row.append(path_type(n.chain, n.numaid, m.chain, m.numaid, same))
        rows.append(row)
    return labels, rows
