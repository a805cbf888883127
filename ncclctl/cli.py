"""The ``ncclctl`` command line.

Each command parses its options, imports its implementation lazily (start-up stays fast: lxml, pynvml and
yaml are never imported here), calls one function and prints the result. Errors are raised as
:class:`~ncclctl.errors.NcclctlError` and mapped to exit codes in :func:`main`, never shown as tracebacks.
"""

from __future__ import annotations

import enum
import os
import sys
from typing import List, Optional

import typer

from ncclctl import JSON_SCHEMA_VERSION, __version__
from ncclctl.errors import ExitCode, NcclctlError
from ncclctl.nccl.version import DEFAULT_TEXT as NCCL_DEFAULT

app = typer.Typer(
    name="ncclctl",
    help="Probe GPU nodes, emit and validate NCCL topology files, lint NCCL networking.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"ncclctl {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """ncclctl: the first tool to reach for when NCCL is slow, hangs, or picks the wrong NIC.

    Exit codes: 0 ok, 1 findings at or above the fail level, 2 usage, 3 invalid input,
    4 a required source unavailable, 130 interrupted.
    """


class ProbeFormat(str, enum.Enum):
    text = "text"
    json = "json"
    tree = "tree"
    matrix = "matrix"


ROOT_HELP = "Probe a captured host tree (a snapshot folder or .tar.gz) instead of this host."

# Options of every command that writes a file with -o (topo generate, rings graph, conf generate, facts, fabric
# order); the writing itself is ncclctl.cli_ops.emit_result (atomic, idempotent, Ansible-style record).
# FOLLOW_OPTION also on snapshot (-o DIR / --tar FILE) and fabric synth -o.
CHECK_OPTION = typer.Option(False, "--check", help="With -o: report whether the file would change; write nothing.")
DIFF_OPTION = typer.Option(False, "--diff", help="With -o: print a unified diff of the change.")
BACKUP_OPTION = typer.Option(False, "--backup", help="With -o: keep the previous file as FILE.YYYYmmdd-HHMMSS~.")
FOLLOW_OPTION = typer.Option(False, "--follow", help="With -o: if the path is a symlink, replace the file it points to "
                             "(default: replace the link itself). Refused for another user's link in a sticky "
                             "world-writable folder such as /tmp.")


def _out(text: str) -> None:
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:  # a surrogate-escaped name or path under a strict (UTF-8 locale) stdout
        from ncclctl.probe.hostroot import printable

        sys.stdout.write(printable(text))


@app.command()
def probe(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    fmt: ProbeFormat = typer.Option(ProbeFormat.text, "--format", "-f", help="Output format."),
    compare_smi: Optional[str] = typer.Option(None, "--compare-smi", help="Compare with a captured 'nvidia-smi topo -m' output; exit 1 on differences.", metavar="FILE"),
) -> None:
    """Probe the node (NUMA, PCIe tree, GPUs, NVLinks, NICs, netdevs) and print its model."""
    from ncclctl import render
    from ncclctl.probe import probe as do_probe
    from ncclctl.probe.archive import opened_root

    if root is not None:
        with opened_root(root) as tree:
            node = do_probe(tree)
    else:
        node = do_probe(None)
    if compare_smi is not None:
        from ncclctl.inputs import read_text
        from ncclctl.smi import compare

        differences = compare(node, read_text(compare_smi, "cmd"), source=compare_smi)
        if fmt is ProbeFormat.json:
            _out(render.dumps({"schema_version": JSON_SCHEMA_VERSION, "file": compare_smi, "same": not differences,
                               "differences": differences}))
        else:
            _out("".join(f"{d['row']} x {d['column']}: nvidia-smi says {d['smi']}, the model says {d['model']}\n"
                         for d in differences) or f"{compare_smi} agrees with the probed topology\n")
        if differences:
            raise typer.Exit(int(ExitCode.FINDINGS))
        return
    if fmt is ProbeFormat.json:
        _out(render.dumps(render.node_document(node)))
    elif fmt is ProbeFormat.tree:
        _out(render.tree(node))
    elif fmt is ProbeFormat.matrix:
        _out(render.matrix_text(node))
    else:
        _out(render.text_summary(node))


class SnapshotFormat(str, enum.Enum):
    text = "text"
    json = "json"


@app.command()
def snapshot(
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write the snapshot into this folder.", metavar="DIR"),
    tar: Optional[str] = typer.Option(None, "--tar", help="Write the snapshot as a .tar.gz file.", metavar="FILE"),
    redact: bool = typer.Option(False, "--redact", help="Replace GUIDs, MACs, hostnames and serials consistently."),
    root: Optional[str] = typer.Option(None, "--root", help="Re-capture an existing host tree (e.g. to redact it).", metavar="DIR"),
    fmt: SnapshotFormat = typer.Option(SnapshotFormat.text, "--format", "-f", help="Output format."),
    follow: bool = FOLLOW_OPTION,
) -> None:
    """Capture this host into a fixture: only the files the probe reads, command outputs, NVML answers."""
    from ncclctl.probe.archive import opened_root
    from ncclctl.probe.snapshot import snapshot as do_snapshot
    from ncclctl.render import dumps

    if root is not None:
        with opened_root(root) as tree:
            result = do_snapshot(output, tar, redact=redact, root=tree, follow=follow)
    else:
        result = do_snapshot(output, tar, redact=redact, root=None, follow=follow)
    if fmt is SnapshotFormat.json:
        _out(dumps({"schema_version": JSON_SCHEMA_VERSION, "path": result.path, "files": result.files,
                    "gpus": len(result.node.gpus), "nics": len(result.node.nics), "unavailable": result.unavailable}))
    else:
        print(f"wrote {result.files} entries to {result.path} "
              f"({len(result.node.gpus)} GPUs, {len(result.node.nics)} RDMA NICs)", file=sys.stderr)
        for u in result.unavailable:
            print(f"  not captured: {u['source']}: {u['reason']}", file=sys.stderr)


topo_app = typer.Typer(help="NCCL topology XML (NCCL_TOPO_FILE): generate, validate, show, diff.",
                       rich_markup_mode=None, no_args_is_help=True)
app.add_typer(topo_app, name="topo")


def _load_node(root: Optional[str], model: Optional[str]):
    """The node from --root (fixture or snapshot tar), --model (JSON), or the live host."""
    from ncclctl.probe import probe as do_probe

    if root is not None and model is not None:
        from ncclctl.errors import UsageError

        raise UsageError("give --root or --model, not both")
    if model is not None:
        from ncclctl.inventory import load_model

        return load_model(model)
    if root is not None:
        from ncclctl.probe.archive import opened_root

        with opened_root(root) as tree:
            return do_probe(tree)
    return do_probe(None)


@topo_app.command("generate")
def topo_generate(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help="Read the node from a JSON model (probe --format json).", metavar="JSON"),
    spec: Optional[str] = typer.Option(None, "--spec", help="Virtual layout spec (YAML) for flat-PCIe VMs.", metavar="YAML"),
    profile: Optional[str] = typer.Option(None, "--profile", help="Built-in virtual layout: h100, a100 or pairs.", metavar="NAME"),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to this file (atomically) instead of stdout.", metavar="FILE"),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Never write what this NCCL version cannot read.", metavar="X.Y[.Z]"),
    minimal: bool = typer.Option(False, "--minimal", help="Only the cpu/pci skeleton; NCCL detects GPUs and NICs itself."),
    nics: Optional[str] = typer.Option(None, "--nics", help="Comma-separated RDMA devices to include (default: all with an active port).", metavar="LIST"),
    fmt: Optional[SnapshotFormat] = typer.Option(None, "--format", "-f", help="json: print a result record instead of the XML (with -o: whether the file changed)."),
    check: bool = CHECK_OPTION,
    diff: bool = DIFF_OPTION,
    backup: bool = BACKUP_OPTION,
    follow: bool = FOLLOW_OPTION,
) -> None:
    """Generate an NCCL topology file for this node (bare metal) or a virtual layout (VMs)."""
    from ncclctl.nccl.version import parse_option as parse_nccl_version
    from ncclctl.topo import generate as gen

    node = _load_node(root, model)
    opts = gen.Options(nccl_version=parse_nccl_version(nccl_version), minimal=minimal,
                       nics=tuple(n for n in nics.split(",") if n) if nics else None)
    layout = None
    if spec is not None and profile is not None:
        from ncclctl.errors import UsageError

        raise UsageError("give --spec or --profile, not both")
    if spec is not None:
        from ncclctl.inputs import read_text

        layout = gen.load_spec(read_text(spec, "spec"), path=spec)
    elif profile is not None:
        layout = gen.profile_layout(node, profile, opts.nics)
    elif node.is_virtual:
        layout = gen.profile_layout(node, "pairs", opts.nics)
        print("ncclctl: flat PCIe (virtual machine) detected: pairing GPU i with NIC i under virtual switches; "
              "use --profile or --spec to choose the layout", file=sys.stderr)
    data = gen.generate(node, opts, layout=layout)
    from ncclctl.cli_ops import emit_result

    emit_result(data, output, check=check, diff=diff, backup=backup, follow=follow,
                json_record=fmt is SnapshotFormat.json,
                extra={"layout": layout.name if layout else "bare-metal",
                       "elements": data.count(b"<") - data.count(b"</")}, content_key="xml")


class ValidateFormat(str, enum.Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    junit = "junit"


class FailOn(str, enum.Enum):
    error = "error"
    warning = "warning"
    info = "info"


# Options of every command that reports findings (lint, fleet lint, topo/rings validate, fabric load/rails).
SHOW_INFO_OPTION = typer.Option(False, "--show-info", help="Text output: also print info findings (hidden by default; "
                                "the summary line counts them). JSON, SARIF and JUnit always carry them.")
CONFIG_HELP = "Rule configuration: severities, off, per-host ignores (default: ./.ncclctl.yaml if present)."
RULE_HELP = "Report only this rule (id or slug; repeat or comma-separate)."

# The command that runs the rules of each scope (for "wrong command" hints).
SCOPE_COMMAND = {"node": "ncclctl lint", "fleet": "ncclctl fleet lint", "file": "ncclctl topo validate",
                 "fabric": "ncclctl fabric rails"}


def _rule_or_usage(key: str):
    from ncclctl.errors import UsageError
    from ncclctl.registry import get, suggest

    rule = get(key)
    if rule is None:
        close = suggest(key)
        raise UsageError(f"no such rule: {key!r}", fix=(f"did you mean {close}? " if close else "")
                         + "'ncclctl rules' lists the rule ids and slugs")
    return rule


def _select_rules(keys: Optional[List[str]], scopes: tuple[str, ...], command: str) -> Optional[tuple]:
    """``--rule`` values (ids or slugs, repeated or comma-separated) as rule ids; None when not given. A rule of
    another scope is a usage error that names the command running it."""
    if not keys:
        return None
    from ncclctl.errors import UsageError

    ids = []
    for item in keys:
        for key in item.split(","):
            if not key.strip():
                continue
            r = _rule_or_usage(key.strip())
            if r.scope not in scopes:
                raise UsageError(f"{r.id} is a {r.scope} rule: {command} does not run it",
                                 fix=f"run it with {SCOPE_COMMAND.get(r.scope, 'another command')} "
                                     "('ncclctl rules' says where each rule runs)")
            ids.append(r.id)
    return tuple(dict.fromkeys(ids))


def _load_config(explicit: Optional[str]):
    """The configuration file (``--config F``, else ./.ncclctl.yaml when present) and its parsed config."""
    from ncclctl.lint.config import discover, load_config

    path = discover(explicit)
    return path, load_config(path)


def _emit_report(rep, fmt: str, show_info: bool) -> None:
    """Print ``rep`` through the report door; exit 1 when a finding reaches ``--fail-on``."""
    from ncclctl import report

    _out(report.render(rep, fmt, show_info=show_info))
    if not rep.ok:
        raise typer.Exit(int(ExitCode.FINDINGS))


def _read_file(path: str) -> bytes:
    from ncclctl.inputs import read_bytes

    data = read_bytes(path, "xml")
    assert data is not None
    return data


@topo_app.command("validate")
def topo_validate(
    file: str = typer.Argument(..., help="Topology (NCCL_TOPO_FILE) or graph (NCCL_GRAPH_FILE) XML file."),
    root: Optional[str] = typer.Option(None, "--root", help="Also check the file against this captured host.", metavar="DIR"),
    live: bool = typer.Option(False, "--live", help="Also check the file against this host."),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Validate for this NCCL version.", metavar="X.Y[.Z]"),
    fmt: ValidateFormat = typer.Option(ValidateFormat.text, "--format", "-f", help="Output format."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding reaches this severity."),
    xsd: bool = typer.Option(True, "--xsd/--no-xsd", help="Also check structure against the XSD schema."),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help=RULE_HELP, metavar="ID"),
    show_info: bool = SHOW_INFO_OPTION,
) -> None:
    """Validate a topology or graph file exactly as NCCL reads it (and against a host with --root/--live)."""
    from ncclctl.findings import Severity
    from ncclctl.nccl.version import parse_option as parse_version
    from ncclctl.report import Report
    from ncclctl.topo.filecheck import check_file

    if root is not None and live:
        from ncclctl.errors import UsageError

        raise UsageError("give --root or --live, not both")
    only = _select_rules(rule, ("file",), "topo validate")
    cfg_path, cfg = _load_config(config)
    version = parse_version(nccl_version)
    data = _read_file(file)
    nodes: list = []

    def load_node():
        nodes.append(_load_node(root, None))
        return nodes[-1]

    kind, findings = check_file(data, file, nccl_version=version, xsd=xsd,
                                load_node=load_node if (root is not None or live) else None)
    # Per-host ignores match the host the file is checked against, else the machine running the command.
    import socket

    findings = cfg.apply(findings, nodes[0].hostname if nodes else socket.gethostname())
    if only is not None:
        findings = [f for f in findings if f.rule in only]
    rep = Report(findings=tuple(findings), subject=file, fail_on=Severity(fail_on.value), name="ncclctl topo validate",
                 fields=(("file", file), ("kind", kind), ("nccl_version", ".".join(map(str, version))),
                         ("config", cfg_path)))
    _emit_report(rep, fmt.value, show_info)


class ShowFormat(str, enum.Enum):
    tree = "tree"
    matrix = "matrix"
    json = "json"


@topo_app.command("show")
def topo_show(
    file: str = typer.Argument(..., help="Topology XML file (NCCL_TOPO_FILE or an NCCL_TOPO_DUMP_FILE output)."),
    fmt: ShowFormat = typer.Option(ShowFormat.tree, "--format", "-f", help="Output format."),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Read as this NCCL version does.", metavar="X.Y[.Z]"),
) -> None:
    """Show what NCCL understands from a topology file: the tree it keeps and the GPU/NIC paths it implies."""
    from ncclctl.topo import show
    from ncclctl.nccl.version import parse_option as parse_version
    from ncclctl.topo.interpret import load_view

    view = load_view(_read_file(file), path=file, nccl_version=parse_version(nccl_version))
    if fmt is ShowFormat.json:
        from ncclctl.render import dumps

        _out(dumps(show.view_doc(view)))
    elif fmt is ShowFormat.matrix:
        _out(show.matrix_text(view))
    else:
        _out(show.tree_text(view))


@topo_app.command("diff")
def topo_diff(
    a: str = typer.Argument(..., help="First topology file."),
    b: str = typer.Argument(..., help="Second topology file."),
    fmt: SnapshotFormat = typer.Option(SnapshotFormat.text, "--format", "-f", help="Output format."),
) -> None:
    """Semantic diff of two topology files (devices, links, attributes), blind to formatting and order.

    Exit 0 when they mean the same to NCCL, 1 when they differ.
    """
    from ncclctl.topo import show
    from ncclctl.topo.interpret import load_view

    changes = show.diff(load_view(_read_file(a), path=a), load_view(_read_file(b), path=b))
    if fmt is SnapshotFormat.json:
        from ncclctl.render import dumps

        _out(dumps({"schema_version": JSON_SCHEMA_VERSION, "a": a, "b": b, "same": not changes, "changes": changes}))
    else:
        _out(show.diff_text(changes, a, b))
    if changes:
        raise typer.Exit(int(ExitCode.FINDINGS))


@app.command("rails")
def rails_cmd(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help="Read the node from a JSON model.", metavar="JSON"),
    compute_nics: Optional[str] = typer.Option(None, "--compute-nics", help="Comma-separated RDMA devices that carry NCCL traffic (default: each GPU's closest NICs).", metavar="LIST"),
    fmt: SnapshotFormat = typer.Option(SnapshotFormat.text, "--format", "-f", help="Output format."),
) -> None:
    """Assign each GPU its rail NIC port from PCIe locality; print the rail table and an exact NCCL_IB_HCA."""
    from ncclctl.rails import plan_doc, plan_rails, plan_text

    node = _load_node(root, model)
    plan = plan_rails(node, tuple(n for n in compute_nics.split(",") if n) if compute_nics else None)
    if fmt is SnapshotFormat.json:
        from ncclctl.render import dumps

        _out(dumps(plan_doc(plan)))
    else:
        _out(plan_text(plan))


rings_app = typer.Typer(help="NCCL graph XML (NCCL_GRAPH_FILE) with rail-pinned ring and tree channels.",
                        rich_markup_mode=None, no_args_is_help=True)
app.add_typer(rings_app, name="rings")


@rings_app.command("graph")
def rings_graph(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help="Read the node from a JSON model.", metavar="JSON"),
    compute_nics: Optional[str] = typer.Option(None, "--compute-nics", help="Comma-separated RDMA devices that carry NCCL traffic.", metavar="LIST"),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to this file (atomically) instead of stdout.", metavar="FILE"),
    fmt: Optional[SnapshotFormat] = typer.Option(None, "--format", "-f", help="json: print the channel plan and result record."),
    check: bool = CHECK_OPTION,
    diff: bool = DIFF_OPTION,
    backup: bool = BACKUP_OPTION,
    follow: bool = FOLLOW_OPTION,
) -> None:
    """Write an NCCL graph file whose channel c enters and leaves on the NIC of rail c (ring and tree).

    Use it with NCCL_IB_HCA set to the rails (ncclctl rails), per job: a graph file fixes the GPU set.
    """
    from ncclctl.rails import plan_rails
    from ncclctl.rings import build_graphs
    from ncclctl.topo.generate import serialize

    node = _load_node(root, model)
    plan = plan_rails(node, tuple(n for n in compute_nics.split(",") if n) if compute_nics else None)
    tree, info = build_graphs(node, plan)
    data = serialize(tree)
    if info["down_rails"]:
        print(f"ncclctl: rails {', '.join(info['down_rails'])} are down and get no channel; regenerate the graph "
              "when they are ACTIVE", file=sys.stderr)
    from ncclctl.cli_ops import emit_result

    emit_result(data, output, check=check, diff=diff, backup=backup, follow=follow,
                json_record=fmt is SnapshotFormat.json,
                extra=info, content_key="xml")


@rings_app.command("validate")
def rings_validate(
    file: str = typer.Argument(..., help="Graph XML file (NCCL_GRAPH_FILE)."),
    root: Optional[str] = typer.Option(None, "--root", help="Also check the file against this captured host.", metavar="DIR"),
    live: bool = typer.Option(False, "--live", help="Also check the file against this host."),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Validate for this NCCL version.", metavar="X.Y[.Z]"),
    fmt: ValidateFormat = typer.Option(ValidateFormat.text, "--format", "-f", help="Output format."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding reaches this severity."),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help=RULE_HELP, metavar="ID"),
    show_info: bool = SHOW_INFO_OPTION,
) -> None:
    """Validate a graph file as NCCL reads it (structure, types, channel counts) and against a host."""
    from ncclctl.errors import InputError
    from ncclctl.topo.ncclxml import sniff_kind

    if sniff_kind(_read_file(file)) == "topology":
        raise InputError("this is a topology file (<system>), not a graph file", path=file,
                         fix="use 'ncclctl topo validate' for topology files")
    topo_validate(file, root=root, live=live, nccl_version=nccl_version, fmt=fmt, fail_on=fail_on, xsd=True,
                  config=config, rule=rule, show_info=show_info)


# Command groups that live in their own modules register themselves on `app` when imported (they import only
# typer and this module at start-up; implementations are imported inside each command).
from ncclctl import cli_fabric, cli_lint, cli_ops  # noqa: E402,F401


# --------------------------------------------------------------------------------------------------


def _wants_json(argv: list[str]) -> bool:
    for i, arg in enumerate(argv):
        if arg in ("--format=json", "-fjson"):
            return True
        if arg in ("--format", "-f") and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
    return False


def _fail(exc: NcclctlError, argv: list[str]) -> int:
    if _wants_json(argv):
        import json

        sys.stdout.write(json.dumps({"schema_version": JSON_SCHEMA_VERSION, "ok": False, "error": exc.to_dict()}, indent=2) + "\n")
    print(f"ncclctl: error: {exc}", file=sys.stderr)
    return int(exc.exit_code)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app and turn every outcome into a documented exit code."""
    # typer >= 0.20 vendors click as typer._click; older releases use click itself.
    try:
        from typer._click import exceptions as cx  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - older typer
        from click import exceptions as cx

    def kinds(name: str) -> tuple[type, ...]:
        found = (getattr(typer, name, None), getattr(cx, name, None))
        return tuple(t for t in found if isinstance(t, type) and issubclass(t, BaseException))

    exit_types, abort_types, click_types = kinds("Exit"), kinds("Abort"), kinds("ClickException")
    args = list(sys.argv[1:] if argv is None else argv)
    code = 0
    try:
        rv = app(args=args, prog_name="ncclctl", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except exit_types as exc:
        code = exc.exit_code  # type: ignore[attr-defined]
    except abort_types:
        print("ncclctl: interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    except click_types as exc:
        exc.show()  # type: ignore[attr-defined]
        code = ExitCode.USAGE
        if "--nagios" in args:  # a monitoring plugin answers UNKNOWN (3) to a bad command line, not CRITICAL (2)
            print(f"NCCLCTL UNKNOWN - usage: {exc.format_message()}".replace("|", "/"))  # type: ignore[attr-defined]
            code = 3
    except NcclctlError as exc:
        code = _fail(exc, args)
    except KeyboardInterrupt:
        print("ncclctl: interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error worth a message.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 0
    except Exception as exc:  # pragma: no cover - a bug: say so without a traceback unless asked
        if os.environ.get("NCCLCTL_DEBUG"):
            raise
        print(f"ncclctl: internal error: {type(exc).__name__}: {exc} "
              "(this is a bug; rerun with NCCLCTL_DEBUG=1 for a traceback and report it)", file=sys.stderr)
        code = ExitCode.INTERNAL
    sys.exit(int(code))
