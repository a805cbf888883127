"""Helpers for the operations tests: cached tool environments (ansible-core, pipx, build), a clean source copy.

Tool environments live in the system temp folder (``$TMPDIR/ncclctl-test-cache/<name>``), never in the checkout,
and are reused across runs. Installing needs the package index; when it cannot be reached the tests that need
the tools are skipped with the reason (pip's own words), any other failure fails them.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(tempfile.gettempdir()) / "ncclctl-test-cache"

_OFFLINE_HINTS = ("Could not find a version", "No matching distribution", "NewConnectionError", "Name or service not known",
                  "Temporary failure in name resolution", "Network is unreachable", "Connection refused",
                  "ProxyError", "Max retries exceeded", "ConnectTimeout", "ReadTimeout")


def offline_or_fail(what: str, proc: subprocess.CompletedProcess) -> None:
    text = proc.stdout + proc.stderr
    if any(h in text for h in _OFFLINE_HINTS):
        pytest.skip(f"{what}: the package index cannot be reached ({text.strip().splitlines()[-1][:200]})")
    pytest.fail(f"{what} failed (rc={proc.returncode}):\n{text[-3000:]}")


def tool_venv(name: str, packages: list[str], probe: str) -> Path:
    """A virtual environment with ``packages`` (cached); ``probe`` is a file under it that proves it is complete."""
    CACHE.mkdir(parents=True, exist_ok=True)
    venv = CACHE / name
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / probe).exists():
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=120)
        if made.returncode != 0:
            pytest.skip(f"cannot create a virtual environment: {made.stderr.strip()[-200:]}")
        proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *packages],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not (venv / probe).exists():
            shutil.rmtree(venv, ignore_errors=True)
            offline_or_fail(f"pip install {' '.join(packages)}", proc)
        return venv


def copy_source(dest: Path) -> Path:
    """What a source distribution is built from (no fixtures, tests or caches), so the build never writes into
    the checkout that others are editing."""
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    if (REPO / "MANIFEST.in").exists():
        shutil.copy2(REPO / "MANIFEST.in", dest / "MANIFEST.in")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "ncclctl", dest / "ncclctl", symlinks=True, ignore=ignore)
    shutil.copytree(REPO / "schemas", dest / "schemas", ignore=ignore)
    return dest
