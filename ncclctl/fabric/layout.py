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

from ncclctl.errors import UsageError
from ncclctl.fabric.graph import Endpoint, FabricGraph, finding, rate_label
from ncclctl.fabric.hostlist import compress
from ncclctl.fabric.sources import FabricInput
from ncclctl.findings import Finding, Severity
from ncclctl.parsers.ibnetdiscover import LANE_GBPS
from ncclctl.plan.paths import natural_key

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


def analyze(inp: FabricInput, *, rails: int | None = None, expect_rate: str | None = None) -> Layout:
    g = inp.graph
    src = g.source
    eps = inp.endpoints
    findings: list[Finding] = list(inp.findings)
    problems: list[dict] = []
    hosts = sorted(eps, key=natural_key)

    # 1. rails of each host ------------------------------------------------------------------------------------
    model_keys: dict[str, tuple[str, ...]] = {}
    if inp.hosts:
        for h in hosts:
            info = inp.hosts.get(h)
            if info is not None and info.rails:
                model_keys[h] = info.rails
    table_hosts = [h for h in hosts if h not in model_keys]
    count: Counter = Counter()
    for h in table_hosts:
        count.update(eps[h].keys())
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
        host_rails[h] = [mine.get(k) for k in keys]
    nrails = max((len(k) for k in rail_keys.values()), default=0)
    rail_source = ("the hosts' rail tables" if model_keys and not table_hosts else
                   "HCA names in natural order" if not model_keys else "rail tables and HCA names")

    # the leaf each rail HCA reaches (None: down or absent), per host: every later pass reads these lists
    host_leaves: dict[str, list[str | None]] = {
        h: [ep.link[0] if ep is not None and ep.link is not None else None for ep in host_rails[h]] for h in hosts}

    # 2. groups ------------------------------------------------------------------------------------------------
    nh: Counter = Counter()
    pair_w: Counter = Counter()
    distinct: dict[str, list[str]] = {}
    for h in hosts:
        ls = sorted({leaf for leaf in host_leaves[h] if leaf is not None})
        distinct[h] = ls
        nh.update(ls)
        pair_w.update(zip(ls, ls[1:]))
    parent = {leaf: leaf for leaf in nh}

    def find(x: str) -> str:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

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
        roots = {root[leaf] for leaf in ls}
        if len(roots) == 1:
            best = roots.pop()
        else:
            votes = Counter(root[leaf] for leaf in host_leaves[h] if leaf is not None)
            best = min(votes, key=lambda c: (-votes[c], c))
        comp_hosts.setdefault(best, []).append(h)
    ordered = sorted(comp_hosts.values(), key=lambda hs: natural_key(hs[0]))
    width = max(2, len(str(len(ordered))))
    groups = [Group(index=i, name=f"su{i + 1:0{width}d}", hosts=hs) for i, hs in enumerate(ordered)]
    host_group = {h: grp.index for grp in groups for h in grp.hosts}
    if inp.hosts:
        # a group whose hosts all carry one inventory group hint takes that name (when no other group does)
        hints = [{inp.hosts[h].group if h in inp.hosts else None for h in grp.hosts} for grp in groups]
        names = [next(iter(hs)) if len(hs) == 1 else None for hs in hints]
        taken = Counter(n for n in names if n)
        for grp, name in zip(groups, names):
            if name and taken[name] == 1 and _NAME_OK.match(name):
                grp.name = name

    # 3. layout: rail leaves of each group, ties broken by spine planes and leaf names ---------------------------
    level = g.layers()
    pair_votes = Counter((leaf, k) for h in hosts for k, leaf in enumerate(host_leaves[h]) if leaf is not None)
    leaf_votes: dict[str, Counter] = {}
    for (leaf, k), n in pair_votes.items():
        c = leaf_votes.get(leaf)
        if c is None:
            c = leaf_votes[leaf] = Counter()
        c[k] = n
    plane = {leaf: leaf for leaf in leaf_votes}

    def pfind(x: str) -> str:
        r = x
        while plane[r] != r:
            r = plane[r]
        while plane[x] != r:
            plane[x], x = r, plane[x]
        return r

    spine_leaf: dict[str, str] = {}
    for a, _pa, b, _pb, *_ in g.switch_links:
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

    # 4. the check ---------------------------------------------------------------------------------------------
    exp_rate, exp_width = (None, None)
    if expect_rate:
        exp_rate, exp_width = parse_rate(expect_rate)
    rail_links = [ep.link for h in hosts for ep in host_rails[h] if ep is not None and ep.link is not None]
    rates = Counter(link[4] for link in rail_links if link[4])
    widths = Counter(link[2] for link in rail_links if link[2])
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
        if ep is None:
            subject, line = where(h, None)
            findings.append(finding("FAB003", f"{h} {hca} (rail {k}): not in the fabric", subject=subject, line=line,
                                    host=h))
            problems.append({**rec, "problem": "absent", "line": line, "expected": _swd(g, exp_leaf)})
            return
        link = ep.link
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
    srates = Counter(sl[6] for sl in g.switch_links if sl[6])
    swidths = Counter(sl[4] for sl in g.switch_links if sl[4])
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

    gpus = {h: i.gpus for h, i in hinfo.items() if i.gpus}
    return Layout(graph=g, rails=nrails, rail_source=rail_source, hosts=hosts, host_rails=host_rails,
                  rail_keys=rail_keys, groups=groups, host_group=host_group, unplaced=unplaced,
                  expected_rate=exp_rate, expected_width=exp_width, findings=findings, problems=problems,
                  inventory_path=inv, gpus=gpus, eff_leaves=eff_leaves)


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
    if len(lay.groups) <= _LAYOUT_TEXT_GROUPS:
        for grp in lay.groups:
            lines.append(f"{grp.name}: {compress(grp.hosts)} ({len(grp.hosts)} host{'s' if len(grp.hosts) != 1 else ''})")
            for k, leaf in enumerate(grp.leaves):
                lines.append(f"  rail {k}: {_sw(g, leaf) if leaf else '(no linked HCA)'}")
    else:
        lines.append(f"layout: {len(lay.groups)} groups (the table is in --format json)")
    return "\n".join(lines) + "\n"
