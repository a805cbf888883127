"""Reading NCCL logs: prefixes, every release's wordings, attribution to processes, ranks and communicators."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys

import pytest

from ncclctl.logs.lines import parse_head, split_warn_head, strip_launcher
from ncclctl.logs.parse import read_logs, read_text, warn_kind
from ncclctl.logs.show import summary
from ncclctl.names import natural_key

from conftest import REPO, run_cli

LOGS = REPO / "fixtures" / "logs"


@pytest.mark.parametrize("head,want", [
    ("node1:123:456 [0]", ("node1", 123, 456, 0)),
    ("[1,0]<stdout>:node1:123:456 [3]", ("node1", 123, 456, 3)),
    ("0: node1:123:456 [3]", ("node1", 123, 456, 3)),
    ("[rank7]:gpu-7:88:99 [7]", ("gpu-7", 88, 99, 7)),
    ("[2025-03-18 21:25:51] job-0:1:1 [0]", ("job-0", 1, 1, 0)),
    ("2024-12-04T05:27:44.078Z algo-1:18062:18131 [5]", ("algo-1", 18062, 18131, 5)),
    ("> iv-yd:1458548:1480519 [0]", ("iv-yd", 1458548, 1480519, 0)),
    (":22901:22901 [0]", ("", 22901, 22901, 0)),
    (" [0]", ("", None, None, 0)),
    ("no prefix at all", ("", None, None, None)),
    ("h:" + "9" * 5000 + ":1 [0]", ("", None, None, 0)),
])
def test_prefixes(head, want):
    assert parse_head(head) == want


def test_warn_heads_and_launchers():
    assert split_warn_head("h:1:2 [0] graph/xml.cc:332") == ("h:1:2 [0]", "graph/xml.cc:332")
    assert split_warn_head("h:1:2 [0] misc/socket.cc:50 (socketProgress)") == ("h:1:2 [0]", "misc/socket.cc:50")
    assert strip_launcher("[1,0]<stdout>:# nThread 1") == "# nThread 1"
    assert strip_launcher("12: NCCL version 2.18.3+cuda12.2") == "NCCL version 2.18.3+cuda12.2"
    assert sorted(["gpu10", "gpu2", "gpu1"], key=natural_key) == ["gpu1", "gpu2", "gpu10"]
    assert warn_kind("NET/IB : Got completion from peer 1.2.3.4<5> with status=12") == "ib-completion"
    assert warn_kind("Could not find real path of /sys/x") == "realpath"
    assert warn_kind("something new") == "other"


def test_healthy_h100_pair_is_rebuilt_rank_by_rank():
    ls = read_logs([str(LOGS / "v2.30-dgx-h100-2nodes-healthy.log")])
    assert ls.unrecognised == 0 and ls.lines == ls.nccl_lines + 3  # three application lines
    assert ls.hosts == ["dgx-01", "dgx-02"] and len(ls.procs) == 16
    assert ls.version() == "2.30.7+cuda12.9"
    [c] = ls.comms
    assert c.comm_id == "0x7a3f19c2e5d04b61" and c.nranks == 16 and sorted(c.by_rank()) == list(range(16))
    r0 = c.by_rank()[0]
    assert (r0.nnodes, r0.local_ranks, r0.coll_channels, r0.busid, r0.init_total) == (2, 8, 16, "1b000", 0.9)
    assert r0.completed is not None and r0.started is not None and r0.init_parts["kernels"] == 0.3
    assert len(r0.rings) == 16 and r0.rings[0][0][:3] == [0, 1, 2] and r0.nrings == 16
    assert r0.trees[0] == ((1, -1, -1), -1)
    assert r0.graphs[0]["type_inter"] == "PIX" and r0.graphs[0]["channels"][0][0] == "NET/0"
    p = r0.proc
    assert [n.name for n in p.ib][:2] == ["mlx5_0", "mlx5_3"] and p.ib_ro and p.oob == ("eth0", "10.20.0.11")
    assert p.network == "IB" and p.cuda_driver == 12090 and p.bootstrap == [("eth0", "10.20.0.11")]
    # rank 7 ends the host's ring: it sends to dgx-02 on mlx5_11 (NET 7) with GPUDirect RDMA
    r7 = c.by_rank()[7]
    assert ("send", 7, True, None) in set().union(*r7.net_ch.values())
    doc = summary(ls)
    json.dumps(doc)
    assert doc["communicators"][0]["ranks"][1]["nics"] == ["mlx5_3"]


@pytest.mark.parametrize("name,version,hosts,ranks", [
    ("v2.5-roce-2nodes-ring-wording.log", "2.5.7+cuda12.9", 2, 4),
    ("v2.12-mpirun-prefixed.log", "2.12.12+cuda12.9", 2, 4),
    ("v2.18-graph-file-import.log", "2.18.6+cuda12.2", 1, 1),
    ("v2.19-socket-fallback-docker0.log", "2.19.3+cuda12.9", 2, 8),
    ("v2.20-channel-setting-mismatch.log", "2.20.5+cuda12.9", 2, 16),
    ("v2.22-gdr-peermem-rename.log", "2.22.3+cuda12.9", 2, 16),
    ("v2.24-srun-lo-bootstrap.log", "2.24.3+cuda12.9", 2, 4),
    ("v2.26-timestamps-slow-init.log", "2.26.2+cuda12.9", 1, 8),
    ("v2.27-roce-ib-errors.log", "2.27.7+cuda12.9", 2, 4),
    ("v2.28-gdr-off-one-host.log", "2.28.9+cuda12.9", 2, 16),
    ("v2.30-torchrun-vm-nic-mix.log", "2.30.7+cuda12.9", 2, 2),
])
def test_every_release_wording_is_read_fully(name, version, hosts, ranks):
    ls = read_logs([str(LOGS / name)])
    assert ls.unrecognised == 0, [e.text for e in ls.unrecognised_examples]
    assert ls.version() == version
    assert len(ls.hosts) == hosts
    assert len({(m.host, m.rank) for m in ls.members() if m.rank is not None}) == ranks


def test_pre_2_18_ranks_come_from_connection_and_complete_lines():
    """NCCL < 2.18 prints no Init START: a device's lines wait for COMPLETE (or a connection line) for a rank."""
    ls = read_logs([str(LOGS / "v2.12-mpirun-prefixed.log")])
    [c] = ls.comms
    assert c.comm_id is None and c.nranks == 4 and sorted(c.by_rank()) == [0, 1, 2, 3]
    assert all(m.completed is not None and m.started is None for m in c.members)
    assert c.by_rank()[1].busid == "43000"


def test_second_communicator_without_start_lines_is_told_apart():
    one = (LOGS / "v2.12-mpirun-prefixed.log").read_text()
    ls = read_text(one + one.replace("nranks 4", "nranks 4"), "twice.log")
    assert len(ls.comms) == 2 and all(len(c.by_rank()) == 4 for c in ls.comms)


def test_gzip_folder_and_stdin_read_the_same(tmp_path):
    plain = LOGS / "v2.30-dgx-h100-2nodes-healthy.log"
    a = summary(read_logs([str(plain)]))
    b = summary(read_logs([str(LOGS / "v2.30-dgx-h100-2nodes-healthy.log.gz")]))
    c = summary(read_logs(["-"], stdin=io.BytesIO(plain.read_bytes())))
    for doc in (b, c):
        assert doc["communicators"] == a["communicators"] and doc["process_list"] == a["process_list"]
    d = tmp_path / "d"
    d.mkdir()
    for i, chunk in enumerate(plain.read_text().split("\n\n")):
        (d / f"rank{i}.log").write_text(chunk + "\n")
    assert summary(read_logs([str(d)]))["communicators"][0]["ranks_seen"] == 16


def test_truncated_and_hostile_inputs_never_raise(tmp_path):
    text = (LOGS / "v2.30-dgx-h100-2nodes-healthy.log").read_bytes()
    for cut in (1, 100, 1000, 12345, len(text) // 2, len(text) - 3):
        p = tmp_path / f"cut{cut}.log"
        p.write_bytes(text[:cut])
        summary(read_logs([str(p)]))
    gz = gzip.compress(text)
    p = tmp_path / "half.log.gz"
    p.write_bytes(gz[: len(gz) // 2])
    ls = read_logs([str(p)])
    assert any("ends early" in n for n in ls.sources[0].notes)
    # a host name with a superscript digit (str.isdigit says yes, int() says no) sorts, never crashes
    p = tmp_path / "sup.log"
    p.write_text("node1\u00b2:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
                 "node2:3:4 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n", encoding="utf-8")
    assert "node1\u00b2" in json.dumps(summary(read_logs([str(p)])), ensure_ascii=False)
    p = tmp_path / "bin.log"
    p.write_bytes(bytes(range(256)) * 50 + b"\n" + b"x" * 200_000 + b" NCCL INFO Channel 00/0 : 1[0] -> 2[1] via P2P\n")
    ls = read_logs([str(p)])
    assert ls.sources[0].notes


def test_cli_show_text_json_and_errors(tmp_path):
    r = run_cli("log", "show", str(LOGS / "v2.26-version-nic-mismatch.log"))
    assert r.returncode == 0, r.stderr
    assert "NCCL versions differ: 2.23.4+cuda12.9 (8 processes), 2.26.2+cuda12.9 (8 processes)" in r.stdout
    assert "a100-02 (1 host): network IB" in r.stdout and "mlx5_10:1/IB" in r.stdout
    j = run_cli("log", "show", str(LOGS / "v2.19-socket-fallback-docker0.log"), "--format", "json")
    doc = json.loads(j.stdout)
    assert doc["schema_version"] and set(doc["communicators"][0]["transports"]) == {"NET/Socket", "P2P/CUMEM"}
    assert doc["process_list"][0]["ib_no_device"] and doc["process_list"][0]["network"] == "Socket"
    ranks = run_cli("log", "show", "--ranks", str(LOGS / "v2.12-mpirun-prefixed.log"))
    assert "rank    3 ib-02" in ranks.stdout
    missing = run_cli("log", "show", str(tmp_path / "nope.log"))
    assert missing.returncode == 3 and "no such log file" in missing.stderr and "Traceback" not in missing.stderr
    fifo = tmp_path / "fifo"
    import os

    os.mkfifo(fifo)
    f = run_cli("log", "show", str(fifo))
    assert f.returncode == 3 and "FIFO" in f.stderr
    empty = tmp_path / "emptydir"
    empty.mkdir()
    e = run_cli("log", "show", str(empty))
    assert e.returncode == 3 and "holds no NCCL log" in e.stderr


def test_cli_reads_stdin():
    data = (LOGS / "v2.8-wsl-realpath.log").read_bytes()
    r = subprocess.run([sys.executable, "-m", "ncclctl", "log", "show", "-"], input=data, capture_output=True,
                       cwd=REPO, timeout=60)
    assert r.returncode == 0 and b"NCCL 2.8.4+cuda11.2" in r.stdout and b"<stdin>" not in r.stderr


def test_fixtures_are_what_their_generator_writes():
    r = subprocess.run([sys.executable, str(LOGS / "build.py"), "--check"], capture_output=True, text=True, cwd=REPO,
                       timeout=120)
    assert r.returncode == 0, r.stderr
