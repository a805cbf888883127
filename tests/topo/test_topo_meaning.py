"""Checks of what a topology file means (issue 15): CPU sets, links that cap the machine, NVLinks that point
nowhere useful, the XML node budget, findings after a fatal error, version-scoped severities, skeleton files.

The failing case of every warning and error rule is its file in fixtures/topo/invalid/ (tests/topo/
test_topo_corpus.py); the passing cases are here, with the hostile inputs of each class.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import HOSTS, REPO, run_cli

from ncclctl.findings import Finding, Severity
from ncclctl.nccl.cpuset import cpu_ranges, kernel_cpumap, misreadings, nccl_cpuset
from ncclctl.nccl.version import Version
from ncclctl.topo.validate import AFTER_FATAL, validate_bytes, validate_topology

INVALID = REPO / "fixtures" / "topo" / "invalid"
VALID = REPO / "fixtures" / "topo" / "valid"
CPU_ATTRS = b'arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143"'


def check(data: bytes, version: str = "2.30.7") -> list[Finding]:
    return validate_topology(data, path="t.xml", nccl_version=version)


def fired(findings: list[Finding]) -> set[str]:
    return {f.rule for f in findings}


def cpu(numa: str, affinity: str | None, inner: bytes = b"") -> bytes:
    aff = b"" if affinity is None else b' affinity="' + affinity.encode() + b'"'
    return b'  <cpu numaid="' + numa.encode() + b'"' + aff + b" " + CPU_ATTRS + b">\n" + inner + b"  </cpu>\n"


def gpu(busid: str, inner: bytes = b"<gpu/>", speed: str = "32.0 GT/s PCIe", width: str = "16") -> bytes:
    return (f'    <pci busid="{busid}" class="0x030200" link_speed="{speed}" link_width="{width}">\n'.encode()
            + b"      " + inner + b"\n    </pci>\n")


def system(*cpus: bytes) -> bytes:
    return b'<system version="1">\n' + b"".join(cpus) + b"</system>\n"


# --------------------------------------------------------------------------------------------------
# Passing cases, one per new rule


@pytest.mark.parametrize("rule_id,name,version", [
    ("NTS043", "meaning-affinity-topo.xml", "2.30.7"),
    ("NTS044", "meaning-affinity-topo.xml", "2.30.7"),
    ("NTS045", "meaning-affinity-topo.xml", "2.30.7"),
    ("NTS046", "meaning-affinity-topo.xml", "2.30.7"),
    ("NTS047", "meaning-links-topo.xml", "2.30.7"),
    ("NTS048", "nccl-example-topo.xml", "2.30.7"),
    ("NTS049", "meaning-nvlink-pairs-topo.xml", "2.30.7"),
    ("NTS050", "meaning-nvlink-pairs-topo.xml", "2.30.7"),
    ("NTS053", "nccl-example-topo.xml", "2.30.7"),
    ("NTV012", "meaning-affinity-topo.xml", "2.27.7"),
])
def test_passing_case_does_not_fire(rule_id: str, name: str, version: str) -> None:
    findings = validate_bytes((VALID / name).read_bytes(), path=name, nccl_version=version)
    assert rule_id not in fired(findings), [(f.rule, f.message) for f in findings]


@pytest.mark.parametrize("rule_id,name", [("NTS048", "meaning-links-topo.xml"),
                                          ("NTS053", "meaning-skeleton-topo.xml")])
def test_info_rules_fire_on_their_case(rule_id: str, name: str) -> None:
    findings = validate_bytes((VALID / name).read_bytes(), path=name)
    assert [f.severity for f in findings if f.rule == rule_id] == [Severity.INFO]


# --------------------------------------------------------------------------------------------------
# CPU sets: NCCL's reader (include/cpuset.h) against hostile masks

NEW, OLD = Version(2, 30, 7), Version(2, 27, 7)
HOSTILE_MASKS = [
    # mask, CPUs NCCL 2.28+ binds to, CPUs NCCL < 2.28 binds to, reported on 2.30.7, reported on 2.27.7
    ("0000ffff,ffffffff", "0-47", "0-47", False, False),
    ("ff,,00", "32-39", "64-71", True, True),               # empty word: strtok skips it; the old loop counts it
    ("0-47", "none", "none", True, True),                   # a cpulist, not a cpumap
    ("0-47,96-143", "1-2,4,7", "none", True, True),         # strtoul reads 0x0 and 0x96
    ("0,1,2,3", "0-1,33,64", "0-1,33,64", True, True),      # CPU numbers, read as four 32-bit words
    ("ffffffffff,0", "32-63", "32-63", True, True),         # 10 hex digits: the low 32 bits stay
    ("FFFF", "0-15", "none", False, True),                  # upper case: the old loop stops
    (" ff", "0-7", "none", False, True),                    # leading space: strtoul skips it, the old loop stops
    ("0x10,0", "36", "none", False, True),                  # 0x prefix
    ("-1", "0-31", "none", True, True),                     # strtoul negates in unsigned arithmetic
    ("1" + ",0" * 32, "992", "none", True, True),           # 33 words: the new reader keeps the first 32
    ("", "none", "none", False, False),
]


@pytest.mark.parametrize("mask,new,old,_n,_o", HOSTILE_MASKS, ids=[m[0][:20] or "empty" for m in HOSTILE_MASKS])
def test_masks_are_read_as_nccl_reads_them(mask: str, new: str, old: str, _n: bool, _o: bool) -> None:
    assert cpu_ranges(nccl_cpuset(mask, NEW)) == new
    assert cpu_ranges(nccl_cpuset(mask, OLD)) == old


@pytest.mark.parametrize("mask,_new,_old,on_new,on_old", HOSTILE_MASKS,
                         ids=[m[0][:20] or "empty" for m in HOSTILE_MASKS])
def test_every_misread_mask_is_one_finding(mask: str, _new: str, _old: str, on_new: bool, on_old: bool) -> None:
    data = system(cpu("0", mask, gpu("0000:18:00.0")))
    for version, expected in (("2.30.7", on_new), ("2.27.7", on_old)):
        findings = check(data, version)
        rules = [f.rule for f in findings if f.rule in ("NTS043", "NTV012")]
        assert len(rules) == (1 if expected else 0), (version, [(f.rule, f.message) for f in findings])
    if not on_new and on_old:
        assert [f.rule for f in check(data, "2.27.7") if f.rule in ("NTS043", "NTV012")] == ["NTV012"]


def test_upper_case_is_version_scoped() -> None:
    data = system(cpu("0", "0000FFFF", gpu("0000:18:00.0")))
    assert "NTV012" not in fired(check(data, "2.28.3"))
    (f,) = [f for f in check(data, "2.27.7") if f.rule == "NTV012"]
    assert f.severity is Severity.WARNING and "CPUs 0-15" in f.message and "reads no CPU" in f.message


def test_more_than_32_words() -> None:
    mask = "ff" + ",0000000f" * 32  # 33 words (CPU 1024 and up are past a cpu_set_t)
    assert "33 words, more than the 32 of a cpu_set_t: NCCL reads the first 32" in misreadings(mask, NEW)[0]
    assert "memory corruption" in " ".join(misreadings(mask, OLD))
    # the first word is read as the lowest-but-31: CPUs 992-999 instead of 1024-1031
    assert cpu_ranges(nccl_cpuset(mask, NEW)).endswith("960-963,992-999")


def test_kernel_cpumap_reads_loose_words_as_meant() -> None:
    assert kernel_cpumap("ff, 00") == 0xFF << 32 and kernel_cpumap("0-47") is None
    assert misreadings("0000ffff,ffffffff") == [] and misreadings("ff,,00")


def test_partial_overlap_names_the_shared_cpus() -> None:
    data = system(cpu("0", "0000ffff", gpu("0000:18:00.0")), cpu("1", "00ffff00", gpu("0000:98:00.0")))
    (f,) = [f for f in check(data) if f.rule == "NTS044"]
    assert "shares CPUs 8-15" in f.message


def test_same_mask_on_two_hosts_is_not_an_overlap() -> None:
    a = cpu("0", "0000ffff", gpu("0000:18:00.0")).replace(b"<cpu ", b'<cpu host_hash="0x1" ')
    b = cpu("0", "0000ffff", gpu("0000:98:00.0")).replace(b"<cpu ", b'<cpu host_hash="0x2" ')
    assert "NTS044" not in fired(check(system(a, b)))


def test_numa_order_two_swapped_and_a_rotation() -> None:
    masks = ["00000000,000000ff", "00000000,ff000000", "00000000,00ff0000", "000000ff,00000000"]
    cpus = [cpu(str(i), m, gpu(f"0000:{0x18 + i:02x}:00.0")) for i, m in enumerate(masks)]
    (f,) = [f for f in check(system(*cpus)) if f.rule == "NTS045"]
    assert "look swapped" in f.message and "numaid=\"2\"" in f.message and "numaid=\"1\"" in f.message
    rotated = ["00000000,0000ff00", "00000000,00ff0000", "00000000,000000ff"]
    cpus = [cpu(str(i), m, gpu(f"0000:{0x18 + i:02x}:00.0")) for i, m in enumerate(rotated)]
    (f,) = [f for f in check(system(*cpus)) if f.rule == "NTS045"]
    assert "not in NUMA order" in f.message


def test_no_binding_only_where_gpus_are() -> None:
    empty_with_gpu = system(cpu("0", "00000000", gpu("0000:18:00.0")))
    assert "NTS046" in fired(check(empty_with_gpu))
    empty_without = system(cpu("0", "00000000", b'    <pci busid="0000:19:00.0" class="0x020700" '
                                              b'link_speed="32.0 GT/s PCIe" link_width="16"/>\n'),
                           cpu("1", "0000ffff", gpu("0000:98:00.0")))
    assert "NTS046" not in fired(check(empty_without))
    # numaid -1 without affinity: one finding (NTS046), not also NTS011 for the missing affinity
    minus_one = system(cpu("-1", None, gpu("0000:18:00.0")))
    assert sorted(f.rule for f in check(minus_one) if f.severity is not Severity.INFO) == ["NTS046"]


# --------------------------------------------------------------------------------------------------
# Links that cap the machine


def switch(busid: str, speed: str, width: str, inner: bytes) -> bytes:
    return (f'    <pci busid="{busid}" class="0x060400" link_speed="{speed}" link_width="{width}">\n'.encode()
            + inner + b"    </pci>\n")


def test_cap_reports_ncclss_bandwidths() -> None:
    data = system(cpu("0", "0000ffff", switch("0000:15:00.0", "16.0 GT/s PCIe", "4", gpu("0000:18:00.0"))))
    (f,) = [f for f in check(data) if f.rule == "NTS047"]
    # 4 * 120 / 80 = 6 GB/s above a Gen5 x16 GPU: 16 * 240 / 80 = 48 GB/s
    assert "is 6 GB/s for NCCL" in f.message and "up to 48 GB/s" in f.message


def test_nested_switches_each_report_their_own_link() -> None:
    inner = switch("0000:16:00.0", "8.0 GT/s PCIe", "16", gpu("0000:18:00.0"))
    data = system(cpu("0", "0000ffff", switch("0000:15:00.0", "8.0 GT/s PCIe", "16", inner)))
    assert [f.line for f in check(data) if f.rule == "NTS047"] == [3, 4]


def test_one_fact_one_finding_for_an_unknown_or_zero_width_switch_link() -> None:
    unknown = system(cpu("0", "0000ffff", switch("0000:15:00.0", "Unknown", "16", gpu("0000:18:00.0"))))
    assert sorted(f.rule for f in check(unknown)) == ["NTS030"]
    zero = system(cpu("0", "0000ffff", switch("0000:15:00.0", "32.0 GT/s PCIe", "0", gpu("0000:18:00.0"))))
    (f,) = check(zero)
    assert f.rule == "NTS031" and "x16 (48 GB/s for this link)" in f.message


def test_caps_are_version_scoped_by_the_speed_dictionary() -> None:
    # "32 GT/s" is Gen5 from 2.12.12; before, it is unknown (NTV003), not a cap
    data = system(cpu("0", "0000ffff", switch("0000:15:00.0", "32 GT/s", "16", gpu("0000:18:00.0", speed="32 GT/s"))))
    assert "NTS047" not in fired(check(data, "2.30.7"))
    assert fired(check(data, "2.11.4")) >= {"NTV003"} and "NTS047" not in fired(check(data, "2.11.4"))


def test_prefix_spelling_is_one_info_and_no_xsd_warning(tmp_path: Path) -> None:
    path = tmp_path / "t.xml"
    path.write_bytes(system(cpu("0", "0000ffff", gpu("0000:18:00.0", speed="32 GT/s PCIe/s"))))
    doc = json.loads(run_cli("topo", "validate", str(path), "-f", "json").stdout)
    assert [(f["rule"], f["severity"]) for f in doc["findings"]] == [("NTS048", "info")]
    # an XSD complaint about another attribute stays
    path.write_bytes(path.read_bytes().replace(b'<cpu numaid="0"', b'<cpu numa_id="1" numaid="0"'))
    doc = json.loads(run_cli("topo", "validate", str(path), "-f", "json").stdout)
    assert sorted(f["rule"] for f in doc["findings"]) == ["NTS048", "NTX090"]


def test_malformed_affinity_is_not_also_an_xsd_warning(tmp_path: Path) -> None:
    path = tmp_path / "t.xml"
    path.write_bytes(system(cpu("0", "0-47", gpu("0000:18:00.0"))))
    doc = json.loads(run_cli("topo", "validate", str(path), "-f", "json").stdout)
    assert [f["rule"] for f in doc["findings"]] == ["NTS043"]


# --------------------------------------------------------------------------------------------------
# NVLinks: what NCCL builds instead, from the NCCL model


def _model_gpu_paths(data: bytes) -> set[tuple[str, float]]:
    from ncclctl.nccl.build import Plugin, build
    from ncclctl.nccl.paths import compute_paths
    from ncclctl.nccl.system import GPU, PATH_TYPE_STR, Params, f32
    from ncclctl.nccl.xml import parse_nccl_xml

    system_ = build(parse_nccl_xml(data).root, Params(), Plugin()).system
    compute_paths(system_)
    gpus = system_.nodes[GPU]
    return {(PATH_TYPE_STR[p.type], f32(p.bw)) for i, g in enumerate(gpus) for j, p in enumerate(g.paths[GPU])
            if i != j}


def test_self_target_states_the_paths_nccl_computes() -> None:
    data = (INVALID / "NTS049-nvlink-to-own-busid.xml").read_bytes()
    (f,) = [f for f in check(data) if f.rule == "NTS049"]
    ((kind, bw),) = _model_gpu_paths(data)
    assert f"every GPU pair becomes {kind} at {bw:g} GB/s" in f.message


def test_target_not_in_file_states_the_paths_nccl_computes() -> None:
    nv = b'<gpu dev="0" sm="90">\n<nvlink target="0000:1d:00.0" count="18" tclass="0x030200"/>\n</gpu>'
    data = system(cpu("0", "0000ffff", gpu("0000:18:00.0", nv) + gpu("0000:1c:00.0", b'<gpu dev="1" sm="90"/>')))
    (f,) = [f for f in check(data) if f.rule == "NTS020"]
    ((kind, bw),) = _model_gpu_paths(data)
    assert f"every GPU pair becomes {kind} at {bw:g} GB/s" in f.message and kind == "PHB"


def test_one_sided_nvlink_is_fatal_in_the_model_too() -> None:
    data = (INVALID / "NTS019-one-sided-nvlink.xml").read_bytes().replace(b"<gpu>", b'<gpu dev="0" sm="90">').replace(
        b"<gpu/>", b'<gpu dev="1" sm="90"/>')
    (f,) = [f for f in check(data) if f.rule == "NTS019"]
    assert "Failed to find reverse path" in f.message
    with pytest.raises(RuntimeError, match="no reverse link"):
        _model_gpu_paths(data)


def test_count_mismatch_states_both_bandwidths() -> None:
    a = b'<gpu sm="90">\n<nvlink target="0000:1c:00.0" count="18" tclass="0x030200"/>\n</gpu>'
    b = b'<gpu sm="90">\n<nvlink target="0000:18:00.0" count="12" tclass="0x030200"/>\n</gpu>'
    (f,) = [f for f in check(system(cpu("0", "0000ffff", gpu("0000:18:00.0", a) + gpu("0000:1c:00.0", b))))
            if f.rule == "NTS019"]
    assert "(370.8 GB/s one way, 247.2 GB/s back)" in f.message  # 18 and 12 links of 20.6 GB/s (sm 90)


@pytest.mark.parametrize("sm,count,fires", [(90, 18, False), (90, 19, True), (80, 12, False), (80, 13, True),
                                            (70, 6, False), (70, 7, True), (60, 4, False), (60, 5, True),
                                            (52, 1, True), (100, 18, False), (107, 36, False)])
def test_nvlink_count_against_what_nccl_detects_by_sm(sm: int, count: int, fires: bool) -> None:
    nv = f'<gpu sm="{sm}">\n<nvlink target="fffffff:ffff:ff" count="{count}" tclass="0x068000"/>\n</gpu>'.encode()
    assert ("NTS050" in fired(check(system(cpu("0", "0000ffff", gpu("0000:18:00.0", nv)))))) is fires


# --------------------------------------------------------------------------------------------------
# The node budget


def budget_file(bridges: int, *, bare_gpus: int = 0, bare_nics: int = 0) -> bytes:
    inner = gpu("0000:18:00.0")
    for i in range(bare_gpus):
        inner += f'    <pci busid="0000:{0x20 + i:02x}:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" ' \
                 f'link_width="16"/>\n'.encode()
    for i in range(bare_nics):
        inner += f'    <pci busid="0000:{0x30 + i:02x}:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" ' \
                 f'link_width="16"/>\n'.encode()
    # ``bridges`` elements: empty bridges in groups of at most 30 (under NCCL's MAX_SUBS of every version)
    group = 0
    while bridges > 0:
        n = min(bridges - 1, 30)
        inner += f'    <pci busid="0000:{0x40 + group:02x}:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" ' \
                 f'link_width="16">\n'.encode()
        for i in range(n):
            inner += f'      <pci busid="0000:{0x40 + group:02x}:{i + 1:02x}.0" class="0x060400" ' \
                     f'link_speed="32.0 GT/s PCIe" link_width="16"/>\n'.encode()
        inner += b"    </pci>\n"
        bridges -= n + 1
        group += 1
    return system(cpu("0", "0000ffff", inner))


def test_budget_passing_case_just_below_the_margin() -> None:
    data = budget_file(235)  # 4 + 235 = 239 elements, 17 slots left
    assert not fired(check(data)) & {"NTS051", "NTS052"}


def test_budget_counts_what_each_rank_adds() -> None:
    data = budget_file(230, bare_gpus=1, bare_nics=4)  # 4 + 1 + 4 + 230 = 239 elements
    (f,) = [f for f in check(data) if f.rule in ("NTS051", "NTS052")]
    assert f.rule == "NTS051" and "the file uses 239" in f.message
    assert "1 <gpu>" in f.message and "8 <nic>/<net>" in f.message and "248 before it trims" in f.message
    # issue 28: the <nvlink> elements NCCL adds under the GPU on an NVSwitch host (4 on HGX H100) are counted
    assert "252 with the <nvlink> elements NCCL adds" in f.message and "4 slots left" in f.message


def test_budget_counts_the_fused_nics() -> None:
    nic = (b'    <pci busid="0000:19:00.0" class="0x020700" link_speed="32.0 GT/s PCIe" link_width="16">\n'
           b'      <nic>\n        <net name="mlx5_0" dev="0" port="1"/>\n        <net name="mlx5_1" dev="1" port="2"/>\n'
           b"      </nic>\n    </pci>\n")
    data = budget_file(234).replace(b"  </cpu>", nic + b"  </cpu>")
    (f,) = [f for f in check(data) if f.rule in ("NTS051", "NTS052")]
    assert "1 for the NICs it fuses" in f.message


def test_budget_is_version_scoped() -> None:
    data = (INVALID / "NTS052-over-node-budget.xml").read_bytes()
    assert "NTS052" in fired(check(data, "2.21.5"))
    assert not fired(check(data, "2.20.5")) & {"NTS051", "NTS052"}  # 1024 slots before 2.21


# --------------------------------------------------------------------------------------------------
# After a fatal error


def test_truncated_file_reports_what_was_read_marked_after_the_fatal() -> None:
    full = (INVALID / "NTS044-identical-affinity.xml").read_bytes()
    data = b"\n".join(full.split(b"\n")[:9])  # cut inside the second <pci>
    findings = check(data)
    fatal = next(f for f in findings if f.rule.startswith("NTX"))
    (after,) = [f for f in findings if f.rule == "NTS044"]
    assert fatal.rule == "NTX011" and after.message.startswith(AFTER_FATAL.format(rule="NTX011", line=fatal.line))


def test_whole_file_rules_do_not_run_on_a_truncated_file() -> None:
    # The reverse <nvlink> comes after the cut: NTS019 would be a false alarm.
    nv = b'<gpu>\n<nvlink target="0000:1c:00.0" count="4" tclass="0x030200"/>\n</gpu>'
    full = system(cpu("0", "0000ffff", gpu("0000:18:00.0", nv) + gpu("0000:1c:00.0", nv.replace(b"1c", b"18"))))
    cut = full[:full.index(b'<pci busid="0000:1c')]
    assert "NTS019" not in fired(check(full)) and fired(check(cut)) == {"NTX011"}


def test_a_truncated_start_tag_adds_nothing() -> None:
    data = (INVALID / "NTS047-slow-virtual-switch.xml").read_bytes()[:300]
    assert fired(check(data)) == {"NTX007"}


# --------------------------------------------------------------------------------------------------
# Version-scoped: virtual switches without ids


@pytest.mark.parametrize("version,fires", [("2.8.4", False), ("2.9.6", True), ("2.9.8", True), ("2.9.9", False),
                                           ("2.30.7", False)])
def test_virtual_switch_ids_only_on_2_9_6_to_2_9_8(version: str, fires: bool) -> None:
    data = (INVALID / "NTV011-virtual-switch-without-ids.xml").read_bytes()
    hits = [f for f in check(data, version) if f.rule == "NTV011"]
    assert bool(hits) is fires and all(f.severity is Severity.ERROR for f in hits)


def test_virtual_switch_with_ids_passes_on_2_9_6() -> None:
    data = (INVALID / "NTV011-virtual-switch-without-ids.xml").read_bytes().replace(
        b'class="0x060400"', b'class="0x060400" vendor="0x0000" device="0x0000" subsystem_vendor="0x0000" '
                             b'subsystem_device="0x0000"')
    assert "NTV011" not in fired(check(data, "2.9.6"))


# --------------------------------------------------------------------------------------------------
# Skeleton files


def test_skeleton_without_defect_is_a_handful_of_lines(tmp_path: Path) -> None:
    path = VALID / "meaning-skeleton-topo.xml"
    res = run_cli("topo", "validate", str(path))
    assert res.returncode == 0
    assert res.stdout == (f"{path}: 0 errors, 0 warnings, 1 info (skeleton: 7 elements left to NCCL's detection; "
                          "info hidden, --show-info shows it)\n")
    shown = run_cli("topo", "validate", str(path), "--show-info").stdout.splitlines()
    assert len(shown) == 3 and "NTS053" in shown[0]


def test_skeleton_keeps_its_real_defects() -> None:
    data = (VALID / "meaning-skeleton-topo.xml").read_bytes().replace(b"0000:00:17.0", b"0000:00:16.0")
    assert fired(check(data)) == {"NTS014", "NTS053"}


def test_a_file_with_devices_is_no_skeleton() -> None:
    assert "NTS053" not in fired(check((INVALID / "NTS047-slow-virtual-switch.xml").read_bytes()))


# --------------------------------------------------------------------------------------------------
# Against a host: NTH004 compares the CPUs NCCL binds to


@pytest.fixture(scope="module")
def dgx_h100_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("meaning") / "dgx-h100.xml"
    assert run_cli("topo", "generate", "--root", str(HOSTS / "dgx-h100"), "-o", str(path)).returncode == 0
    return path


def _host_rules(path: Path, *extra: str) -> list[dict]:
    res = run_cli("topo", "validate", str(path), "--root", str(HOSTS / "dgx-h100"), "-f", "json", "--no-xsd", *extra)
    return json.loads(res.stdout)["findings"]


def test_upper_case_host_mask_matches_on_2_30_and_not_before_2_28(dgx_h100_file: Path, tmp_path: Path) -> None:
    text = dgx_h100_file.read_text()
    first = re.search(r'affinity="([^"]+)"', text)
    assert first
    path = tmp_path / "upper.xml"
    path.write_text(text.replace(first.group(0), f'affinity="{first.group(1).upper()}"', 1))
    assert [f["rule"] for f in _host_rules(path)] == []
    old = _host_rules(path, "--nccl-version", "2.27.7")
    nth = [f for f in old if f["rule"] == "NTH004"]
    assert len(nth) == 1 and "NCCL binds the GPUs under it to CPUs none" in nth[0]["message"]
    assert "NTV012" in {f["rule"] for f in old}


def test_swapped_masks_name_the_node_they_belong_to() -> None:
    path = REPO / "fixtures" / "topo" / "invalid-host" / "NTH004-wrong-affinity.xml"
    (f,) = [f for f in _host_rules(path) if f["rule"] == "NTH004"]
    assert "the file's mask is node 1's cpumap (swapped?)" in f["message"]


def test_unknown_numa_node_without_affinity_says_nccl_binds_nothing(dgx_h100_file: Path, tmp_path: Path) -> None:
    text = dgx_h100_file.read_text()
    line = next(ln for ln in text.splitlines() if "<cpu " in ln)
    bare = re.sub(r' affinity="[^"]+"', "", line).replace('numaid="0"', 'numaid="7"')
    path = tmp_path / "numa7.xml"
    path.write_text(text.replace(line, bare, 1))
    (f,) = [f for f in _host_rules(path) if f["rule"] == "NTH011"]
    assert "node7/cpumap, finds nothing and does not bind" in f["message"]


# --------------------------------------------------------------------------------------------------
# A graph file written without its <graphs> root


GRAPH_ROOT = (b'<graph id="0" pattern="4" crossnic="0" nchannels="1" speedintra="20" speedinter="20" '
              b'latencyinter="0" typeintra="NVL" typeinter="PIX" samechannels="1">\n  <channel>\n    <gpu dev="0"/>\n'
              b"  </channel>\n</graph>\n")


@pytest.mark.parametrize("command", ["topo", "rings"])
def test_graph_root_gets_the_graph_file_fix(command: str, tmp_path: Path) -> None:
    path = tmp_path / "t.xml"  # a name that says nothing about the kind
    path.write_bytes(GRAPH_ROOT)
    doc = json.loads(run_cli(command, "validate", str(path), "-f", "json").stdout)
    assert doc["kind"] == "graph"
    assert [(f["rule"], f["fix"]) for f in doc["findings"]] == [
        ("NTG001", 'Wrap the <graph> elements in <graphs version="1"> ... </graphs>: NCCL reads <graph> only inside '
                   "<graphs>.")]


def test_graph_file_given_as_topology_says_so() -> None:
    (f,) = validate_bytes(GRAPH_ROOT, path="t.xml", kind="topology")
    assert f.rule == "NTS001" and f.fix.startswith("This is a graph file: give it as NCCL_GRAPH_FILE")


def test_no_binding_for_a_gpu_nccl_fills_in() -> None:
    # A GPU <pci> without <gpu> (NCCL adds it) under <cpu numaid="-1"> without affinity: still no binding.
    bare = b'    <pci busid="0000:18:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"/>\n'
    findings = check(system(cpu("-1", None, bare)))
    (f,) = [f for f in findings if f.severity is not Severity.INFO]
    assert f.rule == "NTS046" and "GPU 0000:18:00.0" in f.message
