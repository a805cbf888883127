"""``ncclctl perf check``: nccl-tests results, the bus bandwidth the hardware should give, and the gap.

Reading: nccl-tests prints, per test (``src/common.cu``, ``src/util.cu``; 2.0 to 2.19)::

    # nccl-tests version 2.19.6 nccl-headers=22907 nccl-library=22907      (2.17+)
    # Collective test starting: all_reduce_perf                            (2.17+)
    # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 ...
    #  Rank  0 Group  0 Pid  1234 on node1 device  0 [0000:1b:00] NVIDIA H100 80GB HBM3   (older: no Group)
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
               8             2     float     sum      -1    27.87    0.00    0.00      0    27.53 ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 52.1234                                       (then "OK"/"FAILED" with -c)
    # Collective test concluded: all_reduce_perf

and with ``-J FILE.json`` a JSON document (``version`` 3: ``devices``, ``results`` with ``out_of_place`` and
``in_place`` objects, ``average_bus_bandwidth``). Older releases have no ``root`` column and an ``error`` column
(``0e+00``), per-iteration timing adds columns (read by the header's names), launcher prefixes and NCCL INFO
lines are mixed in. The collective is named by the "starting" line, a ``*_perf`` word near the header, or
inferred from busbw/algbw (2(n-1)/n all_reduce, (n-1)/n reduce_scatter or all_gather, 1 broadcast/reduce).

Expecting: the bus bandwidth is the hardware's bottleneck bandwidth (nccl-tests doc/PERFORMANCE.md), so:

* one node, NVSwitch (or two NVLink-connected GPUs): per-GPU NVLink bandwidth (active links x 25 GB/s per
  direction for sm70-sm90, 50 GB/s for sm100+, 20 GB/s for sm60) x ``NVLINK_EFF``;
* one node, PCIe only: the GPU's PCIe link (gen x width, per direction) x ``PCIE_EFF``;
* several nodes, ring-class collectives (all_reduce, all_gather, reduce_scatter, broadcast, reduce): the node's
  network bandwidth, sum of NCCL's NICs' rates x ``NET_EFF``, capped by the intra-node figure; alltoall: each
  GPU's share of it, N/(N-1) x (n-1)/n; sendrecv: one NIC's rate.

Every expectation says where its inputs came from (``--root``/``--inventory`` node, or the GPU name printed by
nccl-tests for SXM parts, whose NVLink count is fixed).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from ncclctl.findings import Finding, Severity
from ncclctl.logs.lines import strip_launcher
from ncclctl.logs.records import Ev

#: Fraction of the raw rate that NCCL reaches on large messages (documented in docs/perf.md with sources).
NVLINK_EFF = 0.80
PCIE_EFF = 0.80
NET_EFF = {"InfiniBand": 0.92, "Ethernet": 0.85}

#: Per-link NVLink bandwidth per direction (GB/s) by compute capability (NVLink 1, 2-4, 5).
def nvlink_link_gbs(sm: int | None) -> float | None:
    if sm is None:
        return None
    if sm >= 100:
        return 50.0
    if sm >= 70:
        return 25.0
    if sm >= 60:
        return 20.0
    return None


#: PCIe per-lane bandwidth per direction, GB/s, by generation (after 8b/10b or 128b/130b encoding).
PCIE_LANE_GBS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}

#: SXM GPUs by the name nccl-tests prints: (NVLink GB/s per direction per GPU, what it is). Their NVLink count is
#: fixed by the part; the systems they go in connect them through NVSwitch.
SXM_NAMES: tuple[tuple[str, float, str], ...] = (
    ("GB300", 900.0, "GB300: 18 NVLink5 links x 50 GB/s"),
    ("B300", 900.0, "B300: 18 NVLink5 links x 50 GB/s"),
    ("GB200", 900.0, "GB200: 18 NVLink5 links x 50 GB/s"),
    ("B200", 900.0, "B200: 18 NVLink5 links x 50 GB/s"),
    ("H800", 200.0, "H800: 8 NVLink4 links x 25 GB/s"),
    ("H20", 450.0, "H20: 18 NVLink4 links x 25 GB/s"),
    ("H200", 450.0, "H200 SXM: 18 NVLink4 links x 25 GB/s"),
    ("H100 80GB HBM3", 450.0, "H100 SXM: 18 NVLink4 links x 25 GB/s"),
    ("H100-SXM", 450.0, "H100 SXM: 18 NVLink4 links x 25 GB/s"),
    ("H100 SXM", 450.0, "H100 SXM: 18 NVLink4 links x 25 GB/s"),
    ("A800-SXM", 200.0, "A800 SXM: 8 NVLink3 links x 25 GB/s"),
    ("A100-SXM", 300.0, "A100 SXM: 12 NVLink3 links x 25 GB/s"),
    ("A100 SXM", 300.0, "A100 SXM: 12 NVLink3 links x 25 GB/s"),
)

#: busbw = algbw x factor (nccl-tests doc/PERFORMANCE.md and src/*.cu).
BUS_FACTOR = {"all_reduce": "2(n-1)/n", "reduce_scatter": "(n-1)/n", "all_gather": "(n-1)/n", "alltoall": "(n-1)/n",
              "broadcast": "1", "reduce": "1", "sendrecv": "1", "gather": "(n-1)/n", "scatter": "(n-1)/n",
              "hypercube": "1", "alltoallv": "(n-1)/n"}

RING_CLASS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")


@dataclass(slots=True)  # two per row: a result file may hold millions of rows
class Side:
    time_us: float | None
    algbw: float | None
    busbw: float | None
    wrong: float | None  # None: not checked (N/A)

    def doc(self) -> dict[str, float | None]:
        return {"time_us": self.time_us, "algbw": self.algbw, "busbw": self.busbw, "wrong": self.wrong}


@dataclass(slots=True)
class Row:
    size: int
    count: int
    dtype: str
    redop: str
    root: int | None
    oop: Side | None
    ip: Side | None
    line: int
    text: str = ""

    def best_busbw(self) -> float | None:
        vals = [s.busbw for s in (self.oop, self.ip) if s is not None and s.busbw is not None]
        return max(vals) if vals else None


@dataclass
class Test:
    source: str
    line: int
    name: str | None = None
    named_by: str = ""
    tests_version: str | None = None
    nthreads: int | None = None
    ngpus: int | None = None
    devices: list[dict[str, Any]] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)  # all, up to TABLE_MAX; past it the first (acc.kept(): all kept)
    oob: int | None = None
    oob_failed: bool = False
    avg_busbw: float | None = None
    avg_failed: bool = False
    avg_ev: Ev | None = None
    concluded: bool = False
    footer: bool = False
    errors: list[Ev] = field(default_factory=list)
    header_ev: Ev | None = None
    columns: list[str] = field(default_factory=list)
    json: bool = False
    acc: "_Table | None" = field(default=None, repr=False, compare=False)

    def add(self, row: Row, line: str = "") -> None:
        """One more result row: counted and folded into what the rules use; kept in ``rows`` while the table is
        small (:data:`TABLE_MAX`), else only the first and the largest (:class:`_Table`)."""
        _table(self).add(self, row, line)

    @property
    def nrows(self) -> int:
        """Result rows read (``rows`` holds them all, or :data:`TABLE_MAX` of them)."""
        return _table(self).n

    @property
    def nranks(self) -> int | None:
        if self.devices:
            return len(self.devices)
        if self.nthreads and self.ngpus:
            return self.nthreads * self.ngpus
        return None

    @property
    def hosts(self) -> list[str]:
        from ncclctl.names import natural_key

        return sorted({d["host"] for d in self.devices if d.get("host")}, key=natural_key)

    @property
    def gpu_names(self) -> list[str]:
        return sorted({d["name"] for d in self.devices if d.get("name")})


#: Result rows kept per test. A nccl-tests table has tens of rows (one per size; thousands with a fine ``-i``
#: step); beyond this, the rows kept are the first :data:`TABLE_HEAD` and the :data:`TABLE_MAX` - TABLE_HEAD with
#: the largest sizes (the earlier row first among equal sizes), in the file's order, and the rest is only counted
#: and folded into the figures the rules use (docs/perf.md, "Huge tables").
TABLE_MAX = 4096
TABLE_HEAD = 2048

#: Bus/algorithm bandwidth ratios kept exactly (two per row) for inferring the collective; beyond this, counted in
#: buckets of 1e-4 (:func:`name_test`).
RATIOS_MAX = 2 * TABLE_MAX


class _Table:
    """What a test's rows add up to, in bounded memory: the count, the first row with wrong results and their
    count, the largest size, the largest size with a bus bandwidth, the best bus bandwidth from ``min_bytes`` up,
    the busbw/algbw ratios (exact up to :data:`RATIOS_MAX`, then bucketed), and the rows kept (:data:`TABLE_MAX`).
    Only the first wrong row and the largest row with a bus bandwidth keep their line (a finding quotes them)."""

    __slots__ = ("n", "first_wrong", "wrong", "top", "top_bw", "min_bytes", "measured", "ratios", "buckets",
                 "heap")

    def __init__(self, min_bytes: int | None = None) -> None:
        self.n = 0
        self.first_wrong: Row | None = None
        self.wrong = 0
        self.top: Row | None = None
        self.top_bw: Row | None = None
        self.min_bytes = min_bytes
        self.measured: float | None = None
        self.ratios: list[float] = []
        self.buckets: dict[int, int] | None = None
        self.heap: list[tuple[int, int, Row]] | None = None  # (size, -line, row): the largest rows past the head

    @property
    def truncated(self) -> bool:
        return self.heap is not None

    def add(self, t: "Test", row: Row, line: str) -> None:
        self.n += 1
        if any(s is not None and s.wrong for s in (row.oop, row.ip)):
            self.wrong += 1
            if self.first_wrong is None:
                row.text = line[:400]
                self.first_wrong = row
        if self.top is None or row.size > self.top.size:
            self.top = row
        bw = row.best_busbw()
        if bw is not None:
            if self.top_bw is None or row.size > self.top_bw.size:
                row.text = line[:400]
                if self.top_bw is not None and self.top_bw is not self.first_wrong:
                    self.top_bw.text = ""
                self.top_bw = row
            if self.min_bytes is not None and row.size >= self.min_bytes and (self.measured is None
                                                                             or bw > self.measured):
                self.measured = bw
        for s in (row.oop, row.ip):
            if s is not None and s.algbw and s.busbw is not None and s.algbw > 0.05:
                self._ratio(s.busbw / s.algbw)
        self._keep(t, row)

    def _ratio(self, r: float) -> None:
        if self.buckets is None:
            self.ratios.append(r)
            if len(self.ratios) <= RATIOS_MAX:
                return
            self.buckets = {}
            for x in self.ratios:
                self._bucket(x)
            self.ratios = []
            return
        self._bucket(r)

    def _bucket(self, r: float) -> None:
        k = -1 if r < 0 else 40_001 if r > 4 else round(r * 1e4)  # beyond 0-4 no collective's factor is near
        assert self.buckets is not None
        self.buckets[k] = self.buckets.get(k, 0) + 1

    def median_ratio(self) -> float | None:
        if self.buckets is None:
            return sorted(self.ratios)[len(self.ratios) // 2] if self.ratios else None
        total, at = sum(self.buckets.values()), 0
        for k in sorted(self.buckets):
            at += self.buckets[k]
            if at > total // 2:
                return k / 1e4
        return None

    def _keep(self, t: "Test", row: Row) -> None:
        import heapq

        if self.heap is None:
            t.rows.append(row)
            if len(t.rows) <= TABLE_MAX:
                return
            rest = t.rows[TABLE_HEAD:]
            del t.rows[TABLE_HEAD:]
            self.heap = []
            for r in rest:
                self._top(r, heapq)
            return
        self._top(row, heapq)

    def _top(self, row: Row, heapq) -> None:
        assert self.heap is not None
        item = (row.size, -row.line, row)
        if len(self.heap) < TABLE_MAX - TABLE_HEAD:
            heapq.heappush(self.heap, item)
        elif item[:2] > self.heap[0][:2]:
            heapq.heapreplace(self.heap, item)

    def kept(self, t: "Test") -> list[Row]:
        """The rows kept, in the file's order."""
        if self.heap is None:
            return t.rows
        return t.rows + [r for _s, _l, r in sorted(self.heap, key=lambda x: x[2].line)]


def _table(t: "Test") -> _Table:
    """The test's :class:`_Table`; built from ``rows`` for a test made without :meth:`Test.add`."""
    acc = t.acc
    if acc is None or (not acc.truncated and acc.n != len(t.rows)):
        acc = _Table()
        rows, t.rows = list(t.rows), []
        t.acc = acc
        for r in rows:
            acc.add(t, r, r.text)
    return acc


_RANK = re.compile(r"^#?\s*Rank\s+(\d{1,9})(?:\s+Group\s+(\d{1,9}))?\s+Pid\s+(\d{1,9})\s+on\s+(\S+)\s+device\s+(\d{1,9})\s+\[([^\]]*)\]"
                   r"\s*(.*?)\s*$")
_NTHREAD = re.compile(r"nThread (\d{1,9}) nGpus (\d{1,9})")
_STARTING = re.compile(r"Collective test starting: (\S+)")
_CONCLUDED = re.compile(r"Collective test concluded")
_VERSION = re.compile(r"nccl-tests version (\S+)")
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d{1,9})\s*(FAILED|OK)?")
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*([-\d.eE+naif]+)\s*(FAILED|OK)?")
_PERFNAME = re.compile(r"\b(all_reduce|all_gather|alltoallv?|broadcast|reduce_scatter|reduce|sendrecv|gather|scatter"
                       r"|hypercube)_perf")
_ROOT = re.compile(r"^-?\d{1,9}$")
_STAMP = re.compile(r"^\d{4}-\d\d-\d\d$|^\d\d:\d\d:\d\d$")
_NUM = re.compile(r"^-?(?:\d{1,30}\.?\d{0,30}|\.\d{1,30})(?:[eE][-+]?\d{1,4})?$")


def _num(tok: str) -> float | None:
    """A number as :data:`_NUM` accepts it. Plain digits and one decimal point (nearly every cell of a table) are
    told without the regex, with the same answer (``\\d`` is what ``str.isdecimal`` accepts)."""
    if tok.isdecimal():
        return float(tok) if len(tok) <= 60 else None
    if not tok or (tok[0] not in "-." and not tok[0].isdecimal()):
        return None  # the regex's first character is one of these ('sum', 'float', 'N/A' are words)
    a, dot, b = tok.partition(".")
    if dot and (a or b) and len(a) <= 30 and len(b) <= 30 and (not a or a.isdecimal()) and (not b or b.isdecimal()):
        return float(tok)
    return float(tok) if _NUM.match(tok) else None


#: The largest bandwidth (GB/s) a result may show: 500x any GPU's (NVLink 5 is 1,800 GB/s a GPU). nccl-tests
#: prints what it measured; 1e308 or inf is a forged or corrupted file, and would print a 300-digit efficiency.
MAX_GBS = 1e6
_INF = float("inf")


#: The largest nccl-tests JSON document read (and so the longest line kept of a perf input: -J may write one line).
MAX_JSON = 256 << 20

#: Sizes and element counts stay under 18 digits (the text parser's own bound).
MAX_COUNT = 10 ** 18


def _implausible(side: Side | None) -> str | None:
    """What is wrong with one side of a result row (a value that is not a finite number, a bandwidth over
    :data:`MAX_GBS`), or None."""
    if side is None:
        return None
    t, a, b, w = side.time_us, side.algbw, side.busbw, side.wrong
    if ((t is None or -_INF < t < _INF) and (a is None or -MAX_GBS <= a <= MAX_GBS)
            and (b is None or -MAX_GBS <= b <= MAX_GBS) and (w is None or -_INF < w < _INF)):
        return None  # the common case, told at once (NaN compares false: it goes on to the message below)
    for what, v in (("time", side.time_us), ("algbw", side.algbw), ("busbw", side.busbw), ("#wrong", side.wrong)):
        if v is None:
            continue
        if not math.isfinite(v):
            return f"{what} {v} is not a number nccl-tests can measure"
        if what in ("algbw", "busbw") and abs(v) > MAX_GBS:
            return f"{what} {v:g} GB/s is over {MAX_GBS:,.0f} GB/s, more than any hardware gives"
    return None


def _check_row(row: Row, source: str, line: int | None, column: int | None = None, where: str = "") -> None:
    """Refuse a row no nccl-tests run can have written (exit 3, the file and line named)."""
    from ncclctl.errors import InputError

    for what, n in (("size", row.size), ("count", row.count)):
        if not 0 <= n < MAX_COUNT:
            raise InputError(f"not a usable nccl-tests result: {where}{what} of {len(str(abs(n)))} digits (nccl-tests "
                             "prints at most 18)", path=source, line=line, column=column,
                             fix="give the unmodified output of the nccl-tests run (rerun the test if the file is "
                                 "damaged)")
    for name, side in (("out-of-place", row.oop), ("in-place", row.ip)):
        why = _implausible(side)
        if why is not None:
            raise InputError(f"not a usable nccl-tests result: {where}{name} {why}", path=source, line=line,
                             column=column, fix="give the unmodified output of the nccl-tests run (rerun the test "
                                                "if the file is damaged)")


def _check_avg(value: float | None, source: str, line: int | None, column: int | None = None) -> None:
    from ncclctl.errors import InputError

    if value is not None and (not math.isfinite(value) or abs(value) > MAX_GBS):
        raise InputError(f"not a usable nccl-tests result: average bus bandwidth {value:g} is not a bandwidth "
                         "nccl-tests can measure", path=source, line=line, column=column,
                         fix="give the unmodified output of the nccl-tests run (rerun the test if the file is damaged)")


def parse_results(lines_iter, source: str, *, min_bytes: int | None = None) -> list[Test]:
    """Every nccl-tests result in a text stream (batches of lines, as :func:`ncclctl.inputs.iter_lines` gives)."""
    tests: list[Test] = []
    cur: Test | None = None
    pending_name: tuple[str, str] | None = None
    pending_version: str | None = None
    lineno = 0
    for batch in lines_iter:
        for raw in batch:
            lineno += 1
            if not raw:
                continue
            if " NCCL INFO " in raw or " NCCL WARN " in raw:
                continue
            line = strip_launcher(raw)
            if not line:
                continue
            body = line[1:].strip() if line.startswith("#") else line
            if "nccl-tests version" in body:
                m = _VERSION.search(body)
                pending_version = m.group(1) if m else None
                continue
            # each regex below only after a plain substring test it needs (same answers, a fraction of the cost on
            # the result rows, nearly every line of a big table)
            m = _STARTING.search(body) if "Collective test starting: " in body else None
            if m:
                pending_name = (m.group(1).replace("_perf", "").replace("_mpi", ""), "the 'Collective test starting' line")
                continue
            m = _NTHREAD.search(body) if "minBytes" in body and "nThread " in body else None
            if m:
                cur = Test(source=source, line=lineno, nthreads=int(m.group(1)), ngpus=int(m.group(2)),
                           header_ev=Ev(source, lineno, line[:400]), tests_version=pending_version,
                           acc=_Table(min_bytes))
                if pending_name:
                    cur.name, cur.named_by = pending_name
                pending_name = None
                tests.append(cur)
                continue
            pm = _PERFNAME.search(line) if "_perf" in line else None
            if pm and not line.lstrip().startswith(("#", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")):
                pending_name = (pm.group(1), "the command line")
                if cur is not None and not cur.nrows and cur.name is None:
                    cur.name, cur.named_by = pending_name
                continue
            if cur is None:
                if ("Rank" in body and _RANK.match(body)) or body.split()[:2] == ["size", "count"]:
                    cur = Test(source=source, line=lineno, header_ev=Ev(source, lineno, line[:400]),
                               tests_version=pending_version, acc=_Table(min_bytes))
                    if pending_name:
                        cur.name, cur.named_by = pending_name
                    tests.append(cur)
                elif _is_row(body):
                    cur = Test(source=source, line=lineno, header_ev=Ev(source, lineno, line[:400]),
                               acc=_Table(min_bytes))
                    tests.append(cur)
                else:
                    if "Test NCCL failure" in line or "Test CUDA failure" in line:
                        pass
                    continue
            m = _RANK.match(body) if "Rank" in body else None
            if m:
                if not cur.nrows:
                    cur.devices.append({"rank": int(m.group(1)), "group": int(m.group(2) or 0), "pid": int(m.group(3)),
                                        "host": m.group(4), "device": int(m.group(5)), "bus": m.group(6),
                                        "name": m.group(7)})
                continue
            toks = body.split()
            if toks[:2] == ["size", "count"]:
                cur.columns = toks
                continue
            if _footer(cur, body, Ev(source, lineno, line[:400])):  # with or without '#' (a pasted table)
                continue
            if line.startswith("#") or not toks:
                if body.startswith("error:"):
                    cur.errors.append(Ev(source, lineno, line[:400]))
                continue
            if "Test NCCL failure" in line or "Test CUDA failure" in line or "Test failure" in line:
                cur.errors.append(Ev(source, lineno, line[:400]))
                continue
            row = _row(toks, cur.columns, lineno)
            if row is not None:
                _check_row(row, source, lineno)
                if cur.footer:  # a table after a footer without a new header: a second test (duplicated output)
                    nxt = Test(source=source, line=lineno, name=cur.name, named_by=cur.named_by,
                               columns=cur.columns, devices=list(cur.devices), nthreads=cur.nthreads, ngpus=cur.ngpus,
                               header_ev=Ev(source, lineno, line[:400]), acc=_Table(min_bytes))
                    tests.append(nxt)
                    cur = nxt
                cur.add(row, line)
    return tests


def _footer(cur: Test, body: str, ev: Ev) -> bool:
    """The footer lines of a table: out-of-bounds values, the average bus bandwidth, 'test concluded'."""
    if "Out of bounds" in body:
        m = _OOB.search(body)
        if m:
            cur.oob = int(m.group(1))
            cur.oob_failed = m.group(2) == "FAILED" or cur.oob > 0
            cur.footer = True
            return True
    if "Avg bus bandwidth" in body:
        m = _AVG.search(body)
        if m:
            try:
                cur.avg_busbw = float(m.group(1))
            except ValueError:
                cur.avg_busbw = None
            _check_avg(cur.avg_busbw, ev.source, ev.line)
            cur.avg_failed = m.group(2) == "FAILED"
            cur.avg_ev = ev
            cur.footer = True
            return True
    if _CONCLUDED.search(body):
        cur.concluded = True
        return True
    return False


def _is_row(body: str) -> bool:
    toks = body.split()
    return len(toks) >= 7 and toks[0].isdigit() and toks[1].isdigit() and not toks[2].isdigit()


def _row(toks: list[str], columns: list[str], lineno: int) -> Row | None:
    if len(toks) < 6 or not toks[0].isdigit() or not toks[1].isdigit() or toks[2][:1].isdigit() \
            or len(toks[0]) > 18 or len(toks[1]) > 18:
        return None
    size, count, dtype = int(toks[0]), int(toks[1]), toks[2]
    if _num(toks[3]) is not None:  # NCCL 2.4-era tables: no redop column
        redop, rest = "", toks[3:]
    else:
        redop, rest = toks[3], toks[4:]
    # -S timestamps at the end of a row (the regex only where one can be: 'dddd-dd-dd', 'dd:dd:dd')
    rest = [t for t in rest if not ((t[4:5] == "-" or t[2:3] == ":") and _STAMP.match(t))]
    root: int | None = None
    if columns:
        has_root = "root" in columns
    else:  # no header: a root column is there when the values after redop come in 9 or 5 (root + 8 or 4)
        has_root = len(rest) % 4 == 1
    if has_root and rest and _ROOT.match(rest[0]):
        root = int(rest[0])
        rest = rest[1:]
    per = 8 if columns and "i_min" in columns else 4
    vals = rest
    sides: list[Side] = []
    for i in range(0, min(len(vals), 2 * per), per):
        chunk = vals[i:i + per]
        if len(chunk) < 3:
            break
        t, a, b = (_num(x) for x in chunk[:3])
        if a is None and b is None:
            break
        sides.append(Side(t, a, b, _wrong(chunk[3], columns) if len(chunk) > 3 else None))
    if not sides:
        return None
    return Row(size, count, dtype, redop, root, sides[0], sides[1] if len(sides) > 1 else None, lineno)


def _wrong(tok: str, columns: list[str]) -> float | None:
    """The wrong-results column: ``#wrong`` counts wrong elements; older releases print ``error``, the largest
    relative error (``2e-07`` is float rounding, not a failure): there, over 1% counts as wrong."""
    v = _num(tok)
    if v is None:
        return None  # N/A: not checked
    if ("error" in columns and "#wrong" not in columns) or (not columns and ("e" in tok or "." in tok)):
        return 1.0 if v > 1e-2 else 0.0
    return v


class _JsonStream:
    """A JSON object read member by member from str chunks, and one array member's elements one by one: what
    ``-J`` output needs (a document of one line, up to :data:`MAX_JSON`) without holding it. Each value is
    decoded by ``json.JSONDecoder.raw_decode`` from a buffer that holds the value being read and what follows it
    in the last chunk; a value that runs past the buffer is tried again after reading at least as much again
    (linear time for any size). Errors are ``json.JSONDecodeError`` (or the decoder's own ``ValueError`` /
    ``RecursionError``), as ``json.loads`` raises them."""

    _WS = re.compile(r"[ \t\n\r]*")

    def __init__(self, chunks: Any, cap: int) -> None:
        self._chunks = iter(chunks)
        self._dec = json.JSONDecoder()
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.cap = cap
        self.read = 0  # characters read, against the cap
        self.over = False
        self._lines = 0  # newlines dropped from the buffer's front
        self._col = 0  # characters after the last of them
        self.fills = 0  # buffer refills (what a test counts)

    def _fill(self) -> bool:
        """Drop what was read and read at least as much again as the buffer holds; False at the end."""
        if self.eof:
            return False
        if self.pos:
            buf, pos = self.buf, self.pos
            n = buf.count("\n", 0, pos)
            self._lines += n
            self._col = pos - buf.rfind("\n", 0, pos) - 1 if n else self._col + pos
            self.buf, self.pos = buf[pos:], 0
        want = max(len(self.buf), 1 << 16)
        got = [self.buf]
        n = 0
        for chunk in self._chunks:
            got.append(chunk)
            n += len(chunk)
            if n >= want:
                break
        else:
            self.eof = True
        self.read += n
        if self.read > self.cap:
            self.over = True
            raise _TooBig()
        self.fills += 1
        self.buf = "".join(got)
        return n > 0

    def where(self, index: int) -> tuple[int, int]:
        """Line and column (1-based) of the buffer's ``index``."""
        n = self.buf.count("\n", 0, index)
        if n:
            return self._lines + n + 1, index - self.buf.rfind("\n", 0, index)
        return self._lines + 1, self._col + index + 1

    def peek(self) -> str:
        """The next character that is not white space ("" at the end), left unread."""
        while True:
            self.pos = self._WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return ""

    def take(self, char: str) -> None:
        if self.peek() != char:
            raise json.JSONDecodeError(f"Expecting {char!r}", self.buf, self.pos)
        self.pos += 1

    def value(self) -> tuple[Any, int]:
        """The next value and where it starts in :attr:`buf` (valid until the next read)."""
        self.peek()
        while True:
            buf = self.buf
            try:
                v, end = self._dec.raw_decode(buf, self.pos)
            except json.JSONDecodeError as exc:
                # cut by the buffer's end (a string's error names where it starts), or wrong where it stands
                if self.eof or not (exc.pos >= len(buf) - 16 or exc.msg.startswith("Unterminated string")):
                    raise
                self._fill()
                continue
            if end < len(buf) or self.eof:  # a number at the buffer's end may go on in the next chunk
                start, self.pos = self.pos, end
                return v, start
            self._fill()


class _TooBig(Exception):
    pass


#: ``results`` in :func:`_json_members`' answer when it was a list (its rows were handed over, not kept)
_STREAMED = object()


def _json_members(js: _JsonStream, on_row) -> dict[str, Any]:
    """The members of the top-level object, each ``results`` element given to ``on_row(index, value, start)`` as
    it is read instead of kept (``results`` is then :data:`_STREAMED`); a value that is not an object comes back as
    the member ``""``."""
    if js.peek() != "{":
        v, _ = js.value()
        if js.peek():
            raise json.JSONDecodeError("Extra data", js.buf, js.pos)
        return {"": v}
    js.pos += 1
    members: dict[str, Any] = {}
    c = js.peek()
    while c != "}":
        if c != '"':
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", js.buf, js.pos)
        key, _ = js.value()
        js.take(":")
        if key == "results" and js.peek() == "[":
            if "results" in members:
                raise json.JSONDecodeError("a second 'results' list", js.buf, js.pos)
            js.pos += 1
            i = 0
            c = js.peek()
            while c != "]":
                row, start = js.value()
                on_row(i, row, start)
                i += 1
                c = _next(js, "]")
            js.pos += 1
            members["results"] = _STREAMED
        else:
            value, start = js.value()
            members[key] = value
            if key == "average_bus_bandwidth":  # where a refused average is, before the buffer moves on
                members["\0avg"] = _json_where(js, start)
        c = _next(js, "}")
    js.pos += 1
    if js.peek():
        raise json.JSONDecodeError("Extra data", js.buf, js.pos)
    return members


def _next(js: _JsonStream, close: str) -> str:
    """After a member or an element: ``close`` (left unread) or a comma, then the next one's first character."""
    c = js.peek()
    if c == close:
        return c
    if c != ",":
        raise json.JSONDecodeError("Expecting ',' delimiter", js.buf, js.pos)
    js.pos += 1
    c = js.peek()
    if c == close or not c:  # a trailing comma, or the end
        raise json.JSONDecodeError("Expecting value", js.buf, js.pos)
    return c


def _json_where(js: _JsonStream, start: int) -> tuple[int | None, int | None]:
    """Line and column of the first value :func:`_implausible` refuses in the value read last (from ``start``)."""
    line, column = _json_position(js.buf[start:js.pos], None)
    if line is None or column is None:
        return None, None
    at_line, at_col = js.where(start)
    return at_line + line - 1, (at_col + column - 1 if line == 1 else column)


def parse_json(text: Any, source: str, *, min_bytes: int | None = None) -> list[Test]:
    """nccl-tests' ``-J`` output (JSON format version 3): ``text`` a str or str chunks (:func:`read_results`
    streams the file). Rows are read one at a time: memory holds one row, not the document."""
    from ncclctl.errors import InputError

    t = Test(source=source, line=1, json=True, acc=_Table(min_bytes))
    js = _JsonStream([text] if isinstance(text, str) else text, MAX_JSON)

    def on_row(i: int, r: Any, start: int) -> None:
        if not isinstance(r, dict):
            return
        try:
            root = r.get("root")
            row = Row(int(r.get("size") or 0), int(r.get("count") or 0), str(r.get("type", "")), str(r.get("redop", "")),
                      int(str(root).strip()) if root is not None and str(root).strip().lstrip("-").isdigit() else None,
                      _side(r.get("out_of_place")), _side(r.get("in_place")), i + 1)
        except (TypeError, ValueError, OverflowError):  # a value of another type, or too large for a float
            line, column = _json_where(js, start)
            if line is not None:
                raise InputError(f"not a usable nccl-tests result: results[{i}] holds a value that is not a number "
                                 "nccl-tests can measure (NaN, Infinity, or too large)", path=source, line=line,
                                 column=column, fix="give the unmodified output of the nccl-tests run (rerun the "
                                                    "test if the file is damaged)") from None
            return
        if _implausible(row.oop) or _implausible(row.ip) or not (0 <= row.size < MAX_COUNT and 0 <= row.count < MAX_COUNT):
            line, column = _json_where(js, start)
            _check_row(row, source, line, column, where=f"results[{i}] ")
        t.add(row)

    try:
        doc = _json_members(js, on_row)
    except _TooBig:
        raise InputError("nccl-tests JSON output over 256 MiB", path=source, fix="give the text output instead") from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"not nccl-tests JSON output: {type(exc).__name__}", path=source,
                         fix="give the file written by 'all_reduce_perf -J FILE.json', or its text output") from None
    if doc.get("results") is not _STREAMED:
        raise InputError("not nccl-tests JSON output (no 'results' list)", path=source,
                         fix="give the file written by 'all_reduce_perf -J FILE.json', or its text output")
    args = doc.get("args")
    if isinstance(args, list) and args and isinstance(args[0], str):
        m = _PERFNAME.search(args[0])
        if m:
            t.name, t.named_by = m.group(1), "the command in the JSON document"
    cfg: dict[str, Any] = doc["config"] if isinstance(doc.get("config"), dict) else {}
    t.nthreads = cfg.get("nthreads") if isinstance(cfg.get("nthreads"), int) else None
    t.ngpus = cfg.get("ngpus") if isinstance(cfg.get("ngpus"), int) else None
    devices = doc.get("devices") or []
    for d in devices if isinstance(devices, (list, dict, str)) else []:
        if isinstance(d, dict):
            t.devices.append({"rank": d.get("rank"), "host": str(d.get("hostname", "")), "device": d.get("device"),
                              "bus": str(d.get("device_hex", "")), "name": str(d.get("device_info", "")).strip(),
                              "pid": d.get("pid"), "group": d.get("group")})
    oob = doc.get("out_of_bounds")
    if isinstance(oob, dict) and isinstance(oob.get("count"), int):
        t.oob = oob["count"]
        t.oob_failed = oob.get("okay") is False or t.oob > 0
        t.footer = True
    avg = doc.get("average_bus_bandwidth")
    if isinstance(avg, dict) and isinstance(avg.get("bandwidth"), (int, float)):
        t.avg_busbw = float(avg["bandwidth"])
        _check_avg(t.avg_busbw, source, *doc["\0avg"])
        t.avg_failed = avg.get("okay") is False
        t.footer = True
    errors = doc.get("errors") or []
    for e in errors if isinstance(errors, (list, dict, str)) else []:
        t.errors.append(Ev(source, 1, str(e)[:400]))
    t.concluded = t.footer
    return [t]


#: A JSON token: a measured value with its key (``"bus_bw": 1e308``), any other string (skipped whole, so text
#: inside one never counts), or a bracket (to know which entry of ``results`` a value is in).
_JSON_TOKEN = re.compile(r'"(?P<k>alg_bw|bus_bw|time|cpu_time|nwrong|bandwidth|size|count)"\s*:\s*'
                         r'(?P<v>-?Infinity|NaN|-?\d[\d.]*(?:[eE][-+]?\d+)?)|"(?:[^"\\]|\\.)*"|[\[\]{}]')
_BW_KEYS = ("alg_bw", "bus_bw", "bandwidth")


def _json_position(text: str, index: int | None) -> tuple[int | None, int | None]:
    """Line and column of the first measured value in ``results[index]`` (anywhere when ``index`` is None) that
    :func:`_implausible` refuses: ``NaN``, ``Infinity``, a bandwidth over :data:`MAX_GBS`. One pass over the
    tokens, linear; (None, None) when the value cannot be placed (the message still names ``results[i]``)."""
    depth = 0
    in_results = False
    results_depth = 0
    entry = -1
    for m in _JSON_TOKEN.finditer(text):
        tok = m.group()
        value = m.group("v")
        if value is not None:
            if index is None or (in_results and entry == index):
                key = m.group("k")
                v = float(value)
                if (not math.isfinite(v) or (key in _BW_KEYS and abs(v) > MAX_GBS)
                        or (key in ("size", "count") and not 0 <= v < MAX_COUNT)):
                    at = m.start("v")
                    return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
            continue
        if tok[0] == '"':
            if tok == '"results"' and depth == 1:
                in_results = True
            continue
        if tok in "[{":
            depth += 1
            if in_results and tok == "[" and results_depth == 0:
                results_depth = depth
            elif in_results and depth == results_depth + 1:
                entry += 1
            continue
        if in_results and depth == results_depth and results_depth:
            in_results = False
            results_depth = 0
        depth -= 1
    return None, None


def _side(d: Any) -> Side | None:
    if not isinstance(d, dict):
        return None

    def f(k: str) -> float | None:
        v = d.get(k)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    return Side(f("time") if "time" in d else f("cpu_time"), f("alg_bw"), f("bus_bw"), f("nwrong"))


def name_test(t: Test) -> str | None:
    """The collective: as named, else inferred from busbw/algbw, redop and root."""
    if t.name:
        return t.name
    n = t.nranks
    ratio = _table(t).median_ratio()
    if ratio is None or not n or n < 2:
        return None
    redop = t.rows[0].redop if t.rows else ""
    root = t.rows[0].root if t.rows else None
    rooted = root is not None and root >= 0
    guess = None
    if abs(ratio - 2 * (n - 1) / n) < 0.02:
        guess = "all_reduce"
    elif abs(ratio - (n - 1) / n) < 0.02:
        guess = ("gather" if rooted else "all_gather") if redop == "none" else "reduce_scatter"
    elif abs(ratio - 1) < 0.02:
        guess = ("broadcast" if redop == "none" else "reduce") if rooted else None
    if guess:
        t.named_by = "inferred from busbw/algbw, redop and root"
    return guess


# ---------------------------------------------------------------------------------------------------------------
# hardware and expectation


@dataclass
class Hardware:
    source: str
    gpu: str | None = None
    gpus_per_node: int | None = None
    nvlink_gbs: float | None = None
    nvlink_why: str = ""
    nvswitch: bool = False
    pcie_gbs: float | None = None
    pcie_why: str = ""
    nics: list[tuple[str, float, str]] = field(default_factory=list)  # (name, Gb/s, link layer)


def hardware_from_node(node, source: str) -> Hardware:
    hw = Hardware(source=source)
    gpus = list(node.gpus)
    hw.gpus_per_node = len(gpus) or None
    if gpus:
        g = gpus[0]
        hw.gpu = g.name
        links = min(len(x.active_nvlinks) for x in gpus)
        per = nvlink_link_gbs(g.sm)
        if links and per:
            hw.nvlink_gbs = links * per
            hw.nvswitch = bool(node.nvswitches) or any(l.remote_type == "nvswitch" for x in gpus for l in x.nvlinks)
            hw.nvlink_why = f"{links} active NVLinks x {per:g} GB/s per direction (sm{g.sm})"
        gens = [(x.pcie_curr_gen or x.pcie_max_gen, x.pcie_curr_width or x.pcie_max_width) for x in gpus]
        gens = [(a, b) for a, b in gens if a and b]
        if gens:
            gen, width = min(gens, key=lambda gw: PCIE_LANE_GBS.get(gw[0], 0) * gw[1])
            if gen in PCIE_LANE_GBS:
                hw.pcie_gbs = PCIE_LANE_GBS[gen] * width
                hw.pcie_why = f"PCIe gen{gen} x{width} = {hw.pcie_gbs:.1f} GB/s per direction"
    try:
        from ncclctl.nccl.predict import inputs_for_node, predict_xml
        from ncclctl.nccl.version import DEFAULT

        data, inputs, down = inputs_for_node(node, nodes=2, env={}, version=DEFAULT, gdr="auto", source=source)
        pred = predict_xml(data, inputs=inputs, down=down, path=source)
        layer = {n.name: (p.link_layer or "InfiniBand") for n in node.nics for p in n.ports}
        hw.nics = [(n["name"], float(n["speed_gbps"]), layer.get(n["name"].split("+")[0], "InfiniBand"))
                   for n in pred.to_json()["nets"]]
    except Exception:  # a node the model cannot read: fall back to the ACTIVE RDMA ports
        for n in node.nics:
            for p in n.ports:
                if p.state.upper() == "ACTIVE" and p.rate_gbps:
                    hw.nics.append((n.name, float(p.rate_gbps), p.link_layer or "InfiniBand"))
    return hw


def hardware_from_names(t: Test) -> Hardware | None:
    names = t.gpu_names
    if len(names) != 1:
        return None
    name = names[0]
    for key, gbs, why in SXM_NAMES:
        if key in name and "PCIe" not in name and "NVL" not in name.replace("HBM", ""):
            return Hardware(source=f"the GPU name nccl-tests printed ({name})", gpu=name, nvlink_gbs=gbs,
                            nvlink_why=why, nvswitch=True)
    return None


@dataclass
class Expectation:
    busbw: float | None
    why: str
    formula: str = ""


def expect(name: str | None, hw: Hardware | None, *, nodes: int, ranks: int | None) -> Expectation:
    if hw is None:
        return Expectation(None, "the hardware is unknown: give --root or --inventory (the GPU name nccl-tests "
                                 "printed is not an SXM part with a fixed NVLink count)")
    if name is None:
        return Expectation(None, "the collective is not named and cannot be inferred")
    intra: float | None = None
    intra_why = ""
    gpn = hw.gpus_per_node or ((ranks // nodes) if ranks and nodes else None)
    if hw.nvlink_gbs and (hw.nvswitch or (gpn or 0) <= 2):
        intra = hw.nvlink_gbs * NVLINK_EFF
        intra_why = f"NVLink {hw.nvlink_why} = {hw.nvlink_gbs:g} GB/s x {NVLINK_EFF:g}"
    elif hw.nvlink_gbs:
        intra_why = "NVLink without NVSwitch: the rings' bottleneck depends on the link pattern"
    elif hw.pcie_gbs:
        intra = hw.pcie_gbs * PCIE_EFF
        intra_why = f"{hw.pcie_why} x {PCIE_EFF:g}"
    if nodes <= 1:
        if name not in BUS_FACTOR or name == "hypercube":
            return Expectation(None, f"no bandwidth model for {name}")
        if intra is None:
            return Expectation(None, intra_why or "neither NVLink nor the PCIe link of the GPUs is known")
        return Expectation(intra, f"one node: {intra_why}", "min(NVLink or PCIe per GPU) x efficiency")
    if not hw.nics:
        return Expectation(None, "several nodes, but the node's NICs are unknown (give --root or --inventory)")
    eff = NET_EFF.get(hw.nics[0][2], 0.85)
    total = sum(g for _n, g, _l in hw.nics) / 8.0
    net_why = f"{len(hw.nics)} NIC{'s' if len(hw.nics) != 1 else ''} x {hw.nics[0][1]:g} Gb/s = {total:g} GB/s x {eff:g}"
    if name in RING_CLASS:
        net = total * eff
        why = f"{nodes} nodes: network {net_why}"
    elif name == "alltoall" and gpn and ranks:
        net = total * eff / gpn * nodes / (nodes - 1) * (ranks - 1) / ranks
        why = f"{nodes} nodes: each GPU's share of the network ({net_why}) / {gpn} GPUs x N/(N-1) x (n-1)/n"
    elif name == "sendrecv":
        net = hw.nics[0][1] / 8.0 * eff
        why = f"{nodes} nodes: one NIC, {hw.nics[0][1]:g} Gb/s x {eff:g} (one rank pair per node crosses)"
    else:
        return Expectation(None, f"no multi-node bandwidth model for {name}")
    if intra is not None and intra < net:
        return Expectation(intra, f"{why}, capped by {intra_why}")
    return Expectation(net, why + (f" (intra-node {intra:.0f} GB/s is higher)" if intra is not None else ""))


# ---------------------------------------------------------------------------------------------------------------
# the check


@dataclass
class Result:
    test: Test
    name: str | None
    nodes: int
    largest: Row | None
    measured: float | None
    expectation: Expectation
    efficiency: float | None
    hardware: Hardware | None

    def doc(self) -> dict[str, Any]:
        t = self.test
        doc: dict[str, Any] = {"source": t.source, "line": t.line, "test": self.name, "named_by": t.named_by or None,
                "nccl_tests_version": t.tests_version, "ranks": t.nranks, "hosts": t.hosts, "nodes": self.nodes,
                "gpus": t.gpu_names, "rows": t.nrows, "json": t.json,
                "largest_size": self.largest.size if self.largest else None,
                "busbw_large": self.measured, "avg_busbw": t.avg_busbw,
                "expected_busbw": self.expectation.busbw, "expected_why": self.expectation.why,
                "efficiency": round(self.efficiency, 3) if self.efficiency is not None else None,
                "hardware": self.hardware.source if self.hardware else None,
                "out_of_bounds": t.oob, "complete": t.footer and not t.errors,
                "table": [{"size": r.size, "count": r.count, "type": r.dtype, "redop": r.redop, "root": r.root,
                           "out_of_place": r.oop.doc() if r.oop else None,
                           "in_place": r.ip.doc() if r.ip else None} for r in _table(t).kept(t)]}
        if _table(t).truncated:  # a huge table: the rows kept, and how many are only counted
            doc["table_omitted"] = t.nrows - len(doc["table"])
        return doc


def evaluate(tests: list[Test], *, hardware: dict[str, Hardware] | None, nodes: int | None,
             min_bytes: int) -> list[Result]:
    """Each test's figures against its expectation. A huge table (:data:`TABLE_MAX`) gives the figures folded in
    while reading when read with the same ``min_bytes`` (as ``perf check`` does), else those of its rows kept."""
    out = []
    for t in tests:
        name = name_test(t)
        n_nodes = nodes or max(len(t.hosts), 1)
        hw = None
        if hardware:
            hw = next((hardware[h] for h in t.hosts if h in hardware), None) or hardware.get("*")
        if hw is None:
            hw = hardware_from_names(t)
        acc = _table(t)
        largest: Row | None = None
        measured = None
        if acc.truncated and acc.min_bytes == min_bytes:  # a huge table: the figures folded in while reading
            if acc.top_bw is not None and acc.top_bw.size >= min_bytes:
                largest, measured = acc.top_bw, acc.measured
        else:
            big = [r for r in acc.kept(t) if r.size >= min_bytes and r.best_busbw() is not None]
            if big:  # only large messages say what the links give (small ones measure latency)
                largest = max(big, key=lambda r: r.size)
                measured = max(r.best_busbw() or 0.0 for r in big)
        exp = expect(name, hw, nodes=n_nodes, ranks=t.nranks)
        eff = measured / exp.busbw if measured is not None and exp.busbw else None
        out.append(Result(t, name, n_nodes, largest, measured, exp, eff, hw))
    return out


def _size(n: int) -> str:
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k and n % (1 << k) == 0:
            return f"{n >> k} {unit}"
    return f"{n} B"


def check(results: list[Result], *, options: dict[str, dict[str, Any]],
          causes: Sequence[Finding] = ()) -> list[Finding]:
    from ncclctl.registry import rules_of

    rules = {r.id: r for r in rules_of(scope="perf")}

    def opt(rid: str, name: str) -> Any:
        v = options.get(rid, {}).get(name)
        return v if v is not None else rules[rid].defaults()[name]

    findings: list[Finding] = []

    def add(rid: str, msg: str, ev: Ev | None, severity: Severity | None = None, extra: tuple[str, ...] = ()) -> None:
        r = rules[rid]
        findings.append(Finding(rule=rid, severity=severity or r.severity, message=msg,
                                subject=ev.source if ev else "<results>", line=ev.line if ev else None, fix=r.fix,
                                evidence=((ev.evidence(),) if ev else ()) + extra))

    min_eff = float(opt("PERF001", "min_efficiency"))
    warn_eff = float(opt("PERF001", "warn_efficiency"))
    cause_text = "; ".join(f"{f.rule} {f.message[:160]}" for f in causes if f.severity is not Severity.INFO)[:600]
    for res in results:
        t = res.test
        label = f"{res.name or 'nccl-tests'} ({t.nranks or '?'} ranks" + (
            f" on {res.nodes} node{'s' if res.nodes != 1 else ''})" if res.nodes else ")")
        ev = t.header_ev or (Ev(t.source, t.line, "") if t.source else None)
        acc = _table(t)
        first, nwrong = acc.first_wrong, acc.wrong
        if first is not None or t.oob_failed:
            rev = Ev(t.source, first.line, first.text) if first is not None else t.avg_ev
            add("PERF002", f"{label}: {nwrong} size{'s' if nwrong != 1 else ''} with wrong results"
                + (f" (from {_size(first.size)})" if first is not None else "") + (f"; out of bounds values {t.oob}"
                                                                                  if t.oob else ""), rev or ev)
        if t.avg_failed:
            add("PERF004", f"{label}: average bus bandwidth {t.avg_busbw} GB/s FAILED the test's own threshold",
                t.avg_ev or ev)
        if not t.footer or t.errors:
            why = t.errors[0].text if t.errors else "the table ends without its 'Avg bus bandwidth' footer"
            add("PERF005", f"{label}: the test did not finish: {why}", t.errors[0] if t.errors else ev)
        if res.measured is None:
            continue
        exp = res.expectation
        if exp.busbw is None:
            add("PERF003", f"{label}: {res.measured:g} GB/s at {_size(res.largest.size) if res.largest else '?'}; "
                f"no expectation: {exp.why}", ev)
            continue
        eff = res.efficiency or 0.0
        if eff < warn_eff:
            sev = Severity.ERROR if eff < min_eff else Severity.WARNING
            msg = (f"{label}: bus bandwidth {res.measured:g} GB/s at {_size(res.largest.size) if res.largest else '?'} "
                   f"is {eff:.0%} of the expected {exp.busbw:.0f} GB/s ({exp.why})")
            if cause_text:
                msg += f"; the NCCL log of this run says: {cause_text}"
            add("PERF001", msg, Ev(t.source, res.largest.line, res.largest.text) if res.largest and not t.json else ev,
                sev)
    return findings


def read_results(paths: list[str], *, stdin=None, min_bytes: int | None = None) -> tuple[list[Test], list[str]]:
    """Every nccl-tests result in the inputs (text or JSON), and notes. ``min_bytes`` (PERF001's): the size from
    which a huge table's best bus bandwidth is folded in while reading (:func:`evaluate` with the same value)."""
    from ncclctl.inputs import LineStream, iter_chunks, lines_of, text_of
    from ncclctl.logs.parse import expand_inputs

    tests: list[Test] = []
    notes: list[str] = []
    for path in expand_inputs(paths):
        name = "<stdin>" if path == "-" else path
        st = LineStream(name, line_max=MAX_JSON)  # a text output's lines as before (the JSON is not read by lines)
        chunks = iter_chunks(path, "log", stream=st, stdin=stdin)
        head: list[bytes] = []
        for b in chunks:  # up to the first byte that is not white space: "{" is nccl-tests -J output
            head.append(b)
            if b.strip():
                break

        def again(head=head, chunks=chunks):
            yield from head
            yield from chunks

        if b"".join(head).lstrip().startswith(b"{"):
            tests += parse_json(text_of(again(), st), name, min_bytes=min_bytes)  # streamed, one row at a time
        else:
            found = parse_results(lines_of(again(), st), name, min_bytes=min_bytes)
            tests += found
            if not found:
                notes.append(f"{name}: no nccl-tests result table")
        notes += [f"{name}: {n}" for n in st.notes()]
    return tests, notes


def text(results: list[Result]) -> str:
    out = []
    for r in results:
        t = r.test
        head = f"{r.name or 'nccl-tests'}"
        bits = []
        if t.tests_version:
            bits.append(f"nccl-tests {t.tests_version}")
        bits.append(f"{t.nranks or '?'} ranks" + (f" on {r.nodes} node{'s' if r.nodes != 1 else ''}"))
        if t.gpu_names:
            bits.append(", ".join(t.gpu_names))
        out.append(f"{head} ({'; '.join(bits)}): {t.source}:{t.line}")
        if r.largest is not None and r.measured is not None:
            out.append(f"  busbw at large sizes: {r.measured:g} GB/s (largest size {_size(r.largest.size)}, "
                       f"{t.nrows} rows)" + (f"; avg busbw {t.avg_busbw:g}" if t.avg_busbw is not None else ""))
        elif t.nrows:
            top = _table(t).top
            assert top is not None
            out.append(f"  {t.nrows} rows up to {_size(top.size)}: no large message to judge the bandwidth by")
        else:
            out.append("  no result rows")
        if r.expectation.busbw is not None:
            out.append(f"  expected ~{r.expectation.busbw:.0f} GB/s: {r.expectation.why}")
            if r.efficiency is not None:
                out.append(f"  efficiency {r.efficiency:.0%}")
        elif r.measured is not None:
            out.append(f"  expected: unknown ({r.expectation.why})")
    return "\n".join(out) + ("\n" if out else "")


__all__ = ["BUS_FACTOR", "Expectation", "Hardware", "Result", "Row", "Side", "Test", "check", "evaluate", "expect",
           "hardware_from_names", "hardware_from_node", "name_test", "parse_json", "parse_results", "read_results",
           "text"]
