"""Packaging: the optional C module must never make an install fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_build_without_a_compiler_succeeds_without_the_c_reader(tmp_path):
    """setup.py declares ncclctl.fabric._fastread optional: with a compiler that fails (as on a host with none, or
    without the Python headers) the build warns and goes on, and no module is produced (ncclctl then reads fabrics
    with its pure-Python readers: tests/fabric/test_fabric_lean.py runs them)."""
    env = {**os.environ, "CC": "/bin/false", "LDSHARED": "/bin/false"}
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path / "lib"),
                        "--build-temp", str(tmp_path / "tmp")], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "_fastread" in r.stderr and "failed" in r.stderr, r.stderr[-3000:]
    assert not list((tmp_path / "lib").rglob("_fastread*"))
