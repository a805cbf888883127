"""ibnetdiscover parser: topology-file and -p forms, TAB/space layouts, both ends of a link, bad input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ncclctl.errors import ParseError
from ncclctl.parsers.ibnetdiscover import parse_ibnetdiscover

# Layout as the tool prints it (TABs between fields), per infiniband-diags' ibnetdiscover.c formats.
TOPO = (
    "#\n# Topology file: generated on Fri Nov 20 10:00:00 2026\n#\n"
    "# Initiated from node b83fd20300a1b2c3 port b83fd20300a1b2c3\n\n"
    "vendid=0x2c9\ndevid=0xd2f2\nsysimgguid=0x9c0591030012ab00\n"
    "switchguid=0x9c0591030012ab00(9c0591030012ab00)\n"
    'Switch\t129 "S-9c0591030012ab00"\t\t# "MF0;leaf01:MQM9700/U1" enhanced port 0 lid 1 lmc 0\n'
    '[1]\t"H-b83fd20300a1b2c3"[1](b83fd20300a1b2c3) \t\t# "node005 mlx5_0" lid 22 4xNDR\n'
    '[2]\t"H-946dae0300112233"[1](946dae0300112233) \t\t# "node004 mlx5_0" lid 27 2xNDR\n'
    '[65]\t"S-9c0591030012cd00"[3]\t\t# "MF0;spine01:MQM9700/U1" lid 2 4xNDR\n'
    "\n"
    "vendid=0x2c9\ndevid=0x1021\nsysimgguid=0xb83fd20300a1b2c3\ncaguid=0xb83fd20300a1b2c3\n"
    'Ca\t1 "H-b83fd20300a1b2c3"\t\t# "node005 mlx5_0"\n'
    '[1](b83fd20300a1b2c3) \t"S-9c0591030012ab00"[1]\t\t# lid 22 lmc 0 "MF0;leaf01:MQM9700/U1" lid 1 4xNDR\n'
)

PORTS = (
    "CA    22  1 0xb83fd20300a1b2c3 4x NDR - SW     1  1 0x9c0591030012ab00 ( 'node005 mlx5_0' - 'MF0;leaf01:MQM9700/U1' )\n"
    "SW     1  1 0x9c0591030012ab00 4x NDR - CA    22  1 0xb83fd20300a1b2c3 ( 'MF0;leaf01:MQM9700/U1' - 'node005 mlx5_0' )\n"
    "SW     1 40 0x9c0591030012ab00 4x NDR\n"
)


def test_topology_form():
    fab = parse_ibnetdiscover(TOPO)
    sw = fab.node("9c0591030012ab00")
    assert sw.kind == "switch" and sw.nports == 129 and sw.lid == 1 and sw.desc == "MF0;leaf01:MQM9700/U1"
    assert sw.devid == "0xd2f2" and sw.sysimgguid == "9c0591030012ab00"
    p1, p2, p65 = sw.ports
    assert (p1.port, p1.remote_kind, p1.remote_guid, p1.remote_port) == (1, "ca", "b83fd20300a1b2c3", 1)
    assert p1.remote_desc == "node005 mlx5_0" and p1.remote_lid == 22 and p1.rate_gbps == 400
    assert p2.width == "2x" and p2.rate_gbps == 200
    assert p65.remote_kind == "switch" and p65.remote_port == 3
    ca = fab.node("b83fd20300a1b2c3")
    assert ca.kind == "ca" and ca.desc == "node005 mlx5_0" and ca.ports[0].remote_guid == "9c0591030012ab00"
    # The CA-switch link appears from both ends but once in links().
    links = fab.links()
    assert len(links) == 3
    assert ca.ports[0].line > sw.line


def test_spaces_instead_of_tabs_and_crlf():
    spaced = TOPO.replace("\t", "    ").replace("\n", "\r\n")
    assert parse_ibnetdiscover(spaced) == parse_ibnetdiscover(TOPO)


def test_ports_form():
    fab = parse_ibnetdiscover(PORTS)
    ca = fab.node("b83fd20300a1b2c3")
    assert ca.kind == "ca" and ca.lid == 22 and ca.ports[0].remote_guid == "9c0591030012ab00"
    sw = fab.node("9c0591030012ab00")
    assert sw.nports == 40 and len(sw.ports) == 1 and sw.ports[0].rate_gbps == 400


@pytest.mark.parametrize("text,line,needle", [
    ('[1]\t"H-b83fd20300a1b2c3"[1](b83fd20300a1b2c3)\t# "x" lid 1 4xNDR\n', 1, "outside a node block"),
    (TOPO.replace("4xNDR\n", "4xFAST\n", 1), 11, "unknown link speed"),
    (TOPO + "garbage here\n", 21, "unexpected line"),
    (TOPO.replace('[2]\t"H-946dae', '[2]\t"Q-946dae'), 12, "malformed switch link"),
    ("ibpanic: [1234] main: discover failed\n", 1, "ibnetdiscover failed"),
])
def test_bad_input_names_the_line(text, line, needle):
    with pytest.raises(ParseError) as exc:
        parse_ibnetdiscover(text, source="fabric.txt")
    assert needle in exc.value.message and exc.value.line == line and exc.value.path == "fabric.txt" and exc.value.fix


def test_truncated_mid_block_keeps_what_was_read():
    cut = TOPO[: TOPO.index("[2]")]
    fab = parse_ibnetdiscover(cut)
    assert len(fab.node("9c0591030012ab00").ports) == 1


def test_empty_and_bytes():
    assert parse_ibnetdiscover("").nodes == ()
    assert parse_ibnetdiscover(TOPO.encode()) == parse_ibnetdiscover(TOPO)
    with pytest.raises(ParseError):
        parse_ibnetdiscover(b"vendid=0x2c9\n\xff\xfe\n")


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fuzz_only_results_or_parse_errors(data):
    base = data.draw(st.sampled_from([TOPO, PORTS]))
    cut = data.draw(st.integers(0, len(base)))
    junk = data.draw(st.text(max_size=30))
    pos = data.draw(st.integers(0, len(base)))
    text = base[:pos] + junk + base[pos:cut] if pos < cut else base[:cut] + junk
    try:
        parse_ibnetdiscover(text)
    except ParseError as exc:
        assert exc.path and exc.fix
