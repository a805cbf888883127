"""``ncclctl log check``: each failure class of the fixtures gives its rule, with evidence; the model with --root;
every format of the report door; ``log diff``."""

from __future__ import annotations

import json
import re

import pytest

from ncclctl.logs.check import busid_text, check
from ncclctl.logs.parse import read_logs, read_text
from ncclctl.registry import rules_of

from conftest import REPO, run_cli

LOGS = REPO / "fixtures" / "logs"
H100 = str(REPO / "fixtures" / "hosts" / "dgx-h100")

# fixture -> the rules it fires without a model (rule id -> severity)
EXPECTED = {
    "v2.30-dgx-h100-2nodes-healthy.log": {},
    "v2.12-mpirun-prefixed.log": {},
    # one finding per fault: the graph file stopped initialisation (not a hang; the application's error is evidence)
    "v2.18-graph-file-import.log": {"LOG008": "error"},
    "v2.19-socket-fallback-docker0.log": {"LOG002": "error", "LOG003": "warning"},
    "v2.20-channel-setting-mismatch.log": {"LOG006": "error", "LOG007": "warning", "LOG013": "error"},
    "v2.22-gdr-peermem-rename.log": {"LOG001": "error"},
    "v2.24-srun-lo-bootstrap.log": {"LOG003": "error"},
    "v2.26-timestamps-slow-init.log": {"LOG015": "warning"},
    "v2.26-version-nic-mismatch.log": {"LOG004": "error", "LOG005": "warning"},
    "v2.27-roce-ib-errors.log": {"LOG014": "error"},
    "v2.28-gdr-off-one-host.log": {"LOG001": "error"},
    "v2.30-dgx-h100-wrong-nic-shm.log": {"LOG010": "warning", "LOG016": "warning"},
    "v2.30-torchrun-vm-nic-mix.log": {"LOG009": "warning", "LOG011": "warning"},
    "v2.5-roce-2nodes-ring-wording.log": {"LOG001": "error"},
    "v2.8-wsl-realpath.log": {"LOG002": "info", "LOG009": "warning", "LOG014": "error"},
    "v2.28-socket-ifname-none.log": {"LOG018": "error"},
    "v2.30-two-ranks-one-gpu.log": {"LOG019": "error"},
    "v2.28-duplicate-gpu.log": {"LOG019": "error"},
    "v2.28-net-ib-forced.log": {"LOG020": "error"},
    "v2.30-algo-nvls-forced.log": {"LOG021": "error"},
    "v2.28-plugins-topo-missing.log": {"LOG022": "warning", "LOG023": "warning"},
    "v2.30-excerpt-init-start.log": {"LOG013": "warning"},
    "v2.28-nvls-fabric-manager.log": {"LOG024": "error"},
    "v2.29-nvls-multicast-oom.log": {"LOG024": "error"},
    "v2.26-dev-shm-full.log": {"LOG025": "error"},
    "v2.21-gpu-oom-peer-closed.log": {"LOG026": "error", "LOG014": "warning"},
    "v2.32-hint-diag-attn.log": {"LOG027": "error", "LOG028": "error", "LOG014": "warning"},
    "v2.30-gb200-mnnvl-healthy.log": {},
    "v2.30-gb200-mnnvl-imex-channel.log": {"LOG030": "error"},
    "v2.30-gb200-mnnvl-imex-down.log": {"LOG030": "error"},
    "v2.30-gb200-two-domains.log": {"LOG031": "warning"},
}


def _rules(findings) -> dict[str, str]:
    out: dict[str, str] = {}
    for f in findings:
        # the worst severity per rule
        if f.rule not in out or f.severity.value == "error":
            out[f.rule] = f.severity.value
    return out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_fixture_gives_its_failure_class(name):
    findings = check(read_logs([str(LOGS / name)]))
    assert _rules(findings) == EXPECTED[name], [(f.rule, f.message) for f in findings]
    for f in findings:  # evidence: the log lines the finding rests on, located in the input
        assert f.subject.endswith(name) and f.line and f.evidence, f
        assert all(re.match(r".+:\d+: ", e) for e in f.evidence)


def test_messages_name_hosts_ranks_and_causes():
    def msgs(name):
        out: dict[str, str] = {}
        for f in check(read_logs([str(LOGS / name)])):
            out[f.rule] = out.get(f.rule, "") + f.message + "\n"
        return out

    m = msgs("v2.22-gdr-peermem-rename.log")["LOG001"]
    assert m.startswith("learn[01-02] ranks 0-15: 32 network channel connections without GPUDirect RDMA")
    assert "predates 2.23" in m and "nvidia_peermem" in m
    assert "worker-[0-1]" in msgs("v2.19-socket-fallback-docker0.log")["LOG002"]
    assert "NET/IB found no device" in msgs("v2.19-socket-fallback-docker0.log")["LOG002"]
    m = msgs("v2.20-channel-setting-mismatch.log")
    assert "16 on n1 ranks 0-7; 8 on n2 ranks 8-15" in m["LOG006"] and "n2 rank 13 printed Init START" in m["LOG013"]
    m = msgs("v2.27-roce-ib-errors.log")["LOG014"]
    assert "retry counter exceeded" in m or "Network is unreachable" in m
    assert "kernels (52.40 s)" in msgs("v2.26-timestamps-slow-init.log")["LOG015"]
    assert "2.26.2+cuda12.9 on a100-01 (8 processes); 2.23.4+cuda12.9 on a100-02" in \
        msgs("v2.26-version-nic-mismatch.log")["LOG004"]


def test_against_the_model_of_the_node():
    """--root: the DGX H100 fixture's model plans GPU0 -> mlx5_0, NVLink between GPUs, GDR on PIX paths."""
    r = run_cli("log", "check", str(LOGS / "v2.30-dgx-h100-wrong-nic-shm.log"), "--root", H100, "-f", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    rules = {f["rule"]: f for f in doc["findings"]}
    assert "GPU 0 (rank 0) uses mlx5_3, planned mlx5_0" in rules["LOG011"]["message"]
    assert rules["LOG016"]["severity"] == "error" and "NVL path between GPU 2 and GPU 3" in rules["LOG016"]["message"]
    assert doc["model"] == H100
    r = run_cli("log", "check", str(LOGS / "v2.28-gdr-off-one-host.log"), "--root", H100, "-f", "json")
    rules = {f["rule"]: f for f in json.loads(r.stdout)["findings"]}
    assert "predicts GPUDirect RDMA for GPU 0 -> mlx5_0" in rules["LOG001"]["message"]
    assert "over PHB paths where the model" in rules["LOG012"]["message"] and "has PIX at worst" in \
        rules["LOG012"]["message"]
    assert "Pattern 4" in rules["LOG012"]["evidence"][0]
    healthy = run_cli("log", "check", str(LOGS / "v2.30-dgx-h100-2nodes-healthy.log"), "--root", H100)
    assert healthy.returncode == 0 and "0 errors, 0 warnings" in healthy.stdout, healthy.stdout


def test_fewer_channels_than_nccls_own_search(tmp_path):
    """LOG017: NCCL 2.30.7's search, connect and duplication give 16 collective channels on two DGX H100 nodes
    (tests/data/nccl_expected); a log with 8 means NCCL saw a worse machine than the host's model."""
    text = (LOGS / "v2.30-dgx-h100-2nodes-healthy.log").read_text()
    fewer = tmp_path / "fewer.log"
    fewer.write_text(text.replace(" 16 coll channels", " 8 coll channels"))
    r = run_cli("log", "check", str(fewer), "--root", H100, "-f", "json")
    hits = [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "LOG017"]
    assert len(hits) == 2 and {h["message"].split(" ")[0] for h in hits} == {"dgx-01", "dgx-02"}
    assert "8 collective channels where the model" in hits[0]["message"] and "predicts 16" in hits[0]["message"]
    assert "8 coll channels" in hits[0]["evidence"][0]


def test_inventory_gives_each_host_its_node(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"version: 1\nhosts:\n  dgx-01: {{snapshot: {H100}}}\n"
                   f"  dgx-02: {{snapshot: {REPO / 'fixtures' / 'hosts' / 'dgx-h100-port-down'}}}\n")
    r = run_cli("log", "check", str(LOGS / "v2.30-dgx-h100-2nodes-healthy.log"), "--inventory", str(inv))
    assert r.returncode == 0, r.stdout + r.stderr
    # dgx-02's mlx5_3 port is down in its snapshot: the model has no mlx5_3, the log's GPU 1 used it
    assert "warning: LOG011: dgx-02:" in r.stdout and "GPU 1 (rank 9) uses mlx5_3" in r.stdout
    assert "mlx5_3 is not among the model's NETs" in r.stdout and "model of dgx-01: " in r.stdout
    assert "dgx-01:" not in r.stdout.split("LOG011", 1)[1].split("\n", 1)[0]
    other = run_cli("log", "check", str(LOGS / "v2.30-dgx-h100-2nodes-healthy.log"), "--inventory",
                    str(REPO / "fixtures" / "fleet" / "dgx-pod" / "inventory.yaml"), "--root", H100)
    assert other.returncode == 2 and "not both" in other.stderr


def test_report_formats_and_rule_selection():
    f = str(LOGS / "v2.19-socket-fallback-docker0.log")
    text = run_cli("log", "check", f)
    assert text.returncode == 1 and "    evidence: " in text.stdout and "error: LOG002:" in text.stdout
    sarif = json.loads(run_cli("log", "check", f, "-f", "sarif").stdout)
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"LOG002", "LOG003"}
    assert "<testsuite" in run_cli("log", "check", f, "-f", "junit").stdout
    only = run_cli("log", "check", f, "--rule", "LOG003", "-f", "json")
    assert only.returncode == 0 and {x["rule"] for x in json.loads(only.stdout)["findings"]} == {"LOG003"}
    wrong = run_cli("log", "check", f, "--rule", "PERF001")
    assert wrong.returncode == 2 and "ncclctl perf check" in wrong.stderr
    warn = run_cli("log", "check", f, "--rule", "LOG003", "--fail-on", "warning")
    assert warn.returncode == 1


def test_config_severity_off_and_options(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rules:\n  LOG002: off\n  log-bootstrap-interface: error\n")
    r = run_cli("log", "check", str(LOGS / "v2.19-socket-fallback-docker0.log"), "-c", str(cfg), "-f", "json")
    found = {f["rule"]: f["severity"] for f in json.loads(r.stdout)["findings"]}
    assert found == {"LOG003": "error"}
    cfg.write_text("rules:\n  LOG015: {options: {init_seconds: 60}}\n")
    r = run_cli("log", "check", str(LOGS / "v2.26-timestamps-slow-init.log"), "-c", str(cfg))
    assert r.returncode == 0 and "LOG015" not in r.stdout


def test_every_log_rule_fires_somewhere():
    """Each LOG rule is asserted by a test of this folder."""
    text = "\n".join(p.read_text() for p in (REPO / "tests" / "logs").glob("test_*.py"))
    asserted = set(re.findall(r"LOG\d{3}", text))
    assert sorted(r.id for r in rules_of(scope="log") if r.id not in asserted) == []


def test_explain_and_rules_list_the_log_and_perf_rules():
    r = run_cli("rules", "--scope", "log")
    n = len(rules_of(scope="log"))  # counted from the registry, not written down
    assert r.returncode == 0 and "LOG001  log-gdr-off" in r.stdout and f"{n} rules ({n} log)" in r.stdout
    e = run_cli("explain", "log-socket-transport")
    assert e.returncode == 0 and "runs in ncclctl log check" in e.stdout and "ncclctl log check" in e.stdout
    p = run_cli("explain", "PERF001")
    assert "min_efficiency" in p.stdout


def test_pre_2_22_bare_versions_are_per_file(tmp_path):
    """Before 2.22 rank 0 prints the version on stdout only: in a file of one host it is that host's version."""
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("NCCL version 2.18.3+cuda12.2\nha:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n")
    b.write_text("NCCL version 2.19.3+cuda12.2\nhb:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n")
    found = check(read_logs([str(a), str(b)]))
    assert [f.rule for f in found] == ["LOG004"] and "2.18.3+cuda12.2 on ha" in found[0].message
    assert check(read_logs([str(a)])) == []


def test_bus_ids_and_small_logs():
    assert busid_text("1b000") == "0000:1b:00.0" and busid_text("100000") == "0001:00:00.0"
    # a log of one line, and one of application output only, give no finding and no error
    assert check(read_text("node1:1:1 [0] NCCL INFO NCCL version 2.30.7+cuda12.9\n")) == []
    assert check(read_text("hello\nworld\n")) == []


def test_log_diff(tmp_path):
    a, b = str(LOGS / "v2.30-dgx-h100-2nodes-healthy.log"), str(LOGS / "v2.30-dgx-h100-wrong-nic-shm.log")
    same = run_cli("log", "diff", a, a)
    assert same.returncode == 0 and "no difference" in same.stdout
    d = run_cli("log", "diff", a, b)
    assert d.returncode == 1 and "NICs per local GPU" in d.stdout and "SHM" in d.stdout
    doc = json.loads(run_cli("log", "diff", a, str(LOGS / "v2.28-gdr-off-one-host.log"), "-f", "json").stdout)
    whats = {c["what"] for c in doc["changes"]}
    assert "NCCL version" in whats and "GPUDirect RDMA disabled for HCA" in whats and doc["same"] is False
    both = run_cli("log", "diff", "-", "-")
    assert both.returncode == 2


def test_check_json_keeps_the_log_figures_beside_the_findings_counts() -> None:
    """``log check -f json`` gave the log's figures as ``summary``, which the report's own ``summary`` (the
    findings' counts) overwrote: the log's figures never reached the JSON. Now ``log_summary`` beside it."""
    p = run_cli("log", "check", str(LOGS / "v2.28-duplicate-gpu.log"), "-f", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["summary"] == {"error": 1, "warning": 0, "info": 0}
    assert doc["log_summary"] == {"lines": 10, "nccl_lines": 10, "unrecognised": 0, "nccl_version": "2.28.9+cuda12.9",
                                  "hosts": 1, "processes": 2, "ranks": 2}
