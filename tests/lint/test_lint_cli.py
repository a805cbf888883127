"""`ncclctl lint` end to end: text, JSON, SARIF, JUnit and Nagios output, exit codes, --fail-on, --rule, --model,
determinism. Findings come from EXP rules with a profile written here, so the expected output does not depend
on the other rule families."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from conftest import HOSTS, run_cli

NVL = str(HOSTS / "dgx-h100-nvlink-missing")
# On dgx-h100-nvlink-missing: EXP008 fires once (GPU5, error), EXP006 twice (driver and CUDA, warnings).
PROFILE = "driver: {nvidia: '535.183.01', cuda: 12020}\ngpus: {count: 8, nvlinks: 18}\n"
RULES = "EXP001,EXP006,expect-nvlink-count"


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    p = tmp_path_factory.mktemp("lint") / "expected.yaml"
    p.write_text(PROFILE)
    return str(p)


def lint(profile, *args, root=NVL):
    return run_cli("lint", "--root", root, "--expect", profile, "--rule", RULES, *args)


def test_text_is_grepable_and_exit_1_on_errors(profile):
    res = lint(profile)
    assert res.returncode == 1, res.stderr
    lines = res.stdout.splitlines()
    findings = [ln for ln in lines if not ln.startswith("    ")]
    assert findings[:3] == [
        "GPU5: error: EXP008: GPU5 (0000:c3:00.0) has 16 active NVLinks, the profile expects 18 (inactive links: 16, 17)",
        "dgx-h100-01: warning: EXP006: CUDA driver API version 12040, the profile expects 12020",
        "dgx-h100-01: warning: EXP006: NVIDIA driver 550.54.15, the profile expects 535.183.01",
    ]
    assert all(re.match(r"^    fix: \S", ln) for ln in lines if ln.startswith("    "))
    assert lines[-1] == "dgx-h100-01: 1 error, 2 warnings, 0 info (3 rules run)"


def test_fail_on(profile):
    warn_only = "EXP001,EXP006"
    assert run_cli("lint", "--root", NVL, "--expect", profile, "--rule", warn_only).returncode == 0
    res = run_cli("lint", "--root", NVL, "--expect", profile, "--rule", warn_only, "--fail-on", "warning")
    assert res.returncode == 1
    assert run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--expect", profile, "--rule", "EXP001,EXP008",
                   "--fail-on", "info").returncode == 0


def test_json(profile):
    res = lint(profile, "--format", "json")
    doc = json.loads(res.stdout)
    assert res.returncode == 1
    assert doc["schema_version"] == 1 and doc["host"] == "dgx-h100-01" and doc["source"] == NVL
    assert doc["ok"] is False and doc["fail_on"] == "error" and doc["expect"] == profile
    assert doc["rules_run"] == ["EXP001", "EXP006", "EXP008"]
    assert doc["summary"] == {"error": 1, "warning": 2, "info": 0}
    f = doc["findings"][0]
    assert set(f) == {"rule", "severity", "message", "subject", "line", "column", "fix", "evidence"}
    assert (f["rule"], f["severity"], f["subject"]) == ("EXP008", "error", "GPU5")


def test_sarif(profile):
    doc = json.loads(lint(profile, "--format", "sarif").stdout)
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["EXP001", "EXP006", "EXP008"]
    for r in rules:
        assert r["shortDescription"]["text"] and r["fullDescription"]["text"] and r["help"]["text"]
        assert r["defaultConfiguration"]["level"] in ("error", "warning", "note")
    levels = [(res["ruleId"], res["level"]) for res in run["results"]]
    assert levels == [("EXP008", "error"), ("EXP006", "warning"), ("EXP006", "warning")]
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["message"]["text"] and res["locations"]
    gpu5 = run["results"][0]["locations"][0]["logicalLocations"][0]
    assert gpu5 == {"name": "GPU5", "fullyQualifiedName": "dgx-h100-01/GPU5", "kind": "device"}


def test_junit(profile):
    res = lint(profile, "--format", "junit")
    root = ET.fromstring(res.stdout)
    assert root.tag == "testsuites" and root.get("tests") == "3" and root.get("failures") == "1"
    suite = root.find("testsuite")
    assert suite.get("name") == "dgx-h100-01"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == ["EXP001 expect-gpu-count-model", "EXP006 expect-driver", "EXP008 expect-nvlink-count"]
    failure = cases["EXP008 expect-nvlink-count"].find("failure")
    assert failure.get("type") == "error" and "GPU5" in failure.get("message")
    # Below --fail-on: the testcase passes and lists its findings in system-out.
    assert cases["EXP006 expect-driver"].find("failure") is None
    assert "NVIDIA driver 550.54.15" in cases["EXP006 expect-driver"].find("system-out").text
    res = lint(profile, "--format", "junit", "--fail-on", "warning")
    assert ET.fromstring(res.stdout).get("failures") == "2"


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit"])
def test_output_is_deterministic(profile, fmt):
    assert lint(profile, "--format", fmt).stdout == lint(profile, "--format", fmt).stdout


NAGIOS_RE = re.compile(r"^NCCLCTL (OK|WARNING|CRITICAL|UNKNOWN) - [^|\n]*\|errors=\d+ warnings=\d+ info=\d+$")


def test_nagios(profile):
    res = lint(profile, "--nagios")
    first, *rest = res.stdout.splitlines()
    assert res.returncode == 2 and NAGIOS_RE.match(first), first
    assert first.startswith("NCCLCTL CRITICAL - dgx-h100-01: 1 error, 2 warnings: EXP008 GPU5: ")
    assert first.endswith("(+2 more)|errors=1 warnings=2 info=0")
    assert len(rest) == 3 and rest[0].startswith("GPU5: error: EXP008:")
    res = run_cli("lint", "--root", NVL, "--expect", profile, "--rule", "EXP006", "--nagios")
    assert res.returncode == 1 and res.stdout.startswith("NCCLCTL WARNING - ")
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--expect", profile, "--rule", "EXP008", "--nagios")
    assert res.returncode == 0
    assert res.stdout == "NCCLCTL OK - dgx-h100-01: 0 errors, 0 warnings (1 rule passed)|errors=0 warnings=0 info=0\n"


@pytest.mark.parametrize("args", [
    ["--root", "/nonexistent/host"],
    ["--root", NVL, "--config", "/nonexistent.yaml"],
    ["--root", NVL, "--nagios-typo"],
    ["--root", NVL, "--format", "json"],
])
def test_nagios_unknown(args):
    res = run_cli("lint", *args, "--nagios")
    assert res.returncode == 3, (res.stdout, res.stderr)
    assert res.stdout.startswith("NCCLCTL UNKNOWN - ") and "Traceback" not in res.stderr


def test_model_input_gives_the_same_findings(profile, tmp_path):
    model = tmp_path / "model.json"
    model.write_text(run_cli("probe", "--root", NVL, "--format", "json").stdout)
    a = json.loads(lint(profile, "--format", "json").stdout)
    b = json.loads(run_cli("lint", "--model", str(model), "--expect", profile, "--rule", RULES, "--format",
                           "json").stdout)
    assert a["findings"] == b["findings"] and b["source"] == str(model)


def test_usage_and_input_errors(tmp_path):
    res = run_cli("lint", "--root", NVL, "--rule", "EXP0008")
    assert res.returncode == 2 and "did you mean EXP008?" in res.stderr
    res = run_cli("lint", "--root", NVL, "--model", "x.json")
    assert res.returncode == 2 and "not both" in res.stderr
    res = run_cli("lint", "--root", str(tmp_path / "nope"))
    assert res.returncode == 3 and "Traceback" not in res.stderr
    res = run_cli("lint", "--root", str(tmp_path / "nope"), "--format", "json")
    assert res.returncode == 3 and json.loads(res.stdout)["ok"] is False


def test_strict_raises_severities(profile, tmp_path):
    strict = tmp_path / "strict.yaml"
    strict.write_text("extends: strict\n")
    res = run_cli("lint", "--root", NVL, "--expect", profile, "--rule", "EXP006", "--config", str(strict),
                  "--format", "json")
    doc = json.loads(res.stdout)
    assert res.returncode == 1 and doc["extends"] == "strict"
    assert {f["severity"] for f in doc["findings"]} == {"error"}  # EXP006: warning, error under strict
