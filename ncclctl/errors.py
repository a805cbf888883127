"""Exit codes and the error hierarchy: the one place both are named.

Nothing below the CLI prints or exits; code raises one of these and ``cli.main`` maps it to an
:class:`ExitCode` with a one-line message on stderr (never a traceback).
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Process exit codes, listed in the README."""

    OK = 0
    #: Findings at or above the ``--fail-on`` level.
    FINDINGS = 1
    #: Bad command-line usage (click/typer's own code).
    USAGE = 2
    #: Invalid input: a fixture, XML, YAML, JSON or command output that cannot be used.
    INVALID_INPUT = 3
    #: A source the command requires is unavailable (no NVML, no sysfs, tool missing, timeout).
    UNAVAILABLE = 4
    #: An internal error: a bug in ncclctl (reported without a traceback unless NCCLCTL_DEBUG=1).
    INTERNAL = 70
    #: Interrupted (Ctrl-C).
    INTERRUPTED = 130


class NcclctlError(Exception):
    """Base of every error ncclctl reports to the user.

    ``path``/``line``/``column`` locate the problem; ``fix`` says what to do about it.
    """

    exit_code: ExitCode = ExitCode.INVALID_INPUT

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.column = column
        self.fix = fix

    def location(self) -> str:
        if self.path is None:
            return ""
        loc = str(self.path)
        if self.line is not None:
            loc += f":{self.line}"
            if self.column is not None:
                loc += f":{self.column}"
        return loc

    def __str__(self) -> str:
        loc = self.location()
        text = f"{loc}: {self.message}" if loc else self.message
        if self.fix:
            text += f" (fix: {self.fix})"
        return text

    def to_dict(self) -> dict:
        return {
            "error": type(self).__name__,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "fix": self.fix,
            "exit_code": int(self.exit_code),
        }


class InputError(NcclctlError):
    """Input that cannot be used: malformed file, garbage value, broken fixture."""

    exit_code = ExitCode.INVALID_INPUT


class ParseError(InputError):
    """A command output or file that does not follow its format."""


class SourceUnavailable(NcclctlError):
    """A required source (NVML, sysfs, a command) cannot be reached."""

    exit_code = ExitCode.UNAVAILABLE


class UsageError(NcclctlError):
    """Options that contradict each other, beyond what the argument parser catches."""

    exit_code = ExitCode.USAGE
