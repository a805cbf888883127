"""Check one topology or graph file the way ``ncclctl topo validate`` does: NCCL's reader and the file rules, the
XSD, and (with a host) the file against that host.

With a host, the init-only values the host check finds equal to what NCCL detects there are not reported as
NTS025: a file ``ncclctl topo generate`` just wrote for a host validates clean against that host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ncclctl.findings import Finding
from ncclctl.nccl.version import DEFAULT, parse
from ncclctl.topo.ncclxml import Kind, sniff_kind

if TYPE_CHECKING:  # pragma: no cover
    from ncclctl.model import Node


def check_file(data: bytes, path: str, *, nccl_version: object = DEFAULT, xsd: bool = True,
               load_node: Callable[[], Node] | None = None) -> tuple[Kind | None, list[Finding]]:
    """The kind sniffed from the root element and every finding for ``data`` (read from ``path``). With
    ``load_node``, the file is also checked against that host, which is probed only when NCCL would read the
    file."""
    from ncclctl.topo.validate import validate_bytes

    version = parse(nccl_version)
    kind = sniff_kind(data)
    confirmed: frozenset[tuple[int, int, str]] = frozenset()
    against_host: list[Finding] = []
    if load_node is not None and kind in ("topology", "graph"):
        from ncclctl.topo import hostcheck
        from ncclctl.topo.interpret import interpret
        from ncclctl.topo.ncclxml import parse_nccl_xml

        result = parse_nccl_xml(data, kind=kind, nccl_version=version)
        if result.ok and result.root is not None:
            node = load_node()
            if kind == "topology" and result.root.name == "system":
                view = interpret(result)
                against_host = hostcheck.check_against_host(view, node, path)
                from ncclctl.topo.meaning import host_gdr_lost

                lost = host_gdr_lost(result, node, path)
                if lost:  # one fact, one finding: NTH030 says more than NTH006 about the same GPU
                    at = {f.line for f in lost}
                    against_host = [f for f in against_host if not (f.rule == "NTH006" and f.line in at)] + lost
                confirmed = hostcheck.confirmed_values(view, node)
            elif kind == "graph" and result.root.name == "graphs":
                against_host = hostcheck.check_graph_against_host(result, node, path)
                against_host += hostcheck.graph_file_in_etc(node)
    findings = validate_bytes(data, path=path, nccl_version=version, confirmed=confirmed)
    if any(f.rule == "NTH030" for f in against_host):  # the host confirms NTS070 GPU by GPU
        findings = [f for f in findings if f.rule != "NTS070"]
    if xsd and kind is not None:
        from ncclctl.topo.schema import xsd_findings  # lxml is imported only here

        findings += xsd_findings(data, kind, path)
    return kind, findings + against_host


def validate_report(data: bytes, path: str, *, nccl_version: object = DEFAULT, xsd: bool = True,
                    load_node: Callable[[], Node] | None = None, config=None, config_path: str | None = None,
                    only: tuple[str, ...] | None = None, fail_on: str = "error", command: str = "topo validate"):
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
                                load_node=remember if load_node is not None else None)
    return configured(findings, subject=path, fail_on=Severity(fail_on), config=config, only=only,
                      host=nodes[0].hostname if nodes else socket.gethostname(), name=f"ncclctl {command}",
                      fields=(("file", path), ("kind", kind), ("nccl_version", ".".join(map(str, version))),
                              ("config", config_path)))
