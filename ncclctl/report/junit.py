"""JUnit XML for CI: one ``<testsuite>`` per report (per host in a fleet), one ``<testcase>`` per rule.

A testcase fails when its rule found something at or above ``--fail-on`` (the exit code's threshold, so a green
JUnit report and exit 0 always agree); findings below it are listed in the testcase's ``<system-out>``. A report
without ``rules_run`` (a validator's) has a testcase per rule that fired, or one passing testcase when nothing
did. A host that could not be loaded is one testcase with an ``<error>``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ncclctl.findings import Finding, Severity, sort_key
from ncclctl.report.core import Report
from ncclctl.report.text import finding_lines

if TYPE_CHECKING:  # pragma: no cover
    from ncclctl.report.fleet import FleetResult


def junit(reports: Sequence[Report], *, fail_on: Severity, name: str = "ncclctl",
          errors: dict[int, dict[str, Any]] | None = None) -> str:
    """``errors`` maps a report's index to the load error (a dict as in ``NcclctlError.to_dict``) of that host."""
    import xml.etree.ElementTree as ET

    total = {"tests": 0, "failures": 0, "errors": 0}
    root = ET.Element("testsuites", {"name": name})
    for i, rep in enumerate(reports):
        suite_name = rep.host or rep.subject
        suite = ET.SubElement(root, "testsuite", {"name": suite_name})
        tests = failures = n_errors = 0
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", {"name": "source", "value": str(rep.source or "")})
        err = (errors or {}).get(i)
        if err:
            case = ET.SubElement(suite, "testcase", {"classname": suite_name, "name": "load"})
            msg = err.get("message", "")
            loc = ":".join(str(x) for x in (err.get("path"), err.get("line")) if x is not None)
            node = ET.SubElement(case, "error", {"type": err.get("error", "InputError"), "message": msg})
            node.text = (f"{loc}: " if loc else "") + msg + (f" (fix: {err['fix']})" if err.get("fix") else "")
            tests, n_errors = 1, 1
        else:
            by_rule: dict[str, list[Finding]] = {}
            for f in rep.findings:
                by_rule.setdefault(f.rule, []).append(f)
            ran = list(rep.rules_run or ())
            cases = ran + sorted(set(by_rule) - set(ran))
            if not cases:
                cases = [""]
            for rid in cases:
                tests += 1
                found = sorted(by_rule.get(rid, []), key=sort_key)
                case = ET.SubElement(suite, "testcase", {"classname": suite_name,
                                                         "name": _case_name(rid) if rid else rep.name})
                failing = [f for f in found if f.severity.rank >= fail_on.rank]
                if failing:
                    failures += 1
                    first = failing[0]
                    more = f" (+{len(failing) - 1} more)" if len(failing) > 1 else ""
                    node = ET.SubElement(case, "failure", {"type": first.severity.value,
                                                           "message": f"{first.location()}: {first.message}{more}"})
                    node.text = "\n".join(finding_lines(failing))
                rest = [f for f in found if f not in failing]
                if rest:
                    ET.SubElement(case, "system-out").text = "\n".join(finding_lines(rest))
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", str(n_errors))
        total["tests"] += tests
        total["failures"] += failures
        total["errors"] += n_errors
    for k, v in total.items():
        root.set(k, str(v))
    ET.indent(root, space="  ")
    from ncclctl.inputs import printable  # undecodable bytes (a --root path) as \xNN: UTF-8 as declared

    return printable('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")


def _case_name(rule_id: str) -> str:
    from ncclctl.registry import get

    r = get(rule_id)
    return f"{rule_id} {r.slug}" if r is not None else rule_id


def fleet_junit(result: FleetResult, fail_on: Severity) -> str:
    reports = [Report(findings=tuple(h.findings), subject=h.host, fail_on=fail_on, rules_run=tuple(h.rules),
                      host=h.host, source=h.source) for h in result.hosts]
    if result.fleet:
        from ncclctl.report.fleet import FLEET

        reports.append(Report(findings=tuple(result.fleet), subject=FLEET, fail_on=fail_on,
                              rules_run=tuple(dict.fromkeys(f.rule for f in result.fleet)), host=FLEET))
    errors = {i: h.error for i, h in enumerate(result.hosts) if h.error is not None}
    return junit(reports, fail_on=fail_on, name="ncclctl fleet lint", errors=errors)
