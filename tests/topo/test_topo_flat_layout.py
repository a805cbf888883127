"""Checks of meaning computed from NCCL's model (ncclctl/topo/meaning.py): NTS070 (a layout that turns GPUDirect
RDMA off for every GPU) and NTH030 (the file takes away GPUDirect RDMA the host has). Files are authored here; the
facts come from published VM files (see docs/topo-corpus.md)."""

from __future__ import annotations

import json

import pytest

from conftest import HOSTS, run_cli

from ncclctl.topo.meaning import complete, on_root_bus
from ncclctl.nccl.xml import parse_nccl_xml
from ncclctl.topo.validate import validate_topology

CPU = '<cpu numaid="{n}" affinity="{a}" arch="x86_64" vendor="AuthenticAMD" familyid="25" modelid="17">'
LINK = 'link_speed="32.0 GT/s PCIe" link_width="16"'


def pci(busid: str, cls: str, body: str = "") -> str:
    if body:
        return f'<pci busid="{busid}" class="{cls}" {LINK}>{body}</pci>'
    return f'<pci busid="{busid}" class="{cls}" {LINK}/>'


def system(*cpus: str) -> bytes:
    return ('<system version="1">\n' + "\n".join(cpus) + "\n</system>\n").encode()


def cpu(n: int, *children: str, affinity: str = "00ffffff") -> str:
    return CPU.format(n=n, a=affinity) + "\n" + "\n".join(children) + "\n</cpu>"


def nts070(data: bytes) -> list:
    return [f for f in validate_topology(data, path="t.xml") if f.rule == "NTS070"]


FLAT = system(cpu(0, pci("0001:00:00.0", "0x030200"), pci("0101:00:00.0", "0x020700"),
                  pci("0002:00:00.0", "0x030200"), pci("0102:00:00.0", "0x020700")))


def test_flat_vm_file_says_what_nccl_decides():
    [f] = nts070(FLAT)
    assert f.severity.value == "warning" and f.line == 3
    assert "hangs directly off a <cpu>" in f.message and "0001:00:00.0" in f.message
    assert "GPU0 -> NIC@0101:00:00.0 PHB" in f.message and "GPU1 -> NIC@0102:00:00.0 PHB" in f.message
    assert "farther than NCCL_NET_GDR_LEVEL" in f.message and "host memory" in f.message
    assert "assumed" in f.message and "2 GPUs and 2 NICs" in f.message


def test_same_devices_paired_under_virtual_switches_pass():
    paired = system(cpu(0, pci("ffff:ff:01.0", "0x060400", pci("0001:00:00.0", "0x030200") + pci("0101:00:00.0", "0x020700")),
                        pci("ffff:ff:02.0", "0x060400", pci("0002:00:00.0", "0x030200") + pci("0102:00:00.0", "0x020700"))))
    assert nts070(paired) == []


def test_degraded_gpus_and_nics_under_different_switches():
    split = system(cpu(0, pci("ffff:ff:01.0", "0x060400", pci("0001:00:00.0", "0x030200") + pci("0002:00:00.0", "0x030200")),
                       pci("ffff:ff:02.0", "0x060400", pci("0101:00:00.0", "0x020700") + pci("0102:00:00.0", "0x020700"))))
    [f] = nts070(split)
    assert "no GPU shares a PCI switch with a NIC" in f.message


def test_nic_on_another_socket_is_sys():
    data = system(cpu(0, pci("0001:00:00.0", "0x030200")), cpu(1, pci("0101:00:00.0", "0x020700"), affinity="ff000000"))
    [f] = nts070(data)
    assert "GPU0 -> NIC@0101:00:00.0 SYS" in f.message


def test_one_paired_gpu_is_enough_to_stay_quiet():
    data = system(cpu(0, pci("ffff:ff:01.0", "0x060400", pci("0001:00:00.0", "0x030200") + pci("0101:00:00.0", "0x020700")),
                      pci("0002:00:00.0", "0x030200")))
    # GPU1 has no NIC near it, but NCCL does use GPUDirect RDMA on GPU0's NIC (via PXN or directly): not a flat layout
    assert nts070(data) == []


def test_bare_metal_bus_ids_are_not_a_vm_layout():
    # devices behind root ports (device 00 on a bus above 00): NCCL detects the same layout itself
    data = system(cpu(0, pci("0000:1b:00.0", "0x030200"), pci("0000:18:00.0", "0x020700")))
    assert nts070(data) == []


@pytest.mark.parametrize("net", ['<net name="eth0" gdr="0"/>', '<net name="mlx5_0" gdr="0" speed="100000"/>'])
def test_nics_without_gpudirect_support_are_not_counted(net):
    data = system(cpu(0, pci("0001:00:00.0", "0x030200", '<gpu dev="0" sm="90"/>'),
                      pci("0101:00:00.0", "0x020000", f"<nic>{net}</nic>")))
    assert nts070(data) == []


def test_gpu_without_gpudirect_support_is_not_the_layout():
    data = system(cpu(0, pci("0001:00:00.0", "0x030200", '<gpu dev="0" sm="90" gdr="0"/>'),
                      pci("0101:00:00.0", "0x020700")))
    assert nts070(data) == []


@pytest.mark.parametrize("data", [
    system(cpu(0, pci("0001:00:00.0", "0x030200"))),  # no NIC
    system(cpu(0, pci("0101:00:00.0", "0x020700"))),  # no GPU
    system('<cpu numaid="0"><pci busid="0001:00:00.0"/><pci busid="0101:00:00.0"/></cpu>'),  # classes left to NCCL
    system('<cpu numaid="0"><pci busid="0001:00:00.0" class="0x030200"/><pci busid="0101:00:00.0" class="0x020700"/></cpu>'),
    system(cpu(0, pci("0001:00:00.0", "0x030200", '<gpu dev="0" sm="90"><nvlink target="0001:00:00.0" count="12" tclass="0x030200"/></gpu>'),
               pci("0101:00:00.0", "0x020700"))),
], ids=["no-nic", "no-gpu", "no-class", "cpu-left-to-nccl", "self-nvlink"])
def test_odd_files_never_crash(data):
    findings = validate_topology(data, path="t.xml")
    assert all(f.message for f in findings)


def test_skeleton_cpu_left_to_nccl_is_completed_and_still_judged():
    data = system('<cpu numaid="0"><pci busid="0001:00:00.0" class="0x030200"/><pci busid="0101:00:00.0" class="0x020700"/></cpu>')
    [f] = nts070(data)
    assert "x86_64 Intel CPUs" in f.message and "Gen3 x16 links" in f.message


@pytest.mark.parametrize("busid,root", [("0001:00:00.0", True), ("0000:00:0a.0", True), ("0000:10:1c.0", True),
                                        ("0000:1b:00.0", False), ("0000:29:00.1", False), ("ffff:ff:01.0", True),
                                        ("garbage", False), ("", False)])
def test_on_root_bus(busid, root):
    assert on_root_bus(busid) is root


def test_completion_keeps_what_the_file_gives():
    res = parse_nccl_xml(system(cpu(0, pci("0001:00:00.0", "0x030200", '<gpu dev="3" sm="90"/>'),
                                    pci("0002:00:00.0", "0x030200"))), kind="topology")
    tree, comp = complete(res.root)
    gpus = []
    stack = [tree]
    while stack:
        n = stack.pop()
        stack.extend(n.children)
        if n.name == "gpu":
            gpus.append(dict(n.attrs))
    assert sorted((g["dev"], g["sm"]) for g in gpus) == [("0", "80"), ("3", "90")]
    assert sorted(comp.endpoints) == ["0001:00:00.0", "0002:00:00.0"]


# --------------------------------------------------------------------------------------------------
# NTH030, with a host


def validate_json(path, host: str) -> list[dict]:
    r = run_cli("topo", "validate", str(path), "--root", str(HOSTS / host), "--format", "json", "--no-xsd")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)["findings"]


def test_generated_file_loses_nothing(tmp_path):
    out = tmp_path / "gen.xml"
    assert run_cli("topo", "generate", "--root", str(HOSTS / "dgx-h100"), "-o", str(out)).returncode == 0
    assert [f for f in validate_json(out, "dgx-h100") if f["rule"] in ("NTH030", "NTS070")] == []


def test_one_gpu_moved_off_its_switch_is_named(tmp_path):
    out = tmp_path / "gen.xml"
    assert run_cli("topo", "generate", "--root", str(HOSTS / "dgx-h100"), "--minimal", "-o", str(out)).returncode == 0
    lines = out.read_text().splitlines(keepends=True)
    # GPU0 (0000:1b:00.0) leaves its switch 0000:16:00.0 and hangs off the CPU instead
    i = next(k for k, ln in enumerate(lines) if 'busid="0000:1b:00.0"' in ln)
    gpu0 = lines.pop(i).strip()
    j = next(k for k, ln in enumerate(lines) if "<cpu " in ln)
    lines.insert(j + 1, "    " + gpu0 + "\n")
    out.write_text("".join(lines))
    found = validate_json(out, "dgx-h100")
    lost = [f for f in found if f["rule"] == "NTH030"]
    assert len(lost) == 1 and lost[0]["line"] == j + 2
    assert "GPU 0 (0000:1b:00.0)" in lost[0]["message"] and "mlx5_0 over PIX" in lost[0]["message"]
    assert "GPUDirect RDMA off" in lost[0]["message"]
    # the NTH006 pairing finding for the same GPU is not repeated
    assert not [f for f in found if f["rule"] == "NTH006" and f["line"] == lost[0]["line"]]


def test_vm_host_is_left_to_nts070(tmp_path):
    out = tmp_path / "flat.xml"
    out.write_bytes(system(*[cpu(n, *[pci(f"000{g}:00:00.0", "0x030200") for g in range(1 + 4 * n, 5 + 4 * n)],
                                 *[pci(f"010{g}:00:00.0", "0x020700") for g in range(1 + 4 * n, 5 + 4 * n)],
                                 affinity=a)
                           for n, a in ((0, "00000000,0000ffff,ffffffff"), (1, "ffffffff,ffff0000,00000000"))]))
    found = validate_json(out, "cloud-vm-flat")
    assert {f["rule"] for f in found} >= {"NTS070"} and "NTH030" not in {f["rule"] for f in found}
