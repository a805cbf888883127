"""SARIF 2.1.0 for code-scanning UIs: one run, a rule descriptor per rule (documentation from the registry),
every finding as a result located in a file (``physicalLocation`` with line and column) or on a device of the
host (``logicalLocations``)."""

from __future__ import annotations

from typing import Any

from ncclctl import __version__
from ncclctl.findings import Finding, Severity, sort_key
from ncclctl.report.core import Report

INFO_URI = "https://ncclctl.invalid/docs/rules"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _descriptor(rule_id: str) -> dict[str, Any]:
    from ncclctl.registry import get
    from ncclctl.registry.docs import md

    r = get(rule_id)
    if r is None:  # a finding of a rule this version does not know (never from ncclctl's own checks)
        return {"id": rule_id}
    text = (f"**{md(r.title)}**\n\n{r.doc.what}\n\n**Why it hurts NCCL.** {r.doc.why}\n\n"
            f"**Detection.** {r.doc.detect}\n\n**Fix.** {r.doc.fix}")
    return {
        "id": r.id,
        "name": r.slug,
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.doc.what},
        "help": {"text": f"{r.doc.why} Fix: {r.doc.fix}", "markdown": text},
        "helpUri": f"{INFO_URI}#{r.id.lower()}",
        "defaultConfiguration": {"enabled": r.default_enabled, "level": LEVEL[r.severity]},
        "properties": {"family": r.family, "scope": r.scope, "tags": [r.family, r.scope, "ncclctl"]},
    }


def _in_file(f: Finding, host: str | None) -> bool:
    # Without a host every subject is a file (validators); with one, a subject is a file when it has a line or
    # is an absolute path, else a device of the host.
    return host is None or f.line is not None or f.subject.startswith("/")


def sarif(report: Report) -> dict[str, Any]:
    ordered = sorted(report.findings, key=sort_key)
    host = report.host
    ids = list(report.rules_run) if report.rules_run is not None else []
    ids += sorted({f.rule for f in ordered} - set(ids))
    index = {rid: i for i, rid in enumerate(ids)}
    results = []
    for f in ordered:
        res: dict[str, Any] = {"ruleId": f.rule, "ruleIndex": index[f.rule], "level": LEVEL[f.severity],
                               "message": {"text": f.message + (f" Fix: {f.fix}" if f.fix else "")}}
        if _in_file(f, host):
            loc: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": f.subject}}}
            if f.line is not None:
                region: dict[str, Any] = {"startLine": f.line}
                if f.column is not None:
                    region["startColumn"] = f.column
                loc["physicalLocation"]["region"] = region
            if host is not None:
                loc["logicalLocations"] = [{"name": host, "kind": "host"}]
        else:
            kind = "host" if f.subject == host else "device"
            loc = {"logicalLocations": [{"name": f.subject, "fullyQualifiedName":
                                         host if kind == "host" else f"{host}/{f.subject}", "kind": kind}]}
        res["locations"] = [loc]
        if f.locations and _in_file(f, host):  # one finding for a fault at several elements: each of them
            res["relatedLocations"] = [
                {"id": i, "message": {"text": what},
                 "physicalLocation": {"artifactLocation": {"uri": f.subject},
                                      "region": {"startLine": line, **({"startColumn": col} if col else {})}}}
                for i, (line, col, what) in enumerate(f.locations)]
        if f.evidence:
            res["properties"] = {"evidence": list(f.evidence)}
        results.append(res)
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "ncclctl", "version": __version__, "informationUri": INFO_URI,
                            "rules": [_descriptor(rid) for rid in ids]}},
        "invocations": [{"executionSuccessful": True}],
        "results": results,
    }
    if host is not None:
        run["properties"] = {"host": host}
    return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}
