"""XSD validation of NCCL topology/graph XML with lxml, done safely.

The schemas (``schemas/nccl-topo.xsd``, ``schemas/nccl-graph.xsd``) describe structure and attribute formats.
They complement, never replace, :mod:`ncclctl.topo.validate`: NCCL's reader accepts files that a general XML
parser rejects (a raw ``&`` or ``<`` inside a value, duplicate attribute names, an attribute without ``=``),
and rejects files XML accepts (a TAB before ``<``, an XML declaration). When lxml cannot parse a file,
:func:`xsd_findings` returns one info finding (``NTX091``) and nothing else.

lxml is imported inside the functions, so importing ncclctl does not pay for it. The parser never resolves
entities, loads DTDs or touches the network, and keeps lxml's default size limits (no ``huge_tree``).
"""

from __future__ import annotations

import functools
from pathlib import Path

from ncclctl.errors import InputError
from ncclctl.findings import Finding
from ncclctl.topo.rules import rule

_SCHEMA_FILES = {"topology": "nccl-topo.xsd", "graph": "nccl-graph.xsd"}
_MAX_XSD_FINDINGS = 50


def schema_dirs() -> list[Path]:
    """Where the schema files are looked for: the repository's ``schemas/``, then ``ncclctl/_schemas``."""
    here = Path(__file__).resolve()
    return [here.parents[2] / "schemas", here.parents[1] / "_schemas"]


def schema_path(kind: str) -> Path:
    try:
        name = _SCHEMA_FILES[kind]
    except KeyError:
        raise InputError(f"unknown NCCL XML kind {kind!r}", fix="use 'topology' or 'graph'") from None
    for d in schema_dirs():
        p = d / name
        if p.is_file():
            return p
    raise InputError(f"schema {name} not found in {', '.join(str(d) for d in schema_dirs())}",
                     fix="reinstall ncclctl (the XSD files ship in schemas/)")


def _safe_parser():
    from lxml import etree  # lazy: lxml is only needed for XSD checks

    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
                           huge_tree=False)


@functools.lru_cache(maxsize=4)
def _load_schema(path: str):
    from lxml import etree

    try:
        doc = etree.parse(path, _safe_parser())
        return etree.XMLSchema(doc)
    except (etree.XMLSyntaxError, etree.XMLSchemaParseError, OSError) as e:
        raise InputError(f"cannot load schema {path}: {e}", path=path) from None


def xsd_findings(data: bytes, kind: str, path: str) -> list[Finding]:
    """Validate ``data`` against the XSD for ``kind`` (``topology`` or ``graph``); findings use ``path`` as
    subject. XSD violations are warnings (``NTX090``); NCCL-based errors come from :mod:`validate`."""
    from lxml import etree

    schema = _load_schema(str(schema_path(kind)))
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise InputError(f"XML must be given as bytes, got {type(data).__name__}")
    skipped = rule("NTX091")
    try:
        doc = etree.fromstring(data, _safe_parser())
    except etree.XMLSyntaxError as e:
        line, col = (e.position if getattr(e, "position", None) else (None, None))
        return [Finding("NTX091", skipped.severity,
                        f"XSD validation skipped: lxml cannot parse the file ({e.msg if hasattr(e, 'msg') else e})",
                        path, line or None, col or None, skipped.fix)]
    except (ValueError, LookupError, TypeError, etree.LxmlError) as e:  # e.g. an encoding lxml refuses
        return [Finding("NTX091", skipped.severity, f"XSD validation skipped: {e}", path, None, None,
                        skipped.fix)]
    if doc is None:
        return [Finding("NTX091", skipped.severity, "XSD validation skipped: no root element", path, None, None,
                        skipped.fix)]
    r = rule("NTX090")
    if schema.validate(etree.ElementTree(doc)):
        return []
    out: list[Finding] = []
    for entry in schema.error_log:
        if len(out) == _MAX_XSD_FINDINGS:
            out.append(Finding("NTX090", r.severity, f"... more XSD violations not shown "
                               f"({len(schema.error_log) - _MAX_XSD_FINDINGS})", path, None, None, r.fix))
            break
        # libxml2 gives schema errors a line but no useful column.
        out.append(Finding("NTX090", r.severity, f"XSD: {entry.message}", path, entry.line or None,
                           entry.column + 1 if entry.column and entry.column > 0 else None, r.fix))
    return out
