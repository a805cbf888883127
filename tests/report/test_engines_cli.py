"""The engines' contracts through the command line (issue 31): Prometheus (node_exporter textfile, --format prom),
Slurm (drain reason, --format slurm [--drain]), Kubernetes node-problem-detector (--format npd).

Each test reads the output as the engine would: prometheus_client's parser and `promtool check metrics` (when
installed: .ci/run installs Debian's prometheus), Slurm's one-line reason and exit status, NPD's exit code and
80-character first line.
"""

from __future__ import annotations

import os
import stat

import pytest

from conftest import HOSTS, promtool_check, run_cli

BROKEN = str(HOSTS / "dgx-h100-port-down")
CLEAN = str(HOSTS / "dgx-h100")
EPOCH = {"SOURCE_DATE_EPOCH": "1700000000"}


def _families(text: str) -> dict:
    parser = pytest.importorskip("prometheus_client.parser", reason="prometheus_client not installed (pip install -e '.[test]')")
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def _samples(fams: dict, name: str) -> dict:
    return {tuple(sorted(s.labels.items())): s.value for s in fams[name].samples}


# -- Prometheus -------------------------------------------------------------------------------------


def test_prom_broken_node_textfile(tmp_path):
    target = tmp_path / "ncclctl.prom"
    r = run_cli("lint", "--root", BROKEN, "--format", "prom", "--output", str(target), env=EPOCH)
    assert r.returncode == 1, r.stderr
    assert r.stdout == "" and "Traceback" not in r.stderr
    text = target.read_text()
    promtool_check(text)
    fams = _families(text)
    lint = (("command", "lint"),)
    assert _samples(fams, "ncclctl_up") == {lint: 1}
    assert _samples(fams, "ncclctl_ok") == {lint: 0}
    assert _samples(fams, "ncclctl_last_run_timestamp_seconds") == {lint: 1700000000}
    assert _samples(fams, "ncclctl_findings") == {lint + (("severity", "error"),): 2,
                                                  lint + (("severity", "info"),): 0,
                                                  lint + (("severity", "warning"),): 0}
    rules = _samples(fams, "ncclctl_rule_findings")
    assert rules == {
        (("command", "lint"), ("device", "mlx5_3"), ("rule", "IB001"), ("severity", "error")): 1,
        (("command", "lint"), ("device", "/etc/nccl.conf"), ("rule", "NCCL011"), ("severity", "error")): 1,
    }
    assert all(f.type == "gauge" for f in fams.values())
    # atomic write: nothing but the target in the folder, readable by node_exporter's user
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ncclctl.prom"]
    assert stat.S_IMODE(target.stat().st_mode) & 0o444 == 0o444
    # deterministic under SOURCE_DATE_EPOCH, and the same bytes on stdout
    again = run_cli("lint", "--root", BROKEN, "--format", "prom", env=EPOCH)
    assert again.stdout == text


def test_prom_clean_node_and_failed_run(tmp_path):
    r = run_cli("lint", "--root", CLEAN, "-f", "prom", env=EPOCH)
    assert r.returncode == 0, r.stderr
    fams = _families(r.stdout)
    assert _samples(fams, "ncclctl_ok") == {(("command", "lint"),): 1}
    assert _samples(fams, "ncclctl_rules_run")[(("command", "lint"),)] > 40
    assert "ncclctl_rule_findings" not in fams
    promtool_check(r.stdout)
    # the run cannot look: the file still says so (up 0), the error and its exit code as usual
    target = tmp_path / "ncclctl.prom"
    target.write_text("stale\n")
    bad = run_cli("lint", "--root", str(tmp_path / "missing"), "-f", "prom", "-o", str(target), env=EPOCH)
    assert bad.returncode == 3 and "Traceback" not in bad.stderr and "no such host root" in bad.stderr
    fams = _families(target.read_text())
    assert _samples(fams, "ncclctl_up") == {(("command", "lint"),): 0}
    assert "ncclctl_findings" not in fams


def test_prom_output_into_a_missing_folder_is_a_clear_error(tmp_path):
    r = run_cli("lint", "--root", CLEAN, "-f", "prom", "-o", str(tmp_path / "nope" / "ncclctl.prom"))
    assert r.returncode == 3 and "Traceback" not in r.stderr and "does not exist" in r.stderr


def test_prom_cardinality_is_bounded():
    """Free text never becomes a label value; series per file are capped."""
    from ncclctl.findings import Finding, Severity
    from ncclctl.report.prom import MAX_DEVICE_SERIES, textfile

    many = [Finding("IB001", Severity.ERROR, "m", f"mlx5_{i}") for i in range(MAX_DEVICE_SERIES + 300)]
    odd = [Finding("LOG001", Severity.WARNING, "m", 'a subject with "quotes", spaces\nand a newline'),
           Finding("LOG001", Severity.WARNING, "m", "x" * 65)]
    text = textfile("log check", now=1.5, findings=many + odd)
    fams = _families(text)
    rules = _samples(fams, "ncclctl_rule_findings")
    # the cap, then one "more" series per rule and severity past it
    assert len(rules) == MAX_DEVICE_SERIES + 2
    assert rules[(("command", "log check"), ("device", "more"), ("rule", "IB001"), ("severity", "error"))] == 300
    assert sum(rules.values()) == len(many) + len(odd)
    small = _samples(_families(textfile("log check", now=1.5, findings=odd)), "ncclctl_rule_findings")
    assert small == {(("command", "log check"), ("device", "other"), ("rule", "LOG001"), ("severity", "warning")): 2}
    assert all(len(dict(k)["device"]) <= 64 and " " not in dict(k)["device"] for k in rules)
    assert _samples(fams, "ncclctl_last_run_timestamp_seconds") == {(("command", "log check"),): 1.5}


def test_prom_fleet_is_bounded_across_hosts():
    from ncclctl.findings import Finding, Severity
    from ncclctl.report.fleet import FleetResult, HostResult
    from ncclctl.report.prom import MAX_DEVICE_SERIES, fleet_textfile

    hosts = [HostResult(host=f"gpu{i:05d}", source="s", findings=[Finding("IB001", Severity.ERROR, "m", "mlx5_3")])
             for i in range(MAX_DEVICE_SERIES * 4)]
    hosts.append(HostResult(host="bad", source="s", error={"exit_code": 3}))
    fams = _families(fleet_textfile(FleetResult(hosts), Severity.ERROR, now=0))
    rules = _samples(fams, "ncclctl_rule_findings")
    assert len(rules) == MAX_DEVICE_SERIES + 1 and sum(rules.values()) == MAX_DEVICE_SERIES * 4
    assert rules[(("command", "fleet lint"), ("device", "more"), ("host", "more"), ("rule", "IB001"),
                  ("severity", "error"))] == MAX_DEVICE_SERIES * 3
    assert _samples(fams, "ncclctl_fleet_hosts") == {
        (("command", "fleet lint"), ("state", "linted")): MAX_DEVICE_SERIES * 4,
        (("command", "fleet lint"), ("state", "unreadable")): 1,
        (("command", "fleet lint"), ("state", "silent")): 0}


@pytest.mark.parametrize("args, command, code, rule", [
    (("fleet", "lint", "--inventory", "fixtures/fleet/dgx-pod/inventory.yaml", "-j", "1"), "fleet lint", 1, "IB001"),
    (("log", "check", "fixtures/logs/v2.22-gdr-peermem-rename.log"), "log check", 1, "LOG001"),
    (("perf", "check", "fixtures/logs/perf/all_reduce-h100-1node.txt"), "perf check", 0, None),
])
def test_prom_on_fleet_log_and_perf(tmp_path, args, command, code, rule):
    target = tmp_path / "ncclctl.prom"
    r = run_cli(*args, "--format", "prom", "-o", str(target), env=EPOCH)
    assert r.returncode == code, r.stderr
    text = target.read_text()
    promtool_check(text)
    fams = _families(text)
    cmd = (("command", command),)
    assert _samples(fams, "ncclctl_up") == {cmd: 1}
    assert _samples(fams, "ncclctl_ok") == {cmd: 0 if code else 1}
    assert _samples(fams, "ncclctl_last_run_timestamp_seconds") == {cmd: 1700000000}
    seen = {dict(k)["rule"] for k in _samples(fams, "ncclctl_rule_findings")} if rule else set()
    assert rule is None or rule in seen
    if command == "fleet lint":
        assert {dict(k)["host"] for k in _samples(fams, "ncclctl_rule_findings")} >= {"dgx-02"}


# -- Slurm ------------------------------------------------------------------------------------------


def _fake_scontrol(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "scontrol.args"
    fake = bindir / "scontrol"
    fake.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > {log}\n')
    fake.chmod(0o755)
    return {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "SLURMD_NODENAME": "gpu017"}, log


def test_slurm_reason_and_exit_status(tmp_path):
    r = run_cli("lint", "--root", BROKEN, "--format", "slurm")
    assert r.returncode == 1
    assert r.stdout == "ncclctl: IB001 mlx5_3 ib-port-not-active (+1 more)\n"
    ok = run_cli("lint", "--root", CLEAN, "--format", "slurm")
    assert ok.returncode == 0 and ok.stdout.startswith("ncclctl: ok") and ok.stdout.count("\n") == 1
    unknown = run_cli("lint", "--root", str(tmp_path / "missing"), "--format", "slurm")
    assert unknown.returncode == 2 and unknown.stdout.startswith("ncclctl: unknown: ")
    assert "Traceback" not in unknown.stderr


def test_slurm_drain_only_when_asked(tmp_path):
    env, log = _fake_scontrol(tmp_path)
    r = run_cli("lint", "--root", BROKEN, "--format", "slurm", env=env)
    assert r.returncode == 1 and not log.exists()  # no --drain: nothing run
    r = run_cli("lint", "--root", BROKEN, "--format", "slurm", "--drain", env=env)
    assert r.returncode == 1, r.stderr
    assert log.read_text().splitlines() == ["update", "nodename=gpu017", "state=drain",
                                            "reason=ncclctl: IB001 mlx5_3 ib-port-not-active (+1 more)"]
    log.unlink()
    r = run_cli("lint", "--root", CLEAN, "--format", "slurm", "--drain", "--node", "gpu001", env=env)
    assert r.returncode == 0 and not log.exists()  # a fit node is never touched


def test_slurm_drain_misuse_and_missing_scontrol(tmp_path):
    r = run_cli("lint", "--root", CLEAN, "--drain")
    assert r.returncode == 2 and "--format slurm" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("lint", "--root", BROKEN, "--format", "slurm", "--drain", env={"SCONTROL": str(tmp_path / "none")})
    assert r.returncode == 1 and "cannot drain" in r.stderr and "Traceback" not in r.stderr


def test_slurm_reason_stays_within_the_limit():
    from ncclctl.findings import Finding, Severity
    from ncclctl.report.core import Report
    from ncclctl.report.oneline import SLURM_REASON_MAX, slurm_answer

    long = Finding("IB001", Severity.ERROR, "down", "mlx5_" + "x" * 200)
    line, code = slurm_answer(Report(findings=(long,) * 3, subject="h"))
    assert code == 1 and len(line.rstrip("\n")) <= SLURM_REASON_MAX and line.startswith("ncclctl: IB001 mlx5_")
    assert line.rstrip().endswith("(+2 more)") and "\n" not in line.rstrip("\n")


# -- node-problem-detector --------------------------------------------------------------------------


@pytest.mark.parametrize("root, code, first", [
    (BROKEN, 1, "ncclctl: IB001 mlx5_3 ib-port-not-active (+1 more)"),
    (CLEAN, 0, "ncclctl: ok ("),  # the count is the registry's node rules that ran
    ("/nonexistent/host", 2, "ncclctl: unknown: /nonexistent/host: no such host root"),
])
def test_npd_contract(root, code, first):
    r = run_cli("lint", "--root", root, "--format", "npd")
    assert r.returncode == code, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 1 and len(lines[0]) <= 80 and lines[0].startswith(first)
    if code == 0:
        assert lines[0].endswith(" rules passed)")
    assert "Traceback" not in r.stderr
