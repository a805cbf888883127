"""The sysfs/procfs value vocabulary: pure parsers for single values (CPU lists and maps, link speeds, class
codes, bus ids). Each raises ValueError; callers add the path.

It sits next to the model, which checks its sysfs-shaped strings with it; the probe reads values with it. Neither
the model nor the probe owns it (the model must not depend on the probe)."""

from __future__ import annotations

import re

_BDF_RE = re.compile(r"^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")
_SYSFS_BDF_RE = re.compile(r"^[0-9a-f]{4,5}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def is_sysfs_bdf(name: str) -> bool:
    """True for a sysfs PCI function name (``0000:19:00.0``; VMD domains have 5 hex digits)."""
    return bool(_SYSFS_BDF_RE.match(name))


def normalize_bdf(text: str) -> str:
    """Any bus-id spelling (NVML ``00000000:19:00.0``, lspci ``19:00.0``, upper case) -> ``0000:19:00.0``."""
    m = _BDF_RE.match(text.strip())
    if not m:
        raise ValueError(f"not a PCI bus id: {text!r}")
    domain = int(m.group(1) or "0", 16)
    return f"{domain:04x}:{int(m.group(2), 16):02x}:{int(m.group(3), 16):02x}.{int(m.group(4), 16):x}"


def parse_int(text: str) -> int:
    return int(text.strip(), 10)


def parse_hex(text: str) -> int:
    s = text.strip()
    if not s.lower().startswith("0x"):
        raise ValueError(f"expected 0x-prefixed hex, got {s!r}")
    return int(s, 16)


def parse_hex_id(text: str, digits: int) -> str:
    """Validate a sysfs id (``0x10de``, ``0x030200``) and return it verbatim (NCCL copies it)."""
    s = text.strip()
    if not re.fullmatch(r"0x[0-9a-f]{%d}" % digits, s):
        raise ValueError(f"expected 0x and {digits} lower-case hex digits, got {s!r}")
    return s


#: Bound on CPU ids and list length (Linux NR_CPUS is at most 8192): a damaged or hostile list cannot
#: make the probe allocate gigabytes (``0-65536,`` repeated) or a mask with a 10**30-bit shift.
MAX_CPUS = 1 << 16
_CPU_RE = re.compile(r"[0-9]{1,6}")


def _cpu_id(tok: str) -> int:
    tok = tok.strip()
    if not _CPU_RE.fullmatch(tok) or int(tok) >= MAX_CPUS:
        raise ValueError(f"bad CPU number {tok[:20]!r}")
    return int(tok)


def parse_cpulist(text: str) -> tuple[int, ...]:
    """Kernel CPU-list syntax: ``0-55,112-167``; empty means no CPUs."""
    s = text.strip()
    if not s:
        return ()
    cpus: list[int] = []
    for part in s.split(","):
        if "-" in part:
            lo, _, hi = part.partition("-")
            a, b = _cpu_id(lo), _cpu_id(hi)
            if b < a:
                raise ValueError(f"bad CPU range {part!r}")
            cpus.extend(range(a, b + 1))
        else:
            cpus.append(_cpu_id(part))
        if len(cpus) > MAX_CPUS:
            raise ValueError(f"more than {MAX_CPUS} CPUs in the list")
    return tuple(cpus)


def format_cpulist(cpus: tuple[int, ...] | list[int]) -> str:
    out: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def parse_cpumap(text: str) -> int:
    """Kernel cpumap (``0000ffff,ffffffff``, most significant 32-bit word first) -> bitmask."""
    s = text.strip()
    if not s:
        return 0
    value = 0
    for word in s.split(","):
        if not re.fullmatch(r"[0-9a-fA-F]{1,8}", word):
            raise ValueError(f"bad cpumap word {word!r}")
        value = (value << 32) | int(word, 16)
    return value


def cpumap_from_cpus(cpus: tuple[int, ...], words: int) -> str:
    mask = 0
    for c in cpus:
        mask |= 1 << c
    return ",".join(f"{(mask >> (32 * i)) & 0xFFFFFFFF:08x}" for i in reversed(range(words)))


_SPEED_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def link_speed_gen(text: str | None) -> int | None:
    """``32.0 GT/s PCIe`` / ``32 GT/s`` -> 5; ``Unknown``/empty -> None. Raises on garbage."""
    if text is None:
        return None
    s = text.strip()
    if not s or s.lower().startswith("unknown"):
        return None
    m = re.match(r"^(\d+(?:\.\d+)?)\s*GT/s(?: PCIe)?$", s)
    if not m:
        raise ValueError(f"not a PCIe link speed: {s!r}")
    gen = _SPEED_GEN.get(float(m.group(1)))
    if gen is None:
        raise ValueError(f"unknown PCIe transfer rate: {s!r}")
    return gen


GEN_SPEED_STRING = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe",
                    5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}


def parse_numbered_state(text: str) -> tuple[int, str]:
    """``4: ACTIVE`` / ``5: LinkUp`` -> (4, "ACTIVE")."""
    m = re.fullmatch(r"\s*(\d+):\s*(.*?)\s*", text)
    if not m:
        raise ValueError(f"expected '<n>: <name>', got {text.strip()!r}")
    return int(m.group(1)), m.group(2)


def parse_ib_rate(text: str) -> float | None:
    """``400 Gb/sec (4X NDR)`` -> 400.0; ``2.5 Gb/sec (1X SDR)`` -> 2.5."""
    s = text.strip()
    if not s or s.lower().startswith("unknown"):
        return None
    m = re.match(r"^(\d+(?:\.\d+)?) Gb/sec", s)
    if not m:
        raise ValueError(f"not an RDMA port rate: {s!r}")
    return float(m.group(1))


def parse_guid(text: str) -> str:
    """sysfs ``a088:c203:00e3:142a`` or ibstat ``0xa088c20300e3142a`` -> ``0xa088c20300e3142a``."""
    s = text.strip().lower()
    if re.fullmatch(r"[0-9a-f]{4}(:[0-9a-f]{4}){3}", s):
        return "0x" + s.replace(":", "")
    if re.fullmatch(r"0x[0-9a-f]{1,16}", s):
        return f"0x{int(s, 16):016x}"
    raise ValueError(f"not a GUID: {text.strip()!r}")


def parse_gid(text: str) -> str:
    s = text.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{4}(:[0-9a-f]{4}){7}", s):
        raise ValueError(f"not a GID in sysfs form: {text.strip()!r}")
    return s


def gid_is_zero(gid: str) -> bool:
    return set(gid.replace(":", "")) <= {"0"}


def roce_mtu_for_netdev_mtu(mtu: int) -> int | None:
    """Largest IB MTU that fits in the netdev MTU minus RoCE headers (kernel iboe_get_mtu)."""
    avail = mtu - 96
    for ib in (4096, 2048, 1024, 512, 256):
        if avail >= ib:
            return ib
    return None


_GUID_RE = re.compile(r"0x[0-9a-fA-F]{1,16}")


def check_node_values(node, *, source: str) -> None:
    """Check the sysfs-shaped strings of a node read from a JSON model (``--model``), which the schema only
    types as strings: bus ids, PCI paths, GUIDs, CPU lists and maps, link speeds. A model written by
    ``ncclctl probe`` always passes; a hand-edited or damaged one gets an InputError naming the JSON path
    instead of a crash in whatever command uses the value."""
    from ncclctl.errors import InputError  # noqa: PLC0415 - this module is otherwise dependency-free

    def bad(where: str, value: object, what: str) -> InputError:
        return InputError(f"{where} = {str(value)[:60]!r} is not {what}", path=source,
                          fix="re-create the model with: ncclctl probe --format json")

    def bdf(where: str, value: str | None, optional: bool = False) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str) or not is_sysfs_bdf(value):
            raise bad(where, value, "a PCI bus id (DDDD:BB:DD.F, lower case)")

    stack: list[tuple[str, object]] = [("$", node)]
    while stack:  # every string must be real Unicode (JSON allows lone surrogates like "\ud800")
        where, obj = stack.pop()
        if isinstance(obj, str):
            try:
                obj.encode("utf-8")
            except UnicodeEncodeError:
                raise bad(where, obj.encode("utf-8", "backslashreplace").decode(), "valid Unicode text") from None
        elif isinstance(obj, tuple):
            stack.extend((f"{where}[{k}]", v) for k, v in enumerate(obj))
        elif hasattr(obj, "__dataclass_fields__"):
            stack.extend((f"{where}.{k}", getattr(obj, k)) for k in obj.__dataclass_fields__)
    for i, numa in enumerate(node.numa):
        for key, parse in (("cpulist", parse_cpulist), ("cpumap", parse_cpumap)):
            try:
                parse(getattr(numa, key))
            except ValueError:
                raise bad(f"$.numa[{i}].{key}", getattr(numa, key), f"a kernel {key}") from None
    for i, dev in enumerate(node.pci):
        bdf(f"$.pci[{i}].bdf", dev.bdf)
        if not dev.path or dev.path[-1] != dev.bdf or not dev.path[0].startswith("pci"):
            raise bad(f"$.pci[{i}].path", "/".join(dev.path), f"a sysfs path from a root complex to {dev.bdf}")
        for k, comp in enumerate(dev.path[1:], 1):
            bdf(f"$.pci[{i}].path[{k}]", comp)
        for key in ("current_link_speed", "max_link_speed"):
            try:
                link_speed_gen(getattr(dev, key, None))
            except ValueError:
                raise bad(f"$.pci[{i}].{key}", getattr(dev, key), "a PCIe link speed") from None
    for i, gpu in enumerate(node.gpus):
        bdf(f"$.gpus[{i}].bdf", gpu.bdf)
        for k, link in enumerate(gpu.nvlinks):
            bdf(f"$.gpus[{i}].nvlinks[{k}].remote_bdf", link.remote_bdf, optional=True)
    for i, sw in enumerate(node.nvswitches):
        bdf(f"$.nvswitches[{i}].bdf", sw.bdf)
    for i, nic in enumerate(node.nics):
        bdf(f"$.nics[{i}].bdf", nic.bdf, optional=True)
        for key in ("node_guid", "sys_image_guid"):
            value = getattr(nic, key)
            if value is not None and not (isinstance(value, str) and _GUID_RE.fullmatch(value)):
                raise bad(f"$.nics[{i}].{key}", value, "a 0x-prefixed 64-bit GUID")
    for i, nd in enumerate(node.netdevs):
        bdf(f"$.netdevs[{i}].bdf", nd.bdf, optional=True)
