"""NCCL's byte-level XML reader, reimplemented: tree shape, §1.1 lexical rules, §1.3 limits, versions."""

from __future__ import annotations

import pytest

from ncclctl.errors import InputError
from ncclctl.findings import Severity
from ncclctl.nccl.params import strtol
from ncclctl.nccl.version import parse as parse_version
from ncclctl.nccl.xml import (
    XmlNode,
    max_nodes,
    max_subs,
    parse_nccl_xml,
    read_nccl_xml,
    sniff_kind,
)


def parse(data: bytes, **kw):
    return parse_nccl_xml(data, **kw)


def fatal(data: bytes, **kw):
    res = parse(data, **kw)
    assert res.fatal is not None, "expected NCCL to fail"
    return res.fatal


# -- the tree ------------------------------------------------------------------------------------------


def test_tree_attrs_in_file_order_verbatim_values_and_positions() -> None:
    data = (b'<!-- c -->\n<system version="1" name="a&amp;b">\n'
            b'  <cpu numaid="0" arch="x86_64">\n    <nic>\n      <net name="mlx5_0"/>\n    </nic>\n  </cpu>\n'
            b'</system>\n')
    res = parse(data)
    assert res.ok and res.node_count == 4
    system = res.root
    assert isinstance(system, XmlNode)
    assert system.attrs == (("version", "1"), ("name", "a&amp;b"))  # entities are not decoded
    assert (system.line, system.column, system.closed_by_selfclose) == (2, 1, False)
    cpu = system.children[0]
    assert cpu.attrs == (("numaid", "0"), ("arch", "x86_64")) and cpu.parent is system
    net = cpu.children[0].children[0]
    assert (net.name, net.line, net.column, net.closed_by_selfclose) == ("net", 5, 7, True)
    assert [n.name for n in system.iter()] == ["system", "cpu", "nic", "net"]
    assert [a.name for a in net.ancestors()] == ["nic", "cpu", "system"]


def test_values_may_hold_gt_slash_equals_lt_and_ampersand() -> None:
    res = parse(b'<system version="1" name="a>b/c=d<e&f"/>')
    assert res.ok and res.root.get("name") == "a>b/c=d<e&f"


def test_crlf_is_fine_and_lines_count_lf() -> None:
    res = parse(b'<system version="1">\r\n  <cpu numaid="0"/>\r\n</system>\r\n')
    assert res.ok and res.root.children[0].line == 2


def test_get_returns_first_of_duplicate_attributes() -> None:
    res = parse(b'<system version="1" a="1" a="2"/>')
    assert res.root.get("a") == "1"
    assert [d.rule for d in res.diagnostics] == ["NTX023"]


def test_comments_anywhere_between_elements() -> None:
    data = b'<!---->\n<!--a-->\n<system version="1"><!-- x --><cpu numaid="0"/><!--\n-->\n</system><!-- end -->'
    assert parse(data).ok


def test_comment_containing_equals_in_first_word_is_fatal() -> None:
    f = fatal(b"<!--a=b -->\n")
    assert f.rule == "NTX013" and "Unexpected value with name !--a" in f.message


def test_deep_nesting_uses_no_recursion() -> None:
    depth = 250  # under MAX_XML_DEPTH (256); deeper input is refused (tests/safety/test_xml_safety.py)
    data = b'<system version="1">' + b"<x>" * depth + b"</x>" * depth + b"</system>"
    res = parse(data)
    assert res.ok and res.ignored[0].name == "x"
    with pytest.raises(InputError, match="nested more than 256 levels"):
        parse(b'<system version="1">' + b"<x>" * 20000 + b"</x>" * 20000 + b"</system>")


def test_inside_an_ignored_element_any_closing_tag_closes_it() -> None:
    # NCCL reads the children of an ignored element into the ignored element's own slot, so the name
    # comparison in xmlLoadSub always succeeds.
    res = parse(b'<system version="1"><foo></bar><cpu numaid="0"/></system>')
    assert res.ok and [c.name for c in res.root.children] == ["cpu"]


# -- §1.1 fatal constructs, with NCCL's wording ---------------------------------------------------------


@pytest.mark.parametrize("data,rule,line,col,wording", [
    (b'<system version="1">\n\t<cpu numaid="0"/>\n</system>', "NTX001", 2, 1, "expecting '<', got '\\t'"),
    (b'<system version="1">\n<cpu numaid="0"\n arch="x86_64"/>\n</system>', "NTX002", 2, 16,
     "expected >, got '\\n'"),
    (b'<system\nversion="1"/>', "NTX002", 1, 8, "expected >, got '\\n'"),
    (b'<?xml version="1.0"?>\n<system version="1"/>', "NTX003", 1, 1, "expected >, got '?'"),
    (b'<?xml version="1.0" ?>\n<system version="1"/>', "NTX003", 1, 1, "unterminated"),
    (b'\xef\xbb\xbf<system version="1"/>', "NTX004", 1, 1, "expecting '<', got '\\xef'"),
    (b'<system version="1"/>\nx', "NTX005", 2, 1, "expecting '<', got 'x'"),
    (b'<system version=1/>', "NTX006", 1, 17, "Expected (double) quote."),
    (b'<system version="1/>', "NTX007", 1, 17, "Unexpected EOF"),
    (b'<system version="1" /  >', "NTX008", 1, 22, "expected >, got ' '"),
    (b'<system version="1">\n</system >', "NTX009", 2, 9, "unexpected trailing ' ' in closing tag system"),
    (b'<system version="1">\n<cpu numaid="0">\n</pci>\n</system>', "NTX010", 3, 1, "XML Mismatch : cpu / pci"),
    (b'<system version="1">\n<cpu numaid="0">\n', "NTX011", 2, 1, "unterminated cpu"),
    (b'<system version="1"/>\n<!-- x', "NTX012", 2, 1, "unterminated comment"),
    (b'<system\tversion="1"/>', "NTX013", 1, 16, "Unexpected value with name system\\tversion"),
    (b'<system version="1"name="x"/>', "NTX014", 1, 20, "expected >, got 'n'"),
    (b'<system version="1"/>\n</system>', "NTX020", 2, 1, "Attribute version of node system not found"),
    (b'<system version="3"/>', "NTS003", 1, 1, "XML Topology has wrong version 3, 1 needed"),
    (b'<system name="x"/>', "NTS003", 1, 1, "Attribute version of node system not found"),
])
def test_fatal_constructs(data: bytes, rule: str, line: int, col: int, wording: str) -> None:
    f = fatal(data)
    assert (f.rule, f.line, f.column) == (rule, line, col)
    assert wording in f.message and f.severity is Severity.ERROR and f.fatal


def test_general_xml_oddities_that_nccl_accepts() -> None:
    res = parse(b'<system  version="1" flag >\n<cpu numaid="0"></cpu>\n</system>')
    assert res.ok
    assert res.root.attrs == (("", ""), ("version", "1"), ("flag", ""), ("", ""))
    assert {d.rule for d in res.diagnostics} == {"NTX021", "NTX022"}


def test_self_closing_forms() -> None:
    assert parse(b'<system version="1"><cpu/></system>').root.children[0].closed_by_selfclose
    assert parse(b'<system version="1"><cpu numaid="0"/></system>').ok
    assert fatal(b'<system version="1"><cpu/ ></system>').rule == "NTX008"


def test_single_quotes_from_2_27() -> None:
    res = parse(b"<system version='1'/>")
    assert res.ok and res.root.get("version") == "1"
    assert [d.rule for d in res.diagnostics] == ["NTV010"]
    # Before 2.27 a '-opened value runs to the next double quote.
    old = parse(b"<system version='1\" name=\"x\"/>", nccl_version=(2, 26, 6))
    assert old.ok and old.root.attrs == (("version", "1"), ("name", "x"))
    assert [d.rule for d in old.diagnostics] == ["NTV005"]
    # A value opened with one quote and closed with the other runs to EOF.
    assert fatal(b"<system version='1\"/>").rule == "NTX007"


def test_nul_bytes_truncate_like_c_strings() -> None:
    res = parse(b'<system version="1" name="ab\x00cd"/>')
    assert res.root.get("name") == "ab"
    assert [d.rule for d in res.diagnostics] == ["NTX025"]


# -- §1.3 limits --------------------------------------------------------------------------------------


def test_value_length_limit_253_and_254() -> None:
    assert parse(b'<system version="1" name="' + b"v" * 253 + b'"/>').ok
    f = fatal(b'<system version="1" name="' + b"v" * 254 + b'"/>')
    assert f.rule == "NTX015" and "too long (max 255)" in f.message


def test_value_length_before_2_27_is_reported_but_not_fatal() -> None:
    res = parse(b'<system version="1" name="' + b"v" * 400 + b'"/>', nccl_version="2.26.6")
    assert res.ok and [d.rule for d in res.diagnostics] == ["NTX015"]
    assert res.diagnostics[0].severity is Severity.ERROR and "undefined behaviour" in res.diagnostics[0].message


def test_name_length_limit() -> None:
    assert parse(b'<system version="1"><' + b"n" * 253 + b'/></system>').ok
    f = fatal(b'<system version="1"><' + b"n" * 254 + b'/></system>')
    assert f.rule == "NTX016" and (f.line, f.column) == (1, 22)
    # NCCL 2.6-2.7: MAX_STR_LEN 256, so 254 characters still fit.
    assert parse(b'<system version="1"><' + b"n" * 254 + b'/></system>', nccl_version="2.7.8").ok


def test_attribute_cap_drops_17th_and_later() -> None:
    attrs = b" ".join(b'a%d="%d"' % (i, i) for i in range(1, 20))
    res = parse(b"<system version=\"1\" " + attrs + b"/>")
    assert res.ok and len(res.root.attrs) == 16
    assert [k for k, _ in res.root.dropped_attrs] == ["a16", "a17", "a18", "a19"]
    assert [d.rule for d in res.diagnostics] == ["NTX017"]
    assert "Ignoring extra attributes (max 16)" in (res.diagnostics[0].nccl_message or "")


def _nvlinks(n: int) -> bytes:
    return (b'<system version="1"><cpu numaid="0"><pci busid="0000:18:00.0"><gpu>'
            + b'<nvlink count="1"/>' * n + b"</gpu></pci></cpu></system>")


@pytest.mark.parametrize("version,cap", [((2, 29, 7), 640), ((2, 30, 7), 640), ((2, 29, 3), 128), ((2, 21, 5), 128)])
def test_children_cap_per_version(version, cap) -> None:
    assert max_subs(version) == cap
    data = (b'<graphs version="1"><graph>' + b"<channel/>" * cap + b"</graph></graphs>")
    assert parse(data, kind="graph", nccl_version=version).ok
    data = (b'<graphs version="1"><graph>' + b"<channel/>" * (cap + 1) + b"</graph></graphs>")
    f = fatal(data, kind="graph", nccl_version=version)
    assert f.rule == "NTX018" and f"limited to {cap} subnodes" in f.message


def test_children_overflow_before_2_21_is_unchecked_but_reported() -> None:
    res = parse(_nvlinks(40), nccl_version=(2, 20, 5))
    assert res.ok and [d.rule for d in res.diagnostics] == ["NTX018"]
    assert len(res.root.children[0].children[0].children[0].children) == 40


def test_topology_element_cap_255_usable() -> None:
    # system + cpu + pci + gpu + n nvlinks: 255 elements parse, 256 do not (the slot test also runs before
    # the closing tags and the end of file).
    assert parse(_nvlinks(251)).ok
    f = fatal(_nvlinks(252))
    assert f.rule == "NTX019" and "limited to 256 nodes" in f.message


def test_comments_and_ignored_elements_use_no_slot() -> None:
    data = _nvlinks(251).replace(b"<gpu>", b"<gpu>" + b"<!-- c --><foo/><bar><baz/></bar>" * 50)
    res = parse(data)
    assert res.ok and res.node_count == 255


def test_element_caps_per_version() -> None:
    assert max_nodes("topology", (2, 30, 7)) == 256
    assert max_nodes("topology", (2, 20, 5)) == 1024
    assert max_nodes("graph", (2, 20, 5)) == 1024
    assert max_nodes("graph", (2, 29, 3)) == 4096
    assert max_nodes("graph", (2, 29, 7)) == 65536
    assert parse(_nvlinks(500), nccl_version=(2, 20, 5)).diagnostics  # 32-children UB report, but no cap


def test_graph_element_cap_4096_in_2_21() -> None:
    graph = (b'<graph id="0"><channel>' + b'<gpu dev="0"/>' * 100 + b"</channel></graph>")
    data = b'<graphs version="1">' + graph * 41 + b"</graphs>"  # 1 + 41 * 102 = 4183 elements
    f = fatal(data, kind="graph", nccl_version=(2, 21, 5))
    assert f.rule == "NTX019" and "limited to 4096 nodes" in f.message
    assert parse(data, kind="graph").ok


# -- which elements NCCL ignores ----------------------------------------------------------------------


def test_ignored_elements_are_recorded_not_fatal() -> None:
    data = (b'<system version="1">\n<cpu numaid="0">\n<gpu/>\n<nvs/>\n<pci busid="0000:18:00.0">\n'
            b'<gpu><nvlink count="1"><x/></nvlink><c2c bw="1" count="1"/></gpu>\n</pci>\n</cpu>\n</system>\n'
            b'<graphs version="1"/>\n')
    res = parse(data, nccl_version=(2, 18, 6))
    assert res.ok
    got = [(i.name, i.parent_name, i.reason, i.line) for i in res.ignored]
    assert got == [("gpu", "cpu", "misplaced", 3), ("nvs", "cpu", "unknown", 4), ("x", "nvlink", "leaf-child", 6),
                   ("c2c", "gpu", "version", 6), ("graphs", None, "wrong-root", 10)]
    assert [r.name for r in res.roots] == ["system"]


def test_wrong_root_gives_zero_nodes() -> None:
    res = parse(b'<topology version="1"><cpu numaid="0"/></topology>')
    assert res.ok and res.roots == [] and res.node_count == 0


def test_pcilink_is_read_from_2_22() -> None:
    data = b'<system version="1"><cpu numaid="0"><pci busid="0000:15:00.0"><pcilink target="x"/></pci></cpu></system>'
    assert parse(data).root.children[0].children[0].children[0].name == "pcilink"
    assert parse(data, nccl_version="2.21.5").ignored[0].reason == "version"


# -- API ----------------------------------------------------------------------------------------------


def test_sniff_kind() -> None:
    assert sniff_kind(b'<!-- x -->\n<system version="1"/>') == "topology"
    assert sniff_kind(b'<graphs version="1"/>') == "graph"
    assert sniff_kind(b'<graph id="0"/>') == "graph"  # a graph file without its <graphs> root
    assert sniff_kind(b"<foo/>") is None
    assert sniff_kind(b"\t<system/>") is None


def test_input_errors() -> None:
    with pytest.raises(InputError):
        parse_nccl_xml("<system/>")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        parse_nccl_xml(b"", kind="nope")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        parse_version("two.thirty")
    with pytest.raises(InputError):
        read_nccl_xml("/nonexistent/topo.xml")
    assert parse_version("2.30") == (2, 30, 0) and parse_version("v2.21.5-1") == (2, 21, 5)


def c_strtol(text: str, base: int = 0) -> tuple[int, bool]:
    """The reader's use of strtol: (value, whether the whole string was one number)."""
    r = strtol(text, base)
    return r.value, r.whole


@pytest.mark.parametrize("text,base,expected", [
    ("16", 0, (16, True)), ("0x10", 0, (16, True)), ("010", 0, (8, True)), (" -1", 0, (-1, True)),
    ("10", 16, (16, True)), ("0xa", 16, (10, True)), ("12abc", 0, (12, False)), ("abc", 0, (0, False)),
    ("", 0, (0, False)), ("0x", 0, (0, False)),
])
def test_c_strtol(text: str, base: int, expected: tuple[int, bool]) -> None:
    assert c_strtol(text, base) == expected


def test_graph_element_cap_65536_from_2_29_7() -> None:
    graph = (b'<graph id="0"><channel>' + b'<gpu dev="0x1"/>' * 600 + b"</channel></graph>\n")
    data = b'<graphs version="1">\n' + graph * 110 + b"</graphs>\n"  # 1 + 110 * 602 elements
    f = fatal(data, kind="graph")
    assert f.rule == "NTX019" and "limited to 65536 nodes" in f.message
    assert parse(b'<graphs version="1">\n' + graph * 108 + b"</graphs>\n", kind="graph").ok  # 65017 elements


def test_stray_closing_tags_at_top_level() -> None:
    # Named like a root: NCCL runs the root handler on an element without attributes.
    f = fatal(b'<system version="1"/>\n</system>\n')
    assert f.rule == "NTX020" and "Attribute version of node system not found" in f.message
    # Other names: an ignored element that the next closing tag (any name) closes, else EOF.
    f = fatal(b'<system version="1"/>\n</cpu>\n')
    assert (f.rule, f.line) == ("NTX020", 2)
    res = parse(b'<system version="1"/>\n</cpu>\n</anything>\n')
    assert res.ok and [d.rule for d in res.diagnostics] == ["NTX020"]
