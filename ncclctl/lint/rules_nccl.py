"""NCCL settings rules: the environment and nccl.conf files read with NCCL's own semantics (issue 5 section 3).

Every value rule judges what NCCL would do with the text, using :mod:`ncclctl.nccl` (sources, precedence and
line syntax in ``settings``, integer parsing in ``params``, path levels and algorithm lists in ``values``, the
``NCCL_IB_HCA`` and ``NCCL_SOCKET_IFNAME`` lists in ``lists``, the variable table in ``variables``); the node's
settings come from the lint context (``ctx.nccl``, ``ctx.nccl_for(version)``). A setting can come from the
process environment (``env.json`` in a snapshot), from the user's conf file (``$NCCL_CONF_FILE`` or
``~/.nccl.conf``) or from ``/etc/nccl.conf``. Value rules look at every source's own definition (the first line
of each file that sets the name, and the environment), not only the winning one: the probing shell's environment is not every job's environment, and a shadowed line in
``/etc/nccl.conf`` still applies to every job that does not set the variable itself.

Subjects: a finding about a conf file line has the file's path as subject and the line number; one about a
process environment variable has the variable name as subject. Reference: nccl-format.md section 5,
host-facts.md 7.9 and 7.16, user-needs.md section 0 and needs 9, 19-21.
"""

from __future__ import annotations

import re
from typing import Iterable, Literal

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.registry import Hit, Option, rule
from ncclctl.nccl.lists import (
    MAX_IB_HCA_ENTRIES, MAX_IFNAME_ENTRIES, entry_matches_name, hca_selects, ifname_selects, parse_if_list,
)
from ncclctl.nccl.params import c_int, strtol
from ncclctl.nccl.settings import ETC_CONF, Resolved, Setting
from ncclctl.nccl.values import (DEBUG_LEVELS, DEBUG_LISTS, DEBUG_REGISTRY, PATH_LEVELS, VALUE_RANGES, algo_proto_names,
                                check_algo_proto, debug_level_names, debug_list_default, debug_list_names,
                                debug_list_unknown, disables_p2p, level_names, out_of_range, read_level,
                                template_text)
from ncclctl.nccl.variables import (KNOWN, REPLACED_BY, default_at, helper_variable, kind_at, known_variable,
                                   plugin_variable, suggest_variable)
from ncclctl.nccl.version import DEFAULT, DEFAULT_TEXT, RELEASES, Version, parse

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

_VERSION_OPT = Option(
    "nccl_version", str, DEFAULT_TEXT,
    "The oldest NCCL release your jobs use (its behaviour is what is judged).", choices=RELEASES)
_INFO_OPT = Option("include_info", bool, False, "Also report the file checker's info-level findings.")

# --------------------------------------------------------------------------------------------------
# Helpers


def _resolved(ctx: Ctx, opts: dict | None = None) -> Resolved:
    """The node's settings as the release of the rule's ``nccl_version`` option reads them."""
    return ctx.nccl_for(_version(opts)) if opts else ctx.nccl


def _version(opts: dict) -> Version:
    return parse(opts.get("nccl_version", DEFAULT_TEXT))


def _show(value: str) -> str:
    """A value as written; quoted (Python style) when white space, quotes or control characters would hide."""
    if value == "" or value != value.strip() or any(c in value for c in "\"'#\r\t") or not value.isprintable():
        return repr(value)
    return value


def _hit(s: Setting, message: str, *, fix: str | None = None, evidence: tuple[str, ...] = (),
         severity: Severity | None = None) -> Hit:
    where = () if s.from_env else (f"line {s.line}: {s.raw!r}",)
    if s.from_env:
        return Hit(s.name, f"{s.name}={_show(s.value)} in the environment: {message}", fix=fix,
                   evidence=evidence + (f"environment: {s.name}={s.value!r}",), severity=severity)
    return Hit(s.source, f"{s.name}={_show(s.value)}: {message}", fix=fix, evidence=where + evidence,
               severity=severity, line=s.line)


def _line_fix(s: Setting, value: str) -> str:
    if s.from_env:
        import shlex

        return f"set it in the job environment as: export {s.name}={shlex.quote(value)}"
    return f"write line {s.line} of {s.source} as {s.name}={value}"


def _replace_entry(value: str, old: str, new: str) -> str:
    """``value`` with list entry ``old`` (as written) replaced by ``new`` (dropped when empty)."""
    head = value[:len(value) - len(value.lstrip("^="))]
    items = value[len(head):].split(",")
    out = [new if it == old else it for it in items]
    return head + ",".join(it for it in out if it)


def _is_int_var(name: str, version: Version) -> bool:
    """``name`` is read by ``version`` with strtoll (an NCCL_PARAM)."""
    info = KNOWN.get(name)
    return info is not None and kind_at(name, version) == "int" and info.since <= version and (
        info.until is None or info.until >= version)


def _looks_nccl(name: str) -> bool:
    return name.strip().upper().startswith("NCCL_")


def _ports(ctx: Ctx) -> list[tuple[str, int, bool]]:
    return [(n.name, p.num, p.is_active and p.link_layer in ("InfiniBand", "Ethernet"))
            for n in ctx.node.nics for p in n.ports]


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
    res = _resolved(ctx)
    for cl in res.lines:
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
    res = _resolved(ctx)
    for s in res.settings:
        if not _looks_nccl(s.name) or not s.value[:1] in ("\"", "'"):
            continue
        q = s.value[0]
        inner = s.value[1:-1] if len(s.value) > 1 and s.value.endswith(q) else s.value[1:]
        yield _hit(s, "the quotes are part of the value: NCCL does not remove them", fix=_line_fix(s, inner))


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
    res = _resolved(ctx)
    for cl in res.lines:
        if cl.name is None or not _looks_nccl(cl.name) or _SHELL_PREFIX.match(cl.raw):
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
            harmless = _is_int_var(clean, DEFAULT)
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
    res = _resolved(ctx)
    for cl in res.lines:
        if cl.name is None or not _looks_nccl(cl.name) or cl.name != cl.name.strip():
            continue
        value = cl.value or ""
        m = re.search(r"(^|\s)#", value)
        if not m:
            continue
        kept = value[:m.start()].rstrip()
        harmless = _is_int_var(cl.name, DEFAULT) and strtol(kept).digits
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
    options=(_VERSION_OPT,),
)
def conf_crlf(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = _version(opts)
    res = _resolved(ctx)
    for path in res.conf_paths:
        lines = [cl for cl in res.lines if cl.path == path and cl.crlf and cl.skipped is None]
        if not lines:
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
# Names and integer values


@rule(
    "NCCL006", "unknown-variable", W, "NCCL_* variable that NCCL does not read",
    what="A variable named NCCL_* that no NCCL release reads (a typo such as NCCL_IB_HCAS, a lower-case "
         "nccl_ib_hca), one that was removed (NCCL_IB_GDR_LEVEL: use NCCL_NET_GDR_LEVEL), or one newer than the "
         "NCCL release you run.",
    why="NCCL reads variables by exact, case-sensitive name; a misspelt one is silently ignored, so the setting "
        "the operator believes is active (for instance a NIC restriction) is not, and no log line says so.",
    detect="Every NCCL_* name in the environment and the conf files against the table of names read by NCCL "
           f"2.3.5 to {RELEASES[-1]} (extracted from every release tag's NCCL_PARAM, DEFINE_NCCL_PARAM and "
           "ncclGetEnv/getenv calls, and from the released libraries of releases without a tag), the names the "
           "common plugins read (nccl-rdma-sharp-plugins: SHARP, UCX; aws-ofi-nccl), plus site patterns for other "
           "net plugins. Build and installation helpers "
           "(NCCL_LIB_DIR, NCCL_HOME, NCCL_ROOT, NCCL_INCLUDE_DIR...) are reported at info; a 'did you mean' "
           "names only a variable NCCL or those plugins read, a couple of keystrokes away.",
    fix="Use the exact name from the NCCL documentation (the finding suggests the closest one), or add a plugin's "
        "variables to this rule's known_variables option.",
    options=(
        Option("known_variables", list, ["NCCL_GPUDIRECTTCPX_*", "NCCL_FASTRAK_*", "NCCL_SHIMNET_*", "NCCL_TESTS_*"],
               "Extra names or fnmatch patterns that are known (net/tuner plugins, nccl-tests)."),
        _VERSION_OPT,
    ),
)
def unknown_variable(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = _version(opts)
    res = _resolved(ctx)
    seen: set[tuple[str, str]] = set()
    for s in res.settings:
        if (s.source, s.name) in seen or not _looks_nccl(s.name) or s.name != s.name.strip():
            continue
        seen.add((s.source, s.name))
        if " " in s.name or "\t" in s.name:
            continue  # NCCL001
        info = known_variable(s.name, opts["known_variables"])
        if info is True:
            continue
        if info is None:
            if helper_variable(s.name):
                yield _hit(s, "not an NCCL setting: a build or installation helper that locates NCCL (like "
                              "PyTorch's NCCL_LIB_DIR or a module's NCCL_HOME); NCCL ignores it", severity=I,
                           fix="nothing to do if it is meant for a build or a launcher")
                continue
            best = suggest_variable(s.name)
            if s.name.upper() != s.name and best == s.name.upper():
                msg = f"variable names are case-sensitive: NCCL reads {best}, not {s.name}"
            elif best and best.startswith("OFI_NCCL_"):
                msg = (f"NCCL reads no variable named {s.name}; the aws-ofi-nccl plugin's settings are OFI_NCCL_*: "
                       f"did you mean {best}?")
            elif best:
                who = plugin_variable(best)
                msg = f"NCCL reads no variable named {s.name}; did you mean {best}" + (
                    f" (read by the {who} plugin)?" if who else "?")
            else:
                msg = (f"NCCL reads no variable named {s.name} (no release 2.3.5-{RELEASES[-1]} does, nor the SHARP, "
                       "UCX or OFI plugins)")
            yield _hit(s, msg, fix=f"rename it to {best}" if best else None)
        elif info.until is not None and info.until < version:
            repl = REPLACED_BY.get(s.name)
            yield _hit(s, f"{s.name} was last read by NCCL {info.until}; NCCL {version} "
                       "ignores it" + (f" (use {repl})" if repl else ""),
                       fix=f"replace it with {repl}" if repl else "remove the setting")
        elif info.since > version and plugin_variable(s.name) is None:  # a plugin reads it in older releases
            yield _hit(s, f"{s.name} is read from NCCL {info.since} on; NCCL {version} "
                       "ignores it", severity=I, fix="upgrade NCCL, or remove the setting")


@rule(
    "NCCL007", "integer-value", W, "integer NCCL setting that strtoll reads differently",
    what="A value of an integer variable (NCCL_PARAM: NCCL_IB_GID_INDEX, NCCL_IB_TC, NCCL_CROSS_NIC, ...) that is "
         "not a plain number: words ('auto', 'true'), a leading zero (octal: 010 is 8, 08 and 09 are 0), trailing "
         "text (3x), or a number out of range.",
    why="NCCL parses these with strtoll(value, NULL, 0) (misc/param.cc:ncclLoadParam): no digits gives 0, a leading "
        "0 means octal, parsing stops at the first bad character, and only an overflow falls back to the default. "
        "NCCL_IB_GID_INDEX=auto or =08 therefore selects GID 0 (on RoCE usually the link-local RoCE v1 entry: "
        "connections time out), NCCL_IB_TC=0106 is 70.",
    detect="Every definition of an integer variable (environment and conf files) through a C strtoll model.",
    fix="Write the number in decimal (or 0x hex) without leading zeros or extra text: NCCL_IB_GID_INDEX=3.",
    options=(_VERSION_OPT,),
)
def integer_value(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = _version(opts)
    res = _resolved(ctx)
    for name in res.names():
        if not _is_int_var(name, version):
            continue
        for s in res.candidates(name):
            v = s.value
            if v == "":
                continue  # empty: NCCL keeps the default
            r = strtol(v)
            body = v.strip()
            digits = body.lstrip("+-")
            if r.overflow:
                default = default_at(name, version)
                yield _hit(s, "out of the 64-bit range: NCCL logs 'Invalid value' and uses the default" + (
                    f" ({default})" if default is not None else ""))
            elif not r.digits:
                yield _hit(s, "not a number: strtoll finds no digits and NCCL uses 0",
                           fix=f"write a number, e.g. {s.name}=<decimal value>")
            elif r.base == 8 and len(digits) > 1 and digits[:1] == "0" and not (digits.isdigit() and r.value == int(digits)):
                end = r.rest(v)
                if end[:1] in "89" and end:
                    yield _hit(s, f"a leading 0 means octal and '{end[0]}' is not an octal digit: NCCL reads {r.value}",
                               fix=_line_fix(s, digits.lstrip("0") or "0"))
                elif digits.isdigit():
                    yield _hit(s, f"a leading 0 means octal: NCCL reads {r.value}, not {int(digits, 10)}",
                               fix=_line_fix(s, str(int(digits, 10))))
                else:
                    rest = r.rest(v)
                    if rest.strip() and not rest.lstrip().startswith("#"):
                        yield _hit(s, f"NCCL reads {r.value} and ignores {rest!r}", fix=_line_fix(s, str(r.value)))
            else:
                rest = r.rest(v)
                if rest.strip() and not rest.lstrip().startswith("#"):  # '# ...' is NCCL004
                    yield _hit(s, f"NCCL reads {r.value} and ignores {rest!r}", fix=_line_fix(s, str(r.value)))


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
    res = _resolved(ctx)
    for later, winner in res.overridden():
        if not _looks_nccl(later.name):
            continue
        yield _hit(later, f"overridden by {winner.name}={_show(winner.value)} from {winner.where}, which NCCL reads "
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
    res = _resolved(ctx)
    for later, first in res.duplicates():
        same = later.value == first.value
        yield Hit(later.source, f"{later.name} is set again on line {later.line}; NCCL keeps line {first.line} "
                  f"({first.name}={_show(first.value)})" + (" (same value)" if same else
                                                           f" and ignores {_show(later.value)}"),
                  fix=f"keep one line: delete line {later.line} of {later.source}, or delete line {first.line} if "
                      f"{_show(later.value)} is the value you want",
                  evidence=(f"line {first.line}: {first.raw!r}", f"line {later.line}: {later.raw!r}"),
                  line=later.line, severity=I if same else None)


# --------------------------------------------------------------------------------------------------
# NCCL_IB_HCA


def _hca_settings(ctx: Ctx) -> tuple[Setting, ...]:
    return _resolved(ctx).candidates("NCCL_IB_HCA")


def _entry_clean(name: str) -> bool:
    return bool(name) and name[0] not in "^=\"'" and not any(c.isspace() for c in name)


@rule(
    "NCCL010", "ib-hca-prefix-collision", W, "NCCL_IB_HCA name also selects other devices (prefix match)",
    what="An NCCL_IB_HCA entry without '=' that names a device and also matches longer names: mlx5_1 selects "
         "mlx5_10 ... mlx5_19 too (with '^', it excludes them too).",
    why="Without a leading '=' every entry is a prefix (misc/utils.cc:matchIf uses strncmp over the entry's "
        "length). On a node with 12 HCAs, NCCL_IB_HCA=mlx5_0,mlx5_1 also hands NCCL mlx5_10 and mlx5_11 (often "
        "storage or in-band NICs), which then carry collective traffic (NVIDIA/nccl PR #236).",
    detect="Each entry of every NCCL_IB_HCA definition against the node's RDMA device names, honouring ':port'.",
    fix="Make the list exact with a leading '=' (after '^' if both): NCCL_IB_HCA==mlx5_0,mlx5_1.",
)
def ib_hca_prefix_collision(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    devs = sorted({n.name for n in ctx.node.nics})
    ports: dict[str, set[int]] = {}
    for n, p, _ in _ports(ctx):
        ports.setdefault(n, set()).add(p)
    for s in _hca_settings(ctx):
        spec = parse_if_list(s.value, MAX_IB_HCA_ENTRIES)
        if spec.exact:
            continue
        named = {e.name for e in spec.entries}
        for e in spec.entries:
            if not _entry_clean(e.name) or not e.name[-1:].isdigit():
                continue  # 'mlx5_' or 'ibp' is a deliberate prefix
            # A collision extends the entry's final number (mlx5_1 -> mlx5_10); 'mlx5' -> 'mlx5_0' is deliberate.
            extra = [d for d in devs if d != e.name and d.startswith(e.name) and d[len(e.name)].isdigit()
                     and d not in named and (e.port is None or e.port in ports.get(d, set()))]
            if not extra:
                continue
            verb = "excludes" if spec.exclude else "selects"
            exact = ("^=" if spec.exclude else "=") + ",".join(x.text for x in spec.entries)
            yield _hit(s, f"entry {e.name} is a prefix: it also {verb} {', '.join(extra)}",
                       fix=f"NCCL_IB_HCA={exact}", evidence=(f"devices: {', '.join(devs)}",))


@rule(
    "NCCL011", "ib-hca-no-device", E, "NCCL_IB_HCA names a device that does not exist or is down",
    what="An NCCL_IB_HCA entry that matches no RDMA device of the node, names a port the device lacks, or selects "
         "only ports that are not ACTIVE; or a list that leaves no active port at all.",
    why="The IB plugin keeps only ACTIVE ports that the list selects (transport/net_ib/init.cc). An entry for a "
        "missing or renamed device (mlx5_0 after a udev rename to ibp24s0) or a down port silently removes that "
        "rail, so its GPUs share another NIC; when nothing is left NCCL logs 'NET/IB : No device found.' and falls "
        "back to TCP sockets (a 10-100x bandwidth loss).",
    detect="Each entry against /sys/class/infiniband (device names, port numbers, port state); the whole list "
           "evaluated with NCCL's matchIfList semantics.",
    fix="Name existing devices and active ports (ibv_devinfo -l lists names; ibstat shows port state), or bring "
        "the port up (cable, switch port, subnet manager).",
)
def ib_hca_no_device(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    nics = {n.name: n for n in node.nics}
    netdev_owner = {nd: n.name for n in node.nics for nd in n.netdevs}
    netdev_owner.update({p.netdev: n.name for n in node.nics for p in n.ports if p.netdev})
    ports = _ports(ctx)
    active = [(n, p) for n, p, ok in ports if ok]
    for s in _hca_settings(ctx):
        spec = parse_if_list(s.value, MAX_IB_HCA_ENTRIES)
        errors = 0
        for e in spec.entries:
            if not _entry_clean(e.name):
                continue  # NCCL012 / NCCL002 explain these
            matched = sorted(d for d in nics if entry_matches_name(spec, e, d))
            sev = W if spec.exclude else None
            if not matched:
                hint, fix = "", None
                if e.name in netdev_owner:
                    hint = f"; {e.name} is a netdev, its RDMA device is {netdev_owner[e.name]}"
                    new = netdev_owner[e.name] + e.text[len(e.name):]
                    fix = f"NCCL_IB_HCA={_replace_entry(s.value, e.text, new)}"
                elif nics:
                    import difflib

                    close = difflib.get_close_matches(e.name, list(nics), n=1, cutoff=0.6)
                    hint = f"; RDMA devices here: {', '.join(sorted(nics))}" + (f" (closest: {close[0]})" if close else "")
                what = "excludes nothing: " if spec.exclude else ""
                yield _hit(s, f"{what}no RDMA device is named {e.name}{hint or ' (this host has none)'}",
                           severity=sev, fix=fix)
                errors += 0 if spec.exclude else 1
                continue
            pairs = [(d, p.num, p) for d in matched for p in nics[d].ports if e.port is None or p.num == e.port]
            if not pairs:
                have = ", ".join(f"{d} ports {','.join(str(p.num) for p in nics[d].ports) or 'none'}" for d in matched)
                yield _hit(s, f"entry {e.text} names port {e.port}, which does not exist ({have})", severity=sev,
                           fix=f"NCCL_IB_HCA={_replace_entry(s.value, e.text, e.name)} (every port), or name an "
                               "existing port")
                errors += 0 if spec.exclude else 1
                continue
            if spec.exclude:
                continue
            down = [(d, n, p) for d, n, p in pairs if not (p.is_active and p.link_layer in ("InfiniBand", "Ethernet"))]
            if down and len(down) == len(pairs):
                states = ", ".join(f"{d}:{n} {p.state}/{p.phys_state}" for d, n, p in down)
                yield _hit(s, f"entry {e.text} selects only port(s) that are not ACTIVE ({states}): NCCL skips them",
                           fix=f"bring the port up (ibstat {down[0][0]}; check cable, switch port and subnet manager), "
                               "or remove the entry")
                errors += 1
        selected = hca_selects(s.value, active)
        if active and not selected and not errors:
            yield _hit(s, "selects no active RDMA port: NCCL logs 'NET/IB : No device found.' and falls back to TCP "
                       "sockets", evidence=(f"active ports: {', '.join(f'{n}:{p}' for n, p in active)}",))


def _hca_fixed(value: str) -> str:
    """What the writer most likely meant: every '^'/'=' mark moved to the front (in NCCL's order), names trimmed."""
    spec = parse_if_list(value.replace("=^", "^=", 1) if value.startswith("=^") else value, 1 << 16)
    marks = ("^" if spec.exclude else "") + ("=" if spec.exact else "")
    for e in spec.entries:
        lead = e.name[:len(e.name) - len(e.name.lstrip("^="))]
        marks += lead
    prefix = ("^" if "^" in marks else "") + ("=" if "=" in marks else "")
    items = []
    for e in spec.entries:
        name = e.name.lstrip("^=").strip()
        items.append(name + e.text[len(e.name):].strip())
    return prefix + ",".join(items)


@rule(
    "NCCL012", "ib-hca-syntax", E, "NCCL_IB_HCA with '^' or '=' in the wrong place, spaces or a bad port",
    what="An NCCL_IB_HCA value that NCCL parses differently than written: '=^mlx5_0' ('=' before '^'), '^' or '=' "
         "repeated on later entries ('^=mlx5_8,^=mlx5_14'), white space inside the list ('mlx5_0, mlx5_1'), a port "
         "that is not a positive number (mlx5_0:a), or more entries than NCCL reads (32; 16 before 2.18.5).",
    why="NCCL looks for '^' and then '=' once, at the start of the whole value, and they apply to every entry "
        "(transport/net_ib/init.cc); anywhere else they are characters of a device name, as is white space "
        "(misc/utils.cc:parseStringList does not trim). '^=mlx5_8,^=mlx5_14' therefore excludes mlx5_8 only "
        "(NVIDIA/nccl-tests#150); a port is read with atoi, so 'a' is port 0, which matches nothing.",
    detect="The raw value of every NCCL_IB_HCA definition, split exactly as parseStringList splits it.",
    fix="Write the prefix once and names plainly: NCCL_IB_HCA=^=mlx5_8,mlx5_14 or NCCL_IB_HCA==mlx5_0:1,mlx5_1:1.",
    options=(_VERSION_OPT,),
)
def ib_hca_syntax(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = _version(opts)
    limit = MAX_IB_HCA_ENTRIES if version >= Version(2, 18, 5) else 16
    for s in _hca_settings(ctx):
        v = s.value
        spec = parse_if_list(v, limit)
        fix = f"NCCL_IB_HCA={_hca_fixed(v)}"
        if v.startswith("=^"):
            first = spec.entries[0].name if spec.entries else "^"
            yield _hit(s, f"'=' comes before '^': NCCL reads an exact list whose first name is {first!r}, so nothing "
                       "is excluded", fix=fix)
        for k, e in enumerate(spec.entries):
            if k == 0 and v.startswith("=^"):
                pass
            elif e.name[:1] in ("^", "="):
                mark = e.name[0]
                bare = e.name.lstrip("^=")
                effect = "is not excluded" if spec.exclude else "is not selected"
                yield _hit(s, f"'{mark}' inside the list: entry {e.name!r} is read as a device name starting with "
                           f"'{mark}' ('^' and '=' count only at the start of the whole value), so {bare} {effect}",
                           fix=fix)
            if any(c.isspace() for c in e.name):
                yield _hit(s, f"entry {e.name!r} contains white space: NCCL does not trim, so it names no device",
                           fix=fix)
            parts = e.text.split(":")
            if len(parts) > 1 and parts[1] != "" and e.port is not None and e.port <= 0:
                yield _hit(s, f"entry {e.text}: port {parts[1]!r} is read by atoi as {e.port}, which matches no port "
                           "(ports are numbered from 1)", fix=f"write {e.name}:1, or drop ':{parts[1]}' for all ports")
            if len(parts) > 2 and version < Version(2, 30, 7) and any(parts[2:]):
                yield _hit(s, f"entry {e.text}: ':rail:plane' fields are read from NCCL 2.30.7 on; NCCL "
                           f"{version} ignores them", severity=I)
        if spec.dropped:
            yield _hit(s, f"{len(spec.entries) + len(spec.dropped)} entries: NCCL {version} reads the "
                       f"first {limit} and ignores {', '.join(spec.dropped)}", severity=W,
                       fix=f"list at most {limit} devices (use a prefix, or '^' to exclude instead)")


@rule(
    "NCCL013", "ib-hca-excludes-rails", W, "NCCL_IB_HCA leaves out a GPU's rail NIC",
    what="An NCCL_IB_HCA list that does not select the active NIC port closest to some GPU (its rail).",
    why="NCCL picks for each GPU the network device with the best path among those the IB plugin kept "
        "(graph/topo.cc:ncclTopoGetLocal). Without its rail NIC a GPU uses a NIC behind another switch or CPU: "
        "traffic crosses the CPU interconnect, GPUDirect RDMA may be disabled for that path, and on a "
        "rail-optimized fabric the traffic lands on another rail's leaf.",
    detect="The selection NCCL would make from the node's ports, compared with the rail plan (each GPU's closest "
           "NIC port by PCIe path, ncclctl rails).",
    fix="Select every rail: set NCCL_IB_HCA to the exact list 'ncclctl rails' prints.",
)
def ib_hca_excludes_rails(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    plan = ctx.rails
    if plan is None or not plan.rails:
        return
    ports = _ports(ctx)
    everything = [(n, p) for n, p, _ in ports]
    active = {(n, p) for n, p, ok in ports if ok}
    for s in _hca_settings(ctx):
        selected = hca_selects(s.value, everything)
        if not (selected & active):
            continue  # NCCL011: nothing usable at all
        missing = [r for r in plan.rails if r.active and (r.nic, r.port) not in selected]
        if not missing:
            continue
        gpus = sorted(g for r in missing for g in r.gpus)
        yield _hit(s, f"leaves out the rail NIC(s) {', '.join(r.hca for r in missing)} of GPU(s) "
                   f"{', '.join(map(str, gpus))}: those GPUs use a NIC farther away",
                   fix=f"NCCL_IB_HCA={plan.nccl_ib_hca}",
                   evidence=tuple(f"rail {r.rail}: {r.hca} ({r.path}) GPU {','.join(map(str, r.gpus))}" for r in missing))


# --------------------------------------------------------------------------------------------------
# NCCL_SOCKET_IFNAME

_DOWN_STATES = ("down", "lowerlayerdown", "notpresent", "dormant")


def _running(nd) -> bool:
    return nd.operstate not in _DOWN_STATES


def _virtual_bridge(nd) -> bool:
    return nd.name.startswith(("docker", "veth", "br-", "virbr")) or nd.kind == "veth"


def _vlan(nd) -> bool:
    return nd.kind == "vlan" or ("." in nd.name and nd.kind in ("physical", "vlan", "ipoib"))


def _loopback(nd) -> bool:
    return nd.type == 772 or nd.name == "lo"


def _ifname_suggestion(node) -> str:
    """A concrete NCCL_SOCKET_IFNAME: the first running interface that is not loopback, a bridge or a VLAN,
    preferring one that carries no RDMA port (the management network), else an IPoIB one."""
    rdma = {nd for n in node.nics for nd in n.netdevs} | {p.netdev for n in node.nics for p in n.ports if p.netdev}
    ok = [nd for nd in node.netdevs if _running(nd) and not _loopback(nd) and not _virtual_bridge(nd)
          and not _vlan(nd) and nd.kind not in ("bridge", "bond-slave")]
    ok.sort(key=lambda nd: (nd.name in rdma and nd.type != 32, nd.name in rdma, nd.name))
    return f"NCCL_SOCKET_IFNAME=={ok[0].name}" if ok else "NCCL_SOCKET_IFNAME=^docker,veth,br-,virbr,lo"


@rule(
    "NCCL014", "socket-ifname-risky", W, "NCCL_SOCKET_IFNAME selects container bridges, VLANs or only loopback",
    what="An NCCL_SOCKET_IFNAME that lets through docker/VM bridges and veth pairs (docker0, br-*, veth*, virbr*), "
         "that selects VLAN sub-interfaces by prefix (eth0 also matches eth0.100), or that leaves only 'lo' on a "
         "node built for multi-node jobs.",
    why="Bootstrap binds the first interface the list lets through and the socket transport uses them all "
        "(misc/socket.cc:ncclFindInterfaces). A bridge address (172.17.0.1) is not reachable from other nodes, so "
        "init hangs; a VLAN sub-interface has its own MTU and routing (NVIDIA/nccl#177); 127.0.0.1 makes every "
        "multi-node job fail to connect.",
    detect="The list evaluated like ncclOsFindInterfaces (prefix or '=' exact, '^' exclusion) over the node's "
           "netdevs that are up (sysfs operstate; kind from 'ip -d link').",
    fix="Name the management or IPoIB interface exactly: NCCL_SOCKET_IFNAME==eno1 (or exclude the bridges: "
        "^docker,veth,br-,virbr,lo).",
)
def socket_ifname_risky(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    netdevs = [nd for nd in node.netdevs]
    multi_node = any(p.is_active for n in node.nics for p in n.ports)
    for s in _resolved(ctx).candidates("NCCL_SOCKET_IFNAME"):
        if len(s.value) <= 1:
            continue
        spec = parse_if_list(s.value, MAX_IFNAME_ENTRIES)
        names = ifname_selects(s.value, [nd.name for nd in netdevs])
        sel = [nd for nd in netdevs if nd.name in names and _running(nd)]
        if not sel:
            continue  # NCCL015
        bridges = [nd.name for nd in sel if _virtual_bridge(nd)]
        if bridges:
            yield _hit(s, f"lets through container/VM bridge interface(s) {', '.join(bridges)}: bootstrap may bind an "
                       "address other nodes cannot reach", evidence=(f"selected: {', '.join(nd.name for nd in sel)}",),
                       fix=f"name the interface exactly ({_ifname_suggestion(node)}), or also exclude the bridges: "
                           "NCCL_SOCKET_IFNAME=^docker,veth,br-,virbr,lo")
        if not spec.exclude:
            explicit = {e.name for e in spec.entries}
            vlans = [nd.name for nd in sel if _vlan(nd) and nd.name not in explicit
                     and not any("." in e.name and nd.name.startswith(e.name) for e in spec.entries)]
            if vlans and len(vlans) < len(sel):
                base = [nd.name for nd in sel if nd.name not in vlans]
                yield _hit(s, f"prefix match also selects VLAN sub-interface(s) {', '.join(vlans)} besides "
                           f"{', '.join(base)}", fix="NCCL_SOCKET_IFNAME==" + ",".join(base),
                           evidence=(f"selected: {', '.join(nd.name for nd in sel)}",))
        if multi_node and all(_loopback(nd) for nd in sel):
            yield _hit(s, "selects only the loopback interface: ranks on other nodes cannot reach 127.0.0.1, so "
                       "multi-node jobs fail to bootstrap", severity=E, fix=_ifname_suggestion(node))


@rule(
    "NCCL015", "socket-ifname-no-match", E, "NCCL_SOCKET_IFNAME matches no usable interface",
    what="An NCCL_SOCKET_IFNAME that matches no interface of the node, matches only interfaces that are down, or "
         "is one character long (NCCL ignores it).",
    why="When the variable is set NCCL uses only what it names ('find or fail'): bootstrap reports 'Bootstrap : no "
        "socket interface found' (ncclInvalidUsage) and the IB plugin 'NET/IB : No IP interface found.', so every "
        "communicator init fails. A value of one character is ignored and NCCL silently auto-detects "
        "(misc/socket.cc:ncclFindInterfaces).",
    detect="The list evaluated like ncclOsFindInterfaces over the node's netdevs and their operstate.",
    fix="Set it to an interface that exists and is up on every node (ip -br link), with '=' for an exact name.",
)
def socket_ifname_no_match(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    netdevs = list(ctx.node.netdevs)
    for s in _resolved(ctx).candidates("NCCL_SOCKET_IFNAME"):
        if len(s.value) <= 1:
            yield _hit(s, "values of one character or less are ignored: NCCL auto-detects the interface", severity=W)
            continue
        names = ifname_selects(s.value, [nd.name for nd in netdevs])
        sel = [nd for nd in netdevs if nd.name in names and _running(nd)]
        if sel:
            continue
        up = ", ".join(nd.name for nd in netdevs if _running(nd)) or "none"
        if names:
            msg = f"matches only {', '.join(names)}, which is down: NCCL uses running interfaces only"
        else:
            msg = "matches no interface of this host"
        yield _hit(s, f"{msg}; bootstrap fails with 'no socket interface found' (interfaces up: {up})")


# --------------------------------------------------------------------------------------------------
# Levels, algorithm lists, enumerations

_LEVEL_DEFAULT = {"NCCL_P2P_LEVEL": "its own P2P rules (typically up to PXB; SYS on some platforms)",
                  "NCCL_NET_GDR_LEVEL": "GPUDirect RDMA up to PXB (P2C for C2C NICs)"}


def _level_reason(value: str, version) -> str:
    names = level_names(version)
    every = level_names(Version(99, 0, 0))
    if value == "":
        return "it is empty"
    if value.strip() in names:
        return "white space is kept and the comparison is exact"
    if value.strip("\"'") in names:
        return "the quotes are kept"
    if value.upper() in names:
        return f"the comparison is case-sensitive, write {value.upper()}"
    if value.upper() == "NODE":
        return "NCCL has no NODE level; nvidia-smi's NODE is NCCL's PHB"
    if value.upper() in every:
        since = dict(PATH_LEVELS)[value.upper()]
        return f"{value.upper()} is accepted from NCCL {since} on"
    if value.upper() in ("NET", "DIS"):
        return f"{value.upper()} is not an accepted level"
    return f"it is neither a level ({' '.join(names)}) nor a number"


@rule(
    "NCCL016", "path-level-invalid", W, "NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL value NCCL ignores",
    what="A value of NCCL_P2P_LEVEL or NCCL_NET_GDR_LEVEL that is not one of NCCL's level names (LOC NVL NVB C2C PIX "
         "PXB P2C PXN PHB SYS, exact upper case; NVB from 2.8, PXN 2.12, C2C 2.26, P2C 2.27) nor a legacy number; "
         "a number with a leading 0 or trailing text; an NCCL_P2P_DISABLE other than 1.",
    why="graph/paths.cc:ncclGetLevel compares with strcmp and, if nothing matches and the first character is not a "
        "digit, ignores the value without any message: 'phb', 'NODE', 'PHB ' keep NCCL's default, so a P2P or "
        "GPUDirect RDMA restriction meant to work around a platform problem is not applied. Legacy numbers go "
        "through strtol (08 is 0 = LOC). NCCL_P2P_DISABLE is honoured only when it reads as 1.",
    detect="Every definition (environment and conf files) through a model of ncclGetLevel for the chosen "
           "nccl_version.",
    fix="Write one of the names in upper case, e.g. NCCL_P2P_LEVEL=PHB (nvidia-smi's NODE is PHB), and "
        "NCCL_P2P_DISABLE=1.",
    options=(_VERSION_OPT,),
)
def path_level_invalid(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = _version(opts)
    res = _resolved(ctx, opts)
    for name in ("NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL"):
        for s in res.candidates(name):
            r = read_level(s.value, version)
            if r.how == "name":
                continue
            if r.how == "legacy" and r.level is None:
                yield _hit(s, f"read as the legacy number {r.legacy_value} (an int), which is outside NCCL's table of "
                           "levels: NCCL reads past the array (undefined behaviour)",
                           fix=f"use one of {' '.join(level_names(version))}")
                continue
            if r.how == "legacy":
                if s.value != str(r.legacy_value):
                    yield _hit(s, f"read as the legacy number {r.legacy_value}, which means {r.level}",
                               fix=_line_fix(s, r.level or "SYS"))
                continue
            reason = _level_reason(s.value, version)
            guess = s.value.strip().strip("\"'").upper()
            guess = "PHB" if guess == "NODE" else guess
            yield _hit(s, f"ignored silently: {reason}; NCCL keeps {_LEVEL_DEFAULT[name]}",
                       fix=_line_fix(s, guess) if guess in level_names(version) else
                       f"use one of {' '.join(level_names(version))}")
    disable = res.candidates("NCCL_P2P_DISABLE")
    for s in disable:
        if disables_p2p(s.value) or s.value.strip() in ("0", ""):
            continue
        yield _hit(s, f"only a value that reads as 1 disables P2P; strtol reads {c_int(s.value)}, so it is ignored",
                   fix=_line_fix(s, "1") + ", or remove it")
    eff_disable = res.effective("NCCL_P2P_DISABLE")
    eff_level = res.effective("NCCL_P2P_LEVEL")
    if eff_disable and eff_level and disables_p2p(eff_disable.value):
        yield _hit(eff_level, f"ignored because NCCL_P2P_DISABLE=1 ({eff_disable.where}) takes precedence",
                   severity=I, fix="remove one of the two settings")


@rule(
    "NCCL017", "algo-proto-invalid", E, "NCCL_ALGO / NCCL_PROTO that NCCL rejects",
    what="An NCCL_ALGO or NCCL_PROTO value with an unknown algorithm/protocol, an unknown function prefix, a "
         "later ';' entry without 'function:' prefix, or names the chosen NCCL release does not have (PAT before "
         "2.23, NVLSTree before 2.18, CollNet split into CollNetDirect/CollNetChain in 2.14).",
    why="From 2.24 graph/tuning.cc:parseList fails on any unknown token with 'Unrecognized element token' and "
        "ncclInvalidUsage: every communicator init fails. Before 2.24 unknown tokens were skipped silently, so the "
        "intended restriction did not apply.",
    detect="Every definition parsed like parseList ([^]elem,...[;func:[^]elem,...]..., case-insensitive) for the "
           "chosen nccl_version.",
    fix="Use the names NCCL prints: algorithms Tree Ring CollNetDirect CollNetChain NVLS NVLSTree PAT, protocols "
        "LL LL128 Simple, functions Broadcast Reduce AllGather ReduceScatter AllReduce (e.g. "
        "NCCL_PROTO=^LL128;allreduce:Simple).",
    options=(_VERSION_OPT,),
)
def algo_proto_invalid(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = _version(opts)
    res = _resolved(ctx, opts)
    for name, what in (("NCCL_ALGO", "algo"), ("NCCL_PROTO", "proto")):
        for s in res.candidates(name):
            problems = check_algo_proto(s.value, what, version)
            if not problems:
                continue
            fatal = any(p.fatal for p in problems)
            parts = []
            for p in problems:
                if p.kind == "element":
                    import difflib

                    names = algo_proto_names(what, version)
                    close = difflib.get_close_matches(p.token.lower(), [n.lower() for n in names], n=1, cutoff=0.6)
                    hint = f" (did you mean {next(n for n in names if n.lower() == close[0])}?)" if close else ""
                    if p.token.lower() == "collnet" and version >= Version(2, 14, 0):
                        hint = " (split into CollNetDirect and CollNetChain in 2.14)"
                    parts.append(f"unknown {'algorithm' if what == 'algo' else 'protocol'} {p.token!r}{hint}")
                elif p.kind == "prefix":
                    parts.append(f"unknown function prefix {p.token!r}")
                elif p.kind == "no-prefix":
                    parts.append(f"entry {p.token!r} after ';' has no 'function:' prefix")
                else:
                    parts.append(f"empty entry {p.token!r}")
            effect = ("NCCL rejects the value (ncclInvalidUsage): communicator init fails" if fatal else
                      "NCCL skips these tokens silently")
            yield _hit(s, f"{'; '.join(parts)}: {effect}", severity=None if fatal else W,
                       evidence=(f"accepted: {' '.join(algo_proto_names(what, version))}",))


_ENUMS: dict[str, tuple[Version, str, tuple[str, ...], str]] = {
    # name: (since, match: exact | nocase | prefix | nocase-trim, values, what NCCL does otherwise)
    "NCCL_SOCKET_FAMILY": (Version(2, 3, 5), "exact", ("AF_INET", "AF_INET6"),
                           "uses whichever address family it finds first"),
    "NCCL_IB_ADDR_FAMILY": (Version(2, 21, 0), "exact", ("AF_INET", "AF_INET6"), "uses AF_INET"),
    "NCCL_NETDEVS_POLICY": (Version(2, 28, 0), "netdevs", ("AUTO", "ALL", "MAX:<n>"),
                            "uses AUTO (INFO 'Unable to recognize')"),
    "NCCL_NET_MERGE_POLICY": (Version(2, 30, 7), "nocase", ("ALL", "RAIL"), "warns and uses ALL"),
    "NCCL_NET_MERGE_LEVEL": (Version(2, 24, 0), "prefix", ("LOC", "PORT", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"),
                             "falls back to LOC: no NIC fusion at all"),
    # The levels of the release judged: ATTN from 2.32.3 (ncclctl.nccl.values.DEBUG_LEVELS).
    "NCCL_DEBUG": (Version(2, 3, 5), "nocase", (), "prints no debug output"),
    "NCCL_LAUNCH_MODE": (Version(2, 3, 5), "nocase", ("PARALLEL", "GROUP"), "uses PARALLEL"),
    # 2.32.3 (its library: ncclGetEnv, then strcasecmp with each name; anything else is INFO "Unrecognized").
    "NCCL_IB_RAIL_POLICY": (Version(2, 32, 3), "strcasecmp", ("CX9", "CX9:FLIP", "CX9:ALT", "CX9:BLOCK", "NONE"),
                            "ignores it (INFO 'Unrecognized') and keeps its default rail policy"),
}


def _enum_ok(kind: str, values: tuple[str, ...], v: str, version) -> bool:
    if kind == "exact":
        return v in values
    if kind == "strcasecmp":
        return v.upper() in values
    if kind == "nocase":
        if v.upper() in values:
            return True
        # 2.30.7 reads NCCL_DEBUG through the param registry, which trims first.
        return version >= Version(2, 30, 7) and v.strip().upper() in values
    if kind == "prefix":
        return any(v.startswith(x) for x in values)
    if kind == "netdevs":
        u = v.upper()
        return u in ("AUTO", "ALL") or (u.startswith("MAX:") and strtol(v[4:], 10).value > 0)
    return True


@rule(
    "NCCL018", "enum-value-invalid", W, "NCCL setting with a value outside its accepted set",
    what="A value NCCL does not recognise for NCCL_SOCKET_FAMILY, NCCL_IB_ADDR_FAMILY (AF_INET/AF_INET6, exact), "
         "NCCL_NETDEVS_POLICY (AUTO, ALL, MAX:n), NCCL_NET_MERGE_POLICY (ALL, RAIL), NCCL_NET_MERGE_LEVEL (LOC PORT "
         "PIX PXB P2C PXN PHB SYS, upper case), NCCL_DEBUG (VERSION WARN INFO ABORT TRACE, ATTN from 2.32.3) or "
         "NCCL_LAUNCH_MODE (PARALLEL, GROUP), NCCL_IB_RAIL_POLICY (2.32.3: CX9, CX9:FLIP, CX9:ALT, CX9:BLOCK, "
         "NONE); a name NCCL does not know in the NCCL_DEBUG_SUBSYS, "
         "NCCL_DEBUG_TIMESTAMP_LEVELS or NCCL_DEBUG_LEVELS (2.32.3) lists.",
    why="Each of these falls back to a default without failing (misc/socket.cc, transport/net_ib/connect.cc, "
        "graph/topo.cc, debug.cc, init.cc): NCCL_SOCKET_FAMILY=ipv6 leaves IPv4 in use, NCCL_NET_MERGE_LEVEL=port "
        "disables NIC fusion, NCCL_DEBUG=debug prints nothing when it is needed. In the debug lists an unknown name "
        "is skipped before 2.30.7; from 2.30.7 (the typed parameter registry) it makes NCCL reject the whole "
        "list and keep the default: NCCL_DEBUG_SUBSYS=INIT,NET,ATTN logs INIT,ENV,BOOTSTRAP, not NET.",
    detect="Every definition compared the way NCCL compares it (strcmp, strcasecmp or a prefix match), for the "
           "chosen nccl_version.",
    fix="Use one of the accepted values listed in the finding.",
    options=(_VERSION_OPT,),
)
def enum_value_invalid(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = _version(opts)
    res = _resolved(ctx, opts)
    for name, (since, kind, values, fallback) in _ENUMS.items():
        if version < since:
            continue
        if name == "NCCL_DEBUG":
            values = debug_level_names(version)
        for s in res.candidates(name):
            if s.value == "" and name == "NCCL_IB_ADDR_FAMILY":
                continue
            if _enum_ok(kind, values, s.value, version):
                continue
            how = {"exact": "exact, case-sensitive", "nocase": "case-insensitive", "prefix": "upper case, prefix",
                   "netdevs": "case-insensitive", "strcasecmp": "case-insensitive"}[kind]
            guess = s.value.strip().strip("\"'").upper()
            if name in ("NCCL_SOCKET_FAMILY", "NCCL_IB_ADDR_FAMILY") and guess not in values:
                guess = "AF_INET6" if "6" in guess else "AF_INET"
            elif name == "NCCL_NETDEVS_POLICY" and guess not in values:
                guess = "AUTO"
            elif name == "NCCL_IB_RAIL_POLICY" and guess not in values:
                guess = "NONE"
            fix = _line_fix(s, guess) if _enum_ok(kind, values, guess, version) else f"use one of {', '.join(values)}"
            newer = [(since_, n) for n, since_ in DEBUG_LEVELS if n == guess and since_ > version]
            later = f" ({guess} is a level from NCCL {newer[0][0]} on)" if name == "NCCL_DEBUG" and newer else ""
            yield _hit(s, f"not one of {', '.join(values)} ({how}): NCCL {fallback}{later}",
                       severity=I if name == "NCCL_DEBUG" else None, fix=fix)
    yield from _debug_lists(res, version)


def _debug_lists(res: Resolved, version: Version) -> Iterable[Hit]:
    """NCCL_DEBUG_SUBSYS, NCCL_DEBUG_TIMESTAMP_LEVELS, NCCL_DEBUG_LEVELS: names ``version`` does not know."""
    for name, (since, _names, _defaults) in DEBUG_LISTS.items():
        if version < since:
            continue
        accepted = debug_list_names(name, version)
        for s in res.candidates(name):
            unknown = debug_list_unknown(name, s.value, version)
            if not unknown:
                continue
            shown = ", ".join(repr(u) for u in unknown)
            head = s.value[:1] if s.value.startswith("^") else ""
            kept = [e for e in s.value[len(head):].split(",") if e and e not in unknown]
            evidence = (f"accepted (case-insensitive): {' '.join(accepted)}",)
            if version >= DEBUG_REGISTRY:
                msg = (f"{shown} is not a name NCCL {version} knows: it rejects the whole list and keeps its "
                       f"default ({debug_list_default(name, version)})")
                yield _hit(s, msg, evidence=evidence, fix=_line_fix(s, head + ",".join(e.strip() for e in kept))
                           if kept else f"use names from: {', '.join(accepted)}")
            else:
                msg = f"{shown} is not a name NCCL {version} knows: it skips it silently"
                yield _hit(s, msg, evidence=evidence, severity=I, fix=_line_fix(s, head + ",".join(kept))
                           if kept else f"use names from: {', '.join(accepted)}")


@rule(
    "NCCL024", "value-masked-or-clamped", W, "NCCL setting beyond the range NCCL or the NIC can use",
    what="An integer setting outside the range its destination can hold: NCCL_IB_RETRY_CNT above 7 (a 3-bit QP "
         "field), NCCL_IB_TIMEOUT above 31 (5 bits), NCCL_IB_SL above 15 (4 bits), NCCL_IB_TC or NCCL_IB_GID_INDEX "
         "above 255 (one byte), NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS above 64, NCCL_NTHREADS not a multiple of 32 "
         "from 64 to 512, NCCL_IB_QPS_PER_CONNECTION above 128.",
    why="NCCL copies the QP values into the verbs structures (uint8_t fields) without a range check and the NIC "
        "driver keeps the low bits: NCCL_IB_RETRY_CNT=8 becomes 0 retries (a single lost packet fails the job), "
        "NCCL_IB_TIMEOUT=32 becomes 0 (wait forever: a dead peer hangs the job instead of failing it). Channel and "
        "thread counts are clamped with only an INFO line, so the setting silently does something else; more than "
        "128 QPs per connection overrun NCCL's QP array.",
    detect="Every definition (environment and conf files) read as NCCL reads integers (strtoll), then compared with "
           "the limits of NCCL 2.30.7's code (net_ib/connect.cc, graph/connect.cc, graph/tuning.cc) and the verbs "
           "field widths (ncclctl.nccl.values.VALUE_RANGES).",
    fix="Use a value within the range the finding gives (NCCL_IB_RETRY_CNT=7 and NCCL_IB_TIMEOUT=20 to 22 are the "
        "usual choices).",
    options=(_VERSION_OPT,),
)
def value_masked_or_clamped(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    res = _resolved(ctx, opts)
    for name, rng in VALUE_RANGES.items():
        for s in res.candidates(name):
            r = strtol(s.value)
            if not r.digits or r.overflow:
                continue  # NCCL007's
            hit = out_of_range(name, r.value)
            if hit is None:
                continue
            used = hit[1]
            span = f"{rng.lo} to {rng.hi}" + (f" in steps of {rng.multiple}" if rng.multiple else "")
            if rng.effect == "masked":
                msg = (f"{rng.what} ({rng.source}) holds {span}: NCCL passes {r.value} on unchecked and the NIC "
                       f"keeps the low bits, {used}")
                if name in ("NCCL_IB_RETRY_CNT", "NCCL_IB_TIMEOUT") and used == 0:
                    msg += " (" + ("no retries: one lost packet fails the job" if name == "NCCL_IB_RETRY_CNT" else
                                   "wait forever: a dead peer hangs the job") + ")"
                sev = E if name in ("NCCL_IB_RETRY_CNT", "NCCL_IB_TIMEOUT") and used == 0 else None
            elif rng.effect == "clamped":
                msg = f"{rng.what}: NCCL uses {used} instead (said only at NCCL_DEBUG=INFO)"
                sev = None
            else:
                msg = f"{rng.what}: {r.value} overruns it"
                sev = E
            yield _hit(s, msg, fix=_line_fix(s, str(min(max(r.value, rng.lo), rng.hi) if not rng.multiple else
                                                    used)), severity=sev)


@rule(
    "NCCL025", "unrendered-template", E, "NCCL setting whose value is template or shell text left unexpanded",
    what="A value that still holds the text a configuration tool or a shell should have replaced: Jinja/Ansible "
         "'{{ nccl_ib_hca }}' or '{% ... %}', shell '${IFACE}' or '$IFACE', autoconf/CMake '@IB_HCA@'.",
    why="NCCL reads the value literally: NCCL_IB_HCA={{ hcas }} selects no device (NCCL falls back to the other "
        "devices or to sockets), NCCL_SOCKET_IFNAME=${IFACE} matches no interface. A template that was copied "
        "instead of rendered, or an environment set with single quotes, leaves exactly this.",
    detect="Every definition in the environment and the conf files, matched against the template and shell "
           "expansion syntaxes (NCCL's own %h/%p in NCCL_DEBUG_FILE are not template text).",
    fix="Render the template (or expand the variable) and write the resulting value.",
    options=(_VERSION_OPT,),
)
def unrendered_template(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    res = _resolved(ctx, opts)
    for name in res.names():
        if not _looks_nccl(name):
            continue
        for s in res.candidates(name):
            piece = template_text(s.value)
            if piece is None:
                continue
            kind = ("Jinja/Ansible template text" if piece.startswith("{") else
                    "a shell variable that was not expanded" if piece.startswith("$") else "autoconf/CMake template text")
            yield _hit(s, f"{piece!r} is {kind}: NCCL reads it literally",
                       fix="render the template (or expand the variable) and write the value itself")


# --------------------------------------------------------------------------------------------------
# Topology and graph files


def _refused(ctx: Ctx, s: Setting) -> Hit | None:
    """The error for the file ``s`` (NCCL_TOPO_FILE, NCCL_GRAPH_FILE) names when the probe refused to read it (a
    device such as /dev/zero, a FIFO, a socket, a file over the 16 MiB cap): NCCL's fopen would fail, hang or
    read forever, so it is an error, and saying "does not exist" would send the operator to the wrong fix."""
    from ncclctl.model import REFUSED

    if not s.value.startswith("/"):
        return None
    for u in ctx.node.unavailable:
        if u.source == s.name and u.reason == REFUSED:
            return Hit(s.value, f"ncclctl refuses to read the file: {u.detail}", severity=E,
                       fix=f"point {s.name} at a regular NCCL XML file (ncclctl "
                           f"{'rings graph' if s.name == 'NCCL_GRAPH_FILE' else 'topo generate'} -o PATH), or unset it",
                       evidence=(f"{s.name} from {s.where}",))
    return None


def _xml_hits(ctx: Ctx, kind: Literal["topology", "graph"], conf, opts: dict, note: str) -> list[Hit]:
    """The project's validator and host checker on a captured topology/graph file, as graded hits."""
    from ncclctl.errors import InputError
    from ncclctl.topo import hostcheck
    from ncclctl.topo.interpret import interpret
    from ncclctl.nccl.xml import parse_nccl_xml
    from ncclctl.topo.graphfile import validate_graph
    from ncclctl.topo.validate import validate_topology

    data = conf.text.encode("utf-8", errors="replace")
    path = conf.path
    version = _version(opts)
    include_info = opts["include_info"]
    try:
        if kind == "topology":
            findings = validate_topology(data, path=path, nccl_version=version)
        else:
            findings = validate_graph(data, path=path, nccl_version=version)
        result = parse_nccl_xml(data, kind=kind, nccl_version=version, path=path)
    except InputError as exc:  # refused as unsafe or over a limit (a DTD, 100,000 nesting levels): docs/reliability.md
        return [Hit(path, f"ncclctl refuses to read the file: {exc.message}", fix=exc.fix, line=exc.line,
                    evidence=(note,), severity=E)]
    if result.ok and result.root is not None:
        if kind == "topology" and result.root.name == "system":
            findings += hostcheck.check_against_host(interpret(result), ctx.node, path)
        elif kind == "graph" and result.root.name == "graphs":
            findings += hostcheck.check_graph_against_host(result, ctx.node, path)
    out = []
    for f in sorted(findings, key=lambda f: (f.line or 0, f.column or 0, f.rule, f.message)):
        if f.severity is I and not include_info:
            continue
        out.append(Hit(path, f"{f.rule}: {f.message}", fix=f.fix, severity=f.severity, line=f.line,
                       evidence=(note, f"checker rule {f.rule}")))
    return out


@rule(
    "NCCL019", "graph-file-in-etc", W, "NCCL_GRAPH_FILE set in /etc/nccl.conf",
    what="A line NCCL_GRAPH_FILE=... in /etc/nccl.conf (applies to every job on the node).",
    why="A graph file fixes the rings and trees for one GPU count and layout. Every job that uses fewer GPUs, "
        "another GPU order or a sub-communicator fails at init ('Dev ... not found') or runs a graph that does "
        "not fit; users rarely know the file exists (NVIDIA/nccl#1008: the maintainers call graph injection an "
        "experiment tool, not a permanent setting; some cloud images ship exactly this line).",
    detect="The first NCCL_GRAPH_FILE line of /etc/nccl.conf.",
    fix="Remove the line from /etc/nccl.conf; set NCCL_GRAPH_FILE only in the environment of the jobs the graph "
        "was made for.",
)
def graph_file_in_etc(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for s in _resolved(ctx).candidates("NCCL_GRAPH_FILE"):
        if s.source == ETC_CONF:
            yield _hit(s, "a graph file for every job on this node: jobs with fewer GPUs or another layout fail "
                       "or run a graph made for something else")


@rule(
    "NCCL020", "graph-file-broken", E, "NCCL_GRAPH_FILE missing, unreadable or wrong for this host",
    what="The effective NCCL_GRAPH_FILE is empty, does not exist, or fails validation (NCCL's XML reader, graph "
         "rules) or the host check (GPU devs, GPU count, net devs).",
    why="An unreadable graph file is fatal: NCCL logs 'Could not open XML graph file' and init fails "
        "(ncclSystemError). A file NCCL can read but that names GPUs or NICs this host lacks fails later in graph "
        "setup or silently runs fewer channels.",
    detect="The file the effective setting names, captured by the probe (HostFacts.graph_file), checked with "
           "the same validator as 'ncclctl topo validate --root'.",
    fix="Point NCCL_GRAPH_FILE at a valid file for this host (ncclctl rings graph), or unset it.",
    options=(_INFO_OPT, _VERSION_OPT),
)
def graph_file_broken(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    s = _resolved(ctx).effective("NCCL_GRAPH_FILE")
    if s is None:
        return
    fact = ctx.node.facts.graph_file
    if s.value == "":
        yield _hit(s, "empty: fopen('') fails, NCCL logs 'Could not open XML graph file' and init fails")
    elif not s.value.startswith("/"):
        yield _hit(s, "a relative path: it resolves against each job's working directory (not checked)", severity=W)
    elif (refused := _refused(ctx, s)) is not None:
        yield refused
    elif fact is None or fact.path != s.value:
        yield _hit(s, "the file does not exist or cannot be read: NCCL logs 'Could not open XML graph file' and "
                   "every communicator init fails")
    else:
        yield from _xml_hits(ctx, "graph", fact, opts, f"NCCL_GRAPH_FILE from {s.where}")


@rule(
    "NCCL021", "topo-file-missing", W, "NCCL_TOPO_FILE points at nothing",
    what="The effective NCCL_TOPO_FILE names a file that does not exist or cannot be read, a relative or '~' "
         "path, or is empty.",
    why="NCCL only logs INFO 'Could not open XML topology file' and auto-detects (graph/xml.cc: "
        "ncclTopoGetXmlFromFile). On bare metal that is usually fine, but in a VM the detected topology is flat: "
        "GPU/NIC pairing and GPUDirect RDMA are lost (user-needs 2-5), so it is an error there. '~' is not "
        "expanded. An empty value loads nothing and also skips /var/run/nvidia-topologyd/virtualTopology.xml.",
    detect="The effective setting and whether the probe could read the file (HostFacts.topo_file).",
    fix="Install the file at that absolute path (e.g. generate it with 'ncclctl topo generate -o PATH'), or "
        "unset NCCL_TOPO_FILE.",
)
def topo_file_missing(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    s = _resolved(ctx).effective("NCCL_TOPO_FILE")
    if s is None:
        return
    fact = ctx.node.facts.topo_file
    if s.value == "":
        vt = ctx.node.facts.virtual_topology is not None
        yield _hit(s, "empty: NCCL loads no file and does not try /var/run/nvidia-topologyd/virtualTopology.xml"
                   + (" (which exists here)" if vt else ""), severity=I)
    elif not s.value.startswith("/"):
        yield _hit(s, "not an absolute path: '~' is not expanded and a relative path depends on each job's "
                   "working directory")
    elif _refused(ctx, s) is not None:
        return  # NCCL022 says why
    elif fact is None or fact.path != s.value:
        vm = ctx.node.is_virtual
        yield _hit(s, "the file does not exist or cannot be read: NCCL silently auto-detects"
                   + (" the flat topology of this VM (GPU/NIC pairing and GPUDirect RDMA are lost)" if vm else ""),
                   severity=E if vm else None)


@rule(
    "NCCL022", "topo-file-mismatch", E, "NCCL_TOPO_FILE invalid or wrong for this host",
    what="The file the effective NCCL_TOPO_FILE names fails NCCL's XML reader or the topology rules, or does not "
         "match this host (bus ids, NUMA affinity, GPU/NIC pairing, NVLink counts).",
    why="A parse error is fatal for every communicator init; a file that does not match the host steers NCCL's "
        "ring/tree search and GPU-NIC pairing with wrong data (published cloud topology files carried wrong NUMA "
        "affinity for about 18 months, user-needs 1.1).",
    detect="The captured file (HostFacts.topo_file) through the same validator and host checker as "
           "'ncclctl topo validate FILE --root DIR'; each finding keeps the checker's severity and rule id.",
    fix="Regenerate the file for this host (ncclctl topo generate) and validate it (ncclctl topo validate FILE "
        "--live).",
    options=(_INFO_OPT, _VERSION_OPT),
)
def topo_file_mismatch(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    s = _resolved(ctx).effective("NCCL_TOPO_FILE")
    fact = ctx.node.facts.topo_file
    if s is not None and (refused := _refused(ctx, s)) is not None:
        yield refused
    if s is None or fact is None or fact.path != s.value:
        return
    yield from _xml_hits(ctx, "topology", fact, opts, f"NCCL_TOPO_FILE from {s.where}")


@rule(
    "NCCL023", "virtual-topology-stale", W, "/var/run/nvidia-topologyd/virtualTopology.xml in use and stale or odd",
    what="/var/run/nvidia-topologyd/virtualTopology.xml exists and NCCL_TOPO_FILE is unset, so NCCL loads it: on "
         "bare metal (where no topology daemon should run), or with content that fails validation or does not "
         "match this host.",
    why="Since 2.10 NCCL silently loads this path when NCCL_TOPO_FILE is unset (graph/topo.cc). It is meant for "
        "VMs whose hypervisor publishes the real PCI topology; a copy left on bare metal or from another VM shape "
        "overrides auto-detection with wrong data, with no log line above INFO.",
    detect="HostFacts.virtual_topology (the probe reads the path), the effective NCCL_TOPO_FILE, the node's "
           "flat-PCIe (VM) test, then the topology validator and host checker.",
    fix="On bare metal delete the file (and disable whatever writes it); in a VM regenerate it for this shape, or "
        "set NCCL_TOPO_FILE to a validated file.",
    options=(_INFO_OPT, _VERSION_OPT),
)
def virtual_topology_stale(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    vt = ctx.node.facts.virtual_topology
    if vt is None or _resolved(ctx).effective("NCCL_TOPO_FILE") is not None:
        return
    if ctx.is_bare_metal and ctx.node.gpus:
        yield Hit(vt.path, "present on bare metal: NCCL loads it instead of detecting the PCIe topology",
                  evidence=("NCCL_TOPO_FILE is unset",))
    yield from _xml_hits(ctx, "topology", vt, opts, "loaded because NCCL_TOPO_FILE is unset")


# --------------------------------------------------------------------------------------------------
# Rails and planes (NCCL 2.30.7+: NCCL_IB_HCA name:port:rail:plane, NCCL_NET_MERGE_POLICY)

_RAILS_SINCE = Version(2, 30, 7)


def _rail_ids(ctx: Ctx, opts: dict) -> tuple[Setting, list[tuple[str, int, int, int]]] | None:
    """The effective NCCL_IB_HCA and, for every active port it selects, (nic, port, rail, plane) as NCCL 2.30.7+
    reads them (-1: undefined); None before 2.30.7 or without NCCL_IB_HCA."""
    from ncclctl.nccl.lists import hca_ids

    if _version(opts) < _RAILS_SINCE:
        return None
    s = _resolved(ctx, opts).effective("NCCL_IB_HCA")
    if s is None or not s.value:
        return None
    ports = _ports(ctx)
    selected = hca_selects(s.value, [(n, p) for n, p, _ in ports])
    out = []
    for n, p, ok in ports:
        if ok and (n, p) in selected:
            rail, plane = hca_ids(s.value, n, p) if not s.value.startswith("^") else (-1, -1)
            out.append((n, p, rail, plane))
    return s, out


def _merge_path(ctx: Ctx, a: str, b: str) -> int:
    """NCCL's path type between two NIC devices as ncclTopoGetPath sees it: PORT for two ports or two functions of
    one card, else the PCIe path (NODE is PHB)."""
    from ncclctl.nccl import system as sy
    from ncclctl.plan.paths import pcie_path_type

    if a == b:
        return sy.PATH_PORT
    na = next((n for n in ctx.node.nics if n.name == a), None)
    nb = next((n for n in ctx.node.nics if n.name == b), None)
    if na is None or nb is None or not na.bdf or not nb.bdf:
        return sy.PATH_SYS
    if na.bdf[:-1] == nb.bdf[:-1]:
        return sy.PATH_PORT
    t = pcie_path_type(ctx.node, na.bdf, nb.bdf) or "SYS"
    t = {"NODE": "PHB"}.get(t, t)
    return sy.PATH_TYPE_STR.index(t) if t in sy.PATH_TYPE_STR else sy.PATH_SYS


@rule(
    "NCCL040", "merge-policy-fuses-rails", W, "NCCL's NIC fusion fuses ports of different rails into one device",
    what="NCCL_IB_HCA gives ports rail ids (name:port:rail, NCCL 2.30.7+) and two ports of different rails are "
         "close enough for NCCL's NIC fusion (NCCL_NET_MERGE_LEVEL, default PORT: two ports or functions of one "
         "card) while NCCL_NET_MERGE_POLICY is not RAIL.",
    why="ncclTopoAutoMerge (graph/topo.cc) fuses every device within the merge level into one virtual NIC; the "
        "IB plugin gives a fused device of different rails no rail id (net_ib/init.cc makeVDevice), so NCCL can no "
        "longer keep rings in their rail, and the fused device sends on both rails' leaves.",
    detect="The active ports NCCL_IB_HCA selects, their rail ids as parseStringList reads them, and NCCL's path "
           "type between them against NCCL_NET_MERGE_LEVEL; NCCL_NET_MERGE_POLICY and NCCL_IB_MERGE_NICS as NCCL "
           "reads them.",
    fix="Set NCCL_NET_MERGE_POLICY=RAIL (fuses only ports of one rail), or NCCL_NET_MERGE_LEVEL=LOC (no fusion); "
        "ncclctl conf generate --fabric writes it where needed.",
    options=(_VERSION_OPT,),
)
def merge_policy_fuses_rails(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    from ncclctl.nccl.build import _merge_level, merge_policy_rail
    from ncclctl.nccl.system import Params

    got = _rail_ids(ctx, opts)
    if got is None:
        return
    s, ports = got
    res = _resolved(ctx, opts)
    env = {k: v for k in ("NCCL_NET_MERGE_LEVEL", "NCCL_NET_MERGE_POLICY", "NCCL_IB_MERGE_NICS")
           if (v := res.value(k)) is not None}
    params = Params(env=env)
    if merge_policy_rail(params) or params.get("IB_MERGE_NICS", 1) == 0:
        return
    level = _merge_level(params)
    pairs = []
    for i, (na, pa, ra, _) in enumerate(ports):
        for nb, pb, rb, _ in ports[i + 1:]:
            if ra != -1 and rb != -1 and ra != rb and _merge_path(ctx, na, nb) <= level:
                pairs.append(f"{na}:{pa} (rail {ra}) + {nb}:{pb} (rail {rb})")
    if pairs:
        yield _hit(s, f"NCCL fuses {', '.join(pairs)} into one virtual NIC without a rail (NCCL_NET_MERGE_POLICY "
                   f"{'is ' + env['NCCL_NET_MERGE_POLICY'] if 'NCCL_NET_MERGE_POLICY' in env else 'unset: ALL'})",
                   fix="set NCCL_NET_MERGE_POLICY=RAIL")


@rule(
    "NCCL041", "cross-nic-crosses-rails", W, "NCCL_CROSS_NIC=1 lets rings cross the rails NCCL_IB_HCA declares",
    what="NCCL_IB_HCA gives ports rail ids (NCCL 2.30.7+) and NCCL_CROSS_NIC is 1 (warning) or 2, the default "
         "(info: ring channels may alternate rails).",
    why="With rail ids, NCCL's ring search keeps a channel's entry and exit NIC on one rail only when crossNic is "
        "0 (graph/search.cc ncclTopoSearchCheckNet compares rail ids); NCCL_CROSS_NIC=1 allows any NIC, so traffic "
        "crosses rails through the spine, which on a rail-only fabric (or a slow inter-rail path) is a slow or "
        "missing route.",
    detect="The effective NCCL_CROSS_NIC (NCCL_PARAM strtoll) with an NCCL_IB_HCA that gives rail ids.",
    fix="Set NCCL_CROSS_NIC=0 (or leave it at its default, 2) on rail-optimized fabrics.",
    options=(_VERSION_OPT,),
)
def cross_nic_crosses_rails(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    from ncclctl.nccl.system import Params

    got = _rail_ids(ctx, opts)
    if got is None or not any(r != -1 for _, _, r, _ in got[1]):
        return
    s = _resolved(ctx, opts).effective("NCCL_CROSS_NIC")
    value = Params(env={"NCCL_CROSS_NIC": s.value}).get("CROSS_NIC", 2) if s is not None else 2
    if s is not None and value == 1:
        yield _hit(s, "rings may leave on another rail than they enter, although NCCL_IB_HCA gives each port a rail",
                   fix="NCCL_CROSS_NIC=0")
    elif value == 2:
        hca = got[0]
        msg = ("NCCL_CROSS_NIC is 2 (the default): ring channels may alternate rails (search.cc crossNic=2), "
               "although NCCL_IB_HCA gives each port a rail; fine on a fabric whose spines join the rails")
        yield _hit(s if s is not None else hca, msg, fix="on a rail-only fabric set NCCL_CROSS_NIC=0", severity=I)


@rule(
    "NCCL042", "ib-hca-rail-ids-partial", W, "NCCL_IB_HCA gives rail or plane ids to some rail ports only",
    what="An NCCL_IB_HCA (NCCL 2.30.7+) where some of the node's rail ports (each GPU's closest NIC port) carry a "
         "rail id and others do not, or some ports with a rail id carry a plane id and others do not.",
    why="NCCL forbids crossing planes only between two NICs that both have a plane (graph/search.cc), so a port "
        "without one can pair with either plane; a rail port without a rail id is never fused by "
        "NCCL_NET_MERGE_POLICY=RAIL and is compared by NIC instead of rail. A partial list is almost always a typo "
        "or a list edited by hand.",
    detect="The rail and plane fields of the entry that selects each active port (first match, as matchIfList), "
           "over the rail ports of ncclctl rails.",
    fix="Give every rail port both ids, or none (ncclctl rails --fabric prints the full list).",
    options=(_VERSION_OPT,),
)
def ib_hca_rail_ids_partial(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    got = _rail_ids(ctx, opts)
    plan = ctx.rails
    if got is None or plan is None:
        return
    s, ports = got
    rail_ports = {(r.nic, r.port) for r in plan.rails}
    on_rails = [(f"{n}:{p}", rail, plane) for n, p, rail, plane in ports if (n, p) in rail_ports]
    railed = [x for x in on_rails if x[1] != -1]
    for what, pool, idx in (("rail", on_rails, 1), ("plane", railed, 2)):
        with_id = [x[0] for x in pool if x[idx] != -1]
        without = [x[0] for x in pool if x[idx] == -1]
        if with_id and without:
            yield _hit(s, f"{', '.join(without)} {'has' if len(without) == 1 else 'have'} no {what} id while "
                       f"{', '.join(with_id)} {'has' if len(with_id) == 1 else 'have'} one")


_FABRIC_IDS: dict[str, dict] = {}


def _fabric_ids(path: str) -> dict:
    """Host -> {"mlx5_0:1": RailId} from a fabric file (ncclctl/fabric layout), once per path and process."""
    if path not in _FABRIC_IDS:
        from ncclctl.fabric.layout import analyze
        from ncclctl.fabric.sources import load_input
        from ncclctl.plan.railids import fabric_host_ids

        _FABRIC_IDS[path] = fabric_host_ids(analyze(load_input(path, None)))
    return _FABRIC_IDS[path]


@rule(
    "NCCL043", "ib-hca-rail-ids-vs-fabric", E, "NCCL_IB_HCA labels a port with another rail or plane than its leaf",
    what="A port whose rail/plane id in NCCL_IB_HCA (NCCL 2.30.7+) is not the rail/plane of the leaf it lands on in "
         "the fabric (rule option 'fabric': an ibnetdiscover / iblinkinfo output): a NIC labelled rail 3 that is "
         "cabled to the rail-5 leaf.",
    why="NCCL keeps a ring in the rail its ids say (crossNic=0 compares rail ids) and never crosses planes: with a "
        "wrong label the ring that NCCL believes stays on rail 3 leaves on the rail-5 leaf, crossing the spine to "
        "every other node's rail-3 port; a wrong plane makes NCCL refuse paths that exist, or use ones that do not.",
    detect="The leaf each port of this host reaches in the fabric (ncclctl/fabric layout: the leaf's rail and "
           "plane, the same for every host), compared with the rail/plane fields of the NCCL_IB_HCA entry that "
           "selects the port. Runs only with the 'fabric' option; 'host' names the node in the fabric (default: "
           "its hostname).",
    fix="Regenerate NCCL_IB_HCA from the fabric (ncclctl conf generate --fabric FILE), or recable the port to the "
        "leaf of the rail it is labelled with.",
    options=(_VERSION_OPT, Option("fabric", str, "", "ibnetdiscover / iblinkinfo output to check the ids against."),
             Option("host", str, "", "This node's name in the fabric (default: its hostname).")),
)
def ib_hca_rail_ids_vs_fabric(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    if not opts.get("fabric"):
        return
    got = _rail_ids(ctx, opts)
    if got is None:
        return
    s, ports = got
    from ncclctl.errors import InputError

    host = opts.get("host") or ctx.node.hostname
    try:
        fabric = _fabric_ids(opts["fabric"])
    except InputError as e:
        yield Hit(opts["fabric"], f"the fabric given in NCCL043's 'fabric' option cannot be read: {e.message}",
                  fix=getattr(e, "fix", None) or "give an ibnetdiscover / iblinkinfo output file")
        return
    ids = fabric.get(host) or fabric.get(host.split(".")[0])
    if ids is None:
        return
    for n, p, rail, plane in ports:
        fid = ids.get(f"{n}:{p}")
        if fid is None or rail == -1:
            continue
        wrong = []
        if rail != fid.rail:
            wrong.append(f"rail {rail} but lands on the rail-{fid.rail} leaf")
        if plane != -1 and fid.plane is not None and plane != fid.plane:
            wrong.append(f"plane {plane} but its leaf is on plane {fid.plane}")
        if wrong:
            want = f"{n}:{p}:{fid.rail}" + ("" if fid.plane is None else f":{fid.plane}")
            yield _hit(s, f"{n}:{p} is labelled {' and '.join(wrong)} ({opts['fabric']}, host {host})",
                       fix=f"write {want} (ncclctl conf generate --fabric {opts['fabric']})")
