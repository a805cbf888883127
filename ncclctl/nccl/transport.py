"""Which network transport NCCL uses between nodes, and the socket transport's devices.

NCCL loads its net plugins in order (``plugin/net.cc``): an external ``libnccl-net.so`` (or the names in
``NCCL_NET_PLUGIN``), then its internal IB plugin, then its internal Socket plugin; the first whose ``init`` succeeds
and reports devices is used, unless ``NCCL_NET`` names one (case-insensitive). The IB plugin fails when
``NCCL_IB_DISABLE`` is non-zero, when no port is ACTIVE on an InfiniBand or RoCE link (after ``NCCL_IB_HCA``), or
when it finds no IP interface for its out-of-band connections (``transport/net_ib/init.cc``).

The Socket plugin's devices are the interfaces ``ncclFindInterfaces`` returns (``misc/socket.cc``,
``os/linux.cc``): ``NCCL_SOCKET_IFNAME`` when it is longer than one character (a prefix list, ``^`` to exclude,
``=`` for exact names), else interfaces named ``ib*``, else any but ``docker*``, ``lo*`` and ``virbr*``, else
``docker*``, then ``lo*``, then ``virbr*``. Only RUNNING interfaces (up, operational state up or unknown) with an IPv4
address or an IPv6 address other than ``::1`` count, in ``getifaddrs`` order (interfaces with IPv4 first, by
interface index, then IPv6-only ones), ``NCCL_SOCKET_FAMILY`` (``AF_INET``/``AF_INET6``) restricting the family, at
most 16 (``MAX_IFS``). Each device's properties (``transport/net_socket.cc``): speed from
``/sys/class/net/X/speed`` (unreadable or <= 0: 10 Gb/s, "Defaulting to 10 Gbps"), port 0, guid = its index,
latency 0, maxconn 65536, no GPUDirect RDMA (host memory only), no NIC fusion (no ``makeVDevice``); its PCI path is
``/sys/class/net/X/device`` resolved, and a device that is not a PCI function (virtio, vmbus) or an interface
without a device is attached to the first CPU (``ncclTopoFillNet``: "is not a PCI device ... Attaching to first CPU").
Checked against NCCL 2.30.7 (commit 5067397c) and the socket run of NCCL 2.28.9 on a real H200 VM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ncclctl.record import record

#: ``MAX_IFS`` in NCCL's socket code.
MAX_IFS = 16
#: NCCL's default speed for an interface whose speed it cannot read (Mb/s).
DEFAULT_SPEED = 10000
#: ``maxComms`` of the socket plugin.
MAX_COMMS = 65536
#: IFF_UP
_IFF_UP = 0x1
#: The automatic search, in order: (prefix list, what it means).
_AUTO = (("ib", "IPoIB interfaces (ib*)"), ("^docker,lo,virbr", "any interface but docker*, lo* and virbr*"),
         ("docker", "docker* interfaces"), ("lo", "the loopback (lo*)"), ("virbr", "virbr* interfaces"))


@record
class SocketDev:
    """One device of NCCL's Socket plugin (``ncclNetProperties_t`` as ``ncclNetSocketGetProperties`` fills it)."""

    name: str
    dev: int
    #: Mb/s as NCCL computes it.
    speed: int
    #: The speed file was unreadable or <= 0: NCCL logs "Could not get speed ... Defaulting to 10 Gbps".
    speed_defaulted: bool
    #: The PCI function NCCL places the device under, or None (attached to the first CPU).
    busid: str | None
    #: Why it is attached to the first CPU (non-PCI device, no device), or "".
    attach_note: str = ""


@record
class Transport:
    """The net plugin NCCL uses on a node, why, and the socket devices when it is the Socket plugin."""

    #: ``IB``, ``Socket``, ``external`` (a plugin the model does not follow) or ``none`` (every plugin fails).
    name: str
    why: str
    socket: tuple[SocketDev, ...] = ()
    notes: tuple[str, ...] = ()


def running(nd: Any) -> bool | None:
    """IFF_RUNNING as ``getifaddrs`` reports it: the interface is up and its operational state is up or unknown
    (``dev_get_flags``: ``netif_running && netif_oper_up``). None when the facts are missing."""
    state = (nd.operstate or "").lower()
    if nd.flags is not None and not nd.flags & _IFF_UP:
        return False
    if state in ("up", "unknown"):
        return True
    if state:
        return False
    return None


def find_interfaces(netdevs: Sequence[Any], env: Mapping[str, str]) -> tuple[list[Any], str, list[str]]:
    """``ncclFindInterfaces``: (the interfaces in NCCL's order, how they were chosen, notes on what was assumed)."""
    from ncclctl.nccl.lists import ifname_selects

    notes: list[str] = []
    family = env.get("NCCL_SOCKET_FAMILY")
    want = {"AF_INET": "inet", "AF_INET6": "inet6"}.get(family or "")
    unknown_addrs = [nd.name for nd in netdevs if nd.inet is None]
    if unknown_addrs:
        notes.append("the interfaces' addresses are not recorded (a snapshot older than this ncclctl): every "
                     "running interface is assumed to have one")

    def has(nd: Any, fam: str) -> bool:
        return nd.inet is None or fam in nd.inet

    eligible = []
    for nd in netdevs:
        if running(nd) is False:
            continue
        fams = [f for f in ("inet", "inet6") if has(nd, f) and (want is None or f == want)]
        if not fams:
            continue
        eligible.append((0 if "inet" in fams else 1, nd.ifindex if nd.ifindex is not None else 1 << 30, nd.name, nd))
    eligible.sort(key=lambda e: e[:3])
    ordered = [e[3] for e in eligible]
    names = [nd.name for nd in ordered]
    by_name = {nd.name: nd for nd in ordered}
    user = env.get("NCCL_SOCKET_IFNAME")
    if user is not None and len(user) > 1:
        chosen = ifname_selects(user, names)[:MAX_IFS]
        return [by_name[n] for n in chosen], f"NCCL_SOCKET_IFNAME={user}", notes
    if user is not None:
        notes.append(f"NCCL_SOCKET_IFNAME={user!r} is one character or empty: NCCL ignores it")
    if env.get("NCCL_COMM_ID"):
        notes.append("NCCL_COMM_ID is set: when no ib* interface exists NCCL first looks for one in its address's "
                     "subnet (not modelled: addresses are not compared)")
    for prefixes, what in _AUTO:
        chosen = ifname_selects(prefixes, names)[:MAX_IFS]
        if chosen:
            return [by_name[n] for n in chosen], f"NCCL's automatic choice: {what}", notes
    return [], "no running interface with an address", notes


def socket_devices(netdevs: Sequence[Any], env: Mapping[str, str]) -> tuple[tuple[SocketDev, ...], str, list[str]]:
    """The Socket plugin's devices (``ncclNetSocketInit`` + ``GetProperties``), how they were chosen, notes."""
    from ncclctl.sysfs import is_sysfs_bdf

    chosen, why, notes = find_interfaces(netdevs, env)
    out = []
    for i, nd in enumerate(chosen):
        speed = nd.speed_mbps if nd.speed_mbps is not None else 0
        defaulted = speed <= 0
        busid = None
        note = ""
        if nd.device_name is not None and is_sysfs_bdf(nd.device_name):
            busid = nd.device_name
        elif nd.device_name is not None:
            note = f"its device {nd.device_name} is not a PCI function: NCCL attaches it to the first CPU"
        else:
            note = "it has no device (a virtual interface): NCCL attaches it to the first CPU"
        out.append(SocketDev(name=nd.name, dev=i, speed=DEFAULT_SPEED if defaulted else speed,
                             speed_defaulted=defaulted, busid=busid, attach_note=note))
    return tuple(out), why, notes


def transport(node: Any, env: Mapping[str, str], ib_ports: frozenset[tuple[str, int]]) -> Transport:
    """The plugin NCCL settles on for ``node`` under the settings ``env`` (NCCL_* values as NCCL reads them), given
    the (device, port) pairs the IB plugin would list (ACTIVE, right link layer, after NCCL_IB_HCA)."""
    from ncclctl.nccl.params import param_int

    notes: list[str] = []
    socks, sock_why, sock_notes = socket_devices(node.netdevs, env)
    net = (env.get("NCCL_NET") or "").strip()
    plugin = env.get("NCCL_NET_PLUGIN")
    if plugin is not None and plugin.strip().lower() not in ("", "none"):
        notes.append(f"NCCL_NET_PLUGIN={plugin}: an external net plugin is tried first; if it loads, NCCL uses it "
                     "(not modelled)")
    ib_disable = param_int(env.get("NCCL_IB_DISABLE"), 0)
    ib_fail = ""
    if ib_disable != 0:
        ib_fail = f"NCCL_IB_DISABLE={env.get('NCCL_IB_DISABLE')}"
    elif not ib_ports:
        ib_fail = ("NET/IB found no device: no RDMA port is ACTIVE on an InfiniBand or RoCE link"
                   + (" that NCCL_IB_HCA selects" if env.get("NCCL_IB_HCA") else ""))
    elif not socks:
        ib_fail = "NET/IB found no IP interface for its out-of-band connections"
    if net and net.lower() not in ("ib", "socket"):
        return Transport("external", f"NCCL_NET={net} names a plugin the model does not follow", socks, tuple(notes))
    sock_ok = bool(socks)
    sock_text = (f"{len(socks)} interface{'s' if len(socks) != 1 else ''} ({sock_why})" if sock_ok
                 else f"NET/Socket found no interface ({sock_why})")
    notes += sock_notes
    if net.lower() == "ib":
        if ib_fail:
            return Transport("none", f"NCCL_NET={net} but {ib_fail}: NCCL fails to initialise its network",
                             (), tuple(notes))
        return Transport("IB", f"NCCL_NET={net}", (), tuple(notes))
    if net.lower() == "socket" or ib_fail:
        if not sock_ok:
            why = (f"NCCL_NET={net}" if net else ib_fail) + f"; {sock_text}: NCCL fails to initialise its network"
            return Transport("none", why, (), tuple(notes))
        why = (f"NCCL_NET={net}" if net.lower() == "socket" else ib_fail) + f"; NET/Socket uses {sock_text}"
        return Transport("Socket", why, socks, tuple(notes))
    return Transport("IB", f"{len(ib_ports)} RDMA port{'s' if len(ib_ports) != 1 else ''} usable", (), tuple(notes))


def transport_for_node(node: Any, env: Mapping[str, str]) -> Transport:
    """:func:`transport` with the IB plugin's ports taken from the node: ACTIVE ports on an InfiniBand or Ethernet
    (RoCE) link of RDMA NICs on a PCI function, as NCCL_IB_HCA selects them."""
    from ncclctl.nccl.lists import ib_ports

    ports = [(nic.name, p.num) for nic in node.nics if nic.bdf is not None for p in nic.ports
             if p.is_active and p.link_layer in ("InfiniBand", "Ethernet")]
    return transport(node, env, ib_ports(ports, env.get("NCCL_IB_HCA") or None))


def node_transport(node: Any, version: Any) -> Transport:
    """:func:`transport_for_node` under the node's own NCCL settings (environment over conf files) for ``version``."""
    from ncclctl.nccl.settings import resolve

    return transport_for_node(node, resolve(node, version).nccl_env())
