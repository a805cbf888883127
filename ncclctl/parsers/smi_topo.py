"""Parser for ``nvidia-smi topo -m`` (and ``topo -mp``).

Real layout (TAB separated; the header may be wrapped in ``ESC[4m ... ESC[0m`` underline codes)::

    <TAB>GPU0<TAB>GPU1<TAB>NIC0<TAB>CPU Affinity<TAB>NUMA Affinity<TAB>GPU NUMA ID
    GPU0<TAB> X <TAB>NV18<TAB>PIX<TAB>0-55,112-167<TAB>0<TAB><TAB>N/A
    GPU1<TAB>NV18<TAB> X <TAB>SYS<TAB>56-111,168-223<TAB>1<TAB><TAB>N/A
    NIC0<TAB>PIX<TAB>SYS<TAB> X <TAB><TAB>
    <blank>
    Legend:
    <blank>
      X    = Self
      ...
    <blank>
    NIC Legend:
    <blank>
      NIC0: mlx5_0

Facts that shape the parser: the ``NUMA Affinity`` value is followed by *two* TABs (the header
word is wider than a tab stop), so TAB positions do not line up with the header; NIC rows have no
affinity values (just trailing TABs); the self cell is `` X `` with spaces; pasted copies turn TABs
into runs of spaces, and the header's column names contain single spaces. The matrix is therefore
read as whitespace-separated tokens: N matrix cells (N = number of device columns), then the
affinity values in header order. Older drivers have no ``GPU NUMA ID`` (or no ``NUMA Affinity``)
column and label NIC rows by their ibdev name (``mlx4_0``) instead of ``NIC0``, without a legend.
Some copies found in bug reports have lost their TABs entirely (``0-55,112-167 0N/A``); those are
rejected rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import field

from ncclctl.parsers._common import last_line, paste_body, perr, run_parser, split_lines, strip_ansi
from ncclctl.record import record

__all__ = ["SmiP2p", "SmiTopo", "parse_nvidia_smi_p2p", "parse_nvidia_smi_topo"]

_FIX = "pass the unedited output of `nvidia-smi topo -m` (TABs or spaces are both fine)"

#: Multi-word affinity column names, in the order drivers print them.
_AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_CELL_RE = re.compile(r"X|N/A|NV#|NV[0-9]{1,3}|[A-Z]{2,8}", re.ASCII)

#: The cells of ``nvidia-smi topo -p2p r|w|n|a|p`` (P2P read/write/NVLink/atomics/prop capability): a matrix of
#: the same shape that says whether P2P works, not how GPUs connect. Users paste it for ``topo -m``.
P2P_STATUSES = frozenset({"OK", "CNS", "GNS", "TNS", "NS", "DR", "U"})
#: The legend of ``topo -p2p``: what each status means.
P2P_MEANING = {"X": "self", "OK": "status OK", "CNS": "chipset not supported", "GNS": "GPU not supported",
               "TNS": "topology not supported", "NS": "not supported", "DR": "disabled by regkey", "U": "unknown"}
#: ``topo -p2p`` capability letters
P2P_CAPS = {"r": "read", "w": "write", "n": "nvlink", "a": "atomics", "p": "prop"}
_CPUSET_RE = re.compile(r"[0-9]{1,5}(?:-[0-9]{1,5})?(?:,[0-9]{1,5}(?:-[0-9]{1,5})?)*", re.ASCII)
_NUMA_RE = re.compile(r"[0-9]{1,5}(?:-[0-9]{1,5})?(?:,[0-9]{1,5}(?:-[0-9]{1,5})?)*", re.ASCII)
_LABEL_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}", re.ASCII)
_NIC_LEGEND_RE = re.compile(r"(?P<label>NIC[0-9]{1,4}):[ \t]*(?P<dev>\S+)", re.ASCII)
_LEGEND_ENTRY_RE = re.compile(r"(?P<key>\S+)[ \t]*=[ \t]*(?P<text>.*)")


@record
class SmiTopo:
    #: Device column labels: ``GPU0``.., ``NIC0``.. (or ``mlx5_0``.. on old drivers).
    labels: tuple[str, ...]
    #: ``matrix[i][j]``: path class between labels i and j: ``X``, ``NV18``, ``PIX``, ``PXB``,
    #: ``PHB``, ``NODE``, ``SYS`` (``SOC`` on very old drivers), ``NV#``, ``N/A``.
    matrix: tuple[tuple[str, ...], ...]
    #: Per row (same order as ``labels``); None where the row has no value (NIC rows).
    cpu_affinity: tuple[str | None, ...]
    numa_affinity: tuple[str | None, ...]
    gpu_numa_id: tuple[str | None, ...]
    #: ``(label, ibdev)`` from the ``NIC Legend:`` block, e.g. ``("NIC0", "mlx5_0")``.
    nic_legend: tuple[tuple[str, str], ...]
    #: Affinity column names present in the header, in order.
    affinity_columns: tuple[str, ...] = ()
    #: ``(key, meaning)`` from the ``Legend:`` block, e.g. ``("PIX", "Connection traversing ...")``.
    legend: tuple[tuple[str, str], ...] = ()
    line: int = field(default=0, compare=False)
    #: what the parse left aside: text before the matrix, a cut legend
    notes: tuple[str, ...] = field(default=(), compare=False)

    def index(self, label: str) -> int:
        return self.labels.index(label)

    def cell(self, a: str, b: str) -> str:
        """Path class between two labels (``topo.cell("GPU0", "NIC3")``)."""
        return self.matrix[self.labels.index(a)][self.labels.index(b)]

    @property
    def gpus(self) -> tuple[str, ...]:
        return tuple(lb for lb in self.labels if re.fullmatch(r"GPU[0-9]+", lb))

    @property
    def nics(self) -> tuple[str, ...]:
        return tuple(lb for lb in self.labels if not re.fullmatch(r"GPU[0-9]+", lb))

    def ibdev(self, label: str) -> str | None:
        """RDMA device for a NIC label (via the legend; old drivers use the ibdev as the label)."""
        for lb, dev in self.nic_legend:
            if lb == label:
                return dev
        if label in self.labels and not re.fullmatch(r"(GPU|NIC)[0-9]+", label):
            return label
        return None


def parse_nvidia_smi_topo(text: str, *, source: str = "nvidia-smi topo -m") -> SmiTopo:
    """Parse ``nvidia-smi topo -m``. Empty output (or ``No devices were found``) gives an empty
    :class:`SmiTopo`."""
    return run_parser(_parse, text, source, "nvidia-smi topo -m")


def _split_header(line: str) -> tuple[list[str], list[str]]:
    """Device labels and affinity columns of the header line (ANSI already stripped)."""
    rest = " ".join(line.split())
    cut = len(rest)
    for name in _AFFINITY_COLUMNS:
        pos = rest.find(name)
        if 0 <= pos < cut:
            cut = pos
    labels = rest[:cut].split()
    tail = rest[cut:]
    aff: list[str] = []
    while tail:
        tail = tail.lstrip()
        for name in _AFFINITY_COLUMNS:
            if tail.startswith(name):
                aff.append(name)
                tail = tail[len(name) :]
                break
        else:
            break
    if tail.strip():
        aff.append("?" + tail.strip())  # reported as an error by the caller
    return labels, aff


_CMD_PREFIX_RE = re.compile(r"(?:sudo[ \t]+)?nvidia-smi[ \t]+topo[ \t]+-m[a-z]*[ \t]+(?=GPU[0-9])")


def _pasted(text: str, source: str) -> tuple[list[str], list[str], list[str]]:
    """(lines, clean lines, notes): the prompt and command echo of a paste blanked, a command echo glued to the
    header line cut off, text before the matrix header skipped."""
    lines = split_lines(text)
    clean = [strip_ansi(raw).strip() for raw in lines]
    notes: list[str] = []
    for i, ln in enumerate(clean):
        if ln:
            m = _CMD_PREFIX_RE.match(ln)
            if m:  # "nvidia-smi topo -m   GPU0 GPU1 ..." (the echo and the header on one line)
                clean[i] = ln[m.end():]
                notes.append(f"line {i + 1}: the command echo before the header is left out")
            break
    body, n = paste_body(clean, ("nvidia-smi topo", "nvidia-smi"))
    if n:
        notes.append(f"{n} line(s) of shell prompt and command echo left out")
    clean = body
    first = next((i for i, ln in enumerate(clean) if ln), None)
    if first is not None and not _looks_like_header(clean, first):
        # a report that wraps the matrix ("GPU Topology Analysis" / "====="): the header a few lines down
        for j in range(first + 1, min(first + 20, len(clean))):
            if _looks_like_header(clean, j):
                notes.append(f"lines {first + 1}-{j}: text before the matrix header is left out")
                for k in range(first, j):
                    clean[k] = ""
                break
    return lines, clean, notes


def _looks_like_header(clean: list[str], i: int) -> bool:
    labels, aff = _split_header(clean[i])
    if not labels or any(a.startswith("?") for a in aff) or not all(_LABEL_RE.fullmatch(lb) for lb in labels):
        return False
    if not re.fullmatch(r"GPU[0-9]+", labels[0]):
        return False
    nxt = next((clean[k] for k in range(i + 1, min(i + 4, len(clean))) if clean[k]), "")
    return nxt.split()[:1] == [labels[0]]


def _parse(text: str, source: str) -> SmiTopo:
    lines, clean, notes = _pasted(text, source)
    first = next((i for i, ln in enumerate(clean) if ln), None)
    if first is None:
        return SmiTopo((), (), (), (), (), ())
    head_line = first + 1
    if clean[first] == "No devices were found":
        rest = [ln for ln in clean[first + 1 :] if ln]
        if rest:
            raise perr(source, head_line, "'No devices were found' followed by more output", _FIX)
        return SmiTopo((), (), (), (), (), (), line=head_line)
    if "NVIDIA-SMI has failed" in clean[first] or clean[first].startswith(("Failed", "Error")):
        raise perr(
            source,
            head_line,
            f"nvidia-smi failed: {clean[first][:120]}",
            "fix the NVIDIA driver/NVML problem reported by nvidia-smi and capture again",
        )

    labels, aff = _split_header(clean[first])
    bad = [a for a in aff if a.startswith("?")]
    if not labels or bad or not all(_LABEL_RE.fullmatch(lb) for lb in labels):
        what = bad[0][1:] if bad else clean[first][:80]
        raise perr(
            source,
            head_line,
            f"expected the matrix header (GPU0 GPU1 ... CPU Affinity ...), got {what!r}",
            _FIX,
        )
    if len(set(labels)) != len(labels):
        raise perr(source, head_line, "duplicate column label in the header", _FIX)
    n = len(labels)
    n_aff = len(aff)

    matrix: list[tuple[str, ...]] = []
    affinity: list[list[str | None]] = []
    i = first + 1
    while i < len(lines) and len(matrix) < n:
        ln = clean[i]
        lineno = i + 1
        i += 1
        if not ln:
            if matrix:
                break  # blank line ends the matrix
            continue
        tokens = ln.split()
        row_label = tokens[0]
        expect = labels[len(matrix)]
        if row_label != expect:
            raise perr(
                source,
                lineno,
                f"expected the row for {expect}, got {row_label!r}",
                _FIX,
            )
        cells = tokens[1 : 1 + n]
        if len(cells) < n:
            raise perr(
                source,
                lineno,
                f"row {row_label}: {len(cells)} matrix cell(s), expected {n} (truncated or "
                "columns glued together?)",
                _FIX,
            )
        for j, c in enumerate(cells):
            if c in P2P_STATUSES:
                raise perr(
                    source, lineno,
                    f"row {row_label}, column {labels[j]}: {c!r} is a P2P status: this is 'nvidia-smi topo -p2p "
                    "r|w|n|a|p' output (whether peer-to-peer works: OK, CNS, GNS, TNS, NS, U), not the topology "
                    "matrix of 'nvidia-smi topo -m'",
                    "capture the topology matrix with: nvidia-smi topo -m > smi-topo.txt (this one reads with: "
                    "ncclctl parse p2p FILE)",
                )
            if not _CELL_RE.fullmatch(c):
                raise perr(
                    source, lineno, f"row {row_label}, column {labels[j]}: bad cell {c!r}", _FIX
                )
        if cells[len(matrix)] != "X":
            raise perr(
                source,
                lineno,
                f"row {row_label}: diagonal cell is {cells[len(matrix)]!r}, expected 'X' "
                "(shifted columns?)",
                _FIX,
            )
        extra = tokens[1 + n :]
        if len(extra) > n_aff:
            raise perr(
                source,
                lineno,
                f"row {row_label}: {len(extra)} value(s) after the matrix, header has {n_aff} "
                "affinity column(s)",
                _FIX,
            )
        vals: list[str | None] = list(extra) + [None] * (n_aff - len(extra))
        for name, v in zip(aff, vals):
            if v is None or v == "N/A":
                continue
            ok = _CPUSET_RE.fullmatch(v) if name == "CPU Affinity" else _NUMA_RE.fullmatch(v)
            if not ok:
                raise perr(
                    source,
                    lineno,
                    f"row {row_label}: bad {name} value {v!r} (TABs lost in a copy?)",
                    _FIX,
                )
        matrix.append(tuple(cells))
        affinity.append(vals)

    if len(matrix) < n:
        raise perr(
            source,
            last_line(lines),
            f"matrix has {len(matrix)} row(s) for {n} column(s) (truncated output?)",
            _FIX,
        )

    legend: list[tuple[str, str]] = []
    nic_legend: list[tuple[str, str]] = []
    section = None
    for k in range(i, len(lines)):
        ln = clean[k]
        lineno = k + 1
        if not ln:
            continue
        if ln == "Legend:":
            section = "legend"
            continue
        if ln == "NIC Legend:":
            section = "nic"
            continue
        if section == "nic":
            m = _NIC_LEGEND_RE.fullmatch(ln)
            if not m:
                raise perr(source, lineno, f"bad NIC legend line {ln[:80]!r}", _FIX)
            if m["label"] not in labels:
                raise perr(source, lineno, f"NIC legend names {m['label']}, not in the matrix", _FIX)
            if any(lb == m["label"] for lb, _ in nic_legend):
                raise perr(source, lineno, f"NIC legend lists {m['label']} twice", _FIX)
            nic_legend.append((m["label"], m["dev"]))
            continue
        if section in ("legend", None):
            m = _LEGEND_ENTRY_RE.fullmatch(ln)
            if m:
                if section is None:
                    section = "legend"
                    notes.append(f"line {lineno}: legend entries without their 'Legend:' line (a cut paste)")
                legend.append((m["key"], m["text"].strip()))
                continue
        raise perr(source, lineno, f"unexpected line after the matrix: {ln[:80]!r}", _FIX)

    def column(name: str) -> tuple[str | None, ...]:
        if name not in aff:
            return tuple(None for _ in labels)
        j = aff.index(name)
        return tuple(row[j] for row in affinity)

    return SmiTopo(
        labels=tuple(labels),
        matrix=tuple(matrix),
        cpu_affinity=column("CPU Affinity"),
        numa_affinity=column("NUMA Affinity"),
        gpu_numa_id=column("GPU NUMA ID"),
        nic_legend=tuple(nic_legend),
        affinity_columns=tuple(aff),
        legend=tuple(legend),
        line=head_line,
        notes=tuple(notes),
    )


@record
class SmiP2p:
    """``nvidia-smi topo -p2p r|w|n|a|p``: whether GPU peer-to-peer read/write/NVLink/atomics work, per pair."""

    labels: tuple[str, ...]
    #: ``matrix[i][j]``: ``X`` (self), ``OK``, ``CNS``, ``GNS``, ``TNS``, ``NS``, ``DR``, ``U``
    matrix: tuple[tuple[str, ...], ...]
    #: the capability (``read``, ``write``, ``nvlink``, ``atomics``, ``prop``) when the pasted command says it
    capability: str | None = None
    legend: tuple[tuple[str, str], ...] = ()
    line: int = field(default=0, compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)

    def cell(self, a: str, b: str) -> str:
        return self.matrix[self.labels.index(a)][self.labels.index(b)]

    def not_ok(self) -> tuple[tuple[str, str, str], ...]:
        """(gpu a, gpu b, status) of every pair whose status is not OK."""
        return tuple((a, b, self.matrix[i][j]) for i, a in enumerate(self.labels) for j, b in enumerate(self.labels)
                     if i != j and self.matrix[i][j] != "OK")


_P2P_CMD_RE = re.compile(r"nvidia-smi[ \t]+topo[ \t]+-p2p[ \t]+(?P<caps>[rwnap]+)\b")
_P2P_FIX = "pass the output of `nvidia-smi topo -p2p r` (or w, n, a, p)"


def parse_nvidia_smi_p2p(text: str, *, source: str = "nvidia-smi topo -p2p") -> SmiP2p:
    """Parse a ``topo -p2p`` matrix; a ``topo -m`` matrix is refused, naming the command to use."""
    return run_parser(_parse_p2p, text, source, "nvidia-smi topo -p2p")


def _parse_p2p(text: str, source: str) -> SmiP2p:
    raw = split_lines(text)
    caps = None
    for ln in raw:
        m = _P2P_CMD_RE.search(ln)
        if m:
            caps = ",".join(P2P_CAPS[c] for c in m["caps"])  # the last invocation in the paste wins
    lines, clean, notes = _pasted(text, source)
    first = next((i for i, ln in enumerate(clean) if ln), None)
    if first is None:
        return SmiP2p((), (), caps)
    labels = clean[first].split()
    if not labels or not all(re.fullmatch(r"GPU[0-9]{1,4}", x) for x in labels):
        if "Affinity" in clean[first] or "NIC0" in labels:
            raise perr(source, first + 1, "this is 'nvidia-smi topo -m' output (how GPUs and NICs connect, with "
                                          "CPU affinity), not the P2P status matrix of 'nvidia-smi topo -p2p'",
                       "parse it as topo-m (ncclctl parse topo-m FILE), or capture: nvidia-smi topo -p2p r")
        raise perr(source, first + 1, f"expected the matrix header (GPU0 GPU1 ...), got {clean[first][:80]!r}",
                   _P2P_FIX)
    n = len(labels)
    matrix: list[tuple[str, ...]] = []
    i = first + 1
    while i < len(clean) and len(matrix) < n:
        ln, lineno = clean[i], i + 1
        i += 1
        if not ln:
            if matrix:
                break
            continue
        toks = ln.split()
        expect = labels[len(matrix)]
        if toks[0] != expect:
            raise perr(source, lineno, f"expected the row for {expect}, got {toks[0]!r}", _P2P_FIX)
        cells = toks[1:]
        if len(cells) != n:
            raise perr(source, lineno, f"row {expect}: {len(cells)} cell(s), expected {n}", _P2P_FIX)
        for j, c in enumerate(cells):
            if c == "X" and j == len(matrix):
                continue
            if c not in P2P_STATUSES:
                if _CELL_RE.fullmatch(c) and c not in ("X",):
                    raise perr(source, lineno, f"row {expect}, column {labels[j]}: {c!r} is a path type: this is "
                                               "'nvidia-smi topo -m' output (how GPUs connect), not the P2P "
                                               "status matrix of 'nvidia-smi topo -p2p'",
                               "parse it as topo-m (ncclctl parse topo-m FILE), or capture: nvidia-smi topo -p2p r")
                raise perr(source, lineno, f"row {expect}, column {labels[j]}: bad status {c!r}", _P2P_FIX)
        matrix.append(tuple(cells))
    if len(matrix) < n:
        raise perr(source, last_line(lines), f"matrix has {len(matrix)} row(s) for {n} GPU(s) (truncated?)",
                   _P2P_FIX)
    legend: list[tuple[str, str]] = []
    for k in range(i, len(clean)):
        ln = clean[k]
        if not ln or ln == "Legend:":
            continue
        m = _LEGEND_ENTRY_RE.fullmatch(ln)
        if not m:
            raise perr(source, k + 1, f"unexpected line after the matrix: {ln[:80]!r}", _P2P_FIX)
        legend.append((m["key"], m["text"].strip()))
    return SmiP2p(labels=tuple(labels), matrix=tuple(matrix), capability=caps, legend=tuple(legend),
                  line=first + 1, notes=tuple(notes))
