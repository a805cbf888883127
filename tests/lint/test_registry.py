"""Meta-tests over the whole rule registry (node, fleet, file and fabric rules): ids, slugs, families, scopes,
docs, severities, options, modules, explain, config."""

from __future__ import annotations

import importlib
import json
import re

import pytest

from ncclctl.findings import Severity
from ncclctl.lint.config import parse_config
from ncclctl.registry import (FAMILIES, FAMILY_MODULES, FAMILY_SCOPES, FLEET_FAMILIES, OPTION_TYPES, SCOPES,
                              TABLE_SCOPES, all_rules, get, missing_modules, no_check, suggest)
from ncclctl.registry import docs as output
from ncclctl.registry.grading import GRADED

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
    assert rule.scope in SCOPES and rule.scope == FAMILY_SCOPES[rule.family]
    if rule.family in FLEET_FAMILIES:
        assert rule.scope == "fleet"
    assert rule.needs_expect == (rule.family == "expect"), f"{rule.id}: only EXP rules need --expect"
    if rule.scope in TABLE_SCOPES:  # a validator creates its findings by id
        assert rule.check is no_check and rule.default_enabled and rule.strict_severity is None
        # options only where the check reads them from the config (log check, perf check)
        assert not rule.options or rule.scope in ("log", "perf"), rule.id
        assert rule.checked_by.startswith("ncclctl/") and rule.checked_by.endswith(".py"), rule.checked_by
    else:
        assert callable(rule.check) and rule.checked_by.startswith("ncclctl.")
    assert rule.graded is None or (rule.graded.strip() and "(" not in rule.graded), rule.graded


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


def test_grading_notes_name_registered_rules():
    assert set(GRADED) <= set(IDS)


def test_every_scope_has_rules():
    assert {r.scope for r in RULES} == set(SCOPES)


def test_table_rules_keep_their_ids():
    """File and fabric rule ids are stable (tests, configs and users depend on them)."""
    from ncclctl.fabric.rules import RULES as FABRIC
    from ncclctl.topo.rules import RULES as FILE

    meaning = {"NTS070", "NTH030"}  # checks of meaning from NCCL's model (issue 15)
    rails = {"NTS090", "NTS091"} | {f"NTH{i:03d}" for i in range(40, 45)}  # rail/plane ids (issue 17)
    plan = {f"FAB{i:03d}" for i in range(21, 27)}  # fabric plan (issue 17)
    meaning |= {"NTG032"}  # the GPUs a graph file assumes, without a host (issue 28)
    meaning |= {"NTG033", "NTG034"}  # a graph file against the node's settings (issue 28)
    assert len(FILE) == 138 + len(meaning) + len(rails) and len(FABRIC) == 20 + len(plan)
    assert {f"NTX{i:03d}" for i in [*range(1, 26), 90, 91]} | {f"NTS{i:03d}" for i in range(1, 54)} \
        | {f"NTG{i:03d}" for i in range(1, 32)} | {f"NTV{i:03d}" for i in range(1, 13)} \
        | {f"NTH{i:03d}" for i in range(1, 16)} | meaning | rails == set(FILE)
    assert {f"FAB{i:03d}" for i in range(1, 21)} | plan == set(FABRIC)
    assert all(FILE[rid] is get(rid) for rid in FILE) and all(FABRIC[rid] is get(rid) for rid in FABRIC)


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_config_accepts_every_rule(rule):
    """Every rule, of every scope, can be set to a severity, turned off and ignored per host in .ncclctl.yaml."""
    other = "info" if rule.severity is not Severity.INFO else "error"
    cfg = parse_config(f"rules:\n  {rule.slug}: {other}\nignore:\n  - {{hosts: 'dev-*', rules: [{rule.id}]}}\n")
    assert cfg.rule_config(rule.id).severity is Severity(other) and cfg.ignored("dev-1", rule.id)
    assert parse_config(f"rules: {{{rule.id}: off}}\n").rule_config(rule.id).disabled is True


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
    assert {d["runs"] for d in doc["rules"]} <= set(output.RUNS)
    assert {d["scope"] for d in doc["rules"]} == {"node", "fleet", "file", "fabric", "log", "perf"}
    md = run_cli("rules", "-f", "markdown").stdout
    assert md.count("\n| ") == len(RULES) + 1


@pytest.mark.parametrize("scope", SCOPES)
def test_rules_cli_filters_by_scope_and_family(scope):
    doc = json.loads(run_cli("rules", "--scope", scope, "--format", "json").stdout)
    assert [d["id"] for d in doc["rules"]] == [r.id for r in RULES if r.scope == scope]
    text = run_cli("rules", "--scope", scope).stdout
    assert text.splitlines()[-2].startswith(f"{sum(r.scope == scope for r in RULES)} rule")


def test_rules_cli_family_filter_and_bad_family():
    doc = json.loads(run_cli("rules", "--family", "host-match", "-f", "json").stdout)
    assert [d["id"] for d in doc["rules"]] == [f"NTH{i:03d}" for i in range(1, 16)] + ["NTH030"] \
        + [f"NTH{i:03d}" for i in range(40, 45)]
    res = run_cli("rules", "--family", "topo")
    assert res.returncode == 2 and "no such rule family: 'topo'" in res.stderr and "topology" in res.stderr


def test_explain_cli():
    res = run_cli("explain", "persistence-mode-off")
    assert res.returncode == 0 and res.stdout.startswith("GPU004  persistence-mode-off")
    doc = json.loads(run_cli("explain", "exp007", "--format", "json").stdout)
    assert doc["id"] == "EXP007" and [o["name"] for o in doc["options"]] == ["ignore", "unexpected"]
    assert doc["options"][0]["type"] == "list of str"
    for rid in ("NTX001", "NTS025", "NTG006", "NTV005", "NTH007", "NTX090", "FAB002", "fabric-miscabled"):
        res = run_cli("explain", rid)
        assert res.returncode == 0, res.stderr
        assert all(label in res.stdout for label in ("What:", "Why:", "Detect:", "Fix:"))
    doc = json.loads(run_cli("explain", "FAB004", "--format", "json").stdout)
    assert doc["scope"] == "fabric" and doc["graded"] == "warning on switch-to-switch links"
    assert "warning on switch-to-switch links" in run_cli("explain", "FAB004").stdout
    res = run_cli("explain", "GPU04")
    assert res.returncode == 2
    assert "no such rule: 'GPU04'" in res.stderr and "did you mean GPU004?" in res.stderr
    assert "Traceback" not in res.stderr
