"""Findings: the frozen values every check (topology validation, lint, fabric) produces.

Checks yield findings; formatters turn them into text, JSON, SARIF or JUnit. A finding never carries
formatting. ``subject`` names what the finding is about: a host, a device (``mlx5_0``, ``0000:19:00.0``,
``GPU3``) or a file; ``line``/``column`` locate it in a file when there is one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@dataclass(frozen=True)
class TableRule:
    """A check of a fixed-table family (topology/graph XML, fabric): its id, one severity, a title and the fix.
    The node lint rules carry more (options, documentation) and live in :mod:`ncclctl.lint.registry`."""

    id: str
    severity: Severity
    title: str
    fix: str


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    message: str
    subject: str
    line: int | None = None
    column: int | None = None
    fix: str | None = None
    evidence: tuple[str, ...] = field(default=())

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
        }


def worst(findings: list[Finding] | tuple[Finding, ...]) -> Severity | None:
    if not findings:
        return None
    return max((f.severity for f in findings), key=lambda s: s.rank)


def sort_key(f: Finding) -> tuple:
    return (-f.severity.rank, f.subject, f.line or 0, f.column or 0, f.rule, f.message)
