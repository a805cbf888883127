"""Rail and plane ids as NCCL 2.30.7+ is told them: a node's rail ports with their ids, from one source, and
whether a target NCCL release gets them written.

NCCL reads rail/plane ids from 2.30.7 on (``src/graph/topo.cc`` ``ncclTopoAddNet``: ``<net rail= plane=>``;
``misc/utils.cc`` ``parseStringList``: ``NCCL_IB_HCA`` entries ``name[:port[:rail[:plane]]]``; ``ncclTopoAutoMerge``:
``NCCL_NET_MERGE_POLICY=RAIL``). Earlier releases ignore the extra ``NCCL_IB_HCA`` fields and the attributes.
Where the ids come from (fabric, rail map, subnets, local PCIe order) is :mod:`ncclctl.plan.railids`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ncclctl.nccl.version import Version
from ncclctl.record import record

#: NCCL reads rail/plane ids (topology ``<net>`` attributes, NCCL_IB_HCA fields, NCCL_NET_MERGE_POLICY) from here on.
RAIL_IDS_SINCE = Version(2, 30, 7)


@record
class RailId:
    rail: int
    plane: int | None = None


@dataclass
class RailIds:
    #: ``"mlx5_0:1"`` -> its ids, for every rail port of the plan.
    ids: dict[str, RailId]
    source: str
    #: One line: what the source was (file, host name).
    detail: str = ""
    notes: list[str] = field(default_factory=list)
    #: The fabric joins no two rails below the top (a spine set per rail): crossing rails has no switch path.
    rail_only: bool = False

    @property
    def fleet(self) -> bool:
        """Ids that mean the same on every node (anything but the local PCIe order)."""
        return self.source != "pcie"

    def hca_entry(self, hca: str) -> str:
        rid = self.ids.get(hca)
        if rid is None:
            return hca
        return f"{hca}:{rid.rail}" + ("" if rid.plane is None else f":{rid.plane}")


def emit_note(ids: RailIds, version: Version) -> str | None:
    """Why the ids are not written for this target, or None when they are."""
    if not ids.ids:
        return None
    if not ids.fleet:
        return ("rail ids from the local PCIe order are a per-node guess: not written (give --fabric or --rail-map "
                "for ids NCCL 2.30.7+ can use)")
    if version < RAIL_IDS_SINCE:
        return (f"NCCL {version} reads no rail/plane ids (2.30.7+: NCCL_IB_HCA name:port:rail:plane, <net rail= "
                f"plane=>, NCCL_NET_MERGE_POLICY=RAIL): the {ids.source} ids are not written")
    return None


def written(ids: RailIds | None, version: Version) -> RailIds | None:
    """The ids to write for this target: fleet ids for NCCL 2.30.7+, else None."""
    if ids is None or not ids.ids or emit_note(ids, version) is not None:
        return None
    return ids
