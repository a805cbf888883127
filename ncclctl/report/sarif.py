"""SARIF 2.1.0 for code-scanning UIs: one run, a rule descriptor per rule (documentation from the registry),
every finding as a result located in a file (``physicalLocation`` with line and column) or on a device of the
host (``logicalLocations``)."""

from __future__ import annotations

from typing import Any

from ncclctl import __version__
from ncclctl.findings import Finding, Severity, sort_key
from ncclctl.report.core import Report

LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def docs_base() -> str | None:
    """Where the project's documentation is served (``NCCLCTL_DOCS_URL``, e.g. a site's own Git web view of the
    ncclctl source: ``https://git.example.org/ncclctl/blob/main``), without a trailing slash; None when unset.
    ncclctl has no public home of its own, so by default a SARIF descriptor carries its full documentation
    (``help``) and no link rather than a link to a made-up address."""
    import os

    base = os.environ.get("NCCLCTL_DOCS_URL", "").strip().rstrip("/")
    return base if base.startswith(("https://", "http://", "file://")) else None


def _descriptor(rule_id: str, base: str | None) -> dict[str, Any]:
    from ncclctl.registry import get
    from ncclctl.registry.docs import doc_page, md

    r = get(rule_id)
    if r is None:  # a finding of a rule this version does not know (never from ncclctl's own checks)
        return {"id": rule_id}
    text = (f"**{md(r.title)}**\n\n{r.doc.what}\n\n**Why it hurts NCCL.** {r.doc.why}\n\n"
            f"**Detection.** {r.doc.detect}\n\n**Fix.** {r.doc.fix}")
    page = doc_page(r)
    text += f"\n\n`ncclctl explain {r.id}` prints this; the rule's family is documented in {page}."
    desc: dict[str, Any] = {
        "id": r.id,
        "name": r.slug,
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": r.doc.what},
        "help": {"text": f"{r.doc.why} Fix: {r.doc.fix}", "markdown": text},
    }
    if base is not None:
        desc["helpUri"] = f"{base}/{page}"
    desc["defaultConfiguration"] = {"enabled": r.default_enabled, "level": LEVEL[r.severity]}
    desc["properties"] = {"family": r.family, "scope": r.scope, "tags": [r.family, r.scope, "ncclctl"]}
    return desc


def _in_file(f: Finding, host: str | None) -> bool:
    # Without a host every subject is a file (validators); with one, a subject is a file when it has a line or
    # is an absolute path, else a device of the host.
    return host is None or f.line is not None or f.subject.startswith("/")


def _run(ids: list[str], results: list[dict[str, Any]]) -> dict[str, Any]:
    base = docs_base()
    driver: dict[str, Any] = {"name": "ncclctl", "version": __version__}
    if base is not None:
        driver["informationUri"] = f"{base}/README.md"
    driver["rules"] = [_descriptor(rid, base) for rid in ids]
    return {"tool": {"driver": driver}, "invocations": [{"executionSuccessful": True}], "results": results}


def _doc(run: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}


def sarif(report: Report) -> dict[str, Any]:
    ordered = sorted(report.findings, key=sort_key)
    host = report.host
    ids = list(report.rules_run) if report.rules_run is not None else []
    ids += sorted({f.rule for f in ordered} - set(ids))
    index = {rid: i for i, rid in enumerate(ids)}
    run = _run(ids, _results(ordered, host, index))
    if host is not None:
        run["properties"] = {"host": host}
    return _doc(run)


def _results(ordered: list[Finding], host: str | None, index: dict[str, int]) -> list[dict[str, Any]]:
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
    return results


def fleet_sarif(result: Any, fail_on: Severity) -> dict[str, Any]:
    """A fleet lint result (:class:`ncclctl.report.fleet.FleetResult`) as one SARIF run: every host's findings
    located on that host (a ``host`` logical location, devices as ``HOST/DEVICE``), the fleet's own findings on
    ``fleet``, a host that could not be read as a failed ``invocation`` notification. Descriptors: the rules that
    ran on some host or fired."""
    from ncclctl.report.fleet import FLEET

    ids: list[str] = list(dict.fromkeys(r for h in result.hosts for r in h.rules))
    every = [f for h in result.hosts for f in h.findings] + list(result.fleet)
    ids += sorted({f.rule for f in every} - set(ids))
    index = {rid: i for i, rid in enumerate(ids)}
    results: list[dict[str, Any]] = []
    for h in result.hosts:
        results += _results(sorted(h.findings, key=sort_key), h.host, index)
    results += _results(sorted(result.fleet, key=sort_key), FLEET, index)
    run = _run(ids, results)
    unread = [h for h in result.hosts if h.error is not None]
    if unread:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": [
            {"level": "error", "message": {"text": f"{h.host}: cannot load {h.source}: {h.error.get('message')}"}}
            for h in unread]}]
    run["properties"] = {"hosts": [h.host for h in result.hosts], "failOn": fail_on.value}
    return _doc(run)
