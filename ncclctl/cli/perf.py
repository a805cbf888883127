"""``ncclctl perf check``: nccl-tests results against the bus bandwidth the hardware should give."""

from __future__ import annotations

from typing import Any, List, Optional

import typer

from ncclctl.cli.common import (COLOR_OPTION, QUIET_OPTION, ColorMode, OUTPUT_OPTION, CheckFormat, engine_answer, CONFIG_HELP, FAIL_ON_HELP, MODEL_HELP, ROOT_HELP, RULE_HELP, SHOW_INFO_OPTION, FailOn,
                                emit_report, format_option, load_config, select_rules, sub_app, usage)

perf_app = sub_app("nccl-tests results: bus bandwidth per collective against what the hardware should give.")


@perf_app.command("check")
def perf_check(
    results: List[str] = typer.Argument(..., help="nccl-tests output: text (with or without NCCL INFO lines, "
                                        "launcher prefixes) or the -J JSON file; files, folders or - for stdin.",
                                        metavar="RESULT..."),
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP + " The hardware of every node.", metavar="DIR"),
    model: Optional[str] = typer.Option(None, "--model", help=MODEL_HELP, metavar="JSON"),
    inventory: Optional[str] = typer.Option(None, "--inventory", "-i", help="Cluster inventory: each host's node "
                                            "(hosts named by the result's Rank lines).", metavar="INV"),
    nodes: Optional[int] = typer.Option(None, "--nodes", "-N", min=1, max=100_000,
                                        help="Nodes the test ran on (default: the hosts its Rank lines name)."),
    min_efficiency: Optional[float] = typer.Option(None, "--min-efficiency", min=0.0, max=1.5,
                                                   help="Measured/expected below this is an error (PERF001 "
                                                   "min_efficiency; default 0.6)."),
    fmt: CheckFormat = format_option(CheckFormat.text, "Output format: text, json, sarif, junit, prom (a node_exporter textfile, docs/operations.md section 5)."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help=FAIL_ON_HELP),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help=RULE_HELP, metavar="ID"),
    show_info: bool = SHOW_INFO_OPTION,
    quiet: bool = QUIET_OPTION,
    color: ColorMode = COLOR_OPTION,
    output: Optional[str] = OUTPUT_OPTION,
) -> None:
    """Expected bus bandwidth from the node (NVLink generation, NICs x rate, PCIe) and the efficiency of each
    test's large messages; results below a fraction are findings with the likely causes from the NCCL log."""
    from ncclctl.findings import Severity
    from ncclctl.logs import perf
    from ncclctl.logs.check import check as log_check
    from ncclctl.logs.parse import read_logs
    from ncclctl.registry import rules_of
    from ncclctl.report import configured

    def make() -> Any:
        if sum(x is not None for x in (root, model, inventory)) > 1:
            raise usage("give one of --root, --model or --inventory")
        only = select_rules(rule, ("perf",), "ncclctl perf check")
        cfg_path, cfg = load_config(config)
        options = {r.id: cfg.options(r) for r in rules_of(scope="perf")}
        if min_efficiency is not None:
            options["PERF001"]["min_efficiency"] = min_efficiency
            options["PERF001"]["warn_efficiency"] = max(min_efficiency, options["PERF001"]["warn_efficiency"])
        if "-" in results and len(results) > 1:
            raise usage("stdin (-) can only be the one input")
        tests, notes = perf.read_results(results, min_bytes=int(options["PERF001"]["min_bytes"]))
        hardware: dict[str, perf.Hardware] = {}
        if root is not None or model is not None:
            from ncclctl.cli.common import load_node

            hardware["*"] = perf.hardware_from_node(load_node(root, model), root or model or "")
        elif inventory is not None:
            from ncclctl.inventory import load_inventory

            inv = load_inventory(inventory)
            seen: dict[str, perf.Hardware] = {}
            for t in tests:
                for h in t.hosts:
                    ih = inv.host(h)
                    if ih is not None and h not in hardware:
                        if ih.source not in seen:
                            seen[ih.source] = perf.hardware_from_node(ih.load_node(), ih.source)
                        hardware[h] = seen[ih.source]
        mb = options["PERF001"]["min_bytes"]
        res = perf.evaluate(tests, hardware=hardware or None, nodes=nodes, min_bytes=int(mb))
        causes = []
        if results != ["-"]:
            ls = read_logs(results)
            if ls.nccl_lines:
                causes = log_check(ls)
        findings = perf.check(res, options=options, causes=causes)
        header = perf.text(res) + "".join(f"note: {n}\n" for n in notes)
        if not tests:
            header += "no nccl-tests result in the input\n"
        subject = results[0] if len(results) == 1 else f"{len(results)} results"
        rep = configured(findings, subject=subject, fail_on=Severity(fail_on.value), config=cfg, only=only,
                         header=header, name="ncclctl perf check", evidence=True,
                         fields=(("results", [r.doc() for r in res]), ("notes", notes), ("config", cfg_path)))
        return rep

    if fmt == CheckFormat.prom:
        engine_answer(make, "prom", command="perf check", output=output)
    emit_report(make(), fmt, show_info, output, quiet=quiet, color=color)
