"""iblinkinfo parser: default and --line forms, states, hints, LID resolution, bad input; the synth writes every
form of one fabric and all of them parse to the same links."""

from __future__ import annotations

import re

import pytest

from conftest import REPO, run_cli
from ncclctl.errors import ParseError
from ncclctl.fabric.synth import FORMS, SynthSpec, as_form, synth
from ncclctl.parsers.iblinkinfo import parse_iblinkinfo
from ncclctl.parsers.ibnetdiscover import parse_ibnetdiscover

SAMPLES = REPO / "fixtures" / "fabric" / "samples"
LEAF1, SPINE, LEAF2 = "9c0591030012ab00", "9c0591030012cd00", "9c0591030012ef00"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def link_set(fabric) -> set[tuple]:
    """Each link once, as (guid, port, guid, port, width, speed) with the smaller end first."""
    out = set()
    for a, pa, b, pb, p in fabric.links():
        ends = sorted([(a, pa), (b, pb)])
        out.add((*ends[0], *ends[1], p.width, p.speed))
    return out


def test_default_form():
    fab = parse_iblinkinfo(sample("iblinkinfo.txt"), source="iblinkinfo.txt")
    assert fab.form == "iblinkinfo"
    leaf = fab.node(LEAF1)
    assert (leaf.kind, leaf.desc, leaf.lid, leaf.nports) == ("switch", "MF0;leaf01:MQM9700/U1", 1, 33)
    by_port = {p.port: p for p in leaf.ports}
    p1 = by_port[1]
    assert (p1.remote_kind, p1.remote_guid, p1.remote_port, p1.remote_lid) == ("ca", "b83fd20300a1b2c3", 1, 22)
    assert (p1.width, p1.speed, p1.rate_gbps, p1.state, p1.phys_state) == ("4x", "NDR", 400, "Active", "LinkUp")
    assert p1.remote_desc == "node005 mlx5_0" and p1.remote_port_guid == "b83fd20300a1b2c3" and p1.line == 2
    # below what both ends support: iblinkinfo's "Could be" hints
    assert (by_port[2].width, by_port[2].max_width, by_port[2].rate_gbps) == ("2x", "4x", 200)
    assert (by_port[5].speed, by_port[5].max_speed, by_port[5].rate_gbps) == ("HDR", "NDR", 200)
    assert by_port[6].state == "Armed" and by_port[6].phys_state == "LinkUp"
    assert by_port[33].remote_kind == "switch" and by_port[33].remote_guid == SPINE and by_port[33].remote_port_guid is None
    # ports without a remote: down (two physical states) and "Port not available"
    assert [(p.port, p.state, p.phys_state, p.remote_guid) for p in leaf.unlinked] == [
        (3, "Down", "Polling", ""), (4, "Down", "Disabled", ""), (7, "Active", "LinkUp", "")]
    spine = fab.node(SPINE)
    assert [p.ext for p in spine.ports] == [1, 1] and spine.unlinked[0].ext == 2
    # the CA's GUID is its first port GUID; a dual-port CA has one LID per port
    ca = fab.node("0002c90300001111")
    assert ca.kind == "ca" and ca.desc == 'node009 "gpu" (rack 2) #3: mlx4_0' and ca.nports == 2 and ca.lid == 40
    assert ca.ports[0].speed == "FDR10" and ca.ports[0].rate_gbps == 40
    assert ca.unlinked[0].port == 2 and ca.unlinked[0].state == "Down"
    assert fab.node(LEAF2).ports[0].remote_desc == 'node009 "gpu" (rack 2) #3: mlx4_0'
    rtr = fab.node("0002c90300ab0001")
    assert rtr.kind == "router" and fab.node(LEAF2).ports[1].remote_kind == "router"
    assert len(fab.links()) == 8
    inactive = [(n.desc, p.port, p.state) for n, p in fab.inactive_ports()]
    assert inactive == [("MF0;leaf01:MQM9700/U1", 3, "Down"), ("MF0;leaf01:MQM9700/U1", 4, "Down"),
                        ("MF0;leaf01:MQM9700/U1", 6, "Armed"), ("MF0;spine01:MQM9790/S01", 3, "Down"),
                        ("node008 mlx5_0", 1, "Armed"), ('node009 "gpu" (rack 2) #3: mlx4_0', 2, "Down")]


def test_line_form_has_the_same_links():
    default = parse_iblinkinfo(sample("iblinkinfo.txt"))
    line = parse_iblinkinfo(sample("iblinkinfo-line.txt"))
    assert line.form == "iblinkinfo-line"
    assert link_set(line) == link_set(default)
    # "%30s" padding is removed; a longer description is kept whole
    assert line.node("b83fd20300a1b2c3").desc == "node005 mlx5_0"
    assert line.node("0002c90300001111").desc == 'node009 "gpu" (rack 2) #3: mlx4_0'
    # no node types in this form: many port lines = switch, else CA (a router cannot be told apart)
    assert {n.guid: n.kind for n in line.nodes if n.kind == "switch"}.keys() == {LEAF1, SPINE, LEAF2}
    assert line.node("0002c90300ab0001").kind == "ca"
    # each port GUID of the dual-port CA is a node of its own here
    assert line.node("0002c90300001112").unlinked[0].state == "Down"
    for n in default.nodes:
        ln = line.node(n.guid)
        assert [(p.port, p.state, p.phys_state, p.max_width, p.max_speed, p.ext) for p in ln.ports] == \
            [(p.port, p.state, p.phys_state, p.max_width, p.max_speed, p.ext) for p in n.ports]


def test_additional_settings_change_nothing():
    assert parse_iblinkinfo(sample("iblinkinfo-additional.txt")) == parse_iblinkinfo(sample("iblinkinfo.txt"))


def test_remotes_named_by_unlisted_lids_stay_unresolved():
    fab = parse_iblinkinfo(sample("iblinkinfo-switches-only.txt"))
    leaf = fab.node(LEAF1)
    to_ca = leaf.ports[0]
    assert (to_ca.remote_guid, to_ca.remote_kind, to_ca.remote_lid, to_ca.remote_desc) == ("", "unknown", 22,
                                                                                           "node005 mlx5_0")
    assert {(p.port, p.remote_guid) for p in leaf.ports if p.remote_kind == "switch"} == {(33, SPINE)}
    assert all(n.kind == "switch" for n in fab.nodes)


def test_lid_zero_without_subnet_manager():
    fab = parse_iblinkinfo(sample("iblinkinfo-nosm.txt"))
    assert all(p.state == "Initialize" and p.remote_guid == "" and p.remote_lid == 0
               for n in fab.nodes for p in n.ports)
    assert len(fab.inactive_ports()) == 4
    assert fab.node("248a070300928186").ports[0].rate_gbps == 100  # 4 x EDR


def test_whitespace_variants_and_line_endings():
    text = sample("iblinkinfo.txt")
    tabs = re.sub(r"(?m)^      ", "\t", text)
    collapsed = re.sub(r"(?m)^ +", "  ", re.sub(r"(?<=\S) {2,}(?=\S)", " ", text))  # as web pages re-flow it
    base = parse_iblinkinfo(text)
    assert parse_iblinkinfo(tabs) == base
    assert link_set(parse_iblinkinfo(collapsed)) == link_set(base)
    assert parse_iblinkinfo(text.replace("\n", "\r\n")) == base
    assert parse_iblinkinfo(text.encode()) == base


def test_duplicate_guids_are_kept_for_the_checks():
    text = sample("iblinkinfo.txt").replace("0x946dae0300112233", "0xb83fd20300a1b2c3")
    fab = parse_iblinkinfo(text)
    assert fab.duplicate_guids() == {"b83fd20300a1b2c3": [18, 20]}  # the lines of the two CA headers
    assert [n.desc for n in fab.nodes if n.guid == "b83fd20300a1b2c3"] == ["node005 mlx5_0", "node006 mlx5_0"]


def test_truncated_at_a_line_keeps_what_was_read():
    text = sample("iblinkinfo.txt")
    cut = text[: text.index("CA: node006")]
    fab = parse_iblinkinfo(cut)
    assert fab.node("b83fd20300a1b2c3") is not None and fab.node("946dae0300112233") is None
    # a CA header without its port line names no GUID: dropped
    assert parse_iblinkinfo(cut + "CA: node006 mlx5_0:\n").nodes == fab.nodes


LINE2 = '           1    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>      22    1[  ] "node005 mlx5_0" ( )'


@pytest.mark.parametrize("text,line,needle", [
    (sample("iblinkinfo.txt").replace("53.125 Gbps", "53.12 Gbps", 1), 6, "unknown link speed '53.12 Gbps'"),
    (sample("iblinkinfo.txt").replace("( 2X", "( 3X", 1), 3, "unknown link width '3X'"),
    (sample("iblinkinfo.txt").replace("Active/", "Running/", 1), 2, "unknown port state 'Running'"),
    (sample("iblinkinfo.txt").replace("Disabled)", "Unplugged)", 1), 5, "unknown physical port state"),
    ("Switch: 0x9c0591030012ab00 leaf:\n" + LINE2.replace("     1    1[", "   0x1    1[") + "\n", 2, "unexpected line"),
    ("Switch: 0x9c0591030012ab00 leaf:\n" + LINE2[:60], 2, "incomplete last line"),
    ("Switch: 0x9c0591030012ab00 leaf:\n" + LINE2.replace('"node005 mlx5_0" ( )', '"node005'), 2,
     "cannot read the remote end"),
    ("Switch: leaf01:\n", 1, "switch header without its GUID"),
    ("ibpanic: [12] main: discover failed\n", 1, "iblinkinfo failed"),
    ("< Switch: 0x9c0591030012ab00 leaf:\n", 1, "--diff"),
    ("Switch: 0x9c0591030012ab00 leaf:\n" + LINE2.replace("==(", "=(") + "\n", 2, "unexpected line"),
    ("Switch: 0x9c0591030012ab00 leaf:\n" + LINE2.replace("Active/  LinkUp", "Active LinkUp") + "\n", 2,
     "no port state"),
    (sample("iblinkinfo.txt").encode()[:40] + b"\xff\n", 1, "not valid UTF-8"),
    ("Switch: 0x9c0591030012ab00 leaf:\n" + '0x1 "' + '" 1 1[ ] ==(' * 20000 + "\n", 2, "240005 characters"),
])
def test_bad_input_names_file_line_and_fix(text, line, needle):
    with pytest.raises(ParseError) as exc:
        parse_iblinkinfo(text, source="links.txt")
    err = exc.value
    assert needle in err.message and err.path == "links.txt" and err.line == line and err.fix, str(err)


def test_undefined_values_the_tool_prints_are_kept_as_unknown():
    text = ("Switch: 0x9c0591030012ab00 leaf:\n"
            '           1    1[  ] ==( 4X      undefined (3) Active/  LinkUp)==>      22    1[  ] "n1 mlx5_0" ( )\n'
            '           1    2[  ] ==(undefined (0)    Extended speed Active/  LinkUp)==>      23    1[  ] "n2 mlx5_0" ( )\n')
    p1, p2 = parse_iblinkinfo(text).nodes[0].ports
    assert (p1.width, p1.speed, p1.rate_gbps) == ("4x", None, None)
    assert (p2.width, p2.speed) == (None, None)


def test_fdr10_hint():
    text = ("Switch: 0x9c0591030012ab00 leaf:\n"
            '           1    1[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>      22    1[  ] "n1 mlx5_0" '
            "( Could be FDR10 (Found link at QDR but expected speed is FDR10))\n")
    p = parse_iblinkinfo(text).nodes[0].ports[0]
    assert (p.speed, p.max_speed, p.remote_desc) == ("QDR", "FDR10", "n1 mlx5_0")


# ------------------------------------------------------------------------------------- synth in every form


@pytest.mark.parametrize("form", [f for f in FORMS if f != "ibnetdiscover"])
def test_every_synth_form_parses_to_the_same_links(form):
    result = synth(SynthSpec(nodes=70, miscable=3, down=3, seed=5))
    truth = parse_ibnetdiscover(result.text)
    text = as_form(result.text, form)
    fab = (parse_iblinkinfo if form.startswith("iblinkinfo") else parse_ibnetdiscover)(text, source=form)
    assert fab.form == form
    assert link_set(fab) == link_set(truth) and len(link_set(truth)) == 70 * 8 - 3 + 3 * 8 * 32
    # the down HCAs are unreachable: absent, and their leaf port is listed without a link
    absent = {n.guid for n in truth.nodes} - {n.guid for n in fab.nodes}
    assert len(absent) == 3 and all(truth.node(g).kind == "ca" and not truth.node(g).ports for g in absent)
    # every leaf port meant for a host (1..32) that has no link in the topology form is listed without one here
    leaves = [n for n in truth.nodes if n.desc.endswith("-leaf:MQM9700/U1")]
    empty = {(n.guid, port) for n in leaves for port in range(1, 33)} - {(n.guid, p.port) for n in leaves
                                                                          for p in n.ports}
    assert len(empty) == 8 * (32 - 6) + 3  # the last group has 6 of 32 hosts; 3 HCA links are down
    assert {(n.guid, p.port) for n in fab.nodes if fab.node(n.guid).desc.endswith("-leaf:MQM9700/U1")
            for p in n.unlinked if p.port <= 32} == empty
    if form != "ibnetdiscover-p":  # iblinkinfo says why: Down/ Polling
        assert {(p.state, p.phys_state) for n in fab.nodes for p in n.unlinked} == {("Down", "Polling")}
    assert as_form(result.text, form) == text  # deterministic


def test_cli_synth_formats(tmp_path):
    outs = {}
    for form in FORMS:
        path = tmp_path / f"{form}.txt"
        r = run_cli("fabric", "synth", "--nodes", "40", "--down", "1", "--format", form, "-o", str(path))
        assert r.returncode == 0, r.stderr
        outs[form] = path.read_bytes()
    assert outs["iblinkinfo"].startswith(b"Switch: 0x") and outs["ibnetdiscover-p"].startswith(b"SW ")
    again = run_cli("fabric", "synth", "--nodes", "40", "--down", "1", "--format", "iblinkinfo-line")
    assert again.returncode == 0 and again.stdout.encode() == outs["iblinkinfo-line"]
    assert run_cli("fabric", "synth", "--nodes", "4", "--format", "ibnetdiscover-x").returncode == 2


def test_lids_wider_than_the_printf_field():
    # "%6d" leaves no space before a 6-digit LID (synthetic fabrics beyond one subnet's 49,151 unicast LIDs)
    text = ("Switch: 0x9c0591030012ab00 leaf:\n"
            '      100001    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>  123456    1[  ] "n1 mlx5_0" ( )\n')
    p = parse_iblinkinfo(text).nodes[0].ports[0]
    assert parse_iblinkinfo(text).nodes[0].lid == 100001 and p.remote_lid == 123456


def test_port_lines_without_headers_are_a_filtered_capture():
    """'iblinkinfo | grep Up' drops the headers: a switch line names its switch by LID only, a CA line its port GUID;
    both are read, the remote descriptions name them, and the result says the capture was filtered (FAB019)."""
    ca = "      0x0002c903000d81f9      4    1[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>       2    3[  ] \"sw-a\" ( )"
    sw = "           2    3[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>       4    1[  ] \"n01 HCA-1\" ( )"
    for text in (f"$ iblinkinfo | grep Up\n{ca}\n{sw}\n", f"CA: n01 HCA-1:\n{sw}\n{ca}\n"):
        fab = parse_iblinkinfo(text)
        nodes = {n.guid: n for n in fab.nodes}
        assert nodes["lid:2"].kind == "switch" and nodes["lid:2"].desc == "sw-a"
        assert nodes["0002c903000d81f9"].kind == "ca" and nodes["0002c903000d81f9"].desc == "n01 HCA-1"
        assert nodes["lid:2"].ports[0].remote_guid == "0002c903000d81f9"
        assert fab.notes and "filtered (grep?)" in fab.notes[0]
    # a clean capture has no notes
    assert not parse_iblinkinfo(sample("iblinkinfo.txt")).notes
