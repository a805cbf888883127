"""The ``NCCL_IB_HCA`` / ``NCCL_SOCKET_IFNAME`` list syntax and matching (nccl-format.md §5; ``src/misc/utils.cc``
``parseStringList``/``matchIfList``, ``src/transport/net_ib/init.cc``, ``src/misc/socket.cc``).

``NCCL_IB_HCA``: ``[^][=]name[:port[:rail[:plane]]][,...]``. ``^`` (first) excludes, ``=`` (after ``^`` if both)
makes every name exact, otherwise each name is a *prefix* (``mlx5_1`` also selects ``mlx5_10``...). ``:port`` is
1-based, absent means every port. At most 32 entries (16 before 2.18.5).

``NCCL_SOCKET_IFNAME`` uses the same list syntax (``misc/socket.cc``, ``os/linux.cc:ncclOsFindInterfaces``): at
most 16 entries, ports ignored, and a value of one character or less is ignored altogether.

The list is split exactly like ``parseStringList``: ``strtok`` on ``,`` (empty entries vanish), then ``strsep`` on
``:``; an entry whose name is empty is dropped; port, rail and plane go through C ``atoi`` (``x`` is 0, which
matches no port) and an absent or empty field is -1 (every port). Nothing is trimmed: `` mlx5_1`` is a name that
starts with a space. ``^`` and ``=`` are looked at once, at the very start of the value; anywhere else they are
part of a name.

How NCCL finds a variable's value (environment, then the user's conf file, then ``/etc/nccl.conf``) lives in
:mod:`ncclctl.nccl.settings`.
"""

from __future__ import annotations

from typing import Iterable

from ncclctl.nccl.params import c_atoi
from ncclctl.record import record

#: MAX_IB_DEVS (src/include/net_ib/common.h: 32 since 2.18.5, 16 before) and MAX_IFS (src/include/socket.h).
MAX_IB_HCA_ENTRIES = 32
MAX_IFNAME_ENTRIES = 16


@record
class HcaEntry:
    """One entry of an NCCL_IB_HCA-style list: device name, port, rail/plane, as written."""
    name: str
    port: int | None  # None: every port (absent, empty or -1); 0 or another negative number matches no port
    rail: int | None = None
    plane: int | None = None
    #: The entry as written (between the commas).
    text: str = ""


@record
class HcaSpec:
    """An NCCL_IB_HCA-style list as NCCL parses it: exclude (``^``), exact (``=``), entries."""
    exclude: bool
    exact: bool
    entries: tuple[HcaEntry, ...]
    #: Entries past the limit, which NCCL never reads.
    dropped: tuple[str, ...] = ()


def _field(tok: str | None) -> int | None:
    if tok is None or tok == "":
        return None
    v = c_atoi(tok)
    return None if v == -1 else v


def parse_if_list(value: str, max_entries: int = MAX_IB_HCA_ENTRIES) -> HcaSpec:
    """``[^][=]name[:port[:rail[:plane]]],...`` exactly as NCCL's ``parseStringList`` reads it."""
    s = value
    exclude = s.startswith("^")
    if exclude:
        s = s[1:]
    exact = s.startswith("=")
    if exact:
        s = s[1:]
    entries: list[HcaEntry] = []
    dropped: list[str] = []
    for item in (t for t in s.split(",") if t):
        parts = item.split(":")
        if parts[0] == "":
            continue
        if len(entries) >= max_entries:
            dropped.append(item)
            continue
        fields: list[str | None] = [*parts[1:], None, None, None]
        entries.append(HcaEntry(name=parts[0], port=_field(fields[0]), rail=_field(fields[1]),
                                plane=_field(fields[2]), text=item))
    return HcaSpec(exclude=exclude, exact=exact, entries=tuple(entries), dropped=tuple(dropped))


def parse_ib_hca(value: str) -> HcaSpec:
    return parse_if_list(value, MAX_IB_HCA_ENTRIES)


def entry_matches_name(spec: HcaSpec, entry: HcaEntry, name: str) -> bool:
    """``matchIf``: exact compare with ``=``, else ``strncmp(name, entry, strlen(entry))`` (a prefix)."""
    return name == entry.name if spec.exact else name.startswith(entry.name)


def _matches(spec: HcaSpec, name: str, port: int | None) -> bool:
    for e in spec.entries:
        if entry_matches_name(spec, e, name) and (e.port is None or port is None or e.port == port):
            return True
    return False


def hca_selects(value: str, devices: list[tuple[str, int]]) -> set[tuple[str, int]]:
    """Which (device, port) pairs NCCL's IB plugin keeps for this NCCL_IB_HCA value:
    ``matchIfList(...) ^ searchNot``, where an empty list matches everything (so ``^`` alone keeps nothing)."""
    spec = parse_ib_hca(value)
    return {(n, p) for n, p in devices if (not spec.entries or _matches(spec, n, p)) != spec.exclude}


def hca_ids(value: str, name: str, port: int) -> tuple[int, int]:
    """The (rail, plane) NCCL's IB plugin gives device ``name`` port ``port`` from ``NCCL_IB_HCA`` (2.30.7+):
    those of the first entry that matches it (``matchIfList``), -1 (undefined) when none does or a field is absent."""
    spec = parse_ib_hca(value)
    for e in spec.entries:
        if entry_matches_name(spec, e, name) and (e.port is None or e.port == port):
            return (-1 if e.rail is None else e.rail, -1 if e.plane is None else e.plane)
    return (-1, -1)


def ifname_selects(value: str, names: list[str]) -> list[str]:
    """Which interface names ``NCCL_SOCKET_IFNAME=value`` lets through (ports ignored), in the given order.
    The caller handles NCCL's rule that a value of length <= 1 is ignored."""
    spec = parse_if_list(value, MAX_IFNAME_ENTRIES)
    return [n for n in names if (not spec.entries or _matches(spec, n, None)) != spec.exclude]


def ib_ports(ports: Iterable[tuple[str, int]], ib_hca: str | None, ib_disable: int = 0) -> frozenset[tuple[str, int]]:
    """The (device, port) pairs NCCL's IB plugin keeps (if they are ACTIVE) out of the RDMA ``ports``: none when
    ``NCCL_IB_DISABLE`` (``ib_disable``, as read) is non-zero (NCCL then uses sockets), every one when
    ``NCCL_IB_HCA`` is unset or empty, else those :func:`hca_selects` keeps."""
    port_list = list(ports)
    if ib_disable != 0:
        return frozenset()
    if not ib_hca:
        return frozenset(port_list)
    return frozenset(hca_selects(ib_hca, port_list))
