"""Reports: the one door every command goes through to print findings (text, JSON, SARIF 2.1.0, JUnit XML, Nagios).

A command builds a :class:`Report` (its findings plus what the formats need: the subject of the summary line, the
``--fail-on`` threshold, the rules that ran, its own JSON fields) and asks :func:`render` for one format.

* **text** (:mod:`ncclctl.report.text`): one line per finding, ``LOCATION: severity: RULE: message``, then its
  fix, then one summary line ``SUBJECT: N errors, N warnings, N info (notes)``. Repeated findings are grouped
  (:mod:`ncclctl.report.group`): seven identical ROCE001 findings that differ only by interface become one line
  naming the seven interfaces. Info findings are hidden unless ``show_info``; the summary line still counts them
  and says so. This holds for text wherever it goes (a terminal, a pipe, a file): the output does not change with
  the destination, so what a script greps is what a person saw.
* **json** (:mod:`ncclctl.report.jsondoc`), **sarif**, **junit**: every finding, ungrouped, infos included.
* **nagios** (:mod:`ncclctl.report.nagios`): one status line that leads with the root cause, perfdata, then the
  grouped findings as long text.

Formatters return strings and never print. Every output is a pure function of its input: findings sorted
(:func:`ncclctl.findings.sort_key`), JSON through :func:`ncclctl.render.dumps`, XML with fixed attribute order and
no timestamps.
"""

from __future__ import annotations

from typing import Any, Iterable

from ncclctl.findings import Finding, Severity
from ncclctl.record import record

FORMATS = ("text", "json", "sarif", "junit", "nagios")


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


def configured(findings: Iterable[Finding], *, subject: str, fail_on: Severity, config: Any = None,
               host: str | None = None, only: tuple[str, ...] | None = None, **report_fields: Any) -> Report:
    """A :class:`Report` of ``findings`` after the rule configuration (severities, off, per-host ignores: ``host``
    names the host they match, else each finding's own) and ``--rule`` filtering (``only``)."""
    kept = list(findings)
    if config is not None:
        kept = config.apply(kept, host)
    if only is not None:
        kept = [f for f in kept if f.rule in only]
    return Report(findings=tuple(kept), subject=subject, fail_on=fail_on, **report_fields)


def render(report: Report, fmt: str, *, show_info: bool = False) -> str:
    """``report`` in ``fmt`` (one of :data:`FORMATS`; for nagios, :func:`ncclctl.report.nagios.nagios` also gives
    the exit code)."""
    if fmt == "text":
        from ncclctl.report.text import text

        return text(report, show_info=show_info)
    if fmt == "json":
        from ncclctl.render import dumps
        from ncclctl.report.jsondoc import json_doc

        return dumps(json_doc(report))
    if fmt == "sarif":
        from ncclctl.render import dumps
        from ncclctl.report.sarif import sarif

        return dumps(sarif(report))
    if fmt == "junit":
        from ncclctl.report.junit import junit

        return junit([report], fail_on=report.fail_on, name=report.name)
    if fmt == "nagios":
        from ncclctl.report.nagios import nagios

        return nagios(report)[0]
    raise ValueError(f"unknown report format {fmt!r}")


def render_fleet(result: Any, fmt: str, *, fail_on: Severity, fields: tuple[tuple[str, Any], ...] = (),
                 show_info: bool = False) -> str:
    """A fleet lint result (:class:`ncclctl.lint.fleet.FleetResult`) as text, json or junit: per-host findings,
    the host table and one summary line (text), one document with every host (json), a testsuite per host
    (junit)."""
    if fmt == "json":
        from ncclctl.render import dumps
        from ncclctl.report.jsondoc import fleet_json

        return dumps(fleet_json(result, fail_on=fail_on, fields=fields))
    if fmt == "junit":
        from ncclctl.report.junit import fleet_junit

        return fleet_junit(result, fail_on)
    if fmt == "text":
        from ncclctl.report.text import fleet_text

        return fleet_text(result, fail_on, show_info=show_info)
    raise ValueError(f"unknown fleet report format {fmt!r}")


__all__ = ["FORMATS", "HIDDEN_NOTE", "Report", "count_phrase", "counts", "fails", "plural", "render", "render_fleet", "summary",
           "summary_line"]
