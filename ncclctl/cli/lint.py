"""``ncclctl lint``, ``rules``, ``explain``.

Start-up stays cheap: only typer and the shared CLI helpers are imported here; the registry, the rules, yaml
and the probe are imported inside the commands.
"""

from __future__ import annotations

import enum
import os
from typing import List, Optional

import typer

from ncclctl.cli.common import (COLOR_OPTION, QUIET_OPTION, ColorMode, RulesFormat, CONFIG_HELP, FAIL_ON_HELP, JSON_SCHEMA_VERSION, MODEL_HELP, ROOT_HELP, SHOW_INFO_OPTION,
                                ENGINE_FORMATS, OUTPUT_OPTION, FailOn, Format, LintFormat, ReportFormat, command_app,
                                dumps, emit_report, engine_answer, format_option, load_config, load_node, note, out,
                                rule_or_usage, select_rules, usage)

lint_app = command_app()
rules_app = command_app()
explain_app = command_app()




class Scope(str, enum.Enum):
    node = "node"
    fleet = "fleet"
    file = "file"
    fabric = "fabric"
    log = "log"
    perf = "perf"


@rules_app.command("rules")
def rules_cmd(
    fmt: RulesFormat = format_option(RulesFormat.text, "Output format (markdown: the README rule index)."),
    scope: Optional[Scope] = typer.Option(None, "--scope", help="Only rules of this scope: node (lint), fleet (fleet lint), file (topo/rings validate), fabric (fabric load/rails), log (log check), perf (perf check)."),
    family: Optional[str] = typer.Option(None, "--family", help="Only rules of this family (pcie, infiniband, nccl, topology, fabric, ...).", metavar="NAME"),
) -> None:
    """List every rule (lint, fleet, topology/graph file, fabric): id, slug, family, severity, when it runs, title."""
    from ncclctl.registry import FAMILY_TABLE, docs, rules_of

    if family is not None and family not in {f.name for f in FAMILY_TABLE}:
        raise usage(f"no such rule family: {family!r}", fix="families: " + ", ".join(f.name for f in FAMILY_TABLE))
    rules = rules_of(scope=scope.value if scope else None, family=family)
    renderers = {RulesFormat.json: lambda r: dumps(docs.rules_json(r)), RulesFormat.markdown: docs.rules_markdown,
                 RulesFormat.text: docs.rules_text}
    out(renderers[fmt](rules))


@explain_app.command("explain")
def explain_cmd(
    rule_id: str = typer.Argument(..., metavar="ID", help="A rule id (GPU004, NTS025, FAB002) or slug (persistence-mode-off)."),
    fmt: Format = format_option(Format.text),
) -> None:
    """Print one rule's documentation: what it finds, why it hurts NCCL, how it is detected, how to fix it."""
    from ncclctl.registry import docs

    rule = rule_or_usage(rule_id)
    if fmt == Format.json:
        out(dumps({"schema_version": JSON_SCHEMA_VERSION, **docs.rule_doc(rule)}))
    else:
        out(docs.explain_text(rule))


@lint_app.command("lint")
def lint_cmd(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help=MODEL_HELP, metavar="JSON"),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    expect: Optional[str] = typer.Option(None, "--expect", help="Compare with this expected-state profile (EXP rules).", metavar="FILE"),
    write_expect: Optional[str] = typer.Option(None, "--write-expect", help="Derive an expected-state profile from this node and write it (no lint).", metavar="FILE"),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help=FAIL_ON_HELP),
    fmt: Optional[LintFormat] = format_option(None, "Output format: text (default), json, sarif, junit; for the engines: prom (node_exporter textfile), slurm (drain reason for HealthCheckProgram/prolog), npd (node-problem-detector custom plugin)."),
    nagios: bool = typer.Option(False, "--nagios", help="Nagios/NHC plugin output: one status line with perfdata; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN."),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help="Run only this rule (id or slug; repeat or comma-separate).", metavar="ID"),
    show_info: bool = SHOW_INFO_OPTION,
    quiet: bool = QUIET_OPTION,
    color: ColorMode = COLOR_OPTION,
    output: Optional[str] = OUTPUT_OPTION,
    drain: bool = typer.Option(False, "--drain", help="With --format slurm: when the node is unfit, also run 'scontrol update nodename=NODE state=drain reason=REASON'."),
    node: Optional[str] = typer.Option(None, "--node", help="With --drain: the Slurm node name (default: $SLURMD_NODENAME, else the short host name).", metavar="NAME"),
) -> None:
    """Lint one node (this host, or --root/--model) with every enabled rule.

    Exit codes: 0 clean, 1 findings at or above --fail-on, 3 invalid input, 4 source unavailable
    (with --nagios: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN; with --format slurm or npd: 0 OK, 1 problem,
    2 unknown).
    """
    fmt_value = fmt.value if fmt is not None else None
    if (drain or node is not None) and fmt_value != "slurm":
        raise usage("--drain and --node go with --format slurm")
    if node is not None and not drain:
        raise usage("--node names the node --drain drains", fix="add --drain")
    if output is not None and (nagios or write_expect is not None):
        raise usage("--output writes a report: drop --nagios/--write-expect, or -o")
    if fmt_value in ENGINE_FORMATS:
        if write_expect is not None:
            raise usage(f"--format {fmt_value} reports findings: drop --write-expect")
        if nagios:
            raise usage("--nagios prints its own status line: drop --format/--write-expect")
        kept: dict = {}
        engine_answer(lambda: _lint(root, model, config, expect, None, fail_on, None, rule, report_only=True,
                                    keep=kept),
                      fmt_value, command="lint", output=output, drain=drain, node=node,
                      facts=(lambda: _textfile_facts(kept["node"])) if fmt_value == "prom" else None)
    if not nagios:
        _lint(root, model, config, expect, write_expect, fail_on, fmt, rule, show_info=show_info, output=output,
              quiet=quiet, color=color)
        return
    from ncclctl.errors import NcclctlError
    from ncclctl.report.nagios import nagios_unknown

    try:
        if fmt is not None or write_expect is not None:
            raise usage("--nagios prints its own status line: drop --format/--write-expect")
        _lint(root, model, config, expect, None, fail_on, None, rule, nagios=True)
    except NcclctlError as exc:
        out(nagios_unknown(str(exc)))
        raise typer.Exit(3)
    except typer.Exit:
        raise
    except Exception as exc:  # noqa: BLE001 - a monitoring plugin must answer UNKNOWN, not crash
        if os.environ.get("NCCLCTL_DEBUG"):
            raise
        out(nagios_unknown(f"internal error: {type(exc).__name__}: {exc}"))
        raise typer.Exit(3)


def _textfile_facts(node) -> tuple:
    """(host name, fleet facts as the facts document publishes them) for ``lint --format prom``'s fact families."""
    from ncclctl.ops.facts import published_fleet_facts

    return node.hostname, published_fleet_facts(node)


def _lint(root, model, config, expect, write_expect, fail_on, fmt, rule, *, nagios: bool = False,
          show_info: bool = False, output: Optional[str] = None, report_only: bool = False, quiet: bool = False,
          color: Optional[ColorMode] = None, keep: Optional[dict] = None):
    from ncclctl.lint.engine import lint_report

    if write_expect is not None and expect is not None:
        raise usage("give --expect or --write-expect, not both")
    if write_expect is not None:
        _write_expect(load_node(root, model), write_expect, fmt)
        return
    only = select_rules(rule, ("node",), "lint")
    cfg_path, cfg = load_config(config)
    profile = None
    if expect is not None:
        from ncclctl.lint.expect import load_profile

        profile = load_profile(expect)
    node = load_node(root, model)
    if keep is not None:
        keep["node"] = node
    rep = lint_report(node, cfg, source=root or model, only=only, profile=profile, fail_on=fail_on.value,
                      config_path=cfg_path, expect_path=expect)
    if report_only:
        return rep
    if nagios:
        from ncclctl.report.nagios import nagios as nagios_answer

        text, code = nagios_answer(rep)
        out(text)
        raise typer.Exit(code)
    emit_report(rep, fmt, show_info, output, quiet=quiet, color=color)
    return None


def _write_expect(node, path: str, fmt) -> None:
    from ncclctl.lint.expect import write_profile

    changed, msg = write_profile(node, path)
    if fmt == ReportFormat.json:
        out(dumps({"schema_version": JSON_SCHEMA_VERSION, "changed": changed, "path": path, "host": node.hostname,
                   "msg": msg}))
    elif fmt is not None and fmt != ReportFormat.text:
        raise usage(f"--write-expect prints text or json, not {fmt.value}")
    else:
        note(msg)
