"""Build a :class:`~ncclctl.model.Node` from a host root, a command runner and an NVML source.

Every read goes through the seams; this module only interprets. Under a fixture root a malformed value or
command output is an :class:`~ncclctl.errors.InputError` naming the file; on a live host an unparseable
command output degrades to an :class:`~ncclctl.model.Unavailable` entry instead (tools differ by version).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ncclctl.errors import InputError, NcclctlError, UsageError
from ncclctl.model import (
    C2c, ConfFile, Cpu, Dcbx, Ecn, Gid, Gpu, GpuPlatform, HostFacts, Imex, ImexPeer, IbPort, LldpNeighbor, NcclLibrary, NetDev, Nic, Node, NumaNode,
    NvLink, NvSwitch, PciDevice, Qos, REFUSED, Unavailable,
)
from ncclctl import sysfs as V
from ncclctl.probe.commands import CommandResult, LiveRunner, RecordedRunner, Runner
from ncclctl.probe.hostroot import HostRoot, Recorder
from ncclctl.probe.nvml import LiveNvml, NvmlSource, RecordedNvml, is_error

T = TypeVar("T")
if TYPE_CHECKING:
    from _typeshed import DataclassInstance  # the protocol dataclasses.replace takes; typeshed-only
D = TypeVar("D", bound="DataclassInstance")

_FABRIC_UUID = re.compile(r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$")

#: PCI classes the model keeps (prefix match on the sysfs class string).
KEEP_CLASSES = ("0x03", "0x02", "0x068000", "0x080100")


_NVLINK_REMOTE = {0: "gpu", 1: "cpu", 2: "nvswitch"}
#: NVML answers that mean "this GPU or driver has no such feature", not "could not be read".
_NVML_ABSENT = frozenset({"NotSupported", "FunctionNotFound"})
#: Per-GPU NVML fields for features many GPUs do not have.
_NVML_OPTIONAL = frozenset({"c2c", "fabric", "numa_node_id", "mig_mode", "platform"})


def probe(
    root: str | None = None,
    *,
    runner: Runner | None = None,
    nvml: NvmlSource | None = None,
    recorder: Recorder | None = None,
    roce_qos: bool = True,
) -> Node:
    """Probe the live host (``root`` None or ``/``) or a fixture directory into a Node.

    ``roce_qos=False`` leaves out the RoCE ports' QoS, ECN, DCBX and LLDP facts (their netdevs keep ``None`` there):
    the lint rules and the rail ids from LLDP need them, NCCL's topology and its model do not (``topo predict``
    without ``--fabric``/``--rail-map`` probes without them: fewer reads and parsers)."""
    live = root is None or root == "/"
    if not live and (isinstance(runner, LiveRunner) or isinstance(nvml, LiveNvml)):
        raise UsageError(
            "live commands or NVML cannot be mixed into a probe of a host root",
            fix="drop --root to probe this host, or probe the fixture alone",
        )
    host = HostRoot(root if root is not None else "/", recorder=recorder)
    if runner is None:
        runner = LiveRunner() if live else RecordedRunner(host.root)
    if nvml is None:
        nvml = LiveNvml() if live else RecordedNvml(host.root)
    return _Probe(host, runner, nvml, roce_qos=roce_qos).run()


class _Probe:
    def __init__(self, host: HostRoot, runner: Runner, nvml: NvmlSource, *, roce_qos: bool = True) -> None:
        self.host = host
        self.runner = runner
        self.nvml = nvml
        self.roce_qos = roce_qos
        self.unavailable: list[Unavailable] = []

    # Helpers -------------------------------------------------------------------------------------

    def value(self, path: str, parse: Callable[[str], T], *, what: str = "value") -> T | None:
        raw = self.host.read_value(path)
        if not raw:
            return None  # absent, unreadable, or empty: an empty sysfs attribute carries no value
        try:
            return parse(raw)
        except (ValueError, IndexError) as exc:
            raise InputError(
                f"unexpected {what} {raw[:60]!r}: {exc}",
                path=self.host.display(path),
                fix="the file is damaged or truncated; re-capture the host with 'ncclctl snapshot'",
            ) from None

    def required(self, path: str, parse: Callable[[str], T], *, what: str = "value") -> T:
        result = self.value(path, parse, what=what)
        if result is None:
            raise InputError(
                f"missing or empty {what}",
                path=self.host.display(path),
                fix="the host tree is incomplete; re-capture it with 'ncclctl snapshot'",
            )
        return result

    def command(self, argv: tuple[str, ...], parse: Callable[..., T], *, partial_ok: bool = False) -> T | None:
        """``partial_ok``: a command that exited non-zero after printing output (ibstat stops at the first CA it
        cannot stat) is parsed from that output; the parser says what was cut (``failure``), else the exit status is
        listed under ``unavailable``."""
        result: CommandResult = self.runner.run(argv)
        if not result.ok and partial_ok and result.partial:
            try:
                out = parse(result.partial, source=" ".join(argv))
            except NcclctlError:
                out = None
            if out is not None:
                if getattr(out, "failure", None) is None:
                    self.unavailable.append(Unavailable(source=" ".join(argv), reason=result.reason or "failed"))
                return out
        if not result.ok:
            if result.reason != "not captured" or self.host.live:
                self.unavailable.append(Unavailable(source=" ".join(argv), reason=result.reason or "failed"))
            return None
        source = result.source or " ".join(argv)
        try:
            return parse(result.stdout, source=source)
        except NcclctlError as exc:
            if self.host.live:
                self.unavailable.append(Unavailable(source=" ".join(argv), reason="unparseable output", detail=str(exc)))
                return None
            raise

    def optional_command(self, argv: tuple[str, ...], parse: Callable[..., T], *,
                         unparseable_is_absent: bool = False) -> T | None:
        """A command whose absence or failure is normal (a daemon not running): no marker then. Its output, when
        it gives some, is parsed like any other (a live host marks an unparseable one; a fixture's is an error),
        unless ``unparseable_is_absent`` (the tool reports "nothing there" as text)."""
        result: CommandResult = self.runner.run(argv)
        if not result.ok:
            return None
        source = result.source or " ".join(argv)
        try:
            return parse(result.stdout, source=source)
        except NcclctlError as exc:
            if unparseable_is_absent:
                return None
            if self.host.live:
                self.unavailable.append(Unavailable(source=" ".join(argv), reason="unparseable output", detail=str(exc)))
                return None
            raise

    # Top level -----------------------------------------------------------------------------------

    def run(self) -> Node:
        host = self.host
        hostname = host.read_value("/proc/sys/kernel/hostname") or "unknown"
        kernel = host.read_value("/proc/sys/kernel/osrelease")
        numa = self.numa()
        cpu = self._cut_procfs(self.cpu(), numa)
        pci = self.pci()
        nvml_doc = self.nvml.collect()
        gpus, nvswitches = self.gpus(pci, nvml_doc)
        sysfs_netdevs = self.netdevs()
        nics = self.nics(pci, sysfs_netdevs)
        netdevs = self.roce_state(nics, sysfs_netdevs) if self.roce_qos else tuple(sysfs_netdevs)
        facts = self.facts(kernel, nvml_doc, pci, gpus, nics, nvswitches)
        if host.denied:
            self.unavailable.append(
                Unavailable(source="sysfs", reason="permission denied", detail=", ".join(sorted(set(host.denied))[:8]))
            )
        if host.undecodable:
            self.unavailable.append(Unavailable(source="sysfs", reason="name is not UTF-8, left out",
                                                detail=", ".join(sorted(set(host.undecodable))[:8])))
        return Node(
            hostname=hostname,
            cpu=cpu,
            numa=numa,
            pci=tuple(pci.values()),
            gpus=gpus,
            nvswitches=nvswitches,
            nics=nics,
            netdevs=netdevs,
            facts=facts,
            unavailable=tuple(self.unavailable),
        )

    # CPU and NUMA --------------------------------------------------------------------------------

    def numa(self) -> tuple[NumaNode, ...]:
        base = "/sys/devices/system/node"
        online = self.value(f"{base}/online", V.parse_cpulist, what="NUMA node list")
        if online is None:
            self.unavailable.append(Unavailable(source="sysfs", reason="no NUMA information", detail=f"{base}/online"))
            return ()
        nodes = []
        for n in online:
            d = f"{base}/node{n}"
            cpulist = self.value(f"{d}/cpulist", lambda s: (V.parse_cpulist(s), s)[1], what="CPU list") or ""
            cpumap = self.value(f"{d}/cpumap", lambda s: (V.parse_cpumap(s), s)[1], what="cpumap") or ""
            dist = self.value(f"{d}/distance", lambda s: tuple(int(x) for x in s.split()), what="NUMA distances") or ()
            nodes.append(NumaNode(id=n, cpulist=cpulist, cpumap=cpumap, distances=dist))
        return tuple(nodes)

    def _cut_procfs(self, cpu: Cpu, numa: tuple[NumaNode, ...]) -> Cpu:
        """A snapshot taken by an ncclctl whose reader stopped at the first short read (before issue 25) holds the
        first page of each procfs file: /proc/cpuinfo lists fewer processors than the NUMA nodes' CPU lists. Then
        the CPU count is taken from sysfs, and what else comes from procfs (/proc/modules: the GPUDirect module
        checks) is said to be untrusted."""
        if self.host.live or not numa:
            return cpu
        in_numa = sum(len(V.parse_cpulist(n.cpulist)) for n in numa if n.cpulist)
        if in_numa <= cpu.logical_cpus:
            return cpu
        self.unavailable.append(Unavailable(
            source="procfs", reason="cut at its first page",
            detail=f"/proc/cpuinfo lists {cpu.logical_cpus} processors, the NUMA nodes "
                   f"{in_numa}: the snapshot's procfs files were cut by an ncclctl older than issue 25's fix "
                   "(CPU count taken from sysfs; /proc/modules may be missing modules, so module checks such as "
                   "GPUDirect RDMA's peer memory are not trusted); re-capture the host with 'ncclctl snapshot'"))
        from dataclasses import replace  # noqa: PLC0415

        return replace(cpu, logical_cpus=in_numa)

    def cpu(self) -> Cpu:
        text = self.host.read_text("/proc/cpuinfo")
        if text is None:
            self.unavailable.append(Unavailable(source="procfs", reason="no /proc/cpuinfo"))
            return Cpu(arch="unknown", vendor="unknown", family=None, model=None, model_name="", sockets=0, logical_cpus=0)
        return parse_cpuinfo(text, source=self.host.display("/proc/cpuinfo"))

    # PCI -----------------------------------------------------------------------------------------

    def pci(self) -> dict[str, PciDevice]:
        host = self.host
        base = "/sys/bus/pci/devices"
        names = host.listdir(base)
        if not names:
            self.unavailable.append(Unavailable(source="sysfs", reason="no PCI devices visible", detail=base))
        paths: dict[str, tuple[str, ...]] = {}
        for name in names:
            if not V.is_sysfs_bdf(name):
                continue
            real = host.resolve_link(f"{base}/{name}")
            if real is None:
                raise InputError("not a symlink into /sys/devices", path=host.display(f"{base}/{name}"),
                                 fix="bus/pci/devices entries must be the kernel's relative symlinks")
            cls = self.required(f"{base}/{name}/class", lambda s: V.parse_hex_id(s, 6), what="PCI class")
            if not cls.startswith(KEEP_CLASSES):
                continue
            paths[name] = _device_path(real, name, host.display(f"{base}/{name}"))
        # Every bridge above a kept device is kept too; order: by path so parents come first.
        wanted: dict[str, str] = {}
        for path in paths.values():
            prefix = "/sys/devices"
            for comp in path:
                prefix = f"{prefix}/{comp}"
                if V.is_sysfs_bdf(comp):
                    wanted.setdefault(comp, prefix)
        chains: dict[str, tuple[str, ...]] = {}
        for bdf, dirpath in wanted.items():
            parts = dirpath[len("/sys/devices/"):].split("/")
            chains[bdf] = tuple(parts)
        devices: dict[str, PciDevice] = {}
        roles: dict[str, str] = {}
        for bdf in sorted(chains, key=lambda b: (len(chains[b]), chains[b])):
            devices[bdf] = self._pci_device(bdf, wanted[bdf], chains[bdf], roles)
        if not host.live and any(d.acs_unknown and d.role != "endpoint" for d in devices.values()):
            devices = self._pci_from_lspci(devices)
        return dict(sorted(devices.items()))

    def _pci_from_lspci(self, devices: dict[str, PciDevice]) -> dict[str, PciDevice]:
        """A snapshot taken without root cannot read the bridges' extended config space (ACS): a recorded
        ``sudo lspci -vvv`` (``cmd/lspci_-vvv.txt``) gives their ACS registers, and link speed/width where sysfs has
        none. Only a recording: a live lspci without root cannot read them either."""
        from ncclctl.parsers.lspci import parse_lspci  # noqa: PLC0415

        out = self.optional_command(("lspci", "-vvv"), parse_lspci)
        if out is None:
            return devices
        seen = out.by_bdf()
        filled = []
        for bdf, dev in devices.items():
            row = seen.get(bdf)
            if row is None or row.access_denied:
                continue
            changes: dict = {}
            if dev.acs_unknown and row.acs_ctrl is not None:
                changes.update(acs_cap=row.acs_cap, acs_ctrl=row.acs_ctrl)
            for name in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width"):
                if getattr(dev, name) is None and getattr(row, name) is not None:
                    changes[name] = getattr(row, name)
            if changes:
                devices[bdf] = _replace(dev, **changes)
                filled.append(bdf)
        if filled:
            self.unavailable.append(Unavailable(
                source="sysfs", reason=f"PCI config space not readable: ACS and link state of {len(filled)} "
                                       "device(s) taken from the recorded lspci -vvv", detail=", ".join(filled[:8])))
        return devices

    def _pci_device(self, bdf: str, d: str, chain: tuple[str, ...], roles: dict[str, str]) -> PciDevice:
        cls = self.required(f"{d}/class", lambda s: V.parse_hex_id(s, 6), what="PCI class")
        is_bridge = cls.startswith("0x0604")
        parent = chain[-2] if len(chain) > 2 else None
        if not is_bridge:
            role = "endpoint"
        elif parent is None:
            role = "root_port"
        elif roles.get(parent) == "switch_upstream":
            role = "switch_downstream"
        elif roles.get(parent) in ("root_port", "switch_downstream"):
            role = "switch_upstream"
        else:
            role = "bridge"
        roles[bdf] = role
        hex4 = lambda s: V.parse_hex_id(s, 4)  # noqa: E731
        numa = self.value(f"{d}/numa_node", V.parse_int, what="NUMA node")
        width = lambda s: V.parse_int(s)  # noqa: E731
        cur_speed = self.value(f"{d}/current_link_speed", _speed_string, what="link speed")
        max_speed = self.value(f"{d}/max_link_speed", _speed_string, what="link speed")
        group = self.host.link_basename(f"{d}/iommu_group")
        acs_cap = acs_ctrl = config_bytes = None
        vendor = self.required(f"{d}/vendor", hex4, what="PCI vendor id")
        vpd_v3 = ats = None
        if is_bridge:
            config = self.host.read_bytes(f"{d}/config", limit=4096)
            if config is not None:
                config_bytes = len(config)
                acs = find_acs(config)
                if acs is not None:
                    acs_cap, acs_ctrl = acs
        elif vendor == "0x15b3":
            # ConnectX PFs and the ConnectX-8 Data Direct DMA function: the VPD's V3 pairs them (rdma-core
            # kernel-boot/rdma_topo does the same), the ATS capability says whether the NIC translates addresses.
            # Both files are readable by root only.
            config = self.host.read_bytes(f"{d}/config", limit=4096)
            if config is not None:
                config_bytes = len(config)
                ats = find_ext_cap(config, 0x000F) is not None if len(config) >= 0x104 else None
            vpd = self.host.read_bytes(f"{d}/vpd", limit=32768)
            if vpd:
                vpd_v3 = vpd_keywords(vpd).get("V3")
        return PciDevice(
            bdf=bdf,
            role=role,
            path=chain,
            class_code=cls,
            vendor=vendor,
            device=self.required(f"{d}/device", hex4, what="PCI device id"),
            subsystem_vendor=self.value(f"{d}/subsystem_vendor", hex4, what="PCI subsystem vendor id"),
            subsystem_device=self.value(f"{d}/subsystem_device", hex4, what="PCI subsystem device id"),
            numa_node=numa,
            current_link_speed=cur_speed,
            current_link_width=self.value(f"{d}/current_link_width", width, what="link width"),
            max_link_speed=max_speed,
            max_link_width=self.value(f"{d}/max_link_width", width, what="link width"),
            driver=self.host.link_basename(f"{d}/driver"),
            iommu_group=int(group) if group and group.isdigit() else None,
            is_vf=self.host.readlink(f"{d}/physfn") is not None,
            acs_cap=acs_cap,
            acs_ctrl=acs_ctrl,
            config_bytes=config_bytes,
            vpd_v3=vpd_v3,
            ats=ats,
            local_cpus=(self.value(f"{d}/local_cpus", lambda s: (V.parse_cpumap(s), s)[1], what="cpumap")
                        if numa == -1 and role == "endpoint" else None),
        )

    # GPUs ----------------------------------------------------------------------------------------

    def gpus(self, pci: dict[str, PciDevice], doc: dict) -> tuple[tuple[Gpu, ...], tuple[NvSwitch, ...]]:
        nvswitches = tuple(
            NvSwitch(bdf=d.bdf, device=d.device, numa_node=d.numa_node)
            for d in pci.values()
            if d.class_code.startswith("0x068000") and d.vendor == "0x10de"
        )
        switch_bdfs = {s.bdf for s in nvswitches}
        pci_gpus = [d for d in pci.values() if d.class_code.startswith("0x03") and d.vendor == "0x10de"]
        init = doc.get("init", "ok")
        count = doc.get("device_count")
        if init == "ok" and is_error(count):
            # nvmlDeviceGetCount failed: no device list, so fall back to the PCI view like a failed init.
            init = count["error"]
            self.unavailable.append(Unavailable(source="nvml", reason=str(init), detail="device count"))
        elif init != "ok":
            self.unavailable.append(Unavailable(source="nvml", reason=str(init)))
        if init != "ok":
            gpus = tuple(
                Gpu(index=i, bdf=d.bdf, name=f"NVIDIA {d.device}", numa_node=d.numa_node, source="pci")
                for i, d in enumerate(sorted(pci_gpus, key=lambda d: d.bdf))
            )
            return self._smi_fabric(gpus), nvswitches
        where = "nvml.json" if not self.host.live else "NVML"
        found: list[Gpu] = []
        for raw in doc.get("devices", []):
            if not isinstance(raw, dict) or not isinstance(raw.get("index"), int):
                raise InputError("NVML device entry without an integer index", path=self._nvml_path(),
                                 fix="see docs/fixture-format.md for the nvml.json layout")
            index = raw["index"]
            if "error" in raw:
                self.unavailable.append(Unavailable(source="nvml", reason=str(raw["error"]), detail=f"GPU {index}"))
                continue
            pci_info = raw.get("pci")
            bus = pci_info.get("busId") if isinstance(pci_info, dict) else None
            if not isinstance(bus, str):
                self.unavailable.append(Unavailable(source="nvml", reason="no PCI bus id", detail=f"GPU {index}"))
                continue
            try:
                bdf = V.normalize_bdf(bus)
            except ValueError as exc:
                raise InputError(f"GPU {index}: {exc}", path=self._nvml_path()) from None
            dev = pci.get(bdf)
            if dev is None:
                self.unavailable.append(
                    Unavailable(source="sysfs", reason="GPU not visible in /sys/bus/pci/devices", detail=f"GPU {index} {bdf}")
                )
            found.append(self._gpu(raw, index, bdf, dev, pci, switch_bdfs, where))
        found.sort(key=lambda g: g.index)
        return tuple(found), nvswitches

    def _nvml_path(self) -> str:
        return "NVML" if self.host.live else self.host.root + "/nvml.json"

    def _nvml_field_errors(self, raw: dict, index: int) -> None:
        """An explicit ``unavailable`` entry for every NVML query of this GPU that failed (NoPermission,
        GpuIsLost, Unknown, ...); NotSupported/FunctionNotFound only for what every GPU has (not for the
        optional features: C2C, fabric, NUMA id, MIG, NVLink details)."""
        fields: list[tuple[str, Any]] = [(k, raw.get(k)) for k in (
            "uuid", "name", "serial", "cuda_compute_capability", "persistence_mode", "mig_mode", "c2c", "fabric",
            "numa_node_id", "platform")]
        pcie = raw.get("pcie")
        if isinstance(pcie, dict):
            fields += [(f"pcie {k}", v) for k, v in pcie.items()]
        nvlinks = raw.get("nvlinks")
        for entry in nvlinks if isinstance(nvlinks, list) else ():
            if isinstance(entry, dict):
                fields += [(f"NVLink {entry.get('link')} {k}", v) for k, v in entry.items()
                           if k not in ("link", "state")]  # a failed state is reported where it is read
        for name, value in fields:
            if not is_error(value):
                continue
            reason = str(value["error"])
            optional = name in _NVML_OPTIONAL or name.startswith("NVLink ")
            if optional and reason in _NVML_ABSENT:
                continue
            self.unavailable.append(Unavailable(source="nvml", reason=reason, detail=f"GPU {index} {name}"))

    def _gpu(self, raw: dict, index: int, bdf: str, dev: PciDevice | None, pci: dict[str, PciDevice],
             switch_bdfs: set[str], where: str) -> Gpu:
        ok = lambda v: None if is_error(v) else v  # noqa: E731
        self._nvml_field_errors(raw, index)
        cc = ok(raw.get("cuda_compute_capability"))
        sm = cc[0] * 10 + cc[1] if isinstance(cc, list) and len(cc) == 2 and all(isinstance(x, int) for x in cc) else None
        mig = ok(raw.get("mig_mode"))
        pcie_raw = raw.get("pcie")
        pcie = pcie_raw if isinstance(pcie_raw, dict) else {}
        links = []
        if not isinstance(raw.get("nvlinks", []), (list, type(None))):
            raise InputError(f"GPU {index}: 'nvlinks' must be a list", path=self._nvml_path(),
                             fix="see docs/fixture-format.md for the nvml.json layout")
        for entry in raw.get("nvlinks", []) or []:
            if not isinstance(entry, dict) or not isinstance(entry.get("link"), int):
                raise InputError(f"GPU {index}: malformed NVLink entry", path=self._nvml_path())
            state = entry.get("state")
            if is_error(state):
                self.unavailable.append(Unavailable(source="nvml", reason=state["error"], detail=f"GPU {index} NVLink {entry['link']} state"))
                continue
            remote_raw = ok(entry.get("remote_bus_id"))
            remote = None
            if isinstance(remote_raw, str):
                try:
                    remote = V.normalize_bdf(remote_raw)
                except ValueError:
                    remote = None
                if remote is not None and remote.startswith("0000:00:00."):
                    remote = None
            rtype_code = ok(entry.get("remote_device_type"))
            if isinstance(rtype_code, int) and rtype_code in _NVLINK_REMOTE:
                rtype = _NVLINK_REMOTE[rtype_code]
            elif remote in switch_bdfs:
                rtype = "nvswitch"
            elif remote is not None and remote in pci and pci[remote].class_code.startswith("0x03"):
                rtype = "gpu"
            else:
                rtype = "unknown"
            p2p = ok(entry.get("p2p_supported"))
            version = ok(entry.get("version"))
            links.append(NvLink(
                link=entry["link"], active=state == 1, remote_type=rtype, remote_bdf=remote,
                version=version if isinstance(version, int) else None,
                p2p_supported=bool(p2p) if isinstance(p2p, int) else None,
            ))
        c2c_raw = ok(raw.get("c2c"))
        c2c = C2c(count=c2c_raw["count"], max_bw=c2c_raw.get("max_bw")) if isinstance(c2c_raw, dict) and c2c_raw.get("count") else None
        fabric = self._fabric_info(ok(raw.get("fabric")), index)
        platform = self._platform_info(ok(raw.get("platform")), index)
        persistence = ok(raw.get("persistence_mode"))
        name = ok(raw.get("name"))
        return Gpu(
            index=index,
            bdf=bdf,
            name=name if isinstance(name, str) else "NVIDIA GPU",
            uuid=ok(raw.get("uuid")),
            sm=sm,
            numa_node=dev.numa_node if dev else None,
            nvlinks=tuple(links),
            c2c=c2c,
            persistence_mode=bool(persistence) if isinstance(persistence, int) else None,
            mig_current=bool(mig[0]) if isinstance(mig, list) and len(mig) == 2 else None,
            mig_pending=bool(mig[1]) if isinstance(mig, list) and len(mig) == 2 else None,
            pcie_max_gen=_int_or_none(pcie.get("max_gen")),
            pcie_max_width=_int_or_none(pcie.get("max_width")),
            pcie_curr_gen=_int_or_none(pcie.get("curr_gen")),
            pcie_curr_width=_int_or_none(pcie.get("curr_width")),
            fabric_state=fabric.get("state"),
            fabric_status=fabric.get("status"),
            serial=ok(raw.get("serial")),
            fabric_cluster_uuid=fabric.get("cluster_uuid"),
            fabric_clique_id=fabric.get("clique_id"),
            fabric_health_mask=fabric.get("health_mask"),
            fabric_health_summary=fabric.get("health_summary"),
            fabric_source="nvml" if fabric.get("state") is not None else None,
            platform=platform,
        )

    def _smi_fabric(self, gpus: tuple[Gpu, ...]) -> tuple[Gpu, ...]:
        """Without NVML: the GPU fabric facts from a recorded (or live) ``nvidia-smi -q`` Fabric section, matched to
        the PCI GPUs by bus id (``fabric_source`` ``nvidia-smi``)."""
        if not gpus:
            return gpus
        from dataclasses import replace  # noqa: PLC0415

        from ncclctl.parsers.smi_query import parse_nvidia_smi_q_fabric  # noqa: PLC0415

        found = self.command(("nvidia-smi", "-q"), parse_nvidia_smi_q_fabric)
        if not found:
            return gpus
        by_bdf = {}
        for f in found:
            try:
                by_bdf[V.normalize_bdf(f.bus_id)] = f
            except ValueError:
                continue
        out = []
        for g in gpus:
            rec = by_bdf.get(g.bdf)
            if rec is None:
                out.append(g)
                continue
            out.append(replace(g, fabric_state=rec.state, fabric_status=rec.status,
                               fabric_cluster_uuid=rec.cluster_uuid, fabric_clique_id=rec.clique_id,
                               fabric_health_mask=rec.health_mask, fabric_health_summary=rec.health_summary,
                               fabric_source="nvidia-smi"))
        return tuple(out)

    def _fabric_info(self, raw: Any, index: int) -> dict[str, Any]:
        """The recorded ``fabric`` entry of one GPU, checked: integers where NVML returns integers, the cluster UUID
        in its canonical form (lowercase); {} when NVML did not answer."""
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise InputError(f"GPU {index}: 'fabric' must be an object", path=self._nvml_path(),
                             fix="see docs/fixture-format.md for the nvml.json layout")
        out: dict[str, Any] = {}
        for key in ("state", "status", "clique_id", "health_mask", "health_summary"):
            value = raw.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 0xFFFFFFFF:
                raise InputError(f"GPU {index}: fabric {key} must be an unsigned 32-bit integer, not {value!r}",
                                 path=self._nvml_path(), fix="see docs/fixture-format.md for the nvml.json layout")
            out[key] = value
        uuid = raw.get("cluster_uuid")
        if uuid is not None:
            if not isinstance(uuid, str) or not _FABRIC_UUID.match(uuid):
                raise InputError(f"GPU {index}: fabric cluster_uuid {uuid!r} is not a UUID (8-4-4-4-12 hex digits)",
                                 path=self._nvml_path(), fix="see docs/fixture-format.md for the nvml.json layout")
            out["cluster_uuid"] = uuid.lower()
        return out

    def _platform_info(self, raw: Any, index: int) -> GpuPlatform | None:
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise InputError(f"GPU {index}: 'platform' must be an object", path=self._nvml_path(),
                             fix="see docs/fixture-format.md for the nvml.json layout")
        serial = raw.get("chassis_serial")
        ints: dict[str, int | None] = {}
        for key in ("slot_number", "tray_index", "host_id", "peer_type", "module_id"):
            value = raw.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise InputError(f"GPU {index}: platform {key} must be a non-negative integer, not {value!r}",
                                 path=self._nvml_path(), fix="see docs/fixture-format.md for the nvml.json layout")
            ints[key] = value
        return GpuPlatform(chassis_serial=serial if isinstance(serial, str) and serial else None, **ints)

    # Netdevs -------------------------------------------------------------------------------------

    def netdevs(self) -> list[NetDev]:
        from ncclctl.parsers.iplink import parse_ip_link_json  # noqa: PLC0415

        host = self.host
        base = "/sys/class/net"
        kinds: dict[str, Any] = {}
        links = self.command(("ip", "-j", "-d", "link", "show"), parse_ip_link_json)
        for link in links or ():
            kinds[link.ifname] = link
        families = self._address_families()
        out = []
        for name in host.listdir(base):
            d = f"{base}/{name}"
            real = host.resolve_link(d)
            if real is None and not host.is_dir(d):
                continue
            device = host.resolve_link(f"{d}/device")
            bdf = _nearest_bdf(device)
            info = kinds.get(name)
            kind = "physical" if bdf else "virtual"
            if info is not None and getattr(info, "kind", None):
                kind = info.kind
            elif name == "lo":
                kind = "loopback"
            out.append(NetDev(
                name=name,
                mtu=self.value(f"{d}/mtu", V.parse_int, what="MTU"),
                operstate=host.read_value(f"{d}/operstate"),
                address=host.read_value(f"{d}/address"),
                type=self.value(f"{d}/type", V.parse_int, what="ARPHRD type"),
                # Every interface but the loopback: NCCL's socket transport reads the speed of whichever it uses
                # (a bond's is its slaves' sum); unreadable (virtio, some VFs) is None.
                speed_mbps=self.value(f"{d}/speed", V.parse_int, what="link speed") if name != "lo" else None,
                ifindex=self.value(f"{d}/ifindex", V.parse_int, what="interface index"),
                flags=self.value(f"{d}/flags", lambda v: int(v, 16), what="interface flags"),
                inet=None if families is None else tuple(
                    f for f, names in (("inet", families[0]), ("inet6", families[1])) if name in names
                    or (f == "inet" and name == "lo")),
                device_name=device.rsplit("/", 1)[-1] if device else None,
                bdf=bdf,
                kind=kind,
                master=getattr(info, "master", None) if info is not None else None,
                parent=getattr(info, "link", None) if info is not None else None,
            ))
        return out

    def _address_families(self) -> tuple[frozenset[str], frozenset[str]] | None:
        """(interfaces with an IPv4 address, with an IPv6 address other than ::1) from procfs, or None when
        neither file is there (an older snapshot, a host tree without them)."""
        from ncclctl.parsers.procnet import parse_if_inet6, parse_route  # noqa: PLC0415

        route = self.host.read_text("/proc/net/route")
        inet6 = self.host.read_text("/proc/net/if_inet6")
        if route is None and inet6 is None:
            return None
        v4 = parse_route(route, source=self.host.display("/proc/net/route")) if route is not None else frozenset()
        v6 = (parse_if_inet6(inet6, source=self.host.display("/proc/net/if_inet6")) if inet6 is not None
              else frozenset())
        return v4, v6

    # RDMA ----------------------------------------------------------------------------------------

    def nics(self, pci: dict[str, PciDevice], netdevs: list[NetDev]) -> tuple[Nic, ...]:
        host = self.host
        base = "/sys/class/infiniband"
        names = host.listdir(base)
        by_bdf: dict[str, list[str]] = {}
        for nd in netdevs:
            if nd.bdf:
                by_bdf.setdefault(nd.bdf, []).append(nd.name)
        if not names:
            if any(d.class_code.startswith("0x0207") or (d.vendor == "0x15b3" and d.class_code.startswith("0x02"))
                   for d in pci.values()):
                return self._nics_from_ibstat(by_bdf)
            return ()
        from ncclctl.parsers.ibv_devinfo import parse_ibv_devinfo  # noqa: PLC0415

        devinfo = {h.name: h for h in (self.command(("ibv_devinfo", "-v"), parse_ibv_devinfo) or ())}
        nics = []
        for name in names:
            d = f"{base}/{name}"
            device = host.resolve_link(f"{d}/device")
            bdf = _nearest_bdf(device)
            ports = []
            dev_ports = {p.num: p for p in devinfo[name].ports} if name in devinfo else {}
            for pname in host.listdir(f"{d}/ports"):
                if not pname.isdigit():
                    continue
                ports.append(self._port(f"{d}/ports/{pname}", int(pname), dev_ports.get(int(pname)), by_bdf.get(bdf or "", [])))
            guid = lambda s: V.parse_guid(s)  # noqa: E731
            node_type = host.read_value(f"{d}/node_type")
            nics.append(Nic(
                name=name,
                bdf=bdf,
                node_type=node_type.partition(": ")[2] or node_type if node_type else None,
                node_guid=self.value(f"{d}/node_guid", guid, what="node GUID"),
                sys_image_guid=self.value(f"{d}/sys_image_guid", guid, what="system image GUID"),
                fw_ver=host.read_value(f"{d}/fw_ver"),
                hca_type=host.read_value(f"{d}/hca_type"),
                board_id=host.read_value(f"{d}/board_id"),
                node_desc=host.read_value(f"{d}/node_desc"),
                ports=tuple(sorted(ports, key=lambda p: p.num)),
                netdevs=tuple(by_bdf.get(bdf or "", [])),
                max_qp=getattr(devinfo.get(name), "max_qp", None),
            ))
        return tuple(nics)

    def _port(self, d: str, num: int, info: Any, fn_netdevs: list[str]) -> IbPort:
        host = self.host
        state = self.required(f"{d}/state", V.parse_numbered_state, what="port state")
        phys = self.value(f"{d}/phys_state", V.parse_numbered_state, what="physical port state")
        rate = host.read_value(f"{d}/rate")
        rate_gbps = self.value(f"{d}/rate", V.parse_ib_rate, what="port rate")
        link_layer = host.read_value(f"{d}/link_layer") or "InfiniBand"
        gids = []
        ethernet = link_layer == "Ethernet"
        for gname in host.listdir(f"{d}/gids"):
            if not gname.isdigit():
                continue
            gid = self.value(f"{d}/gids/{gname}", V.parse_gid, what="GID")
            if gid is None or V.gid_is_zero(gid):
                continue
            gtype = host.read_value(f"{d}/gid_attrs/types/{gname}") if ethernet else None
            gndev = host.read_name(f"{d}/gid_attrs/ndevs/{gname}") if ethernet else None
            gids.append(Gid(index=int(gname), gid=gid, type=gtype or None, netdev=gndev or None))
        gids.sort(key=lambda g: g.index)
        netdev = next((g.netdev for g in gids if g.netdev), None)
        if netdev is None and len(fn_netdevs) == 1:
            netdev = fn_netdevs[0]
        return IbPort(
            num=num,
            state=state[1],
            phys_state=phys[1] if phys else "unknown",
            link_layer=link_layer,
            rate_gbps=rate_gbps,
            rate=rate,
            lid=self.value(f"{d}/lid", V.parse_hex, what="LID"),
            sm_lid=self.value(f"{d}/sm_lid", V.parse_hex, what="SM LID"),
            lmc=self.value(f"{d}/lid_mask_count", V.parse_int, what="LMC"),
            cap_mask=self.value(f"{d}/cap_mask", V.parse_hex, what="capability mask"),
            gids=tuple(gids),
            active_mtu=getattr(info, "active_mtu", None),
            max_mtu=getattr(info, "max_mtu", None),
            active_width=getattr(info, "active_width", None),
            active_speed_gbps=getattr(info, "active_speed_gbps", None),
            netdev=netdev,
        )

    def _nics_from_ibstat(self, by_bdf: dict[str, list[str]]) -> tuple[Nic, ...]:
        from ncclctl.parsers.ibstat import parse_ibstat  # noqa: PLC0415

        cas = self.command(("ibstat",), parse_ibstat, partial_ok=True)
        if cas is None:
            self.unavailable.append(Unavailable(source="rdma", reason="no /sys/class/infiniband and no ibstat"))
            return ()
        nics = []
        failure = getattr(cas, "failure", None)
        if failure is not None:
            line, lineno = failure
            self.unavailable.append(Unavailable(
                source="ibstat", reason=f"aborted after {len(cas)} CA(s): the rest of the CAs are not known",
                detail=f"line {lineno}: {line}"))
        for ca in cas:
            ports = tuple(
                # ibstat without a "Link layer" line (releases before RoCE) is InfiniBand, as a missing sysfs
                # link_layer file is in _port; None would make a model that fails its own schema.
                IbPort(num=p.num, state=p.state.upper(), phys_state=p.phys_state,
                       link_layer=p.link_layer or "InfiniBand", rate_gbps=p.rate, lid=p.base_lid, sm_lid=p.sm_lid,
                       lmc=p.lmc, cap_mask=p.cap_mask)
                for p in ca.ports
            )
            nics.append(Nic(name=ca.name, bdf=None, node_type=ca.node_type, node_guid=f"0x{ca.node_guid:016x}",
                            sys_image_guid=f"0x{ca.sys_image_guid:016x}", fw_ver=ca.fw_ver, hca_type=ca.ca_type,
                            ports=ports))
        self.unavailable.append(Unavailable(source="sysfs", reason="no /sys/class/infiniband; NICs from ibstat, without PCI placement"))
        return tuple(nics)

    def roce_state(self, nics: tuple[Nic, ...], netdevs: list[NetDev]) -> tuple[NetDev, ...]:
        """Attach QoS, ECN and LLDP facts to the netdevs of Ethernet (RoCE) RDMA ports."""
        roce = {p.netdev for n in nics for p in n.ports if p.link_layer == "Ethernet" and p.netdev}
        if not roce:
            return tuple(netdevs)
        # RoCE LAG (mlx5_bond_0 on bond0): PFC, trust, ECN and LLDP live on the bond's physical slaves.
        bonds = {nd.name for nd in netdevs if nd.name in roce and nd.kind == "bond"}
        roce = (roce - bonds) | {nd.name for nd in netdevs if nd.master in bonds}
        from ncclctl.parsers.lldp import parse_lldpctl_json  # noqa: PLC0415

        lldp = {}
        for nb in self.command(("lldpctl", "-f", "json"), parse_lldpctl_json) or ():
            lldp[nb.interface] = LldpNeighbor(chassis_name=nb.chassis_name, chassis_id=nb.chassis_id,
                                              port_id=nb.port_id, port_descr=nb.port_descr)
        out = []
        for nd in netdevs:
            if nd.name in roce:
                nd = _replace(nd, qos=self._qos(nd.name), ecn=self._ecn(nd.name),
                              lldp=lldp.get(nd.name) or self._lldptool_neighbor(nd.name), dcbx=self._dcbx(nd.name))
            out.append(nd)
        return tuple(out)

    def _qos(self, ifname: str) -> Qos | None:
        from ncclctl.parsers.dcb import parse_dcb_pfc  # noqa: PLC0415
        from ncclctl.parsers.mlnx_qos import parse_mlnx_qos  # noqa: PLC0415

        q = self.command(("mlnx_qos", "-i", ifname), parse_mlnx_qos)
        if q is not None:
            return Qos(source="mlnx_qos", trust=q.trust, pfc_enabled=tuple(q.pfc_enabled),
                       dscp2prio=tuple(q.dscp2prio) if q.trust == "dscp" else None, dcbx_mode=q.dcbx_mode)
        trust = self.host.read_value(f"/sys/class/net/{ifname}/qos/trust")
        pfc = self.command(("dcb", "-j", "pfc", "show", "dev", ifname), parse_dcb_pfc)
        if pfc is None and trust is None:
            return None
        dscp2prio = None
        if trust is None and pfc is not None:
            trust, dscp2prio = self._inbox_trust(ifname)
        return Qos(source="dcb" if pfc is not None else "sysfs", trust=trust,
                   pfc_enabled=tuple(pfc.prio_pfc) if pfc is not None else None, dscp2prio=dscp2prio)

    def _inbox_trust(self, ifname: str) -> tuple[str | None, tuple[tuple[int, int], ...] | None]:
        """The inbox mlx5 driver has no qos/trust file: its trust state follows the DCB APP table (the first
        DSCP entry switches the port to trust dscp, removing the last one back to pcp; drivers/net/ethernet/
        mellanox/mlx5/core/en_dcbnl.c), and its DSCP map is the firmware default (DSCP >> 3) with the APP
        entries applied. Other drivers: unknown."""
        from ncclctl.parsers.dcb import parse_dcb_app  # noqa: PLC0415

        if self.host.link_basename(f"/sys/class/net/{ifname}/device/driver") != "mlx5_core":
            return None, None
        app = self.command(("dcb", "-j", "app", "show", "dev", ifname), parse_dcb_app)
        if app is None:
            return None, None
        if not app.dscp_prio:
            return "pcp", None
        table = {d: d >> 3 for d in range(64)}
        entries: dict[int, int] = {}
        for dscp, prio in app.dscp_prio:  # a DSCP listed twice: the NIC keeps the last write (unknown): the higher
            entries[dscp] = max(prio, entries.get(dscp, prio))
        table.update(entries)
        return "dscp", tuple(sorted(table.items()))

    def _lldptool_neighbor(self, ifname: str) -> LldpNeighbor | None:
        """The switch port behind ``ifname`` from lldpad (``lldptool -t -n -i``) when lldpd gave none: hosts that run
        lldpad for DCBX have no lldpctl. No lldpad, or no neighbour yet (an error text), is no neighbour."""
        from ncclctl.parsers.lldp import parse_lldptool_neighbor  # noqa: PLC0415

        nb = self.optional_command(("lldptool", "-t", "-n", "-i", ifname),
                                   lambda text, source: parse_lldptool_neighbor(text, source=source, interface=ifname),
                                   unparseable_is_absent=True)
        if nb is None:
            return None
        return LldpNeighbor(chassis_name=nb.chassis_name, chassis_id=nb.chassis_id, port_id=nb.port_id,
                            port_descr=nb.port_descr)

    def _dcbx(self, ifname: str) -> Dcbx | None:
        """lldpad's DCBX PFC TLVs, when lldpad runs: most hosts configure PFC with mlnx_qos/dcb and run no lldpad,
        so a missing or failing lldptool is not a gap worth a marker."""
        from ncclctl.parsers.lldp import parse_lldptool_pfc  # noqa: PLC0415

        local = self.optional_command(("lldptool", "-t", "-i", ifname, "-V", "PFC"), parse_lldptool_pfc)
        if local is None:
            return None
        # With no TLV received from the switch lldptool prints an error (exit status 0 on some versions): no peer.
        peer = self.optional_command(("lldptool", "-t", "-n", "-i", ifname, "-V", "PFC"), parse_lldptool_pfc,
                                     unparseable_is_absent=True)
        return Dcbx(willing=local.willing, local_pfc=tuple(local.enabled),
                    peer_willing=None if peer is None else peer.willing,
                    peer_pfc=None if peer is None else tuple(peer.enabled))

    def _ecn(self, ifname: str) -> Ecn | None:
        base = f"/sys/class/net/{ifname}/ecn"
        np_ = tuple(self.value(f"{base}/roce_np/enable/{p}", _bool01, what="ECN enable flag") for p in range(8))
        rp = tuple(self.value(f"{base}/roce_rp/enable/{p}", _bool01, what="ECN enable flag") for p in range(8))
        if all(v is None for v in np_ + rp):
            return None
        return Ecn(np_enabled=np_, rp_enabled=rp)

    # Host facts ----------------------------------------------------------------------------------

    def facts(self, kernel: str | None, doc: dict, pci: dict[str, PciDevice], gpus: tuple[Gpu, ...],
              nics: tuple[Nic, ...], nvswitches: tuple[NvSwitch, ...]) -> HostFacts:
        host = self.host
        modules_text = host.read_text("/proc/modules") or ""
        modules = tuple(sorted(line.split()[0] for line in modules_text.splitlines() if line.strip()))
        version_text = host.read_text("/proc/driver/nvidia/version")
        nvidia_module = None
        if version_text:
            nvidia_module = "open" if "Open Kernel Module" in version_text else "proprietary"
        from ncclctl.nccl.gdr import PEERMEM_FILES

        peermem = tuple(name for name, path in PEERMEM_FILES if host.exists(path))
        iommu_units = tuple(host.listdir("/sys/class/iommu"))
        groups = sorted({d.iommu_group for d in pci.values() if d.iommu_group is not None and d.role == "endpoint"})
        group_types = []
        for g in groups:
            t = host.read_value(f"/sys/kernel/iommu_groups/{g}/type")
            if t:
                group_types.append((g, t))
        env = host.environ()
        nccl_env = tuple(sorted((k, v) for k, v in env.items() if k.startswith("NCCL_")))
        conf_files = []
        user_conf = env.get("NCCL_CONF_FILE") or (env["HOME"].rstrip("/") + "/.nccl.conf" if env.get("HOME") else None)
        for path in (user_conf, "/etc/nccl.conf"):
            if path and path.startswith("/"):
                text = host.read_text(path)
                if text is not None:
                    conf_files.append(ConfFile(path=path, text=text))
        vt_path = "/var/run/nvidia-topologyd/virtualTopology.xml"
        vt_text = host.read_text(vt_path)
        topo_file = self._nccl_file(nccl_env, conf_files, "NCCL_TOPO_FILE")
        graph_file = self._nccl_file(nccl_env, conf_files, "NCCL_GRAPH_FILE")
        fm = None
        if nvswitches or any(link.remote_type == "nvswitch" for g in gpus for link in g.nvlinks):
            res = self.runner.run(("systemctl", "is-active", "nvidia-fabricmanager"))
            if res.ok:
                fm = (res.stdout or "").strip() or None
            elif res.reason and res.reason.startswith("rc="):
                fm = "inactive"
        imex = self._imex(gpus)
        driver = doc.get("driver_version")
        cuda = doc.get("cuda_driver_version")
        for what, value in (("driver version", driver), ("CUDA driver version", cuda)):
            if is_error(value):
                self.unavailable.append(Unavailable(source="nvml", reason=str(value["error"]), detail=what))
        return HostFacts(
            kernel=kernel,
            cmdline=host.read_value("/proc/cmdline"),
            modules=modules,
            driver_version=driver if isinstance(driver, str) else None,
            cuda_driver_version=cuda if isinstance(cuda, int) and not isinstance(cuda, bool) else None,
            nvidia_module=nvidia_module,
            peermem=peermem,
            iommu_units=iommu_units,
            iommu_group_types=tuple(group_types),
            nccl_env=nccl_env,
            conf_files=tuple(conf_files),
            virtual_topology=ConfFile(path=vt_path, text=vt_text) if vt_text is not None else None,
            fabric_manager=fm,
            topo_file=topo_file,
            graph_file=graph_file,
            nccl_libraries=self._nccl_libraries(),
            imex=imex,
        )

    def _imex(self, gpus: tuple[Gpu, ...]) -> Imex | None:
        """The IMEX service, on a node whose GPUs registered with a multi-node NVLink fabric (a cluster UUID or
        clique id from NVML) or that has an IMEX install (/etc/nvidia-imex); None elsewhere: nothing is read."""
        from ncclctl.parsers.imex import (  # noqa: PLC0415
            parse_fib_trie_local, parse_imex_config, parse_imex_ctl, parse_nodes_config)

        host = self.host
        fabric = any(g.fabric_cluster_uuid is not None or g.fabric_clique_id is not None for g in gpus)
        if not fabric and not host.is_dir("/etc/nvidia-imex"):
            return None
        cfg_text = host.read_text("/etc/nvidia-imex/config.cfg")
        cfg = parse_imex_config(cfg_text or "", source=host.display("/etc/nvidia-imex/config.cfg"))
        nodes_path = cfg.get("IMEX_NODE_CONFIG_FILE") or "/etc/nvidia-imex/nodes_config.cfg"
        nodes = None
        if nodes_path.startswith("/"):
            text = host.read_text(nodes_path)
            if text is not None:
                nodes = parse_nodes_config(text, source=host.display(nodes_path))
        channels: tuple[int, ...] | None = None
        chan_dir = "/dev/nvidia-caps-imex-channels"
        if host.is_dir(chan_dir):
            found = []
            for name in host.listdir(chan_dir):
                m = re.fullmatch(r"channel(\d+)", name)
                if m and host.exists(f"{chan_dir}/{name}"):
                    found.append(int(m.group(1)))
            channels = tuple(sorted(found))
        major = None
        for line in (host.read_text("/proc/devices") or "").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] == "nvidia-caps-imex-channels" and parts[0].isdigit():
                major = int(parts[0])
        service = None
        res = self.runner.run(("systemctl", "is-active", "nvidia-imex"))
        if res.ok or res.partial:  # is-active prints the state and exits 3 unless active
            lines = (res.stdout or res.partial or "").strip().splitlines()
            service = lines[0].strip() if lines else None
        elif res.reason and res.reason.startswith("rc="):
            service = "inactive"
        elif res.reason == "not installed":
            service = "not installed"
        ctl = self.command(("nvidia-imex-ctl", "-N"), parse_imex_ctl)
        peers = tuple(ImexPeer(index=n.index, address=n.address, status=n.status, version=n.version)
                      for n in ctl.nodes) if ctl else ()
        trie = host.read_text("/proc/net/fib_trie")
        local = parse_fib_trie_local(trie, source=host.display("/proc/net/fib_trie")) if trie is not None else None
        return Imex(service=service, nodes_config_path=nodes_path, nodes=nodes, channels=channels,
                    channels_major=major, domain_state=ctl.domain_state if ctl else None, peers=peers,
                    local_addresses=local)

    def _nccl_libraries(self) -> tuple[NcclLibrary, ...] | None:
        """Live: the libraries found (:mod:`ncclctl.probe.ncclib`); a snapshot: its ``nccl.json``, or None."""
        from ncclctl.probe import ncclib  # noqa: PLC0415

        if self.host.live:
            import os  # noqa: PLC0415

            return tuple(ncclib.find_libraries(dict(os.environ)))  # the loader's variables, not just NCCL_*
        raw = self.host.read_bytes("/nccl.json", kind="nvml")
        if raw is None:
            return None
        import json  # noqa: PLC0415

        shown = self.host.display("/nccl.json")
        try:
            doc = json.loads(raw)
        except ValueError as exc:
            raise InputError(f"not JSON: {exc}", path=shown, fix="re-capture the host with 'ncclctl snapshot'") from None
        return ncclib.from_doc(doc, shown)

    def _nccl_file(self, env: tuple[tuple[str, str], ...], conf_files: list[ConfFile], name: str) -> ConfFile | None:
        """The file ``name`` (NCCL_TOPO_FILE, NCCL_GRAPH_FILE) points at, found with NCCL's own precedence and
        read through the host root so a snapshot keeps it. Relative paths depend on the job's directory: not read."""
        from ncclctl.nccl.settings import resolve_sources  # noqa: PLC0415

        path = resolve_sources(env, conf_files).value(name)
        if not path or not path.startswith("/"):
            return None
        try:
            data = self.host.read_bytes(path, kind="xml")
        except InputError as exc:  # a FIFO or device, a looping symlink, over the cap: NCCL's fopen fails or hangs
            # kept for lint (NCCL020/NCCL022: "ncclctl refuses to read the file: ..."), not "does not exist"
            self.unavailable.append(Unavailable(source=name, reason=REFUSED, detail=exc.message))
            return None
        if data is None:
            return None
        return ConfFile(path=path, text=data.decode("utf-8", errors="replace"))


# --------------------------------------------------------------------------------------------------
# Pure helpers


def _replace(obj: D, **changes: Any) -> D:
    import dataclasses  # noqa: PLC0415

    return dataclasses.replace(obj, **changes)


def _nearest_bdf(device_path: str | None) -> str | None:
    """The PCI function a device belongs to: the last bus-id component of its sysfs path (virtio sits below it)."""
    if not device_path or not device_path.startswith("/sys/devices/pci"):
        return None
    for comp in reversed(device_path.split("/")):
        if V.is_sysfs_bdf(comp):
            return comp
    return None


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _bool01(s: str) -> bool:
    if s not in ("0", "1"):
        raise ValueError("expected 0 or 1")
    return s == "1"


def _speed_string(s: str) -> str:
    V.link_speed_gen(s)  # validate: garbage raises, Unknown passes
    return s


def _device_path(real: str, bdf: str, shown: str) -> tuple[str, ...]:
    """``/sys/devices/pci0000:15/0000:15:01.0/.../0000:19:00.0`` -> ("pci0000:15", "0000:15:01.0", ...)."""
    prefix = "/sys/devices/"
    if not real.startswith(prefix):
        raise InputError(f"PCI device link points outside /sys/devices ({real})", path=shown,
                         fix="bus/pci/devices entries must point into /sys/devices")
    parts = tuple(real[len(prefix):].split("/"))
    if not parts or not re.fullmatch(r"pci[0-9a-f]{4,5}:[0-9a-f]{2}", parts[0]) or parts[-1] != bdf:
        raise InputError(f"unexpected PCI device path {real}", path=shown,
                         fix="the link must end in the device's own bus id under a pciDDDD:BB root")
    for comp in parts[1:]:
        if not V.is_sysfs_bdf(comp):
            raise InputError(f"unexpected component {comp!r} in PCI device path {real}", path=shown)
    return parts


def find_ext_cap(config: bytes, cap_id: int) -> int | None:
    """Walk the PCIe extended capability list (from 0x100): the offset of capability ``cap_id``, or None."""
    offset = 0x100
    seen = set()
    while offset and offset not in seen and offset + 4 <= len(config):
        seen.add(offset)
        header = int.from_bytes(config[offset:offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == cap_id:
            return offset
        nxt = (header >> 20) & 0xFFC
        offset = nxt if nxt >= 0x100 else 0
    return None


def find_acs(config: bytes) -> tuple[int, int] | None:
    """The ACS extended capability (id 0x000d): (capability, control)."""
    if len(config) < 0x108:
        return None
    offset = find_ext_cap(config, 0x000D)
    if offset is None or offset + 8 > len(config):
        return None
    cap = int.from_bytes(config[offset + 4:offset + 6], "little")
    ctrl = int.from_bytes(config[offset + 6:offset + 8], "little")
    return cap, ctrl


def vpd_resources(vpd: bytes):
    """PCI VPD resources (PCI Local Bus spec 3.0 section 6.28 / PCIe 6.0 section 6.27): (tag, start of data,
    length) up to the end tag; a truncated or malformed tail ends the walk."""
    pos = 0
    while pos < len(vpd):
        tag = vpd[pos]
        if tag in (0x78, 0x79):  # small / large resource end tag
            return
        if tag & 0x80:
            if pos + 3 > len(vpd):
                return
            length, start = int.from_bytes(vpd[pos + 1:pos + 3], "little"), pos + 3
        else:
            length, start = tag & 0x07, pos + 1
        if start + length > len(vpd):
            return
        yield tag, start, length
        pos = start + length


def vpd_fields(vpd: bytes):
    """The keywords of the VPD-R (0x90) and VPD-W (0x91) resources: (keyword, start of value, length)."""
    for tag, start, length in vpd_resources(vpd):
        if tag not in (0x90, 0x91):
            continue
        pos, end = start, start + length
        while pos + 3 <= end:
            key, n = vpd[pos:pos + 2], vpd[pos + 2]
            if pos + 3 + n > end:
                break
            yield key.decode("latin-1"), pos + 3, n
            pos += 3 + n


def vpd_keywords(vpd: bytes) -> dict[str, str]:
    """VPD keyword values as text (the first of each keyword); non-ASCII values are left out."""
    out: dict[str, str] = {}
    for key, start, n in vpd_fields(vpd):
        try:
            out.setdefault(key, vpd[start:start + n].decode("ascii").strip())
        except UnicodeDecodeError:
            continue
    return out


def parse_cpuinfo(text: str, *, source: str = "/proc/cpuinfo") -> Cpu:
    """x86 stanzas (vendor_id, cpu family, model, model name, physical id, flags) and arm64 ones."""
    processors = 0
    sockets: set[str] = set()
    fields: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise InputError(f"line without ':' ({line.strip()[:40]!r})", path=source, line=lineno,
                             fix="the file is damaged; re-capture the host")
        key, value = key.strip(), value.strip()
        if key == "processor":
            processors += 1
        elif key == "physical id":
            sockets.add(value)
        elif key not in fields:
            fields[key] = value
    if processors == 0:
        raise InputError("no 'processor' entries", path=source, fix="the file is empty or truncated; re-capture the host")
    try:
        if "vendor_id" in fields:
            flags = fields.get("flags")
            return Cpu(arch="x86_64", vendor=fields["vendor_id"], family=int(fields.get("cpu family", "0")),
                       model=int(fields.get("model", "0")), model_name=fields.get("model name", ""),
                       sockets=max(1, len(sockets)), logical_cpus=processors,
                       hypervisor=None if flags is None else "hypervisor" in flags.split())
        if "CPU implementer" in fields:
            part = fields.get("CPU part", "")
            return Cpu(arch="arm64", vendor=fields["CPU implementer"], family=None,
                       model=int(part, 16) if part else None,
                       model_name=fields.get("model name", f"Arm part {part}"),
                       sockets=max(1, len(sockets)), logical_cpus=processors)
        if "cpu" in fields and "POWER" in fields["cpu"].upper():
            return Cpu(arch="ppc64", vendor="IBM", family=None, model=None, model_name=fields["cpu"],
                       sockets=max(1, len(sockets)), logical_cpus=processors)
    except ValueError as exc:
        raise InputError(f"unexpected CPU identification value: {exc}", path=source,
                         fix="the file is damaged; re-capture the host") from None
    raise InputError("unknown CPU architecture (no vendor_id / CPU implementer)", path=source,
                     fix="ncclctl knows x86_64, arm64 and ppc64 hosts")
