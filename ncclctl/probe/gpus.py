"""The probe's GPUs and NVSwitches: NVML's answers (``nvml.json`` in a snapshot) per GPU, its NVLinks, C2C, fabric
and platform facts; without NVML the PCI view and ``nvidia-smi -q``'s Fabric section.
"""

from __future__ import annotations

import re
from typing import Any

from ncclctl.errors import InputError
from ncclctl.model import C2c, Gpu, GpuPlatform, NvLink, NvSwitch, PciDevice, Unavailable
from ncclctl import sysfs as V
from ncclctl.probe.nvml import is_error
from ncclctl.probe.reader import Reader


_FABRIC_UUID = re.compile(r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$")
_NVLINK_REMOTE = {0: "gpu", 1: "cpu", 2: "nvswitch"}
#: NVML answers that mean "this GPU or driver has no such feature", not "could not be read".
_NVML_ABSENT = frozenset({"NotSupported", "FunctionNotFound"})
#: Per-GPU NVML fields for features many GPUs do not have.
_NVML_OPTIONAL = frozenset({"c2c", "fabric", "numa_node_id", "mig_mode", "platform", "inforom_image_version"})


class GpuReader(Reader):
    """GPUs and NVSwitches of the host."""

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
            return self._smi_nvlinks(self._smi_fabric(gpus), bool(nvswitches)), nvswitches
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
        silent = {raw["index"] for raw in doc.get("devices", []) if isinstance(raw, dict) and "error" not in raw
                  and _nvlinks_silent(raw.get("nvlinks"))}
        if silent:
            found = list(self._smi_nvlinks(tuple(found), bool(nvswitches), silent))
        gaps = {raw.get("index") for raw in doc.get("devices", [])
                if isinstance(raw, dict) and "error" not in raw and _fabric_gap(raw.get("fabric"))}
        if any(g.fabric_state is None and g.index in gaps for g in found):
            # NVML gave no fabric info (an NVML without nvmlDeviceGetGpuFabricInfo, or a recording made before it):
            # a recorded or live `nvidia-smi --query-gpu=...fabric...` fills what NVML left empty
            from ncclctl.parsers.smi_query import FABRIC_CSV_FIELDS, parse_nvidia_smi_fabric_csv  # noqa: PLC0415

            csv = self.optional_command(
                ("nvidia-smi", "--query-gpu=" + ",".join(FABRIC_CSV_FIELDS), "--format=csv"),
                parse_nvidia_smi_fabric_csv)
            if csv:  # only the GPUs NVML said nothing about: never a mix of NVML and nvidia-smi on one GPU
                filled = {g.index: g for g in _with_smi_fabric(tuple(g for g in found if g.index in gaps), csv)}
                return tuple(filled.get(g.index, g) for g in found), nvswitches
        return tuple(found), nvswitches

    def _nvml_path(self) -> str:
        return "NVML" if self.host.live else self.host.root + "/nvml.json"

    def _nvml_field_errors(self, raw: dict, index: int) -> None:
        """An explicit ``unavailable`` entry for every NVML query of this GPU that failed (NoPermission,
        GpuIsLost, Unknown, ...); NotSupported/FunctionNotFound only for what every GPU has (not for the
        optional features: C2C, fabric, NUMA id, MIG, NVLink details)."""
        fields: list[tuple[str, Any]] = [(k, raw.get(k)) for k in (
            "uuid", "name", "serial", "cuda_compute_capability", "persistence_mode", "mig_mode", "c2c", "fabric",
            "numa_node_id", "platform", "vbios_version", "inforom_image_version")]
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
            vbios_version=self._firmware(ok(raw.get("vbios_version")), index, "vbios_version"),
            inforom_image_version=self._firmware(ok(raw.get("inforom_image_version")), index, "inforom_image_version"),
        )

    def _firmware(self, value: Any, index: int, key: str) -> str | None:
        """A recorded firmware version string (VBIOS, InfoROM image): printable, short, or an input error naming it."""
        if value is None:
            return None
        if not isinstance(value, str) or not value.isprintable() or len(value) > 64:
            raise InputError(f"GPU {index}: {key} must be a version string, not {str(value)[:80]!r}",
                             path=self._nvml_path(), fix="see docs/fixture-format.md for the nvml.json layout")
        return value.strip() or None

    def _smi_fabric(self, gpus: tuple[Gpu, ...]) -> tuple[Gpu, ...]:
        """Without NVML: the GPU fabric facts from a recorded (or live) ``nvidia-smi -q`` Fabric section, matched to
        the PCI GPUs by bus id (``fabric_source`` ``nvidia-smi``)."""
        if not gpus:
            return gpus
        from dataclasses import replace  # noqa: PLC0415

        from ncclctl.parsers.smi_query import parse_nvidia_smi_q_fabric  # noqa: PLC0415

        found = self.command(("nvidia-smi", "-q"), parse_nvidia_smi_q_fabric)
        if found:
            gpus = _with_smi_fabric(gpus, found)
        if all(g.fabric_state is not None and g.fabric_status is not None and g.fabric_clique_id is not None
               and g.fabric_cluster_uuid is not None for g in gpus):
            return gpus
        # Still a gap: the query CSV (recorded, or run live) fills the fields nothing else gave.
        from ncclctl.parsers.smi_query import FABRIC_CSV_FIELDS, parse_nvidia_smi_fabric_csv  # noqa: PLC0415

        csv = self.optional_command(("nvidia-smi", "--query-gpu=" + ",".join(FABRIC_CSV_FIELDS), "--format=csv"),
                                    parse_nvidia_smi_fabric_csv)
        return _with_smi_fabric(gpus, csv) if csv else gpus

    def _smi_nvlinks(self, gpus: tuple[Gpu, ...], switched: bool, only: set[int] | None = None) -> tuple[Gpu, ...]:
        """The NVLinks NVML did not give (no NVML; or NVML answered no link's state), from a recorded (or live)
        ``nvidia-smi nvlink --status``: each link's index and whether it is up (``<inactive>`` or a speed). The far
        end is not in that output: ``nvswitch`` on a host with NVSwitches on its PCI bus or a GPU registered with a
        multi-node NVLink fabric (NVL72 compute trays reach the switch trays only), else ``unknown``; no version.
        Matched by GPU UUID where both sides have one, else by index: nvidia-smi numbers GPUs in PCI bus order, as
        the PCI view does (an assumption checked against no GPU here: a UUID that disagrees leaves the GPU alone).
        ``only``: the GPU indices to fill (the NVML-silent ones); GPUs with NVLinks already are never touched.
        The layout is that of public pastes from H100 and HGX B300 hosts (``Link N: 53.125 GB/s`` per NVLink5 link);
        on a GB200 NVL72 compute tray it is an assumption (same GPU generation, no public paste found)."""
        targets = {g.index for g in gpus if not g.nvlinks and (only is None or g.index in only)}
        if not targets:
            return gpus
        from dataclasses import replace  # noqa: PLC0415

        from ncclctl.parsers.nvlink import parse_nvlink_status  # noqa: PLC0415

        status = self.optional_command(("nvidia-smi", "nvlink", "--status"), parse_nvlink_status)
        if status is None or not status.gpus:
            return gpus
        by_uuid = {s.uuid: s for s in status.gpus if s.uuid}
        by_index = {s.index: s for s in status.gpus}
        out = []
        for g in gpus:
            smi = None
            if g.index in targets:
                smi = by_uuid.get(g.uuid) if g.uuid and g.uuid in by_uuid else by_index.get(g.index)
                if smi is not None and g.uuid and smi.uuid and smi.uuid != g.uuid:
                    smi = None  # index order differs from NVML's: not this GPU
            if smi is None or not smi.links:
                out.append(g)
                continue
            remote = "nvswitch" if switched or (g.fabric_cluster_uuid and g.fabric_clique_id is not None) else "unknown"
            out.append(replace(g, nvlinks=tuple(NvLink(link=lk.link, active=lk.active, remote_type=remote)
                                                for lk in sorted(smi.links, key=lambda lk: lk.link))))
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


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _with_smi_fabric(gpus: tuple[Gpu, ...], found: Any) -> tuple[Gpu, ...]:
    """``gpus`` with the nvidia-smi fabric records (matched by bus id) filling the fabric fields still None; a GPU
    that gained a fabric field is marked ``fabric_source`` ``nvidia-smi``; the VBIOS/InfoROM versions of ``-q`` fill
    those still None."""
    from dataclasses import replace  # noqa: PLC0415

    by_bdf = {}
    for f in found:
        try:
            by_bdf[V.normalize_bdf(f.bus_id)] = f
        except ValueError:
            continue
    pairs = (("fabric_state", "state"), ("fabric_status", "status"), ("fabric_cluster_uuid", "cluster_uuid"),
             ("fabric_clique_id", "clique_id"), ("fabric_health_mask", "health_mask"),
             ("fabric_health_summary", "health_summary"))
    out = []
    for g in gpus:
        rec = by_bdf.get(g.bdf)
        changes = {} if rec is None else {
            mine: getattr(rec, theirs) for mine, theirs in pairs
            if getattr(g, mine) is None and getattr(rec, theirs) is not None}
        firmware = {} if rec is None else {  # the board's firmware is no fabric fact: fabric_source stays
            k: getattr(rec, k) for k in ("vbios_version", "inforom_image_version")
            if getattr(g, k) is None and getattr(rec, k) is not None}
        g = replace(g, **changes, fabric_source="nvidia-smi") if changes else g
        out.append(replace(g, **firmware) if firmware else g)
    return tuple(out)


def _nvlinks_silent(raw: Any) -> bool:
    """NVML listed NVLinks for this GPU but answered no link's state (NoPermission, Unknown, GpuIsLost...): the
    links exist and NVML says nothing about them."""
    return isinstance(raw, list) and bool(raw) and all(isinstance(e, dict) and is_error(e.get("state")) for e in raw)


def _fabric_gap(raw: Any) -> bool:
    """NVML said nothing about this GPU's fabric: no ``fabric`` entry, or an error other than NotSupported (a GPU
    outside any NVLink fabric answers NotSupported; asking nvidia-smi then would only add a command)."""
    return raw is None or (is_error(raw) and str(raw.get("error")) != "NotSupported")
