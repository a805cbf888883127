"""Findings: the frozen values every check (topology validation, lint, fabric) produces.

Checks yield findings; :mod:`ncclctl.report` turns them into text, JSON, SARIF, JUnit or Nagios output. A finding never carries
formatting. ``subject`` names what the finding is about: a host, a device (``mlx5_0``, ``0000:19:00.0``,
``GPU3``) or a file; ``line``/``column`` locate it in a file when there is one.
"""

from __future__ import annotations

import enum
from dataclasses import field

from ncclctl.record import record


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@record
class Finding:
    """One problem a rule found: rule id, severity, message, what it is about, where, the fix and the evidence."""
    rule: str
    severity: Severity
    message: str
    subject: str
    line: int | None = None
    column: int | None = None
    fix: str | None = None
    evidence: tuple[str, ...] = field(default=())
    # The host the finding is about when its subject does not say it (a fabric finding's subject is the fabric
    # file): what per-host config ignores match. Not part of the JSON (the message names the host).
    host: str | None = None
    # A finding that covers several elements of one file (one finding per fault): every element it covers, as
    # (line, column, what the element is), the first one at ``line``/``column``. In the JSON as ``locations``.
    locations: tuple[tuple[int, int | None, str], ...] = field(default=())

    def location(self) -> str:
        loc = self.subject
        if self.line is not None:
            loc += f":{self.line}"
            if self.column is not None:
                loc += f":{self.column}"
        return loc

    def to_dict(self) -> dict:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
            "subject": self.subject,
            "line": self.line,
            "column": self.column,
            "fix": self.fix,
            "evidence": list(self.evidence),
            **({"locations": [{"line": ln, "column": col, "element": what} for ln, col, what in self.locations]}
               if self.locations else {}),
        }


def worst(findings: list[Finding] | tuple[Finding, ...]) -> Severity | None:
    if not findings:
        return None
    return max((f.severity for f in findings), key=lambda s: s.rank)


def sort_key(f: Finding) -> tuple:
    """Worst first, then subjects in natural order (mlx5_2 before mlx5_10, GPU2 before GPU10), lines, rules."""
    from ncclctl.names import natural_key

    return (-f.severity.rank, natural_key(f.subject), f.line or 0, f.column or 0, natural_key(f.rule), f.message)
