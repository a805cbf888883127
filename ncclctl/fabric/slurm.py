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


def render_problems(problems: Iterable[BlockProblem], source: str, *, prefix: str = "") -> str:
    lines = []
    for p in problems:
        where = f"{source}:{p.line}: " if p.line else ""
        lines.append(f"{where}{prefix}{p.subject}: {p.severity}: {p.message}")
        lines.extend(f"    evidence: {e}" for e in p.evidence)
        lines.append(f"    fix: {p.fix}")
    return "\n".join(lines) + ("\n" if lines else "")


# --------------------------------------------------------------------------------------------------
# topology.yaml (Slurm 25.05+)
#
# The grammar, as Slurm 25.05's data_parser v0.0.43 (src/plugins/data_parser/v0.0.43/parsers.c: TOPOLOGY_CONF,
# TOPOLOGY_BLOCK_CONFIG, TOPOLOGY_BLOCK) and topology.yaml(5) define it: a list of topologies, each a mapping with
# ``topology`` (its name, the first key), optional ``cluster_default`` (bool) and exactly one kind: ``block``
# (``block_sizes``: a list of numbers; ``blocks``: a list of {``block``: name, ``nodes``: hostlist}), ``flat`` or
# ``tree`` (later releases add ``ring`` and ``torus3d``; read as other kinds). block_record.c holds the YAML blocks
# to the same rules as topology.conf's (names unique, BlockSizes = base x 2^level).

_YAML_FIX = ("topology.yaml is a list of '- topology: NAME' entries; a block topology has 'block: {block_sizes: "
             "[N], blocks: [{block: NAME, nodes: HOSTLIST}]}' (topology.yaml(5), Slurm 25.05+)")
_TOPO_KEYS = {"topology", "cluster_default", "block", "flat", "tree", "ring", "torus3d"}
_KINDS = ("block", "flat", "tree", "ring", "torus3d")


@record
class NamedBlockTopology:
    """One block topology of a topology.yaml: its name, whether it is the cluster default, its blocks."""
    name: str
    cluster_default: bool
    topology: BlockTopology
    line: int | None = None


def is_topology_yaml(text: str, path: str = "") -> bool:
    """Whether a Slurm topology file is the YAML form (by its name, else by its first significant line)."""
    if path.endswith((".yaml", ".yml")):
        return True
    if path.endswith(".conf"):
        return False
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            return line.startswith(("-", "---"))
    return False


def _node_line(node) -> int | None:
    mark = getattr(node, "start_mark", None)
    return mark.line + 1 if mark is not None else None


def _pairs(node) -> list[tuple[str, object, int | None]]:
    """(key, value node, line) of a YAML mapping node."""
    return [(str(k.value), v, _node_line(k)) for k, v in node.value]


def parse_topology_yaml(text: str, *, source: str = "topology.yaml") -> list[NamedBlockTopology]:
    """The block topologies of a Slurm ``topology.yaml``, checked against the 25.05 grammar (unknown keys, a
    topology with no kind or two, block names and topology names given twice, sizes that are not numbers)."""
    import yaml

    from ncclctl.yamlio import load

    data, root = load(text, source, max_depth=16, fix=_YAML_FIX)
    if root is None or not isinstance(root, yaml.SequenceNode):
        raise InputError("topology.yaml must be a list of topologies ('- topology: NAME' entries)", path=source,
                         line=_node_line(root) if root is not None else None, fix=_YAML_FIX)
    out: list[NamedBlockTopology] = []
    names: dict[str, int | None] = {}

    def fail(msg: str, node) -> InputError:
        return InputError(msg, path=source, line=_node_line(node), fix=_YAML_FIX)

    for entry in root.value:
        if not isinstance(entry, yaml.MappingNode):
            raise fail("each topology is a mapping beginning with 'topology: NAME'", entry)
        pairs = _pairs(entry)
        keys = [k for k, _, _ in pairs]
        if not keys or keys[0] != "topology":
            raise fail("'topology: NAME' must be the first attribute of each topology (topology.yaml(5))", entry)
        bad = [k for k in keys if k not in _TOPO_KEYS]
        if bad:
            raise fail(f"unknown topology attribute {bad[0]!r} (allowed: {', '.join(sorted(_TOPO_KEYS))})", entry)
        vals = {k: v for k, v, _ in pairs}
        name_node = vals["topology"]
        if not isinstance(name_node, yaml.ScalarNode) or not str(name_node.value).strip():
            raise fail("the topology name must be a non-empty string", name_node)
        name = str(name_node.value)
        if name in names:
            raise fail(f"topology {name} is defined twice (first on line {names[name]})", entry)
        names[name] = _node_line(entry)
        kinds = [k for k in keys if k in _KINDS]
        if len(kinds) != 1:
            raise fail(f"topology {name} defines {len(kinds)} kinds ({', '.join(kinds) or 'none'}): exactly one of "
                       f"block, flat, tree is required", entry)
        default = False
        if "cluster_default" in vals:
            dv = vals["cluster_default"]
            if not isinstance(dv, yaml.ScalarNode) or str(dv.value).lower() not in ("true", "false"):
                raise fail(f"topology {name}: cluster_default must be true or false", dv)
            default = str(dv.value).lower() == "true"
        if kinds[0] != "block":
            continue
        out.append(NamedBlockTopology(name=name, cluster_default=default,
                                      topology=_yaml_block(vals["block"], name, fail, source), line=_node_line(entry)))
    if not out:
        raise InputError("no block topology in this topology.yaml (no '- topology: NAME' with 'block:')", path=source,
                         fix=_YAML_FIX)
    return out


def _yaml_block(node, name: str, fail, source: str) -> BlockTopology:
    import yaml

    if not isinstance(node, yaml.MappingNode):
        raise fail(f"topology {name}: 'block' must be a mapping with block_sizes and blocks", node)
    vals: dict[str, object] = {}
    for k, v, _ in _pairs(node):
        if k not in ("block_sizes", "blocks"):
            raise fail(f"topology {name}: unknown block attribute {k!r} (allowed: block_sizes, blocks)", v)
        vals[k] = v
    sizes: tuple[int, ...] | None = None
    sizes_line = None
    if "block_sizes" in vals:
        sn = vals["block_sizes"]
        items = sn.value if isinstance(sn, yaml.SequenceNode) else None
        if items is None or not all(isinstance(i, yaml.ScalarNode) and re.fullmatch(r"-?\d+", str(i.value))
                                    for i in items):
            raise fail(f"topology {name}: block_sizes must be a list of numbers", sn)
        sizes = tuple(int(i.value) for i in items) or None
        sizes_line = _node_line(sn)
    blocks_node = vals.get("blocks")
    if not isinstance(blocks_node, yaml.SequenceNode) or not blocks_node.value:
        raise fail(f"topology {name}: 'blocks' must be a non-empty list of {{block: NAME, nodes: HOSTLIST}}",
                   blocks_node if blocks_node is not None else node)
    blocks: list[Block] = []
    seen: dict[str, int | None] = {}
    for bn in blocks_node.value:
        if not isinstance(bn, yaml.MappingNode):
            raise fail(f"topology {name}: each block is a mapping {{block: NAME, nodes: HOSTLIST}}", bn)
        bv: dict[str, object] = {}
        for k, v, _ in _pairs(bn):
            if k not in ("block", "nodes"):
                raise fail(f"topology {name}: unknown block attribute {k!r} (allowed: block, nodes)", v)
            bv[k] = v
        line = _node_line(bn)
        bname = bv.get("block")
        if not isinstance(bname, yaml.ScalarNode) or not str(bname.value).strip():
            raise fail(f"topology {name}: a block without a name (Slurm: \"Can't create a block without a name\")",
                       bn)
        label = str(bname.value)
        if label in seen:
            raise fail(f"topology {name}: block {label} defined twice (first on line {seen[label]})", bn)
        seen[label] = line
        nodes_node = bv.get("nodes")
        nodes: tuple[str, ...] = ()
        if nodes_node is not None:
            if not isinstance(nodes_node, yaml.ScalarNode):
                raise fail(f"topology {name}: block {label}: nodes is one hostlist string (e.g. r1t[01-18])",
                           nodes_node)
            nodes = tuple(expand(str(nodes_node.value), source=source, line=line))
        blocks.append(Block(name=label, nodes=nodes, line=line or 0))
    return BlockTopology(blocks=tuple(blocks), block_sizes=sizes, line_sizes=sizes_line)


def block_yaml(domains: dict[tuple[str, int], list[str]], *, block_size: int = 18, prefix: str = "nvl",
               topology: str = "nvlink") -> str:
    """``topology.yaml`` (Slurm 25.05+) with one block topology, the cluster default, holding one block per NVLink
    domain (the blocks and names of :func:`block_conf`)."""
    ordered = sorted(domains.items(), key=lambda kv: natural_key(min(kv[1], key=natural_key)))
    names = block_names(domains, prefix=prefix)
    lines = ["# Slurm topology.yaml (25.05+): one block per multi-node NVLink domain, written by ncclctl",
             "# from the hosts' NVML fabric info (cluster UUID, clique id).",
             "---",
             f"- topology: {topology}",
             "  cluster_default: true",
             "  block:",
             "    block_sizes:",
             f"      - {block_size}",
             "    blocks:"]
    for key, hosts in ordered:
        lines.append(f"      # cluster {key[0]} clique {key[1]}: {len(hosts)} host(s)")
        lines.append(f"      - block: {names[key]}")
        lines.append(f"        nodes: \"{compress(hosts)}\"")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# Host order for a job across NVLink domains


def domain_order(domains: dict[tuple[str, int], list[str]], nodes: int | None = None
                 ) -> list[tuple[tuple[str, int], list[str]]]:
    """The hosts of a job in NVLink-domain order: each domain kept whole and contiguous (NCCL's ring and tree cross
    from NVLink to the NICs only at a domain boundary, once per domain), domains in the order of their first host.

    With ``nodes``: the fewest domains that hold that many hosts, so a job fits in one domain when one is big
    enough (the smallest such domain, leaving the big ones whole for bigger jobs), else the biggest domains first,
    the last one taken in part. Raises ValueError when the domains hold fewer hosts than ``nodes``."""
    ordered = sorted(((k, sorted(v, key=natural_key)) for k, v in domains.items()),
                     key=lambda kv: natural_key(kv[1][0]))
    if nodes is None:
        return ordered
    total = sum(len(v) for _, v in ordered)
    if nodes > total:
        raise ValueError(f"{nodes} hosts asked for, the NVLink domains hold {total}")
    fits = [kv for kv in ordered if len(kv[1]) >= nodes]
    if fits:
        key, hosts = min(fits, key=lambda kv: len(kv[1]))
        return [(key, hosts[:nodes])]
    picked: list[tuple[tuple[str, int], list[str]]] = []
    left = nodes
    for key, hosts in sorted(ordered, key=lambda kv: -len(kv[1])):  # stable: ties keep the first-host order
        if left <= 0:
            break
        picked.append((key, hosts[:left]))
        left -= len(hosts[:left])
    rank = {k: i for i, (k, _) in enumerate(ordered)}
    return sorted(picked, key=lambda kv: rank[kv[0]])


def hostfile(order: list[tuple[tuple[str, int], list[str]]], *, slots: int | None = None) -> str:
    """A hostfile (one host per line, ``slots=N`` when given) with a comment line before each NVLink domain."""
    lines = [f"# {sum(len(h) for _, h in order)} host(s) in {len(order)} NVLink domain(s), each domain contiguous"]
    for (uuid, clique), hosts in order:
        lines.append(f"# cluster {uuid} clique {clique}: {len(hosts)} host(s)")
        lines.extend(f"{h} slots={slots}" if slots else h for h in hosts)
    return "\n".join(lines) + "\n"
