"""Failure classes met on logs from public threads that the first rules named wrongly or not at all (issue 27 items 1
and 3, a second collection of real logs split by thread before any rule was written): each class its own rule with
its cause, evidence and fix, and the lines nearby that are no error. The logs here are authored in NCCL's formats
(host names, addresses and numbers invented)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def _check(tmp_path, text: str, name: str = "job.log") -> tuple[int, list[dict]]:
    p = tmp_path / name
    p.write_text(text)
    res = run_cli("log", "check", str(p), "--format", "json", "--show-info")
    assert "Traceback" not in res.stderr, res.stderr
    return res.returncode, json.loads(res.stdout)["findings"]


def _rules(findings: list[dict], severity: str | None = None) -> list[str]:
    return [f["rule"] for f in findings if severity is None or f["severity"] == severity]


_BANNER = ("gpu-a:2101:2101 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.5<0>\n"
           "gpu-a:2101:2101 [0] NCCL INFO cudaDriverVersion {drv}\n"
           "NCCL version 2.21.5+cuda12.4\n")


def test_driver_older_than_nccls_cuda_is_its_own_rule_with_both_versions(tmp_path):
    rc, fs = _check(tmp_path, _BANNER.format(drv=11020) +
                    "gpu-a:2101:2140 [0] misc/cudawrap.cc:188 NCCL WARN Cuda failure 'CUDA driver version is "
                    "insufficient for CUDA runtime version'\n")
    assert rc == 1
    assert _rules(fs, "error") == ["LOG032"], fs
    f = fs[0]
    assert "CUDA 11.2" in f["message"] and "CUDA 12.4" in f["message"]
    assert "driver" in f["fix"] and "LOG014" not in _rules(fs)


def test_driver_wording_quoted_alone_and_a_healthy_banner(tmp_path):
    rc, fs = _check(tmp_path, "RuntimeError: CUDA driver version is insufficient for CUDA runtime version\n", "q.log")
    assert "LOG032" in _rules(fs, "error"), fs
    rc, fs = _check(tmp_path, _BANNER.format(drv=12040), "ok.log")
    assert "LOG032" not in _rules(fs) and not _rules(fs, "error")


def test_dmabuf_registration_refused_names_nccl_dmabuf_enable(tmp_path):
    rc, fs = _check(tmp_path, "gpu-a:2101:2150 [3] misc/ibvwrap.cc:288 NCCL WARN Call to ibv_reg_dmabuf_mr failed "
                    "with error Operation not supported\n")
    assert rc == 1 and _rules(fs, "error") == ["LOG033"], fs
    assert "NCCL_DMABUF_ENABLE=0" in fs[0]["fix"] and "DMA-BUF" in fs[0]["message"]
    # another verbs call failing is the ibv class of LOG014, not DMA-BUF
    rc, fs = _check(tmp_path, "gpu-a:2101:2150 [3] misc/ibvwrap.cc:160 NCCL WARN Call to ibv_modify_qp failed with "
                    "error Network is unreachable\n", "qp.log")
    assert "LOG033" not in _rules(fs) and "LOG014" in _rules(fs, "error")


def test_remote_error_points_at_the_other_ranks_not_this_socket(tmp_path):
    text = ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
            "remote process exited or there was a network error, NCCL version 2.21.5\n"
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
            "Last error:\n"
            "socketProgressOpt: Call to recv from 10.1.0.9<40111> failed : Connection reset by peer\n")
    rc, fs = _check(tmp_path, text)
    assert rc == 1 and _rules(fs, "error") == ["LOG034"], fs
    assert "another rank" in fs[0]["message"] and "ibstat" in fs[0]["fix"]
    # an invalid-usage report is not a remote error
    rc, fs = _check(tmp_path, text.replace("remote process exited or there was a network error", "invalid usage")
                    .replace("ncclRemoteError", "ncclInvalidUsage"), "usage.log")
    assert "LOG034" not in _rules(fs)


def test_watchdog_timeout_is_a_hang_after_init_with_ras_as_the_next_step(tmp_path):
    line = ("[rank3]:[E1128 10:00:01.000000000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for "
            "600010 milliseconds before timing out.\n")
    rc, fs = _check(tmp_path, line)
    assert rc == 1 and _rules(fs, "error") == ["LOG035"], fs
    assert "ncclras" in fs[0]["fix"]


_RAS = """NCCL version 2.27.7 compiled with CUDA 12.9
CUDA runtime version 12090, driver version 12090

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      2          4            1          8        8

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2         4         8         8   RUNNING  {err}

Errors
======

Warnings
========
"""
_RAS_BLOCK = """
#0-0 (0123456789abcdef) MISMATCH
  Communicator ranks have different AllReduce operation counts
  7 ranks have launched up to operation 90
  1 rank has launched up to operation 89
  Rank 5 -- GPU 1 managed by process 4242 on node 10.1.0.6
"""


def test_ras_report_with_ranks_that_disagree_names_the_rank(tmp_path):
    rc, fs = _check(tmp_path, _RAS.format(err="MISMATCH") + _RAS_BLOCK, "ras.txt")
    ras = [f for f in fs if f["rule"] == "LOG036"]
    assert len(ras) == 1 and ras[0]["severity"] == "warning", fs
    assert "Rank 5 -- GPU 1" in ras[0]["message"]
    res = run_cli("log", "check", str(tmp_path / "ras.txt"))
    assert "NCCL 2.27.7" in res.stdout.splitlines()[0]


def test_ras_report_all_ok_is_info_only(tmp_path):
    rc, fs = _check(tmp_path, _RAS.format(err="OK"), "ras-ok.txt")
    assert rc == 0 and _rules(fs) == ["LOG036"] and fs[0]["severity"] == "info", fs


def test_ib_completion_quoted_without_nccls_prefix_is_read_with_its_own_fix(tmp_path):
    rc, fs = _check(tmp_path, "NET/IB : Got completion from peer 10.1.0.9<51002> with status=12 opcode=0 len=0 "
                    "vendor err 129 (Recv) localGid ::ffff:10.1.0.5 remoteGids::ffff:10.1.0.9\n")
    assert rc == 1 and _rules(fs, "error") == ["LOG014"], fs
    assert "retry counter exceeded" in fs[0]["message"] and "ib_write_bw" in fs[0]["fix"]


def test_log014_fix_differs_by_class(tmp_path):
    _rc, a = _check(tmp_path, "h:1:2 [0] transport/net_ib.cc:1400 NCCL WARN NET/IB : Got completion from peer "
                    "10.0.0.2<1> with status=4 opcode=1 len=0 vendor err 81 (Send)\n", "a.log")
    _rc, b = _check(tmp_path, "h:1:2 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote "
                    "peer h2<33>\n", "b.log")
    assert a[0]["fix"] != b[0]["fix"] and "NCCL_NET_GDR_LEVEL=LOC" in a[0]["fix"]


def test_lib_wrapper_after_a_missing_libibverbs_is_no_finding(tmp_path):
    text = ("[5] NCCL INFO Failed to open libibverbs.so[.1]\n"
            "[5] NCCL INFO NET/Socket : Using [0]eth0:10.1.0.5<0>\n"
            "[5] misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.\n"
            "[5] NCCL INFO Using network Socket\n")
    rc, fs = _check(tmp_path, text)
    assert rc == 0 and not _rules(fs, "error") and not _rules(fs, "warning"), fs


def test_enospc_in_the_proxy_is_dev_shm(tmp_path):
    rc, fs = _check(tmp_path, "gpu-a:9:10 [0] proxy.cc:1587 NCCL WARN [Service thread] Accept failed No space left "
                    "on device\n")
    assert rc == 1 and _rules(fs, "error") == ["LOG025"], fs


def test_kernel_shared_memory_limit_names_the_architecture(tmp_path):
    rc, fs = _check(tmp_path, "gpu-a:9:10 [0] enqueue.cc:120 NCCL WARN cudaArch 1200 dynamic smem 82240 exceeds "
                    "device/fn maxSharedMem 79856\n")
    assert rc == 1 and _rules(fs, "error") == ["LOG014"], fs
    assert "architecture" in fs[0]["message"] and "architecture" in fs[0]["fix"]


@pytest.mark.parametrize("same", [True, False])
def test_git_revisions_differ_for_one_release(tmp_path, same):
    lines = []
    for i, rev in enumerate(("a1b2c3d", "a1b2c3d" if same else "9f8e7d6")):
        lines += [f"node{i}:{100 + i}:{100 + i} [0] NCCL INFO NCCL version 2.29.7+cuda12.9",
                  f"node{i}:{100 + i}:{100 + i} [0] NCCL INFO NCCL git version master {rev}"]
    rc, fs = _check(tmp_path, "\n".join(lines) + "\n")
    git = [f for f in fs if f["rule"] == "LOG004"]
    if same:
        assert not git and "LOG007" not in _rules(fs), fs
    else:
        assert len(git) == 1 and "9f8e7d6" in git[0]["message"] and "on node1" in git[0]["message"], fs


@pytest.mark.parametrize("rule", ["LOG032", "LOG033", "LOG034", "LOG035", "LOG036"])
def test_explain_documents_each_rule(rule):
    res = run_cli("explain", rule)
    assert res.returncode == 0 and rule in res.stdout and "fix" in res.stdout.lower()


def test_every_family_is_a_warning_with_where_to_look():
    from ncclctl.logs.check import _FAMILY_HINTS, SOFT_WARNS
    from ncclctl.logs.parse import WARN_FAMILIES

    for _needle, fam in WARN_FAMILIES:
        assert fam in SOFT_WARNS, fam
        assert fam in _FAMILY_HINTS or fam in ("nvls",), fam


def test_log_coverage_counts_listed_and_unclassified_formats(capsys):
    import importlib.util
    import sys

    from conftest import REPO

    spec = importlib.util.spec_from_file_location("nccl_extract", REPO / "tools" / "nccl_extract.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["nccl_extract"] = mod
    spec.loader.exec_module(mod)
    found = {"version": "test", "formats": [], "hints": [],
             "log_formats": {"%s": ["WARN"], "Zq xv wu": ["WARN"], "Call to bind failed: %s": ["WARN"]}}
    mod._log_coverage(found, listing=False)
    out = capsys.readouterr().out
    assert "other: 1 listed on purpose" in out and "1 unclassified" in out, out


def test_a_warn_of_a_new_family_says_where_to_look(tmp_path):
    rc, fs = _check(tmp_path, "gpu-a:9:10 [0] misc/gdrwrap.cc:250 NCCL WARN gdr_pin_buffer(addr 7f00, size 4096) "
                    "failed: -22\n")
    assert [(f["rule"], f["severity"]) for f in fs] == [("LOG014", "warning")], fs
    assert "GDRCopy" in fs[0]["message"]


def test_plugin_prefixes_are_their_family(tmp_path):
    rc, fs = _check(tmp_path, "ip-10-0-0-5:79:90 [0] nccl_net_ofi_rdma.c:5720 NCCL WARN NET/OFI Couldn't open a fabric "
                    "access domain. RC: -22, ERROR: Invalid argument\n")
    assert [(f["rule"], f["severity"]) for f in fs] == [("LOG014", "warning")], fs
    assert "EFA" in fs[0]["message"]


def test_launcher_prefixes_name_the_hosts(tmp_path):
    pre = ["(RayTrainWorker pid=615, ip=10.0.0.7) ", "[rank0]:", "0: ", "[1,0]<stdout>:", "2026-01-01T00:00:00.000Z ",
           "[2026-01-01 00:00:00] ", "nodeX: ", "> ", "stdout: "]
    text = "".join(f"{p}node{i}:{600 + i}:{700 + i} [0] NCCL INFO NCCL version 2.30.7+cuda12.9\n"
                   for i, p in enumerate(pre))
    (tmp_path / "pre.log").write_text(text)
    res = run_cli("log", "show", str(tmp_path / "pre.log"), "--format", "json")
    assert res.returncode == 0 and "Traceback" not in res.stderr
    doc = json.loads(res.stdout)
    assert doc["hosts"] == len(pre) and doc["processes"] == len(pre), doc
    assert sorted(p["host"] for p in doc["process_list"]) == sorted(f"node{i}" for i in range(len(pre)))


@pytest.mark.parametrize("line, words, fix", [
    ("node1:5:9 [3] graph/search.cc:1120 NCCL WARN Could not find a path for pattern 4, falling back to simple order",
     "slower", "NCCL_NET_MERGE_LEVEL"),
    ("node1:5:9 [3] transport/net_ib.cc:95 NCCL WARN NET/IB : Got async event : port error", "flapped", "perfquery"),
    ("node1:5:5 [1] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856", "architecture",
     "NCCL release"),
])
def test_soft_classes_have_their_own_cause_and_fix(tmp_path, line, words, fix):
    rc, fs = _check(tmp_path, line + "\n")
    [f] = [f for f in fs if f["rule"] == "LOG014"]
    assert f["severity"] == "warning" and words in f["message"] and fix in f["fix"], f
