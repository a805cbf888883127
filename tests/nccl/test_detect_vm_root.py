"""What NCCL's detection writes for a VM whose GPU sits straight under the root complex, as real NCCL did.

Expected values: real NCCL 2.28.9 (PyTorch 2.11's build) on a one-H200 Firecracker VM, 2026-11-28, its own
NCCL_TOPO_DUMP_FILE: the GPU at 0000:00:06.0 (no bridge above it) written with link_speed="32.0 GT/s PCIe" and
link_width="0" (its read of ../max_link_width finds no file: strtol("") = 0, min(16, 0) = 0), and the CPU of NUMA
node -1 without an affinity attribute (/sys/devices/system/node/node-1/cpumap does not exist). From 2.30 a GPU's
width comes from NVML (nvmlDeviceGetCurrPcieLinkWidth is absent from 2.29.7's library and present in 2.30.7's), so
2.30.7 writes 16. The fixture h200-vm-socket is the same kind of VM (its GPU at 0000:00:06.0 on pci0000:00).
"""

from __future__ import annotations

from lxml import etree

from conftest import HOSTS, run_cli


def _generate(version: str) -> etree._Element:
    res = run_cli("topo", "generate", "--root", str(HOSTS / "h200-vm-socket"), "--nccl-version", version)
    assert res.returncode == 0, res.stderr
    return etree.fromstring(res.stdout.encode())


def test_root_attached_gpu_as_nccl_2_28_9_wrote_it():
    root = _generate("2.28.9")
    pci = root.find(".//pci[@busid='0000:00:06.0']")
    assert pci.get("link_width") == "0" and pci.get("link_speed") == "32.0 GT/s PCIe"
    cpu = root.find("cpu")
    assert cpu.get("numaid") == "-1" and cpu.get("affinity") is None


def test_root_attached_gpu_at_2_30_takes_nvmls_width():
    pci = _generate("2.30.7").find(".//pci[@busid='0000:00:06.0']")
    assert pci.get("link_width") == "16"


def test_the_width_nccl_writes_is_read_back_as_16(tmp_path):
    # NCCL's topo.cc reads link_width 0 as 16: both files give the GPU's link the same 48 GB/s (x16 Gen5)
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    for path, version in ((a, "2.28.9"), (b, "2.30.7")):
        path.write_bytes(etree.tostring(_generate(version)))
    res = run_cli("topo", "diff", str(a), str(b))
    assert "link_width: '0' -> '16'" in res.stdout
    assert "NCCL computes 48 GB/s (x16 32.0 GT/s PCIe) -> 48 GB/s (x16 32.0 GT/s PCIe)" in res.stdout
