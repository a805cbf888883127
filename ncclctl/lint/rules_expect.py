"""EXP rules: the node against an expected-state profile (``ncclctl lint --expect FILE``; see expect.py).

Each rule reads one section of the profile and says nothing when that section is absent, so a hand-written
profile checks only what it pins. They run only when a profile is given (``needs_expect=True``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.registry import Hit, Option, rule

E = Severity.ERROR
W = Severity.WARNING


def _section(ctx: Ctx, name: str) -> Any:
    return (ctx.expect or {}).get(name)


def _port(ctx: Ctx, hca: str):
    dev, _, num = hca.rpartition(":")
    nic = ctx.node.nic(dev)
    if nic is None:
        return dev, None, None
    return dev, nic, next((p for p in nic.ports if p.num == int(num)), None)


def _rate(x: float | int | None) -> str:
    return "unknown" if x is None else f"{x:g} Gb/s"


@rule(
    "EXP001", "expect-gpu-count-model", E, "GPU count or model differs from the expected-state profile",
    what="The node has a different number of GPUs, or different GPU models, than the profile's gpus.count and "
         "gpus.models.",
    why="A GPU that fell off the bus (Xid 79, a failed riser) or a node of another type in the pool changes the "
        "ranks per node: jobs sized for 8 GPUs fail to start or run with fewer, and mixed models make NCCL pick "
        "the slowest GPU's algorithms for everyone.",
    detect="NVML device count and names (nvidia-smi -L), compared with gpus.count and gpus.models (name -> count).",
    fix="Check nvidia-smi -L and dmesg for Xid 79 / 'fallen off the bus'; reseat or replace the GPU, or move the "
        "node to the pool whose profile matches it.",
    needs_expect=True,
)
def expect_gpus(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    exp = _section(ctx, "gpus") or {}
    have = Counter(g.name for g in ctx.node.gpus)
    if "count" in exp and exp["count"] != len(ctx.node.gpus):
        yield Hit("", f"{len(ctx.node.gpus)} GPU(s) found, the profile expects {exp['count']}",
                  evidence=tuple(f"GPU{g.index} {g.bdf} {g.name}" for g in ctx.node.gpus))
    if "models" in exp:
        want = Counter(exp["models"])
        if want != have:
            fmt = lambda c: ", ".join(f"{n} x {m}" for m, n in sorted(c.items())) or "no GPUs"  # noqa: E731
            yield Hit("", f"GPU models are {fmt(have)}; the profile expects {fmt(want)}")


@rule(
    "EXP002", "expect-nic-count", E, "RDMA NIC count differs from the expected-state profile",
    what="The node has a different number of RDMA devices (/sys/class/infiniband) than the profile's nics.count.",
    why="A missing HCA removes a rail: NCCL silently runs on fewer NICs (or sends that rail's GPUs across the "
        "SMP interconnect to another NIC), cutting inter-node bandwidth; an extra device can shift NCCL_IB_HCA "
        "prefix matches and the device order.",
    detect="The RDMA devices the probe found (ibstat / sysfs), counted and compared with nics.count.",
    fix="Check lspci and dmesg for the missing ConnectX function (firmware in recovery mode, a PCIe link down, a "
        "driver bind failure); reseat or replace the card.",
    needs_expect=True,
)
def expect_nics(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    exp = _section(ctx, "nics") or {}
    if "count" in exp and exp["count"] != len(ctx.node.nics):
        names = [n.name for n in ctx.node.nics]
        from ncclctl.names import natural_key

        missing = sorted(set((exp.get("firmware") or {})) - set(names), key=natural_key)
        extra = f" (missing: {', '.join(missing)})" if missing else ""
        yield Hit("", f"{len(names)} RDMA device(s) found, the profile expects {exp['count']}{extra}",
                  evidence=tuple(names))


@rule(
    "EXP003", "expect-rail-rate-width", E, "A rail's link layer, rate or width differs from the profile",
    what="An HCA port listed in the profile's rails is missing, on another link layer, slower than its "
         "rate_gbps, or trained at another width (2X instead of 4X).",
    why="NCCL's ring and tree bandwidth is set by the slowest rail: one port at 200 Gb/s on a 400 Gb/s fabric "
        "halves the bus bandwidth of every collective that crosses nodes.",
    detect="Per expected rail (device:port): the port's link_layer, rate (sysfs 'rate', e.g. '400 Gb/sec (4X NDR)') "
           "and active width (ibv_devinfo), compared with link_layer, rate_gbps and width.",
    fix="Check the cable and transceiver (mlxlink -d <dev> for errors), the switch port's speed and split "
        "configuration, and that the port is ACTIVE; replace the cable if the link keeps training low.",
    options=(Option("allow_faster", bool, True, "A rate above the expected one is not reported."),),
    needs_expect=True,
)
def expect_rail_rate(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for r in _section(ctx, "rails") or []:
        hca = r["hca"]
        dev, nic, port = _port(ctx, hca)
        label = f"rail {r['rail']} ({hca})" if "rail" in r else hca
        if nic is None:
            yield Hit(dev, f"{label}: no RDMA device {dev} on this node")
            continue
        if port is None:
            yield Hit(dev, f"{label}: {dev} has no port {hca.rpartition(':')[2]}")
            continue
        state = "" if port.is_active else f" (port is {port.state}/{port.phys_state})"
        if "link_layer" in r and port.link_layer != r["link_layer"]:
            yield Hit(dev, f"{label}: link layer is {port.link_layer}, the profile expects {r['link_layer']}")
        if "rate_gbps" in r:
            want = float(r["rate_gbps"])
            got = port.rate_gbps
            slower = got is None or got < want
            if slower or (got != want and not opts["allow_faster"]):
                yield Hit(dev, f"{label}: runs at {_rate(got)}{f' [{port.rate}]' if port.rate else ''}, the profile "
                               f"expects {_rate(r['rate_gbps'])}{state}")
        if "width" in r:
            width = port.active_width
            if width is None and port.rate and "(" in port.rate:
                width = port.rate.split("(", 1)[1].split()[0]
            if width != r["width"]:
                yield Hit(dev, f"{label}: link width is {width or 'unknown'}, the profile expects {r['width']}{state}")


@rule(
    "EXP004", "expect-rail-mtu", E, "A rail's RDMA MTU or interface MTU differs from the profile",
    what="An HCA port in the profile's rails has another active (RDMA) MTU than 'mtu', or its netdev another "
         "interface MTU than 'netdev_mtu'.",
    why="Nodes with different MTUs hang or fail NCCL connections (IBV_WC_LOC_LEN_ERR, NVIDIA/nccl#1524): the QP "
        "MTU is negotiated, but a RoCE interface MTU below 4200 caps the RDMA MTU at 2048 or less and frames "
        "larger than a peer's or the switch's MTU are dropped.",
    detect="ibv_devinfo active_mtu per port, and /sys/class/net/<netdev>/mtu, compared with mtu and netdev_mtu.",
    fix="Set the interface MTU (RoCE: 9000 with switch 9216, e.g. in the netplan/NetworkManager profile; IB: the "
        "partition MTU 4096 in the subnet manager) to the fleet baseline.",
    needs_expect=True,
)
def expect_rail_mtu(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for r in _section(ctx, "rails") or []:
        dev, nic, port = _port(ctx, r["hca"])
        if port is None:
            continue  # EXP003 reports missing devices and ports
        label = f"rail {r['rail']} ({r['hca']})" if "rail" in r else r["hca"]
        if "mtu" in r and port.active_mtu != r["mtu"]:
            yield Hit(dev, f"{label}: active MTU is {port.active_mtu or 'unknown'}, the profile expects {r['mtu']}")
        if "netdev_mtu" in r:
            nd = ctx.node.netdev(port.netdev) if port.netdev else None
            if nd is None:
                yield Hit(dev, f"{label}: has no netdev, the profile expects interface MTU {r['netdev_mtu']}")
            elif nd.mtu != r["netdev_mtu"]:
                yield Hit(nd.name, f"{label}: interface {nd.name} has MTU {nd.mtu or 'unknown'}, the profile expects "
                                   f"{r['netdev_mtu']}")


@rule(
    "EXP005", "expect-firmware", W, "HCA firmware differs from the profile",
    what="An RDMA device whose firmware version (fw_ver) differs from the profile's nics.firmware entry, or a "
         "device listed there that is missing.",
    why="Mixed ConnectX firmware across a fleet gives different congestion-control, adaptive-routing and "
        "PCIe-relaxed-ordering behaviour per node; known firmware bugs surface as NCCL timeouts on some nodes only.",
    detect="/sys/class/infiniband/<dev>/fw_ver compared with nics.firmware (device -> version).",
    fix="Update to the site baseline with mlxfwmanager -u (or mstflint), then reset the device or reboot.",
    strict_severity=E,
    needs_expect=True,
)
def expect_firmware(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for dev, want in sorted(((_section(ctx, "nics") or {}).get("firmware") or {}).items()):
        nic = ctx.node.nic(dev)
        if nic is None:
            yield Hit(dev, f"{dev}: no such RDMA device (the profile expects firmware {want})")
        elif nic.fw_ver != want:
            yield Hit(dev, f"{dev}: firmware {nic.fw_ver or 'unknown'}, the profile expects {want}",
                      evidence=(f"hca_type={nic.hca_type}", f"board_id={nic.board_id}"))


@rule(
    "EXP006", "expect-driver", W, "NVIDIA driver version differs from the profile",
    what="The NVIDIA driver version (or the CUDA driver API version) differs from the profile's driver section.",
    why="NCCL features and fixes depend on the driver (CUDA driver API version, NVLS, DMA-BUF); Fabric Manager "
        "must match the driver exactly; a fleet on mixed drivers shows per-node performance and hang differences.",
    detect="NVML nvmlSystemGetDriverVersion and nvmlSystemGetCudaDriverVersion, compared with driver.nvidia and "
           "driver.cuda.",
    fix="Install the baseline driver (and the matching nvidia-fabricmanager), then reboot or reload the modules.",
    strict_severity=E,
    needs_expect=True,
)
def expect_driver(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    exp = _section(ctx, "driver") or {}
    facts = ctx.node.facts
    if "nvidia" in exp and facts.driver_version != exp["nvidia"]:
        yield Hit("", f"NVIDIA driver {facts.driver_version or 'unknown (no NVML)'}, the profile expects {exp['nvidia']}")
    if "cuda" in exp and facts.cuda_driver_version != exp["cuda"]:
        yield Hit("", f"CUDA driver API version {facts.cuda_driver_version or 'unknown'}, the profile expects "
                      f"{exp['cuda']}")


@rule(
    "EXP007", "expect-nccl-settings", W, "Effective NCCL settings differ from the profile",
    what="An NCCL_* variable whose effective value (environment, then NCCL_CONF_FILE or ~/.nccl.conf, then "
         "/etc/nccl.conf) differs from the profile's nccl section, is missing, or is set but not in the profile.",
    why="NCCL settings steer NIC choice (NCCL_IB_HCA), RoCE marking (NCCL_IB_TC, NCCL_IB_GID_INDEX) and the "
        "topology (NCCL_TOPO_FILE); one node with a different value gets a different ring, a different traffic "
        "class, or a hang at connect time.",
    detect="The effective value of every NCCL_* name found in the recorded environment and the conf files, "
           "resolved with NCCL's precedence and line syntax, compared textually with the profile.",
    fix="Deploy the same /etc/nccl.conf to every node (ncclctl conf generate), and drop NCCL_* variables from "
        "login scripts and job environments that should not override it.",
    options=(
        Option("ignore", list, ["NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS"],
               "Variables never compared (debug switches)."),
        Option("unexpected", bool, True, "Also report NCCL_* variables set on the node but absent from the profile."),
    ),
    strict_severity=E,
    needs_expect=True,
)
def expect_nccl(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    from ncclctl.lint.expect import effective_nccl_settings

    want = _section(ctx, "nccl")
    if want is None:
        return
    ignore = set(opts["ignore"])
    have = effective_nccl_settings(ctx.node)
    for name in sorted(set(want) | set(have)):
        if name in ignore:
            continue
        if name not in have:
            yield Hit("", f"{name} is not set, the profile expects {name}={want[name]}")
        elif name not in want:
            if opts["unexpected"]:
                yield Hit("", f"{name}={have[name]} is set but not in the profile")
        elif have[name] != want[name]:
            yield Hit("", f"{name}={have[name]}, the profile expects {name}={want[name]}")


@rule(
    "EXP008", "expect-nvlink-count", E, "A GPU has fewer active NVLinks than the profile",
    what="A GPU whose number of active NVLinks is below the profile's gpus.nvlinks.",
    why="Every NVLink missing on one GPU cuts that GPU's share of NVSwitch bandwidth and makes the NVLink fabric "
        "asymmetric; intra-node collectives run at the speed of the weakest GPU.",
    detect="NVML nvmlDeviceGetNvLinkState per link, counted per GPU, compared with gpus.nvlinks.",
    fix="Check nvidia-smi nvlink -s and -e (error counters) and the Fabric Manager log; reset the GPU or have the "
        "baseboard serviced if links stay down.",
    needs_expect=True,
)
def expect_nvlinks(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    want = (_section(ctx, "gpus") or {}).get("nvlinks")
    if want is None:
        return
    for g in sorted(ctx.node.gpus, key=lambda g: g.index):
        n = len(g.active_nvlinks)
        if n < want:
            down = [str(link.link) for link in g.nvlinks if not link.active]
            yield Hit(f"GPU{g.index}", f"GPU{g.index} ({g.bdf}) has {n} active NVLinks, the profile expects {want}"
                      + (f" (inactive links: {', '.join(down)})" if down else ""))
