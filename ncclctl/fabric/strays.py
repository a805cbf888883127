"""Hosts beyond the rail pattern: management hosts with an HCA or two on some leaf, left out of the layout
(FAB015 names them), and HCAs whose description names no host, placed by where they are cabled (FAB016,
FAB007).
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import repeat
from operator import is_

from ncclctl.fabric.graph import WHY_TEXT, FabricGraph, UnknownHca, finding, unknown_findings
from ncclctl.fabric.naming import find_field, with_number
from ncclctl.fabric.sources import FabricInput
from ncclctl.findings import Finding
from ncclctl.fabric.structure import Structure


_MGMT_NAME = re.compile(r"ufm|mgmt|manage|admin|login|head|master|ctrl|control|bastion|sm[0-9-]", re.IGNORECASE)


def outsiders(g: FabricGraph, st: Structure) -> dict[str, str]:
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


def _skeleton(name: str) -> str:
    return re.sub(r"[0-9]+", "#", name.lower())


def place_unknown(g: FabricGraph, inp: FabricInput, st: Structure, findings: list[Finding]) -> list[dict]:
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
