"""``ncclctl parse KIND FILE``: what ncclctl understood of a command's output, as records."""

from __future__ import annotations

import enum

import typer

from ncclctl.cli.common import Format, command_app, format_option, out

parse_app = command_app()


class Kind(str, enum.Enum):
    ibstat = "ibstat"
    ibstatus = "ibstatus"
    ibv_devinfo = "ibv_devinfo"
    ibdev2netdev = "ibdev2netdev"
    show_gids = "show_gids"
    ibnetdiscover = "ibnetdiscover"
    iblinkinfo = "iblinkinfo"
    topo_m = "topo-m"
    p2p = "p2p"
    fabric_csv = "fabric-csv"
    nvlink = "nvlink"
    lspci = "lspci"
    mlnx_qos = "mlnx_qos"
    ip_link = "ip-link"
    lldpctl = "lldpctl"
    dcb_app = "dcb-app"
    dcb_pfc = "dcb-pfc"


@parse_app.command("parse")
def parse_cmd(
    kind: Kind = typer.Argument(..., metavar="KIND", help="The command that produced FILE: ibstat, ibstatus, "
                                "ibv_devinfo, ibdev2netdev, show_gids, ibnetdiscover, iblinkinfo, topo-m (nvidia-smi "
                                "topo -m), p2p (nvidia-smi topo -p2p), fabric-csv (nvidia-smi --query-gpu=index,pci.bus_id,"
                                "fabric.clusterUuid,fabric.cliqueId,fabric.state,fabric.status --format=csv), nvlink (nvidia-smi nvlink --status), lspci "
                                "(lspci -vvv), mlnx_qos, ip-link, lldpctl, dcb-app, dcb-pfc."),
    file: str = typer.Argument(..., metavar="FILE", help="The command's output, as captured or pasted (a shell "
                               "prompt and the command line at the top are fine); '-' reads standard input."),
    fmt: Format = format_option(Format.text, "text: one line per record; json: every field of every record."),
) -> None:
    """Parse one command's output and print what ncclctl understood of it (the records and the notes on what it left
    aside); exit 3 with FILE:LINE and a fix when it cannot read it."""
    from ncclctl.parsers.kinds import parse_file, result_document, result_text

    result = parse_file(kind.value, file)
    doc = result_document(kind.value, "<stdin>" if file == "-" else file, result)
    if fmt is Format.json:
        from ncclctl.cli.common import dumps

        out(dumps(doc))
    else:
        out(result_text(doc))
