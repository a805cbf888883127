"""WARN/ATTN formats of NCCL's library that ncclctl's reader leaves in the class 'other' on purpose, by identifier
(the first 12 hex digits of the SHA-1 of the format string as the library holds it; no NCCL text is kept here).
``tools/nccl_extract.py --log-coverage`` counts a format of class 'other' listed here as listed on purpose, and any
other as unclassified (0 for NCCL 2.32.3).

Each entry: identifier -> (the release it was listed for, why no class fits). These are formats whose whole text is
another message (a bare '%s'), a generic wrapper of a call whose name is the first argument, and the error-trace
line: LOG014 reports them at warning with the line itself, and the class of the message they carry (when it has one)
is read from the words at run time like any other line."""

from __future__ import annotations

LISTED: dict[str, tuple[str, str]] = {
    "347cd9c53ff7": ("2.32.3", "the whole text is a message formatted elsewhere: classed by its words at run time"),
    "982f06fef2ed": ("2.32.3", "a wrapper of a call named by its first argument, with its return code"),
    "f804ede371eb": ("2.32.3", "the error trace 'file:line (function) -> code' printed as a WARN: NCCL's own "
                               "'file.cc:N -> code' lines, read as the path of the error"),
}
