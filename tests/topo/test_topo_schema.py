"""XSD validation with lxml, and how it relates to NCCL's own reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclctl.findings import Severity
from ncclctl.topo import schema
from ncclctl.topo.schema import schema_path, xsd_findings
from ncclctl.topo.validate import validate_bytes

REPO = Path(__file__).resolve().parents[2]
VALID = REPO / "fixtures" / "topo" / "valid"
INVALID = REPO / "fixtures" / "topo" / "invalid"


def test_schemas_are_found_in_the_repository() -> None:
    assert schema_path("topology") == REPO / "schemas" / "nccl-topo.xsd"
    assert schema_path("graph") == REPO / "schemas" / "nccl-graph.xsd"


@pytest.mark.parametrize("name,kind", [("nccl-example-topo.xml", "topology"), ("nccl-example-graph.xml", "graph"),
                                       ("crlf-comments-topo.xml", "topology"), ("single-node-graph.xml", "graph")])
def test_valid_examples_pass_the_schema(name: str, kind: str) -> None:
    assert xsd_findings((VALID / name).read_bytes(), kind, name) == []


@pytest.mark.parametrize("data,kind,needle", [
    (b'<system version="1"><cpu numa_id="0"/></system>', "topology", "numa_id"),
    (b'<system version="1"><cpu numaid="0" arch="aarch64"/></system>', "topology", "aarch64"),
    (b'<system version="1"><nvs/></system>', "topology", "nvs"),
    (b'<system version="1"><cpu numaid="0"><pci busid="18:00.0"/></cpu></system>', "topology", "18:00.0"),
    (b'<graphs version="1"><graph id="0" pattern="4" crossnic="0" nchannels="1" speedintra="1" speedinter="1" '
     b'typeintra="NET" typeinter="PIX" samechannels="0"/></graphs>', "graph", "NET"),
    (b'<graphs version="1"><graph id="0"/></graphs>', "graph", "required"),
])
def test_schema_violations_are_warnings_with_lines(data: bytes, kind: str, needle: str) -> None:
    findings = xsd_findings(data, kind, "x.xml")
    assert findings and all(f.rule == "NTX090" and f.severity is Severity.WARNING for f in findings)
    assert any(needle in f.message for f in findings) and findings[0].line == 1


@pytest.mark.parametrize("name,nccl_rules", [
    ("raw-ampersand-topo.xml", set()),  # valid/: a raw '&' and '<' in a value
])
def test_nccl_accepts_but_lxml_cannot_parse_valid(name: str, nccl_rules: set) -> None:
    data = (VALID / name).read_bytes()
    findings = xsd_findings(data, "topology", name)
    assert [(f.rule, f.severity) for f in findings] == [("NTX091", Severity.INFO)]
    loud = {f.rule for f in validate_bytes(data, path=name) if f.severity is not Severity.INFO}
    assert loud == nccl_rules


@pytest.mark.parametrize("name,nccl_rule", [
    ("NTX022-attribute-without-equals.xml", "NTX022"),
    ("NTX023-duplicate-attribute.xml", "NTX023"),
    ("NTX025-nul-in-value.xml", "NTX025"),
])
def test_nccl_accepts_but_lxml_cannot_parse_with_warning(name: str, nccl_rule: str) -> None:
    data = (INVALID / name).read_bytes()
    assert [f.rule for f in xsd_findings(data, "topology", name)] == ["NTX091"]
    findings = validate_bytes(data, path=name)
    assert {f.rule for f in findings if f.severity is not Severity.INFO} == {nccl_rule}
    assert not [f for f in findings if f.severity is Severity.ERROR]


@pytest.mark.parametrize("name,nccl_rule", [
    ("NTX001-tab-before-lt.xml", "NTX001"),
    ("NTX002-newline-in-start-tag.xml", "NTX002"),
    ("NTX003-xml-declaration.xml", "NTX003"),
    ("NTX004-utf8-bom.xml", "NTX004"),
    ("NTX009-close-tag-trailing-space.xml", "NTX009"),
    ("NTX013-tab-between-name-and-attribute.xml", "NTX013"),
])
def test_xml_accepts_but_nccl_rejects(name: str, nccl_rule: str) -> None:
    data = (INVALID / name).read_bytes()
    assert xsd_findings(data, "topology", name) == []  # well-formed and schema-valid XML
    findings = validate_bytes(data, path=name)
    assert [f.rule for f in findings if f.severity is Severity.ERROR] == [nccl_rule]


def test_entities_are_never_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    data = (b'<!DOCTYPE system [<!ENTITY x SYSTEM "file://' + str(secret).encode() + b'">]>'
            b'<system version="1" name="&x;"/>')
    findings = xsd_findings(data, "topology", "x.xml")
    assert all("TOPSECRET" not in f.message for f in findings)
    assert [f.rule for f in findings] in (["NTX091"], ["NTX090"], [])


def test_never_crashes_on_garbage() -> None:
    for data in (b"", b"\x00\xff", b"<", b"<?xml version='1.0' encoding='bogus'?><system/>", b"<a><b></a>"):
        for kind in ("topology", "graph"):
            findings = xsd_findings(data, kind, "x")
            assert all(f.rule in ("NTX090", "NTX091") for f in findings)


def test_falls_back_to_package_schemas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "_schemas"
    pkg.mkdir()
    (pkg / "nccl-topo.xsd").write_bytes((REPO / "schemas" / "nccl-topo.xsd").read_bytes())
    monkeypatch.setattr(schema, "schema_dirs", lambda: [tmp_path / "nowhere", pkg])
    assert schema_path("topology") == pkg / "nccl-topo.xsd"
    with pytest.raises(Exception):
        schema_path("graph")
