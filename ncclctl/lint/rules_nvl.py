"""NVLink-domain rules (GB200/GB300 NVL72 and other multi-node NVLink systems): the GPUs' fabric registration and
health, the cliques of one node, IMEX (service, node list, channel devices), and NCCL's MNNVL/NVLS settings against
what the hardware offers.

A node is in a multi-node NVLink domain when NVML's fabric info (v2+) gives one of its GPUs a non-zero cluster UUID;
NCCL's own MNNVL check asks the same (fabric state COMPLETED, status success, non-zero cluster UUID, then groups
ranks by cluster UUID and clique id).
"""

from __future__ import annotations

from typing import Iterable

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.model import (
    FABRIC_HEALTH_SUMMARY_NAMES, FABRIC_STATE_COMPLETED, FABRIC_STATE_NAMES, Gpu,
    ZERO_UUID, decode_fabric_health, fabric_health_problems, nvlink_domain_gpus,
)
from ncclctl.registry import Hit, rule

E = Severity.ERROR
W = Severity.WARNING

#: What each health-mask field means for NCCL when it is TRUE (or, for INCORRECT_CONFIGURATION, set).
HEALTH_MEANING: dict[str, tuple[str, Severity]] = {
    "DEGRADED_BW": ("some of the GPU's NVLinks to the switch trays are down: its NVLink bandwidth to the domain is "
                    "reduced, and every NCCL collective that spans it (MNNVL rings/trees, NVLS) runs at its pace", W),
    "ROUTE_RECOVERY": ("the fabric is re-routing around a failed link or switch: traffic may stall or slow until "
                       "recovery ends", W),
    "ROUTE_UNHEALTHY": ("a route of the fabric is unhealthy: NVLink transfers to some peers can fail (NCCL reports "
                        "unhandled NVLink errors or hangs)", E),
    "ACCESS_TIMEOUT_RECOVERY": ("the GPU is recovering from NVLink access timeouts: transfers were lost and "
                                "retried", W),
    "INCORRECT_CONFIGURATION": ("the fabric manager found the GPU misconfigured (wrong system GUID or chassis "
                                "serial, no partition, too few NVLinks, incompatible firmware, invalid location): "
                                "it is not usable in the domain", E),
    "PARTITION_ASSIGNED": ("the GPU is not assigned to an NVLink partition: it cannot reach the other trays over "
                           "NVLink", E),
    "GFM_STATE": ("the global fabric manager (NVLSM/NMX) is disconnected: the domain cannot be reconfigured or "
                  "recovered until it reconnects", W),
}


def _uuid_known(g: Gpu) -> bool:
    return g.fabric_cluster_uuid is not None and g.fabric_cluster_uuid != ZERO_UUID


def _fabric_text(g: Gpu) -> str:
    state = FABRIC_STATE_NAMES.get(g.fabric_state, str(g.fabric_state)) if g.fabric_state is not None else "n/a"
    parts = [f"GPU{g.index} fabric state {state}", f"status {g.fabric_status if g.fabric_status is not None else 'n/a'}",
             f"cluster {g.fabric_cluster_uuid or 'n/a'}",
             f"clique {g.fabric_clique_id if g.fabric_clique_id is not None else 'n/a'}"]
    if g.fabric_health_mask is not None:
        parts.append(f"health mask 0x{g.fabric_health_mask:x}")
    if g.fabric_health_summary is not None:
        parts.append(f"summary {FABRIC_HEALTH_SUMMARY_NAMES.get(g.fabric_health_summary, g.fabric_health_summary)}")
    return ", ".join(parts) + (f" ({g.fabric_source})" if g.fabric_source and g.fabric_source != "nvml" else "")


def _mnnvl_off(ctx: Ctx) -> bool:
    return ctx.nccl.value("NCCL_MNNVL_ENABLE") is not None and ctx.nccl.int("NCCL_MNNVL_ENABLE", 2) == 0


# --------------------------------------------------------------------------------------------------

@rule(
    "NVL001", "nvlink-domain-not-registered", E, "GPU not registered with its multi-node NVLink domain",
    what="On a node of a multi-node NVLink domain (a GPU reports a non-zero fabric cluster UUID), a GPU whose NVML "
         "fabric state is not COMPLETED, whose status is not success, or whose cluster UUID is all zero.",
    why="NCCL's MNNVL check requires every rank's GPU to have state COMPLETED, status success and a non-zero cluster "
        "UUID; CUDA itself fails on an unregistered GPU with 'system not yet initialized' (error 802). A tray with "
        "one such GPU cannot run a job across the rack's NVLink.",
    detect="NVML nvmlDeviceGetGpuFabricInfoV per GPU (nvml.json 'fabric': state, status, cluster_uuid, clique_id; "
           "'nvidia-smi -q' Fabric section: State, Status, ClusterUUID).",
    fix="Check the GPU in the NVLink switch trays' management (NMX-M / NVLSM partition membership, 'nvidia-smi -q "
        "-d FABRIC'), reset the GPU (nvidia-smi -r) or reboot the tray; if it stays unregistered, the tray's NVLink "
        "cables or the switch tray are suspect.",
)
def domain_registration(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    gpus = nvlink_domain_gpus(ctx.node)
    if not gpus:
        return
    for g in sorted(ctx.node.gpus, key=lambda g: g.index):
        if g.fabric_state is None:
            continue
        why = []
        if g.fabric_state != FABRIC_STATE_COMPLETED:
            why.append(f"state {FABRIC_STATE_NAMES.get(g.fabric_state, g.fabric_state)}")
        if g.fabric_status not in (None, 0):
            why.append(f"status {g.fabric_status} (not success)")
        if not _uuid_known(g):
            why.append("cluster UUID all zero")
        if not why:
            continue
        yield Hit(f"GPU{g.index}",
                  f"GPU{g.index} ({g.bdf}) is not registered with the NVLink domain: {', '.join(why)}; NCCL cannot "
                  f"use MNNVL with it and CUDA fails on it until registration completes",
                  fix=f"nvidia-smi -q -i {g.index} -d FABRIC; check the GPU's partition in NMX-M/NVLSM; nvidia-smi -r "
                      f"-i {g.index} or reboot the tray",
                  evidence=(_fabric_text(g), f"other GPUs: {', '.join(sorted({x.fabric_cluster_uuid or '' for x in gpus}))}"))


@rule(
    "NVL002", "nvlink-fabric-health", W, "GPU fabric health mask reports a problem",
    what="A GPU whose NVML fabric health mask has a field set: DEGRADED_BW, ROUTE_RECOVERY, ROUTE_UNHEALTHY or "
         "ACCESS_TIMEOUT_RECOVERY TRUE, INCORRECT_CONFIGURATION naming a misconfiguration, PARTITION_ASSIGNED FALSE "
         "or GFM_STATE DISCONNECTED; or a health summary "
         "UNHEALTHY or LIMITED_CAPACITY. Each field is decoded as nvml.h defines it (2-bit fields: 0 NOT_SUPPORTED, "
         "1 TRUE, 2 FALSE), so 0xaa, every field FALSE, is fully healthy.",
    why="A degraded GPU slows every collective it is part of to its own NVLink bandwidth; an unhealthy route or "
        "a misconfigured GPU makes transfers to some peers fail, which NCCL reports as NVLink errors or hangs. "
        "Reading the mask as a flag word (0xaa != 0) calls healthy GPUs broken.",
    detect="NVML nvmlDeviceGetGpuFabricInfoV healthMask (shifts 0, 2, 4, 6, width 2; INCORRECT_CONFIGURATION shift 8 "
           "width 4; PARTITION_ASSIGNED shift 12 and GFM_STATE shift 14 on newer drivers) and healthSummary (v3); "
           "nvml.json 'fabric' health_mask/health_summary.",
    fix="nvidia-smi -q -d FABRIC on the tray, 'nvidia-smi nvlink -s' for the down links; drain the tray, reseat or "
        "replace the NVLink cartridge/cable or the GPU; for INCORRECT_CONFIGURATION fix the tray's identity or "
        "partition in NMX-M.",
)
def fabric_health(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for g in sorted(ctx.node.gpus, key=lambda g: g.index):
        if g.fabric_health_mask is None and g.fabric_health_summary is None:
            continue
        problems = fabric_health_problems(g.fabric_health_mask) if g.fabric_health_mask is not None else ()
        summary = g.fabric_health_summary
        if not problems and summary not in (2, 3):
            continue
        decoded = ", ".join(f"{n}={t}" for n, _, t in decode_fabric_health(g.fabric_health_mask)) \
            if g.fabric_health_mask is not None else "no mask"
        severity = W
        meanings = []
        for name, text in problems:
            meaning, sev = HEALTH_MEANING[name]
            meanings.append(f"{name} {text}: {meaning}")
            if sev is E:
                severity = E
        if summary == 2:
            severity = E
        if not meanings:
            meanings.append(f"summary {FABRIC_HEALTH_SUMMARY_NAMES.get(summary or 0)}")
        yield Hit(f"GPU{g.index}", f"GPU{g.index} ({g.bdf}) fabric health: " + "; ".join(meanings),
                  severity=severity,
                  fix=f"nvidia-smi -q -i {g.index} -d FABRIC and nvidia-smi nvlink -s -i {g.index}; drain the tray and "
                      f"reseat/replace the NVLink cable cartridge or the GPU module",
                  evidence=(f"GPU{g.index} health mask 0x{g.fabric_health_mask or 0:x}: {decoded}",
                            f"health summary {FABRIC_HEALTH_SUMMARY_NAMES.get(summary, summary) if summary is not None else 'n/a'}"))


@rule(
    "NVL003", "imex-channel-missing", E, "No IMEX channel device on a multi-node NVLink node",
    what="A node of a multi-node NVLink domain with no /dev/nvidia-caps-imex-channels/channelN (the folder absent or "
         "empty), while NCCL's MNNVL is not turned off.",
    why="MNNVL shares GPU memory across trays through CUDA fabric handles, which the driver grants only to a process "
        "that can open an IMEX channel. Without the device NCCL finds MNNVL 'available but not working' and falls "
        "back to the NICs (or fails, with NCCL_MNNVL_ENABLE=1); the same holds inside a container that was not "
        "given the channel.",
    detect="The folder /dev/nvidia-caps-imex-channels and its channelN entries; the nvidia-caps-imex-channels major "
           "in /proc/devices.",
    fix="Create channel 0: mknod /dev/nvidia-caps-imex-channels/channel0 c <major> 0 (the major from "
        "'grep nvidia-caps-imex-channels /proc/devices'), or load nvidia with NVreg_CreateImexChannel0=1; pass the "
        "device into containers (the NVIDIA container toolkit's IMEX channel option, or a Kubernetes ComputeDomain).",
)
def imex_channel(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    imex = node.facts.imex
    if not nvlink_domain_gpus(node) or imex is None or _mnnvl_off(ctx):
        return
    if imex.channels:
        return
    major = imex.channels_major
    where = "the folder /dev/nvidia-caps-imex-channels is absent" if imex.channels is None \
        else "/dev/nvidia-caps-imex-channels has no channelN device"
    evidence = [where,
                f"/proc/devices: nvidia-caps-imex-channels {major if major is not None else 'not registered'}",
                ctx.nccl.text("NCCL_MNNVL_ENABLE")]
    fix = (f"mkdir -p /dev/nvidia-caps-imex-channels && mknod /dev/nvidia-caps-imex-channels/channel0 c {major} 0"
           if major is not None else
           "load the NVIDIA driver with NVreg_CreateImexChannel0=1 (or a driver that registers "
           "nvidia-caps-imex-channels), then create /dev/nvidia-caps-imex-channels/channel0")
    yield Hit("nvidia-caps-imex-channels",
              f"no IMEX channel device: {where}; CUDA cannot import memory from the other trays, so NCCL's MNNVL "
              f"does not work here",
              fix=fix + "; give containers the device too", evidence=tuple(evidence))


@rule(
    "NVL004", "imex-not-ready", E, "IMEX not running, or this node not in its node list",
    what="On a multi-node NVLink node: the nvidia-imex service not active, its node list file missing or without this "
         "node's address, 'nvidia-imex-ctl -N' showing a Domain State other than UP (warning) or peers that are not "
         "READY (warning).",
    why="IMEX exchanges the memory export/import requests between the trays of a domain. A node whose daemon is "
        "down, or that its own node list leaves out, can neither export nor import: MNNVL fails on every job that "
        "includes it. A domain that is not UP, or a peer that is not READY, fails the jobs that span those nodes.",
    detect="'systemctl is-active nvidia-imex'; IMEX_NODE_CONFIG_FILE in /etc/nvidia-imex/config.cfg (default "
           "/etc/nvidia-imex/nodes_config.cfg); the node's LOCAL IPv4 addresses from /proc/net/fib_trie and its host "
           "name; 'nvidia-imex-ctl -N'.",
    fix="Write every tray of the domain (the same list on each, by the address IMEX uses) into nodes_config.cfg, "
        "then systemctl enable --now nvidia-imex (restart it after editing the list); read journalctl -u "
        "nvidia-imex for why a peer is not READY.",
)
def imex_ready(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    imex = node.facts.imex
    if not nvlink_domain_gpus(node) or imex is None:
        return
    svc = f"systemctl is-active nvidia-imex: {imex.service or 'not asked'}"
    if imex.service is not None and imex.service != "active":
        yield Hit("nvidia-imex", f"the nvidia-imex service is {imex.service}: this tray cannot share GPU memory with "
                                 f"the rest of its NVLink domain, so MNNVL fails on every job that includes it",
                  fix="systemctl enable --now nvidia-imex; journalctl -u nvidia-imex for why it stopped",
                  evidence=(svc, f"node list {imex.nodes_config_path}: "
                                 f"{len(imex.nodes) if imex.nodes is not None else 'missing'} node(s)"))
        return
    if imex.nodes is None:
        yield Hit(imex.nodes_config_path, f"the IMEX node list {imex.nodes_config_path} is missing: the daemon has no "
                                          f"peers to exchange memory with",
                  fix=f"write every tray of the domain (one address per line) to {imex.nodes_config_path}, then "
                      f"systemctl restart nvidia-imex", evidence=(svc,))
        return
    own = set(imex.local_addresses or ()) | {node.hostname}
    if imex.local_addresses is not None and not own & set(imex.nodes):
        yield Hit(imex.nodes_config_path,
                  f"this node ({', '.join(imex.local_addresses) or node.hostname}) is not in its own IMEX node list "
                  f"{imex.nodes_config_path} ({len(imex.nodes)} entries): IMEX does not treat it as a domain member",
                  fix=f"add this tray's address to {imex.nodes_config_path} on every tray of the domain, then "
                      f"systemctl restart nvidia-imex",
                  evidence=(f"local addresses: {', '.join(imex.local_addresses) or 'none'}",
                            f"node list: {', '.join(imex.nodes[:6])}{' ...' if len(imex.nodes) > 6 else ''}"))
    if imex.domain_state is not None and imex.domain_state != "UP":
        yield Hit("nvidia-imex", f"IMEX domain state is {imex.domain_state}, not UP", severity=W,
                  fix="nvidia-imex-ctl -N on each tray; journalctl -u nvidia-imex on the trays that are not READY",
                  evidence=(f"nvidia-imex-ctl -N: Domain State: {imex.domain_state}", svc))
    down = [p for p in imex.peers if p.status != "READY"]
    if down:
        yield Hit("nvidia-imex", f"{len(down)} IMEX peer(s) not READY: "
                                 + ", ".join(f"{p.address} {p.status}" for p in down[:6]), severity=W,
                  fix="on each listed tray: systemctl status nvidia-imex; check that its node list is the same as "
                      "this one's and that the IMEX port (50000) is reachable",
                  evidence=tuple(f"Node #{p.index} - {p.address} - {p.status}" for p in down[:8]))


@rule(
    "NVL005", "nvlink-clique-split", E, "GPUs of one node in different NVLink cliques",
    what="A node whose registered GPUs report more than one (cluster UUID, clique id) pair.",
    why="NCCL groups ranks into MNNVL domains by cluster UUID and clique id; a tray whose GPUs disagree (a module "
        "re-registered into another partition after a repair) puts its ranks in different NVLink domains, so the "
        "job's NVLink communicator splits and the rest goes over the NICs (or the job fails with "
        "NCCL_MNNVL_ENABLE=1).",
    detect="NVML fabric info cluster_uuid and clique_id of every GPU whose state is COMPLETED.",
    fix="Put the tray's GPUs back into one partition (NMX-M / NVLSM partition membership), then reset the GPUs or "
        "reboot the tray.",
)
def clique_split(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    groups: dict[tuple[str, int], list[Gpu]] = {}
    for g in nvlink_domain_gpus(ctx.node):
        if g.fabric_state == FABRIC_STATE_COMPLETED and g.fabric_clique_id is not None:
            groups.setdefault((g.fabric_cluster_uuid or "", g.fabric_clique_id), []).append(g)
    if len(groups) < 2:
        return
    parts = [f"cluster {u} clique {c}: " + ", ".join(f"GPU{g.index}" for g in gs)
             for (u, c), gs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    minority = min(groups.values(), key=len)
    yield Hit("GPU" + ",".join(str(g.index) for g in minority) if len(minority) == 1 else ctx.host,
              f"the GPUs of this node are in {len(groups)} NVLink cliques ({'; '.join(parts)}): NCCL splits its "
              f"ranks into separate MNNVL domains",
              fix="move the GPUs into one partition in NMX-M/NVLSM, then nvidia-smi -r or reboot the tray",
              evidence=tuple(parts))


@rule(
    "NVL006", "mnnvl-settings", W, "NCCL MNNVL/NVLS settings against what the NVLink domain offers",
    what="NCCL_MNNVL_ENABLE=0 or NCCL_NVLS_ENABLE=0 on a node of a healthy multi-node NVLink domain (warning: the "
         "fast path is turned off); NCCL_MNNVL_ENABLE=1 on a node with no multi-node NVLink domain (error: NCCL "
         "fails); NCCL_MNNVL_UUID or NCCL_MNNVL_CLIQUE_ID set (warning: they override how NCCL groups ranks).",
    why="With MNNVL off, traffic between the trays of one rack goes over the scale-out NICs at a fraction of NVLink "
        "bandwidth; with NVLS off, allreduce loses the NVLink switches' in-network reduction. Forcing MNNVL where the "
        "fabric is not registered fails communicator creation. The UUID/clique overrides make NCCL group ranks by "
        "the given values instead of the fabric's, so a stale override splits or merges domains wrongly.",
    detect="The NCCL settings as NCCL reads them on the node (environment, ~/.nccl.conf, /etc/nccl.conf) against the "
           "GPUs' NVML fabric info.",
    fix="Unset NCCL_MNNVL_ENABLE and NCCL_NVLS_ENABLE (NCCL enables both when the hardware allows) and the "
        "NCCL_MNNVL_UUID/NCCL_MNNVL_CLIQUE_ID overrides, unless a benchmark needs them.",
)
def mnnvl_settings(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    nccl = ctx.nccl
    gpus = nvlink_domain_gpus(node)
    ready = [g for g in gpus if g.fabric_state == FABRIC_STATE_COMPLETED and g.fabric_status in (None, 0)]
    enable = nccl.value("NCCL_MNNVL_ENABLE")
    if enable is not None:
        val = nccl.int("NCCL_MNNVL_ENABLE", 2)
        if val == 0 and ready:
            yield Hit("NCCL_MNNVL_ENABLE",
                      f"MNNVL is turned off ({nccl.text('NCCL_MNNVL_ENABLE')}) on a node of an NVLink domain: traffic "
                      f"between its trays goes over the NICs instead of NVLink",
                      fix="unset NCCL_MNNVL_ENABLE (NCCL uses MNNVL when the fabric allows it)",
                      evidence=(nccl.text("NCCL_MNNVL_ENABLE"), _fabric_text(ready[0])))
        elif val == 1 and not ready:
            why = "no GPU reports a registered multi-node NVLink fabric" if not gpus else \
                "no GPU's fabric registration is COMPLETED with status success"
            yield Hit("NCCL_MNNVL_ENABLE",
                      f"MNNVL is forced ({nccl.text('NCCL_MNNVL_ENABLE')}) but {why}: NCCL fails to create the "
                      f"communicator", severity=E,
                      fix="unset NCCL_MNNVL_ENABLE (or set it to 2, auto) on nodes outside an NVLink domain",
                      evidence=(nccl.text("NCCL_MNNVL_ENABLE"),
                                *(_fabric_text(g) for g in sorted(node.gpus, key=lambda g: g.index)[:4])))
    if ready and nccl.value("NCCL_NVLS_ENABLE") is not None and nccl.int("NCCL_NVLS_ENABLE", 2) == 0:
        yield Hit("NCCL_NVLS_ENABLE",
                  f"NVLS is turned off ({nccl.text('NCCL_NVLS_ENABLE')}) on a node of an NVLink domain: allreduce "
                  f"does not use the NVLink switches' in-network reduction",
                  fix="unset NCCL_NVLS_ENABLE", evidence=(nccl.text("NCCL_NVLS_ENABLE"), _fabric_text(ready[0])))
    for name, actual in (("NCCL_MNNVL_UUID", sorted({g.fabric_cluster_uuid or "" for g in ready})),
                         ("NCCL_MNNVL_CLIQUE_ID", sorted({str(g.fabric_clique_id) for g in ready}))):
        if nccl.value(name) is None:
            continue
        yield Hit(name, f"{nccl.text(name)} overrides the {'cluster UUID' if name.endswith('UUID') else 'clique id'} "
                        f"NCCL groups MNNVL ranks by (the fabric says {', '.join(actual) or 'nothing'})",
                  fix=f"unset {name} unless the job is meant to split or merge NVLink domains",
                  evidence=(nccl.text(name), *(_fabric_text(g) for g in ready[:2])))
