"""Rail and plane ids of a node's rail ports, from the best source available.

What NCCL 2.30.7+ reads of them, and when they are written, is :mod:`ncclctl.nccl.railids`.

Sources, best first (the first one that covers every rail port of the node wins, and is named):

1. ``fabric``: the fabric (``ibnetdiscover``/``iblinkinfo``, or the inventory's LLDP neighbours on RoCE) through
   :func:`ncclctl.fabric.layout.analyze`: the leaf a port lands on decides its rail (the leaf's rail in the host's
   group), the spine plane (the set of leaves that share spines, when a two-tier fabric has several) its plane.
   The same leaf gives the same rail on every host: the ids are a fleet fact.
2. ``inventory``: a rail map (YAML) naming each switch's rail/plane (``switches:``, matched with the port's LLDP
   neighbour), or each host's ports (``hosts:``).
3. ``subnet``: one subnet per rail (``subnets:`` in the rail map, matched with the port's RoCE IPv4 GID).
4. ``pcie``: the local PCIe order of :func:`ncclctl.plan.rails.plan_rails` (rail k = GPU k's closest NIC). A per-node
   guess: shown, never written to NCCL's files (a wrong guess would look like a fact).

Rail map (``--rail-map FILE``)::

    switches:                 # LLDP chassis name of the switch a port lands on
      leaf-r0-p0: {rail: 0, plane: 0}
    subnets:                  # one IPv4 subnet per rail (RoCE)
      10.0.0.0/24: {rail: 0}
    hosts:                    # explicit ports
      node01:
        mlx5_0:1: {rail: 0, plane: 0}
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from ncclctl.errors import InputError
from ncclctl.model import Node
from ncclctl.nccl.railids import RailId, RailIds, emit_note, written
from ncclctl.nccl.version import Version
from ncclctl.plan.rails import RailPlan

#: Sources in order of trust.
SOURCES = ("fabric", "inventory", "subnet", "pcie")


def pcie_ids(plan: RailPlan) -> RailIds:
    return RailIds({r.hca: RailId(r.rail) for r in plan.rails}, "pcie", "local PCIe order (GPU k's closest NIC)")


# --------------------------------------------------------------------------------------------------
# The rail map file


def _ids(value, path: str, where: str) -> RailId:
    if not isinstance(value, dict) or "rail" not in value or set(value) - {"rail", "plane"}:
        raise InputError(f"{where}: expected {{rail: N}} or {{rail: N, plane: P}}", path=path,
                         fix="write e.g. {rail: 0, plane: 1}")
    for k in ("rail", "plane"):
        v = value.get(k)
        if k in value and (isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 1 << 14):
            raise InputError(f"{where}: {k} {v!r} is not an integer from 0 to 16383", path=path,
                             fix="rail and plane ids are small non-negative integers")
    return RailId(value["rail"], value.get("plane"))


@dataclass
class RailMap:
    path: str
    switches: dict[str, RailId]
    subnets: list[tuple[ipaddress.IPv4Network, RailId]]
    hosts: dict[str, dict[str, RailId]]


def load_rail_map(path: str) -> RailMap:
    from ncclctl.inputs import read_text
    from ncclctl.yamlio import load

    doc, _ = load(read_text(path, "rail map"), path, fix="see docs/rails.md (rail map)")
    if not isinstance(doc, dict) or not doc or set(doc) - {"switches", "subnets", "hosts"}:
        raise InputError("a rail map is a mapping with switches:, subnets: and/or hosts:", path=path,
                         fix="see docs/rails.md (rail map)")
    for k in ("switches", "subnets", "hosts"):
        if not isinstance(doc.get(k, {}), dict):
            raise InputError(f"{k}: must be a mapping", path=path, fix="see docs/rails.md (rail map)")
    switches = {str(k): _ids(v, path, f"switches: {k}") for k, v in (doc.get("switches") or {}).items()}
    subnets = []
    for k, v in (doc.get("subnets") or {}).items():
        try:
            net = ipaddress.IPv4Network(str(k), strict=False)
        except ValueError:
            raise InputError(f"subnets: {k!r} is not an IPv4 subnet", path=path, fix="write e.g. 10.0.3.0/24")
        subnets.append((net, _ids(v, path, f"subnets: {k}")))
    hosts: dict[str, dict[str, RailId]] = {}
    for h, ports in (doc.get("hosts") or {}).items():
        if not isinstance(ports, dict):
            raise InputError(f"hosts: {h}: must map ports (mlx5_0:1) to ids", path=path,
                             fix="write e.g. mlx5_0:1: {rail: 0}")
        hosts[str(h)] = {str(p) if ":" in str(p) else f"{p}:1": _ids(v, path, f"hosts: {h}: {p}")
                         for p, v in ports.items()}
    return RailMap(path, switches, subnets, hosts)


def short_name(name: str) -> str:
    return name.split(".")[0]


def _port_of(node: Node, hca: str):
    nic_name, _, num = hca.rpartition(":")
    nic = next((n for n in node.nics if n.name == nic_name), None)
    if nic is None:
        return None, None
    return nic, next((p for p in nic.ports if str(p.num) == num), None)


def map_sources(node: Node, plan: RailPlan, rmap: RailMap, host: str) -> RailIds | None:
    keys = [r.hca for r in plan.rails]
    explicit = rmap.hosts.get(host) or rmap.hosts.get(short_name(host))
    if explicit and all(k in explicit for k in keys):
        return RailIds({k: explicit[k] for k in keys}, "inventory", f"{rmap.path}: hosts: {host}")
    if rmap.switches:
        ids = {}
        for r in plan.rails:
            nd = next((d for d in node.netdevs if d.name == r.netdev), None) if r.netdev else None
            chassis = nd.lldp.chassis_name if nd is not None and nd.lldp is not None else None
            if chassis is not None and (chassis in rmap.switches or short_name(chassis) in rmap.switches):
                ids[r.hca] = rmap.switches.get(chassis) or rmap.switches[short_name(chassis)]
        if len(ids) == len(keys):
            return RailIds(ids, "inventory", f"{rmap.path}: switches: (LLDP neighbours)")
    if rmap.subnets:
        ids = {}
        for r in plan.rails:
            _, port = _port_of(node, r.hca)
            for g in (port.gids if port is not None else ()):
                if g.ipv4 is None:
                    continue
                hit = next((rid for net, rid in rmap.subnets if ipaddress.IPv4Address(g.ipv4) in net), None)
                if hit is not None:
                    ids[r.hca] = hit
                    break
        if len(ids) == len(keys):
            return RailIds(ids, "subnet", f"{rmap.path}: subnets: (RoCE IPv4 GIDs)")
    return None


# --------------------------------------------------------------------------------------------------
# The fabric


_RAIL_NAME = re.compile(r"rail[^0-9a-z]{0,2}(\d+)", re.IGNORECASE)
_PLANE_NAME = re.compile(r"(?:plane[^0-9a-z]{0,2}|(?<![a-z0-9])p)(\d+)(?![0-9])", re.IGNORECASE)


def _name_numbers(lay, leaves: list[str], pattern: re.Pattern) -> dict[str, int] | None:
    """Leaf -> the number its name carries (0-based: a fabric numbered from 1 is shifted), None unless every leaf
    has one."""
    out = {}
    for leaf in leaves:
        sw = lay.graph.switches.get(leaf)
        m = pattern.search(sw.desc.split(":")[0]) if sw is not None else None
        if m is None:
            return None
        out[leaf] = int(m.group(1))
    if out and min(out.values()) == 1:
        out = {k: v - 1 for k, v in out.items()}
    return out


def _switch_sets(lay):
    """``find``: switch -> the representative of its set of switches joined by links (leaves through spines)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, _pa, b, _pb, *_ in lay.graph.switch_links:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return find


def _spine_planes(lay, leaves: list[str]) -> dict[str, int] | None:
    """Leaf -> plane: the leaves joined through shared spines, when there is more than one such set and a set holds
    two leaves of one group (a spine set per rail is a rail, not a plane)."""
    find = _switch_sets(lay)
    roots: dict[str, int] = {}
    plane = {leaf: roots.setdefault(find(leaf), len(roots)) for leaf in leaves}
    if len(roots) < 2:
        return None
    if not any(len({plane[x] for x in grp.leaves if x}) < len([x for x in grp.leaves if x]) for grp in lay.groups):
        return None
    return plane


def fabric_rail_only(lay) -> bool:
    """No switch path between two leaves of different rails of a group: every set of switches joined by links
    holds at most one leaf of each group (a rail-only fabric: traffic between rails must cross inside a node)."""
    leaves = {x for grp in lay.groups for x in grp.leaves if x is not None}
    if not leaves:
        return False
    find = _switch_sets(lay)
    for grp in lay.groups:
        roots = [find(x) for x in grp.leaves if x is not None]
        if len(set(roots)) < len(roots):
            return False
    return True


def fabric_host_ids(lay) -> dict[str, dict[str, RailId]]:
    """Host -> {"mlx5_0:1": ids} for every host of a :class:`~ncclctl.fabric.layout.Layout` whose rail ports are
    linked: the ids of the leaf each port actually lands on. A leaf's plane: the number its name carries
    (``plane1``, ``p1-``), else its spine plane (leaves joined through shared spines, when there are several and
    one holds two leaves of a group), else none. Its rail: the number its name carries (``rail3``) when every leaf's
    name has one, else its index among its group's leaves of the same plane. The same leaf gives the same ids on
    every host."""
    leaves = sorted({x for grp in lay.groups for x in grp.leaves if x is not None})
    planes = _name_numbers(lay, leaves, _PLANE_NAME) or _spine_planes(lay, leaves)
    named = _name_numbers(lay, leaves, _RAIL_NAME)
    leaf_ids: dict[str, RailId] = {}
    for grp in lay.groups:
        seen: dict[int | None, int] = {}
        for leaf in grp.leaves:
            if leaf is None or leaf in leaf_ids:
                continue
            plane = planes.get(leaf) if planes else None
            n = seen.get(plane, 0)
            seen[plane] = n + 1
            leaf_ids[leaf] = RailId(named[leaf] if named else n, plane)
    out: dict[str, dict[str, RailId]] = {}
    for h in lay.hosts:
        eps = lay.host_rails.get(h) or []
        reached = lay.eff_leaves.get(h) or []
        ids = {}
        for k, ep in enumerate(eps):
            if ep is None or ep.link is None or k >= len(reached):
                continue
            if reached[k] in leaf_ids:
                ids[ep.key] = leaf_ids[reached[k]]
        out[h] = ids
    return out


def fabric_host_leaves(lay) -> dict[str, dict[str, str]]:
    """Host -> {"mlx5_0:1": leaf} for every linked rail port of a :class:`~ncclctl.fabric.layout.Layout`: the leaf
    the port actually lands on (its switch name in the fabric)."""
    out: dict[str, dict[str, str]] = {}
    for h in lay.hosts:
        eps = lay.host_rails.get(h) or []
        reached = lay.eff_leaves.get(h) or []
        out[h] = {ep.key: reached[k] for k, ep in enumerate(eps)
                  if ep is not None and ep.link is not None and k < len(reached) and reached[k] is not None}
    return out


def leaf_name(lay, leaf: str) -> str:
    """A leaf's name as the fabric describes it (node description without the ``MF0;`` and model parts)."""
    sw = lay.graph.switches.get(leaf)
    desc = sw.desc if sw is not None and sw.desc else leaf
    return desc.split(";")[-1].split(":")[0] or leaf


def resolve(node: Node, plan: RailPlan, *, host: str | None = None, fabric: dict[str, dict[str, RailId]] | None = None,
            fabric_label: str = "", rail_map: RailMap | None = None, rail_only: bool = False) -> RailIds:
    """The ids of ``plan``'s rail ports from the best source that covers them all (see the module doc).
    ``rail_only``: the fabric is rail-only (:func:`fabric_rail_only`), kept on fabric ids."""
    host = host or node.hostname
    keys = [r.hca for r in plan.rails]
    notes: list[str] = []
    if fabric is not None:
        ids = fabric.get(host) or fabric.get(short_name(host))
        if ids is None:
            notes.append(f"the fabric has no host {host}")
        elif all(k in ids for k in keys):
            return RailIds({k: ids[k] for k in keys}, "fabric", f"{fabric_label}: host {host}", notes,
                           rail_only=rail_only)
        else:
            missing = [k for k in keys if k not in ids]
            notes.append(f"the fabric does not place {', '.join(missing)} of {host} on a rail leaf")
    if rail_map is not None:
        got = map_sources(node, plan, rail_map, host)
        if got is not None:
            got.notes = notes
            return got
        notes.append(f"{rail_map.path} does not cover every rail port of {host}")
    got = pcie_ids(plan)
    got.notes = notes
    return got


def fusion_crosses_rails(node: Node, plan: RailPlan, ids: RailIds) -> list[tuple[str, str]]:
    """Pairs of rail ports NCCL's default fusion (NCCL_NET_MERGE_LEVEL PORT: two ports or two functions of one card)
    would fuse into one virtual NIC although their rail ids differ."""
    out = []
    rails = list(plan.rails)
    for i, a in enumerate(rails):
        for b in rails[i + 1:]:
            same_card = a.nic == b.nic or (a.bdf is not None and b.bdf is not None and a.bdf[:-1] == b.bdf[:-1])
            ra, rb = ids.ids.get(a.hca), ids.ids.get(b.hca)
            if same_card and ra is not None and rb is not None and ra.rail != rb.rail:
                out.append((a.hca, b.hca))
    return out


def ids_doc(ids: RailIds) -> dict:
    return {"source": ids.source, "detail": ids.detail, "notes": list(ids.notes),
            "ids": {k: {"rail": v.rail, "plane": v.plane} for k, v in sorted(ids.ids.items())}}


def nccl_ib_hca(plan: RailPlan, ids: RailIds | None, version: Version) -> str:
    """``NCCL_IB_HCA`` for the target: ``=mlx5_0:1:0:0,...`` with fleet ids for 2.30.7+, else today's form."""
    w = written(ids, version)
    if w is None or not plan.rails:
        return plan.nccl_ib_hca
    return "=" + ",".join(w.hca_entry(r.hca) for r in plan.rails)


def rails_doc(node: Node, plan: RailPlan, ids: RailIds, version: Version) -> dict:
    from ncclctl.plan.rails import plan_doc

    doc = plan_doc(plan)
    for r in doc["rails"]:
        rid = ids.ids.get(r["hca"])
        r["rail_id"] = None if rid is None else rid.rail
        r["plane_id"] = None if rid is None else rid.plane
    doc["rail_ids"] = ids_doc(ids)
    doc["nccl_version"] = str(version)
    doc["nccl_ib_hca"] = nccl_ib_hca(plan, ids, version)
    w = written(ids, version)
    doc["nccl_net_merge_policy"] = "RAIL" if w is not None and fusion_crosses_rails(node, plan, w) else None
    doc["nccl_cross_nic"] = "0" if w is not None and w.rail_only else None
    doc["rail_ids"]["rail_only_fabric"] = ids.rail_only
    note = emit_note(ids, version)
    doc["rail_ids"]["not_written"] = note
    return doc


def rails_text(node: Node, plan: RailPlan, ids: RailIds, version: Version) -> str:
    from ncclctl.plan.rails import plan_text

    doc = rails_doc(node, plan, ids, version)
    lines = plan_text(plan).rstrip("\n").split("\n")
    out = []
    for ln in lines:
        if ln.startswith("NCCL_IB_HCA="):
            out.append(f"NCCL_IB_HCA={doc['nccl_ib_hca']}")
            if doc["nccl_net_merge_policy"]:
                out.append(f"NCCL_NET_MERGE_POLICY={doc['nccl_net_merge_policy']}")
            if doc["nccl_cross_nic"]:
                out.append(f"NCCL_CROSS_NIC={doc['nccl_cross_nic']}   (rail-only fabric: no switch path between rails)")
        else:
            out.append(ln)
    out.append("")
    out.append(f"rail/plane ids from the {ids.source} ({ids.detail}):")
    for r in plan.rails:
        rid = ids.ids.get(r.hca)
        if rid is not None:
            moved = "" if rid.rail == r.rail else f"   (PCIe order says rail {r.rail})"
            out.append(f"  {r.hca:<14} rail {rid.rail}" + ("" if rid.plane is None else f"  plane {rid.plane}") + moved)
    for n in ids.notes:
        out.append(f"note: {n}")
    if doc["rail_ids"]["not_written"]:
        out.append(f"note: {doc['rail_ids']['not_written']}")
    return "\n".join(out) + "\n"
