"""Log checks of multi-node NVLink (GB200/GB300 NVL72): NCCL's MNNVL and NVLS lines held against the node and fleet
facts (``log check --root`` / ``--inventory``).

LOG030: NCCL found a multi-node NVLink clique but could not use it ("MNNVL (cliqueSize N) is available but not
working on this system. Check the IMEX channel configuration ..." / "... Check the IMEX configuration ...", NCCL's
mnnvl.cc: the FABRIC memory allocation failed, or its export/import through IMEX did); with a node model, the cause
the node's facts show (no IMEX channel device, IMEX not active, the node not in its IMEX node list, the domain not
UP), else what NCCL's wording names.

LOG031: the NVLink domains of a job: the ranks' "MNNVL busId ... fabric UUID ... cliqueId ..." lines (LOG029's) put
the job's hosts in more than one NVLink domain (MNNVL and NVLS only inside each, the NICs between them); a rank's
domain in the log differs from the one the host's snapshot records; a GPU of a registered multi-node domain that
NCCL found without NVLS multicast ("NVLS multicast support is not available on dev N").

LOG031 also reads NCCL's clique line ("MNNVL 1 cliqueId C cliqueSize S cliqueRank R nvlDomainSize D", mnnvl.cc;
nvlDomainSize in 2.30.7 and 2.32, not in older releases): D > S without "Cross-clique P2P enabled" means ranks of the communicator share the NVLink
fabric (cluster UUID) in another clique, reached over the NICs; with a model, a clique id NCCL used that none of the
host's registered GPUs reports (NCCL_MNNVL_CLIQUE_ID, or a re-registration since the snapshot).

Only the lines the parser reads are used (WARN lines, the MNNVL busId and clique lines, the NVLS line per member).
"""

from __future__ import annotations

import re
from typing import Any

from ncclctl.findings import Severity
from ncclctl.logs.show import busid_text, hostlist
from ncclctl.names import natural_key

#: The log checker (ncclctl.logs.check.Checker, which calls this module): its lines, models, nodes and ``add``.
Checker = Any

#: NCCL's wording (mnnvl.cc, 2.27+): the clique size, and which part NCCL asks to check.
MNNVL_NOT_WORKING = re.compile(r"MNNVL \(cliqueSize (\d+)\) is available but not working on this system\. "
                               r"Check the IMEX (channel )?configuration")


def is_mnnvl_not_working(text: str) -> bool:
    return "is available but not working" in text and MNNVL_NOT_WORKING.search(text) is not None


def _node(ck: Checker, host: str) -> Any:
    return ck.nodes.get(host)


def _imex_cause(node: Any, channel: bool) -> tuple[str, str] | None:
    """(cause, fix) the node's facts give for NCCL's MNNVL failure, or None when they show nothing wrong."""
    imex = node.facts.imex
    if channel:
        if imex is None or not imex.channels:
            return ("the host has no IMEX channel device (/dev/nvidia-caps-imex-channels/channelN; lint rule NVL003)",
                    "create the channel on the host (mknod with the major of nvidia-caps-imex-channels in "
                    "/proc/devices, or the driver's NVreg_CreateImexChannel0=1) and pass it into the job's container")
        return (f"the host has IMEX channel{'s' if len(imex.channels) > 1 else ''} "
                f"{', '.join(f'channel{c}' for c in imex.channels)}: it is the job's container that lacks it",
                "pass the channel into the container: --device /dev/nvidia-caps-imex-channels/channel0 (Docker/"
                "enroot), NVIDIA_IMEX_CHANNELS=0 with the NVIDIA container toolkit, or a ComputeDomain channel claim "
                "on Kubernetes")
    if imex is None or imex.service != "active":
        state = "absent" if imex is None else (imex.service or "unknown")
        return (f"nvidia-imex is not running on the host (service: {state}; lint rule NVL004)",
                "start nvidia-imex (systemctl enable --now nvidia-imex) on every tray of the domain")
    if imex.nodes is not None and not set(imex.nodes) & {*(imex.local_addresses or ()), node.hostname}:
        return ("the host is not in its own IMEX node list (lint rule NVL004)",
                f"list every tray of the domain, this one included, in {imex.nodes_config_path or 'nodes_config.cfg'} "
                "and restart nvidia-imex")
    if imex.domain_state and imex.domain_state.upper() != "UP":
        return (f"the IMEX domain is {imex.domain_state}, not UP (nvidia-imex-ctl -N)",
                "bring every node of the node list up (nvidia-imex-ctl -N shows which peers are not READY)")
    return None


def mnnvl_not_working(ck: Checker) -> None:
    """LOG030: NCCL's "MNNVL ... is available but not working" WARN, per host, with the cause."""
    by_host: dict[str, list[tuple[Any, int, bool]]] = {}
    for p in ck.ls.procs.values():
        for _kind, ev in p.warns:
            m = MNNVL_NOT_WORKING.search(ev.text) if "is available but not working" in ev.text else None
            if m:
                by_host.setdefault(p.host, []).append((ev, int(m.group(1)), bool(m.group(2))))
    faults: dict[tuple[str, str], list[tuple[str, list[tuple[Any, int, bool]]]]] = {}
    for host, items in sorted(by_host.items(), key=lambda kv: natural_key(kv[0])):
        channel = any(c for _e, _n, c in items)
        size = max(n for _e, n, _c in items)
        what = ("NCCL could not allocate FABRIC memory: no IMEX channel" if channel
                else "NCCL could not export/import FABRIC memory through IMEX")
        node = _node(ck, host)
        found = _imex_cause(node, channel) if node is not None and node.facts is not None else None
        if found is not None:
            cause, fix = found
            msg = f"MNNVL (a clique of {size} GPUs) is available but not working: {what}; the host's snapshot: {cause}"
        elif node is not None:
            cause, fix = (("the host's snapshot shows IMEX healthy", "compare the job's environment with the "
                           "snapshot: the container's /dev/nvidia-caps-imex-channels, NVIDIA_IMEX_CHANNELS") if
                          channel else ("the host's snapshot shows IMEX active and UP", "check nvidia-imex-ctl -N on "
                                        "every tray of the job (a peer not READY) and the IMEX log "
                                        "(/var/log/nvidia-imex.log)"))
            msg = f"MNNVL (a clique of {size} GPUs) is available but not working: {what}; {cause}"
        else:
            cause, fix = (("the job's container has no /dev/nvidia-caps-imex-channels/channelN, or the host none",
                           "create channel0 on every tray and pass it into the container (--device "
                           "/dev/nvidia-caps-imex-channels/channel0, NVIDIA_IMEX_CHANNELS=0, a ComputeDomain claim); "
                           "give --root/--inventory to check the host")
                          if channel else
                          ("nvidia-imex is not running, not configured with this tray, or its domain is not UP",
                           "check nvidia-imex-ctl -N on every tray (service active, every node READY, Domain State "
                           "UP, nodes_config.cfg listing exactly the domain's trays); give --root/--inventory to check "
                           "the host"))
            msg = f"MNNVL (a clique of {size} GPUs) is available but not working: {what} ({cause})"
        faults.setdefault((msg, fix), []).append((host, items))
    # one finding per fault: the hosts with the same cause and fix in hostlist form (gb200-r01-t[04-05])
    for (msg, fix), hosts in faults.items():
        ranks = sum(len(items) for _h, items in hosts)
        ck.add("LOG030", f"{hostlist(h for h, _ in hosts)}: {msg}; {ranks} rank(s); NCCL stops (ncclSystemError) "
               "unless NCCL_MNNVL_ENABLE=0", [e for _h, items in hosts for e, _n, _c in items[:3 if len(hosts) == 1 else 1]],
               hosts=[h for h, _ in hosts], fix=fix + "; NCCL_MNNVL_ENABLE=0 only hides it (the job then runs over "
               "the NICs)")


def _gpu_by_bus(node: Any, bus: str) -> Any:
    want = busid_text(bus)
    for g in node.gpus:
        if g.bdf.lower() == want:
            return g
    return None


def nvlink_domains(ck: Checker) -> None:
    """LOG031: the job's NVLink domains from its MNNVL lines, held against each other and the hosts' snapshots;
    NVLS multicast missing on a GPU of a registered multi-node domain."""
    from ncclctl.model import FABRIC_STATE_COMPLETED

    domains: dict[tuple[str, int], dict[str, Any]] = {}
    host_domain: dict[str, tuple[str, int]] = {}
    for p in ck.ls.procs.values():
        node = _node(ck, p.host)
        for bus, uuid, clique, state, _mask, ev in p.mnnvl:
            if state != FABRIC_STATE_COMPLETED or uuid == "00000000-0000-0000-0000-000000000000":
                continue  # LOG029
            d = domains.setdefault((uuid, clique), {"hosts": set(), "ev": ev})
            d["hosts"].add(p.host)
            host_domain.setdefault(p.host, (uuid, clique))
            g = _gpu_by_bus(node, bus) if node is not None else None
            if g is not None and g.fabric_cluster_uuid and g.fabric_clique_id is not None and (
                    (g.fabric_cluster_uuid.lower(), g.fabric_clique_id) != (uuid.lower(), clique)):
                ck.add("LOG031", f"{p.host} GPU {busid_text(bus)}: the log puts it in cluster {uuid} clique {clique}, "
                                 f"the host's snapshot in cluster {g.fabric_cluster_uuid} clique {g.fabric_clique_id}: "
                                 f"the tray was re-registered between the two, or the snapshot is another host's",
                       [ev], hosts=[p.host], severity=Severity.WARNING,
                       fix="take a fresh snapshot (ncclctl snapshot) or fix the inventory's path; a tray that moved "
                           "to another partition needs its IMEX node list, Slurm block and clique label updated")
    if len(domains) > 1:
        from ncclctl.logs.show import hostlist

        parts = sorted(domains.items(), key=lambda kv: sorted(kv[1]["hosts"]))
        ck.add("LOG031", f"the job's {len(host_domain)} hosts are in {len(domains)} NVLink domains: "
                         + "; ".join(f"{hostlist(d['hosts'])} in cluster {u} clique {c}" for (u, c), d in parts)
                         + ": MNNVL and NVLS work only inside a domain, NCCL goes over the NICs between them",
               [d["ev"] for _k, d in parts[:4]], hosts=host_domain, severity=Severity.WARNING,
               fix="place the job inside one NVLink domain (Slurm topology/block with one block per domain: "
                   "ncclctl fleet blocks; Kubernetes: affinity on nvidia.com/gpu.clique); a tray left in another "
                   "clique after a repair needs re-registration")
    for m in ck.ls.members():
        if m.nvls is not False:
            continue
        host = m.proc.host
        node = _node(ck, host)
        registered = host in host_domain
        if not registered and node is not None:
            registered = any(g.fabric_state == FABRIC_STATE_COMPLETED and g.fabric_clique_id is not None
                             and g.fabric_cluster_uuid and g.fabric_cluster_uuid != "00000000-0000-0000-0000-000000000000"
                             for g in node.gpus)
        if not registered:
            continue
        gpu = f"GPU {busid_text(m.busid)}" if m.busid else f"dev {m.dev}"
        ck.add("LOG031", f"{host} {gpu}: NCCL found no NVLS multicast ('NVLS multicast support is not available') "
                         f"on a GPU registered in a multi-node NVLink domain: no NVLink SHARP for this communicator",
               [m.first], hosts=[host], severity=Severity.WARNING,
               fix="check the NVLink partition's multicast on the switch trays (NMX-M / NVLSM) and the tray's fabric "
                   "registration (nvidia-smi -q -d FABRIC); NVLS needs every rank's GPU in one partition")
    _clique_lines(ck)


def _clique_lines(ck: Checker) -> None:
    """LOG031 from NCCL's "MNNVL 1 cliqueId .. cliqueSize .. cliqueRank .. nvlDomainSize .." lines: ranks of one NVLink
    fabric in other cliques (one finding for the job, its hosts in hostlist form); a clique id unlike the host's
    registered GPUs' (with a model; one finding per host)."""
    from ncclctl.model import FABRIC_STATE_COMPLETED

    split: dict[str, tuple[int, int, int, Any]] = {}
    warned: set[str] = set()
    for p in ck.ls.procs.values():
        node = _node(ck, p.host)
        for mnnvl, clique, size, _rank, domain, ev in p.mnnvl_clique:
            if mnnvl and domain is not None and domain > size and p.cross_clique is None:
                split.setdefault(p.host, (clique, size, domain, ev))
            if node is None or not mnnvl:
                continue
            registered = sorted({g.fabric_clique_id for g in node.gpus
                                 if g.fabric_state == FABRIC_STATE_COMPLETED and g.fabric_clique_id is not None
                                 and g.fabric_cluster_uuid and g.fabric_cluster_uuid.strip("0-")})
            if registered and clique not in registered and p.host not in warned:
                warned.add(p.host)
                ck.add("LOG031", f"{p.host}: NCCL used NVLink clique {clique} (cliqueId 0x{clique:x}), the host's "
                                 f"snapshot registers its GPUs in clique {', '.join(map(str, registered))}: "
                                 f"NCCL_MNNVL_CLIQUE_ID overrides the registration in the job's environment, or the "
                                 f"tray was re-registered since the snapshot",
                       [ev], hosts=[p.host], severity=Severity.WARNING,
                       fix="drop NCCL_MNNVL_CLIQUE_ID from the job unless the override is meant, or take a fresh "
                           "snapshot (ncclctl snapshot) and update the tray's IMEX list, Slurm block and clique label")
    if split:
        from ncclctl.logs.show import hostlist

        clique, size, domain, _ev = next(iter(split.values()))
        ck.add("LOG031", f"the communicator's NVLink domain holds {domain} ranks but NCCL's clique {clique} only "
                         f"{size} (on {hostlist(split)}): {domain - size} rank(s) share the NVLink fabric (cluster "
                         f"UUID) in another clique (partition), and NCCL reaches them over the NICs",
               [ev for _c, _s, _d, ev in list(split.values())[:3]], hosts=sorted(split), severity=Severity.WARNING,
               fix="put the domain's trays into one NVLink partition (NMX-M; a tray back from a repair comes up in the "
                   "default partition 32766); with NCCL 2.30+ NCCL_MNNVL_CROSS_CLIQUE=1 uses NVLink across the "
                   "cliques of one fabric (without NVLS multicast)")
