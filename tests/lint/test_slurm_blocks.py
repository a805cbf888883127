"""Slurm block topology for NVLink domains: ``fleet blocks`` writes one block per (cluster UUID, clique id) domain
and ``--check`` holds a topology.conf against the domains (checked against Slurm's documented grammar: no Slurm
is installable here)."""

from __future__ import annotations

import pytest

from conftest import run_cli
from ncclctl.errors import InputError
from ncclctl.fabric.slurm import block_conf, check_blocks, expand, parse_topology_conf

from .test_fleet_nvlink import RACK_A, RACK_B, inventory_of, tray

DOMAINS = {(RACK_A, 1): [f"r1t{t:02d}" for t in range(1, 19)], (RACK_B, 32766): [f"r2t{t:02d}" for t in range(1, 19)]}


def test_expand():
    assert expand("r1t[01-03],login[1,3]") == ["r1t01", "r1t02", "r1t03", "login1", "login3"]
    assert expand("r[1-2]t[1-2]") == ["r1t1", "r1t2", "r2t1", "r2t2"]
    with pytest.raises(InputError):
        expand("r1t[05-01]")
    with pytest.raises(InputError):
        expand("r1t[1-99999999]")


def test_written_file_reads_back_and_agrees():
    text = block_conf(DOMAINS)
    assert "BlockName=nvl01 Nodes=r1t[01-18]" in text and "BlockName=nvl02 Nodes=r2t[01-18]" in text
    assert text.rstrip().endswith("BlockSizes=18")
    topo = parse_topology_conf(text)
    assert [len(b.nodes) for b in topo.blocks] == [18, 18] and topo.block_sizes == (18,)
    assert check_blocks(topo, DOMAINS) == []


def test_block_mixing_two_racks():
    text = "BlockName=b1 Nodes=r1t[01-09],r2t[01-09]\nBlockName=b2 Nodes=r1t[10-18],r2t[10-18]\nBlockSizes=18\n"
    got = [(p.subject, p.severity) for p in check_blocks(parse_topology_conf(text), DOMAINS)]
    assert ("b1", "error") in got and ("b2", "error") in got
    assert ("b1, b2", "warning") in got  # each domain split across both blocks
    assert ("BlockSizes", "error") not in got


def test_missing_hosts_and_bad_sizes():
    text = "BlockName=b1 Nodes=r1t[01-16]\nBlockName=b2 Nodes=r2t[01-18]\nBlockSizes=18,27\n"
    found = check_blocks(parse_topology_conf(text), DOMAINS)
    assert {(p.subject, p.severity) for p in found} == {("r1t[17-18]", "error"), ("BlockSizes", "error")}
    msgs = " ".join(p.message for p in found)
    assert "BlockSizes 27 are not the base block size 18 times a power of two" in msgs
    assert "fewer hosts than the base block size 18 (b1: 16)" in msgs


@pytest.mark.parametrize("sizes,ok", [("18", True), ("18,36,72", True), ("18,18", True), ("18,54", False),
                                      ("18,9", False), ("18,0", False)])
def test_block_sizes_as_slurm_reads_them(sizes, ok):
    text = f"BlockName=b1 Nodes=r1t[01-18]\nBlockName=b2 Nodes=r2t[01-18]\nBlockSizes={sizes}\n"
    assert (check_blocks(parse_topology_conf(text), DOMAINS) == []) == ok


def test_without_block_sizes_the_first_block_is_the_base():
    text = "BlockName=b1 Nodes=r1t[01-18],r2t01\nBlockName=b2 Nodes=r2t[02-18]\n"
    found = check_blocks(parse_topology_conf(text), DOMAINS)
    assert ("b2", "error") in {(p.subject, p.severity) for p in found}  # 17 < 19, the first block's count


@pytest.mark.parametrize("text,needle", [
    ("SwitchName=s1 Nodes=a[1-2]\n", "topology/tree"), ("BlockName=b1\n", "expected BlockName"),
    ("BlockName=b1 Nodes=a1\nBlockName=b1 Nodes=a2\n", "defined twice"), ("# nothing\n", "no BlockName"),
    ("BlockName=b1 Nodes=a1\nBlockSizes=x\n", "not a list of numbers")])
def test_bad_files(text, needle):
    with pytest.raises(InputError, match=needle):
        parse_topology_conf(text)


def test_cli_write_and_check(tmp_path):
    nodes = [tray(1, t, RACK_A, 1) for t in (1, 2)] + [tray(2, t, RACK_B, 32766) for t in (1, 2)]
    inv = inventory_of(tmp_path, nodes)
    r = run_cli("fleet", "blocks", "--inventory", inv)
    assert r.returncode == 0, r.stderr
    assert "BlockName=nvl01 Nodes=r1t[01-02]" in r.stdout and "BlockSizes=2" in r.stdout
    good = tmp_path / "good.conf"
    good.write_text(r.stdout)
    ok = run_cli("fleet", "blocks", "--inventory", inv, "--check", str(good))
    assert ok.returncode == 0 and "agree" in ok.stdout, ok.stdout + ok.stderr
    bad = tmp_path / "bad.conf"
    bad.write_text("BlockName=b1 Nodes=r1t01,r2t01\nBlockName=b2 Nodes=r1t02,r2t02\n")
    r = run_cli("fleet", "blocks", "--inventory", inv, "--check", str(bad))
    assert r.returncode == 1 and f"{bad}:1: b1: error: block b1 spans 2 NVLink domains" in r.stdout, r.stdout
    junk = tmp_path / "junk.conf"
    junk.write_text("SwitchName=s1 Nodes=x\n")
    r = run_cli("fleet", "blocks", "--inventory", inv, "--check", str(junk))
    assert r.returncode == 3 and "topology/tree" in r.stderr and "Traceback" not in r.stderr


def test_cli_no_domain_is_a_clear_error(tmp_path):
    from ncclctl.probe import probe
    from conftest import HOSTS

    n = probe(str(HOSTS / "dgx-h100"))
    inv = inventory_of(tmp_path, [n])
    r = run_cli("fleet", "blocks", "--inventory", inv)
    assert r.returncode not in (0, 1) and "no host reports a multi-node NVLink domain" in r.stderr


def test_cli_imex_node_lists(tmp_path):
    nodes = [tray(1, t, RACK_A, 1) for t in (1, 2)] + [tray(2, t, RACK_B, 32766) for t in (1, 2)]
    inv = inventory_of(tmp_path, nodes)
    out = tmp_path / "imex"
    out.mkdir()
    r = run_cli("fleet", "blocks", "--inventory", inv, "--imex-dir", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "nvl01.nodes_config.cfg").read_text().splitlines() == ["10.20.1.11", "10.20.1.12"]
    assert (out / "nvl02.nodes_config.cfg").read_text().splitlines() == ["10.20.2.11", "10.20.2.12"]
