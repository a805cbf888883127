"""The rails and planes NCCL assigned to each NIC (2.30.7+), read from its log, and LOG037: held against each other
across the job's nodes, and against the rails ncclctl knows (``log check --fabric FILE``: the leaf each port lands
on; ``--root DIR``: the node's rail table, GPU k's closest NIC on rail k).

What NCCL does with the ids (2.30.7 and 2.31.0a7 source, NVIDIA/nccl 5067397c and 86fa684d; the 2.30.7, 2.31.2
and 2.32.3 libraries print the lines, 2.29.7's not): the IB plugin takes them from ``NCCL_IB_HCA`` entries ``name:port:rail:plane`` (``misc/utils.cc``; -1 when
absent); a virtual device fusing ports of different rails gets rail -1 and plane 0x4000 plus one bit per plane;
the topology search keeps a channel on NICs of one rail id with ``NCCL_CROSS_NIC=0`` (and on one NIC when no id is
defined), never joins two NICs of different planes, and ``NCCL_NET_MERGE_POLICY=RAIL`` fuses only NICs of one rail
id (``graph/search.cc``, ``graph/topo.cc``). 2.32.3's ncclTopoPopulateNics line prints the topology's ids and, in
parentheses, the plugin's; when the plugin gives none, the topology's rail is 0x10000 plus the index of the NIC's
GUID in the order NCCL met them, its plane 0x10000 plus the port (read from the released 2.32.3 library's
machine code: its source is not public). Derived ids are NCCL's own numbering: only ids a person or the plugin
gave are compared here.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from ncclctl.findings import Severity
from ncclctl.logs.records import DERIVED_ID_BIT, FUSED_PLANE_BIT, Ev, LogSet, NetRail, Proc
from ncclctl.record import record

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

#: NCCL prints rail and plane ids from this release on.
RAILS_SINCE = (2, 30, 7)


@record
class NicIds:
    """One NIC's ids in one process: ``rail``/``plane`` as NCCL uses them (None: undefined), ``given``: the ids came
    from the plugin or a person (not derived by NCCL), ``ev``: the line."""

    name: str
    port: int | None
    rail: int | None
    plane: int | None
    derived: bool
    ev: Ev


def id_text(v: int | None) -> str:
    """An id as NCCL means it: -1 undefined, 0x10000+n derived by NCCL, 0x4000|bits a fused device's planes."""
    if v is None or v < 0:
        return "-"
    if v & DERIVED_ID_BIT:
        return f"NCCL's {v & ~DERIVED_ID_BIT}"
    if v & FUSED_PLANE_BIT:
        bits = [str(i) for i in range(14) if v & (1 << i)]
        return "fused " + "+".join(bits)
    return str(v)


def _plain(r: NetRail) -> bool:
    return "+" not in r.name and (r.ndevs is None or r.ndevs == 1)


def nic_ids(p: Proc) -> dict[str, NicIds]:
    """NIC name -> its ids in process ``p``, from the topology's line (what the search uses) when printed, else the
    plugin's "Made virtual device" line, else the ``NET/IB : Using`` list's ``name:port:rail:plane`` fields. Fused
    devices (``a+b``) are left out: their rail is undefined by design when the ports differ."""
    ports = {n.name: n.port for n in p.ib}
    out: dict[str, NicIds] = {}
    for kind in ("topo", "vdev"):
        for r in p.rails:
            if r.kind != kind or r.name in out or not _plain(r) or r.rail is None:
                continue
            derived = bool((r.rail >= 0 and r.rail & DERIVED_ID_BIT) or (r.plane is not None and r.plane >= 0
                                                                          and r.plane & DERIVED_ID_BIT))
            out[r.name] = NicIds(r.name, ports.get(r.name), r.defined_rail, r.defined_plane, derived, r.ev)
    if not out and p.ib_ev is not None and any(n.rail is not None or n.plane is not None for n in p.ib):
        for n in p.ib:
            out[n.name] = NicIds(n.name, n.port, n.rail, n.plane, False, p.ib_ev)
    return out


def has_rail_lines(p: Proc) -> bool:
    return bool(p.rails) or any(n.rail is not None or n.plane is not None for n in p.ib)


def rails_text(p: Proc) -> str | None:
    """One line for ``log show``: each NIC's rail and plane, or None when the process printed none."""
    ids = nic_ids(p)
    fused = [r for r in p.rails if r.kind == "vdev" and not _plain(r)]
    if not ids and not fused:
        return None
    cells = []
    for r in p.rails:
        if r.kind == "topo" and r.name in ids:
            cells.append(f"{r.name} rail {id_text(r.rail)} plane {id_text(r.plane)}"
                         + (f" (plugin: {id_text(r.plugin_rail)}/{id_text(r.plugin_plane)})"
                            if r.plugin_rail is not None and (r.plugin_rail, r.plugin_plane) != (r.rail, r.plane)
                            else ""))
    shown = {c.split()[0] for c in cells}
    for name, n in ids.items():
        if name not in shown:
            cells.append(f"{name} rail {id_text(n.rail)} plane {id_text(n.plane)}")
    for r in fused:
        cells.append(f"{r.name} (fused) rail {id_text(r.rail)} plane {id_text(r.plane)}")
    return ", ".join(cells)


def rails_doc(p: Proc) -> list[dict[str, Any]]:
    return [{"kind": r.kind, "name": r.name, "index": r.index, "ndevs": r.ndevs, "rail": r.rail, "plane": r.plane,
             "plugin_rail": r.plugin_rail, "plugin_plane": r.plugin_plane, "line": r.ev.where()} for r in p.rails]


def _version_has_rails(v: str | None) -> bool | None:
    if not v:
        return None
    try:
        parts = tuple(int(x) for x in v.split("+")[0].split(".")[:3])
    except ValueError:
        return None
    return parts >= RAILS_SINCE


# ---------------------------------------------------------------------------------------------------------------
# the sources ncclctl knows


def fabric_rails(path: str) -> dict[str, dict[str, tuple[int, int | None, str]]]:
    """``--fabric FILE``: host -> {"mlx5_0:1": (rail, plane, leaf)} for every linked rail port."""
    from ncclctl.fabric.layout import analyze
    from ncclctl.fabric.sources import load_input
    from ncclctl.plan.railids import fabric_host_ids, fabric_host_leaves, leaf_name

    lay = analyze(load_input(path, None))
    leaves = fabric_host_leaves(lay)
    out: dict[str, dict[str, tuple[int, int | None, str]]] = {}
    for host, ids in fabric_host_ids(lay).items():
        out[host] = {k: (v.rail, v.plane, leaf_name(lay, leaves.get(host, {}).get(k, "")) if leaves.get(host, {}).get(k)
                         else "") for k, v in ids.items()}
    return out


def _root_rails(node: Any) -> dict[str, tuple[int, int | None, str]]:
    from ncclctl.plan.rails import plan_rails

    return {r.hca: (r.rail, None, "GPU " + ",".join(str(g) for g in r.gpus)) for r in plan_rails(node).rails}


# ---------------------------------------------------------------------------------------------------------------
# LOG037


def _short(h: str) -> str:
    return h.split(".", 1)[0]


_INCONSISTENT = re.compile(r"Inconsistent rail/plane for net (\S+): existing (-?\d+)/(-?\d+), new (-?\d+)/(-?\d+)")


def _rail_warns(c: Any) -> None:
    """The WARNs that stop NCCL over rail/plane ids: the topology's ids against the plugin's (2.32.3: NCCL returns
    ncclInvalidUsage, read from the library), more plane ids than it takes or a reserved one (2.30.7+:
    transport/net_ib/init.cc), more rails than it takes (2.32.3)."""
    from ncclctl.logs.records import hostlist

    groups: dict[str, list[tuple[str, Ev]]] = defaultdict(list)
    for p in c.ls.procs.values():
        for kind, ev in p.warns:
            if kind != "rails":
                continue
            text = ev.text
            what = ("inconsistent" if "Inconsistent rail/plane" in text else "planes" if "plane ID" in text
                    else "rails")
            groups[what].append((p.host, ev))
    for what, items in sorted(groups.items()):
        hosts = {h for h, _e in items}
        evs = [e for _h, e in items[:4]]
        if what == "inconsistent":
            m = _INCONSISTENT.search(items[0][1].text)
            detail = (f" ({m.group(1)}: rail {m.group(2)} plane {m.group(3)} in the topology NCCL read, rail "
                      f"{id_text(int(m.group(4)))} plane {id_text(int(m.group(5)))} from the net plugin)" if m else "")
            c.add("LOG037", f"{hostlist(hosts)}: NCCL stopped: the rail/plane ids of the topology it read (the "
                  f"<net rail= plane=> of NCCL_TOPO_FILE or of a VM's virtual topology) differ from those its net plugin gives{detail}", evs,
                  severity=E, hosts=hosts,
                  fix="Make the two agree: write NCCL_TOPO_FILE with the ids NCCL_IB_HCA gives ('ncclctl topo "
                      "generate' with the same rail ids), or drop the rail/plane attributes from the file or the "
                      "rail:plane fields from NCCL_IB_HCA.")
        else:
            c.add("LOG037", f"{hostlist(hosts)}: NCCL stopped over the {'plane' if what == 'planes' else 'rail'} ids "
                  f"it was given: {items[0][1].text.split('NCCL WARN', 1)[-1].strip()}", evs, severity=E, hosts=hosts,
                  fix=("Give NCCL_IB_HCA at most 12 distinct plane ids, each below 16384 (NCCL marks fused devices' "
                       "planes with bit 14)." if what == "planes" else
                       "Give fewer distinct rail ids (NCCL_IB_HCA, the topology file's <net rail=>)."))


def check_rails(c: Any, fabric: dict[str, dict[str, tuple[int, int | None, str]]] | None = None,
                fabric_label: str = "") -> None:
    """LOG037: NCCL's rails and planes against each other and against the fabric (``fabric``) or the node's rail
    table (``--root``/``--inventory``)."""
    from ncclctl.logs.records import hostlist

    ls: LogSet = c.ls
    _rail_warns(c)
    per_host: dict[str, dict[str, NicIds]] = {}
    for p in ls.procs.values():
        ids = nic_ids(p)
        if ids and p.host not in per_host:
            per_host[p.host] = ids
    if not per_host:
        versions = {p.version for p in ls.procs.values() if p.version}
        new = [v for v in versions if _version_has_rails(v)]
        # asked with --fabric; with a node (--root/--inventory) only where the NCCL of the log prints them
        if fabric is not None or (c.nodes and new):
            why = (f"NCCL {', '.join(sorted(new))} prints them with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS including NET "
                   f"or GRAPH" if new else "NCCL 2.30.7+ prints them (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS with NET or "
                   "GRAPH); " + (f"this log is of NCCL {', '.join(sorted(versions))}" if versions else
                                 "the log names no NCCL version"))
            against = fabric_label or "the node's rail table"
            c.add("LOG037", f"the rails and planes NCCL assigned: not in this log ({why}); nothing held against "
                  f"{against}", [], severity=I,
                  fix="Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH on NCCL 2.30.7 or newer to see the "
                      "'Made virtual device ... rail= plane=' and 'ncclTopoPopulateNics ... rail= plane=' lines.")
        return
    # what ncclctl knows of each host's ports
    known: dict[str, dict[str, tuple[int, int | None, str]]] = {}
    label: dict[str, str] = {}
    for host in per_host:
        if fabric is not None:
            got = fabric.get(host) or fabric.get(_short(host))
            if got:
                known[host] = got
                label[host] = fabric_label or "the fabric"
                continue
        node = c.nodes.get(host)
        if node is not None:
            try:
                known[host] = _root_rails(node)
                label[host] = "the node's rail table (GPU k's closest NIC: rail k)"
            except Exception:  # a node model without its PCIe tree has no rail table
                pass
    if fabric is not None:
        missing = sorted(h for h in per_host if h not in known or label[h] != (fabric_label or "the fabric"))
        if missing:
            c.add("LOG037", f"{hostlist(missing)}: not in {fabric_label or 'the fabric'} (no linked rail port of "
                  f"that host name): their rails are not held against it", [per_host[missing[0]][next(iter(
                      per_host[missing[0]]))].ev], severity=I, hosts=missing,
                  fix="Give the fabric of these hosts, or check that the log's host names are the fabric's.")

    def key(host: str, n: NicIds) -> str:
        return f"{n.name}:{n.port if n.port is not None else 1}"

    # 1. two NICs of one node on one rail (and one plane)
    flagged: set[tuple[str, int]] = set()  # (host, NCCL rail) found here: step 3 leaves those NICs alone
    for host, ids in sorted(per_host.items()):
        by_rail: dict[tuple[int, int | None], list[NicIds]] = defaultdict(list)
        for n in ids.values():
            if n.rail is not None:
                by_rail[(n.rail, n.plane)].append(n)
        # a plane is None where none was given: sorted before every given one
        for (rail, plane), nics in sorted(by_rail.items(), key=lambda kv: (kv[0][0], -2 if kv[0][1] is None
                                                                           else kv[0][1])):
            if len(nics) < 2:
                continue
            names = ", ".join(n.name for n in nics)
            src = known.get(host)
            where = f"rail {rail}" + (f" plane {plane}" if plane is not None else "")
            if src is not None:
                placed = {key(host, n): src.get(key(host, n)) for n in nics}
                distinct = {v[0] for v in placed.values() if v is not None}
                if len(distinct) > 1:
                    cells = "; ".join(f"{k} on rail {v[0]}" + (f" ({v[2]})" if v[2] else "")
                                      for k, v in placed.items() if v is not None)
                    c.add("LOG037", f"{host}: NCCL put {names} on one {where}, {label[host]} has them on different "
                          f"rails ({cells}): with NCCL_CROSS_NIC=0 NCCL lets a channel enter on one and leave on the "
                          f"other, across rails", [n.ev for n in nics], severity=E, hosts={host},
                          fix=f"Give each NIC its own rail in NCCL_IB_HCA (name:port:rail:plane) as {label[host]} "
                              f"places it: 'ncclctl rails' (with --fabric) writes the entries.")
                    flagged.add((host, rail))
                    continue
            c.add("LOG037", f"{host}: NCCL put {names} on one {where} (NCCL_IB_HCA's name:port:rail:plane ids): "
                  f"NICs of one node on one rail share a leaf switch, which a rail-optimised node rarely has",
                  [n.ev for n in nics], severity=W, hosts={host},
                  fix="Check NCCL_IB_HCA on this node: each NIC's rail id should name the rail (leaf) its port is "
                      "cabled to; 'ncclctl fabric rails' shows where each port lands.")
    # 2. one NIC name, different rails on different nodes
    by_name: dict[str, dict[tuple[int | None, int | None], list[tuple[str, NicIds]]]] = defaultdict(
        lambda: defaultdict(list))
    for host, ids in per_host.items():
        for n in ids.values():
            if n.rail is not None or n.plane is not None:
                by_name[n.name][(n.rail, n.plane)].append((host, n))
    named: set[tuple[str, str]] = set()  # (host, NIC) found here: 2b leaves ranks on only those alone
    for name, groups in sorted(by_name.items()):
        if len(groups) < 2:
            continue
        named.update((h, name) for items in groups.values() for h, _n in items)
        ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), str(kv[0])))
        cells = "; ".join(f"rail {id_text(r)} plane {id_text(pl)} on {hostlist(h for h, _n in items)}"
                          for (r, pl), items in ordered)
        evs = [items[0][1].ev for _k, items in ordered]
        c.add("LOG037", f"{hostlist(h for _k, items in ordered for h, _n in items)}: NCCL gave {name} different "
              f"rails or planes on different nodes ({cells}): the same NIC of identical nodes is cabled to the same "
              f"rail, so one node's NCCL_IB_HCA ids are wrong", evs, severity=W,
              hosts={h for _k, items in ordered for h, _n in items},
              fix="Set one NCCL_IB_HCA with rail/plane ids for the whole job (or per node from the fabric: 'ncclctl "
                  "rails --fabric FILE'); ranks of one local index must find their NICs on one rail.")
    # 2b. ranks of one local index on NICs of different rails on different nodes (the NICs their channels use)
    for comm in ls.comms:
        by_local: dict[int, dict[tuple[int, ...], list[Any]]] = defaultdict(lambda: defaultdict(list))
        for m in comm.members:
            nids = per_host.get(m.host)
            if m.local_rank is None or nids is None or not m.net_ch:
                continue
            used = {m.proc.nic_name(dev) for chs in m.net_ch.values() for _d, dev, _g, proxy in chs if proxy is None}
            rr: set[int] = set()
            for nic in used:
                x = nids.get(nic)
                if x is not None and x.rail is not None:
                    rr.add(x.rail)
            if rr and not all((m.host, nic) in named for nic in used):
                by_local[m.local_rank][tuple(sorted(rr))].append(m)
        for local, lgroups in sorted(by_local.items()):
            if len(lgroups) < 2:
                continue
            lordered = sorted(lgroups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
            cells = "; ".join(f"rail {'+'.join(str(r) for r in rails)} on {c.who(mems)}" for rails, mems in lordered)
            evs = [next((ev for k, ev in sorted(mems[0].conn_ev.items()) if k.startswith("NET/")), mems[0].first)
                   for _r, mems in lordered]
            c.add("LOG037", f"{comm.label}: the ranks of local index {local} send on NICs of different rails on "
                  f"different nodes ({cells}): with rail ids NCCL expects a local index on one rail everywhere",
                  evs, severity=W, hosts={m.host for _r, mems in lordered for m in mems},
                  fix="Give every node the same NCCL_IB_HCA rail ids for the NIC of each GPU (the rail its port is "
                      "cabled to): 'ncclctl rails --fabric FILE' writes them per node.")
    # 3. NCCL's rails against the fabric's across the job: one NCCL rail, several fabric rails, and back
    if fabric is None:
        return
    mine: dict[int, set[int]] = defaultdict(set)
    theirs: dict[int, set[int]] = defaultdict(set)
    evid: dict[tuple[int, int], tuple[str, NicIds, str]] = {}
    for host, ids in sorted(per_host.items()):
        src = known.get(host)
        if src is None or label[host] != (fabric_label or "the fabric"):
            continue
        for n in ids.values():
            f = src.get(key(host, n))
            if n.rail is None or f is None or (host, n.rail) in flagged:
                continue
            mine[n.rail].add(f[0])
            theirs[f[0]].add(n.rail)
            evid.setdefault((n.rail, f[0]), (host, n, f[2]))
    for r, fs in sorted(mine.items()):
        if len(fs) > 1:
            cells = "; ".join(f"{h} {n.name} on fabric rail {fr}" + (f" ({leaf})" if leaf else "")
                              for fr in sorted(fs) for h, n, leaf in [evid[(r, fr)]])
            c.add("LOG037", f"NCCL's rail {r} holds NICs {fabric_label or 'the fabric'} places on rails "
                  f"{', '.join(str(x) for x in sorted(fs))} ({cells}): a miscabled port or a wrong NCCL_IB_HCA id",
                  [evid[(r, fr)][1].ev for fr in sorted(fs)], severity=E,
                  hosts={evid[(r, fr)][0] for fr in fs},
                  fix="Recable the port to the leaf of its rail, or give NCCL_IB_HCA the fabric's ids ('ncclctl rails "
                      "--fabric FILE' writes name:port:rail:plane per node).")
    cited = {(r, fr) for r, fs in mine.items() if len(fs) > 1 for fr in fs}
    for fr, rs in sorted(theirs.items()):
        if len(rs) > 1 and not all((r, fr) in cited for r in rs):
            cells = "; ".join(f"{h} {n.name} NCCL rail {r}" for r in sorted(rs) for h, n, _l in [evid[(r, fr)]])
            c.add("LOG037", f"the fabric's rail {fr} is NCCL's rails {', '.join(str(x) for x in sorted(rs))} on "
                  f"different NICs ({cells}): NCCL_IB_HCA numbers one rail two ways",
                  [evid[(r, fr)][1].ev for r in sorted(rs)], severity=W,
                  hosts={evid[(r, fr)][0] for r in rs},
                  fix="Use one numbering: the fabric's ('ncclctl rails --fabric FILE').")
