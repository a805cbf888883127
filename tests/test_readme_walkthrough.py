"""The README's copy-paste walk-through runs as written, in order, on the shipped fixtures.

Each command must exit 0 or 1 (findings; with ``--nagios`` the Nagios 0-3), never a usage/input error or a traceback; where the README's comment
states the exit status ("exit 0", "exit 1"), that status. ``/tmp/`` paths are redirected to a private folder.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _block(title: str) -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split(f"\n## {title}\n", 1)[1]
    body = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    return [line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _split_comment(line: str) -> tuple[str, str]:
    m = re.search(r"\s+#\s", line)
    return (line[:m.start()], line[m.end():]) if m else (line, "")


WALK = _block("Walk-through on the shipped fixtures")


def test_walkthrough_is_not_empty() -> None:
    assert len(WALK) >= 15, WALK


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("walk")


@pytest.mark.parametrize("line", WALK, ids=[_split_comment(x)[0][:60] for x in WALK])
def test_walkthrough_command(line: str, workdir: Path) -> None:
    cmd, comment = _split_comment(line)
    cmd = cmd.replace("/tmp/", f"{workdir}/")
    assert cmd.startswith("ncclctl "), cmd
    # The ncclctl on PATH may be another install: run this checkout's, through a shell function.
    script = f'ncclctl() {{ {shlex.quote(sys.executable)} -m ncclctl "$@"; }}\n{cmd}\n'
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120"})
    assert "Traceback" not in proc.stderr, proc.stderr
    allowed = (0, 1, 2, 3) if "--nagios" in cmd else (0, 1)  # Nagios: OK/WARNING/CRITICAL/UNKNOWN
    assert proc.returncode in allowed, f"{cmd}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    m = re.search(r"exit (\d)", comment)
    if m:
        assert proc.returncode == int(m.group(1)), f"{cmd}: exit {proc.returncode}, README says {m.group(0)}"
    assert proc.stdout.strip() or proc.stderr.strip(), f"{cmd}: said nothing"


def _blocks(title: str) -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    return [b.split("\n```", 1)[0] for b in section.split("```sh\n")[1:]]


def _untracked() -> set[str]:
    proc = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], capture_output=True, text=True,
                          cwd=REPO)
    return set(proc.stdout.splitlines()) if proc.returncode == 0 else set()


def test_quickstart_runs_and_leaves_the_repository_clean(tmp_path: Path) -> None:
    """The quickstart's offline blocks (not the one meant for a real node) run as written, and write nothing into
    the repository."""
    blocks = [b for b in _blocks("Quickstart (no GPU needed)") if "fixtures/" in b]  # not the live-node block
    assert len(blocks) >= 2, blocks
    before = _untracked()
    lines = [_split_comment(x)[0] for b in blocks for x in b.splitlines() if x.strip()]
    # exit 1 (findings: the NTX001 example, a diff) is a result; anything else stops the script
    lines = [f"{x} || [ $? -eq 1 ]" if x.startswith("ncclctl ") else x for x in lines]
    script = f'set -e\nncclctl() {{ {shlex.quote(sys.executable)} -m ncclctl "$@"; }}\n' + "\n".join(lines)
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "TMPDIR": str(tmp_path), "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    # The files the quickstart writes land in its temp folder, not in the repository (checked by name: other
    # tests running beside this one may create and remove files of their own).
    new = {line[3:] for line in _untracked() - before}
    for name in ("model.json", "dgx-h100.xml", "vm.xml"):
        assert not (REPO / name).exists() and name not in new, name
    assert (tmp_path / "model.json").is_file()

