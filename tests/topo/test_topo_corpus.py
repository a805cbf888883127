"""The fixture corpus: every file under fixtures/topo/invalid/ fires exactly its rule; valid/ fires nothing.

An invalid file names its rule id first (``NTS004-gpu-under-cpu.xml``) and states its expectation in a first-line
comment ``<!-- expect RULE line N [col C] [version X.Y.Z] [kind topology|graph] -->``, or, when the file cannot
start with a comment (BOM, empty file), in ``_expectations.json``. Adding a file adds a test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ncclctl.findings import Severity
from ncclctl.topo.rules import RULES
from ncclctl.topo.validate import validate_bytes, validate_file

REPO = Path(__file__).resolve().parents[2]
INVALID = REPO / "fixtures" / "topo" / "invalid"
VALID = REPO / "fixtures" / "topo" / "valid"
_EXPECT = re.compile(rb"<!-- expect (?P<rule>[A-Z]{3}\d{3}) line (?P<line>\d+)(?: col (?P<col>\d+))?"
                     rb"(?: version (?P<version>[\d.]+))?(?: kind (?P<kind>topology|graph))? -->")


def _index() -> dict:
    p = INVALID / "_expectations.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else {}


def _expectation(path: Path) -> dict:
    index = _index()
    if path.name in index:
        return index[path.name]
    m = _EXPECT.match(path.read_bytes())
    assert m, f"{path.name}: no '<!-- expect RULE line N -->' first line and no _expectations.json entry"
    e = {"rule": m["rule"].decode(), "line": int(m["line"])}
    for key in ("col", "version", "kind"):
        if m[key]:
            e[key] = int(m[key]) if key == "col" else m[key].decode()
    return e


def _invalid_files() -> list[Path]:
    return sorted(INVALID.glob("*.xml"))


@pytest.mark.parametrize("path", _invalid_files(), ids=lambda p: p.name)
def test_invalid_fixture_fires_exactly_its_rule(path: Path) -> None:
    e = _expectation(path)
    assert path.name.startswith(e["rule"] + "-"), "the file name must start with the expected rule id"
    findings = validate_bytes(path.read_bytes(), path=str(path), kind=e.get("kind"),
                              nccl_version=e.get("version", "2.30.7"))
    loud = [f for f in findings if f.severity is not Severity.INFO]
    assert {f.rule for f in loud} == {e["rule"]}, [(f.rule, f.line, f.message) for f in loud]
    at = [f for f in loud if f.line == e["line"]]
    assert at, f"no {e['rule']} at line {e['line']}: {[(f.line, f.column) for f in loud]}"
    if "col" in e:
        assert any(f.column == e["col"] for f in at), [(f.line, f.column) for f in at]
    expected_sev = RULES[e["rule"]].severity
    assert all(f.severity is expected_sev for f in loud)
    assert all(f.subject == str(path) and f.fix and f.message for f in loud)


@pytest.mark.parametrize("path", sorted(VALID.glob("*.xml")), ids=lambda p: p.name)
def test_valid_fixture_has_no_error_or_warning(path: Path) -> None:
    findings = validate_file(path)
    loud = [(f.rule, f.line, f.message) for f in findings if f.severity is not Severity.INFO]
    assert loud == []


@pytest.mark.parametrize("name,kind", [("nccl-example-topo.xml", "topology"), ("nccl-example-graph.xml", "graph")])
def test_reference_examples_are_clean(name: str, kind: str) -> None:
    data = (VALID / name).read_bytes()
    findings = validate_bytes(data, path=name, kind=kind)
    assert not [f for f in findings if f.severity in (Severity.ERROR, Severity.WARNING)]


INVALID_HOST = REPO / "fixtures" / "topo" / "invalid-host"


def test_every_error_and_warning_rule_has_a_fixture() -> None:
    covered = {_expectation(p)["rule"] for p in _invalid_files()}
    # NTH rules compare a file with a host: their corpus is fixtures/topo/invalid-host (tests/test_topo_cli.py).
    covered |= {p.name[:6] for p in INVALID_HOST.glob("NTH*.xml")}
    # NTX090: XSD-only. NTH015 is about the host's /etc/nccl.conf, not a line of the file: tests/test_rings.py.
    xsd_only = {"NTX090", "NTH015"}
    # The graph-meaning rules need NCCL's model of a node: tests/topo/test_graph_meaning.py authors a file per rule.
    meaning = {r.id for r in RULES.values() if r.checked_by == "ncclctl/topo/graphcheck.py"}
    # The rail/plane host rules need a fabric or a host's NCCL_IB_HCA: tests/rails/test_validate_rail_ids.py
    # authors a failing and a passing file per rule.
    rails = {f"NTH{i:03d}" for i in range(40, 45)}
    loud = {r.id for r in RULES.values() if r.severity is not Severity.INFO} - xsd_only - meaning - rails
    assert sorted(loud - covered) == []


def test_expectation_index_names_existing_files() -> None:
    for name in _index():
        assert (INVALID / name).exists(), name
