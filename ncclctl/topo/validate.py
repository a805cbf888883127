"""Validate NCCL topology (``NCCL_TOPO_FILE``) and graph (``NCCL_GRAPH_FILE``) XML files.

The file is first read with :mod:`ncclctl.topo.ncclxml`, which reproduces NCCL's own reader: every fatal
construct becomes an ``NTX`` error finding. If NCCL would read the file, the tree is then checked against
what NCCL does with it (``NTS`` topology rules, ``NTG`` graph rules, ``NTV`` rules for the target NCCL
version). Rule ids, severities and fixes are rows of the rule registry (:mod:`ncclctl.registry.file_rules`); section numbers refer to the
reference ``nccl-format.md``.

Nothing here raises for bad content: a file always yields findings. Only input that is not bytes, an
unreadable path, or an invalid version raise :class:`~ncclctl.errors.InputError`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

from ncclctl.errors import InputError
from ncclctl.findings import Finding
from ncclctl.nccl.params import strtol, strtoul
from ncclctl.nccl.version import DEFAULT, Version, parse
from ncclctl.topo.ncclxml import (
    IgnoredElement,
    Kind,
    ParseResult,
    XmlDiagnostic,
    XmlNode,
    parse_nccl_xml,
    show_text,
    sniff_kind,
)
from ncclctl.topo.rules import rule

__all__ = ["validate_topology", "validate_graph", "validate_file", "validate_bytes"]

# --------------------------------------------------------------------------------------------------
# C library number parsing, as NCCL uses it (§1.4)

_HEX = "0123456789abcdefABCDEF"
_FLOAT = re.compile(r"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE)


def c_strtof(s: str) -> tuple[float, bool]:
    m = _FLOAT.match(s)
    if not m:
        return 0.0, False
    try:
        return float(m.group(0)), m.end() == len(s)
    except ValueError:  # pragma: no cover - the regex only matches float syntax
        return 0.0, False


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


def kv_lookup(value: str, keys: Iterable[str]) -> str | None:
    """``kvConvertToInt``: the first key the value starts with (prefix match), or None (fallback)."""
    for k in keys:
        if value.startswith(k):
            return k
    return None


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


def link_type_keys(v: Version) -> tuple[str, ...]:
    keys = ["LOC", "NVL", "PIX", "PXB", "PHB", "SYS"]
    if v >= Version(2, 8, 0):
        keys.append("NVB")
    if v >= Version(2, 12, 0):
        keys.append("PXN")
    if v >= Version(2, 27, 0):
        keys.append("P2C")
    return tuple(keys)


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

_EXPECTED_PATTERNS = {0: (4,), 1: (1, 2, 3), 2: (3,), 3: (5,), 4: (6,)}
_GRAPH_NAMES = {0: "ring", 1: "tree", 2: "CollNet chain", 3: "NVLS", 4: "CollNet direct"}


# --------------------------------------------------------------------------------------------------
# Collecting findings


class _Ctx:
    def __init__(self, path: str, version: Version, confirmed: frozenset[tuple[int, int, str]] = frozenset()) -> None:
        self.path = path
        self.version = version
        # (line, column, attribute) of init-only values the host check found equal to what NCCL detects (NTS025)
        self.confirmed = confirmed
        self.findings: list[Finding] = []
        self._seen: set[tuple] = set()

    def add(self, rule_id: str, message: str, node: XmlNode | IgnoredElement | None = None, *,
            line: int | None = None, column: int | None = None, fix: str | None = None,
            evidence: tuple[str, ...] = ()) -> None:
        r = rule(rule_id)
        if node is not None:
            line, column = node.line, node.column
            if isinstance(node, XmlNode) and not evidence:
                evidence = (node.start_tag(),)
        key = (rule_id, line, column, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(rule_id, r.severity, message, self.path, line, column, fix or r.fix,
                                     evidence))

    def from_diag(self, d: XmlDiagnostic) -> None:
        r = rule(d.rule)
        evidence = (d.nccl_message,) if d.nccl_message else ()
        key = (d.rule, d.line, d.column, d.message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(d.rule, d.severity, d.message, self.path, d.line, d.column, r.fix,
                                     evidence))

    def result(self) -> list[Finding]:
        return sorted(self.findings, key=lambda f: (f.line or 0, f.column or 0, f.rule, f.message))


def _lexical(ctx: _Ctx, res: ParseResult) -> bool:
    """Report the reader's diagnostics; True if NCCL would fail to read the file."""
    if res.fatal is not None:
        # Once NCCL stops, warnings about what it read before are noise: keep the errors.
        for d in res.diagnostics:
            if d.severity.value == "error":
                ctx.from_diag(d)
        ctx.from_diag(res.fatal)
        return True
    for d in res.diagnostics:
        ctx.from_diag(d)
    return False


def _q(s: str | None) -> str:
    return '""' if s is None else f'"{show_text(s)}"'


def _where(node: XmlNode) -> str:
    busid = node.get("busid")
    if node.name == "pci" and busid is not None:
        return f"<pci busid={_q(busid)}>"
    if node.name == "cpu" and node.get("numaid") is not None:
        return f"<cpu numaid={_q(node.get('numaid'))}>"
    if node.name == "net" and node.get("name") is not None:
        return f"<net name={_q(node.get('name'))}>"
    if node.name == "gpu" and node.parent is not None and node.parent.get("busid") is not None:
        return f"<gpu> of {_q(node.parent.get('busid'))}"
    return f"<{node.name}>"


def _roots_in_order(res: ParseResult) -> list[XmlNode | IgnoredElement]:
    tops: list[XmlNode | IgnoredElement] = list(res.roots)
    tops += [i for i in res.ignored if i.reason == "wrong-root"]
    return sorted(tops, key=lambda t: (t.line, t.column))


def _check_roots(ctx: _Ctx, res: ParseResult, root_name: str, r_none: str, r_two: str) -> None:
    """No root / several top-level elements. (A missing or wrong version is fatal in the reader.)"""
    tops = _roots_in_order(res)
    wrong = [t for t in tops if isinstance(t, IgnoredElement)]
    if not res.roots:
        if wrong:
            ctx.add(r_none, f"the top-level element is <{show_text(wrong[0].name)}>, not <{root_name}>: NCCL "
                            "ignores it with its whole subtree and loads nothing", wrong[0])
        else:
            ctx.add(r_none, f"the file contains no element: NCCL loads nothing from it (no <{root_name}>)",
                    line=1, column=1)
    if len(tops) > 1:
        used = res.roots[0] if res.roots else tops[0]
        extra = next(t for t in tops if t is not used)
        ctx.add(r_two, f"{len(tops)} top-level elements: NCCL uses only the <{show_text(used.name)}> at line "
                       f"{used.line} and ignores this <{show_text(extra.name)}>", extra)


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
    ctx = _Ctx(path, res.version, confirmed)
    if _lexical(ctx, res):
        return ctx.result()
    _check_roots(ctx, res, "system", "NTS001", "NTS002")
    _check_topo_ignored(ctx, res)
    if res.root is not None:
        _TopoChecks(ctx, res.root).run()
        if res.root.name == "system" and not any(f.severity.value == "error" for f in ctx.findings):
            from ncclctl.topo.meaning import flat_layout  # NCCL's model: only for a file NCCL would load

            for rule_id, message, node in flat_layout(res):
                ctx.add(rule_id, message, node)
    return ctx.result()


def _check_topo_ignored(ctx: _Ctx, res: ParseResult) -> None:
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


class _TopoChecks:
    def __init__(self, ctx: _Ctx, root: XmlNode) -> None:
        self.ctx = ctx
        self.v = ctx.version
        self.root = root
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

    def of(self, name: str) -> list[XmlNode]:
        return self.by_name.get(name, [])

    def run(self) -> None:
        self.check_common()
        self.check_cpus()
        self.check_pcis()
        self.check_gpus()
        self.check_nvlinks()
        self.check_pcilinks()
        self.check_c2c()
        self.check_nets()

    # -- attributes on any element -----------------------------------------------------------------
    def check_common(self) -> None:
        ctx = self.ctx
        for n in self.nodes:
            if n.has("keep"):
                ctx.add("NTS022", f"{_where(n)} has keep={_q(n.get('keep'))}: with keep=\"1\" NCCL keeps the "
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
                    ctx.add("NTS015", f"numaid={_q(numaid)} is also used by the <cpu> at line {first.line}: both "
                                      "become CPU nodes with the same id", cpu)
                else:
                    seen_numa[key] = cpu
            host_hash = cpu.get("host_hash")
            if host_hash is not None and Version(2, 21, 0) <= v < Version(2, 27, 0):
                ctx.add("NTV007", f"host_hash={_q(host_hash)}: NCCL {v} uses it as-is (2.27+ "
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
                    ctx.add("NTV008", f"arch={_q(arch)} is not in NCCL 2.6's dictionary: fatal", cpu)
                else:
                    hint = " (write arm64 for aarch64 hosts)" if arch.startswith("aarch64") else ""
                    ctx.add("NTS012", f"arch={_q(arch)} is not x86_64, arm64 or ppc64{hint}: NCCL maps it to 0, "
                                      "so CPU-dependent defaults (P2P level, SYS bandwidth 5000 GB/s) are wrong",
                            cpu)
            x86 = arch_key == "x86_64" or arch is None
            vendor_kind = None
            if vendor is not None:
                vk = kv_lookup(vendor, VENDOR_KEYS)
                vendor_kind = VENDOR_KEYS[vk] if vk else None
                if vk is None and x86:
                    if v < Version(2, 7, 0):
                        ctx.add("NTV008", f"vendor={_q(vendor)} is not in NCCL 2.6's dictionary: fatal", cpu)
                    else:
                        ctx.add("NTS013", f"vendor={_q(vendor)} is not a vendor NCCL knows: the x86 CPU gets "
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
            if missing and (filled or has_content or nic_only):
                how = ("NCCL fills them only on the ranks whose GPU is under this CPU, so per-rank XMLs differ "
                       "and fusion can duplicate the element" if filled else
                       "NCCL fills them only if it attaches a detected device here")
                if "affinity" in missing and not filled:
                    how += "; without affinity NCCL binds no CPU set"
                ctx.add("NTS011", f"{_where(cpu)} lacks {', '.join(missing)}: {how}", cpu)

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
                    ctx.add("NTS014", f"busid={_q(busid)} is also used by the <pci> at line {seen_bus[num].line}: "
                                      "the two nodes get the same id", pci)
                else:
                    seen_bus[num] = pci
                if not _CANONICAL_BUSID.fullmatch(busid):
                    ctx.add("NTS028", f"busid={_q(busid)} is not lowercase dddd:bb:dd.f: NCCL compares bus ids as "
                                      "exact strings, so it never matches the detected device (it is "
                                      "auto-detected instead and this subtree is trimmed)", pci)
            missing = [a for a in ("class", "link_speed", "link_width") if not pci.has(a)]
            if missing:
                if id(pci) not in self.gpu_chain and id(pci) in self.nic_chain:
                    ctx.add("NTS007", f"{_where(pci)} lacks {', '.join(missing)} and has no GPU under it: NCCL "
                                      "does not fill a <pci> reached only through NICs found in the file and fails "
                                      f"with 'Attribute {missing[0]} of node pci not found'", pci)
                else:
                    how = ("NCCL fills them per rank (only on the local GPU's chain), so per-rank XMLs differ and "
                           "fusion can duplicate elements" if id(pci) in self.gpu_chain else
                           "NCCL fills them only if it attaches a detected device here (a bus id that does not "
                           "exist on the host gets \"\", i.e. Gen3 x16)")
                    ctx.add("NTS008", f"{_where(pci)} lacks {', '.join(missing)}: {how}", pci)
            cls = pci.get("class")
            if cls is not None:
                if kv_lookup(cls, pci_class_keys(v)) is None:
                    if kv_lookup(cls, pci_class_keys(DEFAULT)) is not None:
                        ctx.add("NTV009", f"class={_q(cls)} is known only from NCCL 2.28; NCCL {v} "
                                          "falls back to a PCI switch, which is the same type", pci)
                    elif v < Version(2, 7, 0):
                        ctx.add("NTV008", f"class={_q(cls)} is not in NCCL 2.6's dictionary: fatal", pci)
                    else:
                        ctx.add("NTS042", f"class={_q(cls)} is not in NCCL's class dictionary: treated as a PCI "
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
                    ctx.add("NTV008", f"link_speed={_q(speed)} is not in NCCL 2.6's dictionary: fatal", pci)
                elif newer is not None:
                    ctx.add("NTV003", f"link_speed={_q(speed)} is known only to newer NCCL; NCCL "
                                      f"{v} falls back to 6 Gb/s per lane (Gen3)", pci)
                else:
                    hint = ""
                    m = re.fullmatch(r"(\d+(?:\.\d+)?) GT/s", speed.strip())
                    if m:
                        hint = f" (write \"{m.group(1)} GT/s PCIe\")" if "." in m.group(1) else ""
                    ctx.add("NTS030", f"link_speed={_q(speed)} matches none of NCCL's strings{hint}: NCCL falls "
                                      "back to 6 Gb/s per lane (Gen3), whatever the real speed", pci)
            elif speed not in KNOWN_LINK_SPEEDS:
                ctx.add("NTS030", f"link_speed={_q(speed)} is not one of NCCL's strings; it works only because it "
                                  f"starts with {_q(key)}", pci)
        width = pci.get("link_width")
        if width is not None:
            num = strtol(width)
            n, full = num.value, num.whole
            if not full or n <= 0:
                ctx.add("NTS031", f"link_width={_q(width)}: NCCL reads {n}"
                                  + (", which it treats as x16" if n == 0 else ""), pci)

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
            ctx.add("NTS029", f"IB NIC busid={_q(busid)}: the IB plugin reports the NIC's PCI path with the "
                              "function forced to 0 and (NCCL_IB_MERGE_VFS=1, the default) the device to 00, so "
                              f"NCCL looks for {m.group(1)}:{m.group(2)}:00.0", pci)

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
                    ctx.add("NTS035", f"GPU busid={_q(busid)} has the low 2 bits set: NCCL 2.30.7+ fails ('BusId "
                                      "... has non-zero bits in MLOPart mask')", gpu)
            if gpu.has("rank"):
                ctx.add("NTS023", f"{_where(gpu)} has rank={_q(gpu.get('rank'))}: NCCL overwrites it on its own "
                                  "GPU, and a surviving file rank collides with real ranks", gpu)
            mlopart = gpu.get("mlopart")
            if mlopart is not None and v >= Version(2, 30, 7) and strtol(mlopart).value >= 2:
                ctx.add("NTS036", f"{_where(gpu)} mlopart={_q(mlopart)}: NCCL fails with 'MLOPart index out of "
                                  "range (max 1)'", gpu)
            gdr = gpu.get("gdr")
            if gdr is not None and strtol(gdr).value != 0:
                ctx.add("NTS024", f"{_where(gpu)} gdr={_q(gdr)}: NCCL trusts it and uses GPUDirect RDMA even "
                                  "where the GPU or driver does not support it", gpu)
            dev = gpu.get("dev")
            overrides = [a for a in ("dev", "sm") if gpu.has(a)]
            if gdr is not None and strtol(gdr).value == 0:
                overrides.append("gdr")
            if dev is not None:
                num = strtol(dev)
                n, full = num.value, num.whole
                if not full:
                    ctx.add("NTS027", f"{_where(gpu)} dev={_q(dev)} is not a number: NCCL reads {n}", gpu)
                elif n < 0:
                    ctx.add("NTS027", f"{_where(gpu)} dev={_q(dev)}: NCCL skips this GPU (no rank, trimmed)", gpu)
                elif n in devs:
                    ctx.add("NTS027", f"{_where(gpu)} dev={_q(dev)} is also the dev of the GPU at line "
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
                ctx.add("NTS018", f"<nvlink target={_q(target)}> without tclass: NCCL reads the target's class from "
                                  "sysfs on the GPU's own rank, and assumes an NVSwitch if it is not found", nv)
                continue
            keys = pci_class_keys(v)
            k = kv_lookup(tclass, keys)
            if k is None:
                if v < Version(2, 7, 0):
                    ctx.add("NTV008", f"tclass={_q(tclass)} is not in NCCL 2.6's dictionary: fatal", nv)
                else:
                    ctx.add("NTS041", f"tclass={_q(tclass)} is not a known class: NCCL treats the link as going to "
                                      "an NVSwitch", nv)
                continue
            if keys[k] != "GPU":
                continue
            if target is None:
                ctx.add("NTS017", f"<nvlink tclass={_q(tclass)}> (a GPU) without target: NCCL fails with "
                                  "'Attribute target of node nvlink not found'", nv)
                continue
            if gpu is None or gpu.name != "gpu":
                continue
            src = self._gpu_busid(gpu)
            if src is None:
                continue
            tid = busid_to_int(target)
            if tid not in gpus_by_id:
                ctx.add("NTS020", f"<nvlink target={_q(target)}> names a GPU that is not in the file: NCCL drops "
                                  "the link silently", nv)
                continue
            n = strtol(count or "0").value
            links[(busid_to_int(src), tid)] = (n, nv, src)
        for (a, b), (n, nv, src) in links.items():
            back = links.get((b, a))
            if back is None:
                ctx.add("NTS019", f"NVLink from {_q(src)} to {_q(nv.get('target'))} has no "
                                  "reverse <nvlink> on the target GPU: NCCL adds GPU-GPU links in one direction "
                                  "only ('Failed to find reverse path')", nv)
            elif back[0] != n and nv.offset < back[1].offset:
                ctx.add("NTS019", f"NVLink count {n} from {_q(src)} to "
                                  f"{_q(nv.get('target'))} but {back[0]} in the reverse direction", nv)

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
                reason = f"its class {_q(cls)} is not a PCI switch"
            if reason:
                ctx.add("NTS037", f"<pcilink> under {_where(parent)}, which does not become a PCI switch ({reason}): "
                                  "NCCL fails with 'Add PCI Link error : could not find PCI SW'", pl)
                continue
            if target is None or parent.get("busid") is None:
                continue
            links[(busid_to_int(parent.get("busid") or ""), busid_to_int(target))] = pl
        for (a, b), pl in links.items():
            if b not in switches:
                ctx.add("NTS021", f"<pcilink target={_q(pl.get('target'))}> names no <pci> in the file: NCCL "
                                  "ignores it", pl)
            elif (b, a) not in links:
                ctx.add("NTS021", f"<pcilink> from {_q(pl.parent.get('busid') if pl.parent else None)} to "
                                  f"{_q(pl.get('target'))} has no reverse <pcilink>: NCCL adds pcilinks in one "
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
                ctx.add("NTS024", f"{_where(net)} gdr={_q(gdr)}: NCCL trusts it and uses GPUDirect RDMA without "
                                  "checking plugin support", net)
            speed = net.get("speed")
            overrides = [a for a in ("speed", "port", "guid", "latency", "maxconn", "coll") if net.has(a)]
            if gdr is not None and strtol(gdr).value == 0:
                overrides.append("gdr")
            if speed is not None:
                num = strtol(speed)
                n, full = num.value, num.whole
                if not full or n <= 0:
                    ctx.add("NTS026", f"{_where(net)} speed={_q(speed)}: NCCL reads {n} and uses 10000 Mb/s "
                                      "(1.25 GB/s) instead", net)
                elif n < 1000:
                    ctx.add("NTS026", f"{_where(net)} speed={_q(speed)} Mb/s is {n / 8000:g} GB/s: speed is in "
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
                    ctx.add("NTS032", f"{_where(net)} has guid={_q(guid)} port={port} like the <net> at line "
                                      f"{ports[key].line}: NCCL treats them as one physical port (shared "
                                      "bandwidth; crossnic=0 rings may return on the other)", net)
                else:
                    ports[key] = net
            keys = set(net.keys())
            added = [a for a, since in _NET_ADDED if v >= since and a not in keys]
            total = len(net.attrs) + len(net.dropped_attrs) + len(added)
            if total > 17 and len(net.attrs) + len(net.dropped_attrs) <= 16:
                ctx.add("NTS040", f"{_where(net)} has {len(net.attrs)} attributes and NCCL may add "
                                  f"{len(added)} more ({', '.join(added)}): over the 17 slots of a node, which "
                                  "NCCL's setters do not check (memory corruption)", net)


# --------------------------------------------------------------------------------------------------
# Graph


def validate_graph(data: bytes, *, path: str, nccl_version: object = DEFAULT) -> list[Finding]:
    """Findings for ``data`` used as ``NCCL_GRAPH_FILE`` by NCCL ``nccl_version``."""
    version = parse(nccl_version)
    res = parse_nccl_xml(data, kind="graph", nccl_version=version, path=path)
    return _validate_graph_result(res, path)


def _validate_graph_result(res: ParseResult, path: str) -> list[Finding]:
    ctx = _Ctx(path, res.version)
    if _lexical(ctx, res):
        return ctx.result()
    _check_roots(ctx, res, "graphs", "NTG001", "NTG002")
    for ig in res.ignored:
        if ig.reason in ("wrong-root", "stray-close"):
            continue
        where = f"under <{ig.parent_name}>" if ig.parent_name else "at top level"
        ctx.add("NTG021", f"<{show_text(ig.name)}> {where}: NCCL ignores it with its whole subtree (hierarchy: "
                          "graphs > graph > channel > net|gpu)", ig)
    if res.root is not None:
        _check_graphs(ctx, res.root)
    return ctx.result()


_GRAPH_REQUIRED = ("id", "pattern", "crossnic", "nchannels", "speedintra", "speedinter", "typeintra", "typeinter",
                   "samechannels")
_GRAPH_INTS = ("id", "pattern", "crossnic", "nchannels", "samechannels")
_GRAPH_FLOATS = ("speedintra", "speedinter", "latencyinter")


def _check_graphs(ctx: _Ctx, root: XmlNode) -> None:
    v = ctx.version
    ids: dict[int, XmlNode] = {}
    for graph in root.children:
        if graph.name != "graph":
            continue
        missing = [a for a in _GRAPH_REQUIRED if not graph.has(a)]
        if missing:
            crash = [a for a in missing if a in ("typeintra", "typeinter")]
            how = ("NCCL passes the missing value to a string compare (crash)" if crash and len(crash) == len(missing)
                   else f"NCCL fails with 'Attribute {missing[0]} of node graph not found'")
            ctx.add("NTG004", f"<graph> lacks {', '.join(missing)}: {how}", graph)
        for a in _GRAPH_INTS:
            val = graph.get(a)
            if val is not None and not strtol(val).whole:
                ctx.add("NTG019", f"<graph> {a}={_q(val)} is not an integer: NCCL reads {strtol(val).value}", graph)
        for a in _GRAPH_FLOATS:
            val = graph.get(a)
            if val is not None and not c_strtof(val)[1]:
                ctx.add("NTG019", f"<graph> {a}={_q(val)} is not a number: NCCL reads {c_strtof(val)[0]:g}", graph)
        if graph.has("latencyinter") and v < Version(2, 12, 0):
            ctx.add("NTV002", f"<graph> attribute latencyinter is read only from NCCL 2.12: NCCL {v} "
                              "ignores it", graph)
        gid = strtol(graph.get("id") or "").value if graph.has("id") else None
        pattern = strtol(graph.get("pattern") or "").value if graph.has("pattern") else None
        if gid is not None:
            if gid in ids:
                ctx.add("NTG017", f"a second <graph id=\"{gid}\"> (the first is at line {ids[gid].line}): NCCL "
                                  "applies both in turn, so the last one's attributes win", graph)
            else:
                ids[gid] = graph
        _check_graph_kind(ctx, graph, gid, pattern)
        for a in ("typeintra", "typeinter"):
            val = graph.get(a)
            if val is None:
                continue
            if kv_lookup(val, link_type_keys(v)) is None:
                if kv_lookup(val, link_type_keys(DEFAULT)) is not None:
                    ctx.add("NTV004", f"{a}={_q(val)} is not in NCCL {v}'s path-type dictionary "
                                      "(NVB 2.8+, PXN 2.12+, P2C 2.27+): it falls back to LOC", graph)
                elif v < Version(2, 7, 0):
                    ctx.add("NTV008", f"{a}={_q(val)} is not in NCCL 2.6's dictionary: fatal", graph)
                else:
                    extra = (" (C2C, NET and DIS are path types NCCL cannot read or dump here: with "
                             "NCCL_GRAPH_DUMP_FILE set, init fails)" if val[:3] in ("C2C", "NET", "DIS") else "")
                    ctx.add("NTG005", f"{a}={_q(val)} is not one of LOC NVL NVB PIX PXB P2C PXN PHB SYS: NCCL "
                                      f"falls back to LOC{extra}", graph)
        crossnic = graph.get("crossnic")
        if crossnic is not None:
            cn = strtol(crossnic).value
            if cn not in (0, 1, 2):
                ctx.add("NTG013", f"crossnic={_q(crossnic)}: NCCL knows 0, 1 and 2", graph)
            elif cn == 1:
                ctx.add("NTG020", "crossnic=\"1\": NCCL skips this graph when NCCL_CROSS_NIC=0", graph)
        same = graph.get("samechannels")
        if same is not None and strtol(same).value not in (0, 1):
            ctx.add("NTG018", f"samechannels={_q(same)}: expected 0 or 1", graph)
        _check_channels(ctx, graph, gid)


def _check_graph_kind(ctx: _Ctx, graph: XmlNode, gid: int | None, pattern: int | None) -> None:
    v = ctx.version
    if gid is not None:
        if gid not in _EXPECTED_PATTERNS:
            ctx.add("NTG010", f"<graph id=\"{gid}\">: NCCL computes ids 0 (ring), 1 (tree), 2 (CollNet chain), "
                              "3 (NVLS) and 4 (CollNet direct) only, so this graph is never used", graph)
        elif (gid == 3 and v < Version(2, 18, 0)) or (gid == 4 and v < Version(2, 23, 0)):
            ctx.add("NTV006", f"graph id {gid} ({_GRAPH_NAMES[gid]}) does not exist in NCCL {v}: the "
                              "graph is never used", graph)
        elif pattern is not None and pattern not in _EXPECTED_PATTERNS[gid]:
            ctx.add("NTG010", f"<graph id=\"{gid}\"> ({_GRAPH_NAMES[gid]}) with pattern {pattern}: NCCL expects "
                              f"{' or '.join(str(p) for p in _EXPECTED_PATTERNS[gid])}, and the file's pattern "
                              "replaces NCCL's", graph)
    if pattern is not None and ((pattern == 5 and v < Version(2, 18, 0)) or (pattern == 6 and v < Version(2, 22, 0))):
        ctx.add("NTV006", f"pattern {pattern} does not exist in NCCL {v}", graph)


def _check_channels(ctx: _Ctx, graph: XmlNode, gid: int | None) -> None:
    v = ctx.version
    channels = [c for c in graph.children if c.name == "channel"]
    nch_s = graph.get("nchannels")
    nch = strtol(nch_s).value if nch_s is not None else None
    if nch is not None:
        if nch == 0 and not channels:
            ctx.add("NTG016", "nchannels=\"0\" and no <channel>: NCCL treats this graph as not provided", graph)
        elif nch != len(channels):
            what = (": NCCL ignores the graph and searches" if nch == 0 else
                    ": NCCL uses nchannels as is; missing channels are all rank 0, extra ones are dropped")
            ctx.add("NTG006", f"nchannels={_q(nch_s)} but the graph has {len(channels)} <channel> elements{what}",
                    graph)
        if gid in (0, 1) and nch > 32:
            ctx.add("NTG007", f"nchannels={nch} for a {_GRAPH_NAMES[gid]} graph: NCCL duplicates channels into "
                              "[n, 2n), so more than 32 overflows MAXCHANNELS (64)", graph)
        elif nch > 64:
            ctx.add("NTG007", f"nchannels={nch} is over MAXCHANNELS (64)", graph)
    if len(channels) > 64 and (nch is None or nch <= 64):
        ctx.add("NTG007", f"{len(channels)} <channel> elements: NCCL writes past MAXCHANNELS (64)", graph)
    gpu_counts: list[tuple[int, XmlNode]] = []
    net_counts: list[tuple[int, XmlNode]] = []
    for ch in channels:
        gpus = [c for c in ch.children if c.name == "gpu"]
        nets = [c for c in ch.children if c.name == "net"]
        gpu_counts.append((len(gpus), ch))
        net_counts.append((len(nets), ch))
        seen: dict[tuple[str, int], XmlNode] = {}
        for el in ch.children:
            dev = el.get("dev")
            if dev is None:
                ctx.add("NTG014", f"<{el.name}> without dev: NCCL fails with 'Attribute dev of node {el.name} not "
                                  "found'", el)
            else:
                _check_dev(ctx, el, dev)
            if el.name != "gpu":
                continue
            if el.has("rank"):
                ctx.add("NTG012", f"<gpu rank={_q(el.get('rank'))}>: NCCL uses the rank as is and ignores dev, "
                                  "which ties the file to one node's rank numbering"
                        + ("" if v >= Version(2, 30, 3) else f" (NCCL {v} ignores rank: read from 2.30.3)"),
                        el)
                key = ("rank", strtol(el.get("rank") or "").value)
            elif dev is not None:
                key = ("dev", strtol(dev, 16 if v >= Version(2, 21, 0) else 0).value)
            else:
                continue
            if key in seen:
                ctx.add("NTG015", f"<gpu {key[0]}=...> {key[1]} appears twice in this channel (first at line "
                                  f"{seen[key].line})", el)
            else:
                seen[key] = el
    if channels:
        if gid == 3:
            for n, ch in gpu_counts:
                if n < 1:
                    ctx.add("NTG008", "NVLS channel without <gpu>: each channel needs at least its head GPU", ch)
        else:
            first = gpu_counts[0][0]
            for n, ch in gpu_counts:
                if n == 0:
                    ctx.add("NTG008", "channel without <gpu>: its ranks stay 0", ch)
                elif n != first:
                    ctx.add("NTG008", f"channel lists {n} GPUs but the first channel lists {first}: every channel "
                                      "must list every local GPU once (extra entries spill into the next channel)",
                            ch)
        first_net = net_counts[0][0]
        for n, ch in net_counts:
            if n not in (0, 2):
                ctx.add("NTG009", f"channel has {n} <net> elements: NCCL expects 0 (single node) or 2 (first and "
                                  "last); extra ones spill into the next channel", ch)
            elif n != first_net and first_net in (0, 2):
                ctx.add("NTG009", f"channel has {n} <net> elements but the first channel has {first_net}", ch)


def _check_dev(ctx: _Ctx, el: XmlNode, dev: str) -> None:
    s = dev.strip()
    if s[:2] in ("0x", "0X") or s == "":
        return
    if re.fullmatch(r"[0-9]", s):
        return
    if re.fullmatch(r"[0-9]+", s):
        hexv = int(s, 16)
        dec = int(s, 10)
        ctx.add("NTG011", f"<{el.name} dev={_q(dev)}>: NCCL 2.21+ reads dev as hex ({hexv}), NCCL 2.20 and older "
                          f"as decimal ({dec}); write 0x{dec:x} (or 0x{hexv:x})", el)
    elif re.fullmatch(r"[0-9a-fA-F]+", s):
        ctx.add("NTG011", f"<{el.name} dev={_q(dev)}>: hex without 0x is {int(s, 16)} for NCCL 2.21+ but 0 for "
                          f"NCCL 2.20 and older; write 0x{int(s, 16):x}", el)
    else:
        ctx.add("NTG011", f"<{el.name} dev={_q(dev)}> is not a number: NCCL reads "
                          f"{strtol(dev, 16).value} (2.21+)", el)


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

        findings = findings + xsd_findings(data, kind, str(path))
    return findings
