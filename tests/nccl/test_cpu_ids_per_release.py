"""``topo generate --nccl-version``: the <cpu> familyid/modelid each release's detection writes (graph/xml.cc:
2.30.7 family + (extended family << 4); 2.31 the CPUID family, the extended family only for family 15, the extended
model only for families 6 and 15)."""

from __future__ import annotations

from conftest import HOSTS, run_cli

from ncclctl.model import Cpu
from ncclctl.nccl.detect import cpu_ids
from ncclctl.nccl.version import Version


def _cpu(family: int, model: int) -> Cpu:
    return Cpu(arch="x86_64", vendor="AuthenticAMD", family=family, model=model, model_name="", sockets=2,
               logical_cpus=8)


def test_cpu_ids_per_release():
    old, new = Version(2, 30, 7), Version(2, 31, 2)
    assert cpu_ids(_cpu(25, 17), old) == (175, 17) and cpu_ids(_cpu(25, 17), new) == (25, 17)  # Zen 4
    assert cpu_ids(_cpu(26, 2), old) == (191, 2) and cpu_ids(_cpu(26, 2), new) == (26, 2)  # Zen 5
    assert cpu_ids(_cpu(6, 143), old) == cpu_ids(_cpu(6, 143), new) == (6, 143)  # Intel: unchanged
    assert cpu_ids(_cpu(7, 0x5B), old) == (7, 0x5B) and cpu_ids(_cpu(7, 0x5B), new) == (7, 0xB)  # Zhaoxin


def test_topo_generate_writes_each_release_familyid():
    out = {v: run_cli("topo", "generate", "--root", str(HOSTS / "cloud-vm-flat"), "--nccl-version", v)
           for v in ("2.30.7", "2.31.2")}
    assert all(r.returncode == 0 for r in out.values())
    assert 'vendor="AuthenticAMD" familyid="175" modelid="17"' in out["2.30.7"].stdout
    assert 'vendor="AuthenticAMD" familyid="25" modelid="17"' in out["2.31.2"].stdout
