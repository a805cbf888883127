"""Text output: grep-able finding lines (grouped, infos hidden unless asked), then one summary line.

::

    LOCATION: severity: RULE: message
        fix: what to do
    SUBJECT: 1 error, 2 warnings, 20 info (50 rules run; info hidden, --show-info shows it)

Infos are hidden unless ``show_info`` on every destination (terminal, pipe, file): the text a script greps is the
text a person saw, and the summary line always says how many infos there are and that they are hidden. JSON,
SARIF and JUnit keep every finding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ncclctl.findings import Finding, Severity, sort_key
from ncclctl.report.core import HIDDEN_NOTE, Report, count_phrase, counts, fails, plural, summary_line
from ncclctl.report.group import Group, group

if TYPE_CHECKING:  # pragma: no cover
    from ncclctl.report.fleet import FleetResult


def visible(findings: Iterable[Finding], show_info: bool) -> list[Finding]:
    return [f for f in findings if show_info or f.severity is not Severity.INFO]


def group_lines(groups: Sequence[Group], prefix: str = "", *, host: str | None = None,
                evidence: bool = False) -> list[str]:
    """Two lines per group: ``LOCATION: severity: RULE: message`` and its fix. With ``host`` (fleet text), the
    location is prefixed with the host unless it is the host; with ``evidence``, the first finding's evidence
    lines follow."""
    lines = []
    for g in groups:
        loc = g.location()
        if host is not None:
            loc = host if loc == host else f"{host}: {loc}"
        f = g.first
        lines.append(f"{prefix}{loc}: {f.severity.value}: {f.rule}: {g.message()}")
        if evidence:
            lines += [f"    evidence: {e}" for e in f.evidence]
        if f.fix:
            lines.append(f"    fix: {f.fix}")
    return lines


def finding_lines(findings: Iterable[Finding], prefix: str = "") -> list[str]:
    """Every finding on its own line, ungrouped (JUnit bodies)."""
    return group_lines([Group((f,)) for f in sorted(findings, key=sort_key)], prefix)


def text(report: Report, *, show_info: bool = False, quiet: bool = False) -> str:
    """The text report; ``quiet``: the summary line alone."""
    shown = visible(sorted(report.findings, key=sort_key), show_info)
    c = counts(report.findings)
    lines = [report.header.rstrip("\n")] if report.header and not quiet else []
    if not quiet:
        lines += group_lines(group(shown), evidence=report.evidence)
    notes = list(report.notes)
    if report.rules_run is not None:
        notes.append(f"{plural(len(report.rules_run), 'rule')} run")
    if c["info"] and not show_info:
        notes.append(HIDDEN_NOTE)
    lines.append(summary_line(report.subject, c, notes))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# A fleet


def fleet_summary(result: FleetResult, fail_on: Severity) -> dict[str, Any]:
    all_f = result.findings()
    loaded = [h for h in result.hosts if h.error is None]
    return {
        "hosts": len(result.hosts),
        "clean": sum(1 for h in loaded if not h.findings),
        "with_findings": sum(1 for h in loaded if h.findings),
        "failing": sum(1 for h in loaded if fails(h.findings, fail_on)),
        "unreadable": sum(1 for h in result.hosts if h.error is not None and not h.silent),
        "silent": sum(1 for h in result.hosts if h.silent),
        **counts(all_f),
    }


def fleet_text(result: FleetResult, fail_on: Severity, *, show_info: bool = False, quiet: bool = False) -> str:
    """Findings grouped per fault across hosts: one line per fault with its hosts in hostlist form
    (``gpu[002,017-019]: mlx5_3: error: IB001: ...``) and its fix once; then the hosts per status and counts, one
    row per hostlist; then the summary line. A fault is the same rule, severity, device, message and fix."""
    from ncclctl.names import hostlist, natural_key

    if quiet:
        return _fleet_summary_line(result, fail_on, show_info) + "\n"
    lines = []
    silent = [h.host for h in result.hosts if h.silent]
    if silent:  # one line for them all, the fix once
        e = next(h.error for h in result.hosts if h.silent and h.error is not None)
        many = f" [{len(silent)} hosts]" if len(silent) > 1 else ""
        lines.append(f"{hostlist(silent)}: error: silent: {e.get('message')}{many}")
        lines.append(f"    fix: {e.get('fix')}")
    for h in result.hosts:
        if h.error is not None and not h.silent:
            e = h.error
            loc = ":".join(str(x) for x in (e.get("path"), e.get("line")) if x is not None)
            lines.append(f"{h.host}: error: cannot load {loc or h.source}: {e.get('message')}"
                         + (f" (fix: {e['fix']})" if e.get("fix") else ""))
    lines += group_lines(group(visible(sorted(result.fleet, key=sort_key), show_info)))
    lines += [f"note: {n}" for n in result.notes]
    faults: dict[tuple, tuple[Group, list[str]]] = {}
    for h in result.hosts:
        if h.error is not None:
            continue
        for g in group(visible(sorted(h.findings, key=sort_key), show_info)):
            loc = g.location()
            f = g.first
            key = (f.severity.rank, f.rule, "" if loc == h.host else loc, g.message(), f.fix or "")
            faults.setdefault(key, (g, []))[1].append(h.host)
    order = sorted(faults, key=lambda k: (-k[0], -len(faults[k][1]), natural_key(faults[k][1][0]),
                                          natural_key(k[1]), natural_key(k[2]), k[3]))
    for key in order:
        g, hosts = faults[key]
        _, rule, loc, message, fix = key
        many = f" [{len(hosts)} hosts]" if len(hosts) > 1 else ""
        lines.append(f"{hostlist(hosts)}: {loc + ': ' if loc else ''}{g.first.severity.value}: {rule}: "
                     f"{message}{many}")
        if fix:
            lines.append(f"    fix: {fix}")
    by_row: dict[tuple[str, ...], list[str]] = {}
    for h in result.hosts:
        if h.error is not None:
            by_row.setdefault(("-", "-", "-", "silent" if h.silent else "unreadable"), []).append(h.host)
        elif h.findings:
            c = counts(h.findings)
            by_row.setdefault((str(c["error"]), str(c["warning"]), str(c["info"]),
                               "FAIL" if fails(h.findings, fail_on) else "ok"), []).append(h.host)
    rows = [(hostlist(hosts), *row) for row, hosts in sorted(by_row.items(), key=lambda kv: natural_key(kv[1][0]))]
    if lines:
        lines.append("")
    if rows:
        header = ("HOSTS", "ERRORS", "WARNINGS", "INFO", "STATUS")
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]
        for r in [header] + rows:
            lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    lines.append(_fleet_summary_line(result, fail_on, show_info))
    return "\n".join(lines) + "\n"


def _fleet_summary_line(result: FleetResult, fail_on: Severity, show_info: bool) -> str:
    s = fleet_summary(result, fail_on)
    hidden = f" ({HIDDEN_NOTE})" if s["info"] and not show_info else ""
    return (f"{plural(s['hosts'], 'host')}: {s['clean']} clean, {s['with_findings']} with findings "
            f"({s['failing']} at or above {fail_on.value}), {s['unreadable']} unreadable"
            f"{', %d silent (no facts)' % s['silent'] if s['silent'] else ''}; {count_phrase(s)}{hidden}")
