"""The command runner seam: live subprocesses with timeouts, or outputs recorded in a fixture's ``cmd/``."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Protocol

from ncclctl.errors import InputError

DEFAULT_TIMEOUT = 5.0


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    #: stdout when the command ran and exited 0, else None.
    stdout: str | None
    #: Why there is no output: ``not installed``, ``timed out after 5s``, ``rc=1: ...``, ``not captured``.
    reason: str | None = None
    #: Where the output came from (a fixture file), for error messages.
    source: str | None = None

    @property
    def ok(self) -> bool:
        return self.stdout is not None


def slug(argv: tuple[str, ...] | list[str]) -> str:
    """File name stem of a recorded command: argv joined by ``_``, unsafe characters as ``+``."""
    return re.sub(r"[^A-Za-z0-9._-]", "+", "_".join(argv))


class Runner(Protocol):
    def run(self, argv: tuple[str, ...]) -> CommandResult: ...


class LiveRunner:
    """Runs commands on this host with a timeout, C locale, no stdin, unprivileged."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.timeout = timeout
        self.log: list[CommandResult] = []

    def run(self, argv: tuple[str, ...]) -> CommandResult:
        env = dict(os.environ, LC_ALL="C", LANG="C")
        try:
            proc = subprocess.run(
                list(argv), stdin=subprocess.DEVNULL, capture_output=True, timeout=self.timeout, env=env, check=False
            )
        except FileNotFoundError:
            result = CommandResult(tuple(argv), None, "not installed")
        except subprocess.TimeoutExpired:
            result = CommandResult(tuple(argv), None, f"timed out after {self.timeout:g}s")
        except OSError as exc:
            result = CommandResult(tuple(argv), None, f"cannot run: {exc.strerror}")
        else:
            out = proc.stdout.decode("utf-8", "replace")
            if proc.returncode == 0:
                result = CommandResult(tuple(argv), out)
            else:
                err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
                first = err[0] if err else ""
                result = CommandResult(tuple(argv), None, f"rc={proc.returncode}" + (f": {first}" if first else ""))
        self.log.append(result)
        return result


class RecordedRunner:
    """Serves ``<root>/cmd/<slug>.txt``; ``<slug>.err`` records a failure; neither means not captured."""

    def __init__(self, root: str) -> None:
        self.dir = os.path.join(root, "cmd")

    def run(self, argv: tuple[str, ...]) -> CommandResult:
        stem = os.path.join(self.dir, slug(argv))
        for suffix in (".txt", ".err"):
            path = stem + suffix
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise InputError(f"cannot read recorded command output: {exc.strerror}", path=path) from None
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError("recorded command output is not UTF-8", path=path,
                                 fix="re-capture the host with 'ncclctl snapshot'") from None
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


@dataclass
class RefusedRunner:
    """Used under ``--root`` when a caller asks for live commands: refuse rather than mix hosts."""

    refused: list[tuple[str, ...]] = field(default_factory=list)

    def run(self, argv: tuple[str, ...]) -> CommandResult:  # pragma: no cover - defensive
        self.refused.append(tuple(argv))
        return CommandResult(tuple(argv), None, "live commands are refused under --root")
