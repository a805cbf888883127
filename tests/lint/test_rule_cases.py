"""Every rule's pass and fail cases (fixtures/lint/<RULE>.yaml) run through the engine; meta-tests on coverage."""

from __future__ import annotations

import pytest

from ncclctl.lint.context import Ctx
from ncclctl.lint.engine import Config, RuleConfig, run
from ncclctl.lint.expect import check_profile
from ncclctl.lint.fleet import Source, lint_fleet
from ncclctl.registry import all_rules
from ncclctl.probe import probe

from .cases import all_cases, load_case_files, materialize

CASES = all_cases()


@pytest.mark.parametrize("rule_id,case", CASES, ids=[f"{r}-{c['name']}" for r, c in CASES])
def test_case(rule_id, case, tmp_path):
    rules = {r.id: r for r in all_rules()}
    assert rule_id in rules, f"fixtures/lint/{rule_id}.yaml: no such rule registered"
    cfg = Config(rules=((rule_id, RuleConfig(options=tuple(case.get("options", {}).items()))),))
    profile = case.get("expect_profile")
    if profile is not None:  # the loader's checks apply to inline profiles too
        profile = check_profile(profile, path=f"fixtures/lint/{rule_id}.yaml")
    if "hosts" in case:  # a fleet rule: several hosts, each materialized on its own
        sources = [Source(path=str(materialize({**h, "name": f"{case['name']}/{h['name']}"}, tmp_path / f"h{i}")),
                          kind="snapshot", name=h["name"], labels=tuple(sorted(h.get("labels", {}).items())))
                   for i, h in enumerate(case["hosts"])]
        result = lint_fleet(sources, cfg, expect=profile, jobs=1, only=(rule_id,))
        assert all(h.error is None for h in result.hosts), [h.error for h in result.hosts]
        found = result.findings()
    else:
        root = materialize(case, tmp_path)
        node = probe(str(root))
        ctx = Ctx(node=node, expect=profile, source=str(root))
        found = run(ctx, cfg, only=(rule_id,))
    assert all(f.rule == rule_id for f in found)
    shown = "\n".join(f"{f.subject}: {f.message}" for f in found)
    if case["expect"] == "pass":
        assert not found, f"{rule_id} fired on the passing case {case['name']}:\n{shown}"
        return
    assert found, f"{rule_id} did not fire on the failing case {case['name']}"
    if "subjects" in case:
        assert sorted({f.subject for f in found}) == sorted(case["subjects"]), shown
    if "count" in case:
        assert len(found) == case["count"], shown
    if "message" in case:
        assert any(case["message"] in f.message for f in found), shown
    if "severity" in case:
        assert {str(f.severity.value) for f in found} == {case["severity"]}, [(f.subject, f.severity) for f in found]
    for f in found:
        assert f.message and f.fix, f"{rule_id}: every finding needs a message and a fix"


def test_every_rule_has_a_passing_and_a_failing_case():
    """Node and fleet rules. (File rules have the broken-file corpus, tests/topo/test_topo_corpus.py; fabric rules
    their fabrics, tests/fabric/test_fabric_rules_fire.py.)"""
    files = load_case_files()
    missing = []
    for r in all_rules():
        if r.scope not in ("node", "fleet"):
            assert r.id not in files, f"fixtures/lint/{r.id}.yaml: {r.scope} rules are not run by the lint engine"
            continue
        kinds = {c["expect"] for c in files.get(r.id, {}).get("cases", [])}
        if kinds != {"pass", "fail"}:
            missing.append(f"{r.id} has {sorted(kinds) or 'no cases'}")
    assert not missing, "rules without both cases:\n" + "\n".join(missing)
