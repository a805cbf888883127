"""The rule registry, as the lint rule modules import it (``from ncclctl.lint.registry import Hit, Option, rule``).

The registry itself is :mod:`ncclctl.registry` (one registry for node, fleet, file and fabric rules); this module
re-exports its names so the family modules keep their imports.
"""

from __future__ import annotations

from ncclctl.registry import (  # noqa: F401
    FAMILIES,
    FAMILY_MODULES,
    FAMILY_SCOPES,
    FLEET_FAMILIES,
    OPTION_TYPES,
    SCOPES,
    SEVERITY_NAMES,
    Hit,
    Option,
    Rule,
    RuleDoc,
    all_rules,
    fleet_rules,
    get,
    missing_modules,
    node_rules,
    rule,
    rules_of,
    suggest,
)
