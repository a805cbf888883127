"""The fabric rules, as the checks look them up: :func:`rule` by id, :data:`RULES`.

The rules themselves (ids, slugs, severities, titles, fixes, documentation) are rows of the one rule registry,
:mod:`ncclctl.registry.fabric_rules`; this module is the fabric checks' view of the ``fabric`` scope.
"""

from __future__ import annotations

from ncclctl.registry import Rule
from ncclctl.registry.fabric_rules import RULES as _ROWS

RULES: dict[str, Rule] = {r.id: r for r in _ROWS}


def rule(rule_id: str) -> Rule:
    try:
        return RULES[rule_id]
    except KeyError:
        raise KeyError(f"no such fabric rule: {rule_id!r}") from None
