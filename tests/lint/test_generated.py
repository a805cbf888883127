"""Files generated from the rule registry stay current: the config and profile JSON Schemas, the README rule index,
the rule tables in docs/*.md.

After adding or changing a rule, regenerate them with::

    python3 -m pytest -q tests/lint/test_generated.py --update-golden
"""

from __future__ import annotations

import json

import pytest

from ncclctl.lint import config, expect
from ncclctl.registry import FAMILY_TABLE, all_rules
from ncclctl.registry import docs as output

from conftest import REPO, run_cli

GENERATED = {
    "schemas/ncclctl-config.schema.json": config.json_schema,
    "schemas/expect.schema.json": expect.json_schema,
}


def _update(request) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.mark.parametrize("rel", sorted(GENERATED))
def test_schema_file_is_current(rel, request):
    text = json.dumps(GENERATED[rel](), indent=2, ensure_ascii=False) + "\n"
    path = REPO / rel
    if _update(request):
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{rel} is missing; run: python3 -m pytest -q {__file__} --update-golden"
    assert path.read_text(encoding="utf-8") == text, (
        f"{rel} is stale (rules changed); run: python3 -m pytest -q tests/lint/test_generated.py --update-golden")


def test_schemas_are_valid_json_schema():
    from jsonschema import Draft202012Validator

    for rel, make in GENERATED.items():
        Draft202012Validator.check_schema(make())


def test_readme_rule_index_is_current(request):
    path = REPO / "README.md"
    text = path.read_text(encoding="utf-8")
    want = output.replace_readme_block(text, all_rules())
    if _update(request):
        if want != text:
            path.write_text(want, encoding="utf-8")
        return
    assert output.README_BEGIN in text, "README.md has no rule index block; run with --update-golden"
    assert text == want, ("the README rule index is stale; run: python3 -m pytest -q tests/lint/test_generated.py "
                          "--update-golden")


def test_readme_block_is_what_rules_markdown_prints():
    res = run_cli("rules", "--format", "markdown")
    assert res.returncode == 0, res.stderr
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split(output.README_BEGIN, 1)[1].split(output.README_END, 1)[0]
    assert block == "\n" + res.stdout
    for r in all_rules():
        assert f"| {r.id} | `{r.slug}` |" in res.stdout


DOCS = sorted((REPO / "docs").glob("*.md"))


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_docs_rule_tables_are_current(path, request):
    text = path.read_text(encoding="utf-8")
    want = output.replace_family_tables(text, all_rules(), path=str(path))
    if _update(request):
        if want != text:
            path.write_text(want, encoding="utf-8")
        return
    assert text == want, (f"the rule tables in docs/{path.name} are stale; run: python3 -m pytest -q "
                          "tests/lint/test_generated.py --update-golden")


def test_every_family_has_a_docs_table():
    tabled: dict[str, list[str]] = {}
    for path in DOCS:
        for family in output.tabled_families(path.read_text(encoding="utf-8")):
            tabled.setdefault(family, []).append(path.name)
    assert sorted(tabled) == sorted(f.name for f in FAMILY_TABLE), "every rule family needs one generated docs table"
    assert all(len(v) == 1 for v in tabled.values()), tabled
    for r in all_rules():
        assert f"| {r.id} | `{r.slug}` |" in (REPO / "docs" / tabled[r.family][0]).read_text(encoding="utf-8")
    # SARIF's helpUri/help name the page that holds the family's table.
    assert {f: f"docs/{pages[0]}" for f, pages in tabled.items()} == output.FAMILY_DOCS


def test_table_markers_are_checked():
    with pytest.raises(ValueError, match="unknown rule family nosuch"):
        output.replace_family_tables("<!-- rules-table: nosuch -->\n<!-- rules-table:end -->\n", all_rules())
    with pytest.raises(ValueError, match="has no"):
        output.replace_family_tables("<!-- rules-table: pcie -->\nno end\n", all_rules())
