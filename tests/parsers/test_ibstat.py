"""ibstat parser: real captures (host-facts.md §4.1 and public repos) plus the usual paste traps."""

from __future__ import annotations

import pytest

from ncclctl.errors import ParseError
from ncclctl.parsers.ibstat import IbstatCa, IbstatPort, parse_ibstat

# Real capture, RoCE port (leptonai/gpud infiniband test fixture), TABs as ibstat prints them.
GPUD_ROCE = (
    "CA 'mlx5_0'\n"
    "\tCA type: MT4129\n"
    "\tNumber of ports: 1\n"
    "\tFirmware version: 28.39.1002\n"
    "\tHardware version: 0\n"
    "\tNode GUID: 0xa088c20300e3142a\n"
    "\tSystem image GUID: 0xa088c20300e3142a\n"
    "\tPort 1:\n"
    "\t\tState: Active\n"
    "\t\tPhysical state: LinkUp\n"
    "\t\tRate: 400\n"
    "\t\tBase lid: 0\n"
    "\t\tLMC: 0\n"
    "\t\tSM lid: 0\n"
    "\t\tCapability mask: 0x00010000\n"
    "\t\tPort GUID: 0xa288c2fffee3142a\n"
    "\t\tLink layer: Ethernet\n"
)

# Real capture excerpt (public repo): ConnectX-8 port down. The original used 8-space indents.
CX8_DOWN = (
    "CA 'mlx5_10'\n"
    "\tCA type: MT4131\n"
    "\tNumber of ports: 1\n"
    "\tFirmware version: 40.46.5500\n"
    "\tHardware version: 0\n"
    "\tNode GUID: 0x7425540300353e4d\n"
    "\tSystem image GUID: 0x7425540300353e4d\n"
    "\tPort 1:\n"
    "\t\tState: Down\n"
    "\t\tPhysical state: Disabled\n"
    "\t\tRate: 10\n"
    "\t\tBase lid: 65535\n"
    "\t\tLMC: 0\n"
    "\t\tSM lid: 0\n"
    "\t\tCapability mask: 0xa750e848\n"
    "\t\tPort GUID: 0x7425540300353e4d\n"
    "\t\tLink layer: InfiniBand\n"
)

# The same capture's second CA as quoted in host-facts.md: its CA lines were elided with "...".
CX7_ELIDED = (
    "CA 'mlx5_2'\n"
    "\tCA type: MT4129\n"
    "\t...\n"
    "\tPort 1:\n"
    "\t\tState: Active\n"
    "\t\tPhysical state: LinkUp\n"
    "\t\tRate: 100\n"
    "\t\tBase lid: 1\n"
    "\t\tLMC: 0\n"
    "\t\tSM lid: 1\n"
    "\t\tCapability mask: 0xa750e84a\n"
    "\t\tPort GUID: 0x7425540300353de9\n"
    "\t\tLink layer: InfiniBand\n"
)

# Real capture (public write-up): ConnectX-3 FDR, hardware version 1.
MLX4_FDR = (
    "CA 'mlx4_0'\n"
    "\tCA type: MT4099\n"
    "\tNumber of ports: 1\n"
    "\tFirmware version: 2.42.5000\n"
    "\tHardware version: 1\n"
    "\tNode GUID: 0x98039b0300dccab0\n"
    "\tSystem image GUID: 0x98039b0300dccab3\n"
    "\tPort 1:\n"
    "\t\tState: Active\n"
    "\t\tPhysical state: LinkUp\n"
    "\t\tRate: 56\n"
    "\t\tBase lid: 1\n"
    "\t\tLMC: 0\n"
    "\t\tSM lid: 1\n"
    "\t\tCapability mask: 0x0251486a\n"
    "\t\tPort GUID: 0x98039b0300dccab1\n"
    "\t\tLink layer: InfiniBand\n"
)

# `ibstat mlx5_2 1`: ibstat.c prints "CA: '<name>'" and the port block with no indentation
# (port_dump(alone=1)); the port values are the SM-host port of the capture above.
SINGLE_PORT = (
    "CA: 'mlx5_2'\n"
    "Port 1:\n"
    "State: Active\n"
    "Physical state: LinkUp\n"
    "Rate: 100\n"
    "Base lid: 1\n"
    "LMC: 0\n"
    "SM lid: 1\n"
    "Capability mask: 0xa750e84a\n"
    "Port GUID: 0x7425540300353de9\n"
    "Link layer: InfiniBand\n"
)

SAMPLES = [GPUD_ROCE, CX8_DOWN, MLX4_FDR, SINGLE_PORT, CX8_DOWN + MLX4_FDR + GPUD_ROCE]


def _spaces(text: str) -> str:
    return text.expandtabs(8)


def _eight_spaces(text: str) -> str:
    return text.replace("\t", "        ")


def _crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def _trailing(text: str) -> str:
    return "\n".join(line + "  \t " for line in text.split("\n"))


def _indented(text: str) -> str:
    return "\n".join("    " + line for line in text.split("\n"))


def test_gpud_roce_capture() -> None:
    (ca,) = parse_ibstat(GPUD_ROCE)
    assert ca == IbstatCa(
        name="mlx5_0",
        node_type="CA",
        ca_type="MT4129",
        num_ports=1,
        fw_ver="28.39.1002",
        hw_ver="0",
        node_guid=0xA088C20300E3142A,
        sys_image_guid=0xA088C20300E3142A,
        ports=(
            IbstatPort(
                num=1,
                state="Active",
                phys_state="LinkUp",
                rate=400.0,
                fdr10=False,
                effective_speed=None,
                base_lid=0,
                lmc=0,
                sm_lid=0,
                cap_mask=0x00010000,
                port_guid=0xA288C2FFFEE3142A,
                link_layer="Ethernet",
                rate_raw="400",
            ),
        ),
    )
    assert ca.line == 1 and ca.ports[0].line == 8
    assert not ca.ports[0].is_sm


def test_several_cas_without_blank_lines() -> None:
    cas = parse_ibstat(CX8_DOWN + MLX4_FDR + GPUD_ROCE)
    assert [c.name for c in cas] == ["mlx5_10", "mlx4_0", "mlx5_0"]
    down = cas[0].ports[0]
    assert (down.state, down.phys_state, down.rate, down.base_lid) == ("Down", "Disabled", 10.0, 65535)
    assert cas[1].hw_ver == "1" and cas[1].ports[0].rate == 56.0
    assert cas[1].node_guid != cas[1].sys_image_guid
    assert cas[2].line == CX8_DOWN.count("\n") + MLX4_FDR.count("\n") + 1


@pytest.mark.parametrize("variant", [_spaces, _eight_spaces, _crlf, _trailing, _indented])
def test_whitespace_variants_parse_identically(variant) -> None:  # type: ignore[no-untyped-def]
    text = CX8_DOWN + MLX4_FDR + GPUD_ROCE
    assert parse_ibstat(variant(text)) == parse_ibstat(text)


def test_blank_lines_between_blocks_are_fine() -> None:
    text = "\n\n" + CX8_DOWN + "\n\n" + GPUD_ROCE + "\n\n"
    assert [c.name for c in parse_ibstat(text)] == ["mlx5_10", "mlx5_0"]


def test_single_port_form() -> None:
    (ca,) = parse_ibstat(SINGLE_PORT)
    assert ca.single_port and ca.node_type == "CA" and ca.name == "mlx5_2"
    assert ca.ca_type is None and ca.node_guid is None and ca.num_ports is None
    (port,) = ca.ports
    assert port.sm_lid == 1 and port.base_lid == 1
    assert port.cap_mask == 0xA750E84A and port.is_sm  # bit 1 set: this port runs the SM


def test_single_port_form_with_tab_indent() -> None:
    text = "CA: 'mlx5_2'\n" + "".join("\t" + ln + "\n" for ln in SINGLE_PORT.splitlines()[1:])
    assert parse_ibstat(text) == parse_ibstat(SINGLE_PORT)


def test_fdr10_and_sdr_rates() -> None:
    fdr10 = CX8_DOWN.replace("Rate: 10\n", "Rate: 40 (FDR10)\n")
    port = parse_ibstat(fdr10)[0].ports[0]
    assert port.rate == 40.0 and port.fdr10 and port.rate_raw == "40 (FDR10)"
    sdr = CX8_DOWN.replace("Rate: 10\n", "Rate: 2.5\n")
    assert parse_ibstat(sdr)[0].ports[0].rate == 2.5


def test_effective_speed_line() -> None:
    text = GPUD_ROCE.replace("\t\tRate: 400\n", "\t\tRate: 400\n\t\tEffective speed: 425\n")
    assert parse_ibstat(text)[0].ports[0].effective_speed == 425.0


def test_switch_lists_port_zero() -> None:
    text = (
        "Switch 'switch0'\n"
        "\tSwitch type: MT54000\n"
        "\tNumber of ports: 1\n"
        "\tFirmware version: 31.2012.2100\n"
        "\tHardware version: 0\n"
        "\tNode GUID: 0xfc6a1c0300a1b2c0\n"
        "\tSystem image GUID: 0xfc6a1c0300a1b2c0\n"
        + "\tPort 0:\n"
        + GPUD_ROCE.split("\tPort 1:\n")[1]
        + "\tPort 1:\n"
        + GPUD_ROCE.split("\tPort 1:\n")[1]
    )
    (sw,) = parse_ibstat(text)
    assert sw.node_type == "Switch" and sw.ca_type == "MT54000"
    assert [p.num for p in sw.ports] == [0, 1]


def test_unknown_values_and_extra_keys_are_kept_or_ignored() -> None:
    text = (
        GPUD_ROCE.replace("State: Active", "State: ???")
        .replace("Link layer: Ethernet", "Link layer: Unknown")
        .replace("\t\tLMC: 0\n", "\t\tLMC: 0\n\t\tSome future field: 42\n")
    )
    port = parse_ibstat(text)[0].ports[0]
    assert port.state == "???" and port.link_layer == "Unknown"


def test_missing_link_layer_is_none() -> None:
    text = GPUD_ROCE.replace("\t\tLink layer: Ethernet\n", "")
    assert parse_ibstat(text)[0].ports[0].link_layer is None


def test_ca_headers_only_like_ibstat_s() -> None:
    text = GPUD_ROCE.split("\tPort 1:")[0]
    (ca,) = parse_ibstat(text)
    assert ca.ports == () and ca.num_ports == 1


@pytest.mark.parametrize("text", ["", "   \n\t\n", "\r\n"])
def test_empty_output_means_no_hcas(text: str) -> None:
    assert parse_ibstat(text) == ()


def test_ibwarn_lines_are_skipped() -> None:
    text = "ibwarn: [4242] main: stat of IB device 'mlx5_3' failed\n" + GPUD_ROCE
    assert parse_ibstat(text) == parse_ibstat(GPUD_ROCE)


def test_ibpanic_tail_keeps_the_good_cas() -> None:
    """ibstat prints the CAs it can stat, then 'ibpanic' for the first it cannot, and exits 255: the CAs before it
    are good (they used to be rejected with the whole output)."""
    panic = "ibpanic: [4242] main: 'mlx5_9' IB device can't be found: No such file or directory"
    good = parse_ibstat(GPUD_ROCE, source="cmd/ibstat.txt")
    cas = parse_ibstat(GPUD_ROCE + panic + "\n", source="cmd/ibstat.txt")
    assert tuple(cas) == tuple(good) and len(cas) >= 1
    assert cas.failure == (panic, 18) and good.failure is None


def test_ibpanic_inside_a_ca_drops_only_that_ca() -> None:
    # a second CA whose block stops after its header fields (no port block yet), then the error
    partial = GPUD_ROCE.replace("CA 'mlx5_0'", "CA 'mlx5_1'", 1).split("\tPort 1:")[0]
    cas = parse_ibstat(GPUD_ROCE + partial + "iberror: [1] main: stat of IB device 'mlx5_1' failed\n")
    assert [c.name for c in cas] == [c.name for c in parse_ibstat(GPUD_ROCE)]
    assert cas.failure is not None and cas.failure[0].startswith("iberror:")


def test_ibpanic_before_any_ca_is_an_error() -> None:
    text = "ibpanic: [4242] main: 'mlx5_9' IB device can't be found: No such file or directory\n" + GPUD_ROCE
    with pytest.raises(ParseError) as ei:
        parse_ibstat(text, source="cmd/ibstat.txt")
    err = ei.value
    assert err.path == "cmd/ibstat.txt" and err.line == 1
    assert "ibpanic" in err.message and err.fix


def test_elided_capture_is_rejected_at_the_ellipsis() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibstat(CX7_ELIDED)
    assert ei.value.line == 3 and ei.value.path == "ibstat"


def test_truncated_port_block() -> None:
    text = GPUD_ROCE.split("\t\tBase lid")[0]  # cut after "Rate: 400"
    with pytest.raises(ParseError) as ei:
        parse_ibstat(text)
    assert ei.value.line == 11 and "Base lid" in ei.value.message


def test_truncated_ca_block() -> None:
    text = "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n"
    with pytest.raises(ParseError) as ei:
        parse_ibstat(text)
    assert ei.value.line == 3 and "Firmware version" in ei.value.message


def test_port_line_before_any_ca_header() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibstat(GPUD_ROCE.split("\n", 1)[1])
    assert ei.value.line == 1 and ei.value.fix


def test_non_numeric_lid() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibstat(GPUD_ROCE.replace("Base lid: 0", "Base lid: abc"))
    assert ei.value.line == 12 and "Base lid" in ei.value.message


def test_sysfs_hex_lid_vs_ibstat_decimal() -> None:
    # ibstat prints decimal LIDs; sysfs (and ibstatus) print 0x-prefixed hex. An explicit 0x is
    # unambiguous and accepted, bare hex digits are not guessed.
    assert parse_ibstat(MLX4_FDR.replace("Base lid: 1", "Base lid: 0x6c"))[0].ports[0].base_lid == 108
    assert parse_ibstat(MLX4_FDR.replace("Base lid: 1", "Base lid: 108"))[0].ports[0].base_lid == 108
    with pytest.raises(ParseError) as ei:
        parse_ibstat(MLX4_FDR.replace("Base lid: 1", "Base lid: 6c"))
    assert ei.value.line == 12


def test_sysfs_rate_spelling_is_rejected_with_a_hint() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibstat(GPUD_ROCE.replace("Rate: 400", "Rate: 400 Gb/sec (4X NDR)"))
    assert ei.value.line == 11 and "ibstatus" in ei.value.message


def test_bad_guid_and_cap_mask() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibstat(GPUD_ROCE.replace("Node GUID: 0xa088c20300e3142a", "Node GUID: a088c2zz"))
    assert ei.value.line == 6
    with pytest.raises(ParseError) as ei:
        parse_ibstat(GPUD_ROCE.replace("Capability mask: 0x00010000", "Capability mask: 65536"))
    assert ei.value.line == 15


def test_duplicate_field_and_port() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibstat(GPUD_ROCE.replace("\t\tLMC: 0\n", "\t\tLMC: 0\n\t\tLMC: 0\n"))
    assert ei.value.line == 14
    dup_port = GPUD_ROCE + "\tPort 1:\n" + GPUD_ROCE.split("\tPort 1:\n")[1]
    with pytest.raises(ParseError) as ei:
        parse_ibstat(dup_port)
    assert ei.value.line == 18


def test_ca_field_after_port_block() -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibstat(GPUD_ROCE + "\tFirmware version: 1.2.3\n")
    assert ei.value.line == 18


def test_bytes_input_and_bad_utf8() -> None:
    assert parse_ibstat(GPUD_ROCE.encode()) == parse_ibstat(GPUD_ROCE)  # type: ignore[arg-type]
    with pytest.raises(ParseError) as ei:
        parse_ibstat(GPUD_ROCE.encode() + b"\tCA type: \xff\xfe\n")  # type: ignore[arg-type]
    assert ei.value.line == 18


def test_non_text_input() -> None:
    with pytest.raises(ParseError):
        parse_ibstat(42)  # type: ignore[arg-type]
