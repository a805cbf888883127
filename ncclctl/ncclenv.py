"""NCCL environment semantics that lint and generators share (nccl-format.md §5; misc/utils.cc).

``NCCL_IB_HCA``: ``[^][=]name[:port[:rail[:plane]]][,...]``. ``^`` (first) excludes, ``=`` (after ``^`` if both)
makes every name exact, otherwise each name is a *prefix* (``mlx5_1`` also selects ``mlx5_10``...). ``:port`` is
1-based, absent means every port. At most 32 entries (16 before 2.18.5).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HcaEntry:
    name: str
    port: int | None  # None: every port


@dataclass(frozen=True)
class HcaSpec:
    exclude: bool
    exact: bool
    entries: tuple[HcaEntry, ...]


def parse_ib_hca(value: str) -> HcaSpec:
    s = value
    exclude = s.startswith("^")
    if exclude:
        s = s[1:]
    exact = s.startswith("=")
    if exact:
        s = s[1:]
    entries = []
    for item in s.split(","):
        if not item:
            continue
        name, _, rest = item.partition(":")
        port_text = rest.split(":")[0] if rest else ""
        try:
            port = int(port_text) if port_text else None
        except ValueError:
            port = None
        entries.append(HcaEntry(name=name, port=port))
    return HcaSpec(exclude=exclude, exact=exact, entries=tuple(entries))


def _matches(spec: HcaSpec, name: str, port: int) -> bool:
    for e in spec.entries:
        name_ok = name == e.name if spec.exact else name.startswith(e.name)
        if name_ok and (e.port is None or e.port == port):
            return True
    return False


def hca_selects(value: str, devices: list[tuple[str, int]]) -> set[tuple[str, int]]:
    """Which (device, port) pairs NCCL's IB plugin keeps for this NCCL_IB_HCA value."""
    spec = parse_ib_hca(value)
    if not spec.entries:
        return set(devices)
    return {(n, p) for n, p in devices if _matches(spec, n, p) != spec.exclude}


def effective_setting(node, name: str) -> str | None:
    """A variable as NCCL resolves it on the host: process environment, then NCCL_CONF_FILE or ~/.nccl.conf,
    then /etc/nccl.conf; each conf line ``NAME=VALUE`` verbatim (no trimming, no quotes removed), first writer wins."""
    env = dict(node.facts.nccl_env)
    if name in env:
        return env[name]
    user = [c for c in node.facts.conf_files if c.path != "/etc/nccl.conf"]
    system = [c for c in node.facts.conf_files if c.path == "/etc/nccl.conf"]
    for conf in user + system:
        for line in conf.text.splitlines():
            line = line[:-1] if line.endswith("\r") else line
            if line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.partition("=")
            if key == name:
                return value
    return None
