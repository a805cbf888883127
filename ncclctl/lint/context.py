"""What a check sees: the node model plus what the run knows (expected-state profile, options), and the views
of the node that several rule families share, each computed once per run:

* :attr:`Ctx.nccl` (:meth:`Ctx.nccl_for` for another NCCL release): the settings as NCCL reads them on this node
  (:class:`ncclctl.nccl.settings.Resolved`: ``.get(name)`` with source and line, ``.value``, ``.int``, ``.text``);
* :attr:`Ctx.ports`: every RDMA port; :attr:`Ctx.nccl_ports`: those NCCL's IB plugin uses under the node's
  ``NCCL_IB_HCA`` / ``NCCL_IB_DISABLE``;
* :attr:`Ctx.rails`: the rail plan.

Rule modules read the node through these and never import each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ncclctl.model import IbPort, Nic, Node

if TYPE_CHECKING:
    from ncclctl.nccl.settings import Resolved
    from ncclctl.nccl.version import Version
    from ncclctl.plan.rails import RailPlan


@dataclass
class Ctx:
    """One lint run over one node. Derived views (rails, settings, ports) are computed once, on first use."""

    node: Node
    # Expected-state profile (``--expect FILE``), already validated; None when not given.
    expect: dict[str, Any] | None = None
    # Where the node came from (a fixture/snapshot dir, a model JSON, or None for the live host).
    source: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    _nccl_by_version: dict[Version, Resolved] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def host(self) -> str:
        return self.node.hostname

    @cached_property
    def rails(self) -> RailPlan | None:
        """The node's rail plan (:func:`ncclctl.plan.rails.plan_rails`), or None when it has no GPU or no NIC."""
        from ncclctl.plan.rails import plan_rails

        try:
            return plan_rails(self.node)
        except Exception:  # a node without GPUs/NICs has no rails; rules treat None as "not applicable"
            return None

    @cached_property
    def is_bare_metal(self) -> bool:
        return not self.node.is_guest

    # NCCL's view of the node ------------------------------------------------------------------------------

    @cached_property
    def nccl(self) -> Resolved:
        """The NCCL settings of this node as the default NCCL release reads them."""
        from ncclctl.nccl.version import DEFAULT

        return self.nccl_for(DEFAULT)

    @cached_property
    def foreign_confs(self) -> dict[str, tuple[str, int, int]]:
        """The conf files that are not nccl.conf files at all (YAML, C++, a shell script with logic...): path ->
        (:func:`ncclctl.nccl.settings.foreign_shape`). NCCL026 reports each once; the line-syntax rules
        (NCCL001-NCCL005, NCCL009) leave their lines alone."""
        from ncclctl.nccl.settings import foreign_shape

        out = {}
        for conf in self.node.facts.conf_files:
            shape = foreign_shape(conf.text)
            if shape is not None:
                out[conf.path] = shape
        return out

    def nccl_for(self, version: Version) -> Resolved:
        """The NCCL settings of this node as NCCL ``version`` reads them (conf line syntax changed in 2.26 and
        2.30), resolved once per version."""
        from ncclctl.nccl.settings import resolve

        cached = self._nccl_by_version.get(version)
        if cached is None:
            cached = self._nccl_by_version[version] = resolve(self.node, version)
        return cached

    @cached_property
    def ports(self) -> tuple[tuple[Nic, IbPort], ...]:
        """Every port of every RDMA device, in device (natural) then port order."""
        from ncclctl.names import natural_key

        out = [(n, p) for n in self.node.nics for p in n.ports]
        out.sort(key=lambda e: (natural_key(e[0].name), e[1].num))
        return tuple(out)

    @cached_property
    def nccl_ports(self) -> frozenset[tuple[str, int]]:
        """(device, port) pairs NCCL's IB plugin would keep if they were ACTIVE: ``NCCL_IB_HCA`` applied the way
        NCCL applies it (prefix/exact, ``^`` exclusion, ports); all InfiniBand/RoCE ports when it is unset or
        empty; none when ``NCCL_IB_DISABLE`` is non-zero (NCCL then uses sockets)."""
        from ncclctl.nccl.lists import ib_ports

        ports = [(n.name, p.num) for n, p in self.ports if p.link_layer in ("InfiniBand", "Ethernet")]
        return ib_ports(ports, self.nccl.value("NCCL_IB_HCA"), self.nccl.int("NCCL_IB_DISABLE", 0))


def nccl_ports(ctx: Ctx) -> frozenset[tuple[str, int]]:
    """:attr:`Ctx.nccl_ports` as a function, for callers that hold a :class:`Ctx` (the fleet rules)."""
    return ctx.nccl_ports


def rdma_nics(node: Node) -> list[Nic]:
    """RDMA NICs NCCL's IB plugin can use: placed on PCI, with an InfiniBand or Ethernet (RoCE) port, in natural
    name order."""
    from ncclctl.names import natural_key

    out = [n for n in node.nics if n.bdf and any(p.link_layer in ("InfiniBand", "Ethernet") for p in n.ports)]
    return sorted(out, key=lambda n: natural_key(n.name))
