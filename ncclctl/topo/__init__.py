"""NCCL topology XML (``NCCL_TOPO_FILE``) and graph XML (``NCCL_GRAPH_FILE``): validation, show, diff, explain.

* NCCL's own byte-level reader (``graph/xml.cc``) is :mod:`ncclctl.nccl.xml`, part of NCCL's model below this
  package.
* :mod:`ncclctl.topo.validate` turns a file into :class:`~ncclctl.findings.Finding` values (rule ids in
  :mod:`ncclctl.topo.rules`).
* :mod:`ncclctl.topo.schema` checks the structure against ``schemas/nccl-topo.xsd`` / ``nccl-graph.xsd``.

NCCL versions (``nccl_version`` arguments) are parsed by :mod:`ncclctl.nccl.version`.

The behaviour follows the reference ``nccl-format.md`` (derived from NCCL 2.30.7's source); section numbers
in docstrings and messages refer to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ncclctl.topo.graphfile import validate_graph
    from ncclctl.topo.validate import validate_file, validate_topology

# The names below load on first use (PEP 562): importing one submodule (show, hostcheck) must not import the
# validator, the rule registry and the findings machinery with it (start-up time of `topo predict`).
_LAZY = {
    "validate_file": "ncclctl.topo.validate", "validate_graph": "ncclctl.topo.graphfile",
    "validate_topology": "ncclctl.topo.validate",
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'ncclctl.topo' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value


__all__ = [
    "validate_file",
    "validate_graph",
    "validate_topology",
]
