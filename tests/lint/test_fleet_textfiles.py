"""fleet lint --facts over Prometheus textfiles (issue 31): the .prom files `ncclctl lint --format prom` writes on each
node, collected per host. What a textfile holds is compared as facts documents are; what it lacks (RoCE addresses,
the NVLink domain, any fact an older file does not list) is said to be not in the source, never taken as agreeing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import HOSTS, promtool_check, run_cli

EPOCH = {"SOURCE_DATE_EPOCH": "1700000000"}
LAYOUT = {f"gpu{i:03d}": ("dgx-h100-port-down" if i == 2 else "dgx-h100", "535.183.01" if i == 5 else None)
          for i in range(1, 7)}


def _textfile_of(model_path: Path) -> str:
    """What `ncclctl lint --model PATH --format prom` writes (the same functions, in process; one host is checked
    against the command below)."""
    from ncclctl.inventory import load_model
    from ncclctl.lint.engine import DEFAULT_CONFIG, lint_report
    from ncclctl.ops.facts import published_fleet_facts
    from ncclctl.report.prom import textfile

    node = load_model(str(model_path))
    rep = lint_report(node, DEFAULT_CONFIG, source=str(model_path))
    return textfile("lint", now=1700000000, findings=rep.findings, ok=rep.ok, rules_run=len(rep.rules_run),
                    facts=(node.hostname, published_fleet_facts(node)))


def _facts_of(model_path: Path) -> dict:
    from ncclctl.inventory import load_model
    from ncclctl.ops.facts import build

    return build(lambda: load_model(str(model_path)), source={"kind": "model", "path": str(model_path)})


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, models):
    """tmp/prom/HOST.prom and tmp/facts/HOST.fact for the six hosts of LAYOUT (gpu002 has a port down, gpu005 an odd
    driver)."""
    tmp = tmp_path_factory.mktemp("textfiles")
    for sub in ("models", "prom", "facts"):
        (tmp / sub).mkdir()
    for host, (name, driver) in LAYOUT.items():
        doc = json.loads(json.dumps(models[name]))
        doc["hostname"] = host
        if driver:
            doc["facts"]["driver_version"] = driver
        m = tmp / "models" / f"{host}.json"
        m.write_text(json.dumps(doc))
        (tmp / "prom" / f"{host}.prom").write_text(_textfile_of(m))
        (tmp / "facts" / f"{host}.fact").write_text(json.dumps(_facts_of(m)))
    return tmp


def test_the_command_writes_what_the_fleet_reads(fleet):
    """The node's textfile from the CLI: the same bytes as the fixture's, valid for promtool and prometheus_client,
    and the facts it carries read back equal to the facts document's (less what a textfile never has)."""
    target = fleet / "cli.prom"
    r = run_cli("lint", "--model", str(fleet / "models" / "gpu002.json"), "-f", "prom", "-o", str(target), env=EPOCH)
    assert r.returncode == 1, r.stderr
    text = target.read_text()
    assert text == (fleet / "prom" / "gpu002.prom").read_text()
    promtool_check(text)
    parser = pytest.importorskip("prometheus_client.parser")
    theirs = {(s.name, tuple(sorted(s.labels.items())), s.value)
              for fam in parser.text_string_to_metric_families(text) for s in fam.samples}
    from ncclctl.parsers.promtext import parse_textfile

    ours = {(s.name, tuple(sorted(s.labels)), s.value) for s in parse_textfile(text, source="x").samples}
    assert ours == theirs
    info = [s for s in ours if s[0] == "ncclctl_node_info"]
    assert dict(info[0][1])["hostname"] == "gpu002" and dict(info[0][1])["driver"] == "550.54.15"
    assert ("ncclctl_rail_up", (("command", "lint"), ("rail", "1")), 0) in ours  # mlx5_3, down
    from ncclctl.lint.fleet import facts_from_json, load_facts
    from ncclctl.lint.fleet_prom import read_textfile

    got = read_textfile(str(target))
    want = facts_from_json(load_facts(str(fleet / "facts" / "gpu002.fact"))["fleet"]["facts"])
    assert set(want) - set(got["facts"]) == {"roce_addresses", "nvlink"} and set(got["absent"]) == {"roce_addresses", "nvlink"}
    assert got["facts"] == {k: v for k, v in want.items() if k not in ("roce_addresses", "nvlink")}
    assert [(rule, sev.value, dev, n) for rule, sev, dev, n, _ in got["findings"]] == [
        ("IB001", "error", "mlx5_3", 1), ("NCCL011", "error", "/etc/nccl.conf", 1)]


def test_textfiles_give_the_answer_the_facts_give(fleet):
    from_facts = json.loads(run_cli("fleet", "lint", "--facts", str(fleet / "facts"), "-f", "json").stdout)
    r = run_cli("fleet", "lint", "--facts", str(fleet / "prom"), "-f", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)

    def per_host(d):
        return {h["host"]: sorted((f["rule"], f["subject"], f["severity"]) for f in h["findings"]) for h in d["hosts"]}

    assert per_host(doc) == per_host(from_facts)
    assert per_host(doc)["gpu005"] == [("FLT003", "gpu005", "warning")]
    assert {r for r, _, _ in per_host(doc)["gpu002"]} == {"IB001", "NCCL011", "FLT011"}
    assert doc["summary"] == from_facts["summary"]
    assert from_facts["notes"] == []
    assert doc["notes"] == ["gpu[001-006]: not in the source (Prometheus textfile): RoCE addresses, NVLink domain (IMEX); "
                            "FLT009, FLT012, FLT013 did not compare these hosts (not counted as agreeing)"]
    gpu001 = next(h for h in doc["hosts"] if h["host"] == "gpu001")
    assert "FLT003" in gpu001["rules_run"] and "FLT009" not in gpu001["rules_run"]
    ib = next(f for h in doc["hosts"] for f in h["findings"] if f["rule"] == "IB001")
    assert "counts only" in ib["message"] and ib["fix"] and ib["evidence"][0].endswith("gpu002.prom:20")


def test_text_output_names_what_is_not_in_the_source(fleet):
    r = run_cli("fleet", "lint", "--facts", str(fleet / "prom"))
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("note: gpu[001-006]: not in the source (Prometheus textfile): RoCE addresses")
    assert any(ln.startswith("gpu005: warning: FLT003: NVIDIA driver is 535.183.01") for ln in lines)
    assert lines[-1] == "6 hosts: 4 clean, 2 with findings (1 at or above error), 0 unreadable; 3 errors, 1 warning, 0 info"


def _strip_facts(text: str) -> str:
    """A textfile as an ncclctl without the fact families wrote it."""
    from ncclctl.report.prom import FACT_FAMILIES

    names = {n for fams in FACT_FAMILIES.values() for n in fams} | {"ncclctl_fact_series"}
    return "".join(ln for ln in text.splitlines(keepends=True)
                   if not any(ln.startswith((n + "{", n + " ", f"# HELP {n} ", f"# TYPE {n} ")) for n in names))


def test_old_textfiles_and_host_names(fleet, tmp_path):
    """A file without the fact families is named by its host label or its file name; every fleet rule leaves it out
    and says why; its findings still count. A file that names no host is an error naming the file."""
    d = tmp_path / "prom"
    shutil.copytree(fleet / "prom", d)
    old = _strip_facts((fleet / "prom" / "gpu005.prom").read_text())
    (d / "gpu005.prom").unlink()
    (d / "node-five.prom").write_text(old)  # named after the host
    (d / "gpu002.prom").write_text(_strip_facts((fleet / "prom" / "gpu002.prom").read_text())
                                   .replace('{command="lint"', '{command="lint",instance="gpu002:9100"'))
    r = run_cli("fleet", "lint", "--facts", str(d), "-f", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    hosts = {h["host"]: h for h in doc["hosts"]}
    assert sorted(hosts) == ["gpu001", "gpu002", "gpu003", "gpu004", "gpu006", "node-five"]
    assert [f["rule"] for f in hosts["node-five"]["findings"]] == []  # its odd driver is not in its file
    assert {f["rule"] for f in hosts["gpu002"]["findings"]} == {"IB001", "NCCL011"}  # no FLT011: no ports in file
    assert doc["notes"][1] == ("gpu002,node-five: not in the source (Prometheus textfile): NVIDIA driver, GPUs, rail "
                               "layout, RDMA device count, HCA firmware, rails (rate, MTU), NCCL settings, RDMA ports, "
                               "RoCE addresses, NVLink domain (IMEX); FLT001, FLT002, FLT003, FLT004, FLT005, FLT006, "
                               "FLT007, FLT008, FLT009, FLT010, FLT011, FLT012, FLT013 did not compare these hosts "
                               "(not counted as agreeing)")
    nameless = tmp_path / "ncclctl.prom"
    nameless.write_text(old)
    r = run_cli("fleet", "lint", "--facts", str(nameless), str(fleet / "prom" / "gpu001.prom"))
    assert r.returncode == 3 and "cannot tell which host wrote this textfile" in r.stdout and str(nameless) in r.stdout


def test_folder_walk_skips_other_textfiles(fleet, tmp_path):
    d = tmp_path / "textfile_collector"
    shutil.copytree(fleet / "prom", d)
    (d / "smartmon.prom").write_text("# TYPE smartmon_up gauge\nsmartmon_up 1\n")
    log = run_cli("log", "check", str(HOSTS.parent / "logs" / "missing.log"), "-f", "prom")  # up 0, log check
    (d / "ncclctl-log.prom").write_text(log.stdout or 'ncclctl_up{command="log check"} 0\n')
    r = run_cli("fleet", "lint", "--facts", str(d), "-q")
    assert r.returncode == 1 and r.stdout.startswith("6 hosts:"), r.stdout + r.stderr


BAD = {
    "binary.prom": b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 64,
    "json.prom": b'{"schema_version": 1}\n',
    "badline.prom": b'ncclctl_up{command="lint"} 1\nncclctl_ok{command="lint" 1\n',
    "latin1.prom": b'ncclctl_up{command="lint"} 1\n# HELP x caf\xe9\n',
    "down.prom": b'ncclctl_up{command="lint"} 0\nncclctl_last_run_timestamp_seconds{command="lint"} 1\n',
    "dup.prom": b'ncclctl_up{command="lint"} 1\nncclctl_up{command="lint"} 1\n',
    "fleet.prom": b'ncclctl_up{command="fleet lint"} 1\n',
}


def test_hostile_textfiles_are_named_and_the_rest_are_linted(fleet, tmp_path):
    files = []
    for name, data in BAD.items():
        (tmp_path / name).write_bytes(data)
        files.append(str(tmp_path / name))
    cut = (fleet / "prom" / "gpu003.prom").read_text()
    cut = "".join(ln for ln in cut.splitlines(keepends=True) if 'rail="7"' not in ln)
    (tmp_path / "cut.prom").write_text(cut)
    huge = tmp_path / "huge.prom"
    with huge.open("wb") as fh:
        fh.truncate(5 << 20)  # sparse: refused on its size
    files += [str(tmp_path / "cut.prom"), str(huge)]
    r = run_cli("fleet", "lint", "--facts", *files, str(fleet / "prom" / "gpu001.prom"),
                str(fleet / "prom" / "gpu004.prom"), "-f", "json")
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    errors = {Path(h["source"]).name: h["error"] for h in doc["hosts"] if h["error"]}
    assert set(errors) == set(BAD) | {"cut.prom", "huge.prom"}
    assert all(e["exit_code"] == 3 and e["fix"] for e in errors.values())
    assert "binary file" in errors["binary.prom"]["message"]
    assert errors["json.prom"]["line"] == 1
    assert errors["badline.prom"]["line"] == 2 and "after label 'command'" in errors["badline.prom"]["message"]
    assert errors["latin1.prom"]["line"] == 2 and "not UTF-8" in errors["latin1.prom"]["message"]
    assert "ncclctl_up 0" in errors["down.prom"]["message"]
    assert errors["dup.prom"]["line"] == 2 and "same series twice" in errors["dup.prom"]["message"]
    assert "'fleet lint' file holds many hosts" in errors["fleet.prom"]["message"]
    assert "fact 'rails' has 40 series, the file has 35" in errors["cut.prom"]["message"]
    assert "larger than a Prometheus textfile may be" in errors["huge.prom"]["message"]
    assert doc["summary"]["unreadable"] == 9 and doc["summary"]["hosts"] == 11
    text = run_cli("fleet", "lint", "--facts", str(tmp_path / "badline.prom"), str(fleet / "prom" / "gpu001.prom"))
    assert text.returncode == 3 and f"cannot load {tmp_path / 'badline.prom'}:2: " in text.stdout


def test_fact_values_and_series_are_bounded():
    """Label values of facts are printable ASCII of at most 128 characters, else a digest (hosts still compare equal
    exactly when the values do); a fact with too many series is left out whole and not listed."""
    from ncclctl.report.prom import MAX_FACT_SERIES, fact_samples, fact_value

    assert fact_value("=mlx5_0,mlx5_1") == "=mlx5_0,mlx5_1"
    long = "x" * 129
    assert fact_value(long).startswith("sha256:") and len(fact_value(long)) == 23
    assert fact_value(long) == fact_value("x" * 129) != fact_value("x" * 130)
    assert fact_value("caf\u00e9").startswith("sha256:") and fact_value("a\nb").startswith("sha256:")
    facts = {"driver": "550.54.15", "gpus": "8 x H100", "nics": 2, "firmware": [], "rails": [],
             "rail_layout": "(no rails)", "nccl": {f"nccl_x{i}": str(i) for i in range(MAX_FACT_SERIES + 1)},
             "net_ports": []}
    fams = fact_samples("lint", "h1", facts)
    assert "ncclctl_nccl_setting_info" not in fams
    listed = {dict(labels)["fact"]: n for labels, n in fams["ncclctl_fact_series"]}
    assert "nccl" not in listed and listed["firmware"] == 0 and listed["node"] == 1


def test_every_fleet_rule_says_what_it_needs():
    """A fleet rule missing from NEEDS would compare a textfile host on facts it does not have."""
    from ncclctl.lint.fleet import FACT_NAMES
    from ncclctl.lint.fleet_prom import FACT_KEYS
    from ncclctl.lint.rules_fleet import NEEDS
    from ncclctl.registry import fleet_rules

    assert {r.id for r in fleet_rules()} == set(NEEDS)
    published = {k for keys in FACT_KEYS.values() for k in keys}
    assert {k for need in NEEDS.values() for k in need} <= published | {"roce_addresses", "nvlink"} <= set(FACT_NAMES)
