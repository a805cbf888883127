"""Slurm block topology (``topology/block``, Slurm 23.11+) for multi-node NVLink domains: write ``topology.conf``
from the domains, read one back and hold it against them.

The block form of ``topology.conf`` (slurm.schedmd.com/topology.conf.html)::

    BlockName=nvl01 Nodes=gb-r01-t[01-18]
    BlockName=nvl02 Nodes=gb-r02-t[01-18]
    BlockSizes=18

Parameter names are case insensitive; ``#`` starts a comment; node lists are Slurm hostlist expressions. One block
per NVLink domain keeps a job inside one domain, so its NCCL ranks talk over NVLink (MNNVL) and not the NICs;
``BlockSizes`` lists the planning block sizes, the first the base block size (a domain's tray count for NVL72).
The checks here follow topology.conf(5) and the rules of Slurm's own reader (src/plugins/topology/block/
block_record.c: duplicate block names, BlockSizes = base x 2^level, the base from the first block when BlockSizes is
unset), re-implemented: no Slurm could be built or run for these tests.
"""

from __future__ import annotations

import re
from typing import Iterable

from ncclctl.errors import InputError
from ncclctl.fabric.hostlist import compress
from ncclctl.names import natural_key
from ncclctl.record import record

_FIX = "write one 'BlockName=NAME Nodes=HOSTLIST' line per block (and optionally 'BlockSizes=N[,M...]')"
_PAIR = re.compile(r"(\w+)=(\S+)")
_BRACKET = re.compile(r"^(?P<pre>[^\[\]]*)\[(?P<body>[^\[\]]+)\](?P<post>.*)$")
#: Most names one hostlist range may expand to (a typo like node[1-99999999] is an error, not a memory blow-up).
MAX_EXPAND = 100_000


@record
class Block:
    name: str
    nodes: tuple[str, ...]
    line: int


@record
class BlockTopology:
    blocks: tuple[Block, ...]
    block_sizes: tuple[int, ...] | None = None
    line_sizes: int | None = None


@record
class BlockProblem:
    """One disagreement between a block file and the NVLink domains: what it names, how bad, the evidence, the fix."""
    subject: str
    severity: str
    message: str
    fix: str
    evidence: tuple[str, ...] = ()
    line: int | None = None


def expand(expr: str, *, source: str = "topology.conf", line: int | None = None) -> list[str]:
    """A Slurm hostlist expression (``gb-r01-t[01-18],login[1,3]``) as names; zero padding kept as written."""
    out: list[str] = []
    for part in _split_top(expr):
        m = _BRACKET.match(part)
        if not m:
            if "[" in part or "]" in part:
                raise InputError(f"unbalanced brackets in host list {part!r}", path=source, line=line, fix=_FIX)
            out.append(part)
            continue
        tails = expand(m.group("post"), source=source, line=line) if m.group("post") else [""]
        for item in m.group("body").split(","):
            lo, sep, hi = item.partition("-")
            if not lo.isdigit() or (sep and not hi.isdigit()):
                raise InputError(f"bad range {item!r} in host list {part!r}", path=source, line=line, fix=_FIX)
            a, b = int(lo), int(hi) if sep else int(lo)
            if b < a or b - a >= MAX_EXPAND:
                raise InputError(f"range {item!r} in host list {part!r} is reversed or too large", path=source,
                                 line=line, fix=_FIX)
            width = len(lo)
            for n in range(a, b + 1):
                out.extend(f"{m.group('pre')}{n:0{width}d}{t}" for t in tails)
        if len(out) > MAX_EXPAND:
            raise InputError(f"host list {expr[:60]!r} names more than {MAX_EXPAND} hosts", path=source, line=line,
                             fix=_FIX)
    return out


def _split_top(expr: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p]


def parse_topology_conf(text: str, *, source: str = "topology.conf") -> BlockTopology:
    blocks: list[Block] = []
    sizes: tuple[int, ...] | None = None
    sizes_line = None
    seen: dict[str, int] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        pairs = {k.lower(): v for k, v in _PAIR.findall(line)}
        if "switchname" in pairs:
            raise InputError("this is a topology/tree file (SwitchName=...), not a block topology", path=source,
                             line=no, fix=_FIX)
        if "blocksizes" in pairs:
            try:
                sizes = tuple(int(x) for x in pairs["blocksizes"].split(","))
            except ValueError:
                raise InputError(f"BlockSizes={pairs['blocksizes']!r} is not a list of numbers", path=source,
                                 line=no, fix=_FIX) from None
            sizes_line = no
            continue
        if "blockname" not in pairs or "nodes" not in pairs:
            raise InputError(f"expected BlockName=... Nodes=..., got {line[:60]!r}", path=source, line=no, fix=_FIX)
        name = pairs["blockname"]
        if name in seen:
            raise InputError(f"block {name} defined twice (first on line {seen[name]})", path=source, line=no,
                             fix=_FIX)
        seen[name] = no
        blocks.append(Block(name=name, nodes=tuple(expand(pairs["nodes"], source=source, line=no)), line=no))
    if not blocks:
        raise InputError("no BlockName line: not a block topology", path=source, fix=_FIX)
    return BlockTopology(blocks=tuple(blocks), block_sizes=sizes, line_sizes=sizes_line)


def block_conf(domains: dict[tuple[str, int], list[str]], *, block_size: int = 18, prefix: str = "nvl") -> str:
    """``topology.conf`` (block form) with one block per NVLink domain, in the order of each domain's first host, and
    ``BlockSizes`` = the base block size (a domain's tray count; NVL72: 18)."""
    ordered = sorted(domains.items(), key=lambda kv: natural_key(min(kv[1], key=natural_key)))
    width = max(2, len(str(len(ordered))))
    lines = ["# Slurm topology/block (23.11+): one block per multi-node NVLink domain, written by ncclctl",
             "# from the hosts' NVML fabric info (cluster UUID, clique id)."]
    for i, ((uuid, clique), hosts) in enumerate(ordered, 1):
        lines.append(f"# cluster {uuid} clique {clique}: {len(hosts)} host(s)")
        lines.append(f"BlockName={prefix}{i:0{width}d} Nodes={compress(hosts)}")
    lines.append(f"BlockSizes={block_size}")
    return "\n".join(lines) + "\n"


def block_names(domains: dict[tuple[str, int], list[str]], *, prefix: str = "nvl") -> dict[tuple[str, int], str]:
    """The block name :func:`block_conf` gives each domain."""
    ordered = sorted(domains.items(), key=lambda kv: natural_key(min(kv[1], key=natural_key)))
    width = max(2, len(str(len(ordered))))
    return {key: f"{prefix}{i:0{width}d}" for i, (key, _) in enumerate(ordered, 1)}


def imex_nodes_config(uuid: str, clique: int, addresses: list[str]) -> str:
    """An IMEX ``nodes_config.cfg`` for one domain (cluster ``uuid``, ``clique``): every member's address, one per
    line, in natural order; no comment line (the IMEX guide documents addresses only)."""
    return "".join(f"{a}\n" for a in sorted(set(addresses), key=natural_key))


def check_blocks(topo: BlockTopology, domains: dict[tuple[str, int], list[str]],
                 *, source: str = "topology.conf") -> list[BlockProblem]:
    """Where a block file and the NVLink domains disagree: a block spanning two domains, a domain split across
    blocks, a host of a domain in no block, ``BlockSizes`` that no block can hold."""
    owner = {h: key for key, hosts in domains.items() for h in hosts}
    problems: list[BlockProblem] = []
    in_blocks: dict[str, list[str]] = {}
    for b in topo.blocks:
        keys: dict[tuple[str, int], list[str]] = {}
        for h in b.nodes:
            in_blocks.setdefault(h, []).append(b.name)
            if h in owner:
                keys.setdefault(owner[h], []).append(h)
        if len(keys) > 1:
            parts = [f"cluster {u} clique {c}: {compress(hs)}" for (u, c), hs in sorted(keys.items())]
            problems.append(BlockProblem(
                b.name, "error",
                f"block {b.name} spans {len(keys)} NVLink domains: a job placed in it can land half in each and "
                f"fall back to the NICs between them", fix="one block per NVLink domain: ncclctl fleet blocks",
                evidence=tuple(parts), line=b.line))
    for key, hosts in domains.items():
        blocks = sorted({n for h in hosts for n in in_blocks.get(h, ())})
        if len(blocks) > 1:
            problems.append(BlockProblem(
                ", ".join(blocks), "warning",
                f"NVLink domain cluster {key[0]} clique {key[1]} is split across blocks {', '.join(blocks)}: Slurm "
                f"cannot place a job on the whole domain", fix="put the domain's hosts into one block",
                evidence=tuple(f"{n}: {compress([h for h in hosts if n in in_blocks.get(h, ())])}" for n in blocks)))
        missing = sorted((h for h in hosts if h not in in_blocks), key=natural_key)
        if missing:
            problems.append(BlockProblem(
                compress(missing), "error",
                f"{len(missing)} host(s) of NVLink domain cluster {key[0]} clique {key[1]} are in no block: "
                f"topology/block does not schedule them", fix="add them to their domain's block (keep powered-down "
                "hosts listed: a host left out of every block cannot run block jobs)",
                evidence=(f"missing: {compress(missing)}",)))
    # Slurm's block_record.c: the base block size is the first BlockSizes value, or without BlockSizes the node
    # count of the first block; every BlockSizes value must be base * 2**level (level <= 15), else slurmctld stops
    # with "Invalid BlockSizes value"; a block smaller than the base holds no allocation.
    base = topo.block_sizes[0] if topo.block_sizes else len(topo.blocks[0].nodes)
    sizes_text = (f"BlockSizes={','.join(map(str, topo.block_sizes))}" if topo.block_sizes
                  else f"no BlockSizes: base = block {topo.blocks[0].name}'s {base} hosts")
    if topo.block_sizes:
        odd = [v for v in topo.block_sizes if v <= 0 or v % base or (v // base) & (v // base - 1)
               or (v // base).bit_length() - 1 > 15]
        if odd:
            problems.append(BlockProblem(
                "BlockSizes", "error", f"BlockSizes {', '.join(map(str, odd))} are not the base block size {base} "
                f"times a power of two: slurmctld refuses the file ('Invalid BlockSizes value')",
                fix=f"list the base and its doublings ({base}, {2 * base}, {4 * base})", evidence=(sizes_text,),
                line=topo.line_sizes))
    small = [b for b in topo.blocks if len(b.nodes) < base]
    if small:
        problems.append(BlockProblem(
            "BlockSizes" if topo.block_sizes else small[0].name, "error",
            f"{len(small)} block(s) hold fewer hosts than the base block size {base} "
            f"({', '.join(f'{b.name}: {len(b.nodes)}' for b in small[:4])}): no allocation fits in them",
            fix=f"BlockSizes={min(len(b.nodes) for b in topo.blocks)} (the hosts of the smallest NVLink domain), or "
                f"fill the blocks", evidence=(sizes_text,), line=topo.line_sizes or small[0].line))
    return problems


def render_problems(problems: Iterable[BlockProblem], source: str) -> str:
    lines = []
    for p in problems:
        where = f"{source}:{p.line}: " if p.line else ""
        lines.append(f"{where}{p.subject}: {p.severity}: {p.message}")
        lines.extend(f"    evidence: {e}" for e in p.evidence)
        lines.append(f"    fix: {p.fix}")
    return "\n".join(lines) + ("\n" if lines else "")
