"""JSON documents: every finding, ungrouped, infos included.

One shape for every command: ``schema_version``, the command's own fields, ``fail_on``, ``ok`` (no finding at or
above ``fail_on``), ``rules_run`` (when the command runs a rule set), ``summary`` (counts per severity) and
``findings`` (sorted; each ``rule``, ``severity``, ``message``, ``subject``, ``line``, ``column``, ``fix``,
``evidence``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ncclctl import JSON_SCHEMA_VERSION
from ncclctl.findings import Severity, sort_key
from ncclctl.report.core import Report, counts, fails

if TYPE_CHECKING:  # pragma: no cover
    from ncclctl.report.fleet import FleetResult


def json_doc(report: Report) -> dict[str, Any]:
    ordered = sorted(report.findings, key=sort_key)
    doc: dict[str, Any] = {"schema_version": JSON_SCHEMA_VERSION, **dict(report.fields),
                           "fail_on": report.fail_on.value, "ok": report.ok}
    if report.rules_run is not None:
        doc["rules_run"] = list(report.rules_run)
    doc["summary"] = counts(ordered)
    doc["findings"] = [f.to_dict() for f in ordered]
    return doc


def fleet_json(result: FleetResult, *, fail_on: Severity, fields: tuple[tuple[str, Any], ...] = ()) -> dict[str, Any]:
    from ncclctl.report.text import fleet_summary

    s = fleet_summary(result, fail_on)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "fail_on": fail_on.value,
        **dict(fields),
        "ok": s["failing"] == 0 and s["unreadable"] == 0 and s["silent"] == 0 and not fails(result.fleet, fail_on),
        "summary": s,
        "fleet_findings": [f.to_dict() for f in sorted(result.fleet, key=sort_key)],
        "notes": list(result.notes),
        "hosts": [{
            "host": h.host,
            "source": h.source,
            "ok": h.error is None and not fails(h.findings, fail_on),
            "summary": counts(h.findings),
            "rules_run": list(h.rules),
            "findings": [f.to_dict() for f in sorted(h.findings, key=sort_key)],
            "error": h.error,
        } for h in result.hosts],
    }
