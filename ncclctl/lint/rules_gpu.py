"""GPU rules: NVLinks, Fabric Manager, MIG, persistence mode, NVML health (host-facts.md 5.3, 5.4, 7.13-7.16)."""

from __future__ import annotations

import fnmatch
from collections import Counter
from typing import Iterable

from ncclctl.errors import UsageError
from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.registry import Hit, Option, rule
from ncclctl.model import Gpu, Node
from ncclctl.model import NVML_INIT_CAUSES, NVML_NOT_A_NODE_FAULT, nvlink_domain_gpus

E = Severity.ERROR
W = Severity.WARNING
I = Severity.INFO  # noqa: E741

#: Full NVLink count per SXM/superchip board, from public datasheets, matched on the NVML device name
#: (fnmatch, case-insensitive). PCIe boards are absent on purpose: they have no NVLinks, or only the links of an
#: optional bridge, which only the site knows (use the rule's expected_nvlinks option for them).
NVLINKS_BY_NAME: tuple[tuple[str, int], ...] = (
    ("*V100-SXM*", 6),        # Tesla V100 SXM2/SXM3: 6 x NVLink 2 (300 GB/s)
    ("*A100-SXM*", 12),       # A100 SXM4: 12 x NVLink 3 (600 GB/s)
    ("*H100 80GB HBM3", 18),  # H100 SXM5 (NVML name): 18 x NVLink 4 (900 GB/s)
    ("*H100 SXM*", 18),
    ("NVIDIA H200", 18),      # H200 SXM: 18 x NVLink 4 (the NVL PCIe variant is named "H200 NVL")
    ("*GH200*", 18),          # GH200 Grace Hopper: 18 x NVLink 4 to NVLink switch trays
    ("NVIDIA B200", 18),      # HGX B200: 18 x NVLink 5 (1.8 TB/s)
    ("*GB200*", 18),
)


def _split_entry(entry: str) -> tuple[str, int] | None:
    pattern, sep, count = entry.rpartition("=")
    if not sep or not pattern.strip() or not count.strip().isdigit():
        return None
    return pattern.strip(), int(count)


class CountMapOption(Option):
    """A list of ``PATTERN=COUNT`` strings; the config loader calls :meth:`problem`, so a malformed entry is an
    invalid-config error naming the file and line, not a crash of the check."""

    def problem(self, value):
        bad = super().problem(value)
        if bad:
            return bad
        for item in value:
            if _split_entry(item) is None:
                return f"{item!r} is not PATTERN=COUNT (e.g. \"NVIDIA H800*=8\")"
        return None


def parse_expected(entries) -> list[tuple[str, int]]:
    out = []
    for e in entries:
        parsed = _split_entry(e)
        if parsed is None:
            raise UsageError(f"rule GPU001 option expected_nvlinks: {e!r} is not PATTERN=COUNT",
                             fix='write entries like "NVIDIA H800*=8" (an fnmatch pattern on the NVML GPU name)')
        out.append(parsed)
    return out


def expected_nvlinks(gpu: Gpu, site: list[tuple[str, int]]) -> tuple[int, str] | None:
    """(count, where the number comes from) for this GPU model, site entries first; None when unknown."""
    name = gpu.name.lower()
    for pattern, count in site:
        if fnmatch.fnmatchcase(name, pattern.lower()):
            return count, f"option expected_nvlinks {pattern}={count}"
    for pattern, count in NVLINKS_BY_NAME:
        if fnmatch.fnmatchcase(name, pattern.lower()):
            return count, f"datasheet value for {gpu.name}"
    return None


def _nvlink_in_use(node: Node, gpu: Gpu) -> bool:
    """Whether this GPU is meant to talk over NVLink: other GPUs to talk to, or a GPU fabric it belongs to
    (a single GH200 in an NVL32/NVL72 rack has fabric state; a standalone one has none and no active links)."""
    return len(node.gpus) > 1 or (gpu.fabric_state not in (None, 0)) or any(link.active for link in gpu.nvlinks)


def _remote(node: Node, link) -> str:
    far = link.remote_type
    if link.remote_bdf:
        far += f" {link.remote_bdf}"
        for g in node.gpus:
            if g.bdf == link.remote_bdf:
                far = f"GPU{g.index} {link.remote_bdf}"
    return far


@rule(
    "GPU001", "nvlinks-missing", E, "NVLinks inactive or fewer than the GPU model has",
    what="A GPU with fewer active NVLinks than its model provides (H100/H200/B200 SXM 18, A100 SXM 12, V100 SXM 6, "
         "from the datasheets; a site can add models with the expected_nvlinks option), any reported NVLink in a "
         "non-active state on such a GPU, or (for models not in the table) fewer active links than the other GPUs "
         "of the same model on this node. PCIe boards without an NVLink bridge are not judged.",
    why="NCCL counts only active, P2P-capable links (src/graph/xml.cc) and sizes its NVLink bandwidth by the count "
        "(topo.h ncclTopoNVLinkBw x links): a GPU with 16 of 18 links makes every ring and tree through it 1/9 "
        "slower, and NVSwitch (NVLS) collectives run at the pace of the weakest GPU. A GPU with no NVLinks at all "
        "falls back to PCIe P2P or host memory.",
    detect="NVML per link: nvmlDeviceGetNvLinkState (nvml.json 'nvlinks'[].state, 1 = active), remote device type "
           "and bus id; the GPU name from nvmlDeviceGetName. Same data as 'nvidia-smi nvlink -s' "
           "('<inactive>' links) and the NV# cells of 'nvidia-smi topo -m'.",
    fix="Check 'nvidia-smi nvlink -s -i <gpu>' and 'nvidia-smi nvlink -e' (error counters); reset the GPU "
        "('nvidia-smi -r -i <gpu>', then restart nvidia-fabricmanager on NVSwitch systems) or reboot; reseat the GPU "
        "tray / baseboard or RMA when links stay down.",
    options=(CountMapOption("expected_nvlinks", list, [], 'site NVLink counts per GPU model: "PATTERN=COUNT" entries '
                                                   '(fnmatch on the NVML name, e.g. "NVIDIA H800*=8"), checked '
                                                   'before the built-in datasheet table'),),
)
def nvlinks_missing(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    site = parse_expected(opts["expected_nvlinks"])
    gpus = sorted((g for g in node.gpus if g.source == "nvml"), key=lambda g: g.index)
    peers: dict[str, Counter] = {}
    for g in gpus:
        peers.setdefault(g.name, Counter())[len(g.active_nvlinks)] += 1
    for g in gpus:
        if not _nvlink_in_use(node, g):
            continue
        active = len(g.active_nvlinks)
        down = [link for link in g.nvlinks if not link.active]
        exp = expected_nvlinks(g, site)
        if exp is not None:
            want, source = exp
            if active >= want:
                continue
        else:
            best = max(peers[g.name])
            if best == 0 or active >= best:
                continue  # no NVLink on this model here, or as many as its peers
            want, source = best, f"the other {g.name} GPUs on this node have {best}"
        inactive = ", ".join(str(link.link) for link in down) or "none reported"
        evidence = [f"active NVLinks: {active}; expected {want} ({source})"]
        evidence += [f"link {link.link}: inactive (far end {_remote(node, link)})" for link in down[:18]]
        if not g.nvlinks:
            evidence.append("NVML reports no NVLink at all (NotSupported on link 0)")
        yield Hit(f"GPU{g.index}",
                  f"GPU{g.index} ({g.bdf}, {g.name}) has {active} of {want} NVLinks active (inactive links: "
                  f"{inactive})",
                  fix=f"nvidia-smi nvlink -s -i {g.index}; nvidia-smi nvlink -e -i {g.index}; reset the GPU "
                      f"(nvidia-smi -r -i {g.index}) and restart nvidia-fabricmanager, or reboot; reseat/RMA the "
                      f"GPU tray if the links stay down",
                  evidence=tuple(evidence))


#: Gpu.fabric_state (None when NVML did not say) -> its name
FABRIC_STATES: dict[int | None, str] = {0: "not supported", 1: "not started", 2: "in progress", 3: "completed"}


def nvswitch_system(node: Node) -> bool:
    return bool(node.nvswitches) or any(link.remote_type == "nvswitch" for g in node.gpus for link in g.nvlinks)


def _fabric_text(g: Gpu) -> str:
    state = FABRIC_STATES.get(g.fabric_state, str(g.fabric_state)) if g.fabric_state is not None else "n/a"
    status = "" if g.fabric_status is None else f", status {g.fabric_status}"
    return f"GPU{g.index} fabric state {state}{status}"


@rule(
    "GPU002", "fabric-manager-not-ready", E, "NVSwitch fabric not ready: Fabric Manager absent or GPU not registered",
    what="On an NVSwitch system: the nvidia-fabricmanager service is not active on a bare-metal host whose "
         "NVSwitches are PCI devices (HGX/DGX A100 and H100), or a GPU whose NVML fabric state is not "
         "'completed' with status success (Hopper and newer). Hosts where the NVSwitches are not PCI-visible (VMs, "
         "Grace Hopper/Blackwell NVLink switch trays) are judged by the GPU fabric state only, since the fabric is "
         "managed outside the node there; GPUs of a multi-node NVLink domain (a non-zero fabric cluster UUID: "
         "GB200/GB300 NVL) by NVL001.",
    why="Until Fabric Manager has configured the NVSwitches and registered the GPU, CUDA initialisation fails with "
        "error 802 'system not yet initialized' (cudaErrorSystemNotReady), so NCCL cannot even create a "
        "communicator (pytorch/pytorch#35710; Fabric Manager user guide).",
    detect="NVSwitches: PCI class 0x068000 devices of vendor 0x10de, or NVLinks whose remote device type is SWITCH "
           "(NVML). Fabric Manager: 'systemctl is-active nvidia-fabricmanager'. GPU fabric: NVML "
           "nvmlDeviceGetGpuFabricInfo state (1 not started, 2 in progress, 3 completed) and status (0 success).",
    fix="Install nvidia-fabricmanager of exactly the driver's version, 'systemctl enable --now "
        "nvidia-fabricmanager', and read /var/log/fabricmanager.log; on NVLink-switch-tray systems ask the fabric "
        "administrator (NMX) / hypervisor host to bring the GPU into its partition.",
)
def fabric_manager(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    if not nvswitch_system(node):
        return
    gpus = sorted(node.gpus, key=lambda g: g.index)
    not_ready = [g for g in gpus if g.fabric_state in (1, 2) or (g.fabric_state == 3 and g.fabric_status not in (None, 0))]
    fm = node.facts.fabric_manager
    driver = node.facts.driver_version or "<driver version>"
    if node.nvswitches and ctx.is_bare_metal and fm is not None and fm != "active":
        evidence = [f"systemctl is-active nvidia-fabricmanager: {fm}",
                    f"NVSwitches: {', '.join(s.bdf for s in node.nvswitches)}"]
        evidence += [_fabric_text(g) for g in gpus if g.fabric_state is not None]
        yield Hit("nvidia-fabricmanager",
                  f"nvidia-fabricmanager is {fm} on a host with {len(node.nvswitches)} NVSwitches"
                  + (f"; {len(not_ready)} GPU(s) not registered with the fabric" if not_ready else ""),
                  fix=f"install nvidia-fabricmanager {driver} (same version as the driver), then: systemctl enable "
                      f"--now nvidia-fabricmanager; check /var/log/fabricmanager.log",
                  evidence=tuple(evidence))
        return  # the GPUs' fabric state follows from the service
    if nvlink_domain_gpus(node):
        return  # a multi-node NVLink domain: NVL001 judges the GPUs' registration with it
    for g in not_ready:
        if node.nvswitches and ctx.is_bare_metal:
            fix = (f"check /var/log/fabricmanager.log for GPU {g.bdf}; if it stays "
                   f"{FABRIC_STATES.get(g.fabric_state, '?')}: nvidia-smi -r -i {g.index}, then systemctl restart "
                   f"nvidia-fabricmanager")
        else:
            fix = ("the NVLink fabric is managed outside this node (NVLink switch trays / NMX, or the hypervisor "
                   "host's Fabric Manager): have its administrator add this GPU to the partition; on HGX B200-class "
                   "hosts start nvidia-fabricmanager with ib_umad loaded")
        yield Hit(f"GPU{g.index}",
                  f"GPU{g.index} ({g.bdf}) is not registered with the NVSwitch fabric: "
                  f"{_fabric_text(g).split(' ', 1)[1]}; CUDA will fail with error 802 until it completes",
                  fix=fix, evidence=(_fabric_text(g), f"systemctl is-active nvidia-fabricmanager: {fm or 'not queried'}"))


@rule(
    "GPU003", "mig-enabled", E, "MIG enabled (or pending) on a GPU",
    what="A GPU with Multi-Instance GPU mode enabled, or set to become enabled at the next GPU reset (pending, "
         "graded warning). MIG is for partitioning a GPU between small jobs, not for NCCL training across GPUs.",
    why="MIG instances have no CUDA peer-to-peer over PCIe or NVLink, so NCCL cannot use NVLink, NVLS or "
        "GPUDirect P2P between them and falls back to host memory (NVIDIA/nccl#1716); a GPU in MIG mode is also "
        "not enumerated as a whole CUDA device, so a job expecting 8 GPUs sees MIG slices instead.",
    detect="NVML nvmlDeviceGetMigMode: [current, pending] (nvml.json 'mig_mode'; 'nvidia-smi -q' MIG Mode "
           "Current/Pending).",
    fix="nvidia-smi -i <gpu> -mig 0, then reset the GPU (nvidia-smi -r -i <gpu>) or reboot; leave the rule "
        "disabled for hosts that are partitioned on purpose.",
)
def mig_enabled(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for g in sorted(ctx.node.gpus, key=lambda g: g.index):
        evidence = (f"nvml mig_mode current={int(bool(g.mig_current))} pending={int(bool(g.mig_pending))}",)
        if g.mig_current:
            tail = "" if g.mig_pending else " (it turns off at the next GPU reset)"
            yield Hit(f"GPU{g.index}", f"GPU{g.index} ({g.bdf}) has MIG enabled{tail}",
                      fix=(f"nvidia-smi -i {g.index} -mig 0 && nvidia-smi -r -i {g.index}" if g.mig_pending
                           else f"reset the GPU to apply the pending MIG disable: nvidia-smi -r -i {g.index}"),
                      evidence=evidence)
        elif g.mig_pending:
            yield Hit(f"GPU{g.index}", f"GPU{g.index} ({g.bdf}) will enable MIG at its next reset (pending)",
                      fix=f"nvidia-smi -i {g.index} -mig 0 (cancels the pending change)",
                      evidence=evidence, severity=W)


@rule(
    "GPU004", "persistence-mode-off", W, "GPU persistence mode is off",
    what="A GPU whose driver persistence mode is disabled (nvidia-smi -q: Persistence Mode: Disabled).",
    why="Without persistence (or nvidia-persistenced) the driver tears the GPU state down when the last client "
        "exits; every job start re-initialises it, adding seconds to NCCL init and, on NVSwitch systems, racing "
        "Fabric Manager's registration of the GPU.",
    detect="NVML nvmlDeviceGetPersistenceMode per GPU (nvml.json 'persistence_mode': 0).",
    fix="Enable the nvidia-persistenced service (systemctl enable --now nvidia-persistenced), or run "
        "nvidia-smi -pm 1 at boot.",
)
def persistence_off(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for gpu in ctx.node.gpus:
        if gpu.persistence_mode is False:
            yield Hit(f"GPU{gpu.index}", f"GPU{gpu.index} ({gpu.bdf}) has persistence mode off",
                      evidence=("nvml persistence_mode=0",))


# --------------------------------------------------------------------------------------------------
# GPU005 NVML unusable, or a GPU lost

@rule(
    "GPU005", "nvml-unusable", E, "NVML cannot be used, or a GPU is lost",
    what="A node with NVIDIA GPUs on its PCI bus where NVML fails to initialise (driver/library version mismatch, "
         "kernel module not loaded, library missing, no permission), or a GPU that NVML reports as lost.",
    why="NCCL and CUDA go through the same driver: a version mismatch after an upgrade without reboot, or an "
        "unloaded module, fails every job on the node at CUDA init ('CUDA driver version is insufficient', "
        "'NVML: Driver/library version mismatch'); a GPU that fell off the bus (Xid 79) hangs or fails the "
        "communicators that include it. The other GPU rules cannot judge GPUs NVML does not answer for.",
    detect="The NVML initialisation result and per-GPU handle errors the probe records (nvml.json 'init', device "
           "entries with 'error': 'GpuIsLost'), on a node whose PCI bus has NVIDIA display/3D functions. A probe "
           "run without pynvml installed, or a capture without nvml.json, is reported as info (not a node fault).",
    fix="By cause: reboot after a driver upgrade; modprobe nvidia; install the driver's user-space; fix device "
        "permissions. A lost GPU: read dmesg for Xid 79/48, drain the node, reset the GPU (nvidia-smi -r) or "
        "reboot, and replace it if it falls off again.",
)
def nvml_unusable(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    node = ctx.node
    pci_gpus = [g for g in node.gpus if g.source == "pci"]
    for u in node.unavailable:
        if u.source != "nvml":
            continue
        if u.detail is None and pci_gpus:  # initialisation failed: GPUs seen on PCI only
            where = ", ".join(g.bdf for g in pci_gpus[:4]) + (" ..." if len(pci_gpus) > 4 else "")
            ev = (f"nvmlInit: {u.reason}", f"{len(pci_gpus)} NVIDIA GPU(s) on PCI: {where}")
            if u.reason in NVML_NOT_A_NODE_FAULT:
                why = ("pynvml (nvidia-ml-py) is not installed next to ncclctl" if u.reason == "ModuleNotFound"
                       else "the capture has no NVML answers (nvml.json)")
                yield Hit("NVML", f"{why}: GPU checks that need NVML (NVLinks, MIG, persistence, Fabric Manager "
                                  f"registration) did not run", severity=I, evidence=ev,
                          fix="install ncclctl with its dependencies (pip install ncclctl pulls nvidia-ml-py), "
                              "or capture the node with 'ncclctl snapshot'")
                continue
            meaning, fix = NVML_INIT_CAUSES.get(u.reason, (f"NVML failed to initialise ({u.reason})",
                                                     "run nvidia-smi on the node and fix what it reports"))
            yield Hit("NVML", f"NVML does not work on this node: {meaning}", fix=fix, evidence=ev)
        elif u.reason == "GpuIsLost" and u.detail and u.detail.startswith("GPU ") and u.detail[4:].isdigit():
            yield Hit(u.detail.replace(" ", ""), f"{u.detail} is lost: NVML cannot reach it (fell off the bus)",
                      evidence=(f"NVML: {u.detail}: GpuIsLost",),
                      fix="read dmesg for Xid 79/48; drain the node, reset the GPU (nvidia-smi -r) or reboot, and "
                          "replace it if it falls off again")
