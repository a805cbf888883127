"""The rule registry: every lint rule with its id, slug, family, severity, typed options and documentation.

Rules are registered explicitly: each family module (listed in :data:`FAMILY_MODULES`) defines its checks with
the :func:`rule` decorator, and :func:`all_rules` imports exactly those modules. No discovery by scanning, so the
set of rules is the same on every install and start-up stays cheap (nothing is imported until a command needs it).

A check is a plain function ``check(ctx, opts) -> Iterable[Hit]``: ``ctx`` is a :class:`~ncclctl.lint.context.Ctx`
(the node model and what else the run knows), ``opts`` the rule's resolved options (a dict of typed values).
It yields :class:`Hit` values; the engine turns them into frozen :class:`~ncclctl.findings.Finding` values with the
rule's id and the effective severity (config override, else the hit's own, else the rule default).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ncclctl.findings import Severity

# Family modules, in the order `ncclctl rules` lists them.  Each defines rules with @rule.
FAMILY_MODULES: tuple[str, ...] = (
    "ncclctl.lint.rules_pcie",
    "ncclctl.lint.rules_gdr",
    "ncclctl.lint.rules_gpu",
    "ncclctl.lint.rules_ib",
    "ncclctl.lint.rules_roce",
    "ncclctl.lint.rules_nccl",
    "ncclctl.lint.rules_expect",
    "ncclctl.lint.fleet",
)

# id prefix -> family name (the prefix of every rule id in that family).
FAMILIES: dict[str, str] = {
    "PCI": "pcie",
    "GDR": "gpudirect",
    "GPU": "gpu",
    "IB": "infiniband",
    "ROCE": "roce",
    "NCCL": "nccl",
    "EXP": "expect",
    "FLT": "fleet",
}

#: Families whose checks look at a whole fleet (``check(fleet_ctx, opts)``), not at one node.
FLEET_FAMILIES = frozenset({"fleet"})

SEVERITY_NAMES = ("error", "warning", "info")

OPTION_TYPES = (bool, int, float, str, list)


@dataclass(frozen=True)
class Option:
    """A typed rule option. ``type`` is one of bool, int, float, str, list (a list of strings)."""

    name: str
    type: type
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None

    @property
    def type_name(self) -> str:
        """How docs and errors name the type: ``bool``, ``int``, ``float``, ``str`` or ``list of str``."""
        return "list of str" if self.type is list else self.type.__name__

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not valid for this option (None when it is). Used for defaults and config values."""
        t = self.type
        if t is list:
            if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
                return f"expected a list of strings, got {_show(value)}"
            items = list(value)
        elif t is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return f"expected a number, got {_show(value)}"
            items = [value]
        elif t is int:
            if isinstance(value, bool) or not isinstance(value, int):
                return f"expected an integer, got {_show(value)}"
            items = [value]
        elif t is bool:
            if not isinstance(value, bool):
                return f"expected true or false, got {_show(value)}"
            return None
        else:
            if not isinstance(value, str):
                return f"expected a string, got {_show(value)}"
            items = [value]
        for item in items:
            if self.choices is not None and item not in self.choices:
                return f"{item!r} is not one of {', '.join(self.choices)}"
            if t in (int, float):
                if self.min is not None and item < self.min:
                    return f"{item} is below the minimum {self.min:g}"
                if self.max is not None and item > self.max:
                    return f"{item} is above the maximum {self.max:g}"
        return None


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list, tuple)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return f"{type(value).__name__} {value!r}"


@dataclass(frozen=True)
class RuleDoc:
    """What the rule finds, why it hurts NCCL, how it is detected, how to fix it (plain text, a few sentences each)."""

    what: str
    why: str
    detect: str
    fix: str


@dataclass(frozen=True)
class Hit:
    """One thing a check found. ``subject``: a device (``mlx5_0``, ``GPU3``, ``0000:17:00.0``), a netdev, or a
    file path (then ``line`` may be set). ``severity`` only when the check itself grades (else the rule's)."""

    subject: str
    message: str
    fix: str | None = None
    evidence: tuple[str, ...] = ()
    severity: Severity | None = None
    line: int | None = None


@dataclass(frozen=True)
class Rule:
    id: str
    slug: str
    family: str
    severity: Severity
    title: str
    doc: RuleDoc
    check: Callable[..., Iterable[Hit]] = field(repr=False, compare=False)
    options: tuple[Option, ...] = ()
    # Off unless the config says `extends: strict` or enables it by name.
    default_enabled: bool = True
    # Severity under `extends: strict` (None: same as default).
    strict_severity: Severity | None = None
    # Needs an expected-state profile (--expect) to say anything.
    needs_expect: bool = False

    def defaults(self) -> dict[str, Any]:
        return {o.name: (list(o.default) if o.type is list else o.default) for o in self.options}

    @property
    def scope(self) -> str:
        """``node`` (``check(ctx, opts)`` on one node) or ``fleet`` (``check(fleet_ctx, opts)`` across nodes)."""
        return "fleet" if self.family in FLEET_FAMILIES else "node"

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)


_ID_RE = re.compile(r"^(PCI|GDR|GPU|IB|ROCE|NCCL|EXP|FLT)\d{3}$")
_SLUG_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")

_REGISTRY: dict[str, Rule] = {}
_LOADED = False


def rule(id: str, slug: str, severity: Severity, title: str, *, what: str, why: str, detect: str, fix: str,
         options: tuple[Option, ...] = (), default_enabled: bool = True, strict_severity: Severity | None = None,
         needs_expect: bool = False) -> Callable[[Callable[..., Iterable[Hit]]], Callable[..., Iterable[Hit]]]:
    """Register ``check`` as rule ``id``. Raises at import time on a malformed or duplicate registration."""

    def register(check: Callable[..., Iterable[Hit]]) -> Callable[..., Iterable[Hit]]:
        m = _ID_RE.match(id)
        if not m:
            raise ValueError(f"rule id {id!r}: must be a family prefix and three digits")
        if not _SLUG_RE.match(slug):
            raise ValueError(f"rule {id}: slug {slug!r} must be lower-case words joined by '-'")
        if id in _REGISTRY or any(r.slug == slug for r in _REGISTRY.values()):
            raise ValueError(f"rule {id} ({slug}) registered twice")
        names = [o.name for o in options]
        if len(set(names)) != len(names):
            raise ValueError(f"rule {id}: duplicate option names")
        for o in options:
            if o.type not in OPTION_TYPES:
                raise ValueError(f"rule {id}: option {o.name} has unsupported type {o.type!r}")
            if not re.match(r"^[a-z][a-z0-9_]*$", o.name):
                raise ValueError(f"rule {id}: option name {o.name!r} must be snake_case")
            bad = o.problem(o.default)
            if bad:
                raise ValueError(f"rule {id}: option {o.name} default {o.default!r}: {bad}")
        _REGISTRY[id] = Rule(id=id, slug=slug, family=FAMILIES[m.group(1)], severity=severity, title=title,
                             doc=RuleDoc(what=what, why=why, detect=detect, fix=fix), check=check,
                             options=options, default_enabled=default_enabled, strict_severity=strict_severity,
                             needs_expect=needs_expect)
        return check

    return register


def all_rules() -> tuple[Rule, ...]:
    """Every registered rule, in family then id order (imports the family modules once)."""
    global _LOADED
    if not _LOADED:
        for name in FAMILY_MODULES:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name != name:  # a family module not written yet is skipped; a broken import is not
                    raise
                _MISSING.append(name)
        _LOADED = True
    return tuple(sorted(_REGISTRY.values(), key=lambda r: (_family_order(r.id), r.id)))


_MISSING: list[str] = []


def missing_modules() -> tuple[str, ...]:
    """Family modules listed in :data:`FAMILY_MODULES` that do not exist (the meta-tests insist on none)."""
    all_rules()
    return tuple(_MISSING)


def node_rules() -> tuple[Rule, ...]:
    return tuple(r for r in all_rules() if r.scope == "node")


def fleet_rules() -> tuple[Rule, ...]:
    return tuple(r for r in all_rules() if r.scope == "fleet")


def _family_order(rid: str) -> int:
    prefix = re.match(r"[A-Z]+", rid).group(0)  # type: ignore[union-attr]
    return list(FAMILIES).index(prefix)


def get(key: str) -> Rule | None:
    """A rule by id (case-insensitive) or slug."""
    rules = all_rules()
    k = key.strip()
    for r in rules:
        if r.id == k.upper() or r.slug == k.lower():
            return r
    return None


def suggest(key: str) -> str | None:
    """The closest rule id or slug to a misspelt ``key`` (for "did you mean" hints), or None."""
    import difflib

    k = key.strip()
    rules = all_rules()
    ids = [r.id for r in rules]
    slugs = [r.slug for r in rules]
    for pool, probe in ((ids, k.upper()), (slugs, k.lower())):
        close = difflib.get_close_matches(probe, pool, n=1, cutoff=0.6)
        if close:
            return close[0]
    return None
