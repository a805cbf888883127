"""Parser for MLNX-tools ``show_gids`` (sbin/show_gids, a bash script over sysfs).

Output (``echo -e``, TAB separated)::

    DEV<TAB>PORT<TAB>INDEX<TAB>GID<TAB><TAB><TAB><TAB><TAB>IPv4  <TAB><TAB>VER<TAB>DEV
    ---<TAB>----<TAB>-----<TAB>---<TAB><TAB><TAB><TAB><TAB>------------  <TAB>---<TAB>---
    mlx5_0<TAB>1<TAB>0<TAB>fe80:0000:0000:0000:a288:c2ff:fee3:142a<TAB><TAB><TAB>v1<TAB>ens1f0np0
    mlx5_0<TAB>1<TAB>3<TAB>0000:0000:0000:0000:0000:ffff:0ac8:010a<TAB>10.200.1.10  <TAB>v2<TAB>ens1f0np0
    n_gids_found=4

Facts from the script: all-zero and bare ``fe80::`` GIDs are skipped; the IPv4 column is filled for
*every* GID whose first group is ``0000`` (decoded from the last 4 bytes) and is followed by two
spaces; VER is ``grep -o "[Vv].*"`` of ``gid_attrs/types/<i>`` (``IB/RoCE v1`` -> ``v1``,
``RoCE v2`` -> ``v2``) and is empty when that file cannot be read; the second DEV column (the
netdev, from ``gid_attrs/ndevs/<i>``) is empty on InfiniBand ports. GID directories are listed
with ``ls``, so indexes come out in string order (0 1 10 11 ... 2 ...).
"""

from __future__ import annotations

import re
from dataclasses import field

from ncclctl.parsers._common import dec, perr, run_parser, split_lines, strip_ansi
from ncclctl.record import record

__all__ = ["ShowGid", "parse_show_gids"]

_FIX = "pass the unedited output of `show_gids`"

_GID_RE = re.compile(r"[0-9A-Fa-f]{4}(?::[0-9A-Fa-f]{4}){7}", re.ASCII)
_IPV4_RE = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}", re.ASCII)
_VER_RE = re.compile(r"[vV][0-9]{1,2}", re.ASCII)
_TRAILER_RE = re.compile(r"n_gids_found=(?P<n>[0-9]{1,9})", re.ASCII)


@record
class ShowGid:
    #: RDMA device (first DEV column).
    dev: str
    port: int
    index: int
    #: As printed (sysfs form, 8 groups of 4 hex digits).
    gid: str
    #: Decoded IPv4 for ``0000:...`` GIDs, else None.
    ipv4: str | None
    #: ``"v1"`` or ``"v2"``; None when the script printed nothing (type file unreadable).
    version: str | None
    #: Netdev (second DEV column); None on InfiniBand ports.
    netdev: str | None
    line: int = field(default=0, compare=False)

    @property
    def is_link_local(self) -> bool:
        return self.gid.lower().startswith("fe80:")

    @property
    def is_ipv4_mapped(self) -> bool:
        return self.gid.lower().startswith("0000:0000:0000:0000:0000:ffff:")


def parse_show_gids(text: str, *, source: str = "show_gids") -> tuple[ShowGid, ...]:
    """Parse ``show_gids [dev]`` output. Header, separator and trailer are optional (e.g. output
    filtered through grep); when the ``n_gids_found=N`` trailer is present it must match the rows.
    Empty output gives ``()``.
    """
    return run_parser(_parse, text, source, "show_gids")


def _parse(text: str, source: str) -> tuple[ShowGid, ...]:
    rows: list[ShowGid] = []
    trailer: tuple[int, int] | None = None
    for lineno, raw in enumerate(split_lines(text), 1):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        tokens = line.split()
        m = _TRAILER_RE.fullmatch(line)
        if m:
            if trailer is not None:
                raise perr(source, lineno, "second 'n_gids_found=' line", _FIX)
            trailer = (int(m["n"]), lineno)
            continue
        if trailer is not None:
            raise perr(
                source, lineno, f"line after the 'n_gids_found=' trailer: {line[:80]!r}", _FIX
            )
        if tokens[0] == "DEV" and "GID" in tokens:
            continue  # header
        if all(set(t) <= {"-"} for t in tokens):
            continue  # ---- separator
        rows.append(_row(tokens, line, lineno, source))
    if trailer is not None and trailer[0] != len(rows):
        raise perr(
            source,
            trailer[1],
            f"n_gids_found={trailer[0]} but {len(rows)} GID row(s) were read (lines lost or edited?)",
            "pass the complete, unedited output of `show_gids`",
        )
    return tuple(rows)


def _row(tokens: list[str], line: str, lineno: int, source: str) -> ShowGid:
    if len(tokens) < 4:
        raise perr(
            source,
            lineno,
            f"expected 'DEV PORT INDEX GID [IPv4] [VER] [DEV]', got {line[:100]!r}",
            _FIX,
        )
    dev, port_s, idx_s, gid = tokens[:4]
    port = dec(port_s, source, lineno, f"{dev}: PORT", _FIX)
    index = dec(idx_s, source, lineno, f"{dev}: INDEX", _FIX)
    if not _GID_RE.fullmatch(gid):
        raise perr(source, lineno, f"{dev} port {port} index {index}: bad GID {gid!r}", _FIX)
    rest = tokens[4:]
    ipv4 = version = netdev = None
    if rest and _IPV4_RE.fullmatch(rest[0]):
        ipv4 = rest.pop(0)
        if any(int(o) > 255 for o in ipv4.split(".")):
            raise perr(source, lineno, f"{dev} index {index}: bad IPv4 {ipv4!r}", _FIX)
    if rest and _VER_RE.fullmatch(rest[0]):
        version = rest.pop(0).lower()
    if rest:
        netdev = rest.pop(0)
    if rest:
        raise perr(
            source,
            lineno,
            f"{dev} index {index}: unexpected extra column(s) {' '.join(rest)!r}",
            _FIX,
        )
    return ShowGid(
        dev=dev,
        port=port,
        index=index,
        gid=gid,
        ipv4=ipv4,
        version=version,
        netdev=netdev,
        line=lineno,
    )
