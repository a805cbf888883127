"""``ncclctl log check``: the LOG rules over a :class:`~ncclctl.logs.records.LogSet`, optionally held against the
model of what NCCL will do on the node (:mod:`ncclctl.nccl.predict`, with ``--root`` or ``--inventory``).

Every finding's subject is the log file of its first evidence and its line that evidence's line; the message
starts with the host (or hosts, as a hostlist) and the ranks it is about. Findings are grouped per host or per
communicator, never one per rank: a 1,024-rank job with GPUDirect RDMA off everywhere is one finding naming the
hosts, not a thousand.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from ncclctl.errors import NcclctlError
from ncclctl.findings import Finding, Severity
from ncclctl.logs.parse import GIT_SETTING
from ncclctl.logs.records import Comm, Ev, LogSet, Member, Proc
from ncclctl.logs.show import busid_text, hostlist, member_nics, network_of, ranges

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

#: Interface names that are not a host's data network (loopback, container bridges, VM bridges, tunnels).
VIRTUAL_IFACES = ("lo", "docker", "virbr", "veth", "br-", "cni", "flannel", "tunl", "vxlan", "kube", "cali",
                  "weave", "tailscale", "tun", "tap", "lxc", "podman", "cilium", "genev", "vnet")

#: WARN classes that stop NCCL (errors) and those that do not (warnings); others belong to their own rules.
ERROR_WARNS = {"ib-completion", "ibv", "socket", "cuda", "version-mismatch", "bootstrap", "ib-open", "ib-mismatch",
               "no-interface", "ring", "duplicate-gpu", "no-net-plugin", "no-algorithm", "nvls-bind", "shm-space",
               "gpu-oom", "driver-old", "dmabuf", "kernel-smem", "rails"}
SOFT_WARNS = {"no-verbs", "nvls", "topo-open", "other", "gdr", "attn", "ras", "proxy", "gin", "ib-other", "socket-other",
              "cuda-other", "nvml", "topology", "registration", "collnet", "memory", "usage", "setting", "mismatch",
              "timeout", "mnnvl", "gdrcopy", "symmetric", "system-call", "plugin", "abort", "internal", "ofi", "graph-fallback", "ib-async",
              "kernel-smem-info"}
#: WARN classes with a rule of their own (cause, evidence and fix of that class): LOG014 leaves them alone.
OWN_RULE_WARNS = {"no-interface": "LOG018", "duplicate-gpu": "LOG019", "no-net-plugin": "LOG020",
                  "no-algorithm": "LOG021", "topo-open": "LOG023", "nvls-bind": "LOG024", "shm-space": "LOG025",
                  "gpu-oom": "LOG026", "driver-old": "LOG032", "dmabuf": "LOG033", "rails": "LOG037"}

#: Settings that name local things (an interface, a device list, a file): differences between hosts are normal.
LOCAL_SETTINGS = {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_DEBUG_FILE", "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE",
                  "NCCL_GRAPH_DUMP_FILE", "NCCL_HOSTID", "NCCL_COMM_ID", "NCCL_OOB_NET_IFNAME", "NCCL_NET_PLUGIN",
                  "NCCL_IB_GID_INDEX"}

_PATH_ORDER = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS")


def _rules() -> dict[str, Any]:
    from ncclctl.registry import rules_of

    return {r.id: r for r in rules_of(scope="log")}


@dataclass
class HostModel:
    """What the model predicts for one host: the ``topo predict`` JSON document."""

    source: str
    doc: dict[str, Any]
    #: the node itself (its facts: IMEX, the GPUs' fabric registration), when the model was made from one
    node: Any = None
    #: False when the node could not go through the NCCL model (a lean node model without its PCIe tree): only
    #: its facts are used (the NVLink-domain checks), never an empty prediction
    predicted: bool = True
    #: busid ("0000:1b:00.0") -> GPU entry
    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_dev: dict[int, dict[str, Any]] = field(default_factory=dict)
    nets: dict[int, str] = field(default_factory=dict)

    @classmethod
    def of(cls, source: str, doc: dict[str, Any]) -> "HostModel":
        m = cls(source, doc)
        for g in doc.get("gpus", []):
            m.gpus[str(g.get("busid", "")).lower()] = g
            if isinstance(g.get("dev"), int):
                m.by_dev[g["dev"]] = g
        m.nets = {n["dev"]: n["name"] for n in doc.get("nets", [])}
        return m

    def gpu_of(self, mem: Member) -> dict[str, Any] | None:
        if mem.busid:
            g = self.gpus.get(busid_text(mem.busid))
            if g is not None:
                return g
        dev = mem.nvml_dev if mem.nvml_dev is not None else mem.cuda_dev if mem.cuda_dev is not None else mem.dev
        return self.by_dev.get(dev) if dev is not None else None




class Checker:
    def __init__(self, ls: LogSet, *, models: dict[str, HostModel] | None = None,
                 options: dict[str, dict[str, Any]] | None = None,
                 fabric: dict[str, dict[str, tuple[int, int | None, str]]] | None = None, fabric_label: str = "") -> None:
        self.ls = ls
        #: ``--fabric FILE``: host -> {"mlx5_0:1": (rail, plane, leaf)} (LOG037)
        self.fabric = fabric
        self.fabric_label = fabric_label
        models = models or {}
        #: host -> its node (facts), for every host given, predicted or not
        self.nodes = {h: m.node for h, m in models.items() if m.node is not None}
        self.models = {h: m for h, m in models.items() if m.predicted}
        self.options = options or {}
        self.rules = _rules()
        self.findings: list[Finding] = []
        self.multi_host = len(ls.hosts) > 1 or any((m.nnodes or 0) > 1 for m in ls.members())

    # ------------------------------------------------------------------ helpers
    def opt(self, rule_id: str, name: str) -> Any:
        v = self.options.get(rule_id, {}).get(name)
        if v is None:
            r = self.rules[rule_id]
            v = r.defaults()[name]
        return v

    def add(self, rule_id: str, message: str, evs: Iterable[Ev | None], *, severity: Severity | None = None,
            hosts: Iterable[str] = (), fix: str | None = None) -> None:
        r = self.rules[rule_id]
        evl = [e for e in evs if e is not None]
        first = evl[0] if evl else None
        hl = sorted({h for h in hosts})
        self.findings.append(Finding(
            rule=rule_id, severity=severity or r.severity, message=message,
            subject=first.source if first else (self.ls.sources[0].name if self.ls.sources else "<log>"),
            line=first.line if first else None, fix=fix or r.fix,
            evidence=tuple(dict.fromkeys(e.evidence() for e in evl))[:8],
            host=hl[0] if len(hl) == 1 else None))

    @staticmethod
    def who(mems: Iterable[Member]) -> str:
        mems = list(mems)
        hosts = hostlist({m.host for m in mems})
        rk = [m.rank for m in mems if m.rank is not None]
        return f"{hosts} rank{'s' if len(set(rk)) != 1 else ''} {ranges(rk)}" if rk else hosts

    # ------------------------------------------------------------------ run
    def run(self) -> list[Finding]:
        from ncclctl.logs.classes import failure_classes
        from ncclctl.logs.nvlink import mnnvl_not_working, nvlink_domains
        from ncclctl.logs.rails import check_rails

        mnnvl_not_working(self)  # LOG030: first, a cause the generic error rules (LOG013, LOG014) then leave alone
        for fn in (self.gdr, self.socket, self.interfaces, self.versions, self.nic_mismatch, self.channels,
                   self.settings, self.graph_file, self.topology, self.nic_underused, self.nic_rails, self.paths,
                   self.causes, lambda: failure_classes(self), self.hints, self.diagnostics, self.init_incomplete, self.errors, self.slow_init,
                   self.shm, self.fewer_channels, self.mnnvl):
            fn()
        nvlink_domains(self)  # LOG031
        check_rails(self, self.fabric, self.fabric_label)  # LOG037
        return self.findings

    def _failed(self, p: Proc) -> bool:
        """The process reported an error that stops NCCL (its initialisation failed: it did not hang)."""
        from ncclctl.logs.nvlink import is_mnnvl_not_working

        return any(k in ERROR_WARNS or k in ("graph-import", "graph-open") or is_mnnvl_not_working(ev.text)
                   for k, ev in p.warns)

    # LOG029 ---------------------------------------------------------------
    def mnnvl(self) -> None:
        """The GPU fabric registration NCCL read on each rank's GPU ("MNNVL busId ..."): not COMPLETED, or a health
        mask field that says something is wrong (decoded as nvml.h defines it: 0xaa is healthy)."""
        from ncclctl.model import FABRIC_STATE_COMPLETED, FABRIC_STATE_NAMES, fabric_health_problems

        for proc in self.ls.procs.values():
            for bus, uuid, clique, state, mask, ev in proc.mnnvl:
                gpu = f"{proc.host or '?'} GPU {busid_text(bus)}"
                if state != FABRIC_STATE_COMPLETED:
                    self.add("LOG029", f"{gpu}: NCCL found its NVLink fabric registration "
                                       f"{FABRIC_STATE_NAMES.get(state, str(state))}, not COMPLETED: no MNNVL with it",
                             [ev], hosts=[proc.host])
                    continue
                bad = fabric_health_problems(mask)
                if bad:
                    self.add("LOG029", f"{gpu} (cluster {uuid} clique {clique}): fabric health mask 0x{mask:x}: "
                                       + ", ".join(f"{n}={t}" for n, t in bad), [ev], hosts=[proc.host],
                             severity=Severity.WARNING)

    # LOG001 ---------------------------------------------------------------
    def gdr(self) -> None:
        by_host: dict[str, list[Member]] = {}
        on_hosts: set[str] = set()
        for m in self.ls.members():
            flags = {(dev, g) for chs in m.net_ch.values() for _d, dev, g, _p in chs}
            if not flags or any(k.startswith("NET/Socket") for k in m.conns) and not any(
                    k.startswith("NET/") and not k.startswith("NET/Socket") for k in m.conns):
                continue
            if any(not g for _dev, g in flags):
                by_host.setdefault(m.host, []).append(m)
            else:
                on_hosts.add(m.host)
        procs_hca_off = [p for p in self.ls.procs.values() if p.gdr_hca and not any(v[0] for v in p.gdr_hca.values())]
        hosts_hca_only = {p.host for p in procs_hca_off} - set(by_host) - on_hosts
        groups: dict[tuple, list[Member]] = {}
        gdr_evs: dict[int, list[Ev]] = {}  # id(member) -> the evidence of its host's causes
        for host, mems in by_host.items():
            causes, sev, evs = self._gdr_causes(host, mems)
            groups.setdefault((tuple(causes), sev), []).extend(mems)
            for m in mems:
                gdr_evs[id(m)] = evs
        for (causes, sev), mems in sorted(groups.items(), key=lambda kv: kv[1][0].host):
            total = sum(1 for m in mems for chs in m.net_ch.values() for _d, _dev, g, _p in chs if not g)
            evs = []
            for m in mems[:3]:
                evs += [ev for k, ev in m.conn_ev.items() if k.startswith("NET/") and not k.endswith("/GDRDMA")][:1]
            evs += gdr_evs.get(id(mems[0]), [])
            msg = (f"{self.who(mems)}: {total} network channel connection{'s' if total != 1 else ''} without "
                   f"GPUDirect RDMA (NET/IB without /GDRDMA)")
            if causes:
                msg += "; likely cause: " + "; ".join(causes)
            self.add("LOG001", msg, evs, severity=sev, hosts={m.host for m in mems})
        if hosts_hca_only:
            procs = [p for p in procs_hca_off if p.host in hosts_hca_only]
            ev = [next(iter(p.gdr_hca.values()))[2] for p in procs[:3]]
            names = sorted({k for p in procs for k in p.gdr_hca})
            causes, _sev, more = self._gdr_causes(procs[0].host, [])
            self.add("LOG001", f"{hostlist(hosts_hca_only)}: NCCL's IB plugin reports no GPUDirect RDMA for HCA "
                     f"{', '.join(names)}" + ("; likely cause: " + "; ".join(causes) if causes else ""),
                     ev + more, severity=E if self.multi_host else W, hosts=hosts_hca_only)

    def _gdr_causes(self, host: str, mems: list[Member]) -> tuple[list[str], Severity, list[Ev]]:
        procs = [p for p in self.ls.procs.values() if p.host == host]
        causes: list[str] = []
        evs: list[Ev] = []
        sev = W
        hca_off = {k: v for p in procs for k, v in p.gdr_hca.items() if not v[0]}
        if hca_off:
            sev = E
            v = next(iter(hca_off.values()))
            evs.append(v[2])
            note = f" ({v[1]})" if v[1] else ""
            causes.append(f"NCCL's IB plugin found no peer-memory module or DMA-BUF for HCA "
                          f"{', '.join(sorted(hca_off))}{note}")
            ver = self._version_of(procs)
            if ver is not None and ver < (2, 23, 0):
                causes.append(f"NCCL {ver} predates 2.23, which added the check for nvidia_peermem (older releases "
                              "only see nv_peer_mem): with nvidia_peermem loaded, upgrade NCCL")
        dist = [(k, v) for m in mems for k, v in m.gdr_gpu.items() if not v[0]]
        if dist:
            evs.append(dist[0][1][2])
            causes.append(f"GPU-NIC distance above NCCL_NET_GDR_LEVEL ({dist[0][1][1]})")
        lvl = next((p.settings["NCCL_NET_GDR_LEVEL"] for p in procs if "NCCL_NET_GDR_LEVEL" in p.settings), None)
        if lvl is not None:
            evs.append(lvl[1])
            causes.append(f"NCCL_NET_GDR_LEVEL={lvl[0]} is set")
        for key in ("NCCL_NET_GDR_READ", "NCCL_GDR_DISABLE"):
            s = next((p.settings[key] for p in procs if key in p.settings), None)
            if s is not None:
                evs.append(s[1])
                causes.append(f"{key}={s[0]} is set")
        model = self.models.get(host)
        if model is not None and mems:
            predicted = []
            for m in mems:
                g = model.gpu_of(m)
                if g is None:
                    continue
                for chs in m.net_ch.values():
                    for _d, dev, gdr, _p in chs:
                        name = model.nets.get(dev)
                        if not gdr and name and g.get("gdr", {}).get(name, {}).get("write") not in (None, "Disabled"):
                            predicted.append((m, name, g["gdr"][name]["write_why"]))
            if predicted:
                sev = E
                m, name, why = predicted[0]
                causes.append(f"the model ({model.source}) predicts GPUDirect RDMA for GPU {m.dev} -> {name} "
                              f"({why}): the host side is missing (ACS, peermem, DMA-BUF)")
        if not causes:
            causes.append("not stated in the log (no 'GPU Direct RDMA Disabled' line; run with "
                          "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH); check peermem/DMA-BUF and ACS with 'ncclctl lint'")
        return causes, sev, evs

    @staticmethod
    def _version_of(procs: list[Proc]):
        return next((_parse_version(p.version) for p in procs if p.version), None)

    # LOG002 ---------------------------------------------------------------
    def socket(self) -> None:
        hosts: dict[str, list[Ev]] = {}
        causes: dict[str, list[str]] = {}
        for p in self.ls.procs.values():
            sock_conn = [m for m in p.members if any(k.startswith("NET/Socket") for k in m.conns)]
            if p.network == "Socket" or sock_conn:
                evs = hosts.setdefault(p.host, [])
                evs += [e for e in (p.network_ev,) if e is not None]
                for m in sock_conn[:1]:
                    evs += [ev for k, ev in m.conn_ev.items() if k.startswith("NET/Socket")][:1]
                c = causes.setdefault(p.host, [])
                if p.ib_none:
                    evs.append(p.ib_none)
                    c.append("NET/IB found no device (no RDMA device visible, or NCCL_IB_HCA matches none)")
                if p.warn_counts.get("no-verbs"):
                    evs += [ev for k, ev in p.warns if k == "no-verbs"][:1]
                    c.append("libibverbs could not be loaded (install rdma-core in the image)")
                s = p.settings.get("NCCL_IB_DISABLE")
                if s is not None and s[0] not in ("0", ""):
                    evs.append(s[1])
                    c.append(f"NCCL_IB_DISABLE={s[0]}")
        if not hosts:
            return
        sev = E if self.multi_host else I
        groups: dict[tuple[str, ...], list[str]] = {}
        for h in hosts:
            groups.setdefault(tuple(dict.fromkeys(causes[h])), []).append(h)
        for cs, hs in sorted(groups.items(), key=lambda kv: kv[1][0]):
            msg = f"{hostlist(hs)}: NCCL uses TCP sockets between nodes (network Socket)"
            if not self.multi_host:
                msg += (" (one node in the log: this job sends nothing over the network; a job across nodes "
                        "would use sockets)")
            fix = None
            models = [self.models[h] for h in hs if h in self.models]
            why = next((str((m.doc.get("transport") or {}).get("why") or "") for m in models
                        if (m.doc.get("transport") or {}).get("name") == "Socket"), "")
            if why:
                # the node itself offers NCCL no RDMA port: installing verbs in a container changes nothing there
                cs = (f"the model of the node ({models[0].source}) gives NCCL no RDMA port either: "
                      f"{why.split(';', 1)[0]}",)
                fix = ("This node offers NCCL no usable RDMA port (see 'ncclctl lint --root' / 'ncclctl probe'): bring "
                       "the InfiniBand/RoCE ports up (IB001), or run multi-node jobs on nodes with RDMA NICs (EFA "
                       "with aws-ofi-nccl on AWS); on a node meant to have none, sockets are what NCCL can use.")
            msg += ("; cause: " + "; ".join(cs)) if cs else ""
            self.add("LOG002", msg, [e for h in hs for e in hosts[h]][:6], severity=sev, hosts=hs, fix=fix)

    # LOG003 ---------------------------------------------------------------
    def interfaces(self) -> None:
        hits: dict[tuple[str, str], list[tuple[str, Ev]]] = {}
        for p in self.ls.procs.values():
            cands: list[tuple[str, str, str, Ev | None]] = []
            for name, addr in p.bootstrap[:1]:
                cands.append(("bootstrap", name, addr, p.bootstrap_ev))
            if p.oob:
                cands.append(("IB out-of-band", p.oob[0], p.oob[1], p.ib_ev))
            if network_of(p) == "Socket":
                for name, addr in p.socket:
                    cands.append(("socket transport", name, addr, p.socket_ev))
            for role, name, addr, ev in cands:
                if ev is not None and _virtual(name, addr):
                    hits.setdefault((role, name), []).append((p.host, ev))
        # one finding per interface (one NCCL_SOCKET_IFNAME puts bootstrap, OOB and sockets on it): its roles listed
        by_iface: dict[str, list[tuple[str, list[tuple[str, Ev]]]]] = {}
        for (role, name), items in sorted(hits.items()):
            by_iface.setdefault(name, []).append((role, items))
        for name, roles in sorted(by_iface.items()):
            items = [it for _, its in roles for it in its]
            hosts = sorted({h for h, _ in items})
            loop = name == "lo" or name.startswith("lo:")
            sev = E if loop and self.multi_host else W
            kind = "loopback" if loop else "a virtual (container/VM bridge or tunnel) interface"
            what = " and ".join(r for r, _ in roles)
            self.add("LOG003", f"{hostlist(hosts)}: NCCL's {what} interface{'s are' if len(roles) > 1 else ' is'} "
                     f"{name}, {kind}" + (": ranks on other hosts cannot reach it" if loop and self.multi_host else ""),
                     [its[0][1] for _, its in roles][:3], severity=sev, hosts=hosts)

    # LOG004 ---------------------------------------------------------------
    def versions(self) -> None:
        vs = self.ls.versions()
        evs: list[Ev] = []
        if len(vs) > 1:
            parts = []
            for v, procs in sorted(vs.items(), key=lambda kv: -len(kv[1])):
                parts.append(f"{v} on {hostlist({p.host for p in procs})} ({len(procs)} process"
                             f"{'es' if len(procs) != 1 else ''})")
                evs += [p.version_ev for p in procs[:1] if p.version_ev is not None]
            self.add("LOG004", "NCCL versions differ between processes: " + "; ".join(parts), evs,
                     hosts={p.host for ps in vs.values() for p in ps})
        elif not vs:
            bare: dict[str, Ev] = {}
            for ev in self.ls.bare_versions:
                bare.setdefault(ev.text.split("NCCL version", 1)[1].strip().split()[0], ev)
            if len(bare) > 1:
                self.add("LOG004", "the log shows several NCCL versions: " + ", ".join(sorted(bare)),
                         list(bare.values()))
        if len(vs) == 1:  # one release: the same build? ("NCCL git version <branch> <revision>", 2.29+)
            gits: dict[str, list[Proc]] = {}
            for p in self.ls.procs.values():
                g = p.settings.get(GIT_SETTING)
                if g is not None and "unknown" not in g[0]:
                    gits.setdefault(g[0], []).append(p)
            if len(gits) > 1:
                parts = [f"{g} on {hostlist({p.host for p in ps})}" for g, ps in sorted(gits.items(),
                                                                                   key=lambda kv: -len(kv[1]))]
                self.add("LOG004", f"NCCL {next(iter(vs))} is built from different git revisions: " + "; ".join(parts),
                         [ps[0].settings[GIT_SETTING][1] for ps in gits.values()][:4],
                         hosts={p.host for ps in gits.values() for p in ps})
        mism = [(p, ev) for p in self.ls.procs.values() for k, ev in p.warns if k == "version-mismatch"]
        if mism:
            self.add("LOG004", f"{hostlist({p.host for p, _ in mism})}: NCCL reports a version mismatch between "
                     "ranks", [ev for _, ev in mism[:3]], hosts={p.host for p, _ in mism})

    # LOG005 ---------------------------------------------------------------
    def nic_mismatch(self) -> None:
        procs = [p for p in self.ls.procs.values() if p.ib]
        if len({p.host for p in procs}) < 2:
            return
        sig = Counter(tuple(n.name for n in p.ib) for p in procs)
        common, _n = sig.most_common(1)[0]
        odd = [p for p in procs if tuple(n.name for n in p.ib) != common]
        groups: dict[tuple[str, ...], list[Proc]] = {}
        for p in odd:
            groups.setdefault(tuple(n.name for n in p.ib), []).append(p)
        for names, ps in sorted(groups.items(), key=lambda kv: kv[1][0].host):
            self.add("LOG005", f"{hostlist({p.host for p in ps})}: NCCL lists {len(names)} NET device"
                     f"{'s' if len(names) != 1 else ''} ({', '.join(names)}) where most processes list "
                     f"{len(common)} ({', '.join(common)})", [ps[0].ib_ev, next(p for p in procs if tuple(
                         n.name for n in p.ib) == common).ib_ev], hosts={p.host for p in ps})

    # LOG006 ---------------------------------------------------------------
    def channels(self) -> None:
        for c in self.ls.comms:
            counts: dict[int, list[Member]] = {}
            for m in c.members:
                if m.coll_channels is not None:
                    counts.setdefault(m.coll_channels, []).append(m)
            if len(counts) > 1:
                parts = [f"{n} on {self.who(ms)}" for n, ms in sorted(counts.items(), key=lambda kv: -len(kv[1]))]
                evs = [ms[0].channels_ev for _n, ms in sorted(counts.items())]
                self.add("LOG006", f"{c.label}: ranks report different collective channel counts: "
                         + "; ".join(parts), evs, hosts={m.host for ms in counts.values() for m in ms})

    # LOG007 ---------------------------------------------------------------
    def settings(self) -> None:
        procs = [p for p in self.ls.procs.values() if p.settings]
        if len(procs) < 2:
            return
        names = sorted({k for p in procs for k in p.settings} - {GIT_SETTING})  # LOG004 compares builds
        for name in names:
            vals: dict[str, list[Proc]] = {}
            for p in procs:
                if name in p.settings:
                    vals.setdefault(p.settings[name][0], []).append(p)
            if len(vals) < 2:
                continue
            sev = I if name in LOCAL_SETTINGS else W
            parts = [f"{v!r} on {hostlist({p.host for p in ps})}" for v, ps in sorted(vals.items(),
                                                                                  key=lambda kv: -len(kv[1]))]
            self.add("LOG007", f"{name} differs between processes: " + "; ".join(parts),
                     [ps[0].settings[name][1] for ps in vals.values()], severity=sev,
                     hosts={p.host for ps in vals.values() for p in ps})

    # LOG008 ---------------------------------------------------------------
    def graph_file(self) -> None:
        procs = [p for p in self.ls.procs.values() if "NCCL_GRAPH_FILE" in p.settings]
        bad = [(p, ev) for p in self.ls.procs.values() for k, ev in p.warns if k in ("graph-import", "graph-open")]
        if not procs and not bad:
            return
        hosts = {p.host for p in procs} | {p.host for p, _ in bad}
        files = sorted({p.settings["NCCL_GRAPH_FILE"][0] for p in procs})
        evs = [p.settings["NCCL_GRAPH_FILE"][1] for p in procs[:1]] + [ev for _, ev in bad[:2]]
        if bad:
            msg = (f"{hostlist(hosts)}: NCCL could not use the graph file"
                   + (f" {', '.join(files)}" if files else "") + f": {bad[0][1].text.split('NCCL WARN', 1)[-1].strip()}"
                   " (it was written for other GPUs or NICs); NCCL_GRAPH_FILE should not be set in production")
            self.add("LOG008", msg, evs, severity=E, hosts=hosts)
        else:
            self.add("LOG008", f"{hostlist(hosts)}: NCCL_GRAPH_FILE={', '.join(files)} replaces NCCL's own search "
                     "(a debugging setting; cloud images set it in /etc/nccl.conf)", evs, severity=W, hosts=hosts)

    # LOG009 ---------------------------------------------------------------
    def topology(self) -> None:
        real = [(p, ev) for p in self.ls.procs.values() for k, ev in p.warns if k == "realpath"]
        vm = [(p, p.virtual) for p in self.ls.procs.values() if p.virtual is not None]
        if real:
            self.add("LOG009", f"{hostlist({p.host for p, _ in real})}: NCCL could not resolve PCI devices in "
                     "sysfs ('Could not find real path'): a VM, container or WSL without the PCIe tree",
                     [ev for _, ev in real[:3]], hosts={p.host for p, _ in real})
        if vm:
            socket_only = all(p.network == "Socket" for p, _ in vm)
            msg = (f"{hostlist({p.host for p, _ in vm})}: a network device is not on a PCI path NCCL can read "
                   "(Hyper-V vmbus or virtio): NCCL attaches it to the first CPU and loses GPU locality")
            if not self.multi_host:
                msg += " (one node in the log: the network is not used by this job)"
            elif socket_only:
                msg += " (the Socket transport stages through host memory anyway: locality changes little)"
            self.add("LOG009", msg, [ev for _, ev in vm[:3] if ev is not None],
                     severity=W if self.multi_host and not socket_only else I, hosts={p.host for p, _ in vm})

    # LOG010 ---------------------------------------------------------------
    def nic_underused(self) -> None:
        for c in self.ls.comms:
            chan = Counter(m.coll_channels for m in c.members if m.coll_channels is not None)
            nchan = chan.most_common(1)[0][0] if chan else None
            per_host: dict[str, list[Member]] = {}
            for m in c.members:
                per_host.setdefault(m.host, []).append(m)
            hits: dict[tuple[int, int, int], list[str]] = {}
            evs: dict[tuple[int, int, int], list[Ev]] = {}
            for host, mems in per_host.items():
                used = {n for m in mems for n in member_nics(m)}
                if not used:
                    continue
                listed = max((len(m.proc.ib) for m in mems), default=0)
                local = len({m.dev for m in mems})
                if local < 2 or listed < 2 or (nchan is not None and nchan < listed):
                    continue
                if len(used) < min(local, listed):
                    key = (len(used), listed, local)
                    hits.setdefault(key, []).append(host)
                    evs.setdefault(key, []).extend(ev for m in mems[:2] for k, ev in m.conn_ev.items()
                                                   if k.startswith("NET/"))
            for (nused, listed, local), hosts in sorted(hits.items()):
                self.add("LOG010", f"{hostlist(hosts)} ({c.label}): {local} local ranks send over {nused} of the "
                         f"{listed} NICs NCCL lists", evs[(nused, listed, local)][:4], hosts=hosts)

    # LOG011 ---------------------------------------------------------------
    def nic_rails(self) -> None:
        mixed = [p for p in self.ls.procs.values()
                 if len({("IB" if n.link.startswith("IB") else n.link) for n in p.ib}) > 1]
        if mixed:
            p = mixed[0]
            links = ", ".join(f"{n.name}/{n.link}" for n in p.ib)
            self.add("LOG011", f"{hostlist({q.host for q in mixed})}: NCCL's NET list mixes InfiniBand and RoCE "
                     f"devices ({links}): a management or storage NIC among the rails", [p.ib_ev],
                     hosts={q.host for q in mixed})
        if not self.models:
            return
        groups: dict[str, list[tuple[Member, list[str], list[str]]]] = {}
        for m in self.ls.members():
            model = self.models.get(m.host)
            if model is None or not m.net_ch:
                continue
            g = model.gpu_of(m)
            if g is None:
                continue
            planned = list(g.get("nets_used") or [])
            # the NIC names the log itself lists (what NCCL had); the model's numbering when it lists none
            used = sorted({(m.proc.nic_name(dev) if m.proc.ib else model.nets.get(dev, f"NET/{dev}"))
                           for chs in m.net_ch.values() for _d, dev, _g, proxy in chs if proxy is None})
            off = [n for n in used if n not in planned and not any(n in x.split("+") for x in planned)]
            if off and planned:
                groups.setdefault(m.host, []).append((m, off, planned))
        for host, items in sorted(groups.items()):
            known = set(self.models[host].nets.values())
            cells = [f"GPU {m.dev} (rank {m.rank}) uses {'+'.join(off)}, planned {'+'.join(pl)}"
                     + ("".join(f" ({n} is not among the model's NETs: a port down or excluded)" for n in off
                                if n not in known and not any(n in k.split('+') for k in known)))
                     for m, off, pl in items[:6]]
            evs = [ev for m, _o, _p in items[:2] for k, ev in m.conn_ev.items() if k.startswith("NET/")]
            self.add("LOG011", f"{host}: channels on NICs the model does not plan for their GPU ("
                     f"{self.models[host].source}): " + "; ".join(cells)
                     + (f"; and {len(items) - 6} more ranks" if len(items) > 6 else ""), evs, hosts={host})

    # LOG012 ---------------------------------------------------------------
    def paths(self) -> None:
        if not self.models:
            return
        for c in self.ls.comms:
            seen: set[str] = set()
            for m in c.members:
                model = self.models.get(m.host)
                if model is None or m.host in seen:
                    continue
                for gr in m.graphs:
                    if gr["pattern"] not in (4, 1, 2, 3) or gr["type_inter"] not in _PATH_ORDER:
                        continue
                    worst = None
                    for g in model.doc.get("gpus", []):
                        for name in g.get("nets_used") or []:
                            t = g.get("paths_to_nets", {}).get(name, {}).get("type")
                            if t in _PATH_ORDER and (worst is None or _PATH_ORDER.index(t) > _PATH_ORDER.index(worst)):
                                worst = t
                    if worst is None:
                        continue
                    if _PATH_ORDER.index(gr["type_inter"]) > _PATH_ORDER.index(worst):
                        seen.add(m.host)
                        ev = gr.get("_ev") or m.channels_ev or m.first
                        self.add("LOG012", f"{m.host} ({c.label}): NCCL's graph (pattern {gr['pattern']}) reaches "
                                 f"the network over {gr['type_inter']} paths where the model ({model.source}) has "
                                 f"{worst} at worst", [ev], hosts={m.host})
                        break

    # LOG017 ---------------------------------------------------------------
    def fewer_channels(self) -> None:
        """Fewer collective channels than NCCL's own search gives on the modelled node (topo predict), for a
        communicator over every GPU of each host."""
        if not self.models:
            return
        for c in self.ls.comms:
            seen: set[str] = set()
            for m in c.members:
                model = self.models.get(m.host)
                if model is None or m.coll_channels is None or m.host in seen:
                    continue
                seen.add(m.host)
                graphs = model.doc.get("graphs") or {}
                want = graphs.get("channels")
                ngpus = len(model.doc.get("gpus", []))
                if not want or m.local_ranks != ngpus or (m.nnodes or 1) != model.doc.get("nodes"):
                    continue
                if m.coll_channels < want:
                    ring = graphs.get("ring", {})
                    self.add("LOG017", f"{m.host} ({c.label}): {m.coll_channels} collective channels where the model "
                             f"({model.source}) predicts {want} (ring {ring.get('nchannels')} x "
                             f"{ring.get('bw_intra')}/{ring.get('bw_inter')} GB/s {ring.get('type_intra')}/"
                             f"{ring.get('type_inter')}): NCCL saw a worse machine than the model of the host",
                             [m.channels_ev or m.first], hosts={m.host})

    # LOG013 ---------------------------------------------------------------
    def init_incomplete(self) -> None:
        timeout = any("timeout" in ev.text.lower() for ev in self.ls.app_errors)
        for c in self.ls.comms:
            stuck = [m for m in c.members if m.started is not None and m.completed is None
                     and not self._failed(m.proc)]  # an init that failed with an error is that error's finding
            if not stuck:
                continue
            done = [m for m in c.members if m.completed is not None]
            msg = (f"{c.label}: {self.who(stuck)} printed Init START but no Init COMPLETE "
                   f"({len(stuck)} of {len(c.members)} ranks in the log)")
            seen = {m.rank for m in c.members if m.rank is not None}
            if c.nranks and len(seen) < c.nranks and c.nranks <= 4096:
                absent = [r for r in range(c.nranks) if r not in seen]
                one = len(absent) == 1
                msg += (f"; rank{'' if one else 's'} {ranges(absent)} of {c.nranks} {'is' if one else 'are'} not in "
                        f"the log: {'its log is' if one else 'their logs are'} elsewhere, or {'it' if one else 'they'} "
                        "never reached NCCL's initialisation (a rank stuck before it, in the application or the "
                        "launcher, holds every other rank in the bootstrap)")
            if done or timeout:
                msg += (f" while {self.who(done)} completed" if done else "; the application reports a timeout")
                self.add("LOG013", msg, [m.started for m in stuck[:3]], hosts={m.host for m in stuck})
            else:
                self.add("LOG013", msg + ": the log ends there, with no error and no rank past initialisation: a hang, "
                         "or a log (or excerpt) cut before the end; the log alone cannot tell",
                         [m.started for m in stuck[:3]], severity=W, hosts={m.host for m in stuck})

    # LOG014 ---------------------------------------------------------------
    def errors(self) -> None:
        from ncclctl.logs.nvlink import is_mnnvl_not_working

        kinds: dict[str, list[tuple[Proc, Ev]]] = {}
        counts: Counter[str] = Counter()
        for p in self.ls.procs.values():
            for k, n in p.warn_counts.items():
                counts[k] += n
            for k, ev in p.warns:
                if is_mnnvl_not_working(ev.text):  # LOG030 reports it, with its cause
                    counts[k] -= 1
                else:
                    kinds.setdefault(k, []).append((p, ev))
        for kind, items in sorted(kinds.items()):
            if kind not in ERROR_WARNS and kind not in SOFT_WARNS or kind in OWN_RULE_WARNS:
                continue
            if kind in ("ibv", "ib-completion", "cuda", "socket") and all(p.hints for p, _ in items):
                continue  # NCCL's own HINT names the cause of these: LOG027 reports it with this WARN as evidence
            if kind == "version-mismatch":
                continue  # LOG004
            hosts = {p.host for p, _ in items}
            first = items[0][1]
            text = first.text.split("NCCL WARN", 1)[-1].strip()
            level = "ATTN" if kind == "attn" else "WARN"
            text = text.split("NCCL ATTN", 1)[-1].strip()
            msg = (f"{hostlist(hosts)}: {counts[kind]} NCCL {level} line{'s' if counts[kind] != 1 else ''} ({kind}): "
                   f"{text}")
            hint = _hint(kind, text)
            if hint:
                msg += f" -- {hint}"
            sev = E if kind in ERROR_WARNS else W
            causes = [f.rule for f in self.findings if f.rule in _CAUSE_RULES and f.severity == E]
            if causes and kind in ("socket", "bootstrap"):
                # a peer that stopped (out of memory, a failed init) closes its sockets: its neighbours then see
                # "Connection closed by remote peer"; the cause is the other finding
                sev = W
                msg += f" (most likely a consequence of {', '.join(sorted(set(causes)))} on another rank)"
            self.add("LOG014", msg, [ev for _, ev in items[:3]], severity=sev, hosts=hosts, fix=_kind_fix(kind, text))
        explained = any(f.rule in _CAUSE_RULES and f.severity == E for f in self.findings)
        named = {"LOG034", "LOG035"} & {f.rule for f in self.findings}  # their lines have a rule of their own
        app = [ev for ev in self.ls.app_errors if not named or not _named_app_error(ev.text)]
        if app and not explained:
            first = app[0]
            self.add("LOG014", f"the application reports NCCL errors ({len(app)} line"
                     f"{'s' if len(app) != 1 else ''}): {first.text[:200]}", app[:3],
                     fix="Run with NCCL_DEBUG=WARN (or INFO) so that NCCL's own WARN line, which names the failing "
                     "call, is in the log; then check that line's class with 'ncclctl log check'.")

    # LOG018-LOG023: one rule per class of failure NCCL names, each with its own cause and fix --------------------
    def causes(self) -> None:
        by_kind: dict[str, list[tuple[Proc, Ev]]] = {}
        for p in self.ls.procs.values():
            for k, ev in p.warns:
                if k in OWN_RULE_WARNS:
                    by_kind.setdefault(k, []).append((p, ev))
        for k, ev in self.ls.framework_warns:  # the framework's copy of the WARN: no host, no process
            by_kind.setdefault(k, []).append((Proc("", None, ev), ev))
        app = self.ls.app_errors[:1]

        def text(ev: Ev) -> str:
            t = ev.text.split("NCCL WARN", 1)[-1].strip()
            return t.split("]:", 1)[-1].strip() if t.startswith("[") else t

        def hostlist(hs: Iterable[str]) -> str:  # noqa: F811 -- the framework's lines name no host
            from ncclctl.logs.show import hostlist as hl

            named = {h for h in hs if h}
            return hl(named) if named else "the application"

        def setting(procs: Iterable[Proc], name: str) -> tuple[str, Ev] | None:
            return next((p.settings[name] for p in procs if name in p.settings), None)

        items = by_kind.get("no-interface", [])
        if items:
            procs = [p for p, _ in items]
            s = setting(procs, "NCCL_SOCKET_IFNAME") or setting(self.ls.procs.values(), "NCCL_SOCKET_IFNAME")
            fam = setting(self.ls.procs.values(), "NCCL_SOCKET_FAMILY")
            if s is not None:
                cause = (f"NCCL_SOCKET_IFNAME={s[0]} matches no interface with an address on this host (a prefix list; "
                         "'=' for exact names, '^' to exclude)")
            elif fam is not None:
                cause = f"NCCL_SOCKET_FAMILY={fam[0]}: no interface has an address of that family"
            else:
                cause = ("no interface but loopback or container bridges has an address (NCCL skips lo, docker*, "
                         "virbr* unless named)")
            self.add("LOG018", f"{hostlist({p.host for p in procs})}: NCCL found no network interface to use: "
                     f"{text(items[0][1])}; cause: {cause}", [items[0][1]] + ([s[1]] if s else []) + app,
                     hosts={p.host for p in procs})
        items = by_kind.get("duplicate-gpu", [])
        if items:
            procs = [p for p, _ in items]
            self.add("LOG019", f"{hostlist({p.host for p in procs})}: two ranks of one communicator use the same GPU: "
                     f"{text(items[0][1])}", [ev for _, ev in items[:2]] + app, hosts={p.host for p in procs})
        items = by_kind.get("no-net-plugin", [])
        if items:
            procs = [p for p, _ in items]
            net = setting(procs, "NCCL_NET") or setting(self.ls.procs.values(), "NCCL_NET")
            evs = [items[0][1]]
            if net is not None:
                evs.append(net[1])
                none = [p.ib_none for p in procs if p.ib_none is not None][:1]
                cause = (f"NCCL_NET={net[0]} allows only that network, and it has no usable device here"
                         + (" ('NET/IB : No device found')" if none and net[0].strip().upper() == "IB" else ""))
                evs += none
            elif any(p.ib_none for p in procs) and not any(p.socket for p in procs):
                evs += [p.ib_none for p in procs if p.ib_none is not None][:1]
                cause = ("NET/IB found no device and NCCL never tried its socket transport, which it does unless "
                         "NCCL_NET names one network: NCCL_NET=IB (not echoed in the log) on a host or container "
                         "without a usable RDMA device")
            else:
                cause = "no network plugin initialised (not even NCCL's internal IB and Socket)"
            self.add("LOG020", f"{hostlist({p.host for p in procs})}: {text(items[0][1])}; cause: {cause}", evs + app,
                     hosts={p.host for p in procs})
        items = by_kind.get("no-algorithm", [])
        if items:
            procs = [p for p, _ in items]
            forced = [(n, s) for n in ("NCCL_ALGO", "NCCL_PROTO") if (s := setting(self.ls.procs.values(), n))]
            t = text(items[0][1])
            named = [n for n in ("NCCL_ALGO", "NCCL_PROTO") if f"{n} was set to" in t]
            cause = ("; ".join(f"{n}={s[0]} leaves no algorithm/protocol this communicator can run" for n, s in forced)
                     or ("; ".join(f"{n} (as the message says) leaves no algorithm this communicator can run"
                                   for n in named))
                     or "no algorithm/protocol is available for this operation (a tuner plugin or an NCCL bug)")
            self.add("LOG021", f"{hostlist({p.host for p in procs})}: {t}; cause: {cause}",
                     [items[0][1]] + [s[1] for _, s in forced] + app, hosts={p.host for p in procs})
        missing = [(p, kind, names, ev) for p in self.ls.procs.values() for kind, names, ev in p.plugins_missing]
        if missing:
            groups: dict[tuple[str, tuple[str, ...]], list[tuple[Proc, Ev]]] = {}
            for p, kind, names, ev in missing:
                groups.setdefault((kind, names), []).append((p, ev))
            for (kind, names), its in sorted(groups.items()):
                var = {"NET": "NCCL_NET_PLUGIN", "TUNER": "NCCL_TUNER_PLUGIN", "PROFILER": "NCCL_PROFILER_PLUGIN",
                       "ENV": "NCCL_ENV_PLUGIN", "GIN": "NCCL_GIN_PLUGIN"}.get(kind.upper(), f"the {kind} plugin setting")
                s = setting([p for p, _ in its], var)
                self.add("LOG022", f"{hostlist({p.host for p, _ in its})}: the {kind} plugin asked for was not found "
                         f"(NCCL tried {', '.join(names)}); NCCL goes on without it"
                         + (" (internal IB/Socket transports)" if kind.upper() == "NET" else ""),
                         [its[0][1]] + ([s[1]] if s else []), hosts={p.host for p, _ in its})
        items = by_kind.get("nvls-bind", [])
        if items:
            procs = [p for p, _ in items]
            t = " ".join(ev.text for _, ev in items[:4])
            ver = self._version_of(list(self.ls.procs.values())) or _parse_version(self.ls.version())
            cause = ("NCCL could not set up NVLink SHARP (NVLS) multicast memory: the Fabric Manager (or NVLSM/IMEX "
                     "on NVL72) and the NVSwitches did not give this GPU a multicast object")
            if ("'out of memory'" in t or "CUDA error 2 " in t) and ver is not None and ver[:2] == (2, 29):
                cause = (f"NCCL {'.'.join(map(str, ver))} runs out of NVLS multicast objects (a 2.29 problem: it "
                         "creates one per communicator/buffer registration until the switch's slots are gone)")
            elif "'out of memory'" in t or "CUDA error 2 " in t:
                cause = ("the NVSwitches' multicast objects are exhausted (many communicators with NVLS, or a "
                         "leak in the NCCL release)")
            self.add("LOG024", f"{hostlist(p.host for p in procs)}: NVLS (NVLink SHARP) setup failed: "
                     f"{text(items[0][1])}; cause: {cause}", [ev for _, ev in items[:2]] + app,
                     hosts={p.host for p in procs if p.host})
        items = by_kind.get("shm-space", [])
        fallback = [(p, p.shm_fallback) for p in self.ls.procs.values() if p.shm_fallback is not None]
        if items or fallback:
            procs = [p for p, _ in items] or [p for p, _ in fallback]
            if items:
                msg = (f"{hostlist(p.host for p in procs)}: NCCL could not create its shared memory in /dev/shm: "
                       f"{text(items[0][1])}; cause: /dev/shm is too small (Docker's default is 64 MB)")
                evs = [items[0][1]] + [ev for _, ev in fallback[:1]] + app
                sev = E
            else:
                msg = (f"{hostlist(p.host for p in procs)}: NCCL's cuMem host allocations fail and it falls back to "
                       "/dev/shm for its host buffers (a container without NUMA support): /dev/shm must be large")
                evs = [fallback[0][1]]
                sev = W
            self.add("LOG025", msg, evs, severity=sev, hosts={p.host for p in procs if p.host})
        items = by_kind.get("gpu-oom", [])
        if items:
            procs = [p for p, _ in items]
            self.add("LOG026", f"{hostlist(p.host for p in procs)}: a GPU ran out of memory inside NCCL: "
                     f"{text(items[0][1])}; the other ranks' socket and proxy errors follow from this rank's exit",
                     [ev for _, ev in items[:2]] + app, hosts={p.host for p in procs if p.host})
        topo = [(p, p.topo_open) for p in self.ls.procs.values() if p.topo_open is not None]
        topo += by_kind.get("topo-open", [])
        if topo:
            procs = [p for p, _ in topo]
            self.add("LOG023", f"{hostlist({p.host for p in procs})}: NCCL could not open its topology file and "
                     f"detected the topology itself instead: {text(topo[0][1]).split('INFO', 1)[-1].strip()}",
                     [topo[0][1]], hosts={p.host for p in procs})

    # LOG027: NCCL's own hint ------------------------------------------------------------------------------
    def hints(self) -> None:
        groups: dict[str, list[tuple[Proc, Ev]]] = {}
        for p in self.ls.procs.values():
            for ev in p.hints:
                body = ev.text.split("HINT:", 1)[-1].strip()
                if body.lower().startswith("to confirm"):
                    continue  # the second line of a hint: evidence of the first
                groups.setdefault(_hint_class(body)[0], []).append((p, ev))
        for cls, items in sorted(groups.items()):
            procs = [p for p, _ in items]
            confirm = [ev for p in procs for ev in p.hints if "To confirm" in ev.text][:1]
            confirm += [ev for p in procs for k, ev in p.warns if k in ERROR_WARNS][:1]  # the error it explains
            failed = any(self._failed(p) for p in procs)
            body = items[0][1].text.split("HINT:", 1)[-1].strip()
            _cls, cause, fix = _hint_class(body)
            self.add("LOG027", f"{hostlist({p.host for p in procs})}: NCCL names the likely cause of its error: {cause}",
                     [items[0][1]] + confirm, severity=E if failed else W, hosts={p.host for p in procs}, fix=fix)

    # LOG028: NCCL's own diagnostics -------------------------------------------------------------------------
    def diagnostics(self) -> None:
        bad = [(st, text, ev) for st, text, ev in self.ls.diags if st in ("FAIL", "ERROR", "WARN")]
        if not self.ls.diags:
            return
        if not bad:
            ok = sum(1 for st, _t, _e in self.ls.diags if st == "OK")
            self.add("LOG028", f"NCCL's own diagnostics ran ({len(self.ls.diags)} lines, {ok} checks OK) and report no "
                     "failure", [self.ls.diags[0][2]], severity=I)
            return
        by_check: dict[str, list[tuple[str, str, Ev]]] = {}
        for st, text, ev in bad:
            by_check.setdefault(text.split(":", 1)[0].strip() or "diagnostics", []).append((st, text, ev))
        for check, items in sorted(by_check.items()):
            sev = E if any(st in ("FAIL", "ERROR") for st, _t, _e in items) else W
            what = {"net bw": "the network bandwidth test between ranks (same-NIC / cross-NIC ib_write_bw)",
                    "p2p": "the GPU-to-GPU peer access check"}.get(check, check)
            self.add("LOG028", f"NCCL's own diagnostics: {what} reports a problem: {items[0][1][:240]}"
                     + (f" (+{len(items) - 1} more)" if len(items) > 1 else ""),
                     [ev for _s, _t, ev in items[:3]], severity=sev)

    # LOG015 ---------------------------------------------------------------
    def slow_init(self) -> None:
        limit = float(self.opt("LOG015", "init_seconds"))
        for c in self.ls.comms:
            slow = [m for m in c.members if m.init_total is not None and m.init_total > limit]
            if not slow:
                continue
            worst = max(slow, key=lambda m: m.init_total or 0.0)
            parts = ""
            if worst.init_parts:
                big = max(worst.init_parts.items(), key=lambda kv: kv[1])
                parts = f"; the largest part is {big[0]} ({big[1]:.2f} s)"
            self.add("LOG015", f"{c.label}: initialisation took up to {worst.init_total:.2f} s on {self.who(slow)} "
                     f"(limit {limit:g} s){parts}", [worst.init_ev], hosts={m.host for m in slow})

    # LOG016 ---------------------------------------------------------------
    def shm(self) -> None:
        for c in self.ls.comms:
            by_rank = c.by_rank()
            per_host: dict[str, list[tuple[Member, int]]] = {}
            for m in c.members:
                for peer, kind in m.local_peers.items():
                    if kind == "SHM":
                        per_host.setdefault(m.host, []).append((m, peer))
            for host, pairs in sorted(per_host.items()):
                sev = W
                why = ""
                model = self.models.get(host)
                if model is not None:
                    for m, peer in pairs:
                        g, pm = model.gpu_of(m), by_rank.get(peer)
                        pg = model.gpu_of(pm) if pm is not None else None
                        if g is not None and pg is not None:
                            t = g.get("paths_to_gpus", {}).get(str(pg.get("dev")), {}).get("type")
                            if t in ("NVL", "NVB", "C2C"):
                                sev = E
                                why = f"; the model has an {t} path between GPU {g.get('dev')} and GPU {pg.get('dev')}"
                                break
                mems = [m for m, _ in pairs]
                s = self._setting(host, ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL"))
                cause = f"; {s[0]}={s[1][0]} is set" if s else ""
                evs = [m.conn_ev.get("SHM") for m in mems[:2]] + ([s[1][1]] if s else [])
                self.add("LOG016", f"{host} ({c.label}): {len(pairs)} intra-node connection"
                         f"{'s' if len(pairs) != 1 else ''} of {self.who(mems)} "
                         f"{'go' if len(pairs) != 1 else 'goes'} through host memory (SHM) instead of P2P{cause}{why}",
                         evs, severity=sev, hosts={host})

    def _setting(self, host: str, names: tuple[str, ...]):
        for p in self.ls.procs.values():
            if p.host == host:
                for n in names:
                    if n in p.settings:
                        return n, p.settings[n]
        return None


#: Rules that name the cause of a failure: with one of them at error, the application's own error lines are its
#: evidence, not a finding of their own.
_CAUSE_RULES = {"LOG008", "LOG018", "LOG019", "LOG020", "LOG021", "LOG024", "LOG025", "LOG026", "LOG027",
                "LOG030", "LOG032", "LOG033"}


def _parse_version(text: str | None):
    from ncclctl.nccl.version import parse

    if not text:
        return None
    try:
        return parse(text.split("+", 1)[0])
    except Exception:  # a mangled version string
        return None


#: NCCL 2.32's HINT lines by what they are about: (keyword in the hint, class, the cause in our words, the fix).
_HINTS: tuple[tuple[str, str, str, str], ...] = (
    ("cross-rail", "cross-rail",
     "the NICs of different rails cannot reach each other (a rail-optimised fabric without routes between rails)",
     "Set NCCL_CROSS_NIC=0 so each NIC talks only to the same rail on other nodes (it is NCCL's own test of this "
     "cause), or route between the rails; 'ncclctl fabric rails' checks the cabling."),
    ("GID index", "gid-index",
     "NCCL_IB_GID_INDEX forces a GID that does not work for this port, or a GID changed while the job ran",
     "Unset NCCL_IB_GID_INDEX (or set -1: NCCL picks the RoCE v2 GID of the port's IP) and look for GID changes in "
     "dmesg; 'ncclctl lint' (RoCE rules) reads the GID tables."),
    ("ACS", "acs",
     "ACS redirects GPUDirect RDMA peer traffic through the root complex, which breaks it",
     "Confirm with NCCL_NET_GDR_LEVEL=LOC; then set ACS as the platform needs it ('ncclctl lint' PCIe rules: "
     "redirect off on PCIe switches of HGX-class nodes; the per-port masks rdma_topo computes on Data Direct)."),
    ("IMEX", "imex",
     "the IMEX service (NVLink fabric memory export across nodes) is not running or not configured on this MNNVL "
     "system",
     "Start nvidia-imex on every node of the NVLink domain with a nodes_config.cfg listing exactly the domain's "
     "nodes; check 'nvidia-imex-ctl -N' and that the job's container has /dev/nvidia-caps-imex-channels."),
    ("BAR1", "bar1",
     "the GPUs' BAR1 peer-mapping space is exhausted (common with more than 8 GPUs per node)",
     "Confirm with NCCL_CUMEM_ENABLE=0 (the legacy allocator maps less); reduce the peers each GPU maps or use a "
     "platform with larger BAR1."),
    ("--net host", "container-net-host",
     "NCCL could not read the complete PCI topology inside a container started with '--net host'",
     "Run the container without '--net host', or give NCCL the node's topology (NCCL_TOPO_FILE from 'ncclctl topo "
     "generate' on the host)."),
    ("topology file", "topo-file",
     "the topology file given to NCCL (NCCL_TOPO_FILE) misses or misstates devices of this node",
     "Compare it with what NCCL detects (NCCL_TOPO_DUMP_FILE=topo.xml) or check it with 'ncclctl topo validate FILE "
     "--root /'; unset NCCL_TOPO_FILE if it was made for another machine."),
    ("same node cannot talk", "local-nics",
     "NICs of one node cannot reach each other (needed by PXN and cross-NIC traffic inside a node)",
     "Test the local NICs against each other with ib_write_bw; check the switch ports and RoCE routing between them, "
     "or set NCCL_PXN_DISABLE=1 and NCCL_CROSS_NIC=0 while it is fixed."),
    ("NCCL_IB_TIMEOUT", "ib-timeout",
     "NCCL_IB_TIMEOUT is set too short for this fabric",
     "Raise NCCL_IB_TIMEOUT (the default, 20, is about 4 s per retry) or unset it."),
)


def _hint_class(body: str) -> tuple[str, str, str]:
    """(class, cause, fix) for the text of a HINT line."""
    for key, cls, cause, fix in _HINTS:
        if key in body:
            return cls, cause, fix
    short = body[:200]
    return "other", f"(NCCL's words) {short}", "Follow the HINT's 'To confirm' line, printed next to it in the log."


def _virtual(name: str, addr: str) -> bool:
    if name == "lo" or name.startswith("lo:") or addr.startswith("127.") or addr in ("::1",):
        return True
    return any(name.startswith(v) for v in VIRTUAL_IFACES if v != "lo")


def _ib_completion_status(text: str) -> str | None:
    """What an IB completion error's status (ibv_wc_status) and vendor error say: retry counter exceeded (12, or vendor
    err 129), local protection (4, or vendor err 81), flushed (5), remote access (10); None for any other."""
    import re

    ve = re.search(r"vendor err (\d+)", text)
    st = re.search(r"(?:with error |status=)(\d+)", text)
    code = int(st.group(1)) if st else None
    vendor = ve.group(1) if ve else None
    if code == 12 or vendor == "129":
        return "retry-exceeded"
    if code == 4 or vendor == "81":
        return "local-protection"
    return {5: "flushed", 10: "remote-access"}.get(code) if code is not None else None


def _hint(kind: str, text: str) -> str:
    import re

    if kind == "ib-completion":
        status = _ib_completion_status(text)
        if status == "retry-exceeded":
            return ("transport retry counter exceeded: the peer is unreachable over this NIC (link down, wrong "
                    "NCCL_IB_GID_INDEX on RoCE, no route between rails: NCCL_CROSS_NIC, or NCCL_IB_TIMEOUT too low)")
        if status == "local-protection":
            return ("local protection error: usually ACS or the IOMMU blocking GPUDirect RDMA peer writes "
                    "(confirm with NCCL_NET_GDR_LEVEL=LOC, fix by disabling ACS on the PCIe switches)")
        if status == "flushed":
            return "work request flushed: a consequence of an earlier error on this connection"
        return ""
    if kind == "ibv":
        if "No such device" in text:
            return ("no usable GID/route for the port: check NCCL_IB_GID_INDEX (RoCE v2) and that the port is up; "
                    "in a container on a macvlan/bridge network the RDMA port's netdev is missing: run with the "
                    "host's network (--net=host, hostNetwork) or an RDMA shared-device/SR-IOV network plugin")
        if "Network is unreachable" in text:
            return "no usable GID/route for the port: check NCCL_IB_GID_INDEX (RoCE v2) and that the port is up"
        if "Connection timed out" in text or re.search(r"failed with 110\b", text):
            if "next state RTR" in text:
                # INIT -> RTR needs the remote GID reachable from this port: on a rail-only fabric it is not
                return ("the queue pair could not reach the peer's GID (INIT -> RTR timed out): on a rail-optimised "
                        "fabric without routes between rails, set NCCL_CROSS_NIC=0 so each NIC only talks to the same "
                        "rail; otherwise check routing between the subnets and NCCL_IB_GID_INDEX")
            return "the peer HCA did not answer: cabling, subnet manager, or a firewall between RoCE ports"
        if "Invalid argument" in text:
            return "the HCA refused the QP settings (GID index, MTU, traffic class): check NCCL_IB_* settings"
        return ""
    if kind == "socket":
        return "the bootstrap/socket network between hosts fails: NCCL_SOCKET_IFNAME, firewalls, or a crashed peer"
    if kind == "no-verbs":
        return "libibverbs is missing: NCCL cannot use InfiniBand/RoCE and falls back to sockets"
    if kind == "cuda":
        if "peer access is not supported" in text or "Cuda failure 217" in text:
            return ("peer access between GPUs without P2P (cuMem host buffers of NCCL 2.27 on PCIe GPUs without "
                    "P2P): set NCCL_CUMEM_HOST_ENABLE=0, or upgrade NCCL")
        if "operation not supported" in text:
            return ("the driver refuses a CUDA memory call NCCL makes at init (cudaMemPool/cuMem: vGPU with UVM off, "
                    "an old or CI driver): enable UVM / upgrade the driver, or NCCL_CUMEM_ENABLE=0")
        return "a CUDA error inside NCCL: check the driver and XID errors in dmesg"
    if kind == "graph-fallback":
        return ("NCCL's graph search found no path for this pattern and falls back to a simple order: rings/trees "
                "that ignore the topology, often several times slower; a topology NCCL misreads (VM, a NIC or GPU "
                "missing, NIC fusion) or a search bug of the release")
    if kind == "ib-async":
        if "fatal" in text.lower():
            return "the HCA reported a fatal event on a queue: the NIC or its firmware failed (dmesg, mlxlink)"
        return ("the HCA reported a port event (port error, LID/GID change, client reregistration): the link "
                "flapped or the subnet manager re-registered the port while the job ran")
    if kind == "kernel-smem-info":
        return ("NCCL's kernels need more shared memory per block than this GPU offers: the NCCL build does not "
                "support this GPU's architecture (a release older than the GPU)")
    if kind == "kernel-smem":
        return ("NCCL's kernels need more shared memory per block than this GPU offers: the NCCL build does not "
                "support this GPU's architecture (a release older than the GPU)")
    if kind == "bootstrap":
        return "ranks of different jobs or attempts met at one bootstrap root (stale MASTER_PORT?)"
    return _FAMILY_HINTS.get(kind, "")


def _named_app_error(text: str) -> bool:
    from ncclctl.logs.classes import _REMOTE, _WATCHDOG

    return _WATCHDOG in text or any(x in text for x in _REMOTE)


#: The fix of each WARN class LOG014 reports (its hint names the cause): (class, fix).
_KIND_FIXES = {
    "ibv": "Check the port and its addressing: 'ibstat'/'ibv_devinfo' (port ACTIVE), 'show_gids' for the RoCE v2 "
           "GID of the port's IP (unset NCCL_IB_GID_INDEX or set it to that index), routes between the NICs' subnets; "
           "in containers use the host network or an RDMA network plugin; 'ncclctl lint' checks NCCL_IB_*.",
    "socket": "Check NCCL_SOCKET_IFNAME names the same routable interface on every host, that the ports between "
              "hosts are open (no firewall), and that no peer process died first (its log has the first error).",
    "socket-other": "Check NCCL_SOCKET_IFNAME, firewalls, and the peer's log for the first error.",
    "cuda": "Read the CUDA error: driver/XID errors in dmesg ('nvidia-smi -q', 'dmesg | grep -i xid'), the driver "
            "against the CUDA NCCL was built with, GPU memory in use by other processes.",
    "bootstrap": "Give each job (and each retry) its own MASTER_PORT / NCCL bootstrap root, and stop stale ranks.",
    "ib-open": "Check the device exists and is usable in this host or container (/dev/infiniband passed in, "
               "'ibv_devinfo'), or leave it out with NCCL_IB_HCA.",
    "ib-mismatch": "Give every node the same NIC types and NCCL_IB_HCA list, or split the job by NIC type.",
    "kernel-smem": "Use an NCCL release built for this GPU's architecture (the framework's bundled NCCL may be older "
                   "than the GPU); NCCL_DEBUG=INFO prints the CUDA architectures the library was built for.",
    "graph-fallback": "Compare NCCL's topology with the node (NCCL_TOPO_DUMP_FILE, 'ncclctl topo predict --root'); "
                      "with NIC fusion on 2.26 try NCCL_NET_MERGE_LEVEL=LOC or upgrade NCCL (2.27+ keeps NET/0); "
                      "check every NIC and GPU is visible to the job.",
    "ib-async": "Check the port's link: cable and switch port, error counters (ibstat, perfquery, mlxlink), the "
                "subnet manager's log; move the job off the node while the link flaps.",
    "kernel-smem-info": "Use an NCCL release built for this GPU's architecture (upgrade the framework's bundled NCCL, "
                        "e.g. a newer PyTorch wheel).",
    "ring": "Check that every rank runs the same NCCL and sees the same topology; NCCL_GRAPH_FILE/NCCL_RINGS if set.",
}


def _kind_fix(kind: str, text: str) -> str | None:
    if kind == "ib-completion":
        status = _ib_completion_status(text)
        if status == "retry-exceeded":
            return ("Test the NIC pair below NCCL (ib_write_bw between the two hosts on the same devices and GID); "
                    "check link state and errors (ibstat, perfquery), NCCL_IB_GID_INDEX on RoCE, routes between "
                    "rails (NCCL_CROSS_NIC=0 on rail-only fabrics); raise NCCL_IB_TIMEOUT only for a congested "
                    "fabric.")
        if status == "local-protection":
            return ("Confirm with NCCL_NET_GDR_LEVEL=LOC (GPUDirect RDMA off): if that works, disable ACS on the PCIe "
                    "switches (or set the IOMMU to passthrough); 'ncclctl lint' checks ACS and the IOMMU.")
        if status == "remote-access":
            return ("A remote access error: the peer's memory registration was refused or changed; check both "
                    "hosts' peer-memory/DMA-BUF support (LOG001) and that they run the same NCCL.")
        return "Read the status code (ibv_wc_status) and run ib_write_bw between the two hosts on these devices."
    return _KIND_FIXES.get(kind)


#: Where to look for a WARN of a family no class names (ncclctl.logs.parse.WARN_FAMILIES).
_FAMILY_HINTS = {
    "ras": "NCCL's RAS subsystem (its own health monitoring between ranks): a peer that stopped answering",
    "proxy": "NCCL's proxy thread (network and P2P progress): usually a consequence of a peer or NIC failing first",
    "gin": "NCCL's GPU-initiated networking (GIN, 2.28+): the NIC/plugin support for it; NCCL_GIN_ENABLE=0 to rule it out",
    "ib-other": "the InfiniBand/RoCE transport: 'ncclctl lint' checks the ports, GIDs and NCCL_IB_* settings",
    "socket-other": "the socket network between ranks: NCCL_SOCKET_IFNAME, firewalls, or a peer that stopped",
    "cuda-other": "a CUDA call inside NCCL: the driver, XID errors in dmesg, GPU memory",
    "nvml": "NVML (the driver's management library): driver and library versions, the container's access to it",
    "topology": "NCCL's topology detection or a topology file: 'ncclctl topo validate' / NCCL_TOPO_DUMP_FILE",
    "registration": "user-buffer registration (NCCL_LOCAL_REGISTER / graph registration): disable it to rule it out",
    "collnet": "CollNet/SHARP: the SHARP plugin and aggregation manager; NCCL_COLLNET_ENABLE=0 to rule it out",
    "memory": "a memory allocation inside NCCL: GPU or host memory, /dev/shm, pinned-memory limits (ulimit -l)",
    "usage": "the application's use of the NCCL API or a setting NCCL refuses",
    "setting": "an NCCL_* setting NCCL refuses or ignores: 'ncclctl lint' checks the environment",
    "mismatch": "ranks that disagree (versions, settings, topologies): compare the hosts' 'ncclctl facts'",
    "timeout": "a timeout: a peer that stopped, or a network that drops traffic",
    "mnnvl": "a GPU's multi-node NVLink fabric state or health (LOG029 decodes the MNNVL lines): 'nvidia-smi -q -d "
             "FABRIC' on that host",
    "gdrcopy": "GDRCopy (CPU access to GPU memory): the gdrdrv module and libgdrapi version; NCCL_GDRCOPY_ENABLE=0 to "
               "rule it out",
    "symmetric": "symmetric memory, windows and RMA (2.27+): the registration of the buffers; disable the feature "
                 "(NCCL_WIN_ENABLE=0) to rule it out",
    "system-call": "a system call or thread NCCL made failed (the errno text in the line): limits (ulimit -n/-u), "
                   "the container's permissions, the kernel",
    "plugin": "a plugin (profiler, tuner, env) failed: NCCL continues without it",
    "ofi": "the AWS OFI plugin (aws-ofi-nccl on libfabric/EFA): the EFA devices in the container "
           "(/dev/infiniband/uverbs*), a security group that allows all traffic between the nodes, matching plugin and "
           "EFA installer versions ('fi_info -p efa')",
    "abort": "the communicator was aborted or destroyed after an earlier error: the first error in the log is the "
             "cause",
    "internal": "an internal consistency check of NCCL failed: an NCCL bug or corrupted state; report it upstream "
                "with the full log and the NCCL version",
}


def check(ls: LogSet, *, models: dict[str, HostModel] | None = None,
          options: dict[str, dict[str, Any]] | None = None, fabric_file: str | None = None) -> list[Finding]:
    """Every LOG finding for ``ls`` (``models``: host -> what the model predicts for it; ``fabric_file``: the
    fabric NCCL's rails are held against, LOG037)."""
    fabric = None
    if fabric_file is not None:
        from ncclctl.logs.rails import fabric_rails

        fabric = fabric_rails(fabric_file)
    return Checker(ls, models=models, options=options, fabric=fabric, fabric_label=fabric_file or "").run()


def predict_models(ls: LogSet, *, root: str | None = None, inventory: str | None = None) -> tuple[
        dict[str, HostModel], list[str]]:
    """The model of every host of the log: one node (``--root``) for all, or each host's node from the inventory.
    Returns (host -> model, notes)."""
    from ncclctl.inventory import load_snapshot
    from ncclctl.nccl.predict import inputs_for_node, predict_xml
    from ncclctl.nccl.version import DEFAULT

    notes: list[str] = []
    nodes: dict[str, Any] = {}
    sources: dict[str, str] = {}
    hosts = ls.hosts
    if root is not None:
        node = load_snapshot(root)
        for h in hosts:
            nodes[h] = node
            sources[h] = root
    elif inventory is not None:
        from ncclctl.inventory import load_inventory

        inv = load_inventory(inventory)
        cache: dict[str, Any] = {}
        for h in hosts:
            ih = inv.host(h)
            if ih is None:
                notes.append(f"{h or '?'} is not in the inventory: no model for it")
                continue
            if ih.source not in cache:
                cache[ih.source] = ih.load_node()
            nodes[h] = cache[ih.source]
            sources[h] = ih.source
    nnodes = max((m.nnodes or 0 for m in ls.members()), default=0) or max(len(hosts), 1)
    env: dict[str, str] = {}
    for p in ls.procs.values():
        for k, (v, _e) in p.settings.items():
            if k.startswith("NCCL_") and k not in ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE",
                                                    "NCCL_TOPO_FILE", "NCCL_GRAPH_FILE"):
                env.setdefault(k, v)
    out: dict[str, HostModel] = {}
    done: dict[int, HostModel] = {}
    for h, node in nodes.items():
        if id(node) in done:
            out[h] = done[id(node)]
            continue
        try:
            data, inputs, down = inputs_for_node(node, nodes=nnodes, env=env, version=DEFAULT, gdr="auto",
                                                 source=sources[h])
            pred = predict_xml(data, inputs=inputs, down=down, path=sources[h])
        except NcclctlError as exc:
            notes.append(f"{h}: no NCCL topology from {sources[h]} ({exc.message}): only its facts are used")
            out[h] = done[id(node)] = HostModel(sources[h], {}, node=node, predicted=False)
            continue
        out[h] = done[id(node)] = HostModel.of(sources[h], pred.to_json())
        out[h].node = node
    return out, notes


__all__ = ["Checker", "HostModel", "VIRTUAL_IFACES", "busid_text", "check", "predict_models"]
