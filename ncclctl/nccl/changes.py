"""Which NCCL the model is, and what NCCL changed after it: one table, keyed by release.

ncclctl's model of a node (:mod:`~ncclctl.nccl.build`, :mod:`~ncclctl.nccl.paths`, :mod:`~ncclctl.nccl.search`,
:mod:`~ncclctl.nccl.connect`, :mod:`~ncclctl.nccl.tuning`) follows NCCL's code of :data:`MODELLED`, checked against
NCCL's own ``src/graph`` run on CPU (``tests/data/nccl_expected/``). Older releases are followed through the
version gates next to the code they gate. For a newer release the model still runs :data:`MODELLED`'s code, except
for the changes below marked ``modelled`` (gated on the release asked for); :func:`after` lists the others, and
:func:`applies` says whether one concerns a given node.

Each :class:`Change` names the release it first shipped in, where it was checked (the source file at a commit, the
released library's strings, or only the issue text that reported it: ``checked``), and whether ncclctl models it.
The next release is a table update: add its rows (and the release to :data:`ncclctl.nccl.version.RELEASES`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from ncclctl.nccl.version import DEFAULT, Version
from ncclctl.record import record

#: The release whose code the model follows (what ``topo predict`` and ``rings graph`` compute).
MODELLED: Version = DEFAULT

#: Where a change was checked, strongest first.
CHECKED = {
    "harness": "NCCL's own code of that release run on CPU against the fixtures (tests/data/nccl_expected)",
    "source": "read in NCCL's source of that release (file named)",
    "library": "seen in the released library (its strings: variable names, messages)",
    "reported": "reported (issue text, release notes) and not checked against NCCL's code here",
}

#: The NCCL source the harness and the ``source`` rows of 2.31 were checked against: the 2.31.0a7 pre-release
#: (NVIDIA/nccl ``dev`` branch; no 2.31.x tag is public). 2.31.2 and 2.32.3 exist as libraries only.
SOURCE_2_31 = "NVIDIA/nccl 2.31.0a7 pre-release, commit 86fa684d3bd5"

# PCI device ids of NVIDIA (Mellanox) NICs the changes name.
CONNECTX8 = "0x1023"
CONNECTX9 = "0x1025"


@record
class Change:
    """One behaviour change of NCCL after :data:`MODELLED`."""

    #: The first release that has it (``2.31.0`` for anything of the 2.31 line).
    release: Version
    #: Stable id (``2.31/amd-zen-bw``).
    key: str
    #: ``topology`` (what NCCL reads and builds), ``search`` (channels), ``tuning``, ``net`` (plugin, NICs).
    area: str
    #: What changed, in one sentence.
    summary: str
    #: The condition a node must meet for the change to concern it (a key of :data:`CONDITIONS`).
    when: str
    #: Where it was checked: a key of :data:`CHECKED`.
    checked: str
    #: The file(s) and release or commit it was checked in.
    source: str
    #: Whether ncclctl models it when asked for that release (``--nccl-version``).
    modelled: bool = False


#: Every known change after :data:`MODELLED`, oldest release first.
CHANGES: tuple[Change, ...] = (
    Change(Version(2, 31, 0), "2.31/amd-zen-bw", "topology",
           "inter-socket bandwidth of AMD CPUs by generation: Zen 3/4 (familyid 175 or 25) 24 GB/s, Zen 5 (191 or 26) "
           "32 GB/s, Zen 1/2 16 GB/s as before (2.30.7: 16 GB/s for every AMD CPU); paths crossing sockets gain "
           "bandwidth (cloud-vm-flat, 2 x EPYC 9V84: SYS paths 24 GB/s, and with P2P off other rings and trees)",
           "amd_zen3plus_multi_socket", "harness",
           f"src/graph/topo.cc, topo.h ({SOURCE_2_31})", modelled=True),
    Change(Version(2, 31, 0), "2.31/intel-gnr-erp", "topology",
           "Intel Granite Rapids and Sierra Forest (family 6, model 0xAD/0xAE/0xAF) are read as Emerald Rapids "
           "(2.30.7: Sapphire Rapids), so the inter-socket bandwidth NCCL assumes rises", "intel_gnr_multi_socket",
           "source", f"src/graph/topo.cc ({SOURCE_2_31})", modelled=True),
    Change(Version(2, 31, 0), "2.31/cpu-familyid", "topology",
           "detection writes the CPUID family as is (AMD: 25, 26; 2.30.7 wrote 175, 191), the extended model only "
           "for families 6 and 15; 2.31 reads both AMD spellings ('topo generate --nccl-version' writes each "
           "release's)", "amd_cpu", "source", f"src/graph/xml.cc, topo.cc ({SOURCE_2_31})", modelled=True),
    Change(Version(2, 31, 0), "2.31/nvlink-tclass", "topology",
           "an <nvlink> without tclass is no longer filled in (2.30.7 read the target's PCI class, else assumed an "
           "NVSwitch): NCCL stops (attribute tclass not found)", "nvlink_without_tclass", "harness",
           f"src/graph/xml.cc, topo.cc ({SOURCE_2_31})", modelled=True),
    Change(Version(2, 31, 0), "2.31/tuning-rewrite", "tuning",
           "tuning moved from src/graph/tuning.cc to src/tuning/ (a cost model per algorithm): AllReduce ring and "
           "tree bandwidths per protocol as 2.30.7's on every fixture case run but the two rows below",
           "multi_gpu", "harness",
           f"src/tuning/*.cc ({SOURCE_2_31})"),
    Change(Version(2, 31, 0), "2.31/tree-two-nodes", "tuning",
           "AllReduce tree bandwidth at 2 nodes is min(bwIntra, bwInter) per channel (2.30.7: bwIntra up to 2 nodes), "
           "so tree bandwidths drop where the tree's bwIntra exceeds its bwInter (dgx-a100 by default: tree Simple "
           "88.32 GB/s, 2.30.7 94.4; dgx-h100 with NCCL_NET_GDR_LEVEL=LOC: 69, 2.30.7 103.5); only in the "
           "pre-release, 2.31.2 not checked",
           "two_nodes", "harness", f"src/tuning/tree.cc ({SOURCE_2_31}); 2.30.7: src/graph/tuning.cc"),
    Change(Version(2, 31, 0), "2.31/ll128-path-rule", "tuning",
           "LL128's path rule (intra-node up to NVB, network up to PXN on sm90+) is applied only when NCCL_PROTO or "
           "NCCL_ALGO is set: otherwise LL128 stays on where 2.30.7 turned it off (PCIe-only A100 nodes, even on 1 "
           "node: ring LL128 12.62 GB/s on pcie-server; H100 with P2P or GPUDirect RDMA off); only in the "
           "pre-release, 2.31.2 not checked", "ll128_path_off", "harness",
           f"src/tuning/cost_model.cc ({SOURCE_2_31}); 2.30.7: src/graph/tuning.cc"),
    Change(Version(2, 31, 2), "2.31/start-nic", "search",
           "consistent start-NIC selection across ranks, limited to Blackwell GPUs with ConnectX-8 NICs "
           "(NCCL_TOPO_SCATTER_START_NET is read by 2.31.2 only)", "blackwell_connectx8", "library",
           "libnccl.so 2.31.2 (nvidia-nccl-cu12 wheel): NCCL_TOPO_SCATTER_START_NET; the selection itself reported"),
    Change(Version(2, 31, 2), "2.31/gb300-channels", "search",
           "GB300 favours 8 channels with PXN off", "gb300", "reported",
           "issue 27 (release notes); not in the 2.31.0a7 source"),
    Change(Version(2, 32, 0), "2.32/ib-rail-policy", "net",
           "NCCL_IB_RAIL_POLICY (CX9, CX9:FLIP, CX9:ALT, CX9:BLOCK, NONE) assigns rails to ConnectX-9 ports; "
           "'NCCL cannot use more than N rails', 'No rails found for GPU/N'", "connectx9", "library",
           "libnccl.so 2.32.3 (nvidia-nccl-cu12 wheel): NCCL_IB_RAIL_POLICY and its values"),
    Change(Version(2, 32, 0), "2.32/ib-sort-merge-nics", "net",
           "NCCL_IB_SORT_MERGE_NICS orders the NICs fused into one virtual NIC", "fused_nics", "library",
           "libnccl.so 2.32.3 (nvidia-nccl-cu12 wheel): NCCL_IB_SORT_MERGE_NICS"),
    Change(Version(2, 32, 0), "2.32/rail-plane-consistency", "topology",
           "a NET given different rail/plane ids by two sources is reported (TOPO/NET: Inconsistent rail/plane)",
           "rail_ids", "library", "libnccl.so 2.32.3 (nvidia-nccl-cu12 wheel)"),
)


@dataclass
class Traits:
    """What the conditions look at, from the topology NCCL reads and (when known) the node's PCI devices."""

    #: (vendor, familyid, modelid) of each x86 ``<cpu>``; (arch, None, None) for the others.
    cpus: list[tuple[str, int | None, int | None]] = field(default_factory=list)
    #: ``sm`` of each ``<gpu>``.
    sms: list[int] = field(default_factory=list)
    #: ``<nvlink>`` elements without ``tclass``.
    nvlink_without_tclass: int = 0
    #: ``<net>`` names, and whether any carries rail/plane ids.
    nets: list[str] = field(default_factory=list)
    rail_ids: bool = False
    #: PCI device ids of the node's NICs; None: not known (a topology file alone).
    nic_devices: frozenset[str] | None = None
    #: The NCCL settings the prediction uses.
    env: dict[str, str] = field(default_factory=dict)
    #: Nodes in the job (identical ones).
    nodes: int = 1
    #: Whether 2.30.7's tuning turned LL128 off for a path type on this node (None: not predicted).
    ll128_path_off: bool | None = None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return None


def traits_from_tree(root, *, env: dict[str, str] | None = None, nic_devices: Iterable[str] | None = None,
                     nodes: int = 1, ll128_path_off: bool | None = None) -> Traits:
    """:class:`Traits` of a parsed topology (``root``: the ``<system>`` node, an :class:`ncclctl.nccl.xml.XmlNode`
    or any tree with ``name``, ``get`` and ``children``)."""
    t = Traits(env=dict(env or {}), nic_devices=None if nic_devices is None else frozenset(nic_devices),
               nodes=nodes, ll128_path_off=ll128_path_off)
    stack = [root]
    while stack:
        n = stack.pop()
        stack.extend(reversed(n.children))
        if n.name == "cpu":
            if n.get("arch") == "x86_64":
                t.cpus.append((n.get("vendor") or "", _int(n.get("familyid")), _int(n.get("modelid"))))
            else:
                t.cpus.append((n.get("arch") or "", None, None))
        elif n.name == "gpu":
            sm = _int(n.get("sm"))
            if sm is not None:
                t.sms.append(sm)
        elif n.name == "nvlink" and n.get("tclass") is None:
            t.nvlink_without_tclass += 1
        elif n.name == "net":
            t.nets.append(n.get("name") or "")
            t.rail_ids = t.rail_ids or n.get("rail") is not None or n.get("plane") is not None
    return t


#: The releases the modelled rows take effect from (the version gates in :mod:`ncclctl.nccl.build`).
AMD_ZEN_BW_SINCE = Version(2, 31, 0)
GNR_AS_ERP_SINCE = Version(2, 31, 0)
NVLINK_TCLASS_REQUIRED_SINCE = Version(2, 31, 0)
AMD_ZEN34 = frozenset({0xAF, 25})
AMD_ZEN5 = frozenset({0xBF, 26})
INTEL_GNR_SRF = frozenset({0xAD, 0xAE, 0xAF})


def amd_generation(familyid: int | None) -> str:
    """``zen5``, ``zen34`` or ``zen12``: how NCCL 2.31 classes an AMD CPU by its ``familyid``."""
    return "zen5" if familyid in AMD_ZEN5 else "zen34" if familyid in AMD_ZEN34 else "zen12"


def _nics(t: Traits, device: str, name: str) -> tuple[bool | None, str]:
    if t.nic_devices is None:
        return None, f"the node's NICs are not known (a topology file does not say whether they are {name})"
    if device in t.nic_devices:
        return True, f"the node has {name} NICs"
    return False, f"no {name} NIC on the node"


def _cond(when: str, t: Traits) -> tuple[bool | None, str]:
    sockets = len(t.cpus)
    if when == "amd_zen3plus_multi_socket":
        gens = sorted({amd_generation(f) for v, f, _ in t.cpus if v == "AuthenticAMD"} - {"zen12"})
        if not gens:
            return False, "no AMD Zen 3/4/5 CPU"
        if sockets < 2:
            return False, f"AMD {'/'.join(gens)}, but one CPU: no path crosses sockets"
        return True, f"{sockets} AMD {'/'.join(gens)} CPUs"
    if when == "intel_gnr_multi_socket":
        if not any(v == "GenuineIntel" and f == 6 and m in INTEL_GNR_SRF for v, f, m in t.cpus):
            return False, "no Granite Rapids / Sierra Forest CPU"
        if sockets < 2:
            return False, "Granite Rapids / Sierra Forest, but one CPU: no path crosses sockets"
        return True, f"{sockets} Granite Rapids / Sierra Forest CPUs"
    if when == "amd_cpu":
        if any(v == "AuthenticAMD" for v, _, _ in t.cpus):
            return True, "AMD CPUs"
        return False, "no AMD CPU"
    if when == "nvlink_without_tclass":
        if t.nvlink_without_tclass:
            return True, f"{t.nvlink_without_tclass} <nvlink> without tclass in the topology"
        return False, "every <nvlink> has a tclass"
    if when == "multi_gpu":
        return (True, "every multi-rank job") if len(t.sms) > 1 or t.nets else (False, "one GPU and no NET")
    if when == "two_nodes":
        if t.nodes != 2:
            return False, f"{t.nodes} node{'s' if t.nodes != 1 else ''}, not 2"
        return None, "2 nodes: differs where the tree's bwIntra exceeds its bwInter"
    if when == "ll128_path_off":
        if t.env.get("NCCL_PROTO") or t.env.get("NCCL_ALGO"):
            return False, "NCCL_PROTO/NCCL_ALGO is set: the rule still applies"
        if t.ll128_path_off is None:
            return None, "the tuning was not predicted"
        if t.ll128_path_off:
            return True, "2.30.7 turns LL128 off for this node's paths"
        return False, "LL128 is on for this node's paths in 2.30.7 too"
    if when == "blackwell_connectx8":
        if not any(sm >= 100 for sm in t.sms):
            return False, "no Blackwell GPU"
        got, why = _nics(t, CONNECTX8, "ConnectX-8")
        return got, "Blackwell GPUs; " + why
    if when == "gb300":
        if any(sm == 103 for sm in t.sms):
            return True, "GB300 GPUs (sm 103)"
        return False, "no GB300 GPU"
    if when == "connectx9":
        if "NCCL_IB_RAIL_POLICY" in t.env:
            return True, f"NCCL_IB_RAIL_POLICY={t.env['NCCL_IB_RAIL_POLICY']} is set"
        return _nics(t, CONNECTX9, "ConnectX-9")
    if when == "fused_nics":
        if any("+" in n for n in t.nets) or "NCCL_IB_SORT_MERGE_NICS" in t.env:
            return True, "NICs fused into virtual NICs"
        return False, "no fused NIC"
    if when == "rail_ids":
        if t.rail_ids:
            return True, "<net> elements carry rail/plane ids"
        return False, "no rail/plane ids in the topology"
    raise KeyError(when)


#: Every condition :func:`applies` knows (the ``when`` of a :class:`Change`).
CONDITIONS = ("amd_zen3plus_multi_socket", "intel_gnr_multi_socket", "amd_cpu", "nvlink_without_tclass", "multi_gpu",
              "two_nodes", "ll128_path_off",
              "blackwell_connectx8", "gb300", "connectx9", "fused_nics", "rail_ids")


def after(modelled: Version, upto: Version) -> list[Change]:
    """The changes of releases after ``modelled`` up to ``upto`` (a 2.31 pre-release's changes count as 2.31.0)."""
    return [c for c in CHANGES if modelled < c.release <= upto]


def applies(change: Change, traits: Traits) -> tuple[bool | None, str]:
    """Whether ``change`` concerns a node: True, False or None (cannot tell), and why."""
    return _cond(change.when, traits)


def model_release(asked: Version) -> Version:
    """The release whose code the model runs for ``asked``: ``asked`` itself up to :data:`MODELLED`, else
    :data:`MODELLED` (with the ``modelled`` changes of :func:`after` applied)."""
    return asked if asked <= MODELLED else MODELLED


@dataclass
class Report:
    """The release asked for, the release modelled, and the changes after it that concern the node."""

    asked: Version
    modelled: Version
    #: The release the changes run up to (the asked one, or the node's newer library).
    upto: Version
    #: Where ``upto`` came from: ``--nccl-version`` or ``the node's libnccl``.
    upto_from: str
    rows: list[tuple[Change, bool | None, str]] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"release_asked": str(self.asked), "release_modelled": str(self.modelled),
                "changes_up_to": str(self.upto), "changes_up_to_from": self.upto_from,
                "changes_after": [{"release": str(c.release), "key": c.key, "area": c.area, "summary": c.summary,
                                   "applies": ok, "why": why, "checked": c.checked, "source": c.source,
                                   "modelled": c.modelled} for c, ok, why in self.rows]}

    def lines(self) -> list[str]:
        """The text block (empty when nothing after the release modelled is asked for or installed)."""
        if not self.rows and self.upto <= self.modelled:
            return []
        head = (f"Changes in NCCL after {self.modelled} up to {self.upto} ({self.upto_from}): "
                f"{sum(1 for _, ok, _ in self.rows if ok)} apply, "
                f"{sum(1 for _, ok, _ in self.rows if ok is None)} may apply, "
                f"{sum(1 for _, ok, _ in self.rows if ok is False)} do not")
        out = [head + " (--format json gives each row's source)"]
        mark = {True: "applies", None: "may apply"}
        for c, ok, why in self.rows:
            if ok is False:
                continue
            tail = ("modelled" if c.modelled and self.asked >= c.release else
                    f"modelled with --nccl-version {c.release}" if c.modelled else "not modelled")
            out.append(f"  {str(c.release):<7} {mark[ok]:<9} {c.area:<8} {c.summary} [{why}; checked: {c.checked}; "
                       f"{tail}]")
        rest = [f"{c.key} ({why})" for c, ok, why in self.rows if ok is False]
        if rest:
            out.append("  not for this node: " + "; ".join(rest))
        return out


def release_of(text: str | None) -> Version | None:
    """The release a library's version text names (``2.31.2``, ``2.31.0a7``, ``2.28.9+cuda12.9``); None if none."""
    m = re.match(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return None if m is None else Version(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def report(asked: Version, traits: Traits, *, node_versions: Iterable[str] = ()) -> Report:
    """:class:`Report` for a prediction asked for ``asked`` on a node with ``traits``; ``node_versions``: the
    releases of the node's NCCL libraries (the newest one newer than the model sets how far the list runs)."""
    modelled = model_release(asked)
    upto, src = asked, "--nccl-version"
    for text in node_versions:
        v = release_of(text)
        if v is not None and v > upto and v > MODELLED:
            upto, src = v, "the node's libnccl"
    rows = [(c, *applies(c, traits)) for c in after(modelled, upto)]
    return Report(asked=asked, modelled=modelled, upto=upto, upto_from=src, rows=rows)


def modelled_note(rep: Report, what: str = "channels") -> str:
    """One line for outputs that show the model's result without the whole list (``rings graph``)."""
    head = f"{what} as NCCL {rep.modelled} computes them (the release modelled"
    head += f"; {rep.asked} asked for)" if rep.asked != rep.modelled else ")"
    if rep.upto <= rep.modelled:
        return head
    hits = [c.key for c, ok, _ in rep.rows if ok is not False]
    if not hits:
        return head + f"; none of the changes known after it up to {rep.upto} ({rep.upto_from}) concerns this node"
    return (head + f"; after it up to {rep.upto} ({rep.upto_from}), {len(hits)} known change(s) concern this node: "
            + ", ".join(hits) + f" (ncclctl topo predict --nccl-version {rep.upto} lists them)")
