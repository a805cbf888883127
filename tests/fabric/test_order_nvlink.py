"""``fabric order --inventory`` with multi-node NVLink domains (GB200/GB300 NVL72): whole domains together in the
host order, leaf groups inside each; the two-rack fleet fixture's models on a synthetic IB fabric whose leaf groups
mix the racks. Through the CLI (text, hostfile, json, slurm-block) and the API."""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO, run_cli
from ncclctl.fabric.order import by_nvlink_domain
from ncclctl.fabric.synth import SynthSpec, synth

FLEET = REPO / "fixtures" / "fleet" / "gb200-two-racks"
RACK1 = [f"gb200-r01-t{t:02d}" for t in range(1, 19) if t != 7]
RACK2 = [f"gb200-r02-t{t:02d}" for t in range(1, 19)]


@pytest.fixture(scope="module")
def racks(tmp_path_factory):
    """36 trays on 4 rails, leaf groups of 8 hosts that mix the two racks (r01-t01, r02-t01, r01-t02, ...)."""
    d = tmp_path_factory.mktemp("nvl")
    text = synth(SynthSpec(nodes=36, rails=4, group=8, hostname_format="h{:03d}")).text
    names = sorted(set(re.findall(r"\bh\d{3}\b", text)))
    rename = {n: f"gb200-r{i % 2 + 1:02d}-t{i // 2 + 1:02d}" for i, n in enumerate(names)}
    (d / "fabric.txt").write_text(re.sub(r"\bh\d{3}\b", lambda m: rename[m.group(0)], text))
    inv = (FLEET / "inventory.yaml").read_text().replace("models/", str(FLEET / "models") + "/")
    (d / "inv.yaml").write_text(inv)
    return str(d / "fabric.txt"), str(d / "inv.yaml")


def _hosts(r):
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    return [line.split()[0] for line in r.stdout.splitlines()]


def test_domains_stay_whole(racks):
    fabric, inv = racks
    plain = _hosts(run_cli("fabric", "order", fabric, "-f", "hostfile"))
    assert plain[:2] == ["gb200-r01-t01", "gb200-r01-t02"] and "gb200-r02-t01" in plain[:8]  # racks mixed per leaf
    hosts = _hosts(run_cli("fabric", "order", fabric, "--inventory", inv, "-f", "hostfile"))
    # rack 1 (less tray 7), rack 2, then tray 7 (its own domain: the default partition after a repair)
    assert sorted(hosts[:17]) == sorted(RACK1) and sorted(hosts[17:35]) == sorted(RACK2)
    assert hosts[35] == "gb200-r01-t07"
    assert hosts[:4] == RACK1[:4]  # leaf-group order inside the domain


def test_text_json_and_blocks_name_the_domains(racks):
    fabric, inv = racks
    r = run_cli("fabric", "order", fabric, "--inventory", inv)
    assert r.returncode == 0, r.stderr
    assert "NVLink domains kept whole: 3 (nvl01: gb200-r01-t[01-06,08-18]; nvl03: gb200-r02-t[01-18]; " \
           "nvl02: gb200-r01-t07)" in r.stdout
    doc = json.loads(run_cli("fabric", "order", fabric, "--inventory", inv, "-f", "json").stdout)
    assert [(d["name"], len(d["hosts"])) for d in doc["nvlink_domains"]] == [("nvl01", 17), ("nvl03", 18),
                                                                              ("nvl02", 1)]
    assert doc["order"] == [h for d in doc["nvlink_domains"] for h in d["hosts"]]
    blocks = run_cli("fabric", "order", fabric, "--inventory", inv, "-f", "slurm-block").stdout
    assert "BlockName=nvl01 Nodes=gb200-r01-t[01-06,08-18]\nBlockName=nvl03 Nodes=gb200-r02-t[01-18]\n" in blocks
    assert json.loads(run_cli("fabric", "order", fabric, "-f", "json").stdout)["nvlink_domains"] == []


def test_by_nvlink_domain_api():
    order = ["a1", "b1", "x1", "a2", "b2", "x2"]
    segments = [("g0", ["a1", "b1", "x1"]), ("g1", ["a2", "b2", "x2"])]
    new, segs, doms = by_nvlink_domain(order, segments, {"a1": "A", "a2": "A", "b1": "B", "b2": "B"})
    assert new == ["a1", "a2", "b1", "b2", "x1", "x2"]  # hosts of no domain last, in their own order
    assert segs == [("A_g0", ["a1"]), ("A_g1", ["a2"]), ("B_g0", ["b1"]), ("B_g1", ["b2"]), ("g0", ["x1"]),
                    ("g1", ["x2"])]
    assert doms == [("A", ["a1", "a2"]), ("B", ["b1", "b2"])]
