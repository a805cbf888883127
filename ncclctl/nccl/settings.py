"""NCCL settings as NCCL reads them: the sources, their precedence, and the conf file line syntax.

Follows NVIDIA/nccl ``src/misc/param.cc`` (``initEnvFunc``, ``setEnvFile``), 2.30.7 unless a version is given
(``/work/shared/reference/nccl-format.md`` section 5):

* **Sources and precedence** (``initEnvFunc``): the process environment, then ``$NCCL_CONF_FILE`` when it is set
  and non-empty (2.23+), otherwise ``$HOME/.nccl.conf``, then ``/etc/nccl.conf``. Each conf line is applied with
  ``setenv(name, value, 0)``, so the first writer wins: the environment beats both files, the user's file beats
  ``/etc/nccl.conf``, and **within one file the first line that sets a name wins** (shells do the opposite).
* **Conf lines** (``setEnvFile``): ``NAME=VALUE`` split at the first ``=``. Nothing is trimmed and nothing is
  unquoted: ``NCCL_X = 1`` sets a variable named ``NCCL_X `` (never read) to `` 1``, ``"mlx5_0"`` keeps its quotes,
  and ``export NCCL_X=1`` sets a variable named ``export NCCL_X``. Lines without ``=`` are skipped. A line whose
  *first* character is ``#`` is skipped from 2.26 (before, it set a variable named ``#...``, harmless); a ``#``
  anywhere else is part of the value. A trailing CR is removed from 2.30 (before, it stayed in the value). Names
  and values are cut at 1023 characters; from 2.30 lines are read with a 4096-byte buffer, so a longer line is
  read as several lines.

:class:`Resolved` is the typed view every reader uses (the lint context's ``ctx.nccl``): :meth:`Resolved.get`
(the definition NCCL uses, with its source and line), :meth:`Resolved.value`, :meth:`Resolved.int` (an
``NCCL_PARAM`` integer, :mod:`ncclctl.nccl.params`) and :meth:`Resolved.text` (for messages and evidence).
"""

from __future__ import annotations

import builtins
import functools
import re
from typing import TYPE_CHECKING, Iterable, Protocol, Sequence

from ncclctl.nccl.params import param_int
from ncclctl.nccl.version import DEFAULT, Version
from ncclctl.record import record

if TYPE_CHECKING:
    from ncclctl.model import Node

ENV = "environment"
ETC_CONF = "/etc/nccl.conf"


class ConfSource(Protocol):
    """A conf file as the probe captured it (:class:`ncclctl.model.ConfFile`)."""

    @property
    def path(self) -> str: ...

    @property
    def text(self) -> str: ...


# --------------------------------------------------------------------------------------------------
# Conf files


@record
class ConfLine:
    """One line of a conf file as ``setEnvFile`` reads it."""

    path: str
    #: 1-based line number in the file.
    line: int
    #: The line without its LF (a CR, if any, kept).
    raw: str
    #: What NCCL sets; both None when NCCL skips the line.
    name: str | None
    value: str | None
    #: Why NCCL skips it: ``comment``, ``no-equals``, ``empty-name``; None when it sets a variable.
    skipped: str | None = None
    #: The line ended in CR LF.
    crlf: bool = False


@functools.lru_cache(maxsize=16)  # pure; lint resolves the same files for many rules (a 1 MiB file: ~2 s each)
def read_conf(text: str, path: str, version: Version = DEFAULT) -> tuple[ConfLine, ...]:
    out: list[ConfLine] = []
    physical = text.split("\n")
    if physical and physical[-1] == "":
        physical.pop()
    for lineno, line in enumerate(physical, 1):
        crlf = line.endswith("\r")
        # 2.30+: fgets with a 4096-byte buffer; a longer line arrives in 4095-character pieces.
        pieces = [line[i:i + 4095] for i in range(0, max(len(line), 1), 4095)] if version >= Version(2, 30, 0) else [line]
        for k, piece in enumerate(pieces):
            if version >= Version(2, 30, 0) and piece.endswith("\r"):
                piece = piece[:-1]
            if version >= Version(2, 26, 0) and piece.startswith("#"):
                out.append(ConfLine(path, lineno, line, None, None, "comment", crlf))
                continue
            s = piece.find("=")
            if s < 0:
                out.append(ConfLine(path, lineno, line, None, None, "no-equals", crlf))
                continue
            name, value = piece[:s][:1023], piece[s + 1:][:1023]
            if not name:
                # setenv("") fails with EINVAL: nothing is set.
                out.append(ConfLine(path, lineno, line, None, None, "empty-name", crlf))
                continue
            out.append(ConfLine(path, lineno, line, name, value, None, crlf))
    return tuple(out)


_NAME = re.compile(r"(?:export\s+|declare\s+-x\s+|setenv\s+)?[A-Za-z_][A-Za-z0-9_]*(?:=|\s+\S)")
#: What a file that is not NAME=VALUE lines looks like: (kind, a line that only that kind has).
_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("C or C++ source", re.compile(r"^\s*(?:#\s*include\s*[<\"]|(?:int|void|static|const|char)\b.*[;{(]\s*$|[{}]\s*;?\s*$"
                                   r"|.*\)\s*;\s*$|//)")),
    ("a shell script with logic", re.compile(r"^\s*(?:if\s|then\b|elif\s|else\b|fi\b|for\s|while\s|do\b|done\b"
                                             r"|case\s|esac\b|function\s|[A-Za-z_][A-Za-z0-9_]*\s*\(\)\s*\{|#!)")),
    ("JSON", re.compile(r"^\s*(?:[{}\[\]],?|\"[^\"]*\"\s*:.*)\s*$")),
    ("YAML", re.compile(r"^\s*(?:---|-\s+\S|[A-Za-z_][\w.-]*:(?:\s.*)?)$")),
    ("an INI file with [sections]", re.compile(r"^\s*\[[^\]=]+\]\s*$")),
)


def foreign_shape(text: str) -> tuple[str, int, int] | None:
    """What ``text`` looks like when it is not an nccl.conf at all (a YAML or JSON document, C or C++ source, a
    shell script with logic, an INI file): ``(kind, foreign lines, content lines)``; None when it is one (possibly
    with NCCL001-NCCL005's line-level mistakes). NCCL itself reads any file line by line; this is the judgement
    that a file of mostly other lines was never written for it, so its line-level findings would be noise.

    A file is foreign when at least 3 of its non-blank, non-comment lines, and at least half of them, are neither
    ``NAME=VALUE`` nor a shell-style assignment (``export NAME=VALUE``), and the most common other shape is one
    of :data:`_SHAPES` (else ``text that is not NAME=VALUE lines``)."""
    content = 0
    foreign: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") and not stripped.startswith(("#include", "#!")):
            continue
        content += 1
        m = _NAME.match(stripped)
        if m and "=" in stripped and " " not in stripped.split("=", 1)[0].replace("export ", "", 1).replace(
                "declare -x ", "", 1).strip():
            if not _SHAPES[1][1].match(stripped):
                continue
        foreign.append(line)
    if len(foreign) < 3 or 2 * len(foreign) < content:
        return None
    votes = {kind: sum(1 for line in foreign if pattern.match(line)) for kind, pattern in _SHAPES}
    kind, n = max(votes.items(), key=lambda kv: kv[1])
    return (kind if n else "text that is not NAME=VALUE lines", len(foreign), content)


# --------------------------------------------------------------------------------------------------
# Resolution


@record
class Setting:
    """One definition of a variable: from the process environment, or a conf file line."""

    name: str
    value: str
    #: :data:`ENV` or the conf file's path.
    source: str
    line: int | None = None
    raw: str | None = None

    @property
    def from_env(self) -> bool:
        return self.source == ENV

    @property
    def where(self) -> str:
        return "the environment" if self.from_env else f"{self.source}:{self.line}"


@record
class Resolved:
    """Every definition NCCL would meet, in the order it applies them (environment, user file, /etc/nccl.conf)."""

    settings: tuple[Setting, ...]
    lines: tuple[ConfLine, ...]
    conf_paths: tuple[str, ...]
    version: Version = DEFAULT

    def effective(self, name: str) -> Setting | None:
        """The definition NCCL uses (the first writer), with its source and line; None when nothing sets it."""
        return next((s for s in self.settings if s.name == name), None)

    get = effective

    def value(self, name: str) -> str | None:
        """The value NCCL reads (verbatim); None when unset."""
        s = self.effective(name)
        return None if s is None else s.value

    def int(self, name: str, default: builtins.int) -> builtins.int:
        """An ``NCCL_PARAM`` integer as ``ncclLoadParam`` reads it: ``default`` when unset, empty or out of range,
        else ``strtoll(value, NULL, 0)`` (trailing text ignored, no digits: 0)."""
        return param_int(self.value(name), default)

    def text(self, name: str) -> str:
        """``NAME=value`` for messages and evidence, with ``(file:line)`` when a conf file sets it, or
        ``NAME unset``."""
        s = self.effective(name)
        if s is None:
            return f"{name} unset"
        return f"{name}={s.value}" + ("" if s.from_env else f" ({s.where})")

    def candidates(self, name: str) -> tuple[Setting, ...]:
        """The definition each source would contribute on its own: the environment's, and the first line of each
        conf file (later lines of the same file never apply). The first is the effective one."""
        out: list[Setting] = []
        seen: set[str] = set()
        for s in self.settings:
            if s.name == name and s.source not in seen:
                seen.add(s.source)
                out.append(s)
        return tuple(out)

    def names(self) -> tuple[str, ...]:
        return tuple(sorted({s.name for s in self.settings}))

    def nccl_env(self) -> dict[str, str]:
        """The NCCL_* values NCCL reads (each variable's effective definition), by name."""
        return {name: s.value for name in self.names() if name.startswith("NCCL_")
                and (s := self.effective(name)) is not None}

    def duplicates(self) -> list[tuple[Setting, Setting]]:
        """(ignored line, the earlier line of the same file that wins)."""
        out: list[tuple[Setting, Setting]] = []
        first: dict[tuple[str, str], Setting] = {}
        for s in self.settings:
            if s.from_env:
                continue
            key = (s.source, s.name)
            if key in first:
                out.append((s, first[key]))
            else:
                first[key] = s
        return out

    def overridden(self) -> list[tuple[Setting, Setting]]:
        """(a conf file's definition, the earlier source's definition that wins) where the values differ."""
        out: list[tuple[Setting, Setting]] = []
        for name in self.names():
            cands = self.candidates(name)
            for later in cands[1:]:
                if later.value != cands[0].value:
                    out.append((later, cands[0]))
        return out


def resolve_sources(env: Iterable[tuple[str, str]], conf_files: Sequence[ConfSource],
                    version: Version = DEFAULT) -> Resolved:
    """``env``: (name, value) pairs of the process; ``conf_files``: objects with ``path``/``text`` in the order
    NCCL reads them (the user's file, then /etc/nccl.conf)."""
    settings = [Setting(k, v, ENV) for k, v in sorted(env) if k.startswith("NCCL_")]
    lines: list[ConfLine] = []
    paths: list[str] = []
    for conf in conf_files:
        if conf.path in paths:  # NCCL_CONF_FILE=/etc/nccl.conf: the second read sets nothing new
            continue
        paths.append(conf.path)
        for cl in read_conf(conf.text, conf.path, version):
            lines.append(cl)
            if cl.name is not None:
                settings.append(Setting(cl.name, cl.value or "", conf.path, cl.line, cl.raw))
    return Resolved(tuple(settings), tuple(lines), tuple(paths), version)


def resolve(node: Node, version: Version = DEFAULT) -> Resolved:
    """The settings of a probed node (``facts.nccl_env`` and ``facts.conf_files``)."""
    return resolve_sources(node.facts.nccl_env, node.facts.conf_files, version)


def effective_setting(node: Node, name: str) -> str | None:
    """A variable as NCCL resolves it on the host (:func:`resolve` for one name): the process environment, then
    NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf, each conf line verbatim, first writer wins."""
    return resolve(node).value(name)


def user_conf_path(env: dict[str, str]) -> str | None:
    """The user conf file NCCL reads: ``$NCCL_CONF_FILE`` when non-empty (2.23+), else ``$HOME/.nccl.conf``."""
    if env.get("NCCL_CONF_FILE"):
        return env["NCCL_CONF_FILE"]
    if env.get("HOME"):
        return env["HOME"].rstrip("/") + "/.nccl.conf"
    return None


