"""Helpers shared by the per-family lint tests (test_pcie, test_gdr, test_gpu, test_ib, test_roce).

Each family module keeps its own table of the findings every host fixture must give (``EXPECTED``: host ->
{(rule, severity, subject)}), the documentation of what the family finds on the shipped hosts; these helpers
probe the fixtures once per session, run one family, and check a host against its row.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from conftest import HOSTS, host_names
from ncclctl.lint.context import Ctx
from ncclctl.lint.engine import Config, RuleConfig, run
from ncclctl.probe import probe

from .cases import load_case_files, materialize

_NODES: dict[str, object] = {}


def node(name: str):
    """The probed host fixture ``name`` (cached: the tests never modify a node, they replace fields)."""
    if name not in _NODES:
        _NODES[name] = probe(str(HOSTS / name))
    return _NODES[name]


def family_lint(family: tuple[str, ...]) -> Callable:
    """``lint(node, only=family, config=None)``: the family's findings on a node, offline."""

    def lint(n, only=family, config=None):
        return run(Ctx(node=n), config or Config(), only=only)

    return lint


def with_env(n, drop=(), **env):
    """``n`` with NCCL variables set in its recorded process environment (and ``drop`` removed)."""
    merged = {k: v for k, v in {**dict(n.facts.nccl_env), **env}.items() if k not in drop}
    return dataclasses.replace(n, facts=dataclasses.replace(n.facts, nccl_env=tuple(sorted(merged.items()))))


def case_findings(rule_id: str, name: str, tmp_path):
    """The findings of ``rule_id`` on the case ``name`` of ``fixtures/lint/<rule_id>.yaml``."""
    case = next(c for c in load_case_files()[rule_id]["cases"] if c["name"] == name)
    root = materialize(case, tmp_path)
    cfg = Config(rules=((rule_id, RuleConfig(options=tuple(case.get("options", {}).items()))),))
    return run(Ctx(node=probe(str(root))), cfg, only=(rule_id,))


def assert_pinned(expected: dict) -> None:
    """Every host fixture has a row in the family's table (a new fixture must say what the family finds)."""
    assert sorted(expected) == host_names()


def assert_host(found, expected: set) -> None:
    """The findings are exactly the row, and each carries a concrete fix and the values it judged."""
    assert {(f.rule, f.severity.value, f.subject) for f in found} == expected, \
        "\n".join(f"{f.rule} {f.subject}: {f.message}" for f in found)
    for f in found:
        assert f.fix and f.evidence, f"{f.rule} {f.subject}: needs a concrete fix and the values it judged"
