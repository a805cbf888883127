"""Steps 1-3 of the rail layout (:mod:`ncclctl.fabric.layout`): the rails of each host, the groups (scalable
units) its leaves form, each group's rail leaves; and the pods of a three-tier fabric. A dict or Counter pass
over hosts and links: linear in the fabric size.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import itemgetter

from ncclctl.fabric.graph import Endpoint, FabricGraph, finding
from ncclctl.fabric.sources import FabricInput
from ncclctl.findings import Finding
from ncclctl.names import natural_key


_RAIL_IN_NAME = re.compile(r"rail[^0-9a-z]{0,2}(\d+)", re.IGNORECASE)


@dataclass
class Group:
    index: int
    name: str
    hosts: list[str]
    #: rail k -> the group's rail-k leaf (switch GUID), None when no host of the group has rail k linked
    leaves: list[str | None] = field(default_factory=list)


def _root(parent: dict[str, str], x: str) -> str:
    """Union-find: the root of ``x``, compressing the path to it."""
    r = x
    while parent[r] != r:
        r = parent[r]
    while parent[x] != r:
        parent[x], x = r, parent[x]
    return r


@dataclass
class Structure:
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


def find_structure(inp: FabricInput, hosts: list[str], rails: int | None) -> Structure:
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
    return Structure(hosts=hosts, rail_keys=rail_keys, host_rails=host_rails, table=table, model_keys=model_keys,
                     nrails=nrails, rail_source=rail_source, host_leaves=host_leaves, groups=groups,
                     host_group=host_group, unplaced=unplaced, findings=findings)


def pods(g: FabricGraph) -> tuple[dict[str, int], int]:
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
