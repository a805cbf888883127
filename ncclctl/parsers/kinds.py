"""Every command-output parser by the name ``ncclctl parse KIND FILE`` gives it, and its result as JSON records.

The table names the command that produces each kind (for messages and for the user), the parser (imported only
when used) and the input door's size class of the file (command outputs 16 MiB, fabric dumps 1 GiB).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple


class ParseKind(NamedTuple):
    command: str
    module: str
    function: str
    #: the input door's kind (:data:`ncclctl.inputs.KINDS`)
    input_kind: str = "cmd"


#: KIND -> what produces it and which parser reads it, in the order ``ncclctl parse --help`` lists them.
PARSE_KINDS: dict[str, ParseKind] = {
    "ibstat": ParseKind("ibstat", "ncclctl.parsers.ibstat", "parse_ibstat"),
    "ibstatus": ParseKind("ibstatus", "ncclctl.parsers.ibstatus", "parse_ibstatus"),
    "ibv_devinfo": ParseKind("ibv_devinfo -v", "ncclctl.parsers.ibv_devinfo", "parse_ibv_devinfo"),
    "ibdev2netdev": ParseKind("ibdev2netdev", "ncclctl.parsers.ibdev2netdev", "parse_ibdev2netdev"),
    "show_gids": ParseKind("show_gids", "ncclctl.parsers.show_gids", "parse_show_gids"),
    "ibnetdiscover": ParseKind("ibnetdiscover (or ibnetdiscover -p)", "ncclctl.parsers.ibnetdiscover",
                               "parse_ibnetdiscover", "fabric"),
    "iblinkinfo": ParseKind("iblinkinfo (or iblinkinfo --line)", "ncclctl.parsers.iblinkinfo", "parse_iblinkinfo",
                            "fabric"),
    "topo-m": ParseKind("nvidia-smi topo -m", "ncclctl.parsers.smi_topo", "parse_nvidia_smi_topo"),
    "p2p": ParseKind("nvidia-smi topo -p2p r|w|n|a|p", "ncclctl.parsers.smi_topo", "parse_nvidia_smi_p2p"),
    "fabric-csv": ParseKind("nvidia-smi --query-gpu=index,pci.bus_id,fabric.clusterUuid,fabric.cliqueId,"
                            "fabric.state,fabric.status --format=csv", "ncclctl.parsers.smi_query",
                            "parse_nvidia_smi_fabric_csv"),
    "nvlink": ParseKind("nvidia-smi nvlink --status", "ncclctl.parsers.nvlink", "parse_nvlink_status"),
    "lspci": ParseKind("sudo lspci -vvv", "ncclctl.parsers.lspci", "parse_lspci"),
    "mlnx_qos": ParseKind("mlnx_qos -i <netdev>", "ncclctl.parsers.mlnx_qos", "parse_mlnx_qos"),
    "ip-link": ParseKind("ip -d link show (or ip -j -d link show)", "ncclctl.parsers.iplink", "parse_ip_link"),
    "lldpctl": ParseKind("lldpctl -f json", "ncclctl.parsers.lldp", "parse_lldpctl_json"),
    "dcb-app": ParseKind("dcb -j app show dev <netdev>", "ncclctl.parsers.dcb", "parse_dcb_app"),
    "dcb-pfc": ParseKind("dcb -j pfc show dev <netdev>", "ncclctl.parsers.dcb", "parse_dcb_pfc"),
}

_HEX_FIELDS = ("guid", "cap_mask", "acs_cap", "acs_ctrl")

#: Kinds whose parser takes pasted prompts and command echoes itself (with its own tool names).
_READ_PASTES = frozenset({"ibstat", "ibstatus", "lspci", "nvlink", "topo-m", "p2p"})


def parse_text(kind: str, text: str, *, source: str) -> Any:
    """The parser of ``kind`` applied to ``text`` (a :class:`~ncclctl.errors.ParseError` when it cannot read it)."""
    import importlib

    spec = PARSE_KINDS[kind]
    if kind not in _READ_PASTES:
        # a pasted copy: the prompt and the command echo above the output (and whatever follows the next prompt)
        # are blanked, line numbers kept, before the parser sees it
        from ncclctl.parsers._common import paste_body, split_lines

        tools = (spec.command.split()[0].replace("sudo", "").strip() or spec.command.split()[1],)
        lines, blanked = paste_body(split_lines(text), tools)
        if blanked:
            text = "\n".join(lines) + "\n"
    if spec.function == "parse_ip_link":
        from ncclctl.parsers.iplink import parse_ip_link_json, parse_ip_link_text

        fn = parse_ip_link_json if text.lstrip()[:1] in ("[", "{") else parse_ip_link_text
        return fn(text, source=source)
    fn = getattr(importlib.import_module(spec.module), spec.function)
    return fn(text, source=source)


def parse_file(kind: str, path: str) -> Any:
    """Read ``path`` through the input door (the kind's size cap, strict UTF-8) and parse it."""
    from ncclctl.inputs import decode, read_bytes

    from ncclctl.errors import InputError

    spec = PARSE_KINDS[kind]
    shown = "<stdin>" if path == "-" else path
    data = read_bytes(path, spec.input_kind, display=shown)
    assert data is not None
    text = decode(data, shown, fix=f"pass the output of {spec.command} as it was captured")
    if not text.strip():
        raise InputError(f"empty: no {spec.command} output to read", path=shown,
                         fix=f"pass the output of {spec.command} (a file, or '-' with the output piped in)")
    return parse_text(kind, text, source=shown)


def jsonable(value: Any, name: str = "") -> Any:
    """A parser result as JSON data: dataclasses as objects (fields in declaration order), tuples as lists, GUIDs
    and register masks as ``0x`` hex strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name), f.name) for f in dataclasses.fields(value)
                if not f.name.startswith("_")}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, name) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v, str(k)) for k, v in value.items()}
    if isinstance(value, int) and not isinstance(value, bool) and name.endswith(_HEX_FIELDS):
        return f"0x{value:016x}" if name.endswith("guid") else f"0x{value:x}"
    return value


def result_document(kind: str, path: str, result: Any) -> dict:
    """``ncclctl parse --format json``: what was read, as records, and what the parser left aside (notes)."""
    from ncclctl import JSON_SCHEMA_VERSION

    notes: list[str] = []
    extra: dict = {}
    records: Any
    failure = getattr(result, "failure", None)
    if failure is not None:  # ibstat stopped at a CA it could not stat
        line, lineno = failure
        extra["failure"] = {"line": lineno, "text": line}
        notes.append(f"line {lineno}: {line} (the tool stopped here; the CAs before it are kept)")
    if dataclasses.is_dataclass(result):
        body = jsonable(result)
        notes += list(body.pop("notes", []) or [])
        records = body
    else:
        records = jsonable(list(result)) if isinstance(result, tuple) else jsonable(result)
    return {"schema_version": JSON_SCHEMA_VERSION, "kind": kind, "command": PARSE_KINDS[kind].command,
            "source": path, **extra, "notes": notes, "result": records}


def result_text(doc: dict) -> str:
    """A short text view of :func:`result_document`: one line per record and the notes."""
    res = doc["result"]
    rows = _rows(res)
    lines = [f"{doc['source']}: {doc['command']}: {len(rows)} record(s)"]
    for row in rows:
        lines.append("  " + " ".join(f"{k}={_short(v)}" for k, v in row.items() if _scalar(v) and v is not None))
    for n in doc["notes"]:
        lines.append(f"note: {n}")
    return "\n".join(lines) + "\n"


def _rows(res: Any) -> list[dict]:
    if isinstance(res, list):
        return [r if isinstance(r, dict) else {"value": r} for r in res]
    if isinstance(res, dict):
        # a wrapper object (ports, gpus, devices, nodes...): its one list of records, else itself
        lists = [v for v in res.values() if isinstance(v, list) and v and isinstance(v[0], dict)]
        if len(lists) == 1:
            return lists[0]
        return [res]
    return [{"value": res}]


def _scalar(v: Any) -> bool:
    return isinstance(v, (str, int, float, bool)) or v is None


def _short(v: Any) -> str:
    s = str(v)
    return repr(s) if (" " in s or not s) else s
