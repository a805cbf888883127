"""ip link parsers (text and JSON)."""

from __future__ import annotations

import json

import pytest

from ncclctl.errors import ParseError
from ncclctl.parsers.iplink import IpLink, parse_ip_link_json, parse_ip_link_text

# Real `ip -d a s` capture (public notes, Ubuntu VM with a bond, a VLAN on it, a bridge and a veth
# pair). `ip -d addr` mixes address lines in; the parser accepts that as well.
IP_D_ADDR = """\
1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00 promiscuity 0 minmtu 0 maxmtu 0 numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535
    inet 127.0.0.1/8 scope host lo
       valid_lft forever preferred_lft forever
    inet6 ::1/128 scope host
       valid_lft forever preferred_lft forever
2: ens33: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP group default qlen 1000
    link/ether 00:0c:29:19:bd:dd brd ff:ff:ff:ff:ff:ff promiscuity 0 minmtu 46 maxmtu 16110 numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535
    inet 192.168.182.128/24 brd 192.168.182.255 scope global dynamic ens33
       valid_lft 1206sec preferred_lft 1206sec
    inet6 fe80::20c:29ff:fe19:bddd/64 scope link
       valid_lft forever preferred_lft forever
3: ens38: <BROADCAST,MULTICAST,PROMISC,SLAVE,UP,LOWER_UP> mtu 1500 qdisc fq_codel master bond0 state UP group default qlen 1000
    link/ether 00:0c:29:19:bd:e7 brd ff:ff:ff:ff:ff:ff promiscuity 1 minmtu 46 maxmtu 16110
    bond_slave state ACTIVE mii_status DOWN link_failure_count 0 perm_hwaddr 00:0c:29:19:bd:e7 queue_id 0 numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535
9: bond0: <BROADCAST,MULTICAST,MASTER> mtu 1500 qdisc noop state DOWN group default qlen 1000
    link/ether 00:0c:29:19:bd:e7 brd ff:ff:ff:ff:ff:ff promiscuity 0 minmtu 68 maxmtu 65535
    bond mode balance-rr miimon 10 updelay 0 downdelay 0 peer_notify_delay 0 use_carrier 1 arp_interval 0 arp_validate none arp_all_targets any primary_reselect always fail_over_mac none xmit_hash_policy layer2 resend_igmp 1 num_grat_arp 1 all_slaves_active 0 min_links 0 lp_interval 1 packets_per_slave 1 lacp_rate slow ad_select stable tlb_dynamic_lb 1 numtxqueues 16 numrxqueues 16 gso_max_size 65536 gso_max_segs 65535
10: bond0.100@bond0: <BROADCAST,MULTICAST,M-DOWN> mtu 1500 qdisc noop master br-0 state DOWN group default qlen 1000
    link/ether 00:0c:29:19:bd:e7 brd ff:ff:ff:ff:ff:ff promiscuity 1 minmtu 0 maxmtu 65535
    vlan protocol 802.1Q id 100 <REORDER_HDR>
    bridge_slave state disabled priority 32 cost 100 hairpin off guard off root_block off fastleave off learning on flood on port_id 0x8001 port_no 0x1 designated_port 32769 designated_cost 0 designated_bridge 8000.0:c:29:19:bd:e7 designated_root 8000.0:c:29:19:bd:e7 hold_timer    0.00 message_age_timer    0.00 forward_delay_timer    0.00 topology_change_ack 0 config_pending 0 proxy_arp off proxy_arp_wifi off mcast_router 1 mcast_fast_leave off mcast_flood on mcast_to_unicast off neigh_suppress off group_fwd_mask 0 group_fwd_mask_str 0x0 vlan_tunnel off isolated off numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535
11: br-0: <BROADCAST,MULTICAST> mtu 1500 qdisc noop state DOWN group default qlen 1000
    link/ether 00:0c:29:19:bd:e7 brd ff:ff:ff:ff:ff:ff promiscuity 0 minmtu 68 maxmtu 65535
    bridge forward_delay 1500 hello_time 200 max_age 2000 ageing_time 30000 stp_state 0 priority 32768 vlan_filtering 0 vlan_protocol 802.1Q bridge_id 8000.0:c:29:19:bd:e7 designated_root 8000.0:c:29:19:bd:e7 root_port 0 root_path_cost 0 topology_change 0 topology_change_detected 0 hello_timer    0.00 tcn_timer    0.00 topology_change_timer    0.00 gc_timer    0.00 vlan_default_pvid 1 vlan_stats_enabled 0 vlan_stats_per_port 0 group_fwd_mask 0 group_address 01:80:c2:00:00:00 mcast_snooping 1 mcast_router 1 mcast_query_use_ifaddr 0 mcast_querier 0 mcast_hash_elasticity 16 mcast_hash_max 4096 mcast_last_member_count 2 mcast_startup_query_count 2 mcast_last_member_interval 100 mcast_membership_interval 26000 mcast_querier_interval 25500 mcast_query_interval 12500 mcast_query_response_interval 1000 mcast_startup_query_interval 3124 mcast_stats_enabled 0 mcast_igmp_version 2 mcast_mld_version 1 nf_call_iptables 0 nf_call_ip6tables 0 nf_call_arptables 0 numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535
12: veth1-peer@veth1: <BROADCAST,MULTICAST,M-DOWN> mtu 1500 qdisc noop master br-0 state DOWN group default qlen 1000
    link/ether 9a:0e:42:85:a8:f2 brd ff:ff:ff:ff:ff:ff promiscuity 1 minmtu 68 maxmtu 65535
    veth
    bridge_slave state disabled priority 32 cost 2 hairpin off guard off root_block off fastleave off learning on flood on port_id 0x8002 port_no 0x2 designated_port 32770 designated_cost 0 designated_bridge 8000.0:c:29:19:bd:e7 designated_root 8000.0:c:29:19:bd:e7 hold_timer    0.00 message_age_timer    0.00 forward_delay_timer    0.00 topology_change_ack 0 config_pending 0 proxy_arp off proxy_arp_wifi off mcast_router 1 mcast_fast_leave off mcast_flood on mcast_to_unicast off neigh_suppress off group_fwd_mask 0 group_fwd_mask_str 0x0 vlan_tunnel off isolated off numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535
13: veth1@veth1-peer: <BROADCAST,MULTICAST,M-DOWN> mtu 1500 qdisc noop state DOWN group default qlen 1000
    link/ether 72:68:8a:68:b2:a7 brd ff:ff:ff:ff:ff:ff promiscuity 0 minmtu 68 maxmtu 65535
    veth numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535
    inet 192.168.182.129/24 scope global veth1
       valid_lft forever preferred_lft forever
"""

# GPU-node links laid out as ipaddress.c/iplink_vlan.c/iplink_ipoib.c print them with -d (current
# iproute2: "mode DEFAULT", allmulti, altname lines, ipoib "pkey 0x... mode datagram umcast 0000").
GPU_NODE = """\
1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00 promiscuity 0  allmulti 0 minmtu 0 maxmtu 0 addrgenmode eui64 numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535 tso_max_size 524280 tso_max_segs 65535 gro_max_size 65536
4: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP mode DEFAULT group default qlen 1000
    link/ether a0:88:c2:e3:14:2a brd ff:ff:ff:ff:ff:ff promiscuity 0  allmulti 0 minmtu 68 maxmtu 9978 addrgenmode eui64 numtxqueues 1024 numrxqueues 252 gso_max_size 65536 gso_max_segs 65535 tso_max_size 524280 tso_max_segs 65535 gro_max_size 65536 portname p0 switchid 2a14e30003c288a0 parentbus pci parentdev 0000:1a:00.0
    altname enp26s0f0np0
5: ens1f0np0.100@ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc noqueue state UP mode DEFAULT group default qlen 1000
    link/ether a0:88:c2:e3:14:2a brd ff:ff:ff:ff:ff:ff promiscuity 0  allmulti 0 minmtu 0 maxmtu 65535
    vlan protocol 802.1Q id 100 <REORDER_HDR>
      egress-qos-map { 0:3 }  addrgenmode eui64 numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535 tso_max_size 524280 tso_max_segs 65535 gro_max_size 65536
6: ibp26s0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 4092 qdisc mq state UP mode DEFAULT group default qlen 256
    link/infiniband 00:00:10:29:fe:80:00:00:00:00:00:00:a0:88:c2:03:00:e3:14:2a brd 00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff promiscuity 0  allmulti 0 minmtu 68 maxmtu 65520
    ipoib pkey 0xffff mode datagram umcast 0000 addrgenmode eui64 numtxqueues 256 numrxqueues 256 gso_max_size 65536 gso_max_segs 65535
    altname ibp26s0f0
7: eth0@if21: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000
    link/ether 0a:58:0a:80:00:07 brd ff:ff:ff:ff:ff:ff link-netnsid 0 promiscuity 0  allmulti 0 minmtu 68 maxmtu 65535
    veth addrgenmode eui64 numtxqueues 8 numrxqueues 8 gso_max_size 65536 gso_max_segs 65535
8: tunl0@NONE: <NOARP> mtu 1480 qdisc noop state DOWN mode DEFAULT group default qlen 1000
    link/ipip 0.0.0.0 brd 0.0.0.0 promiscuity 0  allmulti 0 minmtu 0 maxmtu 0
    ipip any remote any local any ttl inherit nopmtudisc addrgenmode eui64 numtxqueues 1 numrxqueues 1
"""

# The same links as `ip -j -d link show` prints them (key order of ipaddress.c; "link" comes
# before "ifname"; link_index/link_netnsid for a parent in another namespace; "link": null for
# IFLA_LINK 0).
GPU_NODE_JSON = json.dumps(
    [
        {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "mtu": 65536,
         "qdisc": "noqueue", "operstate": "UNKNOWN", "linkmode": "DEFAULT", "group": "default",
         "txqlen": 1000, "link_type": "loopback", "address": "00:00:00:00:00:00",
         "broadcast": "00:00:00:00:00:00", "promiscuity": 0, "allmulti": 0, "min_mtu": 0,
         "max_mtu": 0, "inet6_addr_gen_mode": "eui64", "num_tx_queues": 1, "num_rx_queues": 1},
        {"ifindex": 4, "ifname": "ens1f0np0", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
         "mtu": 9000, "qdisc": "mq", "operstate": "UP", "linkmode": "DEFAULT", "group": "default",
         "txqlen": 1000, "link_type": "ether", "address": "a0:88:c2:e3:14:2a",
         "broadcast": "ff:ff:ff:ff:ff:ff", "promiscuity": 0, "allmulti": 0, "min_mtu": 68,
         "max_mtu": 9978, "inet6_addr_gen_mode": "eui64", "num_tx_queues": 1024,
         "num_rx_queues": 252, "phys_port_name": "p0", "phys_switch_id": "2a14e30003c288a0",
         "parentbus": "pci", "parentdev": "0000:1a:00.0", "altnames": ["enp26s0f0np0"]},
        {"ifindex": 5, "link": "ens1f0np0", "ifname": "ens1f0np0.100",
         "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"], "mtu": 9000, "qdisc": "noqueue",
         "operstate": "UP", "linkmode": "DEFAULT", "group": "default", "txqlen": 1000,
         "link_type": "ether", "address": "a0:88:c2:e3:14:2a", "broadcast": "ff:ff:ff:ff:ff:ff",
         "promiscuity": 0, "allmulti": 0, "min_mtu": 0, "max_mtu": 65535,
         "linkinfo": {"info_kind": "vlan", "info_data": {"protocol": "802.1Q", "id": 100,
                      "flags": ["REORDER_HDR"], "egress_qos": [{"from": 0, "to": 3}]}},
         "inet6_addr_gen_mode": "eui64", "num_tx_queues": 1, "num_rx_queues": 1},
        {"ifindex": 6, "ifname": "ibp26s0", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
         "mtu": 4092, "qdisc": "mq", "operstate": "UP", "linkmode": "DEFAULT", "group": "default",
         "txqlen": 256, "link_type": "infiniband",
         "address": "00:00:10:29:fe:80:00:00:00:00:00:00:a0:88:c2:03:00:e3:14:2a",
         "broadcast": "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff",
         "promiscuity": 0, "allmulti": 0, "min_mtu": 68, "max_mtu": 65520,
         "linkinfo": {"info_kind": "ipoib", "info_data": {"key": "0xffff", "mode": "datagram",
                      "umcast": "0000"}},
         "inet6_addr_gen_mode": "eui64", "num_tx_queues": 256, "num_rx_queues": 256,
         "altnames": ["ibp26s0f0"]},
        {"ifindex": 7, "link_index": 21, "ifname": "eth0",
         "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"], "mtu": 1500, "qdisc": "noqueue",
         "operstate": "UP", "linkmode": "DEFAULT", "group": "default", "txqlen": 1000,
         "link_type": "ether", "address": "0a:58:0a:80:00:07", "broadcast": "ff:ff:ff:ff:ff:ff",
         "link_netnsid": 0, "promiscuity": 0, "allmulti": 0, "min_mtu": 68, "max_mtu": 65535,
         "linkinfo": {"info_kind": "veth"}, "inet6_addr_gen_mode": "eui64",
         "num_tx_queues": 8, "num_rx_queues": 8},
        {"ifindex": 8, "link": None, "ifname": "tunl0", "flags": ["NOARP"], "mtu": 1480,
         "qdisc": "noop", "operstate": "DOWN", "linkmode": "DEFAULT", "group": "default",
         "txqlen": 1000, "link_type": "ipip", "address": "0.0.0.0", "broadcast": "0.0.0.0",
         "promiscuity": 0, "allmulti": 0, "min_mtu": 0, "max_mtu": 0,
         "linkinfo": {"info_kind": "ipip", "info_data": {"proto": "any", "remote": "any",
                      "local": "any", "ttl": 0, "pmtudisc": False}},
         "inet6_addr_gen_mode": "eui64", "num_tx_queues": 1, "num_rx_queues": 1},
    ],
    separators=(",", ":"),
) + "\n"

TEXT_SAMPLES = [IP_D_ADDR, GPU_NODE]
JSON_SAMPLES = [GPU_NODE_JSON, "[]\n"]


def _by_name(links: tuple[IpLink, ...]) -> dict[str, IpLink]:
    return {ln.ifname: ln for ln in links}


def test_real_ip_d_addr_capture() -> None:
    links = _by_name(parse_ip_link_text(IP_D_ADDR))
    assert list(links) == ["lo", "ens33", "ens38", "bond0", "bond0.100", "br-0", "veth1-peer", "veth1"]
    lo = links["lo"]
    assert (lo.ifindex, lo.link_type, lo.operstate, lo.mtu, lo.kind) == (1, "loopback", "UNKNOWN", 65536, None)
    assert links["ens33"].kind is None and links["ens33"].address == "00:0c:29:19:bd:dd"
    assert links["ens38"].master == "bond0" and links["ens38"].slave_kind == "bond"
    assert "SLAVE" in links["ens38"].flags and links["ens38"].kind is None
    assert links["bond0"].kind == "bond" and links["bond0"].operstate == "DOWN"
    vlan = links["bond0.100"]
    assert (vlan.kind, vlan.vlan_id, vlan.vlan_protocol, vlan.link) == ("vlan", 100, "802.1Q", "bond0")
    assert (vlan.master, vlan.slave_kind) == ("br-0", "bridge")
    assert vlan.flags == ("BROADCAST", "MULTICAST", "M-DOWN") and not vlan.is_up
    assert links["br-0"].kind == "bridge"
    assert links["veth1-peer"].kind == "veth" and links["veth1-peer"].slave_kind == "bridge"
    assert links["veth1"].link == "veth1-peer" and links["veth1"].kind == "veth"
    assert links["bond0.100"].line == 19


def test_gpu_node_text() -> None:
    links = _by_name(parse_ip_link_text(GPU_NODE))
    nic = links["ens1f0np0"]
    assert nic == IpLink(
        ifindex=4,
        ifname="ens1f0np0",
        flags=("BROADCAST", "MULTICAST", "UP", "LOWER_UP"),
        mtu=9000,
        operstate="UP",
        link_type="ether",
        address="a0:88:c2:e3:14:2a",
        kind=None,
        slave_kind=None,
        master=None,
        link=None,
        link_index=None,
        link_netnsid=None,
        vlan_id=None,
        vlan_protocol=None,
        altnames=("enp26s0f0np0",),
    )
    vlan = links["ens1f0np0.100"]
    assert (vlan.kind, vlan.vlan_id, vlan.link, vlan.mtu) == ("vlan", 100, "ens1f0np0", 9000)
    ib = links["ibp26s0"]
    assert ib.link_type == "infiniband" and ib.kind == "ipoib" and ib.mtu == 4092
    assert len(ib.address.split(":")) == 20 and ib.altnames == ("ibp26s0f0",)  # type: ignore[union-attr]
    veth = links["eth0"]
    assert (veth.link, veth.link_index, veth.link_netnsid, veth.kind) == (None, 21, 0, "veth")
    tun = links["tunl0"]
    assert (tun.link, tun.link_type, tun.address, tun.kind) == (None, "ipip", "0.0.0.0", "ipip")


def test_json_matches_text() -> None:
    from_json = parse_ip_link_json(GPU_NODE_JSON)
    from_text = parse_ip_link_text(GPU_NODE)
    assert from_json == from_text


def test_json_pretty_printed_line_numbers() -> None:
    pretty = json.dumps(json.loads(GPU_NODE_JSON), indent=4)
    links = parse_ip_link_json(pretty)
    assert links == parse_ip_link_json(GPU_NODE_JSON)
    assert links[0].line == 2 and links[1].line > links[0].line


@pytest.mark.parametrize(
    "variant",
    [
        lambda t: t.replace("\n", "\r\n"),
        lambda t: t.replace("    ", "\t"),
        lambda t: "\n".join(ln.strip() for ln in t.split("\n")),  # indentation lost in a paste
        lambda t: "\n".join(ln + "  " for ln in t.split("\n")),
        lambda t: t.replace("\n", "\n\n"),
    ],
)
def test_text_whitespace_variants(variant) -> None:  # type: ignore[no-untyped-def]
    for text in TEXT_SAMPLES:
        assert parse_ip_link_text(variant(text)) == parse_ip_link_text(text)


def test_ip_color_output() -> None:
    colored = GPU_NODE.replace("ens1f0np0:", "\x1b[36mens1f0np0\x1b[0m:", 1).replace(
        "state UP", "state \x1b[32mUP \x1b[0m", 1
    )
    assert parse_ip_link_text(colored) == parse_ip_link_text(GPU_NODE)


def test_link_show_without_details() -> None:
    text = (
        "2: ens1f0np0: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 9000 qdisc mq state DOWN mode DEFAULT "
        "group default qlen 1000\n    link/ether a0:88:c2:e3:14:2a brd ff:ff:ff:ff:ff:ff\n"
        "3: dummy0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN mode DEFAULT group default qlen 1000\n"
        "    link/none \n"
    )
    a, b = parse_ip_link_text(text)
    assert a.flags[0] == "NO-CARRIER" and a.operstate == "DOWN" and a.kind is None
    assert b.link_type == "none" and b.address is None


@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_empty(text: str) -> None:
    assert parse_ip_link_text(text) == ()
    assert parse_ip_link_json(text) == ()
    assert parse_ip_link_json("[]") == ()


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("    link/ether a0:88:c2:e3:14:2a brd ff:ff:ff:ff:ff:ff\n", 1),
        (GPU_NODE.replace("mtu 9000 qdisc mq", "mtu big qdisc mq"), 3),
        (GPU_NODE.replace("id 100 <REORDER_HDR>", "id 5000 <REORDER_HDR>"), 8),
        (GPU_NODE.replace("id 100 <REORDER_HDR>", "id x <REORDER_HDR>"), 8),
        (GPU_NODE + "4: again: <UP> mtu 1500\n", 20),
        (GPU_NODE + "    !!! garbage\n", 20),
        ("2: eth0: <UP> mtu\n", 1),
        (GPU_NODE.replace("    altname enp26s0f0np0", "    altname"), 5),
    ],
    ids=["no-header", "bad-mtu", "vlan-range", "vlan-nan", "dup-ifindex", "garbage", "trunc", "altname"],
)
def test_text_errors(text: str, line: int) -> None:
    with pytest.raises(ParseError) as ei:
        parse_ip_link_text(text, source="cmd/ip_-d_link_show.txt")
    assert ei.value.line == line and ei.value.path == "cmd/ip_-d_link_show.txt" and ei.value.fix


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('[{"ifindex": 1, "ifname": "lo"}', 1),
        ('{"ifindex": 1, "ifname": "lo"}', 1),
        ('[\n  {"ifindex": 1, "ifname": "lo"},\n  {"ifindex": "2", "ifname": "eth0"}\n]', 3),
        ('[\n  {"ifindex": 1, "ifname": "lo"},\n  {"ifname": "eth0"}\n]', 3),
        ('[{"ifindex": 1, "ifname": "lo", "mtu": true}]', 1),
        ('[{"ifindex": 1, "ifname": "lo", "flags": "UP"}]', 1),
        ('[{"ifindex": 5, "ifname": "v", "linkinfo": {"info_kind": "vlan", "info_data": {"id": 9999}}}]', 1),
        ('[{"ifindex": 5, "ifname": "v", "linkinfo": []}]', 1),
        ("[1, 2]", 1),
        ("[\n" * 100000, 1),
        ("Cannot find device \"eth9\"\n", 1),
    ],
)
def test_json_errors(text: str, line: int) -> None:
    with pytest.raises(ParseError) as ei:
        parse_ip_link_json(text, source="cmd/ip_-j_-d_link_show.txt")
    assert ei.value.line == line and ei.value.path == "cmd/ip_-j_-d_link_show.txt"
