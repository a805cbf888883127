"""Prometheus text exposition format (0.0.4), as node_exporter's textfile collector reads it: a strict, small reader.

``fleet lint --facts`` reads the ``.prom`` files ``ncclctl lint --format prom`` writes on each node. The runtime
dependencies do not include ``prometheus_client`` (it is a test dependency), so this module reads the format
itself, strictly: whatever it cannot read is a :class:`~ncclctl.errors.ParseError` naming the file, the line and
the fix, never a guess. What it accepts:

* blank lines; ``# HELP NAME TEXT``; ``# TYPE NAME counter|gauge|histogram|summary|untyped`` (at most once per
  family, before its first sample); other ``#`` lines are comments;
* samples ``NAME[{LABEL="VALUE",...}] VALUE [TIMESTAMP]``: names ``[a-zA-Z_:][a-zA-Z0-9_:]*``, label names
  ``[a-zA-Z_][a-zA-Z0-9_]*`` (each at most once per sample), values with the format's three escapes (``\\\\``,
  ``\\"``, ``\\n``), a trailing comma allowed; the value a float, ``+Inf``, ``-Inf`` or ``NaN``; the timestamp an
  integer (milliseconds);
* one sample per series: the same name and labels twice in one file is an error (promtool refuses it too).

Refused: a NUL or other control byte (a binary file), a line over :data:`LINE_MAX` characters, more than
:data:`SAMPLES_MAX` samples (the caller's input door caps the bytes first).
"""

from __future__ import annotations

import math
import re

from ncclctl.errors import ParseError
from ncclctl.record import record

#: The longest line read (a node's textfile has lines of ~100 characters; a long label value is still short).
LINE_MAX = 16 << 10
#: The most samples one file may hold (ncclctl's own files hold tens to a few hundred).
SAMPLES_MAX = 100_000

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT = re.compile(r"-?[0-9]{1,19}")
_SPECIAL = {"+Inf": math.inf, "Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}
_TYPES = frozenset({"counter", "gauge", "histogram", "summary", "untyped"})
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

FIX = ("give the .prom file 'ncclctl lint --format prom' writes (node_exporter's textfile format); "
       "check it with 'promtool check metrics < FILE'")


@record
class Sample:
    """One sample line: its metric name, labels (in file order), value and line number."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float
    line: int

    def label(self, key: str) -> str | None:
        for k, v in self.labels:
            if k == key:
                return v
        return None


@record
class Textfile:
    samples: tuple[Sample, ...]
    #: family name -> its TYPE (families without a TYPE line are absent)
    types: tuple[tuple[str, str], ...] = ()
    helps: tuple[tuple[str, str], ...] = ()


def _error(message: str, source: str, line: int, fix: str = FIX) -> ParseError:
    return ParseError(message, path=source, line=line, fix=fix)


def _labels(text: str, pos: int, source: str, lineno: int) -> tuple[tuple[tuple[str, str], ...], int]:
    """The label set starting after ``{`` at ``pos``: (labels, position after ``}``)."""
    labels: list[tuple[str, str]] = []
    seen: set[str] = set()
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos < n and text[pos] == "}":
            return tuple(labels), pos + 1
        m = _LABEL_NAME.match(text, pos)
        if m is None:
            raise _error(f"expected a label name or '}}' at column {pos + 1}", source, lineno)
        key = m.group()
        if key in seen:
            raise _error(f"label {key!r} given twice in one sample", source, lineno)
        seen.add(key)
        pos = m.end()
        while pos < n and text[pos] in " \t":
            pos += 1
        if text[pos:pos + 2] != '="':
            raise _error(f"expected '=\"' after label name {key!r} at column {pos + 1}", source, lineno)
        pos += 2
        chars: list[str] = []
        while True:
            if pos >= n:
                raise _error(f"label {key!r}: value not closed by '\"'", source, lineno)
            c = text[pos]
            if c == '"':
                pos += 1
                break
            if c == "\\":
                nxt = text[pos + 1:pos + 2]
                if nxt == "n":
                    chars.append("\n")
                elif nxt in ('"', "\\"):
                    chars.append(nxt)
                else:
                    raise _error(f"label {key!r}: unknown escape '\\{nxt}' (the format knows \\\\, \\\" and \\n)",
                                 source, lineno)
                pos += 2
                continue
            chars.append(c)
            pos += 1
        labels.append((key, "".join(chars)))
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos < n and text[pos] == ",":
            pos += 1
        elif pos < n and text[pos] != "}":
            raise _error(f"expected ',' or '}}' after label {key!r} at column {pos + 1}", source, lineno)


def _value(token: str, source: str, lineno: int) -> float:
    if token in _SPECIAL:
        return _SPECIAL[token]
    if _FLOAT.fullmatch(token) is None or len(token) > 64:
        raise _error(f"not a sample value: {token[:40]!r} (a number, +Inf, -Inf or NaN)", source, lineno)
    return float(token)


def parse_textfile(text: str, *, source: str) -> Textfile:
    """The samples of one textfile (see the module's docstring for what is accepted); errors name ``source``:line."""
    samples: list[Sample] = []
    types: dict[str, str] = {}
    helps: dict[str, str] = {}
    seen_series: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    sampled: set[str] = set()
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if len(line) > LINE_MAX:
            raise _error(f"line of {len(line):,} characters (over {LINE_MAX:,}): not a textfile", source, lineno)
        bad = _CONTROL.search(line)
        if bad is not None:
            raise _error(f"control byte 0x{ord(bad.group()):02x} at column {bad.start() + 1}: a binary file, not a "
                         f"textfile", source, lineno)
        stripped = line.strip(" \t")
        if not stripped:
            continue
        if stripped.startswith("#"):
            parts = stripped[1:].strip(" \t").split(None, 2)
            if parts and parts[0] in ("HELP", "TYPE"):
                if len(parts) < 2 or _NAME.fullmatch(parts[1]) is None:
                    raise _error(f"# {parts[0]} without a metric name", source, lineno)
                name = parts[1]
                if parts[0] == "TYPE":
                    kind = parts[2].strip() if len(parts) > 2 else ""
                    if kind not in _TYPES:
                        raise _error(f"# TYPE {name}: unknown type {kind!r} ({', '.join(sorted(_TYPES))})", source,
                                     lineno)
                    if name in types:
                        raise _error(f"second # TYPE line for {name}", source, lineno)
                    if name in sampled:
                        raise _error(f"# TYPE line for {name} after its samples", source, lineno)
                    types[name] = kind
                else:
                    if name in helps:
                        raise _error(f"second # HELP line for {name}", source, lineno)
                    helps[name] = parts[2] if len(parts) > 2 else ""
            continue
        m = _NAME.match(stripped)
        if m is None:
            raise _error(f"not a sample, comment or blank line: {stripped[:60]!r}", source, lineno)
        name = m.group()
        pos = m.end()
        labels: tuple[tuple[str, str], ...] = ()
        if stripped[pos:pos + 1] == "{":
            labels, pos = _labels(stripped, pos + 1, source, lineno)
        rest = stripped[pos:]
        if rest[:1] not in (" ", "\t"):
            raise _error(f"{name}: expected a space and the value at column {pos + 1}", source, lineno)
        tokens = rest.split()
        if len(tokens) not in (1, 2):
            raise _error(f"{name}: expected a value and at most a timestamp, got {len(tokens)} fields", source, lineno)
        value = _value(tokens[0], source, lineno)
        if len(tokens) == 2 and _INT.fullmatch(tokens[1]) is None:
            raise _error(f"{name}: not a timestamp (integer milliseconds): {tokens[1][:40]!r}", source, lineno)
        key = (name, tuple(sorted(labels)))
        if key in seen_series:
            raise _error(f"{name}: the same series twice ({', '.join(f'{k}={v!r}' for k, v in labels)})", source,
                         lineno)
        seen_series.add(key)
        sampled.add(name)
        samples.append(Sample(name=name, labels=labels, value=value, line=lineno))
        if len(samples) > SAMPLES_MAX:
            raise _error(f"more than {SAMPLES_MAX:,} samples: not a node's textfile", source, lineno)
    return Textfile(samples=tuple(samples), types=tuple(sorted(types.items())), helps=tuple(sorted(helps.items())))
