"""The probe's one way to read: every sysfs value, command output and NVML answer goes through :class:`Reader`,
which parses it and records what could not be read.

Under a fixture root a malformed value or command output is an :class:`~ncclctl.errors.InputError` naming the
file; on a live host an unparseable command output degrades to an :class:`~ncclctl.model.Unavailable` entry
instead (tools differ by version).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ncclctl.errors import InputError, NcclctlError
from ncclctl.model import Unavailable
from ncclctl.probe.commands import CommandResult, Runner
from ncclctl.probe.hostroot import HostRoot
from ncclctl.probe.nvml import NvmlSource


T = TypeVar("T")
if TYPE_CHECKING:
    from _typeshed import DataclassInstance  # the protocol dataclasses.replace takes; typeshed-only
D = TypeVar("D", bound="DataclassInstance")


class Reader:
    """The probe's reads through the seams (the host root, the command runner, the NVML source), each parsed, and
    the list of what could not be read (``unavailable``). The probe's parts (:mod:`ncclctl.probe.assemble`) are
    readers; a fixture's bad value is an :class:`~ncclctl.errors.InputError` naming the file."""

    def __init__(self, host: HostRoot, runner: Runner, nvml: NvmlSource, *, roce_qos: bool = True) -> None:
        self.host = host
        self.runner = runner
        self.nvml = nvml
        self.roce_qos = roce_qos
        self.unavailable: list[Unavailable] = []

    def value(self, path: str, parse: Callable[[str], T], *, what: str = "value") -> T | None:
        raw = self.host.read_value(path)
        if not raw:
            return None  # absent, unreadable, or empty: an empty sysfs attribute carries no value
        try:
            return parse(raw)
        except (ValueError, IndexError) as exc:
            raise InputError(
                f"unexpected {what} {raw[:60]!r}: {exc}",
                path=self.host.display(path),
                fix="the file is damaged or truncated; re-capture the host with 'ncclctl snapshot'",
            ) from None

    def required(self, path: str, parse: Callable[[str], T], *, what: str = "value") -> T:
        result = self.value(path, parse, what=what)
        if result is None:
            raise InputError(
                f"missing or empty {what}",
                path=self.host.display(path),
                fix="the host tree is incomplete; re-capture it with 'ncclctl snapshot'",
            )
        return result

    def command(self, argv: tuple[str, ...], parse: Callable[..., T], *, partial_ok: bool = False) -> T | None:
        """``partial_ok``: a command that exited non-zero after printing output (ibstat stops at the first CA it
        cannot stat) is parsed from that output; the parser says what was cut (``failure``), else the exit status is
        listed under ``unavailable``."""
        result: CommandResult = self.runner.run(argv)
        if not result.ok and partial_ok and result.partial:
            try:
                out = parse(result.partial, source=" ".join(argv))
            except NcclctlError:
                out = None
            if out is not None:
                if getattr(out, "failure", None) is None:
                    self.unavailable.append(Unavailable(source=" ".join(argv), reason=result.reason or "failed"))
                return out
        if not result.ok:
            if result.reason != "not captured" or self.host.live:
                self.unavailable.append(Unavailable(source=" ".join(argv), reason=result.reason or "failed"))
            return None
        source = result.source or " ".join(argv)
        try:
            return parse(result.stdout, source=source)
        except NcclctlError as exc:
            if self.host.live:
                self.unavailable.append(Unavailable(source=" ".join(argv), reason="unparseable output", detail=str(exc)))
                return None
            raise

    def optional_command(self, argv: tuple[str, ...], parse: Callable[..., T], *,
                         unparseable_is_absent: bool = False) -> T | None:
        """A command whose absence or failure is normal (a daemon not running): no marker then. Its output, when
        it gives some, is parsed like any other (a live host marks an unparseable one; a fixture's is an error),
        unless ``unparseable_is_absent`` (the tool reports "nothing there" as text)."""
        result: CommandResult = self.runner.run(argv)
        if not result.ok:
            return None
        source = result.source or " ".join(argv)
        try:
            return parse(result.stdout, source=source)
        except NcclctlError as exc:
            if unparseable_is_absent:
                return None
            if self.host.live:
                self.unavailable.append(Unavailable(source=" ".join(argv), reason="unparseable output", detail=str(exc)))
                return None
            raise


def replace_fields(obj: D, **changes: Any) -> D:
    """``dataclasses.replace``, typed: a copy of the record ``obj`` with ``changes``."""
    import dataclasses  # noqa: PLC0415

    return dataclasses.replace(obj, **changes)
