"""The command runner seam: live subprocesses with timeouts, or outputs recorded in a fixture's ``cmd/``."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import time
from typing import Protocol

from ncclctl.errors import UsageError
from ncclctl.probe.hostroot import HostRoot
from ncclctl.record import record

DEFAULT_TIMEOUT = 5.0


@record
class CommandResult:
    """What one command gave: its output, or why there is none."""
    argv: tuple[str, ...]
    #: stdout when the command ran and exited 0, else None.
    stdout: str | None
    #: Why there is no output: ``not installed``, ``timed out after 5s``, ``output over 16 MiB``, ``rc=1: ...``,
    #: ``not captured``.
    reason: str | None = None
    #: Where the output came from (a fixture file), for error messages.
    source: str | None = None
    #: What a command that exited non-zero printed before it failed (stdout, then its first stderr line), for
    #: tools that stop part-way and whose earlier output stands (ibstat exits 255 at the first CA it cannot stat).
    partial: str | None = None

    @property
    def ok(self) -> bool:
        return self.stdout is not None


def slug(argv: tuple[str, ...] | list[str]) -> str:
    """File name stem of a recorded command: argv joined by ``_``, unsafe characters as ``+``."""
    return re.sub(r"[^A-Za-z0-9._-]", "+", "_".join(argv))


class Runner(Protocol):
    def run(self, argv: tuple[str, ...]) -> CommandResult: ...


class LiveRunner:
    """Runs commands on this host with a timeout, C locale, no stdin, unprivileged.

    Each command runs in its own session (process group). When it outlives ``timeout`` seconds or writes
    more than :data:`MAX_OUTPUT` bytes, the whole group is killed with SIGKILL, so a wrapper script's
    children (a hung ``ibstat`` under a shell, a stuck driver query) cannot outlive the probe or keep its
    pipes open. The default timeout is :data:`DEFAULT_TIMEOUT`, or ``NCCLCTL_COMMAND_TIMEOUT`` (seconds).
    """

    def __init__(self, timeout: float | None = None) -> None:
        self.timeout = default_timeout() if timeout is None else timeout
        self.log: list[CommandResult] = []

    def run(self, argv: tuple[str, ...]) -> CommandResult:
        env = dict(os.environ, LC_ALL="C", LANG="C")
        try:
            proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, start_new_session=True)
        except FileNotFoundError:
            result = CommandResult(tuple(argv), None, "not installed")
        except OSError as exc:
            result = CommandResult(tuple(argv), None, f"cannot run: {exc.strerror}")
        else:
            result = self._finish(tuple(argv), proc)
        self.log.append(result)
        return result

    def _finish(self, argv: tuple[str, ...], proc: subprocess.Popen) -> CommandResult:
        killed = True
        try:
            out, err, why = _collect(proc, self.timeout)
            if why is None:
                killed = False
        finally:
            if killed:
                _kill_group(proc)
            for fh in (proc.stdout, proc.stderr):
                if fh is not None:
                    fh.close()
        if why == "timeout":
            return CommandResult(argv, None, f"timed out after {self.timeout:g}s")
        if why == "output":
            return CommandResult(argv, None, f"output over {MAX_OUTPUT >> 20} MiB")
        text = out.decode("utf-8", "replace")
        if proc.returncode == 0:
            return CommandResult(argv, text)
        lines = err.decode("utf-8", "replace").strip().splitlines()
        first = lines[0][:200] if lines else ""
        partial = None
        if text.strip():
            partial = text + ("" if text.endswith("\n") else "\n") + (first + "\n" if first else "")
        return CommandResult(argv, None, f"rc={proc.returncode}" + (f": {first}" if first else ""), partial=partial)


#: Most bytes read from one command (stdout and stderr together).
MAX_OUTPUT = 16 << 20


def default_timeout() -> float:
    """``NCCLCTL_COMMAND_TIMEOUT`` when set to a positive number of seconds, else :data:`DEFAULT_TIMEOUT`."""
    raw = os.environ.get("NCCLCTL_COMMAND_TIMEOUT")
    if raw is None or not raw.strip():
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise UsageError(f"NCCLCTL_COMMAND_TIMEOUT={raw!r} is not a number of seconds",
                         fix="set it to a positive number of seconds (at most 3600), e.g. 5")
    return value


def _collect(proc: subprocess.Popen, timeout: float) -> tuple[bytes, bytes, str | None]:
    """Read stdout and stderr until both close and the process exits, within ``timeout`` seconds.

    Returns (stdout, stderr, None) or (..., ..., "timeout" | "output") when the caller must kill the group."""
    deadline = time.monotonic() + timeout
    chunks: dict[int, list[bytes]] = {}
    total = 0
    with selectors.DefaultSelector() as sel:
        for fh in (proc.stdout, proc.stderr):
            assert fh is not None
            chunks[fh.fileno()] = []
            sel.register(fh.fileno(), selectors.EVENT_READ)
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return b"", b"", "timeout"
            for key, _ in sel.select(remaining):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fd)
                    continue
                chunks[key.fd].append(data)
                total += len(data)
                if total > MAX_OUTPUT:
                    return b"", b"", "output"
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return b"", b"", "timeout"
    assert proc.stdout is not None and proc.stderr is not None
    return b"".join(chunks[proc.stdout.fileno()]), b"".join(chunks[proc.stderr.fileno()]), None


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the command's whole process group (its session), then reap the command."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except OSError:  # pragma: no cover - already reaped
        pass
    proc.wait()


class RecordedRunner:
    """Serves ``<root>/cmd/<slug>.txt``; ``<slug>.err`` records a failure; neither means not captured.

    The files are read through a :class:`~ncclctl.probe.hostroot.HostRoot` of the snapshot: a symlink under
    ``cmd/`` resolves inside the snapshot (never to the reader's ``/etc``), and the input door's type and size
    checks apply (regular files of at most 16 MiB, the live runner's cap).
    """

    def __init__(self, root: str | HostRoot) -> None:
        self.host = root if isinstance(root, HostRoot) else HostRoot(root)
        self.dir = os.path.join(self.host.root, "cmd")

    def run(self, argv: tuple[str, ...]) -> CommandResult:
        from ncclctl.inputs import decode

        stem = "/cmd/" + slug(argv)
        for suffix in (".txt", ".err"):
            data = self.host.read_bytes(stem + suffix, kind="cmd")
            if data is None:
                continue
            path = self.host.display(stem + suffix)
            text = decode(data, path, fix="re-capture the host with 'ncclctl snapshot'")
            if suffix == ".txt":
                return CommandResult(tuple(argv), text, source=path)
            reason = text.splitlines()[0].strip() if text.strip() else "failed"
            return CommandResult(tuple(argv), None, reason, source=path)
        return CommandResult(tuple(argv), None, "not captured")


class RecordingRunner:
    """Wraps a live runner and keeps every result, for ``snapshot``."""

    def __init__(self, inner: Runner) -> None:
        self.inner = inner
        self.results: list[CommandResult] = []

    def run(self, argv: tuple[str, ...]) -> CommandResult:
        result = self.inner.run(argv)
        self.results.append(result)
        return result
