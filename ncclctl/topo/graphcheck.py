"""What a graph file (``NCCL_GRAPH_FILE``) means on a node, checked with NCCL's own model (rules NTG022-NTG031).

NCCL trusts a loaded graph file (``search.cc``, the NCCL_GRAPH_FILE branch of ``ncclTopoCompute``): ``typeintra``,
``typeinter``, ``speedintra``, ``speedinter``, ``pattern`` and ``crossnic`` are stored verbatim and drive the tuning
(``tuning.cc``: LL128 needs ``typeInter <= PXN`` on sm90 and later, ``<= PXB`` below, and ``typeIntra <= NVB``;
busBw is nChannels x bwIntra on up to 2 nodes, x bwInter beyond), the net devs are used without a check until
connect time, and a GPU dev that is not in the job fails the load. The structure rules (:mod:`.validate`) cannot
see any of that: this module builds NCCL's system for the node from the topology NCCL reads there
(:mod:`ncclctl.nccl.build`, :mod:`ncclctl.nccl.paths`, through :func:`ncclctl.nccl.predict.predict_xml`) and
compares the file with it:

* NTG022: the declared path types against the real path types of the channels' hops and endpoints;
* NTG023/NTG024: the declared speeds against the bandwidth the channels' paths can carry, with search.cc's
  ``followPath`` accounting (every channel subtracts its speed from every link of every path it uses: a link shared
  by channels carries the sum; PCI through an Intel CPU costs 6/5; a NET gives each channel that starts on it
  ``speedinter`` of its own bandwidth). These are bounds from the path model, not NCCL's own search result;
* NTG025: speeds NCCL's search never produces for the GPUs' sm;
* NTG026: ``crossnic`` against the channels' in/out nets and connect.cc's odd-node ring swap (no model needed);
* NTG027: nets that land on a NIC far from the channel's GPU, without GPUDirect RDMA, or that is no rail;
* NTG028: GPU sets (every channel must list exactly the job's GPUs) and GPU devs that do not exist;
* NTG029: net devs that do not exist after NCCL_IB_HCA and NIC fusion;
* NTG030: channels that end on a GPU reaching its NET through another GPU (PXN); NTG031: tree pattern 3 below sm90;
* NTG033: what the settings forbid (crossnic under NCCL_CROSS_NIC=0; a typeinter better than the NIC paths are under
  NCCL_PXN_DISABLE or NCCL_NET_GDR_LEVEL);
* NTG034: under restricting settings, NCCL's own search does better than the file (:mod:`ncclctl.nccl.layouts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ncclctl.findings import Finding, Severity
from ncclctl.nccl import system as s
from ncclctl.nccl.params import strtol
from ncclctl.nccl.system import CPU, GPU, NET, Node, Path
from ncclctl.nccl.version import DEFAULT, Version
from ncclctl.topo.rules import rule

if TYPE_CHECKING:  # pragma: no cover
    from ncclctl.model import Node as HostNode
    from ncclctl.nccl.predict import Prediction
    from ncclctl.nccl.xml import ParseResult, XmlNode

RING, BALANCED_TREE, SPLIT_TREE, TREE = 4, 1, 2, 3
_PATTERN_NAME = {RING: "ring", BALANCED_TREE: "balanced tree", SPLIT_TREE: "split tree", TREE: "tree"}
_GRAPH_NAME = {0: "ring", 1: "tree"}
#: kvDictLinkType (search.cc): the names a graph file's typeintra/typeinter may take, in lookup order.
_TYPE_KEYS = (("LOC", s.PATH_LOC), ("NVL", s.PATH_NVL), ("NVB", s.PATH_NVB), ("PIX", s.PATH_PIX),
              ("PXB", s.PATH_PXB), ("P2C", s.PATH_P2C), ("PXN", s.PATH_PXN), ("PHB", s.PATH_PHB),
              ("SYS", s.PATH_SYS))

#: search.cc speed arrays, by (arch, multi-node).
SPEEDS: dict[tuple[int, bool], tuple[float, ...]] = {
    (0, False): (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
    (0, True): (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24,
                0.12),
    (90, False): (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
    (90, True): (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
    (100, False): (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
    (100, True): (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4,
                  1.2, 0.24, 0.12),
}
_ARRAY_NAME = {(0, False): "speedArrayIntra", (0, True): "speedArrayInter", (90, False): "sm90SpeedArrayIntra",
               (90, True): "sm90SpeedArrayInter", (100, False): "sm100SpeedArrayIntra",
               (100, True): "sm100SpeedArrayInter"}
_EPS = 1e-3  # search.cc rounds link bandwidths to 1/1000 (SUB_ROUND)
_BOUND = "a bound from NCCL's path model, not NCCL's own search result"


def _arch(sm: int) -> int:
    return 100 if sm >= 100 else 90 if sm >= 90 else 0


def _type_value(text: str | None) -> int:
    """kvConvertToInt over kvDictLinkType: the first key the value starts with; LOC when none (NTG005)."""
    for key, value in _TYPE_KEYS:
        if text is not None and text.startswith(key):
            return value
    return s.PATH_LOC


def _tname(t: int) -> str:
    return s.PATH_TYPE_STR[t]


def _f(v: float) -> str:
    return f"{round(v, 2):g}"


def _ranges(nums: list[int]) -> str:
    """``0-3, 5, 7``."""
    from ncclctl.sysfs import format_cpulist

    return format_cpulist(nums).replace(",", ", ")


def _channels(nums: list[int]) -> str:
    nums = sorted(set(nums))
    return f"channel {nums[0]}" if len(nums) == 1 else f"channels {_ranges(nums)}"


def _node_name(n: Node) -> str:
    if n.type in (GPU, s.DEV):
        return f"GPU {n.dev}"
    if n.type == NET:
        return n.name
    if n.type == s.NVS:
        return "NVSwitch"
    if n.type == CPU:
        return f"CPU ({n.label.replace('numa', 'NUMA')})"
    if n.type == s.PCI:
        return f"PCI switch {n.label}"
    if n.type == s.NIC:
        return f"NIC {n.label}"
    if n.type == s.CXB:
        return "C2C bridge"
    return repr(n)


# --------------------------------------------------------------------------------------------------
# The file's graphs as NCCL loads them


@dataclass
class Chan:
    index: int
    el: "XmlNode"
    gpus: list["XmlNode"]
    nets: list["XmlNode"]
    #: Index in NCCL's GPU list of each <gpu> (None: not in the system).
    gpu_idx: list[int | None] = field(default_factory=list)
    #: dev of each <net> (None: no dev).
    net_devs: list[int | None] = field(default_factory=list)


@dataclass
class Graph:
    el: "XmlNode"
    gid: int
    pattern: int
    crossnic: int
    si: float
    se: float
    ti: int
    te: int
    channels: list[Chan]

    @property
    def name(self) -> str:
        return _GRAPH_NAME.get(self.gid, f"graph {self.gid}")

    @property
    def multi(self) -> bool:
        """Channels with their two nets: a graph for more than one node."""
        return bool(self.channels) and all(len(c.nets) == 2 for c in self.channels)


def _float(text: str | None) -> float:
    from ncclctl.nccl.params import c_strtof

    return c_strtof(text or "")[0]


def _int(text: str | None) -> int:
    return strtol(text or "").value or 0


def read_graphs(root: "XmlNode", version: Version = DEFAULT) -> list[Graph]:
    """The ring (id 0) and tree (id 1) graphs NCCL loads from the file, each with the channels NCCL uses
    (``nchannels`` of them), in file order; graphs NCCL skips (crossnic 1 under NCCL_CROSS_NIC=0 is the caller's
    business) or with no channel are left out."""
    out = []
    for el in root.children:
        if el.name != "graph" or not el.has("id"):
            continue
        gid = _int(el.get("id"))
        if gid not in (0, 1):
            continue
        chans = [c for c in el.children if c.name == "channel"]
        nch = _int(el.get("nchannels"))
        if nch <= 0 or not chans:
            continue
        chans = chans[:nch]
        channels = []
        for i, c in enumerate(chans):
            gpus = [x for x in c.children if x.name == "gpu"]
            nets = [x for x in c.children if x.name == "net"]
            channels.append(Chan(i, c, gpus, nets))
        out.append(Graph(el, gid, _int(el.get("pattern")), _int(el.get("crossnic")), _float(el.get("speedintra")),
                         _float(el.get("speedinter")), _type_value(el.get("typeintra")),
                         _type_value(el.get("typeinter")), channels))
    return out


def _dev(el: "XmlNode", version: Version) -> int | None:
    text = el.get("dev")
    if text is None:
        return None
    return strtol(text, 16 if version >= Version(2, 21, 0) else 0).value


# --------------------------------------------------------------------------------------------------
# Findings


class _Out:
    def __init__(self, path: str) -> None:
        self.path = path
        self.findings: list[Finding] = []

    def add(self, rule_id: str, message: str, el: "XmlNode", *, fix: str | None = None,
            severity: Severity | None = None, evidence: tuple[str, ...] = (),
            locations: tuple[tuple[int, int | None, str], ...] = ()) -> None:
        r = rule(rule_id)
        self.findings.append(Finding(rule_id, severity or r.severity, message, self.path, el.line, el.column,
                                     fix or r.fix, evidence or (el.start_tag(),), locations=locations))


# --------------------------------------------------------------------------------------------------
# Rails across nodes (NTG026): no model needed


def check_crossnic(graphs: list[Graph], out: _Out) -> None:
    """The channels' in/out nets against crossnic and connect.cc's odd-node swap ("Alternate rings to avoid crossing
    rails": with crossnic 2 and an even channel count, odd nodes exchange channels c and c^1)."""
    for g in graphs:
        if not g.multi or any(d is None for c in g.channels for d in _net_devs(c)):
            continue
        ins = [_net_devs(c)[0] for c in g.channels]
        outs = [_net_devs(c)[1] for c in g.channels]
        differ = [c.index for c in g.channels if ins[c.index] != outs[c.index]]
        if g.gid == 1 or g.pattern != RING:
            if differ and (g.crossnic == 0 or g.pattern == TREE):
                why = ("a tree (pattern 3) enters and leaves on the same NET" if g.pattern == TREE else
                       "crossnic 0 keeps a channel on one NIC port")
                out.add("NTG026", f"crossnic=\"{g.crossnic}\" {g.name} but {_channels(differ)} enter on one net and "
                                  f"leave on another (channel {differ[0]}: net {ins[differ[0]]} in, "
                                  f"{outs[differ[0]]} out): NCCL's search never builds this ({why}); NCCL uses it "
                                  "as written", g.el)
            continue
        n = len(g.channels)
        swap = g.crossnic == 2 and n % 2 == 0
        crossing: list[str] = []
        for c in range(n):
            if swap:
                # even node k sends on out[c]; odd node k+1 runs the file's channel c^1 as its channel c
                pairs = [(outs[c], ins[c ^ 1], f"node 2k's channel {c} leaves on net {outs[c]}, node 2k+1 "
                                                f"receives it on net {ins[c ^ 1]} (its channel {c ^ 1} of the file)")]
            else:
                pairs = [(outs[c], ins[c], f"node k's channel {c} leaves on net {outs[c]}, node k+1 receives it on "
                                           f"net {ins[c]}")]
            crossing += [text for a, b, text in pairs if a != b]
        if not crossing:
            continue
        if swap and not differ:
            msg = (f"crossnic=\"2\" with every channel entering and leaving on the same net: NCCL swaps channels c and "
                   f"c^1 on odd nodes (connect.cc, 'Alternate rings to avoid crossing rails', {n} channels is even), "
                   f"so {crossing[0]}: every hop between an even and an odd node crosses rails (traffic through the "
                   "spine on a rail-optimized fabric)")
            fix = ("Set crossnic=\"0\" for channels that enter and leave on the same NIC, or pair the channels as NCCL "
                   "does (channel c enters on rail c and leaves on rail c^1)")
        elif g.crossnic == 0:
            msg = (f"crossnic=\"0\" but {_channels(differ)} enter on one net and leave on another: NCCL's search never "
                   "builds this (crossnic 0 keeps a channel on one NIC port); loaded as written, and without the "
                   f"odd-node swap (crossnic 2 only): {crossing[0]}, a hop across rails")
            fix = ("Enter and leave each channel on the same net, or use crossnic=\"2\" with the channels paired (c "
                   "enters on rail c and leaves on rail c^1, c^1 the other way round)")
        else:
            how = ("NCCL swaps channels c and c^1 on odd nodes (crossnic 2, an even channel count)" if swap else
                   f"NCCL does not swap channels ({'an odd channel count' if g.crossnic == 2 else 'crossnic 1'})")
            msg = (f"{len(crossing)} of the {n} ring channels cross rails between nodes: {how}, and "
                   f"{crossing[0]}" + (f" (and {len(crossing) - 1} more)" if len(crossing) > 1 else ""))
            fix = ("Pair the channels so that a channel's out net is the in net of the channel that follows it on the "
                   "next node (NCCL's layout: c enters on rail c and leaves on rail c^1, with crossnic=\"2\")")
        out.add("NTG026", msg + " (with an even number of nodes; the ring closes across the same hop)", g.el, fix=fix)


def _net_devs(c: Chan) -> list[int | None]:
    return c.net_devs


# --------------------------------------------------------------------------------------------------
# The model


@dataclass
class Model:
    """What the checks compare the file with: NCCL's system for the node (paths computed, trimmed to the job) and
    how to rebuild it with other settings."""

    pred: "Prediction"
    #: predict(extra settings) -> a Prediction with the same topology and settings plus those.
    build: Callable[[dict[str, str]], "Prediction"]
    host: "HostNode | None" = None
    #: NCCL's view with the checked file loaded as NCCL_GRAPH_FILE, and NCCL's own search without any (NTG034).
    load: Callable[[], "Prediction"] | None = None
    own: Callable[[], "Prediction"] | None = None
    _cache: dict[tuple, "Prediction"] = field(default_factory=dict)

    @property
    def system(self) -> s.System:
        return self.pred.system

    def rebuild(self, extra: dict[str, str]) -> "Prediction":
        """The model with ``extra`` settings on top (built once per setting set)."""
        key = tuple(sorted(extra.items()))
        if key not in self._cache:
            self._cache[key] = self.build(extra)
        return self._cache[key]


def _ll128(ti: int, te: int, sm_min: int, sm_max: int, c2c: int) -> bool:
    """tuning.cc: LL128 on by default for this graph (NCCL_PROTO not naming it)."""
    from ncclctl.nccl.tuning import ll128_off_reason

    return not ll128_off_reason(ti, te, sm_min, sm_max, c2c)


@dataclass
class _Use:
    link: s.Link
    frm: Node
    intra: float = 0.0
    inter: float = 0.0
    chans: set[int] = field(default_factory=set)

    def name(self) -> str:
        return f"{_node_name(self.frm)} -> {_node_name(self.link.rem)} ({s.LINK_TYPE_STR[self.link.type] or 'link'}, " \
               f"{_f(self.link.bw)} GB/s)"


class _Load:
    """followPath's accounting, summed instead of subtracted: what every link (and every NET's budget) carries."""

    def __init__(self) -> None:
        self.links: dict[int, _Use] = {}
        self.budget: dict[tuple[int, int], list[Any]] = {}

    def path(self, path: Path, start: Node, intra: bool, weight: float, c: int) -> None:
        pci = 1.0
        if path.type == s.PATH_PHB and start.type == GPU and any(
                l.rem.type == CPU and l.rem.arch == s.CPU_ARCH_X86 and l.rem.vendor == s.CPU_VENDOR_INTEL
                for l in path.links):
            pci = 6 / 5  # INTEL_P2P_OVERHEAD
        node = start
        for link in path.links:
            w = weight * (pci if link.type == s.LINK_PCI else 1.0)
            self._add(link, node, intra, w, c)
            rev_w = 0.0
            if link.rem.type == s.DEV and 0 < link.rem.sm < 80 and start.type != GPU:
                rev_w += w / 8
            if link.rem.type == CPU and link.rem.arch == s.CPU_ARCH_POWER and link.type == s.LINK_NVL:
                rev_w += w
            if rev_w:
                rev = next((l for l in link.rem.links if l.rem is node and l.type == link.type), None)
                if rev is not None:
                    self._add(rev, link.rem, intra, rev_w, c)
            node = link.rem

    def _add(self, link: s.Link, frm: Node, intra: bool, w: float, c: int) -> None:
        u = self.links.get(id(link))
        if u is None:
            u = self.links[id(link)] = _Use(link, frm)
        if intra:
            u.intra += w
        else:
            u.inter += w
        u.chans.add(c)

    def start_net(self, net: Node, c: int) -> None:
        key = (net.asic, net.port)
        entry = self.budget.setdefault(key, [net.bw, 0, set(), net.name])
        entry[1] += 1
        entry[2].add(c)

    def bound(self, attr: str, si: float, se: float) -> "_Bound | None":
        """The largest ``attr`` (speedintra or speedinter) the links and NET budgets allow with the other speed as
        declared, and what binds it; None when no link carries that speed."""
        best: _Bound | None = None
        for u in self.links.values():
            mine, other, other_v = (u.intra, u.inter, se) if attr == "speedintra" else (u.inter, u.intra, si)
            if mine <= 0:
                continue
            v = (u.link.bw - other * other_v) / mine
            if best is None or v < best.value - 1e-9:
                best = _Bound(v, u.name(), sorted(u.chans), u.link.bw, u.intra, u.inter)
        if attr == "speedinter":
            for bw, k, chans, name in self.budget.values():
                v = bw / k
                if best is None or v < best.value - 1e-9:
                    best = _Bound(v, f"{name} (each channel that starts on it takes speedinter of its bandwidth)",
                                  sorted(chans), bw, 0.0, float(k))
        return best


@dataclass
class _Bound:
    value: float
    what: str
    chans: list[int]
    cap: float
    intra: float
    inter: float

    def demand(self, si: float, se: float) -> str:
        parts = []
        if self.intra:
            parts.append(f"{_f(self.intra)} x speedintra")
        if self.inter:
            parts.append(f"{_f(self.inter)} x speedinter")
        total = self.intra * si + self.inter * se
        return f"{' + '.join(parts)} = {_f(total)} GB/s"


@dataclass
class _Endpoint:
    chan: int
    gpu: int  # system GPU index
    net: int  # system NET index
    side: str  # "in" | "out"
    weight: float
    el: "XmlNode"


@dataclass
class _NicFault:
    """An endpoint NTG027 reports: on a NET that is no rail, farther than the GPU's closest NET ((type, closest
    type)), or without GPUDirect RDMA where another NET has it (NCCL's reason)."""

    e: _Endpoint
    not_rail: bool
    far: tuple[str, str] | None
    no_gdr: str | None


class _Checks:
    def __init__(self, model: Model, graphs: list[Graph], out: _Out, version: Version) -> None:
        self.m = model
        self.sys = model.system
        self.gpus = self.sys.nodes[GPU]
        self.nets = self.sys.nodes[NET]
        self.graphs = graphs
        self.out = out
        self.version = version
        sms = [g.sm for g in self.gpus] or [0]
        self.sm_min, self.sm_max = min(sms), max(sms)
        self.params = self.sys.params
        self.net_by_dev = {n.dev: i for i, n in enumerate(self.nets)}
        self._rails: tuple[set[str], str] | None = None
        self._phys: dict[int, str] | None = None
        #: Lines of graphs NTG033 reports for NCCL_CROSS_NIC (NTG026 gives way) and for declared types (NTG022).
        self.crossnic_done: set[int] = set()
        self.types_done: set[int] = set()

    # -- resolving the file against the system ------------------------------------------------------------------
    def resolve(self) -> None:
        by_dev = {g.dev: i for i, g in enumerate(self.gpus)}
        use_rank = self.version >= Version(2, 30, 3)
        for g in self.graphs:
            for c in g.channels:
                c.gpu_idx = []
                for el in c.gpus:
                    if use_rank and el.has("rank"):
                        idx = self.sys.gpu_by_rank(_int(el.get("rank")))
                        c.gpu_idx.append(idx if idx >= 0 else None)
                    else:
                        d = _dev(el, self.version)
                        c.gpu_idx.append(by_dev.get(d) if d is not None else None)

    def endpoints(self, g: Graph, c: Chan) -> list[_Endpoint]:
        """(GPU, NET) pairs a channel's traffic crosses between the node and the network: the first GPU receives on
        the first net; the last GPU (ring), the first (tree, pattern 3), the second (split tree) or both first ones
        with half the bandwidth each (balanced tree) send on the second (connect.cc, search.cc backToNet)."""
        if not g.multi or any(i is None for i in c.gpu_idx) or not c.gpu_idx:
            return []
        nin = self.net_by_dev.get(c.net_devs[0]) if c.net_devs[0] is not None else None
        nout = self.net_by_dev.get(c.net_devs[1]) if c.net_devs[1] is not None else None
        idx = [i for i in c.gpu_idx if i is not None]
        eps = []
        if nin is not None:
            eps.append(_Endpoint(c.index, idx[0], nin, "in", 1.0, c.nets[0]))
        if nout is not None:
            if g.pattern == RING or g.gid == 0:
                outs = [(idx[-1], 1.0)]
            elif g.pattern == SPLIT_TREE and len(idx) > 1:
                outs = [(idx[1], 1.0)]
            elif g.pattern == BALANCED_TREE and len(idx) > 1:
                outs = [(idx[0], 0.5), (idx[1], 0.5)]
            else:
                outs = [(idx[0], 1.0)]
            eps += [_Endpoint(c.index, gi, nout, "out", w, c.nets[1]) for gi, w in outs]
        return eps

    def ep_type(self, g: Graph, e: _Endpoint) -> int:
        """The path type the endpoint's traffic takes: NET -> GPU for the receiving side (no PXN on receive), GPU ->
        NET for the sending one (PXN when NCCL relays through a peer); trees use both directions at both ends."""
        fwd = self.gpus[e.gpu].paths[NET][e.net].type
        rev = self.nets[e.net].paths[GPU][e.gpu].type
        if g.gid == 1 or g.pattern != RING:
            return max(fwd, rev)
        return rev if e.side == "in" else fwd

    def hops(self, g: Graph, c: Chan) -> list[tuple[int, int]]:
        idx = [i for i in c.gpu_idx if i is not None]
        if len(idx) != len(c.gpu_idx):
            return []
        pairs = list(zip(idx, idx[1:]))
        if (g.pattern == RING or g.gid == 0) and not g.multi and len(idx) > 1:
            pairs.append((idx[-1], idx[0]))  # single node: back to the first rank
        return pairs

    # -- NTG028 GPU sets, NTG029 net devs ----------------------------------------------------------------------
    def check_gpu_sets(self) -> None:
        have = sorted(g.dev for g in self.gpus)
        for g in self.graphs:
            union: set[int] = set()
            for c in g.channels:
                for el, idx in zip(c.gpus, c.gpu_idx):
                    if idx is None:
                        how = (f"rank {el.get('rank')}" if el.has("rank") and self.version >= Version(2, 30, 3)
                               else f"dev {_dev(el, self.version)}")
                        self.out.add("NTG028", f"<gpu {'rank' if how.startswith('rank') else 'dev'}="
                                               f"\"{el.get('rank') if how.startswith('rank') else el.get('dev')}\"> is "
                                               f"GPU {how.split()[1]}, which is not in NCCL's system here (GPUs "
                                               f"{_ranges(have)}): the load fails ('XML Import Channel : {how} not "
                                               "found', ncclSystemError) and every communicator init with this file "
                                               "fails", el,
                                     fix="List the job's GPUs by their NVML index (nvidia-smi -L), or regenerate the "
                                         "graph for this node")
                    else:
                        union.add(self.gpus[idx].dev)
            sets = [(c, {self.gpus[i].dev for i in c.gpu_idx if i is not None}) for c in g.channels
                    if all(i is not None for i in c.gpu_idx)]
            distinct: list[tuple[Chan, set[int]]] = []
            for c, st in sets:
                if all(st != d for _, d in distinct):
                    distinct.append((c, st))
            if len(distinct) > 1:
                bad = [c.index for c, st in sets if st != union]
                examples = "; ".join(f"channel {c.index}: {_ranges(sorted(st))}" for c, st in distinct[:3])
                self.out.add("NTG028", f"the channels of the {g.name} list different GPUs ({examples}; together "
                                       f"{_ranges(sorted(union))}): every channel must list exactly the job's GPUs. "
                                       f"A job on all of them runs {_channels(bad)} with ranks missing (NCCL leaves "
                                       "them at rank 0: broken rings), a job on one channel's GPUs fails the load "
                                       "('XML Import Channel : dev N not found')", g.channels[bad[0]].el)
            if union and len(union) < len(self.gpus) and not any(i is None for c in g.channels for i in c.gpu_idx):
                others = sorted(set(have) - union)
                self.out.add("NTG028", f"the {g.name} lists GPUs {_ranges(sorted(union))} of the {len(have)} on this "
                                       f"node (not {_ranges(others)}): only a job on exactly these {len(union)} GPUs "
                                       f"can use the file; a job on all {len(have)} reads {len(union)} ranks per "
                                       "channel and leaves the others at rank 0 (broken rings), and a job on "
                                       f"{'1-' + str(len(union) - 1) if len(union) > 2 else 'fewer'} of them fails "
                                       "the load ('XML Import Channel : dev N not found')", g.el,
                             fix="Set NCCL_GRAPH_FILE only for jobs on exactly these GPUs, or list every GPU of the "
                                 "job in every channel (ncclctl rings graph)")

    def phys_names(self) -> dict[int, str]:
        """The plugin's device numbering before NIC fusion (same NCCL_IB_HCA): dev -> name."""
        if self._phys is None:
            try:
                pred = self.m.rebuild({"NCCL_NET_MERGE_LEVEL": "LOC"})
                self._phys = {n.dev: n.name for n in pred.system.nodes[NET]}
            except Exception:  # the model without fusion failed: no names for the message
                self._phys = {}
        return self._phys

    def check_net_devs(self) -> None:
        devs = sorted(n.dev for n in self.nets)
        fused = [n for n in self.nets if "+" in n.name]
        seen: set[tuple[int, int]] = set()
        for g in self.graphs:
            for c in g.channels:
                c.net_devs = [_dev(el, self.version) for el in c.nets]
                for el, dev in zip(c.nets, c.net_devs):
                    if dev is None or dev in self.net_by_dev or (g.gid, dev) in seen:
                        continue
                    seen.add((g.gid, dev))
                    where = [ch.index for ch in g.channels if dev in [_dev(e, self.version) for e in ch.nets]]
                    phys = self.phys_names().get(dev) if fused else None
                    vnic = next((n for n in fused if phys is not None and phys in n.name.split("+")), None)
                    head = (f"<net dev=\"{el.get('dev')}\"> ({_channels(where)} of the {g.name}) is net {dev}, "
                            f"which NCCL will not have here")
                    if vnic is not None:
                        msg = (f"{head}: NCCL's IB plugin fuses {', '.join(vnic.name.split('+'))} into one virtual "
                               f"NIC {vnic.name} (dev {vnic.dev}) at NCCL_NET_MERGE_LEVEL "
                               f"{self.params.str('NET_MERGE_LEVEL') or 'PORT (the default)'}, so the physical "
                               f"dev {dev} ({phys}) is gone. NCCL does not check net devs when it loads the file: "
                               "the first connection on the channel fails at connect time ('Could not find NET with "
                               "id', ncclInternalError)")
                        fix = (f"Set NCCL_NET_MERGE_LEVEL=LOC (no fusion: dev {dev} stays {phys}), or use "
                               f"dev {vnic.dev:#x} ({vnic.name}) in the graph")
                    else:
                        msg = (f"{head}: NCCL's IB plugin reports {len(devs)} device(s) here (devs {_ranges(devs)}, "
                               f"after NCCL_IB_HCA{' and NIC fusion' if fused else ''}). NCCL does not check net devs "
                               "when it loads the file: the first connection on the channel fails at connect time "
                               "('Could not find NET with id', ncclInternalError)")
                        fix = (f"Use one of devs {_ranges(devs)} (ncclctl topo predict lists them with their NICs), or "
                               "set NCCL_IB_HCA so the file's devs exist")
                    self.out.add("NTG029", msg, el, fix=fix)

    # -- NTG022 path types ----------------------------------------------------------------------------------
    def check_types(self) -> None:
        c2c = self.params.get("LL128_C2C", 1)
        limit = s.PATH_PXN if (c2c and self.sm_min >= 90) else s.PATH_PXB
        arch = f"sm{self.sm_min}"
        proto = self.params.str("PROTO")
        proto_note = (f"; NCCL_PROTO={proto} is set: if it names LL128 explicitly, NCCL skips this check"
                      if proto else "")
        for g in self.graphs:
            hop_types: list[tuple[int, int, int, int]] = []  # (type, chan, a, b)
            ep_types: list[tuple[int, _Endpoint]] = []
            for c in g.channels:
                for a, b in self.hops(g, c):
                    hop_types.append((self.gpus[a].paths[GPU][b].type, c.index, a, b))
                for e in self.endpoints(g, c):
                    ep_types.append((self.ep_type(g, e), e))
            if not hop_types and len(self.gpus) > 1 and any(len(c.gpu_idx) > 1 for c in g.channels):
                continue  # unresolved GPUs (NTG028)
            real_ti = max((t for t, *_ in hop_types), default=s.PATH_LOC)
            real_te = max((t for t, _ in ep_types), default=s.PATH_PIX) if g.multi else s.PATH_PIX
            if g.multi and not ep_types:
                continue  # nets that do not exist (NTG029)
            for attr, declared, real, what in (("typeintra", g.ti, real_ti, "hops between the channels' GPUs"),
                                               ("typeinter", g.te, real_te, "channels' GPU <-> NET endpoints")):
                if declared == real:
                    continue
                if attr == "typeinter" and not g.multi and declared <= limit:
                    continue  # a single-node graph: typeinter only gates LL128
                ll_decl = _ll128(g.ti if attr == "typeinter" else declared, g.te if attr == "typeintra" else declared,
                                 self.sm_min, self.sm_max, c2c)
                ll_real = _ll128(real_ti if attr == "typeintra" else g.ti, real_te if attr == "typeinter" else g.te,
                                 self.sm_min, self.sm_max, c2c)
                if attr == "typeintra":
                    worst = max(hop_types, default=None)
                    where = (f"channel {worst[1]}: GPU {self.gpus[worst[2]].dev} -> GPU {self.gpus[worst[3]].dev} "
                             f"{_tname(worst[0])}" if worst else "one GPU: no hop")
                else:
                    if g.multi:
                        t, e = max(ep_types, key=lambda x: x[0])
                        where = (f"channel {e.chan}: {self._ep_text(e)} {_tname(t)}")
                    else:
                        where = "no <net>: NCCL's own single-node search leaves PIX"
                text = f'{attr}="{_tname(declared)}" but the {what} are at worst {_tname(real)} ({where})'
                sev = Severity.INFO
                if declared > real:
                    if ll_real and not ll_decl:
                        text += (f": LL128 is off for this {g.name} on {arch} (NCCL enables it by default only with "
                                 f"typeinter <= {_tname(limit)} and typeintra <= NVB){proto_note}")
                        sev = Severity.WARNING
                    else:
                        text += ": the file understates the hardware (no protocol changes with it)"
                else:
                    if ll_decl and not ll_real:
                        text += (f": the file claims more than the hardware gives, and NCCL enables LL128 for this "
                                 f"{g.name} where it would not over {_tname(real)} on {arch}{proto_note}")
                        sev = Severity.WARNING
                    else:
                        text += ": the file claims more than the hardware gives (no protocol changes with it)"
                if attr == "typeintra" and not g.multi and (declared == s.PATH_NVL) != (real == s.PATH_NVL):
                    text += ("; on one node NCCL's tuning also takes "
                             f"{'NVLink' if declared == s.PATH_NVL else 'PCI'} latencies for "
                             f"{'NVL' if declared == s.PATH_NVL else _tname(declared)} instead of "
                             f"{'NVLink' if real == s.PATH_NVL else 'PCI'}")
                self.out.add("NTG022", text, g.el, severity=sev,
                             fix=f"Declare {attr}=\"{_tname(real)}\", the real worst path type of the {what}")

    def _ep_text(self, e: _Endpoint) -> str:
        gpu, net = self.gpus[e.gpu], self.nets[e.net]
        return f"{net.name} -> GPU {gpu.dev}" if e.side == "in" else f"GPU {gpu.dev} -> {net.name}"

    # -- NTG023/NTG024/NTG025 speeds ------------------------------------------------------------------------
    def check_speeds(self) -> None:
        arch = _arch(self.sm_min)
        for g in self.graphs:
            array = SPEEDS[(arch, g.multi)]
            for attr, v in (("speedintra", g.si), ("speedinter", g.se)):
                if attr == "speedinter" and not g.multi:
                    continue
                if not any(abs(v - x) < 1e-6 for x in array):
                    self.out.add("NTG025", f"{attr}=\"{_f(v)}\" is not a speed NCCL's search produces for "
                                           f"sm{self.sm_min} {'on more than one node' if g.multi else 'on one node'} "
                                           f"({_ARRAY_NAME[(arch, g.multi)]}: {' '.join(_f(x) for x in array)}); NCCL "
                                           "uses it as written", g.el)
            load = _Load()
            complete = True
            for c in g.channels:
                hops = self.hops(g, c)
                if len(c.gpu_idx) > 1 and not hops:
                    complete = False
                    continue
                for a, b in hops:
                    load.path(self.gpus[a].paths[GPU][b], self.gpus[a], True, 1.0, c.index)
                if g.multi:
                    eps = self.endpoints(g, c)
                    if len(eps) < 2:
                        complete = False  # a net that does not exist (NTG029): the rest is a lower bound on use
                    for e in eps:
                        if e.side == "in":
                            load.path(self.nets[e.net].paths[GPU][e.gpu], self.nets[e.net], False, e.weight, c.index)
                            load.start_net(self.nets[e.net], c.index)
                        else:
                            load.path(self.gpus[e.gpu].paths[NET][e.net], self.gpus[e.gpu], False, e.weight, c.index)
            n = len(g.channels)
            tuning = ("NCCL's tuning counts nchannels x speedintra on up to 2 nodes and x speedinter beyond"
                      if g.multi else "NCCL's tuning counts nchannels x speedintra")
            for attr in ("speedintra", "speedinter") if g.multi else ("speedintra",):
                v = g.si if attr == "speedintra" else g.se
                other = "speedinter" if attr == "speedintra" else "speedintra"
                bnd = load.bound(attr, g.si, g.se)
                if bnd is None:
                    continue
                nccl_best = next((x for x in array if x <= bnd.value + _EPS), None)
                if v > bnd.value + _EPS:
                    if bnd.value > 0:
                        fits = f"at most {_f(bnd.value)} GB/s of {attr} per channel fits"
                        fix = (f"Lower {attr} to at most {_f(bnd.value)}"
                               + (f" (NCCL's own value for sm{self.sm_min}: {_f(nccl_best)})" if nccl_best else "")
                               + ", or regenerate the graph")
                    else:
                        fits = f"the {other} traffic alone fills it"
                        fix = f"Lower {other} first, or spread the channels over other links; or regenerate the graph"
                    self.out.add("NTG023", f"{attr}=\"{_f(v)}\" is more than the paths carry: {bnd.what} would carry "
                                           f"{bnd.demand(g.si, g.se)} for {_channels(bnd.chans)}, over its {_f(bnd.cap)} "
                                           f"GB/s; {fits} ({_BOUND}). NCCL trusts the file: {tuning} ({n} x "
                                           f"{_f(v)} GB/s here), more than the links deliver, so it overestimates "
                                           f"this {g.name} and may choose it, or a protocol, where another is faster",
                                 g.el, fix=fix)
                elif complete and bnd.value > 0 and v < bnd.value / 2 - _EPS:
                    extra = ""
                    if (attr == "speedintra" and g.multi and g.gid == 0 and self.sm_min >= 90 and 2 * n < 16
                            and v <= 45.0 < bnd.value):
                        extra = ("; NCCL also doubles a ring's channels on sm90+ across nodes only when speedintra "
                                 "is over 45 (connect.cc), which this file forgoes")
                    best = (f"; NCCL's own value for sm{self.sm_min} would be {_f(nccl_best)}"
                            if nccl_best is not None else "")
                    self.out.add("NTG024", f"{attr}=\"{_f(v)}\" is under half of the {_f(bnd.value)} GB/s per channel "
                                           f"the paths carry ({bnd.what} binds; {_BOUND}){best}: {tuning} ({n} x "
                                           f"{_f(v)} GB/s here), so it underestimates this {g.name} and may choose "
                                           f"another algorithm or protocol, leaving bandwidth unused{extra}",
                                 g.el, fix=f"Raise {attr} toward {_f(nccl_best if nccl_best is not None else bnd.value)}"
                                           ", or regenerate the graph")

    # -- NTG027 non-compute NICs, NTG030 PXN endpoints --------------------------------------------------------
    def rails(self) -> tuple[set[str], str] | None:
        """(rail NIC names, the NCCL_IB_HCA that selects them) from the host, else None."""
        if self.m.host is None:
            return None
        if self._rails is None:
            from ncclctl.plan.rails import plan_rails

            plan = plan_rails(self.m.host)
            self._rails = ({r.nic for r in plan.rails}, plan.nccl_ib_hca)
        return self._rails

    def check_nics(self) -> None:
        from ncclctl.nccl.paths import GDR_DISABLE, check_gdr, get_local

        rails = self.rails()
        for g in self.graphs:
            bad: list[_NicFault] = []
            pxn: list[_Endpoint] = []
            for c in g.channels:
                for e in self.endpoints(g, c):
                    gpu, net = self.gpus[e.gpu], self.nets[e.net]
                    t = self.ep_type(g, e)
                    read = 1 if e.side == "out" else 0
                    mode, why = check_gdr(self.sys, gpu.rank, e.net, read)
                    best = min(self.ep_type(g, _Endpoint(e.chan, e.gpu, n, e.side, 1.0, e.el))
                               for n in range(len(self.nets)))
                    gdr_elsewhere = mode == GDR_DISABLE and any(
                        check_gdr(self.sys, gpu.rank, n, read)[0] != GDR_DISABLE for n in range(len(self.nets)))
                    members = net.name.split("+")
                    not_rail = rails is not None and not all(m in rails[0] for m in members)
                    far = t >= s.PATH_PHB and best < s.PATH_PHB
                    if not_rail or far or (mode == GDR_DISABLE and gdr_elsewhere):
                        bad.append(_NicFault(e, not_rail, (_tname(t), _tname(best)) if far else None,
                                             why if mode == GDR_DISABLE else None))
                    elif t == s.PATH_PXN and e.side == "out":
                        pxn.append(e)
            self._report_nics(g, bad)
            if pxn:
                chans = sorted({e.chan for e in pxn})
                e = pxn[0]
                from ncclctl.nccl.paths import get_intermediate_rank

                proxy = self.sys.nodes[GPU][self.sys.gpu_by_rank(get_intermediate_rank(self.sys,
                                                                                     self.gpus[e.gpu].rank, e.net))]
                self.out.add("NTG030", f"{_channels(chans)} of the {g.name} leave from a GPU that reaches its net "
                                       f"through another GPU (PXN; channel {e.chan}: GPU {self.gpus[e.gpu].dev} -> "
                                       f"GPU {proxy.dev} -> {self.nets[e.net].name}): NCCL relays the sends through "
                                       "the peer GPU's proxy, network user-buffer registration is off for them, and "
                                       "with NCCL_PXN_DISABLE=1 the path becomes PHB without GPUDirect RDMA; NCCL's "
                                       "own layout ends each channel at its out net's own GPU (PIX)", g.el)

    def _report_nics(self, g: Graph, bad: list["_NicFault"]) -> None:
        """NTG027: one finding per fault of ``g``: the endpoints with the same reasons (not a rail, farther than
        the GPU's closest NET, no GPUDirect RDMA), each NET named once with its channels."""
        from ncclctl.nccl.paths import get_local

        kinds: dict[tuple[bool, bool, bool], list[_NicFault]] = {}
        for b in bad:
            kinds.setdefault((b.not_rail, b.far is not None, b.no_gdr is not None), []).append(b)
        rails = self.rails()
        for (not_rail, far, no_gdr), faults in kinds.items():
            pairs: dict[tuple[int, int], list[_NicFault]] = {}
            for b in faults:
                pairs.setdefault((b.e.gpu, b.e.net), []).append(b)
            chans = sorted({b.e.chan for b in faults})
            closest_types = {b.far[1] for b in faults if b.far is not None}
            gdr_whys = {b.no_gdr for b in faults if b.no_gdr is not None}
            single = len(pairs) == 1
            said = []
            for (gi, ni), fs in pairs.items():
                gpu = self.gpus[gi]
                ins = [b.e.chan for b in fs if b.e.side == "in"]
                outs = [b.e.chan for b in fs if b.e.side == "out"]
                if single:
                    sides = ", ".join(f"{_channels(cs)} {verb if len(set(cs)) > 1 else verb + 's'}"
                                      for cs, verb in ((ins, "enter"), (outs, "leave")) if cs)
                else:
                    sides = ", ".join(f"{_channels(cs)} {side}" for cs, side in ((ins, "in"), (outs, "out")) if cs)
                own = []
                if fs[0].far is not None:
                    own.append(f"{fs[0].far[0]} from GPU {gpu.dev}, whose closest NET is {fs[0].far[1]}" if single
                               or len(closest_types) > 1 else fs[0].far[0])
                if fs[0].no_gdr is not None and (single or len(gdr_whys) > 1):
                    own.append(f"no GPUDirect RDMA ({fs[0].no_gdr})")
                said.append((gi, ni, sides, own, sorted(set(ins + outs)), {b.e.side for b in fs}))
            rail_text = (f"not a rail (a storage or front-end NIC; rails: "
                         f"{', '.join(sorted(rails[0], key=_natural))})" if not_rail and rails else "")
            staged = ": traffic is staged through host memory" if no_gdr else ""
            if single:
                gi, ni, sides, own, _, _ = said[0]
                net = self.nets[ni]
                why = "; ".join(([f"{net.name} is {rail_text}"] if rail_text else []) + own)
                verb = {"in": "enter", "out": "leave"}[faults[0].e.side] if all(
                    b.e.side == faults[0].e.side for b in faults) else "enter or leave"
                if verb != "enter or leave" and len(chans) == 1:
                    verb += "s"
                message = (f"{_channels(chans)} of the {g.name} {verb} on net dev {net.dev} = {net.name} at GPU "
                           f"{self.gpus[gi].dev}: {why}{staged}")
            else:
                what = [rail_text.replace("not a rail (a storage or front-end NIC;",
                                          "that are not rails (storage or front-end NICs;")] if rail_text else []
                if far:
                    what.append("farther from their GPU than the GPU's closest NET"
                                + (f" ({next(iter(closest_types))})" if len(closest_types) == 1 else ""))
                if no_gdr:
                    what.append("without GPUDirect RDMA" + (f" ({next(iter(gdr_whys))})" if len(gdr_whys) == 1
                                                            else ""))
                each = [f"dev {self.nets[ni].dev} = {self.nets[ni].name} at GPU {self.gpus[gi].dev} ("
                        + "; ".join(own + [sides]) + ")" for gi, ni, sides, own, _, _ in said]
                message = (f"{_channels(chans)} of the {g.name} use {len(said)} NETs {', '.join(what)}: "
                           f"{', '.join(each)}{staged}")
            closest = {}
            for gi, ni, *_ in said:
                local, _ = get_local(self.sys, GPU, gi, NET)
                closest[(gi, ni)] = self.nets[local[0]] if local else None
            where = sorted(faults, key=lambda b: (b.e.el.line, b.e.el.column or 0))
            self.out.add("NTG027", message, where[0].e.el,
                         severity=Severity.ERROR if not_rail else Severity.WARNING,
                         fix=self._nic_fix(said, closest),
                         evidence=tuple(f"line {b.e.el.line}: {b.e.el.start_tag()} (channel {b.e.chan} "
                                        f"{'enters' if b.e.side == 'in' else 'leaves'} at GPU "
                                        f"{self.gpus[b.e.gpu].dev})" for b in where)
                         + (f"NCCL_IB_HCA={self.params.str('IB_HCA') or '(unset)'}",
                            "NETs as NCCL numbers them: " + ", ".join(f"{n.dev}={n.name}" for n in self.nets)),
                         locations=tuple((b.e.el.line, b.e.el.column, f"channel {b.e.chan} "
                                          f"{'in' if b.e.side == 'in' else 'out'}: {b.e.el.start_tag()}")
                                         for b in where) if len(where) > 1 else ())

    def _nic_fix(self, said: list[tuple[int, int, str, list[str], list[int], set[str]]],
                 closest: dict[tuple[int, int], Node | None]) -> str:
        """The fix of one NTG027 finding: the rails as NCCL_IB_HCA (with what each NET's dev becomes), or the NET
        closest to each GPU in its channels."""
        rails = self.rails()
        parts = []
        if rails is not None and rails[1] and self.params.str("IB_HCA") != rails[1]:
            then = []
            same = False
            try:
                sysm = self.m.rebuild({"NCCL_IB_HCA": rails[1]}).system
                same = [n.name for n in sysm.nodes[NET]] == [n.name for n in self.nets]
                for gi, ni, _, _, _, sides in said:
                    dev, gdev = self.nets[ni].dev, self.gpus[gi].dev
                    idx = next((i for i, n in enumerate(sysm.nodes[NET]) if n.dev == dev), None)
                    gj = next((i for i, x in enumerate(sysm.nodes[GPU]) if x.dev == gdev), None)
                    if idx is None or gj is None:
                        continue
                    t = max(sysm.nodes[NET][idx].paths[GPU][gj].type if side == "in"
                            else sysm.nodes[GPU][gj].paths[NET][idx].type for side in sides)
                    if t < s.PATH_PHB:
                        then.append(f"dev {dev} is {sysm.nodes[NET][idx].name}, {_tname(t)} from GPU {gdev}")
            except Exception:  # the alternative settings do not build: no suggestion from them
                pass
            if not same:  # (NCCL_IB_HCA spelt otherwise, the same NETs: nothing to gain from it)
                parts.append(f"Set NCCL_IB_HCA={rails[1]} (then {'; '.join(then)})" if then else
                             f"Set NCCL_IB_HCA={rails[1]} (the rails) and a graph numbered for it")
        uses = []
        for gi, ni, _, _, chans, _ in said:
            c = closest.get((gi, ni))
            if c is not None:
                where = ("in this channel" if len(chans) == 1 else "in these channels") if len(said) == 1 \
                    else f"in {_channels(chans)}"
                uses.append(f"dev {c.dev:#x} ({c.name}, the NET closest to GPU {self.gpus[gi].dev}) {where}")
        if uses:
            parts.append(("use " if parts else "Use ") + ", ".join(uses))
        return "; or ".join(parts) if parts else "Regenerate the graph for this node"

    def check_tree_pattern(self) -> None:
        for g in self.graphs:
            if g.gid == 1 and g.pattern == TREE and self.sm_min < 90:
                self.out.add("NTG031", f"tree pattern 3 (TREE) on sm{self.sm_min}: NCCL's tuning multiplies tree "
                                       "bandwidth by 0.85 for it (tuning.cc), and NCCL's own search uses pattern 1 "
                                       "(BALANCED_TREE) below sm90 (the simpler tree is a fallback from sm90 on)",
                             g.el)

    # -- NTG033 what the settings forbid, NTG034 worse than NCCL's own search under them ------------------------
    def _origin(self, key: str) -> str:
        inputs = self.m.pred.inputs
        return f"{key}={inputs.env.get(key)} ({inputs.env_origin.get(key, '--env')})"

    def restricting(self) -> list[str]:
        """The settings in force that restrict NCCL's channels or NIC paths, as NTG034 names them (GPUDirect RDMA off
        is the host's, not a setting: a file made for the node already has it)."""
        env = self.params.env
        out = [self._origin(k) for k in ("NCCL_CROSS_NIC", "NCCL_NET_GDR_LEVEL") if env.get(k) not in (None, "")]
        if self.params.get("PXN_DISABLE", 0) == 1:
            out.append(self._origin("NCCL_PXN_DISABLE"))
        return out

    def check_cross_nic_setting(self) -> None:
        from ncclctl.nccl.layouts import cross_nic_zero

        if not cross_nic_zero(dict(self.params.env)):
            return
        for g in self.graphs:
            if not g.multi or any(d is None for c in g.channels for d in c.net_devs):
                continue
            differ = [c.index for c in g.channels if c.net_devs[0] != c.net_devs[1]]
            n = len(g.channels)
            swap = g.gid == 0 and g.crossnic == 2 and n % 2 == 0 and n > 1
            if not differ and not swap:
                continue
            parts = []
            if g.crossnic == 2:
                parts.append('NCCL 2.30 skips only crossnic="1" graphs under that setting and loads this one as '
                             "written")
            if differ:
                c = g.channels[differ[0]]
                parts.append(f"{_channels(differ)} enter on one net and leave on another (channel {c.index}: net "
                             f"{c.net_devs[0]} in, {c.net_devs[1]} out), so each ring uses two NICs; the rails line "
                             "up between nodes only through connect.cc's odd-node swap, and not where the ring "
                             "closes over an odd node count")
            elif swap:
                parts.append(f"with {n} channels (even) connect.cc swaps channels c and c^1 on odd nodes, so node 2k "
                             "sends on the net of channel c and node 2k+1 receives on that of channel c^1, another "
                             "rail")
            self.crossnic_done.add(g.el.line)
            self.out.add("NTG033", f"{self._origin('NCCL_CROSS_NIC')} keeps every ring and tree on one NIC, but the "
                                   f"{g.name} says crossnic=\"{g.crossnic}\": " + "; ".join(parts) +
                                   ": the file turns back on the cross-NIC traffic the setting turned off", g.el,
                         fix="Drop NCCL_GRAPH_FILE for jobs with NCCL_CROSS_NIC=0 (NCCL's own search obeys it), or "
                             "regenerate the file under it: ncclctl rings graph --env NCCL_CROSS_NIC=0 writes one "
                             "only where NCCL's own search does worse, with crossnic=\"0\" and every channel on one "
                             "net")

    def _real_te(self, sysm: s.System, g: Graph) -> tuple[int, "_Endpoint | None"]:
        worst, at = -1, None
        for c in g.channels:
            for e in self.endpoints(g, c):
                fwd = sysm.nodes[GPU][e.gpu].paths[NET][e.net].type
                rev = sysm.nodes[NET][e.net].paths[GPU][e.gpu].type
                t = max(fwd, rev) if (g.gid == 1 or g.pattern != RING) else (rev if e.side == "in" else fwd)
                if t > worst:
                    worst, at = t, e
        return worst, at

    def check_type_settings(self) -> None:
        """A declared typeinter better than the NIC paths are under the settings, where the settings are why."""
        env = self.params.env
        lifts: list[tuple[str, dict[str, str]]] = []
        if self.params.get("PXN_DISABLE", 0) == 1:
            lifts.append((self._origin("NCCL_PXN_DISABLE"), {"NCCL_PXN_DISABLE": "0"}))
        if env.get("NCCL_NET_GDR_LEVEL") not in (None, ""):
            default = "P2C" if self.params.get("NET_GDR_C2C", 1) else "PXB"
            lifts.append((self._origin("NCCL_NET_GDR_LEVEL"), {"NCCL_NET_GDR_LEVEL": default}))
        if len(lifts) == 2:
            lifts.append((f"{lifts[0][0]} and {lifts[1][0]}", {**lifts[0][1], **lifts[1][1]}))
        for g in self.graphs:
            if not g.multi:
                continue
            real, at = self._real_te(self.sys, g)
            if at is None or g.te >= real:
                continue
            blame = None
            for name, extra in lifts:
                other, _ = self._real_te(self.m.rebuild(extra).system, g)
                if 0 <= other <= g.te:
                    blame = (name, f"without it {_tname(other)}")
                    break
            if blame is None:  # (GPUDirect RDMA off is the host's, not a setting: NTG022 says it)
                continue
            self.types_done.add(g.el.line)
            self.out.add("NTG033", f"under {blame[0]} the {g.name}'s GPU <-> NET endpoints are {_tname(real)} (channel "
                                   f"{at.chan}: {self._ep_text(at)} {_tname(real)}; {blame[1]}), but the file declares "
                                   f"typeinter=\"{_tname(g.te)}\": NCCL trusts the declared type (tuning, LL128) as if "
                                   "the setting were not there, while the traffic takes the slower path", g.el,
                         fix=f"Declare typeinter=\"{_tname(real)}\" and the speed those paths carry, or regenerate "
                             "the file under the setting (ncclctl rings graph --env ...), or drop NCCL_GRAPH_FILE "
                             "for jobs with it")

    def check_worse_than_own(self) -> None:
        from ncclctl.nccl.layouts import losses

        active = self.restricting()
        if not active or self.m.load is None or self.m.own is None or not any(g.multi for g in self.graphs):
            return
        loaded, own = self.m.load(), self.m.own()
        if loaded.ring is None or own.ring is None or not loaded.graphs or not own.graphs:
            return
        lost = losses(loaded, own)
        if not lost:
            return
        el = next(g.el for g in self.graphs if g.multi)

        def desc(p) -> str:
            r = p.ring
            best = p.graphs.get("best") or {}
            return (f"{r.n_channels} x {_f(r.bw_intra)}/{_f(r.bw_inter)} GB/s {_tname(r.type_intra)}/"
                    f"{_tname(r.type_inter)}" + (f", large AllReduce {best['gbps']:g} GB/s" if best else ""))

        self.out.add("NTG034", f"under {', '.join(active)} NCCL's own search does better than this file: "
                               + "; ".join(lost) + f" (ring with the file: {desc(loaded)}; NCCL's own: {desc(own)}; "
                               f"NCCL {self.version}'s model, 2 nodes)", el,
                     fix="Drop NCCL_GRAPH_FILE for jobs with these settings (NCCL's own search does better), or "
                         "regenerate it under them: ncclctl rings graph --env KEY=VAL writes a file only where it "
                         "beats NCCL's own search")

    def run(self) -> None:
        self.check_net_devs()
        self.resolve()
        self.check_gpu_sets()
        self.check_types()
        self.check_speeds()
        self.check_nics()
        self.check_tree_pattern()
        self.check_cross_nic_setting()
        self.check_type_settings()
        self.check_worse_than_own()


def _natural(name: str) -> tuple:
    from ncclctl.names import natural_key

    return natural_key(name)


def check_graph_meaning(result: "ParseResult", path: str, model: Model | None, *,
                        version: Version = DEFAULT) -> list[Finding]:
    """NTG022-NTG031 for a graph file NCCL reads (``result``) against ``model`` (None: only what needs no model,
    NTG026). Graphs NCCL skips (crossnic 1 under NCCL_CROSS_NIC=0) are not checked."""
    out = _Out(path)
    root = result.root
    if root is None or root.name != "graphs":
        return []
    graphs = read_graphs(root, version)
    if model is not None and model.system.params.get("CROSS_NIC", 2) == 0:
        graphs = [g for g in graphs if g.crossnic != 1]
    for g in graphs:
        for c in g.channels:
            c.net_devs = [_dev(el, version) for el in c.nets]
    done_crossnic: set[int] = set()
    done_types: set[int] = set()
    if model is not None:
        checks = _Checks(model, graphs, out, version)
        checks.run()
        done_crossnic, done_types = checks.crossnic_done, checks.types_done
    check_crossnic(graphs, out)
    # One finding per fault: where NTG033 names the setting a graph overrides, the generic rule gives way.
    return [f for f in out.findings
            if not (f.rule == "NTG026" and f.line in done_crossnic)
            and not (f.rule == "NTG022" and f.line in done_types and f.message.startswith("typeinter="))]


def graph_has_nets(result: "ParseResult") -> bool:
    """Whether the file's ring or tree channels carry nets (a graph for more than one node)."""
    root = result.root
    if root is None:
        return False
    return any(len(c.nets) == 2 for g in read_graphs(root) for c in g.channels)


__all__ = ["Model", "check_graph_meaning", "graph_has_nets", "read_graphs", "SPEEDS"]
