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
# The door's own types and counting, in their own module so that the formatters below, which the door imports,
# import them without importing the door.
from ncclctl.report.core import (HIDDEN_NOTE, Report, count_phrase, counts, fails, plural, summary,  # noqa: F401
                                 summary_line)

FORMATS = ("text", "json", "sarif", "junit", "nagios")


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


def render(report: Report, fmt: str, *, show_info: bool = False, quiet: bool = False) -> str:
    """``report`` in ``fmt`` (one of :data:`FORMATS`; for nagios, :func:`ncclctl.report.nagios.nagios` also gives
    the exit code). ``quiet``: text is the summary line only (machine formats ignore it)."""
    if fmt == "text":
        from ncclctl.report.text import text

        return text(report, show_info=show_info, quiet=quiet)
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
                 show_info: bool = False, quiet: bool = False) -> str:
    """A fleet lint result (:class:`ncclctl.report.fleet.FleetResult`) as text, json, sarif or junit: faults with
    their hosts, the host table and one summary line (text; ``quiet``: the summary line only), one document with
    every host (json), one SARIF run whose results name their host (sarif), a testsuite per host (junit)."""
    if fmt == "sarif":
        from ncclctl.render import dumps
        from ncclctl.report.sarif import fleet_sarif

        return dumps(fleet_sarif(result, fail_on))
    if fmt == "json":
        from ncclctl.render import dumps
        from ncclctl.report.jsondoc import fleet_json

        return dumps(fleet_json(result, fail_on=fail_on, fields=fields))
    if fmt == "junit":
        from ncclctl.report.junit import fleet_junit

        return fleet_junit(result, fail_on)
    if fmt == "text":
        from ncclctl.report.text import fleet_text

        return fleet_text(result, fail_on, show_info=show_info, quiet=quiet)
    raise ValueError(f"unknown fleet report format {fmt!r}")


__all__ = ["FORMATS", "HIDDEN_NOTE", "Report", "count_phrase", "counts", "fails", "plural", "render", "render_fleet", "summary",
           "summary_line"]
