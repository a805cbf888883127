"""The ``ncclctl`` command line.

Each command parses its options, imports its implementation lazily (start-up stays fast: lxml, pynvml and
yaml are never imported here), calls one function and prints the result. Errors are raised as
:class:`~ncclctl.errors.NcclctlError` and mapped to exit codes in :func:`main`, never shown as tracebacks.
"""

from __future__ import annotations

import enum
import os
import sys
from typing import Optional

import typer

from ncclctl import JSON_SCHEMA_VERSION, __version__
from ncclctl.errors import ExitCode, NcclctlError

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


def _out(text: str) -> None:
    sys.stdout.write(text)


@app.command()
def probe(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    fmt: ProbeFormat = typer.Option(ProbeFormat.text, "--format", "-f", help="Output format."),
) -> None:
    """Probe the node (NUMA, PCIe tree, GPUs, NVLinks, NICs, netdevs) and print its model."""
    from ncclctl import render
    from ncclctl.probe import probe as do_probe
    from ncclctl.probe.snapshot import load_tar_or_dir

    cleanup = None
    try:
        if root is not None:
            root, cleanup = load_tar_or_dir(root)
        node = do_probe(root)
    finally:
        if cleanup:
            import shutil

            shutil.rmtree(cleanup, ignore_errors=True)
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
) -> None:
    """Capture this host into a fixture: only the files the probe reads, command outputs, NVML answers."""
    from ncclctl.probe.snapshot import load_tar_or_dir, snapshot as do_snapshot
    from ncclctl.render import dumps

    cleanup = None
    try:
        if root is not None:
            root, cleanup = load_tar_or_dir(root)
        result = do_snapshot(output, tar, redact=redact, root=root)
    finally:
        if cleanup:
            import shutil

            shutil.rmtree(cleanup, ignore_errors=True)
    if fmt is SnapshotFormat.json:
        _out(dumps({"schema_version": JSON_SCHEMA_VERSION, "path": result.path, "files": result.files,
                    "gpus": len(result.node.gpus), "nics": len(result.node.nics), "unavailable": result.unavailable}))
    else:
        print(f"wrote {result.files} entries to {result.path} "
              f"({len(result.node.gpus)} GPUs, {len(result.node.nics)} RDMA NICs)", file=sys.stderr)
        for u in result.unavailable:
            print(f"  not captured: {u['source']}: {u['reason']}", file=sys.stderr)


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
    import click

    args = list(sys.argv[1:] if argv is None else argv)
    code = 0
    try:
        rv = app(args=args, prog_name="ncclctl", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.exceptions.Abort:
        print("ncclctl: interrupted", file=sys.stderr)
        code = ExitCode.INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        code = ExitCode.USAGE
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
