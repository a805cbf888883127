"""What NCCL adds to a topology file on a host: the element budget of ``NCCL_TOPO_FILE`` with the host's devices.

NCCL 2.30.7 ``topo.cc:ncclTopoGetSystem`` loads the file into an XML of ``NCCL_TOPO_XML_MAX_NODES`` (256) element
slots and then fills in what it detects on the host, in the same XML:

* its own GPU (``xml.cc:ncclTopoFillGpu``): the GPU's ``<pci>`` found by bus id, else added with every parent
  ``<pci>`` up to the first one the file has (``ncclTopoGetXmlFromSys``: one per switch level, the path rewound two
  '/' at a time) and its ``<cpu>`` (by numaid) when the file has none; a ``<gpu>`` when the ``<pci>`` holds none;
  its ``<nvlink>`` elements (one per NVLink peer) when the ``<gpu>`` has none (``ncclTopoGetXmlFromGpu``);
* every port the net plugin reports (``ncclTopoProcessNet`` -> ``ncclTopoPopulateNics`` -> ``ncclTopoFillNet``),
  found by name, else a ``<net>`` under the ``<nic>`` of the port's ``<pci>`` (added with its parents as above,
  the ``<nic>`` added when the ``<pci>`` has none);
* the virtual NICs of NIC fusion (``ncclTopoMakeVNics``), over the ports the plugin reports.

Every rank does this for its own GPU and all the ports, before ``ncclTopoTrimXml``; an element over the limit fails
init with "too many XML nodes (max 256)" (``xml.h:xmlAddNode``). The trimmed trees of the node's ranks are then fused
into one tree of the same size (``ncclTopoFuseXml``). This module replays those steps on ``ncclctl``'s tree of the
file and of the host (what ``topo generate`` writes for it, which is what NCCL detects there).
"""

from __future__ import annotations

from ncclctl.nccl.build import Plugin, X, _all, _copy, _populate, _trim, plugin_devices
from ncclctl.nccl.system import Params
from ncclctl.record import record

__all__ = ["HostBudget", "host_budget"]


@record
class HostBudget:
    """The element counts of a topology file on a host (NCCL's XML slots)."""

    #: The file's own elements (what NCCL's reader allocates).
    file: int
    #: The most elements one rank's XML holds before it trims: the file, that rank's GPU, the ports, fusion.
    per_rank: int
    #: Elements the rank's GPU adds there (``<pci>`` path, ``<cpu>``, ``<gpu>``, ``<nvlink>``).
    gpu: int
    #: The bus id of that rank's GPU ('' when the host has no GPU).
    gpu_busid: str
    #: Elements the ports the plugin reports add (``<pci>`` path, ``<cpu>``, ``<nic>``, ``<net>``).
    nets: int
    #: The reported ports the file does not list, by name (natural order).
    missing: tuple[str, ...]
    #: Elements NIC fusion adds (virtual ``<net>``, made-up ``<pci>``/``<nic>``).
    fused: int
    #: The elements of the fused tree of all the node's ranks after trimming.
    kept: int


def _index(top: X) -> tuple[dict[str, X], dict[str, X]]:
    pcis = {(p.get("busid") or "").lower(): p for p in top.find_all("pci") if p.get("busid")}
    cpus = {c.get("numaid") or "": c for c in top.subs if c.name == "cpu"}
    return pcis, cpus


class _Merge:
    """The file's tree with the host's devices added as NCCL adds them; ``added`` counts the elements."""

    def __init__(self, file_root) -> None:
        self.top = _copy(file_root)
        self.pcis, self.cpus = _index(self.top)
        self.added = 0

    def _new(self, name: str, attrs: dict[str, str], parent: X) -> X:
        x = X(name, attrs, [], parent)
        parent.subs.append(x)
        self.added += 1
        return x

    def pci(self, host_pci: X) -> X:
        """The file's ``<pci>`` of that bus id, else a new one under its parents (``ncclTopoGetXmlFromSys``)."""
        busid = (host_pci.get("busid") or "").lower()
        have = self.pcis.get(busid)
        if have is not None:
            return have
        up = host_pci.parent
        if up is not None and up.name == "pci":
            parent = self.pci(up)
        else:
            numa = (up.get("numaid") if up is not None else None) or "-1"
            parent = self.cpus.get(numa) or self._cpu(numa, up)
        made = self._new("pci", dict(host_pci.attrs), parent)
        self.pcis[busid] = made
        return made

    def _cpu(self, numa: str, host_cpu: X | None) -> X:
        made = self._new("cpu", dict(host_cpu.attrs) if host_cpu is not None else {"numaid": numa}, self.top)
        self.cpus[numa] = made
        return made

    def gpu(self, host_gpu: X) -> X:
        pci = self.pci(host_gpu.parent) if host_gpu.parent is not None else self.top
        gpu = next((c for c in pci.subs if c.name == "gpu"), None)
        if gpu is None:
            gpu = self._new("gpu", dict(host_gpu.attrs), pci)
        for kind in ("nvlink", "c2c"):  # added only when the <gpu> has none of that kind
            if not any(c.name == kind for c in gpu.subs):
                for link in (c for c in host_gpu.subs if c.name == kind):
                    self._new(kind, dict(link.attrs), gpu)
        return gpu

    def net(self, host_net: X) -> X:
        name = host_net.get("name")
        have = next((n for n in self.top.find_all("net") if n.get("name") == name), None)
        if have is not None:
            return have
        nic_host = host_net.parent
        pci_host = nic_host.parent if nic_host is not None else None
        if pci_host is not None and pci_host.name == "pci":
            parent = self.pci(pci_host)
        else:  # a port on no PCI device: under the first CPU (ncclTopoFillNet)
            parent = next((c for c in self.top.subs if c.name == "cpu"), None) or self._cpu("0", None)
        nic = next((c for c in parent.subs if c.name == "nic"), None)
        if nic is None:
            nic = self._new("nic", {}, parent)
        return self._new("net", dict(host_net.attrs), nic)


def host_budget(file_root, host_root, params: Params, plugin: Plugin | None = None) -> HostBudget:
    """The element counts of the topology file ``file_root`` (an XmlNode tree NCCL's reader accepted) on the host
    whose detected topology is ``host_root``, under ``params`` (NCCL_IB_HCA, NCCL_NET_MERGE_LEVEL...) with the
    ports ``plugin`` reports."""
    from ncclctl.names import natural_key

    plugin = plugin or Plugin()
    host = _copy(host_root)
    reported = plugin_devices(host, params, plugin, [])
    host_nets = [d.xml[0] for d in reported]
    file_count = len(_all(_copy(file_root)))
    file_names = {n.get("name") for n in _copy(file_root).find_all("net")}
    missing = tuple(sorted({n.get("name") or "" for n in host_nets} - file_names, key=natural_key))
    names = {n.get("name") for n in host_nets}

    def ports_and_fusion(m: _Merge) -> tuple[int, int]:
        before = m.added
        for n in host_nets:
            m.net(n)
        nets = m.added - before
        devs = [d for d in plugin_devices(m.top, params, plugin, []) if d.name in names]
        size = len(_all(m.top))
        try:
            _populate(m.top, devs, params, [])
        except Exception:  # NCCL stops on the fusion (another finding says so): no fusion counted
            return nets, 0
        return nets, len(_all(m.top)) - size

    gpus = host.find_all("gpu")
    best = (-1, 0, "", 0, 0)
    candidates: list[X | None] = [*gpus] or [None]
    for g in candidates:  # the rank whose GPU adds the most (a host without GPU: the ports alone)
        m = _Merge(file_root)
        if g is not None:
            m.gpu(g)
        gpu_added = m.added
        nets, fused = ports_and_fusion(m)
        total = len(_all(m.top))
        if total > best[0]:
            busid = (g.parent.get("busid") or "") if g is not None and g.parent is not None else ""
            best = (total, gpu_added, busid, nets, fused)
    # The fused tree: every rank's GPU kept, the ports (or their virtual NICs), then ncclTopoTrimXml.
    m = _Merge(file_root)
    for g in gpus:
        m.gpu(g).attrs["keep"] = "1"
    ports_and_fusion(m)
    _trim(m.top)
    kept = len(_all(m.top))
    total, gpu_added, busid, nets, fused = best
    return HostBudget(file=file_count, per_rank=max(total, file_count), gpu=gpu_added, gpu_busid=busid, nets=nets,
                      missing=missing, fused=fused, kept=kept)
