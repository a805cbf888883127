"""NCCL release numbers: :class:`Version`, the release modelled by default, the known releases, one parser.

A :class:`Version` is a named tuple, so it compares with plain tuples (``v >= (2, 30, 7)``) and prints as
``2.30.7``. Version gates that are facts about NCCL (``rail`` attribute from 2.30.7, ...) stay next to the code
they gate; this module holds what every caller shares. Release tags follow NVIDIA/nccl's ``vX.Y.Z-N`` tags
(``src/nccl.h.in``: ``NCCL_MAJOR.NCCL_MINOR.NCCL_PATCH``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ncclctl.errors import InputError, UsageError


class Version(NamedTuple):
    """``MAJOR.MINOR.PATCH`` of an NCCL release; a missing patch level is 0 (the oldest release of the line)."""

    major: int
    minor: int
    patch: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


#: The release whose behaviour is modelled when none is given: the newest one the topology, search and tuning
#: tables were extracted from and checked against. Newer releases in :data:`RELEASES` are known to the version-aware
#: lint rules (variables, values), not to the model.
DEFAULT = Version(2, 30, 7)
#: :data:`DEFAULT` as written on a command line (the default of every ``--nccl-version`` option).
DEFAULT_TEXT = str(DEFAULT)

#: Every NCCL 2.x release from 2.3.5 on: those with a tag in NVIDIA/nccl, then 2.31.2 and 2.32.3 (released as
#: nvidia-nccl-cu12/-cu13 wheels). Adding a release here and its variables to ``variables.py`` is all a new release
#: needs for the lint rules (``tools/nccl_extract.py`` lists what changed).
RELEASES: tuple[str, ...] = tuple("""
2.3.5 2.3.7 2.4.2 2.4.6 2.4.7 2.4.8 2.5.6 2.5.7 2.6.4 2.7.3 2.7.5 2.7.6 2.7.8 2.8.3 2.8.4 2.9.6 2.9.8 2.9.9 2.10.3
2.11.4 2.12.7 2.12.10 2.12.12 2.13.4 2.14.3 2.15.1 2.15.5 2.16.2 2.16.5 2.17.1 2.18.1 2.18.3 2.18.5 2.18.6 2.19.1
2.19.3 2.19.4 2.20.3 2.20.5 2.21.5 2.22.3 2.23.4 2.24.3 2.25.1 2.26.2 2.26.3 2.26.5 2.26.6 2.27.3 2.27.5 2.27.6
2.27.7 2.28.3 2.28.7 2.28.9 2.29.2 2.29.3 2.29.7 2.30.3 2.30.4 2.30.7 2.31.2 2.32.3
""".split())

# "2.30.7", "2.30", "v2.21.5-1" (a release tag), surrounding white space allowed.
_TEXT = re.compile(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?(?:-\d+)?\s*")
_FIX = "write it as MAJOR.MINOR[.PATCH], e.g. 2.30.7"


def parse(value: object) -> Version:
    """A :class:`Version` from ``"2.30.7"``, ``"2.30"`` (2.30.0), a tag (``"v2.21.5-1"``) or a tuple of 2 or 3
    non-negative integers; :class:`~ncclctl.errors.InputError` for anything else."""
    if isinstance(value, tuple) and 2 <= len(value) <= 3 and \
            all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        return Version(*value)
    if isinstance(value, str):
        m = _TEXT.fullmatch(value)
        if m:
            return Version(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    raise InputError(f"invalid NCCL version {value!r}", fix=_FIX)


def parse_option(text: str, option: str = "--nccl-version") -> Version:
    """:func:`parse` for a command-line option: an NCCL 2.x release, or :class:`~ncclctl.errors.UsageError`
    (exit 2) naming the option. ``2.21`` means 2.21.0, the oldest release of that line: the safe reading when
    deciding what a version cannot read."""
    fix = f"give MAJOR.MINOR[.PATCH] of an NCCL 2.x release, e.g. {DEFAULT_TEXT} or 2.21"
    try:
        version = parse(text)
    except InputError:
        raise UsageError(f"{option}: not an NCCL version: {text!r}", fix=fix) from None
    if version.major != 2:
        raise UsageError(f"{option}: not an NCCL 2.x version: {text!r}", fix=fix)
    return version
