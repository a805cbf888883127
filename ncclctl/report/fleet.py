"""A fleet's findings, host by host: what ``fleet lint`` (:mod:`ncclctl.lint.fleet`) hands the report door, and
what the fleet formatters (text, JSON, JUnit) read. Here, not with the runner: the report door knows findings,
not their producers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ncclctl.findings import Finding


@dataclass
class HostResult:
    host: str
    source: str
    findings: list[Finding] = field(default_factory=list)
    #: Rule ids that ran on this host (node rules, then FLT rules), for one JUnit testcase each.
    rules: list[str] = field(default_factory=list)
    facts: dict[str, Any] | None = None
    #: The load error (NcclctlError.to_dict()) when the host could not be read.
    error: dict[str, Any] | None = None

    @property
    def ok_loaded(self) -> bool:
        return self.error is None

    @property
    def silent(self) -> bool:
        """Named by the inventory, and no facts document or textfile spoke for it (``fleet lint --facts -i``)."""
        return self.error is not None and self.error.get("error") == SILENT


#: The error name of a silent host (:attr:`HostResult.silent`).
SILENT = "NoFacts"

#: The subject of a finding about the fleet as a whole, owned by no host (a fleet rule without a majority).
FLEET = "fleet"


@dataclass
class FleetResult:
    hosts: list[HostResult]
    #: Findings about the fleet as a whole (subject :data:`FLEET`): counted, reported, never any host's.
    fleet: list[Finding] = field(default_factory=list)
    #: What the run could not look at, one line each (hosts whose sources lack facts some fleet rules need).
    notes: list[str] = field(default_factory=list)

    def findings(self) -> list[Finding]:
        return [f for h in self.hosts for f in h.findings] + list(self.fleet)
