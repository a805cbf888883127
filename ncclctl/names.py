"""Names in natural order: ``mlx5_2`` before ``mlx5_10``, ``GPU2`` before ``GPU10``, ``node9`` before ``node10``.

The one sort key for device, port, host and rule names, used from the findings up; it imports nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache

_DIGIT_RUNS = re.compile(r"(\d+)")
#: A PCI bus id (domain:bus:device.function), hexadecimal: ``0000:1a:00.0`` is bus 0x1a = 26, after ``0000:10:00.0``.
_BUS_ID = re.compile(r"(?<![0-9A-Za-z])([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])(?![0-9A-Za-z])")


@lru_cache(maxsize=1 << 16)  # fabric commands sort the same tens of thousands of host names several times
def natural_key(name: str) -> tuple:
    """``mlx5_2`` before ``mlx5_10``; PCI bus ids by their hexadecimal numbers (``0000:18:04.0`` before
    ``0000:18:0c.0``, ``0000:1a:00.0`` before ``0000:9a:00.0`` before ``0000:a0:00.0``)."""
    if ":" in name and _BUS_ID.search(name):
        return _with_bus_ids(name)
    parts: list = _DIGIT_RUNS.split(name)  # text, digits, text, ..., text: the digit runs at the odd places
    runs = parts[1::2]
    # (a run of 50+ digits sorts as one huge number: int() refuses over 4300 digits)
    parts[1::2] = map(int, runs) if max(map(len, runs), default=0) < 50 else (
        int(p) if len(p) < 50 else 10**50 for p in runs)
    return tuple(parts)


def _number(run: str) -> int:
    # (a run of 50+ digits sorts as one huge number: int() refuses over 4300 digits)
    return int(run) if len(run) < 50 else 10**50


def _with_bus_ids(name: str) -> tuple:
    """The natural key of a name holding PCI bus ids: text, number, text, ..., text as for any name, each bus id
    giving its four hexadecimal numbers between its ':' and '.' (``0000:1a:00.0`` -> '', 0, ':', 26, ':', 0, '.',
    0, '')."""
    parts: list = [""]

    def text(t: str) -> None:
        runs = _DIGIT_RUNS.split(t)
        parts[-1] += runs[0]
        for i in range(1, len(runs), 2):
            parts.extend((_number(runs[i]), runs[i + 1]))

    pos = 0
    for m in _BUS_ID.finditer(name):
        text(name[pos:m.start()])
        dom, bus, dev, fn = (int(x, 16) for x in m.groups())
        parts.extend((dom, ":", bus, ":", dev, ".", fn, ""))
        pos = m.end()
    text(name[pos:])
    return tuple(parts)


_HOSTLIST_SAFE = re.compile(r"[A-Za-z0-9._-]+")


def hostlist(names) -> str:
    """Host names folded into Slurm's hostlist form, ``gpu[002,017-019]`` (ClusterShell's ``NodeSet``, the fold
    Slurm and pdsh users read), in natural order; a name NodeSet would parse as syntax (``[``, ``,``, ``@``, ...)
    is listed as it is after the folded ones."""
    names = sorted(set(names), key=natural_key)
    safe = [n for n in names if _HOSTLIST_SAFE.fullmatch(n)]
    odd = [n for n in names if not _HOSTLIST_SAFE.fullmatch(n)]
    folded = ""
    if safe:
        from ClusterShell.NodeSet import NodeSet

        folded = str(NodeSet.fromlist(safe))
    return ",".join(x for x in [folded, *odd] if x)
