"""Value syntaxes of particular NCCL variables: path levels and the algorithm/protocol lists.

* ``NCCL_P2P_LEVEL`` / ``NCCL_NET_GDR_LEVEL`` (and the ``NCCL_P2P_DISABLE`` switch in front of the first):
  ``src/graph/paths.cc:ncclGetLevel`` with the names of ``topoPathTypeStr`` (``src/graph/topo.cc``).
* ``NCCL_ALGO`` / ``NCCL_PROTO``: ``src/graph/tuning.cc:parseList``.
* ``NCCL_IB_TC``: the GRH traffic class byte (``net_ib``: ``ah_attr.grh.traffic_class``), DSCP in the top six
  bits and ECN in the low two: :func:`ib_tc_for_dscp`.
* Integer settings NCCL or the verbs provider masks or clamps (``NCCL_IB_RETRY_CNT`` is a 3-bit field):
  :data:`VALUE_RANGES`, :func:`out_of_range`.
* Template or shell text left in a value (``{{ hca }}``, ``${IFACE}``): :func:`template_text`.
* ``NCCL_DEBUG`` levels and the ``NCCL_DEBUG_SUBSYS`` / ``NCCL_DEBUG_TIMESTAMP_LEVELS`` / ``NCCL_DEBUG_LEVELS``
  lists (``src/debug.cc``; the typed registry's bitset parser from 2.30.7): :func:`debug_list_unknown`.

Each with the release that changed it.
"""

from __future__ import annotations

import re

from ncclctl.nccl.params import c_int
from ncclctl.nccl.version import DEFAULT, Version
from ncclctl.record import record

# --------------------------------------------------------------------------------------------------
# NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL (graph/paths.cc:ncclGetLevel, topoPathTypeStr in graph/topo.cc)

#: Names compared with strcmp (exact, case-sensitive), with the release that first accepts each.
PATH_LEVELS: tuple[tuple[str, Version], ...] = (
    ("LOC", Version(2, 4, 0)), ("NVL", Version(2, 4, 0)), ("NVB", Version(2, 8, 0)), ("C2C", Version(2, 26, 0)),
    ("PIX", Version(2, 4, 0)), ("PXB", Version(2, 4, 0)), ("P2C", Version(2, 27, 0)), ("PXN", Version(2, 12, 0)),
    ("PHB", Version(2, 4, 0)), ("SYS", Version(2, 4, 0)),
)
#: Legacy integers: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS (levelsOldToNew).
LEGACY_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")


def level_names(version: Version = DEFAULT) -> tuple[str, ...]:
    return tuple(n for n, since in PATH_LEVELS if version >= since)


@record
class LevelRead:
    #: The level NCCL uses; None when it ignores the value (and keeps its default), or for a legacy number
    #: outside NCCL's table (negative after the ``int`` cast: NCCL then reads past ``levelsOldToNew``).
    level: str | None
    #: ``name``, ``legacy`` (an integer) or ``ignored``.
    how: str
    legacy_value: int | None = None


def read_level(value: str, version: Version = DEFAULT) -> LevelRead:
    """``ncclGetLevel`` for one value: a level name (``strcmp``), else, when the first character is an ASCII
    digit, the legacy number ``int oldLevel = strtol(value, NULL, 0)`` clamped to the table's last entry;
    anything else is ignored."""
    if value in level_names(version):
        return LevelRead(value, "name")
    if "0" <= value[:1] <= "9":
        old = c_int(value)
        if old < 0:  # 2147483648 and up wrap negative in the int
            return LevelRead(None, "legacy", old)
        return LevelRead(LEGACY_LEVELS[min(old, len(LEGACY_LEVELS) - 1)], "legacy", old)
    return LevelRead(None, "ignored")


def disables_p2p(value: str) -> bool:
    """``NCCL_P2P_DISABLE`` as ``ncclGetLevel`` reads it: ``int disable = strtol(value, NULL, 0)``, and only 1
    disables peer-to-peer (level LOC)."""
    return c_int(value) == 1


# --------------------------------------------------------------------------------------------------
# NCCL_ALGO / NCCL_PROTO (graph/tuning.cc:parseList)

#: (name, first release, last release or None); compared case-insensitively.
ALGORITHMS: tuple[tuple[str, Version, Version | None], ...] = (
    ("Tree", Version(2, 4, 0), None), ("Ring", Version(2, 0, 0), None),
    ("CollNet", Version(2, 7, 0), Version(2, 13, 4)), ("CollNetDirect", Version(2, 14, 0), None),
    ("CollNetChain", Version(2, 14, 0), None), ("NVLS", Version(2, 17, 0), None), ("NVLSTree", Version(2, 18, 0), None),
    ("PAT", Version(2, 23, 0), None),
)
PROTOCOLS: tuple[tuple[str, Version, Version | None], ...] = (
    ("LL", Version(2, 0, 0), None), ("LL128", Version(2, 5, 0), None), ("Simple", Version(2, 0, 0), None),
)
FUNCTIONS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")


def _available(table: tuple[tuple[str, Version, Version | None], ...], version: Version) -> tuple[str, ...]:
    return tuple(n for n, since, until in table if version >= since and (until is None or version <= until))


@record
class ListProblem:
    #: ``element``, ``prefix``, ``no-prefix``, ``empty``.
    kind: str
    token: str
    #: NCCL rejects the whole value (2.24+: ncclInvalidUsage, communicator init fails).
    fatal: bool


def check_algo_proto(value: str, what: str, version: Version = DEFAULT) -> list[ListProblem]:
    """Problems NCCL would have with ``NCCL_ALGO`` (``what="algo"``) or ``NCCL_PROTO`` (``"proto"``)."""
    elems = [e.lower() for e in _available(ALGORITHMS if what == "algo" else PROTOCOLS, version)]
    funcs = [f.lower() for f in FUNCTIONS]
    out: list[ListProblem] = []
    if version < Version(2, 24, 0):
        # Flat "[^]e1,e2": unknown tokens are skipped silently.
        body = value[1:] if value.startswith("^") else value
        for tok in (t for t in body.split(",") if t):
            if tok.lower() not in elems:
                out.append(ListProblem("element", tok, False))
        return out
    pos = 0
    for full in value.split(";"):
        first = pos == 0
        pos += len(full) + 1
        if not full:
            continue  # strtok skips empty tokens (but then the next one is no longer the first)
        parts = [p for p in full.split(":") if p]
        if not parts:
            out.append(ListProblem("empty", full, True))
            continue
        prefix, elem_list = (parts[0], parts[1]) if len(parts) > 1 else (None, parts[0])
        if prefix is None and not first:
            out.append(ListProblem("no-prefix", full, True))
            continue
        if elem_list.startswith("^"):
            elem_list = elem_list[1:]
        if prefix is not None and prefix.lower() not in funcs:
            out.append(ListProblem("prefix", prefix, True))
        for tok in (t for t in elem_list.split(",") if t):
            if tok.lower() not in elems:
                out.append(ListProblem("element", tok, True))
    return out


def algo_proto_names(what: str, version: Version = DEFAULT) -> tuple[str, ...]:
    return _available(ALGORITHMS if what == "algo" else PROTOCOLS, version)


# --------------------------------------------------------------------------------------------------
# NCCL_IB_TC (net_ib: qpAttr.ah_attr.grh.traffic_class = NCCL_IB_TC)

#: The ECN bits ncclctl puts in NCCL_IB_TC: ECT(0), so the packets are ECN-capable even where the NIC does not
#: set the bits itself (DCQCN needs switches to mark, not drop). 106 for DSCP 26 is the value NVIDIA's RoCE
#: guides and most deployments use; 104 (no ECN bits) gives the same DSCP and priority.
IB_TC_ECN_BITS = 0b10


def ib_tc_for_dscp(dscp: int) -> int:
    """The ``NCCL_IB_TC`` that marks RoCE traffic with ``dscp``: ``dscp << 2 | ECT(0)`` (26 -> 106).

    The one place that turns a DSCP into a traffic class: ``conf generate`` and the RoCE lint fixes agree."""
    if not 0 <= dscp < 64:
        raise ValueError(f"DSCP {dscp} is not 0-63")
    return dscp << 2 | IB_TC_ECN_BITS


# --------------------------------------------------------------------------------------------------
# Integer settings whose value NCCL (or the verbs provider below it) masks or clamps


@record
class ValueRange:
    """What NCCL does with an integer setting outside the range it can use.

    ``effect``: ``masked`` (the value lands in a hardware field of ``bits`` bits, after a C cast to ``uint8``
    where NCCL's field is one: the provider keeps the low bits), ``clamped`` (NCCL replaces it with the nearest
    limit, saying so only at NCCL_DEBUG=INFO), ``overflow`` (NCCL uses the value unchecked as an array bound).
    ``special``: values that mean "not set" (``-1``: NCCL's default applies) and are not judged.
    """

    name: str
    lo: int
    hi: int
    effect: str
    what: str
    source: str
    bits: int | None = None
    cast8: bool = False
    special: tuple[int, ...] = ()
    #: for NCCL_NTHREADS: a multiple of this, or NCCL uses the maximum
    multiple: int | None = None

    def used(self, value: int) -> int:
        """The value the hardware or NCCL ends up with."""
        if self.effect == "masked":
            v = value & 0xFF if self.cast8 else value
            return v & ((1 << self.bits) - 1) if self.bits else v
        if self.effect == "clamped":
            if self.multiple and value > 0 and value % self.multiple:
                return self.hi
            return min(max(value, self.lo), self.hi)
        return value


#: NCCL 2.30.7 (src/transport/net_ib/connect.cc, common.h; graph/connect.cc; graph/tuning.cc) and the verbs fields
#: the values land in (struct ibv_qp_attr: uint8_t timeout, retry_cnt; struct ibv_ah_attr: uint8_t sl;
#: ibv_global_route: uint8_t traffic_class, sgid_index), masked to the InfiniBand field widths by the provider
#: (mlx5: MLX5_SET of the 3-bit retry count, 5-bit ack timeout, 4-bit SL).
VALUE_RANGES: dict[str, ValueRange] = {r.name: r for r in (
    ValueRange("NCCL_IB_RETRY_CNT", 0, 7, "masked", "the QP retry count, a 3-bit field", "ibv_qp_attr.retry_cnt",
               bits=3, cast8=True),
    ValueRange("NCCL_IB_TIMEOUT", 0, 31, "masked", "the QP ack timeout exponent (4.096 us x 2^n), a 5-bit field; 0 "
               "means wait forever", "ibv_qp_attr.timeout", bits=5, cast8=True),
    ValueRange("NCCL_IB_SL", 0, 15, "masked", "the InfiniBand service level, a 4-bit field", "ibv_ah_attr.sl",
               bits=4, cast8=True, special=(-1,)),
    ValueRange("NCCL_IB_TC", 0, 255, "masked", "the GRH traffic class byte", "ibv_global_route.traffic_class",
               bits=8, cast8=True, special=(-1,)),
    ValueRange("NCCL_IB_GID_INDEX", 0, 255, "masked", "the source GID index, one byte",
               "ibv_global_route.sgid_index", bits=8, cast8=True, special=(-1,)),
    ValueRange("NCCL_IB_QPS_PER_CONNECTION", 1, 128, "overflow", "QPs per connection and device; NCCL keeps the QPs "
               "of a connection in an array of NCCL_IB_MAX_QPS (128) and does not check the count", "net_ib/common.h"),
    ValueRange("NCCL_MIN_NCHANNELS", 0, 64, "clamped", "the minimum number of channels (MAXCHANNELS is 64)",
               "graph/connect.cc:ncclMinNchannels"),
    ValueRange("NCCL_MAX_NCHANNELS", 1, 64, "clamped", "the maximum number of channels (MAXCHANNELS is 64)",
               "graph/connect.cc:ncclMaxNchannels"),
    ValueRange("NCCL_NTHREADS", 64, 512, "clamped", "threads per block: a multiple of 32 (the warp size) from 64 to "
               "512, or NCCL uses 512", "graph/tuning.cc:getNthreads", multiple=32, special=(-2,)),
)}


def out_of_range(name: str, value: int) -> tuple[ValueRange, int] | None:
    """``(range, value used)`` when NCCL cannot use ``value`` for ``name`` as written; None when it can (or the
    variable has no such limit)."""
    r = VALUE_RANGES.get(name)
    if r is None or value in r.special:
        return None
    if r.effect == "clamped" and name == "NCCL_NTHREADS" and value <= 0:
        return None  # 0 or negative: NCCL's own default
    ok = r.lo <= value <= r.hi and not (r.multiple and value % r.multiple)
    return None if ok else (r, r.used(value))


# --------------------------------------------------------------------------------------------------
# Text that a template or a shell should have replaced

#: Jinja/Ansible ``{{ x }}`` and ``{% %}``, shell ``${X}``/``$X``, autoconf/CMake ``@X@``: never NCCL's syntax
#: (NCCL_DEBUG_FILE's ``%h``/``%p`` are NCCL's own and not matched).
_TEMPLATE_RE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|@[A-Za-z_][A-Za-z0-9_]*@")


def template_text(value: str) -> str | None:
    """The first piece of unrendered template or unexpanded shell text in ``value``, or None."""
    m = _TEMPLATE_RE.search(value)
    return m.group(0) if m else None


# --------------------------------------------------------------------------------------------------
# NCCL_DEBUG and its lists (src/debug.cc; from 2.30.7 the param registry: parser_bitset.h). The releases after the
# last tag (2.31.2, 2.32.3) from the accepted values that their libraries' ncclParamDumpAll prints.

#: NCCL_DEBUG levels (case-insensitive) with the first release that accepts each.
DEBUG_LEVELS: tuple[tuple[str, Version], ...] = (
    ("VERSION", Version(2, 3, 5)), ("WARN", Version(2, 3, 5)), ("ATTN", Version(2, 32, 3)), ("INFO", Version(2, 3, 5)),
    ("ABORT", Version(2, 3, 5)), ("TRACE", Version(2, 3, 5)),
)
#: NCCL_DEBUG_SUBSYS names with the first release (tag) whose debug code knows each.
DEBUG_SUBSYSTEMS: tuple[tuple[str, Version], ...] = (
    ("INIT", Version(2, 3, 5)), ("COLL", Version(2, 3, 5)), ("P2P", Version(2, 3, 5)), ("SHM", Version(2, 3, 5)),
    ("NET", Version(2, 3, 5)), ("ALL", Version(2, 3, 5)), ("GRAPH", Version(2, 5, 6)), ("TUNING", Version(2, 5, 6)),
    ("ENV", Version(2, 7, 3)), ("ALLOC", Version(2, 9, 9)), ("CALL", Version(2, 13, 4)), ("NVLS", Version(2, 17, 1)),
    ("PROXY", Version(2, 18, 1)), ("BOOTSTRAP", Version(2, 21, 5)), ("REG", Version(2, 21, 5)),
    ("PROFILE", Version(2, 22, 3)), ("RAS", Version(2, 24, 3)), ("DESTROY", Version(2, 30, 3)),
    ("ALLOC_HOST", Version(2, 30, 7)),
)
#: The debug lists: name -> (first release that reads it, the names it accepts with their first release, what NCCL
#: uses when the registry (2.30.7 and later) rejects the value: by release, newest first).
DEBUG_LISTS: dict[str, tuple[Version, tuple[tuple[str, Version], ...], tuple[tuple[Version, str], ...]]] = {
    "NCCL_DEBUG_SUBSYS": (Version(2, 3, 5), DEBUG_SUBSYSTEMS, ((Version(2, 30, 7), "INIT,ENV,BOOTSTRAP"),)),
    "NCCL_DEBUG_TIMESTAMP_LEVELS": (Version(2, 26, 2), DEBUG_LEVELS + (("ALL", Version(2, 26, 2)),),
                                    ((Version(2, 32, 3), "WARN,ATTN"), (Version(2, 30, 7), "WARN"))),
    "NCCL_DEBUG_LEVELS": (Version(2, 32, 3), DEBUG_LEVELS + (("ALL", Version(2, 32, 3)),),
                          ((Version(2, 32, 3), "none added"),)),
}
#: The first release that reads NCCL_DEBUG and its lists through the typed registry: names are trimmed, and one
#: unknown name makes NCCL reject the whole value and keep the default. Before, strtok(',') and strcasecmp: an
#: unknown name is skipped silently and the others still apply.
DEBUG_REGISTRY = Version(2, 30, 7)


def debug_level_names(version: Version = DEFAULT) -> tuple[str, ...]:
    """The NCCL_DEBUG levels ``version`` accepts."""
    return tuple(n for n, since in DEBUG_LEVELS if version >= since)


def debug_list_names(name: str, version: Version = DEFAULT) -> tuple[str, ...]:
    """The names ``version`` accepts in the debug list ``name`` (empty when it does not read the variable)."""
    since, names, _ = DEBUG_LISTS[name]
    return tuple(n for n, first in names if version >= first) if version >= since else ()


def debug_list_default(name: str, version: Version = DEFAULT) -> str | None:
    """What the registry keeps when it rejects a value of ``name`` (None before the registry)."""
    return next((text for since, text in DEBUG_LISTS[name][2] if version >= since), None)


def debug_list_unknown(name: str, value: str, version: Version = DEFAULT) -> list[str]:
    """The entries of the comma-separated ``value`` of debug list ``name`` that ``version`` does not know, as
    written. A leading '^' (all but these) is not part of the first entry; empty entries are skipped."""
    accepted = {n.upper() for n in debug_list_names(name, version)}
    body = value[1:] if value.startswith("^") else value
    out = []
    for entry in body.split(","):
        token = entry.strip() if version >= DEBUG_REGISTRY else entry.lstrip("^")
        if token and token.upper() not in accepted:
            out.append(entry)
    return out
