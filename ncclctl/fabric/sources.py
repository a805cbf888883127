"""Where a fabric command's input comes from: a fabric file, an inventory, or both.

* ``FABRIC_FILE`` alone: hosts are whatever the HCAs' node descriptions name; rails are the HCAs in name order.
* ``--inventory INV``: hosts are the inventory's; each host's node (snapshot or model) gives its rail table
  (:func:`ncclctl.plan.rails.plan_rails`), its GPU count (hostfile slots) and its HCA GUIDs. The fabric is the
  inventory's ``fabric:`` file (or ``FABRIC_FILE`` when given); with neither, the fabric is read from the hosts'
  LLDP neighbours (RoCE).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ncclctl.errors import InputError, UsageError
from ncclctl.fabric.graph import (FabricGraph, UnknownHca, finding, from_fabric, from_lldp, host_endpoints,
                                  norm_guid, parse_fabric_text, read_fabric_text, unknown_findings)
from ncclctl.findings import Finding


def load_fabric_file(path: str) -> FabricGraph:
    """The graph of a fabric file. The lean reader (:mod:`ncclctl.fabric.lean`) first: plain ibnetdiscover output
    (the large case) straight into the graph; anything else (iblinkinfo, pasted or re-indented text, inconsistent
    links) by the general parser and builder (:mod:`ncclctl.fabric.graph`)."""
    from ncclctl.fabric.lean import read_graph

    g = read_graph(path)
    if g is not None:
        return g
    text = read_fabric_text(path)
    kind, fabric = parse_fabric_text(text, source=path)
    del text
    if not fabric.nodes:
        raise InputError("no fabric nodes in the file", path=path,
                         fix="capture it with: ibnetdiscover > fabric.txt")
    return from_fabric(fabric, source=path, kind=kind)


@dataclass
class HostInfo:
    name: str
    line: int | None
    #: Rail keys ("mlx5_0:1") in rail order from the host's rail table; empty when the node has no rails.
    rails: tuple[str, ...] = ()
    gpus: int | None = None
    #: The inventory's ``group`` hint (scalable unit name), used to name the detected leaf group.
    group: str | None = None


@dataclass
class FabricInput:
    graph: FabricGraph
    inventory_path: str | None = None
    #: Inventory hosts by name (None without an inventory).
    hosts: dict[str, HostInfo] | None = None
    #: Host -> {"<hca>:<port>": Endpoint}
    endpoints: dict = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    #: HCAs whose description names no (inventory) host; :func:`load_findings` reports them (FAB007), the layout
    #: places those that sit at a host position of a group (FAB016).
    unknown: list[UnknownHca] = field(default_factory=list)
    #: Inventory host -> its :class:`~ncclctl.model.Node`, with ``load_input(..., keep_nodes=True)`` only.
    nodes: dict = field(default_factory=dict)

    @property
    def source_label(self) -> str:
        return self.graph.source


def load_input(fabric_file: str | None, inventory: str | None, *, keep_nodes: bool = False) -> FabricInput:
    if fabric_file is None and inventory is None:
        raise UsageError("give a fabric file (ibnetdiscover / iblinkinfo output) or --inventory INV",
                         fix="e.g. ncclctl fabric rails fabric.txt, or ncclctl fabric rails --inventory cluster.yaml")
    if inventory is None:
        assert fabric_file is not None  # one of the two is given (checked above)
        graph = load_fabric_file(fabric_file)
        unknown: list[UnknownHca] = []
        eps, found = host_endpoints(graph, unknown_out=unknown)
        return FabricInput(graph=graph, endpoints=eps, findings=list(graph.findings) + found, unknown=unknown)

    from ncclctl.inventory import load_inventory
    from ncclctl.plan.rails import plan_rails

    inv = load_inventory(inventory)
    nodes = []
    hosts: dict[str, HostInfo] = {}
    model_guids: dict[str, tuple[str, str]] = {}
    host_guids: dict[tuple[str, str], str] = {}
    for h in inv.hosts:
        node = h.load_node()
        nodes.append((h.name, node, h.line))
        plan = plan_rails(node)
        hosts[h.name] = HostInfo(name=h.name, line=h.line, rails=tuple(r.hca for r in plan.rails),
                                 gpus=len(node.gpus) or None, group=h.group)
        for nic in node.nics:
            guid = norm_guid(nic.node_guid)
            if guid:
                model_guids.setdefault(guid, (h.name, nic.name))
                host_guids[(h.name, nic.name)] = guid
    path = fabric_file or inv.fabric
    unknown = []
    if path is not None:
        graph = load_fabric_file(path)
        eps, found = host_endpoints(graph, known_hosts={n: i.line for n, i in hosts.items()},
                                    model_guids=model_guids, host_guids=host_guids, unknown_out=unknown)
    else:
        graph = from_lldp(nodes, source=inventory)
        eps, found = host_endpoints(graph, known_hosts={n: i.line for n, i in hosts.items()}, unknown_out=unknown)
    findings = list(graph.findings) + found
    for name, info in hosts.items():
        if name not in eps:
            what = "RDMA NIC with an Ethernet port (no LLDP data)" if path is None else "HCA in the fabric"
            findings.append(finding("FAB008", f"inventory host {name} has no {what}", subject=inventory,
                                    line=info.line, host=name))
    return FabricInput(graph=graph, inventory_path=inventory, hosts=hosts, endpoints=eps, findings=findings,
                       unknown=unknown, nodes={name: node for name, node, _ in nodes} if keep_nodes else {})


def load_findings(inp: FabricInput) -> list[Finding]:
    """``ncclctl fabric load``'s findings: the input's own and one FAB007 per unknown description (or host)."""
    return list(inp.findings) + unknown_findings(inp.graph, inp.unknown)


def load_summary(inp: FabricInput) -> tuple[str, dict]:
    """``ncclctl fabric load``: the summary as text lines and as the JSON document's ``fabric`` field."""
    from ncclctl.fabric.graph import KINDS
    from ncclctl.fabric.hostlist import compress
    from ncclctl.names import natural_key

    summary = inp.graph.summary()
    hosts = sorted(inp.endpoints, key=natural_key)
    linked = sum(1 for eps in inp.endpoints.values() for ep in eps.values() if ep.link is not None)
    doc = {"fabric": {**summary, "hosts": len(hosts), "host_names": compress(hosts), "hca_ports_linked": linked}}
    lines = [f"fabric: {summary['source']} ({KINDS.get(summary['kind'], summary['kind'])})",
             f"switches: {summary['switches']} ("
             + ", ".join(f"{n} {name}" for name, n in summary["layers"].items()) + ")",
             f"HCAs: {summary['hcas']}, {linked} HCA port(s) of hosts linked"
             + (f"; SHARP aggregation nodes: {summary['aggregation_nodes']}" if summary["aggregation_nodes"] else ""),
             f"links: {summary['links']} ({summary['hca_links']} HCA-switch, {summary['switch_links']} switch-switch"
             + (f", {summary['other_links']} other" if summary["other_links"] else "") + ")",
             "rates: " + (", ".join(f"{label} x{n}" for label, n in summary["rates"].items()) or "none"),
             f"hosts: {len(hosts)}" + (f": {compress(hosts)}" if hosts else "")]
    return "\n".join(lines) + "\n", doc

