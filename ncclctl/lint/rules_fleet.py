"""The fleet rules (FLT): compare the hosts of a fleet with the fleet majority.

Each host is reduced to a small record of comparable facts (:func:`fleet_facts`, computed where the host was
linted); the rules run once over those records (:class:`FleetCtx`). A host that differs from the majority value
gets a finding naming its value, the majority value and how many hosts hold it; when two values tie for the top (a
1:1 split there is no telling which side is wrong) the fleet gets one warning naming the values and their hosts
(:func:`no_majority`), and no host is failed for it. The runner that
loads and lints the hosts is :mod:`ncclctl.lint.fleet`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Iterator

from ncclctl.findings import Severity
from ncclctl.registry import Hit, Option, rule

E = Severity.ERROR
W = Severity.WARNING


# --------------------------------------------------------------------------------------------------
# What one host contributes to the fleet comparison


def fleet_facts(node, plan=None) -> dict[str, Any]:
    """The comparable facts of one node (small, picklable): counts, versions, rails, NCCL settings.
    ``plan``: the node's rail plan when the caller already has it."""
    from ncclctl.lint.expect import effective_nccl_settings, rail_facts

    gpus = Counter(g.name for g in node.gpus)
    fw: dict[str, set[str]] = {}
    for nic in node.nics:
        if nic.fw_ver:
            fw.setdefault(f"{nic.hca_type or '?'} board {nic.board_id or '?'}", set()).add(nic.fw_ver)
    rails = rail_facts(node, with_state=True, plan=plan)
    return {
        "driver": node.facts.driver_version,
        "gpus": ", ".join(f"{n} x {m}" for m, n in sorted(gpus.items())) if gpus else "no GPUs",
        "nics": len(node.nics),
        "firmware": {k: " + ".join(sorted(v)) for k, v in sorted(fw.items())},
        "rails": rails,
        "rail_layout": "=" + ",".join(r["hca"] for r in rails) if rails else "(no rails)",
        "nccl": effective_nccl_settings(node),
        "roce_addresses": roce_addresses(node),
        "net_ports": [(n.name, p.num, p.is_active) for n in node.nics for p in n.ports
                      if p.link_layer in ("InfiniBand", "Ethernet")],
        "nvlink": nvlink_facts(node),
    }


#: The facts (keys of :func:`fleet_facts`) each fleet rule reads. A host whose source lacks one of them (a Prometheus
#: textfile has no RoCE addresses nor NVLink domain) is left out of that rule, and the report says so.
NEEDS: dict[str, tuple[str, ...]] = {
    "FLT001": ("rails",), "FLT002": ("firmware",), "FLT003": ("driver",), "FLT004": ("nccl",), "FLT005": ("gpus",),
    "FLT006": ("nics",), "FLT007": ("rail_layout",), "FLT008": ("rails",), "FLT009": ("roce_addresses",),
    "FLT010": ("net_ports", "nccl"), "FLT011": ("net_ports", "nccl"), "FLT012": ("nvlink", "driver"),
    "FLT013": ("nvlink",),
}


def nvlink_facts(node) -> dict[str, Any] | None:
    """A node's multi-node NVLink domain membership: its (cluster UUID, clique id) (the pair most of its registered
    GPUs report), the addresses IMEX knows it by (its LOCAL IPv4 addresses and host name) and its IMEX node list;
    None on a node whose GPUs report no such domain."""
    from ncclctl.model import FABRIC_STATE_COMPLETED, nvlink_domain_gpus

    gpus = [g for g in nvlink_domain_gpus(node) if g.fabric_state == FABRIC_STATE_COMPLETED
            and g.fabric_clique_id is not None and g.fabric_cluster_uuid]
    if not gpus:
        return None
    pair, _ = Counter((g.fabric_cluster_uuid, g.fabric_clique_id) for g in gpus).most_common(1)[0]
    imex = node.facts.imex
    return {
        "domain": [pair[0], pair[1]],
        "addresses": sorted({*(imex.local_addresses or () if imex else ()), node.hostname}),
        "imex_nodes": None if imex is None or imex.nodes is None else list(imex.nodes),
        "vbios": _firmware_of(nvlink_domain_gpus(node), "vbios_version"),
        "inforom": _firmware_of(nvlink_domain_gpus(node), "inforom_image_version"),
    }


def _firmware_of(gpus, attr: str) -> list[list[Any]]:
    """[[version, [GPU indices]], ...] of the GPUs that report ``attr`` (sorted; JSON-shaped for the facts file)."""
    by: dict[str, list[int]] = {}
    for g in gpus:
        value = getattr(g, attr, None)
        if value:
            by.setdefault(value, []).append(g.index)
    return [[v, sorted(ix)] for v, ix in sorted(by.items())]


def nvlink_domains(fctx: "FleetCtx") -> dict[tuple[str, int], list[tuple[str, dict[str, Any]]]]:
    """(cluster UUID, clique id) -> [(host, nvlink facts)], never keyed by the clique id alone: racks left in the
    default partition all report clique 32766 and only the cluster UUID tells them apart."""
    out: dict[tuple[str, int], list[tuple[str, dict[str, Any]]]] = {}
    for host, facts in fctx.hosts:
        nv = facts.get("nvlink")
        if nv:
            out.setdefault((nv["domain"][0], nv["domain"][1]), []).append((host, nv))
    return dict(sorted(out.items()))


def roce_addresses(node) -> list[tuple[str, str]]:
    """(address, where) of every routable RoCE v2 GID (IPv4-mapped, or a global IPv6) of the Ethernet RDMA ports
    NCCL uses on this node (``NCCL_IB_HCA`` as NCCL applies it): the addresses other hosts' NCCL connects to."""
    import ipaddress

    from ncclctl.lint.context import Ctx, nccl_ports

    selected = nccl_ports(Ctx(node=node))
    out = set()
    for nic in node.nics:
        for port in nic.ports:
            if port.link_layer != "Ethernet" or (nic.name, port.num) not in selected:
                continue
            for g in port.gids:
                if g.type != "RoCE v2" or g.is_link_local:
                    continue
                addr = g.ipv4 if g.is_ipv4_mapped else str(ipaddress.IPv6Address(int(g.gid.replace(":", ""), 16)))
                out.add((addr, f"{nic.name} port {port.num}" + (f" ({g.netdev})" if g.netdev else "")))
    return sorted(out)


@dataclass
class FleetCtx:
    """What a fleet check sees: (host, facts) for every host that could be loaded, in input order."""

    hosts: list[tuple[str, dict[str, Any]]]

    def values(self, fn: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
        """host -> fn(facts), leaving out hosts where fn gives None (the fact does not apply to them)."""
        out = {}
        for host, facts in self.hosts:
            v = fn(facts)
            if v is not None:
                out[host] = v
        return out


def majority(values: dict[str, Any]) -> tuple[Any, int] | None:
    """The value most hosts share and how many share it; None when two or more values tie for the top."""
    if not values:
        return None
    counts = Counter(values.values())
    top = counts.most_common()
    if len(top) > 1 and top[0][1] == top[1][1]:
        return None
    return top[0]


def no_majority(values: dict[str, Any], show: Callable[[Any], str], what: str) -> Hit:
    """One finding about the fleet (subject :data:`~ncclctl.report.fleet.FLEET`, owned by no host) when two or more
    values tie for the top: there is no telling which side is wrong, so no host is failed for it. It names each
    value with its hosts in hostlist form, most hosts first, and is a warning: a person decides."""
    from ncclctl.names import hostlist
    from ncclctl.report.fleet import FLEET

    groups: dict[str, list[str]] = {}
    for host, v in values.items():
        groups.setdefault(show(v), []).append(host)
    split = "; ".join(f"{v} on {hostlist(hs)}" for v, hs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))
    return Hit(FLEET, f"{what}: no fleet majority: {split}", severity=W,
               evidence=(f"{len(values)} hosts compared, {len(groups)} values, none held by more hosts than every other",))


def odd_hosts(values: dict[str, Any], show: Callable[[Any], str], what: str) -> Iterator[Hit]:
    """One hit per host whose value differs from the majority (or per host when the fleet is split)."""
    if len(set(values.values())) < 2:
        return
    total = len(values)
    top = majority(values)
    if top is None:
        yield no_majority(values, show, what)
        return
    value, n = top
    for host, v in values.items():
        if v != value:
            yield Hit(host, f"{what} is {show(v)}; the fleet majority is {show(value)} ({n} of {total} hosts)",
                      evidence=(f"majority: {show(value)}",))


def _rail_values(fctx: FleetCtx, fn: Callable[[dict[str, Any]], Any]) -> dict[int, dict[str, Any]]:
    """rail index -> host -> fn(rail entry), for the hosts whose rail port is ACTIVE (a down port's rate and MTU
    mean nothing; IB001 reports it)."""
    out: dict[int, dict[str, Any]] = {}
    for host, facts in fctx.hosts:
        for r in facts["rails"]:
            if not r.get("active", True):
                continue
            v = fn(r)
            if v is not None:
                out.setdefault(r["rail"], {})[host] = v
    return dict(sorted(out.items()))


def _ranges(nums: list[int]) -> str:
    out: list[str] = []
    start: int | None = None
    prev = 0  # the number before n; read only while a run is open (start is not None)
    ends: list[int | None] = [*sorted(nums), None]  # None closes the last run
    for n in ends:
        if start is not None and (n is None or n != prev + 1):
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if n is not None:
            if start is None:
                start = n
            prev = n
    return ", ".join(out)


def odd_rails(per_rail: dict[int, dict[str, Any]], show: Callable[[Any], str], what: str) -> Iterator[Hit]:
    """Like :func:`odd_hosts` per rail, but one hit per host and value: the rails where the host differs from
    each rail's majority are listed together (a node on the wrong speed is one finding, not eight)."""
    groups: dict[str, dict[tuple[str, str], list[tuple[int, int, int]]]] = {}
    for k, values in per_rail.items():
        if len(set(values.values())) < 2:
            continue
        top = majority(values)
        if top is None:
            yield from odd_hosts(values, show, f"rail {k} {what}")
            continue
        value, n = top
        for host, v in values.items():
            if v != value:
                groups.setdefault(host, {}).setdefault((show(v), show(value)), []).append((k, n, len(values)))
    for host, by_value in groups.items():
        for (mine, theirs), rails in by_value.items():
            ks = [k for k, _, _ in rails]
            shares = {(n, t) for _, n, t in rails}
            share = (f"{rails[0][1]} of {rails[0][2]} hosts" if len(shares) == 1
                     else "; ".join(f"rail {k}: {n} of {t} hosts" for k, n, t in rails))
            label = f"rail{'s' if len(ks) > 1 else ''} {_ranges(ks)}"
            yield Hit(host, f"{label} {what} is {mine}; the fleet majority is {theirs} ({share})",
                      evidence=tuple(f"rail {k}: majority {theirs} on {n} of {t} hosts" for k, n, t in rails))


# --------------------------------------------------------------------------------------------------
# FLT rules


@rule(
    "FLT001", "fleet-mtu-mismatch", E, "A rail's MTU differs from the rest of the fleet",
    what="A host whose RDMA (active) MTU on a rail, or on RoCE rails whose interface MTU, differs from the "
         "value most hosts have on that rail.",
    why="Nodes with different MTUs hang or fail NCCL connections with IBV_WC_LOC_LEN_ERR (NVIDIA/nccl#1524); "
        "frames above a peer's or the switch's MTU are dropped, and a smaller RDMA MTU costs bandwidth.",
    detect="Per rail index (ncclctl rails): ibv_devinfo active_mtu, and for Ethernet rails /sys/class/net/<if>/mtu, "
           "compared across hosts; the odd hosts are named with the majority value.",
    fix="Set the MTU to the fleet baseline (RoCE: interface MTU 9000, switch 9216; IB: partition MTU 4096 in the "
        "subnet manager) through the provisioning that sets it on the other hosts.",
)
def fleet_mtu(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    def mtu(r: dict) -> tuple | None:
        if "mtu" not in r and "netdev_mtu" not in r:
            return None
        if r["link_layer"] == "Ethernet":
            return (r.get("mtu"), r.get("netdev_mtu"))
        return (r.get("mtu"), None)

    def show(v: tuple) -> str:
        text = f"RDMA MTU {v[0] or 'unknown'}"
        return text + (f", interface MTU {v[1]}" if v[1] is not None else "")

    yield from odd_rails(_rail_values(fctx, mtu), show, "MTU")


@rule(
    "FLT002", "fleet-firmware-mismatch", W, "HCA firmware differs from the rest of the fleet",
    what="A host whose ConnectX firmware, for one HCA type and board id, differs from the version most hosts "
         "with that board run.",
    why="Mixed firmware gives different congestion-control, adaptive-routing and relaxed-ordering behaviour per "
        "node; firmware-specific bugs surface as NCCL timeouts on some nodes only.",
    detect="fw_ver of every RDMA device grouped by (hca_type, board_id), compared across hosts.",
    fix="Update the odd hosts to the fleet baseline with mlxfwmanager -u (or mstflint), then reset or reboot.",
    strict_severity=E,
)
def fleet_firmware(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    groups = sorted({g for _, facts in fctx.hosts for g in facts["firmware"]})
    for g in groups:
        values = fctx.values(lambda f: f["firmware"].get(g))  # called at once: g is this iteration's
        yield from odd_hosts(values, str, f"firmware of {g}")


@rule(
    "FLT003", "fleet-driver-mismatch", W, "NVIDIA driver version differs from the rest of the fleet",
    what="A host whose NVIDIA driver version differs from the version most hosts run.",
    why="NCCL features and fixes depend on the driver (NVLS, DMA-BUF, CUDA driver API); mixed drivers give "
        "per-node performance and hang differences, and Fabric Manager must match its driver exactly.",
    detect="NVML nvmlSystemGetDriverVersion per host, compared across hosts (hosts without NVML are left out).",
    fix="Install the baseline driver and matching nvidia-fabricmanager on the odd hosts, then reboot.",
    strict_severity=E,
)
def fleet_driver(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    yield from odd_hosts(fctx.values(lambda f: f["driver"]), str, "NVIDIA driver")


@rule(
    "FLT004", "fleet-nccl-settings-mismatch", W, "An NCCL setting differs from the rest of the fleet",
    what="A host where an NCCL_* variable's effective value (environment, user conf file, /etc/nccl.conf) "
         "differs from the value most hosts have, including set on some hosts and unset on most.",
    why="All ranks of a job must agree on transport settings: a different NCCL_IB_HCA, NCCL_IB_TC, "
        "NCCL_IB_GID_INDEX or NCCL_TOPO_FILE on one node gives it other rails, another traffic class or another "
        "topology, and the job hangs at connect time or runs at that node's speed.",
    detect="Every NCCL_* name seen on any host, resolved per host with NCCL's precedence and line syntax, compared "
           "textually across hosts.",
    fix="Deploy one /etc/nccl.conf to every node (ncclctl conf generate) and remove stray NCCL_* variables from "
        "the odd hosts' environment and ~/.nccl.conf.",
    options=(Option("ignore", list, ["NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS", "NCCL_HOSTID"],
                    "Variables never compared."),),
    strict_severity=E,
)
def fleet_nccl(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    ignore = set(opts["ignore"])
    names = sorted({n for _, facts in fctx.hosts for n in facts["nccl"]} - ignore)
    unset = "(unset)"
    for name in names:
        values = {host: facts["nccl"].get(name, unset) for host, facts in fctx.hosts}
        # odd_hosts is consumed here, before the loop moves on: name is this iteration's
        yield from odd_hosts(values, lambda v: v if v == unset else f"{name}={v}", name)


@rule(
    "FLT005", "fleet-gpu-count-mismatch", E, "GPU count or model differs from the rest of the fleet",
    what="A host whose GPUs (count x model) differ from what most hosts have.",
    why="A GPU that fell off the bus, or a node of another type in the pool, changes the ranks per node: jobs "
        "fail to start or run with fewer GPUs, and mixed models drag collectives to the slowest GPU.",
    detect="NVML device names per host, counted, compared across hosts.",
    fix="Check nvidia-smi -L and dmesg (Xid 79) on the odd hosts; reseat or replace the GPU, or move the host to "
        "the right pool.",
)
def fleet_gpus(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    yield from odd_hosts(fctx.values(lambda f: f["gpus"]), str, "GPU inventory")


@rule(
    "FLT006", "fleet-nic-count-mismatch", E, "RDMA NIC count differs from the rest of the fleet",
    what="A host with a different number of RDMA devices than most hosts.",
    why="A missing HCA removes a rail: NCCL runs that node on fewer NICs, or routes the rail's GPUs to a far NIC, "
        "and the whole job slows to that node's bandwidth.",
    detect="The number of RDMA devices per host, compared across hosts.",
    fix="Check lspci and dmesg on the odd hosts for the missing ConnectX function (recovery mode, link down, "
        "driver bind failure); reseat or replace the card.",
)
def fleet_nics(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    yield from odd_hosts(fctx.values(lambda f: f["nics"]), lambda v: f"{v} RDMA device(s)", "RDMA device count")


@rule(
    "FLT007", "fleet-rail-layout-mismatch", E, "Rail layout (NCCL_IB_HCA) differs from the rest of the fleet",
    what="A host whose rail plan (the GPU-to-HCA-port assignment from PCIe locality, written as the exact "
         "NCCL_IB_HCA list) differs from the plan most hosts have.",
    why="Rail-optimized fabrics are cabled by rail: if rail k is another HCA on one host (a card in another slot, "
        "a renamed device), its traffic leaves on the wrong leaf, crossing the spine, or NCCL_IB_HCA deployed "
        "fleet-wide selects the wrong devices there.",
    detect="ncclctl rails per host (plan_rails: closest HCA port per GPU, rails numbered by GPU), compared as "
           "the =dev:port,... list across hosts.",
    fix="Compare 'ncclctl rails' on an odd host with a good one: move the card back to its slot, fix the udev "
        "naming, or give that node type its own inventory group.",
)
def fleet_rail_layout(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    yield from odd_hosts(fctx.values(lambda f: f["rail_layout"]), lambda v: f"NCCL_IB_HCA={v}" if v.startswith("=")
                         else v, "rail layout")


@rule(
    "FLT008", "fleet-rail-rate-mismatch", E, "A rail's link rate differs from the rest of the fleet",
    what="A host whose link rate on a rail differs from the rate most hosts have on that rail.",
    why="The slowest rail of any node bounds every ring through it: one port trained at 200 Gb/s on a 400 Gb/s "
        "fabric halves the bus bandwidth of collectives that cross that node.",
    detect="Per rail index: the port rate (sysfs rate) of each host, compared across hosts.",
    fix="Check the odd host's cable and transceiver (mlxlink), the switch port's speed and split settings; "
        "replace the cable if it keeps training low.",
)
def fleet_rail_rate(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    yield from odd_rails(_rail_values(fctx, lambda r: r.get("rate_gbps")), lambda v: f"{v:g} Gb/s", "rate")


@rule(
    "FLT009", "fleet-duplicate-roce-address", E, "Two hosts use the same RoCE address",
    what="An IP address (RoCE v2 GID: IPv4-mapped or global IPv6) that appears on the RDMA ports of two or more "
         "hosts.",
    why="NCCL connects RoCE queue pairs to the GID the peer advertises: with one address on two hosts, packets for "
        "one reach the other (or ARP/ND flaps between them), so connections fail with transport retry errors or "
        "hang at init, on whichever jobs happen to include both hosts. Cloned network configurations and DHCP "
        "reservations copied between nodes are the usual cause.",
    detect="The RoCE v2 GIDs of the Ethernet RDMA ports NCCL uses on each host (NCCL_IB_HCA as NCCL applies it; "
           "every RDMA port when unset), from sysfs gids and gid_attrs/types, across the fleet. Storage or in-band "
           "ports outside NCCL_IB_HCA are not judged.",
    fix="Give each host's rail interfaces their own addresses (netplan/NetworkManager per host, or the DHCP "
        "reservation by MAC), then restart the interfaces; GIDs follow the addresses.",
)
def fleet_duplicate_roce_address(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    holders: dict[str, list[tuple[str, str]]] = {}
    for host, facts in fctx.hosts:
        for addr, where in facts.get("roce_addresses", ()):
            holders.setdefault(addr, []).append((host, where))
    per_host: dict[str, list[str]] = {}
    for addr, seen in sorted(holders.items()):
        hosts = sorted({h for h, _ in seen})
        if len(hosts) < 2:
            continue
        for host in hosts:
            mine = ", ".join(w for h, w in seen if h == host)
            others = [h for h in hosts if h != host]
            per_host.setdefault(host, []).append(
                f"{addr} ({mine}) also on {', '.join(others[:3])}" + (f" and {len(others) - 3} more" if len(others) > 3
                                                                       else ""))
    for host, dups in per_host.items():
        yield Hit(host, f"{len(dups)} RoCE address(es) in use on other hosts too: " + "; ".join(dups[:4])
                        + (f"; and {len(dups) - 4} more" if len(dups) > 4 else ""),
                  evidence=tuple(dups[:8]))


# --------------------------------------------------------------------------------------------------
# Rails and planes (NCCL 2.30.7+)


def nccl_net_ports(facts: dict[str, Any]) -> list[tuple[str, int, int, int]]:
    """(nic, port, rail, plane) of every active port the host's effective NCCL_IB_HCA selects (all active RDMA ports
    when unset), with the rail/plane ids NCCL 2.30.7+ reads from it (-1: undefined)."""
    ports = facts.get("net_ports") or ()
    if not all(type(p) is tuple for p in ports):  # facts_from_json and fleet_facts give tuples already
        ports = [tuple(p) for p in ports]
    return list(_net_ports(facts["nccl"].get("NCCL_IB_HCA"), tuple(ports)))


@lru_cache(maxsize=256)
def _net_ports(hca: str | None, ports: tuple) -> tuple[tuple[str, int, int, int], ...]:
    """:func:`nccl_net_ports` of one (NCCL_IB_HCA, ports): a fleet has a few distinct ones, asked per host."""
    from ncclctl.nccl.lists import hca_ids, hca_selects

    selected = hca_selects(hca, [(n, p) for n, p, _ in ports]) if hca else {(n, p) for n, p, _ in ports}
    out = []
    for n, p, active in ports:
        if active and (n, p) in selected:
            rail, plane = hca_ids(hca, n, p) if hca and not hca.startswith("^") else (-1, -1)
            out.append((n, p, rail, plane))
    return tuple(out)


def _ids_text(rail: int, plane: int) -> str:
    if rail == -1 and plane == -1:
        return "no rail id"
    return f"rail {rail if rail != -1 else '?'}" + ("" if plane == -1 else f" plane {plane}")


@rule(
    "FLT010", "fleet-rail-id-mismatch", E, "A NIC port's rail/plane id differs from the rest of the fleet",
    what="A host whose NCCL_IB_HCA gives an HCA port another rail or plane id (name:port:rail:plane, NCCL 2.30.7+) "
         "than most hosts give the same port.",
    why="Rail ids are a fleet fact: on a rail-optimized fabric the same HCA of every node is cabled to the same "
        "rail's leaf. A port whose id differs was cabled to another rail's leaf (ids written from the fabric by "
        "ncclctl conf generate --fabric say where it really lands), or was labelled by hand wrongly; either way "
        "its traffic crosses the spine to reach the other nodes' port of that rail, or NCCL keeps a ring on a rail "
        "the port is not on.",
    detect="The rail/plane fields of the entry of each host's effective NCCL_IB_HCA that selects each active port, "
           "compared per HCA port across hosts.",
    fix="Check the cabling of the odd host's port (ncclctl fabric rails shows the leaf it reaches): recable it to "
        "its rail's leaf, or fix the ids in its NCCL_IB_HCA.",
)
def fleet_rail_ids(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    per_port: dict[str, dict[str, tuple[int, int]]] = {}
    for host, facts in fctx.hosts:
        for n, p, rail, plane in nccl_net_ports(facts):
            per_port.setdefault(f"{n}:{p}", {})[host] = (rail, plane)
    for key in sorted(per_port, key=lambda k: (len(k), k)):
        values = per_port[key]
        if not any(v != (-1, -1) for v in values.values()):
            continue
        yield from odd_hosts(values, lambda v: _ids_text(*v), f"{key}")


@rule(
    "FLT011", "fleet-net-count-mismatch", E, "The NICs NCCL uses, or their rail/plane numbering, differ across hosts",
    what="A host where the number of network devices NCCL uses (active ports its NCCL_IB_HCA selects) or the set "
         "of rail/plane ids they carry differs from most hosts.",
    why="Since NCCL 2.30, NCCL_IGNORE_NET_MISMATCH defaults to 1: ranks with different local NIC counts no longer "
        "stop with an error at init (src/init.cc), they go on, and channels that expect a NIC of a rail on every "
        "node can hang or crawl without a message. Different rail numbering (one node with rails 0-7, another with "
        "0-3 on two planes) has the same effect on the rail-aware search.",
    detect="Per host: the count of active RDMA ports its effective NCCL_IB_HCA selects and the sorted rail/plane "
           "ids of those ports, compared across hosts.",
    fix="Bring the odd host's ports up or deploy the fleet's NCCL_IB_HCA there (ncclctl conf generate --fabric); "
        "set NCCL_IGNORE_NET_MISMATCH=0 so a mismatch fails at init instead of hanging.",
)
def fleet_net_count(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    def value(facts: dict[str, Any]) -> tuple | None:
        ports = nccl_net_ports(facts)
        if not facts.get("net_ports"):
            return None
        return (len(ports), tuple(sorted({(r, pl) for _, _, r, pl in ports if (r, pl) != (-1, -1)})))

    def show(v: tuple) -> str:
        n, ids = v
        text = f"{n} NCCL network device{'s' if n != 1 else ''}"
        if ids:
            rails = sorted({r for r, _ in ids})
            planes = sorted({p for _, p in ids if p != -1})
            text += f" on rails {_ranges([r for r in rails if r != -1]) or '?'}"
            if planes:
                text += f", planes {_ranges(planes)}"
        return text

    yield from odd_hosts(fctx.values(value), show, "NCCL's network")


# --------------------------------------------------------------------------------------------------
# Multi-node NVLink domains (GB200/GB300 NVL72)


@rule(
    "FLT012", "fleet-nvlink-domain", E, "A multi-node NVLink domain too big, or its IMEX node lists disagree",
    what="The hosts grouped into NVLink domains by (fabric cluster UUID, clique id), never by the clique id alone: a "
         "domain with more trays than the rack has (option max_trays, 18 for NVL72); a member whose IMEX node list "
         "leaves out another member of its domain (error) or lists a host of another domain (warning); members of "
         "one domain on different driver versions (warning on each member off the domain's majority, the versions "
         "with their hosts in hostlist form; on a tie one warning on the domain's first host); members of one "
         "domain whose GPUs run different VBIOS (or InfoROM image) versions (warning, the same way: the odd trays "
         "with their GPUs, every version with its trays); a clique id shared by several cluster UUIDs, such as "
         "the default partition's 32766 (info: the domains are told apart by cluster UUID).",
    why="NCCL and the schedulers' topology plugins treat a domain as the set of hosts that can talk over NVLink. "
        "More members than trays means two racks were merged (hosts grouped by clique id alone); an IMEX node list "
        "that misses a member makes every job that includes both fail MNNVL; one with a host of another rack makes "
        "IMEX wait for a peer it can never reach; IMEX requires the same driver on every member. An NVL72 rack is "
        "qualified and updated as one firmware bundle (compute trays, NVLink switch trays): a tray whose GPUs run "
        "another VBIOS, typically a board swapped in a repair, is outside the tested combination.",
    detect="Per host, the (cluster UUID, clique id) most of its COMPLETED GPUs report (NVML fabric info), its LOCAL "
           "IPv4 addresses and host name, its IMEX node list, its driver version and its GPUs' VBIOS and InfoROM "
           "image versions (NVML nvmlDeviceGetVbiosVersion / nvmlDeviceGetInforomImageVersion, else nvidia-smi -q) "
           "(fleet facts).",
    fix="Write the same node list, exactly the domain's trays, into /etc/nvidia-imex/nodes_config.cfg on every "
        "member and restart nvidia-imex; re-register a tray that landed in another domain (NMX-M partition); "
        "upgrade the members to one driver; flash the odd trays with the rack's firmware bundle (nvfwupd).",
    options=(Option("max_trays", int, 18, "most compute trays one NVLink domain may hold (NVL72: 18)"),),
)
def fleet_nvlink_domain(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    domains = nvlink_domains(fctx)
    if not domains:
        return
    max_trays = int(opts.get("max_trays", 18))
    driver = dict(fctx.values(lambda f: f.get("driver")))
    owner: dict[str, tuple[str, int]] = {}
    for key, members in domains.items():
        for host, nv in members:
            for a in nv["addresses"]:
                owner[a] = key
    cliques: dict[int, set[str]] = {}
    first: dict[int, str] = {}
    for (uuid, clique), members in domains.items():
        cliques.setdefault(clique, set()).add(uuid)
        first.setdefault(clique, members[0][0])
    for (uuid, clique), members in domains.items():
        name = f"cluster {uuid} clique {clique}"
        hosts = [h for h, _ in members]
        if len(members) > max_trays:
            yield Hit(hosts[0],  # findings belong to hosts: the domain's first host carries it
                      f"NVLink domain {name} has {len(members)} hosts, more than the {max_trays} trays of one rack: "
                      f"hosts of different racks report the same domain",
                      fix="check the hosts' fabric registration (nvidia-smi -q -d FABRIC): trays of another rack "
                          "must report their own cluster UUID",
                      evidence=(f"{len(members)} hosts: {', '.join(hosts[:6])}{' ...' if len(hosts) > 6 else ''}",
                                f"max_trays {max_trays}"))
        for host, nv in members:
            listed = nv.get("imex_nodes")
            if listed is None:
                continue
            listed_set = set(listed)
            missing = [h for h, other in members if not listed_set & set(other["addresses"])]
            if missing:
                yield Hit(host, f"its IMEX node list leaves out {len(missing)} member(s) of its NVLink domain ({name}): "
                                f"{', '.join(missing[:6])}{' ...' if len(missing) > 6 else ''}",
                          fix="write every tray of the domain into /etc/nvidia-imex/nodes_config.cfg (the same list "
                              "on each) and restart nvidia-imex",
                          evidence=(f"node list: {len(listed)} entries", f"domain {name}: {len(members)} hosts"))
            foreign = sorted({a for a in listed if a in owner and owner[a] != (uuid, clique)})
            if foreign:
                same_rack = [a for a in foreign if owner[a][0] == uuid]
                fix = "keep only the trays of this host's own domain in nodes_config.cfg"
                if same_rack:  # one NVLink fabric (cluster UUID), another partition: typically a tray after a repair
                    fix = (f"{len(same_rack)} of them share this host's cluster UUID (one NVLink fabric) in another "
                           f"clique: a tray left its rack's partition (typically after a repair): put it back into the "
                           f"partition of the others (NMX-M); if the split is meant, " + fix)
                yield Hit(host, f"its IMEX node list names {len(foreign)} host(s) of another NVLink domain: "
                                f"{', '.join(foreign[:6])}", severity=W, fix=fix,
                          evidence=tuple(f"{a}: in cluster {owner[a][0]} clique {owner[a][1]}" for a in foreign[:6]))
        yield from _domain_driver_split(name, hosts, driver)
        for fw, label in (("vbios", "VBIOS"), ("inforom", "InfoROM image")):
            yield from _domain_firmware_split(name, [(h, nv.get(fw) or []) for h, nv in members], label)
    for clique, uuids in sorted(cliques.items()):
        if len(uuids) > 1:
            yield Hit(first[clique],
                      f"clique id {clique} is reported by {len(uuids)} NVLink domains (cluster UUIDs "
                      f"{', '.join(sorted(uuids)[:4])}){' (the default partition)' if clique == 32766 else ''}: they "
                      f"are different domains; anything that groups hosts by clique id alone merges them",
                      severity=Severity.INFO,
                      fix="group by cluster UUID and clique id (ncclctl does); check topology generators (Slurm "
                          "blocks, Kubernetes clique labels) do the same",
                      evidence=tuple(f"cluster {u}" for u in sorted(uuids)[:6]))


def _domain_driver_split(name: str, hosts: list[str], driver: dict[str, Any]) -> Iterator[Hit]:
    """Members of one NVLink domain on different NVIDIA drivers: one warning per member off the domain's majority,
    naming every version with its hosts in hostlist form; when two versions tie there is no telling which side is
    wrong, so one warning on the domain's first host names the split."""
    from ncclctl.names import hostlist

    known = {h: driver[h] for h in hosts if driver.get(h)}
    if len(set(known.values())) < 2:
        return
    groups: dict[str, list[str]] = {}
    for h, v in known.items():
        groups.setdefault(v, []).append(h)
    split = "; ".join(f"{v} on {hostlist(hs)}" for v, hs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))
    evidence = tuple(f"driver {v}: {hostlist(hs)}" for v, hs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))
    top = majority(known)
    if top is None:
        yield Hit(hosts[0], f"NVLink domain {name} runs {len(groups)} NVIDIA driver versions with no majority "
                            f"({split}): IMEX needs one driver version on every member",
                  severity=W, fix="pick one driver version for the rack and install it (with its matching "
                                  "nvidia-imex) on every tray of the domain, then restart nvidia-imex",
                  evidence=evidence)
        return
    for h in hosts:
        if known.get(h) not in (None, top[0]):
            yield Hit(h, f"driver {known[h]} differs from its NVLink domain's majority {top[0]} ({top[1]} of "
                         f"{len(known)} members; {name}): IMEX needs one driver version on every member",
                      severity=W, fix=f"install driver {top[0]} (and its nvidia-imex) on this tray, then restart "
                                      f"nvidia-imex on the domain's trays",
                      evidence=evidence)


def _domain_firmware_split(name: str, members: list[tuple[str, list]], label: str) -> Iterator[Hit]:
    """Members of one NVLink domain whose GPUs run different firmware (``label``: VBIOS, InfoROM image): one warning
    per member with a version off the domain's majority (by trays), naming its GPUs and every version with its trays
    in hostlist form; on a tie one warning on the domain's first host. ``members``: (host, [[version, [GPU
    indices]], ...]) as :func:`nvlink_facts` gives them; hosts that report no version are left out."""
    from ncclctl.names import hostlist

    groups: dict[str, list[str]] = {}
    for h, versions in members:
        for v, _ in versions:
            groups.setdefault(str(v), []).append(h)
    if len(groups) < 2:
        return
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    evidence = tuple(f"{label} {v}: {hostlist(hs)}" for v, hs in ranked)
    fix_all = (f"flash every tray of the domain with the rack's firmware bundle (nvfwupd with the compute tray's "
               f"package, or the rack firmware update of Base Command Manager / Mission Control), then check "
               f"nvidia-smi -q shows one {label} version on all of them")
    if len(ranked[0][1]) == len(ranked[1][1]):
        split = "; ".join(f"{v} on {hostlist(hs)}" for v, hs in ranked)
        first = next(h for h, versions in members if versions)  # the first member that reports a version
        yield Hit(first, f"NVLink domain {name} runs {len(groups)} GPU {label} versions with no majority "
                                 f"({split}): one rack runs one firmware bundle", severity=W, fix=fix_all,
                  evidence=evidence)
        return
    top = ranked[0][0]
    known = sum(1 for _, versions in members if versions)
    count = sum(1 for _, versions in members if versions and {str(v) for v, _ in versions} == {top})
    for h, versions in members:
        odd = [(str(v), ix) for v, ix in versions if str(v) != top]
        if not odd:
            continue
        gpus = "; ".join(f"{v} on GPU {','.join(str(i) for i in ix)}" for v, ix in odd)
        yield Hit(h, f"GPU {label} {gpus} differs from its NVLink domain's majority {top} ({count} of {known} "
                     f"members; {name}): one rack runs one firmware bundle",
                  severity=W, fix=f"flash this tray with the rack's firmware bundle (nvfwupd with the compute tray's "
                                  f"package) so its GPUs run {label} {top}, then power-cycle the tray; if {top} is "
                                  f"the older one, {fix_all}",
                  evidence=evidence)


#: GPU Feature Discovery's label for a node's NVLink clique (k8s-device-plugin internal/lm/fabric.go): the GPUs'
#: fabric cluster UUID and clique id joined by a dot; set only when every fabric-attached GPU reports one pair.
CLIQUE_LABEL = "nvidia.com/gpu.clique"


@rule(
    "FLT013", "fleet-k8s-clique-label", E, "A Kubernetes clique label disagrees with the GPUs' NVLink domain",
    what="Where an inventory carries the hosts' Kubernetes node labels: a host whose `nvidia.com/gpu.clique` label "
         "is not the `<cluster UUID>.<clique id>` its GPUs report through NVML (error), is malformed (error), is set "
         "on a host whose GPUs report no multi-node NVLink domain (warning), or is missing on a host in a domain "
         "while the inventory carries its other labels (warning).",
    why="Schedulers place multi-node NVLink jobs by this label (pod affinity with topologyKey nvidia.com/gpu.clique, "
        "ComputeDomains, topology-aware schedulers): a stale label, typically after a tray was repaired and "
        "re-registered in another clique, puts pods of one job into two NVLink domains, where NCCL falls back to "
        "the NICs between them, or keeps a tray out of its rack's jobs.",
    detect="The inventory's `labels:` of each host against the (cluster UUID, clique id) most of the host's "
           "registered GPUs report (fleet facts, the FLT012 grouping); UUIDs compared case-insensitively.",
    fix="Let GPU Feature Discovery relabel the node (restart its pod on the host), or set it by hand: kubectl label "
        "node HOST nvidia.com/gpu.clique=<cluster UUID>.<clique id> --overwrite; then refresh the inventory.",
    options=(Option("label", str, CLIQUE_LABEL, "the node label that carries the clique"),),
)
def fleet_k8s_clique_label(fctx: FleetCtx, opts: dict) -> Iterable[Hit]:
    key = str(opts.get("label") or CLIQUE_LABEL)
    for host, facts in fctx.hosts:
        labels = facts.get("labels")
        if not labels:
            continue
        nv = facts.get("nvlink")
        value = labels.get(key)
        want = f"{nv['domain'][0]}.{nv['domain'][1]}" if nv else None
        if value is None:
            if want is not None:
                yield Hit(host, f"no {key} label, while its GPUs are in NVLink domain {want}: pods that ask for one "
                                f"clique cannot be placed here", severity=W,
                          fix=f"kubectl label node {host} {key}={want} (or let GPU Feature Discovery set it)",
                          evidence=(f"labels given: {', '.join(sorted(labels)[:4])}", f"NVML: {want}"))
            continue
        uuid, dot, clique = value.rpartition(".")
        if not dot or not uuid or not clique.isdigit():
            yield Hit(host, f"{key}={value!r} is not '<cluster UUID>.<clique id>'",
                      fix=f"kubectl label node {host} {key}={want or '<cluster UUID>.<clique id>'} --overwrite",
                      evidence=(f"label: {value}",) + ((f"NVML: {want}",) if want else ()))
            continue
        if want is None or nv is None:
            yield Hit(host, f"{key}={value} but its GPUs report no registered multi-node NVLink domain: the label is "
                            f"stale or the fabric registration failed", severity=W,
                      fix=f"check the fabric registration (nvidia-smi -q -d FABRIC; NVL001), then relabel or "
                          f"kubectl label node {host} {key}-",
                      evidence=(f"label: {value}", "NVML: no COMPLETED fabric registration"))
            continue
        got_uuid, got_clique = str(nv["domain"][0]).lower(), int(nv["domain"][1])  # nv is set: want is not None
        if (uuid.lower(), int(clique)) != (got_uuid, got_clique):
            what = "clique id" if uuid.lower() == got_uuid else "cluster UUID"
            yield Hit(host, f"{key}={value} names another {what} than its GPUs report ({want}): the scheduler "
                            f"places this host with the wrong NVLink domain",
                      fix=f"kubectl label node {host} {key}={want} --overwrite (or restart GPU Feature Discovery "
                          f"on it)", evidence=(f"label: {value}", f"NVML: {want}"))
