"""Probing: build a :class:`ncclctl.model.Node` from a host root, a command runner and an NVML source.

I/O happens only through the three seams (:mod:`.hostroot`, :mod:`.commands`, :mod:`.nvml`); turning
what they return into the model is pure (:mod:`.assemble`).
"""

from __future__ import annotations

from ncclctl.probe.assemble import probe

__all__ = ["probe"]
