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


# ---------------------------------------------------------------------------------------------------------------
# Later additions: the -p form's unconnected ports, line numbering, the fast path, the model's helpers.

import dataclasses  # noqa: E402
import gc  # noqa: E402

from ncclctl.fabric.synth import SynthSpec, synth  # noqa: E402
from ncclctl.parsers import ibnetdiscover as ibnd  # noqa: E402
from ncclctl.parsers.ibnetdiscover import FabricNode, FabricPort  # noqa: E402


def test_ports_form_unconnected_ports_as_the_tool_prints_them():
    # dump_ports_report: a port without a remote ends with "%36s'%s'" (the local description); a down port's
    # width/speed print as "??"/"???" when PortInfo holds no valid value
    text = PORTS + "SW     1 39 0x9c0591030012ab00 4x SDR" + " " * 36 + "'MF0;leaf01:MQM9700/U1'\n" \
        + "CA     0  2 0x0002c90300001112 ?? ???" + " " * 36 + "'node009 mlx4_0'\n"
    fab = parse_ibnetdiscover(text)
    sw = fab.node("9c0591030012ab00")
    assert [(p.port, p.remote_guid, p.width, p.speed) for p in sw.unlinked] == [(40, "", "4x", "NDR"), (39, "", "4x", "SDR")]
    ca = fab.node("0002c90300001112")
    assert ca.desc == "node009 mlx4_0" and ca.ports == () and (ca.unlinked[0].width, ca.unlinked[0].speed) == (None, None)
    assert fab.form == "ibnetdiscover-p" and parse_ibnetdiscover(TOPO).form == "ibnetdiscover"


def test_lines_are_counted_as_editors_count_them():
    # LF, CRLF and a lone CR end a line; \u2028 or \x0b inside a description do not
    odd = TOPO.replace('"node004 mlx5_0"', '"node004\u2028mlx5\x0b0"')
    assert parse_ibnetdiscover(odd).node("9c0591030012ab00").ports[1].remote_desc == "node004\u2028mlx5\x0b0"
    bad = odd + "garbage\n"
    with pytest.raises(ParseError) as exc:
        parse_ibnetdiscover(bad.replace("\n", "\r"))
    assert exc.value.line == 21
    assert parse_ibnetdiscover("\ufeff" + TOPO) == parse_ibnetdiscover(TOPO)  # a BOM is dropped


def test_gc_state_is_restored():
    assert gc.isenabled()
    parse_ibnetdiscover(TOPO)
    assert gc.isenabled()
    with pytest.raises(ParseError):
        parse_ibnetdiscover(TOPO + "garbage\n")
    assert gc.isenabled()
    gc.disable()
    try:
        parse_ibnetdiscover(TOPO)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_fast_constructors_build_what_the_dataclasses_build():
    kw = dict(port=3, remote_kind="ca", remote_guid="b83fd20300a1b2c3", remote_port=1, remote_port_guid="b83f",
              remote_desc="d", remote_lid=22, width="4x", speed="NDR", ext=2, line=9, state="Active",
              phys_state="LinkUp", max_width="4x", max_speed="NDR")
    fast, slow = ibnd._mk_port(*kw.values()), FabricPort(**kw)
    assert fast == slow and vars(fast) == vars(slow) and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    nkw = dict(kind="switch", guid="9c0591030012ab00", nports=65, desc="leaf", lid=1, vendid="0x2c9", devid="0xd2f2",
               sysimgguid="9c0591030012ab00", ports=(slow,), line=4, unlinked=(slow,))
    assert ibnd._mk_node(*nkw.values()) == FabricNode(**nkw) and vars(ibnd._mk_node(*nkw.values())) == nkw
    # the topology parser leaves the iblinkinfo-only fields to the class defaults: same values
    p = parse_ibnetdiscover(TOPO).nodes[0].ports[0]
    assert (p.state, p.phys_state, p.max_width, p.max_speed) == (None, None, None, None)
    assert dataclasses.replace(p) == p and dataclasses.asdict(p)["state"] is None


def test_duplicate_guid_blocks_are_kept():
    ca_block = TOPO[TOPO.index("vendid=0x2c9\ndevid=0x1021"):]
    fab = parse_ibnetdiscover(TOPO + "\n" + ca_block)
    assert fab.duplicate_guids() == {"b83fd20300a1b2c3": [19, 26]}  # the two "Ca" lines
    assert fab.inactive_ports() == []


def _deep(outcome):
    """Everything a parse produced, line fields included (they do not take part in ==)."""
    if isinstance(outcome, ParseError):
        return ("error", outcome.message, outcome.line)
    return dataclasses.astuple(outcome)


_SYNTH = synth(SynthSpec(nodes=3, rails=2, group=2, spines_per_rail=1, miscable=1, down=1, seed=2)).text


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_fast_path_and_general_path_agree(data):
    """The strict raw-line patterns are a shortcut: on any input, the result (or the error) is the one the general
    patterns give on the cleaned-up line."""
    base = data.draw(st.sampled_from([TOPO, _SYNTH, TOPO.replace("\t", "    ")]))
    lines = base.split("\n")
    busy = [i for i, s in enumerate(lines) if s[:1] in ("[", "S", "C")]  # link and node lines: the fast paths
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.sampled_from(busy)) if data.draw(st.integers(0, 3)) else data.draw(
            st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["tab", "tab", "space", "quote", "junk", "cut", "ext", "case"]))
        s = lines[i]
        quotes = [k for k, ch in enumerate(s) if ch == '"']
        if quotes and data.draw(st.integers(0, 3)):  # mostly inside a quoted name or description
            k = data.draw(st.sampled_from(quotes))
            j = data.draw(st.integers(k + 1, min(len(s), k + 12)))
        else:
            j = data.draw(st.integers(0, len(s)))
        if op == "tab":
            s = s[:j] + "\t" + s[j:]
        elif op == "space":
            s = s[:j] + " " + s[j:]
        elif op == "quote":
            s = s[:j] + '"' + s[j:]
        elif op == "junk":
            s = s[:j] + data.draw(st.text(alphabet=' \t"#[]()x0123456789abcdefSHR-', max_size=6)) + s[j:]
        elif op == "cut":
            s = s[:j]
        elif op == "ext":
            s = s.replace("]", "][ext 3]", 1)
        else:
            s = s.upper()
        lines[i] = s
    text = "\n".join(lines)
    outcomes = []
    for fast in (True, False):
        try:
            ibnd._USE_FAST_PATH = fast
            outcomes.append(_deep(parse_ibnetdiscover(text)))
        except ParseError as exc:
            outcomes.append(_deep(exc))
        finally:
            ibnd._USE_FAST_PATH = True
    assert outcomes[0] == outcomes[1]


def test_overlong_lines_are_refused_quickly():
    # the general patterns' lazy groups would take quadratic time on a megabyte-long line
    for text in ("SW 1 1 0x1 4x NDR - SW 1 1 0x1 ( '" + "' - '" * 100000 + "x\n",
                 TOPO + '[3] "H-1"[1] # "' + '" lid 1 4x' * 100000 + "\n"):
        with pytest.raises(ParseError) as exc:
            parse_ibnetdiscover(text, source="big.txt")
        assert "characters" in exc.value.message and exc.value.line in (1, 21)


def test_ca_to_ca_link_names_the_remote_port_guid():
    # out_ca_port: a remote that is not a switch gets " (%x) " after its port (back-to-back HCAs, routers)
    text = ("caguid=0xb83fd20300a1b2c3\nCa\t1 \"H-b83fd20300a1b2c3\"\t\t# \"node005 mlx5_0\"\n"
            "[1](b83fd20300a1b2c3) \t\"H-0002c90300001111\"[1] (2c90300001111) \t\t# lid 22 lmc 0 \"node009 mlx4_0\" "
            "lid 40 4xFDR\n")
    p = parse_ibnetdiscover(text).nodes[0].ports[0]
    assert (p.remote_kind, p.remote_guid, p.remote_port_guid, p.remote_lid, p.rate_gbps) == (
        "ca", "0002c90300001111", "0002c90300001111", 40, 56)
