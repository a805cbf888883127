"""Parser for the GPU Fabric section of ``nvidia-smi -q`` (``nvidia-smi -q -d FABRIC`` prints only that section).

Layout (driver 550+; the Health block from 560/570; driver 580 prints Summary first and adds Incorrect
Configuration and Partition Assigned, all ``N/A`` on a GPU outside a multi-node NVLink system)::

    GPU 00000008:01:00.0
        Fabric
            State                             : Completed
            Status                            : Success
            CliqueId                          : 32766
            ClusterUUID                       : 6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31
            Health
                Bandwidth                     : Full
                Route Recovery in progress    : False
                Route Unhealthy               : False
                Access Timeout Recovery       : False
                Summary                       : Healthy

The text is mapped back onto NVML's values (nvml.h), so the model holds the same numbers as from NVML: the state
enum, status 0 for Success, and a health mask rebuilt field by field (Bandwidth Full -> DEGRADED_BW FALSE,
Degraded -> TRUE; True/False -> TRUE/FALSE; N/A -> NOT_SUPPORTED). Fields the output leaves out stay None.

The GPU's firmware lines of the same output are kept too (the probe's fallback for ``nvmlDeviceGetVbiosVersion`` and
``nvmlDeviceGetInforomImageVersion``)::

    GPU 00000008:01:00.0
        VBIOS Version                         : 97.00.B9.00.76
        Inforom Version
            Image Version                     : G548.0201.00.06
"""

from __future__ import annotations

import re

from ncclctl.parsers._common import as_text, perr, split_lines, strip_ansi
from ncclctl.record import record

__all__ = ["FABRIC_CSV_FIELDS", "SmiFabric", "parse_nvidia_smi_fabric_csv", "parse_nvidia_smi_q_fabric"]

_FIX = "pass the output of `nvidia-smi -q` (or `nvidia-smi -q -d FABRIC`)"
_GPU_RE = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_KV_RE = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z][A-Za-z0-9 ()/-]*?)\s*:\s*(?P<value>.*?)\s*$")
_SECTION_RE = re.compile(r"^(?P<indent>\s+)(?P<name>[A-Za-z][A-Za-z0-9 ]*?)\s*$")

_STATES = {"not supported": 0, "n/a": 0, "not started": 1, "in progress": 2, "completed": 3}
_STATUS = {"success": 0, "not supported": 3, "timeout": 10, "unknown error": 999}
_TRI = {"n/a": 0, "not supported": 0, "true": 1, "false": 2}
_BW = {"n/a": 0, "not supported": 0, "degraded": 1, "true": 1, "full": 2, "false": 2}
_CONFIG = {"n/a": 0, "not supported": 0, "none": 1, "incorrect sysguid": 2, "incorrect chassis sn": 3,
           "no partition": 4, "insufficient nvlinks": 5}
_SUMMARY = {"n/a": 0, "not supported": 0, "healthy": 1, "unhealthy": 2, "limited capacity": 3}
#: Health line -> (mask shift, value table).
_CONFIG.update({"incompatible gpu fw": 6, "invalid location": 7, "gpu state invalid": 8})
_GFM = {"n/a": 0, "not supported": 0, "connected": 1, "disconnected": 2}
_HEALTH = {"bandwidth": (0, _BW), "route recovery in progress": (2, _TRI), "route unhealthy": (4, _TRI),
           "access timeout recovery": (6, _TRI), "incorrect configuration": (8, _CONFIG),
           "partition assigned": (12, _TRI), "gfm state": (14, _GFM)}


@record
class SmiFabric:
    bus_id: str
    state: int | None = None
    status: int | None = None
    clique_id: int | None = None
    cluster_uuid: str | None = None
    health_mask: int | None = None
    health_summary: int | None = None
    vbios_version: str | None = None
    inforom_image_version: str | None = None


def _version(value: str) -> str | None:
    """A firmware version as nvidia-smi prints it; ``N/A``, ``[Not Supported]`` and odd text give None."""
    return value if value and len(value) <= 64 and re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z._-]*", value) and \
        value.lower() not in ("n/a",) else None


def parse_nvidia_smi_q_fabric(text: str, *, source: str = "nvidia-smi -q") -> tuple[SmiFabric, ...]:
    body = as_text(text, source, "nvidia-smi -q")
    out: list[SmiFabric] = []
    cur: dict | None = None
    fabric_indent: int | None = None
    in_health = False
    inforom_indent: int | None = None

    def flush() -> None:
        if cur is not None and len(cur) > 1:
            out.append(SmiFabric(**cur))

    for no, raw in enumerate(split_lines(body), 1):
        line = strip_ansi(raw).rstrip()
        m = _GPU_RE.match(line)
        if m:
            flush()
            cur, fabric_indent, in_health, inforom_indent = {"bus_id": m.group("bus")}, None, False, None
            continue
        if cur is None or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if inforom_indent is not None and indent <= inforom_indent:
            inforom_indent = None
        sec = _SECTION_RE.match(line)
        if sec and ":" not in line:
            name = sec.group("name").strip().lower()
            if name == "inforom version" and fabric_indent is None:
                inforom_indent = indent
                continue
            if name == "fabric":
                fabric_indent, in_health = indent, False
            elif fabric_indent is not None and indent > fabric_indent and name == "health":
                in_health = True
            elif fabric_indent is not None and indent <= fabric_indent:
                fabric_indent, in_health = None, False
            continue
        if fabric_indent is None:
            kv = _KV_RE.match(line)
            if kv and kv.group("key").strip().lower() == "vbios version" and inforom_indent is None:
                cur["vbios_version"] = _version(kv.group("value").strip())
            elif kv and inforom_indent is not None and kv.group("key").strip().lower() == "image version":
                cur["inforom_image_version"] = _version(kv.group("value").strip())
            continue
        kv = _KV_RE.match(line)
        if not kv:
            continue
        if indent <= fabric_indent:
            fabric_indent, in_health = None, False
            continue
        key, value = kv.group("key").strip().lower(), kv.group("value").strip()
        low = value.lower()
        if in_health and key in _HEALTH:
            shift, table = _HEALTH[key]
            if low not in table:
                raise perr(source, no, f"unknown Fabric Health value {value!r} for {kv.group('key').strip()}", _FIX)
            cur["health_mask"] = (cur.get("health_mask") or 0) | (table[low] << shift)
        elif in_health and key == "summary":
            cur["health_summary"] = _SUMMARY.get(low)
        elif key == "state":
            if low not in _STATES:
                raise perr(source, no, f"unknown Fabric State {value!r}", _FIX)
            cur["state"] = _STATES[low]
        elif key == "status":
            cur["status"] = None if low == "n/a" else _STATUS.get(low, 999)
        elif key == "cliqueid":
            cur["clique_id"] = int(value) if value.isdigit() else None
        elif key == "clusteruuid":
            cur["cluster_uuid"] = low if re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", low) else None
    flush()
    return tuple(out)


#: The ``--query-gpu`` fields the probe asks for, in this order (names as ``nvidia-smi --help-query-gpu`` gives them).
FABRIC_CSV_FIELDS = ("index", "pci.bus_id", "fabric.clusterUuid", "fabric.cliqueId", "fabric.state", "fabric.status")
_CSV_FIX = ("pass the output of `nvidia-smi --query-gpu=" + ",".join(FABRIC_CSV_FIELDS) + " --format=csv` "
            "(the header line names the columns; with `noheader` they must be in that order)")
_UUID_RE = re.compile(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}")
_BUS_RE = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]")


def _csv_absent(value: str) -> bool:
    """nvidia-smi's CSV writes a value it cannot give as ``[N/A]``, ``[Not Supported]``, ``[Unknown Error]``..."""
    low = value.lower()
    return not low or low in ("n/a", "not supported") or (low.startswith("[") and low.endswith("]"))


def parse_nvidia_smi_fabric_csv(text: str, *, source: str = "nvidia-smi --query-gpu") -> tuple[SmiFabric, ...]:
    """``nvidia-smi --query-gpu=index,pci.bus_id,fabric.clusterUuid,fabric.cliqueId,fabric.state,fabric.status
    --format=csv``: one :class:`SmiFabric` per GPU line (no health: the query does not ask for it).

    Columns are found by the header (case-insensitive, a `` [unit]`` suffix ignored); without a header line
    (``--format=csv,noheader``) the columns are taken in :data:`FABRIC_CSV_FIELDS` order. A value nvidia-smi cannot
    give (``[N/A]``, ``[Not Supported]``) leaves the field None; the state and status words are mapped onto NVML's
    values like the ``-q`` parser does."""
    body = as_text(text, source, "nvidia-smi --query-gpu")
    wanted = [f.lower() for f in FABRIC_CSV_FIELDS]
    cols: dict[str, int] | None = None
    out: list[SmiFabric] = []
    for no, raw in enumerate(split_lines(body), 1):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        cells = [c.strip() for c in line.split(",")]
        names = [re.sub(r"\s*\[.*\]$", "", c).lower() for c in cells]
        if cols is None and ("pci.bus_id" in names or "index" in names):
            missing = [f for f, w in zip(FABRIC_CSV_FIELDS, wanted) if w not in names]
            if "pci.bus_id" in missing:
                raise perr(source, no, "the header has no pci.bus_id column (GPUs are matched by bus id)", _CSV_FIX)
            cols = {w: names.index(w) for w in wanted if w in names}
            continue
        if cols is None:
            if len(cells) != len(wanted):
                raise perr(source, no, f"expected a header line or {len(wanted)} comma-separated values, "
                                       f"got {len(cells)}", _CSV_FIX)
            cols = {w: i for i, w in enumerate(wanted)}
        if len(cells) <= max(cols.values()):
            raise perr(source, no, f"expected {max(cols.values()) + 1} comma-separated values, got {len(cells)}",
                       _CSV_FIX)

        def cell(name: str) -> str:
            i = cols.get(name) if cols is not None else None
            return "" if i is None else cells[i]

        bus = cell("pci.bus_id")
        if not _BUS_RE.fullmatch(bus):
            raise perr(source, no, f"pci.bus_id {bus!r} is not a PCI bus id (like 00000008:01:00.0)", _CSV_FIX)
        rec: dict = {"bus_id": bus}
        state = cell("fabric.state")
        if not _csv_absent(state):
            if state.lower() not in _STATES:
                raise perr(source, no, f"unknown fabric.state {state!r} (Not Supported, Not Started, In Progress, "
                                       f"Completed)", _CSV_FIX)
            rec["state"] = _STATES[state.lower()]
        status = cell("fabric.status")
        if not _csv_absent(status):
            rec["status"] = _STATUS.get(status.lower(), 999)
        clique = cell("fabric.cliqueid")
        if not _csv_absent(clique):
            if not re.fullmatch(r"[0-9]{1,10}", clique) or int(clique) > 0xFFFFFFFF:
                raise perr(source, no, f"fabric.cliqueId {clique!r} is not an unsigned 32-bit number", _CSV_FIX)
            rec["clique_id"] = int(clique)
        uuid = cell("fabric.clusteruuid").lower()
        if not _csv_absent(uuid):
            if not _UUID_RE.fullmatch(uuid):
                raise perr(source, no, f"fabric.clusterUuid {uuid!r} is not a UUID "
                                       f"(like 6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31)", _CSV_FIX)
            rec["cluster_uuid"] = uuid
        out.append(SmiFabric(**rec))
    return tuple(out)
