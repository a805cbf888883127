"""Run the registered rules over a node: options and severities resolved from the config, hits to findings.

The engine stamps what a check does not know: the rule id, the effective severity (config override, else what
``extends: strict`` says, else the hit's own, else the rule default), the default fix text, and the host as the
subject when a hit names none. A check that raises does not abort the run: the engine turns the exception into
an error finding of that rule (set ``NCCLCTL_DEBUG=1`` to get the traceback instead).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from ncclctl.findings import Finding, Severity, sort_key
from ncclctl.registry import Hit, Rule, all_rules
from ncclctl.record import record

if TYPE_CHECKING:  # the node context pulls the node model: imported where a lint runs, not by every config load
    from ncclctl.lint.context import Ctx


@record
class RuleConfig:
    severity: Severity | None = None
    options: tuple[tuple[str, Any], ...] = ()
    # None: the rule's default (on, or off unless strict); True/False: explicitly disabled/enabled.
    disabled: bool | None = None


@record
class Config:
    """A resolved ``.ncclctl.yaml``. ``rules`` maps rule ids to overrides; ``ignores`` are (host glob, rule ids)."""

    extends: str = "default"
    rules: tuple[tuple[str, RuleConfig], ...] = ()
    ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    path: str | None = None

    def rule_config(self, rule_id: str) -> RuleConfig:
        for rid, rc in self.rules:
            if rid == rule_id:
                return rc
        return RuleConfig()

    def enabled(self, rule: Rule) -> bool:
        rc = self.rule_config(rule.id)
        if rc.disabled is not None:
            return not rc.disabled
        return rule.default_enabled or self.extends == "strict"

    def severity(self, rule: Rule) -> Severity | None:
        """The forced severity for this rule (config override, else strict's), or None (hit/rule default)."""
        rc = self.rule_config(rule.id)
        if rc.severity is not None:
            return rc.severity
        if self.extends == "strict" and rule.strict_severity is not None:
            return rule.strict_severity
        return None

    def options(self, rule: Rule) -> dict[str, Any]:
        opts = rule.defaults()
        opts.update(dict(self.rule_config(rule.id).options))
        return opts

    def ignored(self, host: str, rule_id: str) -> bool:
        return any(fnmatch.fnmatchcase(host, glob) and rule_id in ids for glob, ids in self.ignores)

    def apply(self, findings: Iterable[Finding], host: str | None = None) -> list[Finding]:
        """The config on findings that checks outside this engine created by rule id (file and fabric rules, see
        :mod:`ncclctl.registry`): a rule set ``off`` is dropped, a per-host ``ignore`` drops the rule for the
        finding's host (``Finding.host``, else ``host``), a configured severity replaces the finding's own.
        Table rules are on by default and have no strict severity, so nothing else applies."""
        out = []
        for f in findings:
            rc = self.rule_config(f.rule)
            if rc.disabled:
                continue
            who = f.host or host
            if who is not None and self.ignored(who, f.rule):
                continue
            out.append(replace(f, severity=rc.severity) if rc.severity not in (None, f.severity) else f)
        return out


DEFAULT_CONFIG = Config()


def to_finding(rule: Rule, hit: Hit, forced: Severity | None, host: str) -> Finding:
    sev = forced or hit.severity or rule.severity
    return Finding(rule=rule.id, severity=sev, message=hit.message, subject=hit.subject or host,
                   line=hit.line, fix=hit.fix if hit.fix is not None else rule.doc.fix, evidence=tuple(hit.evidence))


def selected(config: Config, *, scope: str = "node", only: tuple[str, ...] | None = None,
             has_expect: bool = False, host: str | None = None) -> list[Rule]:
    """The rules a run executes, in registry order: ``only`` (explicit ids) wins over enabled/disabled;
    rules that need an expected-state profile run only with one; per-host ignores drop rules for ``host``."""
    out = []
    for rule in all_rules():
        if rule.scope != scope:
            continue
        if only is not None:
            if rule.id not in only:
                continue
        elif not config.enabled(rule):
            continue
        if rule.needs_expect and not has_expect:
            continue
        if host is not None and config.ignored(host, rule.id):
            continue
        out.append(rule)
    return out


def apply(rule: Rule, hits: Iterable[Hit], config: Config, host: str) -> list[Finding]:
    forced = config.severity(rule)
    return [to_finding(rule, hit, forced, host) for hit in hits]


def crashed(rule: Rule, exc: BaseException, host: str) -> Finding:
    return Finding(rule=rule.id, severity=Severity.ERROR, subject=host,
                   message=f"the check crashed ({type(exc).__name__}: {exc}); its result is unknown",
                   fix="this is a bug in ncclctl: rerun with NCCLCTL_DEBUG=1 for a traceback and report it")


def run_each(rules: Iterable[Rule], ctx: Any, config: Config, host: str,
             crash_hosts: Iterable[str] | None = None) -> Iterator[tuple[Rule, list[Finding]]]:
    """The one rule loop, node and fleet scope alike: each rule's check on ``ctx`` (a node's :class:`Ctx` or the
    fleet's facts) with its configured options, turned into findings. A check that raises does not hide the others'
    results: it gives an error finding of that rule for ``host`` (or for each of ``crash_hosts``), unless
    ``NCCLCTL_DEBUG`` asks for the traceback."""
    debug = bool(os.environ.get("NCCLCTL_DEBUG"))
    for rule in rules:
        try:
            found = apply(rule, rule.check(ctx, config.options(rule)), config, host)
        except Exception as exc:
            if debug:
                raise
            found = [crashed(rule, exc, h) for h in (crash_hosts if crash_hosts is not None else (host,))]
        yield rule, found


def run(ctx: Ctx, config: Config = DEFAULT_CONFIG, *, only: tuple[str, ...] | None = None) -> list[Finding]:
    """All findings for one node, sorted. ``only``: restrict to these rule ids (tests, ``lint --rule``)."""
    host = ctx.host
    rules = selected(config, only=only, has_expect=ctx.expect is not None, host=host)
    out = [f for _, found in run_each(rules, ctx, config, host) for f in found]
    out.sort(key=sort_key)
    return out


#: Rule families that look at GPUs, NICs and the PCIe paths between them (the others check settings and profiles).
HARDWARE_FAMILIES = frozenset({"pcie", "gpudirect", "gpu", "infiniband", "roce"})


def lint_report(node: Any, config: Config, *, source: str | None, only: tuple[str, ...] | None = None,
                profile: dict | None = None, fail_on: str = "error", config_path: str | None = None,
                expect_path: str | None = None) -> Any:
    """``ncclctl lint``: run the node rules on ``node`` and return one :class:`~ncclctl.report.Report` (the
    findings, the rules that ran, the fields the JSON document names)."""
    from ncclctl.report import Report

    from ncclctl.lint.context import Ctx

    ctx = Ctx(node=node, expect=profile, source=source)
    findings = run(ctx, config, only=only)
    ran = selected(config, only=only, has_expect=profile is not None, host=node.hostname)
    notes: tuple[str, ...] = ()
    if not node.gpus and not node.nics:
        # A clean result here is not a clean bill of health: the hardware rules had nothing to look at.
        idle = [r for r in ran if r.family in HARDWARE_FAMILIES]
        if idle:
            notes = (f"no GPUs and no RDMA NICs: {len(idle)} of {len(ran)} rules had nothing to check",)
    return Report(findings=tuple(findings), subject=node.hostname, fail_on=Severity(fail_on), notes=notes,
                  rules_run=tuple(r.id for r in ran), host=node.hostname, source=source, name="ncclctl lint",
                  fields=(("host", node.hostname), ("source", source), ("config", config_path),
                          ("extends", config.extends), ("expect", expect_path)))
