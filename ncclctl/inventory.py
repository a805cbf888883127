"""Cluster inventory (YAML; schema ``schemas/inventory.schema.json``): which hosts, where each one's node comes from.

::

    version: 1
    fabric: fabric/ibnetdiscover.txt        # optional: ibnetdiscover / iblinkinfo output for `fabric` commands
    hosts:
      node001: {snapshot: snaps/node001}    # a snapshot folder or .tar.gz (ncclctl snapshot)
      node002: {model: models/node002.json} # or a node model (ncclctl probe --format json)
      node003: {snapshot: snaps/node003.tar.gz, group: su1}   # optional group (scalable unit) hint
      gpu[001-128,200]: {snapshot: "snaps/{host}.tar.gz"}      # Slurm hostlist: one host each, {host} its name
      gb-r01-t01: {model: m/t01.json, labels: {nvidia.com/gpu.clique: "<cluster UUID>.<clique id>"}}

``labels``: the host's Kubernetes node labels as the cluster carries them (``kubectl get node -o json``'s
``metadata.labels``, any subset); fleet rules hold the ones they know against the host's own facts (FLT013: GPU
Feature Discovery's ``nvidia.com/gpu.clique`` against NVML's fabric cluster UUID and clique id).

A key in Slurm's hostlist form (``gpu[001-128,200]``, expanded by ClusterShell's ``NodeSet``) stands for each
of its hosts; ``{host}`` in its paths is each host's name (required when the key names several hosts), and a host
named twice (by two keys) is refused like a duplicate key. At most :data:`MAX_HOSTS` hosts.

Paths are relative to the inventory file. Host names are the names the fabric knows the host by (the first
word of an HCA's node description) and the names written into hostfiles. Loading is lazy: ``load_inventory``
reads and checks the YAML only; :meth:`InventoryHost.load_node` probes one snapshot or reads one model.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ncclctl.errors import InputError
from ncclctl.record import record

_FIX = "see schemas/inventory.schema.json"
_HOST_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
_HOST_KEYS = {"snapshot", "model", "group", "labels"}
_HOSTLIST_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\[[0-9,\-]+\][A-Za-z0-9._\[\],\-]*$")
#: The most hosts an inventory may name (hostlists included): a typo such as gpu[1-99999999] is refused, not expanded.
MAX_HOSTS = 100_000
_TOP_KEYS = {"version", "fabric", "hosts"}


@record
class InventoryHost:
    name: str
    snapshot: str | None = None  # path as seen from the current directory
    model: str | None = None  # path as seen from the current directory
    group: str | None = None
    line: int | None = None  # line of the host's entry in the inventory file
    labels: tuple[tuple[str, str], ...] = ()  # Kubernetes node labels the inventory carries, sorted by key

    @property
    def source(self) -> str:
        return self.snapshot or self.model or ""

    def load_node(self):
        """The host's :class:`~ncclctl.model.Node` (probe of the snapshot, or the model JSON)."""
        if self.model is not None:
            return load_model(self.model)
        return load_snapshot(self.snapshot)


@record
class Inventory:
    path: str
    hosts: tuple[InventoryHost, ...]
    fabric: str | None = None  # path as seen from the current directory

    def host(self, name: str) -> InventoryHost | None:
        for h in self.hosts:
            if h.name == name:
                return h
        return None


def load_model(path: str):
    from ncclctl.model import Node

    from ncclctl.inputs import read_json

    return Node.from_dict(read_json(path, "model"), source=path)


def load_snapshot(path: str):
    from ncclctl.probe import probe
    from ncclctl.probe.archive import opened_root

    with opened_root(path) as tree:
        return probe(tree)


def load_inventory(path: str) -> Inventory:
    from ncclctl.inputs import read_text
    from ncclctl.yamlio import load

    text = read_text(path, "inventory")
    from ncclctl.ansible_inventory import looks_like_ansible

    if looks_like_ansible(path, text):
        return _load_ansible(path, text)

    # An inventory nests 3 levels; the depth cap keeps absurd nesting away from the composer.
    data, root = load(text, path, max_depth=32, fix="an inventory is 'hosts:' with one mapping per host (" + _FIX + ")")
    if not isinstance(data, dict):
        raise InputError("an inventory is a mapping with a 'hosts' mapping", path=path, fix=_FIX)
    lines = _key_lines(root)
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r}", path=path, line=lines.get(("", unknown[0])),
                         fix="allowed keys: " + ", ".join(sorted(_TOP_KEYS)))
    if data.get("version", 1) != 1:
        raise InputError(f"unsupported inventory version {data.get('version')!r}", path=path, fix="use version: 1")
    # Relative to the inventory file, kept relative when the inventory path is (deterministic messages).
    base = os.path.dirname(path)

    def rel(p: Any, where: str, line: int | None) -> str:
        if not isinstance(p, str) or not p:
            raise InputError(f"{where} must be a path (string)", path=path, line=line, fix=_FIX)
        return os.path.normpath(os.path.join(base, p))

    fabric = data.get("fabric")
    fabric_path = rel(fabric, "fabric", lines.get(("", "fabric"))) if fabric is not None else None
    hosts_raw = data.get("hosts")
    if not isinstance(hosts_raw, dict) or not hosts_raw:
        raise InputError("'hosts' must be a non-empty mapping of host name to {snapshot|model}", path=path,
                         line=lines.get(("", "hosts")), fix=_FIX)
    hosts = []
    seen: dict[str, int | None] = {}
    for key, entry in hosts_raw.items():
        line = lines.get(("hosts", str(key)))
        names = [key]
        if isinstance(key, str) and "[" in key:
            names = _expand(key, path, line)
            if len(seen) + len(names) > MAX_HOSTS:
                raise InputError(f"more than {MAX_HOSTS} hosts", path=path, line=line, fix="split the inventory")
        many = len(names) > 1
        for name in names:
            if not isinstance(name, str) or not _HOST_RE.match(name):
                raise InputError(f"host name {name!r} is not a host name", path=path, line=line,
                                 fix="use the host's short name (letters, digits, '.', '_', '-'), or a Slurm hostlist "
                                     "such as gpu[001-128]")
            if name in seen:
                raise InputError(f"host {name} is named twice (first on line {seen[name]})", path=path, line=line,
                                 fix="name each host once")
            seen[name] = line
            hosts.append(_host(name, entry, line, path, rel, many=many))
    return Inventory(path=path, hosts=tuple(hosts), fabric=fabric_path)


def host_names(arg: str) -> list[str]:
    """The hosts an inventory names, whatever each one's node comes from (none needed): ``fleet lint --facts
    --inventory``'s list of the hosts that should have reported. ``arg``: an Ansible inventory (INI or YAML),
    ncclctl's inventory YAML, or, when no such file exists, a Slurm hostlist (``gpu[001-128,200]``)."""
    from ncclctl.inputs import read_text
    from ncclctl.yamlio import load

    if not os.path.exists(arg) and "/" not in arg and re.fullmatch(r"[A-Za-z0-9._\-\[\],]+", arg):
        names = []
        for part in _split_hostlist(arg):
            names += _expand(part, "--inventory", None) if "[" in part else [part]
            if len(names) > MAX_HOSTS:
                raise InputError(f"more than {MAX_HOSTS} hosts", path="--inventory", fix="split the hostlist")
        for name in names:
            if not _HOST_RE.match(name):
                raise InputError(f"host name {name!r} is not a host name", path="--inventory",
                                 fix="give a hostlist such as gpu[001-128,200], or an inventory file")
        return list(dict.fromkeys(names))
    text = read_text(arg, "inventory")
    from ncclctl.ansible_inventory import hosts_of, looks_like_ansible

    if looks_like_ansible(arg, text):
        return [h for h, *_ in hosts_of(arg, text, limit=MAX_HOSTS, names_only=True)]
    data, root = load(text, arg, max_depth=32, fix="an inventory is 'hosts:' with one mapping per host (" + _FIX + ")")
    if not isinstance(data, dict) or not isinstance(data.get("hosts"), dict) or not data["hosts"]:
        raise InputError("an inventory is a mapping with a non-empty 'hosts' mapping", path=arg, fix=_FIX)
    lines = _key_lines(root)
    out: list[str] = []
    for key in data["hosts"]:
        line = lines.get(("hosts", str(key)))
        names = _expand(key, arg, line) if isinstance(key, str) and "[" in key else [key]
        for name in names:
            if not isinstance(name, str) or not _HOST_RE.match(name):
                raise InputError(f"host name {name!r} is not a host name", path=arg, line=line, fix=_FIX)
        out += names
        if len(out) > MAX_HOSTS:
            raise InputError(f"more than {MAX_HOSTS} hosts", path=arg, line=line, fix="split the inventory")
    return list(dict.fromkeys(out))


def _split_hostlist(text: str) -> list[str]:
    """``gpu[001-004,9],cpu1`` as its comma-separated parts, commas inside brackets kept."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c == "["
        depth -= c == "]"
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


def _load_ansible(path: str, text: str) -> Inventory:
    """An Ansible inventory (INI or YAML; :mod:`ncclctl.ansible_inventory`) as an inventory."""
    from ncclctl.ansible_inventory import hosts_of

    base = os.path.dirname(path)
    hosts = []
    for name, kind, where, group, line in hosts_of(path, text, limit=MAX_HOSTS):
        if not _HOST_RE.match(name):
            raise InputError(f"host name {name!r} is not a host name", path=path, line=line,
                             fix="use the host's short name (letters, digits, '.', '_', '-')")
        p = os.path.normpath(os.path.join(base, where))
        hosts.append(InventoryHost(name=name, snapshot=p if kind == "snapshot" else None,
                                   model=p if kind == "model" else None, group=group, line=line))
    return Inventory(path=path, hosts=tuple(hosts))


def _expand(key: str, path: str, line: int | None) -> list[str]:
    """A Slurm hostlist key (``gpu[001-128,200]``) as its host names, in order."""
    if not _HOSTLIST_RE.match(key):
        raise InputError(f"host name {key!r} is neither a host name nor a hostlist", path=path, line=line,
                         fix="a hostlist is PREFIX[RANGES]SUFFIX, e.g. gpu[001-128,200]")
    # Counted before NodeSet sees it: NodeSet expands its ranges eagerly (gpu[1-99999999] ran past 20 s here).
    count = 1
    for brackets in re.findall(r"\[([^\]]*)\]", key):
        size = 0
        for item in brackets.split(","):
            lo, _, hi = item.partition("-")
            if lo.isdigit() and (not hi or hi.isdigit()):
                size += max(int(hi or lo) - int(lo) + 1, 1)
        count *= max(size, 1)
        if count > MAX_HOSTS:
            raise InputError(f"hostlist {key!r} names more than {MAX_HOSTS} hosts", path=path, line=line,
                             fix="check the ranges")
    from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetParseError
    from ClusterShell.RangeSet import RangeSetParseError

    try:
        nodes = NodeSet(key, resolver=RESOLVER_NOGROUP)  # names only: no @group lookups
        count = len(nodes)
    except (NodeSetParseError, RangeSetParseError, ValueError) as exc:
        raise InputError(f"hostlist {key!r}: {exc}", path=path, line=line,
                         fix="a hostlist is PREFIX[RANGES]SUFFIX, e.g. gpu[001-128,200]") from None
    if count > MAX_HOSTS:
        raise InputError(f"hostlist {key!r} names {count} hosts, more than {MAX_HOSTS}", path=path, line=line,
                         fix="check the ranges")
    return list(nodes)


def _host(name: str, entry: Any, line: int | None, path: str, rel: Any, *, many: bool) -> InventoryHost:
    if isinstance(entry, str):
        entry = {"snapshot": entry}
    if not isinstance(entry, dict):
        raise InputError(f"host {name}: give a mapping with 'snapshot' or 'model'", path=path, line=line, fix=_FIX)
    bad = sorted(set(map(str, entry)) - _HOST_KEYS)
    if bad:
        raise InputError(f"host {name}: unknown key {bad[0]!r}", path=path, line=line,
                         fix="allowed keys: " + ", ".join(sorted(_HOST_KEYS)))
    if ("snapshot" in entry) == ("model" in entry):
        raise InputError(f"host {name}: give exactly one of 'snapshot' or 'model'", path=path, line=line, fix=_FIX)
    group = entry.get("group")
    if group is not None and not isinstance(group, (str, int)):
        raise InputError(f"host {name}: 'group' must be a name", path=path, line=line, fix=_FIX)
    labels = entry.get("labels", {})
    if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float, bool))
                                                for k, v in labels.items()):
        raise InputError(f"host {name}: 'labels' must map label names to values (Kubernetes node labels)", path=path,
                         line=line, fix='e.g. labels: {nvidia.com/gpu.clique: "<cluster UUID>.<clique id>"}')
    kind = "snapshot" if "snapshot" in entry else "model"
    where = entry[kind]
    if isinstance(where, str):
        if many and "{host}" not in where:
            raise InputError(f"hosts.{name}.{kind}: a hostlist's path must contain {{host}} (each host's name)",
                             path=path, line=line, fix=f"e.g. {kind}: snaps/{{host}}.tar.gz")
        where = where.replace("{host}", name)
    return InventoryHost(name=name, snapshot=rel(where, f"hosts.{name}.snapshot", line) if kind == "snapshot" else None,
                         model=rel(where, f"hosts.{name}.model", line) if kind == "model" else None,
                         group=str(group) if group is not None else None, line=line,
                         labels=tuple(sorted((k, _label_value(v)) for k, v in labels.items())))


def _label_value(v: Any) -> str:
    """A label's value as Kubernetes stores it (a string; YAML true/false as 'true'/'false')."""
    return str(v).lower() if isinstance(v, bool) else str(v)


def _key_lines(root: Any) -> dict[tuple[str, str], int]:
    """(parent key, key) -> 1-based line of the key, for the top level and the 'hosts' mapping."""
    import yaml

    out: dict[tuple[str, str], int] = {}
    if not isinstance(root, yaml.MappingNode):
        return out
    for k, v in root.value:
        out[("", str(k.value))] = k.start_mark.line + 1
        if k.value == "hosts" and isinstance(v, yaml.MappingNode):
            for hk, _ in v.value:
                out[("hosts", str(hk.value))] = hk.start_mark.line + 1
    return out
