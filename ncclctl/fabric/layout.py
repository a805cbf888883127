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

Everything is a dict or Counter pass over hosts and links: linear in the fabric size. Steps 1-3 are
:mod:`ncclctl.fabric.structure`; what the names say (group names, FAB018) :mod:`ncclctl.fabric.numbering`; the
hosts beyond the rail pattern (management hosts, unnamed HCAs) :mod:`ncclctl.fabric.strays`; the check and the
output are here.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from operator import itemgetter

from ncclctl.errors import UsageError
from ncclctl.fabric.graph import Endpoint, FabricGraph, finding, rate_label, switch_label, switch_ref
from ncclctl.fabric.hostlist import compress
from ncclctl.fabric.sources import FabricInput
from ncclctl.findings import Finding, Severity
from ncclctl.parsers.ibnetdiscover import LANE_GBPS
from ncclctl.names import natural_key
from ncclctl.fabric.numbering import Numbering, name_findings, name_groups, numbering_of
from ncclctl.fabric.strays import outsiders, place_unknown
from ncclctl.fabric.structure import Group, Structure, find_structure, pods


_LAYOUT_TEXT_GROUPS = 16  # text output lists the layout table up to this many groups


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


def _truthy(c: Counter) -> Counter:
    """``c`` without its None / empty / zero keys (counted by C loops, dropped after)."""
    for k in [k for k in c if not k]:
        del c[k]
    return c


def analyze(inp: FabricInput, *, rails: int | None = None, expect_rate: str | None = None) -> Layout:
    g = inp.graph
    src = g.source
    eps = inp.endpoints
    findings: list[Finding] = list(inp.findings)
    problems: list[dict] = []
    all_hosts = sorted(eps, key=natural_key)

    st = find_structure(inp, all_hosts, rails)
    # Hosts that do not form the rail pattern (management hosts) are judged apart and the layout is made from
    # the others; an inventory says which hosts are compute hosts, so with one every host is.
    outside = {} if inp.hosts else outsiders(g, st)
    if outside:
        st = find_structure(inp, [h for h in all_hosts if h not in outside], rails)
    findings += st.findings
    hosts = st.hosts
    rail_keys, host_rails, host_leaves = st.rail_keys, st.host_rails, st.host_leaves
    groups, host_group, nrails = st.groups, st.host_group, st.nrails

    # numbering: the fabric's own numbers in leaf and host names, checked against the detected structure
    numbering = numbering_of(g, st)
    name_groups(inp, groups, numbering)
    groups.sort(key=lambda grp: grp.index)
    host_group.clear()
    host_group.update({h: grp.index for grp in groups for h in grp.hosts})
    name_findings(g, st, numbering, findings)

    for grp in groups:
        shared = Counter(L for L in grp.leaves if L is not None)
        for leaf, n in sorted(shared.items()):
            if n > 1:
                rails_of = [k for k, L in enumerate(grp.leaves) if L == leaf]
                findings.append(finding(
                    "FAB013", f"{grp.name} ({compress(grp.hosts)}): leaf {switch_label(g, leaf)} serves rails "
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
            problems.append({**rec, "problem": "absent", "line": line, "expected": switch_ref(g, exp_leaf)})
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
                          + (f"; expected on {switch_label(g, exp_leaf)}" if exp_leaf else ""), subject=src,
                line=ep.line, host=h))
            problems.append({**rec, "problem": "down", "line": ep.line, "expected": switch_ref(g, exp_leaf)})
            return
        if grp is not None and exp_leaf is not None and link[0] != exp_leaf:  # (an expected leaf has a group)
            findings.append(finding(
                "FAB001", f"{h} {hca} port {ep.port} (rail {k}): cabled to {switch_label(g, link[0])} port {link[1]}; "
                          f"expected {switch_label(g, exp_leaf)}, the rail-{k} leaf of {grp.name}",
                subject=src, line=link[5], host=h))
            problems.append({**rec, "problem": "miscabled", "line": link[5], "expected": switch_ref(g, exp_leaf),
                             "actual": {**(switch_ref(g, link[0]) or {}), "port": link[1]}})
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
            what = (f"switch link {switch_label(g, a)} port {pa} - {switch_label(g, b)} port {pb}: "
                    f"{rate_label(w, s, rate)}")
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
    unnamed = place_unknown(g, inp, st, findings)

    leaf_pod, tiers = pods(g)
    gpus = {h: i.gpus for h, i in hinfo.items() if i.gpus}
    return Layout(graph=g, rails=nrails, rail_source=st.rail_source, hosts=hosts, host_rails=host_rails,
                  rail_keys=rail_keys, groups=groups, host_group=host_group, unplaced=st.unplaced,
                  expected_rate=exp_rate, expected_width=exp_width, findings=findings, problems=problems,
                  inventory_path=inv, gpus=gpus, eff_leaves=eff_leaves, outside=outside, unnamed=unnamed,
                  missing=[missing[key] for key in sorted(missing)], numbering=numbering, leaf_pod=leaf_pod,
                  tiers=tiers)


def _missing_leaves(g: FabricGraph, st: Structure, numbering: Numbering, findings: list[Finding],
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
                    "leaves": [{"rail": k, **(switch_ref(g, leaf) or {"guid": None, "desc": None})}
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
                             f"{switch_label(g, leaf) if leaf else '(no linked HCA)'}")
    else:
        lines.append(f"layout: {len(lay.groups)} groups (the table is in --format json)")
    return "\n".join(lines) + "\n"
