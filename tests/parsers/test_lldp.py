"""lldpctl -f json and lldptool -V PFC parsers.

JSON samples follow lldpd's writer (src/client/display.c tags, json_writer.c cleanup and indent
style): single neighbour -> ``interface`` is an object, several -> a list of one-key objects;
chassis keyed by SysName; ``yes``/``no`` turned into booleans. lldptool samples follow lldpad's
``ieee8021qaz_print_tlv`` / ``ieee8021qaz_print_pfc_tlv`` printf calls (``"%s\\n\\t"`` after the TLV
name, then ``" Willing: ..."`` and ``"\\t PFC enabled: "`` + ``"%i "`` per priority).
"""

from __future__ import annotations

import pytest

from ncclctl.errors import ParseError
from ncclctl.parsers.lldp import (
    LldpNeighbor,
    LldptoolPfc,
    parse_lldpctl_json,
    parse_lldptool_neighbor,
    parse_lldptool_pfc,
)

ONE_NEIGHBOR = """\
{
  "lldp": {
    "interface": {
      "ens1f0np0": {
        "via": "LLDP",
        "rid": "1",
        "age": "0 day, 02:13:07",
        "chassis": {
          "leaf-01": {
            "id": {
              "type": "mac",
              "value": "1c:34:da:aa:bb:00"
            },
            "descr": "Cumulus Linux version 5.9.1 running on Nvidia SN5600",
            "mgmt-ip": [
              "10.0.0.11",
              "fe80::1e34:daff:feaa:bb00"
            ],
            "mgmt-iface": "2",
            "capability": [
              {
                "type": "Bridge",
                "enabled": true
              },
              {
                "type": "Router",
                "enabled": true
              }
            ]
          }
        },
        "port": {
          "id": {
            "type": "ifname",
            "value": "swp1s0"
          },
          "descr": "swp1s0",
          "ttl": "120",
          "mfs": "9216",
          "auto-negotiation": {
            "supported": false,
            "enabled": false
          }
        }
      }
    }
  }
}
"""

TWO_NEIGHBORS = """\
{
  "lldp": {
    "interface": [
      {
        "ens1f0np0": {
          "via": "LLDP",
          "rid": "1",
          "age": "0 day, 02:13:07",
          "chassis": {
            "leaf-01": {
              "id": {
                "type": "mac",
                "value": "1c:34:da:aa:bb:00"
              },
              "mgmt-ip": "10.0.0.11"
            }
          },
          "port": {
            "id": {
              "type": "ifname",
              "value": "swp1s0"
            },
            "descr": "swp1s0",
            "ttl": "120"
          }
        }
      },
      {
        "ens2f0np0": {
          "via": "LLDP",
          "rid": "2",
          "age": "0 day, 02:13:05",
          "chassis": {
            "id": {
              "type": "mac",
              "value": "1c:34:da:aa:cc:00"
            }
          },
          "port": {
            "id": {
              "type": "mac",
              "value": "1c:34:da:aa:cc:41"
            }
          }
        }
      }
    ]
  }
}
"""

JSON_SAMPLES = [ONE_NEIGHBOR, TWO_NEIGHBORS, '{\n  "lldp": {\n\n  }\n}\n']

PFC_LOCAL = (
    "IEEE 8021QAZ PFC TLV\n"
    "\t Willing: yes\n"
    "\t MACsec Bypass Capable: no\n"
    "\t PFC capable traffic classes: 8\n"
    "\t PFC enabled: 3 \n"
)
PFC_NONE = PFC_LOCAL.replace("Willing: yes", "Willing: no").replace("PFC enabled: 3 ", "PFC enabled: none")
PFC_SAMPLES = [PFC_LOCAL, PFC_NONE]


def test_one_neighbor() -> None:
    (n,) = parse_lldpctl_json(ONE_NEIGHBOR)
    assert n == LldpNeighbor(
        interface="ens1f0np0",
        chassis_name="leaf-01",
        chassis_id="1c:34:da:aa:bb:00",
        chassis_id_type="mac",
        port_id="swp1s0",
        port_id_type="ifname",
        port_descr="swp1s0",
        mgmt_ip="10.0.0.11",
        ttl=120,
        mgmt_ips=("10.0.0.11", "fe80::1e34:daff:feaa:bb00"),
        via="LLDP",
    )
    assert n.line == 4


def test_two_neighbors_list_shape_and_unnamed_chassis() -> None:
    a, b = parse_lldpctl_json(TWO_NEIGHBORS, source="cmd/lldpctl_-f_json.txt")
    assert (a.interface, a.chassis_name, a.mgmt_ip, a.mgmt_ips) == (
        "ens1f0np0",
        "leaf-01",
        "10.0.0.11",
        ("10.0.0.11",),
    )
    assert b.interface == "ens2f0np0" and b.chassis_name is None
    assert (b.chassis_id, b.port_id, b.port_id_type, b.ttl, b.port_descr) == (
        "1c:34:da:aa:cc:00",
        "1c:34:da:aa:cc:41",
        "mac",
        None,
        None,
    )
    assert a.line == 5 and b.line == 29


def test_same_interface_twice_and_names_that_look_like_keys() -> None:
    doc = (
        '{"lldp":{"interface":['
        '{"port":{"via":"LLDP","chassis":{"id":{"id":{"type":"local","value":"sw-a"}}},'
        '"port":{"id":{"type":"local","value":"1"}}}},'
        '{"port":{"via":"CDPv2","chassis":{"name":{"id":{"type":"local","value":"sw-b"}}}}}'
        "]}}"
    )
    a, b = parse_lldpctl_json(doc)
    assert (a.interface, a.chassis_name, a.chassis_id, a.port_id) == ("port", "id", "sw-a", "1")
    assert (b.interface, b.chassis_name, b.chassis_id, b.via) == ("port", "name", "sw-b", "CDPv2")


def test_old_lldpd_ttl_under_chassis_and_boolean_names() -> None:
    doc = (
        '{"lldp":{"interface":{"eth0":{"via":"LLDP","chassis":{"id":{"type":"mac",'
        '"value":"00:11:22:33:44:55"},"name":true,"ttl":"120"},"port":{"id":{"type":"ifname",'
        '"value":"Ethernet1/1"},"descr":"no"}}}}}'
    )
    (n,) = parse_lldpctl_json(doc)
    # lldpd turned a SysName "yes" and a PortDescr "no" into JSON booleans
    assert n.chassis_name == "yes" and n.port_descr == "no" and n.ttl == 120


def test_json0_shape() -> None:
    doc = (
        '{"lldp":[{"interface":[{"name":"ens1f0","via":"LLDP","chassis":[{"id":[{"type":"mac",'
        '"value":"aa:bb:cc:dd:ee:02"}],"name":[{"value":"arista2"}],"mgmt-ip":[{"value":'
        '"198.18.3.96"}]}],"port":[{"id":[{"type":"ifname","value":"Ethernet12/1"}],'
        '"descr":[{"value":"leaf2 downlink"}],"ttl":[{"value":"120"}]}]}]}]}'
    )
    (n,) = parse_lldpctl_json(doc)
    assert (n.interface, n.chassis_name, n.chassis_id, n.mgmt_ip) == (
        "ens1f0",
        "arista2",
        "aa:bb:cc:dd:ee:02",
        "198.18.3.96",
    )
    assert (n.port_id, n.port_descr, n.ttl) == ("Ethernet12/1", "leaf2 downlink", 120)


@pytest.mark.parametrize("text", ["", "\n", '{"lldp": {}}', '{\n  "lldp": {\n\n  }\n}\n', '{"lldp":[{}]}'])
def test_no_neighbors(text: str) -> None:
    assert parse_lldpctl_json(text) == ()


@pytest.mark.parametrize(
    "variant",
    [lambda t: t.replace("\n", "\r\n"), lambda t: t.replace("  ", "\t"), lambda t: "".join(t.split("\n"))],
)
def test_json_whitespace_variants(variant) -> None:  # type: ignore[no-untyped-def]
    for text in JSON_SAMPLES:
        assert parse_lldpctl_json(variant(text)) == parse_lldpctl_json(text)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (ONE_NEIGHBOR[:-40], ONE_NEIGHBOR[:-40].count("\n") + 1),
        ('{"interface": {}}', 1),
        ("[1]", 1),
        ('{"lldp": "none"}', 1),
        ('{"lldp": {"interface": ["eth0"]}}', 1),
        ('{"lldp": {"interface": {"eth0": "LLDP"}}}', 1),
        (ONE_NEIGHBOR.replace('"ttl": "120"', '"ttl": "two minutes"'), 4),
        ('{"lldp": {"interface": {"eth0": {"port": "x"}}}}', 1),
        ("lldpctl: unable to connect to lldpd daemon\n", 1),
    ],
)
def test_json_errors(text: str, line: int) -> None:
    with pytest.raises(ParseError) as ei:
        parse_lldpctl_json(text, source="cmd/lldpctl_-f_json.txt")
    assert ei.value.line == line and ei.value.path == "cmd/lldpctl_-f_json.txt" and ei.value.fix


# --------------------------------------------------------------------------------------- lldptool


def test_pfc_tlv() -> None:
    assert parse_lldptool_pfc(PFC_LOCAL) == LldptoolPfc(
        willing=True, macsec_bypass=False, pfc_cap=8, enabled=(3,)
    )
    assert parse_lldptool_pfc(PFC_NONE).enabled == () and not parse_lldptool_pfc(PFC_NONE).willing


def test_pfc_several_priorities_and_other_tlvs() -> None:
    text = (
        "IEEE 8021QAZ ETS Configuration TLV\n"
        "\t Willing: no\n"
        "\t CBS: not supported\n"
        "\t MAX_TCS: 8\n"
        + PFC_LOCAL.replace("PFC enabled: 3 ", "PFC enabled: 3 4 ")
    )
    pfc = parse_lldptool_pfc(text)
    assert pfc.willing and pfc.enabled == (3, 4)


@pytest.mark.parametrize(
    "variant",
    [
        lambda t: t.replace("\n", "\r\n"),
        lambda t: t.replace("\t ", "    "),
        lambda t: t.split("\n", 1)[1],  # header cut off by the person pasting
        lambda t: t.replace("\t", ""),
    ],
)
def test_pfc_whitespace_variants(variant) -> None:  # type: ignore[no-untyped-def]
    for text in PFC_SAMPLES:
        assert parse_lldptool_pfc(variant(text)) == parse_lldptool_pfc(text)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", 1),
        ("Device not found or inactive\n", 1),
        ("Peer feature not present\n", 1),
        ("FAILED:Agent instance for device not found\n", 1),
        (PFC_LOCAL.replace("Willing: yes", "Willing: maybe"), 2),
        (PFC_LOCAL.replace("PFC enabled: 3 ", "PFC enabled: 9 "), 5),
        (PFC_LOCAL.replace("PFC enabled: 3 ", "PFC enabled: 3 3 "), 5),
        (PFC_LOCAL.replace("classes: 8", "classes: eight"), 4),
        (PFC_LOCAL.split("\t PFC enabled")[0], 4),
        (PFC_LOCAL + PFC_LOCAL, 6),
        (PFC_LOCAL + "\t Willing: yes\n", 6),
    ],
)
def test_pfc_errors(text: str, line: int) -> None:
    with pytest.raises(ParseError) as ei:
        parse_lldptool_pfc(text, source="cmd/lldptool_pfc.txt")
    assert ei.value.line == line and ei.value.path == "cmd/lldptool_pfc.txt" and ei.value.fix


# ------------------------------------------------------------------ lldptool -t -n -i <if> (lldpad neighbour)

# Layout from lldpad's print functions (lldp_mand_clif.c, lldp_basman_clif.c): a header per TLV, TAB-indented
# values, chassis/port ids prefixed by their subtype; org-specific TLVs (802.1, 802.3, DCBX) in between.
TOOL_NEIGHBOR = (
    "Chassis ID TLV\n\tMAC: 1c:34:da:5e:01:02\n"
    "Port ID TLV\n\tIfname: swp12s0\n"
    "Time to Live TLV\n\t120\n"
    "Port Description TLV\n\trail0 downlink 12\n"
    "System Name TLV\n\trail0-leaf01\n"
    "System Description TLV\n\tCumulus Linux version 5.9.1 running on Nvidia SN5600\n"
    "System Capabilities TLV\n\tSystem capabilities:  Bridge, Router\n\tEnabled capabilities: Bridge, Router\n"
    "Management Address TLV\n\tIPv4: 192.168.50.11\n\tIfindex: 2\n"
    "Management Address TLV\n\tIPv6: fd00::11\n\tIfindex: 2\n"
    "MAC/PHY Configuration Status TLV\n\tAuto-negotiation not supported and disabled\n"
    "Maximum Frame Size TLV\n\t9216\n"
    "IEEE 8021QAZ PFC TLV\n\t Willing: no\n\t MACsec Bypass Capable: no\n\t PFC capable traffic classes: 8\n"
    "\t PFC enabled: 3 \n"
    "End of LLDPDU TLV\n"
)
TOOL_LOCAL_IDS = TOOL_NEIGHBOR.replace("MAC: 1c:34:da:5e:01:02", "Local: leaf01").replace("Ifname: swp12s0",
                                                                                          "Local: 12")
TOOL_SAMPLES = [TOOL_NEIGHBOR, TOOL_LOCAL_IDS]


def test_lldptool_neighbor() -> None:
    nb = parse_lldptool_neighbor(TOOL_NEIGHBOR, source="cmd/x.txt", interface="ens1np0")
    assert nb == LldpNeighbor(interface="ens1np0", chassis_name="rail0-leaf01", chassis_id="1c:34:da:5e:01:02",
                              chassis_id_type="mac", port_id="swp12s0", port_id_type="ifname",
                              port_descr="rail0 downlink 12", mgmt_ip="192.168.50.11", ttl=120,
                              mgmt_ips=("192.168.50.11", "fd00::11"), via="LLDP")
    local = parse_lldptool_neighbor(TOOL_LOCAL_IDS)
    assert (local.chassis_id_type, local.chassis_id, local.port_id_type, local.port_id) == ("local", "leaf01",
                                                                                          "local", "12")
    bare = parse_lldptool_neighbor("Chassis ID TLV\n\tMAC: 00:11:22:33:44:55\nPort ID TLV\n\tLocal: 7\n")
    assert bare.chassis_name is None and bare.ttl is None and bare.mgmt_ips == ()


@pytest.mark.parametrize(
    "text,line",
    [
        ("Agent instance for device not found\n", 1),
        ("", 1),
        ("Port ID TLV\n\tIfname: swp1\n", 2),
        ("Chassis ID TLV\n\tMAC: 00:11:22:33:44:55\n", 2),
        ("\tMAC: 00:11:22:33:44:55\n", 1),
        ("Chassis ID TLV\n\tBogus: x\nPort ID TLV\n\tIfname: swp1\n", 2),
        ("Chassis ID TLV\nPort ID TLV\n\tIfname: swp1\n", 1),
        (TOOL_NEIGHBOR.replace("\t120", "\tlong"), 6),
        (TOOL_NEIGHBOR + "Port ID TLV\n\tIfname: swp2\n", 32),
    ],
)
def test_lldptool_neighbor_errors(text: str, line: int) -> None:
    with pytest.raises(ParseError) as ei:
        parse_lldptool_neighbor(text, source="cmd/lldptool_-t_-n_-i_ens1np0.txt")
    assert ei.value.line == line and ei.value.path == "cmd/lldptool_-t_-n_-i_ens1np0.txt" and ei.value.fix
