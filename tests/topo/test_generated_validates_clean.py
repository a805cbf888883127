"""A file `topo generate` writes for a host validates clean against that host (no NTS025 infos for the values
it writes on purpose); without the host, or against another host, the pinned values are still reported."""

from __future__ import annotations

import json
import re

import pytest

from conftest import HOSTS, host_names, run_cli

from ncclctl.probe import probe


def _gpu_hosts() -> list[str]:
    return [h for h in host_names() if probe(str(HOSTS / h)).gpus]


GPU_HOSTS = _gpu_hosts()


def test_there_are_gpu_fixtures():
    assert len(GPU_HOSTS) >= 10 and "cpu-only" not in GPU_HOSTS


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = {}
    d = tmp_path_factory.mktemp("gen")
    for h in GPU_HOSTS:
        path = d / f"{h}.xml"
        res = run_cli("topo", "generate", "--root", str(HOSTS / h), "-o", str(path))
        assert res.returncode == 0, res.stderr
        out[h] = path
    return out


@pytest.mark.parametrize("host", GPU_HOSTS)
def test_generated_file_validates_clean_against_its_host(host, generated):
    path = generated[host]
    res = run_cli("topo", "validate", str(path), "--root", str(HOSTS / host), "--format", "json")
    doc = json.loads(res.stdout)
    assert res.returncode == 0 and doc["findings"] == [], [(f["rule"], f["message"]) for f in doc["findings"]]
    text = run_cli("topo", "validate", str(path), "--root", str(HOSTS / host), "--show-info")
    assert text.stdout == f"{path}: 0 errors, 0 warnings, 0 info\n"


def test_without_the_host_the_pinned_values_are_hidden_infos(generated):
    path = generated["dgx-h100"]
    doc = json.loads(run_cli("topo", "validate", str(path), "--format", "json").stdout)
    # 20 pinned values, one finding per fault (issue 28): the <gpu> elements and the <net> elements, each listed
    assert {f["rule"] for f in doc["findings"]} == {"NTS025"} and doc["summary"]["info"] == 2
    assert sum(len(f["locations"]) for f in doc["findings"]) == 20
    text = run_cli("topo", "validate", str(path))
    assert text.returncode == 0
    assert text.stdout == f"{path}: 0 errors, 0 warnings, 2 info (info hidden, --show-info shows it)\n"
    shown = run_cli("topo", "validate", str(path), "--show-info").stdout.splitlines()
    assert len(shown) == 5 and all(" elements" in ln for ln in shown[0:4:2])  # two findings, two fix lines


def test_a_wrong_value_is_reported_and_only_it_stays_an_override(generated, tmp_path):
    text = generated["dgx-h100"].read_text()
    first_gpu = re.search(r'<gpu dev="(\d+)" sm="90"', text)
    assert first_gpu
    bad = tmp_path / "t.xml"
    bad.write_text(text.replace(first_gpu.group(0), '<gpu dev="7" sm="90"', 1))
    doc = json.loads(run_cli("topo", "validate", str(bad), "--root", str(HOSTS / "dgx-h100"), "-f", "json").stdout)
    rules = sorted(f["rule"] for f in doc["findings"])
    assert "NTH007" in rules and rules.count("NTS025") == 1, rules
    nts = next(f for f in doc["findings"] if f["rule"] == "NTS025")
    assert " sets dev: " in nts["message"]  # sm is what the host has: confirmed; dev is not


def test_a_file_for_another_host_keeps_its_findings(generated):
    doc = json.loads(run_cli("topo", "validate", str(generated["dgx-h100"]), "--root", str(HOSTS / "dgx-a100"),
                             "-f", "json").stdout)
    rules = {f["rule"] for f in doc["findings"]}
    assert "NTH001" in rules and "NTS025" in rules
