"""rings graph / rings validate: a graph file that never does worse than NCCL's own search (issue 14).

Expected values are NCCL 2.30.7's own results (tests/data/nccl_expected; the CPU harness over NCCL's unmodified
src/graph code, commit 5067397c): with NCCL_PXN_DISABLE=1 on cloud-vm-flat, NCCL's own ring is 8 x 48/48 NVL/PHB
with LL128 off (ring AllReduce LL128 0 GB/s), and loading the graph `rings graph` writes there gives NCCL 8 x 48/48
NVL/PIX crossNic 2 with ring LL128 at 156.59 GB/s, Simple 204.8 unchanged, the tree unchanged (checked with the
harness on the file this test writes; the link replay fits at scale 1.0).
"""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import HOSTS, run_cli
from ncclctl.nccl.xml import parse_nccl_xml


def _meaning_rule(rule_id: str) -> bool:
    return rule_id.startswith("NTG") and 22 <= int(rule_id[3:]) <= 31


GRAPH_HOSTS = ["dgx-h100", "dgx-a100", "hgx-h100-roce", "cloud-vm-flat", "pcie-server", "grace-hopper",
               "dgx-h100-port-down"]


@pytest.mark.parametrize("host", GRAPH_HOSTS)
def test_nothing_written_when_nccl_finds_the_layout_itself(host, tmp_path):
    out = tmp_path / "graph.xml"
    result = run_cli("rings", "graph", "--root", str(HOSTS / host), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert not out.exists()
    assert "NCCL's own search already finds the best layout" in result.stderr
    assert "--force" in result.stderr


@pytest.mark.parametrize("host", GRAPH_HOSTS)
def test_forced_file_is_nccls_own_layout_and_validates_clean(host, golden, tmp_path):
    out = tmp_path / "graph.xml"
    result = run_cli("rings", "graph", "--root", str(HOSTS / host), "-o", str(out), "--force")
    assert result.returncode == 0, result.stderr
    golden(f"rings/{host}.xml", out.read_text())
    hca = _rails(host)  # one `ncclctl rails` run for the pin and both predictions (it was run up to five times)
    pin = ["--env", "NCCL_IB_HCA=" + hca] if "NCCL_IB_HCA is not set" in result.stderr else []
    checked = run_cli("rings", "validate", str(out), "--root", str(HOSTS / host), "--format", "json",
                      "--fail-on", "warning", *pin)
    report = json.loads(checked.stdout)
    loud = [f for f in report["findings"] if f["severity"] != "info"]
    assert loud == [], loud
    res = parse_nccl_xml(out.read_bytes(), kind="graph")
    assert res.ok and "rank=" not in out.read_text()
    # The file, loaded as NCCL loads it, gives what NCCL's own search gives.
    own = json.loads(run_cli("topo", "predict", "--root", str(HOSTS / host), "-N", "2", "--format", "json",
                             *(["--env", "NCCL_IB_HCA=" + hca] if hca else [])).stdout)
    loaded = json.loads(run_cli("topo", "predict", "--root", str(HOSTS / host), "-N", "2", "--format", "json",
                                "--graph", str(out),
                                *(["--env", "NCCL_IB_HCA=" + hca] if hca else [])).stdout)
    assert loaded["graphs"]["best"] == own["graphs"]["best"]
    assert loaded["graphs"]["ring"] == own["graphs"]["ring"]


def _rails(host: str) -> str | None:
    out = run_cli("rails", "--root", str(HOSTS / host)).stdout
    line = next((x for x in out.splitlines() if x.startswith("NCCL_IB_HCA=")), None)
    return line.split("=", 1)[1] if line else None


def test_pxn_disable_on_a_vm_gets_a_file_that_turns_ll128_back_on(tmp_path):
    out = tmp_path / "graph.xml"
    result = run_cli("rings", "graph", "--root", str(HOSTS / "cloud-vm-flat"), "--env", "NCCL_PXN_DISABLE=1",
                     "-o", str(out), "--format", "json")
    assert result.returncode == 0, result.stderr
    rec = json.loads(result.stdout)
    assert rec["written"] is True and rec["improves"] is True
    assert rec["nccl_own"]["ring"]["type_inter"] == "PHB"
    assert rec["chosen"]["ring"] == {"nchannels": 8, "bw_intra": 48.0, "bw_inter": 48.0, "type_intra": "NVL",
                                     "type_inter": "PIX", "crossnic": 2}
    assert rec["pinned_settings"]["NCCL_IB_HCA"].startswith("=mlx5_ib0:1,")
    assert "ring/LL128 back on" in rec["reason"]
    text = out.read_text()
    assert text.count("<graph ") == 1  # the ring only: NCCL searches the tree itself
    hca = rec["pinned_settings"]["NCCL_IB_HCA"]
    doc = json.loads(run_cli("topo", "predict", "--root", str(HOSTS / "cloud-vm-flat"), "-N", "2", "--format",
                             "json", "--env", "NCCL_PXN_DISABLE=1", "--env", "NCCL_IB_HCA=" + hca, "--graph",
                             str(out)).stdout)
    ring = doc["graphs"]["allreduce"]["ring"]
    assert ring["LL128"] == {"gbps": 156.59, "enabled": True} and ring["Simple"]["gbps"] == 204.8


def test_graph_file_in_etc_nccl_conf_is_flagged(tmp_path):
    tree = tmp_path / "host"
    shutil.copytree(HOSTS / "dgx-h100", tree, symlinks=True)
    conf = tree / "etc/nccl.conf"
    conf.write_text(conf.read_text() + "NCCL_GRAPH_FILE=/etc/nccl-graph.xml\n")
    graph = tmp_path / "g.xml"
    run_cli("rings", "graph", "--root", str(HOSTS / "dgx-h100"), "-o", str(graph), "--force")
    result = run_cli("rings", "validate", str(graph), "--root", str(tree), "--format", "json")
    hits = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "NTH015"]
    assert len(hits) == 1 and hits[0]["subject"] == "/etc/nccl.conf" and hits[0]["line"] == 3


def test_rings_validate_refuses_topology_files():
    result = run_cli("rings", "validate", str(HOSTS.parent.parent / "tests/golden/topo/dgx-h100.xml"))
    assert result.returncode == 3 and "topology file" in result.stderr


def test_no_gpus_no_graph():
    result = run_cli("rings", "graph", "--root", str(HOSTS / "cpu-only"))
    assert result.returncode == 3 and "no GPUs" in result.stderr


def test_down_port_is_not_in_the_plan():
    result = run_cli("rings", "graph", "--root", str(HOSTS / "dgx-h100-port-down"), "--force", "--format", "json")
    rec = json.loads(result.stdout)
    assert "mlx5_3:1" not in rec["pinned_settings"].get("NCCL_IB_HCA", "")
    # NCCL 2.30.7 on this host: 7 channels, the down rail's GPU never at a channel end
    assert rec["nccl_own"]["ring"]["nchannels"] == 7
    assert all(c["net_in"] != "mlx5_3" and c["net_out"] != "mlx5_3" for c in rec["nccl_own"]["channels"])
