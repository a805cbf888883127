"""What every report format shares: :class:`Report` (one run\'s findings and what the formats need), the counts per
severity, the exit threshold and the one summary line. :mod:`ncclctl.report` is the door; the formatters import
this module, never the door."""

from __future__ import annotations

from typing import Any, Iterable

from ncclctl.findings import Finding, Severity
from ncclctl.record import record


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Findings per severity: ``{"error": n, "warning": n, "info": n}``."""
    out = {"error": 0, "warning": 0, "info": 0}
    for f in findings:
        out[f.severity.value] += 1
    return out


# The name `ncclctl facts` (and older callers) use for the same counts.
summary = counts


def fails(findings: Iterable[Finding], fail_on: Severity) -> bool:
    """True when a finding reaches ``fail_on`` (the exit code's threshold)."""
    return any(f.severity.rank >= fail_on.rank for f in findings)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def count_phrase(c: dict[str, int]) -> str:
    """``2 errors, 1 warning, 20 info``: how every summary line states the counts."""
    return f"{plural(c['error'], 'error')}, {plural(c['warning'], 'warning')}, {c['info']} info"


HIDDEN_NOTE = "info hidden, --show-info shows it"


def summary_line(subject: str, c: dict[str, int], notes: Iterable[str] = ()) -> str:
    """The one summary line format: ``SUBJECT: 2 errors, 1 warning, 20 info (note; note)``."""
    tail = "; ".join(n for n in notes if n)
    return f"{subject}: {count_phrase(c)}" + (f" ({tail})" if tail else "")


@record
class Report:
    """One run's findings and what every format needs to render them.

    ``subject`` is what the summary line names (a host, a file, a fabric). ``rules_run`` are the ids of the rules
    that ran when the command runs a rule set (lint): the text summary counts them, JSON lists them, SARIF has a
    descriptor and JUnit a testcase for each; ``None`` for validators, whose SARIF descriptors and JUnit testcases
    are the rules that fired. ``fields`` are the command's own JSON fields, in order, after ``schema_version``.
    ``host`` is the host the findings are about (lint): subjects that are not files are its devices.
    """

    findings: tuple[Finding, ...]
    subject: str
    fail_on: Severity = Severity.ERROR
    rules_run: tuple[str, ...] | None = None
    fields: tuple[tuple[str, Any], ...] = ()
    header: str = ""
    host: str | None = None
    source: str | None = None
    name: str = "ncclctl"
    #: Sentences the summary line carries before its counts' notes (``no GPUs and no RDMA NICs: ...``).
    notes: tuple[str, ...] = ()
    #: Text output: print each finding's evidence under it (log check: the log lines a finding rests on).
    evidence: bool = False

    @property
    def ok(self) -> bool:
        return not fails(self.findings, self.fail_on)

    def counts(self) -> dict[str, int]:
        return counts(self.findings)
