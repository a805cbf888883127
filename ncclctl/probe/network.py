"""The probe's network: netdevs (sysfs, ``ip -d link``, procfs address families), RDMA devices and ports
(/sys/class/infiniband, ``ibv_devinfo``, or ``ibstat`` without sysfs), and the RoCE ports' QoS, ECN, DCBX and
LLDP facts.
"""

from __future__ import annotations

from typing import Any

from ncclctl.model import Dcbx, Ecn, Gid, IbPort, LldpNeighbor, NetDev, Nic, PciDevice, Qos, Unavailable
from ncclctl import sysfs as V
from ncclctl.probe.reader import Reader, replace_fields


class NetworkReader(Reader):
    """Netdevs, RDMA devices and the RoCE ports' state of the host."""

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
                nd = replace_fields(nd, qos=self._qos(nd.name), ecn=self._ecn(nd.name),
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


def _nearest_bdf(device_path: str | None) -> str | None:
    """The PCI function a device belongs to: the last bus-id component of its sysfs path (virtio sits below it)."""
    if not device_path or not device_path.startswith("/sys/devices/pci"):
        return None
    for comp in reversed(device_path.split("/")):
        if V.is_sysfs_bdf(comp):
            return comp
    return None


def _bool01(s: str) -> bool:
    if s not in ("0", "1"):
        raise ValueError("expected 0 or 1")
    return s == "1"
