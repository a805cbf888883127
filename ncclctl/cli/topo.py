"""``ncclctl topo generate|validate|show|diff``: NCCL topology files (NCCL_TOPO_FILE)."""

from __future__ import annotations

from typing import List, Optional

import typer

from ncclctl.cli.common import (BACKUP_OPTION, CHECK_OPTION, CONFIG_HELP, DIFF_OPTION, EXIT_CODE_OPTION,
                                FABRIC_IDS_HELP, FAIL_ON_HELP, FOLLOW_OPTION, HOST_IDS_HELP, RAIL_MAP_HELP, JSON_SCHEMA_VERSION, MODEL_HELP, NCCL_DEFAULT, ROOT_HELP,
                                RULE_HELP, SHOW_INFO_OPTION, COLOR_OPTION, QUIET_OPTION, ColorMode, FailOn, Format, GdrMode, ReportFormat, ShowFormat, csv_list,
                                dumps, emit_result, format_option, load_node, note, out, read_xml, sub_app, usage,
                                validate_file)
from ncclctl.errors import ExitCode

topo_app = sub_app("NCCL topology XML (NCCL_TOPO_FILE): generate, validate, show, diff, predict.")


@topo_app.command("generate")
def topo_generate(
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help=MODEL_HELP, metavar="JSON"),
    spec: Optional[str] = typer.Option(None, "--spec", help="Virtual layout spec (YAML) for flat-PCIe VMs.", metavar="YAML"),
    profile: Optional[str] = typer.Option(None, "--profile", help="Built-in virtual layout: h100, a100 or pairs.", metavar="NAME"),
    output: Optional[str] = typer.Option(None, "-o", "--output", help="Write to this file (atomically) instead of stdout.", metavar="FILE"),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Never write what this NCCL version cannot read.", metavar="X.Y[.Z]"),
    minimal: bool = typer.Option(False, "--minimal", help="Only the cpu/pci skeleton; NCCL detects GPUs and NICs itself."),
    nics: Optional[str] = typer.Option(None, "--nics", help="Comma-separated RDMA devices to include (default: all with an active port).", metavar="LIST"),
    fabric: Optional[str] = typer.Option(None, "--fabric", help=FABRIC_IDS_HELP, metavar="FILE"),
    rail_map: Optional[str] = typer.Option(None, "--rail-map", help=RAIL_MAP_HELP, metavar="YAML"),
    host: Optional[str] = typer.Option(None, "--host", help=HOST_IDS_HELP, metavar="NAME"),
    fmt: Optional[Format] = format_option(None, "json: print a result record instead of the XML (with -o: whether the file changed)."),
    check: bool = CHECK_OPTION,
    exit_code: bool = EXIT_CODE_OPTION,
    diff: bool = DIFF_OPTION,
    backup: bool = BACKUP_OPTION,
    follow: bool = FOLLOW_OPTION,
) -> None:
    """Generate an NCCL topology file for this node (bare metal) or a virtual layout (VMs)."""
    from ncclctl.nccl.version import parse_option
    from ncclctl.nccl import detect as gen

    version = parse_option(nccl_version)
    if spec is not None and profile is not None:
        raise usage("give --spec or --profile, not both")
    node = load_node(root, model)
    rail_ids = None
    if fabric is not None or rail_map is not None:
        from ncclctl.fabric.railids import ids_from_options
        from ncclctl.plan.rails import plan_rails

        rail_ids = ids_from_options(node, plan_rails(node), fabric_file=fabric, rail_map=rail_map, host=host)
    data, layout, message = gen.generate_for(node, nccl_version=version, minimal=minimal, nics=csv_list(nics),
                                             spec=spec, profile=profile, rail_ids=rail_ids)
    if message:
        note(message)
    emit_result(data, output, check=check, diff=diff, backup=backup, follow=follow, exit_code=exit_code,
                json_record=fmt == Format.json,
                extra={"layout": layout.name if layout else "bare-metal",
                       "elements": data.count(b"<") - data.count(b"</"), "nccl_version": str(version)},
                content_key="xml")


@topo_app.command("validate")
def topo_validate(
    file: str = typer.Argument(..., help="Topology (NCCL_TOPO_FILE) or graph (NCCL_GRAPH_FILE) XML file.", metavar="FILE"),
    root: Optional[str] = typer.Option(None, "--root", help="Also check the file against this captured host.", metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help="Also check the file against this host model (ncclctl probe --format json).", metavar="JSON"),
    live: bool = typer.Option(False, "--live", help="Also check the file against this host."),
    fabric: Optional[str] = typer.Option(None, "--fabric", help="Check the <net> rail=/plane= against the leaf each port lands on in this fabric (ibnetdiscover / iblinkinfo output; needs a host).", metavar="FILE"),
    rail_map: Optional[str] = typer.Option(None, "--rail-map", help="Check the <net> rail=/plane= against a rail map (YAML: switches:, subnets:, hosts:) when the fabric does not give them.", metavar="YAML"),
    host: Optional[str] = typer.Option(None, "--host", help=HOST_IDS_HELP, metavar="NAME"),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Validate for this NCCL version.", metavar="X.Y[.Z]"),
    fmt: ReportFormat = format_option(ReportFormat.text),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help=FAIL_ON_HELP),
    xsd: bool = typer.Option(True, "--xsd/--no-xsd", help="Also check structure against the XSD schema."),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help=RULE_HELP, metavar="ID"),
    show_info: bool = SHOW_INFO_OPTION,
    quiet: bool = QUIET_OPTION,
    color: ColorMode = COLOR_OPTION,
) -> None:
    """Validate a topology or graph file exactly as NCCL reads it (and against a host with --root/--model/--live,
    its rail/plane ids against the fabric with --fabric or --rail-map)."""
    rails = None
    if fabric is not None or rail_map is not None:
        from ncclctl.topo.filecheck import RailSource

        rails = RailSource(fabric=fabric, rail_map=rail_map, host=host)
    elif host is not None:
        raise usage("--host names the node in the fabric or rail map: give --fabric FILE or --rail-map FILE")
    validate_file(file, root=root, live=live, nccl_version=nccl_version, fmt=fmt, fail_on=fail_on, xsd=xsd,
                  config=config, rule=rule, show_info=show_info, quiet=quiet, color=color, command="topo validate", model=model, rails=rails)


@topo_app.command("show")
def topo_show(
    file: str = typer.Argument(..., help="Topology XML file (NCCL_TOPO_FILE or an NCCL_TOPO_DUMP_FILE output).", metavar="FILE"),
    fmt: ShowFormat = format_option(ShowFormat.tree),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Read as this NCCL version does.", metavar="X.Y[.Z]"),
) -> None:
    """Show what NCCL understands from a topology file: the tree it keeps and the GPU/NIC paths it implies."""
    from ncclctl.nccl.version import parse_option
    from ncclctl.topo import show
    from ncclctl.topo.interpret import load_view

    view = load_view(read_xml(file), path=file, nccl_version=parse_option(nccl_version))
    renderers = {ShowFormat.json: lambda v: dumps(show.view_doc(v)), ShowFormat.matrix: show.matrix_text,
                 ShowFormat.tree: show.tree_text}
    out(renderers[fmt](view))


@topo_app.command("diff")
def topo_diff(
    a: str = typer.Argument(..., help="The old topology file.", metavar="OLD"),
    b: str = typer.Argument(..., help="The new topology file.", metavar="NEW"),
    fmt: Format = format_option(Format.text),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Read both files as this NCCL version does.", metavar="X.Y[.Z]"),
) -> None:
    """Semantic diff of two topology files (devices, links, attributes), blind to formatting and order, with what
    each change means to NCCL (CPU sets, link bandwidth, NUMA moves) and what NCCL then decides differently (NETs,
    path types and GPUDirect RDMA per GPU, GPU-GPU paths, CPU binding), from NCCL's model of each file.

    Exit 0 when they mean the same to NCCL, 1 when they differ.
    """
    from ncclctl.nccl.version import parse_option
    from ncclctl.topo import show
    from ncclctl.topo.explain import consequence_lines, explain
    from ncclctl.topo.interpret import load_view

    version = parse_option(nccl_version)
    va = load_view(read_xml(a), path=a, nccl_version=version)
    vb = load_view(read_xml(b), path=b, nccl_version=version)
    changes, notes, cons = explain(va, vb, show.diff(va, vb), version)
    if fmt == Format.json:
        out(dumps({"schema_version": JSON_SCHEMA_VERSION, "a": a, "b": b, "same": not changes, "changes": changes,
                   "notes": notes, "consequences": cons}))
    else:
        out(show.diff_text(changes, a, b, notes, consequence_lines(cons) if cons else []))
    if changes:
        raise typer.Exit(int(ExitCode.FINDINGS))


@topo_app.command("predict")
def topo_predict(
    file: Optional[str] = typer.Argument(None, help="Topology file (NCCL_TOPO_FILE); or use --root/--model.", metavar="[FILE]"),
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP, metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help=MODEL_HELP, metavar="JSON"),
    nodes: int = typer.Option(1, "--nodes", "-N", min=1, max=4096, help="Nodes in the job (identical to this one)."),
    env: Optional[List[str]] = typer.Option(None, "--env", "-e", help="NCCL setting KEY=VAL (repeatable); overrides the host's environment and conf files.", metavar="KEY=VAL"),
    gdr: GdrMode = typer.Option(GdrMode.auto, "--gdr", help="GPUDirect RDMA: auto (from the host's peer-memory/DMA-BUF facts; on for a file), on, off."),
    graph: Optional[str] = typer.Option(None, "--graph", help="Graph file NCCL loads (NCCL_GRAPH_FILE) instead of searching; overrides the host's.", metavar="FILE"),
    nccl_version: str = typer.Option(NCCL_DEFAULT, "--nccl-version", help="Predict for this NCCL version.", metavar="X.Y[.Z]"),
    fabric: Optional[str] = typer.Option(None, "--fabric", help=FABRIC_IDS_HELP + " With --root/--model the topology NCCL detects carries them (as topo generate --fabric writes it); with a FILE (and --host) they only judge rail alignment.", metavar="FILE"),
    rail_map: Optional[str] = typer.Option(None, "--rail-map", help=RAIL_MAP_HELP + " Needs --root/--model.", metavar="YAML"),
    host: Optional[str] = typer.Option(None, "--host", help=HOST_IDS_HELP, metavar="NAME"),
    fmt: Format = format_option(Format.text),
) -> None:
    """Predict what NCCL will do on this node: NICs, paths, GPUDirect RDMA, rings and trees, protocols, rail
    alignment across nodes, and why."""
    from ncclctl.nccl.predict import Inputs, inputs_for_node, parse_env, predict_xml, render_text
    from ncclctl.nccl.version import parse_option

    version = parse_option(nccl_version)
    overrides = parse_env(env)
    given = [x for x in (file, root, model) if x is not None]
    if len(given) > 1:
        raise usage("give one of FILE, --root and --model")
    if host is not None and fabric is None and rail_map is None:
        raise usage("--host names the node in the fabric or rail map: give --fabric FILE or --rail-map FILE")
    path = None
    if file is not None:
        if rail_map is not None:
            raise usage("--rail-map needs the node (--root DIR or --model JSON); with a FILE give --fabric and --host")
        if fabric is not None and host is None:
            raise usage("with a FILE, --fabric needs --host NAME (the node's name in the fabric)")
        data = read_xml(file)
        path = file
        inputs = Inputs(source=file, nodes=nodes, env=overrides, env_origin={k: "--env" for k in overrides},
                        version=version)
        if gdr != GdrMode.auto:
            inputs.gdr, inputs.gdr_why = gdr == GdrMode.on, f"--gdr {gdr.value}"
        down: frozenset = frozenset()
        if fabric is not None:
            from ncclctl.fabric.railids import port_ids

            got = port_ids(None, fabric_file=fabric, rail_map=None, host=host)
            assert got is not None
            by_name: dict[str, list] = {}
            for key, rid in got.ids.items():
                by_name.setdefault(key.rpartition(":")[0], []).append(rid)
            inputs.known_ids = {name: (r[0].rail, r[0].plane, "fabric") for name, r in by_name.items() if len(r) == 1}
            inputs.notes.append(f"rail/plane ids from the fabric ({got.detail}) judge rail alignment only: NCCL sees "
                                "the file's rail=/plane= (and NCCL_IB_HCA's), not the fabric")
    else:
        # NCCL's model reads no RoCE QoS; the rail ids from --fabric/--rail-map may need the ports' LLDP neighbours
        node = load_node(root, model, roce_qos=fabric is not None or rail_map is not None)
        source = root or model or "this host"
        rail_ids = None
        if fabric is not None or rail_map is not None:
            from ncclctl.fabric.railids import ids_from_options
            from ncclctl.plan.rails import plan_rails

            rail_ids = ids_from_options(node, plan_rails(node), fabric_file=fabric, rail_map=rail_map, host=host)
        data, inputs, down = inputs_for_node(node, nodes=nodes, env=overrides, version=version, gdr=gdr.value,
                                             source=source, rail_ids=rail_ids)
    if graph is not None:
        inputs.graph_file, inputs.graph_path = read_xml(graph), graph
        inputs.notes.append(f"NCCL loads {graph} (--graph) instead of searching: its channels are trusted, not checked "
                            "(ncclctl rings validate checks them)")
    pred = predict_xml(data, inputs=inputs, down=down, path=path)
    mnnvl = None
    if file is None:  # the node's NVML fabric info and IMEX facts: whether NCCL turns on multi-node NVLink
        from ncclctl.nccl.mnnvl import decide

        mnnvl = decide(node, nodes=nodes, env=inputs.env)
    if fmt == Format.json:
        doc = {"schema_version": JSON_SCHEMA_VERSION, **pred.to_json()}
        if mnnvl is not None:
            doc["mnnvl"] = mnnvl.to_json()
        out(dumps(doc))
    else:
        text = render_text(pred)
        if mnnvl is not None:
            from ncclctl.nccl.mnnvl import render

            text += "\n" + render(mnnvl)
        out(text)
