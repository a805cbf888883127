"""Helpers shared by the parser modules (private to :mod:`ncclctl.parsers`).

All numeric checks use explicit ASCII classes: Python's ``int()`` also accepts ``"１２"``, ``"1_000"``
and 5000-digit strings (the last one raises ``ValueError``), and ``\\d`` in a ``str`` regex matches any
Unicode digit. The parsers therefore match ``[0-9]`` first and convert second.
"""

from __future__ import annotations

import json
import re
from ncclctl.errors import ParseError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time: these modules load at CLI start-up
    from typing import Any, Callable, TypeVar

    T = TypeVar("T")

#: ANSI SGR / CSI sequences (nvidia-smi underlines its header, ``ip -c`` colours names).
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

_DEC_RE = re.compile(r"[0-9]{1,19}")
_HEX_RE = re.compile(r"0[xX][0-9a-fA-F]{1,16}")
_FLOAT_RE = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,12})?(?:[eE][+-]?[0-9]{1,3})?")
_GUID_COLON_RE = re.compile(r"[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){3}")

#: Exceptions a bug in a parser could raise on hostile input; :func:`run_parser` turns them into
#: :class:`ParseError` so that callers only ever see that one type.
_INTERNAL_ERRORS = (
    ValueError,
    IndexError,
    KeyError,
    TypeError,
    AttributeError,
    RecursionError,
    OverflowError,
    UnicodeError,
    LookupError,
    ArithmeticError,
)


def run_parser(impl: Callable[[str, str], T], text: object, source: str, what: str) -> T:
    """Normalise ``text`` and call ``impl(text, source)``; only :class:`ParseError` escapes."""
    body = as_text(text, source, what)
    try:
        return impl(body, source)
    except ParseError:
        raise
    except _INTERNAL_ERRORS as exc:  # pragma: no cover - safety net, each parser checks first
        raise ParseError(
            f"could not parse the {what} output ({type(exc).__name__}: {exc})",
            path=source,
            line=None,
            fix=f"check that the file holds the unedited output of {what}; if it does, report an "
            "ncclctl bug with the file attached",
        ) from exc


def as_text(text: object, source: str, what: str) -> str:
    """Accept ``str`` (or UTF-8 ``bytes``), drop a leading BOM."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(
                f"{what} output is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
                path=source,
                line=raw.count(b"\n", 0, exc.start) + 1,
                fix="capture the command output again without converting its encoding",
            ) from None
    if not isinstance(text, str):
        raise ParseError(
            f"expected the {what} output as text, got {type(text).__name__}",
            path=source,
            line=None,
            fix="pass the command's stdout as a string",
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def split_lines(text: str) -> list[str]:
    """Split on LF, CRLF and lone CR only (``str.splitlines`` also splits on \\x0b, \\x1c, ...)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def strip_ansi(line: str) -> str:
    return ANSI_RE.sub("", line) if "\x1b" in line else line


def is_blank(text: str) -> bool:
    return not text.strip()


def cut_here(lines: list[str], lineno: int) -> bool:
    """Whether line ``lineno`` (1-based) is the last one with text: a line a parser cannot read there is where a
    paste was cut, not garbage."""
    return lineno >= last_line(lines)


def last_line(lines: list[str]) -> int:
    """1-based number of the last non-blank line (1 for empty input)."""
    for i in range(len(lines), 0, -1):
        if lines[i - 1].strip():
            return i
    return 1


def perr(source: str, line: int | None, message: str, fix: str) -> ParseError:
    return ParseError(message, path=source, line=line, fix=fix)


def dec(token: str, source: str, line: int | None, what: str, fix: str) -> int:
    """Parse a non-negative decimal integer or raise :class:`ParseError`."""
    if _DEC_RE.fullmatch(token):
        return int(token)
    raise perr(source, line, f"{what}: expected a decimal number, got {token!r}", fix)


def dec_or_hex(token: str, source: str, line: int | None, what: str, fix: str) -> int:
    """Decimal, or hex with an explicit ``0x`` prefix (never bare hex)."""
    if _DEC_RE.fullmatch(token):
        return int(token)
    if _HEX_RE.fullmatch(token):
        return int(token, 16)
    raise perr(source, line, f"{what}: expected a number, got {token!r}", fix)


def hex0x(token: str, source: str, line: int | None, what: str, fix: str) -> int:
    """Hex with a mandatory ``0x`` prefix."""
    if _HEX_RE.fullmatch(token):
        return int(token, 16)
    raise perr(source, line, f"{what}: expected 0x-prefixed hex, got {token!r}", fix)


def flt(token: str, source: str, line: int | None, what: str, fix: str) -> float:
    if _FLOAT_RE.fullmatch(token):
        return float(token)
    raise perr(source, line, f"{what}: expected a number, got {token!r}", fix)


def guid(token: str, source: str, line: int | None, what: str, fix: str) -> int:
    """A 64-bit GUID as ``0xa088c20300e3142a`` (ibstat) or ``a088:c203:00e3:142a`` (sysfs/devinfo)."""
    if _HEX_RE.fullmatch(token):
        return int(token, 16)
    if _GUID_COLON_RE.fullmatch(token):
        return int(token.replace(":", ""), 16)
    raise perr(source, line, f"{what}: expected a 64-bit GUID, got {token!r}", fix)


# --------------------------------------------------------------------------------------------- JSON


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def load_json(text: str, source: str, what: str, fix: str) -> Any:
    """``json.loads`` with every failure mapped to :class:`ParseError` (line/column from the decoder)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"{what} output is not valid JSON: {exc.msg}",
            path=source,
            line=exc.lineno,
            column=exc.colno,
            fix=fix,
        ) from None
    except (ValueError, RecursionError, OverflowError) as exc:
        raise ParseError(
            f"{what} output is not usable JSON: {exc}", path=source, line=1, fix=fix
        ) from None


def json_line(text: str, needle: str, start: int = 0) -> int:
    """Line number of the first ``needle`` (a JSON key or value) at/after ``start``; else of ``start``."""
    pos = text.find(needle, start) if needle else -1
    if pos < 0:
        pos = start
    return text.count("\n", 0, max(pos, 0)) + 1


def json_array_offsets(text: str) -> list[int]:
    """Character offsets of each top-level element of a JSON array document (already validated).

    Used to report the line of the offending element in ``ip -j`` output (one line) or ``ip -j -p``
    output (pretty-printed).
    """
    decoder = json.JSONDecoder()
    offsets: list[int] = []
    i = text.find("[")
    if i < 0:
        return offsets
    i += 1
    n = len(text)
    while True:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] == "]":
            return offsets
        offsets.append(i)
        try:
            _, i = decoder.raw_decode(text, i)
        except (ValueError, RecursionError):
            return offsets


def yes_no(value: str) -> bool | None:
    low = value.strip().lower()
    if low in ("yes", "on", "true", "1"):
        return True
    if low in ("no", "off", "false", "0"):
        return False
    return None


# ------------------------------------------------------------------------------------- pasted text

#: A shell prompt: ``[root@n01 HPL]#``, ``root@t3640:/#``, ``user@host:~$``, ``(base) root@epyc:~/x#``, ``$``;
#: then the command, if any. ``#`` alone (a root prompt, or a comment) counts only when a known tool follows.
_PROMPT_RE = re.compile(
    r"(?P<env>\([\w.-]{1,40}\)[ \t]*)?"
    r"(?P<who>\[[^\]\n]{1,120}\]|[\w.-]{1,64}@[\w.-]{1,64}(?::[^ \t#$%]{0,200})?)?"
    r"[ \t]?(?P<sign>[#$%])(?:[ \t]+(?P<cmd>.*))?")
#: ``+ ibstat`` (set -x trace), ``sudo``/``time`` before the tool
_XTRACE_RE = re.compile(r"\+{1,3}[ \t]+(?P<cmd>.*)")
_WRAPPERS = ("sudo", "time", "command", "exec", "doas")
#: ``....`` / ``…`` lines people put where they cut output
ELISION_RE = re.compile(r"(?:\.{2,}|…+)")


_STAGE_RE = re.compile(r"[|;&]+")
#: the first word of each tool name, per ``tools`` tuple (a line without any of them invokes none)
_FIRST_WORDS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _invokes(cmd: str, tools: tuple[str, ...]) -> bool:
    """Whether the shell command ``cmd`` runs one of ``tools`` (``"ibstat"``, ``"nvidia-smi topo"``): its first
    words (after sudo/time, and ``VAR=x`` assignments), or the first words of a pipeline stage."""
    firsts = _FIRST_WORDS.get(tools)
    if firsts is None:
        firsts = _FIRST_WORDS[tools] = tuple({w for t in tools for w in t.split()[:1]})
    if not any(first in cmd for first in firsts):
        return False  # no tool's name anywhere in the line (most output lines): nothing to split
    for stage in _STAGE_RE.split(cmd):
        words = stage.split()
        while words and (words[0] in _WRAPPERS or ("=" in words[0] and not words[0].startswith("-"))):
            words.pop(0)
        if words and words[0].startswith("/"):
            words[0] = words[0].rsplit("/", 1)[-1]  # /usr/sbin/ibstat
        for tool in tools:
            tw = tool.split()
            if words[: len(tw)] == tw:
                return True
    return False


def shell_line(line: str, tools: tuple[str, ...]) -> str | None:
    """What a pasted line is, when it is not the tool's output: ``"invocation"`` (a prompt or command echo that
    runs one of ``tools``), ``"prompt"`` (a prompt with another command, or none), else None."""
    s = line.strip()
    if not s:
        return None
    m = _PROMPT_RE.fullmatch(s)
    if m is not None:
        cmd = (m["cmd"] or "").strip()
        for _ in range(3):  # a prompt pasted after a "$ " ("$ user@host:~$ ibstat"): the inner prompt's command
            inner = _PROMPT_RE.fullmatch(cmd) if cmd else None
            if inner is None or (inner["who"] is None and inner["env"] is None):
                break
            cmd = (inner["cmd"] or "").strip()
        if cmd and _invokes(cmd, tools):
            return "invocation"
        strong = m["who"] is not None or m["env"] is not None or m["sign"] == "$"
        if strong and m["sign"] != "%":
            return "prompt"
        return None
    m = _XTRACE_RE.fullmatch(s)
    if m is not None and _invokes(m["cmd"], tools):
        return "invocation"
    if _invokes(s, tools) and len(s) <= 200:
        return "invocation"  # the command echoed without a prompt ("nvidia-smi nvlink -s")
    return None


_CANDIDATES: dict[tuple[str, ...], re.Pattern[str]] = {}


def _candidate_re(tools: tuple[str, ...]) -> re.Pattern[str]:
    """What every line :func:`shell_line` answers for has (checked in C, line by line, before the Python): a start
    that ``_PROMPT_RE``/``_XTRACE_RE`` can match (``(env)``, ``[who] $``, ``who@``, a sign, ``+``), or a tool's
    first word anywhere (an echoed command)."""
    pat = _CANDIDATES.get(tools)
    if pat is None:
        words = sorted({w for t in tools for w in t.split()[:1]})
        alts = [r"^\s*(?:\(|\[[^\]\n]{1,120}\][ \t]?[#$%]|[\w.-]{1,64}@|[#$%+])"] + [re.escape(w) for w in words]
        pat = _CANDIDATES[tools] = re.compile("|".join(alts))
    return pat


def paste_body(lines: list[str], tools: tuple[str, ...]) -> tuple[list[str], int]:
    """The tool's output in pasted text: lines up to the last prompt or echo that runs one of ``tools``, and from
    the next prompt on (another command's output), are blanked; so are bare prompts. Line numbers stay as they
    are. Returns the lines and how many were blanked (0 for a clean capture)."""
    maybe = _candidate_re(tools).search
    kinds = [shell_line(ln, tools) if ln and maybe(ln) else None for ln in lines]
    if not any(kinds):
        return lines, 0
    out = list(lines)
    start = 0
    for i, k in enumerate(kinds):
        if k == "invocation":
            start = i + 1
    blanked = 0
    for i in range(start):
        if out[i].strip():
            blanked += 1
        out[i] = ""
    for i in range(start, len(out)):
        if kinds[i] is not None:
            # the next command: what follows is its output, not this tool's
            for j in range(i, len(out)):
                if out[j].strip():
                    blanked += 1
                out[j] = ""
            break
    return out, blanked


#: How much of a large text's head and tail is searched for prompts (a paste has them there).
_EDGE = 1 << 16


def paste_text(text: str, tools: tuple[str, ...]) -> tuple[str, int]:
    """:func:`paste_body` for a whole text (the fabric parsers read text, not lines): prompts and command echoes
    in the first and last 64 KiB are blanked, keeping every newline (line numbers stay)."""
    if len(text) <= 2 * _EDGE:
        lines = text.split("\n")
        body, n = paste_body(lines, tools)
        return ("\n".join(body), n) if n else (text, 0)
    head_end = text.rfind("\n", 0, _EDGE)
    tail_start = text.find("\n", len(text) - _EDGE)
    if head_end < 0 or tail_start < 0 or tail_start <= head_end:
        return text, 0
    head = text[:head_end].split("\n")
    tail = text[tail_start + 1:].split("\n")
    n = _blank_edges(head, tail, tools)
    if not n:
        return text, 0
    return "\n".join(head) + text[head_end:tail_start + 1] + "\n".join(tail), n


def pasted_lines(data: bytes, tools: tuple[str, ...]) -> int:
    """``paste_text(data.decode("ascii"), tools)[1]`` for ASCII ``data``, decoding only the edges of a large text
    (the fast fabric reader never needs the rest as text)."""
    if len(data) <= 2 * _EDGE:
        return paste_text(data.decode("ascii"), tools)[1]
    head_end = data.rfind(b"\n", 0, _EDGE)  # (ASCII: byte offsets are character offsets)
    tail_start = data.find(b"\n", len(data) - _EDGE)
    if head_end < 0 or tail_start < 0 or tail_start <= head_end:
        return 0
    return _blank_edges(data[:head_end].decode("ascii").split("\n"),
                        data[tail_start + 1:].decode("ascii").split("\n"), tools)


def _blank_edges(head: list[str], tail: list[str], tools: tuple[str, ...]) -> int:
    """Blank (in place) the prompts and command echoes of the first and last lines of a large text: the leading
    lines up to the last command echo, the trailing ones from the first shell line; the count of non-blank lines
    blanked."""
    hk = [shell_line(ln, tools) for ln in head]
    tk = [shell_line(ln, tools) for ln in tail]
    if not any(hk) and not any(tk):
        return 0
    n = 0
    last = max((i for i, k in enumerate(hk) if k == "invocation"), default=-1)
    for i in range(last + 1):
        n += bool(head[i].strip())
        head[i] = ""
    first = next((i for i, k in enumerate(tk) if k is not None), None)
    if first is not None:
        for j in range(first, len(tail)):
            n += bool(tail[j].strip())
            tail[j] = ""
    return n
