"""NCCL settings rules, the conf files: nccl.conf lines as NCCL's ``setEnvFile`` splits them (shell syntax, quotes,
white space, inline comments, CR LF), a file that is not an nccl.conf at all (NCCL026) and which source wins
(NCCL001-NCCL005, NCCL008, NCCL009).

What the NCCL settings rules share (the settings as a release reads them, the hit for one setting) is in
:mod:`ncclctl.lint.ncclsettings`.
"""

from __future__ import annotations

import re
from typing import Iterable

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.lint.ncclsettings import VERSION_OPT, hit, is_int_var, line_fix, looks_nccl, release, resolved, show
from ncclctl.registry import Hit, rule
from ncclctl.nccl.params import strtol
from ncclctl.nccl.version import DEFAULT, Version

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

# --------------------------------------------------------------------------------------------------
# Conf file syntax

_SHELL_PREFIX = re.compile(r"^\s*(export|declare\s+-x|typeset\s+-x|set|setenv|env)\s+")


@rule(
    "NCCL001", "conf-shell-syntax", W, "nccl.conf line written in shell syntax",
    what="A line of /etc/nccl.conf or the user's conf file written for a shell: 'export NCCL_X=1' (also declare -x, "
         "set, env), or 'setenv NCCL_X 1' / 'NCCL_X 1' without '='.",
    why="NCCL does not run the file through a shell: it splits each line at the first '=' and calls "
        "setenv(name, value, 0) (misc/param.cc:setEnvFile). 'export NCCL_IB_HCA=mlx5_0' therefore defines a "
        "variable literally named 'export NCCL_IB_HCA', which nothing reads, and a line without '=' is skipped; "
        "either way the setting silently does not apply and NCCL_DEBUG=INFO shows no 'set by environment' line.",
    detect="Each conf file the probe captured (NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf), line by line, "
           "split as NCCL splits it.",
    fix="Write plain NAME=VALUE lines: drop 'export ' (and quotes), e.g. NCCL_IB_HCA==mlx5_0,mlx5_1.",
)
def conf_shell_syntax(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    res = resolved(ctx)
    for cl in res.lines:
        if cl.path in ctx.foreign_confs:  # NCCL026 speaks for a file that is not an nccl.conf
            continue
        m = _SHELL_PREFIX.match(cl.raw)
        rest = cl.raw[m.end():] if m else cl.raw
        if cl.skipped == "comment":
            continue
        if m and "NCCL_" in rest.upper():
            word = m.group(1)
            target = (rest.split("=", 1)[0].split() or [rest])[0] if rest.strip() else rest  # "export =X=1"
            value = rest.split("=", 1)[1] if "=" in rest else " ".join(rest.split()[1:])
            if cl.name is not None:
                msg = (f"'{word} ' is part of the name: NCCL sets a variable named {cl.name!r}, so {target} is "
                       "not set by this line")
            else:
                msg = f"no '=' on the line: NCCL skips it, so {target} is not set"
            yield Hit(cl.path, msg, fix=f"write line {cl.line} as {target}={value.strip().strip(chr(34) + chr(39))}",
                      evidence=(f"line {cl.line}: {cl.raw!r}",), line=cl.line)
        elif cl.skipped == "no-equals" and re.match(r"^\s*NCCL_[A-Z0-9_]+[\s:]", cl.raw):
            parts = re.split(r"[\s:]+", cl.raw.strip(), maxsplit=1)
            value = parts[1] if len(parts) > 1 else ""
            yield Hit(cl.path, f"no '=' on the line: NCCL skips it, so {parts[0]} is not set",
                      fix=f"write line {cl.line} as {parts[0]}={value}", evidence=(f"line {cl.line}: {cl.raw!r}",),
                      line=cl.line)


@rule(
    "NCCL002", "quoted-value", W, "NCCL setting whose value keeps its quotes",
    what="A value written with quotes in a conf file (NCCL_IB_HCA=\"=mlx5_0\"), or an environment value that really "
         "contains quote characters (docker --env-file and some job launchers pass them through).",
    why="NCCL never removes quotes (misc/param.cc:setEnvFile copies the value verbatim). NCCL_IB_HCA=\"=mlx5_0\" is "
        "a prefix list whose first name is '\"=mlx5_0' and matches no device; NCCL_SOCKET_IFNAME=\"eth0\" matches no "
        "interface (bootstrap fails); an integer such as NCCL_IB_GID_INDEX=\"3\" is read by strtoll as 0.",
    detect="Values (environment and conf files) that start with a quote character.",
    fix="Remove the quotes: NAME=value.",
)
def quoted_value(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    res = resolved(ctx)
    for s in res.settings:
        if s.source in ctx.foreign_confs or not looks_nccl(s.name) or not s.value[:1] in ("\"", "'"):
            continue
        q = s.value[0]
        inner = s.value[1:-1] if len(s.value) > 1 and s.value.endswith(q) else s.value[1:]
        yield hit(s, "the quotes are part of the value: NCCL does not remove them", fix=line_fix(s, inner))


@rule(
    "NCCL003", "conf-whitespace", W, "white space around '=' or the value in nccl.conf",
    what="A conf line with white space before or after the name ('NCCL_X = 1'), or around the value.",
    why="Nothing is trimmed (misc/param.cc:setEnvFile): 'NCCL_IB_HCA = mlx5_0' sets a variable named "
        "'NCCL_IB_HCA ' (never read) to ' mlx5_0'. A trailing space in a string value becomes part of it "
        "(NCCL_SOCKET_IFNAME=eth0<space> matches no interface). For integer variables strtoll skips leading space "
        "and stops at trailing space, so only the name matters there.",
    detect="Conf lines of NCCL_* names, split as NCCL splits them.",
    fix="Write NAME=VALUE with no spaces around '=' and none at the end of the line.",
)
def conf_whitespace(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    res = resolved(ctx)
    for cl in res.lines:
        if cl.path in ctx.foreign_confs:  # NCCL026 speaks for a file that is not an nccl.conf
            continue
        if cl.name is None or not looks_nccl(cl.name) or _SHELL_PREFIX.match(cl.raw):
            continue
        name, value = cl.name, cl.value or ""
        clean = name.strip()
        ev = (f"line {cl.line}: {cl.raw!r}",)
        fix = f"write line {cl.line} as {clean}={value.strip()}"
        if name != clean:
            yield Hit(cl.path, f"the name is {name!r} with white space: NCCL sets that variable, not {clean}, "
                      f"so {clean} is not set by this line", fix=fix, evidence=ev, line=cl.line)
            continue
        body = value[:-1] if value.endswith("\r") else value  # CR: NCCL005
        if body != body.strip():
            harmless = is_int_var(clean, DEFAULT)
            msg = ("white space around the value: strtoll skips it here, but the value is read as "
                   f"{body!r}" if harmless else
                   f"white space around the value is kept: NCCL sees {body!r}, not {body.strip()!r}")
            yield Hit(cl.path, f"{clean}: {msg}", fix=fix, evidence=ev, line=cl.line, severity=I if harmless else None)


@rule(
    "NCCL004", "inline-comment", W, "'#' comment after a value in nccl.conf",
    what="A conf line with a comment after the value (NCCL_SOCKET_IFNAME=eth0 # management).",
    why="NCCL treats '#' as a comment only as the first character of a line (and only from 2.26); anywhere else "
        "it is part of the value. NCCL_SOCKET_IFNAME=eth0 # mgmt is the prefix 'eth0 # mgmt', which matches no "
        "interface. For integer variables strtoll stops at the space, so the number is still read (info).",
    detect="Conf lines whose value contains '#' after white space, or starts with '#'.",
    fix="Put comments on their own line, starting in column 1: '# management network' then NCCL_SOCKET_IFNAME=eth0.",
)
def inline_comment(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    res = resolved(ctx)
    for cl in res.lines:
        if cl.path in ctx.foreign_confs:  # NCCL026 speaks for a file that is not an nccl.conf
            continue
        if cl.name is None or not looks_nccl(cl.name) or cl.name != cl.name.strip():
            continue
        value = cl.value or ""
        m = re.search(r"(^|\s)#", value)
        if not m:
            continue
        kept = value[:m.start()].rstrip()
        harmless = is_int_var(cl.name, DEFAULT) and strtol(kept).digits
        msg = (f"the comment is part of the value {value!r}; strtoll still reads {strtol(kept).value}"
               if harmless else f"the comment is part of the value: NCCL sees {value!r}, not {kept!r}")
        yield Hit(cl.path, f"{cl.name}: {msg}", fix=f"move the comment to its own line and write line {cl.line} as "
                  f"{cl.name}={kept}", evidence=(f"line {cl.line}: {cl.raw!r}",), line=cl.line,
                  severity=I if harmless else None)


@rule(
    "NCCL005", "conf-crlf", W, "nccl.conf with CR LF (Windows) line endings",
    what="A conf file whose setting lines end in CR LF.",
    why="NCCL removes the CR only from 2.30 (misc/param.cc:setEnvFile). Older releases keep it at the end of every "
        "value: NCCL_SOCKET_IFNAME=eth0\\r matches no interface, NCCL_IB_HCA's last device name never matches. "
        "From 2.30 it is harmless (info).",
    detect="Lines of the captured conf files that end in CR before the LF; the severity follows nccl_version.",
    fix="Convert the file to LF line endings: dos2unix FILE (or sed -i 's/\\r$//' FILE).",
    options=(VERSION_OPT,),
)
def conf_crlf(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = release(opts)
    res = resolved(ctx)
    for path in res.conf_paths:
        lines = [cl for cl in res.lines if cl.path == path and cl.crlf and cl.skipped is None]
        if not lines or path in ctx.foreign_confs:
            continue
        first = lines[0]
        old = version < Version(2, 30, 0)
        msg = (f"{len(lines)} setting line(s) end in CR LF: NCCL {version} keeps the CR at the end of "
               f"each value ({first.name}={first.value!r})" if old else
               f"{len(lines)} setting line(s) end in CR LF: NCCL 2.30 and later strip the CR, older releases keep "
               "it in every value")
        yield Hit(path, msg, fix=f"dos2unix {path}", evidence=tuple(f"line {cl.line}: {cl.raw!r}" for cl in lines[:4]),
                  line=first.line, severity=None if old else I)


# --------------------------------------------------------------------------------------------------
# Precedence


@rule(
    "NCCL008", "setting-overridden", I, "conf file setting overridden by an earlier source",
    what="A variable that /etc/nccl.conf (or the user's conf file) sets to one value while the environment (or the "
         "user's conf file) sets it to another.",
    why="NCCL applies conf lines with setenv(name, value, 0): the process environment wins over "
        "NCCL_CONF_FILE/~/.nccl.conf, which wins over /etc/nccl.conf. The file's value is silently ignored in this "
        "environment, which surprises whoever maintains the file (and the other way round for jobs that do not set "
        "the variable).",
    detect="The same name defined by two sources with different values (environment as captured by the probe).",
    fix="Keep one source of truth: remove the line from the file, or stop setting the variable in the job "
        "environment.",
)
def setting_overridden(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    res = resolved(ctx)
    for later, winner in res.overridden():
        if not looks_nccl(later.name):
            continue
        yield hit(later, f"overridden by {winner.name}={show(winner.value)} from {winner.where}, which NCCL reads "
                  "first", evidence=(f"winner: {winner.where}",))


@rule(
    "NCCL009", "duplicate-setting", W, "variable set twice in one conf file: the first line wins",
    what="A conf file that sets the same variable on two lines.",
    why="Each line is applied with setenv(name, value, 0), which never overwrites: the FIRST line wins, the "
        "opposite of a shell script. Appending 'NCCL_IB_HCA=...' to the end of /etc/nccl.conf to change it has no "
        "effect.",
    detect="Conf lines of the same file defining the same name (identical repeats are info).",
    fix="Delete the earlier line (or merge them into one).",
)
def duplicate_setting(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    res = resolved(ctx)
    for later, first in res.duplicates():
        if later.source in ctx.foreign_confs:
            continue
        same = later.value == first.value
        yield Hit(later.source, f"{later.name} is set again on line {later.line}; NCCL keeps line {first.line} "
                  f"({first.name}={show(first.value)})" + (" (same value)" if same else
                                                           f" and ignores {show(later.value)}"),
                  fix=f"keep one line: delete line {later.line} of {later.source}, or delete line {first.line} if "
                      f"{show(later.value)} is the value you want",
                  evidence=(f"line {first.line}: {first.raw!r}", f"line {later.line}: {later.raw!r}"),
                  line=later.line, severity=I if same else None)


@rule(
    "NCCL026", "conf-not-a-conf-file", W, "nccl.conf that is not an nccl.conf (YAML, JSON, C/C++, a shell script)",
    what="A conf file (NCCL_CONF_FILE or ~/.nccl.conf, /etc/nccl.conf) whose lines are mostly not NAME=VALUE: a "
         "YAML or JSON document, C or C++ source, a shell script with if/for/case, an INI file.",
    why="NCCL does not know formats: setEnvFile (misc/param.cc) reads any file line by line, skips lines without "
        "'=' and sets a variable for every other line, split at its first '='. The settings the file was written "
        "to carry ('NCCL_IB_HCA: mlx5_0' in YAML, setenv() calls in C) do not apply, while a shell script's "
        "assignments apply whatever its if/else says (the first one of each name wins).",
    detect="At least 3 of the file's non-blank, non-comment lines, and at least half, are neither NAME=VALUE nor a "
           "shell-style assignment; the shape named is the one most of them have. One finding per file: the "
           "line-level rules (NCCL001-NCCL005, NCCL009) leave such a file's lines alone.",
    fix="Replace the file by plain NAME=VALUE lines (ncclctl conf generate writes one for the node), or point "
        "NCCL_CONF_FILE elsewhere; keep the other format under another name.",
)
def conf_not_a_conf_file(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    res = resolved(ctx)
    for path, (kind, foreign, content) in sorted(ctx.foreign_confs.items()):
        sets = [st for st in res.settings if st.source == path and looks_nccl(st.name)]
        first = next((cl.line for cl in res.lines if cl.path == path and cl.skipped != "comment"), None)
        if sets:
            took = ", ".join(f"{st.name}={show(st.value)} (line {st.line})" for st in sets[:4])
            more = f" and {len(sets) - 4} more" if len(sets) > 4 else ""
            effect = f"NCCL still reads it line by line and sets {took}{more}"
        else:
            effect = "NCCL reads it line by line and sets no NCCL_* variable from it"
        yield Hit(path, f"this is {kind}, not an nccl.conf ({foreign} of its {content} lines are not NAME=VALUE): "
                  f"{effect}",
                  fix=f"write {path} as plain NAME=VALUE lines (ncclctl conf generate prints them for this node)",
                  evidence=tuple(f"line {cl.line}: {cl.raw!r}" for cl in res.lines
                                 if cl.path == path and cl.skipped != "comment")[:3],
                  line=first)
