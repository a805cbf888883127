"""Ansible inventories (INI and YAML) as ncclctl inventories: the hosts a site already lists for Ansible.

Read as Ansible's ``ini`` and ``yaml`` inventory plugins read them, without Ansible:

* INI: ``[group]`` sections of host lines (``name key=value ...``), ``[group:vars]`` (``key=value``) and
  ``[group:children]``; hosts before any section are ungrouped; ``#`` and ``;`` start comments.
* YAML: groups (``all:`` at the top, or any group names) with ``hosts:`` (name -> vars or null), ``vars:`` and
  ``children:`` (group name -> group).
* Host patterns as Ansible expands them: ``gpu[01:16]`` (zero-padded like the bounds), ``gpu[1:16:2]`` (a stride),
  ``rack[a:d]`` (letters); several ranges in one name multiply.

Where each host's node comes from is a variable, on the host or on a group (the host's own wins, then the deepest
group's, as Ansible merges them): ``ncclctl_snapshot`` (a snapshot folder or .tar.gz) or ``ncclctl_model`` (a
node-model JSON), relative to the inventory file, with ``{host}`` or ``{{ inventory_hostname }}`` replaced by the
host's name; ``ncclctl_group`` (else the host's first group other than ``all``/``ungrouped``) is its group hint.
Other variables (``ansible_host``, ...) are ignored. Jinja beyond ``{{ inventory_hostname }}`` is refused.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from ncclctl.errors import InputError

#: The variables ncclctl reads from an Ansible inventory.
SNAPSHOT_VAR, MODEL_VAR, GROUP_VAR = "ncclctl_snapshot", "ncclctl_model", "ncclctl_group"
_FIX = ("an Ansible inventory gives each host (or its group) ncclctl_snapshot or ncclctl_model, e.g. "
        "[gpus:vars] ncclctl_snapshot=snaps/{host}.tar.gz")
_RANGE = re.compile(r"\[([^\]:]*):([^\]:]*)(?::([^\]]*))?\]")
_JINJA_HOST = re.compile(r"\{\{\s*inventory_hostname(?:_short)?\s*\}\}")


class _Group:
    def __init__(self, name: str) -> None:
        self.name = name
        self.hosts: list[str] = []
        self.vars: dict[str, Any] = {}
        self.children: list[str] = []
        self.line: int | None = None


def looks_like_ansible(path: str, text: str) -> bool:
    """An Ansible inventory rather than ncclctl's YAML: an INI file (a ``[section]`` line or a first line that is a
    host, not ``key:``), or YAML whose top level is ``all:`` or groups with hosts/children/vars."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";", "---")):
            continue
        if line.startswith("["):
            return True
        m = re.match(r"^([A-Za-z0-9_.\-\[\]:]+)\s*:(\s|$)", raw)
        if m is None:
            return True  # "host key=value": INI
        if m.group(1) in ("version", "hosts", "fabric"):  # ncclctl's own keys
            return False
        return m.group(1) == "all" or _yaml_groups(path, text)
    return False


def _yaml_groups(path: str, text: str) -> bool:
    from ncclctl.yamlio import load

    try:  # through the safe loader (depth and size limits); a broken file is left to ncclctl's reader to report
        data, _ = load(text, path, max_depth=32, fix=_FIX)
    except InputError:
        return False
    return (isinstance(data, dict) and "hosts" not in data and "version" not in data and bool(data) and
            all(isinstance(v, dict) and set(map(str, v)) <= {"hosts", "vars", "children"} or v is None
                for v in data.values()))


def expand(pattern: str, path: str, line: int | None, limit: int) -> list[str]:
    """An Ansible host pattern's names, in order (``gpu[01:03]`` -> gpu01, gpu02, gpu03); several ranges multiply.
    Counted before anything is built: a pattern naming more than ``limit`` hosts is refused."""
    bad = InputError(f"host pattern {pattern!r}: a range is [START:END] or [START:END:STEP] (numbers, or letters "
                     "a:z)", path=path, line=line, fix="e.g. gpu[01:16] or rack[a:d]")
    parts: list[list[str]] = []
    pos, count = 0, 1
    for m in _RANGE.finditer(pattern):
        lo, hi, step = m.group(1), m.group(2), m.group(3)
        try:
            stride = int(step) if step else 1
        except ValueError:
            raise bad from None
        if stride < 1:
            raise bad
        if lo.isdigit() and hi.isdigit() and len(lo) < 10 and len(hi) < 10:
            if int(hi) < int(lo):
                raise bad
            n = (int(hi) - int(lo)) // stride + 1
        elif len(lo) == 1 and len(hi) == 1 and lo.isalpha() and hi.isalpha() and lo.isascii() and hi.isascii() \
                and lo <= hi:
            n = (ord(hi) - ord(lo)) // stride + 1
        else:
            raise bad
        count *= n
        if count > limit:
            raise InputError(f"host pattern {pattern!r} names more than {limit} hosts", path=path, line=line,
                             fix="check the range")
        if lo.isdigit():
            width = len(lo) if lo.startswith("0") and len(lo) > 1 or len(lo) == len(hi) else 0
            values = [str(i).zfill(width) for i in range(int(lo), int(hi) + 1, stride)]
        else:
            values = [chr(c) for c in range(ord(lo), ord(hi) + 1, stride)]
        parts.append([pattern[pos:m.start()]])
        parts.append(values)
        pos = m.end()
    if not parts:
        return [pattern]
    parts.append([pattern[pos:]])
    out = [""]
    for choices in parts:
        out = [prefix + c for prefix in out for c in choices]
    return out


def _cap(group_hosts: list[str], host_vars: dict[str, Any], limit: int, path: str, line: int | None) -> None:
    """More than ``limit`` hosts in all (or listed in one group: a pattern repeated) is refused as it is read."""
    if len(host_vars) > limit or len(group_hosts) > limit:
        raise InputError(f"more than {limit} hosts", path=path, line=line, fix="split the inventory")


def _value(text: str) -> Any:
    """An INI value as Ansible's ini plugin reads it: a Python literal when it is one, else the string."""
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def parse_ini(text: str, path: str, limit: int) -> tuple[dict[str, _Group], dict[str, dict[str, Any]], dict[str, int]]:
    groups: dict[str, _Group] = {"all": _Group("all"), "ungrouped": _Group("ungrouped")}
    host_vars: dict[str, dict[str, Any]] = {}
    host_line: dict[str, int] = {}
    current, kind = "ungrouped", "hosts"
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        m = re.match(r"^\[([^\]]+)\]\s*(?:[#;].*)?$", line)
        if m:
            name, _, kind = m.group(1).partition(":")
            kind = kind or "hosts"
            if kind not in ("hosts", "vars", "children") or not name:
                raise InputError(f"section [{m.group(1)}]: a section is [group], [group:vars] or [group:children]",
                                 path=path, line=n, fix=_FIX)
            current = name
            group = groups.setdefault(name, _Group(name))
            group.line = group.line or n
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise InputError(f"cannot split the line: {exc}", path=path, line=n, fix="close the quotes") from None
        if not words:
            continue
        group = groups[current]
        if kind == "vars":
            key, eq, value = line.partition("=")
            if not eq or not key.strip():
                raise InputError(f"[{current}:vars]: expected key=value", path=path, line=n, fix=_FIX)
            group.vars[key.strip()] = _value(shlex.split(value, comments=True)[0] if value.strip() else "")
        elif kind == "children":
            group.children.append(words[0])
            groups.setdefault(words[0], _Group(words[0]))
        else:
            variables: dict[str, Any] = {}
            for w in words[1:]:
                key, eq, value = w.partition("=")
                if not eq:
                    raise InputError(f"host {words[0]}: {w!r} is not key=value", path=path, line=n, fix=_FIX)
                variables[key] = _value(value)
            for host in expand(words[0], path, n, limit):
                group.hosts.append(host)
                host_vars.setdefault(host, {}).update(variables)
                host_line.setdefault(host, n)
            _cap(group.hosts, host_vars, limit, path, n)
    return groups, host_vars, host_line


def parse_yaml(data: Any, root: Any, path: str, limit: int) -> tuple[dict[str, _Group], dict[str, dict[str, Any]],
                                                                      dict[str, int]]:
    groups: dict[str, _Group] = {"all": _Group("all"), "ungrouped": _Group("ungrouped")}
    host_vars: dict[str, dict[str, Any]] = {}
    host_line: dict[str, int] = {}
    lines = _host_lines(root)

    def walk(name: str, body: Any) -> None:
        group = groups.setdefault(name, _Group(name))
        if body is None:
            return
        if not isinstance(body, dict):
            raise InputError(f"group {name}: a group is a mapping of hosts, vars and children", path=path, fix=_FIX)
        bad = sorted(set(map(str, body)) - {"hosts", "vars", "children"})
        if bad:
            raise InputError(f"group {name}: unknown key {bad[0]!r} (a group has hosts, vars, children)", path=path,
                             fix=_FIX)
        hosts = body.get("hosts") or {}
        if not isinstance(hosts, dict):
            raise InputError(f"group {name}: 'hosts' is a mapping of host names (to their variables or null)",
                             path=path, fix=_FIX)
        for pattern, variables in hosts.items():
            if variables is not None and not isinstance(variables, dict):
                raise InputError(f"host {pattern}: its variables are a mapping", path=path,
                                 line=lines.get(str(pattern)), fix=_FIX)
            for host in expand(str(pattern), path, lines.get(str(pattern)), limit):
                group.hosts.append(host)
                host_vars.setdefault(host, {}).update(variables or {})
                if str(pattern) in lines:
                    host_line.setdefault(host, lines[str(pattern)])
            _cap(group.hosts, host_vars, limit, path, lines.get(str(pattern)))
        group.vars.update(body.get("vars") or {})
        children = body.get("children") or {}
        if not isinstance(children, dict):
            raise InputError(f"group {name}: 'children' is a mapping of group names", path=path, fix=_FIX)
        for child, child_body in children.items():
            if str(child) not in group.children:
                group.children.append(str(child))
            walk(str(child), child_body)

    for name, body in data.items():
        walk(str(name), body)
    return groups, host_vars, host_line


def _host_lines(root: Any) -> dict[str, int]:
    """Host pattern -> the line of its first key under any ``hosts:`` mapping."""
    import yaml

    out: dict[str, int] = {}

    def visit(node: Any) -> None:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == "hosts" and isinstance(v, yaml.MappingNode):
                    for hk, _ in v.value:
                        out.setdefault(str(hk.value), hk.start_mark.line + 1)
                visit(v)

    visit(root)
    return out


def resolve(groups: dict[str, _Group], host_vars: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any], str | None]]:
    """(host, merged variables, first group) for every host, in the order the inventory names them: ``all``'s
    vars, then each group's from the shallowest to the deepest (children after their parents), then the host's."""
    parents: dict[str, list[str]] = {}
    for g in groups.values():
        for c in g.children:
            parents.setdefault(c, []).append(g.name)

    def depth(name: str, seen: frozenset = frozenset()) -> int:
        if name in seen:
            return 0
        return 1 + max((depth(p, seen | {name}) for p in parents.get(name, ()) if p != "all"), default=0)

    member: dict[str, list[str]] = {}
    order: list[str] = []
    for g in groups.values():
        for h in g.hosts:
            if h not in member:
                order.append(h)
            member.setdefault(h, [])
            if g.name not in member[h]:
                member[h].append(g.name)

    def ancestors(name: str, acc: set[str]) -> set[str]:
        for p in parents.get(name, ()):
            if p not in acc:
                acc.add(p)
                ancestors(p, acc)
        return acc

    out = []
    for h in order:
        names: set[str] = set()
        for gname in member[h]:
            names |= {gname} | ancestors(gname, set())
        merged = dict(groups["all"].vars)
        for gname in sorted(names - {"all"}, key=lambda n: (depth(n), n)):
            merged.update(groups[gname].vars)
        merged.update(host_vars.get(h, {}))
        first = next((g for g in member[h] if g not in ("all", "ungrouped")), None)
        out.append((h, merged, first))
    return out


def substitute(template: Any, host: str, path: str, line: int | None, var: str) -> str:
    if not isinstance(template, str) or not template:
        raise InputError(f"host {host}: {var} must be a path", path=path, line=line, fix=_FIX)
    text = _JINJA_HOST.sub(host, template).replace("{host}", host)
    if "{{" in text or "{%" in text:
        raise InputError(f"host {host}: {var} uses Jinja that ncclctl does not evaluate: {template!r}", path=path,
                         line=line, fix="use {host} or {{ inventory_hostname }} only, or give the path per host")
    return text


def hosts_of(path: str, text: str, *, limit: int,
             names_only: bool = False) -> list[tuple[str, str, str, str | None, int | None]]:
    """(host, "snapshot" or "model", the path as written (relative to the inventory), group, line) for every host
    of an Ansible inventory (INI or YAML), in the inventory's order. ``names_only``: the hosts need no
    ``ncclctl_snapshot``/``ncclctl_model`` (kind and path are then empty strings): ``fleet lint --facts
    --inventory`` only asks which hosts should have reported."""
    if _looks_yaml(text):
        from ncclctl.yamlio import load

        data, root = load(text, path, max_depth=32, fix=_FIX)
        if not isinstance(data, dict):
            raise InputError("an Ansible YAML inventory is a mapping of groups (all: ...)", path=path, fix=_FIX)
        groups, host_vars, host_line = parse_yaml(data, root, path, limit)
    else:
        groups, host_vars, host_line = parse_ini(text, path, limit)
    resolved = resolve(groups, host_vars)
    if not resolved:
        raise InputError("the Ansible inventory names no host", path=path, fix=_FIX)
    if len(resolved) > limit:
        raise InputError(f"more than {limit} hosts", path=path, fix="split the inventory")
    out = []
    for host, variables, first in resolved:
        line = host_line.get(host)
        if names_only:
            group = variables.get(GROUP_VAR, first)
            out.append((host, "", "", None if group is None else str(group), line))
            continue
        has = [v for v in (SNAPSHOT_VAR, MODEL_VAR) if variables.get(v) is not None]
        if len(has) != 1:
            raise InputError(f"host {host}: " + ("no ncclctl_snapshot or ncclctl_model variable (on the host or a "
                                                 "group of it)" if not has else
                                                 "both ncclctl_snapshot and ncclctl_model; give one"),
                             path=path, line=line, fix=_FIX)
        kind = "snapshot" if has[0] == SNAPSHOT_VAR else "model"
        where = substitute(variables[has[0]], host, path, line, has[0])
        group = variables.get(GROUP_VAR, first)
        out.append((host, kind, where, None if group is None else str(group), line))
    return out


def _looks_yaml(text: str) -> bool:
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        return line.startswith("---") or bool(re.match(r"^[A-Za-z0-9_.\-]+\s*:(\s|$)", line))
    return False
