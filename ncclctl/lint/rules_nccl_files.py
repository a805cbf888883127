"""NCCL settings rules, files: the topology and graph files NCCL_TOPO_FILE and NCCL_GRAPH_FILE name, and the
topology daemon's virtualTopology.xml, checked with the file validator and the host checker
(NCCL019-NCCL023).

What the NCCL settings rules share is in :mod:`ncclctl.lint.ncclsettings`.
"""

from __future__ import annotations

from typing import Iterable, Literal

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.lint.ncclsettings import VERSION_OPT, hit, release, resolved
from ncclctl.registry import Hit, Option, rule
from ncclctl.nccl.settings import ETC_CONF, Setting

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

_INFO_OPT = Option("include_info", bool, False, "Also report the file checker's info-level findings.")

# --------------------------------------------------------------------------------------------------
# Topology and graph files


def _refused(ctx: Ctx, s: Setting) -> Hit | None:
    """The error for the file ``s`` (NCCL_TOPO_FILE, NCCL_GRAPH_FILE) names when the probe refused to read it (a
    device such as /dev/zero, a FIFO, a socket, a file over the 16 MiB cap): NCCL's fopen would fail, hang or
    read forever, so it is an error, and saying "does not exist" would send the operator to the wrong fix."""
    from ncclctl.model import REFUSED

    if not s.value.startswith("/"):
        return None
    for u in ctx.node.unavailable:
        if u.source == s.name and u.reason == REFUSED:
            return Hit(s.value, f"ncclctl refuses to read the file: {u.detail}", severity=E,
                       fix=f"point {s.name} at a regular NCCL XML file (ncclctl "
                           f"{'rings graph' if s.name == 'NCCL_GRAPH_FILE' else 'topo generate'} -o PATH), or unset it",
                       evidence=(f"{s.name} from {s.where}",))
    return None


def _xml_hits(ctx: Ctx, kind: Literal["topology", "graph"], conf, opts: dict, note: str) -> list[Hit]:
    """The project's validator and host checker on a captured topology/graph file, as graded hits."""
    from ncclctl.errors import InputError
    from ncclctl.topo import hostcheck
    from ncclctl.topo.interpret import interpret
    from ncclctl.nccl.xml import parse_nccl_xml
    from ncclctl.topo.graphfile import validate_graph
    from ncclctl.topo.validate import validate_topology

    data = conf.text.encode("utf-8", errors="replace")
    path = conf.path
    version = release(opts)
    include_info = opts["include_info"]
    try:
        if kind == "topology":
            findings = validate_topology(data, path=path, nccl_version=version)
        else:
            findings = validate_graph(data, path=path, nccl_version=version)
        result = parse_nccl_xml(data, kind=kind, nccl_version=version, path=path)
    except InputError as exc:  # refused as unsafe or over a limit (a DTD, 100,000 nesting levels): docs/reliability.md
        return [Hit(path, f"ncclctl refuses to read the file: {exc.message}", fix=exc.fix, line=exc.line,
                    evidence=(note,), severity=E)]
    if result.ok and result.root is not None:
        if kind == "topology" and result.root.name == "system":
            findings += hostcheck.check_against_host(interpret(result), ctx.node, path)
        elif kind == "graph" and result.root.name == "graphs":
            findings += hostcheck.check_graph_against_host(result, ctx.node, path)
    out = []
    for f in sorted(findings, key=lambda f: (f.line or 0, f.column or 0, f.rule, f.message)):
        if f.severity is I and not include_info:
            continue
        out.append(Hit(path, f"{f.rule}: {f.message}", fix=f.fix, severity=f.severity, line=f.line,
                       evidence=(note, f"checker rule {f.rule}")))
    return out


@rule(
    "NCCL019", "graph-file-in-etc", W, "NCCL_GRAPH_FILE set in /etc/nccl.conf",
    what="A line NCCL_GRAPH_FILE=... in /etc/nccl.conf (applies to every job on the node).",
    why="A graph file fixes the rings and trees for one GPU count and layout. Every job that uses fewer GPUs, "
        "another GPU order or a sub-communicator fails at init ('Dev ... not found') or runs a graph that does "
        "not fit; users rarely know the file exists (NVIDIA/nccl#1008: the maintainers call graph injection an "
        "experiment tool, not a permanent setting; some cloud images ship exactly this line).",
    detect="The first NCCL_GRAPH_FILE line of /etc/nccl.conf.",
    fix="Remove the line from /etc/nccl.conf; set NCCL_GRAPH_FILE only in the environment of the jobs the graph "
        "was made for.",
)
def graph_file_in_etc(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for s in resolved(ctx).candidates("NCCL_GRAPH_FILE"):
        if s.source == ETC_CONF:
            yield hit(s, "a graph file for every job on this node: jobs with fewer GPUs or another layout fail "
                      "or run a graph made for something else")


@rule(
    "NCCL020", "graph-file-broken", E, "NCCL_GRAPH_FILE missing, unreadable or wrong for this host",
    what="The effective NCCL_GRAPH_FILE is empty, does not exist, or fails validation (NCCL's XML reader, graph "
         "rules) or the host check (GPU devs, GPU count, net devs).",
    why="An unreadable graph file is fatal: NCCL logs 'Could not open XML graph file' and init fails "
        "(ncclSystemError). A file NCCL can read but that names GPUs or NICs this host lacks fails later in graph "
        "setup or silently runs fewer channels.",
    detect="The file the effective setting names, captured by the probe (HostFacts.graph_file), checked with "
           "the same validator as 'ncclctl topo validate --root'.",
    fix="Point NCCL_GRAPH_FILE at a valid file for this host (ncclctl rings graph), or unset it.",
    options=(_INFO_OPT, VERSION_OPT),
)
def graph_file_broken(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    s = resolved(ctx).effective("NCCL_GRAPH_FILE")
    if s is None:
        return
    fact = ctx.node.facts.graph_file
    if s.value == "":
        yield hit(s, "empty: fopen('') fails, NCCL logs 'Could not open XML graph file' and init fails")
    elif not s.value.startswith("/"):
        yield hit(s, "a relative path: it resolves against each job's working directory (not checked)", severity=W)
    elif (refused := _refused(ctx, s)) is not None:
        yield refused
    elif fact is None or fact.path != s.value:
        yield hit(s, "the file does not exist or cannot be read: NCCL logs 'Could not open XML graph file' and "
                  "every communicator init fails")
    else:
        yield from _xml_hits(ctx, "graph", fact, opts, f"NCCL_GRAPH_FILE from {s.where}")


@rule(
    "NCCL021", "topo-file-missing", W, "NCCL_TOPO_FILE points at nothing",
    what="The effective NCCL_TOPO_FILE names a file that does not exist or cannot be read, a relative or '~' "
         "path, or is empty.",
    why="NCCL only logs INFO 'Could not open XML topology file' and auto-detects (graph/xml.cc: "
        "ncclTopoGetXmlFromFile). On bare metal that is usually fine, but in a VM the detected topology is flat: "
        "GPU/NIC pairing and GPUDirect RDMA are lost (user-needs 2-5), so it is an error there. '~' is not "
        "expanded. An empty value loads nothing and also skips /var/run/nvidia-topologyd/virtualTopology.xml.",
    detect="The effective setting and whether the probe could read the file (HostFacts.topo_file).",
    fix="Install the file at that absolute path (e.g. generate it with 'ncclctl topo generate -o PATH'), or "
        "unset NCCL_TOPO_FILE.",
)
def topo_file_missing(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    s = resolved(ctx).effective("NCCL_TOPO_FILE")
    if s is None:
        return
    fact = ctx.node.facts.topo_file
    if s.value == "":
        vt = ctx.node.facts.virtual_topology is not None
        yield hit(s, "empty: NCCL loads no file and does not try /var/run/nvidia-topologyd/virtualTopology.xml"
                  + (" (which exists here)" if vt else ""), severity=I)
    elif not s.value.startswith("/"):
        yield hit(s, "not an absolute path: '~' is not expanded and a relative path depends on each job's "
                  "working directory")
    elif _refused(ctx, s) is not None:
        return  # NCCL022 says why
    elif fact is None or fact.path != s.value:
        vm = ctx.node.is_virtual
        yield hit(s, "the file does not exist or cannot be read: NCCL silently auto-detects"
                  + (" the flat topology of this VM (GPU/NIC pairing and GPUDirect RDMA are lost)" if vm else ""),
                  severity=E if vm else None)


@rule(
    "NCCL022", "topo-file-mismatch", E, "NCCL_TOPO_FILE invalid or wrong for this host",
    what="The file the effective NCCL_TOPO_FILE names fails NCCL's XML reader or the topology rules, or does not "
         "match this host (bus ids, NUMA affinity, GPU/NIC pairing, NVLink counts).",
    why="A parse error is fatal for every communicator init; a file that does not match the host steers NCCL's "
        "ring/tree search and GPU-NIC pairing with wrong data (published cloud topology files carried wrong NUMA "
        "affinity for about 18 months, user-needs 1.1).",
    detect="The captured file (HostFacts.topo_file) through the same validator and host checker as "
           "'ncclctl topo validate FILE --root DIR'; each finding keeps the checker's severity and rule id.",
    fix="Regenerate the file for this host (ncclctl topo generate) and validate it (ncclctl topo validate FILE "
        "--live).",
    options=(_INFO_OPT, VERSION_OPT),
)
def topo_file_mismatch(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    s = resolved(ctx).effective("NCCL_TOPO_FILE")
    fact = ctx.node.facts.topo_file
    if s is not None and (refused := _refused(ctx, s)) is not None:
        yield refused
    if s is None or fact is None or fact.path != s.value:
        return
    yield from _xml_hits(ctx, "topology", fact, opts, f"NCCL_TOPO_FILE from {s.where}")


@rule(
    "NCCL023", "virtual-topology-stale", W, "/var/run/nvidia-topologyd/virtualTopology.xml in use and stale or odd",
    what="/var/run/nvidia-topologyd/virtualTopology.xml exists and NCCL_TOPO_FILE is unset, so NCCL loads it: on "
         "bare metal (where no topology daemon should run), or with content that fails validation or does not "
         "match this host.",
    why="Since 2.10 NCCL silently loads this path when NCCL_TOPO_FILE is unset (graph/topo.cc). It is meant for "
        "VMs whose hypervisor publishes the real PCI topology; a copy left on bare metal or from another VM shape "
        "overrides auto-detection with wrong data, with no log line above INFO.",
    detect="HostFacts.virtual_topology (the probe reads the path), the effective NCCL_TOPO_FILE, the node's "
           "flat-PCIe (VM) test, then the topology validator and host checker.",
    fix="On bare metal delete the file (and disable whatever writes it); in a VM regenerate it for this shape, or "
        "set NCCL_TOPO_FILE to a validated file.",
    options=(_INFO_OPT, VERSION_OPT),
)
def virtual_topology_stale(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    vt = ctx.node.facts.virtual_topology
    if vt is None or resolved(ctx).effective("NCCL_TOPO_FILE") is not None:
        return
    if ctx.is_bare_metal and ctx.node.gpus:
        yield Hit(vt.path, "present on bare metal: NCCL loads it instead of detecting the PCIe topology",
                  evidence=("NCCL_TOPO_FILE is unset",))
    yield from _xml_hits(ctx, "topology", vt, opts, "loaded because NCCL_TOPO_FILE is unset")
