"""The report door (ncclctl.report): one summary line, infos hidden in text only, every format from one Report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from ncclctl import report
from ncclctl.findings import Finding, Severity
from ncclctl.report import Report, render, summary_line
from ncclctl.report.nagios import nagios

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

PORT_DOWN = Finding("IB001", E, "mlx5_3 port 1 is DOWN", "mlx5_3", fix="enable the port")
HCA_ENTRY = Finding("NCCL011", E, "entry mlx5_3 selects only ports that are not ACTIVE", "/etc/nccl.conf", 2,
                    fix="drop mlx5_3")
INFOS = tuple(Finding("NTS025", I, f'<gpu> of "0000:{b:02x}:00.0" sets dev: NCCL uses these values', "/t.xml", line)
              for line, b in enumerate(range(0x10, 0x24), start=5))


def rep(*findings: Finding, **kw) -> Report:
    return Report(findings=tuple(findings), subject=kw.pop("subject", "node1"), **kw)


def test_one_summary_line_format():
    c = {"error": 1, "warning": 2, "info": 20}
    assert summary_line("node1", c) == "node1: 1 error, 2 warnings, 20 info"
    assert summary_line("f.xml", c, ["3 rules run", ""]) == "f.xml: 1 error, 2 warnings, 20 info (3 rules run)"
    assert report.count_phrase({"error": 0, "warning": 1, "info": 1}) == "0 errors, 1 warning, 1 info"


def test_text_hides_infos_and_says_so():
    text = render(rep(PORT_DOWN, *INFOS, subject="/t.xml"), "text")
    assert "NTS025" not in text
    assert text.splitlines()[-1] == "/t.xml: 1 error, 0 warnings, 20 info (info hidden, --show-info shows it)"
    shown = render(rep(PORT_DOWN, *INFOS, subject="/t.xml"), "text", show_info=True)
    lines = shown.splitlines()
    assert lines[-1] == "/t.xml: 1 error, 0 warnings, 20 info"
    grouped = [ln for ln in lines if ": info: NTS025: " in ln]
    assert len(grouped) == 1 and "[20 alike; shown for /t.xml:5]" in grouped[0]
    assert grouped[0].startswith("/t.xml:5,6,7,")


def test_text_without_infos_has_no_note_and_counts_rules_run():
    text = render(rep(PORT_DOWN, rules_run=("IB001", "IB002", "IB003")), "text")
    assert text.splitlines() == ["mlx5_3: error: IB001: mlx5_3 port 1 is DOWN", "    fix: enable the port",
                                 "node1: 1 error, 0 warnings, 0 info (3 rules run)"]


def test_machine_formats_keep_every_finding():
    r = rep(PORT_DOWN, *INFOS, fields=(("file", "/t.xml"),))
    doc = json.loads(render(r, "json"))
    assert list(doc)[:3] == ["schema_version", "file", "fail_on"]
    assert doc["summary"] == {"error": 1, "warning": 0, "info": 20} and len(doc["findings"]) == 21
    assert doc["ok"] is False and "rules_run" not in doc
    sarif = json.loads(render(r, "sarif"))
    assert len(sarif["runs"][0]["results"]) == 21
    # a validator's descriptors: the rules that fired, with the registry's documentation
    rules = sarif["runs"][0]["tool"]["driver"]["rules"]
    assert [d["id"] for d in rules] == ["IB001", "NTS025"]
    assert rules[1]["name"] == "init-only-override" and rules[1]["properties"]["scope"] == "file"
    junit = ET.fromstring(render(r, "junit"))
    assert junit.get("tests") == "2" and junit.get("failures") == "1"
    assert "0000:23:00.0" in junit.find(".//testcase[@name='NTS025 init-only-override']/system-out").text


def test_junit_of_a_clean_validator_run_has_one_passing_testcase():
    root = ET.fromstring(render(rep(subject="/t.xml", name="ncclctl topo validate"), "junit"))
    cases = root.findall(".//testcase")
    assert [c.get("name") for c in cases] == ["ncclctl topo validate"] and root.get("failures") == "0"


def test_sarif_locations_without_and_with_a_host():
    no_line = Finding("NTH002", W, "GPU 3 is not in the file", "t.xml")
    loc = json.loads(render(rep(no_line, subject="t.xml"), "sarif"))["runs"][0]["results"][0]["locations"][0]
    assert loc == {"physicalLocation": {"artifactLocation": {"uri": "t.xml"}}}
    loc = json.loads(render(rep(PORT_DOWN, host="node1"), "sarif"))["runs"][0]["results"][0]["locations"][0]
    assert loc["logicalLocations"][0] == {"name": "mlx5_3", "fullyQualifiedName": "node1/mlx5_3", "kind": "device"}


def test_nagios_leads_with_the_root_cause_on_one_line():
    text, code = nagios(rep(HCA_ENTRY, PORT_DOWN))
    first, *rest = text.splitlines()
    assert code == 2
    assert first == ("NCCLCTL CRITICAL - node1: 2 errors, 0 warnings: IB001 mlx5_3: mlx5_3 port 1 is DOWN (+1 more)"
                     "|errors=2 warnings=0 info=0")
    assert rest[0].startswith("mlx5_3: error: IB001:") and rest[1].startswith("/etc/nccl.conf:2: error: NCCL011:")
    # severity first: a warning of an earlier family does not lead over an error
    warn = Finding("PCI004", W, "link trained at Gen3", "0000:17:00.0")
    assert nagios(rep(warn, HCA_ENTRY))[0].startswith("NCCLCTL CRITICAL - node1: 1 error, 1 warning: NCCL011")


def test_nagios_status_line_survives_hostile_messages():
    evil = Finding("NCCL001", W, "a|b\nc\rd\u2028e\x85f", "x|y", fix="z|\n")
    text, code = nagios(rep(evil))
    first = text.splitlines()[0]
    assert code == 1 and first.count("|") == 1 and first.endswith("|errors=0 warnings=1 info=0")


def test_unknown_format_is_a_programming_error():
    with pytest.raises(ValueError):
        render(rep(), "yaml")
    with pytest.raises(ValueError):
        report.render_fleet(None, "nagios", fail_on=E)
