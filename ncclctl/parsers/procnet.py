"""``/proc/net/route`` and ``/proc/net/if_inet6``: which interfaces have an IPv4 or IPv6 address.

NCCL's socket code (``ncclOsFindInterfaces``) walks ``getifaddrs()`` and keeps an interface only when it has an
IPv4 address or an IPv6 address other than ``::1``. procfs says as much without the ``ip`` command (absent from many
containers and minimal VMs): every IPv4 address with a prefix gives a link route (no gateway) on its interface in
``/proc/net/route`` (the loopback's 127.0.0.1 lives in the local table, so ``lo`` is not listed there), and
``/proc/net/if_inet6`` lists every IPv6 address with its interface. Pure: text in, records out.
"""

from __future__ import annotations

from ncclctl.errors import InputError

#: RTF_UP and RTF_GATEWAY of ``/proc/net/route``'s Flags column.
_RTF_UP = 0x1
_RTF_GATEWAY = 0x2


def parse_route(text: str, *, source: str = "/proc/net/route") -> frozenset[str]:
    """The interfaces with a link route (up, no gateway) in the IPv4 main table: those with an IPv4 address."""
    lines = text.splitlines()
    if not lines:
        return frozenset()
    head = lines[0].split()
    if head[:2] != ["Iface", "Destination"] or "Flags" not in head or "Gateway" not in head:
        raise InputError("not the kernel's route table (the first line is not 'Iface Destination Gateway Flags ...')",
                         path=source, line=1, fix="re-capture the host with 'ncclctl snapshot'")
    gw_col, fl_col = head.index("Gateway"), head.index("Flags")
    out: set[str] = set()
    for lineno, line in enumerate(lines[1:], 2):
        cols = line.split()
        if not cols:
            continue
        if len(cols) <= max(gw_col, fl_col):
            raise InputError(f"route line with {len(cols)} columns, expected at least {max(gw_col, fl_col) + 1}",
                             path=source, line=lineno, fix="re-capture the host with 'ncclctl snapshot'")
        try:
            gateway, flags = int(cols[gw_col], 16), int(cols[fl_col], 16)
        except ValueError:
            raise InputError(f"route line with a gateway or flags that is not hexadecimal ({line.strip()[:60]!r})",
                             path=source, line=lineno, fix="re-capture the host with 'ncclctl snapshot'") from None
        if flags & _RTF_UP and not flags & _RTF_GATEWAY and gateway == 0:
            out.add(cols[0])
    return frozenset(out)


def parse_if_inet6(text: str, *, source: str = "/proc/net/if_inet6") -> frozenset[str]:
    """The interfaces with an IPv6 address other than the loopback ``::1`` (link-local addresses count: NCCL's
    interface search keeps them)."""
    out: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        cols = line.split()
        if not cols:
            continue
        if len(cols) != 6 or len(cols[0]) != 32 or any(c not in "0123456789abcdefABCDEF" for c in cols[0]):
            raise InputError(f"not an if_inet6 line (address, index, prefix, scope, flags, name): {line.strip()[:60]!r}",
                             path=source, line=lineno, fix="re-capture the host with 'ncclctl snapshot'")
        if int(cols[0], 16) == 1:
            continue
        out.add(cols[5])
    return frozenset(out)
