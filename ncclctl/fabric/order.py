"""Topology-aware host order for NCCL rings (``ncclctl fabric order``) and its renderings.

NCCL's inter-node ring follows the rank order, so consecutive hosts should share their leaves. The order puts the
hosts of each leaf group (``fabric rails`` detects them) together: group after group, in the order of their first
host name, hosts in natural name order inside a group, except that hosts whose cabling deviates from the group's
layout go last (next to the group boundary, where the ring crosses the spine anyway) and side by side when they
deviate the same way. A ring then crosses the spine once per group boundary plus once to close: ``groups``
crossings when there is more than one group, which is also the lower bound (each occupied group must be entered
once). The naive order, for comparison, is the hosts sorted by name (natural sort).

Hosts with no linked rail HCA are left out of the order (they could not join a ring) and reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ncclctl.fabric.cost import CostParams, FabricCapacity, params_doc, ring_cost
from ncclctl.fabric.hostlist import compress
from ncclctl.fabric.layout import Layout
from ncclctl.names import natural_key


@dataclass
class Order:
    hosts: list[str]
    naive: list[str]
    crossings: int
    naive_crossings: int
    lower_bound: int
    #: (group name, hosts of that group in ring order), in ring order
    segments: list[tuple[str, list[str]]]
    excluded: list[str]
    slots: int
    cost: dict = field(default_factory=dict)
    naive_cost: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    #: hosts outside the rail layout (management hosts, FAB015) and the likely names of unnamed hosts (FAB016):
    #: not in the order, named in the outputs' comments
    outside: list[str] = field(default_factory=list)
    unnamed: list[str] = field(default_factory=list)
    #: multi-node NVLink domains (GB200/GB300 NVL72) kept whole: (domain name, its hosts in ring order), in ring order
    domains: list[tuple[str, list[str]]] = field(default_factory=list)


def crossings(order: list[str], host_group: dict[str, int]) -> int:
    """Ring steps (the closing step included) between hosts of different leaf groups."""
    n = len(order)
    if n < 2:
        return 0
    grp = [host_group.get(h, -1) for h in order]
    return sum(1 for i in range(n) if grp[i] != grp[i - 1])


def default_slots(lay: Layout) -> int:
    """Slots per host: the inventory's GPU count when all hosts agree, else the rail count."""
    counts = {n for n in lay.gpus.values() if n}
    return counts.pop() if len(counts) == 1 else (lay.rails or 1)


def plan_order(lay: Layout, *, slots: int | None = None, params: CostParams | None = None,
               compare: bool = True, nvlink: dict[str, str] | None = None) -> Order:
    """The ring order of ``lay``'s hosts. ``compare=False``: the order alone, for outputs that print neither the
    sorted-name comparison nor the cost model (hostfile, Slurm): ``naive`` is then empty, ``naive_crossings`` -1,
    and the cost fields are empty (at 32,768 nodes the two cost models are a fifth of the run). ``nvlink``: host ->
    its multi-node NVLink domain's name: each domain's hosts are kept together (:func:`by_nvlink_domain`)."""
    segments: list[tuple[str, list[str]]] = []
    order: list[str] = []
    for grp in lay.groups:
        normal = grp.leaves
        odd = {h: tuple(x or "" for x in lay.eff_leaves[h]) for h in grp.hosts if lay.eff_leaves[h] != normal}
        hosts = grp.hosts if not odd else sorted(grp.hosts, key=lambda h: (h in odd, odd.get(h, ()), natural_key(h)))
        segments.append((grp.name, hosts))
        order.extend(hosts)
    domains: list[tuple[str, list[str]]] = []
    if nvlink and any(h in nvlink for h in order):
        order, segments, domains = by_nvlink_domain(order, segments, nvlink)
    naive = sorted(order, key=natural_key) if compare else []
    hg = lay.host_group
    occupied = len(lay.groups)
    if slots is None:
        slots = default_slots(lay)
    result = Order(hosts=order, naive=naive, crossings=crossings(order, hg),
                   naive_crossings=crossings(naive, hg) if compare else -1,
                   lower_bound=occupied if occupied > 1 else 0, segments=segments, excluded=list(lay.unplaced),
                   slots=slots, outside=sorted(lay.outside, key=natural_key),
                   unnamed=[f"{u['likely'] or 'unnamed'} ({u['group']} port {u['port']})" for u in lay.unnamed],
                   domains=domains)
    if not compare:
        return result
    params = params or CostParams(ranks_per_host=slots)
    capacity = FabricCapacity(lay, params.oversubscription)
    result.cost = ring_cost(order, lay, params, capacity)
    result.naive_cost = ring_cost(naive, lay, params, capacity)
    result.params = params_doc(params, capacity, lay.expected_rate)
    return result


def by_nvlink_domain(order: list[str], segments: list[tuple[str, list[str]]], nvlink: dict[str, str]
                     ) -> tuple[list[str], list[tuple[str, list[str]]], list[tuple[str, list[str]]]]:
    """The leaf-group ``order`` with each multi-node NVLink domain's hosts together (GB200/GB300 NVL72: NCCL uses
    MNNVL only inside a domain, so a job's ranks of one rack should be contiguous): domains in the order of their
    first host in ``order``, hosts inside a domain in their leaf-group order (so the ring still crosses the spine
    once per leaf group inside a domain), hosts of no domain last in their own order. Returns the order, its
    segments (``<domain>_<leaf group>``, or the group alone for hosts of no domain) and the domains with their
    hosts."""
    group_of = {h: name for name, hosts in segments for h in hosts}
    rank: dict[str, int] = {}
    for h in order:
        d = nvlink.get(h)
        if d is not None:
            rank.setdefault(d, len(rank))
    new = [order[i] for i in sorted(range(len(order)), key=lambda i: (rank.get(nvlink.get(order[i], ""), len(rank)), i))]
    segs: list[tuple[str, list[str]]] = []
    doms: list[tuple[str, list[str]]] = []
    for h in new:
        d = nvlink.get(h)
        name = f"{d}_{group_of[h]}" if d is not None else group_of[h]
        if segs and segs[-1][0] == name:
            segs[-1][1].append(h)
        else:
            segs.append((name, [h]))
        if d is not None:
            if doms and doms[-1][0] == d:
                doms[-1][1].append(h)
            else:
                doms.append((d, [h]))
    return new, segs, doms


# ---------------------------------------------------------------------------------------------------------------
# Renderings


def hostfile(o: Order) -> str:
    """mpirun hostfile: one ``host slots=N`` line per host, in ring order."""
    return "".join(f"{h} slots={o.slots}\n" for h in o.hosts)


def _header(o: Order, lay: Layout, what: str) -> list[str]:
    where = (f"{len(o.segments)} leaf group segment(s) of {len(o.domains)} NVLink domain(s), hosts of a domain "
             f"together" if o.domains else f"{len(o.segments)} leaf group(s), one switch/block per group")
    return [f"# Slurm topology.conf ({what}) written by ncclctl fabric order from {lay.graph.source}",
            f"# {len(o.hosts)} hosts in {where}; ring crossings {o.crossings} (lower bound {o.lower_bound})"]


def _left_out(o: Order) -> list[str]:
    lines = []
    if o.excluded:
        lines.append(f"# not connected (no linked rail HCA): {compress(o.excluded)}")
    if o.outside:
        lines.append(f"# not in the rail layout (management hosts?): {compress(o.outside)}")
    if o.unnamed:
        lines.append(f"# hosts whose HCAs carry no host name: {', '.join(o.unnamed)}")
    return lines


def slurm_tree(o: Order, lay: Layout, *, top: str = "spine") -> str:
    """topology/tree: one leaf switch per group (``Nodes=``) and a top switch over the groups (``Switches=``)."""
    lines = _header(o, lay, "topology/tree")
    for name, hosts in o.segments:
        lines.append(f"SwitchName={name} Nodes={compress(hosts)}")
    if len(o.segments) > 1:
        lines.append(f"SwitchName={top} Switches={compress([name for name, _ in o.segments])}")
    lines += _left_out(o)
    return "\n".join(lines) + "\n"


def slurm_block(o: Order, lay: Layout) -> str:
    """topology/block: one block per group; BlockSizes is the smallest block (Slurm needs every block to have at
    least the base block size)."""
    lines = _header(o, lay, "topology/block")
    blocks = o.segments
    if o.domains:  # one block per NVLink domain (as fleet blocks writes them); hosts of no domain per leaf group
        in_domain = {h for _, hosts in o.domains for h in hosts}
        blocks = o.domains + [(n, hs) for n, hs in o.segments if not in_domain.intersection(hs)]
    for name, hosts in blocks:
        lines.append(f"BlockName={name} Nodes={compress(hosts)}")
    if blocks:
        lines.append(f"BlockSizes={min(len(h) for _, h in blocks)}")
    lines += _left_out(o)
    return "\n".join(lines) + "\n"


def order_doc(o: Order, lay: Layout) -> dict:
    from ncclctl import JSON_SCHEMA_VERSION

    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "fabric": lay.graph.source,
        "hosts": len(o.hosts),
        "rails": lay.rails,
        "slots": o.slots,
        "order": o.hosts,
        "groups": [{"name": name, "hosts": hosts} for name, hosts in o.segments],
        "nvlink_domains": [{"name": name, "hosts": hosts} for name, hosts in o.domains],
        "excluded": o.excluded,
        "not_in_layout": o.outside,
        "unnamed": o.unnamed,
        "crossings": o.crossings,
        "lower_bound": o.lower_bound,
        "naive": {"order": "hostnames, natural sort", "crossings": o.naive_crossings, "cost": o.naive_cost},
        "cost": o.cost,
        "cost_model": o.params,
    }


def _fmt(v, unit: str = "", digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}{unit}"
    return f"{v}{unit}"


def order_text(o: Order, lay: Layout) -> str:
    c, nc = o.cost, o.naive_cost
    hops = (c.get("hops_per_step") or {}).get("mean")
    nhops = (nc.get("hops_per_step") or {}).get("mean")
    rows = [
        ("spine crossings (ring)", _fmt(o.crossings), _fmt(o.naive_crossings)),
        ("  lower bound", _fmt(o.lower_bound), ""),
        ("rail steps via spine", _fmt(c.get("crossing_steps")), _fmt(nc.get("crossing_steps"))),
        ("switch hops per step", _fmt(hops), _fmt(nhops)),
        ("bottleneck (Gb/s)", _fmt(c.get("bottleneck_gbps"), digits=1), _fmt(nc.get("bottleneck_gbps"), digits=1)),
        ("latency (us)", _fmt(c.get("latency_us"), digits=1), _fmt(nc.get("latency_us"), digits=1)),
        ("all-reduce time (ms)", _fmt(c.get("time_ms"), digits=3), _fmt(nc.get("time_ms"), digits=3)),
        ("est. busbw (GB/s)", _fmt(c.get("busbw_GBps"), digits=1), _fmt(nc.get("busbw_GBps"), digits=1)),
    ]
    p = o.params
    over = p["oversubscription"]
    where = (f"{len(o.segments)} leaf group segment(s) of {len(o.domains)} NVLink domain(s)" if o.domains
             else f"{len(o.segments)} leaf group(s)")
    lines = [f"ring order: {len(o.hosts)} hosts in {where}, {lay.rails} rails, "
             f"{o.slots} slots per host (fabric: {lay.graph.source})",
             f"{'':24} {'this order':>12} {'sorted names':>14}"]
    if o.domains:
        lines.insert(1, f"NVLink domains kept whole: {len(o.domains)} ("
                        + "; ".join(f"{name}: {compress(hosts)}" for name, hosts in o.domains[:6])
                        + ("; ..." if len(o.domains) > 6 else "") + "): MNNVL works only inside a domain")
    lines += [f"{name:24} {a:>12} {b:>14}".rstrip() for name, a, b in rows]
    ratio = over["leaf_down_up_ratio"]
    lines.append(f"cost model: {p['message_bytes']} B all-reduce, {p['hop_latency_us']:g} us per hop, links "
                 f"{_fmt(p['link_gbps'], ' Gb/s', 0) if p['link_gbps'] else 'rate unknown'}, leaf oversubscription "
                 f"{'%g:1' % ratio if ratio else '-'} ({over['source']})")
    lines.append("order (hostfile: --format hostfile):")
    for name, hosts in o.segments:
        lines.append(f"  {name}: {compress(hosts) if hosts == sorted(hosts, key=natural_key) else ' '.join(hosts)}")
    if o.excluded:
        lines.append(f"left out (no linked rail HCA): {compress(o.excluded)}")
    if o.outside:
        lines.append(f"left out (not in the rail layout: management hosts?): {compress(o.outside)}")
    if o.unnamed:
        lines.append(f"left out (HCAs without a host name): {', '.join(o.unnamed)}")
    return "\n".join(lines) + "\n"


def render_order(o, lay, fmt: str) -> str:
    """``fabric order -f FMT``: text (summary and cost model), hostfile, slurm (tree), slurm-block or json."""
    if fmt == "hostfile":
        return hostfile(o)
    if fmt == "slurm":
        return slurm_tree(o, lay)
    if fmt == "slurm-block":
        return slurm_block(o, lay)
    if fmt == "json":
        from ncclctl.render import dumps

        return dumps(order_doc(o, lay))
    return order_text(o, lay)
