"""InfiniBand rules: port state, rate, width, subnet manager, firmware drift, IB MTU (host-facts.md 7.4, 7.6, 7.11).

Which ports matter: NCCL's IB plugin (src/transport/net_ib/init.cc) opens every RDMA device, skips ports whose
state is not ACTIVE and keeps those ``NCCL_IB_HCA`` selects. A port is *compute* when it is a rail of the node's
rail plan (:mod:`ncclctl.plan.rails`: each GPU's closest port) or ``NCCL_IB_HCA`` names it; a broken compute port
silently removes a rail, so it is graded error, a broken storage/in-band port only warning (option
``non_compute``).

NCCL's settings and the ports it uses come from the lint context (``ctx.nccl``, ``ctx.ports``, ``ctx.nccl_ports``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.registry import Hit, Option, rule
from ncclctl.model import IbPort, Nic
from ncclctl.names import natural_key

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

# --------------------------------------------------------------------------------------------------
# Which ports carry NCCL traffic (the NCCL settings and port sets themselves are views of the lint context:
# ``ctx.nccl``, ``ctx.ports``, ``ctx.nccl_ports``).


def compute_ports(ctx: Ctx) -> set[tuple[str, int]]:
    """Ports that carry NCCL traffic by design: the rail plan's ports, plus what ``NCCL_IB_HCA`` names.
    Without a rail plan (no GPU) and without ``NCCL_IB_HCA`` every port counts."""
    c = ctx.extra.setdefault("rules_ib", {})
    if "compute" not in c:
        plan = ctx.rails
        rails = {(r.nic, r.port) for r in plan.rails} if plan is not None else set()
        named = ctx.nccl_ports if ctx.nccl.value("NCCL_IB_HCA") else frozenset()
        if not rails and not named:
            c["compute"] = {(n.name, p.num) for n, p in ctx.ports}
        else:
            c["compute"] = rails | named
    return c["compute"]


def _grade(nic: Nic, port: IbPort, non_compute: str, compute: set[tuple[str, int]]) -> Severity | None:
    if (nic.name, port.num) in compute:
        return E
    return {"warning": W, "info": I, "ignore": None}[non_compute]


def _where(nic: Nic, port: IbPort) -> str:
    return f"{nic.name} port {port.num}"


def _role(compute: set[tuple[str, int]], nic: Nic, port: IbPort) -> str:
    return "a compute (rail) port" if (nic.name, port.num) in compute else "not a compute port"


_NON_COMPUTE = Option("non_compute", str, "warning",
                      "severity for ports that are neither a rail nor named by NCCL_IB_HCA (storage, in-band)",
                      choices=("warning", "info", "ignore"))


# --------------------------------------------------------------------------------------------------
# IB001 port not ACTIVE / LinkUp


def _down_fix(nic: Nic, port: IbPort) -> str:
    dev, n = nic.name, port.num
    if port.link_layer == "Ethernet":
        nd = port.netdev or "<netdev>"
        if port.phys_state == "Disabled":
            return (f"bring the interface up: ip link set dev {nd} up (and persist it in netplan/NetworkManager); "
                    f"then check ibdev2netdev shows {dev} port {n} ==> {nd} (Up)")
        return (f"no Ethernet link on {nd}: check the cable/transceiver (mlxlink -d {dev} -m) and the switch port; "
                f"then ibv_devinfo -d {dev} shows PORT_ACTIVE")
    if port.phys_state == "Disabled":
        return (f"the port is administratively disabled: enable it (local port: ibportstate -C {dev} -D 0 {n} "
                f"enable; or re-enable the switch port in UFM/the switch CLI), then ibstat {dev} {n} shows "
                f"State: Active, Physical state: LinkUp")
    if port.phys_state == "Polling":
        return (f"no link partner: reseat or replace the cable/transceiver (mlxlink -d {dev} -m shows the module) "
                f"and check the switch port is enabled; then ibstat {dev} {n} shows Physical state: LinkUp")
    if port.phys_state in ("LinkErrorRecovery", "PortConfigurationTraining"):
        return (f"the link keeps retraining: check the cable/transceiver and its error counters "
                f"(mlxlink -d {dev} -c, perfquery), replace the cable if symbol errors grow")
    return f"check the cable and the switch port, then ibstat {dev} {n}"


def _down_reason(port: IbPort) -> str:
    return {
        "Disabled": "administratively disabled, here or on the switch",
        "Polling": "no link partner: cable, transceiver or switch port",
        "Sleep": "the port is asleep",
        "LinkErrorRecovery": "the link is recovering from errors",
        "PortConfigurationTraining": "the link is still training",
    }.get(port.phys_state, f"physical state {port.phys_state}")


def _waiting_for_sm(port: IbPort) -> bool:
    return port.link_layer == "InfiniBand" and port.state in ("INIT", "ARMED") and port.phys_state == "LinkUp"


@rule(
    "IB001", "ib-port-not-active", E, "RDMA port not ACTIVE/LinkUp",
    what="An RDMA port (InfiniBand or RoCE) whose logical state is not ACTIVE or whose physical state is not "
         "LinkUp. Ports that are physically up and wait in INIT/ARMED for the subnet manager are IB004's.",
    why="NCCL's IB plugin (src/transport/net_ib/init.cc) skips every port whose state is not IBV_PORT_ACTIVE "
        "without a warning, so a down rail silently shrinks the rail set: its GPU's traffic crosses to another "
        "GPU's NIC (PCIe/NVLink detour, half the bandwidth on that rail), and if every port is down NCCL logs "
        "'NET/IB : No device found.' and falls back to TCP sockets.",
    detect="/sys/class/infiniband/<dev>/ports/<n>/state ('4: ACTIVE') and phys_state ('5: LinkUp'), as "
           "ibstat/ibv_devinfo show them. Compute ports (a rail of the node's rail plan, or named by NCCL_IB_HCA) "
           "are errors; other ports get the severity of option non_compute.",
    fix="Physical state Polling: cable/transceiver/switch port; Disabled: re-enable the port (ibportstate ... "
        "enable, the switch, or ip link set <if> up on RoCE); then ibstat shows State: Active.",
    options=(_NON_COMPUTE,),
)
def port_not_active(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    compute = compute_ports(ctx)
    for nic, port in ctx.ports:
        if port.state == "ACTIVE" and port.phys_state in ("LinkUp", "unknown"):
            continue
        if _waiting_for_sm(port):
            continue  # IB004
        sev = _grade(nic, port, opts["non_compute"], compute)
        if sev is None:
            continue
        if port.state == "ACTIVE":
            msg = f"{_where(nic, port)} is ACTIVE but its physical state is {port.phys_state}"
        else:
            msg = f"{_where(nic, port)} is {port.state}/{port.phys_state} ({_down_reason(port)}); NCCL skips it"
        msg += f" [{_role(compute, nic, port)}, {port.link_layer}]"
        yield Hit(nic.name, msg, fix=_down_fix(nic, port), severity=sev,
                  evidence=(f"state={port.state}", f"phys_state={port.phys_state}", f"link_layer={port.link_layer}"))


# --------------------------------------------------------------------------------------------------
# IB002 rate below expected


def _rate(port: IbPort) -> str:
    return port.rate or (f"{port.rate_gbps:g} Gb/sec" if port.rate_gbps is not None else "unknown")


@rule(
    "IB002", "ib-rate-below-expected", E, "RDMA port rate below the expected rate",
    what="An ACTIVE compute port whose rate is below min_rate_gbps, or (default, min_rate_gbps 0) below the "
         "fastest ACTIVE compute port of the same link layer on this node: the odd slow rail, e.g. "
         "'200 Gb/sec (4X HDR)' or '100 Gb/sec (1X NDR)' among 400 Gb/sec NDR rails.",
    why="NCCL's rings and trees run at the pace of their slowest link: one rail at half rate halves the "
        "inter-node bandwidth of every collective that crosses it, and NCCL does not warn (it reads the port "
        "speed into the topology and plans around it). Typical causes are an HDR cable or transceiver on an "
        "NDR port, a link that trained with fewer lanes, or a switch port speed limit.",
    detect="/sys/class/infiniband/<dev>/ports/<n>/rate (the leading Gb/sec number; ibstat 'Rate:'). Only ACTIVE "
           "ports that are rails or named by NCCL_IB_HCA; RoCE ports compare with RoCE ports only.",
    fix="Check the cable/transceiver type (mlxlink -d <dev> -m), the switch port speed configuration and the "
        "lanes (IB003); replace the cable or fix the switch port until the rate matches the other rails.",
    options=(Option("min_rate_gbps", float, 0.0,
                    "expected port rate in Gb/s (NDR 400, HDR 200); 0: the fastest compute port of the node",
                    min=0.0),),
)
def rate_below_expected(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    compute = compute_ports(ctx)
    ports = [(n, p, rate) for n, p in ctx.ports
             if (n.name, p.num) in compute and p.is_active and (rate := p.rate_gbps) is not None]
    for layer in ("InfiniBand", "Ethernet"):
        group = [(n, p, rate) for n, p, rate in ports if p.link_layer == layer]
        if not group:
            continue
        fastest = max(group, key=lambda e: e[2])
        want = opts["min_rate_gbps"] or fastest[2]
        fnic, fport, _ = fastest
        basis = (f"the expected {want:g} Gb/s (min_rate_gbps)" if opts["min_rate_gbps"]
                 else f"the fastest compute port of this node ({_where(fnic, fport)}: {_rate(fport)})")
        for nic, port, rate in group:
            if rate < want:
                yield Hit(nic.name, f"{_where(nic, port)} runs at {_rate(port)}, below {basis}",
                          evidence=(f"rate={_rate(port)}", f"expected>={want:g} Gb/s",
                                    f"active_width={port.active_width or '?'}",
                                    f"active_speed={port.active_speed_gbps or '?'} Gbps per lane"),
                          fix=f"check {nic.name}'s cable/transceiver (mlxlink -d {nic.name} -m) and the switch "
                              f"port speed; it must train at {want:g} Gb/s like the other rails")


# --------------------------------------------------------------------------------------------------
# IB003 width below 4x

_WIDTH_RE = re.compile(r"\((\d+)X\b")


def port_lanes(port: IbPort) -> int | None:
    """Active lanes: ibv_devinfo ``active_width`` (``4X``), else the sysfs rate string ``(4X NDR)``."""
    if port.active_width and port.active_width[:-1].isdigit():
        return int(port.active_width[:-1])
    m = _WIDTH_RE.search(port.rate or "")
    return int(m.group(1)) if m else None


@rule(
    "IB003", "ib-width-below-4x", E, "InfiniBand link trained with fewer than 4 lanes",
    what="An ACTIVE InfiniBand port whose active width is below min_width lanes (default 4): 1X or 2X where 4X "
         "is the design. Set min_width 2 where NDR200 split ports (2X NDR) are the design. RoCE ports are not "
         "judged: their width encodes the Ethernet SerDes mode (200GbE as 2X NDR is normal).",
    why="Bandwidth is lanes x per-lane speed: a 4X NDR link that trained at 1X carries 100 instead of 400 Gb/s, "
        "and NCCL plans with that speed for the whole job. A lane that fails to train is a cable, transceiver "
        "or port fault that usually gets worse.",
    detect="ibv_devinfo -v 'active_width: 4X (2)' per port, else the lane count in the sysfs rate string "
           "'400 Gb/sec (4X NDR)'. Compute ports are errors; others get option non_compute's severity.",
    fix="Reseat or replace the cable/transceiver (mlxlink -d <dev> -m; per-lane errors with mlxlink -c), check "
        "the switch port's width configuration (split mode); the port must train at 4X.",
    options=(Option("min_width", int, 4, "minimum lanes (4; 2 where NDR200 split ports are the design)", min=1,
                    max=12), _NON_COMPUTE),
)
def width_below(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    compute = compute_ports(ctx)
    for nic, port in ctx.ports:
        if port.link_layer != "InfiniBand" or not port.is_active:
            continue
        lanes = port_lanes(port)
        if lanes is None or lanes >= opts["min_width"]:
            continue
        sev = _grade(nic, port, opts["non_compute"], compute)
        if sev is None:
            continue
        yield Hit(nic.name, f"{_where(nic, port)} trained at {lanes}X, below {opts['min_width']}X "
                            f"({_rate(port)}) [{_role(compute, nic, port)}]",
                  severity=sev,
                  evidence=(f"lanes={lanes}", f"active_width={port.active_width or 'not captured'}",
                            f"rate={_rate(port)}"),
                  fix=f"reseat/replace {nic.name}'s cable or transceiver (mlxlink -d {nic.name} -m; lane errors: "
                      f"mlxlink -d {nic.name} -c) and check the switch port is not in split mode")


# --------------------------------------------------------------------------------------------------
# IB004 no subnet manager


@rule(
    "IB004", "ib-no-subnet-manager", E, "InfiniBand port without a subnet manager",
    what="An InfiniBand port that is physically up but waits in INIT or ARMED for a subnet manager to configure "
         "it, or an ACTIVE InfiniBand port whose SM LID is 0.",
    why="Without an SM the port gets no LID and never turns ACTIVE, so NCCL's IB plugin skips it (the same silent "
        "rail loss as a down port); when no port is usable NCCL logs 'NET/IB : No device found.' and falls back "
        "to sockets. An ACTIVE port with SM LID 0 cannot resolve paths to its peers.",
    detect="/sys/class/infiniband/<dev>/ports/<n>/state '2: INIT' or '3: ARMED' with phys_state '5: LinkUp', or "
           "sm_lid '0x0' on an ACTIVE port (ibstat 'SM lid: 0'); InfiniBand link layer only (RoCE has no SM).",
    fix="Start a subnet manager for the fabric (UFM, or opensm on one host/switch: systemctl enable --now "
        "opensm), check it sees this port (sminfo, ibdiagnet), then the port turns ACTIVE with a non-zero SM lid.",
    options=(_NON_COMPUTE,),
)
def no_subnet_manager(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    compute = compute_ports(ctx)
    for nic, port in ctx.ports:
        if port.link_layer != "InfiniBand":
            continue
        if _waiting_for_sm(port):
            msg = (f"{_where(nic, port)} is physically up but {port.state}: no subnet manager has configured it "
                   f"(LID {port.lid if port.lid is not None else '?'}, SM LID "
                   f"{port.sm_lid if port.sm_lid is not None else '?'}); NCCL skips it")
        elif port.is_active and port.sm_lid == 0:
            msg = f"{_where(nic, port)} is ACTIVE but its SM LID is 0: no subnet manager is known to the port"
        else:
            continue
        sev = _grade(nic, port, opts["non_compute"], compute)
        if sev is None:
            continue
        yield Hit(nic.name, msg + f" [{_role(compute, nic, port)}]", severity=sev,
                  evidence=(f"state={port.state}", f"phys_state={port.phys_state}",
                            f"lid={port.lid if port.lid is not None else '?'}",
                            f"sm_lid={port.sm_lid if port.sm_lid is not None else '?'}"),
                  fix=f"run a subnet manager on the fabric (UFM, or systemctl enable --now opensm on one node), "
                      f"then check: sminfo -C {nic.name} -P {port.num}; ibstat {nic.name} {port.num} shows "
                      f"State: Active and a non-zero SM lid")


# --------------------------------------------------------------------------------------------------
# IB005 firmware differs across HCAs of one type


def _version_key(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else -1 for x in re.split(r"[.\-]", v))


@rule(
    "IB005", "ib-firmware-mismatch", W, "HCA firmware differs across the node's HCAs of one type",
    what="HCAs of the same type and board (hca_type and board_id/PSID, e.g. MT4129 MT_0000000838) that run "
         "different firmware versions on one node. The HCAs off the node's majority version are reported "
         "(on a tie, those older than the newest).",
    why="Firmware carries the link, congestion-control and RDMA behaviour (DCQCN defaults, adaptive routing, "
        "PCIe relaxed ordering, bug fixes): one HCA on another release behaves differently from its peers, and "
        "NCCL runs its rails in lock-step, so that rail sets the pace or fails alone. Drift usually means a "
        "replaced card was never brought to the site baseline.",
    detect="/sys/class/infiniband/<dev>/fw_ver grouped by hca_type and board_id (ibstat 'Firmware version', "
           "ibv_devinfo 'fw_ver'/'board_id'); option group_by 'type' ignores the board id.",
    fix="Bring every HCA to the site baseline with mlxfwmanager -u (or flint/mstflint -d <bdf> -i <image> burn), "
        "then reset the device (mlxfwreset -d <bdf> reset) or reboot.",
    options=(Option("group_by", str, "board", "group HCAs by 'board' (hca_type + board_id) or by 'type' only",
                    choices=("board", "type")),),
)
def firmware_mismatch(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    groups: dict[tuple, list[Nic]] = {}
    for nic in sorted(ctx.node.nics, key=lambda n: natural_key(n.name)):
        if not nic.fw_ver or not nic.hca_type:
            continue
        key = (nic.hca_type, nic.board_id if opts["group_by"] == "board" else None)
        groups.setdefault(key, []).append(nic)
    for (hca_type, board), nics in groups.items():
        counts = Counter(n.fw_ver for n in nics if n.fw_ver)  # (all of them: NICs without fw_ver are left out)
        if len(counts) < 2:
            continue
        # The baseline: the most common version; on a tie the newest.
        baseline = max(counts, key=lambda v: (counts[v], _version_key(v)))
        kind = f"{hca_type} ({board})" if board else hca_type
        spread = ", ".join(f"{v} x{counts[v]}" for v in sorted(counts, key=_version_key))
        for nic in nics:
            if nic.fw_ver == baseline:
                continue
            others = [n.name for n in nics if n.fw_ver == baseline]
            yield Hit(nic.name, f"{nic.name} runs firmware {nic.fw_ver}, the other {kind} HCAs "
                                f"({', '.join(others)}) run {baseline}",
                      evidence=(f"fw_ver={nic.fw_ver}", f"board_id={nic.board_id or '?'}",
                                f"hca_type={hca_type}", f"versions: {spread}"),
                      fix=f"update {nic.name} ({nic.bdf or 'its PCI function'}) to {baseline} (or the site "
                          f"baseline): mlxfwmanager -d {nic.bdf or nic.name} -u, then mlxfwreset -d "
                          f"{nic.bdf or nic.name} reset or reboot")


# --------------------------------------------------------------------------------------------------
# IB006 IB MTU below 4096


@rule(
    "IB006", "ib-mtu-below-4096", W, "InfiniBand active MTU below 4096",
    what="An ACTIVE InfiniBand port whose active MTU is below min_mtu (default 4096) although the port supports "
         "it (max_mtu), e.g. 'active_mtu: 2048 (4)' with 'max_mtu: 4096 (5)'.",
    why="NCCL sets each QP's path MTU to min(local, remote active_mtu) (src/transport/net_ib/connect.cc), so one "
        "port at 2048 halves the payload per packet on every connection it takes part in and lowers the "
        "achievable bandwidth; mismatched MTUs between nodes have also caused hangs (NVIDIA/nccl#1524).",
    detect="ibv_devinfo 'active_mtu' and 'max_mtu' per port (sysfs has no MTU file); the IB MTU comes from the "
           "subnet manager's partition configuration.",
    fix="Set the partition MTU to 4096 in the subnet manager (opensm partitions.conf: "
        "'Default=0x7fff, ipoib, mtu=5 : ALL=full;', or the UFM partition settings), then restart the SM.",
    options=(Option("min_mtu", int, 4096, "minimum IB MTU in bytes", min=256, max=4096),),
)
def ib_mtu(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for nic, port in ctx.ports:
        if port.link_layer != "InfiniBand" or not port.is_active or port.active_mtu is None:
            continue
        want = min(opts["min_mtu"], port.max_mtu or 4096)
        if port.active_mtu < want:
            yield Hit(nic.name, f"{_where(nic, port)} runs IB MTU {port.active_mtu}, below {want} "
                                f"(max_mtu {port.max_mtu or '?'})",
                      evidence=(f"active_mtu={port.active_mtu}", f"max_mtu={port.max_mtu or '?'}"),
                      fix="set the partition MTU to 4096 in the subnet manager (opensm partitions.conf 'mtu=5', "
                          "or UFM), restart the SM, then ibv_devinfo -d "
                          f"{nic.name} shows active_mtu: 4096 (5)")


# --------------------------------------------------------------------------------------------------
# IB007 ibstat aborted part-way

@rule(
    "IB007", "ibstat-aborted", W, "ibstat aborted part-way: the HCAs after the failing one were not seen",
    what="A node read through ibstat (no /sys/class/infiniband: a container, or a capture of pasted outputs) whose "
         "ibstat output ends in an 'ibpanic:'/'iberror:' line after some complete CAs, e.g. \"ibpanic: [77] main: "
         "stat of IB device 'mlx5_1' failed: No such device\".",
    why="ibstat stops at the first CA it cannot stat and exits 255 (infiniband-diags ibstat.c): the CAs printed "
        "before are good, every CA after it is unknown, so no port, rate or state rule can judge them and NCCL's "
        "IB plugin may list fewer devices than the node's peers (since NCCL 2.30 a NIC-count mismatch between "
        "nodes is ignored by default: a silent hang). The usual cause is an HCA that vanished or is resetting "
        "(firmware fatal error, PCIe surprise removal) or a missing ib_umad module.",
    detect="The probe keeps the CAs before the failure line and records the abort (source 'ibstat', under 'not "
           "seen' in probe output); the rule reports that record with the failure line.",
    fix="Run 'ibstat <ca>' for the named CA and 'ibv_devinfo'; read dmesg for mlx5 'fatal'/'health' errors; "
        "'modprobe ib_umad' if /dev/infiniband/umad* is missing; reset or reseat the HCA (mlxfwreset, reboot), "
        "then capture the node again.",
)
def ibstat_aborted(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for u in ctx.node.unavailable:
        if u.source != "ibstat":
            continue
        failed = _failed_ca(u.detail or "")
        yield Hit(failed or "ibstat", f"ibstat {u.reason}" + (f" (it could not stat {failed})" if failed else ""),
                  evidence=tuple(x for x in (u.detail,) if x))


def _failed_ca(detail: str) -> str | None:
    """The CA an ibpanic line names (``stat of IB device 'mlx5_1' failed``), else None."""
    m = re.search(r"IB device '([^']{1,64})'", detail)
    return m.group(1) if m else None
