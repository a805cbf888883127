"""Meta-tests over the whole rule registry: ids, slugs, families, docs, severities, options, modules, explain."""

from __future__ import annotations

import importlib
import json
import re

import pytest

from ncclctl.findings import Severity
from ncclctl.lint import output
from ncclctl.lint.registry import (FAMILIES, FAMILY_MODULES, FLEET_FAMILIES, OPTION_TYPES, all_rules, get,
                                   missing_modules, suggest)

from conftest import run_cli

RULES = all_rules()
IDS = [r.id for r in RULES]


def test_every_family_module_exists_and_imports():
    assert not missing_modules(), f"FAMILY_MODULES lists modules that do not exist: {missing_modules()}"
    for name in FAMILY_MODULES:
        importlib.import_module(name)


def test_every_family_has_rules():
    have = {r.family for r in RULES}
    missing = sorted(set(FAMILIES.values()) - have)
    assert not missing, f"families without rules: {missing}"


def test_ids_and_slugs_are_unique():
    assert len(set(IDS)) == len(IDS)
    slugs = [r.slug for r in RULES]
    assert len(set(slugs)) == len(slugs)
    assert not set(IDS) & {s.upper() for s in slugs}


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_rule_metadata(rule):
    prefix = re.match(r"[A-Z]+", rule.id).group(0)
    assert re.fullmatch(r"[A-Z]+\d{3}", rule.id)
    assert FAMILIES[prefix] == rule.family, f"{rule.id}: id prefix {prefix} is family {FAMILIES[prefix]}"
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)+", rule.slug), rule.slug
    assert isinstance(rule.severity, Severity)
    assert rule.strict_severity is None or isinstance(rule.strict_severity, Severity)
    assert rule.title and rule.title == rule.title.strip() and not rule.title.endswith("."), rule.title
    parts = {"what": rule.doc.what, "why": rule.doc.why, "detect": rule.doc.detect, "fix": rule.doc.fix}
    for name, text in parts.items():
        assert isinstance(text, str) and len(text.strip()) >= 30, f"{rule.id}: doc.{name} is missing or too short"
        assert text.strip() != rule.title, f"{rule.id}: doc.{name} repeats the title"
    assert len(set(parts.values())) == 4, f"{rule.id}: what/why/detect/fix must say different things"
    assert rule.scope == ("fleet" if rule.family in FLEET_FAMILIES else "node")
    assert rule.needs_expect == (rule.family == "expect"), f"{rule.id}: only EXP rules need --expect"
    assert callable(rule.check)


@pytest.mark.parametrize("rule", [r for r in RULES if r.options], ids=[r.id for r in RULES if r.options])
def test_options_are_typed_with_valid_defaults(rule):
    names = [o.name for o in rule.options]
    assert len(set(names)) == len(names)
    for o in rule.options:
        assert o.type in OPTION_TYPES
        assert re.fullmatch(r"[a-z][a-z0-9_]*", o.name)
        assert o.help and len(o.help) >= 10
        assert o.problem(o.default) is None, f"{rule.id}.{o.name}: default {o.default!r}"
        if o.min is not None and o.max is not None:
            assert o.min <= o.max
    assert set(rule.defaults()) == set(names)


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_explain_renders_every_rule(rule):
    text = output.explain_text(rule)
    assert text.startswith(f"{rule.id}  {rule.slug}  (")
    for label in ("What:", "Why:", "Detect:", "Fix:", "In .ncclctl.yaml:"):
        assert label in text
    for o in rule.options:
        assert f"  {o.name} ({o.type_name};" in text
    doc = output.rule_doc(rule)
    assert doc["id"] == rule.id and doc["fix"] == rule.doc.fix
    json.dumps(doc)
    assert get(rule.id) is rule and get(rule.slug) is rule and get(rule.id.lower()) is rule


def test_lookup_and_suggestions():
    assert get("no-such-rule") is None
    assert suggest("GPU04") == "GPU004"
    assert suggest("persistance-mode-off") == "persistence-mode-off"
    assert suggest("zzzzzz") is None


def test_rules_cli_lists_every_rule_in_every_format():
    text = run_cli("rules")
    assert text.returncode == 0
    for r in RULES:
        assert re.search(rf"^{r.id}\s+{re.escape(r.slug)}\s+{r.family}\s+{r.severity.value}\s", text.stdout, re.M)
    doc = json.loads(run_cli("rules", "--format", "json").stdout)
    assert [d["id"] for d in doc["rules"]] == IDS
    assert {d["runs"] for d in doc["rules"]} <= {"always", "strict", "--expect", "fleet"}
    md = run_cli("rules", "-f", "markdown").stdout
    assert md.count("\n| ") == len(RULES) + 1


def test_explain_cli():
    res = run_cli("explain", "persistence-mode-off")
    assert res.returncode == 0 and res.stdout.startswith("GPU004  persistence-mode-off")
    doc = json.loads(run_cli("explain", "exp007", "--format", "json").stdout)
    assert doc["id"] == "EXP007" and [o["name"] for o in doc["options"]] == ["ignore", "unexpected"]
    assert doc["options"][0]["type"] == "list of str"
    res = run_cli("explain", "GPU04")
    assert res.returncode == 2
    assert "no such rule: 'GPU04'" in res.stderr and "did you mean GPU004?" in res.stderr
    assert "Traceback" not in res.stderr
