"""rings validate with meaning (NTG022-NTG031, NTG033-NTG034): a graph file against NCCL's model of the node.

Every test authors a graph file in tmp_path with exactly one defect class and checks it on a host fixture (--root),
a topology file (--topo) or with no host (NTG026 only). The correct reference is NCCL's own layout for dgx-h100 on
two nodes: 8 channels, channel c enters on rail c at rail c's GPU and leaves on rail c^1 from rail c^1's GPU,
crossnic 2, typeintra NVL, typeinter PIX, speeds 48/48 (what NCCL 2.30.7's search produces there).
"""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import HOSTS, run_cli
from ncclctl.findings import Severity
from ncclctl.probe import probe
from ncclctl.topo.filecheck import Meaning, check_file, validate_report
from ncclctl.topo.rules import RULES

H100 = ["--root", str(HOSTS / "dgx-h100")]
H100_RAILS = "=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11"  # the fixture's /etc/nccl.conf
A100_RAILS = "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_9:1"  # ncclctl rails
MEANING_RULES = {r.id for r in RULES.values() if r.checked_by == "ncclctl/topo/graphcheck.py"}


def graph_xml(graphs: list[dict]) -> str:
    """A graph file: each graph a dict (id, pattern, crossnic, si, se, ti, te, channels = [(net in, [gpu devs], net
    out)]; a None net leaves the channel without nets)."""
    out = ['<graphs version="1">']
    for g in graphs:
        chans = g["channels"]
        out.append(f'  <graph id="{g.get("id", 0)}" pattern="{g.get("pattern", 4)}" crossnic="{g.get("crossnic", 2)}" '
                   f'nchannels="{len(chans)}" speedintra="{g.get("si", 48)}" speedinter="{g.get("se", 48)}" '
                   f'latencyinter="0" typeintra="{g.get("ti", "NVL")}" typeinter="{g.get("te", "PIX")}" '
                   'samechannels="0">')
        for nin, gpus, nout in chans:
            out.append("    <channel>")
            if nin is not None:
                out.append(f'      <net dev="{nin:#x}"/>')
            out += [f'      <gpu dev="{d:#x}"/>' for d in gpus]
            if nout is not None:
                out.append(f'      <net dev="{nout:#x}"/>')
            out.append("    </channel>")
        out.append("  </graph>")
    out.append("</graphs>")
    return "\n".join(out) + "\n"


def ring(first: int, last: int, n: int = 8) -> list[int]:
    return [first] + [g for g in range(n) if g not in (first, last)] + [last]


def h100(**over) -> list[dict]:
    """NCCL's layout for dgx-h100, 2 nodes (with the rails as NCCL_IB_HCA, dev k is GPU k's rail)."""
    g = dict(id=0, pattern=4, crossnic=2, si=48, se=48, ti="NVL", te="PIX",
             channels=[(c, ring(c, c ^ 1), c ^ 1) for c in range(8)])
    g.update(over)
    return [g]


def pcie(dev: int = 2, **over) -> list[dict]:
    """pcie-server: 4 GPUs and a dual-port card on one PCIe switch; NCCL fuses the two ports into dev 2."""
    g = dict(id=0, pattern=4, crossnic=0, si=12, se=12, ti="PIX", te="PIX",
             channels=[(dev, [0, 2, 3, 1], dev), (2, [1, 3, 0, 2], 2)])
    g.update(over)
    return [g]


def validate(tmp_path, graphs: list[dict], *args: str) -> tuple[int, list[dict], dict]:
    path = tmp_path / "graph.xml"
    path.write_text(graph_xml(graphs))
    res = run_cli("rings", "validate", str(path), *args, "--format", "json")
    assert res.returncode in (0, 1), res.stderr
    doc = json.loads(res.stdout)
    return res.returncode, doc["findings"], doc


def loud(findings: list[dict]) -> set[str]:
    return {f["rule"] for f in findings if f["severity"] != "info"}


def hits(findings: list[dict], rule: str) -> list[dict]:
    return [f for f in findings if f["rule"] == rule]


# --------------------------------------------------------------------------------------------------
# The correct file is clean


def test_nccl_layout_for_dgx_h100_is_clean_against_the_host(tmp_path):
    rc, findings, doc = validate(tmp_path, h100(), *H100)
    assert rc == 0 and findings == []
    assert doc["model"]["nodes"] == 2 and doc["model"]["gpudirect_rdma"]["available"] is True
    assert [n["name"] for n in doc["model"]["nets"]] == H100_RAILS.lstrip("=").split(",")
    assert doc["model"]["settings"]["NCCL_IB_HCA"]["from"] == "/etc/nccl.conf:2"


def test_nccl_layout_is_clean_against_a_topology_file(tmp_path):
    topo = tmp_path / "topo.xml"
    assert run_cli("topo", "generate", *H100, "-o", str(topo)).returncode == 0
    rc, findings, doc = validate(tmp_path, h100(), "--topo", str(topo), "--env", f"NCCL_IB_HCA={H100_RAILS}")
    assert rc == 0 and findings == []
    assert doc["model"]["topology"] == f"--topo {topo}"
    assert "assumed available" in doc["model"]["gpudirect_rdma"]["why"]


def test_api_check_file_with_a_model(tmp_path):
    data = graph_xml(h100()).encode()
    node = probe(str(HOSTS / "dgx-h100"))
    meaning = Meaning()
    kind, findings = check_file(data, "g.xml", load_node=lambda: node, meaning=meaning)
    assert kind == "graph" and findings == [] and meaning.doc is not None and meaning.notes == []
    bad = graph_xml(h100(te="PHB")).encode()
    rep = validate_report(bad, "g.xml", load_node=lambda: node, meaning=Meaning(), command="rings validate")
    assert [f.rule for f in rep.findings] == ["NTG022"] and rep.findings[0].severity is Severity.WARNING
    assert dict(rep.fields)["model"]["nodes"] == 2


# --------------------------------------------------------------------------------------------------
# NTG022: path types


def test_typeinter_worse_than_the_path_turns_ll128_off(tmp_path):
    _, findings, _ = validate(tmp_path, h100(te="PHB"), *H100)
    assert loud(findings) == {"NTG022"}
    f = hits(findings, "NTG022")[0]
    assert f["severity"] == "warning" and 'typeinter="PHB"' in f["message"] and "worst PIX" in f["message"]
    assert "LL128 is off" in f["message"] and "sm90" in f["message"] and 'typeinter="PIX"' in f["fix"]


def test_typeinter_better_than_the_path_claims_more_than_the_hardware(tmp_path):
    # Without GPUDirect RDMA every NIC path goes through the CPU (PHB); speeds low enough for that path.
    _, findings, doc = validate(tmp_path, h100(se=20), *H100, "--gdr", "off")
    assert doc["model"]["gpudirect_rdma"] == {"available": False, "why": "--gdr off"}
    assert loud(findings) == {"NTG022"}
    msg = hits(findings, "NTG022")[0]["message"]
    assert "worst PHB" in msg and "claims more than the hardware gives" in msg and "enables LL128" in msg


def test_typeintra_nvlink_on_a_pcie_server(tmp_path):
    _, findings, _ = validate(tmp_path, pcie(ti="NVL"), "--root", str(HOSTS / "pcie-server"))
    assert loud(findings) == {"NTG022"}
    msg = hits(findings, "NTG022")[0]["message"]
    assert 'typeintra="NVL"' in msg and "worst PIX" in msg and "enables LL128" in msg and "sm89" in msg


def test_one_gpu_typeintra_nvl_is_only_info(tmp_path):
    gh = [dict(id=0, pattern=4, crossnic=0, si=48, se=48, ti="NVL", te="P2C", channels=[(0, [0], 0)])]
    _, findings, _ = validate(tmp_path, gh, "--root", str(HOSTS / "grace-hopper"))
    assert loud(findings) == set()
    assert [f["severity"] for f in hits(findings, "NTG022")] == ["info"]


# --------------------------------------------------------------------------------------------------
# NTG023/NTG024/NTG025: speeds


def test_speed_over_what_the_links_carry(tmp_path):
    _, findings, _ = validate(tmp_path, h100(si=60), *H100)
    assert loud(findings) == {"NTG023"}
    msg = hits(findings, "NTG023")[0]["message"]
    assert "GPU 0 -> NVSwitch (NVL, 370.8 GB/s)" in msg and "7 x speedintra = 420 GB/s" in msg
    assert "at most 52.97 GB/s" in msg and "not NCCL's own search result" in msg and "overestimates" in msg
    assert hits(findings, "NTG025")  # 60 is not in sm90SpeedArrayInter either (info)


def test_speed_over_a_cpu_link_without_gdr(tmp_path):
    _, findings, _ = validate(tmp_path, h100(), *H100, "--gdr", "off")
    # In and out both cross the PCIe switch's uplink to the CPU; sends from the GPU through an Intel root complex
    # count 6/5 (followPath's INTEL_P2P_OVERHEAD): 1 + 1.2 = 2.2 x speedinter.
    over = [f for f in hits(findings, "NTG023") if 'speedinter="48"' in f["message"]]
    assert over and "-> CPU (NUMA 0) (PCI, 48 GB/s) would carry 2.2 x speedinter = 105.6 GB/s" in over[0]["message"]


def test_speed_far_under_what_the_links_carry(tmp_path):
    _, findings, _ = validate(tmp_path, h100(se=12), *H100)
    assert loud(findings) == {"NTG024"}
    msg = hits(findings, "NTG024")[0]["message"]
    assert 'speedinter="12"' in msg and "under half of the 48 GB/s" in msg and "underestimates" in msg
    assert "NCCL's own value for sm90 would be 48" in msg


def test_speed_not_in_nccls_array_is_info(tmp_path):
    _, findings, _ = validate(tmp_path, h100(si=50), *H100)
    assert loud(findings) == set()
    f = hits(findings, "NTG025")[0]
    assert f["severity"] == "info" and "sm90SpeedArrayInter" in f["message"] and 'speedintra="50"' in f["message"]


# --------------------------------------------------------------------------------------------------
# NTG026: crossnic and rails (no host needed)


def test_crossnic_0_with_paired_nets_is_never_built_and_crosses_rails(tmp_path):
    _, findings, _ = validate(tmp_path, h100(crossnic=0), *H100)
    assert loud(findings) == {"NTG026"}
    msg = hits(findings, "NTG026")[0]["message"]
    assert "never builds" in msg and "leaves on net 1" in msg and "receives it on net 0" in msg


def test_crossnic_2_with_in_equal_out_crosses_rails_on_odd_nodes(tmp_path):
    same = h100(te="PXN", si=40, se=40, channels=[(c, ring(c, c ^ 1), c) for c in range(8)])
    _, findings, doc = validate(tmp_path, same)  # no host: the rule needs none
    assert loud(findings) == {"NTG026"}
    msg = hits(findings, "NTG026")[0]["message"]
    assert "swaps channels c and c^1 on odd nodes" in msg and "crosses rails" in msg
    assert doc["model"] is None
    _, findings, _ = validate(tmp_path, same, *H100)
    assert loud(findings) == {"NTG026"} and hits(findings, "NTG030")  # PXN ends: info


def test_without_host_or_topology_the_summary_says_what_was_not_checked(tmp_path):
    path = tmp_path / "g.xml"
    path.write_text(graph_xml(h100(te="PHB")))
    res = run_cli("rings", "validate", str(path))
    assert res.returncode == 0 and "NTG022:" not in res.stdout
    assert "graph meaning not checked: NTG022-NTG031 but NTG026 need the topology NCCL reads" in res.stdout
    assert "--topo FILE" in res.stdout


# --------------------------------------------------------------------------------------------------
# NTG027: nets on non-compute NICs


def test_nets_on_storage_nics_when_nccl_ib_hca_does_not_name_the_rails(tmp_path):
    # The file is right for NCCL_IB_HCA = the rails; with every NIC visible (and no fusion), dev 1 is mlx5_1.
    _, findings, _ = validate(tmp_path, h100(), *H100, "--env", "NCCL_IB_HCA=", "--env", "NCCL_NET_MERGE_LEVEL=LOC")
    storage = [f for f in hits(findings, "NTG027") if "= mlx5_1 at GPU 1" in f["message"]]
    assert len(storage) == 1 and storage[0]["severity"] == "error"
    msg, fix = storage[0]["message"], storage[0]["fix"]
    assert "not rails (storage or front-end NICs; rails: mlx5_0, mlx5_3, " in msg and "no GPUDirect RDMA" not in msg
    assert "without GPUDirect RDMA (path PHB is farther than NCCL_NET_GDR_LEVEL P2C)" in msg
    assert "dev 1 = mlx5_1 at GPU 1 (PHB; channel 1 in, channel 0 out)" in msg
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1" in fix
    assert "then dev 1 is mlx5_3, PIX from GPU 1; dev 2 is mlx5_4, PIX from GPU 2" in fix


def test_net_far_from_its_gpu(tmp_path):
    # Channel 0 enters on GPU 7's rail (dev 7), across the CPUs from GPU 0; channel 1 leaves on it to pair them.
    chans = [(7 if c == 0 else c, ring(c, c ^ 1), 7 if c == 1 else c ^ 1) for c in range(8)]
    chans[6], chans[7] = (6, ring(6, 7), 0), (0, ring(7, 6), 6)
    _, findings, _ = validate(tmp_path, h100(te="SYS", se=20, channels=chans), *H100)
    far = hits(findings, "NTG027")
    assert len(far) == 1 and far[0]["severity"] == "warning"  # one fault: two channels, one finding
    assert far[0]["message"] == ("channels 0, 7 of the ring use 2 NETs farther from their GPU than the GPU's closest "
                                 "NET (PIX): dev 7 = mlx5_11 at GPU 0 (SYS; channel 0 in), dev 0 = mlx5_0 at GPU 7 "
                                 "(SYS; channel 7 in)")
    # (no NCCL_IB_HCA to suggest: it names the rails already)
    assert far[0]["fix"] == ("Use dev 0x0 (mlx5_0, the NET closest to GPU 0) in channel 0, dev 0x7 (mlx5_11, the NET "
                             "closest to GPU 7) in channel 7")


def _ntg027_lines(stdout: str) -> list[str]:
    return [ln for ln in stdout.splitlines() if ": NTG027: " in ln]


def test_ntg027_is_one_finding_per_fault_not_one_per_channel(tmp_path):
    # Issue 28, one finding per fault: six channel ends on three storage NICs (two each, one in and one out) were
    # three errors (one per NIC) and four channels entering far from their GPU four warnings; now one error (the
    # NETs that are not rails) and one warning (the NETs farther than the GPU's closest), each naming every NET
    # once with its channels, the element of every channel end in the evidence and the JSON locations.
    path = tmp_path / "g.xml"
    path.write_text(graph_xml(h100()))
    env = ("--root", str(HOSTS / "dgx-h100"), "--env", "NCCL_IB_HCA=", "--env", "NCCL_NET_MERGE_LEVEL=LOC")
    res = run_cli("rings", "validate", str(path), *env)
    lines = _ntg027_lines(res.stdout)
    assert len(lines) == 2, res.stdout
    assert lines[0].startswith(f"{path}:13:7: error: NTG027: channels 0-3, 6-7 of the ring use 3 NETs that are not")
    assert ("dev 1 = mlx5_1 at GPU 1 (PHB; channel 1 in, channel 0 out), dev 2 = mlx5_2 at GPU 2 (PHB; channel 2 "
            "in, channel 3 out), dev 7 = mlx5_7 at GPU 7 (PHB; channel 7 in, channel 6 out): traffic is staged "
            "through host memory") in lines[0]
    assert lines[1].startswith(f"{path}:40:7: warning: NTG027: channels 3-6 of the ring use 4 NETs farther from "
                               "their GPU than the GPU's closest NET (PIX): dev 3 = mlx5_3 at GPU 3 (PHB; channel 3 in)")
    assert "dev 4 = mlx5_4 at GPU 4 (SYS; channel 4 in)" in lines[1]
    assert "3 errors" not in res.stdout and "1 error," in res.stdout
    doc = json.loads(run_cli("rings", "validate", str(path), *env, "--format", "json").stdout)
    err = [f for f in hits(doc["findings"], "NTG027") if f["severity"] == "error"]
    assert len(err) == 1 and len(hits(doc["findings"], "NTG027")) == 2
    assert [(x["line"], x["element"]) for x in err[0]["locations"]] == [
        (13, 'channel 0 out: <net dev="0x1">'), (16, 'channel 1 in: <net dev="0x1">'),
        (28, 'channel 2 in: <net dev="0x2">'), (49, 'channel 3 out: <net dev="0x2">'),
        (85, 'channel 6 out: <net dev="0x7">'), (88, 'channel 7 in: <net dev="0x7">')]
    assert err[0]["evidence"][0] == 'line 13: <net dev="0x1"> (channel 0 leaves at GPU 1)'
    assert "then dev 1 is mlx5_3, PIX from GPU 1; dev 2 is mlx5_4, PIX from GPU 2; dev 7 is mlx5_11" in err[0]["fix"]
    assert ("or use dev 0x3 (mlx5_3, the NET closest to GPU 1) in channels 0-1, dev 0x4 (mlx5_4, the NET closest "
            "to GPU 2) in channels 2-3") in err[0]["fix"]
    # Passing: the same file under the rails as NCCL_IB_HCA has no NTG027 at all.
    assert not _ntg027_lines(run_cli("rings", "validate", str(path), *H100).stdout)


def test_ntg027_one_finding_per_fault_through_the_api():
    # The Python API gives the same single finding: the old PXN_DISABLE layout for the port-down node had five
    # channel ends far from their GPU without GPUDirect RDMA (five warnings), now one naming them.
    env = {"NCCL_PXN_DISABLE": "1", "NCCL_IB_HCA": PORT_DOWN_RAILS}
    _, findings = check_file(graph_xml(PORT_DOWN_OLD).encode(), "g.xml",
                             load_node=lambda: probe(str(HOSTS / "dgx-h100-port-down")), meaning=Meaning(env=env))
    ntg027 = [f for f in findings if f.rule == "NTG027"]
    assert len(ntg027) == 1 and ntg027[0].severity == Severity.WARNING
    msg = ntg027[0].message
    assert msg.startswith("channels 0-1, 4-6 of the ring use 5 NETs farther from their GPU than the GPU's closest NET "
                          "(PIX), without GPUDirect RDMA (path PHB is farther than NCCL_NET_GDR_LEVEL P2C): ")
    assert "dev 0 = mlx5_0 at GPU 2 (PHB; channel 0 out)" in msg and "dev 6 = mlx5_11 at GPU 6" in msg
    assert len(ntg027[0].locations) == 5
    assert ntg027[0].fix.startswith("Use dev 0x1 (mlx5_4, the NET closest to GPU 2) in channel 0, dev 0x2")


# --------------------------------------------------------------------------------------------------
# NTG028: GPU sets


def test_graph_for_4_of_8_gpus(tmp_path):
    four = [dict(id=0, pattern=4, crossnic=0, si=60, se=60, ti="NVL", te="PIX",
                 channels=[(None, [(c + i) % 4 for i in range(4)], None) for c in range(4)])]
    rc, findings, _ = validate(tmp_path, four, *H100)
    assert rc == 1 and loud(findings) == {"NTG028"}
    msg = hits(findings, "NTG028")[0]["message"]
    assert "GPUs 0-3 of the 8" in msg and "only a job on exactly these 4 GPUs" in msg and "1-3 of them fails" in msg
    assert not hits(findings, "NTH013")  # said once, by NTG028


def test_channels_with_different_gpu_sets(tmp_path):
    split = [dict(id=0, pattern=4, crossnic=0, si=60, se=60, ti="NVL", te="PIX",
                  channels=[(None, [0, 1, 2, 3] if c % 2 == 0 else [4, 5, 6, 7], None) for c in range(8)])]
    rc, findings, _ = validate(tmp_path, split, *H100)
    assert rc == 1 and loud(findings) == {"NTG028"}
    assert "channel 0: 0-3; channel 1: 4-7" in hits(findings, "NTG028")[0]["message"]


def test_gpu_dev_the_node_does_not_have(tmp_path):
    chans = [(c, [9 if g == 7 else g for g in ring(c, c ^ 1)], c ^ 1) for c in range(8)]
    rc, findings, _ = validate(tmp_path, h100(channels=chans), *H100)
    assert rc == 1 and loud(findings) == {"NTG028"}
    msg = hits(findings, "NTG028")[0]["message"]
    assert "GPU 9" in msg and "dev 9 not found" in msg and "every communicator init" in msg
    assert not hits(findings, "NTH012")  # the same element: said once


# --------------------------------------------------------------------------------------------------
# NTG029: net devs after NCCL_IB_HCA and fusion


def test_physical_dev_of_a_fused_dual_port_card(tmp_path):
    rc, findings, doc = validate(tmp_path, pcie(dev=0), "--root", str(HOSTS / "pcie-server"))
    assert rc == 1 and loud(findings) == {"NTG029"}
    f = hits(findings, "NTG029")[0]
    assert "fuses mlx5_0, mlx5_1 into one virtual NIC mlx5_0+mlx5_1 (dev 2)" in f["message"]
    assert "fails at connect time" in f["message"]
    assert "NCCL_NET_MERGE_LEVEL=LOC" in f["fix"] and "dev 0x2 (mlx5_0+mlx5_1)" in f["fix"]
    assert doc["model"]["nets"] == [{"dev": 2, "name": "mlx5_0+mlx5_1"}]
    # The fused dev itself is right: no NTH014 for it either (the host check numbers nets after fusion too).
    rc, findings, _ = validate(tmp_path, pcie(), "--root", str(HOSTS / "pcie-server"))
    assert rc == 0 and findings == []
    # With fusion off, the physical devs exist and the virtual one does not.
    rc, findings, _ = validate(tmp_path, pcie(dev=0), "--root", str(HOSTS / "pcie-server"),
                               "--env", "NCCL_NET_MERGE_LEVEL=LOC")
    assert [f["message"].split(" (")[0] for f in hits(findings, "NTG029")] == ['<net dev="0x2">']


def test_host_check_numbers_nets_after_fusion(tmp_path):
    """NTH014 (the graph against the host, also what lint runs for a node's NCCL_GRAPH_FILE) counts NCCL's net
    devices after NIC fusion: on pcie-server the dual-function card is one virtual dev 2, so dev 2 exists and the
    physical dev 0 does not (the plain port count said the opposite)."""
    path = tmp_path / "graph.xml"
    path.write_text(graph_xml(pcie()))
    res = run_cli("topo", "validate", str(path), "--root", str(HOSTS / "pcie-server"), "--format", "json")
    assert res.returncode == 0 and not hits(json.loads(res.stdout)["findings"], "NTH014"), res.stdout
    path.write_text(graph_xml(pcie(dev=0)))
    res = run_cli("topo", "validate", str(path), "--root", str(HOSTS / "pcie-server"), "--format", "json")
    found = hits(json.loads(res.stdout)["findings"], "NTH014")
    # the channel's net in and net out: one finding for the fault, at both lines (issue 28)
    assert res.returncode == 1 and len(found) == 1, res.stdout
    assert [(loc["line"], loc["element"]) for loc in found[0]["locations"]] == [(4, '<net dev="0x0">'),
                                                                              (9, '<net dev="0x0">')]
    assert {f["message"] for f in found} == {('<net dev="0x0"> is net 0; NCCL\'s net devices on this host, after NCCL_IB_HCA '
                                   "and NIC fusion, are 2 (mlx5_0+mlx5_1) (2 elements, lines 4, 9)")}


def test_net_dev_beyond_the_plugins_count(tmp_path):
    chans = [(9 if c == 0 else c, ring(c, c ^ 1), 9 if c == 1 else c ^ 1) for c in range(8)]
    rc, findings, _ = validate(tmp_path, h100(channels=chans), *H100)
    assert rc == 1 and loud(findings) == {"NTG029"}
    msg = hits(findings, "NTG029")[0]["message"]
    assert "reports 8 device(s) here (devs 0-7" in msg and "fails at connect time" in msg
    assert not hits(findings, "NTH014")


# --------------------------------------------------------------------------------------------------
# NTG030, NTG031


def test_channels_ending_on_a_pxn_gpu(tmp_path):
    # crossnic 0: channel c enters and leaves on rail c, ending on GPU c+1, which reaches rail c through GPU c.
    pxn = h100(crossnic=0, te="PXN", si=40, channels=[(c, ring(c, (c + 1) % 8), c) for c in range(8)])
    _, findings, _ = validate(tmp_path, pxn, *H100)
    assert loud(findings) == set()
    f = hits(findings, "NTG030")[0]
    assert f["severity"] == "info" and "GPU 1 -> GPU 0 -> mlx5_0" in f["message"]
    assert "user-buffer registration" in f["message"] and "NCCL_PXN_DISABLE=1" in f["message"]


def test_tree_pattern_3_below_sm90(tmp_path):
    tree = [dict(id=1, pattern=3, crossnic=0, si=24, se=24, ti="NVL", te="PIX",
                 channels=[(c, [c] + [g for g in range(8) if g != c], c) for c in range(8)])]
    _, findings, _ = validate(tmp_path, tree, "--root", str(HOSTS / "dgx-a100"), "--env", f"NCCL_IB_HCA={A100_RAILS}")
    assert loud(findings) == set()
    f = hits(findings, "NTG031")[0]
    assert "0.85" in f["message"] and "BALANCED_TREE" in f["message"] and "sm80" in f["message"]


# --------------------------------------------------------------------------------------------------
# Inputs: the host's NCCL_TOPO_FILE, bad options, coverage


def test_host_nccl_topo_file_is_the_topology(tmp_path):
    tree = tmp_path / "host"
    shutil.copytree(HOSTS / "dgx-h100", tree, symlinks=True)
    topo = tree / "etc/nccl-topo.xml"
    assert run_cli("topo", "generate", *H100, "-o", str(topo)).returncode == 0
    # The file says 200 Gb/s NICs (the file wins over the plugin): 48 GB/s per channel no longer fits.
    topo.write_text(topo.read_text().replace('speed="400000"', 'speed="200000"'))
    conf = tree / "etc/nccl.conf"
    conf.write_text(conf.read_text() + "NCCL_TOPO_FILE=/etc/nccl-topo.xml\n")
    _, findings, doc = validate(tmp_path, h100(), "--root", str(tree))
    assert doc["model"]["topology"].startswith("NCCL_TOPO_FILE=/etc/nccl-topo.xml")
    assert any("25 GB/s" in f["message"] for f in hits(findings, "NTG023"))


@pytest.mark.parametrize("args,code,text", [
    (["--env", "NCCL_IB_HCA"], 2, "KEY=VALUE"),
    (["--env", "IB_HCA=x"], 2, "only NCCL_* variables"),
    (["--topo", "/nonexistent/topo.xml"], 3, "topo.xml"),
])
def test_bad_inputs(tmp_path, args, code, text):
    path = tmp_path / "g.xml"
    path.write_text(graph_xml(h100()))
    res = run_cli("rings", "validate", str(path), *args)
    assert res.returncode == code and text in res.stderr and "Traceback" not in res.stderr


def test_a_graph_file_as_topology_is_refused(tmp_path):
    path = tmp_path / "g.xml"
    path.write_text(graph_xml(h100()))
    res = run_cli("rings", "validate", str(path), "--topo", str(path))
    assert res.returncode == 3 and "not a topology file" in res.stderr


def test_every_meaning_rule_has_a_test_here():
    tested = {"NTG022", "NTG023", "NTG024", "NTG025", "NTG026", "NTG027", "NTG028", "NTG029", "NTG030", "NTG031",
              "NTG033", "NTG034"}
    assert MEANING_RULES == tested


# --------------------------------------------------------------------------------------------------
# NTG033/NTG034: the node's settings (issue 28: what rings graph refuses to write, on a file someone else wrote)

#: NCCL's own layout for dgx-h100 at its default settings (crossnic 2: channel c enters on rail c, leaves on c^1).
PAIRED = h100()
#: NCCL's own layout under NCCL_CROSS_NIC=0 (each channel on one NIC; the last GPU reaches it through PXN).
ONE_NIC_PXN = h100(crossnic=0, si=45, se=45, te="PXN",
                   channels=[(c, [c] + [(c - k) % 8 for k in range(1, 8)], c) for c in range(8)])
#: What rings graph wrote before issue 28 for dgx-h100-port-down under NCCL_PXN_DISABLE=1 (7 x 48/22 NVL/SYS, where
#: NCCL 2.30.7 alone builds 6 x 48/48 NVL/PIX: tests/test_rings_settings.py).
_PD = [0, 7, 6, 5, 4, 1, 3, 2]
PORT_DOWN_OLD = h100(crossnic=0, se=22, te="SYS",
                     channels=[(c, [_PD[(k - c) % 8] for k in range(8)], c) for c in range(7)])
PORT_DOWN_RAILS = "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"


def _with_settings(tmp_path, graphs: list[dict], host: str, *env: str) -> list[dict]:
    args = [a for e in env for a in ("--env", e)]
    return validate(tmp_path, graphs, "--root", str(HOSTS / host), *args)[1]


def test_crossnic_2_under_cross_nic_0_names_the_setting(tmp_path):
    findings = _with_settings(tmp_path, PAIRED, "dgx-h100", "NCCL_CROSS_NIC=0")
    hit = hits(findings, "NTG033")
    assert len(hit) == 1 and not hits(findings, "NTG026")
    msg = hit[0]["message"]
    assert msg.startswith("NCCL_CROSS_NIC=0 (--env)") and 'crossnic="2"' in msg
    assert 'skips only crossnic="1" graphs' in msg and "channels 0-7 enter on one net and leave on another" in msg
    assert "rings graph --env NCCL_CROSS_NIC=0" in hit[0]["fix"]
    # Passing: the same file under the node's own settings, NCCL's own CROSS_NIC=0 layout under the setting.
    assert not hits(_with_settings(tmp_path, PAIRED, "dgx-h100"), "NTG033")
    assert not hits(_with_settings(tmp_path, ONE_NIC_PXN, "dgx-h100", "NCCL_CROSS_NIC=0"), "NTG033")


def test_pxn_type_under_pxn_disable_names_the_setting(tmp_path):
    findings = _with_settings(tmp_path, ONE_NIC_PXN, "dgx-h100", "NCCL_PXN_DISABLE=1")
    hit = hits(findings, "NTG033")
    assert len(hit) == 1
    msg = hit[0]["message"]
    assert msg.startswith("under NCCL_PXN_DISABLE=1 (--env)") and 'declares typeinter="PXN"' in msg
    assert "without it PXN" in msg and "SYS" in msg
    assert not [f for f in hits(findings, "NTG022") if f["message"].startswith("typeinter=")]
    ntg034 = hits(findings, "NTG034")  # and NCCL's own search does better under it
    assert len(ntg034) == 1 and "ring 8 x 45 GB/s against NCCL's own 8 x 48" in ntg034[0]["message"]


def test_worse_than_nccl_under_pxn_disable(tmp_path):
    findings = _with_settings(tmp_path, PORT_DOWN_OLD, "dgx-h100-port-down", "NCCL_PXN_DISABLE=1",
                              "NCCL_IB_HCA=" + PORT_DOWN_RAILS)
    hit = hits(findings, "NTG034")
    assert len(hit) == 1
    msg = hit[0]["message"]
    assert msg.startswith("under NCCL_PXN_DISABLE=1 (--env) NCCL's own search does better than this file")
    assert "ring 7 x 22 GB/s against NCCL's own 6 x 48" in msg and "ring SYS at the NICs against NCCL's own PIX" in msg
    assert "ring/LL128 off" in msg and "rings graph --env" in hit[0]["fix"]
    # Passing: without a restricting setting the file is not judged against NCCL's own search.
    assert not hits(_with_settings(tmp_path, PORT_DOWN_OLD, "dgx-h100-port-down", "NCCL_IB_HCA=" + PORT_DOWN_RAILS),
                    "NTG034")


def test_settings_api_and_explain():
    _, findings = check_file(graph_xml(PAIRED).encode(), "g.xml", load_node=lambda: probe(str(HOSTS / "dgx-h100")),
                             meaning=Meaning(env={"NCCL_CROSS_NIC": "0"}))
    assert [f.rule for f in findings if f.rule in ("NTG026", "NTG033")] == ["NTG033"]
    for rule_id in ("NTG033", "NTG034"):
        res = run_cli("explain", rule_id)
        assert res.returncode == 0 and rule_id in res.stdout
