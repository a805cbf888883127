"""``ncclctl rails`` and ``ncclctl rings graph|validate``: rails per GPU, NCCL graph files (NCCL_GRAPH_FILE)."""

from __future__ import annotations

from typing import List, Optional

import typer

from ncclctl.cli.common import (JSON_SCHEMA_VERSION, BACKUP_OPTION, CHECK_OPTION, CONFIG_HELP, DIFF_OPTION,
                                EXIT_CODE_OPTION, FABRIC_IDS_HELP, FAIL_ON_HELP, FOLLOW_OPTION, HOST_IDS_HELP,
                                RAIL_MAP_HELP, MODEL_HELP, NCCL_DEFAULT, ROOT_HELP, RULE_HELP,
                                SHOW_INFO_OPTION, COLOR_OPTION, QUIET_OPTION, ColorMode, FailOn, Format, GdrMode, ReportFormat, command_app, csv_list, dumps,
                                emit_result, format_option, load_node, note, out, read_xml, sub_app, validate_file)

rails_app = command_app()
rings_app = sub_app("NCCL graph XML (NCCL_GRAPH_FILE) with rail-pinned ring and tree channels.")


@rails_app.command("rails")
def rails_cmd(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help=MODEL_HELP, metavar="JSON"),
    compute_nics: Optional[str] = typer.Option(None, "--compute-nics", help="Comma-separated RDMA devices that carry NCCL traffic (default: each GPU's closest NICs).", metavar="LIST"),
    fabric: Optional[str] = typer.Option(None, "--fabric", help=FABRIC_IDS_HELP, metavar="FILE"),
    rail_map: Optional[str] = typer.Option(None, "--rail-map", help=RAIL_MAP_HELP, metavar="YAML"),
    host: Optional[str] = typer.Option(None, "--host", help=HOST_IDS_HELP, metavar="NAME"),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Write NCCL_IB_HCA as this NCCL version reads it (rail:plane ids from 2.30.7).", metavar="X.Y[.Z]"),
    fmt: Format = format_option(Format.text),
) -> None:
    """Assign each GPU its rail NIC port from PCIe locality; print the rail table and an exact NCCL_IB_HCA.

    With --fabric (the leaf each port lands on) or --rail-map, each rail also gets its fleet-wide rail/plane ids,
    written into NCCL_IB_HCA (name:port:rail:plane) for NCCL 2.30.7 and later."""
    from ncclctl.nccl.version import parse_option
    from ncclctl.fabric.railids import ids_from_options
    from ncclctl.plan.railids import pcie_ids
    from ncclctl.plan.rails import plan_doc, plan_rails, plan_text

    version = parse_option(nccl_version)
    node = load_node(root, model)
    plan = plan_rails(node, csv_list(compute_nics))
    ids = ids_from_options(node, plan, fabric_file=fabric, rail_map=rail_map, host=host)
    if ids is None:
        out(dumps(plan_doc(plan)) if fmt == Format.json else plan_text(plan))
        return
    from ncclctl.plan.railids import rails_doc, rails_text

    out(dumps(rails_doc(node, plan, ids, version)) if fmt == Format.json else rails_text(node, plan, ids, version))


@rings_app.command("graph")
def rings_graph(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help=MODEL_HELP, metavar="JSON"),
    compute_nics: Optional[str] = typer.Option(None, "--compute-nics", help="Comma-separated RDMA devices that carry NCCL traffic (sets NCCL_IB_HCA for the plan).", metavar="LIST"),
    nodes: int = typer.Option(2, "--nodes", "-N", min=2, max=4096, help="Nodes in the job (the graph is for multi-node jobs)."),
    env: Optional[List[str]] = typer.Option(None, "--env", "-e", help="NCCL setting KEY=VAL (repeatable); overrides the host's.", metavar="KEY=VAL"),
    gdr: GdrMode = typer.Option(GdrMode.auto, "--gdr", help="GPUDirect RDMA: auto (from the host's facts), on, off."),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Plan for this NCCL version.", metavar="X.Y[.Z]"),
    force: bool = typer.Option(False, "--force", help="Write NCCL's own layout even when a graph file adds nothing."),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to this file (atomically) instead of stdout.", metavar="FILE"),
    fmt: Optional[Format] = format_option(None, "json: print the plan and result record."),
    check: bool = CHECK_OPTION,
    exit_code: bool = EXIT_CODE_OPTION,
    diff: bool = DIFF_OPTION,
    backup: bool = BACKUP_OPTION,
    follow: bool = FOLLOW_OPTION,
) -> None:
    """An NCCL graph file that never does worse than NCCL's own search (usually: none is needed).

    Runs NCCL's own channel search for the node and its settings; writes a file only when a layout beats it (e.g.
    NCCL_PXN_DISABLE=1 on a VM), or NCCL's own layout with --force. Net devs follow the node's NCCL_IB_HCA (pinned to
    the rails when unset: set it with the file).
    """
    from ncclctl.nccl.predict import parse_env
    from ncclctl.nccl.version import parse_option
    from ncclctl.plan.rings import plan_graph

    version = parse_option(nccl_version)
    plan = plan_graph(load_node(root, model), compute_nics=csv_list(compute_nics), nodes=nodes, env=parse_env(env),
                      gdr=gdr.value, version=version)
    for n in plan.notes:
        note(n)
    extra = {"improves": plan.improves, "reason": plan.reason, "pinned_settings": plan.pinned, **plan.info}
    if not plan.improves and not force:
        note(plan.reason)
        if fmt == Format.json:
            out(dumps({"schema_version": JSON_SCHEMA_VERSION, "changed": False, "written": False,
                       "path": output, **extra}))
        return
    if not plan.improves and plan.single_node is not None:
        one = plan.single_node()
        if one:
            note(one)
            extra["single_node"] = one
    note(plan.reason if plan.improves else "written with --force: NCCL's own layout (" + plan.reason.split("(", 1)[1]
         .split(")")[0] + ")")
    emit_result(plan.data, output, check=check, diff=diff, backup=backup, follow=follow, exit_code=exit_code,
                json_record=fmt == Format.json, extra={"written": True, **extra}, content_key="xml")


@rings_app.command("validate")
def rings_validate(
    file: str = typer.Argument(..., help="Graph XML file (NCCL_GRAPH_FILE).", metavar="FILE"),
    root: Optional[str] = typer.Option(None, "--root", help="Also check the file against this captured host.", metavar="DIR"),
    live: bool = typer.Option(False, "--live", help="Also check the file against this host."),
    topo: Optional[str] = typer.Option(None, "--topo", help="The topology NCCL reads (NCCL_TOPO_FILE) to check the graph's meaning with (with --root/--live: default the host's NCCL_TOPO_FILE, else what 'topo generate' writes for it).", metavar="FILE"),
    env: Optional[List[str]] = typer.Option(None, "--env", "-e", help="NCCL setting KEY=VAL (repeatable); overrides the host's environment and conf files.", metavar="KEY=VAL"),
    gdr: GdrMode = typer.Option(GdrMode.auto, "--gdr", help="GPUDirect RDMA: auto (from the host's peer-memory/DMA-BUF facts; on without a host), on, off."),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Validate for this NCCL version.", metavar="X.Y[.Z]"),
    fmt: ReportFormat = format_option(ReportFormat.text),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help=FAIL_ON_HELP),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help=RULE_HELP, metavar="ID"),
    show_info: bool = SHOW_INFO_OPTION,
    quiet: bool = QUIET_OPTION,
    color: ColorMode = COLOR_OPTION,
) -> None:
    """Validate a graph file as NCCL reads it (structure, types, channel counts), against a host, and what it means
    there: path types, speeds, crossnic, NICs, GPU sets and net devs against NCCL's model of the node (--topo, or
    --root/--live)."""
    from ncclctl.nccl.predict import parse_env
    from ncclctl.plan.rings import require_graph_file
    from ncclctl.topo.filecheck import Meaning

    require_graph_file(file)
    if topo is not None:
        read_xml(topo)  # unreadable: exit 3 before anything else
    meaning = Meaning(topo=topo, env=parse_env(env), gdr=gdr.value)
    validate_file(file, root=root, live=live, nccl_version=nccl_version, fmt=fmt, fail_on=fail_on, xsd=True,
                  config=config, rule=rule, show_info=show_info, quiet=quiet, color=color, command="rings validate", meaning=meaning)
