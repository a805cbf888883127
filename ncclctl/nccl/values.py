"""Value syntaxes of particular NCCL variables: path levels and the algorithm/protocol lists.

* ``NCCL_P2P_LEVEL`` / ``NCCL_NET_GDR_LEVEL`` (and the ``NCCL_P2P_DISABLE`` switch in front of the first):
  ``src/graph/paths.cc:ncclGetLevel`` with the names of ``topoPathTypeStr`` (``src/graph/topo.cc``).
* ``NCCL_ALGO`` / ``NCCL_PROTO``: ``src/graph/tuning.cc:parseList``.
* ``NCCL_IB_TC``: the GRH traffic class byte (``net_ib``: ``ah_attr.grh.traffic_class``), DSCP in the top six
  bits and ECN in the low two: :func:`ib_tc_for_dscp`.

Each with the release that changed it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ncclctl.nccl.params import c_int
from ncclctl.nccl.version import DEFAULT, Version

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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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
