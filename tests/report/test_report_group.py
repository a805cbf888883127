"""Grouping of repeated findings (ncclctl.report.group): what is alike is one line, what differs stays apart."""

from __future__ import annotations

import json

from ncclctl.findings import Finding, Severity
from ncclctl.report.group import MAX_VARYING, group

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO


def roce(ifname: str, dev: str, prio: int = 3) -> Finding:
    return Finding("ROCE001", E, f"{ifname} ({dev} port 1): NCCL's RoCE traffic lands on priority {prio}, which has "
                   "no PFC", ifname, fix=f"mlnx_qos -i {ifname} --pfc 0,0,0,1,0,0,0,0")


def test_seven_interfaces_are_one_line_naming_them():
    found = [roce(f"ens{i}np0", f"mlx5_{i - 1}") for i in (1, 2, 3, 4, 5, 7, 8)] + [roce("ens6np0", "mlx5_5", 0)]
    groups = group(found)
    assert [len(g) for g in groups] == [7, 1]
    g = groups[0]
    assert g.location() == "ens1np0, ens2np0, ens3np0, ens4np0, ens5np0, ens7np0, ens8np0"
    assert g.message().startswith("ens1np0 (mlx5_0 port 1): ") and g.message().endswith(
        "[7 alike; shown for ens1np0]")
    assert groups[1].message() == found[-1].message  # priority 0 is another statement: its own line


def test_findings_in_one_file_list_their_lines():
    found = [Finding("NTS025", I, f'<gpu> of "0000:{b:02x}:00.0" sets dev, sm: NCCL uses these values', "/t.xml",
                     line, 9) for b, line in ((0x1b, 10), (0x43, 31), (0x52, 46))]
    (g,) = group(found)
    assert g.location() == "/t.xml:10:9,31:9,46:9" and "[3 alike; shown for /t.xml:10:9]" in g.message()


def _acs(port: str, pairs: str, state: str = "ReqRedir+CmpltRedir") -> Finding:
    return Finding("PCI001", E, f"port {port} has ACS {state} enabled on the path of {pairs}: redirected", port,
                   fix=f"setpci -s {port} ECAP_ACS+0x6.w=0000, or pci=disable_acs_redir={port}")


def test_ports_alike_but_for_their_pair_lists_are_one_line_naming_them():
    # Issue 28: five switch ports with the same ACS state are one finding naming the five (each its own pairs).
    found = [_acs(p, f"GPU{i}<->GPU{(i + 1) % 4} (PIX), GPU{i}<->mlx5_0 (PIX)" + (" and 2 more" if i == 4 else ""))
             for i, p in enumerate(("0000:18:00.0", "0000:18:04.0", "0000:18:08.0", "0000:18:0c.0", "0000:18:10.0"))]
    found.append(_acs("0000:19:00.0", "GPU0<->GPU1 (PIX), GPU0<->mlx5_0 (PIX)", state="EgressCtrl"))
    groups = group(found)
    assert MAX_VARYING < 4 and [len(g) for g in groups] == [5, 1]
    assert groups[0].location() == "0000:18:00.0, 0000:18:04.0, 0000:18:08.0, 0000:18:0c.0, 0000:18:10.0"
    assert groups[0].message().endswith("[5 alike, each with its own pairs (0000:18:00.0, 0000:18:04.0, "
                                        "0000:18:08.0, 0000:18:0c.0, 0000:18:10.0); shown for 0000:18:00.0]")
    assert groups[1].message() == found[-1].message  # another ACS state: its own line


def test_a_finding_that_lists_many_devices_in_other_words_is_not_grouped():
    pairs = "GPU0<->GPU1 (PIX), GPU0<->GPU2 (PIX), GPU0<->mlx5_0 (PIX)"
    found = [Finding("PCI001", E, f"port {p} has ACS redirect on the path of {pairs} and mlx5_{i} mlx5_{i + 4} "
                     f"mlx5_{i + 8}", p) for i, p in enumerate(("0000:18:00.0", "0000:18:04.0"))]
    assert [len(g) for g in group(found)] == [1, 1]


def test_numbers_and_words_are_not_device_names():
    a = Finding("EXP008", E, "GPU5 has 16 active NVLinks, the profile expects 18", "GPU5")
    b = Finding("EXP008", E, "GPU6 has 17 active NVLinks, the profile expects 18", "GPU6")
    c = Finding("PCI004", W, "link trained at Gen3, supports Gen4", "0000:17:00.0")
    d = Finding("PCI004", W, "link trained at Gen2, supports Gen4", "0000:18:00.0")
    assert [len(g) for g in group([a, b, c, d])] == [1, 1, 1, 1]


def test_rule_severity_and_fix_must_match():
    a = Finding("IB001", E, "mlx5_3 port 1 is DOWN", "mlx5_3", fix="enable it")
    assert [len(g) for g in group([a, Finding("IB001", W, "mlx5_4 port 1 is DOWN", "mlx5_4", fix="enable it")])] == [1, 1]
    assert [len(g) for g in group([a, Finding("IB003", E, "mlx5_4 port 1 is DOWN", "mlx5_4", fix="enable it")])] == [1, 1]
    assert [len(g) for g in group([a, Finding("IB001", E, "mlx5_4 port 1 is DOWN", "mlx5_4", fix="replace it")])] \
        == [1, 1]
    assert [len(g) for g in group([a, Finding("IB001", E, "mlx5_4 port 1 is DOWN", "mlx5_4", fix="enable it")])] \
        == [2]


def test_subject_is_masked_as_a_whole_token_only():
    # host1's subject must not eat the "host1" inside "host10": the two name different peers.
    a = Finding("FLT003", W, "host1 differs from host10", "host1")
    b = Finding("FLT003", W, "host2 differs from host20", "host2")
    assert [len(g) for g in group([a, b])] == [1, 1]
    c = Finding("FLT003", W, "host3 differs from host10", "host3")
    assert [len(g) for g in group([a, c])] == [2]


def test_hostile_subjects_and_messages():
    odd = ["", "a(b", "[x]*", "\\1", "|", "\0", "GPU\n3", "é✓", "x" * 10_000]
    found = [Finding("NCCL001", W, f"{s} set twice: {s}", s) for s in odd]
    groups = group(found)
    assert sum(len(g) for g in groups) == len(found)
    for g in groups:
        assert isinstance(g.location(), str) and isinstance(g.message(), str)


def test_many_findings_group_in_order_and_lose_none():
    found = [roce(f"ens{i}np0", f"mlx5_{i}") for i in range(2_000)]
    found += [Finding("GDR002", I, f"host{i}: DMA-BUF only", f"host{i}") for i in range(2_000)]
    groups = group(found)
    assert [g.first.rule for g in groups] == ["ROCE001", "GDR002"] and sum(map(len, groups)) == 4_000
    assert groups[0].members == tuple(found[:2_000])


def test_lint_names_five_switch_ports_with_the_same_acs_state_once():
    from conftest import HOSTS, run_cli

    res = run_cli("lint", "--root", str(HOSTS / "pcie-server"), "-r", "PCI001", timeout=300)
    lines = [ln for ln in res.stdout.splitlines() if ": PCI001: " in ln]
    assert len(lines) == 1, res.stdout
    ports = lines[0].split(": error:")[0].split(", ")
    # in natural order: bus ids by their hexadecimal numbers (0c = 12 after 08, before 10)
    assert ports == ["0000:18:00.0", "0000:18:04.0", "0000:18:08.0", "0000:18:0c.0", "0000:18:10.0"]
    assert "(0000:18:00.0, 0000:18:04.0, 0000:18:08.0, 0000:18:0c.0, 0000:18:10.0)" in lines[0]
    assert "5 alike, each with its own pairs" in lines[0] and "ReqRedir+CmpltRedir" in lines[0]
    assert "5 errors" in res.stdout  # still five findings, counted as such
    doc = json.loads(run_cli("lint", "--root", str(HOSTS / "pcie-server"), "-r", "PCI001", "--format", "json",
                             timeout=300).stdout)
    assert len([f for f in doc["findings"] if f["rule"] == "PCI001"]) == 5  # machine formats never group


_BOOT = ("0008:00:00.0", "0009:00:00.0", "0018:00:00.0", "0019:00:00.0")


def _mask_port(port: str, mask: str = "xx111x1", ports: tuple[str, ...] = _BOOT) -> Finding:
    boot = ";".join(f"xx111x0@{p}" for p in ports)
    return Finding("PCI007", E, f"root port {port} has ACS control 0000000, which breaks the mask {mask}", port,
                   fix=f'boot with pci=config_acs="{boot}"; or, until a reboot: setpci -r -s {port} ECAP_ACS+0x6.w=1d')


def test_one_fix_naming_many_devices_groups_the_findings_it_fixes():
    # PCI007: one boot line lists every port rdma_topo sets (the subject itself among them or not); the ports with
    # the same state and required mask are one line, another mask stays apart.
    found = [_mask_port(p) for p in ("0000:00:00.0", "0002:00:00.0", "0008:00:00.0", "0009:00:00.0")]
    found.append(_mask_port("0010:00:00.0", "xx111x0"))
    groups = group(found)
    assert [len(g) for g in groups] == [4, 1]
    assert groups[0].location() == "0000:00:00.0, 0002:00:00.0, 0008:00:00.0, 0009:00:00.0"
    # A fix that names other devices besides the findings' own subjects is another fix: apart.
    other = _mask_port("0012:00:00.0", ports=("0008:00:00.0", "0009:00:00.0", "0018:00:00.0", "0020:00:00.0"))
    assert [len(g) for g in group(found[:2] + [other])] == [2, 1]


def test_lint_gb300_acs_off_is_one_line_per_required_mask():
    # Issue 28, one finding per fault: 24 PCI007 lines with the same boot line were one per port; now one line per
    # port role and mask (Grace root ports and ConnectX switch ports at the kernel default, the Data Direct root
    # ports, DMA-function ports, GPU ports), naming their ports; JSON keeps 24 findings.
    from conftest import HOSTS, run_cli

    res = run_cli("lint", "--root", str(HOSTS / "gb300-dd-acs-off"), "-r", "PCI007", timeout=300)
    lines = [ln for ln in res.stdout.splitlines() if ": PCI007: " in ln]
    assert len(lines) == 5 and "24 errors" in res.stdout, res.stdout
    assert lines[0].startswith("0000:00:00.0, 0002:00:00.0, 0010:00:00.0, 0012:00:00.0: error: PCI007: root port")
    assert lines[0].endswith("[4 alike; shown for 0000:00:00.0]")
    assert lines[1].startswith("0000:02:00.0, 0002:02:00.0, 0008:05:00.0, 0009:05:00.0, 0010:02:00.0, 0012:02:00.0, "
                               "0018:05:00.0, 0019:05:00.0: error: PCI007: switch downstream port")
    assert "mask xx110x1" in lines[3] and lines[3].startswith("0008:02:00.0, 0009:02:00.0, 0018:02:00.0, 0019:02:00.0:")
    assert res.stdout.count('pci=config_acs="xx111x0@0008:00:00.0;') == 5
