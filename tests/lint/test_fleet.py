"""`ncclctl fleet lint`: inventory and positional snapshots/models, FLT findings naming the odd hosts and the
majority, text summary table, JSON, JUnit (host x rule), parallel == serial, unreadable hosts, usage errors."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pytest

from ncclctl.lint.engine import Config
from ncclctl.lint.fleet import Source, lint_fleet
from ncclctl.lint.rules_fleet import majority, odd_hosts

from conftest import HOSTS, REPO, run_cli

from .cases import materialize

POD = str(REPO / "fixtures" / "fleet" / "dgx-pod" / "inventory.yaml")
POD_CONFIG = str(REPO / "fixtures" / "fleet" / "dgx-pod" / ".ncclctl.yaml")


@pytest.fixture(scope="module")
def pod_json():
    res = run_cli("fleet", "lint", "--inventory", POD, "--format", "json")
    assert res.returncode == 1, res.stderr
    return json.loads(res.stdout)


def _flt(doc):
    return {(h["host"], f["rule"]) for h in doc["hosts"] for f in h["findings"] if f["rule"].startswith("FLT")}


def test_inventory_json_names_hosts_as_the_inventory_does(pod_json):
    assert [h["host"] for h in pod_json["hosts"]] == ["dgx-01", "dgx-02", "dgx-03", "dgx-04", "dgx-05"]
    assert pod_json["summary"]["hosts"] == 5 and pod_json["summary"]["unreadable"] == 0
    # The DGX A100 in the H100 pool is the odd one out; the healthy H100s are never named by a fleet rule.
    assert {("dgx-05", r) for r in ("FLT003", "FLT004", "FLT005", "FLT007", "FLT008")} <= _flt(pod_json)
    # dgx-02's rail port is down: NCCL uses 7 devices there, 8 elsewhere (FLT011, a silent hang since 2.30)
    assert ("dgx-02", "FLT011") in _flt(pod_json)
    assert not {h for h, _ in _flt(pod_json) - {("dgx-02", "FLT011")}} - {"dgx-05"}
    f = next(f for h in pod_json["hosts"] if h["host"] == "dgx-05" for f in h["findings"] if f["rule"] == "FLT005")
    assert f["subject"] == "dgx-05"
    assert f["message"] == ("GPU inventory is 8 x NVIDIA A100-SXM4-80GB; the fleet majority is 8 x NVIDIA H100 "
                            "80GB HBM3 (4 of 5 hosts)")
    f = next(f for h in pod_json["hosts"] if h["host"] == "dgx-05" for f in h["findings"] if f["rule"] == "FLT008")
    assert f["message"].startswith("rails 0-7 rate is 200 Gb/s; the fleet majority is 400 Gb/s")
    dgx01 = pod_json["hosts"][0]
    assert dgx01["ok"] and dgx01["error"] is None and "FLT001" in dgx01["rules_run"]


def test_config_ignores_and_severities_apply_per_host(pod_json):
    res = run_cli("fleet", "lint", "--inventory", POD, "--config", POD_CONFIG, "--format", "json")
    doc = json.loads(res.stdout)
    assert doc["config"] == POD_CONFIG
    flt = _flt(doc)
    assert ("dgx-05", "FLT005") not in flt and ("dgx-05", "FLT003") in flt
    dgx05 = next(h for h in doc["hosts"] if h["host"] == "dgx-05")
    assert "FLT005" not in dgx05["rules_run"] and "FLT003" in dgx05["rules_run"]


def test_text_summary_table():
    res = run_cli("fleet", "lint", "--inventory", POD)
    lines = res.stdout.splitlines()
    assert res.returncode == 1 and res.stderr == ""  # no progress bar when stderr is not a terminal
    assert "dgx-05: error: FLT005: GPU inventory is 8 x NVIDIA A100-SXM4-80GB; the fleet majority is 8 x NVIDIA " \
           "H100 80GB HBM3 (4 of 5 hosts)" in lines
    head = lines.index("HOSTS        ERRORS  WARNINGS  INFO  STATUS")
    table = lines[head + 1:-1]
    assert [row.split()[0] for row in table] == ["dgx-02", "dgx-[03-04]", "dgx-05"]  # dgx-01 is clean
    assert all(row.split()[-1] == "FAIL" for row in table)
    assert lines[-1].startswith("5 hosts: 1 clean, 4 with findings (4 at or above error), 0 unreadable; ")


def test_junit_has_a_testcase_per_host_and_rule(pod_json):
    res = run_cli("fleet", "lint", "--inventory", POD, "--format", "junit")
    root = ET.fromstring(res.stdout)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["dgx-01", "dgx-02", "dgx-03", "dgx-04", "dgx-05"]
    for suite, host in zip(suites, pod_json["hosts"]):
        cases = suite.findall("testcase")
        assert [c.get("name").split()[0] for c in cases] == host["rules_run"]
        assert all(c.get("classname") == host["host"] for c in cases)
        failed = {c.get("name").split()[0] for c in cases if c.find("failure") is not None}
        assert failed == {f["rule"] for f in host["findings"] if f["severity"] == "error"}
        assert suite.get("tests") == str(len(cases)) and suite.get("failures") == str(len(failed))
    assert int(root.get("tests")) == sum(len(h["rules_run"]) for h in pod_json["hosts"])


def _fleet(tmp_path, specs):
    """Hard-linked copies of host fixtures with overlays; each gets its own hostname."""
    paths = []
    for i, (name, base, overlay) in enumerate(specs):
        entry = {"name": name, "base": base, **overlay}
        entry.setdefault("write", {})
        entry["write"] = {**entry["write"], "proc/sys/kernel/hostname": name + "\n"}
        paths.append(str(materialize(entry, tmp_path / f"h{i}")))
    return paths


def test_positional_snapshots_and_models_mixed(tmp_path):
    paths = _fleet(tmp_path, [
        ("roce-01", "hgx-h100-roce", {}),
        ("roce-02", "hgx-h100-roce", {"write": {"sys/class/net/ens3np0/mtu": "1500\n"}}),
        ("roce-03", "hgx-h100-roce", {}),
    ])
    model = tmp_path / "roce-04.json"
    probe = run_cli("probe", "--root", paths[0], "--format", "json")
    model.write_text(probe.stdout.replace('"hostname": "roce-01"', '"hostname": "roce-04"'))
    res = run_cli("fleet", "lint", *paths, str(model), "--format", "json", "--rule", "FLT001,FLT004")
    doc = json.loads(res.stdout)
    assert [h["host"] for h in doc["hosts"]] == ["roce-01", "roce-02", "roce-03", "roce-04"]
    assert doc["hosts"][3]["source"] == str(model)
    assert [(h["host"], f["rule"], f["message"]) for h in doc["hosts"] for f in h["findings"]] == [
        ("roce-02", "FLT001", "rail 2 MTU is RDMA MTU 4096, interface MTU 1500; the fleet majority is RDMA MTU 4096, "
                              "interface MTU 9000 (3 of 4 hosts)")]
    assert res.returncode == 1


def test_same_hostname_twice_is_kept_apart(tmp_path):
    res = run_cli("fleet", "lint", str(HOSTS / "dgx-h100"), str(HOSTS / "dgx-h100-port-down"), "--format", "json",
                  "--rule", "FLT008")
    names = [h["host"] for h in json.loads(res.stdout)["hosts"]]
    assert names == [f"dgx-h100-01@{HOSTS / 'dgx-h100'}", f"dgx-h100-01@{HOSTS / 'dgx-h100-port-down'}"]


def test_parallel_equals_serial(tmp_path):
    specs = [(f"n{i:02d}", "dgx-h100", {}) for i in range(6)]
    specs[4] = ("n04", "dgx-h100", {"write": {"sys/class/infiniband/mlx5_3/fw_ver": "28.37.1014\n"}})
    paths = _fleet(tmp_path, specs)
    sources = [Source(p, "snapshot") for p in paths]
    serial = lint_fleet(sources, Config(), jobs=1)
    parallel = lint_fleet(sources, Config(), jobs=3)
    assert [(h.host, h.findings, h.rules) for h in serial.hosts] == [(h.host, h.findings, h.rules)
                                                                    for h in parallel.hosts]
    flt = [(h.host, f.rule) for h in serial.hosts for f in h.findings if f.rule.startswith("FLT")]
    assert flt == [("n04", "FLT002")]
    for res in (serial, parallel):  # what hosts hold alike is held once (10,000 hosts held 21 KB each)
        _assert_shared(res.hosts)
    a = run_cli("fleet", "lint", *paths, "--jobs", "1", "--format", "json").stdout
    b = run_cli("fleet", "lint", *paths, "--jobs", "2", "--format", "json").stdout
    assert a == b


def _assert_shared(hosts) -> None:
    """Equal rule lists are one list, equal fact values (dicts, lists) one object: counted by identity."""
    assert len({id(h.rules) for h in hosts}) == len({tuple(h.rules) for h in hosts}) == 1
    keys = {k for h in hosts for k, v in h.facts.items() if isinstance(v, (dict, list)) and v}
    assert len(keys) >= 3, keys
    for k in keys:
        values = [h.facts[k] for h in hosts if k in h.facts]
        assert len({id(v) for v in values}) == len({repr(v) for v in values}), k
    assert len({id(h.facts["rails"]) for h in hosts}) == 1 < len(hosts)


def test_unreadable_host_is_reported_and_the_rest_linted(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "nvml.json").write_text("{oops")
    res = run_cli("fleet", "lint", str(HOSTS / "dgx-h100"), str(broken), str(tmp_path / "missing"), "--format", "json")
    assert res.returncode == 3
    doc = json.loads(res.stdout)
    assert doc["summary"]["unreadable"] == 2 and doc["ok"] is False
    assert doc["hosts"][0]["error"] is None and doc["hosts"][0]["rules_run"]
    assert doc["hosts"][1]["error"]["path"] == str(broken / "nvml.json")
    assert doc["hosts"][2]["error"]["message"] == "no such snapshot"
    res = run_cli("fleet", "lint", str(HOSTS / "dgx-h100"), str(tmp_path / "missing"))
    assert f"{tmp_path / 'missing'}: error: cannot load {tmp_path / 'missing'}: no such snapshot" in res.stdout
    res = run_cli("fleet", "lint", str(HOSTS / "dgx-h100"), str(tmp_path / "missing"), "--format", "junit")
    err = ET.fromstring(res.stdout).find("testsuite[@name='%s']/testcase/error" % (tmp_path / "missing"))
    assert err is not None and "no such snapshot" in err.get("message")


def test_usage_errors(tmp_path):
    res = run_cli("fleet", "lint")
    assert res.returncode == 2 and "give snapshots or --inventory" in res.stderr
    res = run_cli("fleet", "lint", str(HOSTS / "dgx-h100"), "--inventory", POD)
    assert res.returncode == 2
    bad = tmp_path / "inv.yaml"
    bad.write_text("hosts:\n  a: {snapshot: x, modle: y}\n")
    res = run_cli("fleet", "lint", "--inventory", str(bad))
    assert res.returncode == 3 and f"{bad}:2: host a: unknown key 'modle'" in res.stderr


def test_majority_and_split():
    assert majority({"a": 1, "b": 1, "c": 2}) == (1, 2)
    assert majority({"a": 1, "b": 2}) is None
    hits = list(odd_hosts({"a": 1, "b": 2}, str, "x"))
    assert [h.subject for h in hits] == ["fleet"]  # one finding about the fleet, no host's
    assert hits[0].message == "x: no fleet majority: 1 on a; 2 on b"
    assert list(odd_hosts({"a": 1, "b": 1}, str, "x")) == []


def test_progress_bar_only_on_a_terminal(monkeypatch):
    from ncclctl.cli import fleet as cli_lint

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert cli_lint._progress() is None
    tty = Tty()
    monkeypatch.setattr("sys.stderr", tty)
    show = cli_lint._progress()
    show(5, 10)
    show(10, 10)
    assert "[###############...............] 5/10 hosts" in tty.getvalue()
    assert tty.getvalue().endswith("\r")
