"""``ncclctl rings graph``: an NCCL graph file (``NCCL_GRAPH_FILE``) that never does worse than NCCL alone.

A graph file replaces NCCL's own channel search, and NCCL trusts it as written (``search.cc``: types, speeds,
pattern, crossnic and net devs are taken verbatim and drive the tuning). So the only graph worth writing is one at
least as good as what NCCL finds by itself, and usually that *is* what NCCL finds by itself: then the file adds
nothing but a pinned GPU set (a job on fewer GPUs fails to load it). The plan therefore:

1. runs NCCL's own search (:mod:`ncclctl.nccl.search`, the port checked against NCCL 2.30.7) on the node, under the
   node's settings (environment and conf files, ``--env``), for a multi-node job;
2. runs it again under settings that only change the search, not how NCCL numbers its NICs (without
   ``NCCL_PXN_DISABLE``, with the default ``NCCL_CROSS_NIC``), and evaluates each layout found there *under the
   node's settings*, loaded as NCCL loads a graph file, with its declared types and speeds made honest against the
   node's real paths (a graph never claims more than the hardware gives);
3. keeps the best by NCCL's own tuning model (large AllReduce bandwidth). When a layout beats NCCL's own choice by
   more than 2%, that is a graph worth writing, and it is written; otherwise NCCL's own layout is the answer, and
   it is written only with ``--force``.

Net ``dev`` values are NCCL's NET numbering under the node's NCCL_IB_HCA and NIC fusion. When NCCL_IB_HCA is not
set, that numbering depends on which NICs are visible, so the plan pins it to the rails (``ncclctl rails``) and says
so: the file is only right with that setting (``ncclctl conf generate`` writes it). GPU ``dev`` values are written
without ``rank`` attributes, so one file serves every node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ncclctl.errors import InputError
from ncclctl.model import Node

#: A candidate must beat NCCL's own layout by this much to be worth a file.
GAIN = 1.02


@dataclass
class GraphPlan:
    #: The graph file's bytes (NCCL's own layout, or the better one).
    data: bytes
    #: True when the file improves on NCCL's own search (written by default); False: NCCL's own layout (``--force``).
    improves: bool
    reason: str
    #: Settings the file depends on that the node does not set: write them with it.
    pinned: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: JSON summary of the chosen layout and NCCL's own.
    info: dict[str, Any] = field(default_factory=dict)
    #: For NCCL's own layout (written only with --force): the note on one-node jobs, computed on demand.
    single_node: Callable[[], str | None] | None = None


def _summary(pred) -> dict[str, Any]:
    g = pred.graphs
    ring, tree = g["ring"], g["tree"]
    return {"ring": {k: ring[k] for k in ("nchannels", "bw_intra", "bw_inter", "type_intra", "type_inter",
                                          "crossnic")},
            "tree": {k: tree[k] for k in ("pattern", "nchannels", "bw_intra", "bw_inter", "type_intra",
                                          "type_inter")},
            "channels": [{"net_in": (c.get("net_in") or {}).get("name"), "gpus": c["gpus"],
                          "net_out": (c.get("net_out") or {}).get("name")} for c in ring["channels"]],
            "allreduce_best": g["best"]}


def _describe(s: dict[str, Any]) -> str:
    r = s["ring"]
    b = s["allreduce_best"]
    return (f"{r['nchannels']} ring channels x {r['bw_intra']:g}/{r['bw_inter']:g} GB/s {r['type_intra']}/"
            f"{r['type_inter']}, crossNic {r['crossnic']}; large AllReduce {b['algorithm']}/{b['protocol']} "
            f"{b['gbps']:g} GB/s")


def _strip_ranks(data: bytes) -> bytes:
    """NCCL's dump writes ``rank`` on each ``<gpu>``; a loaded rank is used verbatim, which is node 0's on every
    node. Without it NCCL maps ``dev`` to the local rank, so one file serves every node."""
    return re.sub(rb' rank="\d+"', b"", data)


def _honest(sysm, graph) -> None:
    """Make a loaded graph's declared types and speeds no better than the node's paths (NCCL trusts them)."""
    from ncclctl.nccl.system import GPU, NET

    ngpus = len(sysm.nodes[GPU])
    worst_intra, worst_inter = graph.type_intra, graph.type_inter
    min_inter = graph.bw_inter
    min_intra = graph.bw_intra
    for c in range(graph.n_channels):
        ranks = graph.intra[c * ngpus:(c + 1) * ngpus]
        idx = [sysm.gpu_by_rank(r) for r in ranks]
        if graph.pattern == 4 and ngpus > 1:
            hops = list(zip(idx, idx[1:] + idx[:1]))
        else:
            hops = list(zip(idx, idx[1:]))
        for a, b in hops:
            if a < 0 or b < 0 or a == b:
                continue
            p = sysm.nodes[GPU][a].paths[GPU][b]
            worst_intra = max(worst_intra, p.type)
            min_intra = min(min_intra, p.bw)
        if sysm.inter:
            # Where each pattern sends and receives (graph.h): ring in on the first GPU, out on the last; TREE both on
            # the first; BALANCED_TREE parent on the first, children on the second; SPLIT_TREE out on the last.
            out_gpu = {3: idx[0], 1: idx[1] if len(idx) > 1 else idx[0]}.get(graph.pattern, idx[-1])
            for nid, gi in ((graph.inter[2 * c], idx[0]), (graph.inter[2 * c + 1], out_gpu)):
                n = sysm.net_index(nid)
                if n < 0 or gi < 0:
                    continue
                p = sysm.nodes[GPU][gi].paths[NET][n]
                worst_inter = max(worst_inter, p.type)
                min_inter = min(min_inter, p.bw)
    graph.type_intra, graph.type_inter = worst_intra, worst_inter
    graph.bw_intra, graph.bw_inter = min(graph.bw_intra, min_intra), min(graph.bw_inter, min_inter)


def _evaluate(data: bytes, inputs, down, candidate: bytes, n_graphs: int):
    """NCCL's view of the node with ``candidate`` (its first ``n_graphs`` of ring, tree) as NCCL_GRAPH_FILE, its
    claims made honest first."""
    from ncclctl.nccl.predict import predict_xml
    from ncclctl.nccl.search import graphs_to_xml

    pred = predict_xml(data, inputs=replace(inputs, graph_file=candidate, graph_path="<candidate>", notes=[]),
                       down=down)
    if pred.ring is None:
        return None, candidate
    graphs = [pred.ring, pred.tree][:n_graphs]
    for g in graphs:
        _honest(pred.system, g)
    honest = _strip_ranks(graphs_to_xml(pred.system, graphs))
    pred = predict_xml(data, inputs=replace(inputs, graph_file=honest, graph_path="<candidate>", notes=[]),
                       down=down)
    return pred, honest


#: Settings that change NCCL's search but not its NET numbering: a graph found without them can still be loaded.
SEARCH_ONLY = ("NCCL_PXN_DISABLE", "NCCL_CROSS_NIC")


def _obey_settings(graphs, env: dict[str, str]) -> str | None:
    """Make a candidate found without the search-only settings declare nothing they forbid; the reason it cannot be
    when it cannot. Under NCCL_CROSS_NIC=0 every channel must enter and leave on one net and the graph must say
    crossnic 0: NCCL 2.30 skips only crossnic 1 graphs and loads a crossnic 2 one, whose channels then leave on
    another NIC and which connect.cc swaps on odd nodes (cross-rail hops the user turned off)."""
    from ncclctl.nccl.layouts import cross_nic_zero

    if not cross_nic_zero(env):
        return None
    for kind, g in zip(("ring", "tree"), graphs):
        for c in range(g.n_channels):
            a, b = g.inter[2 * c], g.inter[2 * c + 1]
            if a != b:
                return (f"its {kind} channel {c} enters on one NIC and leaves on another (crossNic "
                        f"{g.cross_nic}), which NCCL_CROSS_NIC=0 forbids")
        g.cross_nic = 0
    return None


def _single_node_note(data: bytes, inputs, down, graph: bytes) -> str | None:
    """A graph file applies to every job that sets NCCL_GRAPH_FILE: say when a one-node job does worse with it."""
    from ncclctl.nccl.predict import predict_xml

    one = replace(inputs, nodes=1, notes=[])
    own = predict_xml(data, inputs=one, down=down)
    loaded = predict_xml(data, inputs=replace(one, graph_file=graph, graph_path="<graph>"), down=down)
    if not own.graphs or not loaded.graphs or own.graphs["best"] is None or loaded.graphs["best"] is None:
        return None  # (one rank: no ring or tree runs, a graph file changes nothing)
    a, b = own.graphs["best"]["gbps"], loaded.graphs["best"]["gbps"]
    ro, rl = own.graphs["ring"], loaded.graphs["ring"]
    if b >= a * 0.999 and rl["nchannels"] >= ro["nchannels"]:
        return None
    worse = (f"{a:g} GB/s large AllReduce against {b:g} with the file" if b < a * 0.999 else
             f"the file's {rl['nchannels']} at {rl['bw_intra']:g} GB/s each are credited more only because NCCL "
             "trusts a file's declared speed without checking it against the links")
    return (f"set NCCL_GRAPH_FILE only for multi-node jobs: on one node NCCL's own search uses "
            f"{ro['nchannels']} ring channels at {ro['bw_intra']:g} GB/s each ({worse}; NCCL 2.30.7's model); a job "
            "on fewer GPUs "
            "cannot load it at all")


def plan_graph(node: Node, *, compute_nics: tuple[str, ...] | None = None, nodes: int = 2,
               env: dict[str, str] | None = None, gdr: str = "auto", version=None) -> GraphPlan:
    """The graph file for ``node`` (see the module doc)."""
    from ncclctl.nccl.layouts import losses, per_channel, protocols
    from ncclctl.nccl.predict import inputs_for_node, predict_xml
    from ncclctl.nccl.search import graphs_to_xml
    from ncclctl.nccl.version import DEFAULT
    from ncclctl.plan.rails import plan_rails

    version = version or DEFAULT
    if not node.gpus:
        raise InputError("the node has no GPUs: there is nothing to put in a graph file",
                         fix="probe a GPU node (or a fixture of one)")
    env = dict(env or {})
    pinned: dict[str, str] = {}
    plan = plan_rails(node, compute_nics)
    if compute_nics:
        if not plan.nccl_ib_hca:
            raise InputError("--compute-nics selects no usable RDMA port", fix="check the names (ncclctl rails)")
        env["NCCL_IB_HCA"] = plan.nccl_ib_hca
        pinned["NCCL_IB_HCA"] = plan.nccl_ib_hca
    data, inputs, down = inputs_for_node(node, nodes=max(nodes, 2), env=env, version=version, gdr=gdr,
                                         source=node.hostname or "node")
    inputs.graph_file = inputs.graph_path = None  # the plan is for NCCL's own search, not a file already in use
    inputs.notes = [n for n in inputs.notes if "NCCL_GRAPH_FILE" not in n]
    notes: list[str] = []
    if "NCCL_IB_HCA" not in inputs.env:
        if not plan.nccl_ib_hca:
            raise InputError("the node has no usable RDMA port: a graph file pins channels to NICs",
                             fix="check the NICs (ncclctl rails), or select them with --compute-nics")
        inputs.env["NCCL_IB_HCA"] = plan.nccl_ib_hca
        inputs.env_origin["NCCL_IB_HCA"] = "pinned by rings graph"
        pinned["NCCL_IB_HCA"] = plan.nccl_ib_hca
        notes.append(f"NCCL_IB_HCA is not set on the node: the file's net devs are NCCL's numbering with "
                     f"NCCL_IB_HCA={plan.nccl_ib_hca} (the rails); set it with the file (ncclctl conf generate), "
                     "or the channels land on other NICs")
    own = predict_xml(data, inputs=inputs, down=down)
    if own.ring is None:
        raise InputError("NCCL's channels cannot be predicted for this node: " + "; ".join(own.caveats[-1:]),
                         fix="see ncclctl topo predict for what the model knows of it")
    if not own.system.inter:
        raise InputError("the node has no network device NCCL uses: a multi-node graph file needs one",
                         fix="check the NICs (ncclctl rails, ncclctl topo predict)")
    own_data = _strip_ranks(graphs_to_xml(own.system, [own.ring, own.tree]))
    if own.changes is not None:
        from ncclctl.nccl.changes import modelled_note

        notes.insert(0, modelled_note(own.changes))
    own_sum = _summary(own)
    if own.graphs["best"] is None:
        raise InputError("one rank: NCCL runs no ring or tree (each collective is a local copy), so a graph file "
                         "changes nothing", fix="give the job's node count with -N (a graph file matters from 2 ranks)")
    own_best = own.graphs["best"]["gbps"]
    for n in own.built.notes:
        if "fuses" in n:
            notes.append(n + "; the file's net devs are the fused device's")
    best = None
    tried = []
    variants = []
    present = [k for k in SEARCH_ONLY if k in inputs.env]
    if present:
        variants.append(({k: v for k, v in inputs.env.items() if k not in SEARCH_ONLY}, present))
    for env_v, dropped in variants:
        alt = predict_xml(data, inputs=replace(inputs, env=env_v, notes=[]), down=down)
        if alt.ring is None:
            continue
        # The ring alone (NCCL then searches the tree itself), and ring and tree together.
        for which, n_graphs in (("ring", 1), ("ring+tree", 2)):
            graphs = [g.copy() for g in (alt.ring, alt.tree)[:n_graphs]]
            forbidden = _obey_settings(graphs, inputs.env)
            if forbidden:
                tried.append({"without": dropped, "graphs": which, "refused": forbidden})
                continue
            cand = _strip_ranks(graphs_to_xml(alt.system, graphs))
            pred, honest = _evaluate(data, inputs, down, cand, len(graphs))
            if pred is None or not pred.graphs:
                continue
            gbps = pred.graphs["best"]["gbps"]
            gained = protocols(pred) - protocols(own)
            lost = protocols(own) - protocols(pred)
            worse = losses(pred, own)
            tried.append({"without": dropped, "graphs": which, "allreduce_gbps": gbps,
                          "protocols_gained": sorted(gained), "protocols_lost": sorted(lost),
                          **({"worse": worse} if worse else {})})
            more = per_channel(pred.ring) > per_channel(own.ring) * GAIN
            better = not worse and (gbps > own_best * GAIN or more or (gbps >= own_best * 0.999 and gained))
            if better and (best is None or gbps > best[0]):
                best = (gbps, honest, pred, dropped, gained)
    info: dict[str, Any] = {"nccl_own": own_sum, "candidates": tried, "nodes": max(nodes, 2),
                            "settings": {k: v for k, v in sorted(inputs.env.items())},
                            **(own.changes.to_json() if own.changes is not None else {})}
    if best is not None:
        gbps, honest, pred, dropped, gained = best
        info["chosen"] = _summary(pred)
        gain = f"+{(gbps / own_best - 1) * 100:.0f}% in NCCL's tuning model" if gbps > own_best * GAIN else \
            "the same peak bandwidth"
        if gained:
            gain += " and " + ", ".join(sorted(gained)) + " back on"
        reason = (f"under {', '.join(f'{k}={inputs.env[k]}' for k in dropped)} NCCL's own search gives "
                  f"{_describe(own_sum)}; the layout NCCL finds without {' and '.join(dropped)} keeps working with "
                  f"it and gives {_describe(info['chosen'])} ({gain}): the graph file is worth it")
        one = _single_node_note(data, inputs, down, honest)
        if one:
            notes.append(one)
        return GraphPlan(data=honest, improves=True, reason=reason, pinned=pinned, notes=notes, info=info)
    info["chosen"] = own_sum
    why_not = ""
    if tried:
        first = tried[0]
        if "refused" in first:
            why_not = (f"; the layout NCCL finds without {' and '.join(first['without'])} is not written: "
                       f"{first['refused']}")
        elif "worse" in first:
            why_not = (f"; the layout NCCL finds without {' and '.join(first['without'])}, loaded under these "
                       f"settings, does worse ({'; '.join(first['worse'])})")
    reason = (f"NCCL's own search already finds the best layout for this node and settings ({_describe(own_sum)})"
              f"{why_not}; a graph file would add nothing but a pinned GPU set (jobs on fewer GPUs fail to load it). "
              "Use the topology file alone (ncclctl topo generate); --force writes NCCL's own layout anyway")
    return GraphPlan(data=own_data, improves=False, reason=reason, pinned=pinned, notes=notes, info=info,
                     single_node=lambda: _single_node_note(data, inputs, down, own_data))


def require_graph_file(path: str) -> None:
    """InputError when ``path`` is a topology file given to ``rings validate``."""
    from ncclctl.inputs import read_bytes
    from ncclctl.nccl.xml import sniff_kind

    data = read_bytes(path, "xml")
    if data is not None and sniff_kind(data) == "topology":
        raise InputError("this is a topology file (<system>), not a graph file", path=path,
                         fix="use 'ncclctl topo validate' for topology files")
