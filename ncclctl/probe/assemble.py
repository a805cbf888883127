"""Build a :class:`~ncclctl.model.Node` from a host root, a command runner and an NVML source.

Every read goes through the seams (:class:`~ncclctl.probe.reader.Reader`); the probe only interprets, one part of
the node per module: CPU and NUMA (:mod:`ncclctl.probe.cpu`), the PCI tree (:mod:`ncclctl.probe.pci`, with config
space and VPD from :mod:`ncclctl.probe.pciconf`), GPUs and NVSwitches (:mod:`ncclctl.probe.gpus`), netdevs, RDMA
devices and RoCE state (:mod:`ncclctl.probe.network`), the host facts (:mod:`ncclctl.probe.hostfacts`). Under a
fixture root a malformed value or command output is an :class:`~ncclctl.errors.InputError` naming the file; on a
live host an unparseable command output degrades to an :class:`~ncclctl.model.Unavailable` entry instead (tools
differ by version).
"""

from __future__ import annotations

from ncclctl.errors import UsageError
from ncclctl.model import Node, Unavailable
from ncclctl.probe.commands import LiveRunner, RecordedRunner, Runner
from ncclctl.probe.cpu import CpuReader
from ncclctl.probe.gpus import GpuReader
from ncclctl.probe.hostfacts import FactsReader
from ncclctl.probe.hostroot import HostRoot, Recorder
from ncclctl.probe.network import NetworkReader
from ncclctl.probe.nvml import LiveNvml, NvmlSource, RecordedNvml
from ncclctl.probe.pci import PciReader


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


class _Probe(CpuReader, PciReader, GpuReader, NetworkReader, FactsReader):
    """The whole probe: each part of the node read by its reader (:mod:`ncclctl.probe.cpu`, ``pci``, ``gpus``,
    ``network``, ``hostfacts``), put together into one :class:`~ncclctl.model.Node`."""

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
