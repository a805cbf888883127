"""Operations commands: `conf generate`, `facts`, `completion` (registered on the main app when ncclctl.cli is
imported), and the one helper every ``-o`` writer uses.

A command that writes a file takes ``-o FILE`` plus :data:`CHECK_OPTION`, :data:`DIFF_OPTION`,
:data:`BACKUP_OPTION`, :data:`FOLLOW_OPTION` and ends with::

    emit_result(data, output, check=check, diff=diff, backup=backup, follow=follow,
                json_record=fmt is SnapshotFormat.json, extra={...command facts...}, content_key="xml")

Start-up: this module imports only typer and the CLI module; implementations are imported inside functions.
"""

from __future__ import annotations

import enum
import sys
from typing import Optional

import typer

from ncclctl import JSON_SCHEMA_VERSION
from ncclctl.cli import (BACKUP_OPTION, CHECK_OPTION, DIFF_OPTION, FOLLOW_OPTION, ROOT_HELP, SnapshotFormat, _load_node,
                         _out, app)
from ncclctl.nccl.version import DEFAULT_TEXT as NCCL_DEFAULT

__all__ = ["BACKUP_OPTION", "CHECK_OPTION", "DIFF_OPTION", "FOLLOW_OPTION", "emit_result"]


def emit_result(data: bytes, output: Optional[str], *, check: bool = False, diff: bool = False, backup: bool = False,
                follow: bool = False, json_record: bool = False, extra: Optional[dict] = None,
                content_key: str = "content") -> None:
    """Write ``data`` to ``output`` (or print it) and report like an Ansible module.

    Without ``-o``: the content goes to stdout (or into ``content_key`` of the JSON record); ``--check``,
    ``--diff``, ``--backup`` and ``--follow`` are usage errors. With ``-o``: :func:`ncclctl.fileio.emit` writes
    atomically and only on change (a symlink at ``output`` is replaced, or with ``follow`` written through); the
    JSON record is ``{"schema_version", "changed", "path", "diff", "msg", "backup_file", "check_mode", **extra}``;
    in text mode a ``--diff`` goes to stdout and the one-line message to stderr.
    """
    extra = dict(extra or {})
    if output is None:
        if check or diff or backup or follow:
            from ncclctl.errors import UsageError

            flags = ", ".join(f for f, on in (("--check", check), ("--diff", diff), ("--backup", backup),
                                              ("--follow", follow)) if on)
            raise UsageError(f"{flags} only apply to a file written with -o", fix="add -o FILE")
        if json_record:
            from ncclctl.render import dumps

            _out(dumps({"schema_version": JSON_SCHEMA_VERSION, "changed": False, "path": None, "diff": None,
                        "msg": "printed, not written (no -o)", "backup_file": None, "check_mode": False, **extra,
                        content_key: data.decode("utf-8", "replace")}))
        else:
            _out(data.decode("utf-8", "replace"))
        return
    from ncclctl.fileio import emit

    result = emit(output, data, check=check, diff=diff, backup=backup, follow=follow)
    if json_record:
        from ncclctl.render import dumps

        _out(dumps({"schema_version": JSON_SCHEMA_VERSION, **result.record(), **extra, content_key: None}))
        return
    if diff and result.unified:
        _out(result.unified)
    print(f"ncclctl: {result.msg}", file=sys.stderr)


# --------------------------------------------------------------------------------------------------
# conf generate

conf_app = typer.Typer(help="/etc/nccl.conf derived from the node: rails, socket interface, RoCE GID and traffic class.",
                       rich_markup_mode=None, no_args_is_help=True)
app.add_typer(conf_app, name="conf")


@conf_app.command("generate")
def conf_generate(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help="Read the node from a JSON model (probe --format json).", metavar="JSON"),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to this file (atomically, only on change), e.g. /etc/nccl.conf.", metavar="FILE"),
    topo_file: Optional[str] = typer.Option(None, "--topo-file", help="Set NCCL_TOPO_FILE to this absolute path (needed on flat-PCIe VMs).", metavar="PATH"),
    compute_nics: Optional[str] = typer.Option(None, "--compute-nics", help="Comma-separated RDMA devices that carry NCCL traffic (default: each GPU's closest NICs).", metavar="LIST"),
    socket_ifname: Optional[str] = typer.Option(None, "--socket-ifname", help="The interface for NCCL's bootstrap/out-of-band traffic (default: chosen from the model).", metavar="NAME"),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Write only what this NCCL version reads.", metavar="X.Y[.Z]"),
    comments: bool = typer.Option(False, "--comments", help="Explain each setting in '#' lines (NCCL 2.26 and later only)."),
    fmt: Optional[SnapshotFormat] = typer.Option(None, "--format", "-f", help="json: print a result record (settings, warnings; with -o: changed, diff, msg)."),
    check: bool = CHECK_OPTION,
    diff: bool = DIFF_OPTION,
    backup: bool = BACKUP_OPTION,
    follow: bool = FOLLOW_OPTION,
) -> None:
    """Write /etc/nccl.conf for this node: NCCL_IB_HCA (exact rails), NCCL_SOCKET_IFNAME, NCCL_TOPO_FILE, and
    on RoCE NCCL_IB_GID_INDEX and NCCL_IB_TC, in the NAME=value syntax NCCL reads (no quotes, no export).

    What could not be decided (no QoS data, inconsistent GIDs) is left out and said on stderr.
    """
    from ncclctl.nccl import confgen as conf
    from ncclctl.nccl.version import parse_option as parse_version

    version = parse_version(nccl_version)
    if comments:
        conf.check_comments(version)
    node = _load_node(root, model)
    plan = conf.plan_conf(node, topo_file=topo_file, socket_ifname=socket_ifname, nccl_version=version,
                          compute_nics=tuple(n for n in compute_nics.split(",") if n) if compute_nics else None)
    data = conf.render(plan, comments=comments, nccl_version=version)
    json_record = fmt is SnapshotFormat.json
    if not json_record:
        for w in plan.warnings:
            print(f"ncclctl: warning: {w}", file=sys.stderr)
    emit_result(data, output, check=check, diff=diff, backup=backup, follow=follow, json_record=json_record,
                extra={"settings": {s.name: s.value for s in plan.settings}, "warnings": list(plan.warnings)},
                content_key="content")


# --------------------------------------------------------------------------------------------------
# facts


@app.command("facts")
def facts_cmd(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help="Read the node from a JSON model (probe --format json).", metavar="JSON"),
    timeout: float = typer.Option(20.0, "--timeout", min=0.1, max=3600, help="Give up after this many seconds (the document then says timed_out).", metavar="S"),
    lint: bool = typer.Option(True, "--lint/--no-lint", help="Include a lint summary (counts and rule ids)."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to this file (atomically, only on change), e.g. /etc/ansible/facts.d/ncclctl.fact.", metavar="FILE"),
    fmt: Optional[SnapshotFormat] = typer.Option(None, "--format", "-f", help="json (with -o): print the write record instead of a message."),
    check: bool = CHECK_OPTION,
    diff: bool = DIFF_OPTION,
    backup: bool = BACKUP_OPTION,
    follow: bool = FOLLOW_OPTION,
) -> None:
    """One JSON document of node facts for Ansible (/etc/ansible/facts.d/ncclctl.fact) and inventories.

    Always valid JSON and exit 0, even when probing fails or times out: the error is inside the document
    ("ok": false, "error": {...}, "timed_out"). Keys are snake_case and stable; "schema_version" versions them.
    With -o, failing to write the file is an error (exit 3).
    """
    from ncclctl import facts

    if root is not None and model is not None:
        from ncclctl.errors import UsageError

        raise UsageError("give --root or --model, not both")
    kind = "root" if root is not None else "model" if model is not None else "live"
    doc = facts.collect(lambda: _load_node(root, model), source={"kind": kind, "path": root or model},
                        timeout=timeout, lint=lint)
    data = facts.dumps(doc)
    if output is None:
        if check or diff or backup or follow:
            emit_result(data, None, check=check, diff=diff, backup=backup, follow=follow)  # raises the usage error
        _out(data.decode())
        return
    emit_result(data, output, check=check, diff=diff, backup=backup, follow=follow,
                json_record=fmt is SnapshotFormat.json,
                extra={"ok": doc.get("ok"), "timed_out": doc.get("timed_out")}, content_key="facts")


# --------------------------------------------------------------------------------------------------
# completion


class Shell(str, enum.Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"
    powershell = "powershell"


@app.command("completion")
def completion_cmd(shell: Shell = typer.Argument(..., help="bash, zsh, fish or powershell.")) -> None:
    """Print the shell completion script (typer/click completion, without guessing the shell).

    bash: ncclctl completion bash > /etc/bash_completion.d/ncclctl  (or eval "$(ncclctl completion bash)")
    zsh:  ncclctl completion zsh > "${fpath[1]}/_ncclctl"
    fish: ncclctl completion fish > ~/.config/fish/completions/ncclctl.fish
    """
    from typer._completion_shared import get_completion_script

    _out(get_completion_script(prog_name="ncclctl", complete_var="_NCCLCTL_COMPLETE", shell=shell.value).rstrip("\n")
         + "\n")
