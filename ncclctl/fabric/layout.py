"""Rail layout detection and the cabling check (``ncclctl fabric rails``).

1. **Rails of a host.** With an inventory node (snapshot or model), rail k is the k-th entry of the host's rail
   table (:func:`ncclctl.plan.rails.plan_rails`: GPU k's closest NIC). Otherwise rail k is the k-th HCA port name
   (``mlx5_0:1``) in natural order, taken from the names most hosts share (a name counts when at least half the
   hosts have it, or the ``--rails N`` most common names), so a host whose ``mlx5_3`` is missing still has its
   ``mlx5_4`` on rail 4, and the missing one is reported. A host whose names share nothing with the others uses
   its own names in natural order.
2. **Groups.** Two leaves belong to one group (scalable unit) when more than half of the hosts of either leaf also
   reach the other (union-find over the leaves each host reaches); a host's group is the group most of its rail
   HCAs reach. A few miscabled hosts cannot merge two groups, and a partly filled last group is still a group.
3. **Layout.** The rail-k leaf of a group is the leaf most of the group's rail-k HCAs reach (majority vote). Ties
   (a two-host group with one host's cables swapped) go to a leaf not already chosen for another rail of the
   group, then to the leaf whose spine plane carries rail k across the whole fabric (leaves joined through shared
   spines), then to the leaf whose name says rail k (``rail3``; 0- or 1-based, calibrated on the unambiguous
   leaves), then to the leaf most rail-k HCAs reach overall.
4. **Check.** Every host's rail-k HCA must reach its group's rail-k leaf (FAB001), be linked (FAB002) and exist
   (FAB003); every link must run at the expected rate and width (FAB004, FAB005): ``--expect-rate``, else what
   most HCA links run at. Switch-to-switch links are checked against their own majority (warnings).

Everything is a dict or Counter pass over hosts and links: linear in the fabric size.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import is_, itemgetter

from ncclctl.errors import UsageError
from ncclctl.fabric.graph import WHY_TEXT, Endpoint, FabricGraph, UnknownHca, finding, rate_label, unknown_findings
from ncclctl.fabric.hostlist import compress
from ncclctl.fabric.naming import NameField, find_field, mismatches, with_number
from ncclctl.fabric.sources import FabricInput
from ncclctl.findings import Finding, Severity
from ncclctl.parsers.ibnetdiscover import LANE_GBPS
from ncclctl.names import natural_key

_RAIL_IN_NAME = re.compile(r"rail[^0-9a-z]{0,2}(\d+)", re.IGNORECASE)
_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_LAYOUT_TEXT_GROUPS = 16  # text output lists the layout table up to this many groups


@dataclass
class Group:
    index: int
    name: str
    hosts: list[str]
    #: rail k -> the group's rail-k leaf (switch GUID), None when no host of the group has rail k linked
    leaves: list[str | None] = field(default_factory=list)


@dataclass
class Layout:
    graph: FabricGraph
    rails: int
    rail_source: str
    hosts: list[str]
    host_rails: dict[str, list[Endpoint | None]]
    rail_keys: dict[str, tuple[str, ...]]
    groups: list[Group]
    host_group: dict[str, int]
    unplaced: list[str]
    expected_rate: float | None
    expected_width: str | None
    findings: list[Finding]
    problems: list[dict]
    inventory_path: str | None = None
    gpus: dict[str, int] = field(default_factory=dict)
    #: host -> rail -> the leaf its HCA reaches; for a down or absent rail, its group's rail leaf
    eff_leaves: dict[str, list[str | None]] = field(default_factory=dict)
    #: hosts that are not part of the rail layout (management hosts), with why; not in groups, order or output
    outside: dict[str, str] = field(default_factory=dict)
    #: host positions whose HCAs carry no host name (FAB016): group, leaf port, rails, GUIDs, the likely name
    unnamed: list[dict] = field(default_factory=list)
    #: missing rail leaves (FAB017): group, rail, the hosts it strands
    missing: list[dict] = field(default_factory=list)
    #: the fabric's own numbers in its names (None fields: the names carry none)
    numbering: "Numbering | None" = None
    #: leaf -> pod (leaves that share a spine); tiers: number of switch tiers (2: leaf/spine, 3: leaf/spine/core)
    leaf_pod: dict[str, int] = field(default_factory=dict)
    tiers: int = 2

    def leaf_of(self, host: str, rail: int) -> str | None:
        """The leaf the host's rail reaches; for a down or absent rail, its group's rail leaf."""
        hl = self.eff_leaves.get(host)
        if hl is not None and rail < len(hl):
            return hl[rail]
        gi = self.host_group.get(host)
        if gi is not None and rail < len(self.groups[gi].leaves):
            return self.groups[gi].leaves[rail]
        return None


def parse_rate(text: str) -> tuple[float, str | None]:
    """``--expect-rate``: ``400``, ``400G``, ``400Gb/s`` (Gb/s) or ``4xNDR`` / ``2xHDR`` (width and speed)."""
    s = text.strip()
    m = re.fullmatch(r"(\d+)[xX]([A-Za-z0-9]+)", s)
    if m:
        speed = m.group(2).upper()
        if speed not in LANE_GBPS:
            raise UsageError(f"--expect-rate: unknown speed {m.group(2)!r}",
                             fix="use e.g. 4xNDR, 2xNDR, 4xHDR, or a rate in Gb/s such as 400")
        width = f"{m.group(1)}x"
        return int(m.group(1)) * LANE_GBPS[speed], width
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(?:G|Gb/s|Gbps|Gb/sec)?", s, flags=re.IGNORECASE)
    if m and float(m.group(1)) > 0:
        return float(m.group(1)), None
    raise UsageError(f"--expect-rate: cannot read {text!r}", fix="use a rate in Gb/s (400, 400G) or width+speed (4xNDR)")


def _width_num(w: str | None) -> int | None:
    if not w:
        return None
    try:
        return int(w.lower().rstrip("x"))
    except ValueError:
        return None


def _root(parent: dict[str, str], x: str) -> str:
    """Union-find: the root of ``x``, compressing the path to it."""
    r = x
    while parent[r] != r:
        r = parent[r]
    while parent[x] != r:
        parent[x], x = r, parent[x]
    return r


@dataclass
class _Structure:
    """Rails, groups and rail leaves of a set of hosts (steps 1-3), before the check."""

    hosts: list[str]
    rail_keys: dict[str, tuple[str, ...]]
    host_rails: dict[str, list[Endpoint | None]]
    table: tuple[str, ...]
    model_keys: dict[str, tuple[str, ...]]
    nrails: int
    rail_source: str
    host_leaves: dict[str, list[str | None]]
    groups: list[Group]
    host_group: dict[str, int]
    unplaced: list[str]
    findings: list[Finding]


def _structure(inp: FabricInput, hosts: list[str], rails: int | None) -> _Structure:
    g = inp.graph
    src = g.source
    eps = inp.endpoints
    findings: list[Finding] = []

    # 1. rails of each host ------------------------------------------------------------------------------------
    model_keys: dict[str, tuple[str, ...]] = {}
    if inp.hosts:
        for h in hosts:
            info = inp.hosts.get(h)
            if info is not None and info.rails:
                model_keys[h] = info.rails
    table_hosts = [h for h in hosts if h not in model_keys]
    count: Counter = Counter(chain.from_iterable(map(eps.__getitem__, table_hosts)))
    if rails:
        table = tuple(sorted(sorted(count, key=lambda k: (-count[k], natural_key(k)))[:rails], key=natural_key))
        if table_hosts and len(table) < rails:
            findings.append(finding(
                "FAB003", f"--rails {rails}, but the hosts' HCAs have only {len(table)} distinct name(s): "
                          f"{', '.join(table) or 'none'}", subject=src))
    else:
        table = tuple(sorted((k for k, c in count.items() if 2 * c >= len(table_hosts)), key=natural_key))
    tset = set(table)
    rail_keys: dict[str, tuple[str, ...]] = {}
    host_rails: dict[str, list[Endpoint | None]] = {}
    for h in hosts:
        mine = eps[h]
        if h in model_keys:
            keys = model_keys[h]
        elif mine and mine.keys() <= tset:  # the usual host: every HCA port one of the rails (no FAB009)
            keys = table
        elif any(k in tset for k in mine):
            keys = table
            for k, ep in mine.items():
                if k not in tset and ep.link is not None:
                    findings.append(finding(
                        "FAB009", f"{h} {ep.hca} port {ep.port}: linked, but not one of the rails the other hosts "
                                  f"have ({', '.join(table)})", subject=src, line=ep.line, host=h))
        else:
            keys = tuple(sorted(mine, key=natural_key))[: rails or None]
        rail_keys[h] = keys
        host_rails[h] = list(map(mine.get, keys))
    nrails = max((len(k) for k in rail_keys.values()), default=0)
    rail_source = ("the hosts' rail tables" if model_keys and not table_hosts else
                   "HCA names in natural order" if not model_keys else "rail tables and HCA names")

    # the leaf each rail HCA reaches (None: down or absent), per host: every later pass reads these lists
    host_leaves: dict[str, list[str | None]] = {
        h: [ep.link[0] if ep is not None and ep.link is not None else None for ep in host_rails[h]] for h in hosts}

    # 2. groups ------------------------------------------------------------------------------------------------
    distinct: dict[str, list[str]] = {}
    for h in hosts:
        ls_: set = set(host_leaves[h])
        ls_.discard(None)
        distinct[h] = sorted(ls_)
    nh: Counter = Counter(chain.from_iterable(distinct.values()))
    pair_w: Counter = Counter(chain.from_iterable(zip(ls, ls[1:]) for ls in distinct.values()))
    parent = {leaf: leaf for leaf in nh}

    def find(x: str) -> str:
        return _root(parent, x)

    for (a, b), w in pair_w.items():
        if 2 * w > max(nh[a], nh[b]):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    root = {leaf: find(leaf) for leaf in parent}
    comp_hosts: dict[str, list[str]] = {}
    unplaced: list[str] = []
    for h in hosts:
        ls = distinct[h]
        if not ls:
            unplaced.append(h)
            continue
        roots = set(map(root.__getitem__, ls))
        if len(roots) == 1:
            best = roots.pop()
        else:
            votes = Counter(root[leaf] for leaf in host_leaves[h] if leaf is not None)
            best = min(votes, key=lambda c: (-votes[c], c))
        comp_hosts.setdefault(best, []).append(h)
    ordered = sorted(comp_hosts.values(), key=lambda hs: natural_key(hs[0]))
    groups = [Group(index=i, name="", hosts=hs) for i, hs in enumerate(ordered)]
    host_group = {h: grp.index for grp in groups for h in grp.hosts}

    # 3. layout: rail leaves of each group, ties broken by spine planes and leaf names ---------------------------
    level = g.layers()
    pair_votes: Counter = Counter(chain.from_iterable(map(zip, host_leaves.values(), repeat(range(nrails)))))
    for k in range(nrails):
        pair_votes.pop((None, k), None)
    leaf_votes: dict[str, Counter] = {}
    for (leaf, k), n in pair_votes.items():
        c = leaf_votes.get(leaf)
        if c is None:
            c = leaf_votes[leaf] = Counter()
        c[k] = n
    plane = {leaf: leaf for leaf in leaf_votes}

    def pfind(x: str) -> str:
        return _root(plane, x)

    spine_leaf: dict[str, str] = {}
    sl = g.switch_links  # each pair of switches once, in the order of their first link (parallel links agree)
    for a, b in dict.fromkeys(zip(map(itemgetter(0), sl), map(itemgetter(2), sl))):
        for leaf, spine in ((a, b), (b, a)):
            if level.get(leaf) == 1 and level.get(spine) == 2 and leaf in plane:
                other = spine_leaf.setdefault(spine, leaf)
                ra, rb = pfind(leaf), pfind(other)
                if ra != rb:
                    plane[max(ra, rb)] = min(ra, rb)
    plane_votes: dict[str, Counter] = {}
    for leaf, c in leaf_votes.items():
        plane_votes.setdefault(pfind(leaf), Counter()).update(c)

    def top(c: Counter | None) -> int | None:
        return min(c, key=lambda k: (-c[k], k)) if c else None

    plane_rail = {p: top(c) for p, c in plane_votes.items()}
    leaf_rail = {leaf: top(c) for leaf, c in leaf_votes.items()}
    # Leaf names often carry the rail ("su2-rail3-leaf"); numbered from 0 or 1, so the offset is calibrated on
    # the leaves whose votes are clear, and used only when most leaves agree on it.
    name_rail: dict[str, int] = {}
    for leaf in leaf_votes:
        m = _RAIL_IN_NAME.search(g.switches[leaf].desc) if leaf in g.switches else None
        if m:
            name_rail[leaf] = int(m.group(1))
    offsets = Counter(name_rail[L] - r for L in name_rail if (r := leaf_rail.get(L)) is not None)
    hint: dict[str, int] = {}
    if offsets:
        off = min(offsets, key=lambda o: (-offsets[o], abs(o)))
        if 2 * offsets[off] > sum(offsets.values()):
            hint = {L: n - off for L, n in name_rail.items()}
    for grp in groups:
        used: set[str] = set()
        rows = [host_leaves[h] + [None] * (nrails - len(host_leaves[h])) for h in grp.hosts]
        for k, column in enumerate(zip(*rows)):
            one = set(column)
            if len(one) == 1:  # the usual group: all its hosts' rail k on one leaf (or on none)
                best = one.pop()
                if best is not None:
                    used.add(best)
                grp.leaves.append(best)
                continue
            c = Counter(column)
            c.pop(None, None)
            if not c:
                grp.leaves.append(None)
                continue
            if len(c) == 1:
                best = next(iter(c))
            else:
                best = min(c, key=lambda L: (-c[L], L in used, plane_rail.get(pfind(L)) != k, hint.get(L) != k,
                                             leaf_rail.get(L) != k, L))
            used.add(best)
            grp.leaves.append(best)
    return _Structure(hosts=hosts, rail_keys=rail_keys, host_rails=host_rails, table=table, model_keys=model_keys,
                      nrails=nrails, rail_source=rail_source, host_leaves=host_leaves, groups=groups,
                      host_group=host_group, unplaced=unplaced, findings=findings)


_MGMT_NAME = re.compile(r"ufm|mgmt|manage|admin|login|head|master|ctrl|control|bastion|sm[0-9-]", re.IGNORECASE)


def _outsiders(g: FabricGraph, st: _Structure) -> dict[str, str]:
    """Hosts that are not part of the rail pattern, with why: compute hosts have an HCA on (nearly) every rail, on
    the rail leaves of their group, named like the group's other hosts. A management host (a UFM server, a login
    node) with an HCA or two on some leaf does not, and judging it as a miscabled compute host gives false errors."""
    level = g.layers()
    n = st.nrails
    out: dict[str, str] = {}
    if n == 0:
        return out
    # the cheap test first: few HCAs, or HCAs on non-leaves only; most fabrics have no such host at all
    candidates = []
    leaves = {s for s, tier in level.items() if tier == 1}
    host_leaves = st.host_leaves
    for h in st.hosts:
        hl = host_leaves[h]
        if None not in hl and 2 * len(hl) > n and leaves.issuperset(hl):
            continue  # the usual compute host: every rail linked, to leaves (what the test below finds, quicker)
        if st.host_group.get(h) is None:
            continue  # no linked rail: reported as such (FAB002/FAB003), kept in the layout's unplaced list
        hr = st.host_rails[h]
        count = len(hr) - sum(map(is_, hr, repeat(None)))  # (list.count would call Endpoint.__eq__)
        reached = set(st.host_leaves[h])
        reached.discard(None)
        if 2 * count <= n or not reached <= leaves:
            candidates.append(h)
    if not candidates:
        return out
    naming: dict[int, Counter] = {}
    skeletons: dict[int, Counter] = {}
    for h in st.hosts:
        gi = st.host_group.get(h)
        if gi is not None:
            naming.setdefault(gi, Counter())[st.rail_keys[h]] += 1
            skeletons.setdefault(gi, Counter())[_skeleton(h)] += 1
    for h in candidates:
        gi = st.host_group[h]
        hr = st.host_rails[h]
        present = [ep for ep in hr if ep is not None]
        linked = [leaf for leaf in st.host_leaves[h] if leaf is not None]
        keys = st.rail_keys[h]
        grp = st.groups[gi]
        common = naming[gi].most_common(1)[0][0]
        own_naming = keys != common and naming[gi][keys] < naming[gi][common]
        reasons: list[str] = []
        fit = any(leaf is not None and k < len(grp.leaves) and leaf == grp.leaves[k]
                  for k, leaf in enumerate(st.host_leaves[h]))
        sk = skeletons[gi].most_common(1)[0][0]
        odd_name = _skeleton(h) != sk and skeletons[gi][sk] > 1
        if linked and all(level.get(leaf, 0) != 1 for leaf in linked):
            reasons.append("its HCAs reach spine switches, not leaves")
        elif 2 * len(present) <= n and (own_naming or not fit or odd_name):
            # few HCAs, and something else unlike a compute host: a compute host that lost HCAs keeps its name
            # and the rest of its HCAs where they belong
            names = ", ".join(ep.hca for ep in present)
            reasons.append(f"{len(present)} HCA(s) ({names}) where the compute hosts have {n}")
            if not fit:
                reasons.append("none of them on the leaf of its rail")
        if not reasons:
            continue
        if own_naming:
            reasons.append(f"its HCAs are named {', '.join(k.split(':')[0] for k in keys)}, the group's compute "
                           f"hosts' {', '.join(k.split(':')[0] for k in common)}")
        if odd_name:
            reasons.append("its name does not follow the compute hosts' pattern")
        if _MGMT_NAME.search(h):
            reasons.append("the name says management (UFM, login, head node)")
        out[h] = "; ".join(reasons)
    return out


def _truthy(c: Counter) -> Counter:
    """``c`` without its None / empty / zero keys (counted by C loops, dropped after)."""
    for k in [k for k in c if not k]:
        del c[k]
    return c


def _skeleton(name: str) -> str:
    return re.sub(r"[0-9]+", "#", name.lower())


def analyze(inp: FabricInput, *, rails: int | None = None, expect_rate: str | None = None) -> Layout:
    g = inp.graph
    src = g.source
    eps = inp.endpoints
    findings: list[Finding] = list(inp.findings)
    problems: list[dict] = []
    all_hosts = sorted(eps, key=natural_key)

    st = _structure(inp, all_hosts, rails)
    # Hosts that do not form the rail pattern (management hosts) are judged apart and the layout is made from
    # the others; an inventory says which hosts are compute hosts, so with one every host is.
    outside = {} if inp.hosts else _outsiders(g, st)
    if outside:
        st = _structure(inp, [h for h in all_hosts if h not in outside], rails)
    findings += st.findings
    hosts = st.hosts
    rail_keys, host_rails, host_leaves = st.rail_keys, st.host_rails, st.host_leaves
    groups, host_group, nrails = st.groups, st.host_group, st.nrails

    # numbering: the fabric's own numbers in leaf and host names, checked against the detected structure
    numbering = _numbering(g, st)
    _name_groups(inp, groups, numbering)
    groups.sort(key=lambda grp: grp.index)
    host_group.clear()
    host_group.update({h: grp.index for grp in groups for h in grp.hosts})
    _name_findings(g, st, numbering, findings)

    for grp in groups:
        shared = Counter(L for L in grp.leaves if L is not None)
        for leaf, n in sorted(shared.items()):
            if n > 1:
                rails_of = [k for k, L in enumerate(grp.leaves) if L == leaf]
                findings.append(finding(
                    "FAB013", f"{grp.name} ({compress(grp.hosts)}): leaf {_sw(g, leaf)} serves rails "
                              f"{', '.join(map(str, rails_of))}", subject=src, line=g.switches[leaf].line))
    # the leaf each host's rail is taken at by the cost model: where it is cabled, else its group's rail leaf
    eff_leaves: dict[str, list[str | None]] = {}
    for h in hosts:
        hl = host_leaves[h]
        gi = host_group.get(h)
        if None in hl and gi is not None:
            gl = groups[gi].leaves
            hl = [leaf if leaf is not None else (gl[k] if k < len(gl) else None) for k, leaf in enumerate(hl)]
        eff_leaves[h] = hl

    # a rail that most hosts of a group lack: its leaf is missing (or down), one finding instead of one per host
    missing = _missing_leaves(g, st, numbering, findings, problems)

    # 4. the check ---------------------------------------------------------------------------------------------
    exp_rate, exp_width = (None, None)
    if expect_rate:
        exp_rate, exp_width = parse_rate(expect_rate)
    rail_links = [ep.link for h in hosts for ep in host_rails[h] if ep is not None and ep.link is not None]
    rates = _truthy(Counter(map(itemgetter(4), rail_links)))
    widths = _truthy(Counter(map(itemgetter(2), rail_links)))
    if exp_rate is None and rates:
        exp_rate = min(rates, key=lambda r: (-rates[r], -r))
    if exp_width is None and widths:
        exp_width = min(widths, key=lambda w: (-widths[w], -(_width_num(w) or 0)))
    off_spec = {id(link) for link in rail_links if link[4] != exp_rate or link[2] != exp_width}
    exp_wn = _width_num(exp_width)
    inv = inp.inventory_path
    hinfo = inp.hosts or {}

    def where(h: str, ep: Endpoint | None) -> tuple[str, int | None]:
        if ep is not None:
            return src, ep.line
        if inv is not None and h in hinfo:
            return inv, hinfo[h].line
        first = next(iter(eps[h].values()), None)
        return src, first.line if first else None

    def check(h: str, k: int, ep: Endpoint | None, grp: Group | None) -> None:
        key = rail_keys[h][k]
        hca, _, port = key.rpartition(":")
        exp_leaf = grp.leaves[k] if grp is not None and k < len(grp.leaves) else None
        rec = {"host": h, "hca": hca, "port": int(port) if port.isdigit() else port, "rail": k,
               "group": grp.name if grp else None}
        if (ep is None or ep.link is None) and grp is not None and (grp.index, k) in missing:
            return  # the group's rail-k leaf is missing: one FAB017 for the group names this host
        if ep is None:
            subject, line = where(h, None)
            findings.append(finding("FAB003", f"{h} {hca} (rail {k}): not in the fabric", subject=subject, line=line,
                                    host=h))
            problems.append({**rec, "problem": "absent", "line": line, "expected": _swd(g, exp_leaf)})
            return
        link = ep.link
        if link is None and (ep.guid, ep.port) in g.direct:
            rguid, rport = g.direct[(ep.guid, ep.port)]
            rdesc = g.hcas[rguid][0] if rguid in g.hcas else ""
            findings.append(finding(
                "FAB020", f"{h} {hca} port {ep.port} (rail {k}): cabled straight to HCA "
                          f"{rdesc + ' ' if rdesc else ''}({rguid}) port {rport}, with no switch between",
                subject=src, line=ep.line, host=h))
            problems.append({**rec, "problem": "back-to-back", "line": ep.line,
                             "actual": {"guid": rguid, "desc": rdesc or None, "port": rport}})
            return
        if link is None:
            findings.append(finding(
                "FAB002", f"{h} {hca} port {ep.port} (rail {k}): no link"
                          + (f"; expected on {_sw(g, exp_leaf)}" if exp_leaf else ""), subject=src, line=ep.line,
                host=h))
            problems.append({**rec, "problem": "down", "line": ep.line, "expected": _swd(g, exp_leaf)})
            return
        if grp is not None and exp_leaf is not None and link[0] != exp_leaf:  # (an expected leaf has a group)
            findings.append(finding(
                "FAB001", f"{h} {hca} port {ep.port} (rail {k}): cabled to {_sw(g, link[0])} port {link[1]}; "
                          f"expected {_sw(g, exp_leaf)}, the rail-{k} leaf of {grp.name}",
                subject=src, line=link[5], host=h))
            problems.append({**rec, "problem": "miscabled", "line": link[5], "expected": _swd(g, exp_leaf),
                             "actual": {**(_swd(g, link[0]) or {}), "port": link[1]}})
        wn = _width_num(link[2])
        if exp_wn is not None and wn is not None and wn < exp_wn:
            findings.append(finding(
                "FAB005", f"{h} {hca} port {ep.port} (rail {k}): link is {rate_label(link[2], link[3], link[4])}, "
                          f"expected width {exp_width}", subject=src, line=link[5], host=h))
            problems.append({**rec, "problem": "narrow", "line": link[5], "width": link[2],
                             "expected_width": exp_width, "rate_gbps": link[4]})
        elif exp_rate is not None and link[4] is not None and link[4] < exp_rate:
            findings.append(finding(
                "FAB004", f"{h} {hca} port {ep.port} (rail {k}): link is {rate_label(link[2], link[3], link[4])}, "
                          f"expected {exp_rate:g} Gb/s", subject=src, line=link[5], host=h))
            problems.append({**rec, "problem": "slow", "line": link[5], "rate_gbps": link[4],
                             "expected_rate_gbps": exp_rate})

    for h in hosts:
        gi = host_group.get(h)
        group = groups[gi] if gi is not None else None
        hl = host_leaves[h]
        hr = host_rails[h]
        # the common case, decided with a list comparison: every rail linked where its group expects it (None not
        # in hl: every rail has an endpoint with a link)
        if group is not None and hl == group.leaves and None not in hl and (
                not off_spec or not any(id(ep.link) in off_spec for ep in hr if ep is not None)):
            continue
        for k, ep in enumerate(hr):
            check(h, k, ep, group)

    # switch-to-switch links against their own majority
    srates = _truthy(Counter(map(itemgetter(6), g.switch_links)))
    swidths = _truthy(Counter(map(itemgetter(4), g.switch_links)))
    if srates:
        s_rate = min(srates, key=lambda r: (-srates[r], -r))
        s_width = min(swidths, key=lambda w: (-swidths[w], -(_width_num(w) or 0))) if swidths else None
        s_wn = _width_num(s_width)
        for a, pa, b, pb, w, s, rate, line in g.switch_links:
            if w == s_width and rate == s_rate:
                continue
            wn = _width_num(w)
            what = f"switch link {_sw(g, a)} port {pa} - {_sw(g, b)} port {pb}: {rate_label(w, s, rate)}"
            if s_wn is not None and wn is not None and wn < s_wn:
                findings.append(finding("FAB005", f"{what}, most switch links are {s_width}", subject=src, line=line,
                                        severity=Severity.WARNING))
            elif rate is not None and rate < s_rate:
                findings.append(finding("FAB004", f"{what}, most switch links run at {s_rate:g} Gb/s", subject=src,
                                        line=line, severity=Severity.WARNING))

    # hosts outside the rail layout, and HCAs that name no host: each one accounted for in a finding
    for h, why in outside.items():
        first = next(iter(eps[h].values()), None)
        findings.append(finding(
            "FAB015", f"{h}: not in the rail layout ({why}); left out of the ring order, hostfile and Slurm "
                      "topology (list it in an inventory to check it as a compute host)",
            subject=src, line=first.line if first else None, host=h))
    unnamed = _place_unknown(g, inp, st, findings)

    leaf_pod, tiers = _pods(g)
    gpus = {h: i.gpus for h, i in hinfo.items() if i.gpus}
    return Layout(graph=g, rails=nrails, rail_source=st.rail_source, hosts=hosts, host_rails=host_rails,
                  rail_keys=rail_keys, groups=groups, host_group=host_group, unplaced=st.unplaced,
                  expected_rate=exp_rate, expected_width=exp_width, findings=findings, problems=problems,
                  inventory_path=inv, gpus=gpus, eff_leaves=eff_leaves, outside=outside, unnamed=unnamed,
                  missing=[missing[key] for key in sorted(missing)], numbering=numbering, leaf_pod=leaf_pod,
                  tiers=tiers)


def _pods(g: FabricGraph) -> tuple[dict[str, int], int]:
    """Leaf -> pod (leaves joined through a shared spine), and the number of switch tiers."""
    level = g.layers()
    tiers = max(level.values(), default=0)
    if tiers < 3:
        return {}, tiers  # the cost model needs pods only where a core joins them
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        return _root(parent, x)

    for a, _pa, b, _pb, *_ in g.switch_links:
        la, lb = level.get(a, 0), level.get(b, 0)
        if {la, lb} == {1, 2}:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    roots: dict[str, int] = {}
    pod: dict[str, int] = {}
    for s in sorted(level):
        if level[s] == 1:
            r = find(s)
            pod[s] = roots.setdefault(r, len(roots))
    return pod, tiers


@dataclass
class Numbering:
    """What the fabric's names say: the digit run of leaf names that numbers rails and groups, of host names that
    numbers groups (:mod:`ncclctl.fabric.naming`). Groups are labelled by their first host."""

    leaf_rail: NameField | None = None
    leaf_group: NameField | None = None
    host_group: NameField | None = None

    def group_number(self, grp: Group) -> str | None:
        for fld in (self.leaf_group, self.host_group):
            if fld is not None and grp.hosts and grp.hosts[0] in fld.printed:
                return fld.printed[grp.hosts[0]]
        return None

    def group_name(self, grp: Group) -> str | None:
        """The group's name in the fabric's own numbering: the field as its names print it when it has letters
        (``g003``), else ``su`` and the number (``su08``)."""
        for fld in (self.leaf_group, self.host_group):
            if fld is not None and grp.hosts and grp.hosts[0] in fld.printed:
                tok = fld.token[grp.hosts[0]]
                return tok if not tok.isdigit() else "su" + tok
        return None

    def rail_number(self, k: int) -> str | None:
        return self.leaf_rail.printed_for(k) if self.leaf_rail is not None else None

    def doc(self) -> dict:
        def one(fld: NameField | None) -> dict | None:
            if fld is None:
                return None
            return {"template": fld.template, "digit_run": fld.index, "names_agreeing": fld.agree,
                    "names": fld.total}
        return {"leaf_rail": one(self.leaf_rail), "leaf_group": one(self.leaf_group),
                "host_group": one(self.host_group)}


def _name_items(g: FabricGraph, st: _Structure):
    rail_items = [(g.switches[L].desc, k) for grp in st.groups for k, L in enumerate(grp.leaves)
                  if L is not None and L in g.switches and g.switches[L].desc]
    group_items = [(g.switches[L].desc, grp.hosts[0]) for grp in st.groups for L in dict.fromkeys(grp.leaves)
                   if L is not None and L in g.switches and g.switches[L].desc]
    host_items = [(h, st.groups[st.host_group[h]].hosts[0]) for h in st.hosts if h in st.host_group]
    return rail_items, group_items, host_items


def _numbering(g: FabricGraph, st: _Structure) -> Numbering:
    rail_items, group_items, host_items = _name_items(g, st)
    num = Numbering()
    num.leaf_rail = find_field(rail_items)
    lg = find_field(group_items)
    if lg is not None and num.leaf_rail is not None and lg.index == num.leaf_rail.index:
        lg = None  # one digit run cannot number both
    num.leaf_group = lg
    num.host_group = find_field(host_items)
    return num


def _name_findings(g: FabricGraph, st: _Structure, num: Numbering, findings: list[Finding]) -> None:
    """FAB018: a leaf named for another rail or group than the one its hosts use it as; a host named for another
    group than the one it is cabled into."""
    src = g.source
    rail_items, group_items, host_items = _name_items(g, st)
    group_of: dict[object, Group] = {grp.hosts[0]: grp for grp in st.groups}
    by_desc: dict[str, str] = {}
    for grp in st.groups:
        for L in grp.leaves:
            if L is not None and L in g.switches:
                by_desc.setdefault(g.switches[L].desc, L)
    seen: set[str] = set()
    if num.leaf_rail is not None:
        for desc, k, named in mismatches(num.leaf_rail, rail_items):
            L = by_desc[desc]
            if L in seen:
                continue
            seen.add(L)
            findings.append(finding(
                "FAB018", f"leaf {_sw(g, L)} is named for rail {named} (fabric rail {num.leaf_rail.printed_for(named)}), "
                          f"but its hosts use it as rail {k}: the switch is mislabelled, or its cables belong to "
                          "another leaf", subject=src, line=g.switches[L].line))
    if num.leaf_group is not None:
        for desc, gk, named in mismatches(num.leaf_group, group_items):
            L = by_desc[desc]
            if L in seen:
                continue
            seen.add(L)
            grp = group_of[gk]
            findings.append(finding(
                "FAB018", f"leaf {_sw(g, L)} is named for group {num.leaf_group.printed_for(named)}, but it serves "
                          f"the hosts of {grp.name} ({compress(grp.hosts)})", subject=src, line=g.switches[L].line))
    if num.host_group is not None:
        for h, gk, named in mismatches(num.host_group, host_items):
            ep = next((e for e in st.host_rails[h] if e is not None), None)
            findings.append(finding(
                "FAB018", f"{h}: its name says group {num.host_group.printed_for(named)}, but its HCAs are cabled to "
                          f"the leaves of {group_of[gk].name}", subject=src, line=ep.line if ep else None, host=h))


def _name_groups(inp: FabricInput, groups: list[Group], numbering: Numbering) -> None:
    """Group names and order: the fabric's own group numbers when every group has a distinct one (``su08`` is the
    group its names call 08, ``g003`` the group its leaves call g003), else ``su01``... in the order of the groups'
    first host names; an inventory group hint names a group all of whose hosts carry it."""
    numbers = [numbering.group_number(grp) for grp in groups]
    if groups and all(n is not None for n in numbers) and len(set(numbers)) == len(numbers):
        order = sorted(range(len(groups)), key=lambda i: (int(numbers[i] or 0), natural_key(groups[i].hosts[0])))
        for pos, i in enumerate(order):
            groups[i].name = numbering.group_name(groups[i]) or f"su{numbers[i]}"
            groups[i].index = pos
    else:
        width = max(2, len(str(len(groups))))
        for grp in groups:
            grp.name = f"su{grp.index + 1:0{width}d}"
    if inp.hosts:
        hints = [{inp.hosts[h].group if h in inp.hosts else None for h in grp.hosts} for grp in groups]
        names = [next(iter(hs)) if len(hs) == 1 else None for hs in hints]
        taken = Counter(n for n in names if n)
        for grp, name in zip(groups, names):
            if name and taken[name] == 1 and _NAME_OK.match(name):
                grp.name = name


def _missing_leaves(g: FabricGraph, st: _Structure, numbering: Numbering, findings: list[Finding],
                    problems: list[dict]) -> dict[tuple[int, int], dict]:
    """(group, rail) -> record, for the rails most hosts of a group (two or more) have no link on: the leaf is
    missing from the fabric or down, one FAB017 naming the position and the hosts it strands."""
    src = g.source
    out: dict[tuple[int, int], dict] = {}
    for grp in st.groups:
        if len(grp.hosts) < 2:
            continue
        if all(len(hl) >= st.nrails and None not in hl for hl in map(st.host_leaves.__getitem__, grp.hosts)):
            continue  # every rail of every host linked: nothing lacks
        for k in range(st.nrails):
            lacking = [h for h in grp.hosts
                       if k >= len(st.host_leaves[h]) or st.host_leaves[h][k] is None]
            if len(lacking) < 2 or 2 * len(lacking) <= len(grp.hosts):
                continue
            label = numbering.rail_number(k)
            like = None
            if numbering.leaf_rail is not None:
                for j, L in enumerate(grp.leaves):
                    if L is not None and L in g.switches and numbering.leaf_rail.label(g.switches[L].desc) == j:
                        like = numbering.leaf_rail.rename(g.switches[L].desc, k)
                        if like:
                            break
            absent = sum(1 for h in lacking if k >= len(st.host_rails[h]) or st.host_rails[h][k] is None)
            state = ("not in the fabric" if absent == len(lacking) else
                     "without a link" if absent == 0 else f"absent ({absent}) or without a link")
            ep0 = next((e for h in grp.hosts for e in st.host_rails[h] if e is not None), None)
            line = ep0.line if ep0 else None
            findings.append(finding(
                "FAB017", f"{grp.name}: the rail-{k} leaf is missing"
                          + (f" (fabric rail {label}" + (f", a switch named like {like!r}" if like else "") + ")"
                             if label else "")
                          + f": the rail-{k} HCAs of {len(lacking)} of its {len(grp.hosts)} hosts are {state} "
                          f"({compress(lacking)}); check that leaf switch (power, uplinks, subnet manager) before "
                          "the hosts", subject=src, line=line))
            rec = {"group": grp.name, "rail": k, "hosts": lacking, "state": state, "name_like": like}
            out[(grp.index, k)] = rec
            problems.append({"host": None, "hca": None, "port": None, "rail": k, "group": grp.name,
                             "problem": "leaf-missing", "hosts": lacking, "line": line, "expected_name": like})
    return out


def _place_unknown(g: FabricGraph, inp: FabricInput, st: _Structure, findings: list[Finding]) -> list[dict]:
    """HCAs whose description names no host, placed by where they are cabled: on a rail-optimized fabric host i
    of a group uses the same port on each of the group's rail leaves, so the unnamed HCAs at one port of a group's
    rail leaves are one host (FAB016, with the name its neighbours' names suggest). The rest are FAB007."""
    src = g.source
    if not inp.unknown:
        return []
    leaf_pos: dict[str, tuple[int, int]] = {}
    for grp in st.groups:
        for k, L in enumerate(grp.leaves):
            if L is not None:
                leaf_pos.setdefault(L, (grp.index, k))
    aligned: dict[int, list[tuple[int, str]]] = {}
    total: Counter = Counter()
    for h in st.hosts:
        gi = st.host_group.get(h)
        if gi is None:
            continue
        ports = {ep.link[1] for ep in st.host_rails[h] if ep is not None and ep.link is not None}
        total[gi] += 1
        if len(ports) == 1:
            p = next(iter(ports))
            if isinstance(p, int):
                aligned.setdefault(gi, []).append((p, h))
    port_groups = {gi for gi, rows in aligned.items() if 4 * len(rows) >= 3 * total[gi] and total[gi] >= 2}
    positions: dict[tuple[int, int], list[tuple[int, UnknownHca]]] = {}
    rest = []
    for u in inp.unknown:
        link = g.hca_links.get((u.guid, 1)) or g.hca_links.get((u.guid, 2))
        if link is None:
            rest.append(u)
            continue
        pos = leaf_pos.get(link[0])
        if pos is None or pos[0] not in port_groups or not isinstance(link[1], int) or u.why == "not-inventory":
            rest.append(u)
            continue
        positions.setdefault((pos[0], link[1]), []).append((pos[1], u))
    occupant = {(gi, p): h for gi, rows in aligned.items() for p, h in rows}
    out: list[dict] = []
    for (gi, port), items in sorted(positions.items()):
        grp = st.groups[gi]
        items.sort(key=lambda it: it[0])
        occ = occupant.get((gi, port))
        if occ is not None:
            # the port of a named host: its HCA, whose description was not (re)written
            for k, u in items:
                findings.append(finding(
                    "FAB007", f"HCA {u.guid}: description {u.desc!r} {WHY_TEXT[u.why]}; it is cabled to port {port} "
                              f"of {grp.name}'s rail-{k} leaf, where {occ}'s other HCAs are: probably {occ}'s rail-{k} "
                              "HCA (left out)", subject=src, line=u.line, host=occ))
            continue
        likely = _likely_name(aligned.get(gi, []), port, set(st.hosts))
        whys = {u.why for _, u in items}
        descs = sorted({" ".join(u.desc.split()) for _, u in items})
        rails_at = [k for k, _ in items]
        if whys == {"localhost"}:
            what = (f"describe themselves as {', '.join(repr(d) for d in descs)}: the host's name was not set when "
                    "rdma-ndd wrote them (restart rdma-ndd once the hostname is set)")
        else:
            what = (f"carry the adapter's default description {descs[0]!r}: rdma-ndd has not set '<hostname> <hca>' "
                    "on this host (or it has not booted its OS)")
        first = items[0][1]
        findings.append(finding(
            "FAB016", f"{grp.name}: a host without a name at port {port} of the group's rail leaves: its "
                      f"{len(items)} HCA(s) (rail(s) {', '.join(map(str, rails_at))}) {what}"
                      + (f"; by its neighbours' names it is probably {likely}" if likely else "")
                      + "; it is left out of the layout and the order", subject=src, line=first.line,
            host=likely))
        out.append({"group": grp.name, "port": port, "rails": rails_at, "guids": [u.guid for _, u in items],
                    "descriptions": descs, "likely": likely, "line": first.line})
    findings.extend(unknown_findings(g, rest))
    return out


def _likely_name(rows: list[tuple[int, str]], port: int, taken: set[str]) -> str | None:
    """The name of the host at ``port`` when the group's host names number their hosts by leaf port."""
    if len(rows) < 2:
        return None
    fld = find_field([(h, p) for p, h in rows], min_labels=2)
    if fld is None or any(fld.printed.get(p) is not None and int(fld.printed[p]) != p for p, _ in rows):
        return None
    p0, h0 = rows[0]
    width = len(fld.printed[p0])
    guess = with_number(h0, fld.index, str(port).zfill(width))
    return guess if guess not in taken else None


def _sw(g: FabricGraph, guid: str | None) -> str:
    if guid is None:
        return "?"
    sw = g.switches.get(guid)
    if sw is None or not sw.desc:
        return guid
    return f"{sw.desc!r} ({guid})" if not guid.startswith("lldp:") else f"{sw.desc!r}"


def _swd(g: FabricGraph, guid: str | None) -> dict | None:
    if guid is None:
        return None
    sw = g.switches.get(guid)
    return {"guid": guid, "desc": sw.desc if sw else None}


# ---------------------------------------------------------------------------------------------------------------
# Output


def layout_doc(lay: Layout) -> dict:
    g = lay.graph
    return {
        "fabric": g.summary(),
        "hosts": len(lay.hosts),
        "rails": lay.rails,
        "rail_source": lay.rail_source,
        "expected_rate_gbps": lay.expected_rate,
        "expected_width": lay.expected_width,
        "groups": [{"name": grp.name, "hosts": grp.hosts, "hostlist": compress(grp.hosts),
                    "leaves": [{"rail": k, **(_swd(g, leaf) or {"guid": None, "desc": None})}
                               for k, leaf in enumerate(grp.leaves)]} for grp in lay.groups],
        "unplaced": lay.unplaced,
        "not_in_layout": [{"host": h, "why": why} for h, why in lay.outside.items()],
        "unnamed": lay.unnamed,
        "missing_leaves": lay.missing,
        "tiers": lay.tiers,
        "numbering": lay.numbering.doc() if lay.numbering is not None else None,
        "problems": lay.problems,
    }


def layout_text(lay: Layout) -> str:
    g = lay.graph
    counts = Counter(p["problem"] for p in lay.problems)
    lines = [
        f"fabric: {g.source} ({g.kind}): {len(lay.hosts)} hosts, {lay.rails} rails ({lay.rail_source}), "
        f"{len(lay.groups)} group(s)",
        "cabling: " + (", ".join(f"{n} {what}" for what, n in sorted(counts.items())) if counts else "as laid out"),
    ]
    if lay.expected_rate is not None:
        lines.append(f"expected HCA link: {lay.expected_rate:g} Gb/s"
                     + (f", width {lay.expected_width}" if lay.expected_width else ""))
    if lay.unplaced:
        lines.append(f"hosts with no linked rail (left out of groups): {compress(lay.unplaced)}")
    if lay.outside:
        lines.append(f"not in the rail layout (management hosts?): {compress(lay.outside)}")
    if lay.unnamed:
        lines.append(f"host positions whose HCAs carry no host name: {len(lay.unnamed)} (FAB016)")
    if len(lay.groups) <= _LAYOUT_TEXT_GROUPS:
        for grp in lay.groups:
            lines.append(f"{grp.name}: {compress(grp.hosts)} ({len(grp.hosts)} host{'s' if len(grp.hosts) != 1 else ''})")
            num = lay.numbering
            for k, leaf in enumerate(grp.leaves):
                label = num.rail_number(k) if num is not None else None
                label = label if label is not None and label != str(k) else None
                lines.append(f"  rail {k}{f' (fabric rail {label})' if label else ''}: "
                             f"{_sw(g, leaf) if leaf else '(no linked HCA)'}")
    else:
        lines.append(f"layout: {len(lay.groups)} groups (the table is in --format json)")
    return "\n".join(lines) + "\n"
