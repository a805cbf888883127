"""One finding per fault in ``topo validate`` / ``rings validate`` output.

A file that repeats one mistake on every element (``gdr="1"`` on each ``<gpu>``, ``link_width="0"`` on each
bridge) is one fault: its findings become one, at the first element, naming every element it covers (the message
lists the lines, the JSON carries ``locations``). Findings of a rule are one fault when they say the same thing
about different elements: the same rule, severity, file, fix and consequence (the message after the element it
names, ``<gpu> of "0000:3b:00.0" gdr="1": NCCL trusts it ...``). Different consequences stay apart.

And nothing after the point where NCCL stops: a root element NCCL refuses (no ``<system>``/``<graphs>``, a
version other than 1) is the only finding, since NCCL reads nothing of the file past it.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ncclctl.findings import Finding

__all__ = ["one_per_fault", "after_root_refused", "ROOT_REFUSED"]

#: The root element NCCL refuses: it stops there (wrong or missing version) or loads nothing (no such root).
ROOT_REFUSED = frozenset({"NTS001", "NTS003", "NTG001", "NTG003"})

#: How many elements a grouped message names before "and N more" (the JSON lists them all).
SHOWN = 4
#: An element part longer than this is a sentence of its own: a grouped message quotes only the first one.
LONG_HEAD = 80
#: How many lines a grouped message lists before "and N more".
LINES_SHOWN = 12

#: An element part that ends with the attribute it is about (`<gpu> of "0000:3b:00.0" gdr="1"`).
_ATTR_SUFFIX = re.compile(r' [A-Za-z_]+="[^"]*"$')
_AFTER_FATAL = re.compile(r"after the fatal [A-Z]+[0-9]+ at line [0-9]+, in the part NCCL read before it: ")


def _split(message: str) -> tuple[str, str, str]:
    """(prefix, element part, consequence): the message split at its first ': ' outside double quotes and
    brackets; the element part is empty when there is none."""
    prefix = ""
    m = _AFTER_FATAL.match(message)
    if m:
        prefix, message = m.group(0), message[m.end():]
    quoted, depth = False, 0
    for i, ch in enumerate(message):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "([":
            depth += 1
        elif not quoted and ch in ")]" and depth:
            depth -= 1
        elif not quoted and not depth and message.startswith(": ", i):
            return prefix, message[:i], message[i + 2:]
    return prefix, "", message


def _common_words(heads: list[str]) -> str:
    """The words the element parts end with in common (from a space on, outside quotes), '' if none: what is
    said of each element after the part that names it."""
    tail = heads[0]
    for h in heads[1:]:
        k = 0
        while k < min(len(tail), len(h)) and tail[-1 - k] == h[-1 - k]:
            k += 1
        tail = tail[len(tail) - k:]
    first = heads[0]
    start = len(first) - len(tail)
    for i in range(start, len(first)):
        before = first[:i]
        outside = before.count('"') % 2 == 0 and before.count("<") == before.count(">")
        if first[i] == " " and outside and all(len(h) - len(first) + i > 0 for h in heads):
            return first[i:]
    return ""


def _leading_tag(message: str) -> str:
    """The start tag a message opens with (``<net dev="0x0">``), '' if none."""
    m = re.match(r'<[A-Za-z_][^<>]*>', message)
    return m.group(0) if m else ""


def _lines(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:LINES_SHOWN])
    more = len(lines) - LINES_SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def _merge(members: list[Finding]) -> Finding:
    first = members[0]
    prefix, _, tail = _split(first.message)
    heads = [_split(f.message)[1] for f in members]
    lines = [f.line for f in members if f.line is not None]
    n = len(members)
    distinct = list(dict.fromkeys(heads))
    if distinct == [""]:
        message = f"{tail} ({n} elements, lines {_lines(lines)})"
    elif len(distinct) == 1:
        message = f"{distinct[0]} on {n} elements (lines {_lines(lines)}): {tail}"
    else:
        attr = _ATTR_SUFFIX.search(heads[0])
        same = attr.group(0) if attr and all(h.endswith(attr.group(0)) for h in heads) else _common_words(heads)
        named = ", ".join(f"{h[:len(h) - len(same)]} (line {f.line})" for h, f in zip(heads[:SHOWN], members))
        more = f" and {n - SHOWN} more (lines {_lines(lines[SHOWN:])})" if n > SHOWN else ""
        if max(len(h) for h in heads) > LONG_HEAD:  # whole sentences per element: the first, then the lines
            message = (f"{n} elements alike, the first: {heads[0]} (line {lines[0]}; the others at lines "
                       f"{_lines(lines[1:])}): {tail}")
        elif attr and same == attr.group(0):
            message = f"{same.strip()} on {n} elements: {named}{more}: {tail}"
        elif same:
            message = f"{n} elements: {named}{more}; each{same}: {tail}"
        else:
            message = f"{n} elements: {named}{more}: {tail}"
    evidence: list[str] = []
    for f in members:
        for e in f.evidence[:1]:
            evidence.append(f"line {f.line}: {e}")
    locations = tuple((f.line, f.column, h or (f.evidence[0] if f.evidence else _leading_tag(f.message)))
                      for f, h in zip(members, heads) if f.line is not None)
    return replace(first, message=prefix + message, evidence=tuple(dict.fromkeys(evidence)), locations=locations)


def one_per_fault(findings: list[Finding]) -> list[Finding]:
    """``findings`` with the findings of one fault (see the module) merged into one, in the order of their first
    element; findings without a line (about the host, the whole file) are kept as they are."""
    groups: dict[tuple, list[Finding]] = {}
    order: list[tuple] = []
    for i, f in enumerate(findings):
        if f.line is None or f.locations:
            key: tuple = ("single", i)
        else:
            prefix, _, tail = _split(f.message)
            key = (f.rule, f.severity, f.subject, f.fix, prefix, tail)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(f)
    out = [g[0] if len(g) == 1 else _merge(g) for g in (groups[k] for k in order)]
    return out


def after_root_refused(findings: list[Finding]) -> list[Finding]:
    """Only the root finding when NCCL refuses the root element (it reads nothing past it), with how many other
    findings that leaves out; ``findings`` unchanged otherwise."""
    root = [f for f in findings if f.rule in ROOT_REFUSED]
    if not root:
        return findings
    first = min(root, key=lambda f: (f.line or 0, f.column or 0))
    left = len(findings) - 1
    if not left:
        return [first]
    note = (f" (NCCL reads nothing past this point: {left} other finding{'s' if left != 1 else ''} about the rest "
            "of the file left out)")
    return [replace(first, message=first.message + note)]
