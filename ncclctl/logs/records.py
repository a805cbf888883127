"""The records of NCCL logs: what :mod:`ncclctl.logs.parse` rebuilds from the lines, and what ``log show``,
``log check`` and ``log diff`` read (pure: no parsing, no input).

A :class:`LogSet` holds every input's :class:`Source`, the processes (:class:`Proc`, ``host:pid``), the
communicators (:class:`Comm`) and their ranks (:class:`Member`); :class:`Ev` says where a fact was read. A log
with millions of processes or ranks holds one of these per process and rank, so :class:`Ev` has ``__slots__``,
:class:`Proc` and :class:`Member` keep only the fields every record sets in slots (the rest are class defaults
until set: :class:`_Sparse`), and the parser shares what many of them hold alike (hosts, communicator and bus ids,
device sets, pids, one Ev for a line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Iterable

from ncclctl.record import record

VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+\S*)")


class _SharedList(list):
    """The empty list every record starts with (read-only: :func:`own` gives the record a list of its own)."""

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise TypeError("a shared empty list: take the record's own with own()")

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse


class _SharedDict(dict):
    """The empty dict every record starts with (read-only: :func:`own` gives the record a dict of its own)."""

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise TypeError("a shared empty dict: take the record's own with own()")

    setdefault = update = pop = popitem = clear = _refuse
    __setitem__ = __delitem__ = __ior__ = _refuse


class _SharedSet(set):
    """The empty set every record starts with (read-only: :func:`own` gives the record a set of its own)."""

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise TypeError("a shared empty set: take the record's own with own()")

    add = update = discard = remove = pop = clear = _refuse
    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse


#: Most processes and ranks of a huge log print a line or two: their containers stay these shared empties (a
#: list is 56 bytes, a dict 64, a set 216) until the parser stores something (:func:`own`).
EMPTY_LIST: Any = _SharedList()
EMPTY_DICT: Any = _SharedDict()
EMPTY_SET: Any = _SharedSet()


def own(obj: Any, name: str) -> Any:
    """``obj.name``, made the object's own (a new list or dict) when it is still a shared empty: what the parser
    stores into."""
    value = getattr(obj, name)
    if value is EMPTY_LIST:
        value = []
        setattr(obj, name, value)
    elif value is EMPTY_DICT:
        value = {}
        setattr(obj, name, value)
    elif value is EMPTY_SET:
        value = set()
        setattr(obj, name, value)
    return value


@record
class Ev:
    """Where a fact was read: the input, the line number, the line (cut at 400 characters)."""

    __slots__ = ("source", "line", "text")  # one per fact read: a million-line log holds many

    source: str
    line: int
    text: str

    def where(self) -> str:
        return f"{self.source}:{self.line}"

    def evidence(self) -> str:
        return f"{self.source}:{self.line}: {self.text}"


@dataclass
class Nic:
    """A device of the NET/IB (or plugin) list: ``[0]mlx5_0:1/IB``."""

    index: int
    name: str
    port: int | None
    link: str  # IB, RoCE, IB/SHARP, ...
    #: 2.30.7+: the ids the list shows after the port (``[0]mlx5_0:1:2:0/IB``: rail 2, plane 0; ``::0``: plane only)
    rail: int | None = None
    plane: int | None = None


#: NCCL marks a rail or plane id it derived itself (no id from the net plugin) with this bit (2.32.3: the topology's
#: rail is this bit plus the index of the NIC's GUID in the order NCCL met them, its plane this bit plus the port).
DERIVED_ID_BIT = 0x10000
#: net_ib's plane of a virtual device that fuses several planes: this bit plus one bit per plane index (2.30.7+).
FUSED_PLANE_BIT = 0x4000


@record
class NetRail:
    """A network device's rail and plane as one NCCL line printed them (2.30.7+; ``NCCL_DEBUG_SUBSYS`` NET or GRAPH).

    ``kind`` "vdev": the IB plugin's "Made virtual device" line (its own ids: the NCCL_IB_HCA ``name:port:rail:plane``
    fields, or 2.32's NCCL_IB_RAIL_POLICY); "topo": ncclTopoPopulateNics' line (the ids the topology search uses;
    2.32 adds the plugin's in parentheses). -1 is "undefined" in both."""

    kind: str
    name: str
    index: int | None  # the virtual device's index (vdev lines)
    ndevs: int | None  # how many physical ports the virtual device fuses (vdev lines)
    rail: int | None  # None: the line has no rail (NCCL before 2.30.7)
    plane: int | None
    plugin_rail: int | None  # 2.32 topo lines: the net plugin's id in parentheses
    plugin_plane: int | None
    ev: Ev

    @property
    def defined_rail(self) -> int | None:
        """The rail id a person (or the plugin) gave: None when undefined or derived by NCCL."""
        r = self.rail
        return None if r is None or r < 0 or r & DERIVED_ID_BIT else r

    @property
    def defined_plane(self) -> int | None:
        p = self.plane
        return None if p is None or p < 0 or p & (DERIVED_ID_BIT | FUSED_PLANE_BIT) else p


class _Sparse:
    """A record most of whose fields keep their default in a huge log (a process or a rank that printed a line or
    two): the fields every record sets are slots, the others are class-level defaults that an instance stores
    (in its own ``__dict__``, made on the first such store) only when the parser sets one. A process holds about
    100 bytes instead of 360, a rank 170 instead of 330 (``tests/logs/test_show_bounded.py`` counts them)."""

    __slots__ = ("__dict__",)


class Proc(_Sparse):
    """One process (``host:pid``): what NCCL prints once per process."""

    __slots__ = ("host", "pid", "first", "devs", "members")

    version: str | None = None
    version_ev: Ev | None = None
    cuda_driver: int | None = None
    bootstrap: list[tuple[str, str]] = EMPTY_LIST
    bootstrap_ev: Ev | None = None
    ib: list[Nic] = EMPTY_LIST
    ib_net = ""  # the name in "NET/IB : Using" (a plugin may print its own)
    ib_ev: Ev | None = None
    ib_ro = False
    oob: tuple[str, str] | None = None
    ib_none: Ev | None = None
    socket: list[tuple[str, str]] = EMPTY_LIST
    socket_ev: Ev | None = None
    network: str | None = None
    network_ev: Ev | None = None
    plugin: list[Ev] = EMPTY_LIST
    #: "<TYPE>/Plugin: Could not find: NAMES": (type, the names NCCL tried, the line) when a plugin was asked for
    plugins_missing: list[tuple[str, tuple[str, ...], Ev]] = EMPTY_LIST
    #: "Could not open XML topology file F : reason" (INFO since 2.19; WARN before)
    topo_open: Ev | None = None
    #: "cuMem host allocations do not appear to be working; falling back to a /dev/shm/ based implementation"
    shm_fallback: Ev | None = None
    #: NCCL 2.32's own diagnosis after an error: "HINT: In many cases this error indicates that ..." (INFO)
    hints: list[Ev] = EMPTY_LIST
    settings: dict[str, tuple[str, Ev]] = EMPTY_DICT
    gdr_hca: dict[str, tuple[bool, str, Ev]] = EMPTY_DICT
    dmabuf: Ev | None = None
    virtual: Ev | None = None
    warns: list[tuple[str, Ev]] = EMPTY_LIST
    warn_counts: dict[str, int] = EMPTY_DICT
    error_trace: Ev | None = None
    #: NCCL's "MNNVL busId ... fabric UUID ... cliqueId ... state ... healthMask ..." lines: (int64 bus id in hex, cluster UUID
    #: in canonical form, clique id, fabric state, health mask, the line).
    mnnvl: list[tuple[str, str, int, int, int, Ev]] = EMPTY_LIST
    #: NCCL's "MNNVL M cliqueId C cliqueSize S cliqueRank R[ nvlDomainSize D]" lines (mnnvl.cc; nvlDomainSize
    #: in 2.30.7 and 2.32, absent in older releases): (M, clique id, clique size, clique rank, NVLink domain size or None, the line).
    mnnvl_clique: list[tuple[int, int, int, int, int | None, Ev]] = EMPTY_LIST
    #: "Cross-clique P2P enabled: nvlDomainSize=D cliqueSize=S" (init.cc, 2.30+ with NCCL_MNNVL_CROSS_CLIQUE=1)
    cross_clique: Ev | None = None
    #: the rail/plane lines (2.30.7+): the first of each (kind, device name)
    rails: list[NetRail] = EMPTY_LIST

    def __init__(self, host: str, pid: int | None, ev: Ev) -> None:
        self.host = host
        self.pid = pid
        self.first = ev
        #: the devices (``[dev]``) the process printed: a frozenset shared by the processes that printed the same
        #: ones (the parser's :func:`with_dev`), or a set of the process's own
        self.devs: AbstractSet[int] = EMPTY_SET
        self.members: list[Member] = EMPTY_LIST  # the parser gives it a list when the first rank comes

    @property
    def key(self) -> str:
        return f"{self.host or '?'}:{self.pid if self.pid is not None else '?'}"

    def nic_name(self, dev: int) -> str:
        for n in self.ib:
            if n.index == dev:
                return n.name
        return f"NET/{dev}"


#: The device sets processes share (``{0}``, ``{0, 1}``...): a huge log's processes print one device or a few.
_DEV_SETS: dict[frozenset[int], frozenset[int]] = {}


def with_dev(proc: Proc, dev: int) -> None:
    """Add ``dev`` to ``proc.devs``: the shared frozenset of the new set when one of the first 4,096 such sets
    seen, a set of the process's own otherwise (so a hostile log with many devices per process stays linear)."""
    devs = proc.devs
    if dev in devs:
        return
    if isinstance(devs, set) and devs is not EMPTY_SET:
        devs.add(dev)
        return
    new = frozenset(devs | {dev})
    shared = _DEV_SETS.get(new)
    if shared is None:
        if len(_DEV_SETS) >= 4096 or len(new) > 64:
            proc.devs = set(new)
            return
        shared = _DEV_SETS[new] = new
    proc.devs = shared


class Member(_Sparse):
    """One rank of one communicator (what a device of a process prints while that communicator initialises)."""

    __slots__ = ("proc", "dev", "first", "comm_ptr", "comm_id", "rank", "nranks", "cuda_dev", "nvml_dev", "busid",
                 "started", "completed")

    init_fn: str | None = None
    nnodes: int | None = None
    local_ranks: int | None = None
    local_rank: int | None = None
    init_total: float | None = None
    init_parts: dict[str, float] = EMPTY_DICT
    init_ev: Ev | None = None
    coll_channels: int | None = None
    nvls_channels: int | None = None
    p2p_channels: int | None = None
    channels_ev: Ev | None = None
    rings: dict[int, tuple[list[int], bool]] = EMPTY_DICT
    nrings: int | None = None
    ring_nb: dict[int, tuple[int, int]] = EMPTY_DICT
    trees: dict[int, tuple[tuple[int, ...], int]] = EMPTY_DICT
    graphs: list[dict[str, Any]] = EMPTY_LIST
    conns: dict[str, int] = EMPTY_DICT
    conn_ev: dict[str, Ev] = EMPTY_DICT
    #: channel (as printed, "07") -> the NET uses of it: (direction, net dev, GDRDMA, proxy rank)
    net_ch: dict[str, set[tuple[str, int, bool, int | None]]] = EMPTY_DICT
    local_peers: dict[int, str] = EMPTY_DICT
    gdr_gpu: dict[str, tuple[bool, str, Ev]] = EMPTY_DICT
    pxn: int | None = None
    ring_gdr: int | None = None
    nvls: bool | None = None
    ordinal = 0  # the how-manyth member of this nranks in its process (grouping without commId)

    def __init__(self, proc: Proc, dev: int | None, ev: Ev) -> None:
        self.proc = proc
        self.dev = dev
        self.first = ev
        self.comm_ptr: str | None = None
        self.comm_id: str | None = None
        self.rank: int | None = None
        self.nranks: int | None = None
        self.cuda_dev: int | None = None
        self.nvml_dev: int | None = None
        self.busid: str | None = None
        self.started: Ev | None = None
        self.completed: Ev | None = None

    @property
    def host(self) -> str:
        return self.proc.host

    def label(self) -> str:
        r = f"rank {self.rank}" if self.rank is not None else "rank ?"
        dev = f" [{self.dev}]" if self.dev is not None else ""
        return f"{r} ({self.proc.key}{dev})"


@dataclass
class Comm:
    """A communicator: its members (ranks) across every process."""

    key: str
    comm_id: str | None
    nranks: int | None
    members: list[Member] = field(default_factory=list)

    def by_rank(self) -> dict[int, Member]:
        out: dict[int, Member] = {}
        for m in self.members:
            if m.rank is not None and m.rank not in out:
                out[m.rank] = m
        return out

    @property
    def label(self) -> str:
        if self.comm_id:
            return f"commId {self.comm_id}"
        return f"communicator of {self.nranks} ranks" if self.nranks else "communicator (size not printed)"


@dataclass
class Source:
    name: str
    lines: int = 0
    nccl_lines: int = 0
    notes: list[str] = field(default_factory=list)
    gzip: bool = False


@dataclass
class LogSet:
    """Everything read from the inputs."""

    sources: list[Source] = field(default_factory=list)
    procs: dict[tuple[str, int | None], Proc] = field(default_factory=dict)
    comms: list[Comm] = field(default_factory=list)
    lines: int = 0
    nccl_lines: int = 0
    recognised: int = 0
    unrecognised: int = 0
    unrecognised_examples: list[Ev] = field(default_factory=list)
    app_errors: list[Ev] = field(default_factory=list)
    bare_versions: list[Ev] = field(default_factory=list)
    #: application error lines that name the NCCL version (PyTorch's DistBackendError): the version when NCCL's own
    #: banner is not in the log (a job that failed before rank 0 printed it)
    framework_versions: list[tuple[str, Ev]] = field(default_factory=list)
    #: (class, line) of NCCL WARN wordings that a framework repeated without NCCL's prefix (see BARE_NEEDLES)
    framework_warns: list[tuple[str, Ev]] = field(default_factory=list)
    #: NCCL 2.32's diagnostics (NCCL_RUN_DIAGNOSTICS / NCCL_RUN_RAS_DIAGNOSTICS): (status, text, line), status the
    #: bracketed tag ("OK", "INFO", "WARN", "FAIL", "ERROR") or "" for the section and summary lines
    diags: list[tuple[str, str, Ev]] = field(default_factory=list)
    #: the text report of NCCL's RAS client (ncclras, or 'STATUS' on port 28028): [section, header, details, line]
    #: per communicator group row that is not RUNNING/OK ("row") and per block of its Errors/Warnings sections
    ras: list[list[Any]] = field(default_factory=list)
    ras_rows: int = 0
    #: the release its JSON report (ncclras -f json) names ("nccl_version")
    ras_version: str | None = None
    nccl_tests: bool = False

    @property
    def hosts(self) -> list[str]:
        from ncclctl.names import natural_key

        return sorted({p.host for p in self.procs.values()}, key=natural_key)

    def versions(self) -> dict[str, list[Proc]]:
        out: dict[str, list[Proc]] = {}
        for p in self.procs.values():
            if p.version:
                out.setdefault(p.version, []).append(p)
        return out

    def version(self) -> str | None:
        """The NCCL version the log shows (the most common one), or None."""
        vs = self.versions()
        if vs:
            return max(vs, key=lambda v: (len(vs[v]), v))
        for ev in self.bare_versions:
            m = VERSION.search(ev.text)
            if m:
                return m.group(1)
        for v, _ev in self.framework_versions:
            return v
        return self.ras_version

    def members(self) -> list[Member]:
        return [m for c in self.comms for m in c.members]


def hostlist(names: Iterable[str]) -> str:
    """A Slurm hostlist of ``names`` (``gpu[01-16]``); one name as it is. Here, below every reader of the records
    (show, check, rails, nvlink, diff), so none of them imports another for it."""
    uniq = sorted({n or "?" for n in names})
    if len(uniq) <= 1:
        return uniq[0] if uniq else "-"
    from ncclctl.fabric.hostlist import compress

    return compress(uniq)
