"""``/etc/nccl.conf`` derived from the node model (pure: a Node in, settings and bytes out).

What NCCL reads (``src/misc/param.cc:setEnvFile``, modelled in :mod:`ncclctl.nccl.settings`; nccl-format.md
section 5.1): one ``NAME=VALUE`` per line, applied
with ``setenv(name, value, 0)`` (the process environment and the user's file win); no trimming, no quote removal,
no ``export``; lines starting with ``#`` are skipped from 2.26 on (before that they set a variable named
``#...``); name and value are cut at 1023 characters. So the file holds bare ``NAME=value`` lines, nothing else,
unless comments are asked for and the target NCCL reads them.

The settings:

* ``NCCL_TOPO_FILE``: the topology file, when one is given (flat-PCIe VMs need one; ``topo generate`` writes it).
* ``NCCL_IB_HCA``: the rails of :func:`ncclctl.plan.rails.plan_rails`, exact names with ports (``=mlx5_0:1,...``).
* ``NCCL_SOCKET_IFNAME``: ``=name`` of the interface for bootstrap and the IB plugin's out-of-band connection:
  an up Ethernet interface that is neither a rail nor a container/VM bridge, preferring bonds, then physical
  ports (and interfaces of non-rail RDMA NICs last). The model has no IP addresses, so a VLAN sub-interface is
  never preferred over its parent; ``--socket-ifname`` overrides.
* RoCE rails: ``NCCL_IB_GID_INDEX``, the RoCE v2 IPv4-mapped GID index, when one index is right on every active
  rail; ``NCCL_IB_TC`` = DSCP << 2 | ECT(0) (:func:`~ncclctl.nccl.values.ib_tc_for_dscp`: 26 -> 106) for a DSCP that every rail netdev (trust dscp) maps to a priority with PFC on
  (DSCP 26, the usual AF31 -> priority 3, when it qualifies; else the lowest). With trust pcp and RoCE over a VLAN,
  ``NCCL_IB_SL`` = the PFC priority (the SL becomes the VLAN PCP). Without QoS data, or when the rails disagree,
  nothing is guessed: the setting is left out with a warning.
"""

from __future__ import annotations

import re

from ncclctl.errors import InputError, UsageError
from ncclctl.model import NetDev, Node
from ncclctl.nccl.values import ib_tc_for_dscp
from ncclctl.nccl.version import DEFAULT, Version
from ncclctl.names import natural_key
from ncclctl.nccl.railids import RailIds, emit_note, written
from ncclctl.plan.railids import fusion_crosses_rails
from ncclctl.plan.rails import RailPlan, plan_rails
from ncclctl.record import record

#: NCCL skips '#' lines in conf files from this release on (earlier ones set a variable named '#...').
COMMENTS_SINCE = Version(2, 26, 0)
#: NCCL_IB_HCA entries (MAX_IB_DEVS): 32 from 2.18.5, 16 before.
_IB_HCA_MAX = (Version(2, 18, 5), 32, 16)
#: setEnvFile copies at most 1023 characters of a name and of a value.
_FIELD_MAX = 1023
#: NCCL_IB_GID_INDEX defaults to -1 (auto: RoCE v2, AF_INET) from 2.21; before that to 0.
_GID_AUTO_SINCE = Version(2, 21, 0)
#: The conventional lossless-RoCE data DSCP (AF31, priority 3 under the default DSCP>>3 map).
PREFERRED_DSCP = 26

# Interfaces NCCL itself avoids by default (^docker,lo,virbr) and other host-internal bridges and tunnels.
_INTERNAL_PREFIXES = ("docker", "virbr", "veth", "cni", "flannel", "cali", "cilium", "lxcbr", "lxdbr", "podman",
                      "br-", "kube-", "weave", "vxlan", "tun", "tap", "tailscale", "wg", "zt")
_SKIP_KINDS = {"loopback", "veth", "macvlan", "macvtap", "ipvlan", "tun", "tap", "vxlan", "geneve", "wireguard",
               "dummy", "ipoib", "gre", "gretap", "ipip", "sit", "vrf"}
_KIND_ORDER = {"bond": 0, "team": 0, "physical": 1, "virtual": 2, "bridge": 3, "vlan": 4}


@record
class Setting:
    name: str
    value: str
    #: Why this value (one line; written as a comment with --comments).
    reason: str


@record
class ConfPlan:
    settings: tuple[Setting, ...]
    #: What could not be decided and was left out, or needs a look.
    warnings: tuple[str, ...] = ()

    def get(self, name: str) -> str | None:
        return next((s.value for s in self.settings if s.name == name), None)


def plan_conf(node: Node, *, topo_file: str | None = None, compute_nics: tuple[str, ...] | None = None,
              socket_ifname: str | None = None, nccl_version: Version = DEFAULT,
              rail_ids: RailIds | None = None) -> ConfPlan:
    """The settings for ``node``, in the order they are written."""
    settings: list[Setting] = []
    warnings: list[str] = []
    rails = plan_rails(node, compute_nics)

    if topo_file is not None:
        if not topo_file.startswith("/"):
            raise UsageError(f"--topo-file {topo_file!r} is relative: NCCL opens it from each job's working folder",
                             fix="give an absolute path, e.g. /etc/nccl-topo.xml")
        try:
            check_setting("NCCL_TOPO_FILE", topo_file)
        except InputError as exc:
            raise UsageError(f"--topo-file: {exc.message}", fix=exc.fix) from None
        settings.append(Setting("NCCL_TOPO_FILE", topo_file, "the topology file NCCL loads instead of probing"))
    elif node.is_virtual and node.facts.virtual_topology is None:
        warnings.append("flat PCIe (a virtual machine): NCCL needs a topology file to see GPU/NIC locality; write "
                        "one with 'ncclctl topo generate -o /etc/nccl-topo.xml' and pass --topo-file /etc/nccl-topo.xml")

    settings += _ib_hca(node, rails, nccl_version, warnings, rail_ids)
    settings += _socket_ifname(node, rails, socket_ifname, warnings)
    settings += _roce(node, rails, nccl_version, warnings)
    return ConfPlan(settings=tuple(settings), warnings=tuple(warnings))


def render(plan: ConfPlan, *, comments: bool = False, nccl_version: Version = DEFAULT) -> bytes:
    """The file: ``NAME=value`` lines (LF), with ``#`` comment lines only when asked and understood."""
    if comments:
        check_comments(nccl_version)
    lines: list[str] = []
    if comments:
        lines.append("# Written by 'ncclctl conf generate'; regenerate rather than edit.")
        lines.append("# NCCL reads NAME=value verbatim: no spaces around '=', no quotes, no 'export'.")
    for s in plan.settings:
        check_setting(s.name, s.value)
        if comments:
            lines.append(f"# {s.reason}")
        lines.append(f"{s.name}={s.value}")
    return ("\n".join(lines) + "\n").encode() if lines else b""


def check_comments(nccl_version: Version) -> None:
    """Refuse comment lines for an NCCL that would read them as variables."""
    if nccl_version < COMMENTS_SINCE:
        raise UsageError(f"NCCL {'.'.join(map(str, nccl_version))} does not skip '#' lines in nccl.conf (2.26 and "
                         "later do): each comment would set a variable named '#...'",
                         fix="drop --comments, or give --nccl-version 2.26 or later")


def check_setting(name: str, value: str) -> None:
    """Refuse a line NCCL would not read back as written."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise InputError(f"{name!r} is not a variable name", fix="use NAME=value with a plain variable name")
    if not value or value != value.strip() or any(c in value for c in "\r\n\0"):
        raise InputError(f"{name}: value {value!r} is empty, has surrounding blanks or a line break; NCCL keeps "
                         "values verbatim", fix="give a value without surrounding blanks")
    if len(name) > _FIELD_MAX or len(value) > _FIELD_MAX:
        raise InputError(f"{name}: NCCL cuts names and values at {_FIELD_MAX} characters", fix="shorten the value")


# --------------------------------------------------------------------------------------------------


def _ib_hca(node: Node, rails: RailPlan, version: Version, warnings: list[str],
            rail_ids: RailIds | None = None) -> list[Setting]:
    if not rails.rails:
        why = "the node has no GPUs" if not node.gpus else "the node has no RDMA NIC ports"
        warnings.append(f"NCCL_IB_HCA not set: {why}")
        return []
    since, new_max, old_max = _IB_HCA_MAX
    limit = new_max if version >= since else old_max
    if len(rails.rails) > limit:
        raise InputError(f"{len(rails.rails)} rails, but NCCL {'.'.join(map(str, version))} reads at most {limit} "
                         "NCCL_IB_HCA entries", fix="select the compute NICs with --compute-nics")
    if rails.down:
        names = ", ".join(rails.rails[k].hca for k in rails.down)
        warnings.append(f"rail port {names} is not ACTIVE: kept in NCCL_IB_HCA (NCCL skips inactive ports), fix the link")
    hcas = ",".join(r.hca for r in rails.rails)
    if rail_ids is not None:
        warnings += rail_ids.notes
        gate_note = emit_note(rail_ids, version)
        if gate_note:
            warnings.append(gate_note)
    ids = written(rail_ids, version)
    if ids is None:
        return [Setting("NCCL_IB_HCA", rails.nccl_ib_hca,
                        f"rails by PCIe locality ({hcas}); '=' makes every name exact, so mlx5_1 cannot match mlx5_10")]
    out = [Setting("NCCL_IB_HCA", "=" + ",".join(ids.hca_entry(r.hca) for r in rails.rails),
                   f"rails by PCIe locality ({hcas}), rail:plane ids from the {ids.source} ({ids.detail}); '=' makes "
                   "every name exact")]
    crossing = fusion_crosses_rails(node, rails, ids)
    if crossing:
        pairs = ", ".join(f"{a}+{b}" for a, b in crossing)
        out.append(Setting("NCCL_NET_MERGE_POLICY", "RAIL", f"NCCL's default NIC fusion would fuse ports of "
                                                            f"different rails ({pairs}); RAIL fuses one rail only"))
    if ids.rail_only:
        out.append(Setting("NCCL_CROSS_NIC", "0", "rail-only fabric (a spine set per rail, no switch path between "
                                                  "rails): channels must enter and leave on their rail"))
    return out


def _socket_ifname(node: Node, rails: RailPlan, override: str | None, warnings: list[str]) -> list[Setting]:
    if override is not None:
        name = override[1:] if override.startswith("=") else override
        if node.netdev(name) is None:
            known = ", ".join(sorted((n.name for n in node.netdevs), key=natural_key)) or "none"
            raise InputError(f"--socket-ifname {name}: no such interface on {node.hostname}", fix=f"interfaces: {known}")
        return [Setting("NCCL_SOCKET_IFNAME", f"={name}", "given with --socket-ifname (exact name)")]
    rail_netdevs = {r.netdev for r in rails.rails if r.netdev}
    rdma_netdevs = {p.netdev for n in node.nics for p in n.ports if p.netdev} | {d for n in node.nics for d in n.netdevs}
    candidates: list[tuple[tuple[int, int, tuple[object, ...]], NetDev]] = []
    for nd in node.netdevs:
        if nd.name in rail_netdevs or not _usable_socket_if(nd):
            continue
        rank = (1 if nd.name in rdma_netdevs else 0, _KIND_ORDER.get(nd.kind, 5), natural_key(nd.name))
        candidates.append((rank, nd))
    if not candidates:
        warnings.append("NCCL_SOCKET_IFNAME not set: no up Ethernet interface outside the rails (NCCL's default "
                        "order applies: ib*, then any but docker/lo/virbr); pass --socket-ifname to choose one")
        return []
    candidates.sort(key=lambda c: c[0])
    chosen = candidates[0][1]
    vlans = sorted((n.name for n in node.netdevs if n.parent == chosen.name and n.kind == "vlan"
                    and n.operstate in ("up", "unknown")), key=natural_key)
    if vlans:
        warnings.append(f"NCCL_SOCKET_IFNAME is ={chosen.name}, but {chosen.name} also carries VLAN interface(s) "
                        f"{', '.join(vlans)}; if the node's address is on a VLAN, pass --socket-ifname {vlans[0]}")
    others = [c[1].name for c in candidates[1:] if c[0][:2] == candidates[0][0][:2]]
    reason = f"{chosen.name}: up {chosen.kind} Ethernet interface, not a rail"
    if others:
        reason += f" (also possible: {', '.join(others)})"
    return [Setting("NCCL_SOCKET_IFNAME", f"={chosen.name}", reason)]


def _kind(node: Node, name: str) -> str | None:
    nd = node.netdev(name)
    return nd.kind if nd else None


def _usable_socket_if(nd: NetDev) -> bool:
    if nd.type != 1 or nd.master is not None:  # Ethernet only; bond/bridge ports carry no address
        return False
    if nd.operstate not in ("up", "unknown") or nd.kind in _SKIP_KINDS:
        return False
    if nd.operstate == "unknown" and nd.kind != "bond":
        return False
    return not nd.name.startswith(_INTERNAL_PREFIXES)


def _roce(node: Node, rails: RailPlan, version: Version, warnings: list[str]) -> list[Setting]:
    roce = [r for r in rails.rails if r.link_layer == "Ethernet"]
    if not roce:
        return []
    if len(roce) != len(rails.rails):
        warnings.append("rails mix InfiniBand and RoCE ports: GID index and traffic class apply to the RoCE ones only")
    active = [r for r in roce if r.active]
    out: list[Setting] = []

    # GID index: the RoCE v2 IPv4-mapped GID, the same index on every active rail.
    per_rail: dict[str, set[int]] = {}
    gid_netdev: dict[str, str | None] = {}
    for r in active:
        nic = node.nic(r.nic)
        assert nic is not None  # the rails are planned from this node's NICs
        port = next(p for p in nic.ports if p.num == r.port)
        good = [g for g in port.gids if g.type == "RoCE v2" and g.is_ipv4_mapped]
        per_rail[r.hca] = {g.index for g in good}
        gid_netdev[r.hca] = good[0].netdev if good else None
    missing = [h for h, s in per_rail.items() if not s]
    common = set.intersection(*per_rail.values()) if per_rail else set()
    auto = "NCCL picks the RoCE v2 IPv4 GID itself (2.21+)" if version >= _GID_AUTO_SINCE else \
        f"NCCL {'.'.join(map(str, version))} then uses GID 0 (RoCE v1): set the index per node by hand"
    if missing:
        warnings.append(f"NCCL_IB_GID_INDEX not set: no RoCE v2 IPv4 GID on {', '.join(missing)} (no IPv4 address on "
                        f"the rail interface?); {auto}")
    elif not common:
        seen = "; ".join(f"{h}: {','.join(map(str, sorted(s)))}" for h, s in per_rail.items())
        warnings.append(f"NCCL_IB_GID_INDEX not set: the RoCE v2 IPv4 GID index differs across rails ({seen}); {auto}")
    elif per_rail:
        index = min(common)
        out.append(Setting("NCCL_IB_GID_INDEX", str(index),
                           f"GID {index} is RoCE v2 with an IPv4 address on every rail"))

    # Traffic class: a DSCP that lands in a PFC-enabled priority on every rail netdev.
    # QoS is per physical port: a RoCE LAG rail (bond0) is judged on its slaves.
    labelled: list[tuple[str, NetDev | None]] = []
    for r in active:
        nd = node.netdev(r.netdev) if r.netdev else None
        slaves = sorted((d for d in node.netdevs if nd is not None and nd.kind == "bond" and d.master == nd.name),
                        key=lambda d: natural_key(d.name))
        labelled += [(d.name, d) for d in slaves] or [(r.netdev or r.hca, nd)]
    if not active:
        return out
    unknown = [label for label, nd in labelled if nd is None or nd.qos is None]
    if unknown:
        warnings.append(f"NCCL_IB_TC not set: no QoS data (mlnx_qos/dcb) for {', '.join(unknown)}; NCCL then sends "
                        "with traffic class 0 (priority 0, usually lossy)")
        return out
    # (netdev name, its QoS) of every rail netdev: all have QoS data here
    qos = [(nd.name, nd.qos) for _, nd in labelled if nd is not None and nd.qos is not None]
    # An unknown trust mode (inbox driver, dcb without apptrust) is read as dscp, as the RoCE lint rules do: a DSCP
    # that maps to the PFC priority is right under dscp trust and harmless under pcp.
    unknown_trust = [name for name, q in qos if q.trust is None]
    trusts = {q.trust or "dscp" for _, q in qos}
    pfc_sets = [frozenset(i for i, on in enumerate(q.pfc_enabled or ()) if on) for _, q in qos]
    pfc_common = frozenset.intersection(*pfc_sets)
    names = ", ".join(name for name, _ in qos)
    if not pfc_common:
        why = "PFC is off on every priority" if not any(pfc_sets) else "no priority has PFC on every rail"
        warnings.append(f"NCCL_IB_TC not set: {why} ({names}); lossless RoCE needs PFC on the RoCE priority, e.g. "
                        "mlnx_qos -i <if> --trust dscp --pfc 0,0,0,1,0,0,0,0")
        return out
    if unknown_trust:
        warnings.append(f"the QoS trust mode of {', '.join(unknown_trust)} is unknown (no mlnx_qos or qos/trust): "
                        "NCCL_IB_TC assumes trust dscp with the default DSCP->priority map; make sure it is "
                        "(mlnx_qos --trust dscp, or dcb apptrust set dev <if> order dscp)")
    if trusts == {"dscp"}:
        candidates: set[int] | None = None
        for _, q in qos:
            mapping = dict(q.dscp2prio) if q.dscp2prio else {d: d >> 3 for d in range(64)}
            ok = {d for d, p in mapping.items() if p in pfc_common}
            candidates = ok if candidates is None else candidates & ok
        if not candidates:
            warnings.append(f"NCCL_IB_TC not set: no DSCP maps to a PFC priority on every rail ({names}); align the "
                            "dscp2prio maps (mlnx_qos --dscp2prio)")
            return out
        dscp = PREFERRED_DSCP if PREFERRED_DSCP in candidates else min(candidates)
        prio = dict(qos[0][1].dscp2prio or ()).get(dscp, dscp >> 3)
        out.append(Setting("NCCL_IB_TC", str(ib_tc_for_dscp(dscp)),
                           f"DSCP {dscp} (TC = DSCP << 2, ECN bits ECT(0)) maps to priority {prio}, which has PFC "
                           f"on ({names})"))
        return out
    if trusts == {"pcp"}:
        vlan_gid = [h for h, name in gid_netdev.items() if name and _kind(node, name) == "vlan"]
        prio = min(pfc_common)
        if per_rail and len(vlan_gid) == len(per_rail):
            out.append(Setting("NCCL_IB_SL", str(prio),
                               f"trust pcp and RoCE over VLANs: the service level becomes the VLAN PCP; priority {prio} "
                               "has PFC on"))
        else:
            warnings.append(f"NCCL_IB_TC not set: {names} trust pcp and the RoCE traffic is untagged, so it lands in "
                            f"priority 0, not PFC priority {prio}; use trust dscp (mlnx_qos --trust dscp) or a VLAN")
        return out
    warnings.append(f"NCCL_IB_TC not set: the rail interfaces disagree on QoS trust ({', '.join(sorted(trusts))}); "
                    "set the same trust (dscp) on every rail")
    return out
