"""Packaging: the C module is opt-in (NCCLCTL_BUILD_C=1) and must never make an install fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _build_ext(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "NCCLCTL_BUILD_C"}
    full.update(env)
    return subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path / "lib"),
                           "--build-temp", str(tmp_path / "tmp")], cwd=REPO, env=full, capture_output=True,
                          text=True, timeout=300)


def test_build_without_a_compiler_succeeds_without_the_c_reader(tmp_path):
    """setup.py declares ncclctl.fabric._fastread optional: asked for (NCCLCTL_BUILD_C=1) with a compiler that
    fails (as on a host with none, or without the Python headers) the build warns and goes on, and no module is
    produced (ncclctl then reads fabrics with its pure-Python readers: tests/fabric/test_fabric_lean.py runs them)."""
    r = _build_ext(tmp_path, NCCLCTL_BUILD_C="1", CC="/bin/false", LDSHARED="/bin/false")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "_fastread" in r.stderr and "failed" in r.stderr, r.stderr[-3000:]
    assert not list((tmp_path / "lib").rglob("_fastread*"))


def test_the_default_build_compiles_nothing(tmp_path):
    """Without NCCLCTL_BUILD_C nothing is compiled, even with a working compiler (the wheel is py3-none-any:
    tests/ops/test_packaging.py builds it); a compiler that would fail is never called."""
    r = _build_ext(tmp_path, CC="/bin/false", LDSHARED="/bin/false")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "_fastread" not in r.stderr and "failed" not in r.stderr, r.stderr[-3000:]
    assert not list((tmp_path / "lib").rglob("_fastread*"))
