"""LOG037 and ``log show``: the rails and planes NCCL 2.30.7+/2.32 assigned, read from the log and held against each
other, ``--fabric FILE`` and the node's rail table (``--root``). Fixtures: authored lines in NCCL's formats."""

from __future__ import annotations

import json

from ncclctl.logs.check import check
from ncclctl.logs.parse import read_text
from ncclctl.logs.rails import id_text, nic_ids
from tests.conftest import REPO, run_cli

LOGS = REPO / "fixtures" / "logs"
FAB = REPO / "fixtures" / "fabric" / "ib-small"
H = "node01:100:100 [0] NCCL INFO "


def _log037(findings):
    return [f for f in findings if f.rule == "LOG037"]


def test_lines_of_each_release_are_read():
    ls = read_text("\n".join([
        H + "NCCL version 2.32.3+cuda12.9",
        H + "NET/IB : Made virtual device [0] name=mlx5_0 speed=400000 ndevs=1 rail=3 plane=1",
        H + "NET/IB : Made virtual device [1] name=mlx5_1 speed=400000 ndevs=1 rail=-1 plane=-1",
        H + "NET/IB : Made virtual device [2] name=mlx5_0+mlx5_1 speed=800000 ndevs=2 rail=-1 plane=16387",
        H + "NET/IB : Using [0]mlx5_0:1:3:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>",
        # 2.32: the topology's ids, the plugin's in parentheses; none from the plugin: NCCL derives its own
        H + "ncclTopoPopulateNics : Filled mlx5_1 in topo with pciPath=/sys/x net=1 gin=0 rma=0 keep=1 coll=0 "
            "rail=65538 (-1) plane=65537 (-1)",
        # 2.31: no parentheses
        H + "ncclTopoPopulateNics : Filled mlx5_0 in topo with pciPath=/sys/y net=1 gin=0 rma=0 keep=1 coll=0 "
            "rail=3 plane=1",
        # before 2.31: neither
        H + "ncclTopoPopulateNics : Filled mlx5_9 in topo with pciPath=/sys/z net=1 gin=0 rma=0 keep=1 coll=0",
    ]) + "\n")
    p = next(iter(ls.procs.values()))
    assert ls.unrecognised == 0
    assert [(r.kind, r.name, r.rail, r.plane, r.plugin_rail) for r in p.rails] == [
        ("vdev", "mlx5_0", 3, 1, None), ("vdev", "mlx5_1", -1, -1, None), ("vdev", "mlx5_0+mlx5_1", -1, 16387, None),
        ("topo", "mlx5_1", 65538, 65537, -1), ("topo", "mlx5_0", 3, 1, None)]
    assert [(n.name, n.rail, n.plane) for n in p.ib] == [("mlx5_0", 3, 1), ("mlx5_1", None, None)]
    ids = nic_ids(p)
    assert (ids["mlx5_0"].rail, ids["mlx5_0"].plane, ids["mlx5_0"].derived) == (3, 1, False)
    # derived ids are NCCL's numbering, never compared; fused devices are left out
    assert (ids["mlx5_1"].rail, ids["mlx5_1"].plane, ids["mlx5_1"].derived) == (None, None, True)
    assert set(ids) == {"mlx5_0", "mlx5_1"}
    assert [id_text(v) for v in (-1, 2, 65538, 0x4000 | 0b11)] == ["-", "2", "NCCL's 2", "fused 0+1"]


def test_two_nics_of_a_node_on_one_rail_api():
    text = "\n".join([H + "NET/IB : Made virtual device [0] name=mlx5_0 speed=400000 ndevs=1 rail=0 plane=0",
                      H + "NET/IB : Made virtual device [1] name=mlx5_1 speed=400000 ndevs=1 rail=0 plane=0"]) + "\n"
    f = _log037(check(read_text(text, "a.log")))
    assert len(f) == 1 and f[0].severity.value == "warning" and "mlx5_0, mlx5_1 on one rail 0 plane 0" in f[0].message
    assert f[0].subject == "a.log" and f[0].line == 1 and "NCCL_IB_HCA" in f[0].fix
    ok = text.replace("name=mlx5_1 speed=400000 ndevs=1 rail=0", "name=mlx5_1 speed=400000 ndevs=1 rail=1")
    assert _log037(check(read_text(ok, "a.log"))) == []
    # rail 0 without a plane beside rail 0 plane 0 twice (a mangled line must not stop the check)
    mixed = text + H + "NET/IB : Made virtual device [2] name=mlx5_2 speed=400000 ndevs=1 rail=0 plane=-1\n"
    assert len(_log037(check(read_text(mixed, "a.log")))) == 1
    # NCCL's own (derived) ids are not a person's: never a finding
    derived = text.replace("rail=0 plane=0", "rail=-1 plane=-1")
    assert _log037(check(read_text(derived, "a.log"))) == []


def test_check_against_the_fabric_cli():
    agree = run_cli("log", "check", str(LOGS / "v2.32-rails-agree.log"), "--fabric", str(FAB / "ibnetdiscover.txt"),
                    "--show-info", "--format", "json")
    assert agree.returncode == 0, agree.stderr
    assert not [f for f in json.loads(agree.stdout)["findings"] if f["rule"] == "LOG037"]
    # the fabric's gpu02 has mlx5_3 and mlx5_4 swapped: NCCL's rails 1 and 2 each hold two fabric rails
    swapped = run_cli("log", "check", str(LOGS / "v2.32-rails-agree.log"), "--fabric",
                      str(FAB / "ibnetdiscover-miscabled.txt"), "--format", "json")
    assert swapped.returncode == 1
    f = [x for x in json.loads(swapped.stdout)["findings"] if x["rule"] == "LOG037"]
    assert [x["severity"] for x in f] == ["error", "error"]
    assert "NCCL's rail 1 holds NICs" in f[0]["message"] and "g000-rail2-leaf" in f[0]["message"]
    assert any("gpu02:3302:3302" in e and "Filled mlx5_3" in e for e in f[0]["evidence"])
    # one node's NCCL_IB_HCA puts mlx5_4 on rail 1 with mlx5_3
    wrong = run_cli("log", "check", str(LOGS / "v2.32-rails-wrong-id.log"), "--fabric",
                    str(FAB / "ibnetdiscover.txt"))
    assert wrong.returncode == 1
    assert "error: LOG037: gpu02: NCCL put mlx5_3, mlx5_4 on one rail 1 plane 0" in wrong.stdout
    assert "mlx5_4:1 on rail 2 (g000-rail2-leaf)" in wrong.stdout
    assert "warning: LOG037: gpu[01-02]: NCCL gave mlx5_4 different rails" in wrong.stdout
    # 2.31's lines (no parentheses) agree the same way
    r231 = run_cli("log", "check", str(LOGS / "v2.31-rails-agree.log"), "--fabric", str(FAB / "ibnetdiscover.txt"))
    assert r231.returncode == 0 and "LOG037" not in r231.stdout


def test_check_against_the_node_and_without_a_source_cli():
    root = run_cli("log", "check", str(LOGS / "v2.32-rails-wrong-id.log"), "--root", str(REPO / "fixtures" / "hosts" /
                                                                                      "dgx-h100"), "--rule", "LOG037")
    assert root.returncode == 1
    assert "the node's rail table (GPU k's closest NIC: rail k) has them on different rails" in root.stdout
    alone = run_cli("log", "check", str(LOGS / "v2.32-rails-wrong-id.log"), "--rule", "LOG037")
    assert alone.returncode == 0 and alone.stdout.count("warning: LOG037") == 2


def test_log_without_rail_lines_is_not_clean():
    absent = run_cli("log", "check", str(LOGS / "v2.32-rails-absent.log"), "--fabric", str(FAB / "ibnetdiscover.txt"),
                     "--show-info")
    assert absent.returncode == 0
    assert "info: LOG037: the rails and planes NCCL assigned: not in this log" in absent.stdout
    # with the node: said for NCCL 2.30.7+ (which prints them), not for an older log
    node = str(REPO / "fixtures" / "hosts" / "dgx-h100")
    r = run_cli("log", "check", str(LOGS / "v2.32-rails-absent.log"), "--root", node, "--rule", "LOG037", "--show-info")
    assert "info: LOG037: the rails and planes NCCL assigned: not in this log" in r.stdout
    old = run_cli("log", "check", str(LOGS / "v2.12-mpirun-prefixed.log"), "--root", node, "--rule", "LOG037",
                  "--show-info")
    assert old.returncode == 0 and "LOG037" not in old.stdout
    show = run_cli("log", "show", str(LOGS / "v2.32-rails-absent.log"))
    assert "rails and planes NCCL assigned: not in this log" in show.stdout
    shown = run_cli("log", "show", str(LOGS / "v2.32-rails-wrong-id.log"))
    assert "gpu02: mlx5_0 rail 0 plane 0, mlx5_3 rail 1 plane 0, mlx5_4 rail 1 plane 0" in shown.stdout
    doc = json.loads(run_cli("log", "show", str(LOGS / "v2.32-rails-agree.log"), "--format", "json").stdout)
    r = doc["process_list"][0]["rails"]
    assert (r[0]["kind"], r[0]["name"], r[0]["index"], r[0]["rail"], r[0]["plane"]) == ("vdev", "mlx5_0", 0, 0, 0)
    assert r[0]["line"].endswith("v2.32-rails-agree.log:3")


def test_bad_fabric_and_explain():
    bad = run_cli("log", "check", str(LOGS / "v2.32-rails-agree.log"), "--fabric", str(LOGS / "v2.32-rails-absent.log"))
    assert bad.returncode != 0 and "not ibnetdiscover or iblinkinfo output" in bad.stderr
    assert "v2.32-rails-absent.log:1" in bad.stderr and "Traceback" not in bad.stderr
    ex = run_cli("explain", "LOG037")
    assert ex.returncode == 0 and "NCCL_IB_HCA" in ex.stdout and "not public" in ex.stdout


def test_ras_json_report(tmp_path):
    """``ncclras -f json`` (keys from the 2.31.0a7 source, the same in the 2.28.9-2.32.3 libraries) read by LOG036."""
    bad = run_cli("log", "check", str(LOGS / "ras-report.json"))
    assert bad.returncode == 1
    assert "rank 1 (gpu01 pid 2202 GPU 1): async_error 6" in bad.stdout and "rank 2 (gpu02 pid 3301 GPU 0): missing: " \
        "unresponsive" in bad.stdout and "ras-report.json:41:" in bad.stdout
    assert "warning: LOG036" in bad.stdout and "collective counts differ" in bad.stdout
    text = (LOGS / "ras-report.json").read_text()
    ok = text.replace('"async_error": 6', '"async_error": 0').replace('"AllReduce": 811', '"AllReduce": 812')
    ok = ok[:ok.index('      "missing_ranks": [')] + ('      "missing_ranks": [\n      ]\n    }\n  ],\n  "ras": {\n'
                                                        '    "collection_time_sec": 0.012,\n    "timeouts_count": 0\n'
                                                        '  }\n}\n')
    (tmp_path / "ok.json").write_text(ok)
    good = run_cli("log", "check", str(tmp_path / "ok.json"), "--show-info")
    assert good.returncode == 0 and "info: LOG036" in good.stdout and "error: LOG" not in good.stdout


def test_ranks_of_one_local_index_on_different_rails():
    # gpu02 names its NICs otherwise (mlx5_4, mlx5_7) and its NCCL_IB_HCA swaps the two rail ids
    r = run_cli("log", "check", str(LOGS / "v2.32-rails-local-index.log"), "--rule", "LOG037")
    assert r.returncode == 0 and r.stdout.count("warning: LOG037") == 2
    assert "the ranks of local index 0 send on NICs of different rails on different nodes (rail 0 on gpu01 rank 0; " \
           "rail 1 on gpu02 rank 2)" in r.stdout
    assert "v2.32-rails-local-index.log:10: gpu01:2200:2200 [0] NCCL INFO Channel 00/0" in r.stdout


def test_ras_json_version_timeouts_and_a_cut_report(tmp_path):
    r = run_cli("log", "check", str(LOGS / "ras-report.json"))
    assert "NCCL 2.32.3;" in r.stdout.splitlines()[0] and "RAS timed out 1 time(s)" in r.stdout
    cut = tmp_path / "cut.json"
    cut.write_text("".join((LOGS / "ras-report.json").read_text().splitlines(keepends=True)[:40]))
    c = run_cli("log", "check", str(cut))
    assert c.returncode == 0 and "cut.json:40: warning: LOG036" in c.stdout and "cut short" in c.stdout
    assert "Traceback" not in c.stderr


def test_warns_that_stop_nccl_over_rail_ids(tmp_path):
    log = tmp_path / "w.log"
    log.write_text(
        "gpu01:2201:2201 [0] NCCL INFO NCCL version 2.32.3+cuda12.9\n"
        "gpu01:2201:2201 [0] graph/topo.cc:1787 NCCL WARN TOPO/NET : Inconsistent rail/plane for net mlx5_3: existing "
        "2/0, new 1/0.\n"
        "gpu02:3302:3302 [0] transport/net_ib/init.cc:103 NCCL WARN NCCL cannot use a plane ID that is 16384.\n")
    r = run_cli("log", "check", str(log), "--format", "json")
    f = [x for x in json.loads(r.stdout)["findings"] if x["rule"] == "LOG037"]
    assert r.returncode == 1 and [x["severity"] for x in f] == ["error", "error"]
    assert "mlx5_3: rail 2 plane 0 in the topology NCCL read, rail 1 plane 0 from the net plugin" in f[0]["message"]
    assert "NCCL_TOPO_FILE" in f[0]["fix"] and f[0]["line"] == 2 and "below 16384" in f[1]["fix"]
    # LOG014 leaves them to LOG037
    assert not [x for x in json.loads(r.stdout)["findings"] if x["rule"] == "LOG014" and "rail" in x["message"]]


def test_log_diff_names_the_rails_that_changed():
    r = run_cli("log", "diff", str(LOGS / "v2.32-rails-agree.log"), str(LOGS / "v2.32-rails-wrong-id.log"))
    assert r.returncode == 1 and "rails/planes NCCL assigned (NIC=rail/plane):" in r.stdout
    assert "mlx5_4=1/0" in r.stdout
    # a release that prints them against one that does the same: no rail change
    same = run_cli("log", "diff", str(LOGS / "v2.32-rails-agree.log"), str(LOGS / "v2.31-rails-agree.log"))
    assert "rails/planes" not in same.stdout
