"""``ncclctl probe`` and ``ncclctl snapshot``."""

from __future__ import annotations

from typing import Optional

import typer

from ncclctl.cli.common import (FOLLOW_OPTION, JSON_SCHEMA_VERSION, ROOT_HELP, Format, ProbeFormat, command_app,
                                dumps, format_option, load_node, note, out)
from ncclctl.errors import ExitCode

probe_app = command_app()
snapshot_app = command_app()


@probe_app.command("probe")
def probe(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    fmt: ProbeFormat = format_option(ProbeFormat.text),
    compare_smi: Optional[str] = typer.Option(None, "--compare-smi", help="Compare with a captured 'nvidia-smi topo -m' output; exit 1 on differences.", metavar="FILE"),
) -> None:
    """Probe the node (NUMA, PCIe tree, GPUs, NVLinks, NICs, netdevs) and print its model."""
    from ncclctl import render

    node = load_node(root, None)
    if compare_smi is not None:
        from ncclctl.plan.smi import compare_file

        doc, text = compare_file(node, compare_smi)
        out(dumps(doc) if fmt == Format.json else text)
        if not doc["same"]:
            raise typer.Exit(int(ExitCode.FINDINGS))
        return
    renderers = {ProbeFormat.json: lambda n: render.dumps(render.node_document(n)), ProbeFormat.tree: render.tree,
                 ProbeFormat.matrix: render.matrix_text, ProbeFormat.text: render.text_summary}
    out(renderers[fmt](node))


@snapshot_app.command("snapshot")
def snapshot(
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write the snapshot into this folder.", metavar="DIR"),
    tar: Optional[str] = typer.Option(None, "--tar", help="Write the snapshot as a .tar.gz file.", metavar="FILE"),
    redact: bool = typer.Option(False, "--redact", help="Replace hostnames, addresses, GUIDs, MACs, LLDP neighbours and serials consistently."),
    root: Optional[str] = typer.Option(None, "--root", help="Re-capture an existing host tree (e.g. to redact it).", metavar="DIR"),
    fmt: Format = format_option(Format.text),
    follow: bool = FOLLOW_OPTION,
) -> None:
    """Capture this host into a fixture: only the files the probe reads, command outputs, NVML answers."""
    from ncclctl.probe.archive import opened_root
    from ncclctl.probe.snapshot import snapshot as do_snapshot

    if root is not None:
        with opened_root(root) as tree:
            result = do_snapshot(output, tar, redact=redact, root=tree, follow=follow)
    else:
        result = do_snapshot(output, tar, redact=redact, root=None, follow=follow)
    if fmt == Format.json:
        out(dumps({"schema_version": JSON_SCHEMA_VERSION, "path": result.path, "files": result.files,
                   "gpus": len(result.node.gpus), "nics": len(result.node.nics), "unavailable": result.unavailable}))
        return
    note(f"wrote {result.files} entries to {result.path} "
         f"({len(result.node.gpus)} GPUs, {len(result.node.nics)} RDMA NICs)")
    for u in result.unavailable:
        note(f"  not captured: {u['source']}: {u['reason']}")
