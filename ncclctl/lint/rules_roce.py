"""RoCE rules: PFC, trust, ECN/DCQCN on NCCL's priority, the GID NCCL picks, RoCE MTU (host-facts.md 3, 7.5-7.8).

The chain every QoS rule follows (host-facts.md 3.1-3.2, NCCL src/transport/net_ib/connect.cc):

* NCCL puts ``NCCL_IB_TC`` (default 0; NCCL's integer parsing, effective value env > user conf > /etc/nccl.conf)
  into the GRH traffic class of every QP; RoCE v2 hardware copies it into the IP ToS byte, so DSCP = TC >> 2.
* The port's trust mode decides the priority the packets are queued, paused and ECN-handled on: ``dscp`` looks
  the DSCP up in the dscp2prio map (mlnx_qos; mlx5 default DSCP >> 3); ``pcp`` uses the VLAN PCP, which NCCL
  only sets through ``NCCL_IB_SL`` on VLAN-tagged traffic, so untagged traffic lands on priority 0.
* That priority needs PFC (lossless profile) and ECN notification + reaction points (DCQCN).

Ports judged: RDMA ports with link layer Ethernet that NCCL would use (``NCCL_IB_HCA`` as NCCL applies it; every
port when unset; none when ``NCCL_IB_DISABLE`` is set). A traffic class set through a communicator config
(``ncclConfig_t.trafficClass``, used only when ``NCCL_IB_TC`` is unset) is invisible to a host lint.
"""

from __future__ import annotations

import ipaddress
from typing import Iterable

from ncclctl.findings import Severity
from ncclctl.lint.context import Ctx
from ncclctl.registry import Hit, Option, rule
from ncclctl.model import Gid, IbPort, NetDev, Nic
from ncclctl.nccl.params import c_int
from ncclctl.nccl.values import ib_tc_for_dscp
from ncclctl.record import record

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

_PROFILE = Option("profile", str, "lossless",
                  "the fabric's RoCE profile: 'lossless' (PFC + ECN on NCCL's priority) or 'lossy' (ECN/DCQCN only, "
                  "no PFC: resilient RoCE)", choices=("lossless", "lossy"))




def _cache(ctx: Ctx) -> dict:
    """This family's per-run memo (one lint run = one node)."""
    return ctx.extra.setdefault("rules_roce", {})


# --------------------------------------------------------------------------------------------------
# What NCCL marks


@record
class Marking:
    """NCCL's RoCE marking on this host: traffic class byte, its DSCP, the SL (VLAN PCP when tagged)."""

    tc: int
    tc_text: str  # how it was set, for messages: "NCCL_IB_TC=106 (/etc/nccl.conf:3)" or "NCCL_IB_TC unset: TC 0"
    sl: int
    sl_set: bool
    fifo_tc: int | None

    @property
    def dscp(self) -> int:
        return self.tc >> 2


def marking(ctx: Ctx) -> Marking:
    c = _cache(ctx)
    if "marking" in c:
        return c["marking"]
    raw = ctx.nccl.value("NCCL_IB_TC")
    v = ctx.nccl.int("NCCL_IB_TC", -1)
    # -1 (unset, empty, out of range) means NCCL_IB_TC_DEFAULT 0; the value lands in the 8-bit GRH traffic_class.
    tc = 0 if v == -1 else v & 0xFF
    if raw is None:
        text = "NCCL_IB_TC unset: TC 0"
    elif v == -1:
        text = f"{ctx.nccl.text('NCCL_IB_TC')}, read as the default TC 0"
    else:
        text = ctx.nccl.text("NCCL_IB_TC") + ("" if str(tc) == raw else f", read as TC {tc}")
    sl = ctx.nccl.int("NCCL_IB_SL", -1)
    fifo = ctx.nccl.int("NCCL_IB_FIFO_TC", -1)
    c["marking"] = Marking(tc=tc, tc_text=text, sl=0 if sl == -1 else sl & 0xF, sl_set=sl != -1,
                           fifo_tc=None if fifo == -1 else fifo & 0xFF)
    return c["marking"]


@record
class RocePort:
    nic: Nic
    port: IbPort
    netdev: NetDev | None


def roce_ports(ctx: Ctx, *, active_only: bool = False, physical: bool = False) -> list[RocePort]:
    """Ethernet RDMA ports NCCL would use, with their netdev (None when the probe could not tie one).

    ``physical``: a RoCE LAG port (``mlx5_bond_0`` on ``bond0``) becomes one entry per slave of the bond, since
    PFC, trust, the DSCP map and ECN are per physical port (the bond has no DCB state); used by the QoS rules.
    """
    selected = ctx.nccl_ports
    out: list[RocePort] = []
    for nic, port in ctx.ports:
        if port.link_layer != "Ethernet" or (nic.name, port.num) not in selected:
            continue
        if active_only and not port.is_active:
            continue
        nd = ctx.node.netdev(port.netdev) if port.netdev else None
        slaves = [d for d in ctx.node.netdevs if d.master == nd.name] if physical and nd is not None else []
        if nd is not None and nd.kind == "bond" and slaves:
            out.extend(RocePort(nic, port, d) for d in sorted(slaves, key=lambda d: d.name))
        else:
            out.append(RocePort(nic, port, nd))
    return out


def _who(rp: RocePort, nd: NetDev, *, port: bool = True) -> str:
    """``ens1np0 (mlx5_0 port 1)``, or for a RoCE LAG slave ``enp29s0f0np0 (bond0 slave, mlx5_bond_0 port 1)``."""
    lag = f"{nd.master} slave, " if nd.master and rp.port.netdev == nd.master else ""
    return f"{nd.name} ({lag}{rp.nic.name}{f' port {rp.port.num}' if port else ''})"


def _dscp_map(nd: NetDev) -> tuple[dict[int, int], str]:
    qos = nd.qos
    if qos is not None and qos.dscp2prio:
        return dict(qos.dscp2prio), f"{qos.source} dscp2prio"
    return {d: d >> 3 for d in range(64)}, "default map DSCP>>3"


@record
class Landing:
    prio: int
    how: str
    #: The priority under the other reading when the trust mode is unknown and the two readings disagree.
    alt: int | None = None


def landing(ctx: Ctx, rp: RocePort, m: Marking) -> Landing | None:
    """The priority NCCL's packets are classified into on this port, and why."""
    nd = rp.netdev
    if nd is None:
        return None
    trust = nd.qos.trust if nd.qos is not None else None
    dmap, dsrc = _dscp_map(nd)
    by_dscp = dmap.get(m.dscp, m.dscp >> 3)
    tagged = _tagged(ctx, rp)
    by_pcp = (m.sl & 7) if tagged else 0
    pcp_how = (f"trust pcp, VLAN-tagged: PCP = NCCL_IB_SL {m.sl & 7}" if tagged
               else "trust pcp: untagged traffic has no PCP")
    if trust == "dscp":
        return Landing(by_dscp, f"trust dscp, {dsrc}: DSCP {m.dscp} -> {by_dscp}")
    if trust == "pcp":
        return Landing(by_pcp, pcp_how)
    if by_pcp == by_dscp:
        return Landing(by_dscp, f"under either trust mode; {nd.qos.source if nd.qos else 'the probe'} shows none")
    return Landing(by_dscp, f"trust mode unknown, read as dscp, {dsrc}: DSCP {m.dscp} -> {by_dscp}", alt=by_pcp)


def _tagged(ctx: Ctx, rp: RocePort) -> bool:
    """True when the GID NCCL uses belongs to a VLAN netdev (so the SL becomes the VLAN PCP)."""
    sel = select_gid(ctx, rp.nic, rp.port)
    gid = sel.gid
    if gid is None or not gid.netdev:
        return False
    nd = ctx.node.netdev(gid.netdev)
    return nd is not None and nd.kind == "vlan"


def intended_priority(nd: NetDev, m: Marking) -> int | None:
    """Where NCCL's DSCP would land if the port trusted DSCP; set only when trust pcp ignores a non-zero DSCP."""
    if nd.qos is not None and nd.qos.trust == "pcp" and m.dscp != 0:
        prio = _dscp_map(nd)[0].get(m.dscp, m.dscp >> 3)
        return prio if 0 <= prio < 8 else None
    return None


def _trust_fix(nd: NetDev, dscp: int | None = None) -> str:
    """The command that puts ``nd`` in DSCP trust: mlnx_qos; the MLNX_OFED sysfs file; on the inbox mlx5 driver
    (QoS from dcb, no trust file) a DSCP APP entry, whose first addition switches the port to trust dscp."""
    if nd.qos is not None and nd.qos.source == "mlnx_qos":
        return f"mlnx_qos -i {nd.name} --trust dscp"
    if nd.qos is not None and nd.qos.source == "dcb":
        d = 26 if dscp is None else dscp
        return f"dcb app add dev {nd.name} dscp-prio {d}:{_dscp_map(nd)[0].get(d, d >> 3)}"
    return f"echo dscp > /sys/class/net/{nd.name}/qos/trust"


def _eight(values, fill):
    """Per-priority flags as exactly 8 entries (a hand-written model JSON may carry more or fewer)."""
    return tuple(values[:8]) + (fill,) * (8 - len(values[:8]))


def _pfc_list(pfc: tuple[bool, ...]) -> str:
    return ",".join("1" if v else "0" for v in pfc)


def _pfc_fix(nd: NetDev, prio: int) -> str:
    want = tuple(i == prio for i in range(8))
    if nd.qos is not None and nd.qos.source == "dcb":
        flags = " ".join(f"{i}:{'on' if v else 'off'}" for i, v in enumerate(want))
        return f"dcb pfc set dev {nd.name} prio-pfc {flags}"
    return f"mlnx_qos -i {nd.name} --pfc {_pfc_list(want)}"


def _tc_for(nd: NetDev, prio: int) -> tuple[int, int]:
    """A DSCP that maps to ``prio`` on this port (26 when it does, the conventional RoCE class) and its TC."""
    dmap, _ = _dscp_map(nd)
    dscp = 26 if dmap.get(26) == prio else min((d for d, p in dmap.items() if p == prio), default=prio * 8)
    return dscp, ib_tc_for_dscp(dscp)


# --------------------------------------------------------------------------------------------------
# ROCE001 PFC off on NCCL's priority


@rule(
    "ROCE001", "roce-pfc-off-on-nccl-priority", E, "PFC not enabled on the priority NCCL's RoCE traffic uses",
    what="A RoCE port NCCL uses whose PFC is off on the priority NCCL's traffic lands on: NCCL_IB_TC -> DSCP "
         "(TC >> 2) -> priority under the port's trust mode (dscp: the dscp2prio map; pcp: the VLAN PCP, 0 when "
         "untagged). Typical: NCCL_IB_TC unset (TC 0, priority 0) while PFC is on priority 3, or PFC lost after "
         "a reboot.",
    why="On a lossless RoCE fabric the RDMA priority must be paused, not dropped: RoCE's go-back-N recovery turns "
        "every drop into a retransmitted window, and NCCL's all-reduce bandwidth collapses to a fraction (a "
        "maintainer on NVIDIA/nccl#378: 'typical of a RoCE fabric not having proper flow control'), or jobs fail "
        "with 'NET/IB : Got completion ... error 12' (transport retry exceeded).",
    detect="NCCL_IB_TC and NCCL_IB_SL (env > NCCL_CONF_FILE/~/.nccl.conf > /etc/nccl.conf); trust and dscp2prio "
           "from mlnx_qos -i <if> (or /sys/class/net/<if>/qos/trust), PFC from mlnx_qos 'enabled' or "
           "dcb -j pfc show dev <if>. With the trust mode unknown the dscp reading is used (ROCE003 reports the "
           "doubt). Option profile 'lossy' (ECN-only fabrics) turns this rule off.",
    fix="Either enable PFC on that priority (mlnx_qos -i <if> --pfc 0,0,0,1,0,0,0,0 / dcb pfc set dev <if> "
        "prio-pfc 3:on) or make NCCL mark for the lossless priority (NCCL_IB_TC=106, DSCP 26 -> priority 3), "
        "matching the switch; persist the QoS settings (systemd unit or NetworkManager dispatcher).",
    options=(_PROFILE,),
)
def pfc_off(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    if opts["profile"] == "lossy":
        return
    m = marking(ctx)
    seen: set[str] = set()
    for rp in roce_ports(ctx, physical=True):
        nd = rp.netdev
        if nd is None or nd.name in seen or nd.qos is None or nd.qos.pfc_enabled is None:
            continue
        seen.add(nd.name)
        land = landing(ctx, rp, m)
        pfc = _eight(nd.qos.pfc_enabled, False)
        if land is None or not 0 <= land.prio < 8 or pfc[land.prio]:
            continue
        on = [i for i, v in enumerate(pfc) if v]
        where = (f"PFC is enabled on priority {', '.join(map(str, on))} instead" if on
                 else "PFC is off on every priority")
        msg = (f"{_who(rp, nd)}: NCCL's RoCE traffic ({m.tc_text}, DSCP {m.dscp}) "
               f"lands on priority {land.prio} ({land.how}), which has no PFC; {where}")
        fixes = [f"enable PFC on priority {land.prio}: {_pfc_fix(nd, land.prio)}"]
        want = intended_priority(nd, m)
        if want is not None:
            fixes = [f"switch {nd.name} to DSCP trust ({_trust_fix(nd, m.dscp)}, see ROCE003) so DSCP {m.dscp} lands on "
                     f"priority {want}" + ("" if pfc[want] else f", and enable PFC there: {_pfc_fix(nd, want)}")]
        elif len(on) == 1 and (nd.qos.trust == "dscp" or nd.qos.trust is None):
            if _dscp_map(nd)[0].get(m.dscp, m.dscp >> 3) != m.dscp >> 3:
                # This port's map moved NCCL's DSCP away from the default: put it back on the lossless priority.
                fixes.insert(0, f"map DSCP {m.dscp} back to the lossless priority {on[0]}: mlnx_qos -i {nd.name} "
                                f"--dscp2prio set,{m.dscp},{on[0]}")
            else:
                dscp, tc = _tc_for(nd, on[0])
                fixes.insert(0, f"mark NCCL traffic for the lossless priority {on[0]}: NCCL_IB_TC={tc} (DSCP {dscp}) "
                                f"in /etc/nccl.conf")
        yield Hit(nd.name, msg, fix="; or ".join(fixes) + " (the switch must agree); persist it across reboots",
                  evidence=(m.tc_text, f"trust={nd.qos.trust or 'unknown'}", f"priority={land.prio}",
                            f"pfc_enabled={_pfc_list(pfc)} ({nd.qos.source})"))


# --------------------------------------------------------------------------------------------------
# ROCE002 PFC on priorities without RDMA


@rule(
    "ROCE002", "roce-pfc-on-other-priorities", W, "PFC enabled on priorities that carry no NCCL RDMA traffic",
    what="A RoCE port with PFC enabled on NCCL's priority and also on other priorities that no NCCL traffic uses "
         "(neither NCCL_IB_TC's nor NCCL_IB_FIFO_TC's priority), unless listed in allow_priorities.",
    why="PFC on a priority that carries TCP or CNPs spreads pause frames to traffic that has its own loss "
        "recovery: head-of-line blocking, congestion spreading across the fabric and, with a misbehaving host, "
        "pause storms that stall the RDMA priority too; a paused CNP priority delays DCQCN's reaction exactly "
        "when it is needed. Every extra lossless priority also takes switch headroom buffer.",
    detect="PFC enable bits (mlnx_qos 'enabled' row or dcb -j pfc show dev <if>) against the priority NCCL's "
           "traffic class and FIFO traffic class map to under the port's trust mode (see ROCE001). Reported only "
           "when NCCL's own priority has PFC (otherwise ROCE001 reports the mismatch).",
    fix="Keep PFC on the RDMA priority only: mlnx_qos -i <if> --pfc 0,0,0,1,0,0,0,0 (or dcb pfc set dev <if> "
        "prio-pfc with only that priority on), matching the switch's lossless queue.",
    options=(Option("allow_priorities", list, [], "priorities (\"0\"..\"7\") where extra PFC is intended, e.g. a "
                    "lossless storage class", choices=tuple(str(i) for i in range(8))),),
)
def pfc_extra(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    m = marking(ctx)
    allowed = {int(x) for x in opts["allow_priorities"]}
    seen: set[str] = set()
    for rp in roce_ports(ctx, physical=True):
        nd = rp.netdev
        if nd is None or nd.name in seen or nd.qos is None or nd.qos.pfc_enabled is None:
            continue
        seen.add(nd.name)
        land = landing(ctx, rp, m)
        pfc = _eight(nd.qos.pfc_enabled, False)
        if land is None or not 0 <= land.prio < 8 or not pfc[land.prio]:
            continue
        rdma = {land.prio}
        if m.fifo_tc is not None:
            fifo = landing(ctx, rp, Marking(m.fifo_tc, "", m.sl, m.sl_set, None))
            if fifo is not None:
                rdma.add(fifo.prio)
        extra = [i for i, v in enumerate(pfc) if v and i not in rdma and i not in allowed]
        if not extra:
            continue
        yield Hit(nd.name, f"{nd.name}: PFC is enabled on priority {', '.join(map(str, extra))} besides NCCL's "
                           f"priority {land.prio}; no NCCL RDMA traffic uses "
                           f"{'it' if len(extra) == 1 else 'them'}",
                  evidence=(f"pfc_enabled={_pfc_list(pfc)} ({nd.qos.source})", m.tc_text,
                            f"nccl_priority={land.prio}"),
                  fix=f"keep PFC on priority {land.prio} only: {_pfc_fix(nd, land.prio)} (or list intended lossless "
                      f"classes in ROCE002's allow_priorities)")


# --------------------------------------------------------------------------------------------------
# ROCE003 trust pcp with DSCP marking


@rule(
    "ROCE003", "roce-trust-pcp-with-dscp-marking", E, "Port trusts PCP while NCCL marks DSCP",
    what="A RoCE port in trust pcp mode while NCCL marks its traffic with a non-zero DSCP (NCCL_IB_TC >> 2): the "
         "NIC ignores the DSCP and classifies by VLAN PCP, so untagged NCCL traffic lands on priority 0. Not "
         "reported when the RoCE GID sits on a VLAN netdev and NCCL_IB_SL sets the PCP (a PCP design). With the "
         "trust mode unknown (inbox driver: no mlnx_qos, no qos/trust) and the two readings giving different "
         "priorities, an info asks to check it.",
    why="NCCL only sets the IP traffic class (and the SL, which becomes the PCP only on tagged traffic), so under "
        "trust pcp its DSCP marking is dead: the traffic sits on priority 0 with no PFC and no ECN, the receive "
        "side sends no CNPs, and bandwidth collapses under congestion (NVIDIA/nccl#2383 shows the same drop for "
        "traffic left on TC 0). mlx5 falls back to pcp when the last DSCP mapping is removed or after a reboot "
        "without the QoS unit.",
    detect="Trust state from mlnx_qos -i <if> ('Priority trust state: pcp') or /sys/class/net/<if>/qos/trust; "
           "NCCL_IB_TC / NCCL_IB_SL effective values; the netdev of the GID NCCL selects (VLAN or not).",
    fix="mlnx_qos -i <if> --trust dscp (MLNX_OFED/DOCA), or on the inbox driver add a DSCP mapping, which switches "
        "mlx5 to DSCP trust: dcb app add dev <if> dscp-prio 26:3; persist it.",
)
def trust_pcp(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    m = marking(ctx)
    if m.dscp == 0:
        return
    seen: set[str] = set()
    for rp in roce_ports(ctx, physical=True):
        nd = rp.netdev
        if nd is None or nd.name in seen:
            continue
        seen.add(nd.name)
        trust = nd.qos.trust if nd.qos is not None else None
        land = landing(ctx, rp, m)
        if land is None:
            continue
        if trust == "pcp":
            if _tagged(ctx, rp) and m.sl_set:
                continue
            dscp_prio = _dscp_map(nd)[0].get(m.dscp, m.dscp >> 3)
            fix = _trust_fix(nd, m.dscp)
            yield Hit(nd.name, f"{_who(rp, nd, port=False)} trusts pcp: NCCL marks DSCP {m.dscp} ({m.tc_text}) but "
                               f"the NIC classifies by VLAN PCP, so the traffic lands on priority {land.prio} "
                               f"({'tagged, NCCL_IB_SL unset' if _tagged(ctx, rp) else 'untagged'}) instead of "
                               f"priority {dscp_prio}",
                      evidence=(f"trust=pcp ({nd.qos.source if nd.qos else '?'})", m.tc_text,
                                f"landing_priority={land.prio}"),
                      fix=f"{fix} (then DSCP {m.dscp} maps to priority {dscp_prio}); persist it across reboots")
        elif trust is None and land.alt is not None and nd.qos is not None:
            yield Hit(nd.name, f"{_who(rp, nd, port=False)}: the trust mode is unknown ({nd.qos.source} shows no "
                               f"trust state); under dscp NCCL's DSCP {m.dscp} lands on priority {land.prio}, under "
                               f"pcp (the inbox mlx5 default) on priority {land.alt}",
                      severity=I, evidence=(f"qos source={nd.qos.source}", m.tc_text),
                      fix=f"check with dcb apptrust show dev {nd.name} or dcb -N app show dev {nd.name}; make DSCP "
                          f"trusted with dcb app add dev {nd.name} dscp-prio {m.dscp}:{land.prio}")


# --------------------------------------------------------------------------------------------------
# ROCE004 ECN / DCQCN off on NCCL's priority


@rule(
    "ROCE004", "roce-ecn-off-on-nccl-priority", W, "ECN/DCQCN disabled on the priority NCCL's RoCE traffic uses",
    what="A RoCE port whose DCQCN notification point (roce_np: send CNPs for CE-marked packets) or reaction point "
         "(roce_rp: slow down on CNPs) is disabled for the priority NCCL's traffic lands on. Warning on lossless "
         "fabrics, error under profile 'lossy', where ECN is the only congestion control.",
    why="Without DCQCN the senders never slow down: a lossless fabric relies on PFC alone and spreads pauses "
        "(congestion trees, victim flows), a lossy one drops and retransmits; both cut NCCL's bandwidth under "
        "incast, which every all-to-all and ring step across a switch produces.",
    detect="MLNX_OFED/DOCA sysfs /sys/class/net/<if>/ecn/roce_np/enable/<prio> and roce_rp/enable/<prio> ('1' on, "
           "'0' off) for the priority derived as in ROCE001. Hosts without these files (inbox mlx5: DCQCN "
           "parameters only in debugfs, per-priority enable in firmware ROCE_CC_PRIO_MASK) are not judged.",
    fix="echo 1 > /sys/class/net/<if>/ecn/roce_np/enable/<prio>; echo 1 > /sys/class/net/<if>/ecn/roce_rp/enable/"
        "<prio> (persist with a systemd unit), or mlxconfig -d <dev> set ROCE_CC_PRIO_MASK_P1=<mask> and reset.",
    options=(_PROFILE,),
)
def ecn_off(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    m = marking(ctx)
    sev = E if opts["profile"] == "lossy" else W
    seen: set[str] = set()
    for rp in roce_ports(ctx, physical=True):
        nd = rp.netdev
        if nd is None or nd.name in seen or nd.ecn is None:
            continue
        seen.add(nd.name)
        land = landing(ctx, rp, m)
        if land is None or not 0 <= land.prio < 8:
            continue
        p = land.prio
        np_on, rp_on = _eight(nd.ecn.np_enabled, None), _eight(nd.ecn.rp_enabled, None)
        off = [name for name, flags in (("notification point (roce_np)", np_on), ("reaction point (roce_rp)", rp_on))
               if flags[p] is False]
        if not off:
            continue
        on = sorted({i for flags in (np_on, rp_on) for i, v in enumerate(flags) if v})
        also = f"; ECN is enabled on priority {', '.join(map(str, on))}" if on else ""
        want = intended_priority(nd, m)
        q = p if want is None else want
        cmds = "; ".join(f"echo 1 > /sys/class/net/{nd.name}/ecn/{d}/enable/{q}"
                         for d, flags in (("roce_np", np_on), ("roce_rp", rp_on)) if flags[q] is False)
        if want is not None:
            cmds = (f"switch {nd.name} to DSCP trust ({_trust_fix(nd, m.dscp)}, see ROCE003) so DSCP {m.dscp} lands on "
                    f"priority {want}" + (f"; {cmds}" if cmds else ", where ECN is already enabled"))
        yield Hit(nd.name, f"{_who(rp, nd, port=False)}: DCQCN {' and '.join(off)} disabled on priority {p}, where "
                           f"NCCL's RoCE traffic lands ({land.how}){also}",
                  severity=sev,
                  evidence=(f"ecn/roce_np/enable/{p}={'?' if np_on[p] is None else int(np_on[p])}",
                            f"ecn/roce_rp/enable/{p}={'?' if rp_on[p] is None else int(rp_on[p])}", m.tc_text),
                  fix=f"{cmds} (persist with a systemd unit)")


# --------------------------------------------------------------------------------------------------
# GID selection, as NCCL's ncclIbGetGidIndex does it (src/transport/net_ib/connect.cc)


def gid_bytes(gid: str) -> bytes:
    """The 16 GID bytes of the sysfs form; anything else (a hand-written model) counts as an empty slot."""
    try:
        raw = bytes.fromhex(gid.replace(":", ""))
    except ValueError:
        return bytes(16)
    return raw if len(raw) == 16 else bytes(16)


def _words(raw: bytes) -> tuple[int, int, int, int]:
    a, b, c, d = (int.from_bytes(raw[i:i + 4], "big") for i in range(0, 16, 4))
    return a, b, c, d


def gid_family(raw: bytes) -> str:
    """``getGidAddrFamily``: IPv4-mapped (``::ffff:a.b.c.d``) or its multicast form is AF_INET, all else AF_INET6."""
    w = _words(raw)
    mapped = (w[0] | w[1]) == 0 and w[2] == 0x0000FFFF
    mapped_mc = w[0] == 0xFF0E0000 and w[1] == 0 and w[2] == 0x0000FFFF
    return "AF_INET" if mapped or mapped_mc else "AF_INET6"


def gid_configured(raw: bytes) -> bool:
    w = _words(raw)
    trailer = w[1] | w[2] | w[3]
    return not ((w[0] | trailer) == 0 or (w[0] == 0xFE800000 and trailer == 0))


def gid_link_local(raw: bytes) -> bool:
    w = _words(raw)
    return w[0] == 0xFE800000 and w[1] == 0


def gid_valid(raw: bytes) -> bool:
    return gid_configured(raw) and not gid_link_local(raw)


def roce_version(gtype: str | None) -> int | None:
    """``ncclIbRoceGetVersionNum``: prefix match on gid_attrs/types/<i>; None when unreadable/unknown."""
    if not gtype:
        return None
    if gtype.startswith("IB/RoCE v1") or gtype.startswith("RoCE v1"):
        return 1
    if gtype.startswith("RoCE v2"):
        return 2
    return None


def _addr_range(text: str | None, family: str) -> tuple[bytes | None, int]:
    """``envIbAddrRange``: ``a.b.c.d/len``; an invalid address or mask means no range (prefix length 0)."""
    if not text or "/" not in text:
        return None, 0
    addr, _, mask_text = text.partition("/")
    try:
        if "%" in addr:
            raise ValueError(addr)
        ip = ipaddress.IPv4Address(addr) if family == "AF_INET" else ipaddress.IPv6Address(addr)
    except ValueError:
        return None, 0
    mask = c_int(mask_text, 10)  # *mask = (int)strtol(maskStrPtr, NULL, 10): no digits -> 0
    if (family == "AF_INET" and mask > 32) or (family == "AF_INET6" and mask > 128):
        return None, 0
    return ip.packed, mask


def _netmask(bits: int) -> int:
    return 0xFFFFFFFF ^ ((1 << (32 - bits)) - 1)


def gid_in_range(family: str, prefix: bytes | None, prefixlen: int, raw: bytes) -> bool:
    """``matchGidAddrPrefix``, word for word (IPv4: the GID's last 32 bits)."""
    a = _words(raw)
    i = 0
    while prefixlen > 0 and i < 4:
        if family == "AF_INET":
            base = int.from_bytes(prefix or bytes(4), "big")
            mask = _netmask(prefixlen)
            if (base & mask) != (a[3] & mask):
                break
            prefixlen = 0
            break
        b = _words(prefix or bytes(16))
        if prefixlen >= 32:
            if b[i] != a[i]:
                break
            prefixlen -= 32
            i += 1
        else:
            mask = _netmask(prefixlen)
            if (b[i] & mask) != (a[i] & mask):
                break
            prefixlen = 0
    return prefixlen == 0


@record
class GidChoice:
    index: int
    gid: Gid | None  # None: the slot is empty (all-zero GID)
    forced: bool
    family: str  # NCCL_IB_ADDR_FAMILY as NCCL reads it
    version: int  # NCCL_IB_ROCE_VERSION_NUM
    range_text: str | None

    @property
    def how(self) -> str:
        if self.forced:
            return f"NCCL_IB_GID_INDEX={self.index}"
        rng = f", NCCL_IB_ADDR_RANGE={self.range_text}" if self.range_text else ""
        return f"NCCL's auto-selection ({self.family}, RoCE v{self.version}{rng})"


def select_gid(ctx: Ctx, nic: Nic, port: IbPort) -> GidChoice:
    """The GID index NCCL uses on a RoCE port: NCCL_IB_GID_INDEX when >= 0, else ``ncclIbGetGidIndex``'s scan."""
    c = _cache(ctx)
    key = ("gid", nic.name, port.num)
    if key not in c:
        c[key] = _select_gid(ctx, port)
    return c[key]


def _select_gid(ctx: Ctx, port: IbPort) -> GidChoice:
    fam_text = ctx.nccl.value("NCCL_IB_ADDR_FAMILY")
    family = "AF_INET6" if fam_text == "AF_INET6" else "AF_INET"  # strcmp; anything else keeps AF_INET
    version = ctx.nccl.int("NCCL_IB_ROCE_VERSION_NUM", 2)
    range_text = ctx.nccl.value("NCCL_IB_ADDR_RANGE") or None
    table = {g.index: g for g in port.gids}
    forced = ctx.nccl.int("NCCL_IB_GID_INDEX", -1)
    if forced >= 0:
        return GidChoice(forced, table.get(forced), True, family, version, range_text)
    prefix, prefixlen = _addr_range(range_text, family)
    zero = bytes(16)

    def raw(i: int) -> bytes:
        g = table.get(i)
        return gid_bytes(g.gid) if g is not None else zero

    def ver(i: int) -> int | None:
        g = table.get(i)
        return roce_version(g.type) if g is not None else None

    # The real table has gid_tbl_len (~255) slots, empty ones all-zero; one empty slot past the last populated
    # one stands for all of them (an empty slot can only be chosen by the family switch, never twice in a row).
    last = max(table, default=0) + 1
    idx = 0
    for cand in range(1, last + 1):
        g, c = raw(idx), raw(cand)
        gfam, cfam = gid_family(g), gid_family(c)
        in_range = gid_in_range(family, prefix, prefixlen, c)
        if cfam != gfam and cfam == family and in_range:
            idx = cand
            continue
        if cfam != family or not gid_valid(c) or not in_range:
            continue
        if (ver(idx) != ver(cand) or not gid_valid(g)) and ver(cand) == version:
            idx = cand
    return GidChoice(idx, table.get(idx), False, family, version, range_text)


def _gid_text(g: Gid) -> str:
    ip = g.ipv4
    shown = f"::ffff:{ip}" if ip else str(ipaddress.IPv6Address(gid_bytes(g.gid)))
    return f"GID[{g.index}] {shown} ({g.type or 'type unknown'})"


def _gid_problems(choice: GidChoice) -> list[str]:
    g = choice.gid
    if g is None or not gid_configured(gid_bytes(g.gid)) and not gid_link_local(gid_bytes(g.gid)):
        return ["the slot is empty"]
    out = []
    v = roce_version(g.type)
    if v != 2:
        out.append("not RoCE v2 (RoCE v1 is not IP-routable and carries no DSCP)" if v == 1
                   else f"its type is {g.type or 'unreadable'}, not RoCE v2")
    if gid_link_local(gid_bytes(g.gid)):
        out.append("link-local (fe80::/64: reachable only inside one L2 segment, never across the routed rail "
                   "fabric)")
    return out


@rule(
    "ROCE005", "roce-gid-not-v2", E, "The GID NCCL uses is not a routable RoCE v2 GID",
    what="The GID NCCL will use on a RoCE port (NCCL_IB_GID_INDEX when set, else NCCL's own auto-selection) is "
         "empty, RoCE v1, or link-local (fe80::). With auto-selection this means no GID of the wanted family "
         "exists: typically the rail netdev has no IPv4 address, so NCCL falls back to the link-local GID 0.",
    why="NCCL uses the index blindly when NCCL_IB_GID_INDEX is set; a RoCE v1 or link-local GID cannot be routed "
        "between the rail subnets, so connections time out ('NET/IB : Got completion ... error 12', "
        "NVIDIA/nccl#769, #1510), and RoCE v1 has no IP header for the DSCP the QoS setup relies on.",
    detect="The port's GID table (/sys/class/infiniband/<dev>/ports/<n>/gids/<i> and gid_attrs/types/<i>, as "
           "show_gids prints it) and NCCL_IB_GID_INDEX, NCCL_IB_ADDR_FAMILY (default AF_INET), NCCL_IB_ADDR_RANGE, "
           "NCCL_IB_ROCE_VERSION_NUM (default 2); the auto-selection replays NCCL's ncclIbGetGidIndex scan.",
    fix="Unset NCCL_IB_GID_INDEX and let NCCL choose (NCCL >= 2.21), or set it to the RoCE v2 IPv4 index show_gids "
        "lists; make sure the rail netdev has its IPv4 address (ip addr add <ip>/<len> dev <if>).",
)
def gid_not_v2(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    for rp in roce_ports(ctx, active_only=True):
        choice = select_gid(ctx, rp.nic, rp.port)
        problems = _gid_problems(choice)
        if not problems:
            continue
        nd = rp.port.netdev or "its netdev"
        where = f"{rp.nic.name} port {rp.port.num}"
        shown = _gid_text(choice.gid) if choice.gid is not None else f"GID[{choice.index}]"
        v2v4 = [g for g in rp.port.gids if roce_version(g.type) == 2 and g.is_ipv4_mapped]
        if choice.forced:
            msg = f"{where}: NCCL_IB_GID_INDEX={choice.index} selects {shown}: {'; '.join(problems)}"
            fix = ("unset NCCL_IB_GID_INDEX (NCCL then picks the RoCE v2 IPv4 GID itself)" +
                   (f", or set NCCL_IB_GID_INDEX={v2v4[0].index} ({_gid_text(v2v4[0])})" if v2v4 else
                    f"; and give {nd} its IPv4 address"))
        else:
            want = f"{'IPv4' if choice.family == 'AF_INET' else 'IPv6'} RoCE v{choice.version}"
            msg = (f"{where}: {choice.how} finds no usable {want} GID and falls back to {shown}: "
                   f"{'; '.join(problems)}")
            fix = (f"give {nd} its rail address (ip addr add <ip>/<len> dev {nd}, persisted in netplan/"
                   f"NetworkManager) so the kernel adds a RoCE v2 GID for it; check NCCL_IB_ADDR_FAMILY/"
                   f"NCCL_IB_ADDR_RANGE; verify with show_gids {rp.nic.name}")
        yield Hit(rp.nic.name, msg, fix=fix,
                  evidence=(choice.how,) + tuple(_gid_text(g) for g in rp.port.gids))


@rule(
    "ROCE006", "roce-gid-inconsistent", W, "The GIDs NCCL uses differ across the node's RoCE HCAs",
    what="Among the node's RoCE ports NCCL uses (with a usable RoCE v2 GID, else ROCE005 reports them), the "
         "selected GIDs differ in address family (IPv4 on some HCAs, IPv6 on others): warning. When only the "
         "auto-selected index differs (e.g. sparse GID tables in containers or macvlan pods), an info: no single "
         "NCCL_IB_GID_INDEX value fits every HCA.",
    why="NCCL connects any local HCA to any remote one (across rails with NCCL_CROSS_NIC or PXN); an HCA that "
        "speaks IPv6 while its peers speak IPv4 cannot reach them and the connection times out. Pinning "
        "NCCL_IB_GID_INDEX on a node whose tables differ picks a wrong entry on some HCAs (NVIDIA/nccl#718, #1573).",
    detect="The GID each RoCE port would use (see ROCE005), compared across the node's HCAs.",
    fix="Give every rail netdev an address of the same family and leave NCCL_IB_GID_INDEX unset, so NCCL selects "
        "the matching RoCE v2 GID on each HCA.",
)
def gid_inconsistent(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    chosen = []  # (port, its GID choice, the chosen GID, its family)
    for rp in roce_ports(ctx, active_only=True):
        choice = select_gid(ctx, rp.nic, rp.port)
        gid = choice.gid
        if gid is None or _gid_problems(choice):
            continue
        chosen.append((rp, choice, gid, gid_family(gid_bytes(gid.gid))))
    if len(chosen) < 2:
        return
    fams = [f for _, _, _, f in chosen]
    major = max(set(fams), key=lambda f: (fams.count(f), f == "AF_INET"))
    if len(set(fams)) > 1:
        for rp, _, gid, fam in chosen:
            if fam != major:
                yield Hit(rp.nic.name, f"{rp.nic.name} port {rp.port.num} uses {_gid_text(gid)}, an "
                                       f"{'IPv4' if fam == 'AF_INET' else 'IPv6'} GID, while the node's other RoCE "
                                       f"HCAs use {'IPv4' if major == 'AF_INET' else 'IPv6'} GIDs",
                          evidence=tuple(f"{r.nic.name}: {_gid_text(g)}" for r, _, g, _ in chosen),
                          fix=f"give {rp.port.netdev or 'its netdev'} an address of the same family as the other "
                              f"rails and leave NCCL_IB_GID_INDEX unset")
        return
    idx = [c.index for _, c, _, _ in chosen]
    if any(c.forced for _, c, _, _ in chosen) or len(set(idx)) < 2:
        return
    common = max(set(idx), key=lambda i: (idx.count(i), -i))
    for rp, choice, _, _ in chosen:
        if choice.index != common:
            yield Hit(rp.nic.name, f"{rp.nic.name} port {rp.port.num}: NCCL's auto-selection picks GID index "
                                   f"{choice.index}, {common} on the node's other RoCE HCAs; do not pin "
                                   f"NCCL_IB_GID_INDEX on this node",
                      severity=I, evidence=tuple(f"{r.nic.name}: {_gid_text(g)}" for r, _, g, _ in chosen),
                      fix="leave NCCL_IB_GID_INDEX unset (NCCL >= 2.21 selects per HCA); if a pin is required, "
                          "first make the GID tables identical (add the rail addresses in the same order on every "
                          "netdev) and check with show_gids")


# --------------------------------------------------------------------------------------------------
# ROCE007 interface MTU too small for 4096-byte RDMA MTU

#: (netdev MTU, RoCE MTU): kernel include/rdma/ib_addr.h iboe_get_mtu() subtracts 96 bytes of headers
#: (GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4) and takes the largest IB MTU that fits.
_IBOE_HEADERS = 96
_IB_MTUS = (4096, 2048, 1024, 512, 256)


def iboe_mtu(netdev_mtu: int) -> int | None:
    room = netdev_mtu - _IBOE_HEADERS
    return next((m for m in _IB_MTUS if m <= room), None)


@rule(
    "ROCE007", "roce-mtu-too-small", W, "Interface MTU too small for a 4096-byte RoCE MTU",
    what="An ACTIVE RoCE port NCCL uses whose RDMA MTU is below min_rdma_mtu (default 4096, capped at the port's "
         "max_mtu) because its netdev MTU is too small: RoCE needs netdev MTU >= 4192 (4096 + 96 bytes of RoCE "
         "headers; 4200 or 9000 in practice). Error when the RDMA MTU is 1024 or less (a 1500-byte netdev MTU).",
    why="NCCL uses min(local, remote active_mtu) as the path MTU of each QP (src/transport/net_ib/connect.cc), so "
        "one port at 1024 quarters the payload per packet for all its peers; NCCL's GIN code assumes 4K MTU and "
        "hangs on 1500-byte interfaces (NVIDIA/nccl#1957), and MTU mismatches between nodes have caused hangs "
        "(NVIDIA/nccl#1524).",
    detect="/sys/class/net/<if>/mtu of the port's netdev and ibv_devinfo 'active_mtu'/'max_mtu'; without "
           "ibv_devinfo the RoCE MTU is derived from the netdev MTU the way the kernel does (iboe_get_mtu).",
    fix="ip link set dev <if> mtu 9000 and persist it (netplan 'mtu: 9000' / nmcli connection modify <con> "
        "802-3-ethernet.mtu 9000); the switch ports need MTU >= 9216.",
    options=(Option("min_rdma_mtu", int, 4096, "minimum RoCE (RDMA) MTU in bytes", min=256, max=4096),),
)
def roce_mtu(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    seen: set[str] = set()
    for rp in roce_ports(ctx, active_only=True):
        nd = rp.netdev
        key = nd.name if nd is not None else rp.nic.name
        if key in seen:
            continue
        seen.add(key)
        derived = iboe_mtu(nd.mtu) if nd is not None and nd.mtu is not None else None
        rdma = rp.port.active_mtu if rp.port.active_mtu is not None else derived
        if rdma is None:
            continue
        want = min(opts["min_rdma_mtu"], rp.port.max_mtu or 4096)
        if rdma >= want:
            continue
        ndname = nd.name if nd is not None else (rp.port.netdev or "<if>")
        mtu_txt = f"MTU {nd.mtu}" if nd is not None and nd.mtu is not None else "MTU unknown"
        yield Hit(key, f"{ndname} ({rp.nic.name} port {rp.port.num}) has {mtu_txt}, so its RoCE MTU is {rdma} "
                       f"(below {want}); RoCE needs an interface MTU of at least {want + _IBOE_HEADERS}",
                  severity=E if rdma <= 1024 else W,
                  evidence=(f"{ndname} mtu={nd.mtu if nd is not None else '?'}",
                            f"active_mtu={rp.port.active_mtu or '?'}", f"max_mtu={rp.port.max_mtu or '?'}"),
                  fix=f"ip link set dev {ndname} mtu 9000 and persist it (netplan mtu: 9000 / nmcli ... "
                      f"802-3-ethernet.mtu 9000); switch ports need MTU >= 9216")


# --------------------------------------------------------------------------------------------------
# ROCE008 DCBX: lldpad willing, or local and switch PFC disagreeing


def _prios(prios: tuple[int, ...] | None) -> str:
    return "none" if not prios else ",".join(map(str, sorted(prios)))


@rule(
    "ROCE008", "roce-dcbx-pfc", W, "DCBX (lldpad) can overwrite PFC, or the switch advertises different PFC",
    what="A RoCE port NCCL uses where lldpad runs IEEE DCBX: the port is willing (it adopts the PFC set the switch "
         "advertises), or the PFC set the switch advertises differs from the port's own. Graded error when the "
         "switch's set (which a willing port adopts) lacks the priority NCCL's traffic lands on.",
    why="A willing port takes whatever the switch advertises: PFC set with mlnx_qos or dcb silently changes when "
        "lldpad applies the switch's TLV (mlnx_qos warns 'lldpad service is running and may overwrite your "
        "settings'), so the RDMA priority can lose PFC after a switch change or a reboot, and NCCL's bandwidth "
        "collapses without any host change. With neither side willing, a mismatch means the switch pauses (or "
        "drops) on one set of priorities and the host on another: lossless on paper, lossy on the wire.",
    detect="lldptool -t -i <if> -V PFC (the local TLV: Willing, PFC enabled) and lldptool -t -n -i <if> -V PFC "
           "(the TLV received from the switch), captured when lldpad runs; NCCL's priority as in ROCE001. "
           "Hosts without lldpad (the usual case with mlnx_qos or dcb) are not judged. The firmware DCBX agent "
           "('DCBX mode: Firmware controlled' in mlnx_qos) shows no willing state to the host and is not judged.",
    fix="Decide who owns PFC. Host-configured: lldptool -T -i <if> -V PFC willing=no (or stop lldpad: systemctl "
        "disable --now lldpad) and keep the switch's PFC on the same priority. Switch-configured: make the switch "
        "advertise PFC on NCCL's priority (priority 3 for NCCL_IB_TC=106).",
    options=(_PROFILE,),
)
def dcbx_pfc(ctx: Ctx, opts: dict) -> Iterable[Hit]:
    if opts["profile"] == "lossy":
        return
    m = marking(ctx)
    seen: set[str] = set()
    for rp in roce_ports(ctx, active_only=True, physical=True):
        nd = rp.netdev
        if nd is None or nd.name in seen or nd.dcbx is None:
            continue
        seen.add(nd.name)
        dx = nd.dcbx
        land = landing(ctx, rp, m)
        prio = land.prio if land is not None and 0 <= land.prio < 8 else None
        where = _who(rp, nd)
        ev = [f"local: willing={'yes' if dx.willing else 'no'} pfc={_prios(dx.local_pfc)} (lldptool)",
              "switch: " + ("no PFC TLV received" if dx.peer_pfc is None else
                            f"willing={'yes' if dx.peer_willing else 'no'} pfc={_prios(dx.peer_pfc)} (lldptool -n)")]
        if land is not None and prio is not None:  # (prio is set only with land)
            ev.append(f"NCCL priority {prio} ({land.how}; {m.tc_text})")
        on_prio = f"priority {prio}" if prio is not None else "NCCL's priority"
        if dx.willing and dx.peer_pfc is not None and prio is not None and prio not in dx.peer_pfc:
            yield Hit(nd.name, f"{where}: lldpad is DCBX-willing and the switch advertises PFC on "
                               f"{_prios(dx.peer_pfc)}, not on {on_prio} where NCCL's RoCE traffic lands: the port "
                               f"adopts the switch's set and NCCL's traffic loses PFC",
                      severity=E, evidence=tuple(ev),
                      fix=f"make the switch advertise PFC on {on_prio}; or own PFC on the host: lldptool -T -i "
                          f"{nd.name} -V PFC willing=no, with the switch's PFC on the same priority")
        elif dx.willing and dx.peer_pfc is None:
            yield Hit(nd.name, f"{where}: lldpad is DCBX-willing: the PFC set on this port (here "
                               f"{_prios(dx.local_pfc)}) is replaced by whatever a switch advertises next",
                      evidence=tuple(ev),
                      fix=f"lldptool -T -i {nd.name} -V PFC willing=no (or systemctl disable --now lldpad when "
                          f"mlnx_qos/dcb configure PFC); or have the switch advertise PFC on {on_prio}")
        elif not dx.willing and dx.peer_pfc is not None and set(dx.peer_pfc) != set(dx.local_pfc):
            yield Hit(nd.name, f"{where}: DCBX mismatch: the switch advertises PFC on {_prios(dx.peer_pfc)}, this "
                               f"port enables {_prios(dx.local_pfc)} and neither side adopts the other: pauses are "
                               f"sent and honoured on different priorities",
                      severity=E if prio is not None and (prio in dx.local_pfc) != (prio in dx.peer_pfc) else None,
                      evidence=tuple(ev),
                      fix=f"align the two on {on_prio}: the switch's PFC configuration, or here: lldptool -T -i "
                          f"{nd.name} -V PFC enabled={prio if prio is not None else '<prio>'}")
