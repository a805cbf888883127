"""The rule registry: every rule ncclctl reports, with its id, slug, family, scope, default severity, title, fix,
documentation and typed options.

One registry for every command. A rule's *scope* says what its check looks at:

* ``node``: one node (``ncclctl lint``), a check ``check(ctx, opts) -> Iterable[Hit]`` registered with :func:`rule`;
* ``fleet``: many nodes compared (``ncclctl fleet lint``), ``check(fleet_ctx, opts)``, also with :func:`rule`;
* ``file``: an NCCL topology or graph XML file (``ncclctl topo validate``, ``rings validate``);
* ``fabric``: an InfiniBand/RoCE fabric (``ncclctl fabric load``, ``fabric rails``);
* ``log``: NCCL_DEBUG logs (``ncclctl log check``);
* ``perf``: nccl-tests results (``ncclctl perf check``).

Node and fleet rules are registered by their check functions (the :func:`rule` decorator in each family module).
File and fabric rules are *table rules*: their checks are spread over a validator (``ncclctl/topo/validate.py``,
``hostcheck.py``, ``schema.py``, ``ncclctl/fabric/graph.py``, ``layout.py``) that creates findings by rule id, so
they are registered as rows (:func:`table`) in :mod:`ncclctl.registry.file_rules`,
:mod:`ncclctl.registry.fabric_rules` and :mod:`ncclctl.registry.log_rules` (log and perf). Every rule, of either kind, has the same metadata, is listed by
``ncclctl rules``, explained by ``ncclctl explain`` and configured by ``.ncclctl.yaml``.

Rules are registered explicitly: :data:`FAMILY_MODULES` names the modules and :func:`all_rules` imports exactly
those. No discovery by scanning, so the set of rules is the same on every install and start-up stays cheap
(nothing is imported until a command needs it).

A node check yields :class:`Hit` values; the lint engine turns them into frozen :class:`~ncclctl.findings.Finding`
values with the rule's id and the effective severity (config override, else the hit's own, else the rule
default). Table-rule findings get the same treatment from :meth:`ncclctl.lint.engine.Config.apply`.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import field
from typing import Any, Callable, Iterable

from ncclctl.findings import Severity
from ncclctl.record import record


@record
class Family:
    """A rule family: the id prefix, its name, the scope of its rules and the modules that register them (one
    module per family, or one per concern of a large family: the NCCL settings rules)."""

    prefix: str
    name: str
    scope: str
    modules: tuple[str, ...]


SCOPES: tuple[str, ...] = ("node", "fleet", "file", "fabric", "log", "perf")

# In the order `ncclctl rules` lists them. The order is also the root-cause order of the human outputs (Nagios
# leads with the earliest family among the worst findings): hardware and links first, then the settings that
# name them (a down port, IB001, before the NCCL_IB_HCA entry that names it, NCCL011), then comparisons.
FAMILY_TABLE: tuple[Family, ...] = (
    Family("PCI", "pcie", "node", ("ncclctl.lint.rules_pcie",)),
    Family("GDR", "gpudirect", "node", ("ncclctl.lint.rules_gdr",)),
    Family("GPU", "gpu", "node", ("ncclctl.lint.rules_gpu",)),
    Family("NVL", "nvlink-domain", "node", ("ncclctl.lint.rules_nvl",)),
    Family("IB", "infiniband", "node", ("ncclctl.lint.rules_ib",)),
    Family("ROCE", "roce", "node", ("ncclctl.lint.rules_roce",)),
    # the NCCL settings: conf-file syntax and precedence, names and values, NCCL_IB_HCA/NCCL_SOCKET_IFNAME against
    # the devices, the files they name, rail and plane ids (what they share: ncclctl.lint.ncclsettings)
    Family("NCCL", "nccl", "node", ("ncclctl.lint.rules_nccl_conf", "ncclctl.lint.rules_nccl_values",
                                    "ncclctl.lint.rules_nccl_devices", "ncclctl.lint.rules_nccl_files",
                                    "ncclctl.lint.rules_nccl_rails")),
    Family("EXP", "expect", "node", ("ncclctl.lint.rules_expect",)),
    Family("FLT", "fleet", "fleet", ("ncclctl.lint.rules_fleet",)),
    Family("FAB", "fabric", "fabric", ("ncclctl.registry.fabric_rules",)),
    Family("NTX", "nccl-xml", "file", ("ncclctl.registry.file_rules",)),
    Family("NTS", "topology", "file", ("ncclctl.registry.file_rules",)),
    Family("NTG", "graph", "file", ("ncclctl.registry.file_rules",)),
    Family("NTV", "nccl-version", "file", ("ncclctl.registry.file_rules",)),
    Family("NTH", "host-match", "file", ("ncclctl.registry.file_rules",)),
    Family("LOG", "nccl-log", "log", ("ncclctl.registry.log_rules",)),
    Family("PERF", "nccl-tests", "perf", ("ncclctl.registry.log_rules",)),
)

# Modules that register rules, each once, in listing order.
FAMILY_MODULES: tuple[str, ...] = tuple(dict.fromkeys(m for f in FAMILY_TABLE for m in f.modules))

# id prefix -> family name (the prefix of every rule id in that family).
FAMILIES: dict[str, str] = {f.prefix: f.name for f in FAMILY_TABLE}

# family name -> scope.
FAMILY_SCOPES: dict[str, str] = {f.name: f.scope for f in FAMILY_TABLE}

#: Families whose checks look at a whole fleet (``check(fleet_ctx, opts)``), not at one node.
FLEET_FAMILIES = frozenset(f.name for f in FAMILY_TABLE if f.scope == "fleet")

#: Families registered as table rows (no check function: a validator creates their findings by id).
TABLE_SCOPES = frozenset({"file", "fabric", "log", "perf"})

SEVERITY_NAMES = ("error", "warning", "info")

OPTION_TYPES = (bool, int, float, str, list)


@record
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


@record
class RuleDoc:
    """What the rule finds, why it hurts NCCL, how it is detected, how to fix it (plain text, a few sentences each)."""

    what: str
    why: str
    detect: str
    fix: str


@record
class Hit:
    """One thing a check found. ``subject``: a device (``mlx5_0``, ``GPU3``, ``0000:17:00.0``), a netdev, or a
    file path (then ``line`` may be set). ``severity`` only when the check itself grades (else the rule's)."""

    subject: str
    message: str
    fix: str | None = None
    evidence: tuple[str, ...] = ()
    severity: Severity | None = None
    line: int | None = None


def no_check(ctx: object, opts: object) -> Iterable[Hit]:
    """The ``check`` of a table rule: it has none of its own (a validator creates its findings by id)."""
    raise TypeError("a table rule has no check function: its validator creates its findings by id")


@record
class Rule:
    id: str
    slug: str
    family: str
    severity: Severity
    title: str
    doc: RuleDoc
    # The check (node and fleet rules); :func:`no_check` for table rules, whose findings a validator creates by id.
    check: Callable[..., Iterable[Hit]] = field(default=no_check, repr=False, compare=False)
    options: tuple[Option, ...] = ()
    # Off unless the config says `extends: strict` or enables it by name.
    default_enabled: bool = True
    # Severity under `extends: strict` (None: same as default).
    strict_severity: Severity | None = None
    # Needs an expected-state profile (--expect) to say anything.
    needs_expect: bool = False
    # When the check grades some findings differently from the default severity, how (docs and explain), e.g.
    # "warning for non-compute ports".
    graded: str | None = None
    # Where the check lives (table rules: the validator module; node and fleet rules: the family module).
    checked_by: str = ""

    def defaults(self) -> dict[str, Any]:
        return {o.name: (list(o.default) if o.type is list else o.default) for o in self.options}

    @property
    def scope(self) -> str:
        """``node``, ``fleet``, ``file``, ``fabric``, ``log`` or ``perf`` (see :data:`SCOPES`): what the check looks
        at."""
        return FAMILY_SCOPES[self.family]

    @property
    def fix(self) -> str:
        """The default fix text of the rule's findings (the documentation's fix)."""
        return self.doc.fix

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)


_ID_RE = re.compile(r"^(" + "|".join(sorted(FAMILIES, key=len, reverse=True)) + r")\d{3}$")
_SLUG_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")

_REGISTRY: dict[str, Rule] = {}
_SLUGS: dict[str, str] = {}
_LOADED = False


def _register(r: Rule) -> None:
    m = _ID_RE.match(r.id)
    if not m:
        raise ValueError(f"rule id {r.id!r}: must be a family prefix and three digits")
    if not _SLUG_RE.match(r.slug):
        raise ValueError(f"rule {r.id}: slug {r.slug!r} must be lower-case words joined by '-'")
    if r.id in _REGISTRY or r.slug in _SLUGS:
        raise ValueError(f"rule {r.id} ({r.slug}) registered twice")
    names = [o.name for o in r.options]
    if len(set(names)) != len(names):
        raise ValueError(f"rule {r.id}: duplicate option names")
    for o in r.options:
        if o.type not in OPTION_TYPES:
            raise ValueError(f"rule {r.id}: option {o.name} has unsupported type {o.type!r}")
        if not re.match(r"^[a-z][a-z0-9_]*$", o.name):
            raise ValueError(f"rule {r.id}: option name {o.name!r} must be snake_case")
        bad = o.problem(o.default)
        if bad:
            raise ValueError(f"rule {r.id}: option {o.name} default {o.default!r}: {bad}")
    table = r.scope in TABLE_SCOPES
    if table != (r.check is no_check):
        raise ValueError(f"rule {r.id}: {r.scope} rules are " + ("table rows without" if table else "registered with")
                         + " a check function")
    _REGISTRY[r.id] = r
    _SLUGS[r.slug] = r.id


def rule(id: str, slug: str, severity: Severity, title: str, *, what: str, why: str, detect: str, fix: str,
         options: tuple[Option, ...] = (), default_enabled: bool = True, strict_severity: Severity | None = None,
         needs_expect: bool = False) -> Callable[[Callable[..., Iterable[Hit]]], Callable[..., Iterable[Hit]]]:
    """Register ``check`` as node or fleet rule ``id``. Raises at import time on a malformed or duplicate
    registration."""

    def register(check: Callable[..., Iterable[Hit]]) -> Callable[..., Iterable[Hit]]:
        m = _ID_RE.match(id)
        if not m:
            raise ValueError(f"rule id {id!r}: must be a family prefix and three digits")
        _register(Rule(id=id, slug=slug, family=FAMILIES[m.group(1)], severity=severity, title=title,
                       doc=RuleDoc(what=what, why=why, detect=detect, fix=fix), check=check, options=options,
                       default_enabled=default_enabled, strict_severity=strict_severity, needs_expect=needs_expect,
                       graded=_graded(id), checked_by=check.__module__))
        return check

    return register


def table(id: str, slug: str, severity: Severity, title: str, *, what: str, why: str, detect: str, fix: str,
          checked_by: str, graded: str | None = None, options: tuple[Option, ...] = ()) -> Rule:
    """Register a table rule (file, fabric, log or perf scope): its findings are created by id in
    ``checked_by``."""
    m = _ID_RE.match(id)
    if not m:
        raise ValueError(f"rule id {id!r}: must be a family prefix and three digits")
    r = Rule(id=id, slug=slug, family=FAMILIES[m.group(1)], severity=severity, title=title,
             doc=RuleDoc(what=what, why=why, detect=detect, fix=fix), graded=graded, checked_by=checked_by,
             options=options)
    _register(r)
    return r


def _graded(rule_id: str) -> str | None:
    from ncclctl.registry.grading import GRADED

    return GRADED.get(rule_id)


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
    if _SORTED[0] != len(_REGISTRY):  # sorted once (a fleet asks per host), again only when a rule was added
        _SORTED[:] = [len(_REGISTRY), tuple(sorted(_REGISTRY.values(), key=lambda r: (family_order(r.family), r.id)))]
    return _SORTED[1]


#: (how many rules were registered, all_rules() then).
_SORTED: list = [-1, ()]


_MISSING: list[str] = []


def missing_modules() -> tuple[str, ...]:
    """Family modules listed in :data:`FAMILY_MODULES` that do not exist (the meta-tests insist on none)."""
    all_rules()
    return tuple(_MISSING)


def rules_of(*, scope: str | None = None, family: str | None = None) -> tuple[Rule, ...]:
    """The rules of one scope and/or family, in listing order. A scope's rules are loaded without the other
    scopes' modules (``log check`` on one rank's log need not import the node lint rules)."""
    if scope is not None and not _LOADED:
        for name in dict.fromkeys(m for f in FAMILY_TABLE if f.scope == scope for m in f.modules):
            importlib.import_module(name)
        return tuple(sorted((r for r in _REGISTRY.values() if r.scope == scope and (family is None or r.family == family)),
                            key=lambda r: (family_order(r.family), r.id)))
    return tuple(r for r in all_rules() if (scope is None or r.scope == scope)
                 and (family is None or r.family == family))


def node_rules() -> tuple[Rule, ...]:
    return rules_of(scope="node")


def fleet_rules() -> tuple[Rule, ...]:
    return rules_of(scope="fleet")


_FAMILY_ORDER = {f.name: i for i, f in enumerate(FAMILY_TABLE)}


def family_order(family: str) -> int:
    """The family's place in the listing (and root-cause) order; unknown families last."""
    return _FAMILY_ORDER.get(family, len(_FAMILY_ORDER))


def family_of(rule_id: str) -> str | None:
    """The family an id belongs to by its prefix (without loading the rules), or None."""
    m = _ID_RE.match(rule_id)
    return FAMILIES[m.group(1)] if m else None


def get(key: str) -> Rule | None:
    """A rule by id (case-insensitive) or slug."""
    all_rules()
    k = key.strip()
    found = _REGISTRY.get(k.upper())
    if found is None and k.lower() in _SLUGS:
        found = _REGISTRY[_SLUGS[k.lower()]]
    return found


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
