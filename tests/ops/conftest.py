"""Operations tests: one built sdist + wheel per session (see tools.py for the cached tool environments)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .tools import offline_or_fail, copy_source, tool_venv


@pytest.fixture(scope="session")
def dist(tmp_path_factory) -> dict[str, Path]:
    """``python -m build`` of the current tree: the sdist, and the wheel built from that sdist."""
    tools = tool_venv("build-pipx", ["build", "pipx"], "bin/pipx")
    work = tmp_path_factory.mktemp("dist")
    src = copy_source(work / "src")
    out = work / "out"
    proc = subprocess.run([str(tools / "bin" / "python"), "-m", "build", "--outdir", str(out), str(src)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        offline_or_fail("python -m build", proc)
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, os.listdir(out)
    return {"wheel": wheels[0], "sdist": sdists[0], "tools": tools, "src": src}
