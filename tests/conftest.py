"""Shared fixtures: host trees, golden files, CLI runner."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cli_zygote

REPO = Path(__file__).resolve().parents[1]
HOSTS = REPO / "fixtures" / "hosts"
GOLDEN = REPO / "tests" / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite golden files from current output")


def host_names() -> list[str]:
    if not HOSTS.is_dir():
        return []
    return sorted(p.name for p in HOSTS.iterdir() if (p / "manifest.json").exists())


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """golden(relpath, text): compare with tests/golden/relpath (or rewrite it with --update-golden)."""
    update = request.config.getoption("--update-golden")

    def check(relpath: str, text: str) -> None:
        path = GOLDEN / relpath
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        assert path.exists(), f"missing golden file {path}; run pytest --update-golden"
        expected = path.read_text(encoding="utf-8")
        assert text == expected, f"output differs from {path}; if intended, run pytest --update-golden"

    return check


def _cli_env(env: dict | None) -> dict:
    full_env = dict(os.environ)
    full_env.pop("NCCLCTL_DEBUG", None)
    if env:
        full_env.update(env)
    return full_env


def run_cli(*args: str, env: dict | None = None, timeout: float = 60,
            input: str | None = None) -> subprocess.CompletedProcess:
    """Run ncclctl as a user would (``python -m ncclctl ARGS``): what ``subprocess.run`` of it returns (text
    stdout/stderr, ``TimeoutExpired`` after killing it). Served by a fork server that has the imports done
    (tests/cli_zygote.py: the child is set up as the fresh process would be); ``NCCLCTL_TEST_FRESH=1`` starts a
    fresh interpreter for every run, and :func:`run_cli_fresh` does so always."""
    full_env = _cli_env(env)
    cmd = [sys.executable, "-m", "ncclctl", *args]
    done = cli_zygote.run(cmd, list(args), full_env, REPO, timeout, input)
    if done is not None:
        return done
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=REPO, input=input)


def run_cli_fresh(*args: str, env: dict | None = None, timeout: float = 60,
                  input: str | None = None) -> subprocess.CompletedProcess:
    """:func:`run_cli` in a fresh interpreter always: for tests about the process itself (start-up, imports,
    signals, what Python does at exit)."""
    return subprocess.run([sys.executable, "-m", "ncclctl", *args], capture_output=True, text=True,
                          timeout=timeout, env=_cli_env(env), cwd=REPO, input=input)


def pytest_unconfigure(config: pytest.Config) -> None:
    cli_zygote.shutdown()


def held_after(fn, *args, **kw) -> tuple:
    """``(fn(*args, **kw), bytes its result holds)``: tracemalloc's count of the allocations still alive once ``fn``
    has returned and the cyclic collector has run (memory is counted, never timed)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        out = fn(*args, **kw)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return out, held


@pytest.fixture
def cli():
    return run_cli


def load_json(text: str):
    return json.loads(text)


def bind_unix(path: Path):
    """A UNIX socket bound at ``path``, however long the path: bound by its name from inside its folder (a
    socket address holds 107 bytes, and pytest-xdist's worker folders make tmp paths longer than that)."""
    import socket

    s = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        s.bind(path.name)
    finally:
        os.chdir(here)
    return s


_IO_SEQ = itertools.count()
_IO_SHIM = """
import atexit, sys
out = sys.argv.pop(1)
def _dump():
    try:
        with open("/proc/self/io") as fh:
            data = fh.read()
    except OSError:
        data = ""
    with open(out, "w") as fh:
        fh.write(data)
atexit.register(_dump)
sys.argv[0] = "ncclctl"
exec(sys.argv.pop(1))
from ncclctl.cli import main
main()
"""


def run_cli_io(*args: str, env: dict | None = None, timeout: float = 60, tmp: Path, whole_env: dict | None = None,
               setup: str = "", **kw) -> tuple[subprocess.CompletedProcess, dict[str, int]]:
    """:func:`run_cli`, and the bytes the process read and wrote (``/proc/self/io`` at its exit: ``rchar``,
    ``wchar``, ``syscr``...). Work is counted, not timed: a reader that refuses a huge input at once reads a few
    MB (its own modules) whatever the machine's speed; one that reads the input whole reads its size. The
    timeout is only a hang guard. ``whole_env`` replaces the environment (``env`` adds to ours). ``setup`` is
    Python run in the child before the command (a limit lowered, so that a small input takes the path a huge one
    does). Skips where /proc/self/io cannot be read. Always a fresh interpreter, never the fork server of
    :func:`run_cli`: the counts are the whole process's, start-up and imports included."""
    full_env = dict(os.environ if whole_env is None else whole_env)
    full_env.pop("NCCLCTL_DEBUG", None)
    if env:
        full_env.update(env)
    out = tmp / f"io-{os.getpid()}-{next(_IO_SEQ)}.txt"
    proc = subprocess.run([sys.executable, "-c", _IO_SHIM, str(out), setup, *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=REPO, **kw)
    text = out.read_text() if out.exists() else ""
    out.unlink(missing_ok=True)
    if not text:
        pytest.skip("/proc/self/io is not readable here")
    counts = {k: int(v) for k, v in (ln.split(":") for ln in text.splitlines() if ":" in ln)}
    return proc, counts


def promtool_check(text: str) -> None:
    """Prometheus' own `promtool check metrics` accepts ``text`` (skip where promtool is not installed)."""
    tool = shutil.which("promtool")
    if tool is None:
        pytest.skip("promtool not installed (Debian: apt-get install prometheus; .ci/run installs it)")
    r = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
