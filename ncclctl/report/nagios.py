"""The Nagios plugin answer (``ncclctl lint --nagios``, NHC, Slurm prologs and HealthCheckProgram).

One status line, ``NCCLCTL STATUS - HOST: N errors, N warnings: RULE LOCATION: message (+N more)|perfdata``, then
the findings as long text. The status line leads with the root cause: among the worst findings, the earliest
rule family in the registry's order (hardware and links before the settings that name them), so a down port
(IB001) comes before the NCCL_IB_HCA entry that names it (NCCL011). Repeated findings are grouped; nothing in a
message can break the line or the perfdata (``|`` and newlines are replaced).
"""

from __future__ import annotations

from ncclctl.findings import Finding, Severity
from ncclctl.report.core import Report, counts, plural
from ncclctl.report.group import group
from ncclctl.report.text import group_lines


def cause_key(f: Finding) -> tuple:
    """Worst first, then root cause first (registry family order), then the usual order."""
    from ncclctl.registry import family_of, family_order

    family = family_of(f.rule)
    return (-f.severity.rank, family_order(family) if family else 1 << 10, f.subject, f.line or 0, f.column or 0,
            f.rule, f.message)


def nagios(report: Report) -> tuple[str, int]:
    c = counts(report.findings)
    perf = f"errors={c['error']} warnings={c['warning']} info={c['info']}"
    if c["error"]:
        status, code = "CRITICAL", 2
    elif c["warning"]:
        status, code = "WARNING", 1
    else:
        status, code = "OK", 0
    groups = group(sorted(report.findings, key=cause_key))
    summary = f"{report.subject}: {plural(c['error'], 'error')}, {plural(c['warning'], 'warning')}"
    if code:
        worst = [g for g in groups if g.first.severity.rank >= Severity.WARNING.rank]
        first = worst[0]
        more = sum(len(g) for g in worst[1:])
        summary += f": {first.first.rule} {first.location()}: {first.message()}"
        if more:
            summary += f" (+{more} more)"
    elif report.findings:
        summary += f", {c['info']} info"
    else:
        ran = len(report.rules_run or ())
        summary += f" ({plural(ran, 'rule')} passed)"
    lines = [_safe(f"NCCLCTL {status} - {summary}") + "|" + perf]
    lines += [_safe(line) for line in group_lines(groups) if not line.startswith("    fix: ")]
    return "\n".join(lines) + "\n", code


def nagios_unknown(message: str) -> str:
    return _safe(f"NCCLCTL UNKNOWN - {message}") + "\n"


# Everything a line reader (Python's splitlines, NHC, syslog) may take for the end of a line.
_BREAKS = str.maketrans({c: " " for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


def _safe(text: str) -> str:
    # '|' starts the perfdata; a line break would end the status line.
    return text.replace("|", "/").translate(_BREAKS)
