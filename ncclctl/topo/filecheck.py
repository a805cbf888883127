"""Check one topology or graph file the way ``ncclctl topo validate`` does: NCCL's reader and the file rules, the
XSD, and (with a host) the file against that host.

With a host, the init-only values the host check finds equal to what NCCL detects there are not reported as
NTS025: a file ``ncclctl topo generate`` just wrote for a host validates clean against that host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ncclctl.findings import Finding
from ncclctl.nccl.version import DEFAULT, parse
from ncclctl.nccl.xml import Kind, sniff_kind

if TYPE_CHECKING:  # pragma: no cover
    from ncclctl.model import Node


@dataclass
class Meaning:
    """What ``rings validate`` checks a graph file's meaning with (rules NTG022-NTG031,
    :mod:`ncclctl.topo.graphcheck`): the topology NCCL reads (``topo``: a file; else, with a host, its effective
    NCCL_TOPO_FILE or what ``topo generate`` writes for it), settings over the host's (``env``), GPUDirect RDMA
    (``gdr``: auto, on, off). After :func:`check_file`, ``doc`` says what the model was built from (for the report)
    and ``notes`` why it could not be (empty when it was)."""

    topo: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    gdr: str = "auto"
    doc: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class RailSource:
    """``topo validate --fabric FILE / --rail-map FILE / --host NAME``: where the rail/plane ids of the host's ports
    come from for NTH040/NTH042 (:func:`ncclctl.fabric.railids.port_ids`)."""

    fabric: str | None = None
    rail_map: str | None = None
    host: str | None = None


def check_file(data: bytes, path: str, *, nccl_version: object = DEFAULT, xsd: bool = True,
               load_node: Callable[[], Node] | None = None,
               meaning: Meaning | None = None,
               rails: RailSource | None = None) -> tuple[Kind | None, list[Finding]]:
    """The kind sniffed from the root element and every finding for ``data`` (read from ``path``). With
    ``load_node``, the file is also checked against that host, which is probed only when NCCL would read the
    file; ``rails`` adds the fabric or rail map the rail/plane ids are checked against (NTH040-NTH044). With
    ``meaning``, a graph file is also checked against NCCL's model of the node (see :class:`Meaning`)."""
    from ncclctl.topo.validate import validate_bytes

    version = parse(nccl_version)
    kind = sniff_kind(data)
    confirmed: frozenset[tuple[int, int, str]] = frozenset()
    against_host: list[Finding] = []
    meant: list[Finding] = []
    host_budget: list[Finding] | None = None  # NTS051/NTS052 counted on the host (None: the file's estimate)
    result = None
    if (load_node is not None or meaning is not None) and kind in ("topology", "graph"):
        from ncclctl.topo import hostcheck
        from ncclctl.topo.interpret import interpret
        from ncclctl.nccl.xml import parse_nccl_xml

        result = parse_nccl_xml(data, kind=kind, nccl_version=version, path=path)
        if result.ok and result.root is not None:
            node = load_node() if load_node is not None else None
            if node is not None and kind == "topology" and result.root.name == "system":
                view = interpret(result)
                against_host = hostcheck.check_against_host(view, node, path)
                from ncclctl.topo.meaning import host_gdr_lost

                lost = host_gdr_lost(result, node, path)
                if lost:  # one fact, one finding: NTH030 says more than NTH006 about the same GPU
                    at = {f.line for f in lost}
                    against_host = [f for f in against_host if not (f.rule == "NTH006" and f.line in at)] + lost
                confirmed = hostcheck.confirmed_values(view, node)
                fleet = None
                if rails is not None:
                    from ncclctl.fabric.railids import port_ids

                    fleet = port_ids(node, fabric_file=rails.fabric, rail_map=rails.rail_map, host=rails.host)
                against_host += hostcheck.check_rail_ids(view, node, path, version, fleet)
                from ncclctl.topo.budget import budget_on_host

                host_budget = budget_on_host(result, node, path)
            elif kind == "graph" and result.root.name == "graphs":
                if node is not None:
                    against_host = hostcheck.check_graph_against_host(result, node, path)
                    against_host += hostcheck.graph_file_in_etc(node)
                if meaning is not None:
                    meant = _meaning(result, path, node, meaning, version, data)
                    against_host = _without_repeats(against_host, meant, meaning.doc is not None)
    if kind == "graph" and result is None:  # read once: the file rules and NTG032 below use it
        from ncclctl.nccl.xml import parse_nccl_xml

        result = parse_nccl_xml(data, kind=kind, nccl_version=version, path=path)
    if kind == "graph" and result is not None:
        from ncclctl.topo.graphfile import validate_graph_result

        findings = validate_graph_result(result, path)  # the file read once
    else:
        findings = validate_bytes(data, path=path, nccl_version=version, confirmed=confirmed)
    if kind == "graph" and load_node is None and (meaning is None or meaning.doc is None):
        # Neither host (NTH012/NTH013) nor model (NTG028) to compare the channels' GPUs with: say what they assume.
        from ncclctl.topo.graphfile import gpu_set

        assert result is not None
        findings = findings + gpu_set(result, path)
    if host_budget is not None:  # the host's exact count replaces the file's estimate
        findings = [f for f in findings if f.rule not in ("NTS051", "NTS052")] + host_budget
    if any(f.rule == "NTH030" for f in against_host):  # the host confirms NTS070 GPU by GPU
        findings = [f for f in findings if f.rule != "NTS070"]
    if any(f.rule == "NTH044" for f in against_host):  # says what NTV002 says of rail=/plane=, with the host's view
        findings = [f for f in findings if not (f.rule == "NTV002" and f.message.startswith("<net> attribute ")
                                                and f.message.split()[2] in ("rail", "plane"))]
    if xsd and kind is not None:
        from ncclctl.topo.schema import xsd_findings  # lxml is imported only here
        from ncclctl.topo.validate import without_repeated_xsd

        schema = without_repeated_xsd(xsd_findings(data, kind, path), findings)
        if any(f.severity.value == "error" for f in findings):  # a fatal reader error is one of them
            from ncclctl.nccl.xml import parse_nccl_xml

            fatal = (result or parse_nccl_xml(data, kind=kind, nccl_version=version, path=path)).fatal
            if fatal is not None:  # NCCL stops there: nothing about what it never reads
                schema = [f for f in schema if f.line is not None and f.line < fatal.line]
        findings += schema
    from ncclctl.topo.onefault import after_root_refused

    return kind, after_root_refused(findings + against_host + meant)


# The host rules a meaning rule says more about, at the same element: the host rule gives way.
_SAME = {"NTH012": "NTG028", "NTH013": "NTG028", "NTH014": "NTG029"}


def _without_repeats(host: list[Finding], meant: list[Finding], modelled: bool) -> list[Finding]:
    """``host`` without what a meaning rule reports at the same element; with a model of the node, without NTH014
    at all: NTG029 checks net devs after NIC fusion (a fused virtual NIC's dev is over the physical count)."""
    at = {(f.rule, f.line, f.column) for f in meant}
    graph_level = {f.rule for f in meant if f.rule == "NTG028"}
    out = []
    for f in host:
        if modelled and f.rule == "NTH014":
            continue
        twin = _SAME.get(f.rule)
        if twin is not None and ((twin, f.line, f.column) in at or (f.rule == "NTH013" and twin in graph_level)):
            continue
        out.append(f)
    return out


def _meaning(result, path: str, node: Node | None, meaning: Meaning, version, graph: bytes) -> list[Finding]:
    """NTG022-NTG034: the model of the node from the topology and settings, then the checks."""
    from ncclctl.errors import InputError
    from ncclctl.topo.graphcheck import Model, check_graph_meaning, graph_has_nets

    nodes = 2 if graph_has_nets(result) else 1
    model = None
    try:
        model = _model(node, meaning, version, nodes, graph)
    except InputError as exc:
        if meaning.topo is not None:
            raise
        # the summary line's notes hold no parentheses
        meaning.notes.append("graph meaning not checked: " + exc.message.replace("(", "[").replace(")", "]"))
    if model is None and not meaning.notes:
        meaning.notes.append("graph meaning not checked: NTG022-NTG031 but NTG026 need the topology NCCL reads, "
                             "give --topo FILE, --root DIR or --live")
    return check_graph_meaning(result, path, model if isinstance(model, Model) else None, version=version)


def _model(node: Node | None, meaning: Meaning, version, nodes: int, graph: bytes | None = None):
    from ncclctl.nccl.predict import Inputs, inputs_for_node, predict_xml
    from ncclctl.nccl.system import NET
    from ncclctl.topo.graphcheck import Model

    topo_data: bytes | None = None
    if meaning.topo is not None:
        from ncclctl.inputs import read_bytes

        topo_data = read_bytes(meaning.topo, "xml")
    if node is not None:
        data, inputs, down = inputs_for_node(node, nodes=nodes, env=dict(meaning.env), version=version,
                                             gdr=meaning.gdr, source=node.hostname)
        if topo_data is not None:
            data = topo_data
            inputs.notes = [n for n in inputs.notes if "NCCL_TOPO_FILE" not in n]
            label = f"--topo {meaning.topo}"
        elif "NCCL_TOPO_FILE" in inputs.env and node.facts.topo_file is not None:
            label = f"NCCL_TOPO_FILE={inputs.env['NCCL_TOPO_FILE']} ({inputs.env_origin.get('NCCL_TOPO_FILE')})"
        else:
            label = f"what 'ncclctl topo generate' writes for {node.hostname}"
    elif topo_data is not None:
        data, down = topo_data, frozenset()
        gdr_on = meaning.gdr != "off"
        inputs = Inputs(source=meaning.topo or "", nodes=nodes, env=dict(meaning.env),
                        env_origin={k: "--env" for k in meaning.env}, gdr=gdr_on,
                        gdr_why=(f"--gdr {meaning.gdr}" if meaning.gdr != "auto" else
                                 "assumed available (no host facts): --gdr off models a host without it"),
                        version=version)
        label = f"--topo {meaning.topo}"
    else:
        return None
    topo_path = meaning.topo if topo_data is not None else None

    def rebuild(extra: dict[str, str]):
        from dataclasses import replace

        return predict_xml(data, inputs=replace(inputs, env={**inputs.env, **extra}, notes=[]), down=down,
                           path=topo_path)

    def load():
        """NCCL's view with the file being checked as NCCL_GRAPH_FILE (NTG034)."""
        from dataclasses import replace

        return predict_xml(data, inputs=replace(inputs, graph_file=graph, graph_path="<checked file>", notes=[]),
                           down=down, path=topo_path)

    def own():
        """NCCL's own search under the same settings (no graph file at all; NTG034)."""
        from dataclasses import replace

        if inputs.graph_file is None:
            return pred
        return predict_xml(data, inputs=replace(inputs, graph_file=None, graph_path=None, notes=[]), down=down,
                           path=topo_path)

    pred = predict_xml(data, inputs=inputs, down=down, path=topo_path)
    meaning.doc = {
        "topology": label, "nodes": nodes,
        "settings": {k: {"value": v, "from": inputs.env_origin.get(k, "--env")} for k, v in sorted(inputs.env.items())},
        "gpudirect_rdma": {"available": inputs.gdr, "why": inputs.gdr_why},
        "nets": [{"dev": n.dev, "name": n.name} for n in pred.system.nodes[NET]],
        "notes": inputs.notes + pred.built.notes,
    }
    return Model(pred=pred, build=rebuild, host=node, load=load if graph is not None else None,
                 own=own)


def summary_notes(data: bytes, kind: Kind | None, nccl_version: object = DEFAULT) -> tuple[str, ...]:
    """What the summary line says about the file besides the counts: ``skeleton: N elements left to NCCL's
    detection`` for a skeleton topology file (rule NTS053)."""
    if kind != "topology":
        return ()
    from ncclctl.nccl.xml import parse_nccl_xml
    from ncclctl.topo.validate import skeleton_elements

    version = parse(nccl_version)
    left = skeleton_elements(parse_nccl_xml(data, kind=kind, nccl_version=version).root, version)
    return () if left is None else (f"skeleton: {left} element{'' if left == 1 else 's'} left to NCCL's detection",)


def validate_report(data: bytes, path: str, *, nccl_version: object = DEFAULT, xsd: bool = True,
                    load_node: Callable[[], Node] | None = None, config=None, config_path: str | None = None,
                    only: tuple[str, ...] | None = None, fail_on: str = "error", command: str = "topo validate",
                    meaning: Meaning | None = None, rails: RailSource | None = None):
    """``ncclctl topo validate`` / ``rings validate``: :func:`check_file`, the rule configuration applied (per-host
    ignores match the host the file is checked against, else the machine running the command), ``--rule``
    filtering, as one :class:`~ncclctl.report.Report`."""
    import socket

    from ncclctl.findings import Severity
    from ncclctl.report import configured

    version = parse(nccl_version)
    nodes: list[Node] = []

    def remember() -> Node:
        assert load_node is not None
        nodes.append(load_node())
        return nodes[-1]

    kind, findings = check_file(data, path, nccl_version=version, xsd=xsd,
                                load_node=remember if load_node is not None else None, meaning=meaning,
                                rails=rails)
    fields: tuple = (("file", path), ("kind", kind), ("nccl_version", ".".join(map(str, version))),
                     ("config", config_path))
    notes: tuple[str, ...] = ()
    if meaning is not None and kind == "graph":
        fields += (("model", meaning.doc),)
        notes = tuple(meaning.notes)
    rep = configured(findings, subject=path, fail_on=Severity(fail_on), config=config, only=only,
                     host=nodes[0].hostname if nodes else socket.gethostname(), name=f"ncclctl {command}",
                     fields=fields, notes=summary_notes(data, kind, version) + notes)
    from dataclasses import replace

    from ncclctl.topo.onefault import one_per_fault

    return replace(rep, findings=tuple(one_per_fault(list(rep.findings))))
