"""Formatters: one set of findings rendered as text, JSON or SARIF 2.1.0 (never printing themselves)."""

from __future__ import annotations

from typing import Iterable

from ncclctl import JSON_SCHEMA_VERSION, __version__
from ncclctl.findings import Finding, Severity, sort_key

_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def summary(findings: Iterable[Finding]) -> dict[str, int]:
    counts = {"error": 0, "warning": 0, "info": 0}
    for f in findings:
        counts[f.severity.value] += 1
    return counts


def text(findings: list[Finding], *, header: str | None = None) -> str:
    lines = []
    if header:
        lines.append(header)
    for f in sorted(findings, key=sort_key):
        lines.append(f"{f.location()}: {f.severity.value}: {f.rule}: {f.message}")
        if f.fix:
            lines.append(f"    fix: {f.fix}")
    counts = summary(findings)
    lines.append(f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info")
    return "\n".join(lines) + "\n"


def json_doc(findings: list[Finding], **extra: object) -> dict:
    ordered = sorted(findings, key=sort_key)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        **extra,
        "summary": summary(ordered),
        "findings": [f.to_dict() for f in ordered],
    }


def sarif(findings: list[Finding], *, rules: dict[str, object] | None = None) -> dict:
    """SARIF 2.1.0 for code-scanning UIs: one run, file locations with line/column where known."""
    ordered = sorted(findings, key=sort_key)
    rule_ids = sorted({f.rule for f in ordered})
    descriptors = []
    for rid in rule_ids:
        desc: dict = {"id": rid}
        r = (rules or {}).get(rid)
        if r is not None:
            title = getattr(r, "title", None)
            fix = getattr(r, "fix", None)
            if title:
                desc["shortDescription"] = {"text": title}
            if fix:
                desc["help"] = {"text": fix}
        descriptors.append(desc)
    results = []
    for f in ordered:
        region: dict = {}
        if f.line is not None:
            region["startLine"] = f.line
            if f.column is not None:
                region["startColumn"] = f.column
        location: dict = {"physicalLocation": {"artifactLocation": {"uri": f.subject}}}
        if region:
            location["physicalLocation"]["region"] = region
        message = f.message + (f" Fix: {f.fix}" if f.fix else "")
        results.append({"ruleId": f.rule, "level": _SARIF_LEVEL[f.severity], "message": {"text": message},
                        "locations": [location]})
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "ncclctl", "version": __version__,
                                      "informationUri": "https://ncclctl.invalid/", "rules": descriptors}},
                  "results": results}],
    }


def fails(findings: Iterable[Finding], fail_on: Severity) -> bool:
    return any(f.severity.rank >= fail_on.rank for f in findings)
