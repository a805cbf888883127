"""The rule configuration file ``.ncclctl.yaml`` (schema: ``schemas/ncclctl-config.schema.json``), read by every
command that reports findings (lint, fleet lint, topo/rings validate, fabric load/rails) for every rule of the
registry (:mod:`ncclctl.registry`)::

    extends: default            # or strict: default-off rules on, stricter severities
    rules:
      IB002:                    # a rule id or its slug
        severity: warning       # error | warning | info | off
        options: {min_rate_gbps: 200}
      persistence-mode-off: off # short form: off | on | error | warning | info
      PCI004: {disable: true}
    ignore:
      - hosts: "gpu-dev-*"      # fnmatch glob on the host name
        rules: [GPU003, IOMMU-slug-or-id]

Everything is checked against the registry: an unknown key, rule, option, or an option value of the wrong type
is an :class:`~ncclctl.errors.InputError` (exit 3) naming the file, the line and the rule. The JSON Schema is
generated from the same registry (:func:`json_schema`), so editors and this loader agree.

Naming a rule with a severity (or ``on``, or ``disable: false``) enables it even when it is off by default.
"""

from __future__ import annotations

import os
from typing import Any

from ncclctl.errors import InputError
from ncclctl.findings import Severity
from ncclctl.lint.engine import Config, RuleConfig
from ncclctl.registry import Rule, all_rules, get, suggest

DEFAULT_NAME = ".ncclctl.yaml"
SCHEMA_FILE = "schemas/ncclctl-config.schema.json"
_FIX = "see docs/lint.md and 'ncclctl schema ncclctl-config'"
_TOP_KEYS = ("extends", "rules", "ignore")
_RULE_KEYS = ("severity", "options", "disable")
_IGNORE_KEYS = ("hosts", "rules")
_LEVELS = ("error", "warning", "info", "off")
_SHORT = ("off", "on", "error", "warning", "info")


def discover(explicit: str | None, cwd: str | None = None) -> str | None:
    """The config file to use: ``--config F``, else ``./.ncclctl.yaml`` when it exists, else none."""
    if explicit is not None:
        return explicit
    candidate = os.path.join(cwd or os.getcwd(), DEFAULT_NAME)
    return candidate if os.path.isfile(candidate) else None


def load_config(path: str | None) -> Config:
    """Read and check a config file; ``None`` gives the default configuration."""
    if path is None:
        return Config()
    from ncclctl.inputs import read_text

    return parse_config(read_text(path, "config"), path=path)


def parse_config(text: str, *, path: str = "<config>") -> Config:
    data, lines = load_yaml(text, path)
    if data is None:
        return Config(path=path)

    def err(msg: str, where: tuple, fix: str = _FIX) -> InputError:
        return InputError(msg, path=path, line=line_of(lines, where), fix=fix)

    if not isinstance(data, dict):
        raise err("a config file is a mapping with the keys " + ", ".join(_TOP_KEYS), ())
    for key in data:
        if key not in _TOP_KEYS:
            raise err(f"unknown key {key!r}", (key,), fix=_allowed(key, _TOP_KEYS))
    extends = data.get("extends", "default")
    if extends not in ("default", "strict"):
        raise err(f"extends: {extends!r} is not a profile", ("extends",), fix="use extends: default or extends: strict")

    rules_raw = data.get("rules") or {}
    if not isinstance(rules_raw, dict):
        raise err("'rules' must be a mapping of rule id (or slug) to its settings", ("rules",))
    resolved: dict[str, RuleConfig] = {}
    seen: dict[str, str] = {}
    for key, value in rules_raw.items():
        where = ("rules", key)
        rule = _rule(key, lambda msg, fix: err(msg, where, fix))
        if rule.id in seen:
            raise err(f"rule {rule.id} is configured twice (as {seen[rule.id]!r} and {key!r})", where,
                      fix="keep one entry per rule")
        seen[rule.id] = str(key)
        resolved[rule.id] = _rule_config(rule, value, where, err)

    ignores = []
    ignore_raw = data.get("ignore") or []
    if not isinstance(ignore_raw, list):
        raise err("'ignore' must be a list of {hosts: GLOB, rules: [IDS]}", ("ignore",))
    for i, entry in enumerate(ignore_raw):
        where = ("ignore", i)
        if not isinstance(entry, dict):
            raise err("an ignore entry is a mapping {hosts: GLOB, rules: [IDS]}", where)
        for key in entry:
            if key not in _IGNORE_KEYS:
                raise err(f"ignore entry: unknown key {key!r}", (*where, key), fix=_allowed(key, _IGNORE_KEYS))
        hosts = entry.get("hosts")
        if not isinstance(hosts, str) or not hosts:
            raise err("ignore entry: 'hosts' must be a host-name glob such as \"gpu-*\"", (*where, "hosts")
                      if "hosts" in entry else where)
        ids = entry.get("rules")
        if isinstance(ids, str):
            ids = [ids]
        if not isinstance(ids, list) or not ids:
            raise err("ignore entry: 'rules' must be a list of rule ids or slugs", (*where, "rules")
                      if "rules" in entry else where)
        out = []
        for j, rid in enumerate(ids):
            rule = _rule(rid, lambda msg, fix, _w=(*where, "rules", j): err(msg, _w, fix))
            out.append(rule.id)
        ignores.append((hosts, tuple(dict.fromkeys(out))))

    return Config(extends=extends, rules=tuple(resolved.items()), ignores=tuple(ignores), path=path)


def _allowed(key: Any, allowed: tuple[str, ...]) -> str:
    import difflib

    close = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}allowed keys: {', '.join(allowed)}"


def _rule(key: Any, err) -> Rule:
    if not isinstance(key, str):
        raise err(f"{key!r} is not a rule id", "use a rule id such as GPU004 or its slug (ncclctl rules)")
    rule = get(key)
    if rule is None:
        close = suggest(key)
        raise err(f"unknown rule {key!r}", (f"did you mean {close}? " if close else "")
                  + "'ncclctl rules' lists the rule ids and slugs")
    return rule


def _rule_config(rule: Rule, value: Any, where: tuple, err) -> RuleConfig:
    # YAML 1.1 reads a bare `off`/`on` (also no/yes) as false/true.
    if value is False or value is True:
        return RuleConfig(disabled=not value)
    if isinstance(value, str):
        if value not in _SHORT:
            raise err(f"rule {rule.id}: {value!r} is not a setting", where,
                      f"use one of {', '.join(_SHORT)}, or a mapping with {', '.join(_RULE_KEYS)}")
        if value == "off":
            return RuleConfig(disabled=True)
        if value == "on":
            return RuleConfig(disabled=False)
        return RuleConfig(severity=Severity(value), disabled=False)
    if value is None or not isinstance(value, dict):
        raise err(f"rule {rule.id}: give off/on/a severity, or a mapping with {', '.join(_RULE_KEYS)}", where, _FIX)
    for key in value:
        if key not in _RULE_KEYS:
            raise err(f"rule {rule.id}: unknown key {key!r}", (*where, key), _allowed(key, _RULE_KEYS))
    severity = None
    disabled = None
    if "severity" in value:
        sev = value["severity"]
        if sev is False:
            sev = "off"
        if sev not in _LEVELS:
            raise err(f"rule {rule.id}: severity {sev!r} is not one of {', '.join(_LEVELS)}",
                      (*where, "severity"), f"use one of {', '.join(_LEVELS)}")
        if sev == "off":
            disabled = True
        else:
            severity = Severity(sev)
            disabled = False
    if "disable" in value:
        flag = value["disable"]
        if not isinstance(flag, bool):
            raise err(f"rule {rule.id}: disable must be true or false", (*where, "disable"), "use disable: true")
        if disabled is False and flag:
            raise err(f"rule {rule.id}: disable: true contradicts severity {severity.value}",  # type: ignore[union-attr]
                      (*where, "disable"), "drop one of the two")
        disabled = flag if disabled is None else disabled
    options: list[tuple[str, Any]] = []
    if "options" in value:
        opts = value["options"]
        if opts is None:
            opts = {}
        if not isinstance(opts, dict):
            raise err(f"rule {rule.id}: options must be a mapping of option name to value", (*where, "options"),
                      _options_fix(rule))
        for name, val in opts.items():
            owhere = (*where, "options", name)
            opt = rule.option(name) if isinstance(name, str) else None
            if opt is None:
                import difflib

                if not rule.options:
                    raise err(f"rule {rule.id}: has no options (got {name!r})", owhere, "remove 'options'")
                close = difflib.get_close_matches(str(name), [o.name for o in rule.options], n=1)
                raise err(f"rule {rule.id}: unknown option {name!r}", owhere,
                          (f"did you mean {close[0]!r}? " if close else "") + _options_fix(rule))
            problem = opt.problem(val)
            if problem:
                raise err(f"rule {rule.id}: option {name}: {problem}", owhere,
                          f"{name} is a {opt.type_name} (default {opt.default!r}); ncclctl explain {rule.id}")
            if opt.type is float:
                val = float(val)
            elif opt.type is list:
                val = tuple(val)
            options.append((name, val))
    return RuleConfig(severity=severity, options=tuple(options), disabled=disabled)


def _options_fix(rule: Rule) -> str:
    if not rule.options:
        return f"rule {rule.id} has no options"
    return "options: " + ", ".join(f"{o.name} ({o.type_name})" for o in rule.options)


# --------------------------------------------------------------------------------------------------
# YAML with line numbers (shared with the expected-state profile loader)


def load_yaml(text: str, path: str) -> tuple[Any, dict[tuple, int]]:
    """Parse YAML safely (:mod:`ncclctl.yamlio`); return the data and a map from key paths (tuples of
    keys/indices) to 1-based lines. Duplicate mapping keys, which PyYAML silently resolves to the last one, are an
    error here.
    """
    import yaml

    from ncclctl.yamlio import load

    data, root = load(text, path)
    lines: dict[tuple, int] = {}
    if root is not None:
        lines[()] = root.start_mark.line + 1
        keys = yaml.SafeLoader("")
        try:
            _walk(root, (), lines, path, set(), keys)
        finally:
            keys.dispose()
    return data, lines


def _walk(node: Any, where: tuple, lines: dict[tuple, int], path: str, seen_nodes: set[int], keys: Any) -> None:
    """Record key lines. A node reached again through a YAML alias is not walked again: aliases share nodes,
    and walking every path through them is exponential ("billion laughs"); such keys report the alias's line."""
    import yaml

    if id(node) in seen_nodes:
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen = set()
        for k, v in node.value:
            key = _scalar_key(k, keys)
            if key in seen:
                raise InputError(f"duplicate key {key!r}", path=path, line=k.start_mark.line + 1,
                                 fix="keep one entry per key (YAML would silently use the last one)")
            seen.add(key)
            lines[where + (key,)] = k.start_mark.line + 1
            _walk(v, where + (key,), lines, path, seen_nodes, keys)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            lines[where + (i,)] = v.start_mark.line + 1
            _walk(v, where + (i,), lines, path, seen_nodes, keys)


def _scalar_key(node: Any, loader: Any) -> Any:
    import yaml

    if not isinstance(node, yaml.ScalarNode):  # a mapping or list used as a key: name it, never expand it
        return f"<{'mapping' if isinstance(node, yaml.MappingNode) else 'list'} at line {node.start_mark.line + 1}>"
    # Construct the key as safe_load would (so `1:` is the int 1, `off:` is False), with one loader for all keys.
    try:
        return loader.construct_object(node)
    except (yaml.YAMLError, ValueError):  # e.g. the merge key '<<' on its own, a 5000-digit integer
        loader.constructed_objects.clear()
        loader.recursive_objects.clear()
        return node.value


def line_of(lines: dict[tuple, int], where: tuple) -> int | None:
    """The line of ``where``, else of its closest enclosing key."""
    w = tuple(where)
    while True:
        if w in lines:
            return lines[w]
        if not w:
            return None
        w = w[:-1]


# --------------------------------------------------------------------------------------------------
# JSON Schema (generated from the registry; the file in schemas/ is tested to be current)


def option_schema(opt) -> dict:
    t = opt.type
    if t is bool:
        s: dict = {"type": "boolean"}
    elif t is int or t is float:
        s = {"type": "integer" if t is int else "number"}
        if opt.min is not None:
            s["minimum"] = opt.min if t is float else int(opt.min)
        if opt.max is not None:
            s["maximum"] = opt.max if t is float else int(opt.max)
    elif t is str:
        s = {"type": "string"}
        if opt.choices:
            s["enum"] = list(opt.choices)
    else:
        items: dict = {"type": "string"}
        if opt.choices:
            items["enum"] = list(opt.choices)
        s = {"type": "array", "items": items}
    s["default"] = list(opt.default) if t is list else opt.default
    s["description"] = opt.help
    return s


def json_schema() -> dict:
    """The JSON Schema (2020-12) of ``.ncclctl.yaml`` for the rules registered in this version."""
    rules = all_rules()
    defs: dict[str, Any] = {
        "short": {"description": "off | on | a severity (YAML reads a bare off/on as false/true)",
                  "enum": list(_SHORT) + [False, True]},
        "level": {"enum": list(_LEVELS) + [False]},
    }
    props: dict[str, Any] = {}
    names: list[str] = []
    for r in rules:
        body: dict[str, Any] = {
            "type": "object",
            "additionalProperties": False,
            # disable: true contradicts a severity that enables the rule
            "not": {"required": ["severity", "disable"],
                    "properties": {"severity": {"enum": ["error", "warning", "info"]}, "disable": {"const": True}}},
            "properties": {
                "severity": {"$ref": "#/$defs/level"},
                "disable": {"type": "boolean"},
                "options": {"type": ["object", "null"], "additionalProperties": False,
                            "properties": {o.name: option_schema(o) for o in r.options}},
            },
        }
        defs[r.id] = {"title": f"{r.id} {r.slug}: {r.title}",
                      "anyOf": [{"$ref": "#/$defs/short"}, body]}
        props[r.id] = {"$ref": f"#/$defs/{r.id}"}
        props[r.slug] = {"$ref": f"#/$defs/{r.id}"}
        names += [r.id, r.slug]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://ncclctl.invalid/schemas/ncclctl-config.schema.json",
        "title": "ncclctl rule configuration (.ncclctl.yaml)",
        "description": "Generated from the rule registry by ncclctl (every rule: node, fleet, file, fabric); see docs/lint.md.",
        "type": ["object", "null"],
        "additionalProperties": False,
        "properties": {
            "extends": {"enum": ["default", "strict"], "default": "default",
                        "description": "strict: also run default-off rules, with their strict severities"},
            "rules": {"type": ["object", "null"], "additionalProperties": False, "properties": props},
            "ignore": {
                "type": ["array", "null"],
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["hosts", "rules"],
                    "properties": {
                        "hosts": {"type": "string", "minLength": 1, "description": "fnmatch glob on host names"},
                        "rules": {"anyOf": [{"enum": names},
                                            {"type": "array", "minItems": 1, "items": {"enum": names}}]},
                    },
                },
            },
        },
        "$defs": defs,
    }
