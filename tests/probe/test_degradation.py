"""Degraded probes: no NVML, per-call NVML errors, no RDMA sysfs, refusal to mix live sources into a root."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import HOSTS, host_names, run_cli
from ncclctl.errors import UsageError
from ncclctl.probe import probe
from ncclctl.probe.commands import LiveRunner
from ncclctl.probe.nvml import LiveNvml

pytestmark = pytest.mark.skipif("dgx-h100" not in host_names(), reason="dgx-h100 fixture missing")


@pytest.fixture
def tree(tmp_path):
    dest = tmp_path / "host"
    shutil.copytree(HOSTS / "dgx-h100", dest, symlinks=True)
    return dest


def test_without_nvml_gpus_come_from_pci_class(tree):
    (tree / "nvml.json").unlink()
    node = probe(str(tree))
    full = probe(str(HOSTS / "dgx-h100"))
    assert [g.bdf for g in node.gpus] == sorted(g.bdf for g in full.gpus)
    assert all(g.source == "pci" and g.sm is None and not g.nvlinks for g in node.gpus)
    # NICs still come from sysfs, so GPU/NIC locality survives.
    assert [n.name for n in node.nics] == [n.name for n in full.nics]
    assert any(u.source == "nvml" for u in node.unavailable)
    text = run_cli("probe", "--root", str(tree))
    assert text.returncode == 0 and "not seen:" in text.stdout and "nvml: the snapshot has no NVML answers (nvml.json)" in text.stdout


def test_nvml_init_failure_is_reported(tree):
    doc = json.loads((tree / "nvml.json").read_text())
    (tree / "nvml.json").write_text(json.dumps({"init": "DriverNotLoaded", "devices": []}))
    node = probe(str(tree))
    assert len(node.gpus) == len(doc["devices"])
    assert ("nvml", "DriverNotLoaded") in {(u.source, u.reason) for u in node.unavailable}


def test_per_call_nvml_errors_degrade_per_field(tree):
    doc = json.loads((tree / "nvml.json").read_text())
    doc["devices"][0]["persistence_mode"] = {"error": "NoPermission"}
    doc["devices"][0]["cuda_compute_capability"] = {"error": "NotSupported"}
    doc["devices"][1] = {"index": 1, "error": "GpuIsLost"}
    doc["devices"][2]["nvlinks"][0]["state"] = {"error": "Unknown"}
    (tree / "nvml.json").write_text(json.dumps(doc))
    node = probe(str(tree))
    g0 = node.gpu(0)
    assert g0.persistence_mode is None and g0.sm is None and g0.name
    assert node.gpu(1) is None
    assert ("nvml", "GpuIsLost", "GPU 1") in {(u.source, u.reason, u.detail) for u in node.unavailable}
    assert len(node.gpu(2).nvlinks) == 17


def test_container_without_rdma_sysfs_uses_ibstat(tree):
    shutil.rmtree(tree / "sys/class/infiniband")
    (tree / "cmd/ibstat.txt").write_text(
        "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n"
        "\tHardware version: 0\n\tNode GUID: 0xa088c20300e3142a\n\tSystem image GUID: 0xa088c20300e3142a\n"
        "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400\n\t\tBase lid: 5\n\t\tLMC: 0\n"
        "\t\tSM lid: 1\n\t\tCapability mask: 0xa651e848\n\t\tPort GUID: 0xa088c20300e3142a\n\t\tLink layer: InfiniBand\n")
    node = probe(str(tree))
    assert [n.name for n in node.nics] == ["mlx5_0"]
    port = node.nics[0].ports[0]
    assert port.state == "ACTIVE" and port.lid == 5 and port.rate_gbps == 400
    assert any("ibstat" in u.reason for u in node.unavailable)


def test_ibstat_that_panics_after_some_cas_keeps_them(tree):
    """A capture ending in ibpanic (ibstat exits 255 at the first CA it cannot stat): the CAs before are NICs, and
    the gap is said under 'not seen'."""
    shutil.rmtree(tree / "sys/class/infiniband")
    (tree / "cmd/ibstat.txt").write_text(
        "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n"
        "\tHardware version: 0\n\tNode GUID: 0xa088c20300e3142a\n\tSystem image GUID: 0xa088c20300e3142a\n"
        "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400\n\t\tBase lid: 5\n\t\tLMC: 0\n"
        "\t\tSM lid: 1\n\t\tCapability mask: 0xa651e848\n\t\tPort GUID: 0xa088c20300e3142a\n\t\tLink layer: InfiniBand\n"
        "ibpanic: [77] main: stat of IB device 'mlx5_1' failed: No such device\n")
    node = probe(str(tree))
    assert [n.name for n in node.nics] == ["mlx5_0"]
    gaps = [u for u in node.unavailable if u.source == "ibstat"]
    assert len(gaps) == 1 and "aborted after 1 CA" in gaps[0].reason and "mlx5_1" in (gaps[0].detail or "")
    text = run_cli("probe", "--root", str(tree))
    assert text.returncode == 0 and "ibstat: aborted after 1 CA" in text.stdout, text.stdout + text.stderr


def test_live_sources_are_refused_under_a_root():
    with pytest.raises(UsageError):
        probe(str(HOSTS / "dgx-h100"), runner=LiveRunner())
    with pytest.raises(UsageError):
        probe(str(HOSTS / "dgx-h100"), nvml=LiveNvml())


def test_failed_command_is_reported_not_fatal(tree):
    (tree / "cmd/ibv_devinfo_-v.txt").unlink()
    (tree / "cmd/ibv_devinfo_-v.err").write_text("rc=1: Failed to get IB devices list\n")
    node = probe(str(tree))
    assert all(p.active_mtu is None for n in node.nics for p in n.ports)
    assert ("ibv_devinfo -v", "rc=1: Failed to get IB devices list") in {(u.source, u.reason) for u in node.unavailable}


def test_ibstat_without_link_layer_line_gives_a_readable_model(tree, tmp_path):
    # Old ibstat releases print no "Link layer" line. The port was None in the model, which --model then refused
    # ("$.nics[0].ports[0].link_layer: expected a string"); a missing sysfs link_layer file already meant InfiniBand.
    shutil.rmtree(tree / "sys/class/infiniband")
    (tree / "cmd/ibstat.txt").write_text(
        "CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n"
        "\tHardware version: 0\n\tNode GUID: 0xa088c20300e3142a\n\tSystem image GUID: 0xa088c20300e3142a\n"
        "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400\n\t\tBase lid: 5\n\t\tLMC: 0\n"
        "\t\tSM lid: 1\n\t\tCapability mask: 0xa651e848\n\t\tPort GUID: 0xa088c20300e3142a\n")
    node = probe(str(tree))
    assert node.nics[0].ports[0].link_layer == "InfiniBand"
    dumped = run_cli("probe", "--root", str(tree), "--format", "json")
    assert dumped.returncode == 0, dumped.stderr
    model = tmp_path / "node.json"
    model.write_text(dumped.stdout)
    linted = run_cli("lint", "--model", str(model))
    assert linted.returncode in (0, 1), linted.stderr
    assert "link_layer" not in linted.stderr


def test_a_live_ibstat_that_panics_keeps_its_cas(tree):
    """Live, ibstat prints the good CAs on stdout, 'ibpanic' on stderr and exits 255: the runner keeps what it
    printed (CommandResult.partial) and the probe reads the CAs from it, as from a recording."""
    import sys

    from ncclctl.probe.commands import CommandResult, LiveRunner

    shutil.rmtree(tree / "sys/class/infiniband")
    ca = ("CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n"
          "\tHardware version: 0\n\tNode GUID: 0xa088c20300e3142a\n\tSystem image GUID: 0xa088c20300e3142a\n"
          "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400\n\t\tBase lid: 5\n\t\tLMC: 0\n"
          "\t\tSM lid: 1\n\t\tCapability mask: 0xa651e848\n\t\tPort GUID: 0xa088c20300e3142a\n\t\tLink layer: InfiniBand\n")
    script = (f"import sys; sys.stdout.write({ca!r}); sys.stdout.flush(); "
              "sys.stderr.write(\"ibpanic: [9] main: stat of IB device 'mlx5_1' failed: No such device\\n\"); "
              "sys.exit(255)")
    live = LiveRunner(timeout=20).run((sys.executable, "-c", script))
    assert not live.ok and live.reason.startswith("rc=255: ibpanic") and live.partial.startswith("CA 'mlx5_0'")
    assert live.partial.rstrip().endswith("No such device")

    class Stub:
        def run(self, argv):
            if argv == ("ibstat",):
                return CommandResult(argv, None, live.reason, partial=live.partial)
            return CommandResult(tuple(argv), None, "not captured")

    node = probe(str(tree), runner=Stub())
    assert [n.name for n in node.nics] == ["mlx5_0"]
    gaps = [u for u in node.unavailable if u.source == "ibstat"]
    assert len(gaps) == 1 and "aborted after 1 CA" in gaps[0].reason
