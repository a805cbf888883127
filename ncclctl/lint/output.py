"""Lint output: the rule index and docs, node and fleet results as text, JSON, SARIF 2.1.0, JUnit XML, Nagios.

Formatters return strings and never print. Every output is a pure function of its input: findings are sorted
(:func:`ncclctl.findings.sort_key`), rules come in registry order, JSON goes through
:func:`ncclctl.render.dumps`, XML through the stdlib with fixed attribute order and no timestamps.
"""

from __future__ import annotations

import textwrap
from typing import Any, Iterable

from ncclctl import JSON_SCHEMA_VERSION, __version__
from ncclctl.findings import Finding, Severity, sort_key

INFO_URI = "https://ncclctl.invalid/docs/lint"
README_BEGIN = "<!-- rules:begin -->"
README_END = "<!-- rules:end -->"


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    out = {"error": 0, "warning": 0, "info": 0}
    for f in findings:
        out[f.severity.value] += 1
    return out


def fails(findings: Iterable[Finding], fail_on: Severity) -> bool:
    return any(f.severity.rank >= fail_on.rank for f in findings)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# --------------------------------------------------------------------------------------------------
# The rule index and one rule's documentation


def runs_when(rule) -> str:
    """When a rule runs: always (node lint), strict (only with extends: strict or named), --expect, fleet."""
    if rule.scope == "fleet":
        return "fleet"
    if rule.needs_expect:
        return "--expect"
    return "always" if rule.default_enabled else "strict"


def rule_doc(rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "slug": rule.slug,
        "family": rule.family,
        "scope": rule.scope,
        "severity": rule.severity.value,
        "strict_severity": rule.strict_severity.value if rule.strict_severity else None,
        "default_enabled": rule.default_enabled,
        "needs_expect": rule.needs_expect,
        "runs": runs_when(rule),
        "title": rule.title,
        "what": rule.doc.what,
        "why": rule.doc.why,
        "detect": rule.doc.detect,
        "fix": rule.doc.fix,
        "options": [{"name": o.name, "type": o.type_name, "default": list(o.default) if o.type is list else o.default,
                     "min": o.min, "max": o.max, "choices": list(o.choices) if o.choices else None, "help": o.help}
                    for o in rule.options],
    }


def rules_text(rules) -> str:
    rows = [("ID", "SLUG", "FAMILY", "SEVERITY", "RUNS", "TITLE")]
    rows += [(r.id, r.slug, r.family, r.severity.value, runs_when(r), r.title) for r in rules]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:5], widths)) + "  " + row[5] for row in rows]
    lines.append("")
    lines.append(f"{_plural(len(rules), 'rule')}. RUNS: always = every lint; strict = only with 'extends: strict' "
                 "or when named in the config; --expect = with an expected-state profile; fleet = ncclctl fleet lint.")
    lines.append("'ncclctl explain ID' prints a rule's documentation and options.")
    return "\n".join(lines) + "\n"


def rules_json(rules) -> dict[str, Any]:
    return {"schema_version": JSON_SCHEMA_VERSION, "rules": [rule_doc(r) for r in rules]}


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def rules_markdown(rules) -> str:
    """The rule index as Markdown (the README block between the rules markers)."""
    lines = [
        "## Lint rules",
        "",
        "Generated from the rule registry (`ncclctl rules --format markdown`); `ncclctl explain ID` prints a "
        "rule's full documentation. *Runs*: `always` in every `ncclctl lint`; `strict` only under "
        "`extends: strict` or when enabled in `.ncclctl.yaml`; `--expect` with an expected-state profile; "
        "`fleet` in `ncclctl fleet lint` (see [docs/lint.md](docs/lint.md)).",
        "",
        "| ID | slug | family | severity | runs | what it finds |",
        "|---|---|---|---|---|---|",
    ]
    for r in rules:
        lines.append(f"| {r.id} | `{r.slug}` | {r.family} | {r.severity.value} | {runs_when(r)} | {_md(r.title)} |")
    return "\n".join(lines) + "\n"


def _wrap(label: str, text: str, width: int = 100) -> list[str]:
    pad = " " * 9
    return textwrap.wrap(text, width=width, initial_indent=f"{label:<9}", subsequent_indent=pad) or [label]


def option_line(o) -> str:
    import json

    default = list(o.default) if o.type is list else o.default
    bits = [o.type_name, f"default {json.dumps(default)}"]
    if o.min is not None or o.max is not None:
        lo = "" if o.min is None else f"{o.min:g}"
        hi = "" if o.max is None else f"{o.max:g}"
        bits.append(f"range {lo}..{hi}")
    if o.choices:
        bits.append("one of " + ", ".join(o.choices))
    return f"{o.name} ({'; '.join(bits)}): {o.help}"


def explain_text(rule) -> str:
    when = {"always": "on by default", "strict": "off by default (on under extends: strict)",
            "--expect": "runs with --expect PROFILE", "fleet": "runs in ncclctl fleet lint"}[runs_when(rule)]
    sev = rule.severity.value
    if rule.strict_severity and rule.strict_severity != rule.severity:
        sev += f", {rule.strict_severity.value} under strict"
    lines = [f"{rule.id}  {rule.slug}  ({rule.family}; {sev}; {when})", rule.title, ""]
    for label, text in (("What:", rule.doc.what), ("Why:", rule.doc.why), ("Detect:", rule.doc.detect),
                        ("Fix:", rule.doc.fix)):
        lines += _wrap(label, text)
    if rule.options:
        lines.append("Options:")
        for o in rule.options:
            lines += textwrap.wrap(option_line(o), width=100, initial_indent="  ", subsequent_indent="      ")
    example = f"{{severity: {'error' if rule.severity != Severity.ERROR else 'warning'}}}"
    if rule.options:
        o = rule.options[0]
        example = f"{{options: {{{o.name}: {_yaml_scalar(o)}}}}}"
    lines += ["", "In .ncclctl.yaml:", "  rules:", f"    {rule.id}: {example}", f"    # or {rule.id}: off"]
    return "\n".join(lines) + "\n"


def _yaml_scalar(o) -> str:
    import json

    v = list(o.default) if o.type is list else o.default
    return json.dumps(v)


# --------------------------------------------------------------------------------------------------
# One node


def finding_lines(findings: list[Finding], prefix: str = "") -> list[str]:
    lines = []
    for f in sorted(findings, key=sort_key):
        lines.append(f"{prefix}{f.location()}: {f.severity.value}: {f.rule}: {f.message}")
        if f.fix:
            lines.append(f"    fix: {f.fix}")
    return lines


def lint_text(findings: list[Finding], *, host: str, rules_run: int) -> str:
    c = counts(findings)
    lines = finding_lines(findings)
    lines.append(f"{host}: {_plural(c['error'], 'error')}, {_plural(c['warning'], 'warning')}, {c['info']} info "
                 f"({_plural(rules_run, 'rule')} run)")
    return "\n".join(lines) + "\n"


def lint_json(findings: list[Finding], *, host: str, source: str | None, rules_run: list[str], fail_on: Severity,
              config: str | None, expect: str | None, extends: str) -> dict[str, Any]:
    ordered = sorted(findings, key=sort_key)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "host": host,
        "source": source,
        "config": config,
        "extends": extends,
        "expect": expect,
        "fail_on": fail_on.value,
        "ok": not fails(ordered, fail_on),
        "rules_run": list(rules_run),
        "summary": counts(ordered),
        "findings": [f.to_dict() for f in ordered],
    }


_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _is_file(f: Finding) -> bool:
    return f.line is not None or f.subject.startswith("/")


def sarif(findings: list[Finding], *, rules, host: str) -> dict[str, Any]:
    """SARIF 2.1.0: one run; a descriptor per rule that ran (docs from the registry); results located in a file
    (``physicalLocation`` with the line) or on a device of the host (``logicalLocations``)."""
    ordered = sorted(findings, key=sort_key)
    rules = list(rules)
    index = {r.id: i for i, r in enumerate(rules)}
    descriptors = []
    for r in rules:
        md = (f"**{_md(r.title)}**\n\n{r.doc.what}\n\n**Why it hurts NCCL.** {r.doc.why}\n\n"
              f"**Detection.** {r.doc.detect}\n\n**Fix.** {r.doc.fix}")
        descriptors.append({
            "id": r.id,
            "name": r.slug,
            "shortDescription": {"text": r.title},
            "fullDescription": {"text": r.doc.what},
            "help": {"text": f"{r.doc.why} Fix: {r.doc.fix}", "markdown": md},
            "helpUri": f"{INFO_URI}#{r.id.lower()}",
            "defaultConfiguration": {"enabled": r.default_enabled, "level": _SARIF_LEVEL[r.severity]},
            "properties": {"family": r.family, "tags": [r.family, "ncclctl"]},
        })
    results = []
    for f in ordered:
        res: dict[str, Any] = {"ruleId": f.rule, "level": _SARIF_LEVEL[f.severity],
                               "message": {"text": f.message + (f" Fix: {f.fix}" if f.fix else "")}}
        if f.rule in index:
            res["ruleIndex"] = index[f.rule]
        if _is_file(f):
            loc: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": f.subject}}}
            if f.line is not None:
                region: dict[str, Any] = {"startLine": f.line}
                if f.column is not None:
                    region["startColumn"] = f.column
                loc["physicalLocation"]["region"] = region
            loc["logicalLocations"] = [{"name": host, "kind": "host"}]
        else:
            kind = "host" if f.subject == host else "device"
            loc = {"logicalLocations": [{"name": f.subject, "fullyQualifiedName":
                                         host if kind == "host" else f"{host}/{f.subject}", "kind": kind}]}
        res["locations"] = [loc]
        if f.evidence:
            res["properties"] = {"evidence": list(f.evidence)}
        results.append(res)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "ncclctl", "version": __version__, "informationUri": INFO_URI,
                                "rules": descriptors}},
            "invocations": [{"executionSuccessful": True}],
            "results": results,
            "properties": {"host": host},
        }],
    }


def nagios(findings: list[Finding], *, host: str, rules_run: int) -> tuple[str, int]:
    """The Nagios plugin answer: status line (with perfdata), long text, and exit code 0/1/2."""
    c = counts(findings)
    perf = f"errors={c['error']} warnings={c['warning']} info={c['info']}"
    if c["error"]:
        status, code = "CRITICAL", 2
    elif c["warning"]:
        status, code = "WARNING", 1
    else:
        status, code = "OK", 0
    ordered = sorted(findings, key=sort_key)
    summary = f"{host}: {_plural(c['error'], 'error')}, {_plural(c['warning'], 'warning')}"
    if code:
        worst = [f for f in ordered if f.severity.rank >= Severity.WARNING.rank]
        first = worst[0]
        summary += f": {first.rule} {first.location()}: {first.message}"
        if len(worst) > 1:
            summary += f" (+{len(worst) - 1} more)"
    else:
        summary += f" ({_plural(rules_run, 'rule')} passed)" if not findings else f", {c['info']} info"
    lines = [_nagios_safe(f"NCCLCTL {status} - {summary}") + "|" + perf]
    lines += [_nagios_safe(f"{f.location()}: {f.severity.value}: {f.rule}: {f.message}") for f in ordered]
    return "\n".join(lines) + "\n", code


def nagios_unknown(message: str) -> str:
    return _nagios_safe(f"NCCLCTL UNKNOWN - {message}") + "\n"


def _nagios_safe(text: str) -> str:
    # '|' starts the perfdata; a newline would end the status line.
    return text.replace("|", "/").replace("\n", " ")


# --------------------------------------------------------------------------------------------------
# JUnit XML (node and fleet): one testsuite per host, one testcase per rule that ran


def junit(hosts: list[dict[str, Any]], *, fail_on: Severity, name: str = "ncclctl lint") -> str:
    """``hosts``: dicts with host, source, rules (ids that ran), findings, error (load error dict or None).

    A testcase fails when its rule found something at or above ``fail_on`` (the exit code's threshold);
    findings below it are listed in the testcase's system-out. A host that could not be loaded is one
    testcase with an error.
    """
    import xml.etree.ElementTree as ET

    total = {"tests": 0, "failures": 0, "errors": 0}
    root = ET.Element("testsuites", {"name": name})
    for h in hosts:
        suite = ET.SubElement(root, "testsuite", {"name": h["host"]})
        tests = failures = errors = 0
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", {"name": "source", "value": str(h.get("source") or "")})
        if h.get("error"):
            err = h["error"]
            case = ET.SubElement(suite, "testcase", {"classname": h["host"], "name": "load"})
            msg = err.get("message", "")
            loc = ":".join(str(x) for x in (err.get("path"), err.get("line")) if x is not None)
            node = ET.SubElement(case, "error", {"type": err.get("error", "InputError"), "message": msg})
            node.text = (f"{loc}: " if loc else "") + msg + (f" (fix: {err['fix']})" if err.get("fix") else "")
            tests, errors = 1, 1
        else:
            by_rule: dict[str, list[Finding]] = {}
            for f in h["findings"]:
                by_rule.setdefault(f.rule, []).append(f)
            rules_run = list(h["rules"]) + sorted(set(by_rule) - set(h["rules"]))
            for rid in rules_run:
                tests += 1
                found = sorted(by_rule.get(rid, []), key=sort_key)
                case = ET.SubElement(suite, "testcase", {"classname": h["host"], "name": _case_name(rid)})
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
        suite.set("errors", str(errors))
        total["tests"] += tests
        total["failures"] += failures
        total["errors"] += errors
    for k, v in total.items():
        root.set(k, str(v))
    ET.indent(root, space="  ")
    from ncclctl.probe.hostroot import printable  # undecodable bytes (a --root path) as \xNN: UTF-8 as declared

    return printable('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")


_SLUGS: dict[str, str] = {}


def _case_name(rid: str) -> str:
    if not _SLUGS:
        from ncclctl.lint.registry import all_rules

        _SLUGS.update({r.id: r.slug for r in all_rules()})
    slug = _SLUGS.get(rid)
    return f"{rid} {slug}" if slug else rid


# --------------------------------------------------------------------------------------------------
# A fleet


def fleet_summary(result, fail_on: Severity) -> dict[str, Any]:
    all_f = result.findings()
    c = counts(all_f)
    loaded = [h for h in result.hosts if h.error is None]
    return {
        "hosts": len(result.hosts),
        "clean": sum(1 for h in loaded if not h.findings),
        "with_findings": sum(1 for h in loaded if h.findings),
        "failing": sum(1 for h in loaded if fails(h.findings, fail_on)),
        "unreadable": len(result.hosts) - len(loaded),
        **c,
    }


def fleet_text(result, fail_on: Severity) -> str:
    lines = []
    for h in result.hosts:
        if h.error is not None:
            e = h.error
            loc = ":".join(str(x) for x in (e.get("path"), e.get("line")) if x is not None)
            lines.append(f"{h.host}: error: cannot load {loc or h.source}: {e.get('message')}"
                         + (f" (fix: {e['fix']})" if e.get("fix") else ""))
            continue
        for f in sorted(h.findings, key=sort_key):
            loc = f.location()
            where = h.host if loc == h.host else f"{h.host}: {loc}"
            lines.append(f"{where}: {f.severity.value}: {f.rule}: {f.message}")
            if f.fix:
                lines.append(f"    fix: {f.fix}")
    s = fleet_summary(result, fail_on)
    rows = []
    for h in result.hosts:
        if h.error is not None:
            rows.append((h.host, "-", "-", "-", "unreadable"))
        elif h.findings:
            c = counts(h.findings)
            rows.append((h.host, str(c["error"]), str(c["warning"]), str(c["info"]),
                         "FAIL" if fails(h.findings, fail_on) else "ok"))
    if lines:
        lines.append("")
    if rows:
        header = ("HOST", "ERRORS", "WARNINGS", "INFO", "STATUS")
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]
        for r in [header] + rows:
            lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    lines.append(f"{_plural(s['hosts'], 'host')}: {s['clean']} clean, {s['with_findings']} with findings "
                 f"({s['failing']} at or above {fail_on.value}), {s['unreadable']} unreadable; "
                 f"{_plural(s['error'], 'error')}, {_plural(s['warning'], 'warning')}, {s['info']} info")
    return "\n".join(lines) + "\n"


def fleet_json(result, *, fail_on: Severity, config: str | None, extends: str, expect: str | None) -> dict[str, Any]:
    s = fleet_summary(result, fail_on)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "fail_on": fail_on.value,
        "config": config,
        "extends": extends,
        "expect": expect,
        "ok": s["failing"] == 0 and s["unreadable"] == 0,
        "summary": s,
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


def fleet_junit(result, fail_on: Severity) -> str:
    return junit([{"host": h.host, "source": h.source, "rules": h.rules, "findings": h.findings, "error": h.error}
                  for h in result.hosts], fail_on=fail_on, name="ncclctl fleet lint")


# --------------------------------------------------------------------------------------------------
# The README block


def readme_block(rules) -> str:
    return f"{README_BEGIN}\n{rules_markdown(rules)}{README_END}"


def replace_readme_block(text: str, rules) -> str:
    """``text`` (README.md) with the rules block replaced, or appended when it has none."""
    block = readme_block(rules)
    if README_BEGIN in text and README_END in text:
        head, _, rest = text.partition(README_BEGIN)
        _, _, tail = rest.partition(README_END)
        return head + block + tail
    return text.rstrip("\n") + "\n\n" + block + "\n"
