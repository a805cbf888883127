"""`ncclctl lint`, `rules`, `explain`, `fleet lint` (registered on the main app when ncclctl.cli is imported).

Start-up stays cheap: only typer and the shared CLI helpers are imported here; the registry, the rules, yaml
and the probe are imported inside the commands.
"""

from __future__ import annotations

import enum
import os
import sys
from typing import List, Optional

import typer

from ncclctl.cli import (CONFIG_HELP, ROOT_HELP, SHOW_INFO_OPTION, FailOn, SnapshotFormat, _emit_report, _load_config,
                         _load_node, _out, _rule_or_usage, _select_rules, app)
from ncclctl.errors import ExitCode


class RulesFormat(str, enum.Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


class LintFormat(str, enum.Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    junit = "junit"


class FleetFormat(str, enum.Enum):
    text = "text"
    json = "json"
    junit = "junit"


class Scope(str, enum.Enum):
    node = "node"
    fleet = "fleet"
    file = "file"
    fabric = "fabric"
    log = "log"


@app.command("rules")
def rules_cmd(
    fmt: RulesFormat = typer.Option(RulesFormat.text, "--format", "-f", help="Output format (markdown: the README rule index)."),
    scope: Optional[Scope] = typer.Option(None, "--scope", help="Only rules of this scope: node (lint), fleet (fleet lint), file (topo/rings validate), fabric (fabric load/rails), log."),
    family: Optional[str] = typer.Option(None, "--family", help="Only rules of this family (pcie, infiniband, nccl, topology, fabric, ...).", metavar="NAME"),
) -> None:
    """List every rule (lint, fleet, topology/graph file, fabric): id, slug, family, severity, when it runs, title."""
    from ncclctl.registry import FAMILY_TABLE, rules_of
    from ncclctl.registry import docs

    if family is not None and family not in {f.name for f in FAMILY_TABLE}:
        from ncclctl.errors import UsageError

        raise UsageError(f"no such rule family: {family!r}",
                         fix="families: " + ", ".join(f.name for f in FAMILY_TABLE))
    rules = rules_of(scope=scope.value if scope else None, family=family)
    if fmt is RulesFormat.json:
        from ncclctl.render import dumps

        _out(dumps(docs.rules_json(rules)))
    elif fmt is RulesFormat.markdown:
        _out(docs.rules_markdown(rules))
    else:
        _out(docs.rules_text(rules))


@app.command("explain")
def explain_cmd(
    rule_id: str = typer.Argument(..., metavar="ID", help="A rule id (GPU004, NTS025, FAB002) or slug (persistence-mode-off)."),
    fmt: SnapshotFormat = typer.Option(SnapshotFormat.text, "--format", "-f", help="Output format."),
) -> None:
    """Print one rule's documentation: what it finds, why it hurts NCCL, how it is detected, how to fix it."""
    from ncclctl.registry import docs

    rule = _rule_or_usage(rule_id)
    if fmt is SnapshotFormat.json:
        from ncclctl import JSON_SCHEMA_VERSION
        from ncclctl.render import dumps

        _out(dumps({"schema_version": JSON_SCHEMA_VERSION, **docs.rule_doc(rule)}))
    else:
        _out(docs.explain_text(rule))


@app.command("lint")
def lint_cmd(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help="Read the node from a JSON model (probe --format json).", metavar="JSON"),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    expect: Optional[str] = typer.Option(None, "--expect", help="Compare with this expected-state profile (EXP rules).", metavar="FILE"),
    write_expect: Optional[str] = typer.Option(None, "--write-expect", help="Derive an expected-state profile from this node and write it (no lint).", metavar="FILE"),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding reaches this severity."),
    fmt: Optional[LintFormat] = typer.Option(None, "--format", "-f", help="Output format: text (default), json, sarif, junit."),
    nagios: bool = typer.Option(False, "--nagios", help="Nagios/NHC plugin output: one status line with perfdata; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN."),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help="Run only this rule (id or slug; repeat or comma-separate).", metavar="ID"),
    show_info: bool = SHOW_INFO_OPTION,
) -> None:
    """Lint one node (this host, or --root/--model) with every enabled rule.

    Exit codes: 0 clean, 1 findings at or above --fail-on, 3 invalid input, 4 source unavailable
    (with --nagios: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN).
    """
    if not nagios:
        _lint(root, model, config, expect, write_expect, fail_on, fmt, rule, show_info=show_info)
        return
    from ncclctl.errors import NcclctlError
    from ncclctl.report.nagios import nagios_unknown

    try:
        if fmt is not None or write_expect is not None:
            from ncclctl.errors import UsageError

            raise UsageError("--nagios prints its own status line: drop --format/--write-expect")
        _lint(root, model, config, expect, None, fail_on, None, rule, nagios=True)
    except NcclctlError as exc:
        _out(nagios_unknown(str(exc)))
        raise typer.Exit(3)
    except typer.Exit:
        raise
    except Exception as exc:  # noqa: BLE001 - a monitoring plugin must answer UNKNOWN, not crash
        if os.environ.get("NCCLCTL_DEBUG"):
            raise
        _out(nagios_unknown(f"internal error: {type(exc).__name__}: {exc}"))
        raise typer.Exit(3)


def _lint(root, model, config, expect, write_expect, fail_on, fmt, rule, *, nagios: bool = False,
          show_info: bool = False) -> None:
    from ncclctl import report
    from ncclctl.errors import UsageError
    from ncclctl.findings import Severity
    from ncclctl.lint.context import Ctx
    from ncclctl.lint.engine import run, selected

    if write_expect is not None and expect is not None:
        raise UsageError("give --expect or --write-expect, not both")
    if write_expect is not None:
        _write_expect(_load_node(root, model), write_expect, fmt)
        return
    only = _select_rules(rule, ("node",), "lint")
    cfg_path, cfg = _load_config(config)
    profile = None
    if expect is not None:
        from ncclctl.lint.expect import load_profile

        profile = load_profile(expect)
    node = _load_node(root, model)
    source = root or model
    ctx = Ctx(node=node, expect=profile, source=source, offline=source is not None)
    findings = run(ctx, cfg, only=only)
    ran = selected(cfg, only=only, has_expect=profile is not None, host=node.hostname)
    rep = report.Report(findings=tuple(findings), subject=node.hostname, fail_on=Severity(fail_on.value),
                        rules_run=tuple(r.id for r in ran), host=node.hostname, source=source, name="ncclctl lint",
                        fields=(("host", node.hostname), ("source", source), ("config", cfg_path),
                                ("extends", cfg.extends), ("expect", expect)))
    if nagios:
        from ncclctl.report.nagios import nagios as nagios_answer

        text, code = nagios_answer(rep)
        _out(text)
        raise typer.Exit(code)
    _emit_report(rep, (fmt or LintFormat.text).value, show_info)


def _write_expect(node, path: str, fmt) -> None:
    from ncclctl.fileio import write_atomic
    from ncclctl.lint.expect import derive, dump

    data = dump(derive(node))
    changed = write_atomic(path, data)
    msg = (f"wrote the expected-state profile of {node.hostname} to {path}" if changed
           else f"{path} is already the expected-state profile of {node.hostname} (unchanged)")
    if fmt is LintFormat.json:
        from ncclctl import JSON_SCHEMA_VERSION
        from ncclctl.render import dumps

        _out(dumps({"schema_version": JSON_SCHEMA_VERSION, "changed": changed, "path": path, "host": node.hostname,
                    "msg": msg}))
    elif fmt is not None and fmt is not LintFormat.text:
        from ncclctl.errors import UsageError

        raise UsageError(f"--write-expect prints text or json, not {fmt.value}")
    else:
        print(f"ncclctl: {msg}", file=sys.stderr)


fleet_app = typer.Typer(help="Fleet-wide checks over many snapshots or node models.", rich_markup_mode=None,
                        no_args_is_help=True)
app.add_typer(fleet_app, name="fleet")


def _progress():
    """A one-line progress bar on stderr when stderr is a terminal (else None: logs stay clean)."""
    if not sys.stderr.isatty():
        return None
    import time

    state = {"last": 0.0}

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if done != total and now - state["last"] < 0.1:
            return
        state["last"] = now
        width = 30
        fill = width * done // max(total, 1)
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total} hosts")
        if done == total:
            sys.stderr.write("\r" + " " * (width + 30) + "\r")
        sys.stderr.flush()

    return show


@fleet_app.command("lint")
def fleet_lint(
    snapshots: Optional[List[str]] = typer.Argument(None, metavar="SNAPSHOT...", help="Snapshot folders, .tar.gz snapshots or node-model JSON files."),
    inventory: Optional[str] = typer.Option(None, "--inventory", "-i", help="Cluster inventory YAML (schemas/inventory.schema.json) naming each host's snapshot or model.", metavar="FILE"),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    expect: Optional[str] = typer.Option(None, "--expect", help="Also compare every host with this expected-state profile.", metavar="FILE"),
    fmt: FleetFormat = typer.Option(FleetFormat.text, "--format", "-f", help="Output format."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding on any host reaches this severity."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, max=1024, help="Worker processes (default: the CPU count)."),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help="Run only this rule (id or slug; repeat or comma-separate).", metavar="ID"),
    host_timeout: float = typer.Option(60.0, "--host-timeout", min=0.1, help="Seconds one host may take to load and lint; a host past it is reported, the rest are linted.", metavar="SECONDS"),
    show_info: bool = SHOW_INFO_OPTION,
) -> None:
    """Lint every node of a fleet and compare them: MTU, firmware, driver, NCCL settings, GPU/NIC counts, rails.

    Exit codes: 0 clean, 1 findings at or above --fail-on on some host, 3 invalid input (including a host
    whose snapshot cannot be read; the others are still linted and reported), 4 a host past --host-timeout
    (and none unreadable).
    """
    from ncclctl import report
    from ncclctl.errors import UsageError
    from ncclctl.findings import Severity
    from ncclctl.lint.fleet import lint_fleet, sources_from_inventory, sources_from_paths

    if bool(snapshots) == (inventory is not None):
        raise UsageError("give snapshots or --inventory (one of the two)",
                         fix="ncclctl fleet lint snaps/*  or  ncclctl fleet lint --inventory cluster.yaml")
    only = _select_rules(rule, ("node", "fleet"), "fleet lint")
    cfg_path, cfg = _load_config(config)
    profile = None
    if expect is not None:
        from ncclctl.lint.expect import load_profile

        profile = load_profile(expect)
    sources = sources_from_inventory(inventory) if inventory is not None else sources_from_paths(snapshots or [])
    result = lint_fleet(sources, cfg, expect=profile, jobs=jobs, only=only, progress=_progress(),
                        host_timeout=host_timeout)
    threshold = Severity(fail_on.value)
    _out(report.render_fleet(result, fmt.value, fail_on=threshold, show_info=show_info,
                             fields=(("config", cfg_path), ("extends", cfg.extends), ("expect", expect))))
    codes = {int(h.error.get("exit_code", ExitCode.INVALID_INPUT)) for h in result.hosts if h.error is not None}
    if codes:
        raise typer.Exit(int(ExitCode.INVALID_INPUT) if int(ExitCode.INVALID_INPUT) in codes else max(codes))
    if report.fails(result.findings(), threshold):
        raise typer.Exit(int(ExitCode.FINDINGS))
