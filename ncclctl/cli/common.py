"""What every command module shares: the app factory, common options, the one ``Format`` type, output helpers.

Command modules import this module and typer only; everything else is imported inside the command functions,
so ``ncclctl lint --help`` costs typer plus one small module. Command functions parse their options, call one
library function, and hand the result to :func:`emit_report` (findings), :func:`emit_result` (a written file)
or :func:`out` (a rendered document). No logic lives in the CLI.
"""

from __future__ import annotations

import enum
import re
import sys
from typing import Any, List, Optional

import typer

from ncclctl import JSON_SCHEMA_VERSION
from ncclctl.errors import ExitCode
from ncclctl.nccl.version import DEFAULT_TEXT as NCCL_DEFAULT

from typer.core import TyperGroup


class Group(TyperGroup):
    """A command group whose listing shows each command's whole first help paragraph (click cuts it at 45
    characters)."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            rows.append((name, cmd.short_help or " ".join((cmd.help or "").split("\n\n")[0].split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def sub_app(help: str) -> typer.Typer:
    """A command group (``ncclctl topo ...``) with the project's settings. It stays a group when it holds one
    command (``conf generate``, ``fleet lint``): typer would otherwise make ``ncclctl conf`` the command itself."""
    app = typer.Typer(help=help, cls=Group, rich_markup_mode=None, no_args_is_help=True, add_completion=False,
                      context_settings={"help_option_names": ["-h", "--help"]})

    @app.callback()
    def _group() -> None:
        pass

    return app


def command_app() -> typer.Typer:
    """The app of a module that holds one top-level command (``ncclctl lint``)."""
    return typer.Typer(rich_markup_mode=None, add_completion=False,
                       context_settings={"help_option_names": ["-h", "--help"]})


class Format(str, enum.Enum):
    """The output formats every command can give: a plain text rendering, or the JSON document."""

    text = "text"
    json = "json"


# Commands with more formats take one of these (typer needs one enum per set of choices); every format of every
# command is defined here, their values are the one vocabulary FORMAT_VALUES (a test checks every --format choice
# of every command against it), and they compare equal to Format members and strings ("json" ==
# ReportFormat.json == Format.json).
class ReportFormat(str, enum.Enum):
    """Findings: lint, topo/rings validate, fabric load/rails."""

    text = "text"
    json = "json"
    sarif = "sarif"
    junit = "junit"


class LintFormat(str, enum.Enum):
    """lint: the report formats, and the engines' own answers (docs/operations.md): ``prom`` (a node_exporter
    textfile), ``slurm`` (a drain reason for HealthCheckProgram and prologs), ``npd`` (a node-problem-detector
    custom plugin)."""

    text = "text"
    json = "json"
    sarif = "sarif"
    junit = "junit"
    prom = "prom"
    slurm = "slurm"
    npd = "npd"


class CheckFormat(str, enum.Enum):
    """log check, perf check: the report formats and ``prom`` (a node_exporter textfile)."""

    text = "text"
    json = "json"
    sarif = "sarif"
    junit = "junit"
    prom = "prom"


class ProbeFormat(str, enum.Enum):
    text = "text"
    json = "json"
    tree = "tree"
    matrix = "matrix"


class ShowFormat(str, enum.Enum):
    tree = "tree"
    matrix = "matrix"
    json = "json"


class SynthFormat(str, enum.Enum):
    ibnetdiscover = "ibnetdiscover"
    ibnetdiscover_p = "ibnetdiscover-p"
    iblinkinfo = "iblinkinfo"
    iblinkinfo_line = "iblinkinfo-line"
    json = "json"


class OrderFormat(str, enum.Enum):
    text = "text"
    hostfile = "hostfile"
    slurm = "slurm"
    slurm_block = "slurm-block"
    json = "json"


class BlocksFormat(str, enum.Enum):
    """fleet blocks: Slurm topology.conf (block), topology.yaml (25.05+), or a job's hostfile across domains."""

    slurm_block = "slurm-block"
    slurm_yaml = "slurm-yaml"
    hostfile = "hostfile"


class FleetFormat(str, enum.Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    junit = "junit"
    prom = "prom"


class GdrMode(str, enum.Enum):
    """``--gdr`` of ``topo predict`` and ``rings validate``: GPUDirect RDMA for NCCL's model of the node."""

    auto = "auto"
    on = "on"
    off = "off"


class RulesFormat(str, enum.Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


FORMAT_VALUES = frozenset({"text", "json", "sarif", "junit", "prom", "npd", "markdown", "tree", "matrix", "hostfile", "slurm",
                           "slurm-block", "slurm-yaml", "ibnetdiscover", "ibnetdiscover-p", "iblinkinfo", "iblinkinfo-line"})


def format_option(default: Any, help: str = "Output format.") -> Any:
    """``--format/-f`` (the choices come from the parameter's enum)."""
    return typer.Option(default, "--format", "-f", help=help)


class FailOn(str, enum.Enum):
    error = "error"
    warning = "warning"
    info = "info"


ROOT_HELP = "Probe a captured host tree (a snapshot folder or .tar.gz) instead of this host."
MODEL_HELP = "Read the node from a JSON model (probe --format json)."
FABRIC_IDS_HELP = ("Rail/plane ids from this fabric (ibnetdiscover / iblinkinfo output): the leaf a port lands on "
                   "decides its rail (NCCL 2.30.7+ reads them).")
RAIL_MAP_HELP = "Rail/plane ids from a rail map (YAML: switches:, subnets:, hosts:), when the fabric does not give them."
HOST_IDS_HELP = "This node's name in the fabric or rail map (default: its hostname)."

# Options of every command that writes a file with -o (topo generate, rings graph, conf generate, facts, fabric
# order); the writing itself is emit_result (atomic, idempotent, Ansible-style record).
# FOLLOW_OPTION also on snapshot (-o DIR / --tar FILE) and fabric synth -o.
CHECK_OPTION = typer.Option(False, "--check", help="With -o: report whether the file would change; write nothing.")
EXIT_CODE_OPTION = typer.Option(False, "--exit-code", help="With --check: exit 1 when the file would change "
                                "(drift), 0 when it is up to date; for cron and CI.")
DIFF_OPTION = typer.Option(False, "--diff", help="With -o: print a unified diff of the change.")
BACKUP_OPTION = typer.Option(False, "--backup", help="With -o: keep the previous file as FILE.YYYYmmdd-HHMMSS~.")
FOLLOW_OPTION = typer.Option(False, "--follow", help="With -o: if the path is a symlink, replace the file it points to "
                             "(default: replace the link itself). Refused for another user's link in a sticky "
                             "world-writable folder such as /tmp.")

# Options of every command that reports findings (lint, fleet lint, topo/rings validate, fabric load/rails).
SHOW_INFO_OPTION = typer.Option(False, "--show-info", help="Text output: also print info findings (hidden by default; "
                                "the summary line counts them). JSON, SARIF and JUnit always carry them.")
QUIET_OPTION = typer.Option(False, "--quiet", "-q", help="Text output: the summary line only (the exit code is "
                            "unchanged). Machine formats are not affected.")


class ColorMode(str, enum.Enum):
    auto = "auto"
    always = "always"
    never = "never"


COLOR_OPTION = typer.Option(ColorMode.auto, "--color", help="Colour the text report: auto (only on a terminal, and "
                            "not when NO_COLOR is set or TERM=dumb), always, never.", metavar="WHEN")
CONFIG_HELP = "Rule configuration: severities, off, per-host ignores (default: ./.ncclctl.yaml if present)."
RULE_HELP = "Report only this rule (id or slug; repeat or comma-separate)."
FAIL_ON_HELP = "Exit 1 when a finding reaches this severity."

# The command that runs the rules of each scope (for "wrong command" hints).
SCOPE_COMMAND = {"node": "ncclctl lint", "fleet": "ncclctl fleet lint", "file": "ncclctl topo validate",
                 "fabric": "ncclctl fabric rails", "log": "ncclctl log check", "perf": "ncclctl perf check"}


#: Control characters that must not reach a terminal from input: C0 but tab and newline (ESC starts CSI/OSC
#: sequences, BEL ends OSC, CR overwrites a line), DEL, and C1 (U+009B is a one-character CSI, U+009D an OSC).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` with every control character but tab and newline written as the text ``\\xNN`` (Python's own
    escape), so that input (an HCA description, a log's host name, a version string) cannot send the terminal an
    escape sequence: ``\\x1b]52;c;...\\x07`` (OSC 52 writes the operator's clipboard), ``\\x1b[2J`` (clears the
    screen). The one place every output to the terminal goes through (:func:`out`, :func:`note`, error lines);
    JSON documents carry them as ``\\u001b`` escapes (:func:`ncclctl.render.dumps`), so it leaves them as they are."""
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def out(text: str, *, color: bool = False) -> None:
    """Write a command's output to stdout: control characters from input escaped (:func:`terminal_safe`),
    undecodable bytes as ``\\xNN`` under a strict UTF-8 stdout. ``color``: a text report, coloured after the
    escaping (:func:`ncclctl.report.color.colorize`), so that only ncclctl's own escape sequences reach the terminal."""
    text = terminal_safe(text)
    if color:
        from ncclctl.report.color import colorize

        text = colorize(text)
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:  # a surrogate-escaped name or path under a strict (UTF-8 locale) stdout
        from ncclctl.inputs import printable

        sys.stdout.write(printable(text))


def note(text: str) -> None:
    """A one-line message for the person at the terminal (stderr), control characters escaped."""
    print(f"ncclctl: {terminal_safe(text)}", file=sys.stderr)


def dumps(doc: Any) -> str:
    from ncclctl.render import dumps as _dumps

    return _dumps(doc)


def csv_list(value: Optional[str]) -> Optional[tuple[str, ...]]:
    """``--nics a,b`` -> ("a", "b"); None when not given."""
    return tuple(n for n in value.split(",") if n) if value else None


def usage(message: str, fix: Optional[str] = None) -> Exception:
    from ncclctl.errors import UsageError

    return UsageError(message, fix=fix)


def load_node(root: Optional[str], model: Optional[str], *, roce_qos: bool = True):
    """The node from --root (fixture or snapshot tar), --model (JSON), or the live host. ``roce_qos=False``: a probe
    without the RoCE QoS/ECN/DCBX/LLDP facts (see :func:`ncclctl.probe.assemble.probe`)."""
    from ncclctl.probe import probe as do_probe

    if root is not None and model is not None:
        raise usage("give --root or --model, not both")
    if model is not None:
        from ncclctl.inventory import load_model

        return load_model(model)
    if root is not None:
        from ncclctl.probe.archive import opened_root

        with opened_root(root) as tree:
            return do_probe(tree, roce_qos=roce_qos)
    return do_probe(None, roce_qos=roce_qos)


def read_xml(path: str) -> bytes:
    """An NCCL topology or graph file through the input door."""
    from ncclctl.inputs import read_bytes

    data = read_bytes(path, "xml")
    assert data is not None
    return data


def rule_or_usage(key: str):
    from ncclctl.registry import get, suggest

    rule = get(key)
    if rule is None:
        close = suggest(key)
        raise usage(f"no such rule: {key!r}", fix=(f"did you mean {close}? " if close else "")
                    + "'ncclctl rules' lists the rule ids and slugs")
    return rule


def select_rules(keys: Optional[List[str]], scopes: tuple[str, ...], command: str) -> Optional[tuple]:
    """``--rule`` values (ids or slugs, repeated or comma-separated) as rule ids; None when not given. A rule of
    another scope is a usage error that names the command running it."""
    if not keys:
        return None
    ids = []
    for item in keys:
        for key in item.split(","):
            if not key.strip():
                continue
            r = rule_or_usage(key.strip())
            if r.scope not in scopes:
                raise usage(f"{r.id} is a {r.scope} rule: {command} does not run it",
                            fix=f"run it with {SCOPE_COMMAND.get(r.scope, 'another command')} "
                                "('ncclctl rules' says where each rule runs)")
            ids.append(r.id)
    return tuple(dict.fromkeys(ids))


def load_config(explicit: Optional[str]):
    """The configuration file (``--config F``, else ./.ncclctl.yaml when present) and its parsed config."""
    from ncclctl.lint.config import discover, load_config as _load

    path = discover(explicit)
    return path, _load(path)


def use_color(mode: Any = None, stream: Any = None) -> bool:
    """Whether text for ``stream`` (stdout) gets colours: ``--color always``/``never`` decide; ``auto`` (the
    default) colours a terminal only, never a pipe or a file, and not when ``NO_COLOR`` is set (no-color.org) or
    ``TERM=dumb``."""
    import os

    value = getattr(mode, "value", mode) or "auto"
    if value in ("always", "never"):
        return value == "always"
    stream = sys.stdout if stream is None else stream
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def emit_report(rep: Any, fmt: Any, show_info: bool, output: Optional[str] = None, *, quiet: bool = False,
                color: Any = None) -> None:
    """Print ``rep`` through the report door (or write it to ``output``, atomically); exit 1 when a finding
    reaches ``--fail-on``.

    With ``output`` and a machine format (json, sarif, junit), the file gets that format and the terminal the
    text report beside it (one run in CI: SARIF for the code-scanning upload, text for the log). ``quiet``: text
    is the summary line only. ``color``: :func:`use_color` (text on stdout only)."""
    from ncclctl import report

    fmt_value = str((fmt or Format.text).value)
    text = report.render(rep, fmt_value, show_info=show_info, quiet=quiet)
    if output is not None:
        write_output(text, output)
        if fmt_value in ("json", "sarif", "junit"):
            out(report.render(rep, "text", show_info=show_info, quiet=quiet), color=use_color(color))
    else:
        out(text, color=fmt_value == "text" and use_color(color))
    if not rep.ok:
        raise typer.Exit(int(ExitCode.FINDINGS))


def emit_result(data: bytes, output: Optional[str], *, check: bool = False, diff: bool = False, backup: bool = False,
                follow: bool = False, exit_code: bool = False, json_record: bool = False,
                extra: Optional[dict] = None, content_key: str = "content") -> None:
    """Write ``data`` to ``output`` (or print it) and report like an Ansible module.

    Without ``-o``: the content goes to stdout (or into ``content_key`` of the JSON record); ``--check``,
    ``--diff``, ``--backup``, ``--follow`` and ``--exit-code`` are usage errors. With ``-o``:
    :func:`ncclctl.fileio.emit` writes atomically and only on change (a symlink at ``output`` is replaced, or with
    ``follow`` written through); the JSON record is ``{"schema_version", "changed", "path", "diff", "msg",
    "backup_file", "check_mode", **extra}``; in text mode a ``--diff`` goes to stdout and the one-line message to
    stderr. ``exit_code`` (with ``check``): exit 1 when the file would change.
    """
    extra = dict(extra or {})
    if output is None:
        if check or diff or backup or follow or exit_code:
            flags = ", ".join(f for f, on in (("--check", check), ("--diff", diff), ("--backup", backup),
                                              ("--follow", follow), ("--exit-code", exit_code)) if on)
            verb = "applies" if "," not in flags else "apply"
            raise usage(f"{flags} only {verb} to a file written with -o", fix="add -o FILE")
        if json_record:
            out(dumps({"schema_version": JSON_SCHEMA_VERSION, "changed": False, "path": None, "diff": None,
                       "msg": "printed, not written (no -o)", "backup_file": None, "check_mode": False, **extra,
                       content_key: data.decode("utf-8", "replace")}))
        else:
            out(data.decode("utf-8", "replace"))
        return
    if exit_code and not check:
        raise usage("--exit-code reports drift found by --check", fix="add --check")
    from ncclctl.fileio import emit

    result = emit(output, data, check=check, diff=diff, backup=backup, follow=follow)
    if json_record:
        out(dumps({"schema_version": JSON_SCHEMA_VERSION, **result.record(), **extra, content_key: None}))
    else:
        if diff and result.unified:
            out(result.unified)
        note(result.msg)
    if exit_code and result.changed:
        raise typer.Exit(int(ExitCode.FINDINGS))


#: The formats that answer an engine (Prometheus, Slurm, node-problem-detector) rather than a person.
ENGINE_FORMATS = ("prom", "slurm", "npd")

OUTPUT_OPTION = typer.Option(None, "--output", "-o", help="Write the output to this file instead of stdout, atomically "
                             "(temp file + rename in its folder): with --format prom, a file in node_exporter's "
                             "textfile directory (DIR/ncclctl.prom).", metavar="FILE")


def run_time() -> float:
    """Now, or ``SOURCE_DATE_EPOCH`` when set (reproducible output, tests)."""
    import os
    import time

    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    return float(epoch) if epoch.isdigit() else time.time()


def write_output(text: str, output: str) -> None:
    """``text`` into ``output``, atomically (:func:`ncclctl.fileio.write_atomic`), readable by all (node_exporter
    runs as another user)."""
    from ncclctl.fileio import write_atomic

    write_atomic(output, text.encode("utf-8"), mode=0o644)


def engine_answer(make_report: Any, fmt: str, *, command: str, output: Optional[str] = None, drain: bool = False,
                  node: Optional[str] = None, facts: Any = None) -> None:
    """Run ``make_report()`` and answer an engine in ``fmt`` (one of :data:`ENGINE_FORMATS`); always exits.

    * ``prom``: the node_exporter textfile (:mod:`ncclctl.report.prom`) to ``output`` or stdout; when the run fails
      the file is still written, with ``ncclctl_up 0``, and the error's own exit code follows. Exit 0 clean, 1 a
      finding at ``--fail-on``. ``facts``: called after the report, gives (host name, fleet facts as JSON) for the
      textfile's fact families (``lint``).
    * ``slurm``: one line, the drain reason (:func:`ncclctl.report.oneline.slurm_answer`); exit 0 fit, 1 drain,
      2 unknown (ncclctl could not look: no drain). ``drain``: also ``scontrol update ... state=drain``.
    * ``npd``: node-problem-detector's custom plugin contract: one line of at most 80 characters; exit 0 OK,
      1 problem, 2 unknown.
    """
    import os

    from ncclctl.errors import NcclctlError

    try:
        rep = make_report()
    except typer.Exit:
        raise
    except Exception as exc:  # noqa: BLE001 - an engine gets its "unknown", not a traceback
        if fmt == "prom":
            from ncclctl.report.prom import textfile

            text = textfile(command, now=run_time(), up=False)
            if output is not None:
                write_output(text, output)
            else:
                out(text)
            raise
        if os.environ.get("NCCLCTL_DEBUG") and not isinstance(exc, NcclctlError):
            raise
        from ncclctl.report.oneline import NPD_MAX, SLURM_REASON_MAX, unknown_line

        message = str(exc) if isinstance(exc, NcclctlError) else f"internal error: {type(exc).__name__}: {exc}"
        note(message)
        out(unknown_line(message, NPD_MAX if fmt == "npd" else SLURM_REASON_MAX))
        raise typer.Exit(2)
    if fmt == "prom":
        from ncclctl.report.prom import textfile

        text = textfile(command, now=run_time(), findings=rep.findings, ok=rep.ok,
                        rules_run=len(rep.rules_run) if rep.rules_run is not None else None,
                        facts=facts() if facts is not None else None)
        if output is not None:
            write_output(text, output)
        else:
            out(text)
        raise typer.Exit(0 if rep.ok else int(ExitCode.FINDINGS))
    from ncclctl.report import oneline

    line, code = (oneline.npd_answer if fmt == "npd" else oneline.slurm_answer)(rep)
    if output is not None:
        write_output(line, output)
    else:
        out(line)
    if code and drain:
        from ncclctl.ops.slurm import drain as do_drain, node_name

        try:
            do_drain(node_name(node), line.strip())
        except NcclctlError as exc:
            note(str(exc))
    raise typer.Exit(code)


def validate_file(file: str, *, root: Optional[str], live: bool, nccl_version: str, fmt: ReportFormat,
                  fail_on: FailOn, xsd: bool, config: Optional[str], rule: Optional[List[str]], show_info: bool,
                  command: str, meaning=None, model: Optional[str] = None, rails=None, quiet: bool = False,
                  color: Any = None) -> None:
    """The body of ``topo validate`` and ``rings validate``."""
    from ncclctl.nccl.version import parse_option
    from ncclctl.topo.filecheck import validate_report

    if root is not None and live:
        raise usage("give --root or --live, not both")
    if model is not None and (root is not None or live):
        raise usage("give one of --root, --model and --live")
    if rails is not None and root is None and model is None and not live:
        raise usage("--fabric/--rail-map check the file's rail ids of a host: give --root DIR, --model JSON or --live")
    only = select_rules(rule, ("file",), command)
    cfg_path, cfg = load_config(config)
    rep = validate_report(read_xml(file), file, nccl_version=parse_option(nccl_version), xsd=xsd,
                          load_node=(lambda: load_node(root, model)) if (root is not None or model is not None
                                                                          or live) else None,
                          config=cfg, config_path=cfg_path, only=only, fail_on=fail_on.value, command=command,
                          meaning=meaning, rails=rails)
    emit_report(rep, fmt, show_info, quiet=quiet, color=color)


__all__ = [
    "BACKUP_OPTION", "CHECK_OPTION", "CONFIG_HELP", "DIFF_OPTION", "EXIT_CODE_OPTION", "FAIL_ON_HELP", "FOLLOW_OPTION",
    "BlocksFormat", "CheckFormat", "ENGINE_FORMATS", "FORMAT_VALUES", "FailOn", "LintFormat", "OUTPUT_OPTION", "engine_answer", "run_time", "write_output", "Format", "Group", "FleetFormat", "OrderFormat", "ProbeFormat", "ReportFormat", "RulesFormat", "ShowFormat", "SynthFormat", "JSON_SCHEMA_VERSION", "MODEL_HELP", "NCCL_DEFAULT", "ROOT_HELP", "RULE_HELP",
    "SHOW_INFO_OPTION", "QUIET_OPTION", "COLOR_OPTION", "ColorMode", "use_color", "command_app", "csv_list", "dumps", "emit_report", "emit_result",
    "format_option", "load_config", "FABRIC_IDS_HELP", "RAIL_MAP_HELP", "HOST_IDS_HELP", "load_node", "note", "out", "read_xml", "rule_or_usage", "select_rules",
    "sub_app", "terminal_safe", "usage", "validate_file",
]
