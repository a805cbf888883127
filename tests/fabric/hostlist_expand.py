"""The inverse of ncclctl.fabric.hostlist.compress for the forms it writes: tests read hostlists back with it."""

from __future__ import annotations

import re


def expand(expr: str) -> list[str]:
    """Inverse of :func:`compress` for the forms it writes (``node[01-03]`` -> node01, node02, node03)."""
    out: list[str] = []
    for part in _split_top(expr):
        m = re.match(r"^(.*?)\[([^\]]+)\]$", part)
        if not m:
            out.append(part)
            continue
        prefix, body = m.groups()
        for r in body.split(","):
            lo, _, hi = r.partition("-")
            hi = hi or lo
            width = len(lo)
            for i in range(int(lo), int(hi) + 1):
                out.append(f"{prefix}{i:0{width}d}")
    return out


def _split_top(expr: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return parts
