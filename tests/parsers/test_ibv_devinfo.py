"""ibv_devinfo parser: real captures (host-facts.md §4.3) plus -v layout from devinfo.c."""

from __future__ import annotations

import pytest

from ncclctl.errors import ParseError
from ncclctl.parsers.ibv_devinfo import (
    DevinfoGid,
    DevinfoPort,
    parse_ibv_devinfo,
    parse_ibv_devinfo_list,
)

# Real capture, RoCE port down (public issue).
ROCE_DOWN = (
    "hca_id:\trocep1s0f0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tfw_ver:\t\t\t\t28.45.4028\n"
    "\tnode_guid:\t\t\t4cbb:4703:002d:1a16\n"
    "\tsys_image_guid:\t\t\t4cbb:4703:002d:1a16\n"
    "\tvendor_id:\t\t\t0x02c9\n"
    "\tvendor_part_id:\t\t\t4129\n"
    "\thw_ver:\t\t\t\t0x0\n"
    "\tboard_id:\t\t\tNVD0000000087\n"
    "\tphys_port_cnt:\t\t\t1\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_DOWN (1)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t1024 (3)\n"
    "\t\t\tsm_lid:\t\t\t0\n"
    "\t\t\tport_lid:\t\t0\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tEthernet\n"
    "\n"
)

# Real capture, IB port (public issue).
IB_ACTIVE = (
    "hca_id:\tmlx5_0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tfw_ver:\t\t\t\t28.41.1000\n"
    "\tnode_guid:\t\t\t58a2:e103:001a:677e\n"
    "\tsys_image_guid:\t\t\t58a2:e103:001a:677e\n"
    "\tvendor_id:\t\t\t0x02c9\n"
    "\tvendor_part_id:\t\t\t4129\n"
    "\thw_ver:\t\t\t\t0x0\n"
    "\tboard_id:\t\t\tDEL0000000036\n"
    "\tphys_port_cnt:\t\t\t1\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t4096 (5)\n"
    "\t\t\tsm_lid:\t\t\t5790\n"
    "\t\t\tport_lid:\t\t3697\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tInfiniBand\n"
    "\n"
)

# `ibv_devinfo -v` on a RoCE port, laid out exactly as devinfo.c prints it (device caps abridged
# but in print order, with the colon-less flag lines and the blank lines it emits); the GID values
# are the real ones from the Juniper JVD appendix quoted in host-facts.md §4.3.
VERBOSE_ROCE = (
    "hca_id:\tmlx5_0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tfw_ver:\t\t\t\t28.39.1002\n"
    "\tnode_guid:\t\t\ta088:c203:003b:506a\n"
    "\tsys_image_guid:\t\t\ta088:c203:003b:506a\n"
    "\tvendor_id:\t\t\t0x02c9\n"
    "\tvendor_part_id:\t\t\t4129\n"
    "\thw_ver:\t\t\t\t0x0\n"
    "\tboard_id:\t\t\tMT_0000000838\n"
    "\tphys_port_cnt:\t\t\t1\n"
    "\tmax_mr_size:\t\t\t0xffffffffffffffff\n"
    "\tpage_size_cap:\t\t\t0xfffffffffffff000\n"
    "\tmax_qp:\t\t\t\t131072\n"
    "\tmax_qp_wr:\t\t\t32768\n"
    "\tdevice_cap_flags:\t\t0x21361c36\n"
    "\t\t\t\t\tBAD_PKEY_CNTR\n"
    "\t\t\t\t\tBAD_QKEY_CNTR\n"
    "\t\t\t\t\tAUTO_PATH_MIG\n"
    "\t\t\t\t\tSYS_IMAGE_GUID\n"
    "\t\t\t\t\tXRC\n"
    "\t\t\t\t\tUnknown flags: 0xC8400\n"
    "\tmax_sge:\t\t\t30\n"
    "\tatomic_cap:\t\t\tATOMIC_HCA (1)\n"
    "\tlocal_ca_ack_delay:\t\t16\n"
    "\tgeneral_odp_caps:\n"
    "\t\t\t\t\tODP_SUPPORT\n"
    "\t\t\t\t\tODP_SUPPORT_IMPLICIT\n"
    "\trc_odp_caps:\n"
    "\t\t\t\t\tSUPPORT_SEND\n"
    "\tcompletion timestamp_mask:\t\t\t0x7fffffffffffffff\n"
    "\thca_core_clock:\t\t\t156250kHZ\n"
    "\tdevice_cap_flags_ex:\t\t0x3000005021361C36\n"
    "\t\t\t\t\tPCI_WRITE_END_PADDING\n"
    "\ttso_caps:\n"
    "\t\tmax_tso:\t\t\t262144\n"
    "\t\tsupported_qp:\n"
    "\t\t\t\t\tSUPPORT_RAW_PACKET\n"
    "\tmax_wq_type_rq:\t\t\t8388608\n"
    "\ttag matching not supported\n"
    "\n"
    "\tcq moderation caps:\n"
    "\t\tmax_cq_count:\t65535\n"
    "\t\tmax_cq_period:\t4095 us\n"
    "\n"
    "\tmaximum available device memory:\t131072Bytes\n"
    "\n"
    "\tnum_comp_vectors:\t\t63\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t4096 (5)\n"
    "\t\t\tsm_lid:\t\t\t0\n"
    "\t\t\tport_lid:\t\t0\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tEthernet\n"
    "\t\t\tmax_msg_sz:\t\t0x40000000\n"
    "\t\t\tport_cap_flags:\t\t0x04010000\n"
    "\t\t\tport_cap_flags2:\t0x0000\n"
    "\t\t\tmax_vl_num:\t\tinvalid value (0)\n"
    "\t\t\tbad_pkey_cntr:\t\t0x0\n"
    "\t\t\tqkey_viol_cntr:\t\t0x0\n"
    "\t\t\tsm_sl:\t\t\t0\n"
    "\t\t\tpkey_tbl_len:\t\t1\n"
    "\t\t\tgid_tbl_len:\t\t255\n"
    "\t\t\tsubnet_timeout:\t\t0\n"
    "\t\t\tinit_type_reply:\t0\n"
    "\t\t\tactive_width:\t\t4X (2)\n"
    "\t\t\tactive_speed:\t\t100.0 Gbps (128)\n"
    "\t\t\tphys_state:\t\tLINK_UP (5)\n"
    "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:a288:c2ff:fe3b:506a, RoCE v1\n"
    "\t\t\tGID[  1]:\t\tfe80::a288:c2ff:fe3b:506a, RoCE v2\n"
    "\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:0ac8:010a, RoCE v1\n"
    "\t\t\tGID[  3]:\t\t::ffff:10.200.1.10, RoCE v2\n"
    "\n"
)

SAMPLES = [ROCE_DOWN, IB_ACTIVE, VERBOSE_ROCE, ROCE_DOWN + IB_ACTIVE]


def _variants():  # type: ignore[no-untyped-def]
    return [
        lambda t: t.expandtabs(8),
        lambda t: t.replace("\t", " "),
        lambda t: t.replace("\n", "\r\n"),
        lambda t: "\n".join(ln + "   " for ln in t.split("\n")),
        lambda t: "\n".join("    " + ln for ln in t.split("\n")),
        lambda t: t.replace("\n\n", "\n"),
    ]


def test_roce_port_down_capture() -> None:
    (hca,) = parse_ibv_devinfo(ROCE_DOWN)
    assert hca.name == "rocep1s0f0" and hca.transport == "InfiniBand"
    assert hca.fw_ver == "28.45.4028" and hca.board_id == "NVD0000000087"
    assert hca.node_guid == 0x4CBB4703002D1A16 == hca.sys_image_guid
    assert (hca.vendor_id, hca.vendor_part_id, hca.hw_ver, hca.phys_port_cnt) == (0x02C9, 4129, "0x0", 1)
    (port,) = hca.ports
    assert port == DevinfoPort(
        num=1,
        state="PORT_DOWN",
        state_num=1,
        max_mtu=4096,
        max_mtu_enum=5,
        active_mtu=1024,  # a down RoCE port reports 1024 (3)
        active_mtu_enum=3,
        sm_lid=0,
        port_lid=0,
        port_lmc=0,
        link_layer="Ethernet",
    )
    assert port.line == 11


def test_ib_capture_and_two_devices() -> None:
    hcas = parse_ibv_devinfo(ROCE_DOWN + IB_ACTIVE)
    assert [h.name for h in hcas] == ["rocep1s0f0", "mlx5_0"]
    port = hcas[1].ports[0]
    assert (port.state, port.sm_lid, port.port_lid, port.active_mtu) == ("PORT_ACTIVE", 5790, 3697, 4096)
    assert port.link_layer == "InfiniBand" and port.gids == ()
    assert hcas[1].line == 20


@pytest.mark.parametrize("variant", _variants())
def test_whitespace_variants(variant) -> None:  # type: ignore[no-untyped-def]
    for text in (ROCE_DOWN + IB_ACTIVE, VERBOSE_ROCE):
        assert parse_ibv_devinfo(variant(text)) == parse_ibv_devinfo(text)


def test_verbose_fields_and_gids() -> None:
    (hca,) = parse_ibv_devinfo(VERBOSE_ROCE, source="cmd/ibv_devinfo_-v.txt")
    (port,) = hca.ports
    assert port.active_width == "4X" and port.active_width_enum == 2 and port.width_lanes == 4
    assert port.active_speed_gbps == 100.0 and port.active_speed_enum == 128  # per lane
    assert port.phys_state == "LINK_UP" and port.phys_state_num == 5
    assert port.gid_tbl_len == 255 and port.port_cap_flags == 0x04010000
    assert port.effective_speed_gbps is None
    assert port.gids == (
        DevinfoGid(0, "fe80:0000:0000:0000:a288:c2ff:fe3b:506a", "v1"),
        DevinfoGid(1, "fe80::a288:c2ff:fe3b:506a", "v2"),
        DevinfoGid(2, "0000:0000:0000:0000:0000:ffff:0ac8:010a", "v1"),
        DevinfoGid(3, "::ffff:10.200.1.10", "v2"),
    )


def test_effective_speed_and_sparse_gids() -> None:
    text = VERBOSE_ROCE.replace(
        "\t\t\tphys_state:", "\t\t\teffective_speed:\t400.0 Gbps\n\t\t\tphys_state:"
    ).replace("GID[  2]", "GID[ 12]")
    port = parse_ibv_devinfo(text)[0].ports[0]
    assert port.effective_speed_gbps == 400.0
    assert [g.index for g in port.gids] == [0, 1, 12, 3]


def test_invalid_enum_values() -> None:
    text = (
        VERBOSE_ROCE.replace("4X (2)", "invalid widthX (3)")
        .replace("100.0 Gbps (128)", "invalid speed (512)")
        .replace("active_mtu:\t\t4096 (5)", "active_mtu:\t\tinvalid MTU (0)")
        .replace("PORT_ACTIVE (4)", "invalid state (0)")
    )
    port = parse_ibv_devinfo(text)[0].ports[0]
    assert port.active_width is None and port.active_width_enum == 3
    assert port.active_speed_gbps is None and port.active_speed_enum == 512
    assert port.active_mtu is None and port.active_mtu_enum == 0
    assert port.state == "invalid state" and port.state_num == 0


def test_ib_gid_has_no_roce_suffix_and_unknown_link_layer() -> None:
    text = IB_ACTIVE.replace(
        "\t\t\tlink_layer:\t\tInfiniBand\n",
        "\t\t\tlink_layer:\t\tUnknown\n\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:58a2:e103:001a:677e\n",
    )
    port = parse_ibv_devinfo(text)[0].ports[0]
    assert port.link_layer == "Unknown"
    assert port.gids == (DevinfoGid(0, "fe80:0000:0000:0000:58a2:e103:001a:677e", None),)


def test_optional_device_lines_missing() -> None:
    text = ROCE_DOWN.replace("\tfw_ver:\t\t\t\t28.45.4028\n", "").replace(
        "\tboard_id:\t\t\tNVD0000000087\n", ""
    )
    hca = parse_ibv_devinfo(text)[0]
    assert hca.fw_ver is None and hca.board_id is None


def test_unknown_port_key_is_ignored() -> None:
    text = IB_ACTIVE.replace("\t\t\tport_lmc:", "\t\t\tfuture_thing:\t\t7\n\t\t\tport_lmc:")
    assert parse_ibv_devinfo(text) == parse_ibv_devinfo(IB_ACTIVE)


@pytest.mark.parametrize("text", ["", "\n\n", "No IB devices found\n"])
def test_no_devices(text: str) -> None:
    assert parse_ibv_devinfo(text) == ()


def test_port_query_failure_tail() -> None:
    text = IB_ACTIVE.split("\t\tport:")[0] + "Failed to query port 1 props\n"
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo(text, source="cmd/ibv_devinfo_-v.txt")
    assert ei.value.path == "cmd/ibv_devinfo_-v.txt" and ei.value.line == 11


def test_device_not_found() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo("IB device 'mlx5_9' wasn't found\n")
    assert ei.value.line == 1 and "wasn't found" in ei.value.message


def test_truncated_port_block() -> None:
    text = IB_ACTIVE.split("\t\t\tport_lid")[0]
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo(text)
    assert ei.value.line == 15 and "port_lid" in ei.value.message


def test_truncated_device_block() -> None:
    text = IB_ACTIVE.split("\tvendor_id")[0]
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo(text)
    assert ei.value.line == 5


def test_line_before_hca_id() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo(IB_ACTIVE.split("\n", 1)[1])
    assert ei.value.line == 1


def test_non_numeric_lid_and_bad_guid() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo(IB_ACTIVE.replace("3697", "unknown"))
    assert ei.value.line == 16
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo(IB_ACTIVE.replace("58a2:e103:001a:677e\n\tsys", "58a2:e103:001a\n\tsys"))
    assert ei.value.line == 4


def test_bad_enum_syntax() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo(IB_ACTIVE.replace("PORT_ACTIVE (4)", "PORT_ACTIVE"))
    assert ei.value.line == 12


def test_garbage_line_inside_port() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo(IB_ACTIVE.replace("\t\t\tsm_lid:", "\t\t\tsomething odd\n\t\t\tsm_lid:"))
    assert ei.value.line == 15


def test_duplicate_port_field() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo(IB_ACTIVE.replace("\t\t\tsm_lid:\t\t\t5790\n", "\t\t\tsm_lid:\t\t\t5790\n" * 2))
    assert ei.value.line == 16


def test_list_form() -> None:
    assert parse_ibv_devinfo_list("2 HCAs found:\n\tmlx5_0\n\tmlx5_1\n\n") == ("mlx5_0", "mlx5_1")
    assert parse_ibv_devinfo_list("1 HCA found:\n\tmlx5_bond_0\n\n") == ("mlx5_bond_0",)
    assert parse_ibv_devinfo_list("0 HCAs found:\n\n") == ()
    assert parse_ibv_devinfo_list("") == ()


def test_list_form_errors() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo_list("3 HCAs found:\n\tmlx5_0\n\tmlx5_1\n")
    assert ei.value.line == 1 and ei.value.path == "ibv_devinfo -l"
    with pytest.raises(ParseError) as ei:
        parse_ibv_devinfo_list("\tmlx5_0\n")
    assert ei.value.line == 1
