"""What a check sees: the node model plus what the run knows (expected-state profile, options)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ncclctl.model import Node


@dataclass
class Ctx:
    """One lint run over one node. Derived views (rails, paths) are computed once, on first use."""

    node: Node
    # Expected-state profile (``--expect FILE``), already validated; None when not given.
    expect: dict[str, Any] | None = None
    # Where the node came from (a fixture/snapshot dir, a model JSON, or None for the live host).
    source: str | None = None
    # True when linting a fixture/snapshot/model, not the live host.
    offline: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def host(self) -> str:
        return self.node.hostname

    @cached_property
    def rails(self):
        """The node's rail plan (:func:`ncclctl.rails.plan_rails`), or None when it has no GPU or no NIC."""
        from ncclctl.rails import plan_rails

        try:
            return plan_rails(self.node)
        except Exception:  # a node without GPUs/NICs has no rails; rules treat None as "not applicable"
            return None

    @cached_property
    def is_bare_metal(self) -> bool:
        return not self.node.is_guest
