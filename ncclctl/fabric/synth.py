"""Synthetic rail-optimized InfiniBand fabrics written as ``ibnetdiscover`` topology files (tests, benchmark).

Layout (SuperPOD-style): nodes are grouped in scalable units of ``group`` nodes; each group has one leaf switch per
rail, and HCA k of every node in the group is cabled to the rail-k leaf (leaf port = position of the node in the
group, 1-based). Leaves uplink to a spine group per rail (``spines_per_rail`` spines, the uplinks spread evenly
over the ports above ``group``). Node descriptions are ``<hostname> mlx5_<rail>`` as rdma-ndd writes them.

``miscable`` swaps the cables of two rails on that many randomly chosen nodes (HCA a goes to the rail-b leaf and
back); ``down`` removes that many random HCA links (ports down are not listed by ibnetdiscover). Deterministic for a
given ``seed``.

``uplinks`` sets the uplink ports per leaf (default: the rest of a 64-port leaf, ``64 - group``: 1:1 for groups of
32); ``hca_names`` names the HCA of each rail (default ``mlx5_<rail>``); ``host_order`` numbers the hosts
``sequential`` (node00001.. fill group 0 first), ``interleaved`` (consecutive numbers in different groups, as when
hosts are numbered across racks) or ``random`` (a seeded permutation).

:func:`as_form` writes the same fabric as ``ibnetdiscover -p``, ``iblinkinfo`` or ``iblinkinfo --line`` output
(:func:`write_fabric` does it for any parsed :class:`~ncclctl.parsers.ibnetdiscover.Fabric`), so that tests and
benchmarks can feed every form the parsers read. Those tools only reach what is cabled: an HCA whose only link is
down is absent from them, and the leaf port it should use shows as ``Down/ Polling`` in iblinkinfo and as an
unconnected port in ``-p``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ncclctl.record import record


@record
class SynthSpec:
    nodes: int
    rails: int = 8
    group: int = 32
    spines_per_rail: int = 4
    miscable: int = 0
    down: int = 0
    seed: int = 1
    speed: str = "4xNDR"
    hostname_format: str = "node{:05d}"
    uplinks: int | None = None
    hca_names: tuple[str, ...] = ()
    host_order: str = "sequential"


@dataclass
class SynthResult:
    text: str
    #: (hostname, rail_a, rail_b) for every miscabled node.
    miscabled: list[tuple[str, int, int]] = field(default_factory=list)
    #: (hostname, rail) for every down link.
    down: list[tuple[str, int]] = field(default_factory=list)


def _g(kind: int, a: int, b: int = 0) -> str:
    """Deterministic 64-bit GUIDs: a Mellanox-like OUI prefix, the kind, and indices."""
    return f"{0x043f72 << 40 | kind << 32 | a << 8 | b:016x}"


def synth(spec: SynthSpec) -> SynthResult:
    if spec.nodes < 1 or spec.rails < 1 or spec.group < 1 or spec.spines_per_rail < 1:
        raise ValueError("nodes, rails, group and spines_per_rail must be positive")
    if spec.group > 64 or spec.rails > 64:
        raise ValueError("group and rails are at most 64 (leaf radix)")
    if spec.uplinks is not None and not spec.spines_per_rail <= spec.uplinks <= 64:
        raise ValueError("uplinks must be between spines_per_rail and 64")
    if spec.hca_names and len(spec.hca_names) != spec.rails:
        raise ValueError("hca_names needs one name per rail")
    if spec.host_order not in ("sequential", "interleaved", "random"):
        raise ValueError("host_order is sequential, interleaved or random")
    rng = random.Random(spec.seed)
    groups = (spec.nodes + spec.group - 1) // spec.group
    hosts = [spec.hostname_format.format(i + 1) for i in _numbering(spec, groups)]
    hca = spec.hca_names or tuple(f"mlx5_{r}" for r in range(spec.rails))
    # cable[node][rail] = rail of the leaf the node's HCA `rail` is plugged into
    cable = [list(range(spec.rails)) for _ in range(spec.nodes)]
    result = SynthResult(text="")
    if spec.miscable and spec.rails >= 2:
        for n in rng.sample(range(spec.nodes), min(spec.miscable, spec.nodes)):
            a, b = rng.sample(range(spec.rails), 2)
            cable[n][a], cable[n][b] = cable[n][b], cable[n][a]
            result.miscabled.append((hosts[n], min(a, b), max(a, b)))
    down: set[tuple[int, int]] = set()
    if spec.down:
        pairs = rng.sample(range(spec.nodes * spec.rails), min(spec.down, spec.nodes * spec.rails))
        down = {(p // spec.rails, p % spec.rails) for p in pairs}
        result.down = sorted((hosts[n], r) for n, r in down)
    result.miscabled.sort()

    leaf_guid = {(g, r): _g(1, g, r) for g in range(groups) for r in range(spec.rails)}
    spine_guid = {(r, s): _g(2, r, s) for r in range(spec.rails) for s in range(spec.spines_per_rail)}
    hca_guid = {(n, r): _g(3, n, r) for n in range(spec.nodes) for r in range(spec.rails)}
    leaf_lid = {key: 1 + i for i, key in enumerate(sorted(leaf_guid))}
    spine_lid = {key: 1 + len(leaf_lid) + i for i, key in enumerate(sorted(spine_guid))}
    hca_lid = {key: 1 + len(leaf_lid) + len(spine_lid) + i for i, key in enumerate(sorted(hca_guid))}
    uplinks = 64 - spec.group if spec.uplinks is None else spec.uplinks
    per_spine = max(1, uplinks // spec.spines_per_rail)
    out: list[str] = ["#", "# Topology file: generated by ncclctl fabric synth", "#",
                      f"# Initiated from node {hca_guid[(0, 0)]} port {hca_guid[(0, 0)]}", ""]
    # leaf -> {port: (node, hca_rail)}
    leaf_ports: dict[tuple[int, int], dict[int, tuple[int, int]]] = {k: {} for k in leaf_guid}
    for n in range(spec.nodes):
        g, pos = divmod(n, spec.group)
        for r in range(spec.rails):
            if (n, r) in down:
                continue
            leaf_ports[(g, cable[n][r])][pos + 1] = (n, r)
    speed = spec.speed
    for (g, r), guid in sorted(leaf_guid.items()):
        desc = f"MF0;g{g:03d}-rail{r}-leaf:MQM9700/U1"
        out += ["vendid=0x2c9", "devid=0xd2f2", f"sysimgguid=0x{guid}", f"switchguid=0x{guid}({guid})",
                f'Switch\t65 "S-{guid}"\t\t# "{desc}" enhanced port 0 lid {leaf_lid[(g, r)]} lmc 0']
        for port in sorted(leaf_ports[(g, r)]):
            n, hr = leaf_ports[(g, r)][port]
            h = hca_guid[(n, hr)]
            out.append(f'[{port}]\t"H-{h}"[1]({h}) \t\t# "{hosts[n]} {hca[hr]}" lid {hca_lid[(n, hr)]} {speed}')
        for s in range(spec.spines_per_rail):
            for k in range(per_spine):
                port = spec.group + 1 + s * per_spine + k
                sp = spine_guid[(r, s)]
                sport = 1 + g * per_spine + k
                out.append(f'[{port}]\t"S-{sp}"[{sport}]\t\t# "MF0;rail{r}-spine{s:02d}:MQM9700/U1" lid {spine_lid[(r, s)]} {speed}')
        out.append("")
    for (r, s), guid in sorted(spine_guid.items()):
        out += ["vendid=0x2c9", "devid=0xd2f2", f"sysimgguid=0x{guid}", f"switchguid=0x{guid}({guid})",
                f'Switch\t{max(64, groups * per_spine)} "S-{guid}"\t\t# "MF0;rail{r}-spine{s:02d}:MQM9700/U1" '
                f"enhanced port 0 lid {spine_lid[(r, s)]} lmc 0"]
        for g in range(groups):
            for k in range(per_spine):
                lg = leaf_guid[(g, r)]
                out.append(f'[{1 + g * per_spine + k}]\t"S-{lg}"[{spec.group + 1 + s * per_spine + k}]\t\t'
                           f'# "MF0;g{g:03d}-rail{r}-leaf:MQM9700/U1" lid {leaf_lid[(g, r)]} {speed}')
        out.append("")
    for n in range(spec.nodes):
        g, pos = divmod(n, spec.group)
        for r in range(spec.rails):
            h = hca_guid[(n, r)]
            out += ["vendid=0x2c9", "devid=0x1021", f"sysimgguid=0x{h}", f"caguid=0x{h}",
                    f'Ca\t1 "H-{h}"\t\t# "{hosts[n]} {hca[r]}"']
            if (n, r) not in down:
                leaf = (g, cable[n][r])
                out.append(f'[1]({h}) \t"S-{leaf_guid[leaf]}"[{pos + 1}]\t\t# lid {hca_lid[(n, r)]} lmc 0 '
                           f'"MF0;g{g:03d}-rail{leaf[1]}-leaf:MQM9700/U1" lid {leaf_lid[leaf]} {speed}')
            out.append("")
    result.text = "\n".join(out) + "\n"
    return result


def _numbering(spec: SynthSpec, groups: int) -> list[int]:
    """Host number (0-based) of each physical position (position p is in group p // group)."""
    if spec.host_order == "interleaved":
        # Consecutive numbers go round the groups: position (g, i) gets number i * groups + g, squeezed to
        # 0..nodes-1 when the last group is not full.
        keys = sorted(range(spec.nodes), key=lambda p: (p % spec.group, p // spec.group))
        number = [0] * spec.nodes
        for k, p in enumerate(keys):
            number[p] = k
        return number
    if spec.host_order == "random":
        number = list(range(spec.nodes))
        random.Random(f"hosts-{spec.seed}").shuffle(number)
        return number
    return list(range(spec.nodes))


# ---------------------------------------------------------------------------------------------------------------
# The same fabric in the other output forms (infiniband-diags ibnetdiscover.c dump_ports_report, iblinkinfo.c
# print_node_header/print_port)

#: Output forms of :func:`as_form` / ``fabric synth --format``.
FORMS = ("ibnetdiscover", "ibnetdiscover-p", "iblinkinfo", "iblinkinfo-line")
_LANE_TEXT = {"SDR": "2.5 Gbps", "DDR": "5.0 Gbps", "QDR": "10.0 Gbps", "FDR10": "10.0 Gbps (FDR10)",
              "FDR": "14.0625 Gbps", "EDR": "25.78125 Gbps", "HDR": "53.125 Gbps", "NDR": "106.25 Gbps",
              "XDR": "212.5 Gbps"}
_P_KIND = {"switch": "SW", "ca": "CA", "router": "RT"}
_L_KIND = {"switch": "Switch", "ca": "CA", "router": "Router"}


def as_form(text: str, form: str) -> str:
    """``text`` (ibnetdiscover topology output, as :func:`synth` writes it) in another output ``form``."""
    if form not in FORMS:
        raise ValueError(f"form is one of {', '.join(FORMS)}")
    if form == "ibnetdiscover":
        return text
    from ncclctl.parsers.ibnetdiscover import parse_ibnetdiscover

    return write_fabric(parse_ibnetdiscover(text, source="synth"), form)


def write_fabric(fabric, form: str) -> str:
    """A parsed fabric as ``ibnetdiscover -p`` (``ibnetdiscover-p``), ``iblinkinfo`` or ``iblinkinfo-line`` text.

    Port GUIDs are the node GUIDs (as on current HCAs and switches). A node's LID is its own (switches) or the one
    its peers list for it (CAs: the topology form prints a CA's LID on the link lines); a CA nobody reaches has none
    and is left out, as the tools leave out what discovery cannot reach."""
    lids: dict[str, int] = {}
    for n in fabric.nodes:
        if n.lid is not None:
            lids[n.guid] = n.lid
        for p in n.ports:
            if p.remote_lid is not None and p.remote_guid not in lids:
                lids[p.remote_guid] = p.remote_lid
    if form == "ibnetdiscover-p":
        return _write_ports(fabric, lids)
    if form in ("iblinkinfo", "iblinkinfo-line"):
        return _write_iblinkinfo(fabric, lids, line_mode=form == "iblinkinfo-line")
    raise ValueError("form is ibnetdiscover-p, iblinkinfo or iblinkinfo-line")


def _reachable(fabric, lids: dict[str, int]):
    for n in fabric.nodes:
        if n.guid in lids and (n.kind == "switch" or n.ports):
            yield n


def _write_ports(fabric, lids: dict[str, int]) -> str:
    out: list[str] = []
    for n in _reachable(fabric, lids):
        kind, lid, by_port = _P_KIND[n.kind], lids[n.guid], {p.port: p for p in n.ports}
        for port in range(n.nports, 0, -1):  # dump_ports_report walks the ports from the last one down
            p = by_port.get(port)
            head = f"{kind:>2} {lid:5d} {port:2d} 0x{n.guid} "
            if p is None:
                out.append(f"{head}4x SDR{'':36s}'{n.desc}'")
            else:
                out.append(f"{head}{p.width} {p.speed} - {_P_KIND.get(p.remote_kind, '??'):>2} "
                           f"{lids.get(p.remote_guid, 0):5d} {p.remote_port:2d} 0x{p.remote_guid} "
                           f"( '{n.desc}' - '{p.remote_desc}' )")
    return "\n".join(out) + "\n"


def _write_iblinkinfo(fabric, lids: dict[str, int], *, line_mode: bool) -> str:
    out: list[str] = []
    for n in _reachable(fabric, lids):
        lid, by_port = lids[n.guid], {p.port: p for p in n.ports}
        if line_mode:
            prefix = f'0x{n.guid} "{n.desc:>30s}" '
        else:
            out.append(f"{_L_KIND[n.kind]}: 0x{n.guid} {n.desc}:" if n.kind == "switch"
                       else f"{_L_KIND[n.kind]}: {n.desc}:")
            prefix = "      " if n.kind == "switch" else f"      0x{n.guid} "
        for port in range(1, n.nports + 1):
            p = by_port.get(port)
            if p is None:
                out.append(f"{prefix}{lid:6d} {port:4d}[  ] ==({'':14s}{'Down':>6s}/{'Polling':>8s})==>  "
                           f'{"":11s}[  ] "" ( )')
                continue
            width = (p.width or "").upper()
            remote = f"0x{p.remote_guid} " if line_mode else ""
            out.append(f"{prefix}{lid:6d} {port:4d}[  ] ==({width:>3s} {_LANE_TEXT.get(p.speed, ''):>18s} "
                       f"{'Active':>6s}/{'LinkUp':>8s})==>  {remote}{lids.get(p.remote_guid, 0):6d} "
                       f'{p.remote_port:4d}[  ] "{p.remote_desc}" ( )')
    return "\n".join(out) + "\n"
