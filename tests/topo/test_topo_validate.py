"""Semantic checks (§2, §4, §7) and version awareness (§6) beyond the one-rule-per-file corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclctl.errors import InputError
from ncclctl.findings import Finding, Severity
from ncclctl.topo.rules import RULES, rule
from ncclctl.topo.graphfile import validate_graph
from ncclctl.topo.validate import validate_bytes, validate_file, validate_topology

REPO = Path(__file__).resolve().parents[2]
VALID = REPO / "fixtures" / "topo" / "valid"

CPU = b'<cpu numaid="0" affinity="0000ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">'


def topo(inner: bytes, cpu: bytes = CPU) -> bytes:
    return b'<system version="1">\n' + cpu + b"\n" + inner + b"\n</cpu>\n</system>\n"


def gpu_pci(busid: bytes = b"0000:18:00.0", gpu: bytes = b"<gpu/>", attrs: bytes = b"") -> bytes:
    return (b'<pci busid="' + busid + b'" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"' + attrs
            + b">\n" + gpu + b"\n</pci>")


def rules(findings: list[Finding], *, loud: bool = True) -> list[str]:
    return sorted(f.rule for f in findings if not loud or f.severity is not Severity.INFO)


def check(data: bytes, **kw) -> list[Finding]:
    return validate_topology(data, path="t.xml", **kw)


def test_minimal_topology_is_clean() -> None:
    assert check(topo(gpu_pci())) == []


def test_findings_carry_location_fix_and_evidence() -> None:
    (f,) = check(topo(gpu_pci(gpu=b'<gpu keep="1"/>')))
    assert (f.rule, f.severity, f.subject, f.line, f.column) == ("NTS022", Severity.ERROR, "t.xml", 4, 1)
    assert f.fix == rule("NTS022").fix and f.evidence == ('<gpu keep="1">',)


def test_after_a_lexical_fatal_the_semantics_are_reported_marked_as_after_it() -> None:
    data = topo(gpu_pci(gpu=b'<gpu keep="1" rank="0"/>')) + b"\ttrailing"
    findings = check(data)
    assert rules(findings) == ["NTS022", "NTS023", "NTX001"]
    fatal = next(f for f in findings if f.rule == "NTX001")
    after = [f for f in findings if f.rule != "NTX001"]
    assert all(f.message.startswith(f"after the fatal NTX001 at line {fatal.line}, in the part NCCL read before it: ")
               for f in after)


# -- pci / cpu completeness: error off the GPU chain, warning on it -----------------------------------


def test_nic_switch_without_link_attrs_is_an_error_but_gpu_switch_only_a_warning() -> None:
    nic_switch = (b'<pci busid="0000:15:00.0" class="0x060400">\n<pci busid="0000:16:00.0" class="0x020700" '
                  b'link_speed="32.0 GT/s PCIe" link_width="16"><nic><net name="mlx5_0"/></nic></pci>\n</pci>')
    gpu_switch = b'<pci busid="0000:35:00.0" class="0x060400">\n' + gpu_pci(b"0000:38:00.0") + b"\n</pci>"
    findings = check(topo(nic_switch + b"\n" + gpu_switch))
    got = [(f.rule, f.line) for f in findings if f.severity is not Severity.INFO]
    assert got == [("NTS007", 3), ("NTS008", 6)]


def test_pci_without_class_on_gpu_chain_is_only_incomplete() -> None:
    data = topo(b'<pci busid="0000:18:00.0" link_speed="32.0 GT/s PCIe" link_width="16"><gpu/></pci>')
    assert rules(check(data)) == ["NTS008"]


def test_cpu_rules_depend_on_what_nccl_fills() -> None:
    nic = (b'<pci busid="0000:19:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">'
           b'<nic><net name="mlx5_0"/></nic></pci>')
    # A CPU reached only through a file NIC: nothing is filled, vendor/familyid/modelid are required.
    assert rules(check(topo(nic, b'<cpu numaid="0" affinity="1" arch="x86_64">'))) == ["NTS010"]
    assert rules(check(topo(nic, b'<cpu numaid="0" affinity="1" arch="x86_64" vendor="GenuineIntel">'))) == ["NTS010"]
    assert rules(check(topo(nic, b'<cpu numaid="0" affinity="1" arch="x86_64" vendor="AuthenticAMD">'))) == ["NTS011"]
    assert rules(check(topo(nic, b'<cpu numaid="0" affinity="1" arch="arm64">'))) == []
    # On a GPU chain NCCL fills them: incomplete-set warning only.
    assert rules(check(topo(gpu_pci(), b'<cpu numaid="0" arch="x86_64">'))) == ["NTS011"]
    assert rules(check(topo(gpu_pci(), b'<cpu numaid="0">'))) == ["NTS011"]
    assert rules(check(topo(gpu_pci(), b'<cpu arch="arm64" affinity="1">'))) == ["NTS009"]
    # An empty CPU is trimmed: nothing to say.
    assert rules(check(b'<system version="1"><cpu numaid="0"/></system>')) == []


def test_zhaoxin_vendor_with_spaces_needs_family() -> None:
    data = topo(b'<pci busid="0000:19:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">'
                b'<nic><net name="mlx5_0"/></nic></pci>',
                b'<cpu numaid="0" affinity="1" arch="x86_64" vendor="  Shanghai  ">')
    (f,) = [f for f in check(data) if f.severity is not Severity.INFO]
    assert f.rule == "NTS010" and "familyid, modelid" in f.message


# -- links ---------------------------------------------------------------------------------------------


def test_symmetric_gpu_nvlinks_are_clean_and_nvswitch_links_need_no_peer() -> None:
    a = gpu_pci(b"0000:18:00.0", b'<gpu><nvlink target="0000:1c:00.0" count="4" tclass="0x030200"/>'
                                 b'<nvlink target="0000:05:00.0" count="2" tclass="0x068000"/></gpu>')
    b = gpu_pci(b"0000:1c:00.0", b'<gpu><nvlink target="0000:18:00.0" count="4" tclass="0x030200"/></gpu>')
    assert check(topo(a + b"\n" + b)) == []


def test_nvlink_gpu_target_matching_is_numeric() -> None:
    a = gpu_pci(b"0000:18:00.0", b'<gpu><nvlink target="00000000:1C:00.0" count="4" tclass="0x030200"/></gpu>')
    b = gpu_pci(b"0000:1c:00.0", b'<gpu><nvlink target="0000:18:00.0" count="4" tclass="0x030200"/></gpu>')
    assert rules(check(topo(a + b"\n" + b))) == []


def test_gpu_tclass_without_target() -> None:
    data = topo(gpu_pci(gpu=b'<gpu><nvlink count="4" tclass="0x030200"/></gpu>'))
    assert rules(check(data)) == ["NTS017"]


def test_pcilink_to_unknown_switch() -> None:
    sw = (b'<pci busid="0000:15:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">\n'
          + gpu_pci() + b'\n<pcilink target="0000:99:00.0"/>\n</pci>')
    (f,) = check(topo(sw))
    assert f.rule == "NTS021" and "names no <pci>" in f.message


# -- attributes and values ----------------------------------------------------------------------------


@pytest.mark.parametrize("speed,expected", [
    (b"32.0 GT/s PCIe", []), (b"64.0 GT/s PCIe", []), (b"2.5 GT/s", []), (b"32 GT/s", []),
    (b"16.0 GT/s", ["NTS030"]), (b"64 GT/s", ["NTS030"]), (b"", ["NTS030"]), (b"32 GT/s PCIe/s", []),
    (b"Unknown", ["NTS030"]),
])
def test_link_speed_strings(speed: bytes, expected: list[str]) -> None:
    data = topo(b'<pci busid="0000:18:00.0" class="0x030200" link_speed="' + speed + b'" link_width="16"><gpu/></pci>')
    assert rules(check(data)) == expected


def test_link_speed_versions() -> None:
    data = topo(b'<pci busid="0000:18:00.0" class="0x030200" link_speed="32 GT/s" link_width="16"><gpu/></pci>')
    assert rules(check(data, nccl_version="2.12.10")) == ["NTV003"]
    assert rules(check(data, nccl_version="2.12.12")) == []


def test_class_0x080100_before_2_28_is_informational() -> None:
    data = topo(b'<pci busid="0000:15:00.0" class="0x080100" link_speed="32.0 GT/s PCIe" link_width="16">'
                + gpu_pci() + b"</pci>")
    assert [f.rule for f in check(data, nccl_version="2.27.7")] == ["NTV009"]
    assert [f.rule for f in check(data)] == []


def test_net_speed_rules_and_override_info() -> None:
    def net(attrs: bytes) -> bytes:
        return topo(b'<pci busid="0000:19:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">'
                    b'<nic><net name="mlx5_0" ' + attrs + b"/></nic></pci>")
    assert rules(check(net(b'speed="400000"'))) == []
    assert rules(check(net(b'speed="400000"')), loud=False) == ["NTS025"]
    assert rules(check(net(b'speed="-1"'))) == ["NTS026"]
    assert rules(check(net(b'speed="fast"'))) == ["NTS026"]
    assert rules(check(net(b'gdr="1"'))) == ["NTS024"]
    assert rules(check(net(b'gdr="0"'))) == []


def test_net_attribute_room_depends_on_version() -> None:
    data = topo(b'<pci busid="0000:19:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">'
                b'<nic><net name="mlx5_0" a="1" b="2" c="3"/></nic></pci>')
    assert rules(check(data)) == ["NTS040"]
    assert rules(check(data, nccl_version="2.29.3")) == []  # gin, rail, plane, rma not added yet


def test_gpu_busid_low_bits_only_from_2_30_7() -> None:
    data = topo(gpu_pci(b"0000:18:00.2"))
    assert rules(check(data)) == ["NTS035"]
    assert rules(check(data, nccl_version="2.30.4")) == []
    assert rules(check(topo(gpu_pci(b"0000:18:00.4")))) == []


def test_gpu_dev_negative_and_override_info() -> None:
    assert rules(check(topo(gpu_pci(gpu=b'<gpu dev="-1"/>')))) == ["NTS027"]
    assert rules(check(topo(gpu_pci(gpu=b'<gpu dev="3" sm="90" gdr="0"/>'))), loud=False) == ["NTS025"]


def test_ib_rule_only_for_ib_devices() -> None:
    def nic(busid: bytes, name: bytes) -> bytes:
        return topo(b'<pci busid="' + busid + b'" class="0x020000" link_speed="32.0 GT/s PCIe" link_width="16">'
                    b'<nic><net name="' + name + b'"/></nic></pci>')
    assert rules(check(nic(b"0000:19:00.1", b"mlx5_1"))) == ["NTS029"]
    assert rules(check(nic(b"0000:19:01.0", b"mlx5_1"))) == ["NTS029"]
    assert rules(check(nic(b"0000:19:00.1", b"eth1"))) == []


def test_host_hash_by_version() -> None:
    cpu = CPU.replace(b">", b' host_hash="0xabc">')
    assert rules(check(topo(gpu_pci(), cpu), nccl_version="2.26.6")) == ["NTV007"]
    assert rules(check(topo(gpu_pci(), cpu))) == []


def test_nccl_2_6_dictionary_misses_are_fatal() -> None:
    data = topo(gpu_pci(), b'<cpu numaid="0" affinity="1" arch="aarch64">')
    old = check(data, nccl_version="2.6.4")  # the arch and "32.0 GT/s PCIe" are both unknown to 2.6
    assert rules(old) == ["NTV008", "NTV008"] and "arch" in old[0].message
    assert rules(check(data)) == ["NTS012"]


# -- graphs ----------------------------------------------------------------------------------------------

GRAPH = (b'<graph id="{id}" pattern="{pattern}" crossnic="0" nchannels="{n}" speedintra="40" speedinter="40" '
         b'latencyinter="0" typeintra="NVL" typeinter="PIX" samechannels="0">')


def graph(channels: list[bytes], gid: int = 0, pattern: int = 4, nch: int | None = None) -> bytes:
    head = GRAPH.replace(b"{id}", b"%d" % gid).replace(b"{pattern}", b"%d" % pattern)
    head = head.replace(b"{n}", b"%d" % (len(channels) if nch is None else nch))
    body = b"".join(b"<channel>" + c + b"</channel>\n" for c in channels)
    return b'<graphs version="1">\n' + head + b"\n" + body + b"</graph>\n</graphs>\n"


def gcheck(data: bytes, **kw) -> list[Finding]:
    return validate_graph(data, path="g.xml", **kw)


def test_minimal_graph_is_clean() -> None:
    assert gcheck(graph([b'<gpu dev="0"/><gpu dev="1"/>'])) == []


def test_nvls_channels_need_only_one_gpu() -> None:
    ch = [b'<gpu dev="0"/>', b'<gpu dev="1"/><gpu dev="0"/>']
    assert gcheck(graph(ch, gid=3, pattern=5)) == []
    assert rules(gcheck(graph(ch))) == ["NTG008"]


def test_placeholder_graph_and_crossnic_1_are_informational() -> None:
    assert [f.rule for f in gcheck(graph([], nch=0))] == ["NTG016"]
    data = graph([b'<gpu dev="0"/>']).replace(b'crossnic="0"', b'crossnic="1"')
    assert [f.rule for f in gcheck(data)] == ["NTG020"]


def test_any_graph_over_64_channels() -> None:
    data = graph([b'<gpu dev="0"/>'] * 65, gid=2, pattern=3)
    assert rules(gcheck(data)) == ["NTG007"]


def test_dev_forms() -> None:
    assert gcheck(graph([b'<gpu dev="0x0"/><gpu dev="0xa"/><gpu dev="9"/>'])) == []
    (f,) = gcheck(graph([b'<gpu dev="0"/><gpu dev="a"/>']))
    assert f.rule == "NTG011" and "0 for NCCL 2.20" in f.message


def test_typeintra_prefix_match_and_versions() -> None:
    assert gcheck(graph([b'<gpu dev="0"/>']).replace(b'typeintra="NVL"', b'typeintra="NVLS"')) == []
    data = graph([b'<gpu dev="0"/>']).replace(b'typeinter="PIX"', b'typeinter="PXN"')
    assert rules(gcheck(data, nccl_version="2.11.4")) == ["NTV002", "NTV004"]  # + latencyinter
    assert gcheck(data, nccl_version="2.12.7") == []


def test_gpu_rank_before_2_30_3_is_noted() -> None:
    (f,) = gcheck(graph([b'<gpu dev="0" rank="0"/>']), nccl_version="2.29.7")
    assert f.rule == "NTG012" and "ignores rank" in f.message


def test_topology_element_in_graph_file() -> None:
    data = graph([b'<gpu dev="0"/><nvlink/>'])
    assert rules(gcheck(data)) == ["NTG021"]


# -- entry points -----------------------------------------------------------------------------------------


def test_validate_file_sniffs_kind(tmp_path: Path) -> None:
    g = tmp_path / "whatever.xml"
    g.write_bytes(graph([b'<gpu dev="0"/>'], nch=2))
    assert rules(validate_file(g)) == ["NTG006"]
    empty = tmp_path / "my-graph.xml"
    empty.write_bytes(b"")
    assert rules(validate_file(empty)) == ["NTG001"]
    empty_topo = tmp_path / "topo.xml"
    empty_topo.write_bytes(b"")
    assert rules(validate_file(empty_topo)) == ["NTS001"]
    assert rules(validate_file(empty_topo, kind="graph")) == ["NTG001"]


def test_validate_file_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        validate_file(tmp_path / "missing.xml")
    with pytest.raises(InputError):
        validate_bytes(b"", path="x", kind="other")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        validate_topology(b"", path="x", nccl_version="latest")


def test_validate_file_with_xsd(tmp_path: Path) -> None:
    f = tmp_path / "t.xml"
    f.write_bytes(topo(b'<pci busid="0000:18:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16" '
                       b'speed="1"><gpu/></pci>'))
    assert rules(validate_file(f)) == []
    assert rules(validate_file(f, xsd=True)) == ["NTX090"]


def test_rule_table_is_consistent() -> None:
    for r in RULES.values():
        assert r.id[:3] in ("NTX", "NTS", "NTG", "NTV", "NTH") and len(r.id) == 6
        assert r.title and r.fix and isinstance(r.severity, Severity)
    with pytest.raises(ValueError):
        rule("NTX999")


def test_reference_examples_in_old_versions_only_warn_about_version_features() -> None:
    topo_data = (VALID / "nccl-example-topo.xml").read_bytes()
    assert rules(check(topo_data, nccl_version="2.10.3")) == ["NTV003"] * 20
    assert rules(check(topo_data, nccl_version="2.21.5")) == []
    graph_data = (VALID / "nccl-example-graph.xml").read_bytes()
    assert rules(gcheck(graph_data, nccl_version="2.8.4")) == ["NTV002", "NTV002"]


def test_extra_top_level_element_before_the_root() -> None:
    data = b'<topology/>\n' + topo(gpu_pci())
    (f,) = check(data)
    assert (f.rule, f.line) == ("NTS002", 1) and "<system> at line 2" in f.message


def test_gpu_class_mismatch_alone_is_not_a_switch() -> None:
    # The class of a GPU's own <pci> is refreshed from sysfs; only <pci> children make it a switch.
    data = topo(b'<pci busid="0000:18:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16"><gpu/></pci>')
    assert rules(check(data)) == []
