"""ibdev2netdev parser: real captures from public issues/READMEs and the script's echo formats."""

from __future__ import annotations

import pytest

from ncclctl.errors import ParseError
from ncclctl.parsers.ibdev2netdev import Ibdev2NetdevEntry, parse_ibdev2netdev

# host-facts.md §2.3 and a public issue capture.
SHORT = "mlx5_0 port 1 ==> ens1f0np0 (Up)\nrocep1s0f1 port 1 ==> enp1s0f1np1 (Up)\n"

# Real `ibdev2netdev -v` captures (public READMEs): ConnectX-6 VPI, ConnectX-5 with a VF whose VPD
# is unreadable ("(MT4120 - NA)", empty description, "%-6s"-padded "(DOWN  )").
VERBOSE = (
    "0000:01:00.0 mlx5_0 (MT4123 - MCX653105A-HDAT) ConnectX-6 VPI adapter card, HDR IB (200Gb/s) "
    "and 200GbE, single-port QSFP56 fw 20.28.1002 port 1 (ACTIVE) ==> p5p1 (Up)\n"
    "0000:02:00.0 mlx5_0 (MT4119 - MCX555A-ECAT) CX555A - ConnectX-5 QSFP28 fw 16.26.4012 port 1 "
    "(ACTIVE) ==> ib0 (Up)\n"
    "0000:02:00.1 mlx5_2 (MT4120 - NA) fw 16.26.4012 port 1 (DOWN  ) ==> ib2 (Down)\n"
)

# Very old OFED (the script's print_line): no state.
OLD = "mlx4_0 port 1 <===> eth2\nmlx4_0 port 2 <===> eth3\n"

SAMPLES = [SHORT, VERBOSE, OLD, SHORT + VERBOSE]


def test_short_form() -> None:
    entries = parse_ibdev2netdev(SHORT)
    assert entries == (
        Ibdev2NetdevEntry("mlx5_0", 1, "ens1f0np0", "Up"),
        Ibdev2NetdevEntry("rocep1s0f1", 1, "enp1s0f1np1", "Up"),
    )
    assert [e.line for e in entries] == [1, 2]


def test_verbose_form() -> None:
    a, b, c = parse_ibdev2netdev(VERBOSE)
    assert a.pci_bdf == "0000:01:00.0" and a.ibdev == "mlx5_0" and a.hca_type == "MT4123"
    assert a.part_number == "MCX653105A-HDAT" and a.fw_ver == "20.28.1002"
    # the description itself contains parentheses
    assert a.description == (
        "ConnectX-6 VPI adapter card, HDR IB (200Gb/s) and 200GbE, single-port QSFP56"
    )
    assert (a.port, a.port_state, a.netdev, a.state) == (1, "ACTIVE", "p5p1", "Up")
    assert b.description == "CX555A - ConnectX-5 QSFP28" and b.netdev == "ib0"
    assert c.part_number == "NA" and c.description is None
    assert (c.port_state, c.state) == ("DOWN", "Down")


def test_verbose_padding_and_missing_pci() -> None:
    # part number padded to 11, description to 15, IB state to 6; find_pdev found nothing.
    line = (
        " mlx5_3 (MT4117 - MCX4121A   ) CX4121A        fw 14.32.1010 port 1 (INIT  ) "
        "==> enp1s0f1np1 (NA)\n"
    )
    (e,) = parse_ibdev2netdev(line)
    assert e.pci_bdf is None and e.part_number == "MCX4121A" and e.description == "CX4121A"
    assert (e.port_state, e.state) == ("INIT", "NA")


def test_empty_state_and_old_form() -> None:
    (e,) = parse_ibdev2netdev("mlx5_4 port 1 ==> ens5 ()\n")
    assert e.state == ""
    old = parse_ibdev2netdev(OLD)
    assert [(e.ibdev, e.port, e.netdev, e.state) for e in old] == [
        ("mlx4_0", 1, "eth2", None),
        ("mlx4_0", 2, "eth3", None),
    ]


@pytest.mark.parametrize(
    "variant",
    [
        lambda t: t.replace("\n", "\r\n"),
        lambda t: "\n".join(ln + " \t" for ln in t.split("\n")),
        lambda t: "\n".join("    " + ln for ln in t.split("\n")),
        lambda t: t.replace("\n", "\n\n"),
    ],
)
def test_whitespace_variants(variant) -> None:  # type: ignore[no-untyped-def]
    for text in SAMPLES:
        assert parse_ibdev2netdev(variant(text)) == parse_ibdev2netdev(text)


@pytest.mark.parametrize("text", ["", "  \n"])
def test_empty(text: str) -> None:
    assert parse_ibdev2netdev(text) == ()


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("mlx5_0 port one ==> ens1f0np0 (Up)\n", 1),
        (SHORT + "mlx5_1 port 1 ==> \n", 3),
        (SHORT + "bash: ibdev2netdev: command not found\n", 3),
        ("mlx5_0 port 1 ==> ens1f0np0 (Up\n", 1),
    ],
)
def test_errors(text: str, line: int) -> None:
    with pytest.raises(ParseError) as ei:
        parse_ibdev2netdev(text, source="cmd/ibdev2netdev.txt")
    assert ei.value.line == line and ei.value.path == "cmd/ibdev2netdev.txt" and ei.value.fix
