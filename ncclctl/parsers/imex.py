"""Parsers for the IMEX service's files and tool (GB200/GB300 multi-node NVLink).

* ``/etc/nvidia-imex/config.cfg``: ``KEY=VALUE`` lines, ``#`` comments (:func:`parse_imex_config`).
* the node list it names (``IMEX_NODE_CONFIG_FILE``, default ``/etc/nvidia-imex/nodes_config.cfg``): one IP
  address or host name per line, ``#`` comments (:func:`parse_nodes_config`).
* ``nvidia-imex-ctl -N``: the domain's nodes (``Node #0 - 10.0.0.1 - READY - Version: 570.124.06``, the
  separators spaced as the tool pads them), the connectivity matrix, and ``Domain State: UP``; or its JSON form
  (``-N -j``: an object with ``nodes`` and ``status``/``domain_state``), read key by key as far as it goes
  (:func:`parse_imex_ctl`).

Sources: NVIDIA IMEX Service for NVLink Networks user guide (config options, the command service, IMEX channels).
"""

from __future__ import annotations

import ipaddress
import re

from ncclctl.parsers._common import as_text, load_json, perr, split_lines, strip_ansi
from ncclctl.record import record

__all__ = ["ImexCtl", "ImexNode", "parse_fib_trie_local", "parse_imex_config", "parse_imex_ctl",
           "parse_nodes_config"]

_HOST_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
_NODE_RE = re.compile(r"^\s*Node\s*#\s*(?P<idx>\d{1,5})\s*-\s*(?P<addr>\S+)\s*-\s*(?P<status>[A-Z_ ]*?[A-Z_])\s*"
                      r"(?:-\s*Version:\s*(?P<ver>\S+))?\s*$")
_STATE_RE = re.compile(r"^\s*Domain State\s*:\s*(?P<state>\S+)\s*$")
_FIX_CTL = "pass the output of `nvidia-imex-ctl -N` (or `nvidia-imex-ctl -N -j`)"


@record
class ImexNode:
    index: int
    address: str
    status: str
    version: str | None = None


@record
class ImexCtl:
    """What ``nvidia-imex-ctl -N`` says about the domain."""
    nodes: tuple[ImexNode, ...] = ()
    domain_state: str | None = None


def parse_imex_config(text: str, *, source: str = "config.cfg") -> dict[str, str]:
    """``KEY=VALUE`` settings of the IMEX daemon's config file (the last one of a key wins, as in the daemon)."""
    out: dict[str, str] = {}
    for line in split_lines(as_text(text, source, "IMEX config")):
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return out


def valid_address(token: str) -> bool:
    try:
        ipaddress.ip_address(token)
        return True
    except ValueError:
        return bool(_HOST_RE.match(token)) and not token.replace(".", "").isdigit()


def parse_nodes_config(text: str, *, source: str = "nodes_config.cfg") -> tuple[str, ...]:
    """The addresses of an IMEX node list, in file order; a line that is not an address is an error."""
    out: list[str] = []
    for no, line in enumerate(split_lines(as_text(text, source, "IMEX node list")), 1):
        token = line.split("#", 1)[0].strip()
        if not token:
            continue
        if not valid_address(token):
            raise perr(source, no, f"not an IP address or host name: {token[:60]!r}",
                       "write one IP address (or host name) of an IMEX domain member per line")
        out.append(token)
    return tuple(out)


def parse_imex_ctl(text: str, *, source: str = "nvidia-imex-ctl -N") -> ImexCtl:
    body = as_text(text, source, "nvidia-imex-ctl -N")
    if body.lstrip().startswith("{"):
        return _from_json(load_json(body, source, "nvidia-imex-ctl -N -j", _FIX_CTL), source)
    nodes: list[ImexNode] = []
    state = None
    for line in split_lines(body):
        line = strip_ansi(line)
        m = _NODE_RE.match(line)
        if m:
            nodes.append(ImexNode(int(m.group("idx")), m.group("addr"), m.group("status").strip(), m.group("ver")))
            continue
        m = _STATE_RE.match(line)
        if m:
            state = m.group("state")
    if not nodes and state is None:
        raise perr(source, 1, "no 'Node #N - ADDRESS - STATUS' line and no 'Domain State' line", _FIX_CTL)
    return ImexCtl(nodes=tuple(nodes), domain_state=state)


def _from_json(doc: object, source: str) -> ImexCtl:
    if not isinstance(doc, dict):
        raise perr(source, 1, "expected a JSON object", _FIX_CTL)
    nodes: list[ImexNode] = []
    raw_nodes = doc.get("nodes", {})
    items = list(raw_nodes.items()) if isinstance(raw_nodes, dict) else list(enumerate(raw_nodes or []))
    for key, entry in items:
        if not isinstance(entry, dict):
            raise perr(source, None, f"node {key!r}: expected an object", _FIX_CTL)
        addr = entry.get("host") or entry.get("ip") or entry.get("address")
        status = entry.get("status") or entry.get("state") or "UNKNOWN"
        index: object = entry.get("index", key)
        try:
            idx = int(str(index))
        except ValueError:
            raise perr(source, None, f"node {key!r}: index {index!r} is not a number", _FIX_CTL) from None
        if not isinstance(addr, str):
            raise perr(source, None, f"node {key!r}: no host/ip address", _FIX_CTL)
        version = entry.get("version")
        nodes.append(ImexNode(idx, addr, str(status), version if isinstance(version, str) else None))
    state = doc.get("domain_state") or doc.get("status")
    return ImexCtl(nodes=tuple(sorted(nodes, key=lambda n: n.index)), domain_state=state if isinstance(state, str) else None)


_TRIE_LEAF = re.compile(r"^[\s|+`-]*-- (?P<addr>\d{1,3}(?:\.\d{1,3}){3})\s*$")


def parse_fib_trie_local(text: str, *, source: str = "/proc/net/fib_trie") -> tuple[str, ...]:
    """The host's own IPv4 addresses: the ``/32 host LOCAL`` leaves of ``/proc/net/fib_trie`` (loopback left out),
    sorted and once each."""
    found: set[str] = set()
    last = None
    for line in split_lines(as_text(text, source, "fib_trie")):
        m = _TRIE_LEAF.match(line)
        if m:
            last = m.group("addr")
            continue
        if last is not None and "/32 host LOCAL" in line and not last.startswith("127."):
            found.add(last)
    return tuple(sorted(found, key=lambda a: tuple(int(x) for x in a.split("."))))
