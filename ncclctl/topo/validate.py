"""Validate NCCL topology (``NCCL_TOPO_FILE``) and graph (``NCCL_GRAPH_FILE``) XML files.

The file is first read with :mod:`ncclctl.nccl.xml`, which reproduces NCCL's own reader: every fatal
construct becomes an ``NTX`` error finding. If NCCL would read the file, the tree is then checked against
what NCCL does with it (``NTS`` topology rules here, ``NTG`` graph rules in :mod:`ncclctl.topo.graphfile`,
``NTV`` rules for the target NCCL version in both; what they share is :mod:`ncclctl.topo.checking`). Rule ids,
severities and fixes are rows of the rule registry (:mod:`ncclctl.registry.file_rules`); section numbers refer to
the reference ``nccl-format.md``.

Nothing here raises for bad content: a file always yields findings. Only input that is not bytes, an
unreadable path, or an invalid version raise :class:`~ncclctl.errors.InputError`.
"""

from __future__ import annotations

import re
from pathlib import Path

from ncclctl.errors import InputError
from ncclctl.findings import Finding
from ncclctl.nccl.params import strtol, strtoul
from ncclctl.nccl.changes import NVLINK_TCLASS_REQUIRED_SINCE
from ncclctl.nccl.version import DEFAULT, Version, parse
from ncclctl.nccl.xml import Kind, ParseResult, XmlNode, parse_nccl_xml, show_text, sniff_kind
from ncclctl.topo.checking import Ctx, check_roots, kv_lookup, lexical, quote
from ncclctl.topo.graphfile import validate_graph

__all__ = ["validate_topology", "validate_file", "validate_bytes", "skeleton_elements", "without_repeated_xsd"]

# --------------------------------------------------------------------------------------------------
# C library number parsing, as NCCL uses it (§1.4)

_HEX = "0123456789abcdefABCDEF"


def busid_to_int(busid: str) -> int:
    """``misc/utils.cc:busIdToInt64``: hex digits, skipping ':' and '.', up to 16 digits."""
    out: list[str] = []
    for ch in busid:
        if len(out) == 16:
            break
        if ch in ".:":
            continue
        if ch in _HEX:
            out.append(ch)
        else:
            break
    if not out:
        return 0
    return min(int("".join(out), 16), 2**63 - 1)


# --------------------------------------------------------------------------------------------------
# NCCL dictionaries per version

_CANONICAL_BUSID = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]")
_BUSID_PARTS = re.compile(r"([0-9a-fA-F]+):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-9a-fA-F])")
KNOWN_LINK_SPEEDS = ("2.5 GT/s", "5 GT/s", "8 GT/s", "16 GT/s", "32 GT/s", "2.5 GT/s PCIe", "5.0 GT/s PCIe",
                     "8.0 GT/s PCIe", "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe")
_IB_NAME = re.compile(r"(mlx\d+_|bnxt_re|irdma|ionic|qedr|hns_|hns\d|erdma|cxgb)")


def pci_gen_keys(v: Version) -> tuple[str, ...]:
    keys = ["2.5 GT/s", "5 GT/s", "8 GT/s", "16 GT/s"]
    if v >= Version(2, 12, 12):
        keys.append("32 GT/s")
    if v >= Version(2, 11, 0):
        keys += ["2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe", "16.0 GT/s PCIe", "32.0 GT/s PCIe",
                 "64.0 GT/s PCIe"]
    return tuple(keys)


def pci_class_keys(v: Version) -> dict[str, str]:
    keys = {"0x060400": "PCI"}
    if v >= Version(2, 28, 0):
        keys["0x080100"] = "PCI"
    keys.update({"0x068000": "NVS", "0x068001": "CPU", "0x03": "GPU", "0x02": "NIC"})
    return keys


def pci_class_type(cls: str, v: Version) -> str:
    keys = pci_class_keys(v)
    k = kv_lookup(cls, keys)
    return "PCI" if k is None else keys[k]


ARCH_KEYS = ("x86_64", "arm64", "ppc64")
VENDOR_KEYS = {"GenuineIntel": "intel", "AuthenticAMD": "amd", "CentaurHauls": "zhaoxin", "  Shanghai  ": "zhaoxin"}

# Attributes NCCL may add to a <net> itself, with the first version that adds them [inferred from §2.3.7].
_ALWAYS = Version(0, 0, 0)
_NET_ADDED = (("keep", Version(2, 8, 0)), ("dev", _ALWAYS), ("speed", _ALWAYS), ("port", _ALWAYS), ("guid", _ALWAYS),
              ("maxconn", _ALWAYS), ("gdr", _ALWAYS), ("coll", _ALWAYS), ("latency", Version(2, 12, 0)),
              ("net", Version(2, 24, 0)), ("gin", Version(2, 29, 7)), ("rail", Version(2, 30, 7)),
              ("plane", Version(2, 30, 7)), ("rma", Version(2, 30, 7)))

# Attributes a version does not know: (element, attribute, first version that reads it).
_TOPO_ATTR_SINCE = (("net", "latency", Version(2, 12, 0)), ("net", "gin", Version(2, 29, 7)),
                    ("net", "rail", Version(2, 30, 7)), ("net", "plane", Version(2, 30, 7)),
                    ("net", "rma", Version(2, 30, 7)), ("gpu", "mlopart", Version(2, 30, 7)),
                    ("net", "net", Version(2, 24, 0)))


def _where(node: XmlNode) -> str:
    busid = node.get("busid")
    if node.name == "pci" and busid is not None:
        return f"<pci busid={quote(busid)}>"
    if node.name == "cpu" and node.get("numaid") is not None:
        return f"<cpu numaid={quote(node.get('numaid'))}>"
    if node.name == "net" and node.get("name") is not None:
        return f"<net name={quote(node.get('name'))}>"
    if node.name == "gpu" and node.parent is not None and node.parent.get("busid") is not None:
        return f"<gpu> of {quote(node.parent.get('busid'))}"
    return f"<{node.name}>"


# --------------------------------------------------------------------------------------------------
# Topology


def validate_topology(data: bytes, *, path: str, nccl_version: object = DEFAULT,
                      confirmed: frozenset[tuple[int, int, str]] = frozenset()) -> list[Finding]:
    """Findings for ``data`` used as ``NCCL_TOPO_FILE`` by NCCL ``nccl_version``. ``confirmed``: (line, column,
    attribute) of init-only values a host check found equal to what NCCL would detect on that host
    (:func:`ncclctl.topo.hostcheck.confirmed_values`); NTS025 does not report them."""
    version = parse(nccl_version)
    res = parse_nccl_xml(data, kind="topology", nccl_version=version, path=path)
    return _validate_topology_result(res, path, confirmed)


def _validate_topology_result(res: ParseResult, path: str,
                              confirmed: frozenset[tuple[int, int, str]] = frozenset()) -> list[Finding]:
    ctx = Ctx(path, res.version, confirmed)
    if lexical(ctx, res):
        _after_fatal(ctx, res, confirmed)
        return ctx.result()
    check_roots(ctx, res, "system", "NTS001", "NTS002")
    _check_topo_ignored(ctx, res)
    if res.root is not None:
        _TopoChecks(ctx, res.root, res).run()
        if res.root.name == "system" and not any(f.severity.value == "error" for f in ctx.findings):
            from ncclctl.topo.meaning import flat_layout  # NCCL's model: only for a file NCCL would load

            for rule_id, message, node in flat_layout(res):
                ctx.add(rule_id, message, node)
    return ctx.result()


#: Rules that need the whole file (a peer, a device further down, the element count): not run on the part of a
#: file read before a fatal error.
_WHOLE_FILE = frozenset({"NTS001", "NTS002", "NTS007", "NTS008", "NTS010", "NTS011", "NTS019", "NTS020", "NTS021",
                         "NTS051", "NTS052", "NTS053"})
AFTER_FATAL = "after the fatal {rule} at line {line}, in the part NCCL read before it: "


def _after_fatal(ctx: Ctx, res: ParseResult, confirmed: frozenset[tuple[int, int, str]]) -> None:
    """The other findings of a file NCCL stops reading (a truncated file, a syntax error): the checks run on the
    elements read before the fatal error, except those that need the whole file; each message starts with
    :data:`AFTER_FATAL`."""
    fatal = res.fatal
    if fatal is None or res.root is None or res.root.name != "system":
        return
    sub = Ctx(ctx.path, ctx.version, confirmed)
    _TopoChecks(sub, res.root, res, complete=False).run()
    prefix = AFTER_FATAL.format(rule=fatal.rule, line=fatal.line)
    for f in sub.findings:
        if f.rule in _WHOLE_FILE or f.rule.startswith("NTX"):
            continue
        ctx.findings.append(Finding(f.rule, f.severity, prefix + f.message, f.subject, f.line, f.column, f.fix,
                                    f.evidence))


def _check_topo_ignored(ctx: Ctx, res: ParseResult) -> None:
    for ig in res.ignored:
        where = f"under <{ig.parent_name}>" if ig.parent_name else "at top level"
        name = show_text(ig.name)
        if ig.reason in ("wrong-root", "stray-close"):
            continue
        if ig.reason == "version":
            since = "2.19" if ig.name == "c2c" else "2.22"
            ctx.add("NTV001", f"<{name}> is read only from NCCL {since}: NCCL {ctx.version} ignores "
                              "it with its subtree", ig)
        elif ig.reason == "unknown":
            extra = (" (there is no <nvs> element: NVSwitches are <nvlink tclass=\"0x068000\"> targets)"
                     if ig.name == "nvs" else "")
            ctx.add("NTS005", f"unknown element <{name}> {where}: NCCL ignores it with its whole subtree{extra}",
                    ig)
        elif ig.reason == "leaf-child":
            ctx.add("NTS004", f"<{name}> inside <{ig.parent_name}>: <{ig.parent_name}> takes no children, "
                              "NCCL ignores it with its subtree", ig)
        elif ig.name == "gpu" and ig.parent_name == "cpu":
            ctx.add("NTS004", "<gpu> directly under <cpu> is ignored by NCCL's reader: the GPU is auto-detected "
                              "instead and this element (and its nvlinks) is lost; wrap it in its own "
                              "<pci busid=... class=\"0x0302..\">", ig)
        else:
            ctx.add("NTS004", f"<{name}> {where} is not where NCCL reads it: ignored with its whole subtree "
                              "(hierarchy: system > cpu > pci|nic; pci > pci|gpu|nic|pcilink; gpu > "
                              "nvlink|c2c; nic > net)", ig)


# --------------------------------------------------------------------------------------------------
# What NCCL computes from a <pci> (topo.cc:ncclTopoAddPci) and which elements it completes itself

#: kvDictPciGen: 100 Mb/s per lane.
_PCI_GEN_SPEED = {"2.5 GT/s": 15, "5 GT/s": 30, "8 GT/s": 60, "16 GT/s": 120, "32 GT/s": 240, "2.5 GT/s PCIe": 15,
                  "5.0 GT/s PCIe": 30, "8.0 GT/s PCIe": 60, "16.0 GT/s PCIe": 120, "32.0 GT/s PCIe": 240,
                  "64.0 GT/s PCIe": 480}
#: NCCL_TOPO_XML_MAX_NODES slots left free below which NTS051 warns.
BUDGET_MARGIN = 16
#: <nvlink> elements NCCL adds under a GPU it completes on an NVSwitch host (one per NVSwitch: 4 on HGX H100/H200).
NVLINKS_PER_GPU = 4
#: Attributes NCCL reads from sysfs for an element it completes (skeleton files).
_CPU_FILLED = ("affinity", "arch", "vendor")
_PCI_FILLED = ("class", "link_speed", "link_width")
#: NTS011 on a skeleton file: what NCCL 2.30.7 takes from the host for a <cpu> without its CPU type
#: (xml.cc:ncclTopoGetXmlFromCpu, topo.cc:ncclTopoAddCpu, topo.h's *_BW).
_SKELETON_CPU = ("NCCL takes them from the host that reads the file (the arch it was built for, cpuid's vendor, "
                 "family and model), so every host models its own CPU whatever machine the file was written for: "
                 "inter-socket (SYS) bandwidth 16 GB/s on an AMD host, 6, 10, 22 or 40 GB/s on Intel by model "
                 "(Broadwell, Skylake, Sapphire Rapids, Emerald Rapids and later), 6 GB/s on arm64, and the CPU's "
                 "P2P and GPUDirect RDMA defaults with it; releases that do not fill a <cpu> reached only through "
                 "its NICs fail with 'Attribute arch of node cpu not found' (aws-ofi-nccl#785, nccl#379)")


def pci_gen_speed(key: str | None, v: Version) -> int | None:
    """NCCL's per-lane speed (100 Mb/s) for a kvDictPciGen key, 60 (Gen3) for None from 2.7 on (the dictionary's
    fallback); None where NCCL 2.6 stops on an unknown string."""
    if key is not None:
        return _PCI_GEN_SPEED[key]
    return None if v < Version(2, 7, 0) else 60


def link_speed_value(speed: str, v: Version) -> int | None:
    """What NCCL ``v`` reads from ``link_speed`` (100 Mb/s per lane); 2.6 reads "" and "Unknown speed" as 8 GT/s."""
    if v < Version(2, 7, 0) and (speed == "" or speed.lower() == "unknown speed"):
        return 60
    return pci_gen_speed(kv_lookup(speed, pci_gen_keys(v)), v)


def link_bw(pci: XmlNode, v: Version) -> float | None:
    """The bandwidth (GB/s) NCCL gives the link from this <pci> to its parent: width * speed / 80, a width of 0
    counting as 16; None when an attribute is missing or NCCL cannot read the speed."""
    width_s, speed_s = pci.get("link_width"), pci.get("link_speed")
    if width_s is None or speed_s is None:
        return None
    speed = link_speed_value(speed_s, v)
    if speed is None:
        return None
    width = strtol(width_s).value
    if width == 0:
        width = 16
    return width * speed / 80.0


def _link_text(pci: XmlNode) -> str:
    return f"{pci.get('link_speed') or '?'} x{pci.get('link_width') or '?'}"


def _device_kind(pci: XmlNode, v: Version) -> str | None:
    """"GPU" or "NIC" for a <pci> that is (or, in a skeleton, NCCL will fill as) a GPU or NIC, else None."""
    names = {c.name for c in pci.children}
    if "gpu" in names:
        return "GPU"
    if "nic" in names:
        return "NIC"
    if "pci" in names:
        return None
    cls = pci.get("class")
    kind = pci_class_type(cls, v) if cls is not None else None
    return kind if kind in ("GPU", "NIC") else None


def skeleton_elements(root: XmlNode | None, v: Version = DEFAULT) -> int | None:
    """For a skeleton topology file (a <system> with only <cpu> and <pci> elements, at least one <pci>, as cloud
    providers ship): how many of its elements NCCL completes from the host (the <pci> leaves it puts a GPU or NIC
    in, and the <cpu>/<pci> elements whose attributes it reads from sysfs). None for any other file."""
    if root is None or root.name != "system":
        return None
    elements = [n for n in root.iter() if n is not root]
    if not elements or any(n.name not in ("cpu", "pci") for n in elements):
        return None
    if not any(n.name == "pci" for n in elements):
        return None
    left = [n for n in elements if _skeleton_completes(n)]
    return len(left)


def _skeleton_slot(n: XmlNode) -> bool:
    """A leaf <pci> NCCL can put a detected GPU or NIC in (found by bus id): no class, or a GPU or NIC class."""
    if n.name != "pci" or n.children:
        return False
    cls = n.get("class")
    return cls is None or pci_class_type(cls, DEFAULT) in ("GPU", "NIC")


def _skeleton_completes(n: XmlNode) -> bool:
    if n.name == "pci":
        return _skeleton_slot(n) or any(not n.has(a) for a in _PCI_FILLED)
    return any(not n.has(a) for a in _CPU_FILLED)


class _TopoChecks:
    def __init__(self, ctx: Ctx, root: XmlNode, res: ParseResult | None = None, *, complete: bool = True) -> None:
        self.ctx = ctx
        self.v = ctx.version
        self.root = root
        self.res = res
        #: False for the part of a file read before a fatal error: checks that need the whole file do not run.
        self.complete = complete
        self.nodes = list(root.iter())
        self.by_name: dict[str, list[XmlNode]] = {}
        for n in self.nodes:
            self.by_name.setdefault(n.name, []).append(n)
        self.gpu_chain: set[int] = set()
        self.nic_chain: set[int] = set()
        for g in self.by_name.get("gpu", []):
            self.gpu_chain.update(id(a) for a in g.ancestors())
        for nic in self.by_name.get("nic", []):
            self.nic_chain.update(id(a) for a in nic.ancestors())
        # Skeleton leaves: a GPU or NIC <pci> without <gpu>/<nic>, which NCCL fills from the host.
        self.device_chain: set[int] = set(self.gpu_chain) | self.nic_chain
        #: The <pci> of every GPU, with or without its <gpu> (skeleton files), and the elements above them.
        self.gpu_pcis = [p for p in self.by_name.get("pci", []) if _device_kind(p, self.v) == "GPU"]
        self.gpu_device_chain: set[int] = set(self.gpu_chain)
        for pci in self.by_name.get("pci", []):
            kind = _device_kind(pci, self.v)
            if kind is not None:
                self.device_chain.update(id(a) for a in pci.ancestors())
            if kind == "GPU":
                self.gpu_device_chain.update(id(a) for a in pci.ancestors())
        self.skeleton = skeleton_elements(root, self.v) is not None
        self._system: object = None  # NCCL's model of the file (built on demand): a System, or False

    def of(self, name: str) -> list[XmlNode]:
        return self.by_name.get(name, [])

    def run(self) -> None:
        self.check_common()
        self.check_cpus()
        self.check_affinity()
        self.check_pcis()
        self.check_caps()
        self.check_virtual_switch_ids()
        self.check_gpus()
        self.check_nvlinks()
        self.check_pcilinks()
        self.check_c2c()
        self.check_nets()
        if self.complete:
            self.check_budget()
            self.check_skeleton()

    # -- attributes on any element -----------------------------------------------------------------
    def check_common(self) -> None:
        ctx = self.ctx
        for n in self.nodes:
            if n.has("keep"):
                ctx.add("NTS022", f"{_where(n)} has keep={quote(n.get('keep'))}: with keep=\"1\" NCCL keeps the "
                                  "whole subtree untrimmed (stale ranks, devs and other GPUs' nodes survive)", n)
            if n.has("rank") and n.name != "gpu":
                ctx.add("NTS023", f"{_where(n)} has a rank attribute: ranks are set by NCCL at run time", n)
            for el, attr, since in _TOPO_ATTR_SINCE:
                if n.name == el and n.has(attr) and self.v < since:
                    ctx.add("NTV002", f"<{el}> attribute {attr} is read only from NCCL {since}: "
                                      f"NCCL {self.v} ignores it", n)

    # -- <cpu> -----------------------------------------------------------------------------------------
    def check_cpus(self) -> None:
        ctx, v = self.ctx, self.v
        seen_numa: dict[tuple, XmlNode] = {}
        for cpu in self.of("cpu"):
            numaid = cpu.get("numaid")
            if numaid is None:
                ctx.add("NTS009", "<cpu> without numaid: NCCL fails with 'Attribute numaid of node cpu not "
                                  "found' (or 'could not find CPU numa ID')", cpu)
            else:
                host = cpu.get("host_hash") if Version(2, 21, 0) <= v < Version(2, 27, 0) else None
                key = (strtol(numaid).value, host)
                if key in seen_numa:
                    first = seen_numa[key]
                    ctx.add("NTS015", f"numaid={quote(numaid)} is also used by the <cpu> at line {first.line}: both "
                                      "become CPU nodes with the same id", cpu)
                else:
                    seen_numa[key] = cpu
            host_hash = cpu.get("host_hash")
            if host_hash is not None and Version(2, 21, 0) <= v < Version(2, 27, 0):
                ctx.add("NTV007", f"host_hash={quote(host_hash)}: NCCL {v} uses it as-is (2.27+ "
                                  "overwrites it), so a value from another host splits this node into several "
                                  "systems", cpu)
            filled = id(cpu) in self.gpu_chain
            has_content = bool(cpu.children)
            nic_only = not filled and id(cpu) in self.nic_chain
            arch = cpu.get("arch")
            vendor = cpu.get("vendor")
            arch_key = kv_lookup(arch, ARCH_KEYS) if arch is not None else None
            if arch is not None and arch_key is None:
                if v < Version(2, 7, 0):
                    ctx.add("NTV008", f"arch={quote(arch)} is not in NCCL 2.6's dictionary: fatal", cpu)
                else:
                    hint = " (write arm64 for aarch64 hosts)" if arch.startswith("aarch64") else ""
                    ctx.add("NTS012", f"arch={quote(arch)} is not x86_64, arm64 or ppc64{hint}: NCCL maps it to 0, "
                                      "so CPU-dependent defaults (P2P level, SYS bandwidth 5000 GB/s) are wrong",
                            cpu)
            x86 = arch_key == "x86_64" or arch is None
            vendor_kind = None
            if vendor is not None:
                vk = kv_lookup(vendor, VENDOR_KEYS)
                vendor_kind = VENDOR_KEYS[vk] if vk else None
                if vk is None and x86:
                    if v < Version(2, 7, 0):
                        ctx.add("NTV008", f"vendor={quote(vendor)} is not in NCCL 2.6's dictionary: fatal", cpu)
                    else:
                        ctx.add("NTS013", f"vendor={quote(vendor)} is not a vendor NCCL knows: the x86 CPU gets "
                                          "vendor 0 and the inter-CPU (SYS) bandwidth becomes 5000 GB/s", cpu)
            required: list[str] = []
            if arch is None:
                required.append("arch")
            if arch_key == "x86_64" and vendor is None:
                required.append("vendor")
            if arch_key == "x86_64" and vendor_kind in ("intel", "zhaoxin"):
                required += [a for a in ("familyid", "modelid") if not cpu.has(a)]
            if required and nic_only:
                ctx.add("NTS010", f"{_where(cpu)} lacks {', '.join(required)} and has no GPU under it: NCCL does "
                                  "not fill a CPU reached only through NICs found in the file, and fails with "
                                  f"'Attribute {required[0]} of node cpu not found'", cpu)
                continue
            complete = ["affinity", "arch"]
            if arch is None or arch_key == "x86_64":
                complete += ["vendor", "familyid", "modelid"]
            missing = [a for a in complete if not cpu.has(a)]
            if id(cpu) in self.gpu_device_chain and numaid is not None and strtol(numaid).value < 0:
                missing = [a for a in missing if a != "affinity"]  # NTS046: NCCL binds no CPU set
            # What decides the CPU type NCCL models: arch, then (x86) vendor, then (Intel, Zhaoxin) family/model.
            cpu_type = list(required)
            if arch is None or (arch_key == "x86_64" and vendor is None):
                cpu_type += [a for a in ("vendor", "familyid", "modelid") if not cpu.has(a) and a not in cpu_type]
            if self.skeleton and cpu_type:
                ctx.add("NTS011", f"{_where(cpu)} lacks {', '.join(cpu_type)}: {_SKELETON_CPU}", cpu)
                continue
            if missing and (filled or has_content or nic_only) and not self.skeleton:
                how = ("NCCL fills them only on the ranks whose GPU is under this CPU, so per-rank XMLs differ "
                       "and fusion can duplicate the element" if filled else
                       "NCCL fills them only if it attaches a detected device here")
                if "affinity" in missing and not filled:
                    how += "; without affinity NCCL binds no CPU set"
                ctx.add("NTS011", f"{_where(cpu)} lacks {', '.join(missing)}: {how}", cpu)

    # -- <cpu affinity> (include/cpuset.h:ncclStrToCpuset, topo.cc:ncclTopoGetCpuAffinity) ----------------
    def check_affinity(self) -> None:
        from ncclctl.nccl.cpuset import STRTOK_READER, cpu_ranges, kernel_cpumap, misreadings, nccl_cpuset

        ctx, v = self.ctx, self.v
        #: per host_hash: (cpu, numaid, CPUs NCCL binds to)
        groups: dict[str | None, list[tuple[XmlNode, int, int]]] = {}
        for cpu in self.of("cpu"):
            numaid = cpu.get("numaid")
            numa = strtol(numaid).value if numaid is not None else None
            affinity = cpu.get("affinity")
            gpus = self._gpus_under(cpu)
            if affinity is None:
                if numa is not None and numa < 0 and id(cpu) in self.gpu_device_chain \
                        and (cpu.line, cpu.column, "affinity") not in ctx.confirmed:  # the host has no NUMA node either
                    ctx.add("NTS046", f"{_where(cpu)} has no affinity: NCCL reads it from /sys/devices/system/node/"
                                      f"node{numa & 0xFFFFFFFF}/cpumap, which does not exist, so the threads of "
                                      f"{gpus} are not bound to any CPU", cpu)
                continue
            mask = nccl_cpuset(affinity, v)
            why = misreadings(affinity, v)
            if why:
                intended = kernel_cpumap(affinity)
                meant = (f"; the cpumap means CPUs {cpu_ranges(intended)}" if intended is not None and intended != mask
                         else "")
                binds = (f"binds the threads of {gpus} to CPUs {cpu_ranges(mask)}" if mask else
                         f"reads no CPU from it and leaves the threads of {gpus} unbound")
                if v < STRTOK_READER and not misreadings(affinity, DEFAULT):
                    ctx.add("NTV012", f"{_where(cpu)} affinity={quote(affinity)}: {'; '.join(why)}: NCCL {v} {binds}"
                                      f"{meant} (NCCL 2.28 and later read it right)", cpu)
                else:
                    ctx.add("NTS043", f"{_where(cpu)} affinity={quote(affinity)}: {'; '.join(why)}: NCCL {v} {binds}"
                                      f"{meant}", cpu)
            elif mask == 0 and id(cpu) in self.gpu_device_chain:
                ctx.add("NTS046", f"{_where(cpu)} affinity={quote(affinity)} holds no CPU: NCCL logs 'Affinity for GPU "
                                  f"... is empty, ignoring' and does not bind the threads of {gpus}", cpu)
            if mask and numa is not None:
                host = cpu.get("host_hash")
                groups.setdefault(host, []).append((cpu, numa, mask))
        for members in groups.values():
            self._affinity_overlaps(members)
            self._affinity_order(members)

    def _gpus_under(self, node: XmlNode) -> str:
        busids = [b for p in self.gpu_pcis if any(a is node for a in p.ancestors()) and (b := p.get("busid"))]
        if not busids:
            return "its GPUs"
        return f"GPU {busids[0]}" if len(busids) == 1 else f"its {len(busids)} GPUs"

    def _affinity_overlaps(self, members: list[tuple[XmlNode, int, int]]) -> None:
        from ncclctl.nccl.cpuset import cpu_ranges

        for i, (cpu, numa, mask) in enumerate(members):
            for other, onuma, omask in members[:i]:
                if onuma == numa:
                    continue  # the same NUMA node twice is NTS015
                if omask == mask:
                    self.ctx.add("NTS044", f"{_where(cpu)} has the same affinity as <cpu numaid=\"{onuma}\"> at line "
                                           f"{other.line} (CPUs {cpu_ranges(mask)}): a CPU belongs to one NUMA node, "
                                           "so one of the masks is wrong and GPUs of both nodes bind to the same "
                                           "cores", cpu)
                    break
                if omask & mask:
                    self.ctx.add("NTS044", f"{_where(cpu)} shares CPUs {cpu_ranges(omask & mask)} with <cpu numaid="
                                           f"\"{onuma}\"> at line {other.line}: a CPU belongs to one NUMA node, so at "
                                           "least one of the masks is wrong", cpu)
                    break

    def _affinity_order(self, members: list[tuple[XmlNode, int, int]]) -> None:
        """NUMA nodes number their CPUs in order: node 0 holds the lowest CPU, node 1 the next group..."""
        from ncclctl.nccl.cpuset import cpu_ranges

        disjoint = [m for m in members if m[1] >= 0 and not any(o is not m and o[2] & m[2] for o in members)]
        by_numa = sorted(disjoint, key=lambda m: m[1])
        if len({m[1] for m in by_numa}) != len(by_numa) or len(by_numa) < 2:
            return
        lowest = [(m[2] & -m[2]).bit_length() - 1 for m in by_numa]
        by_cpu = sorted(range(len(by_numa)), key=lambda i: lowest[i])
        wrong = [i for i, j in enumerate(by_cpu) if i != j]
        if not wrong:
            return
        desc = ", ".join(f"{m[1]}: CPUs {cpu_ranges(m[2])}" for m in by_numa)
        if len(wrong) == 2:
            a, b = by_numa[wrong[0]], by_numa[wrong[1]]
            self.ctx.add("NTS045", f"{_where(b[0])} and <cpu numaid=\"{a[1]}\"> at line {a[0].line} look swapped: "
                                   f"NUMA node {a[1]} has CPUs {cpu_ranges(a[2])} and node {b[1]} CPUs "
                                   f"{cpu_ranges(b[2])}, but nodes number their CPUs in order (NCCL binds each GPU's "
                                   "threads to the cores of the other node)", b[0])
        else:
            first = by_numa[wrong[0]]
            self.ctx.add("NTS045", f"the <cpu> affinities are not in NUMA order ({desc}): nodes number their CPUs "
                                   "in order, so masks look moved between NUMA nodes", first[0])

    # -- <pci> -----------------------------------------------------------------------------------------
    def check_pcis(self) -> None:
        ctx, v = self.ctx, self.v
        seen_bus: dict[int, XmlNode] = {}
        for pci in self.of("pci"):
            busid = pci.get("busid")
            if busid is None:
                ctx.add("NTS006", "<pci> without busid: NCCL fails with 'Attribute busid of node pci not found'",
                        pci)
            else:
                num = busid_to_int(busid)
                if num in seen_bus:
                    ctx.add("NTS014", f"busid={quote(busid)} is also used by the <pci> at line {seen_bus[num].line}: "
                                      "the two nodes get the same id", pci)
                else:
                    seen_bus[num] = pci
                if not _CANONICAL_BUSID.fullmatch(busid):
                    ctx.add("NTS028", f"busid={quote(busid)} is not lowercase dddd:bb:dd.f: NCCL compares bus ids as "
                                      "exact strings, so it never matches the detected device (it is "
                                      "auto-detected instead and this subtree is trimmed)", pci)
            missing = [a for a in ("class", "link_speed", "link_width") if not pci.has(a)]
            if missing:
                if id(pci) not in self.gpu_chain and id(pci) in self.nic_chain:
                    ctx.add("NTS007", f"{_where(pci)} lacks {', '.join(missing)} and has no GPU under it: NCCL "
                                      "does not fill a <pci> reached only through NICs found in the file and fails "
                                      f"with 'Attribute {missing[0]} of node pci not found'", pci)
                elif not self.skeleton:
                    how = ("NCCL fills them per rank (only on the local GPU's chain), so per-rank XMLs differ and "
                           "fusion can duplicate elements" if id(pci) in self.gpu_chain else
                           "NCCL fills them only if it attaches a detected device here (a bus id that does not "
                           "exist on the host gets \"\", i.e. Gen3 x16)")
                    ctx.add("NTS008", f"{_where(pci)} lacks {', '.join(missing)}: {how}", pci)
            cls = pci.get("class")
            if cls is not None:
                if kv_lookup(cls, pci_class_keys(v)) is None:
                    if kv_lookup(cls, pci_class_keys(DEFAULT)) is not None:
                        ctx.add("NTV009", f"class={quote(cls)} is known only from NCCL 2.28; NCCL {v} "
                                          "falls back to a PCI switch, which is the same type", pci)
                    elif v < Version(2, 7, 0):
                        ctx.add("NTV008", f"class={quote(cls)} is not in NCCL 2.6's dictionary: fatal", pci)
                    else:
                        ctx.add("NTS042", f"class={quote(cls)} is not in NCCL's class dictionary: treated as a PCI "
                                          "switch (INFO 'could not find value')", pci)
            self.check_link(pci)
            self.check_nic_pci(pci)

    def check_link(self, pci: XmlNode) -> None:
        ctx, v = self.ctx, self.v
        speed = pci.get("link_speed")
        if speed is not None:
            key = kv_lookup(speed, pci_gen_keys(v))
            if key is None:
                newer = kv_lookup(speed, pci_gen_keys(DEFAULT))
                if v < Version(2, 7, 0):
                    ctx.add("NTV008", f"link_speed={quote(speed)} is not in NCCL 2.6's dictionary: fatal", pci)
                elif newer is not None:
                    ctx.add("NTV003", f"link_speed={quote(speed)} is known only to newer NCCL; NCCL "
                                      f"{v} falls back to 6 Gb/s per lane (Gen3)", pci)
                else:
                    hint = ""
                    m = re.fullmatch(r"(\d+(?:\.\d+)?) GT/s", speed.strip())
                    if m:
                        hint = f" (write \"{m.group(1)} GT/s PCIe\")" if "." in m.group(1) else ""
                    ctx.add("NTS030", f"link_speed={quote(speed)} matches none of NCCL's strings{hint}: NCCL falls "
                                      "back to 6 Gb/s per lane (Gen3), whatever the real speed", pci)
            elif speed not in KNOWN_LINK_SPEEDS:
                ctx.add("NTS048", f"link_speed={quote(speed)} is not one of NCCL's strings; NCCL reads it by its prefix "
                                  f"{quote(key)}: {_PCI_GEN_SPEED[key] / 10:g} Gb/s per lane", pci)
        width = pci.get("link_width")
        if width is not None:
            num = strtol(width)
            n, full = num.value, num.whole
            if not full or n <= 0:
                bw = link_bw(pci, v)
                ctx.add("NTS031", f"link_width={quote(width)}: NCCL reads {n}"
                                  + (", which it treats as x16" if n == 0 else "")
                                  + (f" ({bw:g} GB/s for this link)" if bw is not None and bw > 0 else ""), pci)

    def check_nic_pci(self, pci: XmlNode) -> None:
        ctx = self.ctx
        nics = [c for c in pci.children if c.name == "nic"]
        if not nics:
            return
        others = [c for c in pci.children if c is not nics[0]]
        if others:
            listed = ", ".join(f"<{c.name}> (line {c.line})" for c in others[:4])
            ctx.add("NTS034", f"{_where(pci)} holds a <nic>, so it becomes that NIC's node and NCCL does not "
                              f"process its other children: {listed}", pci)
        busid = pci.get("busid")
        names = [n.get("name") or "" for nic in nics for n in nic.children if n.name == "net"]
        ib = any(_IB_NAME.match(nm) for nm in names) or (pci.get("class") or "").startswith("0x0207")
        if busid is None or not ib:
            return
        m = _BUSID_PARTS.fullmatch(busid)
        if m and (m.group(3) != "00" or m.group(4) != "0"):
            ctx.add("NTS029", f"IB NIC busid={quote(busid)}: the IB plugin reports the NIC's PCI path with the "
                              "function forced to 0 and (NCCL_IB_MERGE_VFS=1, the default) the device to 00, so "
                              f"NCCL looks for {m.group(1)}:{m.group(2)}:00.0", pci)

    # -- links that cap the devices below them -------------------------------------------------------------
    def check_caps(self) -> None:
        """A switch or bridge whose link NCCL reads slower than a device under it (topo.cc:ncclTopoAddPci)."""
        v = self.v
        for pci in self.of("pci"):
            if not any(c.name == "pci" for c in pci.children) or any(c.name in ("gpu", "nic") for c in pci.children):
                continue
            cls = pci.get("class")
            if cls is not None and pci_class_type(cls, v) != "PCI":
                continue
            speed = pci.get("link_speed")
            if speed is None or kv_lookup(speed, pci_gen_keys(v)) is None:
                continue  # missing (NTS007/NTS008) or a string NCCL does not know (NTS030/NTV003/NTV008)
            bw = link_bw(pci, v)
            if bw is None:
                continue
            devices = [(d, link_bw(d, v), kind) for d in pci.iter()
                       if d is not pci and d.name == "pci" and (kind := _device_kind(d, v)) is not None]
            faster = [(d, b, k) for d, b, k in devices if b is not None and b > bw]
            if not faster:
                continue
            d, best, kind = max(faster, key=lambda t: t[1] or 0.0)
            self.ctx.add("NTS047", f"{_where(pci)} link {_link_text(pci)} is {bw:g} GB/s for NCCL, below "
                                   f"{len(faster)} of the {len(devices)} devices under it (up to {best:g} GB/s: "
                                   f"{kind} {quote(d.get('busid'))} at {_link_text(d)}): NCCL caps every path that "
                                   f"leaves this switch (to the CPU, other switches, NICs and GPUs elsewhere) at "
                                   f"{bw:g} GB/s", pci)

    def check_virtual_switch_ids(self) -> None:
        """NCCL 2.9.6-2.9.8 read missing vendor/device ids of every <pci> on a GPU's or NIC's chain from sysfs with
        NCCLCHECK(getPciPath(...)), so a bus id that does not exist on the host fails init; 2.9.9 ignores it."""
        v = self.v
        if not Version(2, 9, 6) <= v < Version(2, 9, 9):
            return
        for pci in self.of("pci"):
            busid = pci.get("busid") or ""
            if not busid.lower().startswith("ffff:") or id(pci) not in self.device_chain:
                continue
            missing = [a for a in ("vendor", "device", "subsystem_vendor", "subsystem_device") if not pci.has(a)]
            if missing:
                self.ctx.add("NTV011", f"virtual switch {_where(pci)} lacks {', '.join(missing)}: NCCL {v} reads them "
                                       f"from sysfs for the devices under it, finds no {busid} there ('Could not find "
                                       "real path of ...') and fails init; 2.9.9 and later skip them", pci)

    # -- <gpu> -----------------------------------------------------------------------------------------
    def check_gpus(self) -> None:
        ctx, v = self.ctx, self.v
        devs: dict[int, XmlNode] = {}
        for gpu in self.of("gpu"):
            pci = gpu.parent
            if pci is not None and pci.name == "pci":
                # A GPU's own <pci> has the GPU's class refreshed from sysfs, so only the structure matters:
                # a <pci> with <pci> children is a switch.
                if any(c.name == "pci" for c in pci.children):
                    ctx.add("NTS033", f"<gpu> directly under {_where(pci)}, a switch (it has <pci> children): NCCL "
                                      "processes the <gpu> as a <pci> ('Attribute class of node gpu not found'), or, "
                                      "if the <gpu> has no rank, skips the whole switch", gpu)
                busid = pci.get("busid")
                if busid is not None and v >= Version(2, 30, 7) and busid_to_int(busid) & 0x3:
                    ctx.add("NTS035", f"GPU busid={quote(busid)} has the low 2 bits set: NCCL 2.30.7+ fails ('BusId "
                                      "... has non-zero bits in MLOPart mask')", gpu)
            if gpu.has("rank"):
                ctx.add("NTS023", f"{_where(gpu)} has rank={quote(gpu.get('rank'))}: NCCL overwrites it on its own "
                                  "GPU, and a surviving file rank collides with real ranks", gpu)
            mlopart = gpu.get("mlopart")
            if mlopart is not None and v >= Version(2, 30, 7) and strtol(mlopart).value >= 2:
                ctx.add("NTS036", f"{_where(gpu)} mlopart={quote(mlopart)}: NCCL fails with 'MLOPart index out of "
                                  "range (max 1)'", gpu)
            gdr = gpu.get("gdr")
            if gdr is not None and strtol(gdr).value != 0:
                ctx.add("NTS024", f"{_where(gpu)} gdr={quote(gdr)}: NCCL trusts it and uses GPUDirect RDMA even "
                                  "where the GPU or driver does not support it", gpu)
            dev = gpu.get("dev")
            overrides = [a for a in ("dev", "sm") if gpu.has(a)]
            if gdr is not None and strtol(gdr).value == 0:
                overrides.append("gdr")
            if dev is not None:
                num = strtol(dev)
                n, full = num.value, num.whole
                if not full:
                    ctx.add("NTS027", f"{_where(gpu)} dev={quote(dev)} is not a number: NCCL reads {n}", gpu)
                elif n < 0:
                    ctx.add("NTS027", f"{_where(gpu)} dev={quote(dev)}: NCCL skips this GPU (no rank, trimmed)", gpu)
                elif n in devs:
                    ctx.add("NTS027", f"{_where(gpu)} dev={quote(dev)} is also the dev of the GPU at line "
                                      f"{devs[n].line}: NVML indices are unique", gpu)
                else:
                    devs[n] = gpu
            overrides = [a for a in overrides if (gpu.line, gpu.column, a) not in ctx.confirmed]
            if overrides:
                ctx.add("NTS025", f"{_where(gpu)} sets {', '.join(overrides)}: NCCL uses these values instead of "
                                  "detecting them", gpu)

    def _gpu_busid(self, gpu: XmlNode) -> str | None:
        return gpu.parent.get("busid") if gpu.parent is not None and gpu.parent.name == "pci" else None

    # -- <nvlink> --------------------------------------------------------------------------------------
    def check_nvlinks(self) -> None:
        ctx, v = self.ctx, self.v
        gpus_by_id: dict[int, XmlNode] = {}
        for g in self.of("gpu"):
            busid = self._gpu_busid(g)
            if busid is not None:
                gpus_by_id.setdefault(busid_to_int(busid), g)
        #: (source GPU id, target GPU id) -> (count, the <nvlink>, the source GPU's busid)
        links: dict[tuple[int, int], tuple[int, XmlNode, str]] = {}
        for nv in self.of("nvlink"):
            gpu = nv.parent
            count = nv.get("count")
            tclass = nv.get("tclass")
            target = nv.get("target")
            if count is None:
                ctx.add("NTS016", "<nvlink> without count: NCCL fails with 'Attribute count of node nvlink not "
                                  "found'", nv)
            if tclass is None and target is None:
                ctx.add("NTS017", "<nvlink> with neither tclass nor target: NCCL dereferences the missing target "
                                  "(crash) or fails with 'Attribute tclass of node nvlink not found'", nv)
                continue
            if tclass is None:
                if v >= NVLINK_TCLASS_REQUIRED_SINCE:
                    ctx.add("NTS018", f"<nvlink target={quote(target)}> without tclass: NCCL {v} no longer fills it "
                                      "(2.31 and later): it stops with 'Attribute tclass of node nvlink not found'", nv)
                else:
                    ctx.add("NTS018", f"<nvlink target={quote(target)}> without tclass: NCCL reads the target's class "
                                      "from sysfs on the GPU's own rank, and assumes an NVSwitch if it is not found "
                                      "(NCCL 2.31 and later stop here)", nv)
                continue
            keys = pci_class_keys(v)
            k = kv_lookup(tclass, keys)
            if k is None:
                if v < Version(2, 7, 0):
                    ctx.add("NTV008", f"tclass={quote(tclass)} is not in NCCL 2.6's dictionary: fatal", nv)
                else:
                    ctx.add("NTS041", f"tclass={quote(tclass)} is not a known class: NCCL treats the link as going to "
                                      "an NVSwitch", nv)
                continue
            if keys[k] != "GPU":
                continue
            if target is None:
                ctx.add("NTS017", f"<nvlink tclass={quote(tclass)}> (a GPU) without target: NCCL fails with "
                                  "'Attribute target of node nvlink not found'", nv)
                continue
            if gpu is None or gpu.name != "gpu":
                continue
            src = self._gpu_busid(gpu)
            if src is None:
                continue
            tid = busid_to_int(target)
            n = strtol(count or "0").value
            if tid == busid_to_int(src):
                ctx.add("NTS049", f"<nvlink target={quote(target)} count=\"{n}\"> is the GPU's own bus id: NCCL adds a "
                                  "link from the GPU to itself, which no path uses, so these NVLinks connect the GPU "
                                  f"to nothing{self._paths_from(src)}", nv)
                continue
            if tid not in gpus_by_id:
                if self.complete:
                    ctx.add("NTS020", f"<nvlink target={quote(target)}> names a GPU that is not in the file: NCCL drops "
                                      f"the link silently{self._paths_from(src)}", nv)
                continue
            links[(busid_to_int(src), tid)] = (n, nv, src)
        if self.complete:
            for (a, b), (n, nv, src) in links.items():
                back = links.get((b, a))
                if back is None:
                    ctx.add("NTS019", f"NVLink from {quote(src)} to {quote(nv.get('target'))} has no "
                                      "reverse <nvlink> on the target GPU: NCCL adds GPU-GPU links in one direction "
                                      "only, and init fails ('Failed to find reverse path') when both GPUs are in the "
                                      "job", nv)
                elif back[0] != n and nv.offset < back[1].offset:
                    per = self._nvlink_bw(gpus_by_id[a])
                    bws = f" ({n * per:g} GB/s one way, {back[0] * per:g} GB/s back)" if per else ""
                    ctx.add("NTS019", f"NVLink count {n} from {quote(src)} to "
                                      f"{quote(nv.get('target'))} but {back[0]} in the reverse direction{bws}", nv)
        self._nvlink_totals()

    def _nvlink_bw(self, gpu: XmlNode) -> float | None:
        """NCCL's bandwidth of one NVLink of this GPU (ncclTopoNVLinkBw by sm), None without sm."""
        from ncclctl.nccl.system import nvlink_bw

        sm = gpu.get("sm")
        return nvlink_bw(strtol(sm).value) if sm is not None and strtol(sm).whole else None

    def _nvlink_totals(self) -> None:
        """More NVLinks on a GPU than NCCL's own detection reads for its sm (xml.cc:ncclTopoGetXmlFromGpu)."""
        for gpu in self.of("gpu"):
            sm_s = gpu.get("sm")
            nvlinks = [c for c in gpu.children if c.name == "nvlink" and c.get("count") is not None]
            if sm_s is None or not strtol(sm_s).whole or not nvlinks:
                continue
            sm = strtol(sm_s).value
            if sm >= 100:
                continue  # newer GPUs (Vera-Rubin: 36 NVLinks) outgrow the 18 that 2.30.7's detection reads
            most = 0 if sm < 60 else 4 if sm < 70 else 6 if sm < 80 else 12 if sm < 90 else 18
            total = sum(max(strtol(c.get("count") or "0").value, 0) for c in nvlinks)
            if total > most:
                per = self._nvlink_bw(gpu) or 0.0
                self.ctx.add("NTS050", f"{_where(gpu)} (sm {sm}) lists {total} NVLinks in {len(nvlinks)} <nvlink> "
                                       f"element{'s' if len(nvlinks) > 1 else ''}: NCCL itself reads at most {most} on an sm {sm} GPU, so it credits "
                                       f"this GPU with {total * per:g} GB/s of NVLink bandwidth where the hardware "
                                       f"has at most {most * per:g} GB/s", gpu)

    def _model(self):
        """NCCL's system for the file with every GPU in the job, paths computed (ncclctl.nccl); None when the file
        is incomplete (the model stops where NCCL stops) or only its first part was read."""
        if self._system is None:
            self._system = False
            if self.complete:
                from ncclctl.nccl.build import Plugin, build
                from ncclctl.nccl.paths import compute_paths
                from ncclctl.nccl.system import Params

                try:
                    built = build(self.root, Params(version=self.v), Plugin())
                    compute_paths(built.system)
                    self._system = built.system
                # The model raises InputError where NCCL stops, RuntimeError where NCCL finds no reverse path; odd
                # values can end in the others. The explanation is optional: the finding stands without it.
                except (InputError, RuntimeError, ValueError, ArithmeticError, LookupError):
                    self._system = False
        return self._system or None

    def _paths_from(self, busid: str) -> str:
        """``; NCCL's paths ...`` from this GPU to the other GPUs, as NCCL computes them for this file."""
        from ncclctl.nccl.system import GPU, PATH_TYPE_STR, f32

        system = self._model()
        if system is None:
            return ""
        gpus = system.nodes[GPU]
        me = next((i for i, g in enumerate(gpus) if g.label == busid), None)
        if me is None or len(gpus) < 2:
            return ""
        def kinds(i: int) -> dict[tuple[str, float], int]:
            out: dict[tuple[str, float], int] = {}
            for j, p in enumerate(gpus[i].paths.get(GPU, [])):
                if j != i:
                    key = (PATH_TYPE_STR[p.type], f32(p.bw))
                    out[key] = out.get(key, 0) + 1
            return out

        mine = kinds(me)
        every = {k for i in range(len(gpus)) for k in kinds(i)}
        if len(every) == 1:
            (t, bw), = every
            return f"; every GPU pair becomes {t} at {bw:g} GB/s"
        parts = [f"{t} at {bw:g} GB/s to {n} GPU{'s' if n > 1 else ''}" for (t, bw), n in
                 sorted(mine.items(), key=lambda kv: (-kv[0][1], kv[0][0]))]
        return f"; NCCL's paths from this GPU are {', '.join(parts)}"

    # -- <pcilink> -------------------------------------------------------------------------------------
    def check_pcilinks(self) -> None:
        ctx, v = self.ctx, self.v
        switches: dict[int, XmlNode] = {}
        for pci in self.of("pci"):
            busid = pci.get("busid")
            if busid is not None:
                switches.setdefault(busid_to_int(busid), pci)
        links: dict[tuple[int, int], XmlNode] = {}
        for pl in self.of("pcilink"):
            parent = pl.parent
            target = pl.get("target")
            if target is None:
                ctx.add("NTS038", "<pcilink> without target: NCCL fails with 'Attribute target of node pcilink not "
                                  "found'", pl)
            if parent is None or parent.name != "pci":
                continue
            cls = parent.get("class")
            sub = {c.name for c in parent.children}
            reason = None
            if "nic" in sub:
                reason = "it holds a <nic>"
            elif "gpu" in sub:
                reason = "it holds a <gpu>"
            elif cls is not None and pci_class_type(cls, v) != "PCI":
                reason = f"its class {quote(cls)} is not a PCI switch"
            if reason:
                ctx.add("NTS037", f"<pcilink> under {_where(parent)}, which does not become a PCI switch ({reason}): "
                                  "NCCL fails with 'Add PCI Link error : could not find PCI SW'", pl)
                continue
            if target is None or parent.get("busid") is None:
                continue
            links[(busid_to_int(parent.get("busid") or ""), busid_to_int(target))] = pl
        for (a, b), pl in links.items():
            if b not in switches:
                ctx.add("NTS021", f"<pcilink target={quote(pl.get('target'))}> names no <pci> in the file: NCCL "
                                  "ignores it", pl)
            elif (b, a) not in links:
                ctx.add("NTS021", f"<pcilink> from {quote(pl.parent.get('busid') if pl.parent else None)} to "
                                  f"{quote(pl.get('target'))} has no reverse <pcilink>: NCCL adds pcilinks in one "
                                  "direction only", pl)

    # -- <c2c> -----------------------------------------------------------------------------------------
    def check_c2c(self) -> None:
        for c2c in self.of("c2c"):
            missing = [a for a in ("bw", "count") if not c2c.has(a)]
            if missing:
                self.ctx.add("NTS038", f"<c2c> without {', '.join(missing)}: NCCL fails with 'Attribute "
                                       f"{missing[0]} of node c2c not found'", c2c)

    # -- <net> -----------------------------------------------------------------------------------------
    def check_nets(self) -> None:
        ctx, v = self.ctx, self.v
        ports: dict[tuple[int, int], XmlNode] = {}
        for net in self.of("net"):
            name = net.get("name")
            if name is None:
                ctx.add("NTS039", "<net> without name: NCCL matches <net> to plugin devices by exact name, so this "
                                  "one is never used (and is trimmed)", net)
            gdr = net.get("gdr")
            if gdr is not None and strtol(gdr).value != 0:
                ctx.add("NTS024", f"{_where(net)} gdr={quote(gdr)}: NCCL trusts it and uses GPUDirect RDMA without "
                                  "checking plugin support", net)
            speed = net.get("speed")
            overrides = [a for a in ("speed", "port", "guid", "latency", "maxconn", "coll") if net.has(a)]
            if gdr is not None and strtol(gdr).value == 0:
                overrides.append("gdr")
            if speed is not None:
                num = strtol(speed)
                n, full = num.value, num.whole
                if not full or n <= 0:
                    ctx.add("NTS026", f"{_where(net)} speed={quote(speed)}: NCCL reads {n} and uses 10000 Mb/s "
                                      "(1.25 GB/s) instead", net)
                elif n < 1000:
                    ctx.add("NTS026", f"{_where(net)} speed={quote(speed)} Mb/s is {n / 8000:g} GB/s: speed is in "
                                      f"Mb/s (400 Gb/s is 400000)", net)
            overrides = [a for a in overrides if (net.line, net.column, a) not in ctx.confirmed]
            if overrides:
                ctx.add("NTS025", f"{_where(net)} sets {', '.join(overrides)}: NCCL uses these values instead of "
                                  "asking the net plugin", net)
            guid = net.get("guid")
            if guid is not None:
                gval = strtoul(guid, 16).value  # net->net.asic = strtoull(guid, NULL, 16)
                port = strtol(net.get("port") or "0").value
                key = (gval, port)
                if key in ports:
                    ctx.add("NTS032", f"{_where(net)} has guid={quote(guid)} port={port} like the <net> at line "
                                      f"{ports[key].line}: NCCL treats them as one physical port (shared "
                                      "bandwidth; crossnic=0 rings may return on the other)", net)
                else:
                    ports[key] = net
            if v >= Version(2, 30, 7):
                for a in ("rail", "plane"):
                    val = net.get(a)
                    if val is None:
                        continue
                    num = strtol(val, 10)
                    if not num.whole or num.value < 0:
                        ctx.add("NTS090", f"{_where(net)} {a}={quote(val)}: NCCL reads it with strtol as {num.value}"
                                          + (" (undefined)" if num.value == -1 else "")
                                          + f", not the {a} id written", net)
            keys = set(net.keys())
            added = [a for a, since in _NET_ADDED if v >= since and a not in keys]
            total = len(net.attrs) + len(net.dropped_attrs) + len(added)
            if total > 17 and len(net.attrs) + len(net.dropped_attrs) <= 16:
                ctx.add("NTS040", f"{_where(net)} has {len(net.attrs)} attributes and NCCL may add "
                                  f"{len(added)} more ({', '.join(added)}): over the 17 slots of a node, which "
                                  "NCCL's setters do not check (memory corruption)", net)
        if v >= Version(2, 30, 7):
            # NICs with a rail id and no plane: the search forbids crossing planes only when both have one
            railed = [n for n in self.of("net") if n.get("name") is not None and n.get("rail") is not None]
            have = [n for n in railed if n.get("plane") is not None]
            lack = [n for n in railed if n.get("plane") is None]
            if have and lack:
                names = ", ".join(n.get("name") or "?" for n in lack)
                ctx.add("NTS091", f"{_where(lack[0])}: {names} {'has' if len(lack) == 1 else 'have'} a rail= but no "
                                  f"plane= while {len(have)} other <net> {'has' if len(have) == 1 else 'have'} both: "
                                  "NCCL lets a NIC without a plane pair with either plane", lack[0])

    # -- the whole file ----------------------------------------------------------------------------------
    def check_budget(self) -> None:
        """NCCL_TOPO_XML_MAX_NODES: each rank loads the file into that many slots and adds its own elements
        (ncclTopoFillGpu, ncclTopoFillNet, NIC fusion), then the local ranks' trimmed trees are fused into a tree
        of the same size (topo.cc:ncclTopoGetSystem, xml.cc:ncclTopoFuseXml)."""
        res, v = self.res, self.v
        if res is None or self.root.name != "system":
            return
        limit, used = res.max_nodes, res.node_count
        pcis = self.of("pci")
        bare_gpus = [p for p in pcis if _device_kind(p, v) == "GPU" and not any(c.name == "gpu" for c in p.children)]
        bare_nics = [p for p in pcis if _device_kind(p, v) == "NIC" and not any(c.name == "nic" for c in p.children)]
        nic_add = 2 * len(bare_nics)
        # The <nvlink> elements NCCL adds under each GPU it completes: one per distinct NVLink peer, which on an
        # NVSwitch host is one per NVSwitch (4 on HGX H100/H200); the file cannot say, so it is an estimate.
        nvl = NVLINKS_PER_GPU * len(bare_gpus)
        # Fusion adds at most a <net>, a <nic> and a <pci> per fused NIC: skip the model when even that fits.
        most = max(used + nic_add + 1 + NVLINKS_PER_GPU,
                   self._kept_count() + len(bare_gpus) + nvl + nic_add) + 3 * len(self.of("net"))
        if most < limit - BUDGET_MARGIN:
            return
        fused = self._fusion_growth()
        per_rank = used + nic_add + fused + (1 if bare_gpus else 0)
        kept = self._kept_count() + len(bare_gpus) + nic_add + fused
        sure = max(per_rank, kept)
        peak = max(per_rank + (NVLINKS_PER_GPU if bare_gpus else 0), kept + nvl)
        if peak < limit - BUDGET_MARGIN:
            return
        adds = []
        if bare_gpus:
            adds.append("1 <gpu> (its GPU's <pci> has none)")
        if bare_nics:
            adds.append(f"{nic_add} <nic>/<net> for the {len(bare_nics)} NIC <pci> without <nic>")
        if fused:
            adds.append(f"{fused} for the NICs it fuses (NCCL_NET_MERGE_LEVEL)")
        with_nvl = (f" ({per_rank + NVLINKS_PER_GPU} with the <nvlink> elements NCCL adds under its GPU on an "
                    "NVSwitch host: one per NVSwitch, 4 on HGX H100/H200)") if bare_gpus else ""
        grow = f"each rank adds {', '.join(adds)}: {per_rank} before it trims{with_nvl}; " if adds else ""
        arithmetic = (f"NCCL's topology XML has {limit} element slots (NCCL_TOPO_XML_MAX_NODES): the file uses {used}; "
                      f"{grow}the fused tree of the local ranks holds {kept}"
                      + (f" ({kept + nvl} with them)" if bare_gpus else ""))
        plugin = ("; every NIC port the net plugin reports that the file does not list adds 3 more (<pci>, <nic>, "
                  "<net>)")
        if sure > limit:
            self.ctx.add("NTS052", f"{arithmetic}: over the limit, init fails ('too many XML nodes (max {limit})')",
                         self.root)
        elif peak > limit:
            self.ctx.add("NTS051", f"{arithmetic}: {peak - limit} over the limit there, so init fails on such hosts "
                                   f"('too many XML nodes (max {limit})'){plugin}", self.root)
        else:
            self.ctx.add("NTS051", f"{arithmetic}: {limit - peak} slots left, so one more element NCCL adds on a "
                                   "host (a NIC or NVLink peer the file does not list) can make init fail ('too "
                                   f"many XML nodes (max {limit})'){plugin}", self.root)

    def _kept_count(self) -> int:
        """Elements left by ncclTopoTrimXml with every GPU and NET of the file kept (what the fused tree holds)."""
        keep: set[int] = {id(self.root)}
        for n in self.nodes:
            if n.name == "gpu" or (n.name == "net" and n.get("name")) or (
                    n.name == "pci" and _device_kind(n, self.v) is not None):
                keep.update(id(a) for a in n.ancestors())
                keep.update(id(d) for d in n.iter())
        return len(keep)

    def _fusion_growth(self) -> int:
        """Elements NCCL's NIC fusion adds on every rank (ncclTopoMakeVNics), from the model; 0 where the model
        cannot follow the file."""
        from ncclctl.nccl.build import Plugin, fusion_growth
        from ncclctl.nccl.system import Params

        if not self.of("net"):
            return 0
        try:
            return fusion_growth(self.root, Params(version=self.v), Plugin())
        except (InputError, ValueError, ArithmeticError, LookupError):
            return 0

    def check_skeleton(self) -> None:
        left = skeleton_elements(self.root, self.v)
        if left is None:
            return
        leaves = [p for p in self.of("pci") if _skeleton_slot(p)]
        cpus = [c for c in self.of("cpu") if any(not c.has(a) for a in _CPU_FILLED)]
        pcis = [p for p in self.of("pci") if any(not p.has(a) for a in _PCI_FILLED)]
        parts = [f"the GPU or NIC in each of the {len(leaves)} leaf <pci> (found by bus id: each must exist on the "
                 "host, or NCCL drops it)"]
        if cpus:
            parts.append(f"affinity, arch and vendor of {len(cpus)} <cpu> (sysfs, on the ranks whose devices are "
                         "under it)")
        if pcis:
            parts.append(f"class, link_speed and link_width of {len(pcis)} <pci> (sysfs)")
        self.ctx.add("NTS053", f"skeleton file: only <cpu> and <pci> elements, so NCCL completes {left} of them on "
                               f"each host: {'; '.join(parts)}", self.root)


# --------------------------------------------------------------------------------------------------
# Entry points with kind detection


def validate_bytes(data: bytes, *, path: str, kind: Kind | None = None,
                   nccl_version: object = DEFAULT,
                   confirmed: frozenset[tuple[int, int, str]] = frozenset()) -> list[Finding]:
    """Validate as ``kind``, or as the kind sniffed from the root element (``system`` / ``graphs``);
    a file whose root cannot be seen is taken as a graph file if its name contains 'graph'. ``confirmed``: see
    :func:`validate_topology`."""
    if kind is None:
        kind = sniff_kind(data) or ("graph" if "graph" in Path(path).name.lower() else "topology")
    if kind == "graph":
        return validate_graph(data, path=path, nccl_version=nccl_version)
    if kind == "topology":
        return validate_topology(data, path=path, nccl_version=nccl_version, confirmed=confirmed)
    raise InputError(f"unknown NCCL XML kind {kind!r}", fix="use 'topology' or 'graph'")


_XSD_ATTRIBUTE = re.compile(r"attribute '([^']+)'")


def without_repeated_xsd(xsd: list[Finding], findings: list[Finding]) -> list[Finding]:
    """The XSD findings that say something the NCCL-based ``findings`` do not: an XSD complaint about attribute A
    on a line where an NCCL-based finding already names ``A="..."``, or about the root element where NTS001/NTG001
    report it, is the same fact (one fact, one finding)."""
    named: set[tuple[int | None, str]] = set()
    for f in findings:
        for m in re.finditer(r"(?<![\w])([A-Za-z_][\w]*)=\"", f.message):
            named.add((f.line, m.group(1)))
    wrong_root = any(f.rule in ("NTS001", "NTG001") for f in findings)
    out = []
    for f in xsd:
        attr = _XSD_ATTRIBUTE.search(f.message)
        if attr is not None and (f.line, attr.group(1)) in named:
            continue
        if wrong_root and "validation root" in f.message:
            continue  # the wrong root element, which NTS001/NTG001 report
        out.append(f)
    return out


def validate_file(path: str | Path, *, kind: Kind | None = None, nccl_version: object = DEFAULT,
                  xsd: bool = False) -> list[Finding]:
    """Read ``path`` and validate it (kind sniffed unless given). ``xsd=True`` adds the XSD findings of
    :func:`ncclctl.topo.schema.xsd_findings`."""
    from ncclctl.inputs import read_bytes

    p = Path(path)
    data = read_bytes(str(p), "xml")
    assert data is not None
    if kind is None:
        kind = sniff_kind(data) or ("graph" if "graph" in p.name.lower() else "topology")
    findings = validate_bytes(data, path=str(path), kind=kind, nccl_version=nccl_version)
    if xsd:
        from ncclctl.topo.schema import xsd_findings  # lxml is imported only when asked for

        findings = findings + without_repeated_xsd(xsd_findings(data, kind, str(path)), findings)
    return findings
