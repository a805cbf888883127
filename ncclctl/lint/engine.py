"""Run the registered rules over a node: options and severities resolved from the config, hits to findings."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from ncclctl.findings import Finding, Severity, sort_key
from ncclctl.lint.context import Ctx
from ncclctl.lint.registry import Hit, Rule, all_rules


@dataclass(frozen=True)
class RuleConfig:
    severity: Severity | None = None
    options: tuple[tuple[str, Any], ...] = ()
    # None: the rule's default (on, or off unless strict); True/False: explicitly disabled/enabled.
    disabled: bool | None = None


@dataclass(frozen=True)
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


DEFAULT_CONFIG = Config()


def to_finding(rule: Rule, hit: Hit, forced: Severity | None, host: str) -> Finding:
    sev = forced or hit.severity or rule.severity
    return Finding(rule=rule.id, severity=sev, message=hit.message, subject=hit.subject or host,
                   line=hit.line, fix=hit.fix if hit.fix is not None else rule.doc.fix, evidence=tuple(hit.evidence))


def run(ctx: Ctx, config: Config = DEFAULT_CONFIG, *, only: tuple[str, ...] | None = None) -> list[Finding]:
    """All findings for one node, sorted. ``only``: restrict to these rule ids (tests, ``lint --rule``)."""
    out: list[Finding] = []
    host = ctx.host
    for rule in all_rules():
        if only is not None and rule.id not in only:
            continue
        if only is None and not config.enabled(rule):
            continue
        if rule.needs_expect and ctx.expect is None:
            continue
        if config.ignored(host, rule.id):
            continue
        forced = config.severity(rule)
        for hit in rule.check(ctx, config.options(rule)):
            out.append(to_finding(rule, hit, forced, host))
    out.sort(key=sort_key)
    return out
