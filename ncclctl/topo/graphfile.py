"""Validate NCCL graph files (``NCCL_GRAPH_FILE``): the ``graphs > graph > channel > net|gpu`` tree NCCL's reader
keeps, against what NCCL's graph loader (``src/graph/search.cc``, ``ncclTopoGetGraphFromXml``) requires and how
it reads each value (``NTG`` rules, and the ``NTV`` rules of graph files), for the target NCCL version.

Like the topology checks (:mod:`ncclctl.topo.validate`, which dispatches to it by kind), it never raises for bad
content: a file always yields findings. What NCCL's model of a node makes of a graph is
:mod:`ncclctl.topo.graphcheck`.
"""

from __future__ import annotations

import re

from ncclctl.findings import Finding
from ncclctl.nccl.params import c_strtof, strtol
from ncclctl.nccl.version import DEFAULT, Version, parse
from ncclctl.nccl.xml import ParseResult, XmlNode, parse_nccl_xml, show_text
from ncclctl.topo.checking import Ctx, check_roots, kv_lookup, lexical, link_type_keys, quote


_EXPECTED_PATTERNS = {0: (4,), 1: (1, 2, 3), 2: (3,), 3: (5,), 4: (6,)}
_GRAPH_NAMES = {0: "ring", 1: "tree", 2: "CollNet chain", 3: "NVLS", 4: "CollNet direct"}


def validate_graph(data: bytes, *, path: str, nccl_version: object = DEFAULT) -> list[Finding]:
    """Findings for ``data`` used as ``NCCL_GRAPH_FILE`` by NCCL ``nccl_version``."""
    version = parse(nccl_version)
    res = parse_nccl_xml(data, kind="graph", nccl_version=version, path=path)
    return validate_graph_result(res, path)


def validate_graph_result(res: ParseResult, path: str) -> list[Finding]:
    """Findings for a graph file NCCL's reader has already read (``parse_nccl_xml(..., kind="graph")``): what
    :func:`validate_graph` says, without reading the file a second time (``topo validate``, ``rings validate``)."""
    ctx = Ctx(path, res.version)
    if lexical(ctx, res):
        return ctx.result()
    check_roots(ctx, res, "graphs", "NTG001", "NTG002")
    for ig in res.ignored:
        if ig.reason in ("wrong-root", "stray-close"):
            continue
        where = f"under <{ig.parent_name}>" if ig.parent_name else "at top level"
        ctx.add("NTG021", f"<{show_text(ig.name)}> {where}: NCCL ignores it with its whole subtree (hierarchy: "
                          "graphs > graph > channel > net|gpu)", ig)
    if res.root is not None:
        _check_graphs(ctx, res.root)
    return ctx.result()


def gpu_set(res: ParseResult, path: str) -> list[Finding]:
    """NTG032 for a graph file NCCL reads (``res``), for a check with neither host nor topology to compare."""
    ctx = Ctx(path, res.version)
    if res.ok and res.root is not None and res.root.name == "graphs":
        _check_gpu_set(ctx, res.root)
    return ctx.result()


def _check_gpu_set(ctx: Ctx, root: XmlNode) -> None:
    """NTG032: the GPUs the channels use, which is the node the file assumes (search.cc:ncclTopoGetChannelFromXml
    looks each dev up among the job's GPUs: 'XML Import Channel : dev N not found'; and fills only as many
    entries of a channel as it lists)."""
    v = ctx.version
    devs: dict[int, XmlNode] = {}
    counts: set[int] = set()
    for graph in root.children:
        if graph.name != "graph" or (graph.has("id") and strtol(graph.get("id") or "").value == 3):
            continue  # NVLS channels list only their head GPU
        for ch in graph.children:
            if ch.name != "channel":
                continue
            gpus = [g for g in ch.children if g.name == "gpu" and g.has("dev") and not g.has("rank")]
            if gpus:
                counts.add(len(gpus))
            for g in gpus:
                devs.setdefault(strtol(g.get("dev") or "", 16 if v >= Version(2, 21, 0) else 0).value, g)
    if not devs:
        return
    from ncclctl.nccl.cpuset import cpu_ranges

    top = max(devs)
    listed = cpu_ranges(sum(1 << d for d in devs if 0 <= d < 1024))
    n = len(devs)
    fewer = (f"a job without GPU {top} (a VM or node with fewer GPUs, a CUDA_VISIBLE_DEVICES subset) fails with "
             f"'XML Import Channel : dev {top} not found'")
    more = "and a job on more GPUs gets channels whose other entries stay rank 0"
    ctx.add("NTG032", f"the channels use the GPUs of NVML index {listed} ({n} GPU{'s' if n != 1 else ''}): the file "
                      f"fits only jobs on exactly these GPUs, and NCCL loads it for every job that reads it: {fewer}; "
                      f"{more}", devs[min(devs)].parent or root)


_GRAPH_REQUIRED = ("id", "pattern", "crossnic", "nchannels", "speedintra", "speedinter", "typeintra", "typeinter",
                   "samechannels")
_GRAPH_INTS = ("id", "pattern", "crossnic", "nchannels", "samechannels")
_GRAPH_FLOATS = ("speedintra", "speedinter", "latencyinter")


def _check_graphs(ctx: Ctx, root: XmlNode) -> None:
    v = ctx.version
    ids: dict[int, XmlNode] = {}
    for graph in root.children:
        if graph.name != "graph":
            continue
        missing = [a for a in _GRAPH_REQUIRED if not graph.has(a)]
        if missing:
            crash = [a for a in missing if a in ("typeintra", "typeinter")]
            how = ("NCCL passes the missing value to a string compare (crash)" if crash and len(crash) == len(missing)
                   else f"NCCL fails with 'Attribute {missing[0]} of node graph not found'")
            ctx.add("NTG004", f"<graph> lacks {', '.join(missing)}: {how}", graph)
        for a in _GRAPH_INTS:
            val = graph.get(a)
            if val is not None and not strtol(val).whole:
                ctx.add("NTG019", f"<graph> {a}={quote(val)} is not an integer: NCCL reads {strtol(val).value}", graph)
        for a in _GRAPH_FLOATS:
            val = graph.get(a)
            if val is not None and not c_strtof(val)[1]:
                ctx.add("NTG019", f"<graph> {a}={quote(val)} is not a number: NCCL reads {c_strtof(val)[0]:g}", graph)
        if graph.has("latencyinter") and v < Version(2, 12, 0):
            ctx.add("NTV002", f"<graph> attribute latencyinter is read only from NCCL 2.12: NCCL {v} "
                              "ignores it", graph)
        gid = strtol(graph.get("id") or "").value if graph.has("id") else None
        pattern = strtol(graph.get("pattern") or "").value if graph.has("pattern") else None
        if gid is not None:
            if gid in ids:
                ctx.add("NTG017", f"a second <graph id=\"{gid}\"> (the first is at line {ids[gid].line}): NCCL "
                                  "applies both in turn, so the last one's attributes win", graph)
            else:
                ids[gid] = graph
        _check_graph_kind(ctx, graph, gid, pattern)
        for a in ("typeintra", "typeinter"):
            val = graph.get(a)
            if val is None:
                continue
            if kv_lookup(val, link_type_keys(v)) is None:
                if kv_lookup(val, link_type_keys(DEFAULT)) is not None:
                    ctx.add("NTV004", f"{a}={quote(val)} is not in NCCL {v}'s path-type dictionary "
                                      "(NVB 2.8+, PXN 2.12+, P2C 2.27+): it falls back to LOC", graph)
                elif v < Version(2, 7, 0):
                    ctx.add("NTV008", f"{a}={quote(val)} is not in NCCL 2.6's dictionary: fatal", graph)
                else:
                    extra = (" (C2C, NET and DIS are path types NCCL cannot read or dump here: with "
                             "NCCL_GRAPH_DUMP_FILE set, init fails)" if val[:3] in ("C2C", "NET", "DIS") else "")
                    ctx.add("NTG005", f"{a}={quote(val)} is not one of LOC NVL NVB PIX PXB P2C PXN PHB SYS: NCCL "
                                      f"falls back to LOC{extra}", graph)
        crossnic = graph.get("crossnic")
        if crossnic is not None:
            cn = strtol(crossnic).value
            if cn not in (0, 1, 2):
                ctx.add("NTG013", f"crossnic={quote(crossnic)}: NCCL knows 0, 1 and 2", graph)
            elif cn == 1:
                ctx.add("NTG020", "crossnic=\"1\": NCCL skips this graph when NCCL_CROSS_NIC=0", graph)
        same = graph.get("samechannels")
        if same is not None and strtol(same).value not in (0, 1):
            ctx.add("NTG018", f"samechannels={quote(same)}: expected 0 or 1", graph)
        _check_channels(ctx, graph, gid)


def _check_graph_kind(ctx: Ctx, graph: XmlNode, gid: int | None, pattern: int | None) -> None:
    v = ctx.version
    if gid is not None:
        if gid not in _EXPECTED_PATTERNS:
            ctx.add("NTG010", f"<graph id=\"{gid}\">: NCCL computes ids 0 (ring), 1 (tree), 2 (CollNet chain), "
                              "3 (NVLS) and 4 (CollNet direct) only, so this graph is never used", graph)
        elif (gid == 3 and v < Version(2, 18, 0)) or (gid == 4 and v < Version(2, 23, 0)):
            ctx.add("NTV006", f"graph id {gid} ({_GRAPH_NAMES[gid]}) does not exist in NCCL {v}: the "
                              "graph is never used", graph)
        elif pattern is not None and pattern not in _EXPECTED_PATTERNS[gid]:
            ctx.add("NTG010", f"<graph id=\"{gid}\"> ({_GRAPH_NAMES[gid]}) with pattern {pattern}: NCCL expects "
                              f"{' or '.join(str(p) for p in _EXPECTED_PATTERNS[gid])}, and the file's pattern "
                              "replaces NCCL's", graph)
    if pattern is not None and ((pattern == 5 and v < Version(2, 18, 0)) or (pattern == 6 and v < Version(2, 22, 0))):
        ctx.add("NTV006", f"pattern {pattern} does not exist in NCCL {v}", graph)


def _check_channels(ctx: Ctx, graph: XmlNode, gid: int | None) -> None:
    v = ctx.version
    channels = [c for c in graph.children if c.name == "channel"]
    nch_s = graph.get("nchannels")
    nch = strtol(nch_s).value if nch_s is not None else None
    if nch is not None:
        if nch == 0 and not channels:
            ctx.add("NTG016", "nchannels=\"0\" and no <channel>: NCCL treats this graph as not provided", graph)
        elif nch != len(channels):
            what = (": NCCL ignores the graph and searches" if nch == 0 else
                    ": NCCL uses nchannels as is; missing channels are all rank 0, extra ones are dropped")
            ctx.add("NTG006", f"nchannels={quote(nch_s)} but the graph has {len(channels)} <channel> elements{what}",
                    graph)
        if gid in (0, 1) and nch > 32:
            ctx.add("NTG007", f"nchannels={nch} for a {_GRAPH_NAMES[gid]} graph: NCCL duplicates channels into "
                              "[n, 2n), so more than 32 overflows MAXCHANNELS (64)", graph)
        elif nch > 64:
            ctx.add("NTG007", f"nchannels={nch} is over MAXCHANNELS (64)", graph)
    if len(channels) > 64 and (nch is None or nch <= 64):
        ctx.add("NTG007", f"{len(channels)} <channel> elements: NCCL writes past MAXCHANNELS (64)", graph)
    gpu_counts: list[tuple[int, XmlNode]] = []
    net_counts: list[tuple[int, XmlNode]] = []
    for ch in channels:
        gpus = [c for c in ch.children if c.name == "gpu"]
        nets = [c for c in ch.children if c.name == "net"]
        gpu_counts.append((len(gpus), ch))
        net_counts.append((len(nets), ch))
        seen: dict[tuple[str, int], XmlNode] = {}
        for el in ch.children:
            dev = el.get("dev")
            if dev is None:
                ctx.add("NTG014", f"<{el.name}> without dev: NCCL fails with 'Attribute dev of node {el.name} not "
                                  "found'", el)
            else:
                _check_dev(ctx, el, dev)
            if el.name != "gpu":
                continue
            if el.has("rank"):
                ctx.add("NTG012", f"<gpu rank={quote(el.get('rank'))}>: NCCL uses the rank as is and ignores dev, "
                                  "which ties the file to one node's rank numbering"
                        + ("" if v >= Version(2, 30, 3) else f" (NCCL {v} ignores rank: read from 2.30.3)"),
                        el)
                key = ("rank", strtol(el.get("rank") or "").value)
            elif dev is not None:
                key = ("dev", strtol(dev, 16 if v >= Version(2, 21, 0) else 0).value)
            else:
                continue
            if key in seen:
                ctx.add("NTG015", f"<gpu {key[0]}=...> {key[1]} appears twice in this channel (first at line "
                                  f"{seen[key].line})", el)
            else:
                seen[key] = el
    if channels:
        if gid == 3:
            for n, ch in gpu_counts:
                if n < 1:
                    ctx.add("NTG008", "NVLS channel without <gpu>: each channel needs at least its head GPU", ch)
        else:
            first = gpu_counts[0][0]
            for n, ch in gpu_counts:
                if n == 0:
                    ctx.add("NTG008", "channel without <gpu>: its ranks stay 0", ch)
                elif n != first:
                    ctx.add("NTG008", f"channel lists {n} GPUs but the first channel lists {first}: every channel "
                                      "must list every local GPU once (extra entries spill into the next channel)",
                            ch)
        first_net = net_counts[0][0]
        for n, ch in net_counts:
            if n not in (0, 2):
                ctx.add("NTG009", f"channel has {n} <net> elements: NCCL expects 0 (single node) or 2 (first and "
                                  "last); extra ones spill into the next channel", ch)
            elif n != first_net and first_net in (0, 2):
                ctx.add("NTG009", f"channel has {n} <net> elements but the first channel has {first_net}", ch)


def _check_dev(ctx: Ctx, el: XmlNode, dev: str) -> None:
    s = dev.strip()
    if s[:2] in ("0x", "0X") or s == "":
        return
    if re.fullmatch(r"[0-9]", s):
        return
    if re.fullmatch(r"[0-9]+", s):
        hexv = int(s, 16)
        dec = int(s, 10)
        ctx.add("NTG011", f"<{el.name} dev={quote(dev)}>: NCCL 2.21+ reads dev as hex ({hexv}), NCCL 2.20 and older "
                          f"as decimal ({dec}); write 0x{dec:x} (or 0x{hexv:x})", el)
    elif re.fullmatch(r"[0-9a-fA-F]+", s):
        ctx.add("NTG011", f"<{el.name} dev={quote(dev)}>: hex without 0x is {int(s, 16)} for NCCL 2.21+ but 0 for "
                          f"NCCL 2.20 and older; write 0x{int(s, 16):x}", el)
    else:
        ctx.add("NTG011", f"<{el.name} dev={quote(dev)}> is not a number: NCCL reads "
                          f"{strtol(dev, 16).value} (2.21+)", el)
