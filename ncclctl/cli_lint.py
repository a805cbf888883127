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

from ncclctl.cli import ROOT_HELP, FailOn, SnapshotFormat, _load_node, _out, app
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


def _rule_or_usage(key: str):
    from ncclctl.errors import UsageError
    from ncclctl.lint.registry import get, suggest

    rule = get(key)
    if rule is None:
        close = suggest(key)
        raise UsageError(f"no such rule: {key!r}", fix=(f"did you mean {close}? " if close else "")
                         + "'ncclctl rules' lists the rule ids and slugs")
    return rule


@app.command("rules")
def rules_cmd(
    fmt: RulesFormat = typer.Option(RulesFormat.text, "--format", "-f", help="Output format (markdown: the README rule index)."),
) -> None:
    """List the lint rules: id, slug, family, severity, when they run, title."""
    from ncclctl.lint import output
    from ncclctl.lint.registry import all_rules

    rules = all_rules()
    if fmt is RulesFormat.json:
        from ncclctl.render import dumps

        _out(dumps(output.rules_json(rules)))
    elif fmt is RulesFormat.markdown:
        _out(output.rules_markdown(rules))
    else:
        _out(output.rules_text(rules))


@app.command("explain")
def explain_cmd(
    rule_id: str = typer.Argument(..., metavar="ID", help="A rule id (GPU004) or slug (persistence-mode-off)."),
    fmt: SnapshotFormat = typer.Option(SnapshotFormat.text, "--format", "-f", help="Output format."),
) -> None:
    """Print one rule's documentation: what it finds, why it hurts NCCL, how it is detected, how to fix it."""
    from ncclctl.lint import output

    rule = _rule_or_usage(rule_id)
    if fmt is SnapshotFormat.json:
        from ncclctl import JSON_SCHEMA_VERSION
        from ncclctl.render import dumps

        _out(dumps({"schema_version": JSON_SCHEMA_VERSION, **output.rule_doc(rule)}))
    else:
        _out(output.explain_text(rule))


def _only(rules: Optional[List[str]]) -> Optional[tuple]:
    if not rules:
        return None
    ids = []
    for item in rules:
        for key in item.split(","):
            if key.strip():
                ids.append(_rule_or_usage(key.strip()).id)
    return tuple(dict.fromkeys(ids))


@app.command("lint")
def lint_cmd(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help="Read the node from a JSON model (probe --format json).", metavar="JSON"),
    config: Optional[str] = typer.Option(None, "--config", "-c", help="Lint configuration (default: ./.ncclctl.yaml if present).", metavar="FILE"),
    expect: Optional[str] = typer.Option(None, "--expect", help="Compare with this expected-state profile (EXP rules).", metavar="FILE"),
    write_expect: Optional[str] = typer.Option(None, "--write-expect", help="Derive an expected-state profile from this node and write it (no lint).", metavar="FILE"),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding reaches this severity."),
    fmt: Optional[LintFormat] = typer.Option(None, "--format", "-f", help="Output format: text (default), json, sarif, junit."),
    nagios: bool = typer.Option(False, "--nagios", help="Nagios/NHC plugin output: one status line with perfdata; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN."),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help="Run only this rule (id or slug; repeat or comma-separate).", metavar="ID"),
) -> None:
    """Lint one node (this host, or --root/--model) with every enabled rule.

    Exit codes: 0 clean, 1 findings at or above --fail-on, 3 invalid input, 4 source unavailable
    (with --nagios: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN).
    """
    if not nagios:
        _lint(root, model, config, expect, write_expect, fail_on, fmt, rule)
        return
    from ncclctl.errors import NcclctlError
    from ncclctl.lint.output import nagios_unknown

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


def _lint(root, model, config, expect, write_expect, fail_on, fmt, rule, *, nagios: bool = False) -> None:
    from ncclctl.errors import UsageError
    from ncclctl.findings import Severity
    from ncclctl.lint import output
    from ncclctl.lint.config import discover, load_config
    from ncclctl.lint.context import Ctx
    from ncclctl.lint.engine import run, selected

    if write_expect is not None and expect is not None:
        raise UsageError("give --expect or --write-expect, not both")
    if write_expect is not None:
        _write_expect(_load_node(root, model), write_expect, fmt)
        return
    only = _only(rule)
    cfg_path = discover(config)
    cfg = load_config(cfg_path)
    profile = None
    if expect is not None:
        from ncclctl.lint.expect import load_profile

        profile = load_profile(expect)
    node = _load_node(root, model)
    source = root or model
    ctx = Ctx(node=node, expect=profile, source=source, offline=source is not None)
    findings = run(ctx, cfg, only=only)
    ran = selected(cfg, only=only, has_expect=profile is not None, host=node.hostname)
    threshold = Severity(fail_on.value)
    if nagios:
        text, code = output.nagios(findings, host=node.hostname, rules_run=len(ran))
        _out(text)
        raise typer.Exit(code)
    if fmt is LintFormat.json:
        from ncclctl.render import dumps

        _out(dumps(output.lint_json(findings, host=node.hostname, source=source, rules_run=[r.id for r in ran],
                                    fail_on=threshold, config=cfg_path, expect=expect, extends=cfg.extends)))
    elif fmt is LintFormat.sarif:
        from ncclctl.render import dumps

        _out(dumps(output.sarif(findings, rules=ran, host=node.hostname)))
    elif fmt is LintFormat.junit:
        _out(output.junit([{"host": node.hostname, "source": source, "rules": [r.id for r in ran],
                            "findings": findings, "error": None}], fail_on=threshold))
    else:
        _out(output.lint_text(findings, host=node.hostname, rules_run=len(ran)))
    if output.fails(findings, threshold):
        raise typer.Exit(int(ExitCode.FINDINGS))


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
    config: Optional[str] = typer.Option(None, "--config", "-c", help="Lint configuration (default: ./.ncclctl.yaml if present).", metavar="FILE"),
    expect: Optional[str] = typer.Option(None, "--expect", help="Also compare every host with this expected-state profile.", metavar="FILE"),
    fmt: FleetFormat = typer.Option(FleetFormat.text, "--format", "-f", help="Output format."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding on any host reaches this severity."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, max=1024, help="Worker processes (default: the CPU count)."),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help="Run only this rule (id or slug; repeat or comma-separate).", metavar="ID"),
    host_timeout: float = typer.Option(60.0, "--host-timeout", min=0.1, help="Seconds one host may take to load and lint; a host past it is reported, the rest are linted.", metavar="SECONDS"),
) -> None:
    """Lint every node of a fleet and compare them: MTU, firmware, driver, NCCL settings, GPU/NIC counts, rails.

    Exit codes: 0 clean, 1 findings at or above --fail-on on some host, 3 invalid input (including a host
    whose snapshot cannot be read; the others are still linted and reported), 4 a host past --host-timeout
    (and none unreadable).
    """
    from ncclctl.errors import UsageError
    from ncclctl.findings import Severity
    from ncclctl.lint import output
    from ncclctl.lint.config import discover, load_config
    from ncclctl.lint.fleet import lint_fleet, sources_from_inventory, sources_from_paths

    if bool(snapshots) == (inventory is not None):
        raise UsageError("give snapshots or --inventory (one of the two)",
                         fix="ncclctl fleet lint snaps/*  or  ncclctl fleet lint --inventory cluster.yaml")
    only = _only(rule)
    cfg_path = discover(config)
    cfg = load_config(cfg_path)
    profile = None
    if expect is not None:
        from ncclctl.lint.expect import load_profile

        profile = load_profile(expect)
    sources = sources_from_inventory(inventory) if inventory is not None else sources_from_paths(snapshots or [])
    result = lint_fleet(sources, cfg, expect=profile, jobs=jobs, only=only, progress=_progress(),
                        host_timeout=host_timeout)
    threshold = Severity(fail_on.value)
    if fmt is FleetFormat.json:
        from ncclctl.render import dumps

        _out(dumps(output.fleet_json(result, fail_on=threshold, config=cfg_path, extends=cfg.extends, expect=expect)))
    elif fmt is FleetFormat.junit:
        _out(output.fleet_junit(result, threshold))
    else:
        _out(output.fleet_text(result, threshold))
    codes = {int(h.error.get("exit_code", ExitCode.INVALID_INPUT)) for h in result.hosts if h.error is not None}
    if codes:
        raise typer.Exit(int(ExitCode.INVALID_INPUT) if int(ExitCode.INVALID_INPUT) in codes else max(codes))
    if output.fails(result.findings(), threshold):
        raise typer.Exit(int(ExitCode.FINDINGS))
