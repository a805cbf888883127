"""``ncclctl log show|check|diff``: what NCCL actually did, from NCCL_DEBUG=INFO logs."""

from __future__ import annotations

from typing import Any, List, Optional

import typer

from ncclctl.cli.common import (COLOR_OPTION, QUIET_OPTION, ColorMode, OUTPUT_OPTION, CheckFormat, engine_answer, CONFIG_HELP, FAIL_ON_HELP, JSON_SCHEMA_VERSION, ROOT_HELP, RULE_HELP, SHOW_INFO_OPTION,
                                FailOn, Format, dumps, emit_report, format_option, load_config, out,
                                select_rules, sub_app, usage)

log_app = sub_app("NCCL_DEBUG logs: show what NCCL did (versions, NICs, transports, rings, trees), check it "
                  "against rules and the node's model, diff two runs.")

LOG_HELP = ("NCCL_DEBUG=INFO logs: files (plain or .gz), folders (every file in them) or - for stdin; any number, "
            "of one rank or of all.")
INVENTORY_HELP = "Cluster inventory (hosts -> snapshot or node model): each host of the log checked against its node."


@log_app.command("show")
def log_show(
    logs: List[str] = typer.Argument(..., help=LOG_HELP, metavar="LOG..."),
    fmt: Format = format_option(Format.text),
    ranks: bool = typer.Option(False, "--ranks", help="Text output: one line per rank of every communicator."),
) -> None:
    """Rebuild, per host and rank, what NCCL reported: versions, settings, NICs, transports, rings, trees."""
    from ncclctl.logs import show
    from ncclctl.logs.parse import read_logs

    ls = read_logs(logs)
    require_nccl_lines(ls, logs)
    if fmt == Format.json:
        from ncclctl.render import dump_to

        # written element by element: the documents of millions of processes and ranks are never held at once
        dump_to({"schema_version": JSON_SCHEMA_VERSION, **show.summary(ls, lazy=True)}, out)
    else:
        out(show.text(ls, ranks=ranks))


@log_app.command("check")
def log_check(
    logs: List[str] = typer.Argument(..., help=LOG_HELP, metavar="LOG..."),
    root: Optional[str] = typer.Option(None, "--root", help=ROOT_HELP + " Its model is held against every host.",
                                       metavar="DIR"),
    inventory: Optional[str] = typer.Option(None, "--inventory", "-i", help=INVENTORY_HELP, metavar="INV"),
    fabric: Optional[str] = typer.Option(None, "--fabric", help="The fabric (ibnetdiscover/iblinkinfo output, or the "
                                         "fabric formats 'ncclctl fabric' reads): the rails and planes NCCL assigned "
                                         "(2.31+) held against the leaf each port lands on (LOG037).", metavar="FILE"),
    fmt: CheckFormat = format_option(CheckFormat.text, "Output format: text, json, sarif, junit, prom (a node_exporter textfile, docs/operations.md section 5)."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help=FAIL_ON_HELP),
    config: Optional[str] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, metavar="FILE"),
    rule: Optional[List[str]] = typer.Option(None, "--rule", "-r", help=RULE_HELP, metavar="ID"),
    show_info: bool = SHOW_INFO_OPTION,
    quiet: bool = QUIET_OPTION,
    color: ColorMode = COLOR_OPTION,
    output: Optional[str] = OUTPUT_OPTION,
) -> None:
    """Findings (LOG rules) with the log lines they rest on: GPUDirect RDMA off, socket fallback, ranks that
    disagree, graph files, NICs off the rails; with --root/--inventory, against the model of the node."""
    from ncclctl.findings import Severity
    from ncclctl.logs import show
    from ncclctl.logs.check import check, predict_models
    from ncclctl.logs.parse import read_logs
    from ncclctl.registry import rules_of
    from ncclctl.report import configured

    def make() -> Any:
        if root is not None and inventory is not None:
            raise usage("give --root or --inventory, not both")
        only = select_rules(rule, ("log",), "ncclctl log check")
        cfg_path, cfg = load_config(config)
        ls = read_logs(logs)
        require_nccl_lines(ls, logs)
        models, notes = ({}, []) if root is None and inventory is None else predict_models(ls, root=root,
                                                                                            inventory=inventory)
        options = {r.id: cfg.options(r) for r in rules_of(scope="log")}
        findings = check(ls, models=models, options=options, fabric_file=fabric)
        doc = show.counts(ls)  # the figures only: the whole summary holds a document per process and rank
        header = _header(doc, models, notes)
        subject = logs[0] if len(logs) == 1 else f"{len(logs)} logs"
        rep = configured(findings, subject=subject, fail_on=Severity(fail_on.value), config=cfg, only=only,
                         header=header, name="ncclctl log check", evidence=True,
                         fields=(("logs", list(logs)), ("model", root or inventory), ("model_notes", notes),
                                 # beside the report's own "summary" (the findings' counts), which it was once
                                 # given as and which overwrote it
                                 ("log_summary", {k: doc[k] for k in ("lines", "nccl_lines", "unrecognised",
                                                                      "nccl_version", "hosts", "processes", "ranks")}),
                                 ("config", cfg_path)))
        return rep

    if fmt == CheckFormat.prom:
        engine_answer(make, "prom", command="log check", output=output)
    emit_report(make(), fmt, show_info, output, quiet=quiet, color=color)


def require_nccl_lines(ls, logs: List[str]) -> None:
    """Input with no NCCL line is not a clean run: it is not a log of one (exit 3, with what it is)."""
    from ncclctl.errors import InputError

    if ls.nccl_lines:
        return
    n = len(ls.sources)
    what = (f"none of the {n} files holds an NCCL line" if n > 1 else
            "no NCCL line (no 'NCCL INFO' or 'NCCL WARN' line)")
    if n == 0:
        what = "no file to read"
    raise InputError(f"not an NCCL log: {what}", path=logs[0] if len(logs) == 1 else ", ".join(logs),
                     fix="give the output of a job run with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV,"
                         "NET,TUNING for the most), or an nccl-tests output ('ncclctl perf check' reads its table)")


def _header(doc: dict, models: dict, notes: list[str]) -> str:
    from ncclctl.logs.show import hostlist

    vs = ", ".join(doc["nccl_versions"]) or doc["nccl_version"] or "version not in the log"
    lines = [f"{doc['lines']:,} lines, {doc['nccl_lines']:,} NCCL lines ({doc['unrecognised']:,} unrecognised); "
             f"NCCL {vs}; {doc['hosts']} host{'s' if doc['hosts'] != 1 else ''}, {doc['ranks']} rank"
             f"{'s' if doc['ranks'] != 1 else ''}, {doc['communicators']} communicator"
             f"{'s' if doc['communicators'] != 1 else ''}"]
    if models:
        by_src: dict[tuple[str, bool], list[str]] = {}
        for h, m in models.items():
            by_src.setdefault((m.source, m.predicted), []).append(h)
        for (src, predicted), hs in sorted(by_src.items()):
            what = ("NCCL 2.30.7 model: NET numbering, paths, GPUDirect RDMA, channels" if predicted
                    else "its facts only: NVLink domain, IMEX")
            lines.append(f"model of {hostlist(hs)}: {src} ({what})")
    for n in notes:
        lines.append(f"note: {n}")
    return "\n".join(lines) + "\n"


@log_app.command("diff")
def log_diff(
    a: str = typer.Argument(..., help="The log of the earlier run (a file, a folder, or -).", metavar="A"),
    b: str = typer.Argument(..., help="The log of the later run.", metavar="B"),
    fmt: Format = format_option(Format.text),
) -> None:
    """What changed between two runs: versions, settings, NICs, transports, channels, rings.

    Exit 0 when NCCL did the same, 1 when it differs.
    """
    from ncclctl.errors import ExitCode
    from ncclctl.logs import show
    from ncclctl.logs.diff import diff, diff_text
    from ncclctl.logs.parse import read_logs

    if a == "-" and b == "-":
        raise usage("only one side can be stdin (-)")
    la, lb = read_logs([a]), read_logs([b])
    sa, sb = show.summary(la), show.summary(lb)
    changes = diff(sa, sb)
    if fmt == Format.json:
        out(dumps({"schema_version": JSON_SCHEMA_VERSION, "a": a, "b": b, "same": not changes, "changes": changes}))
    else:
        out(diff_text(changes, a, b, hosts=(la.hosts, lb.hosts)))
    if changes:
        raise typer.Exit(int(ExitCode.FINDINGS))
