"""NCCL_DEBUG=INFO logs, streamed, rebuilt into processes, ranks and communicators.

The reader takes any number of inputs (files, folders, stdin; plain or gzip) line by line and never holds a file:
a 1,024-rank job's log is 200 MB. Each NCCL line is attributed to its *process* (``host:pid``) and, inside it, to
the *rank* of the communicator being initialised on that CUDA device (``[dev]``):

* NCCL 2.18+ opens every initialisation with ``comm 0x... rank R nranks N ... commId 0x... - Init START``;
  older releases only print ``comm 0x... rank R nranks N ... - Init COMPLETE`` at its end. So the lines of a
  device go to a *pending* member until the START or COMPLETE line names its rank; a connection line
  (``Channel 00/0 : 3[3] -> 4[4] via P2P/CUMEM``) names the rank too.
* Communicators are told apart by ``commId`` (2.18+), else by their size and their order in each process.

Facts of a process (version, network and NICs, settings, GPUDirect RDMA of each HCA, bootstrap interface) and of
a rank (channels, rings, trees, transports per peer and channel, init time) are kept; every other line NCCL
prints is *recognised* when its wording is one of NCCL's (``wordings.txt``) and *unrecognised* otherwise:
``log show`` reports those, never a traceback. Evidence keeps the file and line of the first occurrence.
"""

from __future__ import annotations

import gc
import os
import re
import sys
from collections import Counter
from itertools import compress, groupby, repeat
from operator import eq, itemgetter, ne
from typing import Any, Iterable

from ncclctl.logs.lines import parse_head, split_warn_head, strip_launcher
from ncclctl.logs.records import EMPTY_LIST, VERSION as _VERSION, Comm, Ev, LogSet, Member, NetRail, Nic, Proc, \
    Source, own, with_dev

#: Unrecognised NCCL lines kept as examples (all are counted).
MAX_EXAMPLES = 20
#: WARN lines kept per process (all are counted by kind).
MAX_WARNS = 50
#: Application lines that report an NCCL error kept.
MAX_APP_ERRORS = 20
#: Line prefixes (``host:pid:tid [dev]``) whose process is remembered: a 1,024-rank job prints a few thousand; a
#: log of more (a million one-line processes) starts again when over it (about 250 bytes each).
HEADS_MAX = 16_384


# ---------------------------------------------------------------------------------------------------------------
# The wordings NCCL prints (leads of its INFO/WARN format strings) and the regular expressions of the lines read.

_LEADS: dict[str, tuple[str, ...]] | None = None


def _leads() -> dict[str, tuple[str, ...]]:
    global _LEADS
    if _LEADS is None:
        from importlib import resources

        text = resources.files("ncclctl.logs").joinpath("wordings.txt").read_text(encoding="utf-8")
        table: dict[str, list[str]] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                table.setdefault(line[:4], []).append(line)
        _LEADS = {k: tuple(v) for k, v in table.items()}
    return _LEADS


def known_wording(msg: str) -> bool:
    """Whether ``msg`` starts with one of NCCL's own message leads."""
    leads = _leads().get(msg[:4])
    if leads and any(msg.startswith(x) for x in leads):
        return True
    return bool(_GENERIC.match(msg))


# Lines NCCL prints from a format that starts with a field: "file.cc:123 -> 2", "%d coll channels", graph
# channels " 0 : NET/0 GPU/0 ... NET/0", topology dumps ("+ PCI[48.0] - GPU/18000"), "GPU/8F000 :GPU/16000 (2/...)".
_GENERIC = re.compile(r"^(?:\S+\.(?:cc|cu|h|c|cpp):\d+\b|\s*\d+ : |[+=] |\s+\+ |(?:GPU|NET|CPU|NIC|NVS|PCI)/\S+ ?[:(]|\d+ [A-Z]"
                      r"|\d+ Bytes -> Algo|\[\d+\] |\[Proxy|\[Service|\w+: opCount |.*ncclProxy|comm 0x)")

_COMM = re.compile(r"^(?:\[Rank \d+\] )?(?:(\w+) )?comm (0x[0-9a-fA-F]+|\(nil\)) rank (\d{1,9}) nranks (\d{1,9})"
                   r"(?: cudaDev (\d{1,9}))?(?: nvmlDev (\d{1,9}))?(?: busId ([0-9a-fA-F]+))?"
                   r"(?: parent \S+ color -?\d+ key -?\d+)?(?: commId (0x[0-9a-fA-F]+))?(?: - (Init|Destroy|Abort) "
                   r"(START|COMPLETE))?")
_COMM_NODES = re.compile(r"^comm (0x[0-9a-fA-F]+) rank (\d{1,9}) nRanks (\d{1,9}) nNodes (\d{1,9}) localRanks (\d{1,9}) "
                         r"localRank (\d{1,9})")
_CONN_FAST = re.compile(r"(?:Channel|Ring) (\d{1,9})\S* : (\d{1,9})\S* -> (\d{1,9})\S*(?: \[(s|r)\w*\])? via (.*)")
#: A batch's lines, one row each (``"\n"`` + the lines joined): a connection line whose prefix is one word and
#: ``[dev]`` (``host:pid:tid [dev]``; no launcher's prefix, no blank: its " NCCL " is the line's first) gives
#: (prefix, channel, from, to, s/r, via), as :data:`_CONN_FAST` reads its message; any other line a row of empty
#: strings (read line by line).
_CONN_ROWS = re.compile(r"\n(?:(\S+ \[\d{1,9}\]) NCCL INFO (?:Channel|Ring) (\d{1,9})\S* : (\d{1,9})\S* -> (\d{1,9})\S*"
                        r"(?: \[(s|r)\w*\])? via ([^\n]*)|[^\n]*)")
_ROW_HEAD = itemgetter(0)
#: Batches of fewer lines, or with " via " in under this share of the lines of their first 64 KiB, are read line by
#: line (a batch of other lines would only pay for the pattern).
RUN_BATCH_MIN = 64
RUN_VIA_SHARE = 0.5
#: Runs of fewer rows are read row by row (what one step costs is more than a few rows' :meth:`Parser._conn`).
RUN_ROWS_MIN = 8
_RINGLIST = re.compile(r"^Channel (\d{1,9})(?:/(\d{1,9}))? :((?:\s+\d{1,9})*)(\s*\.\.\.)?\s*$")
_NET = re.compile(r"^NET/(.+?)/(\d{1,9})(?:\((\d{1,9})\))?(/GDRDMA)?")
_TREE = re.compile(r"\[(\d{1,9})\] (-?\d{1,9})/(-?\d{1,9})/(-?\d{1,9})->(-?\d{1,9})->(-?\d{1,9})")
_TREE_OLD = re.compile(r"^Tree (\d{1,9}) : (-?\d{1,9}) -> (\d{1,9}) -> (-?\d{1,9})/(-?\d{1,9})/(-?\d{1,9})")
_RING_NB = re.compile(r"^Ring (\d{1,9}) : (-?\d{1,9}) -> (\d{1,9}) -> (-?\d{1,9})\s*$")
_PATTERN = re.compile(r"^Pattern (\d{1,9}), crossNic (\d{1,9}), nChannels (\d{1,9}), (?:bw|speed) ([\d.]+)/([\d.]+), "
                      r"(?:nvlink \d+, )?type (\S+?), sameChannels (\d{1,9})")
_GRAPH_CH = re.compile(r"^\s*(\d{1,9}) : ((?:NET|GPU|NIC|NVS)/\S+(?: (?:NET|GPU|NIC|NVS)/\S+)*)\s*$")
_CHANNELS = re.compile(r"^(\d{1,9}) coll channels, (?:(\d{1,9}) collnet channels, )?(?:(\d{1,9}) nvls channels, )?"
                       r"(\d{1,9}) p2p channels")
_TIMINGS = re.compile(r"^Init timings(?: - (\w+))?: rank (\d{1,9}) nranks (\d{1,9}) total ([\d.]+)")
_PARTS = re.compile(r"([a-z]+) ([\d.]+)")
_RINGS_DONE = re.compile(r"^Connected all rings(?:, use ring PXN (\d{1,9}) GDR (\d{1,9}))?")
_NVLS = re.compile(r"^NVLS multicast support is (not )?available on dev (\d{1,9})")
_MNNVL = re.compile(r"^MNNVL busId 0x([0-9a-fA-F]{1,16}) fabric UUID ([0-9a-fA-F]{1,16})\.([0-9a-fA-F]{1,16}) "
                    r"cliqueId 0x([0-9a-fA-F]{1,8}) state (\d{1,3}) healthMask 0x([0-9a-fA-F]{1,8})")
#: mnnvl.cc: "MNNVL %d cliqueId %x cliqueSize %d cliqueRank %d" (older releases; init.cc before mnnvl.cc existed, with
#: a trailing space), " nvlDomainSize %d" added later (2.30.7's and 2.32's mnnvl.cc; the first release not checked).
_MNNVL_CLIQUE = re.compile(r"^MNNVL (\d{1,3}) cliqueId ([0-9a-fA-F]{1,8}) cliqueSize (\d{1,9}) cliqueRank (-?\d{1,9})"
                           r"(?: nvlDomainSize (\d{1,9}))?\s*$")
_GDR_HCA = re.compile(r"^NET/(\S+) ?: GPU Direct RDMA (Enabled|Disabled) for HCA (\d{1,9}) '([^']*)'(?: \((.*)\))?")
_GDR_GPU = re.compile(r"^(?:NET/\S+ ?: )?GPU Direct RDMA (Enabled|Disabled) for GPU (\S+) / HCA (\S+) "
                      r"\(distance (\d{1,9}) ([<>]=?) (-?\d{1,9})\)")
#: net_ib's virtual device line; " rail=R plane=P" from 2.30.7 (the 2.30.7/2.31.2/2.32.3 libraries, 2.28.9 and 2.29.7 without).
_VDEV = re.compile(r"^NET/(\S+) ?: Made virtual device \[(\d{1,9})\] name=(\S+) speed=-?\d{1,12} ndevs=(\d{1,4})"
                   r"(?: rail=(-?\d{1,9}) plane=(-?\d{1,9}))?")
#: ncclTopoPopulateNics' line: " rail=R plane=P" from 2.30.7; 2.32.3 adds the plugin's ids in parentheses.
_POPULATE = re.compile(r"^ncclTopoPopulateNics : Filled (\S+) in topo with .*? rail=(-?\d{1,9})(?: \((-?\d{1,9})\))?"
                       r" plane=(-?\d{1,9})(?: \((-?\d{1,9})\))?")
#: The release a RAS JSON report names.
_RAS_VERSION = re.compile(r"^\d{1,3}\.\d{1,3}\.\d{1,3}\S{0,40}$")
#: Rail/plane lines kept per process (a device each, at most this many).
MAX_RAILS = 64
_NET_USING = re.compile(r"^NET/(\S+) ?: Using(.*)$")
_NIC = re.compile(r"\[(\d{1,9})\](\S+)")
_IFACE = re.compile(r"(?:\[(\d{1,9})\])?([^\s:\[\]]+):(\S*?)<\d+>")
_SET = re.compile(r"^(NCCL_[A-Z0-9_]+) set (?:by environment )?to (.*)$")
_TOPO_VM = re.compile(r"^Topology detection ?: network path .* is not a PCI device")
#: RAS client report: a communicator group's row (group, comms, nodes, ranks per node, ranks per comm, ranks in
#: group, status, errors) and the head of a block of its Errors/Warnings sections.
_RAS_ROW = re.compile(r"^\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+([A-Z]+(?:,[A-Z]+)*)\s+([A-Z]+(?:,[A-Z]+)*)$")
_RAS_BLOCK = re.compile(r"^#\d+(?:-\d+)?\s+\(\w+\)\s+[A-Z]")
_VENDOR_ERR = re.compile(r"vendor err (\d{1,9})")
_IB_STATUS = re.compile(r"(?:with error |status=)(\d{1,9})")

_INIT_PHASE = ("Setting affinity", "Trees", "Pattern", "NVLS multicast", "Tree ", "Ring ")

_APP_ERRORS = ("unhandled system error", "NCCL error", "ncclSystemError", "ncclInternalError", "ncclInvalidUsage",
               "ncclUnhandledCudaError", "ncclRemoteError", "Test NCCL failure", "NCCL communicator was aborted",
               "Watchdog caught collective operation timeout")

#: The key under which a process's "NCCL git version" (2.29+) is kept in its settings (not an NCCL_* variable).
GIT_SETTING = "NCCL git version"

#: WARN wordings, most specific first: (what the text contains, kind).
WARN_KINDS: tuple[tuple[str, str], ...] = (
    # NCCL <= 2.29: "Duplicate GPU detected : rank A and rank B both on CUDA device X"; 2.30+: "Multiple Ranks are
    # using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 ..." (init.cc, both from the libraries' strings)
    ("Failed to bind NVLink SHARP", "nvls-bind"),
    ("failed to extend /dev/shm", "shm-space"),
    ("Error while creating shared memory segment", "shm-space"),
    ("No space left on device", "shm-space"),  # the proxy's accept and posix_fallocate of a /dev/shm segment
    ("Cuda failure 'out of memory'", "gpu-oom"),
    ("Cuda failure 2 'out of memory'", "gpu-oom"),
    ("Failed to CUDA calloc", "gpu-oom"),
    ("is neither AF_INET", "no-interface"),
    (" : no interface found", "no-interface"),  # "<transport> : no interface found" (2.32's socket plugins)
    ("Duplicate GPU detected", "duplicate-gpu"),
    ("Multiple Ranks are using the same GPU", "duplicate-gpu"),
    ("Failed to initialize any NET plugin", "no-net-plugin"),
    # 2.28 "Error : no algorithm/protocol available ...", 2.30 "No algorithm/protocol available ...", 2.32 "No
    # algorithm/protocol nor symKernelId available ..." and "algSelection: no algorithm in the selected set ..."
    ("algorithm/protocol available", "no-algorithm"),
    ("algorithm/protocol nor symKernelId available", "no-algorithm"),
    ("no algorithm in the selected set", "no-algorithm"),
    ("NET/Socket : no interface found", "no-interface"),
    ("No usable listening interface found", "no-interface"),
    ("NET/IB : No IP interface found", "no-interface"),
    ("Could not find real path", "realpath"),
    ("XML Import Channel", "graph-import"),
    ("Could not open XML graph file", "graph-open"),
    ("Could not open XML topology file", "topo-open"),
    # the IB plugin registering GPU memory through DMA-BUF (2.13+): the kernel/OFED or the driver lacks it
    ("ibv_reg_dmabuf_mr", "dmabuf"),
    ("mlx5dv_reg_dmabuf_mr", "dmabuf"),
    # the CUDA driver older than the CUDA runtime NCCL was built with (cudaErrorInsufficientDriver, 35) or lacking
    # an entry point NCCL calls (cudaErrorNotSupported by the driver, 801 'API call is not supported ...')
    ("driver version is insufficient", "driver-old"),
    ("not supported in the installed CUDA driver", "driver-old"),
    # the IB/MLX5/GDRCopy wrapper used after its library failed to load: a consequence of 'Failed to open
    # libibverbs' (sockets are used), not an error of its own
    ("lib wrapper not initialized", "lib-absent"),
    # NCCL's kernels need more shared memory than the GPU gives a block: a build without this GPU's architecture
    ("exceeds device/fn maxSharedMem", "kernel-smem"),
    ("not backwards compatible", "version-mismatch"),
    # the graph search found no path for a pattern and uses a simple order (much slower rings/trees)
    ("falling back to simple order", "graph-fallback"),
    # the HCA's asynchronous events (port error, LID/GID change, client reregistration, fatal QP/CQ events)
    ("Got async event", "ib-async"), ("async fatal event", "ib-async"), ("async error event", "ib-async"),
    ("Call to ibv_", "ibv"),
    ("Got completion", "ib-completion"),
    ("Unable to open device", "ib-open"),
    ("Failed to open libibverbs", "no-verbs"),
    ("no socket interface found", "no-interface"),
    ("NCCL version mismatch", "version-mismatch"),
    ("Mismatched NCCL version", "version-mismatch"),
    ("has already checked in", "bootstrap"),
    ("Bootstrap", "bootstrap"),
    ("incompatible devices", "ib-mismatch"),
    # rail and plane ids (LOG037): the topology's against the plugin's (2.32), too many or reserved plane ids (2.30.7+)
    ("Inconsistent rail/plane", "rails"), ("NCCL cannot use more than", "rails"), ("NCCL cannot use a plane ID", "rails"),
    ("Connect to", "socket"),
    ("Connection", "socket"),
    ("socket", "socket"),
    ("Cuda failure", "cuda"),
    ("CUDA error", "cuda"),
    ("Cuda error", "cuda"),
    ("NVLS", "nvls"),
    ("peer memory", "gdr"),
    ("Error : ring", "ring"),
)


#: Wordings of NCCL's WARNs that frameworks repeat without NCCL's prefix ("Last error:" and the lines after it):
#: read wherever they appear, since the WARN itself is often not in the log that was kept.
BARE_NEEDLES = ("Failed to bind NVLink SHARP", "Duplicate GPU detected", "Multiple Ranks are using the same GPU",
                "is neither AF_INET", "failed to extend /dev/shm", "Error while creating shared memory segment",
                "Failed to initialize any NET plugin", "no socket interface found", "algorithm/protocol",
                "Got completion from peer", "driver version is insufficient", "ibv_reg_dmabuf_mr")
#: The classes such a line is kept for (each has a rule of its own in ncclctl.logs.check).
BARE_KINDS = frozenset({"nvls-bind", "duplicate-gpu", "no-interface", "shm-space", "no-net-plugin", "no-algorithm",
                        "gpu-oom"})
#: Classes whose wording, quoted without NCCL's prefix ("NET/IBP:Got completion ...", a title, a grep), is read as a
#: WARN of the file's process: the wording alone names the class.
BARE_WARN_KINDS = frozenset({"ib-completion", "driver-old", "dmabuf"})
_LIBRARY_CODE = re.compile(r"nccl-library=(\d{4,6})\b")
#: The release a framework or the package manager names without NCCL's own line: vLLM's "using nccl==2.21.5",
#: pip's "nvidia-nccl-cu12==2.21.5" / "nvidia-nccl-cu12   2.21.5" (pip list), the loaded "libnccl.so.2.21.5".
_NAMED_RELEASE = re.compile(r"(?:\bnccl==|\bnvidia-nccl-cu\d{2}(?:==|[ \t]+)|\blibnccl\.so\.)(\d{1,2}\.\d{1,3}\.\d{1,3})"
                            r"(?![\d.]*\d)", re.IGNORECASE)


def version_of_code(code: int) -> str:
    """NCCL_VERSION_CODE -> "2.31.2": major*10000 + minor*100 + patch from 2.9, major*1000 + minor*100 + patch
    before (nccl.h's NCCL_VERSION macro)."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


#: The part of NCCL a WARN comes from, for WARN wordings no class above names (most of NCCL 2.32.3's 717 WARN
#: formats): reported as a warning of that family with where to look, never as an error of its own.
WARN_FAMILIES: tuple[tuple[str, str], ...] = (
    # network plugins' own prefixes first: aws-ofi-nccl (EFA/libfabric, "NET/OFI ..."), Google's FastSocket
    ("NET/OFI", "ofi"), ("FastSocket", "socket-other"),
    ("RAS", "ras"), ("Proxy", "proxy"), ("proxy", "proxy"), ("GIN", "gin"), ("gin", "gin"),
    ("ibv", "ib-other"), ("NET/IB", "ib-other"), ("IB ", "ib-other"),
    ("ocket", "socket-other"), ("onnect", "socket-other"),
    ("Cuda", "cuda-other"), ("CUDA", "cuda-other"), ("cuMem", "cuda-other"),
    ("NVML", "nvml"), ("nvml", "nvml"),
    ("XML", "topology"), ("opolog", "topology"), ("xml", "topology"), ("path", "topology"),
    ("egister", "registration"), ("CollNet", "collnet"), ("SHARP", "collnet"),
    ("lloc", "memory"), ("emory", "memory"), ("MemManager", "memory"),
    ("nvalid", "usage"), ("not allowed", "usage"), ("not supported", "usage"), ("unknown", "usage"),
    ("NCCL_", "setting"), ("ismatch", "mismatch"), ("imeout", "timeout"), ("imed out", "timeout"),
    # the families of the formats no needle above reaches (NCCL 2.32.3's library: tools/nccl_extract.py
    # --log-coverage counts them; the few left, listed by identifier, are in ncclctl.logs.warn_listed)
    ("MNNVL", "mnnvl"), ("ulticast", "nvls"), ("MLX5", "ib-other"), ("mtu", "ib-other"), ("FLID", "ib-other"),
    ("DOCA", "gin"), ("doca_", "gin"), ("gdr_", "gdrcopy"), ("GDRCOPY", "gdrcopy"), ("DMA-BUF", "memory"),
    ("Window", "symmetric"), ("window", "symmetric"), ("CFT", "symmetric"), ("RMA", "symmetric"),
    ("ymmetric", "symmetric"), ("lsa", "symmetric"), ("LSA", "symmetric"), ("MCBase", "symmetric"),
    ("TOPO", "topology"), ("ould not find", "topology"), ("rail", "topology"), ("plane", "topology"),
    ("MLOPart", "topology"), ("hops", "topology"), ("BusId", "topology"), ("numa", "topology"),
    ("Attribute", "topology"), ("intermediate GPU", "topology"), ("transport for", "topology"),
    ("Net :", "socket-other"), ("Service thread", "proxy"), ("Call to ", "system-call"),
    ("Thread ", "system-call"), ("join thread", "system-call"), ("thread failed", "system-call"), ("sched_", "system-call"),
    ("close failed", "system-call"), ("dlsym", "system-call"), ("dlvsym", "system-call"), ("Dlsym", "system-call"),
    ("andom", "system-call"), ("rofiler", "plugin"), ("PARAM", "setting"), ("TLS", "setting"),
    ("ncryption", "setting"), ("pre-shared key", "setting"), ("prefix", "setting"), ("token", "setting"),
    ("locality", "setting"), ("truncated", "mismatch"), ("does not match", "mismatch"), ("disagree", "mismatch"),
    ("revoked", "abort"), ("fatal error", "abort"), ("estroy", "abort"), ("cleanup comm", "abort"),
    ("creation failed", "internal"), ("roup", "usage"), ("ommunicator", "usage"), ("ncclComm", "usage"), ("NULL", "usage"), ("pointer", "usage"),
    ("argument", "usage"), ("aligned", "usage"), ("ncclRedOp", "usage"), ("recv to self", "usage"),
    ("usage", "usage"), ("rank", "usage"), ("equeue", "internal"), ("opId", "internal"), ("Inactive op", "internal"),
    ("loop", "internal"), ("bugs", "internal"), ("orrupted", "internal"), ("not empty", "internal"),
    ("Unknown", "internal"), ("Unexpected", "internal"), ("Internal error", "internal"), ("too many", "internal"),
    ("too long", "internal"), ("ran out of", "internal"), ("out of range", "internal"), ("exceed", "internal"),
    ("Not enough space", "internal"), ("pool", "internal"), ("Couldn't find", "internal"), ("not found", "internal"),
    ("expected", "internal"), ("state", "internal"), ("failed to", "internal"), ("already exists", "internal"),
    ("Device object", "internal"), ("Dev comm", "internal"), ("creation failed", "internal"),
    ("requires", "setting"), ("initialized", "internal"), ("bootstrapS", "socket-other"),
    ("bootstrapR", "socket-other"), ("bootstrapC", "socket-other"), ("libnvidia-ml", "nvml"), ("MC team", "nvls"),
    ("sharp resources", "collnet"), ("netName", "setting"), ("algSelection", "setting"), ("Diagnostics", "cuda-other"),
    ("cudaIpc", "cuda-other"), ("StreamPlan", "cuda-other"), ("Could not map", "memory"), ("host buffers", "internal"),
    ("parent comm", "usage"), ("job", "internal"), ("Retrieve", "internal"),
)


def mnnvl_uuid(lo: str, hi: str) -> str:
    """NCCL prints the 16-byte cluster UUID as two native (little-endian) longs, ``%lx.%lx``: back to the canonical
    8-4-4-4-12 form NVML's bytes give (what ``ncclctl probe`` records)."""
    h = (int(lo, 16).to_bytes(8, "little") + int(hi, 16).to_bytes(8, "little")).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def warn_kind(text: str) -> str:
    for needle, kind in WARN_KINDS:
        if needle in text:
            return kind
    for needle, kind in WARN_FAMILIES:
        if needle in text:
            return kind
    return "other"


class _Cut(Exception):
    pass


class Parser:
    """Feed lines with :meth:`feed`; :meth:`finish` returns the :class:`LogSet`."""

    def __init__(self) -> None:
        self.out = LogSet()
        self._cur: dict[tuple[str, int | None, int | None], Member] = {}
        self._ordinals: dict[tuple[str, int | None, int], int] = {}
        self._anon: dict[str, Proc] = {}
        self._last_graph: dict[tuple[str, int | None, int | None], dict[str, Any]] = {}
        self._vias: dict[tuple[str, str | None], tuple] = {}
        self._source_procs: dict[str, set[Proc]] = {}
        self._ras_on = False  # inside the text report of NCCL's RAS client (ncclctl.logs.parse._ras)
        self._rasj: dict[str, Any] | None = None  # inside its JSON report (ncclras -f json): _ras_json
        self._rasj_last: dict[str, Any] | None = None  # the last JSON report met (its end seen or not)
        self._ras_sec = ""
        self._last_ev: Ev | None = None
        self._ints: dict[int, int] = {}  # one int object per pid and communicator size

    # ------------------------------------------------------------------ helpers
    def _proc(self, host: str, pid: int | None, ev: Ev) -> Proc:
        key = (host, pid)
        p = self.out.procs.get(key)
        if p is None:
            host = sys.intern(host)  # a host's processes share its name
            if pid is not None:  # and the hosts their pids (the launcher starts them in the same order)
                pid = self._ints.setdefault(pid, pid) if len(self._ints) < 65536 else pid
            p = self.out.procs[(host, pid)] = Proc(host, pid, ev)
        return p

    def _member(self, proc: Proc, dev: int | None, ev: Ev, *, fresh: bool = False) -> Member:
        key = (proc.host, proc.pid, dev)
        m = self._cur.get(key)
        if m is None or fresh:
            m = Member(proc, dev, ev)
            if proc.members is EMPTY_LIST:
                proc.members = [m]  # most processes have one: a list of one slot (a first append makes four)
            else:
                proc.members.append(m)
            self._cur[key] = m
        return m

    # ------------------------------------------------------------------ input
    def feed_source(self, name: str, batches: Iterable[list[str]], source: Source) -> None:
        """Read one input. Connection lines, nearly all of a big job's lines (2 million of a 200 MB log), come in
        runs of one prefix (``host:pid:tid [dev]``): a batch where they are most of the lines is read with one
        pattern (:data:`_CONN_ROWS`, a row per line) and each run in one step (:meth:`_conn_run`); every other
        line, and every line of a batch that is not mostly connections, is read line by line (:meth:`_lines`)."""
        lineno = 0
        out = self.out
        heads: dict[str, tuple] = {}  # per source: the procs a file shows (bare version lines are per file)
        procs_here: set[Proc] = set()
        self._source_procs[name] = procs_here
        nccl = other_lines = 0
        for batch in batches:
            if len(batch) >= RUN_BATCH_MIN:
                text = "\n" + "\n".join(batch)
                if text.count(" via ", 0, 1 << 16) >= text.count("\n", 0, 1 << 16) * RUN_VIA_SHARE:  # its start
                    rows = _CONN_ROWS.findall(text)
                    if len(rows) == len(batch):  # a row per line (always: every match starts at a line end)
                        n, o = self._runs(batch, rows, lineno, name, heads, procs_here)
                        nccl += n
                        other_lines += o
                        lineno += len(batch)
                        continue
            n, o = self._lines(batch, 0, len(batch), lineno, name, heads, procs_here)
            nccl += n
            other_lines += o
            lineno += len(batch)
        source.nccl_lines += nccl
        out.nccl_lines += nccl
        out.recognised += other_lines
        source.lines = lineno
        out.lines += lineno

    def _runs(self, batch: list[str], rows: list[tuple[str, ...]], lineno: int, name: str, heads: dict[str, tuple],
              procs_here: set[Proc]) -> tuple[int, int]:
        """A batch read as rows of :data:`_CONN_ROWS` (one per line): each run of connection lines of one prefix in
        one step, the lines between them line by line. Returns (NCCL lines, lines counted as recognised here)."""
        nccl = other_lines = 0
        cur = self._cur
        i = 0
        for head, grp in groupby(rows, _ROW_HEAD):
            g = list(grp)
            j = i + len(g)
            if head:
                hp = heads.get(head)
                if hp is None or hp[2] not in cur:  # its first line makes the process and the member
                    n, o = self._lines(batch, i, i + 1, lineno, name, heads, procs_here)
                    nccl += n
                    other_lines += o
                    i += 1
                    hp = heads[head]
                    g = g[1:]
                if len(g) >= RUN_ROWS_MIN:
                    self._conn_run(hp[2], g, batch, i, lineno, name)
                else:  # a short run (ranks that print in turns): each row as the line-by-line path reads its match
                    key = hp[2]
                    for row in g:
                        i += 1
                        self._conn(cur[key], (row[1], row[2], row[3], row[4] or None, row[5]), name, lineno + i,
                                   batch[i - 1])
                nccl += len(g)
            else:
                n, o = self._lines(batch, i, j, lineno, name, heads, procs_here)
                nccl += n
                other_lines += o
            i = j
        return nccl, other_lines

    def _lines(self, batch: list[str], start: int, end: int, lineno: int, name: str, heads: dict[str, tuple],
               procs_here: set[Proc]) -> tuple[int, int]:
        """``batch[start:end]`` line by line (``lineno``: the lines before the batch). A prefix cache resolves
        ``host:pid:tid [dev]`` to the process, a cache of ``via ...`` texts the transport (:meth:`_conn`);
        everything else goes to :meth:`_info` / :meth:`_warn`. Returns (NCCL lines, lines counted as recognised
        here)."""
        out = self.out
        cur = self._cur
        conn_match = _CONN_FAST.match
        nccl = other_lines = 0
        lineno += start
        for line in batch[start:end] if start or end != len(batch) else batch:
            lineno += 1
            k = line.find(" NCCL ")
            if k < 0:
                if line.startswith("NCCL "):
                    k = -1
                else:
                    if (self._ras_on or line.startswith("Job summary")) and self._ras(line, name, lineno):
                        continue
                    if (self._rasj is not None or line.startswith('  "nccl_version": "')) and \
                            self._ras_json(line, name, lineno):
                        continue
                    if "NCCL" in line or "nccl" in line:
                        self._other(line, name, lineno)
                    elif any(x in line for x in BARE_NEEDLES):
                        self._framework_warn(line, name, lineno)
                    elif line[:1] == "#" and not out.nccl_tests and "nThread" in line:
                        out.nccl_tests = True
                    elif line and line[0] in "NBCU" and not line[0].isspace():
                        self._bare(line, name, lineno)
                    continue
            level = line[k + 6:k + 10]
            if level == "INFO":
                msg = line[k + 11:]
                head = line[:k] if k > 0 else ""
                nccl += 1
                hp = heads.get(head)
                if hp is None:
                    hp = self._resolve(head, name, lineno, line, procs_here)
                    if len(heads) > HEADS_MAX:
                        heads.clear()
                    heads[head] = hp
                c0 = msg[:1]
                if (c0 == "C" or c0 == "R") and " via " in msg:
                    m = conn_match(msg)
                    if m is not None:
                        mem = cur.get(hp[2])
                        if mem is None:
                            mem = self._member(hp[0], hp[1], Ev(name, lineno, ""))
                        self._conn(mem, m.groups(), name, lineno, line)
                        continue
                self._info(hp, msg, name, lineno, line)
            elif level == "WARN":
                nccl += 1
                head, loc = split_warn_head(line[:k]) if k > 0 else ("", "")
                self._warn(parse_head(head), line[k + 11:], loc, name, lineno, line)
            elif level == "vers":
                self._version_line(line, name, lineno)
            elif level == "ATTN":  # NCCL 2.32's level between WARN and INFO ("host:pid:tid [d] f.cc:N NCCL ATTN")
                nccl += 1
                head, loc = split_warn_head(line[:k]) if k > 0 else ("", "")
                self._warn(parse_head(head), line[k + 11:], loc, name, lineno, line, attn=True)
            elif level == "DIAG":  # NCCL 2.32's diagnostics: "host:pid NCCL DIAG [FAIL] net bw: ..."
                nccl += 1
                self._diag(line[k + 11:], name, lineno, line)
            elif level == "TRAC" or level == "CALL":  # NCCL talking, nothing we read
                nccl += 1
                other_lines += 1
            else:  # " NCCL error in: ...": an application's line
                self._other(line, name, lineno)
        return nccl, other_lines

    def _resolve(self, head: str, name: str, lineno: int, line: str, procs_here: set) -> tuple:
        """(process, device, member key) of a line's prefix."""
        host, pid, _tid, dev = parse_head(head)
        ev = self._ev(name, lineno, line)
        proc = self._proc(host, pid, ev) if pid is not None or host else self._anon_proc(name, ev)
        if dev is not None:
            with_dev(proc, dev)
        procs_here.add(proc)
        return (proc, dev, (proc.host, proc.pid, dev))

    def _ev(self, name: str, lineno: int, line: str) -> Ev:
        last = self._last_ev  # the line's prefix and its message ask for the same one (a process's first line)
        if last is not None and last.line == lineno and last.source == name:
            return last
        ev = self._last_ev = Ev(name, lineno, line.strip()[:400])
        return ev

    def _anon_proc(self, name: str, ev: Ev) -> Proc:
        p = self._anon.get(name)
        if p is None:
            p = self._anon[name] = self._proc("", None, ev)
        return p

    def _ras(self, line: str, name: str, lineno: int) -> bool:
        """A line of the RAS client's text report ("Job summary", the communicator groups' table with their Status
        and Errors, and the blocks of its Errors/Warnings sections: "#G-C (hash) WORDS" and indented details)."""
        out = self.out
        self._ras_on = True
        st = line.strip()
        if st in ("Errors", "Warnings"):
            self._ras_sec = st
            return True
        m = _RAS_ROW.match(st)
        if m:
            out.ras_rows += 1
            if (m.group(1), m.group(2)) != ("RUNNING", "OK"):
                out.ras.append(["row", st, [], self._ev(name, lineno, line)])
            return True
        m = _RAS_BLOCK.match(st)
        if m and self._ras_sec:
            out.ras.append([self._ras_sec, st, [], self._ev(name, lineno, line)])
            return True
        if line[:2] == "  " and st and out.ras and out.ras[-1][0] != "row" and self._ras_sec:
            if len(out.ras[-1][2]) < 12:
                out.ras[-1][2].append(st[:200])
            return True
        return st in ("Job summary", "Communicators...") or st.startswith(("Communicators", "Group ", "#  in group",
                                                                              "(total)", "Nodes ", "=="))

    def _ras_json(self, line: str, name: str, lineno: int) -> bool:
        """A line of the RAS client's JSON report (``ncclras -f json``; its keys from the 2.31.0a7 source,
        ras/client_support.cc, and the same in the 2.28.9-2.32.3 libraries): one key a line, as NCCL writes it. A rank whose
        async_error or init_state is not 0 or whose abort_flag is set, a missing rank (unresponsive, considered dead)
        are Errors blocks of LOG036; ranks of one communicator with different collective counts a Warnings block."""
        st = self._rasj
        if st is None:
            st = self._rasj = self._rasj_last = {"comm": "?", "rank": {}, "counts": set(), "in": "", "cc": [],
                                                 "end": False, "last": None}
        t = line.strip().rstrip(",")
        key, sep, val = t.partition(": ")
        if not sep:
            if t in ("}", "]", "{", "[", "},", "],") or not t:
                if t.startswith("}") and st["in"] == "counts":
                    st["counts"].add(tuple(st["cc"]))
                    st["cc"] = []
                    st["in"] = ""
                return True
            self._rasj = None
            return False
        key = key.strip('"')
        val = val.strip().strip('"')
        out = self.out
        st["last"] = (name, lineno, line)
        out.nccl_lines += 1
        out.recognised += 1
        r = st["rank"]
        if key == "nccl_version":
            if _RAS_VERSION.match(val) and out.ras_version is None:
                out.ras_version = val
        elif key == "hash":
            st.update(comm=val, counts=set())
            out.ras_rows += 1
        elif key == "rank":
            st["rank"] = r = {"rank": val}
        elif key in ("host", "pid", "cuda_dev"):
            r[key] = val
        elif key == "timeouts_count":
            st["end"] = True
            if val not in ("0", ""):
                out.ras.append(["Warnings", f"RAS timed out {val} time(s) collecting the ranks' state: what it says of "
                                "some ranks may be missing or stale", [], self._ev(name, lineno, line)])
        elif key == "collective_counts":
            st["in"], st["cc"] = "counts", []
        elif st["in"] == "counts":
            st["cc"].append((key, val))
        elif key == "missing_ranks":
            if len(st["counts"]) > 1:
                out.ras.append(["Warnings", f"communicator {st['comm']}: its ranks' collective counts differ "
                                f"({len(st['counts'])} different sets): a rank is behind the others",
                                [], self._ev(name, lineno, line)])
        who = f"communicator {st['comm']} rank {r.get('rank', '?')} ({r.get('host', '?')} pid {r.get('pid', '?')} " \
              f"GPU {r.get('cuda_dev', '?')})"
        bad = None
        if key in ("init_state", "async_error") and val not in ("0", ""):
            bad = f"{key} {val} (an ncclResult_t; 0 is success)"
        elif key in ("abort_flag", "unresponsive", "considered_dead") and val == "true":
            bad = {"abort_flag": "aborted", "unresponsive": "missing: unresponsive",
                   "considered_dead": "missing: considered dead"}[key]
        if bad and len(out.ras) < 200:
            out.ras.append(["Errors", f"{who}: {bad}", [], self._ev(name, lineno, line)])
        return True

    def _version_line(self, line: str, name: str, lineno: int) -> None:
        out = self.out
        if "compiled with CUDA" in line:  # the RAS client's report starts with the library's version
            self._ras_on = True
        m = _VERSION.search(line)
        if m:
            out.bare_versions.append(self._ev(name, lineno, line))
        if line.lstrip().startswith("NCCL version") or strip_launcher(line).startswith("NCCL version"):
            out.recognised += 1
            out.nccl_lines += 1
        else:
            self._other(line, name, lineno)

    def _other(self, line: str, name: str, lineno: int) -> None:
        """A line without NCCL's marker that mentions NCCL: the bare version line, an application's report of an
        NCCL error, or a message pasted without its prefix."""
        out = self.out
        if "NCCL version" in line and _VERSION.search(line) and "error" not in line.lower():
            s = strip_launcher(line)
            if s.startswith("NCCL version"):
                out.bare_versions.append(self._ev(name, lineno, line))
                out.nccl_lines += 1
                out.recognised += 1
                return
        if any(x in line for x in _APP_ERRORS):
            ev = self._ev(name, lineno, line)
            if len(out.app_errors) < MAX_APP_ERRORS:
                out.app_errors.append(ev)
            # PyTorch's "NCCL error in: ..., invalid usage (...), NCCL version 2.28.9": the release it loaded
            m = _VERSION.search(line)
            if m and len(out.framework_versions) < MAX_APP_ERRORS:
                out.framework_versions.append((m.group(1).rstrip(".,;)"), ev))
            out.nccl_lines += 1  # the application reporting NCCL's error: a line of the job's NCCL story
            out.recognised += 1
            if any(x in line for x in BARE_NEEDLES):
                self._framework_warn(line, name, lineno, counted=True)
            return
        m = _LIBRARY_CODE.search(line)  # nccl-tests' header: "# nccl-tests version 2.17.6 ... nccl-library=23102"
        if m and line.lstrip().startswith("#"):
            if len(out.framework_versions) < MAX_APP_ERRORS:
                out.framework_versions.append((version_of_code(int(m.group(1))), self._ev(name, lineno, line)))
            out.nccl_lines += 1
            out.recognised += 1
            return
        m = _NAMED_RELEASE.search(line)
        if m:
            if len(out.framework_versions) < MAX_APP_ERRORS:
                out.framework_versions.append((m.group(1), self._ev(name, lineno, line)))
            out.nccl_lines += 1
            out.recognised += 1
            return
        if any(x in line for x in BARE_NEEDLES):
            self._framework_warn(line, name, lineno)
            return
        self._bare(line, name, lineno)

    def _diag(self, msg: str, name: str, lineno: int, line: str) -> None:
        out = self.out
        out.recognised += 1
        m = re.match(r"\s*\[([A-Z]{2,8})\]\s*(.*)$", msg)
        status, text = (m.group(1), m.group(2)) if m else ("", msg.strip())
        if text.startswith("only ") and " passed verification" in text:  # "%sp2p: only N/M ... passed verification"
            status = status or "FAIL"
        if len(out.diags) < MAX_APP_ERRORS * 10:
            out.diags.append((status, text, self._ev(name, lineno, line)))

    def _framework_warn(self, line: str, name: str, lineno: int, *, counted: bool = False) -> None:
        """An NCCL WARN's wording repeated by a framework ("Last error:" and what follows): kept (with no host or
        process: the framework's line names neither) when its class has a rule of its own."""
        kind = warn_kind(line)
        if kind in BARE_WARN_KINDS:
            self._warn(("", None, None, None), strip_launcher(line), "", name, lineno, line)
            if not counted:
                self.out.nccl_lines += 1
            return
        if kind not in BARE_KINDS:
            if not counted:
                self._bare(line, name, lineno)
            return
        if len(self.out.framework_warns) < MAX_WARNS:
            self.out.framework_warns.append((kind, self._ev(name, lineno, line)))
        if not counted:
            self.out.nccl_lines += 1
            self.out.recognised += 1

    def _bare(self, line: str, name: str, lineno: int) -> None:
        """A message without any prefix (grep output, a paste): read when it is an NCCL wording we act on."""
        s = strip_launcher(line)
        if not s or not s[0].isalpha():
            return
        if not (s.startswith(("NET/", "Channel ", "Ring ", "Trees ", "Using network", "Bootstrap", "NCCL_",
                              "cudaDriverVersion", "comm 0x", "ncclComm", "Pattern ", "Connected all", "Init timings",
                              "NVLS multicast", "GPU Direct RDMA", "Setting affinity")) or " coll channels," in s):
            return
        self.out.nccl_lines += 1
        ev = self._ev(name, lineno, line)
        proc = self._anon_proc(name, ev)
        m = _CONN_FAST.match(s) if " via " in s else None
        if m is not None:
            key = (proc.host, proc.pid, None)
            mem = self._cur.get(key) or self._member(proc, None, ev)
            self._conn(mem, m.groups(), name, lineno, line)
            return
        self._info((proc, None, (proc.host, proc.pid, None)), s, name, lineno, line)

    # ------------------------------------------------------------------ WARN
    def _warn(self, hp, msg: str, loc: str, name: str, lineno: int, line: str, *, attn: bool = False) -> None:
        host, pid, _tid, dev = hp
        ev = self._ev(name, lineno, line)
        proc = self._proc(host, pid, ev) if pid is not None or host else self._anon_proc(name, ev)
        self._source_procs.setdefault(name, set()).add(proc)
        if dev is not None:
            with_dev(proc, dev)
        kind = warn_kind(msg)
        if "nvls.cc" in loc and kind in ("cuda", "gpu-oom", "other", "internal"):
            kind = "nvls-bind"  # "transport/nvls.cc:158 NCCL WARN Cuda failure 1 'invalid argument'"
        elif "shmutils" in loc and kind in ("other", "internal", "memory"):
            kind = "shm-space"
        if attn and not any(needle in msg for needle, _k in WARN_KINDS):
            kind = "attn"  # NCCL 2.32's ATTN level: worth attention, not an error (unless a class names it)
        own(proc, "warn_counts")[kind] = proc.warn_counts.get(kind, 0) + 1
        if len(proc.warns) < MAX_WARNS:
            own(proc, "warns").append((kind, ev))
        self.out.recognised += 1

    # ------------------------------------------------------------------ INFO
    def _info(self, hp, msg: str, name: str, lineno: int, line: str) -> None:
        proc, dev = hp[0], hp[1]
        out = self.out
        ev = self._ev(name, lineno, line)
        try:
            handled = self._dispatch(proc, dev, msg, ev)
        except (ValueError, IndexError, KeyError, OverflowError):  # a mangled line of a known wording
            handled = False
        if handled or known_wording(msg):
            out.recognised += 1
        else:
            out.unrecognised += 1
            if len(out.unrecognised_examples) < MAX_EXAMPLES:
                out.unrecognised_examples.append(ev)

    def _dispatch(self, proc: Proc, dev: int | None, msg: str, ev: Ev) -> bool:
        c0 = msg[:1]
        if msg.find("/Plugin: Could not find:", 0, 40) != -1:
            return self._plugin_missing(proc, msg, ev)
        if c0 == "C":
            if msg.startswith("Could not open XML topology file"):
                proc.topo_open = proc.topo_open or ev
                return True
            if msg.startswith("Cross-clique P2P enabled"):
                proc.cross_clique = proc.cross_clique or ev
                return True
            if msg.startswith("Channel "):
                m = _RINGLIST.match(msg)
                if m:
                    mem = self._init_member(proc, dev, ev)
                    ranks = [int(x) for x in m.group(3).split()]
                    own(mem, "rings")[int(m.group(1))] = (ranks, bool(m.group(4)))
                    if m.group(2):
                        mem.nrings = int(m.group(2))
                    return True
                return False
            if msg.startswith("Connected all rings"):
                m = _RINGS_DONE.match(msg)
                mem = self._member(proc, dev, ev)
                if m and m.group(1) is not None:
                    mem.pxn, mem.ring_gdr = int(m.group(1)), int(m.group(2))
                return True
            return msg.startswith(("Connected all trees", "Connected ", "Comm config", "Check P2P", "CC "))
        if c0 == "c" or c0 == "n" or c0 == "[":
            if msg.startswith("cuMem host allocations do not appear to be working"):
                proc.shm_fallback = proc.shm_fallback or ev
                return True
            if msg.startswith("ncclTopoPopulateNics : Filled"):
                m = _POPULATE.match(msg)
                if not m:
                    return True  # before 2.30.7 the line has no rail or plane
                pr = None if m.group(3) is None else int(m.group(3))
                pp = None if m.group(5) is None else int(m.group(5))
                self._rail(proc, NetRail("topo", m.group(1), None, None, int(m.group(2)), int(m.group(4)), pr, pp, ev))
                return True
            if msg.startswith("ncclMaxSharedMem") and "exceeds" in msg:  # 2.25: kernels beyond the GPU's limit
                own(proc, "warns").append(("kernel-smem-info", ev))
                own(proc, "warn_counts")["kernel-smem-info"] = proc.warn_counts.get("kernel-smem-info", 0) + 1
                return True
            if msg.startswith("cudaDriverVersion"):
                try:
                    proc.cuda_driver = int(msg.split()[1])
                except (IndexError, ValueError):
                    return False
                return True
            m = _COMM_NODES.match(msg)
            if m:
                mem = self._member_for_rank(proc, dev, int(m.group(2)), ev)
                mem.comm_ptr = mem.comm_ptr or m.group(1)
                mem.nranks, mem.nnodes = int(m.group(3)), int(m.group(4))
                mem.local_ranks, mem.local_rank = int(m.group(5)), int(m.group(6))
                return True
            m = _COMM.match(msg)
            if m:
                self._comm_line(proc, dev, m, ev)
                return True
            return False
        if c0 == "N":
            if msg.startswith("NCCL git version"):  # 2.29+: "NCCL git version <branch> <revision>"
                parts = msg.split()
                if len(parts) >= 5:
                    own(proc, "settings")[GIT_SETTING] = (" ".join(parts[3:5]), ev)
                    return True
                return False
            if msg.startswith("NCCL version"):
                m = _VERSION.match(msg)
                if m:
                    proc.version = m.group(1)
                    proc.version_ev = ev
                    return True
                return False
            if msg.startswith("NCCL_"):
                m = _SET.match(msg)
                if m:
                    val = m.group(2).strip()
                    if val.endswith(".") and val[:-1].lstrip("-").isdigit():
                        val = val[:-1]
                    own(proc, "settings").setdefault(m.group(1), (val, ev))
                    return True
                return False
            if msg.startswith("NET/"):
                return self._net(proc, dev, msg, ev)
            if msg.startswith("NVLS multicast"):
                m = _NVLS.match(msg)
                if m:
                    self._init_member(proc, dev, ev).nvls = not m.group(1)
                    return True
            return False
        if c0 == "H":
            if msg.startswith("HINT:"):
                if len(proc.hints) < 8:
                    own(proc, "hints").append(ev)
                return True
            return False
        if c0 == "T":
            if msg.startswith("Trees"):
                mem = self._init_member(proc, dev, ev)
                for t in _TREE.finditer(msg):
                    own(mem, "trees")[int(t.group(1))] = ((int(t.group(2)), int(t.group(3)), int(t.group(4))),
                                                  int(t.group(6)))
                    if mem.rank is None:
                        mem.rank = int(t.group(5))
                return True
            if msg.startswith("Tree "):
                m = _TREE_OLD.match(msg)
                if m:
                    mem = self._init_member(proc, dev, ev)
                    if mem.rank is None:
                        mem.rank = int(m.group(3))
                    return True
                return False
            if msg.startswith("Topology detection"):
                if _TOPO_VM.match(msg):
                    proc.virtual = proc.virtual or ev
                return True
            return False
        if c0 == "R":
            m = _RING_NB.match(msg)
            if m:
                mem = self._init_member(proc, dev, ev)
                own(mem, "ring_nb")[int(m.group(1))] = (int(m.group(2)), int(m.group(4)))
                if mem.rank is None:
                    mem.rank = int(m.group(3))
                return True
            return False
        if c0 == "P":
            if msg.startswith("Pattern "):
                m = _PATTERN.match(msg)
                if m:
                    mem = self._init_member(proc, dev, ev)
                    types = m.group(6).split("/")
                    g: dict[str, Any] = {"pattern": int(m.group(1)), "crossnic": int(m.group(2)), "nchannels": int(m.group(3)),
                         "bw_intra": float(m.group(4)), "bw_inter": float(m.group(5)),
                         "type_intra": types[0], "type_inter": types[1] if len(types) > 1 else types[0],
                         "same_channels": int(m.group(7)), "channels": [], "_ev": ev}
                    own(mem, "graphs").append(g)
                    self._last_graph[(proc.host, proc.pid, dev)] = g
                    return True
                return False
            return False
        if c0 == " " or c0.isdigit():
            m = _GRAPH_CH.match(msg)
            if m:
                last = self._last_graph.get((proc.host, proc.pid, dev))
                if last is not None and len(last["channels"]) < 64:
                    last["channels"].append(m.group(2).split())
                return True
            m = _CHANNELS.match(msg)
            if m:
                mem = self._member(proc, dev, ev)
                mem.coll_channels = int(m.group(1))
                mem.nvls_channels = int(m.group(3)) if m.group(3) is not None else None
                mem.p2p_channels = int(m.group(4))
                mem.channels_ev = ev
                return True
            return False
        if c0 == "I":
            m = _TIMINGS.match(msg)
            if m:
                mem = self._member_for_rank(proc, dev, int(m.group(2)), ev, closing=True)
                mem.init_total = float(m.group(4))
                mem.init_parts = {k: float(v) for k, v in _PARTS.findall(msg[m.end():])}
                mem.init_ev = ev
                mem.nranks = mem.nranks or int(m.group(3))
                return True
            return False
        if c0 == "B":
            if msg.startswith(("Bootstrap : Using", "Bootstrap: Using")):
                if not proc.bootstrap:
                    proc.bootstrap = [(i.group(2), i.group(3)) for i in _IFACE.finditer(msg.split("Using", 1)[1])]
                    proc.bootstrap_ev = ev
                return True
            return False
        if c0 == "U":
            if msg.startswith("Using network "):
                proc.network = msg[14:].strip()
                proc.network_ev = proc.network_ev or ev
                return True
            return False
        if c0 == "S":
            if msg.startswith("Setting affinity"):
                self._init_member(proc, dev, ev)
                return True
            return False
        if c0 == "G":
            return self._gdr_gpu(proc, dev, msg, ev)
        if c0 == "D":
            if msg.startswith("DMA-BUF is available"):
                proc.dmabuf = proc.dmabuf or ev
                return True
            return False
        if c0 == "M":
            m = _MNNVL.match(msg)
            if m:
                own(proc, "mnnvl").append((m.group(1).lower(), mnnvl_uuid(m.group(2), m.group(3)), int(m.group(4), 16),
                                   int(m.group(5)), int(m.group(6), 16), ev))
                return True
            m = _MNNVL_CLIQUE.match(msg)
            if m:
                own(proc, "mnnvl_clique").append((int(m.group(1)), int(m.group(2), 16), int(m.group(3)),
                                                  int(m.group(4)), int(m.group(5)) if m.group(5) else None, ev))
                return True
            return False
        if c0 == "L":
            if msg.startswith("Loading topology file ") and "NCCL_TOPO_FILE" not in proc.settings:
                own(proc, "settings")["NCCL_TOPO_FILE"] = (msg[22:].strip(), ev)
            return msg.startswith("Loading ")
        return False

    def _net(self, proc: Proc, dev: int | None, msg: str, ev: Ev) -> bool:
        if " Using" in msg[:20]:
            m = _NET_USING.match(msg)
            if not m:
                return False
            net, rest = m.group(1), m.group(2)
            if net == "Socket":
                if not proc.socket:
                    proc.socket = [(i.group(2), i.group(3)) for i in _IFACE.finditer(rest)]
                    proc.socket_ev = ev
                return True
            body, _, oob = rest.partition("; OOB ")
            if not proc.ib:
                nics = []
                for i in _NIC.finditer(body):
                    tok = i.group(2)
                    name, _, tail = tok.partition(":")
                    fields = tail.split("/", 1)[0].split(":")
                    port_s = fields[0]
                    link = tail.split("/", 1)[1] if "/" in tail else ""
                    ids = [int(x) if x.isdigit() else None for x in fields[1:3]] + [None, None]
                    nics.append(Nic(int(i.group(1)), name, int(port_s) if port_s.isdigit() else None, link,
                                    ids[0], ids[1]))
                proc.ib = nics
                proc.ib_net = net
                proc.ib_ev = ev
                proc.ib_ro = "[RO]" in body
                o = _IFACE.search(oob)
                if o:
                    proc.oob = (o.group(2), o.group(3))
            return True
        if msg.startswith("NET/IB : No device found"):
            proc.ib_none = proc.ib_none or ev
            return True
        if "Made virtual device" in msg[:30]:
            m = _VDEV.match(msg)
            if not m:
                return False
            rail = None if m.group(5) is None else int(m.group(5))
            plane = None if m.group(6) is None else int(m.group(6))
            self._rail(proc, NetRail("vdev", m.group(3), int(m.group(2)), int(m.group(4)), rail, plane, None, None, ev))
            return True
        m = _GDR_HCA.match(msg)
        if m:
            # NET/Socket prints "GPU Direct RDMA Disabled" for every interface of every socket run: the Socket
            # transport sends from host memory by design (transport/net_socket.cc: NCCL_PTR_HOST only). It says
            # nothing of the host's GPUDirect RDMA; the socket transport itself is LOG002's subject.
            if m.group(1).lower() != "socket":
                own(proc, "gdr_hca").setdefault(m.group(4), (m.group(2) == "Enabled", m.group(5) or "", ev))
            return True
        if "GPU Direct RDMA" in msg:
            return self._gdr_gpu(proc, dev, msg, ev)
        if msg.startswith(("NET/Plugin", "NET/Plugin:")):
            if len(proc.plugin) < 8:
                own(proc, "plugin").append(ev)
            return True
        return False

    @staticmethod
    def _rail(proc: Proc, r: NetRail) -> None:
        """Keep the first line of each (kind, device) of a process: every communicator prints them again."""
        if len(proc.rails) >= MAX_RAILS or any(x.kind == r.kind and x.name == r.name for x in proc.rails):
            return
        own(proc, "rails").append(r)

    @staticmethod
    def _plugin_missing(proc: Proc, msg: str, ev: Ev) -> bool:
        """``NET/Plugin: Could not find: nosuch libnccl-net-nosuch.so`` (plugin_open.cc): NCCL tried the names it
        lists and found none. Only the default name (``libnccl-net.so``, ``libnccl-tuner.so``...) means no plugin
        was asked for; any other name came from NCCL_NET_PLUGIN / NCCL_TUNER_PLUGIN / NCCL_PROFILER_PLUGIN..."""
        kind, _, rest = msg.partition("/Plugin: Could not find:")
        names = tuple(n.rstrip(".") for n in rest.split(". ", 1)[0].split() if n.rstrip("."))
        asked = tuple(n for n in names if not re.fullmatch(r"libnccl-[a-z]+\.so", n))
        if asked and len(proc.plugins_missing) < 8:
            own(proc, "plugins_missing").append((kind.strip(), asked, ev))
        return True

    def _gdr_gpu(self, proc: Proc, dev: int | None, msg: str, ev: Ev) -> bool:
        m = _GDR_GPU.match(msg)
        if not m:
            return False
        mem = self._member(proc, dev, ev)
        own(mem, "gdr_gpu").setdefault(m.group(3), (m.group(1) == "Enabled", f"distance {m.group(4)} {m.group(5)} "
                                            f"{m.group(6)}", ev))
        return True

    # ------------------------------------------------------------------ members
    def _init_member(self, proc: Proc, dev: int | None, ev: Ev) -> Member:
        """The member an initialisation line belongs to: a new one when the device's last communicator is
        complete (NCCL < 2.18 prints no START line)."""
        key = (proc.host, proc.pid, dev)
        m = self._cur.get(key)
        if m is None or m.completed is not None:
            return self._member(proc, dev, ev, fresh=True)
        return m

    def _member_for_rank(self, proc: Proc, dev: int | None, rank: int, ev: Ev, *, closing: bool = False) -> Member:
        key = (proc.host, proc.pid, dev)
        m = self._cur.get(key)
        if m is not None and (m.rank is None or m.rank == rank) and (closing or m.completed is None):
            m.rank = rank
            return m
        m = self._member(proc, dev, ev, fresh=True)
        m.rank = rank
        return m

    def _comm_line(self, proc: Proc, dev: int | None, m: re.Match, ev: Ev) -> None:
        fn, ptr, rank, nranks = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        what, phase = m.group(9), m.group(10)
        if what in ("Destroy", "Abort"):
            return
        key = (proc.host, proc.pid, dev)
        cur = self._cur.get(key)
        if phase == "START":
            mem = self._member(proc, dev, ev, fresh=not (cur is not None and cur.completed is None and cur.comm_ptr
                                                          is None and cur.rank in (None, rank) and not cur.trees
                                                          and not cur.rings))
            mem.started = ev
        elif (cur is not None and cur.completed is None and cur.rank in (None, rank)
              and cur.comm_ptr in (None, ptr)):
            mem = cur
        else:
            mem = self._member(proc, dev, ev, fresh=True)
        if len(self._ints) < 65536:
            nranks = self._ints.setdefault(nranks, nranks)
        mem.rank, mem.nranks, mem.comm_ptr = rank, nranks, ptr
        if fn and fn != "comm":
            mem.init_fn = fn
        if m.group(5) is not None:
            mem.cuda_dev = int(m.group(5))
        if m.group(6) is not None:
            mem.nvml_dev = int(m.group(6))
        if m.group(7) is not None:
            mem.busid = sys.intern(m.group(7).lower())
        if m.group(8) is not None:
            mem.comm_id = sys.intern(m.group(8).lower())  # every rank of a communicator names it
        if phase == "COMPLETE":
            mem.completed = ev

    def _via(self, via: str, direction: str | None) -> tuple:
        """``(kind, net tuple or None, local)`` of a connection's transport text (cached: a job has a handful)."""
        key = (via, direction)
        got = self._vias.get(key)
        if got is not None:
            return got
        net = None
        local = False
        if via.startswith("NET/"):
            n = _NET.match(via)
            if n:
                gdr = bool(n.group(4))
                proxy = int(n.group(3)) if n.group(3) is not None else None
                kind = f"NET/{n.group(1)}" + ("/GDRDMA" if gdr else "")
                net = ("receive" if direction == "r" else "send", int(n.group(2)), gdr, proxy)
            else:
                kind = "NET/?"
        elif via.startswith("P2P/"):
            parts = via.split("/")
            kind = "P2P/" + (parts[1] if len(parts) > 1 else "?")
            local = True
        elif via.startswith("SHM") or via.startswith("direct shared memory"):
            kind = "SHM"
            local = True
        elif via.upper().startswith("COLLNET") or via.startswith("NVLS"):
            kind = via.split("/", 1)[0]
        else:
            kind = via.split(" ", 1)[0][:24] or "?"
        got = (kind, net, local)
        if len(self._vias) < 4096:
            self._vias[key] = got
        return got

    def _conn(self, mem: Member, g: tuple, name: str, lineno: int, line: str) -> None:
        ch_s, a_s, b_s, direction, via = g
        me = int(b_s) if direction == "r" else int(a_s)
        if mem.rank != me:
            if mem.rank is None:
                mem.rank = me
            elif mem.completed is not None:
                # a line of another rank on this device: a new communicator that printed no START (NCCL < 2.18)
                mem = self._member(mem.proc, mem.dev, Ev(name, lineno, ""), fresh=True)
                mem.rank = me
            else:
                return
        got = self._vias.get((via, direction))
        if got is None:
            got = self._via(via, direction)
        kind, net, local = got
        if net is not None:
            chs = mem.net_ch.get(ch_s)  # keyed by the channel's text ("07"); readers sort with int()
            if chs is None:
                if len(mem.net_ch) < 256:
                    own(mem, "net_ch")[ch_s] = {net}
            elif net not in chs and len(chs) < 8:
                chs.add(net)
        elif local and len(mem.local_peers) < 64:
            peer = int(a_s) if direction == "r" else int(b_s)
            if peer not in mem.local_peers:
                own(mem, "local_peers")[peer] = kind
        conns = own(mem, "conns")
        n = conns.get(kind)
        if n is None:
            conns[kind] = 1
            own(mem, "conn_ev")[kind] = Ev(name, lineno, line.strip()[:400])
        else:
            conns[kind] = n + 1
        self.out.recognised += 1

    def _conn_run(self, key: tuple, rows: list[tuple[str, ...]], batch: list[str], start: int, lineno: int,
                  name: str) -> None:
        """Rows of :data:`_CONN_ROWS` of one prefix (``batch[start:]``'s lines, ``lineno`` before the batch) whose
        member exists: what :meth:`_conn` records line by line, in one step when every row names the same rank
        (each transport's count at once, the channels and local peers deduplicated in order: recording one again
        changes nothing, caps included); line by line otherwise."""
        cur = self._cur
        mem = cur[key]
        _h, chs, frm, to, dirs, vias = zip(*rows)
        if "r" in dirs:
            mes = set(compress(frm, map(ne, dirs, repeat("r"))))
            mes.update(compress(to, map(eq, dirs, repeat("r"))))
        else:
            mes = set(frm)
        me = int(next(iter(mes))) if len(mes) == 1 else None
        if me is not None and mem.rank != me:
            if mem.rank is None:
                mem.rank = me
            elif mem.completed is None:
                return  # another rank's lines on this device while its communicator initialises: not read
            else:
                me = None  # a new communicator without START: its first line makes the member (below)
        if me is None:
            # several ranks (or one written two ways: "07", "7"), or a new member: the first line as _conn reads it,
            # then the rest in one step when they are of the member it left; all line by line past the first
            row = rows[0]
            self._conn(mem, (row[1], row[2], row[3], row[4] or None, row[5]), name, lineno + start + 1, batch[start])
            if len(mes) == 1 and len(rows) > 1:
                self._conn_run(key, rows[1:], batch, start + 1, lineno, name)
                return
            for i in range(1, len(rows)):
                row = rows[i]
                self._conn(cur[key], (row[1], row[2], row[3], row[4] or None, row[5]), name, lineno + start + i + 1,
                           batch[start + i])
            return
        conns = own(mem, "conns")
        vias_cache = self._vias
        local_vias: dict[tuple[str, str], str] = {}
        # each (transport, channel) once, in the order of its first line: the counts per transport, the channels
        for (via, d, ch), n in Counter(zip(vias, dirs, chs)).items():
            got = vias_cache.get((via, d or None))
            if got is None:
                got = self._via(via, d or None)
            kind, net, local = got
            c = conns.get(kind)
            if c is None:
                conns[kind] = n
                i = vias.index(via)  # the first line of this transport
                while dirs[i] != d:
                    i = vias.index(via, i + 1)
                own(mem, "conn_ev")[kind] = Ev(name, lineno + start + i + 1, batch[start + i].strip()[:400])
            else:
                conns[kind] = c + n
            if net is not None:
                got_ch = mem.net_ch.get(ch)
                if got_ch is None:
                    if len(mem.net_ch) < 256:
                        own(mem, "net_ch")[ch] = {net}
                elif net not in got_ch and len(got_ch) < 8:
                    got_ch.add(net)
            elif local:
                local_vias[(via, d)] = kind
        if local_vias and len(mem.local_peers) < 64:
            # each (peer, transport) once, in the order of its first line
            is_local = {via for via, _d in local_vias}.__contains__
            for a, b, d, via in dict.fromkeys(compress(zip(frm, to, dirs, vias), map(is_local, vias))):
                kind = local_vias.get((via, d))
                if kind is None:
                    continue
                if len(mem.local_peers) >= 64:
                    break
                peer = int(a) if d == "r" else int(b)
                if peer not in mem.local_peers:
                    own(mem, "local_peers")[peer] = kind
        self.out.recognised += len(rows)

    # ------------------------------------------------------------------ end
    def finish(self) -> LogSet:
        out = self.out
        st = self._rasj_last
        if st is not None and not st["end"] and st["last"] is not None:
            out.ras.append(["Warnings", "the RAS JSON report ends before its closing \"ras\" section (cut short): "
                            "ranks and communicators after its last line are not in it", [], self._ev(*st["last"])])
        # NCCL < 2.22 prints its version once, on stdout, without a prefix: in a file that shows one host only, it
        # is that host's version
        for ev in out.bare_versions:
            procs = self._source_procs.get(ev.source, set())
            m = _VERSION.search(ev.text)
            if m and procs and len({p.host for p in procs}) == 1:
                for p in procs:
                    if p.version is None:
                        p.version, p.version_ev = m.group(1), ev
        comms: dict[str, Comm] = {}
        for proc in out.procs.values():
            for mem in proc.members:
                if mem.rank is None and not mem.conns and not mem.trees and not mem.rings and not mem.graphs \
                        and mem.coll_channels is None and mem.nranks is None:
                    continue  # an empty pending member (a device that only printed process-level lines)
                if mem.comm_id:
                    key = mem.comm_id
                elif mem.nranks:
                    okey = (proc.key, mem.dev, mem.nranks)
                    mem.ordinal = self._ordinals.get(okey, 0)
                    self._ordinals[okey] = mem.ordinal + 1
                    key = f"n{mem.nranks}#{mem.ordinal}"
                else:
                    key = "?"
                c = comms.get(key)
                if c is None:
                    c = comms[key] = Comm(key=key, comm_id=mem.comm_id, nranks=mem.nranks)
                c.members.append(mem)
                if c.nranks is None:
                    c.nranks = mem.nranks
        # a comm whose size was never printed but whose ranks fit a sized one: fold in when only one sized exists
        unsized = comms.pop("?", None)
        if unsized is not None:
            sized = [c for c in comms.values()]
            if len(sized) == 1:
                sized[0].members.extend(unsized.members)
            else:
                comms["?"] = unsized
        out.comms = sorted(comms.values(), key=lambda c: (-(c.nranks or 0), c.key))
        return out


#: How much of a file in a folder is read to tell whether it is an NCCL log (NCCL prints its first lines at init).
SNIFF_BYTES = 256 << 10


def _looks_like_log(path: str) -> bool:
    """Whether the start of ``path`` (gzip unpacked) holds an NCCL line, an application's NCCL error or an nccl-tests
    header: what a log of a job that used NCCL has near its top."""
    import zlib

    from ncclctl.errors import InputError
    from ncclctl.inputs import read_bytes

    try:
        head = read_bytes(path, "log", limit=SNIFF_BYTES) or b""  # the input door, its first 256 KiB only
    except InputError:
        return True  # unreadable: the reader says why
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, SNIFF_BYTES)
        except zlib.error:
            return True
    return _LOG_SNIFF.search(head) is not None


_LOG_SNIFF = re.compile(rb" NCCL (?:INFO|WARN|ATTN|DIAG|TRACE) |NCCL version \d|NCCL error|nccl-library=\d|nccl==\d|"
                        rb"^NCCL (?:INFO|WARN) ", re.M)


def expand_inputs(paths: list[str], skipped: list[str] | None = None) -> list[str]:
    """Files, folders and ``-`` (stdin). A folder gives the NCCL logs inside it (one level of subfolders), sorted:
    files whose start holds no NCCL line are left out, and so is ``x.log.gz`` beside ``x.log`` (the same log);
    ``skipped`` receives a note for each left out."""
    from ncclctl.errors import InputError
    from ncclctl.names import natural_key

    out: list[str] = []
    for p in paths:
        if p == "-":
            out.append(p)
            continue
        if os.path.isdir(p):
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))[:1000] if root == p else []
                for f in files:
                    full = os.path.join(root, f)
                    if not f.startswith(".") and os.path.isfile(full) and not os.path.islink(full):
                        found.append(full)
            names = set(found)
            logs = []
            for full in sorted(found, key=natural_key):
                if full.endswith(".gz") and full[:-3] in names:
                    if skipped is not None:
                        skipped.append(f"{full}: left out, the same log as {os.path.basename(full[:-3])}")
                    continue
                if not _looks_like_log(full):
                    if skipped is not None:
                        skipped.append(f"{full}: left out, no NCCL line in its first {SNIFF_BYTES >> 10} KiB")
                    continue
                logs.append(full)
            if not logs:
                raise InputError("the folder holds no NCCL log" + (f" ({len(found)} files, none with an NCCL line "
                                                                   "near its start)" if found else ""), path=p,
                                 fix="give the folder NCCL_DEBUG_FILE wrote to, or the log files themselves")
            out.extend(logs)
        else:
            out.append(p)
    return out


def read_logs(paths: list[str], *, stdin=None) -> LogSet:
    """Read every input (files, folders, ``-``) into one :class:`LogSet`."""
    from ncclctl.inputs import LineStream, iter_lines

    parser = Parser()
    skipped: list[str] = []
    # The reader allocates a row per line (a 1,024-rank log: 2 million) and keeps what it records: the cyclic GC
    # would walk the growing heap again and again (a sixth of the run). It makes no garbage cycles.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for path in expand_inputs(paths, skipped):
            name = "<stdin>" if path == "-" else path
            st = LineStream(name)
            src = Source(name)
            parser.out.sources.append(src)
            parser.feed_source(name, iter_lines(path, "log", stream=st, stdin=stdin), src)
            src.notes = st.notes()
            src.gzip = st.gzip
    finally:
        if gc_was_enabled:
            gc.enable()
    if skipped and parser.out.sources:
        first = parser.out.sources[0]
        first.notes = list(first.notes) + skipped[:20] + (
            [f"... and {len(skipped) - 20} more files left out"] if len(skipped) > 20 else [])
    return parser.finish()


def read_text(text: str, name: str = "<text>") -> LogSet:
    """A :class:`LogSet` from a string (tests and the fuzz harness)."""
    parser = Parser()
    src = Source(name)
    parser.out.sources.append(src)
    parser.feed_source(name, [text.split("\n")], src)
    return parser.finish()


__all__ = ["Comm", "Ev", "LogSet", "Member", "Nic", "Parser", "Proc", "Source", "WARN_KINDS", "expand_inputs",
           "known_wording", "read_logs", "read_text", "warn_kind"]
