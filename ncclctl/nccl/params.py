"""C number parsing as NCCL calls it (integers; floats: :func:`c_strtof`), and ``ncclLoadParam`` (the ``NCCL_PARAM`` integer variables).

One model of glibc's ``strtol``/``strtoll`` and ``strtoul``/``strtoull`` (``long`` and ``long long`` are both
64 bits on the LP64 Linux NCCL runs on; NVIDIA/nccl ``src/misc/param.cc``, ``src/graph/xml.h``), checked against
the C library itself in the tests:

* leading white space (C ``isspace`` in the "C" locale: space, ``\\t \\n \\v \\f \\r``) is skipped, then one
  optional sign;
* base 0 reads ``0x``/``0X`` as hex, a leading ``0`` as octal, anything else as decimal; base 16 accepts an
  optional ``0x``; a ``0x`` that no hex digit follows is the number 0 followed by ``x``; no ``0b`` prefix (the
  C23 form that NCCL builds do not use);
* parsing stops at the first character that is not a digit of the base (``08`` is 0, ``3 # x`` is 3, ``1e3``
  is 1); a string without digits is 0 and consumes nothing (glibc sets no error);
* a value outside ``LONG_MIN``..``LONG_MAX`` saturates there and sets ``ERANGE`` (:attr:`CInt.overflow`);
  :func:`strtoul` (``strtoull``) saturates at ``ULONG_MAX`` instead and negates in unsigned arithmetic.

Where NCCL stores the result in an ``int`` (``int x = strtol(...)``, ``atoi``) it is truncated to 32 bits:
:func:`to_int`, :func:`c_int`, :func:`c_atoi`. ``NCCL_PARAM`` variables go through
``misc/param.cc:ncclLoadParam``: unset or empty keeps the default, ``strtoll(value, NULL, 0)`` otherwise, and an
overflow falls back to the default (:func:`load_param`, :func:`param_int`).
"""

from __future__ import annotations

import functools
import re

from ncclctl.record import record

#: ``LONG_MIN`` / ``LONG_MAX`` (64-bit ``long``, the same as ``long long`` on Linux).
LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1
#: ``ULONG_MAX`` (64-bit ``unsigned long``, the same as ``unsigned long long``).
ULONG_MAX = (1 << 64) - 1
#: ``INT_MIN`` / ``INT_MAX``.
INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1
#: C ``isspace`` in the "C" locale.
C_SPACE = " \t\n\v\f\r"

_HEX = "0123456789abcdefABCDEF"
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@record
class CInt:
    """What ``strtol(s, &end, base)`` does with ``s``."""

    #: The value, saturated at LONG_MIN/LONG_MAX.
    value: int
    #: Characters consumed (0 when there were no digits: glibc leaves ``end`` at the start).
    end: int
    #: The base used (base 0 resolved to 8, 10 or 16).
    base: int
    #: At least one digit was read.
    digits: bool
    #: ``errno`` is ``ERANGE``: the number did not fit and :attr:`value` is LONG_MIN or LONG_MAX.
    overflow: bool = False
    #: The whole string was one number (digits, and nothing after them): ``*end == '\\0'`` with digits.
    whole: bool = False

    def rest(self, s: str) -> str:
        """What follows the number in ``s`` (all of ``s`` when there were no digits)."""
        return s[self.end:]


@functools.lru_cache(maxsize=None)
def _digit_run(base: int) -> re.Pattern[str]:
    if base <= 10:
        return re.compile(f"[0-{base - 1}]*")
    last = _LETTERS[base - 11]
    return re.compile(f"[0-9a-{last}A-{last.upper()}]*")


def _scan(s: str, base: int) -> tuple[bool, int | None, int, int, int]:
    """The part every ``strto*`` shares: (negative, magnitude or None when past 64 bits, start and end of the
    digits, base used)."""
    if base != 0 and not 2 <= base <= 36:
        raise ValueError(f"strtol base {base} (0 or 2..36)")
    i, n = 0, len(s)
    while i < n and s[i] in C_SPACE:
        i += 1
    neg = False
    if i < n and s[i] in "+-":
        neg = s[i] == "-"
        i += 1
    b = base
    if b in (0, 16) and s[i:i + 2] in ("0x", "0X") and i + 2 < n and s[i + 2] in _HEX:
        b, i = 16, i + 2
    elif b == 0:
        b = 8 if i < n and s[i] == "0" else 10
    m = _digit_run(b).match(s, i)
    j = m.end() if m else i
    significant = s[i:j].lstrip("0")
    # Past 64 digits the value is >= 2**64 in any base (and past Python's int-from-string limit): saturated anyway.
    magnitude = None if len(significant) > 64 else int(significant or "0", b)
    return neg, magnitude, i, j, b


def strtol(s: str, base: int = 0) -> CInt:
    """``strtol(s, &end, base)`` (and ``strtoll``): see the module docstring. ``base`` is 0 or 2 to 36."""
    neg, magnitude, i, j, b = _scan(s, base)
    if j == i:
        return CInt(0, 0, b, False)
    if magnitude is None or magnitude > (LONG_MAX + 1 if neg else LONG_MAX):
        return CInt(LONG_MIN if neg else LONG_MAX, j, b, True, overflow=True, whole=j == len(s))
    return CInt(-magnitude if neg else magnitude, j, b, True, whole=j == len(s))


def strtoul(s: str, base: int = 0) -> CInt:
    """``strtoul(s, &end, base)`` (and ``strtoull``, which NCCL uses for the ``guid`` of a topology ``<net>``):
    the same syntax as :func:`strtol`; a magnitude past ``ULONG_MAX`` saturates there (``ERANGE``), and a ``-``
    negates in unsigned arithmetic (``-1`` is ``ULONG_MAX``)."""
    neg, magnitude, i, j, b = _scan(s, base)
    if j == i:
        return CInt(0, 0, b, False)
    if magnitude is None or magnitude > ULONG_MAX:
        return CInt(ULONG_MAX, j, b, True, overflow=True, whole=j == len(s))
    return CInt((-magnitude) & ULONG_MAX if neg else magnitude, j, b, True, whole=j == len(s))


def to_int(n: int) -> int:
    """The C conversion of a ``long`` to a 32-bit ``int`` (two's complement: the low 32 bits, signed)."""
    return (n - INT_MIN) % (1 << 32) + INT_MIN


def c_int(s: str, base: int = 0) -> int:
    """``(int)strtol(s, NULL, base)``: saturated to a ``long``, then truncated to 32 bits like NCCL's ``int``
    (``4294967297`` is 1, an overflow is -1)."""
    return to_int(strtol(s, base).value)


def c_atoi(s: str) -> int:
    """C ``atoi``, which glibc implements as ``(int)strtol(s, NULL, 10)``."""
    return c_int(s, 10)


def load_param(value: str | None) -> int | None:
    """The value ``ncclLoadParam`` uses for an integer variable; None means the built-in default (unset, empty,
    or out of range: NCCL logs 'Invalid value ... using default')."""
    if value is None or value == "":
        return None
    r = strtol(value)
    return None if r.overflow else r.value


def param_int(value: str | None, default: int) -> int:
    """An ``NCCL_PARAM`` integer variable whose raw value (None: unset) is ``value``, with its default."""
    v = load_param(value)
    return default if v is None else v


_FLOAT = re.compile(r"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE)


def c_strtof(s: str) -> tuple[float, bool]:
    """C ``strtof`` as NCCL reads a float attribute (``speedintra``, ``latencyinter``, ...): leading white space,
    the longest float prefix (``inf``/``nan`` too); the value and whether it consumed the whole string."""
    m = _FLOAT.match(s)
    if not m:
        return 0.0, False
    try:
        return float(m.group(0)), m.end() == len(s)
    except ValueError:  # pragma: no cover - the regex only matches float syntax
        return 0.0, False
