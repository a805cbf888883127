"""``ncclctl fleet lint``: every node of a fleet, then the fleet rules across them."""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

from ncclctl.cli.common import (BlocksFormat, COLOR_OPTION, QUIET_OPTION, ColorMode, use_color, FleetFormat, CONFIG_HELP, OUTPUT_OPTION, SHOW_INFO_OPTION, FailOn, format_option,
                                load_config, out, run_time, select_rules, sub_app, usage, write_output)
from ncclctl.errors import ExitCode

fleet_app = sub_app("Fleet-wide checks over many snapshots or node models.")




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
    inventory: Optional[str] = typer.Option(None, "--inventory", "-i", help="Cluster inventory naming each host's snapshot or model: ncclctl's YAML (see 'ncclctl schema inventory') or an Ansible inventory (INI or YAML). With --facts: the hosts that should have reported (an inventory, whatever its hosts' variables, or a hostlist such as gpu[001-128]); a host without facts is reported silent (exit 3).", metavar="FILE"),
    facts: bool = typer.Option(False, "--facts", help="The arguments are 'ncclctl facts' documents (Ansible's ncclctl.fact fetched per host, or its JSON fact cache) or the nodes' 'ncclctl lint --format prom' textfiles (HOST.prom): files, or folders searched for them. The node findings are those each host recorded; the fleet rules compare the hosts on what the sources hold (a textfile has no RoCE addresses nor NVLink domain: said in a note)."),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    expect: Optional[str] = typer.Option(None, "--expect", help="Also compare every host with this expected-state profile.", metavar="FILE"),
    fmt: FleetFormat = format_option(FleetFormat.text, "Output format: text, json, sarif, junit, prom (a node_exporter textfile with a host label, docs/operations.md section 5)."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding on any host reaches this severity."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, max=1024, help="Worker processes (default: the CPU count)."),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help="Run only this rule (id or slug; repeat or comma-separate).", metavar="ID"),
    host_timeout: float = typer.Option(60.0, "--host-timeout", min=0.1, help="Seconds one host may take to load and lint; a host past it is reported, the rest are linted.", metavar="SECONDS"),
    show_info: bool = SHOW_INFO_OPTION,
    quiet: bool = QUIET_OPTION,
    color: ColorMode = COLOR_OPTION,
    output: Optional[str] = OUTPUT_OPTION,
) -> None:
    """Lint every node of a fleet and compare them: MTU, firmware, driver, NCCL settings, GPU/NIC counts, rails.
    With --facts, read what each host's 'ncclctl facts' (or 'ncclctl lint --format prom') recorded instead of
    probing snapshots.

    Exit codes: 0 clean, 1 findings at or above --fail-on on some host, 3 invalid input (including a host
    whose snapshot, facts document or textfile cannot be read; the others are still linted and reported), 4 a
    host past --host-timeout (and none unreadable).
    """
    from ncclctl import report
    from ncclctl.findings import Severity
    from ncclctl.lint.fleet import (exit_code, lint_fleet, sources_from_facts, sources_from_inventory,
                                    sources_from_paths)

    if facts and not snapshots:
        raise usage("--facts reads the facts documents or textfiles given as arguments: give files or folders",
                    fix="ncclctl fleet lint --facts fetched/  [--inventory hosts.ini]")
    if not facts and bool(snapshots) == (inventory is not None):
        raise usage("give snapshots or --inventory (one of the two)",
                    fix="ncclctl fleet lint snaps/*  or  ncclctl fleet lint --inventory cluster.yaml  or  "
                        "ncclctl fleet lint --facts fetched/")
    if facts and expect is not None:
        raise usage("--facts reads the facts files given as arguments; it takes no --expect "
                    "(an expected-state profile needs the node itself)",
                    fix="ncclctl fleet lint --facts fetched/  (or --expect with snapshots)")
    only = select_rules(rule, ("node", "fleet"), "fleet lint")
    cfg_path, cfg = load_config(config)
    profile = None
    if expect is not None:
        from ncclctl.lint.expect import load_profile

        profile = load_profile(expect)
    expected = None
    if facts:
        sources = sources_from_facts(snapshots or [])
        if inventory is not None:
            from ncclctl.inventory import host_names

            expected = host_names(inventory)
    else:
        sources = sources_from_inventory(inventory) if inventory is not None else sources_from_paths(snapshots or [])
    result = lint_fleet(sources, cfg, expect=profile, jobs=jobs, only=only, progress=_progress(),
                        host_timeout=host_timeout)
    if expected is not None:
        from ncclctl.lint.fleet import account_for

        account_for(result, expected, inventory or "")
    threshold = Severity(fail_on.value)
    if fmt == FleetFormat.prom:
        from ncclctl.report.prom import fleet_textfile

        text = fleet_textfile(result, threshold, now=run_time())
    else:
        text = report.render_fleet(result, fmt.value, fail_on=threshold, show_info=show_info, quiet=quiet,
                                   fields=(("config", cfg_path), ("extends", cfg.extends), ("expect", expect)))
    if output is not None:
        write_output(text, output)
        if fmt in (FleetFormat.json, FleetFormat.sarif, FleetFormat.junit):  # the text beside the file (CI)
            out(report.render_fleet(result, "text", fail_on=threshold, show_info=show_info, quiet=quiet),
                color=use_color(color))
    else:
        out(text, color=fmt == FleetFormat.text and use_color(color))
    code = exit_code(result, threshold)
    if code != ExitCode.OK:
        raise typer.Exit(code)


@fleet_app.command("blocks")
def fleet_blocks(
    snapshots: Optional[List[str]] = typer.Argument(None, metavar="SNAPSHOT...", help="Snapshot folders, .tar.gz snapshots or node-model JSON files."),
    inventory: Optional[str] = typer.Option(None, "--inventory", "-i", help="Cluster inventory YAML naming each host's snapshot or model.", metavar="FILE"),
    check: Optional[str] = typer.Option(None, "--check", help="Hold this Slurm topology.conf (block form) or topology.yaml (25.05+; every block topology in it) against the NVLink domains instead of writing one.", metavar="FILE"),
    slurm_format: BlocksFormat = format_option(BlocksFormat.slurm_block, "What to write: slurm-block (topology.conf, Slurm 23.11+), slurm-yaml (topology.yaml, Slurm 25.05+) or hostfile (the host order for a job: NVLink domains kept whole, in order)."),
    nodes: Optional[int] = typer.Option(None, "--nodes", "-N", min=1, max=100_000, help="With --format hostfile: the job's host count: the fewest domains that hold it (one domain when one is big enough).", metavar="N"),
    slots: Optional[int] = typer.Option(None, "--slots", min=1, max=1024, help="With --format hostfile: write 'slots=N' on each line (ranks per host; 4 on a GB200 tray).", metavar="N"),
    block_size: Optional[int] = typer.Option(None, "--block-size", min=1, max=4096, help="BlockSizes written (default: the smallest domain's host count, as 'fabric order -f slurm-block' does: Slurm needs every block to hold the base block size; 18 for full NVL72 racks)."),
    imex_dir: Optional[str] = typer.Option(None, "--imex-dir", help="Also write each domain's IMEX node list to DIR/<block>.nodes_config.cfg (the members' IPv4 addresses).", metavar="DIR"),
) -> None:
    """Slurm block topology from the fleet's multi-node NVLink domains (GB200/GB300 NVL72): one block per domain,
    hosts grouped by (fabric cluster UUID, clique id). With --check, report where a topology.conf disagrees.

    Exit codes: 0 written / agrees, 1 the file disagrees (an error), 3 invalid input.
    """
    from ncclctl.fabric.slurm import (block_conf, block_yaml, check_blocks, is_topology_yaml, parse_topology_conf,
                                      parse_topology_yaml, render_problems)
    from ncclctl.inputs import read_text
    from ncclctl.inventory import load_model, load_snapshot
    from ncclctl.lint.fleet import sources_from_inventory, sources_from_paths
    from ncclctl.lint.rules_fleet import FleetCtx, nvlink_domains, nvlink_facts

    if bool(snapshots) == (inventory is not None):
        raise usage("give snapshots or --inventory (one of the two)",
                    fix="ncclctl fleet blocks --inventory cluster.yaml  [--check /etc/slurm/topology.conf]")
    if (nodes is not None or slots is not None) and slurm_format != BlocksFormat.hostfile:
        raise usage("--nodes and --slots go with --format hostfile",
                    fix="ncclctl fleet blocks --inventory cluster.yaml --format hostfile --nodes 16")
    sources = sources_from_inventory(inventory) if inventory is not None else sources_from_paths(snapshots or [])
    hosts = []
    for src in sources:
        node = load_model(src.path) if src.kind == "model" else load_snapshot(src.path)
        hosts.append((src.name or node.hostname, {"nvlink": nvlink_facts(node)}))  # all the domains need
    domains = {k: [h for h, _ in v] for k, v in nvlink_domains(FleetCtx(hosts=hosts)).items()}
    if not domains:
        raise usage("no host reports a multi-node NVLink domain (NVML fabric cluster UUID and clique id)",
                    fix="give GB200/GB300 NVL hosts captured with 'ncclctl snapshot' on a driver that reports fabric info")
    if imex_dir is not None:
        from ncclctl.fabric.slurm import block_names, imex_nodes_config
        from ncclctl.fileio import emit

        facts = dict(hosts)
        names = block_names(domains)
        for (uuid, clique), members in domains.items():
            addrs = []
            for h in members:
                nv = facts[h]["nvlink"]
                ips = [a for a in nv["addresses"] if a.replace(".", "").isdigit()]
                addrs.append(ips[0] if ips else h)
            emit(f"{imex_dir.rstrip('/')}/{names[(uuid, clique)]}.nodes_config.cfg",
                 imex_nodes_config(uuid, clique, addrs).encode())
    if check is None and slurm_format == BlocksFormat.hostfile:
        from ncclctl.fabric.slurm import domain_order, hostfile

        try:
            order = domain_order(domains, nodes)
        except ValueError as exc:
            raise usage(str(exc), fix="ask for fewer hosts (--nodes), or give the whole fleet") from None
        if len(order) > 1 and nodes is not None:
            sys.stderr.write(f"note: {nodes} hosts span {len(order)} NVLink domains: NCCL crosses between them over "
                             f"the NICs (MNNVL only inside a domain)\n")
        out(hostfile(order, slots=slots))
        return
    if check is None:
        write = block_yaml if slurm_format == BlocksFormat.slurm_yaml else block_conf
        smallest = min(domains.items(), key=lambda kv: (len(kv[1]), kv[0]))
        if block_size is None and len(smallest[1]) < max(len(v) for v in domains.values()):
            (uuid, clique), members = smallest
            sys.stderr.write(f"note: BlockSizes={len(members)}, the smallest NVLink domain's size (cluster {uuid} "
                             f"clique {clique}: {', '.join(members[:4])}): a partial domain, such as a tray left in "
                             f"another partition, lowers the base block size of every block; re-register it or give "
                             f"--block-size\n")
        out(write(domains, block_size=block_size or len(smallest[1])))
        return
    text = read_text(check, kind="slurm")
    if is_topology_yaml(text, check):
        topologies = [(f"topology {t.name}: ", t.topology) for t in parse_topology_yaml(text, source=check)]
    else:
        topologies = [("", parse_topology_conf(text, source=check))]
    failed = False
    for label, topo in topologies:
        problems = check_blocks(topo, domains, source=check)
        if problems:
            out(render_problems(problems, check, prefix=label))
        else:
            out(f"{check}: {label}{len(topo.blocks)} block(s) agree with {len(domains)} NVLink domain(s)\n")
        failed = failed or any(p.severity == "error" for p in problems)
    if failed:
        raise typer.Exit(ExitCode.FINDINGS)
