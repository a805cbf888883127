"""Logs of socket runs and small jobs, inputs that are no log, and a --root that is no host (issue 25, classes 4
and 5): each said for what it is, never a clean run and never a false GPUDirect alarm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import HOSTS, REPO, run_cli

REAL = REPO.parent / "shared" / "real" / "h200-vm"

SOCKET_2NODES = """\
nodeA:10:10 [0] NCCL INFO NCCL version 2.28.9+cuda13.0
nodeA:10:10 [0] NCCL INFO NET/IB : No device found.
nodeA:10:10 [0] NCCL INFO Failed to initialize NET plugin IB
nodeA:10:10 [0] NCCL INFO NET/Socket : Using [0]eth0:192.0.2.2<0>
nodeA:10:10 [0] NCCL INFO Using network Socket
nodeA:10:10 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'
nodeA:10:10 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0
nodeA:10:10 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0
nodeB:11:11 [0] NCCL INFO NET/IB : No device found.
nodeB:11:11 [0] NCCL INFO Using network Socket
nodeB:11:11 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'
nodeB:11:11 [0] NCCL INFO comm 0x2 rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0
nodeB:11:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/Socket/0
"""

ONE_RANK = """\
vm:5:5 [0] NCCL INFO NCCL version 2.28.9+cuda13.0
vm:5:5 [0] NCCL INFO NET/IB : No device found.
vm:5:5 [0] NCCL INFO Using network Socket
vm:5:5 [0] NCCL INFO Topology detection: network path (name = eth0) /sys/devices/pci0000:00/0000:00:03.0/virtio2 is not a PCI device (virtio). Attaching to first CPU
vm:5:5 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'
vm:5:5 [0] NCCL INFO comm 0x1 rank 0 nRanks 1 nNodes 1 localRanks 1 localRank 0 MNNVL 0
"""


def _findings(path: Path, *extra: str) -> tuple[int, list[dict]]:
    res = run_cli("log", "check", str(path), "--format", "json", "--show-info", *extra)
    assert res.returncode in (0, 1), res.stderr
    return res.returncode, json.loads(res.stdout)["findings"]


def test_socket_gdr_lines_are_no_gpudirect_alarm(tmp_path):
    log = tmp_path / "socket.log"
    log.write_text(SOCKET_2NODES)
    rc, found = _findings(log)
    rules = {(f["rule"], f["severity"]) for f in found}
    assert ("LOG002", "error") in rules  # sockets between two nodes: the real fault
    assert not any(f["rule"] == "LOG001" for f in found), found  # NET/Socket never does GPUDirect RDMA
    assert rc == 1


def test_one_rank_log_gets_no_warning_that_does_not_apply(tmp_path):
    log = tmp_path / "one.log"
    log.write_text(ONE_RANK)
    rc, found = _findings(log)
    assert rc == 0
    assert [f for f in found if f["severity"] != "info"] == []
    assert {f["rule"] for f in found} >= {"LOG002"}  # still said, as information


@pytest.mark.parametrize("content", ["root:x:0:0:root:/root:/bin/bash\n", "",
                                     "# nThread 1 nGpus 1 minBytes 8 maxBytes 128\n"])
def test_input_with_no_nccl_line_is_not_a_clean_run(tmp_path, content):
    f = tmp_path / "x.txt"
    f.write_text(content)
    for cmd in (("log", "check"), ("log", "show")):
        res = run_cli(*cmd, str(f))
        assert res.returncode == 3, (cmd, res.stdout, res.stderr)
        assert "not an NCCL log" in res.stderr and "0 errors" not in res.stdout


def test_folder_of_unrelated_files_is_not_a_clean_run(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    (tmp_path / "b.log").write_text("nothing to see\n")
    res = run_cli("log", "check", str(tmp_path))
    assert res.returncode == 3 and "holds no NCCL log (2 files, none with an NCCL line" in res.stderr


def test_root_that_is_no_host_is_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    res = run_cli("lint", "--root", str(empty), "--nagios")
    assert res.returncode == 3 and "UNKNOWN" in res.stdout and "not a host root" in res.stdout
    res = run_cli("lint", "--root", str(HOSTS))
    assert res.returncode == 3 and "folder of" in res.stderr and "fleet lint" in res.stderr
    # A partial capture still works: what is missing is listed.
    partial = tmp_path / "partial"
    (partial / "proc").mkdir(parents=True)
    (partial / "proc" / "cpuinfo").write_text((HOSTS / "dgx-h100" / "proc" / "cpuinfo").read_text())
    res = run_cli("probe", "--root", str(partial))
    assert res.returncode == 0, res.stderr
    assert "not seen" in res.stdout


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_real_socket_logs_flag_only_what_nccl_shows():
    """NCCL 2.28.9 on a real H200 VM: two processes joined over NET/Socket (NCCL_HOSTID trick), and one rank."""
    snap = str(REAL / "snapshot-redacted.tar.gz")
    rc, found = _findings(REAL / "nccl-2proc-socket.log", "--root", snap)
    errors = [f["rule"] for f in found if f["severity"] == "error"]
    assert errors == ["LOG002"], found
    assert not any(f["rule"] == "LOG001" for f in found)
    rc, found = _findings(REAL / "nccl-1rank.log", "--root", snap)
    assert rc == 0 and [f for f in found if f["severity"] != "info"] == [], found


def test_a_folder_gives_its_nccl_logs_once_and_says_what_it_left_out(tmp_path):
    import shutil

    logs = REPO / "fixtures" / "logs"
    shutil.copy(logs / "v2.30-dgx-h100-2nodes-healthy.log", tmp_path)
    shutil.copy(logs / "v2.30-dgx-h100-2nodes-healthy.log.gz", tmp_path)  # the same log, compressed
    (tmp_path / "README.md").write_text("# notes about NCCL and the job\n")
    (tmp_path / "train.py").write_text("import torch\n")
    alone = run_cli("log", "show", str(logs / "v2.30-dgx-h100-2nodes-healthy.log"), "--format", "json")
    res = run_cli("log", "show", str(tmp_path), "--format", "json")
    assert res.returncode == 0, res.stderr
    doc, ref = json.loads(res.stdout), json.loads(alone.stdout)
    assert len(doc["inputs"]) == 1 and doc["nccl_lines"] == ref["nccl_lines"] and doc["lines"] == ref["lines"]
    notes = " ".join(doc["inputs"][0]["notes"])
    assert "README.md: left out" in notes and "train.py: left out" in notes and ".log.gz: left out, the same log" in notes
    (tmp_path / "v2.30-dgx-h100-2nodes-healthy.log").unlink()
    res = run_cli("log", "show", str(tmp_path), "--format", "json")
    assert json.loads(res.stdout)["nccl_lines"] == ref["nccl_lines"]  # the .gz alone is read
