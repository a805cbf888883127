"""NCCL settings rules, names and values: variables NCCL does not read, integers as strtoll reads them, path
levels, algorithm and protocol lists, enumerations, values masked or clamped, template text left unrendered
(NCCL006, NCCL007, NCCL016-NCCL018, NCCL024, NCCL025).

What the NCCL settings rules share is in :mod:`ncclctl.lint.ncclsettings`.
"""

from __future__ import annotations

from typing import Iterable

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.lint.ncclsettings import VERSION_OPT, hit, is_int_var, line_fix, looks_nccl, release, resolved
from ncclctl.registry import Hit, Option, rule
from ncclctl.nccl.params import c_int, strtol
from ncclctl.nccl.settings import Resolved
from ncclctl.nccl.values import (DEBUG_LEVELS, DEBUG_LISTS, DEBUG_REGISTRY, PATH_LEVELS, VALUE_RANGES, algo_proto_names,
                                 check_algo_proto, debug_level_names, debug_list_default, debug_list_names,
                                 debug_list_unknown, disables_p2p, level_names, out_of_range, read_level, template_text)
from ncclctl.nccl.variables import (REPLACED_BY, default_at, helper_variable, known_variable, plugin_variable,
                                    suggest_variable)
from ncclctl.nccl.version import RELEASES, Version

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

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
        VERSION_OPT,
    ),
)
def unknown_variable(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = release(opts)
    res = resolved(ctx)
    seen: set[tuple[str, str]] = set()
    for s in res.settings:
        if (s.source, s.name) in seen or not looks_nccl(s.name) or s.name != s.name.strip():
            continue
        seen.add((s.source, s.name))
        if " " in s.name or "\t" in s.name:
            continue  # NCCL001
        info = known_variable(s.name, opts["known_variables"])
        if info is True:
            continue
        if info is None:
            if helper_variable(s.name):
                yield hit(s, "not an NCCL setting: a build or installation helper that locates NCCL (like "
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
            yield hit(s, msg, fix=f"rename it to {best}" if best else None)
        elif info.until is not None and info.until < version:
            repl = REPLACED_BY.get(s.name)
            yield hit(s, f"{s.name} was last read by NCCL {info.until}; NCCL {version} "
                      "ignores it" + (f" (use {repl})" if repl else ""),
                      fix=f"replace it with {repl}" if repl else "remove the setting")
        elif info.since > version and plugin_variable(s.name) is None:  # a plugin reads it in older releases
            yield hit(s, f"{s.name} is read from NCCL {info.since} on; NCCL {version} "
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
    options=(VERSION_OPT,),
)
def integer_value(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = release(opts)
    res = resolved(ctx)
    for name in res.names():
        if not is_int_var(name, version):
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
                yield hit(s, "out of the 64-bit range: NCCL logs 'Invalid value' and uses the default" + (
                    f" ({default})" if default is not None else ""))
            elif not r.digits:
                yield hit(s, "not a number: strtoll finds no digits and NCCL uses 0",
                          fix=f"write a number, e.g. {s.name}=<decimal value>")
            elif r.base == 8 and len(digits) > 1 and digits[:1] == "0" and not (digits.isdigit() and r.value == int(digits)):
                end = r.rest(v)
                if end[:1] in "89" and end:
                    yield hit(s, f"a leading 0 means octal and '{end[0]}' is not an octal digit: NCCL reads {r.value}",
                              fix=line_fix(s, digits.lstrip("0") or "0"))
                elif digits.isdigit():
                    yield hit(s, f"a leading 0 means octal: NCCL reads {r.value}, not {int(digits, 10)}",
                              fix=line_fix(s, str(int(digits, 10))))
                else:
                    rest = r.rest(v)
                    if rest.strip() and not rest.lstrip().startswith("#"):
                        yield hit(s, f"NCCL reads {r.value} and ignores {rest!r}", fix=line_fix(s, str(r.value)))
            else:
                rest = r.rest(v)
                if rest.strip() and not rest.lstrip().startswith("#"):  # '# ...' is NCCL004
                    yield hit(s, f"NCCL reads {r.value} and ignores {rest!r}", fix=line_fix(s, str(r.value)))


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
    options=(VERSION_OPT,),
)
def path_level_invalid(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = release(opts)
    res = resolved(ctx, opts)
    for name in ("NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL"):
        for s in res.candidates(name):
            r = read_level(s.value, version)
            if r.how == "name":
                continue
            if r.how == "legacy" and r.level is None:
                yield hit(s, f"read as the legacy number {r.legacy_value} (an int), which is outside NCCL's table of "
                          "levels: NCCL reads past the array (undefined behaviour)",
                          fix=f"use one of {' '.join(level_names(version))}")
                continue
            if r.how == "legacy":
                if s.value != str(r.legacy_value):
                    yield hit(s, f"read as the legacy number {r.legacy_value}, which means {r.level}",
                              fix=line_fix(s, r.level or "SYS"))
                continue
            reason = _level_reason(s.value, version)
            guess = s.value.strip().strip("\"'").upper()
            guess = "PHB" if guess == "NODE" else guess
            yield hit(s, f"ignored silently: {reason}; NCCL keeps {_LEVEL_DEFAULT[name]}",
                      fix=line_fix(s, guess) if guess in level_names(version) else
                      f"use one of {' '.join(level_names(version))}")
    disable = res.candidates("NCCL_P2P_DISABLE")
    for s in disable:
        if disables_p2p(s.value) or s.value.strip() in ("0", ""):
            continue
        yield hit(s, f"only a value that reads as 1 disables P2P; strtol reads {c_int(s.value)}, so it is ignored",
                  fix=line_fix(s, "1") + ", or remove it")
    eff_disable = res.effective("NCCL_P2P_DISABLE")
    eff_level = res.effective("NCCL_P2P_LEVEL")
    if eff_disable and eff_level and disables_p2p(eff_disable.value):
        yield hit(eff_level, f"ignored because NCCL_P2P_DISABLE=1 ({eff_disable.where}) takes precedence",
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
    options=(VERSION_OPT,),
)
def algo_proto_invalid(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = release(opts)
    res = resolved(ctx, opts)
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
            yield hit(s, f"{'; '.join(parts)}: {effect}", severity=None if fatal else W,
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
    options=(VERSION_OPT,),
)
def enum_value_invalid(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    version = release(opts)
    res = resolved(ctx, opts)
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
            fix = line_fix(s, guess) if _enum_ok(kind, values, guess, version) else f"use one of {', '.join(values)}"
            newer = [(since_, n) for n, since_ in DEBUG_LEVELS if n == guess and since_ > version]
            later = f" ({guess} is a level from NCCL {newer[0][0]} on)" if name == "NCCL_DEBUG" and newer else ""
            yield hit(s, f"not one of {', '.join(values)} ({how}): NCCL {fallback}{later}",
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
                yield hit(s, msg, evidence=evidence, fix=line_fix(s, head + ",".join(e.strip() for e in kept))
                          if kept else f"use names from: {', '.join(accepted)}")
            else:
                msg = f"{shown} is not a name NCCL {version} knows: it skips it silently"
                yield hit(s, msg, evidence=evidence, severity=I, fix=line_fix(s, head + ",".join(kept))
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
    options=(VERSION_OPT,),
)
def value_masked_or_clamped(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    res = resolved(ctx, opts)
    for name, rng in VALUE_RANGES.items():
        for s in res.candidates(name):
            r = strtol(s.value)
            if not r.digits or r.overflow:
                continue  # NCCL007's
            beyond = out_of_range(name, r.value)
            if beyond is None:
                continue
            used = beyond[1]
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
            yield hit(s, msg, fix=line_fix(s, str(min(max(r.value, rng.lo), rng.hi) if not rng.multiple else
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
    options=(VERSION_OPT,),
)
def unrendered_template(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    res = resolved(ctx, opts)
    for name in res.names():
        if not looks_nccl(name):
            continue
        for s in res.candidates(name):
            piece = template_text(s.value)
            if piece is None:
                continue
            kind = ("Jinja/Ansible template text" if piece.startswith("{") else
                    "a shell variable that was not expanded" if piece.startswith("$") else "autoconf/CMake template text")
            yield hit(s, f"{piece!r} is {kind}: NCCL reads it literally",
                      fix="render the template (or expand the variable) and write the value itself")
