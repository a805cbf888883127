"""Slurm hostlist expressions: ``node[001-032,040],login1`` (compression only).

Slurm expands ``prefix[lo-hi]`` by printing each number with the width of ``lo`` (zero-padded), so two numbers
join one bracket only when that reproduces both names: the same digit count, or no leading zero on either
(``node[9-10]`` is node9, node10; ``node[09-10]`` is node09, node10). Only a trailing number is compressed;
other names are listed as they are.
"""

from __future__ import annotations

import re

from ncclctl.names import natural_key

_TAIL = re.compile(r"^(.*?)(\d+)$")


def compress(names) -> str:
    """The shortest-by-construction hostlist of ``names`` (deduplicated, in natural order)."""
    items = sorted(set(names), key=natural_key)
    groups: dict[tuple[str, int], list[tuple[int, str]]] = {}
    order: list[tuple[str, int]] = []
    plain: list[str] = []
    for name in items:
        m = _TAIL.match(name)
        if not m or len(m.group(2)) > 18:  # a number no host name has (and past int()'s 4,300-digit limit): as is
            plain.append(name)
            continue
        prefix, digits = m.groups()
        # A number with a leading zero needs its exact width; one without fits a same-width class (node[08-10])
        # or the width-free class (node[9-10]).
        if digits.startswith("0") and len(digits) > 1:
            key = (prefix, len(digits))
        else:
            key = (prefix, len(digits)) if (prefix, len(digits)) in groups else (prefix, 0)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((int(digits), digits))
    parts: list[tuple[tuple, str]] = []
    for key in order:
        prefix, _width = key
        nums = sorted(groups[key])
        ranges: list[str] = []
        start = prev = nums[0]
        for cur in nums[1:]:
            if cur[0] == prev[0] + 1:
                prev = cur
                continue
            ranges.append(_range(start, prev))
            start = prev = cur
        ranges.append(_range(start, prev))
        if len(nums) == 1:
            text = prefix + nums[0][1]
        else:
            text = f"{prefix}[{','.join(ranges)}]"
        parts.append((natural_key(prefix + nums[0][1]), text))
    parts += [(natural_key(p), p) for p in plain]
    parts.sort(key=lambda kv: kv[0])
    return ",".join(text for _, text in parts)


def _range(a: tuple[int, str], b: tuple[int, str]) -> str:
    return a[1] if a[0] == b[0] else f"{a[1]}-{b[1]}"
