"""The NVML seam: live pynvml, or the answers recorded in a fixture's ``nvml.json``.

Both produce the same plain-data document (see docs/fixture-format.md): every call goes through one
guard that turns ``NVMLError_<Name>`` into ``{"error": "<Name>"}``, so the probe degrades per call
(not supported, no permission, GPU lost) instead of failing, and a snapshot records exactly what the
live probe saw. ``pynvml`` is imported lazily, on the first live query.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Protocol, TypeGuard

from ncclctl.errors import InputError
from ncclctl.probe.hostroot import HostRoot

#: pynvml's NVML_NVLINK_MAX_LINKS is 36 in 13.x (18 before); we stop at the first invalid link anyway.
MAX_NVLINKS = 36

FI_NVLINK_GET_STATE = 165
FI_C2C_LINK_COUNT = 170
FI_C2C_LINK_GET_MAX_BW = 172


class NvmlSource(Protocol):
    def collect(self) -> dict: ...


def _err(exc: BaseException) -> dict:
    name = type(exc).__name__
    if name.startswith("NVMLError_"):
        name = name[len("NVMLError_"):]
    elif name == "NVMLError":
        name = f"Code{getattr(exc, 'value', '?')}"
    return {"error": name}


def is_error(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict) and set(value) == {"error"}


class LiveNvml:
    """Queries the local driver through pynvml (``nvidia-ml-py``)."""

    def collect(self) -> dict:
        try:
            import pynvml  # noqa: PLC0415 - heavy and optional: only when probing a live host
        except ImportError:
            return {"init": "ModuleNotFound", "devices": []}
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            return {"init": _err(exc)["error"], "devices": []}
        try:
            return self._collect(pynvml)
        finally:
            try:
                pynvml.nvmlShutdown()
            except pynvml.NVMLError:  # pragma: no cover
                pass

    def _collect(self, nv: Any) -> dict:
        def q(fn: Callable, *args: Any) -> Any:
            try:
                return fn(*args)
            except nv.NVMLError as exc:
                return _err(exc)

        doc: dict[str, Any] = {
            "init": "ok",
            "driver_version": q(nv.nvmlSystemGetDriverVersion),
            "nvml_version": q(nv.nvmlSystemGetNVMLVersion),
            "cuda_driver_version": q(nv.nvmlSystemGetCudaDriverVersion),
            "devices": [],
        }
        count = q(nv.nvmlDeviceGetCount)
        if is_error(count):
            doc["device_count"] = count
            return doc
        for i in range(count):
            handle = q(nv.nvmlDeviceGetHandleByIndex, i)
            if is_error(handle):
                doc["devices"].append({"index": i, **handle})
                continue
            doc["devices"].append(self._device(nv, q, i, handle))
        return doc

    def _device(self, nv: Any, q: Callable, index: int, h: Any) -> dict:
        dev: dict[str, Any] = {"index": index}
        dev["uuid"] = q(nv.nvmlDeviceGetUUID, h)
        dev["name"] = q(nv.nvmlDeviceGetName, h)
        dev["serial"] = q(nv.nvmlDeviceGetSerial, h)
        if hasattr(nv, "nvmlDeviceGetVbiosVersion"):  # every pynvml has it; a stand-in may not
            dev["vbios_version"] = _text(q(nv.nvmlDeviceGetVbiosVersion, h))
        if hasattr(nv, "nvmlDeviceGetInforomImageVersion"):
            dev["inforom_image_version"] = _text(q(nv.nvmlDeviceGetInforomImageVersion, h))
        pci = q(nv.nvmlDeviceGetPciInfo, h)
        if is_error(pci):
            dev["pci"] = pci
        else:
            dev["pci"] = {
                "busId": _s(pci.busId),
                "busIdLegacy": _s(pci.busIdLegacy),
                "pciDeviceId": f"0x{pci.pciDeviceId:08X}",
                "pciSubSystemId": f"0x{pci.pciSubSystemId:08X}",
            }
        cc = q(nv.nvmlDeviceGetCudaComputeCapability, h)
        dev["cuda_compute_capability"] = cc if is_error(cc) else list(cc)
        dev["persistence_mode"] = q(nv.nvmlDeviceGetPersistenceMode, h)
        mig = q(nv.nvmlDeviceGetMigMode, h)
        dev["mig_mode"] = mig if is_error(mig) else list(mig)
        dev["numa_node_id"] = q(nv.nvmlDeviceGetNumaNodeId, h) if hasattr(nv, "nvmlDeviceGetNumaNodeId") else {"error": "FunctionNotFound"}
        dev["pcie"] = {
            "max_gen": q(nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
            "max_width": q(nv.nvmlDeviceGetMaxPcieLinkWidth, h),
            "curr_gen": q(nv.nvmlDeviceGetCurrPcieLinkGeneration, h),
            "curr_width": q(nv.nvmlDeviceGetCurrPcieLinkWidth, h),
        }
        links = []
        for link in range(MAX_NVLINKS):
            state = q(nv.nvmlDeviceGetNvLinkState, h, link)
            if is_error(state):
                if state["error"] in ("InvalidArgument", "NotSupported"):
                    break
                links.append({"link": link, "state": state})
                continue
            entry: dict[str, Any] = {"link": link, "state": state}
            entry["p2p_supported"] = q(nv.nvmlDeviceGetNvLinkCapability, h, link, 0)
            remote = q(nv.nvmlDeviceGetNvLinkRemotePciInfo, h, link)
            entry["remote_bus_id"] = remote if is_error(remote) else _s(remote.busId)
            if hasattr(nv, "nvmlDeviceGetNvLinkRemoteDeviceType"):
                entry["remote_device_type"] = q(nv.nvmlDeviceGetNvLinkRemoteDeviceType, h, link)
            entry["version"] = q(nv.nvmlDeviceGetNvLinkVersion, h, link)
            links.append(entry)
        dev["nvlinks"] = links
        dev["c2c"] = self._c2c(nv, q, h)
        dev["fabric"] = self._fabric(nv, q, h)
        platform = self._platform(nv, q, h)
        if platform != {"error": "FunctionNotFound"}:  # no platform API (a pynvml or driver before it): no entry
            dev["platform"] = platform
        return dev

    def _c2c(self, nv: Any, q: Callable, h: Any) -> Any:
        values = q(nv.nvmlDeviceGetFieldValues, h, [FI_C2C_LINK_COUNT, FI_C2C_LINK_GET_MAX_BW])
        if is_error(values):
            return values
        out = []
        for v in values:
            if v.nvmlReturn != 0:
                return {"error": "NotSupported"}
            out.append(int(v.value.uiVal))
        if not out or out[0] == 0:
            return {"error": "NotSupported"}
        return {"count": out[0], "max_bw": out[1] if len(out) > 1 else None}

    def _fabric(self, nv: Any, q: Callable, h: Any) -> Any:
        """``nvmlDeviceGetGpuFabricInfoV`` at the newest struct version this pynvml and driver answer (v3: health
        summary; v2: cluster UUID, clique id, health mask), else the v1 ``nvmlDeviceGetGpuFabricInfo``."""
        import ctypes  # noqa: PLC0415

        fn_v = getattr(nv, "nvmlDeviceGetGpuFabricInfoV", None)
        for ver_name, cls_name in (("nvmlGpuFabricInfo_v3", "c_nvmlGpuFabricInfo_v3_t"),
                                   ("nvmlGpuFabricInfo_v2", "c_nvmlGpuFabricInfoV_t"),
                                   ("nvmlGpuFabricInfo_v2", "c_nvmlGpuFabricInfo_v2_t")):
            cls, ver = getattr(nv, cls_name, None), getattr(nv, ver_name, None)
            if fn_v is None or cls is None or ver is None:
                continue
            info = cls()
            info.version = ver
            res = q(fn_v, h, ctypes.byref(info))
            if is_error(res):
                if res["error"] in ("ArgumentVersionMismatch", "InvalidArgument"):
                    continue  # an older driver: try the previous struct version
                return res
            return fabric_doc(info, cls, 3 if ver_name.endswith("v3") else 2)
        if not hasattr(nv, "nvmlDeviceGetGpuFabricInfo"):
            return {"error": "FunctionNotFound"}
        info = nv.c_nvmlGpuFabricInfo_t()
        res = q(nv.nvmlDeviceGetGpuFabricInfo, h, ctypes.byref(info))
        if is_error(res):
            return res
        return fabric_doc(info, type(info), 1)

    def _platform(self, nv: Any, q: Callable, h: Any) -> Any:
        """``nvmlDeviceGetPlatformInfo`` (GB200-class systems): chassis serial, slot, tray, host and module ids."""
        import ctypes  # noqa: PLC0415

        fn = getattr(nv, "nvmlDeviceGetPlatformInfo", None)
        cls = getattr(nv, "c_nvmlPlatformInfo_v2_t", None)
        ver = getattr(nv, "nvmlPlatformInfo_v2", None)
        if fn is None or cls is None or ver is None:
            return {"error": "FunctionNotFound"}
        info = cls()
        info.version = ver
        res = q(fn, h, ctypes.byref(info))
        if is_error(res):
            return res
        raw = _raw_bytes(info, cls, "chassisSerialNumber", 16)
        doc: dict[str, Any] = {"chassis_serial": raw.split(b"\0", 1)[0].decode("ascii", "replace") if raw else None}
        for key, attr in (("slot_number", "slotNumber"), ("tray_index", "trayIndex"), ("host_id", "hostId"),
                          ("peer_type", "peerType"), ("module_id", "moduleId")):
            value = getattr(info, attr, None)
            if isinstance(value, bytes):  # pynvml declares these one-byte fields c_char: b"\x04", b"" for 0
                value = value[0] if value else 0
            doc[key] = int(value) if isinstance(value, int) else None
        return doc


def _raw_bytes(info: Any, cls: Any, field: str, size: int) -> bytes | None:
    """A fixed-size byte field of a ctypes struct, whole (pynvml's ``c_char`` arrays stop at the first NUL)."""
    import ctypes  # noqa: PLC0415

    desc = getattr(cls, field, None)
    if desc is None:
        return None
    return ctypes.string_at(ctypes.addressof(info) + desc.offset, size)


def fabric_doc(info: Any, cls: Any, version: int) -> dict:
    """The recorded form of a GPU fabric info struct (docs/fixture-format.md, ``nvml.json`` ``fabric``)."""
    # v1 (state and status only) is recorded without "version", as snapshots before the v2/v3 fields were
    doc: dict[str, Any] = ({"version": version} if version >= 2 else {}) | {"state": int(info.state),
                                                                          "status": int(info.status)}
    if version >= 2:
        raw = _raw_bytes(info, cls, "clusterUuid", 16)
        if raw is not None:
            doc["cluster_uuid"] = format_uuid(raw)
        doc["clique_id"] = int(info.cliqueId)
        doc["health_mask"] = int(info.healthMask)
    if version >= 3:
        doc["health_summary"] = int(getattr(info, "healthSummary", 0))
    return doc


def format_uuid(raw: bytes) -> str:
    """16 bytes as the canonical 8-4-4-4-12 lowercase hex (how nvidia-smi prints the fabric ClusterUUID)."""
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _text(value: Any) -> Any:
    """A string answer as str (pynvml gives bytes before 11.5), an ``{"error": ...}`` answer as it is."""
    return value if is_error(value) else _s(value)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RecordedNvml:
    """Serves ``<root>/nvml.json`` (read inside the snapshot root through the input door); a fixture without one
    is a host without NVML."""

    def __init__(self, root: str | HostRoot) -> None:
        self.host = root if isinstance(root, HostRoot) else HostRoot(root)
        self.path = self.host.display("/nvml.json")

    def collect(self) -> dict:
        from ncclctl.inputs import decode

        raw = self.host.read_bytes("/nvml.json", kind="nvml")
        if raw is None:
            return {"init": "NotCaptured", "devices": []}
        text = decode(raw, self.path, fix="re-capture the host with 'ncclctl snapshot'")
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise InputError(f"recorded NVML answers are not valid JSON: {exc}", path=self.path,
                             fix="re-capture the host with 'ncclctl snapshot'") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("devices", []), list):
            raise InputError("recorded NVML answers must be an object with a 'devices' array", path=self.path,
                             fix="see docs/fixture-format.md for the nvml.json layout")
        doc.setdefault("init", "ok")
        doc.setdefault("devices", [])
        return doc
