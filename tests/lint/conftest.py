"""Fixtures the fleet tests share."""

from __future__ import annotations

import json

import pytest

from conftest import HOSTS, run_cli


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Node models of a healthy and a port-down DGX, to copy under other host names."""
    out = {}
    for name in ("dgx-h100", "dgx-h100-port-down"):
        r = run_cli("probe", "--root", str(HOSTS / name), "--format", "json")
        assert r.returncode == 0, r.stderr
        out[name] = json.loads(r.stdout)
    return out
