"""Broken fixtures: each gives a clear message naming the path (and line), exit 3, and no traceback."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import HOSTS, host_names, run_cli

BASE = "dgx-h100"
pytestmark = pytest.mark.skipif(BASE not in host_names(), reason="dgx-h100 fixture missing")


@pytest.fixture
def tree(tmp_path) -> Path:
    dest = tmp_path / "host"
    shutil.copytree(HOSTS / BASE, dest, symlinks=True)
    return dest


def gpu0_dir(tree: Path) -> Path:
    nvml = json.loads((tree / "nvml.json").read_text())
    bus = nvml["devices"][0]["pci"]["busId"]
    bdf = bus[4:].lower() if len(bus.split(":")[0]) == 8 else bus.lower()
    link = tree / "sys/bus/pci/devices" / bdf
    return Path(os.path.realpath(link))


def probe_fails(tree: Path, *needles: str, code: int = 3) -> str:
    result = run_cli("probe", "--root", str(tree))
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("ncclctl: error: ")
    for needle in needles:
        assert needle in result.stderr, result.stderr
    return result.stderr


def test_missing_required_file(tree):
    target = gpu0_dir(tree) / "class"
    target.unlink()
    probe_fails(tree, f"{target.parent.name}/class", "missing or empty PCI class", "re-capture")


def test_truncated_file(tree):
    target = gpu0_dir(tree) / "vendor"
    target.write_text("")
    probe_fails(tree, f"{target.parent.name}/vendor", "missing or empty")


def test_garbage_sysfs_value(tree):
    target = gpu0_dir(tree) / "max_link_speed"
    target.write_text("very fast\n")
    probe_fails(tree, f"{target.parent.name}/max_link_speed", "unexpected link speed", "'very fast'")


def test_garbage_numa_node(tree):
    target = gpu0_dir(tree) / "numa_node"
    target.write_text("zero\n")
    probe_fails(tree, f"{target.parent.name}/numa_node", "unexpected NUMA node")


def test_garbage_port_state(tree):
    ports = sorted((tree / "sys/class/infiniband").iterdir())[0] / "ports/1/state"
    real = Path(os.path.realpath(ports))
    real.write_text("ACTIVE\n")
    probe_fails(tree, "port state", "'ACTIVE'")


def test_malformed_command_output(tree):
    target = tree / "cmd" / "ibv_devinfo_-v.txt"
    assert target.exists()
    lines = target.read_text().splitlines(keepends=True)
    # A port block before any hca_id header: the parser must name the file and the line.
    target.write_text("\t\tport:\t1\n" + "".join(lines))
    err = probe_fails(tree, str(target))
    assert f"{target}:1" in err


def test_dangling_symlink(tree):
    real = gpu0_dir(tree)
    shutil.rmtree(real)
    probe_fails(tree, "dangling symlink")


def test_absolute_symlinks_stay_inside_the_root(tree):
    """/var/run -> /run style links resolve from the fixture root (chroot semantics), never the host's /."""
    (tree / "var").mkdir(exist_ok=True)
    (tree / "run/nvidia-topologyd").mkdir(parents=True)
    (tree / "run/nvidia-topologyd/virtualTopology.xml").write_text('<system version="1"/>\n')
    if (tree / "var/run").exists():
        shutil.rmtree(tree / "var/run")
    (tree / "var/run").symlink_to("/run")
    # A link climbing far above the root stops at the root.
    (tree / "etc").mkdir(exist_ok=True)
    (tree / "etc/nccl.conf").unlink(missing_ok=True)
    (tree / "etc/nccl.conf").symlink_to("../../../../../../../../etc/hostname")
    from ncclctl.probe import probe

    node = probe(str(tree))
    assert node.facts.virtual_topology is not None
    assert node.facts.virtual_topology.text == '<system version="1"/>\n'
    assert all(c.path != "/etc/nccl.conf" for c in node.facts.conf_files), "resolved outside the fixture"


def test_invalid_nvml_json(tree):
    (tree / "nvml.json").write_text("{ not json")
    probe_fails(tree, "nvml.json", "not valid JSON")


def test_invalid_env_json(tree):
    (tree / "env.json").write_text('["NCCL_IB_HCA"]')
    probe_fails(tree, "env.json", "object of strings")


def test_missing_root():
    result = run_cli("probe", "--root", "/nonexistent/ncclctl-host")
    assert result.returncode == 3
    assert "/nonexistent/ncclctl-host" in result.stderr
    assert "Traceback" not in result.stderr


def test_json_errors_are_json(tree):
    (tree / "nvml.json").write_text("{ not json")
    result = run_cli("probe", "--root", str(tree), "--format", "json")
    assert result.returncode == 3
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and doc["error"]["exit_code"] == 3
    assert doc["error"]["path"].endswith("nvml.json")


def test_cpuinfo_damage(tree):
    (tree / "proc/cpuinfo").write_text("processor\n")
    probe_fails(tree, "cpuinfo", "line without ':'")


def test_usage_error_exit_2():
    result = run_cli("probe", "--format", "yaml")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
