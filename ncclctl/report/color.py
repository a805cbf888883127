"""Colours for the text report on a terminal: severities, rule ids, locations (devices, files, hosts), fixes.

:func:`colorize` works on the text the report door already rendered, after the CLI escaped every control
character that came from input (:func:`ncclctl.cli.common.terminal_safe`): the only escape sequences that reach the
terminal are the SGR codes added here. Whether to colour at all is the CLI's decision (``--color``, ``NO_COLOR``,
a terminal or not); the text is the same with and without colours once the codes are removed (a test holds it).
"""

from __future__ import annotations

import re

RESET = "\x1b[0m"
SEVERITY = {"error": "\x1b[1;31m", "warning": "\x1b[1;33m", "info": "\x1b[36m"}
LOCATION = "\x1b[35m"
RULE = "\x1b[1m"
FIX = "\x1b[32m"
DIM = "\x1b[2m"

# ``LOCATION: severity: RULE: message`` (the location may itself hold ": ", fleet text puts hosts first).
_FINDING = re.compile(r"^(?P<loc>.*?): (?P<sev>error|warning|info): (?P<rule>[A-Z][A-Z0-9]*[0-9]{3}): ")
_FIX = re.compile(r"^(?P<pad>\s+)(?P<word>fix|evidence):")
_COUNT = re.compile(r"\b(?P<n>[1-9][0-9]*) (?P<sev>error|warning)s?\b")


def _line(line: str) -> str:
    m = _FINDING.match(line)
    if m:
        sev = m.group("sev")
        return (f"{LOCATION}{m.group('loc')}{RESET}: {SEVERITY[sev]}{sev}{RESET}: {RULE}{m.group('rule')}{RESET}: "
                + line[m.end():])
    m = _FIX.match(line)
    if m:
        colour = FIX if m.group("word") == "fix" else DIM
        return f"{m.group('pad')}{colour}{m.group('word')}:{RESET}" + line[m.end():]
    return line


def colorize(text: str) -> str:
    """``text`` (a rendered text report) with ANSI colours on finding lines, fixes, evidence and the summary's
    non-zero error and warning counts."""
    lines = text.split("\n")
    out = [_line(line) for line in lines]
    # The summary line is the last non-empty line of a report.
    for i in range(len(out) - 1, -1, -1):
        if out[i].strip():
            out[i] = _COUNT.sub(lambda m: f"{SEVERITY[m.group('sev')]}{m.group(0)}{RESET}", out[i])
            break
    return "\n".join(out)


def strip(text: str) -> str:
    """``text`` without the SGR codes :func:`colorize` adds."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)
