"""``ncclctl fabric synth|load|rails|order|plan``: the fabric (ibnetdiscover, iblinkinfo, LLDP), rails, host order and
the fleet's per-host NCCL files."""

from __future__ import annotations

import os
import sys
from typing import List, Optional

import typer

from ncclctl.cli.common import (COLOR_OPTION, QUIET_OPTION, ColorMode, OrderFormat, SynthFormat, BACKUP_OPTION, CHECK_OPTION, CONFIG_HELP, DIFF_OPTION, EXIT_CODE_OPTION, FAIL_ON_HELP,
                                FOLLOW_OPTION, JSON_SCHEMA_VERSION, NCCL_DEFAULT, RAIL_MAP_HELP, RULE_HELP,
                                SHOW_INFO_OPTION, FailOn, Format, ReportFormat,
                                dumps, emit_report, emit_result, format_option, load_config, note, out, select_rules,
                                sub_app, usage)

fabric_app = sub_app("The fabric: load ibnetdiscover/iblinkinfo/LLDP, check rail cabling, order hosts for rings, "
                     "synthesize test fabrics.")

FABRIC_ARG_HELP = "ibnetdiscover (with or without -p) or iblinkinfo output; default: the inventory's 'fabric'."
INVENTORY_HELP = ("Cluster inventory YAML (hosts -> snapshot or node model; schemas/inventory.schema.json). Without "
                  "a fabric file the fabric is read from the hosts' LLDP neighbours (RoCE).")




@fabric_app.command("synth")
def fabric_synth(
    nodes: int = typer.Option(..., "--nodes", min=1, max=1_000_000, help="Number of nodes."),
    rails: int = typer.Option(8, "--rails", min=1, max=64, help="HCAs (rails) per node."),
    group: int = typer.Option(32, "--group", min=1, max=64, help="Nodes per scalable unit (one leaf per rail each)."),
    spines_per_rail: int = typer.Option(4, "--spines-per-rail", min=1, max=64, help="Spine switches per rail group."),
    miscable: int = typer.Option(0, "--miscable", min=0, help="Nodes whose cables of two rails are swapped."),
    down: int = typer.Option(0, "--down", min=0, help="HCA links left down."),
    seed: int = typer.Option(1, "--seed", help="Random seed for miscabling and down links."),
    uplinks: Optional[int] = typer.Option(None, "--uplinks", min=1, max=64, help="Uplink ports per leaf (default: 64 - group)."),
    host_order: str = typer.Option("sequential", "--host-order", help="Host numbering: sequential, interleaved (across groups) or random."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to this file (atomically).", metavar="FILE"),
    fmt: SynthFormat = format_option(SynthFormat.ibnetdiscover, "The fabric as ibnetdiscover, ibnetdiscover -p, iblinkinfo or iblinkinfo --line output; json: print the ground truth (miscabled, down) and write ibnetdiscover output to -o."),
    follow: bool = FOLLOW_OPTION,
) -> None:
    """Write a SuperPOD-style rail-optimized fabric as ibnetdiscover (or -p, or iblinkinfo) output, for tests and
    benchmarks."""
    from ncclctl.fabric.synth import SynthSpec, synth

    if host_order not in ("sequential", "interleaved", "random"):
        raise usage(f"--host-order {host_order!r}: use sequential, interleaved or random")
    if uplinks is not None and uplinks < spines_per_rail:
        raise usage("--uplinks must be at least --spines-per-rail")
    result = synth(SynthSpec(nodes=nodes, rails=rails, group=group, spines_per_rail=spines_per_rail,
                             miscable=miscable, down=down, seed=seed, uplinks=uplinks, host_order=host_order))
    text = result.text
    if fmt is not SynthFormat.json and fmt is not SynthFormat.ibnetdiscover:
        from ncclctl.fabric.synth import as_form

        text = as_form(text, fmt.value)
    if output is None and follow:
        emit_result(b"", None, follow=follow)  # the usage error
    if output is not None:
        from ncclctl.fileio import write_atomic

        data = text.encode()
        write_atomic(output, data, follow=follow)
        sys.stderr.write(f"ncclctl: wrote {output} ({nodes:,} nodes x {rails} rails, {len(result.miscabled)} miscabled, "
                         f"{len(result.down)} down; {len(data):,} bytes)\n")
    if fmt is SynthFormat.json:
        out(dumps({"schema_version": JSON_SCHEMA_VERSION, "path": output, "nodes": nodes, "rails": rails,
                    "miscabled": [list(m) for m in result.miscabled], "down": [list(d) for d in result.down]}))
    elif output is None:
        sys.stdout.write(text)


# ---------------------------------------------------------------------------------------------------------------
# fabric load / rails / order


def _no_gc() -> None:
    """The fabric commands build a few hundred thousand long-lived objects and free them at exit: the cyclic
    garbage collector would only rescan them (a third of the run time at 4,096 nodes). One-shot process: off."""
    import gc

    gc.disable()


def _layout(fabric_file: Optional[str], inventory: Optional[str], rails: Optional[int] = None,
            expect_rate: Optional[str] = None):
    from ncclctl.fabric.layout import analyze
    from ncclctl.fabric.sources import load_input

    _no_gc()
    stage = _stages()
    stage("reading the fabric" + (f" {fabric_file}" if fabric_file else "") + (" and the inventory hosts" if inventory else ""))
    inp = load_input(fabric_file, inventory)
    stage("detecting the rail layout and checking the cabling")
    try:
        lay = analyze(inp, rails=rails, expect_rate=expect_rate)
    finally:
        stage(None)
    from ncclctl.cli import keep_until_exit

    keep_until_exit(inp, lay)
    return lay


def _stages():
    """Stage progress on stderr when it is a terminal (fabric runs on 32k nodes take seconds); silent otherwise."""
    if not sys.stderr.isatty() or os.environ.get("TERM") == "dumb":
        return lambda msg: None
    import time

    t0 = time.monotonic()
    shown = {"len": 0}

    def stage(msg: Optional[str]) -> None:
        line = "" if msg is None else f"ncclctl: {msg}... ({time.monotonic() - t0:.1f} s)"
        sys.stderr.write("\r" + line.ljust(shown["len"]) + ("\r" if msg is None else ""))
        sys.stderr.flush()
        shown["len"] = len(line)

    return stage


def _report(findings, fmt: ReportFormat, fail_on: FailOn, *, header: str, doc: dict, subject: str,
            config: Optional[str], rule: Optional[List[str]], show_info: bool, command: str, quiet: bool = False,
            color: Optional[ColorMode] = None) -> None:
    from ncclctl.findings import Severity
    from ncclctl.report import configured

    only = select_rules(rule, ("fabric",), command)
    cfg_path, cfg = load_config(config)
    # per-host ignores match each finding's host
    rep = configured(findings, subject=subject, fail_on=Severity(fail_on.value), config=cfg, only=only,
                     header=header, fields=(*doc.items(), ("config", cfg_path)), name=f"ncclctl {command}")
    emit_report(rep, fmt, show_info, quiet=quiet, color=color)


@fabric_app.command("load")
def fabric_load(
    fabric_file: Optional[str] = typer.Argument(None, help=FABRIC_ARG_HELP, metavar="[FABRIC_FILE]"),
    inventory: Optional[str] = typer.Option(None, "--inventory", "-i", help=INVENTORY_HELP, metavar="INV"),
    fmt: ReportFormat = format_option(ReportFormat.text),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help=FAIL_ON_HELP),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help=RULE_HELP, metavar="ID"),
    show_info: bool = SHOW_INFO_OPTION,
    quiet: bool = QUIET_OPTION,
    color: ColorMode = COLOR_OPTION,
) -> None:
    """Read a fabric (ibnetdiscover, ibnetdiscover -p, iblinkinfo, or the inventory hosts' LLDP) and summarise it."""
    from ncclctl.fabric.sources import load_findings, load_input, load_summary

    _no_gc()
    inp = load_input(fabric_file, inventory)
    header, doc = load_summary(inp)
    _report(load_findings(inp), fmt, fail_on, header=header, doc=doc, subject=fabric_file or inventory or "fabric",
            config=config, rule=rule, show_info=show_info, command="fabric load", quiet=quiet, color=color)


@fabric_app.command("rails")
def fabric_rails(
    fabric_file: Optional[str] = typer.Argument(None, help=FABRIC_ARG_HELP, metavar="[FABRIC_FILE]"),
    inventory: Optional[str] = typer.Option(None, "--inventory", "-i", help=INVENTORY_HELP, metavar="INV"),
    rails: Optional[int] = typer.Option(None, "--rails", min=1, max=64, help="Rails per host (default: what most hosts have)."),
    expect_rate: Optional[str] = typer.Option(None, "--expect-rate", help="Expected HCA link: Gb/s (400, 400G) or width+speed (4xNDR); default: the fabric's majority.", metavar="RATE"),
    fmt: ReportFormat = format_option(ReportFormat.text),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help=FAIL_ON_HELP),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help=RULE_HELP, metavar="ID"),
    show_info: bool = SHOW_INFO_OPTION,
    quiet: bool = QUIET_OPTION,
    color: ColorMode = COLOR_OPTION,
) -> None:
    """Detect the rail layout (which leaf serves which rail of which group) and check every host's cabling."""
    from ncclctl.fabric.layout import layout_doc, layout_text

    lay = _layout(fabric_file, inventory, rails, expect_rate)
    _report(lay.findings, fmt, fail_on, header=layout_text(lay), doc=layout_doc(lay),
            subject=fabric_file or inventory or "fabric", config=config, rule=rule, show_info=show_info,
            command="fabric rails", quiet=quiet, color=color)




@fabric_app.command("order")
def fabric_order(
    fabric_file: Optional[str] = typer.Argument(None, help=FABRIC_ARG_HELP, metavar="[FABRIC_FILE]"),
    inventory: Optional[str] = typer.Option(None, "--inventory", "-i", help=INVENTORY_HELP, metavar="INV"),
    fmt: OrderFormat = format_option(OrderFormat.text, "text (summary and cost model), hostfile (mpirun), slurm (topology.conf tree), slurm-block (topology.conf block) or json."),
    slots: Optional[int] = typer.Option(None, "--slots", min=1, max=1024, help="Slots (ranks) per host; default: the inventory's GPU count, else the rail count."),
    rails: Optional[int] = typer.Option(None, "--rails", min=1, max=64, help="Rails per host (default: what most hosts have)."),
    message_size: str = typer.Option("1G", "--message-size", help="Cost model: all-reduce size (bytes, or K/M/G).", metavar="SIZE"),
    hop_latency: float = typer.Option(0.2, "--hop-latency", min=0.0, help="Cost model: microseconds per link a ring step traverses.", metavar="US"),
    oversubscription: Optional[float] = typer.Option(None, "--oversubscription", min=0.01, help="Cost model: leaf downlink/uplink ratio (default: from the fabric's port counts).", metavar="RATIO"),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to this file (atomically) instead of stdout.", metavar="FILE"),
    check: bool = CHECK_OPTION,
    exit_code: bool = EXIT_CODE_OPTION,
    diff: bool = DIFF_OPTION,
    backup: bool = BACKUP_OPTION,
    follow: bool = FOLLOW_OPTION,
) -> None:
    """A host order for NCCL rings that keeps neighbours under one leaf group; crossings vs lower bound and naive.
    With --inventory, the hosts of each multi-node NVLink domain (GB200/GB300 NVL72) stay together."""
    from ncclctl.fabric import order as fo
    from ncclctl.fabric.cost import CostParams, parse_size

    size = parse_size(message_size)
    lay = _layout(fabric_file, inventory, rails)
    nvlink = _nvlink_domains(inventory) if inventory is not None else None
    slots = slots or fo.default_slots(lay)
    params = CostParams(message_bytes=size, hop_latency_us=hop_latency, ranks_per_host=slots,
                        oversubscription=oversubscription)
    # the sorted-name comparison and the cost model only where they are printed (text, json, the -o note)
    o = fo.plan_order(lay, slots=slots, params=params,
                      compare=fmt.value in ("text", "json") or output is not None, nvlink=nvlink)
    text = fo.render_order(o, lay, fmt.value)
    problems = [f for f in lay.findings if f.severity.value == "error"]
    if problems:
        note(f"note: {len(problems)} fabric error(s) (miscabling, down links...): see 'ncclctl fabric rails'")
    emit_result(text.encode(), output, check=check, diff=diff, backup=backup, follow=follow, exit_code=exit_code)
    if output is not None:
        note(f"{len(o.hosts)} hosts, ring crossings {o.crossings} (lower bound {o.lower_bound}, "
             f"sorted names {o.naive_crossings})")


def _nvlink_domains(inventory: str) -> dict[str, str] | None:
    """host -> the name ``fleet blocks`` gives its multi-node NVLink domain (hosts grouped by fabric cluster UUID and
    clique id, from the inventory's models or snapshots); None when no host reports one."""
    from ncclctl.fabric.slurm import block_names
    from ncclctl.inventory import load_inventory
    from ncclctl.lint.rules_fleet import FleetCtx, nvlink_domains, nvlink_facts

    hosts = [(h.name, {"nvlink": nvlink_facts(h.load_node())}) for h in load_inventory(inventory).hosts]
    domains = {k: [h for h, _ in v] for k, v in nvlink_domains(FleetCtx(hosts=hosts)).items()}
    if not domains:
        return None
    names = block_names(domains)
    return {h: names[k] for k, members in domains.items() for h in members}


@fabric_app.command("plan")
def fabric_plan(
    inventory: str = typer.Option(..., "--inventory", "-i", help="Cluster inventory YAML (hosts -> snapshot or node model; schemas/inventory.schema.json): the hosts to plan.", metavar="INV"),
    fabric: Optional[str] = typer.Option(None, "--fabric", help="ibnetdiscover (with or without -p) or iblinkinfo output; default: the inventory's 'fabric', else the hosts' LLDP neighbours (RoCE).", metavar="FILE"),
    output: str = typer.Option(..., "-o", "--output", help="The plan's folder (created when missing): hosts/<host>/nccl.conf and topo.xml, hostfile, topology.conf, plan.json.", metavar="DIR"),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Write what this NCCL version reads (rail/plane ids from 2.30.7).", metavar="X.Y[.Z]"),
    rail_map: Optional[str] = typer.Option(None, "--rail-map", help=RAIL_MAP_HELP, metavar="YAML"),
    topo_file: Optional[str] = typer.Option(None, "--topo-file", help="Set NCCL_TOPO_FILE in each nccl.conf to this absolute path (where topo.xml will be deployed).", metavar="PATH"),
    force: bool = typer.Option(False, "--force", help="Write into a folder that holds other files (only the plan's files are written; nothing is deleted)."),
    check: bool = CHECK_OPTION,
    fmt: Format = format_option(Format.text, "text (summary and findings) or json (the plan, the files written, the findings)."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help=FAIL_ON_HELP),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help=RULE_HELP, metavar="ID"),
    show_info: bool = SHOW_INFO_OPTION,
    quiet: bool = QUIET_OPTION,
    color: ColorMode = COLOR_OPTION,
) -> None:
    """Every host's nccl.conf and topo.xml and the host order (hostfile, Slurm topology.conf) from one fabric
    analysis, consistent across the fleet (docs/rails.md).

    Writes atomically and only on change (a re-run that changes nothing says 'unchanged' and keeps the mtimes).
    Hosts left out (not in the inventory, not in the rail layout) are listed in plan.json and reported."""
    from ncclctl.fabric.layout import analyze
    from ncclctl.fabric.plan import build_plan, plan_doc, plan_text, write_plan
    from ncclctl.fabric.sources import load_input
    from ncclctl.nccl.version import parse_option

    version = parse_option(nccl_version)
    _no_gc()
    stage = _stages()
    stage("reading the fabric and the inventory hosts")
    try:
        inp = load_input(fabric, inventory, keep_nodes=True)
        stage("detecting the rail layout")
        lay = analyze(inp)
        stage("generating the hosts' files")
        plan = build_plan(inp, lay, nccl_version=version, rail_map=rail_map, topo_file=topo_file)
        stage("writing")
        outcome = write_plan(plan, output, force=force, check=check)
    finally:
        stage(None)
    doc = plan_doc(plan, output, outcome)
    _report([*plan.findings, *outcome.findings], ReportFormat(fmt.value), fail_on,
            header=plan_text(plan, output, outcome), doc=doc, subject=inventory, config=config, rule=rule,
            show_info=show_info, command="fabric plan", quiet=quiet, color=color)
