"""The probe's host facts: kernel, modules, driver, peer memory, IOMMU, the NCCL settings and the files they
name, the fabric manager, IMEX, the NCCL libraries.
"""

from __future__ import annotations

import re

from ncclctl.errors import InputError
from ncclctl.model import (ConfFile, Gpu, HostFacts, Imex, ImexPeer, NcclLibrary, Nic, NvSwitch, PciDevice, REFUSED,
                           Unavailable)
from ncclctl.probe.nvml import is_error
from ncclctl.probe.reader import Reader


class FactsReader(Reader):
    """The host facts (:class:`~ncclctl.model.HostFacts`)."""

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
