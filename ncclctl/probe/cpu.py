"""The probe's CPU and NUMA nodes: sysfs node lists, /proc/cpuinfo (:func:`parse_cpuinfo`)."""

from __future__ import annotations

from ncclctl.errors import InputError
from ncclctl.model import Cpu, NumaNode, Unavailable
from ncclctl import sysfs as V
from ncclctl.probe.reader import Reader


class CpuReader(Reader):
    """CPU and NUMA nodes of the host."""

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
