"""Run one untrusted input through a target and judge the outcome.

Allowed: a value, or the project's own :class:`~ncclctl.errors.InputError` (ParseError is one) with a
message that names the file. Anything else fails the test with the input saved for replay: another
exception type, the parsers' internal safety net (``report an ncclctl bug``), an input that runs past
:data:`TIME_LIMIT` seconds (SIGALRM), or one whose traced Python allocations peak above
:func:`memory_limit` (tracemalloc, on every input in CI and a sample in the slow run, where an address-space
limit set by ``conftest.py`` backs it up).
"""

from __future__ import annotations

import hashlib
import os
import signal
import tempfile
import traceback
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ncclctl.errors import InputError, NcclctlError

#: Seconds one input may take, three times that when traced (generous: a 2-core CI machine under load; real
#: inputs take milliseconds, a 1 MiB one a few seconds at most).
TIME_LIMIT = float(os.environ.get("NCCLCTL_FUZZ_TIME_LIMIT", "10"))
#: Where failing inputs are written (one file per input, named by its hash).
CRASH_DIR = Path(os.environ.get("NCCLCTL_FUZZ_CRASH_DIR", os.path.join(tempfile.gettempdir(), "ncclctl-fuzz-crashes")))


def memory_limit(size: int) -> int:
    """Traced bytes one input may allocate at peak: 64 MiB plus 64 bytes per input byte."""
    return (64 << 20) + 64 * size


class InputTimeout(BaseException):
    """Raised by SIGALRM; a BaseException so that no ``except Exception`` in the code under test eats it."""


def _alarm(signum: int, frame: Any) -> None:
    raise InputTimeout()


@dataclass
class Outcome:
    ok: bool
    kind: str  # "value" | "error" | the failure kind
    detail: str = ""
    peak: int | None = None


def run_one(func: Callable[[bytes], Any], data: bytes, *, trace: bool, need_line: bool = False) -> Outcome:
    """Call ``func(data)`` under a time limit (and tracemalloc when ``trace``); classify what happened."""
    old = signal.signal(signal.SIGALRM, _alarm)
    started = False
    if trace and not tracemalloc.is_tracing():
        tracemalloc.start()
        started = True
    base = tracemalloc.get_traced_memory()[0] if trace else 0
    if trace:
        tracemalloc.reset_peak()
    limit = TIME_LIMIT * (3 if trace else 1)  # tracemalloc makes allocation-heavy code several times slower
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        try:
            func(data)
            outcome = Outcome(True, "value")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except InputTimeout:
        outcome = Outcome(False, "timeout", f"took more than {limit:g}s")
    except InputError as exc:
        outcome = _judge_error(exc, need_line)
    except NcclctlError as exc:
        outcome = Outcome(False, "wrong-error", f"{type(exc).__name__} (exit {int(exc.exit_code)}): {exc}")
    except MemoryError:
        outcome = Outcome(False, "memory", "MemoryError (address-space limit)")
    except BaseException as exc:  # noqa: BLE001 - the point is to catch everything else
        if isinstance(exc, KeyboardInterrupt):
            raise
        outcome = Outcome(False, "exception", "".join(traceback.format_exception(exc, limit=-8)))
    finally:
        signal.signal(signal.SIGALRM, old)
        if trace:
            peak = tracemalloc.get_traced_memory()[1] - base
            if started:
                tracemalloc.stop()
    if trace:
        outcome.peak = peak
        if outcome.ok and peak > memory_limit(len(data)):
            outcome = Outcome(False, "memory", f"peak {peak / 2**20:.1f} MiB traced for a {len(data)}-byte input",
                              peak)
    return outcome


def _judge_error(exc: InputError, need_line: bool) -> Outcome:
    text = str(exc)
    if not exc.message or not exc.message.strip():
        return Outcome(False, "bad-error", f"{type(exc).__name__} without a message")
    if exc.path is None:
        return Outcome(False, "bad-error", f"{type(exc).__name__} does not name the file: {text}")
    if "report an ncclctl bug" in text:
        return Outcome(False, "safety-net", f"the parser's internal-error safety net fired: {text}")
    if need_line and not isinstance(exc.line, int):
        return Outcome(False, "bad-error", f"{type(exc).__name__} without a line number: {text}")
    if int(exc.exit_code) != 3:
        return Outcome(False, "bad-error", f"exit code {int(exc.exit_code)}: {text}")
    return Outcome(True, "error", text)


def save(target: str, data: bytes) -> Path:
    CRASH_DIR.mkdir(parents=True, exist_ok=True)
    path = CRASH_DIR / f"{target}-{hashlib.sha256(data).hexdigest()[:16]}.bin"
    path.write_bytes(data)
    return path


def describe(target: str, data: bytes, outcome: Outcome, origin: str) -> str:
    path = save(target, data)
    shown = data[:300]
    return (f"{target}: {outcome.kind} on a {len(data)}-byte input ({origin}); saved to {path}\n"
            f"input starts: {shown!r}\n{outcome.detail}\n"
            f"replay: python -m tests.fuzz.replay {target} {path}")
