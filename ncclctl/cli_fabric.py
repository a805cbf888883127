"""`ncclctl fabric ...`: fabric-scale commands (registered on the main app when ncclctl.cli is imported)."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from ncclctl import JSON_SCHEMA_VERSION
from ncclctl.cli import SnapshotFormat, _out, app

fabric_app = typer.Typer(help="Fabric-scale work: synthetic rail-optimized fabrics (more to come).",
                         rich_markup_mode=None, no_args_is_help=True)
app.add_typer(fabric_app, name="fabric")


@fabric_app.command("synth")
def fabric_synth(
    nodes: int = typer.Option(..., "--nodes", min=1, max=1_000_000, help="Number of nodes."),
    rails: int = typer.Option(8, "--rails", min=1, max=64, help="HCAs (rails) per node."),
    group: int = typer.Option(32, "--group", min=1, max=64, help="Nodes per scalable unit (one leaf per rail each)."),
    spines_per_rail: int = typer.Option(4, "--spines-per-rail", min=1, max=64, help="Spine switches per rail group."),
    miscable: int = typer.Option(0, "--miscable", min=0, help="Nodes whose cables of two rails are swapped."),
    down: int = typer.Option(0, "--down", min=0, help="HCA links left down."),
    seed: int = typer.Option(1, "--seed", help="Random seed for miscabling and down links."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to this file (atomically).", metavar="FILE"),
    fmt: Optional[SnapshotFormat] = typer.Option(None, "--format", "-f", help="json: print the ground truth (miscabled, down) too."),
) -> None:
    """Write a SuperPOD-style rail-optimized fabric as ibnetdiscover output (for tests and benchmarks)."""
    from ncclctl.fabric.synth import SynthSpec, synth

    result = synth(SynthSpec(nodes=nodes, rails=rails, group=group, spines_per_rail=spines_per_rail,
                             miscable=miscable, down=down, seed=seed))
    if output is not None:
        from ncclctl.fileio import write_atomic

        write_atomic(output, result.text.encode())
    if fmt is SnapshotFormat.json:
        from ncclctl.render import dumps

        _out(dumps({"schema_version": JSON_SCHEMA_VERSION, "path": output, "nodes": nodes, "rails": rails,
                    "miscabled": [list(m) for m in result.miscabled], "down": [list(d) for d in result.down]}))
    elif output is None:
        sys.stdout.write(result.text)
