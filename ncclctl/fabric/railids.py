"""The rail/plane ids the CLI\'s ``--fabric FILE`` / ``--rail-map FILE`` / ``--host NAME`` give a node: the fabric is
read and analysed here (:mod:`ncclctl.fabric.sources`, :mod:`ncclctl.fabric.layout`), the ids chosen by
:mod:`ncclctl.plan.railids` (sources, best first), what NCCL reads of them is :mod:`ncclctl.nccl.railids`."""

from __future__ import annotations

from dataclasses import dataclass

from ncclctl.errors import InputError
from ncclctl.model import Node
from ncclctl.nccl.railids import RailId, RailIds
from ncclctl.plan.railids import (fabric_host_ids, fabric_host_leaves, fabric_rail_only, leaf_name, load_rail_map,
                                  map_sources, resolve, short_name)
from ncclctl.plan.rails import RailPlan


@dataclass
class PortIds:
    """A host's ports as a fleet source places them, port by port (what a check compares a file with)."""

    #: ``"mlx5_0:1"`` -> ids, for every port the source places.
    ids: dict[str, RailId]
    #: ``"mlx5_0:1"`` -> the name of the leaf it lands on (fabric only).
    leaves: dict[str, str]
    source: str
    #: What was read: ``FILE: host NAME``.
    detail: str


def port_ids(node: Node | None, *, fabric_file: str | None, rail_map: str | None,
             host: str | None) -> PortIds | None:
    """The ids ``--fabric FILE`` / ``--rail-map FILE`` give ``node``'s ports (``--host NAME``, default its
    hostname), port by port: the fabric's when it knows the host, else the rail map's when it covers the node's
    rail ports (a rail map needs the node). None without a source; InputError when no source knows the host."""
    if fabric_file is None and rail_map is None:
        return None
    host = host or (node.hostname if node is not None else "")
    tried = []
    if fabric_file is not None:
        from ncclctl.fabric.layout import analyze
        from ncclctl.fabric.sources import load_input

        lay = analyze(load_input(fabric_file, None))
        ids, leaves = fabric_host_ids(lay), fabric_host_leaves(lay)
        key = host if host in ids else short_name(host)
        if ids.get(key):
            return PortIds(dict(ids[key]), {k: leaf_name(lay, v) for k, v in leaves.get(key, {}).items()}, "fabric",
                           f"{fabric_file}: host {key}")
        tried.append(f"the fabric {fabric_file} has no rail port of host {host}")
    if rail_map is not None and node is not None:
        from ncclctl.plan.rails import plan_rails

        got = map_sources(node, plan_rails(node), load_rail_map(rail_map), host)
        if got is not None:
            return PortIds(dict(got.ids), {}, got.source, got.detail)
        tried.append(f"the rail map {rail_map} does not cover every rail port of host {host}")
    raise InputError("; ".join(tried), path=fabric_file or rail_map,
                     fix="name the node as the fabric or rail map does with --host NAME")


def ids_from_options(node: Node, plan: RailPlan, *, fabric_file: str | None, rail_map: str | None,
                     host: str | None) -> RailIds | None:
    """The CLI's ``--fabric FILE`` / ``--rail-map FILE`` / ``--host NAME``: None when neither source is given
    (the output keeps today's form, without a note)."""
    if fabric_file is None and rail_map is None:
        return None
    fabric, label, rail_only = None, "", False
    if fabric_file is not None:
        from ncclctl.fabric.layout import analyze
        from ncclctl.fabric.sources import load_input

        lay = analyze(load_input(fabric_file, None))
        fabric, label, rail_only = fabric_host_ids(lay), fabric_file, fabric_rail_only(lay)
    rmap = load_rail_map(rail_map) if rail_map is not None else None
    return resolve(node, plan, host=host, fabric=fabric, fabric_label=label, rail_map=rmap, rail_only=rail_only)
