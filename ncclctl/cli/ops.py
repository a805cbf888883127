"""``ncclctl conf generate``, ``facts``, ``schema``, ``completion``: operations."""

from __future__ import annotations

import enum
from typing import Optional

import typer

from ncclctl.cli.common import (BACKUP_OPTION, CHECK_OPTION, DIFF_OPTION, EXIT_CODE_OPTION, FABRIC_IDS_HELP,
                                FOLLOW_OPTION, HOST_IDS_HELP, MODEL_HELP, RAIL_MAP_HELP, NCCL_DEFAULT, ROOT_HELP, Format, command_app, csv_list, emit_result,
                                format_option, load_node, note, out, sub_app, usage)

conf_app = sub_app("/etc/nccl.conf derived from the node: rails, socket interface, RoCE GID and traffic class.")
facts_app = command_app()
schema_app = command_app()
completion_app = command_app()


@conf_app.command("generate")
def conf_generate(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help=MODEL_HELP, metavar="JSON"),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to this file (atomically, only on change), e.g. /etc/nccl.conf.", metavar="FILE"),
    topo_file: Optional[str] = typer.Option(None, "--topo-file", help="Set NCCL_TOPO_FILE to this absolute path (needed on flat-PCIe VMs).", metavar="PATH"),
    compute_nics: Optional[str] = typer.Option(None, "--compute-nics", help="Comma-separated RDMA devices that carry NCCL traffic (default: each GPU's closest NICs).", metavar="LIST"),
    socket_ifname: Optional[str] = typer.Option(None, "--socket-ifname", help="The interface for NCCL's bootstrap/out-of-band traffic (default: chosen from the model).", metavar="NAME"),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Write only what this NCCL version reads.", metavar="X.Y[.Z]"),
    comments: bool = typer.Option(False, "--comments", help="Explain each setting in '#' lines (NCCL 2.26 and later only)."),
    fabric: Optional[str] = typer.Option(None, "--fabric", help=FABRIC_IDS_HELP, metavar="FILE"),
    rail_map: Optional[str] = typer.Option(None, "--rail-map", help=RAIL_MAP_HELP, metavar="YAML"),
    host: Optional[str] = typer.Option(None, "--host", help=HOST_IDS_HELP, metavar="NAME"),
    fmt: Optional[Format] = format_option(None, "json: print a result record (settings, warnings; with -o: changed, diff, msg)."),
    check: bool = CHECK_OPTION,
    exit_code: bool = EXIT_CODE_OPTION,
    diff: bool = DIFF_OPTION,
    backup: bool = BACKUP_OPTION,
    follow: bool = FOLLOW_OPTION,
) -> None:
    """Write /etc/nccl.conf for this node: NCCL_IB_HCA (exact rails), NCCL_SOCKET_IFNAME, NCCL_TOPO_FILE, and
    on RoCE NCCL_IB_GID_INDEX and NCCL_IB_TC, in the NAME=value syntax NCCL reads (no quotes, no export).

    What could not be decided (no QoS data, inconsistent GIDs) is left out and said on stderr.
    """
    from ncclctl.plan import confgen as conf
    from ncclctl.nccl.version import parse_option as parse_version

    version = parse_version(nccl_version)
    if comments:
        conf.check_comments(version)
    node = load_node(root, model)
    from ncclctl.fabric.railids import ids_from_options
    from ncclctl.plan.rails import plan_rails

    rail_ids = ids_from_options(node, plan_rails(node, csv_list(compute_nics)), fabric_file=fabric, rail_map=rail_map,
                                host=host)
    plan = conf.plan_conf(node, topo_file=topo_file, socket_ifname=socket_ifname, nccl_version=version,
                          compute_nics=csv_list(compute_nics), rail_ids=rail_ids)
    data = conf.render(plan, comments=comments, nccl_version=version)
    json_record = fmt == Format.json
    if not json_record:
        for w in plan.warnings:
            note(f"warning: {w}")
    emit_result(data, output, check=check, diff=diff, backup=backup, follow=follow, exit_code=exit_code,
                json_record=json_record,
                extra={"settings": {s.name: s.value for s in plan.settings}, "warnings": list(plan.warnings)},
                content_key="content")


# --------------------------------------------------------------------------------------------------
# facts


@facts_app.command("facts")
def facts_cmd(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help=MODEL_HELP, metavar="JSON"),
    timeout: float = typer.Option(20.0, "--timeout", min=0.1, max=3600, help="Give up after this many seconds (the document then says timed_out).", metavar="S"),
    lint: bool = typer.Option(True, "--lint/--no-lint", help="Include a lint summary (counts and rule ids)."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to this file (atomically, only on change), e.g. /etc/ansible/facts.d/ncclctl.fact.", metavar="FILE"),
    fmt: Optional[Format] = format_option(None, "json (with -o): print the write record instead of a message."),
    check: bool = CHECK_OPTION,
    exit_code: bool = EXIT_CODE_OPTION,
    diff: bool = DIFF_OPTION,
    backup: bool = BACKUP_OPTION,
    follow: bool = FOLLOW_OPTION,
) -> None:
    """One JSON document of node facts for Ansible (/etc/ansible/facts.d/ncclctl.fact) and inventories.

    Always valid JSON and exit 0, even when probing fails or times out: the error is inside the document
    ("ok": false, "error": {...}, "timed_out"). Keys are snake_case and stable; "schema_version" versions them.
    With -o, failing to write the file is an error (exit 3).
    """
    from ncclctl.ops import facts

    if root is not None and model is not None:
        raise usage("give --root or --model, not both")
    kind = "root" if root is not None else "model" if model is not None else "live"
    doc = facts.collect(lambda: load_node(root, model), source={"kind": kind, "path": root or model},
                        timeout=timeout, lint=lint)
    data = facts.dumps(doc)
    if output is None:
        if check or diff or backup or follow or exit_code:
            emit_result(data, None, check=check, diff=diff, backup=backup, follow=follow,
                        exit_code=exit_code)  # raises the usage error
        out(data.decode())
        return
    emit_result(data, output, check=check, diff=diff, backup=backup, follow=follow, exit_code=exit_code,
                json_record=fmt == Format.json,
                extra={"ok": doc.get("ok"), "timed_out": doc.get("timed_out")}, content_key="facts")


# --------------------------------------------------------------------------------------------------
# completion


class Shell(str, enum.Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"
    powershell = "powershell"


@completion_app.command("completion")
def completion_cmd(shell: Shell = typer.Argument(..., help="bash, zsh, fish or powershell.", metavar="SHELL")) -> None:
    """Print the shell completion script (bash, zsh, fish, powershell).

    The shell is named, never guessed.

    bash: ncclctl completion bash > /etc/bash_completion.d/ncclctl  (or eval "$(ncclctl completion bash)")
    zsh:  ncclctl completion zsh > "${fpath[1]}/_ncclctl"
    fish: ncclctl completion fish > ~/.config/fish/completions/ncclctl.fish
    """
    from typer._completion_shared import get_completion_script

    out(get_completion_script(prog_name="ncclctl", complete_var="_NCCLCTL_COMPLETE", shell=shell.value).rstrip("\n")
         + "\n")


# --------------------------------------------------------------------------------------------------
# schema


@schema_app.command("schema")
def schema_cmd(
    name: Optional[str] = typer.Argument(None, metavar="NAME", help="A schema name (inventory, facts, node, expect, ncclctl-config, topo-spec, nccl-topo, nccl-graph) or file name."),
    path_only: bool = typer.Option(False, "--path", help="Print the installed file's path instead of its content."),
) -> None:
    """Where the installed JSON schemas and XSDs are (list, a path, or the content).

    Without NAME: every schema with its installed path. With NAME: the schema itself (or its path with --path),
    e.g. for an editor: ncclctl schema inventory > inventory.schema.json
    """
    from ncclctl.schemas import find, installed

    if name is None:
        out("".join(f"{n:<16} {p}\n" for n, p in installed()))
        return
    path = find(name)
    if path_only:
        out(path + "\n")
        return
    with open(path, encoding="utf-8") as fh:
        out(fh.read())
