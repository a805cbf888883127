"""Fuzz suite settings: how many inputs per parser, and the slow (full) run.

* ``python -m pytest -q`` (CI): every target gets a small number of inputs (``NCCLCTL_FUZZ_EXAMPLES``,
  default 100 mutated inputs of up to 64 KiB, one in 3 traced with tracemalloc, + 30 generated); tests marked
  ``slow`` are deselected. Every fuzz test runs under an address-space limit.
* ``python -m pytest -m slow tests/fuzz`` (or ``NCCLCTL_FUZZ_SLOW=1``): the full run, 10,000 mutated inputs per
  target (``NCCLCTL_FUZZ_SLOW_EXAMPLES``) plus 1,000 hypothesis-generated ones, under an address-space limit
  (``NCCLCTL_FUZZ_MEMORY_MB``, default 4096 MiB above what the process already maps) with tracemalloc on one
  input in 25. See docs/reliability.md.
"""

from __future__ import annotations

import os
import resource

import pytest


def slow_selected(config: pytest.Config) -> bool:
    return "slow" in (config.getoption("markexpr", "") or "") or os.environ.get("NCCLCTL_FUZZ_SLOW") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect this folder's ``slow`` tests unless the run asks for them (``-m slow``)."""
    if slow_selected(config):
        return
    here = os.path.dirname(os.path.abspath(__file__))
    keep, drop = [], []
    for item in items:
        if item.get_closest_marker("slow") and str(item.fspath).startswith(here + os.sep):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture
def address_space_limit():
    """Cap the process's address space while a fuzz test runs (restored afterwards): a runaway allocation
    becomes a MemoryError that the harness reports with the input, instead of swapping the machine to death."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        current = int(fh.read().split()[0]) * resource.getpagesize()
    extra = int(os.environ.get("NCCLCTL_FUZZ_MEMORY_MB", "4096")) << 20
    limit = current + extra
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield limit
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
