"""The node model: plain frozen dataclasses, no I/O.

One :class:`Node` describes a GPU host, filled the same way from a live host or a fixture. Values that
NCCL copies verbatim (PCI ids, class codes, link-speed strings, cpumaps) are kept as the exact sysfs
strings; everything else is typed. ``to_dict``/``from_dict`` give a JSON round trip whose schema is
``schemas/node.schema.json`` (generated from these classes by :func:`json_schema`).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import field
from typing import Any, Optional, Union

from ncclctl.errors import InputError
from ncclctl.record import record

MODEL_SCHEMA_VERSION = 1


# --------------------------------------------------------------------------------------------------
# CPU / NUMA


@record
class NumaNode:
    """A NUMA node: its CPUs and its distances to the others (``/sys/devices/system/node``)."""
    id: int
    #: Kernel CPU-list syntax, e.g. ``0-55,112-167``; empty for memory-only nodes (GH200 GPU memory).
    cpulist: str
    #: Kernel cpumap (comma-separated 32-bit hex words, most significant first), what NCCL puts in
    #: ``<cpu affinity=...>``.
    cpumap: str
    #: SLIT distances to every online node, in node order.
    distances: tuple[int, ...] = ()

    @property
    def cpu_count(self) -> int:
        from ncclctl.sysfs import parse_cpulist

        return len(parse_cpulist(self.cpulist)) if self.cpulist else 0


@record
class Cpu:
    """The host's CPUs as NCCL classifies them (arch, vendor, family/model) and how many there are."""
    #: NCCL spelling: ``x86_64``, ``arm64`` or ``ppc64``.
    arch: str
    #: CPUID vendor string (``GenuineIntel``, ``AuthenticAMD``); Arm: implementer, e.g. ``0x41``.
    vendor: str
    #: ``cpu family`` as /proc/cpuinfo prints it (Linux adds the extended family).
    family: int | None
    #: ``model`` as /proc/cpuinfo prints it (includes the extended model).
    model: int | None
    model_name: str
    sockets: int
    logical_cpus: int
    #: x86: the ``hypervisor`` CPUID bit from the cpuinfo ``flags`` line (True inside a VM); None when the flags
    #: are not known (arm64, ppc64, a capture without them).
    hypervisor: bool | None = None

    @property
    def nccl_familyid(self) -> int | None:
        """familyid as NCCL computes it from CPUID: family + (extended family << 4).

        Linux prints ``0xF + extFamily``; NCCL uses ``0xF + (extFamily << 4)``. They agree below 0xF.
        """
        if self.family is None:
            return None
        if self.family < 0xF:
            return self.family
        return 0xF + ((self.family - 0xF) << 4)


# --------------------------------------------------------------------------------------------------
# PCIe


@record
class PciDevice:
    """One PCI function: where it sits in the tree, its ids, link speed/width, NUMA node, IOMMU group and ACS."""
    bdf: str
    #: ``root_port``, ``switch_upstream``, ``switch_downstream``, ``bridge`` or ``endpoint``;
    #: bridges are told apart by position in the sysfs tree (sysfs has no port type).
    role: str
    #: The sysfs path from the root complex down: ``("pci0000:15", "0000:15:01.0", ..., bdf)``.
    path: tuple[str, ...]
    class_code: str
    vendor: str
    device: str
    subsystem_vendor: str | None = None
    subsystem_device: str | None = None
    numa_node: int | None = None
    current_link_speed: str | None = None
    current_link_width: int | None = None
    max_link_speed: str | None = None
    max_link_width: int | None = None
    driver: str | None = None
    iommu_group: int | None = None
    #: SR-IOV virtual function (a ``physfn`` link exists).
    is_vf: bool = False
    #: ACS capability and control registers; ``None`` when the bridge has no ACS capability or its extended
    #: config space could not be read (see ``config_bytes``).
    acs_cap: int | None = None
    acs_ctrl: int | None = None
    #: Bridges: how many bytes of PCI config space could be read (4096 as root; 64 or 256 otherwise, which
    #: hides the extended capabilities such as ACS); ``None`` when not read.
    config_bytes: int | None = None
    #: ``local_cpus`` (the cpumap of the CPUs near the device), read for endpoints whose ``numa_node`` is -1: a
    #: VM without NUMA information still says which CPUs a GPU's threads belong on.
    local_cpus: str | None = None
    #: Mellanox functions (ConnectX PFs, the ConnectX-8 Data Direct DMA function): the VPD ``V3`` keyword (a board
    #: UUID, the same on a NIC's PF and its DMA function, which is how NVIDIA's rdma_topo pairs them); ``None``
    #: when the ``vpd`` file is absent or unreadable (root only) or has no V3.
    vpd_v3: str | None = None
    #: Mellanox NIC and DMA functions: the ATS extended capability (id 0x000f) is present in config space; ``None``
    #: when the extended config space could not be read (not root) or was not looked at.
    ats: bool | None = None

    @property
    def acs_unknown(self) -> bool:
        """A bridge whose ACS state could not be read (as opposed to one with no ACS capability)."""
        return self.acs_ctrl is None and (self.config_bytes is None or self.config_bytes < 0x108)

    @property
    def parent(self) -> str | None:
        return self.path[-2] if len(self.path) > 2 else None

    @property
    def root_complex(self) -> str:
        return self.path[0]

    @property
    def is_bridge(self) -> bool:
        return self.class_code.startswith("0x0604")


# --------------------------------------------------------------------------------------------------
# GPUs and NVLink


@record
class NvLink:
    """One NVLink of a GPU and what is at its far end."""
    link: int
    active: bool
    #: ``gpu``, ``nvswitch``, ``cpu`` (IBM NPU) or ``unknown``.
    remote_type: str
    #: Normalised sysfs form of NVML's remote bus id; ``None`` when the far end is not PCI-visible.
    remote_bdf: str | None = None
    version: int | None = None
    p2p_supported: bool | None = None


@record
class C2c:
    """A GPU's chip-to-chip links to its CPU (Grace Hopper), as NVML reports them."""
    count: int
    #: Per-link bandwidth as NVML reports it (``NVML_FI_DEV_C2C_LINK_GET_MAX_BW``, MB/s).
    max_bw: int | None = None


@record
class GpuPlatform:
    """Where a GPU sits in a rack-scale NVLink system (NVML ``nvmlDeviceGetPlatformInfo``, the v2 names: v1's
    rackGuid, chassisPhysicalSlotNumber, computeSlotIndex, nodeIndex)."""
    chassis_serial: str | None = None
    slot_number: int | None = None
    tray_index: int | None = None
    host_id: int | None = None
    peer_type: int | None = None
    module_id: int | None = None


@record
class Gpu:
    """One GPU: PCI place, NUMA node, compute capability, NVLinks/C2C, PCIe generation/width, MIG, fabric state."""
    index: int
    bdf: str
    name: str
    uuid: str | None = None
    #: Compute capability as NCCL's ``sm``: major*10+minor.
    sm: int | None = None
    numa_node: int | None = None
    nvlinks: tuple[NvLink, ...] = ()
    c2c: C2c | None = None
    persistence_mode: bool | None = None
    mig_current: bool | None = None
    mig_pending: bool | None = None
    pcie_max_gen: int | None = None
    pcie_max_width: int | None = None
    pcie_curr_gen: int | None = None
    pcie_curr_width: int | None = None
    #: NVML GPU fabric state (0 n/s, 1 not started, 2 in progress, 3 completed) and status code.
    fabric_state: int | None = None
    fabric_status: int | None = None
    serial: str | None = None
    #: ``nvml`` when NVML described the GPU, ``pci`` when only its PCI function was seen.
    source: str = "nvml"
    #: NVML GPU fabric info (``nvmlDeviceGetGpuFabricInfoV``, v2+): the NVLink domain's cluster UUID (canonical
    #: 8-4-4-4-12 hex), the clique (partition) id, and the health mask and summary (v3) as NVML returns them.
    fabric_cluster_uuid: str | None = None
    fabric_clique_id: int | None = None
    fabric_health_mask: int | None = None
    fabric_health_summary: int | None = None
    #: Where the fabric facts come from: ``nvml``, or ``nvidia-smi`` (a recorded ``nvidia-smi -q`` when NVML is absent).
    fabric_source: str | None = None
    platform: GpuPlatform | None = None
    #: The board's firmware: VBIOS version (``nvmlDeviceGetVbiosVersion``; nvidia-smi -q "VBIOS Version") and InfoROM
    #: image version (``nvmlDeviceGetInforomImageVersion``; "Inforom Version" / "Image Version").
    vbios_version: str | None = None
    inforom_image_version: str | None = None

    @property
    def active_nvlinks(self) -> tuple[NvLink, ...]:
        return tuple(link for link in self.nvlinks if link.active)


@record
class NvSwitch:
    """An NVSwitch seen on the PCI bus (HGX baseboards expose them as bridge functions)."""
    bdf: str
    device: str
    numa_node: int | None = None


# --------------------------------------------------------------------------------------------------
# RDMA NICs and netdevs


@record
class Gid:
    """One entry of a port's GID table (``/sys/class/infiniband/<dev>/ports/<n>/gids``)."""
    index: int
    #: Full 8x4-hex form as sysfs prints it.
    gid: str
    #: ``IB/RoCE v1``, ``RoCE v2``, or ``None`` for InfiniBand ports.
    type: str | None = None
    netdev: str | None = None

    @property
    def is_ipv4_mapped(self) -> bool:
        return self.gid.startswith("0000:0000:0000:0000:0000:ffff:")

    @property
    def is_link_local(self) -> bool:
        return self.gid.startswith("fe80:")

    @property
    def ipv4(self) -> str | None:
        if not self.is_ipv4_mapped:
            return None
        tail = self.gid.split(":")[6:]
        raw = int(tail[0], 16) << 16 | int(tail[1], 16)
        return ".".join(str((raw >> s) & 0xFF) for s in (24, 16, 8, 0))


@record
class IbPort:
    """One port of an RDMA device: state, rate, link layer, LIDs and GIDs."""
    num: int
    #: ``ACTIVE``, ``DOWN``, ``INIT``, ``ARMED``...
    state: str
    #: ``LinkUp``, ``Polling``, ``Disabled``...
    phys_state: str
    #: ``InfiniBand`` or ``Ethernet``.
    link_layer: str
    rate_gbps: float | None = None
    #: The sysfs rate string, e.g. ``400 Gb/sec (4X NDR)``.
    rate: str | None = None
    lid: int | None = None
    sm_lid: int | None = None
    lmc: int | None = None
    cap_mask: int | None = None
    gids: tuple[Gid, ...] = ()
    #: From ``ibv_devinfo``: MTUs in bytes, width like ``4X``, per-port speed in Gb/s.
    active_mtu: int | None = None
    max_mtu: int | None = None
    active_width: str | None = None
    active_speed_gbps: float | None = None
    #: The Ethernet netdev of a RoCE port (from the GID table or the PCI function).
    netdev: str | None = None

    @property
    def is_active(self) -> bool:
        return self.state == "ACTIVE"


@record
class Nic:
    """An RDMA device (``/sys/class/infiniband/<name>``): PCI function, GUIDs, firmware, board, ports, netdevs."""
    #: RDMA device name (``mlx5_0``, ``ibp26s0``, ``mlx5_bond_0``).
    name: str
    bdf: str | None
    node_type: str | None = None
    node_guid: str | None = None
    sys_image_guid: str | None = None
    fw_ver: str | None = None
    hca_type: str | None = None
    board_id: str | None = None
    node_desc: str | None = None
    ports: tuple[IbPort, ...] = ()
    netdevs: tuple[str, ...] = ()
    #: Device max_qp (``ibv_devinfo -v``): what NCCL's IB plugin reports as maxComms (XML ``maxconn``).
    max_qp: int | None = None

    @property
    def link_layer(self) -> str | None:
        return self.ports[0].link_layer if self.ports else None


@record
class Qos:
    """A RoCE port's QoS settings: trust mode, PFC per priority, DSCP mapping (from mlnx_qos, dcb or sysfs)."""
    #: Where the values came from: ``mlnx_qos``, ``dcb``, ``sysfs``.
    source: str
    trust: str | None = None
    pfc_enabled: tuple[bool, ...] | None = None
    #: (dscp, priority) pairs; ``None`` when unknown.
    dscp2prio: tuple[tuple[int, int], ...] | None = None
    dcbx_mode: str | None = None


@record
class Ecn:
    """A RoCE port's ECN (DCQCN) switches per priority."""
    #: Per priority 0..7: notification point / reaction point enabled (``None`` = unknown).
    np_enabled: tuple[bool | None, ...]
    rp_enabled: tuple[bool | None, ...]


@record
class Dcbx:
    """lldpad's IEEE DCBX PFC state for a port (``lldptool -t -i IF -V PFC``, and ``-n`` for the switch's TLV)."""

    #: The port accepts the switch's PFC configuration (DCBX willing).
    willing: bool
    #: Priorities with PFC enabled in the local TLV.
    local_pfc: tuple[int, ...]
    #: The switch's advertised TLV; ``None`` when none was received (or lldptool could not show it).
    peer_willing: bool | None = None
    peer_pfc: tuple[int, ...] | None = None


@record
class LldpNeighbor:
    """The switch port at the far end of a netdev, as LLDP reports it."""
    chassis_name: str | None = None
    chassis_id: str | None = None
    port_id: str | None = None
    port_descr: str | None = None


@record
class NetDev:
    """A network interface: MTU, state, address, type, speed, bond/parent, its port's RoCE QoS, ECN, DCBX, LLDP."""
    name: str
    mtu: int | None = None
    operstate: str | None = None
    address: str | None = None
    #: ARPHRD type: 1 Ethernet, 32 InfiniBand (IPoIB), 772 loopback.
    type: int | None = None
    speed_mbps: int | None = None
    bdf: str | None = None
    #: ``physical`` or the link kind: ``vlan``, ``bond``, ``bridge``, ``veth``, ``macvlan``, ``ipoib``...
    kind: str = "physical"
    master: str | None = None
    parent: str | None = None
    qos: Qos | None = None
    ecn: Ecn | None = None
    lldp: LldpNeighbor | None = None
    dcbx: Dcbx | None = None
    #: The kernel's interface index (``/sys/class/net/X/ifindex``): the order ``getifaddrs`` lists interfaces in.
    ifindex: int | None = None
    #: ``/sys/class/net/X/flags`` (``IFF_UP`` is 0x1). With ``operstate``, whether the interface is RUNNING.
    flags: int | None = None
    #: The address families the interface has an address of, as NCCL's socket code counts them: ``inet`` (IPv4),
    #: ``inet6`` (IPv6 other than loopback). None: not recorded (an older snapshot, or procfs not readable).
    inet: tuple[str, ...] | None = None
    #: The last component of ``/sys/class/net/X/device`` resolved: a PCI bus id, or a non-PCI device (``virtio2``,
    #: a vmbus id); None where the interface has no device (virtual interfaces).
    device_name: str | None = None


# --------------------------------------------------------------------------------------------------
# Host facts used by lint


@record
class ConfFile:
    """A configuration file read from the host (path and text), e.g. ``/etc/nccl.conf``."""
    path: str
    text: str


@record
class HostFacts:
    """Host-wide facts: kernel and command line, modules, drivers, peer memory, IOMMU, NCCL environment, conf files."""
    kernel: str | None = None
    cmdline: str | None = None
    modules: tuple[str, ...] = ()
    driver_version: str | None = None
    cuda_driver_version: int | None = None
    #: ``open`` or ``proprietary`` NVIDIA kernel module, from /proc/driver/nvidia/version.
    nvidia_module: str | None = None
    #: Which peer-memory files NCCL would find (``nvidia_peermem``, ``nv_mem``, ``nv_mem_nc``).
    peermem: tuple[str, ...] = ()
    iommu_units: tuple[str, ...] = ()
    #: IOMMU group -> default domain type (``identity``, ``DMA``, ``DMA-FQ``...).
    iommu_group_types: tuple[tuple[int, str], ...] = ()
    nccl_env: tuple[tuple[str, str], ...] = ()
    conf_files: tuple[ConfFile, ...] = ()
    virtual_topology: ConfFile | None = None
    fabric_manager: str | None = None
    #: The file the effective ``NCCL_TOPO_FILE`` / ``NCCL_GRAPH_FILE`` names (environment, then the conf files),
    #: read through the host root so a snapshot carries it; None when unset, relative, missing or unreadable.
    topo_file: ConfFile | None = None
    graph_file: ConfFile | None = None
    #: The NCCL libraries a job could load (:mod:`ncclctl.probe.ncclib`); None: not looked for (an older snapshot).
    nccl_libraries: tuple[NcclLibrary, ...] | None = None
    #: The IMEX service (multi-node NVLink); None when the node has no NVLink fabric registration to serve.
    imex: Imex | None = None


@record
class ImexPeer:
    """One node of the IMEX domain as ``nvidia-imex-ctl -N`` lists it."""
    index: int
    address: str
    #: ``READY``, ``UNAVAILABLE``, ``DOWN``... as the tool prints it.
    status: str
    version: str | None = None


@record
class Imex:
    """The IMEX service of a multi-node NVLink node (GB200/GB300 NVL): its node list, channel devices and state."""
    #: ``systemctl is-active nvidia-imex``: ``active``, ``inactive``, ``failed``...; None when not asked.
    service: str | None = None
    #: The node list the daemon reads (``IMEX_NODE_CONFIG_FILE`` in /etc/nvidia-imex/config.cfg).
    nodes_config_path: str = "/etc/nvidia-imex/nodes_config.cfg"
    #: Its addresses in file order; None when the file is absent.
    nodes: tuple[str, ...] | None = None
    #: ``channelN`` numbers under /dev/nvidia-caps-imex-channels; None when the folder is absent.
    channels: tuple[int, ...] | None = None
    #: The character-device major of ``nvidia-caps-imex-channels`` in /proc/devices; None when not registered.
    channels_major: int | None = None
    #: ``nvidia-imex-ctl -N``: the ``Domain State`` line (``UP``, ``DOWN``, ``DEGRADED``) and the nodes it lists.
    domain_state: str | None = None
    peers: tuple[ImexPeer, ...] = ()
    #: The node's own IPv4 addresses (``/proc/net/fib_trie`` LOCAL entries, loopback left out), to find it in the
    #: node list; None when not readable.
    local_addresses: tuple[str, ...] | None = None


@record
class NcclLibrary:
    """An NCCL library found on the host, and the release its own banner says it is."""
    path: str
    #: ``2.28.9`` (with a suffix where the build has one); None when no banner was found in it.
    version: str | None = None
    #: The CUDA release it was built for (``13.0``).
    cuda: str | None = None
    #: Where it was found: ``LD_LIBRARY_PATH``, ``ld.so.conf``, ``system``, ``python: torch``...
    where: str | None = None


#: ``Unavailable.reason`` of the file NCCL_TOPO_FILE or NCCL_GRAPH_FILE names (the ``source``) when ncclctl
#: refuses to read it (a device, FIFO or socket, over the 16 MiB cap; the ``detail`` says which): lint reports it
#: as such (NCCL020, NCCL022), not as a missing file.
REFUSED = "refused"


@record
class Unavailable:
    """Something the probe could not see, and why (the node is still usable)."""

    source: str
    reason: str
    detail: str | None = None


# --------------------------------------------------------------------------------------------------
# What an NVML ``Unavailable.reason`` means: the probe records it, the GPU rules and the node summary explain it

#: NVML initialisation failures: (what it means for NCCL, the fix), by the NVML error name.
NVML_INIT_CAUSES: dict[str, tuple[str, str]] = {
    "LibRmVersionMismatch": (
        "the NVIDIA kernel module and the user-space driver are different versions (the driver was upgraded "
        "without a reboot): CUDA and NCCL fail to initialise on this node",
        "reboot; or stop every GPU client (nvidia-persistenced, nvidia-fabricmanager, DCGM), then rmmod nvidia_uvm "
        "nvidia_drm nvidia_modeset nvidia and modprobe nvidia"),
    "DriverNotLoaded": (
        "the NVIDIA kernel module is not loaded: no CUDA and no NCCL on this node",
        "modprobe nvidia and read dmesg for NVRM errors (a kernel update without the DKMS rebuild, an unsigned module "
        "under Secure Boot)"),
    "LibraryNotFound": (
        "libnvidia-ml.so.1 is not found: the driver's user-space libraries are missing (or not mounted into this "
        "container)",
        "install the NVIDIA driver (the same version as the kernel module), or run the container with the NVIDIA "
        "container toolkit"),
    "NoPermission": (
        "the GPU device files (/dev/nvidia*) are not accessible to this user",
        "run as a user with access to /dev/nvidia* (the video group, or the site's GPU group)"),
}
#: Reasons that say nothing about the node (ncclctl's own environment, or a capture without NVML data).
NVML_NOT_A_NODE_FAULT = {"ModuleNotFound", "NotCaptured"}


def describe_init_failure(reason: str) -> str:
    """A sentence for an NVML initialisation result (``LibraryNotFound`` -> what it means), for summaries."""
    if reason == "ModuleNotFound":
        return "pynvml (nvidia-ml-py) is not installed next to ncclctl, so NVML was not asked"
    if reason == "NotCaptured":
        return "the snapshot has no NVML answers (nvml.json)"
    cause = NVML_INIT_CAUSES.get(reason)
    return f"NVML failed to initialise ({reason}): {cause[0]}" if cause else f"NVML failed to initialise ({reason})"


# --------------------------------------------------------------------------------------------------
# NVML GPU fabric vocabulary (nvml.h): what the probe records, what the NVLink-domain rules and renderers decode

#: ``nvmlGpuFabricState_t``.
FABRIC_STATE_NAMES: dict[int, str] = {0: "NOT_SUPPORTED", 1: "NOT_STARTED", 2: "IN_PROGRESS", 3: "COMPLETED"}
FABRIC_STATE_COMPLETED = 3
#: ``NVML_GPU_FABRIC_HEALTH_SUMMARY_*`` (fabric info v3).
FABRIC_HEALTH_SUMMARY_NAMES: dict[int, str] = {0: "NOT_SUPPORTED", 1: "HEALTHY", 2: "UNHEALTHY",
                                               3: "LIMITED_CAPACITY"}
#: The clique id NVLink partitions report when the domain was left in its default partition (the NMX API reserves
#: 32766 for it): every such rack reports the same value, so only the cluster UUID tells two of them apart.
DEFAULT_PARTITION_CLIQUE = 32766
ZERO_UUID = "00000000-0000-0000-0000-000000000000"

#: The fields of ``healthMask`` as nvml.h defines them: (name, shift, width mask, {value: meaning}).
#: The four 2-bit fields read NOT_SUPPORTED=0, TRUE=1, FALSE=2: every field FALSE is 0b10101010 = 0xAA, healthy.
#: INCORRECT_CONFIGURATION (shift 8, 4 bits): NOT_SUPPORTED=0, NONE=1, then the misconfiguration found. Newer headers
#: add PARTITION_ASSIGNED (shift 12: TRUE=1 assigned, FALSE=2 not) and GFM_STATE (shift 14: CONNECTED=1,
#: DISCONNECTED=2): a driver that does not set them leaves them 0 (NOT_SUPPORTED), so 0xaa stays healthy.
FABRIC_HEALTH_FIELDS: tuple[tuple[str, int, int, dict[int, str]], ...] = (
    ("DEGRADED_BW", 0, 0x3, {0: "NOT_SUPPORTED", 1: "TRUE", 2: "FALSE"}),
    ("ROUTE_RECOVERY", 2, 0x3, {0: "NOT_SUPPORTED", 1: "TRUE", 2: "FALSE"}),
    ("ROUTE_UNHEALTHY", 4, 0x3, {0: "NOT_SUPPORTED", 1: "TRUE", 2: "FALSE"}),
    ("ACCESS_TIMEOUT_RECOVERY", 6, 0x3, {0: "NOT_SUPPORTED", 1: "TRUE", 2: "FALSE"}),
    ("INCORRECT_CONFIGURATION", 8, 0xF, {0: "NOT_SUPPORTED", 1: "NONE", 2: "INCORRECT_SYSGUID",
                                         3: "INCORRECT_CHASSIS_SN", 4: "NO_PARTITION", 5: "INSUFFICIENT_NVLINKS",
                                         6: "INCOMPATIBLE_GPU_FW", 7: "INVALID_LOCATION", 8: "GPU_STATE_INVALID"}),
    ("PARTITION_ASSIGNED", 12, 0x3, {0: "NOT_SUPPORTED", 1: "TRUE", 2: "FALSE"}),
    ("GFM_STATE", 14, 0x3, {0: "NOT_SUPPORTED", 1: "CONNECTED", 2: "DISCONNECTED"}),
)
#: The value of each field that says nothing is wrong (besides NOT_SUPPORTED, 0).
_FABRIC_HEALTH_OK = {"DEGRADED_BW": 2, "ROUTE_RECOVERY": 2, "ROUTE_UNHEALTHY": 2, "ACCESS_TIMEOUT_RECOVERY": 2,
                     "INCORRECT_CONFIGURATION": 1, "PARTITION_ASSIGNED": 1, "GFM_STATE": 1}


def decode_fabric_health(mask: int) -> tuple[tuple[str, int, str], ...]:
    """Each ``healthMask`` field: (field, raw value, its nvml.h name; ``RESERVED(n)`` for a value nvml.h does not
    define). ``0xaa`` decodes to every 2-bit field FALSE and INCORRECT_CONFIGURATION NOT_SUPPORTED."""
    out = []
    for name, shift, width, names in FABRIC_HEALTH_FIELDS:
        value = (mask >> shift) & width
        out.append((name, value, names.get(value, f"RESERVED({value})")))
    return tuple(out)


def fabric_health_problems(mask: int) -> tuple[tuple[str, str], ...]:
    """The fields of ``mask`` that say something is wrong: (field, value name): any value other than NOT_SUPPORTED
    and the field's healthy value (FALSE for the four 2-bit conditions, NONE, partition assigned TRUE, GFM
    CONNECTED), a value nvml.h does not define included."""
    return tuple((name, text) for name, value, text in decode_fabric_health(mask)
                 if value not in (0, _FABRIC_HEALTH_OK[name]))


def nvlink_domain_gpus(node: "Node") -> tuple["Gpu", ...]:
    """The GPUs of ``node`` when it belongs to a multi-node NVLink domain (one of its GPUs reports a non-zero fabric
    cluster UUID, as NCCL's MNNVL check requires), in index order; () otherwise."""
    if not any(g.fabric_cluster_uuid not in (None, ZERO_UUID) for g in node.gpus):
        return ()
    return tuple(sorted(node.gpus, key=lambda g: g.index))


@record
class Node:
    """A GPU host: CPUs, NUMA nodes, the PCI tree, GPUs, NVSwitches, RDMA NICs, netdevs and host facts."""
    hostname: str
    cpu: Cpu
    numa: tuple[NumaNode, ...] = ()
    pci: tuple[PciDevice, ...] = ()
    gpus: tuple[Gpu, ...] = ()
    nvswitches: tuple[NvSwitch, ...] = ()
    nics: tuple[Nic, ...] = ()
    netdevs: tuple[NetDev, ...] = ()
    facts: HostFacts = field(default_factory=HostFacts)
    unavailable: tuple[Unavailable, ...] = ()

    # Lookups -------------------------------------------------------------------------------------

    def pci_device(self, bdf: str) -> PciDevice | None:
        return self._pci_index().get(bdf)

    def _pci_index(self) -> dict[str, PciDevice]:
        cache = self.__dict__.get("_pci_cache")
        if cache is None:
            cache = {d.bdf: d for d in self.pci}
            object.__setattr__(self, "_pci_cache", cache)
        return cache

    def gpu(self, index: int) -> Gpu | None:
        for g in self.gpus:
            if g.index == index:
                return g
        return None

    def nic(self, name: str) -> Nic | None:
        for n in self.nics:
            if n.name == name:
                return n
        return None

    def netdev(self, name: str) -> NetDev | None:
        for n in self.netdevs:
            if n.name == name:
                return n
        return None

    def numa_node_of(self, bdf: str | None) -> int | None:
        if bdf is None:
            return None
        dev = self.pci_device(bdf)
        return dev.numa_node if dev else None

    @property
    def is_virtual(self) -> bool:
        """Flat PCIe: GPUs sit directly on root buses with no switch above them (cloud VMs)."""
        if not self.gpus:
            return False
        for g in self.gpus:
            dev = self.pci_device(g.bdf)
            if dev is None or len(dev.path) > 2:
                return False
        return True

    # JSON ----------------------------------------------------------------------------------------

    @property
    def is_guest(self) -> bool:
        """A virtual machine: the CPU says so (x86 hypervisor bit), or the PCIe tree is flat (:attr:`is_virtual`).
        A VM that exposes a switch hierarchy (some passthrough layouts do) is caught by the first test only."""
        return bool(self.cpu is not None and self.cpu.hypervisor) or self.is_virtual

    def to_dict(self) -> dict:
        return {"schema_version": MODEL_SCHEMA_VERSION, **to_dict(self)}

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<model>") -> "Node":
        if not isinstance(data, dict):
            raise InputError("a node model must be a JSON object", path=source)
        version = data.get("schema_version")
        if version != MODEL_SCHEMA_VERSION:
            raise InputError(
                f"unsupported node model schema_version {version!r} (this ncclctl reads {MODEL_SCHEMA_VERSION})",
                path=source,
                fix="re-create the model with this ncclctl version: ncclctl probe --format json",
            )
        body = {k: v for k, v in data.items() if k not in ("schema_version", "derived")}
        node = from_dict(cls, body, source=source)
        from ncclctl.sysfs import check_node_values  # the sysfs-shaped strings the types cannot check

        check_node_values(node, source=source)
        return node


# --------------------------------------------------------------------------------------------------
# Generic conversion (dataclass <-> JSON-compatible dict), strict on the way in.

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _HINTS[cls] = hints
    return hints


def to_dict(obj: Any) -> Any:
    """Convert a model object to JSON-compatible data (dicts keep field order: stable output)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple):
        return [to_dict(x) for x in obj]
    return obj


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def from_dict(tp: Any, data: Any, *, source: str = "<model>", where: str = "$") -> Any:
    """Build ``tp`` from JSON data, raising :class:`InputError` that names the JSON path on mismatch."""
    if _is_union(tp):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return from_dict(arg, data, source=source, where=where)
            except InputError as exc:
                errors.append(exc.message)
        raise InputError(errors[0] if errors else f"{where}: unexpected null", path=source)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):  # a dataclass type, never an instance
        if not isinstance(data, dict):
            raise InputError(f"{where}: expected an object for {tp.__name__}", path=source)
        hints = _hints(tp)
        names = {f.name for f in dataclasses.fields(tp)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise InputError(f"{where}: unknown key {unknown[0]!r} in {tp.__name__}", path=source)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = from_dict(hints[f.name], data[f.name], source=source, where=f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise InputError(f"{where}: missing key {f.name!r} in {tp.__name__}", path=source)
        return tp(**kwargs)
    origin = typing.get_origin(tp)
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(data, list):
            raise InputError(f"{where}: expected an array", path=source)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_dict(args[0], x, source=source, where=f"{where}[{i}]") for i, x in enumerate(data))
        if len(args) != len(data):
            raise InputError(f"{where}: expected {len(args)} items", path=source)
        return tuple(from_dict(a, x, source=source, where=f"{where}[{i}]") for i, (a, x) in enumerate(zip(args, data)))
    if tp is bool:
        if not isinstance(data, bool):
            raise InputError(f"{where}: expected true/false", path=source)
        return data
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise InputError(f"{where}: expected an integer", path=source)
        return data
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise InputError(f"{where}: expected a number", path=source)
        return float(data)
    if tp is str:
        if not isinstance(data, str):
            raise InputError(f"{where}: expected a string", path=source)
        return data
    if tp is Any:
        return data
    raise InputError(f"{where}: unsupported type {tp!r}", path=source)  # pragma: no cover


def _schema_for(tp: Any, defs: dict[str, Any]) -> dict:
    if _is_union(tp):
        return {"anyOf": [_schema_for(a, defs) for a in typing.get_args(tp)]}
    if tp is type(None):
        return {"type": "null"}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder against recursion
            hints = _hints(tp)
            props = {f.name: _schema_for(hints[f.name], defs) for f in dataclasses.fields(tp)}
            required = [
                f.name
                for f in dataclasses.fields(tp)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ]
            defs[name] = {"type": "object", "properties": props, "required": required, "additionalProperties": False}
        return {"$ref": f"#/$defs/{name}"}
    origin = typing.get_origin(tp)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema_for(args[0], defs)}
        return {
            "type": "array",
            "prefixItems": [_schema_for(a, defs) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if tp in simple:
        return {"type": simple[tp]}
    return {}  # pragma: no cover


def json_schema() -> dict:
    """The JSON Schema (2020-12) of ``Node.to_dict()`` plus the derived section ``probe`` adds."""
    defs: dict[str, Any] = {}
    _schema_for(Node, defs)
    node = dict(defs["Node"])
    node["properties"] = {
        "schema_version": {"const": MODEL_SCHEMA_VERSION},
        **node["properties"],
        "derived": {"type": "object"},
    }
    node["required"] = ["schema_version", *node["required"]]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://ncclctl.invalid/schemas/node-v{MODEL_SCHEMA_VERSION}.json",
        "title": "ncclctl node model",
        **node,
        "$defs": {k: v for k, v in sorted(defs.items()) if k != "Node"},
    }


__all__ = [
    "C2c", "ConfFile", "Cpu", "Ecn", "Gid", "Gpu", "GpuPlatform", "HostFacts", "Imex", "ImexPeer", "IbPort", "LldpNeighbor", "MODEL_SCHEMA_VERSION",
    "NetDev", "Nic", "Node", "NumaNode", "NvLink", "NvSwitch", "PciDevice", "Qos", "Unavailable",
    "from_dict", "json_schema", "to_dict",
]

# Silence "imported but unused" for names only used in annotations evaluated by get_type_hints.
_ = Optional
