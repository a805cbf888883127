"""What the NCCL settings rules share: the node's settings as the judged release reads them, the hit a finding
about one setting gives, the fix that rewrites it.

The NCCL settings rules (``rules_nccl_conf``: conf-file syntax and precedence; ``rules_nccl_values``: names and
values; ``rules_nccl_devices``: NCCL_IB_HCA and NCCL_SOCKET_IFNAME against the node's devices;
``rules_nccl_files``: the topology and graph files the settings name; ``rules_nccl_rails``: rail and plane ids)
judge the environment and nccl.conf files with NCCL's own semantics (issue 5 section 3).

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

Not a rule module: the rule modules import it, never each other.
"""

from __future__ import annotations

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.registry import Hit, Option
from ncclctl.nccl.settings import Resolved, Setting
from ncclctl.nccl.variables import KNOWN, kind_at
from ncclctl.nccl.version import DEFAULT_TEXT, RELEASES, Version, parse

VERSION_OPT = Option(
    "nccl_version", str, DEFAULT_TEXT,
    "The oldest NCCL release your jobs use (its behaviour is what is judged).", choices=RELEASES)


def resolved(ctx: Ctx, opts: dict | None = None) -> Resolved:
    """The node's settings as the release of the rule's ``nccl_version`` option reads them."""
    return ctx.nccl_for(release(opts)) if opts else ctx.nccl


def release(opts: dict) -> Version:
    """The NCCL release a rule judges: its ``nccl_version`` option."""
    return parse(opts.get("nccl_version", DEFAULT_TEXT))


def show(value: str) -> str:
    """A value as written; quoted (Python style) when white space, quotes or control characters would hide."""
    if value == "" or value != value.strip() or any(c in value for c in "\"'#\r\t") or not value.isprintable():
        return repr(value)
    return value


def hit(s: Setting, message: str, *, fix: str | None = None, evidence: tuple[str, ...] = (),
        severity: Severity | None = None) -> Hit:
    """A finding about one definition of a setting: the conf file and its line, or the environment variable."""
    where = () if s.from_env else (f"line {s.line}: {s.raw!r}",)
    if s.from_env:
        return Hit(s.name, f"{s.name}={show(s.value)} in the environment: {message}", fix=fix,
                   evidence=evidence + (f"environment: {s.name}={s.value!r}",), severity=severity)
    return Hit(s.source, f"{s.name}={show(s.value)}: {message}", fix=fix, evidence=where + evidence,
               severity=severity, line=s.line)


def line_fix(s: Setting, value: str) -> str:
    """The fix that writes ``value`` where ``s`` is defined (its conf line, or the job environment)."""
    if s.from_env:
        import shlex

        return f"set it in the job environment as: export {s.name}={shlex.quote(value)}"
    return f"write line {s.line} of {s.source} as {s.name}={value}"


def is_int_var(name: str, version: Version) -> bool:
    """``name`` is read by ``version`` with strtoll (an NCCL_PARAM)."""
    info = KNOWN.get(name)
    return info is not None and kind_at(name, version) == "int" and info.since <= version and (
        info.until is None or info.until >= version)


def looks_nccl(name: str) -> bool:
    """An NCCL_* name, whatever its case or surrounding white space."""
    return name.strip().upper().startswith("NCCL_")


def rdma_ports(ctx: Ctx) -> list[tuple[str, int, bool]]:
    """Every RDMA port of the node: (device, port, active with an InfiniBand or Ethernet link layer)."""
    return [(n.name, p.num, p.is_active and p.link_layer in ("InfiniBand", "Ethernet"))
            for n in ctx.node.nics for p in n.ports]
