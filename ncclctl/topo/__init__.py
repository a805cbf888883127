"""NCCL topology XML (``NCCL_TOPO_FILE``) and graph XML (``NCCL_GRAPH_FILE``): reading and validation.

* :mod:`ncclctl.topo.ncclxml` reads bytes exactly as NCCL's own byte-level reader (``graph/xml.cc``) does.
* :mod:`ncclctl.topo.validate` turns a file into :class:`~ncclctl.findings.Finding` values (rule ids in
  :mod:`ncclctl.topo.rules`).
* :mod:`ncclctl.topo.schema` checks the structure against ``schemas/nccl-topo.xsd`` / ``nccl-graph.xsd``.
* :mod:`ncclctl.topo.generate` writes topology files from the node model.

NCCL versions (``nccl_version`` arguments) are parsed by :mod:`ncclctl.nccl.version`.

The behaviour follows the reference ``nccl-format.md`` (derived from NCCL 2.30.7's source); section numbers
in docstrings and messages refer to it.
"""

from __future__ import annotations

from ncclctl.topo.ncclxml import (
    IgnoredElement,
    ParseResult,
    XmlDiagnostic,
    XmlNode,
    parse_nccl_xml,
    sniff_kind,
)
from ncclctl.topo.validate import validate_file, validate_graph, validate_topology

__all__ = [
    "IgnoredElement",
    "ParseResult",
    "XmlDiagnostic",
    "XmlNode",
    "parse_nccl_xml",
    "sniff_kind",
    "validate_file",
    "validate_graph",
    "validate_topology",
]
