"""The probe's PCI tree: the devices the model keeps (GPUs, NICs, NVSwitches, NVMe) and every bridge above
them, with link state, IOMMU group, ACS (config space, or a recorded ``lspci -vvv``) and the ConnectX VPD/ATS
facts (:mod:`ncclctl.probe.pciconf`).
"""

from __future__ import annotations

import re

from ncclctl.errors import InputError
from ncclctl.model import PciDevice, Unavailable
from ncclctl import sysfs as V
from ncclctl.probe.reader import Reader, replace_fields
from ncclctl.probe.pciconf import find_acs, find_ext_cap, vpd_keywords


#: PCI classes the model keeps (prefix match on the sysfs class string).
KEEP_CLASSES = ("0x03", "0x02", "0x068000", "0x080100")


class PciReader(Reader):
    """The PCI tree of the host."""

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
                devices[bdf] = replace_fields(dev, **changes)
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
