"""The two-rack GB200 NVL72 fleet fixture (fixtures/fleet/gb200-two-racks, issue 30): a tray registered in the wrong
clique, a rack on the sentinel clique id 32766, a Slurm block file (topology.conf and topology.yaml) that mixes
the racks, Kubernetes clique labels; through ``fleet lint`` and ``fleet blocks`` and the API."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO, run_cli
from ncclctl.errors import InputError
from ncclctl.fabric.slurm import (block_conf, block_yaml, check_blocks, is_topology_yaml, parse_topology_conf,
                                  parse_topology_yaml)

FLEET = REPO / "fixtures" / "fleet" / "gb200-two-racks"
INV = str(FLEET / "inventory.yaml")
RACK_A = "6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31"
RACK_B = "0f7d2c91-5b3e-4a60-8c1d-e94b27a05f18"
R1 = [f"gb200-r01-t{t:02d}" for t in range(1, 19)]
R2 = [f"gb200-r02-t{t:02d}" for t in range(1, 19)]
# The domains NVML reports: rack 1 less tray 7, tray 7 alone (default partition), rack 2 (default partition).
DOMAINS = {(RACK_A, 1): [h for h in R1 if h != "gb200-r01-t07"], (RACK_A, 32766): ["gb200-r01-t07"],
           (RACK_B, 32766): R2}


def test_fixture_is_what_build_writes():
    r = subprocess.run([sys.executable, "fixtures/fleet/build.py", "--check"], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_fleet_lint_finds_the_repaired_tray():
    r = run_cli("fleet", "lint", "--inventory", INV, "--rule", "FLT012,FLT013", "--format", "json", "--show-info")
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    found = sorted((h["host"], f["rule"], f["severity"]) for h in doc["hosts"] for f in h["findings"])
    assert ("gb200-r01-t07", "FLT013", "error") in found
    assert [x for x in found if x[2] == "error"] == [("gb200-r01-t07", "FLT013", "error")]
    # IMEX lists cross the two rack-1 domains: tray 7's names 17 hosts of rack 1's, the others name tray 7.
    # ... and rack 2's tray 12 has one GPU on another VBIOS than its rack (firmware split inside the domain).
    assert {h for h, rule, sev in found if rule == "FLT012" and sev == "warning"} == set(R1) | {"gb200-r02-t12"}
    # Clique 32766 is reported by two cluster UUIDs (tray 7 and rack 2): two domains, said once as info.
    assert [x for x in found if x[2] == "info"] == [("gb200-r02-t01", "FLT012", "info")]
    msgs = json.dumps(doc)
    assert "clique id 32766 is reported by 2 NVLink domains" in msgs
    assert f"nvidia.com/gpu.clique={RACK_A}.32766 --overwrite" in msgs  # the fix names the NVML value
    assert "a tray left its rack's partition (typically after a repair)" in msgs  # FLT012's fix for one fabric


def test_labels_agree_once_the_tray_is_relabelled(tmp_path):
    text = (FLEET / "inventory.yaml").read_text().replace("models/", str(FLEET / "models") + "/")
    fixed = text.replace(f'gb200-r01-t07.json, labels: {{nvidia.com/gpu.clique: "{RACK_A}.1"}}',
                         f'gb200-r01-t07.json, labels: {{nvidia.com/gpu.clique: "{RACK_A}.32766"}}')
    assert fixed != text
    (tmp_path / "inv.yaml").write_text(fixed)
    r = run_cli("fleet", "lint", "--inventory", str(tmp_path / "inv.yaml"), "--rule", "FLT013")
    assert r.returncode == 0 and "FLT013" not in r.stdout, r.stdout + r.stderr


def test_inventory_labels_are_checked(tmp_path):
    (tmp_path / "inv.yaml").write_text("version: 1\nhosts:\n  h1: {model: m.json, labels: [a, b]}\n")
    r = run_cli("fleet", "lint", "--inventory", str(tmp_path / "inv.yaml"))
    assert r.returncode == 3 and "'labels' must map label names to values" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("fmt,ext", [("slurm-block", "conf"), ("slurm-yaml", "yaml")])
def test_fleet_blocks_writes_the_nvml_domains_and_they_check_clean(fmt, ext, tmp_path, golden):
    r = run_cli("fleet", "blocks", "--inventory", INV, "--format", fmt)
    assert r.returncode == 0, r.stderr
    golden(f"fleet/gb200-two-racks-blocks.{ext}", r.stdout)
    assert "note: BlockSizes=1, the smallest NVLink domain's size" in r.stderr and "gb200-r01-t07" in r.stderr
    out = tmp_path / f"topology.{ext}"
    out.write_text(r.stdout)
    ok = run_cli("fleet", "blocks", "--inventory", INV, "--check", str(out))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "3 block(s) agree with 3 NVLink domain(s)" in ok.stdout


@pytest.mark.parametrize("name", ["topology.conf", "topology.yaml"])
def test_fleet_blocks_check_the_mixing_file(name):
    r = run_cli("fleet", "blocks", "--inventory", INV, "--check", str(FLEET / name))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "block b01 spans 3 NVLink domains" in r.stdout and "block b02 spans 2 NVLink domains" in r.stdout
    assert f"NVLink domain cluster {RACK_B} clique 32766 is split across blocks b01, b02" in r.stdout
    assert ("topology nvl72: " in r.stdout) == name.endswith(".yaml")


@pytest.mark.parametrize("name", ["topology-by-rack.conf", "topology-by-rack.yaml"])
def test_fleet_blocks_check_the_rack_file(name):
    r = run_cli("fleet", "blocks", "--inventory", INV, "--check", str(FLEET / name))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "block rack01 spans 2 NVLink domains" in r.stdout and "gb200-r01-t07" in r.stdout
    assert "rack02" not in r.stdout


def test_api_mixing_files_agree_in_both_forms():
    conf = parse_topology_conf((FLEET / "topology.conf").read_text())
    (yml,) = parse_topology_yaml((FLEET / "topology.yaml").read_text())
    assert yml.name == "nvl72" and yml.cluster_default
    assert [b.nodes for b in yml.topology.blocks] == [b.nodes for b in conf.blocks]
    strip = lambda ps: [(p.subject, p.severity, p.message) for p in ps]  # noqa: E731
    assert strip(check_blocks(conf, DOMAINS)) == strip(check_blocks(yml.topology, DOMAINS))


# --- topology.yaml as Slurm 25.05's data_parser reads it ---------------------------------------------------------

TWO = {(RACK_A, 1): R1, (RACK_B, 32766): R2}


def _yaml(blocks: str, sizes: str = "[18]", extra: str = "") -> str:
    return f"- topology: t1\n  cluster_default: true\n{extra}  block:\n    block_sizes: {sizes}\n    blocks:\n{blocks}"


def test_yaml_written_reads_back():
    text = block_yaml(TWO)
    (t,) = parse_topology_yaml(text)
    assert t.name == "nvlink" and [b.name for b in t.topology.blocks] == ["nvl01", "nvl02"]
    assert t.topology.block_sizes == (18,) and check_blocks(t.topology, TWO) == []
    assert is_topology_yaml(text) and not is_topology_yaml(block_conf(TWO))
    assert [b.nodes for b in t.topology.blocks] == [b.nodes for b in parse_topology_conf(block_conf(TWO)).blocks]


@pytest.mark.parametrize("blocks,sizes,want", [
    ('      - {block: b1, nodes: "gb200-r01-t[01-16]"}\n      - {block: b2, nodes: "gb200-r02-t[01-18]"}\n', "[18]",
     {("gb200-r01-t[17-18]", "error"), ("BlockSizes", "error")}),  # nodes missing; b1 below the base
    ('      - {block: b1, nodes: "gb200-r01-t[01-18]"}\n      - {block: b2, nodes: "gb200-r02-t[01-18]"}\n',
     "[18, 27]", {("BlockSizes", "error")}),  # 27 is not 18 x 2^k
    ('      - {block: b1, nodes: "gb200-r01-t[01-18],gb200-r02-t[01-18]"}\n', "[36]",
     {("b1", "error")}),  # one block spanning both racks
    ('      - {block: b1, nodes: "gb200-r01-t[01-18]"}\n      - {block: b2, nodes: "gb200-r02-t[01-18]"}\n',
     "[18, 36]", set()),
])
def test_yaml_blocks_held_against_domains(blocks, sizes, want):
    (t,) = parse_topology_yaml(_yaml(blocks, sizes))
    assert {(p.subject, p.severity) for p in check_blocks(t.topology, TWO)} == want


def test_yaml_split_domain():
    blocks = ('      - {block: b1, nodes: "gb200-r01-t[01-09]"}\n      - {block: b2, nodes: "gb200-r01-t[10-18]"}\n'
              '      - {block: b3, nodes: "gb200-r02-t[01-18]"}\n')
    (t,) = parse_topology_yaml(_yaml(blocks, "[9]"))
    got = {(p.subject, p.severity) for p in check_blocks(t.topology, TWO)}
    assert got == {("b1, b2", "warning")}


@pytest.mark.parametrize("text,msg", [
    ("topology: t1\n", "must be a list of topologies"),
    ("- cluster_default: true\n  topology: t1\n  flat: true\n", "'topology: NAME' must be the first attribute"),
    ("- topology: t1\n  flat: true\n  tree: {switches: []}\n", "defines 2 kinds (flat, tree)"),
    ("- topology: t1\n  cluster_default: true\n", "defines 0 kinds"),
    ("- topology: t1\n  flat: true\n  blocks: []\n", "unknown topology attribute 'blocks'"),
    ("- topology: t1\n  flat: true\n", "no block topology"),
    ("- topology: t1\n  flat: true\n- topology: t1\n  flat: true\n", "topology t1 is defined twice"),
    (_yaml('      - {block: b1, nodes: "a[1-2]"}\n', "[2, x]"), "block_sizes must be a list of numbers"),
    (_yaml('      - {block: b1, nodes: "a[1-2]"}\n      - {block: b1, nodes: "a[3-4]"}\n'), "block b1 defined twice"),
    (_yaml('      - {nodes: "a[1-2]"}\n'), "a block without a name"),
    (_yaml('      - {block: b1, nodes: [a1, a2]}\n'), "nodes is one hostlist string"),
    (_yaml('      - {block: b1, nodes: "a[2-1]"}\n'), "is reversed or too large"),
    (_yaml('      - {block: b1, node: "a[1-2]"}\n'), "unknown block attribute 'node'"),
    ("- topology: t1\n  cluster_default: maybe\n  flat: true\n", "cluster_default must be true or false"),
    ("- topology: t1\n  block: {block_sizes: [2]}\n", "'blocks' must be a non-empty list"),
])
def test_yaml_grammar_errors(text, msg):
    with pytest.raises(InputError) as exc:
        parse_topology_yaml(text, source="topology.yaml")
    assert msg in str(exc.value), str(exc.value)


def test_yaml_other_kinds_beside_a_block_topology():
    text = ("- topology: fabric\n  tree:\n    switches:\n      - {switch: s1, nodes: \"gb200-r01-t[01-18]\"}\n"
            + _yaml('      - {block: b1, nodes: "gb200-r01-t[01-18]"}\n      - {block: b2, nodes: "gb200-r02-t[01-18]"}\n')
            + "- topology: none\n  flat: true\n")
    (t,) = parse_topology_yaml(text)
    assert t.name == "t1" and check_blocks(t.topology, TWO) == []


def test_cli_bad_yaml_is_a_clear_error(tmp_path):
    bad = tmp_path / "topology.yaml"
    bad.write_text("- topology: t1\n  block:\n    blocks:\n      - {block: b1, nodes: \"x[1-\"}\n")
    r = run_cli("fleet", "blocks", "--inventory", INV, "--check", str(bad))
    assert r.returncode == 3 and "topology.yaml" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = run_cli("fleet", "blocks", "--inventory", INV, "--format", "json")
    assert r.returncode == 2 and "slurm-block" in r.stderr and "Traceback" not in r.stderr, r.stderr


# --- host order for a job: NVLink domains kept whole and in order -----------------------------------------------

def test_domain_order_api():
    from ncclctl.fabric.slurm import domain_order

    whole = domain_order(DOMAINS)
    assert [k for k, _ in whole] == [(RACK_A, 1), (RACK_A, 32766), (RACK_B, 32766)]
    assert [h for _, hs in whole for h in hs] == [h for h in R1 if h != "gb200-r01-t07"] + ["gb200-r01-t07"] + R2
    assert domain_order(DOMAINS, 1) == [((RACK_A, 32766), ["gb200-r01-t07"])]  # the smallest domain that fits
    assert domain_order(DOMAINS, 18) == [((RACK_B, 32766), R2)]  # rack 2 whole; rack 1 has 17 now
    assert [(k, len(v)) for k, v in domain_order(DOMAINS, 20)] == [((RACK_A, 1), 2), ((RACK_B, 32766), 18)]
    with pytest.raises(ValueError):
        domain_order(DOMAINS, 37)


def test_cli_hostfile():
    r = run_cli("fleet", "blocks", "--inventory", INV, "--format", "hostfile", "--nodes", "20", "--slots", "4")
    assert r.returncode == 0, r.stderr
    hosts = [ln.split()[0] for ln in r.stdout.splitlines() if not ln.startswith("#")]
    assert hosts == ["gb200-r01-t01", "gb200-r01-t02"] + R2
    assert "gb200-r02-t01 slots=4" in r.stdout and "20 hosts span 2 NVLink domains" in r.stderr
    one = run_cli("fleet", "blocks", "--inventory", INV, "--format", "hostfile", "--nodes", "16")
    assert one.returncode == 0 and "span" not in one.stderr
    assert [ln for ln in one.stdout.splitlines() if not ln.startswith("#")] == R1[:6] + R1[7:17]
    bad = run_cli("fleet", "blocks", "--inventory", INV, "--format", "hostfile", "--nodes", "99")
    assert bad.returncode == 2 and "99 hosts asked for, the NVLink domains hold 36" in bad.stderr
    bad = run_cli("fleet", "blocks", "--inventory", INV, "--nodes", "4")
    assert bad.returncode == 2 and "--nodes and --slots go with --format hostfile" in bad.stderr
