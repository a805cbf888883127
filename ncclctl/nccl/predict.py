"""``ncclctl topo predict``: what NCCL will do on a node, and why, from NCCL's own model (:mod:`ncclctl.nccl`).

The pipeline is init.cc's: the topology file and the net plugin's view give the system (:mod:`.build`), paths are
computed, the system trimmed to the job, paths recomputed (:mod:`.paths`); then ring and tree channels are searched
(:mod:`.search`), joined across nodes (:mod:`.connect`) and tuned (:mod:`.tuning`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ncclctl.nccl import system as s
from ncclctl.nccl.build import Built, Plugin, build
from ncclctl.nccl.paths import (GDR_DISABLE, GDR_MODE_STR, check_gdr, compute_paths, get_local_net, path_str,
                                trim_system)
from ncclctl.nccl.system import GPU, NET, Params, System
from ncclctl.nccl.version import DEFAULT, Version


@dataclass
class Inputs:
    """Where the prediction's inputs came from, for the report."""

    source: str
    nodes: int = 1
    env: dict[str, str] = field(default_factory=dict)
    env_origin: dict[str, str] = field(default_factory=dict)
    gdr: bool = True
    gdr_why: str = "assumed available (no host facts): pass --gdr off to model a host without it"
    version: Version = DEFAULT
    notes: list[str] = field(default_factory=list)
    #: The NCCL_GRAPH_FILE content NCCL would load (None: NCCL searches).
    graph_file: bytes | None = None
    graph_path: str | None = None
    #: NET name -> (rail, plane, source) NCCL does not see (``--fabric`` with a FILE): rail alignment only.
    known_ids: dict[str, tuple[int | None, int | None, str]] = field(default_factory=dict)
    #: The net plugin NCCL uses (:class:`ncclctl.nccl.transport.Transport`); None: the IB plugin, from a file alone.
    transport: Any = None
    #: The NCCL libraries found on the node (:class:`ncclctl.model.NcclLibrary`); None: not known (a file, or a
    #: snapshot older than the search).
    node_nccl: Any = None
    #: PCI device ids of the node's NICs (what the changes after the release modelled look at); None: not known.
    nic_devices: frozenset[str] | None = None


@dataclass
class Prediction:
    """What NCCL will do on a node: its system, the NETs each GPU uses, GPUDirect RDMA, channels, tuning, caveats."""
    inputs: Inputs
    built: Built
    system: System
    #: Per GPU (NCCL order): rank, busid, NVML dev, the NETs it uses per channel (names, channel order).
    local_nets: list[list[str]]
    #: (rank, net name) -> (mode, why) for reads (send) and writes (receive).
    gdr: dict[tuple[int, str], tuple[tuple[int, str], tuple[int, str]]]
    graphs: dict[str, Any] = field(default_factory=dict)
    caveats: list[str] = field(default_factory=list)
    #: search.Graph objects, connect.Connected, tuning.Tuning (None when there is no GPU to search for).
    ring: Any = None
    tree: Any = None
    connected: Any = None
    tuning: Any = None
    #: :class:`ncclctl.nccl.changes.Report`: the release modelled and the changes after it that concern the node.
    changes: Any = None

    def to_json(self) -> dict:
        sysm = self.system
        nets = sysm.nodes[NET]
        gpus = sysm.nodes[GPU]
        doc: dict[str, Any] = {
            "nccl_version": str(self.inputs.version),
            **(self.changes.to_json() if self.changes is not None else {}),
            "source": self.inputs.source,
            "nodes": self.inputs.nodes,
            "settings": {k: {"value": v, "from": self.inputs.env_origin.get(k, "--env")}
                         for k, v in sorted(self.inputs.env.items())},
            "gpudirect_rdma": {"available": self.inputs.gdr, "why": self.inputs.gdr_why},
            "node_nccl": (None if self.inputs.node_nccl is None else
                          [{"path": lib.path, "version": lib.version, "cuda": lib.cuda, "where": lib.where}
                           for lib in self.inputs.node_nccl]),
            "transport": (None if self.inputs.transport is None else
                          {"name": self.inputs.transport.name, "why": self.inputs.transport.why,
                           "notes": list(self.inputs.transport.notes)}),
            "nets": [{"dev": n.dev, "name": n.name, "speed_gbps": round(n.bw * 8, 1), "gdr": bool(n.gdr),
                      "port": n.port, "fused": n.name.split("+") if "+" in n.name else [],
                      "rail": None if n.rail == s.UNDEF else n.rail,
                      "plane": None if n.plane == s.UNDEF else n.plane} for n in nets],
            "gpus": [],
            "notes": self.inputs.notes + self.built.notes,
            "caveats": self.caveats,
        }
        for g in gpus:
            entry = {
                "rank": g.rank, "dev": g.dev, "busid": g.label, "sm": g.sm,
                "nets_used": self.local_nets[sysm.gpu_by_rank(g.rank)],
                "paths_to_nets": {nets[i].name: {"type": s.PATH_TYPE_STR[p.type], "bw": round(p.bw, 2),
                                                 "hops": p.count} for i, p in enumerate(g.paths.get(NET, ()))},
                "paths_to_gpus": {str(gpus[i].dev): {"type": s.PATH_TYPE_STR[p.type], "bw": round(p.bw, 2)}
                                  for i, p in enumerate(g.paths[GPU]) if gpus[i] is not g},
                "gdr": {name: {"read": GDR_MODE_STR[r[0]], "read_why": r[1], "write": GDR_MODE_STR[w[0]],
                               "write_why": w[1]}
                        for (rank, name), (r, w) in sorted(self.gdr.items()) if rank == g.rank},
            }
            doc["gpus"].append(entry)
        if self.graphs:
            doc["graphs"] = self.graphs
        return doc


def predict_xml(data: bytes, *, inputs: Inputs, down: frozenset[tuple[str, int]] = frozenset(),
                path: str | None = None, channels: bool = True) -> Prediction:
    """NCCL's view of a node from a topology file's bytes."""
    from ncclctl.errors import InputError
    from ncclctl.nccl.xml import parse_nccl_xml

    res = parse_nccl_xml(data, kind="topology", nccl_version=inputs.version, path=path)
    if res.fatal is not None:
        raise InputError(f"NCCL cannot read this topology file: {res.fatal.message}", path=path,
                         line=res.fatal.line, column=res.fatal.column,
                         fix="run 'ncclctl topo validate' on it for every problem")
    if res.root is None or res.root.name != "system":
        raise InputError("not a topology file (no <system> root)", path=path,
                         fix="give the NCCL_TOPO_FILE (rings validate checks graph files)")
    return predict_tree(res.root, inputs=inputs, down=down, path=path, channels=channels)


def plugin_for(inputs: Inputs, down: frozenset[tuple[str, int]] = frozenset()) -> Plugin:
    """The net plugin NCCL loads on that node: its socket transport, no network / an external plugin, or IB with
    the ports that are down."""
    tr = inputs.transport
    if tr is not None and tr.name == "Socket":
        return Plugin(gdr=inputs.gdr, down=down, name="Socket", socket=tr.socket)
    if tr is not None and tr.name in ("none", "external"):
        return Plugin(gdr=inputs.gdr, down=down, name=tr.name, socket=())
    return Plugin(gdr=inputs.gdr, down=down)


def predict_tree(root, *, inputs: Inputs, down: frozenset[tuple[str, int]] = frozenset(),
                 path: str | None = None, channels: bool = True) -> Prediction:
    """NCCL's view of a node from a topology tree NCCL's reader accepted (``root``: the ``<system>`` node, or any
    tree with the same ``name``/``attrs``/``children``). Raises InputError where NCCL stops. ``channels=False``
    stops after the paths, the NETs each GPU uses and GPUDirect RDMA (no ring/tree search, connect or tuning:
    what the file checks need, at a fraction of the cost)."""
    from ncclctl.errors import InputError

    params = Params(env=inputs.env, version=inputs.version)
    built = build(root, params, plugin_for(inputs, down))
    sysm = built.system
    if not sysm.nodes[GPU]:
        raise InputError("the topology file has no GPU NCCL can use", path=path,
                         fix="give the file of a GPU node (ncclctl topo generate)")
    n_ranks = inputs.nodes * len(sysm.nodes[GPU])
    compute_paths(sysm)
    if trim_system(sysm, n_ranks):
        compute_paths(sysm)  # NCCL computes the paths again after the trim; unchanged when nothing was dropped
    caveats = [
        "NVML P2P status is assumed OK between every GPU pair (a topology file does not carry it)",
    ]
    if len({g.sm for g in sysm.nodes[GPU]}) > 1:
        caveats.append("GPUs of several architectures: NCCL's tuning uses the lowest and highest sm")
    local_nets: list[list[str]] = []
    gdr: dict[tuple[int, str], tuple[tuple[int, str], tuple[int, str]]] = {}
    nets = sysm.nodes[NET]
    for g in sysm.nodes[GPU]:
        used: list[str] = []
        if nets:
            first = -1
            for c in range(s.MAXCHANNELS):
                n = get_local_net(sysm, g.rank, c)
                if n < 0 or (c > 0 and n == first):
                    break
                if c == 0:
                    first = n
                used.append(nets[n].name)
        local_nets.append(used)
        for i, net in enumerate(nets):
            gdr[(g.rank, net.name)] = (check_gdr(sysm, g.rank, i, 1), check_gdr(sysm, g.rank, i, 0))
    pred = Prediction(inputs=inputs, built=built, system=sysm, local_nets=local_nets, gdr=gdr, caveats=caveats)
    if channels:
        _channels(pred)
    pred.changes = changes_report(root, inputs, pred.tuning)
    return pred


def changes_report(root, inputs: Inputs, tuning=None):
    """:class:`ncclctl.nccl.changes.Report` for a prediction: the release modelled for ``inputs.version`` and the
    changes after it up to that version or the node's newer libnccl, each with whether it concerns this node."""
    from ncclctl.nccl.changes import report, traits_from_tree

    ll128 = None
    if tuning is not None:
        ll128 = any(proto == "LL128" and not why.startswith(("excluded", "CUDA 11.8"))
                    for (_, proto), why in tuning.why_off.items())
    traits = traits_from_tree(root, env=inputs.env, nic_devices=inputs.nic_devices, nodes=inputs.nodes,
                              ll128_path_off=ll128)
    return report(inputs.version, traits, node_versions=[lib.version for lib in inputs.node_nccl or () if lib.version])


def graph_doc(sysm: System, g) -> dict[str, Any]:
    """A ring or tree graph as the report shows it: channels as (NET in, GPU devs, NET out) with path types."""
    from ncclctl.nccl.search import PATTERN_NAMES

    ngpus = len(sysm.nodes[GPU])
    nets = sysm.nodes[NET]
    chans = []
    for c in range(g.n_channels):
        ranks = g.intra[c * ngpus:(c + 1) * ngpus]
        devs = [sysm.nodes[GPU][sysm.gpu_by_rank(r)].dev for r in ranks]
        entry: dict[str, Any] = {"gpus": devs}
        if sysm.inter:
            for key, nid, rank in (("net_in", g.inter[2 * c], ranks[0]), ("net_out", g.inter[2 * c + 1], ranks[-1])):
                n = sysm.net_index(nid)
                if n < 0:
                    entry[key] = {"dev": nid, "name": None}
                    continue
                gi = sysm.gpu_by_rank(rank)
                path = sysm.nodes[GPU][gi].paths[NET][n]
                entry[key] = {"dev": nets[n].dev, "name": nets[n].name, "gpu": sysm.nodes[GPU][gi].dev,
                              "path": s.PATH_TYPE_STR[path.type]}
        chans.append(entry)
    return {"pattern": PATTERN_NAMES.get(g.pattern, str(g.pattern)), "nchannels": g.n_channels,
            "bw_intra": round(g.bw_intra, 3), "bw_inter": round(g.bw_inter, 3),
            "type_intra": s.PATH_TYPE_STR[g.type_intra], "type_inter": s.PATH_TYPE_STR[g.type_inter],
            "crossnic": g.cross_nic, "samechannels": g.same_channels, "channels": chans}


def _channels(pred: Prediction) -> None:
    """The ring and tree search (or the graph file), the multi-node connect and the tuning model."""
    from ncclctl.nccl.connect import connect
    from ncclctl.nccl.search import NcclFailure, NotModelled, ring_and_tree, version_caveats
    from ncclctl.nccl.tuning import PROTOS, tune
    from ncclctl.nccl.system import CPU

    sysm = pred.system
    inp = pred.inputs
    pred.caveats += version_caveats(inp.version)
    try:
        ring, tree = ring_and_tree(sysm, graph_file=inp.graph_file, graph_path=inp.graph_path)
    except NotModelled as exc:
        pred.caveats.append(f"channels not predicted: {exc.message}")
        return
    except NcclFailure as exc:
        pred.caveats.append(f"NCCL fails here: {exc.message}")
        return
    ngpus = len(sysm.nodes[GPU])
    sms = [g.sm for g in sysm.nodes[GPU]]
    con = connect(ring, tree, ngpus, inp.nodes, sysm.params, min_comp_cap=min(sms))
    tun = tune(ring, tree, n_nodes=inp.nodes, n_ranks=inp.nodes * ngpus, min_comp_cap=min(sms),
               max_comp_cap=max(sms), cpu_vendor=sysm.nodes[CPU][0].vendor, params=sysm.params)
    pred.ring, pred.tree, pred.connected, pred.tuning = ring, tree, con, tun
    pred.caveats += con.caveats + tun.caveats
    algo, proto, best = tun.best()
    sources = {"ring": "search", "tree": "search"}
    if inp.graph_file is not None:
        from ncclctl.nccl.search import Graph, load_graph_file

        for key, g in (("ring", ring), ("tree", tree)):
            probe = Graph(g.id, g.pattern)
            if load_graph_file(sysm, probe, inp.graph_file, path=inp.graph_path) is not None and probe.n_channels > 0:
                sources[key] = "NCCL_GRAPH_FILE"
    pred.graphs = {
        "source": "NCCL_GRAPH_FILE" if "NCCL_GRAPH_FILE" in sources.values() else "search",
        "sources": sources,
        "ring": graph_doc(sysm, ring),
        "tree": graph_doc(sysm, tree),
        "channels": con.n_channels,
        "channel_steps": con.steps,
        "odd_nodes_alternate": con.alternated,
        "rings": con.rings if inp.nodes > 1 else [],
        "rail_aligned": rail_alignment(sysm, ring, inp.nodes, con.alternated, tree=tree, con=con, known=inp.known_ids),
        "allreduce": {a: {p: {"gbps": round(bw, 2), "enabled": on,
                              **({"why_off": tun.why_off[(a, p)]} if (a, p) in tun.why_off else {})}
                          for p, bw, on in zip(PROTOS, tun.bandwidth[a], tun.enabled[a])}
                      for a in ("ring", "tree")},
        # One rank: NCCL launches a local copy/reduce (ncclLaunchOneRank), no algorithm or protocol is chosen.
        "best": (None if inp.nodes * ngpus == 1 else {"algorithm": algo, "protocol": proto, "gbps": round(best, 2)}),
    }


def _net_of(sysm: System, g, channel: int, local_rank: int) -> int:
    """``ncclTopoGetNetDev`` with a graph: the NET (index in ``sysm.nodes[NET]``, -1 when its id is no NET) a rank
    uses on a communicator channel: the graph channel ``channel % nChannels`` enters on ``inter[2c]`` at its first
    GPU; every other GPU of the channel uses ``inter[2c + 1]``."""
    ngpus = len(sysm.nodes[GPU])
    gc = channel % g.n_channels
    index = 0 if g.intra[gc * ngpus] == local_rank else 1
    return sysm.net_index(g.inter[2 * gc + index])


def _cross_nic_setting(sysm: System) -> str:
    v = sysm.params.env.get("NCCL_CROSS_NIC")
    return f"NCCL_CROSS_NIC={v}" if v not in (None, "") else "NCCL_CROSS_NIC unset (2)"


def rail_alignment(sysm: System, ring, nodes: int, alternated: bool = True, *, tree=None, con=None,
                   known: dict[str, tuple[int | None, int | None, str]] | None = None) -> list[dict[str, Any]]:
    """Per ring channel (and, with ``tree``/``con``, per tree channel), the NET each end of every hop between
    nodes uses (``ncclTopoGetNetDev``: the rank's graph channel and position), as connect.cc joins the nodes: the
    ring after the odd-node channel swap (crossNic 2 pairs channels c and c^1), the double binary tree's links
    between a node's head rank and its parent node's child rank. A hop is rail-aligned when both ends are on one
    rail and plane: their rail ids when both NETs have one (the topology file's rail=/plane=, NCCL_IB_HCA's
    extended fields), else ``known`` ids (NET name -> (rail, plane, source), e.g. from the fabric, which NCCL does
    not see), else the same NET name (identical nodes: the same NIC). A crossing hop says which rails and why."""
    if not sysm.inter or nodes < 2:
        return []
    nets = sysm.nodes[NET]
    ngpus = len(sysm.nodes[GPU])
    known = known or {}

    def ids(i: int) -> tuple[int | None, int | None, str | None]:
        if i < 0:
            return None, None, None
        n = nets[i]
        if n.rail != s.UNDEF:
            return n.rail, (None if n.plane == s.UNDEF or n.plane >= 1 << 14 else n.plane), "nccl"
        if n.name in known:
            return known[n.name]
        return None, (None if n.plane == s.UNDEF or n.plane >= 1 << 14 else n.plane), None

    def end(i: int) -> dict[str, Any]:
        rail, plane, src = ids(i)
        return {"net": nets[i].name if i >= 0 else None, "rail": rail, "plane": plane, "ids_from": src}

    def judge(a: int, b: int) -> tuple[bool, str]:
        ra, pa, sa = ids(a)
        rb, pb, sb = ids(b)
        if a < 0 or b < 0:
            return False, "a channel NET is no NET of the node: NCCL fails to connect"
        if pa is not None and pb is not None and pa != pb:
            return False, f"planes {pa} and {pb}"
        if ra is not None and rb is not None:
            return (ra == rb), ("" if ra == rb else f"rails {ra} and {rb}")
        same = nets[a].name == nets[b].name
        if same:
            return True, ""
        missing = [nets[x].name for x, r in ((a, ra), (b, rb)) if r is None]
        why = (f"{' and '.join(missing)} {'has' if len(missing) == 1 else 'have'} no rail id"
               + (" (a fused NIC has one only when all its members share it)" if any("+" in m for m in missing)
                  else "")
               + f": compared by NIC, {nets[a].name} is not {nets[b].name}")
        return False, why

    def cause(g, c: int, kind: str, swap_note: str) -> str:
        gc = c % g.n_channels
        i_in, i_out = sysm.net_index(g.inter[2 * gc]), sysm.net_index(g.inter[2 * gc + 1])
        parts = [f"{_cross_nic_setting(sysm)}, the {kind} graph has crossNic {g.cross_nic}"]
        if i_in != i_out and i_in >= 0 and i_out >= 0:
            parts.append(f"channel {gc} enters on {nets[i_in].name} and leaves on {nets[i_out].name}")
        if swap_note:
            parts.append(swap_note)
        return "; ".join(parts)

    out: list[dict[str, Any]] = []
    nch_ring = con.search_channels if con is not None else ring.n_channels
    swap = alternated and ring.cross_nic == 2 and nch_ring % 2 == 0
    for c in range(nch_ring):
        hops = []
        for k in range(nodes):
            nk = (k + 1) % nodes
            if con is not None:
                sender = next(r for r in range(k * ngpus, (k + 1) * ngpus)
                              if con.ring_next[c][r] // ngpus != k or nodes == 1)
                receiver = con.ring_next[c][sender]
                a, b = _net_of(sysm, ring, c, sender % ngpus), _net_of(sysm, ring, c, receiver % ngpus)
            else:
                cs = c ^ 1 if swap and k % 2 else c
                cr = c ^ 1 if swap and nk % 2 else c
                a, b = sysm.net_index(ring.inter[2 * cs + 1]), sysm.net_index(ring.inter[2 * cr])
            ok, what = judge(a, b)
            hop: dict[str, Any] = {"from_node": k, "send": end(a)["net"], "to_node": nk, "recv": end(b)["net"],
                                   "aligned": ok, "send_end": end(a), "recv_end": end(b)}
            if not ok:
                note = ""
                if swap and nodes % 2 == 1 and nk == 0:
                    note = (f"odd node count: node {k} and node 0 are both even, so the odd-node swap of channel "
                            "pairs cannot line up this wrap-around hop")
                elif ring.cross_nic == 2 and not swap and ring.n_channels > 1:
                    note = "no odd-node swap (odd channel count or NCCL before 2.20.3)"
                hop["reason"] = f"{what} ({cause(ring, c, 'ring', note)})"
            hops.append(hop)
        out.append({"graph": "ring", "channel": c, "aligned": all(h["aligned"] for h in hops), "hops": hops})
    if tree is not None and con is not None and tree.n_channels > 0:
        for c in range(min(con.n_channels, 2 * con.search_channels)):
            hops = []
            for r in range(nodes * ngpus):
                up = con.trees[c][r].up
                if up < 0 or up // ngpus == r // ngpus:
                    continue
                a, b = _net_of(sysm, tree, c, r % ngpus), _net_of(sysm, tree, c, up % ngpus)
                ok, what = judge(a, b)
                hop = {"from_node": r // ngpus, "send": end(a)["net"], "to_node": up // ngpus, "recv": end(b)["net"],
                       "aligned": ok, "send_end": end(a), "recv_end": end(b), "child_rank": r, "parent_rank": up}
                if not ok:
                    hop["reason"] = (f"{what} ({cause(tree, c, 'tree', '')}; the child node's head GPU uses the "
                                     "channel's entry NET, the parent's GPU its "
                                     + ("entry" if tree.intra[(c % tree.n_channels) * ngpus] == up % ngpus
                                        else "exit") + " NET)")
                hops.append(hop)
            if hops:
                out.append({"graph": "tree", "channel": c, "aligned": all(h["aligned"] for h in hops), "hops": hops})
    return out


def _render_channels(p: Prediction) -> list[str]:
    gd = p.graphs
    out = []
    for key in ("ring", "tree"):
        g = gd[key]
        src = ("loaded from NCCL_GRAPH_FILE (trusted, not checked)" if gd["sources"][key] != "search"
               else "NCCL's search")
        out.append(f"{key.capitalize()} graph ({src}): {g['nchannels']} channels x {g['bw_intra']:g}/{g['bw_inter']:g} "
                   f"GB/s intra/inter, {g['type_intra']}/{g['type_inter']}, pattern {g['pattern']}, "
                   f"crossNic {g['crossnic']}")
        def end(e: dict) -> str:
            if e.get("name") is None:
                return f"dev {e['dev']} (no such NET: NCCL fails to connect)"
            return f"{e['name']} ({e['path']} to GPU{e['gpu']})"

        # (NET in, GPUs, NET out) per channel; printed in aligned columns
        cols = [(end(ch["net_in"]) if "net_in" in ch else None, " ".join(str(d) for d in ch["gpus"]),
                 end(ch["net_out"]) if "net_in" in ch else None) for ch in g["channels"]]
        rows = []
        c = 0
        while c < len(cols):  # identical consecutive channels on one line ("channels  0-31")
            last = c
            while last + 1 < len(cols) and cols[last + 1] == cols[c]:
                last += 1
            rows.append((f"channel {c:>2}" if last == c else f"channels {c:>2}-{last}", cols[c]))
            c = last + 1
        w_label = max((len(label) for label, _ in rows), default=0)
        w_in = max((len(col[0]) for _, col in rows if col[0] is not None), default=0)
        w_gpus = max((len(col[1]) for _, col in rows), default=0)
        for label, (net_in, gpus, net_out) in rows:
            head = f"  {label + ':':<{w_label + 1}} "
            if net_in is None:
                out.append(f"{head}GPU {gpus}")
            else:
                out.append(f"{head}{net_in:<{w_in}} -> GPU {gpus:<{w_gpus}} -> {net_out}")
    out.append(f"Channels after connect: {gd['channels']}" + (f" ({'; '.join(gd['channel_steps'])})"
                                                           if gd["channel_steps"] else ""))
    if gd["rail_aligned"]:
        out += _render_alignment(gd, p.inputs.nodes)
    if p.inputs.nodes * len(p.system.nodes[GPU]) == 1:
        out.append("One rank: NCCL runs no ring or tree and no protocol; each collective is a local copy or "
                   "reduction on the GPU (ncclLaunchOneRank): nothing crosses NVLink, PCIe peers or the network")
        out.append("")
        return out
    for algo in ("ring", "tree"):
        parts = []
        for proto, v in gd["allreduce"][algo].items():
            parts.append(f"{proto} {v['gbps']:g}" if v["enabled"] else f"{proto} off ({v.get('why_off', 'disabled')})")
        out.append(f"AllReduce {algo} (NCCL's tuning model, GB/s algorithm bandwidth): " + ", ".join(parts))
    b = gd["best"]
    out.append(f"Large AllReduce: {b['algorithm']}/{b['protocol']} at {b['gbps']:g} GB/s (model)")
    out.append("")
    return out


def _end_str(e: dict) -> str:
    ids = ", ".join(f"{k} {e[k]}" for k in ("rail", "plane") if e.get(k) is not None)
    src = " from the fabric, NCCL does not see it" if e.get("ids_from") not in (None, "nccl") else ""
    return f"{e['net']}" + (f" ({ids}{src})" if ids else " (no rail id)")


def _render_alignment(gd: dict, n: int) -> list[str]:
    entries = gd["rail_aligned"]
    hops = [h for r in entries for h in r["hops"]]
    by = ("rail ids" if all(h["send_end"]["rail"] is not None and h["recv_end"]["rail"] is not None for h in hops)
          else "rail ids where both NETs have one, else the NIC")
    bad = [r for r in entries if not r["aligned"]]
    graphs = " and ".join(sorted({r["graph"] for r in entries}, key=["ring", "tree"].index))
    if not bad:
        return [f"Rail alignment over {n} nodes: every {graphs} hop between nodes stays on one rail (by {by})"
                + (" (odd nodes walk ring channel pairs swapped)" if gd["odd_nodes_alternate"] else "")]
    out = [f"Rail alignment over {n} nodes: {len(bad)} of {len(entries)} {graphs} channels cross rails between "
           f"nodes (by {by}):"]
    for r in bad[:8]:
        h = next(x for x in r["hops"] if not x["aligned"])
        verb = ("sends on", "receives on") if r["graph"] == "ring" else ("(child) links up on", "(parent) on")
        out.append(f"  {r['graph']} channel {r['channel']}: node {h['from_node']} {verb[0]} {_end_str(h['send_end'])}, "
                   f"node {h['to_node']} {verb[1]} {_end_str(h['recv_end'])}: {h.get('reason', '')}")
    if len(bad) > 8:
        out.append(f"  ... and {len(bad) - 8} more (--format json lists every hop)")
    return out


def _fmt_bw(bw: float) -> str:
    return f"{bw:g}"


def render_text(p: Prediction) -> str:
    """The human report."""
    sysm = p.system
    gpus = sysm.nodes[GPU]
    nets = sysm.nodes[NET]
    inp = p.inputs
    ch = p.changes
    if ch is not None and ch.asked != ch.modelled:
        release = (f"NCCL {ch.asked} asked for: the model runs {ch.modelled}'s code (the newest release it is checked "
                   f"against) with the changes after it marked modelled below")
    else:
        release = f"NCCL {inp.version} (the release modelled)"
    out = [f"{release} on {inp.source}: {inp.nodes} "
           f"node{'s' if inp.nodes != 1 else ''} x {len(gpus)} GPU{'s' if len(gpus) != 1 else ''}"]
    line = node_nccl_line(inp)
    if line:
        out.append(line)
    if ch is not None:
        out += ch.lines()
    if inp.env:
        out.append("Settings: " + ", ".join(f"{k}={v}" + (f" ({inp.env_origin[k]})" if k in inp.env_origin else "")
                                            for k, v in sorted(inp.env.items())))
    else:
        out.append("Settings: NCCL defaults (no NCCL_* variable set)")
    out.append(f"GPUDirect RDMA: {'available' if inp.gdr else 'not available'} ({inp.gdr_why})")
    out.append("")
    tr = inp.transport
    if tr is not None:
        out.append(f"Network transport: {tr.name if tr.name not in ('none', 'external') else 'none modelled'} "
                   f"({tr.why})")
    if nets and sysm.transport == "Socket":
        out.append("Network devices as NCCL numbers them (Socket plugin: host memory, no fusion):")
        for n in nets:
            sd = next((d for d in (tr.socket if tr is not None else ()) if d.name == n.name), None)
            extra = ("  (speed unreadable: NCCL defaults to 10 Gb/s)" if sd is not None and sd.speed_defaulted
                     else "") + (f"  ({sd.attach_note})" if sd is not None and sd.attach_note else "")
            out.append(f"  dev {n.dev}  {n.name:<16} {n.bw * 8:g} Gb/s  GDR no{extra}")
    elif nets:
        out.append("Network devices as NCCL numbers them (IB plugin, after NCCL_IB_HCA and NIC fusion):")
        for n in nets:
            ids = "".join(f"  {k} {v}" for k, v in (("rail", n.rail), ("plane", n.plane)) if v != s.UNDEF)
            out.append(f"  dev {n.dev}  {n.name:<16} {n.bw * 8:g} Gb/s  GDR {'yes' if n.gdr else 'no'}{ids}")
    elif tr is not None:
        out.append("Network devices: none" + (" (NCCL cannot connect nodes)" if inp.nodes > 1 else
                                              " (a single-node job needs none)"))
    else:
        out.append("Network devices: none in the file (NCCL would use its Socket plugin's interfaces between nodes, "
                   "which a topology file does not name; give --root to model them)")
    for note in inp.notes + p.built.notes + list(tr.notes if tr is not None else ()):
        out.append(f"  note: {note}")
    out.append("")
    if nets:
        names = [n.name for n in nets]
        width = max(6, *(len(x) for x in names))
        out.append("GPU -> NET paths, NCCL's types (* = a NET this GPU uses; ! = GPUDirect RDMA off for it):")
        out.append("        " + " ".join(f"{x:>{width}}" for x in names))
        for gi, g in enumerate(gpus):
            used = set(p.local_nets[gi])
            cells = []
            for i, path in enumerate(g.paths[NET]):
                mark = ("*" if nets[i].name in used else "") + (
                    "!" if p.gdr[(g.rank, nets[i].name)][1][0] == GDR_DISABLE and nets[i].name in used else "")
                cells.append(f"{s.PATH_TYPE_STR[path.type] + mark:>{width}}")
            out.append(f"  GPU{g.dev:<3} " + " ".join(cells))
        out.append("")
        out.append("NET each GPU uses (channel order) and GPUDirect RDMA for it:")
        for gi, g in enumerate(gpus):
            parts = []
            for name in p.local_nets[gi]:
                (rm, rwhy), (wm, wwhy) = p.gdr[(g.rank, name)]
                i = names.index(name)
                parts.append(f"{name} ({path_str(g.paths[NET][i])}, GDR "
                             f"{'on' if wm != GDR_DISABLE else 'off'}: {wwhy})")
            out.append(f"  GPU{g.dev} rank {g.rank}: " + ("; ".join(parts) or "none"))
        out.append("")
    if p.graphs:
        out += _render_channels(p)
    if len(gpus) > 1:
        out.append("GPU -> GPU paths:")
        for g in gpus:
            cells = [("X" if h is g else path_str(g.paths[GPU][i])) for i, h in enumerate(gpus)]
            out.append(f"  GPU{g.dev:<3} " + " ".join(f"{c:>10}" for c in cells))
        out.append("")
    for c in p.caveats:
        out.append(f"caveat: {c}")
    return "\n".join(out).rstrip() + "\n"


def node_nccl_line(inp: Inputs) -> str | None:
    """What the node itself runs, against the release modelled."""
    libs = inp.node_nccl
    if libs is None:
        return None
    if not libs:
        return ("The node's NCCL: no libnccl.so found (LD_LIBRARY_PATH, ld.so.conf, system and CUDA folders, Python "
                "environments): a container image brings its own")
    versions = sorted({lib.version for lib in libs if lib.version}, key=lambda v: [int(x) for x in v.split(".")[:3]
                                                                                 if x.isdigit()])
    found = "; ".join(f"{lib.version or 'unknown release'} at {lib.path} ({lib.where})" for lib in libs[:4])
    line = f"The node's NCCL: {found}" + (f" and {len(libs) - 4} more" if len(libs) > 4 else "")
    from ncclctl.nccl.changes import MODELLED, model_release, release_of

    modelled = str(inp.version)
    if versions and modelled not in versions:
        newest = versions[-1]
        rel = release_of(newest)
        if rel is not None and rel > MODELLED:
            line += (f". The model is of {model_release(inp.version)}, the newest release ncclctl checks its model "
                     f"against: the changes after it up to {newest} are listed below (--nccl-version {newest} "
                     "applies those marked modelled)")
        else:
            line += (f". The model is of {modelled}: pass --nccl-version {newest} to model the node's release "
                     "(ncclctl follows NCCL's code of its newest known release and the differences it knows of older "
                     "ones)")
    return line


def parse_env(pairs: list[str] | None) -> dict[str, str]:
    """``--env KEY=VAL`` options (a bare ``KEY=`` sets an empty value, which NCCL treats as unset for integers)."""
    from ncclctl.errors import UsageError

    out: dict[str, str] = {}
    for item in pairs or ():
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--env {item!r} is not KEY=VALUE", fix="for example --env NCCL_IB_HCA==mlx5_0,mlx5_1")
        if not key.startswith("NCCL_"):
            raise UsageError(f"--env {key}: only NCCL_* variables change NCCL's decisions",
                             fix="name an NCCL variable, e.g. NCCL_CROSS_NIC=0")
        out[key] = val
    return out


def inputs_for_node(node, *, nodes: int, env: dict[str, str], version: Version, gdr: str,
                    source: str, rail_ids=None) -> tuple[bytes, Inputs, frozenset[tuple[str, int]]]:
    """The topology bytes NCCL would read on ``node`` (its NCCL_TOPO_FILE, else what NCCL detects, which is what
    ``topo generate`` writes, with ``rail_ids`` (:class:`ncclctl.nccl.railids.RailIds`, ``--fabric``/``--rail-map``)
    on its <net> elements as ``topo generate --fabric`` writes them), the node's NCCL settings (environment and conf
    files) overridden by ``env``, its GPUDirect RDMA support, and the ports that are not ACTIVE (the plugin does
    not list them)."""
    from ncclctl.nccl.settings import resolve
    from ncclctl.nccl.detect import generate_for

    resolved = resolve(node, version)
    merged: dict[str, str] = {}
    origin: dict[str, str] = {}
    from ncclctl.nccl.variables import helper_variable

    ignored: list[str] = []
    for name in resolved.names():
        st = resolved.effective(name)
        if st is not None and name.startswith("NCCL_"):
            if helper_variable(name):  # NCCL_VERSION, NCCL_HOME...: set by images and modules, never read by NCCL
                ignored.append(f"{name}={st.value}")
                continue
            merged[name] = st.value
            origin[name] = st.where
    for k, v in env.items():
        merged[k] = v
        origin[k] = "--env"
    notes: list[str] = []
    if ignored:
        notes.append(f"not NCCL settings (install or packaging variables NCCL does not read): {', '.join(ignored)}")
    from ncclctl.nccl.transport import transport_for_node

    tr = transport_for_node(node, merged)
    socket = tr.socket if tr.name == "Socket" else ()
    topo = node.facts.topo_file
    if "NCCL_TOPO_FILE" in merged and topo is not None:
        data = topo.text.encode()
        notes.append(f"NCCL reads NCCL_TOPO_FILE={merged['NCCL_TOPO_FILE']} ({origin['NCCL_TOPO_FILE']}) instead of "
                     "detecting the hardware: predicted from that file"
                     + ("; the --fabric/--rail-map ids are not in it (NCCL uses the file's rail=/plane=)"
                        if rail_ids is not None else ""))
    else:
        if "NCCL_TOPO_FILE" in merged:
            notes.append(f"NCCL_TOPO_FILE={merged['NCCL_TOPO_FILE']} is set but its file could not be read from the "
                         "host: predicted from the detected hardware")
        data = generate_for(node, nccl_version=version, rail_ids=rail_ids, socket=socket)[0]
        if rail_ids is not None:
            from ncclctl.nccl.railids import emit_note

            why = emit_note(rail_ids, version)
            notes.append(f"rail/plane ids from the {rail_ids.source} ({rail_ids.detail}) "
                         + (f"not in the topology: {why}" if why else
                            "on each rail <net>, as 'ncclctl topo generate --fabric/--rail-map' writes them"))
    if gdr == "auto":
        from ncclctl.nccl.gdr import gdr_from_node

        on, why = gdr_from_node(node)
    else:
        on, why = gdr == "on", f"--gdr {gdr}"
    down = frozenset((n.name, p.num) for n in node.nics for p in n.ports if p.state.upper() != "ACTIVE")
    for name, port in sorted(down):
        notes.append(f"{name} port {port} is not ACTIVE: NCCL's IB plugin does not list it")
    graph_file = None
    graph_path = None
    if "NCCL_GRAPH_FILE" in merged:
        gf = node.facts.graph_file
        if gf is not None:
            graph_file, graph_path = gf.text.encode(), gf.path
            notes.append(f"NCCL loads NCCL_GRAPH_FILE={merged['NCCL_GRAPH_FILE']} ({origin['NCCL_GRAPH_FILE']}) instead "
                         "of searching: the channels below are that file's, trusted as NCCL trusts them")
        else:
            notes.append(f"NCCL_GRAPH_FILE={merged['NCCL_GRAPH_FILE']} is set but its file could not be read from the "
                         "host: NCCL's own search is shown")
    inputs = Inputs(source=source, nodes=nodes, env=merged, env_origin=origin, gdr=on, gdr_why=why, version=version,
                    notes=notes, graph_file=graph_file, graph_path=graph_path, transport=tr,
                    node_nccl=node.facts.nccl_libraries,
                    nic_devices=frozenset(d.device for d in node.pci if d.bdf in {n.bdf for n in node.nics}))
    return data, inputs, down
