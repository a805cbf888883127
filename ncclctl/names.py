"""Names in natural order: ``mlx5_2`` before ``mlx5_10``, ``GPU2`` before ``GPU10``, ``node9`` before ``node10``.

The one sort key for device, port, host and rule names, used from the findings up; it imports nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache

_DIGIT_RUNS = re.compile(r"(\d+)")


@lru_cache(maxsize=1 << 16)  # fabric commands sort the same tens of thousands of host names several times
def natural_key(name: str) -> tuple:
    """``mlx5_2`` before ``mlx5_10``."""
    parts: list = _DIGIT_RUNS.split(name)  # text, digits, text, ..., text: the digit runs at the odd places
    runs = parts[1::2]
    # (a run of 50+ digits sorts as one huge number: int() refuses over 4300 digits)
    parts[1::2] = map(int, runs) if max(map(len, runs), default=0) < 50 else (
        int(p) if len(p) < 50 else 10**50 for p in runs)
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
