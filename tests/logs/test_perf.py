"""``ncclctl perf check``: nccl-tests output of every shape, the expected bus bandwidth, the PERF rules."""

from __future__ import annotations

import json
import re

import pytest

from ncclctl.logs import perf
from ncclctl.registry import rules_of

from conftest import REPO, run_cli

PERF = REPO / "fixtures" / "logs" / "perf"
HOSTS = REPO / "fixtures" / "hosts"


def _tests(text: str, name: str = "t.txt"):
    return perf.parse_results([text.split("\n")], name)


def test_every_fixture_shape_is_read():
    t = perf.read_results([str(PERF / "all_reduce-h100-1node.txt")])[0]
    assert len(t) == 1 and t[0].name == "all_reduce" and t[0].tests_version == "2.19.6" and t[0].nranks == 8
    assert len(t[0].rows) == 31 and t[0].rows[-1].size == 8 << 30 and t[0].rows[-1].root == -1
    assert t[0].footer and t[0].concluded and t[0].avg_busbw == pytest.approx(133.877)
    j = perf.read_results([str(PERF / "all_reduce-h100-1node.json")])[0][0]
    assert j.json and j.name == "all_reduce" and len(j.rows) == 31 and j.gpu_names == ["NVIDIA H100 80GB HBM3"]
    assert j.rows[-1].oop.busbw == pytest.approx(t[0].rows[-1].oop.busbw, rel=1e-3)
    old = perf.read_results([str(PERF / "all_gather-t4-v2.4-format.txt")])[0][0]
    assert perf.name_test(old) == "all_gather" and old.named_by.startswith("inferred") and old.rows[0].root is None
    assert old.rows[-1].oop.wrong == 0 and old.devices[1]["host"] == "node1"
    mpi = perf.read_results([str(PERF / "alltoall-mpirun-aborted.txt")])[0][0]
    assert mpi.name == "alltoall" and len(mpi.rows) == 12 and mpi.errors and not mpi.footer
    assert mpi.hosts == ["a100-01", "a100-02"]


def test_pasted_and_old_tables():
    """Rows without a header (a paste), the 2.4-era table without redop, per-iteration and timestamp columns."""
    rows = ("       32768          8192     float     sum      -1    18.66    1.76    3.07       0    17.95    1.83"
            "    3.20       0\n")
    t = _tests(rows)[0]
    assert t.rows[0].root == -1 and t.rows[0].ip.busbw == 3.20
    old = _tests("   134217728      16777216   float   3298.6   20.34   20.34  0e+00   3070.3   21.86   21.86  0e+00\n"
                 "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 6.6972 \n")[0]
    assert old.rows[0].redop == "" and old.rows[0].ip.busbw == 21.86 and old.footer
    # the old 'error' column is the largest relative error: float rounding is not a wrong result
    err = _tests("#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
                 "           8             2   float     sum    59.98    0.00    0.00  2e-07    56.81    0.00    0.00  3e-01\n")[0]
    assert err.rows[0].oop.wrong == 0 and err.rows[0].ip.wrong == 1
    per_iter = _tests(
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    "
        "i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%\n"
        "  1073741824     268435456     float     sum      -1   5239.6  204.93  358.63       0   5200.1   5300.2   "
        "5290.0     0.40   5187.2  207.00  362.25       0   5150.0   5250.0   5240.0     0.35\n")[0]
    assert per_iter.rows[0].oop.busbw == 358.63 and per_iter.rows[0].ip.busbw == 362.25
    stamp = _tests("  1073741824     268435456     float     sum      -1   5239.6  204.93  358.63       0   5187.2"
                   "  207.00  362.25       0  2026-05-04 10:00:01\n")[0]
    assert stamp.rows[0].ip.busbw == 362.25


@pytest.mark.parametrize("name,hw,nodes,want", [
    ("all_reduce", perf.Hardware("h", nvlink_gbs=450.0, nvswitch=True, gpus_per_node=8), 1, 360.0),
    ("all_gather", perf.Hardware("h", nvlink_gbs=300.0, nvswitch=True, gpus_per_node=8), 1, 240.0),
    ("all_reduce", perf.Hardware("h", pcie_gbs=31.5, gpus_per_node=4), 1, 25.2),
    # 8 x 200 Gb/s HDR = 200 GB/s x 0.92 = 184 < NVLink 240
    ("all_reduce", perf.Hardware("h", nvlink_gbs=300.0, nvswitch=True, gpus_per_node=8,
                                 nics=[("mlx5_%d" % i, 200.0, "InfiniBand") for i in range(8)]), 2, 184.0),
    # 8 x 400 Gb/s NDR = 368 GB/s, capped by NVLink 450 x 0.8 = 360
    ("all_reduce", perf.Hardware("h", nvlink_gbs=450.0, nvswitch=True, gpus_per_node=8,
                                 nics=[("mlx5_%d" % i, 400.0, "InfiniBand") for i in range(8)]), 2, 360.0),
    # alltoall: each GPU's share (368 / 8 = 46) x N/(N-1) = 2 x (n-1)/n = 15/16
    ("alltoall", perf.Hardware("h", nvlink_gbs=450.0, nvswitch=True, gpus_per_node=8,
                               nics=[("mlx5_%d" % i, 400.0, "InfiniBand") for i in range(8)]), 2, 86.25),
    ("sendrecv", perf.Hardware("h", nvlink_gbs=450.0, nvswitch=True, gpus_per_node=8,
                               nics=[("mlx5_%d" % i, 400.0, "Ethernet") for i in range(8)]), 2, 42.5),
])
def test_expected_bus_bandwidth(name, hw, nodes, want):
    e = perf.expect(name, hw, nodes=nodes, ranks=8 * nodes)
    assert e.busbw == pytest.approx(want, rel=1e-3), e.why


def test_no_expectation_says_why():
    assert perf.expect("all_reduce", None, nodes=1, ranks=8).why.startswith("the hardware is unknown")
    hw = perf.Hardware("h", nvlink_gbs=300.0, nvswitch=False, gpus_per_node=8)
    assert "without NVSwitch" in perf.expect("all_reduce", hw, nodes=1, ranks=8).why
    assert "NICs are unknown" in perf.expect("all_reduce", perf.Hardware("h", nvlink_gbs=450.0, nvswitch=True),
                                             nodes=2, ranks=16).why
    assert "no bandwidth model" in perf.expect("hypercube", perf.Hardware("h", pcie_gbs=31.5), nodes=1, ranks=2).why


def test_hardware_from_the_node_and_from_gpu_names():
    hw = perf.hardware_from_node(perf_node("dgx-h100"), "dgx-h100")
    assert hw.nvlink_gbs == 450.0 and hw.nvswitch and hw.gpus_per_node == 8
    assert len(hw.nics) == 8 and {g for _n, g, _l in hw.nics} == {400.0}
    a100 = perf.hardware_from_node(perf_node("dgx-a100"), "dgx-a100")
    assert a100.nvlink_gbs == 300.0
    pcie = perf.hardware_from_node(perf_node("pcie-server"), "pcie-server")
    assert pcie.nvlink_gbs is None and pcie.pcie_gbs
    t = perf.read_results([str(PERF / "all_reduce-h100-1node.txt")])[0][0]
    assert perf.hardware_from_names(t).nvlink_gbs == 450.0
    t.devices = [{"name": "NVIDIA H100 PCIe"}]
    assert perf.hardware_from_names(t) is None


def perf_node(host: str):
    from ncclctl.probe import probe

    return probe(str(HOSTS / host))


def _check(*args: str):
    r = run_cli("perf", "check", *args, "-f", "json")
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    return r.returncode, {f["rule"]: f for f in doc["findings"]}, doc


def test_perf_rules_fire():
    rc, found, doc = _check(str(PERF / "all_reduce-h100-1node.txt"))
    assert rc == 0 and found == {} and doc["results"][0]["efficiency"] == pytest.approx(1.01, abs=0.01)
    rc, found, _ = _check(str(PERF / "all_reduce-h100-2nodes-gdr-off.txt"), "--root", str(HOSTS / "dgx-h100"))
    assert rc == 1 and found["PERF001"]["severity"] == "error"
    assert "12% of the expected 360 GB/s" in found["PERF001"]["message"]
    assert "LOG001" in found["PERF001"]["message"]  # the cause from the NCCL lines of the same run
    rc, found, _ = _check(str(PERF / "all_reduce-wrong-results.txt"))
    assert set(found) == {"PERF002", "PERF004"} and "from 1 GiB" in found["PERF002"]["message"]
    rc, found, _ = _check(str(PERF / "alltoall-mpirun-aborted.txt"))
    assert set(found) == {"PERF005"} and "remote process exited" in found["PERF005"]["message"]
    rc, found, _ = _check(str(PERF / "all_gather-t4-v2.4-format.txt"))
    assert set(found) == {"PERF003"} and found["PERF003"]["severity"] == "info"


def test_efficiency_thresholds_nodes_and_rule_selection(tmp_path):
    f = str(PERF / "all_reduce-h100-1node.txt")
    # 363 GB/s against a model of 2 nodes x 8 x 400 Gb/s: still capped by NVLink: fine
    rc, found, doc = _check(f, "--root", str(HOSTS / "dgx-h100"), "--nodes", "2")
    assert rc == 0 and doc["results"][0]["nodes"] == 2
    # against an A100 node's expectation (240 GB/s), the H100 result is over 100%
    rc, found, doc = _check(f, "--root", str(HOSTS / "dgx-a100"))
    assert doc["results"][0]["efficiency"] > 1.4
    slow = tmp_path / "slow.txt"
    slow.write_text((PERF / "all_reduce-h100-1node.txt").read_text().replace("NVIDIA H100 80GB HBM3", "NVIDIA H800"))
    rc, found, _ = _check(str(slow))  # H800: 200 GB/s x 0.8 = 160 expected: fine
    assert rc == 0
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rules:\n  PERF001: {options: {min_efficiency: 1.2, warn_efficiency: 1.3}}\n")
    rc, found, _ = _check(f, "-c", str(cfg))
    assert rc == 1 and found["PERF001"]["severity"] == "error"
    rc, found, _ = _check(f, "--min-efficiency", "0.9")
    assert rc == 0
    cfg.write_text("rules:\n  PERF001: {options: {min_efficiency: 0.5, warn_efficiency: 1.2}}\n")
    rc, found, _ = _check(f, "-c", str(cfg))
    assert rc == 0 and found["PERF001"]["severity"] == "warning"
    r = run_cli("perf", "check", f, "--rule", "LOG001")
    assert r.returncode == 2 and "ncclctl log check" in r.stderr


def test_folder_text_output_and_bad_inputs(tmp_path):
    r = run_cli("perf", "check", str(PERF))
    assert r.returncode == 1 and "expected ~360 GB/s" in r.stdout and "efficiency 101%" in r.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": [1, 2')
    b = run_cli("perf", "check", str(bad))
    assert b.returncode == 3 and "not nccl-tests JSON" in b.stderr and "Traceback" not in b.stderr
    bad.write_text('{"x": 1}')
    assert run_cli("perf", "check", str(bad)).returncode == 3
    none = tmp_path / "none.txt"
    none.write_text("hello\n")
    n = run_cli("perf", "check", str(none))
    assert n.returncode == 0 and "no nccl-tests result" in n.stdout


def test_every_perf_rule_is_asserted():
    text = (REPO / "tests" / "logs" / "test_perf.py").read_text().split("def test_every_perf_rule")[0]
    asserted = set(re.findall(r"PERF\d{3}", text))
    assert sorted(r.id for r in rules_of(scope="perf") if r.id not in asserted) == []
