"""NTS051/NTS052 with a host (``topo validate FILE --root DIR`` / ``--live``): the element budget of the file with
what NCCL adds on that host, counted exactly (:mod:`ncclctl.nccl.hostmerge`), instead of the file-only estimate.

The file-only check (``Validator.check_budget``) cannot know the host's NIC ports, its GPUs' NVLink peers or what
NIC fusion makes of the host's ports; with the host it counts them: the file, the host's GPU of the rank that adds
the most, every port the host's net plugin reports (under the host's NCCL_IB_HCA, ports down left out) that the file
does not list by name, and the virtual NICs NCCL fuses from them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ncclctl.findings import Finding

if TYPE_CHECKING:  # pragma: no cover
    from ncclctl.model import Node
    from ncclctl.nccl.xml import ParseResult

__all__ = ["budget_on_host"]


def budget_on_host(result: "ParseResult", node: "Node", path: str) -> list[Finding] | None:
    """The budget findings of the topology file ``result`` on ``node`` ([] when it fits with room), or None when
    the host's count cannot be made (no GPU, a host NCCL cannot model): the file-only estimate stands then."""
    from ncclctl.errors import InputError
    from ncclctl.nccl.detect import generate_for
    from ncclctl.nccl.hostmerge import host_budget
    from ncclctl.nccl.predict import inputs_for_node, plugin_for
    from ncclctl.nccl.system import Params
    from ncclctl.nccl.xml import parse_nccl_xml
    from ncclctl.topo.rules import rule
    from ncclctl.topo.validate import BUDGET_MARGIN

    root = result.root
    if root is None or root.name != "system" or not node.gpus:
        return None
    version = result.version
    try:
        _, inputs, down = inputs_for_node(node, nodes=1, env={}, version=version, gdr="auto", source=node.hostname)
        tr = inputs.transport
        socket = tr.socket if tr is not None and tr.name == "Socket" else ()
        detected = parse_nccl_xml(generate_for(node, nccl_version=version, socket=socket)[0], kind="topology",
                                  nccl_version=version, path=f"<{node.hostname}>")
        if detected.root is None:
            return None
        # NCCL adds at most the host's own elements and, per port, a fused <net> with its <pci>/<nic>: with room
        # for all of them there is nothing to count
        ports = sum(1 for n in detected.root.iter() if n.name == "net")
        if result.node_count + detected.node_count + 3 * ports < result.max_nodes - BUDGET_MARGIN:
            return []
        b = host_budget(root, detected.root, Params(env=inputs.env, version=version), plugin_for(inputs, down))
    except (InputError, ValueError, ArithmeticError, LookupError):
        return None
    limit = result.max_nodes
    peak = max(b.per_rank, b.kept)
    if peak < limit - BUDGET_MARGIN:
        return []
    host = node.hostname
    adds = []
    if b.gpu:
        adds.append(f"{b.gpu} for its GPU {b.gpu_busid} (the <pci> path, <gpu> and <nvlink> elements the file lacks)")
    if b.nets:
        shown = ", ".join(b.missing[:6]) + (f" and {len(b.missing) - 6} more" if len(b.missing) > 6 else "")
        adds.append(f"{b.nets} for the {len(b.missing)} NIC port{'s' if len(b.missing) != 1 else ''} its net plugin "
                    f"reports that the file does not list ({shown}: <net>, <nic> and <pci> path)")
    if b.fused:
        adds.append(f"{b.fused} for the virtual NICs NCCL fuses from the ports (NCCL_NET_MERGE_LEVEL)")
    grow = f"each rank on {host} adds {'; '.join(adds)}: {b.per_rank} before it trims" if adds else (
        f"NCCL adds nothing on {host}: {b.per_rank} per rank")
    arithmetic = (f"NCCL's topology XML has {limit} element slots (NCCL_TOPO_XML_MAX_NODES): the file uses {b.file}; "
                  f"{grow}; the fused tree of {host}'s ranks holds {b.kept}")
    el = root
    if peak > limit:
        r = rule("NTS052")
        return [Finding("NTS052", r.severity, f"{arithmetic}: {peak - limit} over the limit on {host}, so init fails "
                        f"there ('too many XML nodes (max {limit})')", path, el.line, el.column,
                        fix=(f"Remove at least {peak - limit} elements NCCL does not need from the file (devices "
                             f"{host} does not have and switches without GPUs or NICs: NCCL trims them anyway), or "
                             "select fewer ports with NCCL_IB_HCA"), evidence=(el.start_tag(),))]
    r = rule("NTS051")
    return [Finding("NTS051", r.severity, f"{arithmetic}: {limit - peak} slot{'s' if limit - peak != 1 else ''} left "
                    f"on {host}, so one more element NCCL adds there (a NIC port brought up, a GPU or NVLink peer "
                    f"the file does not list) makes init fail ('too many XML nodes (max {limit})')", path, el.line,
                    el.column, fix=r.fix, evidence=(el.start_tag(),))]
