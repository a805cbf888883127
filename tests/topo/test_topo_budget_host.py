"""Issue 28, class 2 with a host: the per-rank element budget of a topology file counts what NCCL adds on that host.

NCCL 2.30.7 (commit 5067397c2676d5aed50042fc39e5c8ee96eb0027), topo.cc:ncclTopoGetSystem: the NCCL_TOPO_FILE is read
into NCCL_TOPO_XML_MAX_NODES (256) element slots, then each rank adds its GPU (xml.cc:ncclTopoFillGpu), a <net> (and
<nic>, and the <pci> path) for every port the net plugin reports that the file does not list by name
(ncclTopoPopulateNics -> ncclTopoFillNet) and the virtual NICs of NIC fusion (ncclTopoMakeVNics), in the same XML.

The files: dgx-a100's topology as ``topo generate`` writes it, without its <nic> elements (the file a user keeps
with the NIC <pci> but no ports), plus K bridge <pci> of no device (NCCL trims them). On dgx-a100 NCCL adds the
12 ports' 10 <nic> and 12 <net> (22) and fuses mlx5_4+mlx5_5 and mlx5_10+mlx5_11 (2 <net>): K=140 is 233 elements,
257 on the host; K=139 is 232, 256.

NCCL's own code on the same counts (CPU harness of NCCL 2.30.7's unmodified src/graph, one node, GDR on; its
plugin reports the file's <net> elements, so the host's ports are given in the file, which is what
ncclTopoFillNet makes of the user's file on dgx-a100): dgx-a100's full file + 139 bridges (254 elements) initialises
(NIC fusion adds its 2: 256); + 140 (255) fails in xmlAddNode, 'Error : too many XML nodes (max 256)', after the
file was read (in the fusion). So NCCL fails on dgx-a100 with the K=140 file and not with the K=139 one, though
both fit alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import HOSTS, run_cli

A100 = HOSTS / "dgx-a100"


@pytest.fixture(scope="module")
def a100_file() -> str:
    from ncclctl.nccl.detect import generate_for
    from ncclctl.probe import probe

    text = generate_for(probe(str(A100)))[0].decode()
    return re.sub(r"\s*<nic>.*?</nic>", "", text, flags=re.S)  # the NIC <pci> stay, their ports go


def _padded(text: str, k: int) -> str:
    """``text`` with ``k`` bridge <pci> of no device under its first <cpu>: one element each, trimmed by NCCL."""
    extra = "".join(f'\n    <pci busid="0000:e0:{i:02x}.0" class="0x060400" link_speed="16.0 GT/s PCIe" '
                    'link_width="16"/>' for i in range(k))
    j = text.index(">", text.index("<cpu ")) + 1
    return text[:j] + extra + text[j:]


def _budget(tmp_path: Path, text: str, *host: str) -> list[dict]:
    p = tmp_path / "topo.xml"
    p.write_text(text)
    res = run_cli("topo", "validate", str(p), *host, "--format", "json")
    assert res.returncode in (0, 1), res.stderr
    return [f for f in json.loads(res.stdout)["findings"] if f["rule"] in ("NTS051", "NTS052")]


def test_fits_alone_overflows_with_the_hosts_ports(tmp_path, a100_file):
    text = _padded(a100_file, 140)
    # Alone: 233 + the 20 <nic>/<net> the file implies = 253, a warning (the file cannot say what the host adds).
    (alone,) = _budget(tmp_path, text)
    assert alone["rule"] == "NTS051" and "the file uses 233" in alone["message"]
    # On dgx-a100: its 12 ports (22 elements) and 2 fused NICs: 257, over by one, as NCCL 2.30.7 fails.
    (on_host,) = _budget(tmp_path, text, "--root", str(A100))
    assert on_host["rule"] == "NTS052" and on_host["severity"] == "error"  # (the one budget finding: the host's)
    msg = on_host["message"]
    assert "the file uses 233; each rank on dgx-a100-07 adds 22 for the 12 NIC ports its net plugin reports" in msg
    assert "(mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5 and 6 more" in msg
    assert "2 for the virtual NICs NCCL fuses from the ports" in msg and "257 before it trims" in msg
    assert "1 over the limit on dgx-a100-07" in msg and "'too many XML nodes (max 256)'" in msg
    assert "Remove at least 1 elements" in on_host["fix"] and "NCCL_IB_HCA" in on_host["fix"]


def test_fits_with_the_hosts_ports_passes(tmp_path, a100_file):
    # K=139: 256 on dgx-a100, which NCCL 2.30.7 holds: no error, a warning that no slot is left.
    (f,) = _budget(tmp_path, _padded(a100_file, 139), "--root", str(A100))
    assert f["rule"] == "NTS051" and "256 before it trims" in f["message"] and "0 slots left on dgx-a100-07" in f["message"]
    # With room (K=100: 193 + 24 = 217), nothing to say on the host.
    assert _budget(tmp_path, _padded(a100_file, 100), "--root", str(A100)) == []


def test_the_hosts_ports_the_file_lists_add_nothing(tmp_path):
    # The host's own file lists every port: on the host NCCL adds only the fusion's 2 (115 + 2 = 117: no finding);
    # the API gives the counts.
    from ncclctl.nccl.build import Plugin
    from ncclctl.nccl.detect import generate_for
    from ncclctl.nccl.hostmerge import host_budget
    from ncclctl.nccl.system import Params
    from ncclctl.nccl.version import DEFAULT
    from ncclctl.nccl.xml import parse_nccl_xml
    from ncclctl.probe import probe

    data = generate_for(probe(str(A100)))[0]
    res = parse_nccl_xml(data, kind="topology", nccl_version=DEFAULT, path="a100.xml")
    b = host_budget(res.root, res.root, Params(version=DEFAULT), Plugin())
    assert (b.file, b.nets, b.missing, b.fused, b.per_rank) == (115, 0, (), 2, 117)
    no_nics = re.sub(rb"\s*<nic>.*?</nic>", b"", data, flags=re.S)
    bare = parse_nccl_xml(no_nics, kind="topology", nccl_version=DEFAULT, path="bare.xml")
    b = host_budget(bare.root, res.root, Params(version=DEFAULT), Plugin())
    assert (b.file, b.nets, len(b.missing), b.fused, b.per_rank) == (93, 22, 12, 2, 117)
    # NCCL_IB_HCA selecting 4 ports: only those are reported (4 <net> + their 4 <nic>), none fused.
    b = host_budget(bare.root, res.root, Params(env={"NCCL_IB_HCA": "=mlx5_0,mlx5_2,mlx5_6,mlx5_8"}, version=DEFAULT),
                    Plugin())
    assert (b.nets, b.missing, b.fused) == (8, ("mlx5_0", "mlx5_2", "mlx5_6", "mlx5_8"), 0)
    assert _budget(tmp_path, data.decode(), "--root", str(A100)) == []


def test_a_gpu_the_file_lacks_is_counted_with_its_path_and_nvlinks():
    # A file with one of dgx-h100's GPUs removed (its <pci>): the rank on that GPU adds its <pci>, <gpu> and the
    # <nvlink> elements under it (one per NVSwitch), as ncclTopoFillGpu/ncclTopoGetXmlFromGpu do.
    from ncclctl.nccl.build import Plugin
    from ncclctl.nccl.detect import generate_for
    from ncclctl.nccl.hostmerge import host_budget
    from ncclctl.nccl.system import Params
    from ncclctl.nccl.version import DEFAULT
    from ncclctl.nccl.xml import parse_nccl_xml
    from ncclctl.probe import probe

    data = generate_for(probe(str(HOSTS / "dgx-h100")))[0].decode()
    host = parse_nccl_xml(data.encode(), kind="topology", nccl_version=DEFAULT, path="h100.xml")
    m = re.search(r'\n\s*<pci busid="([0-9a-f:.]+)" class="0x030200"[^>]*>\s*<gpu .*?</gpu>\s*</pci>', data, re.S)
    assert m is not None
    nvlinks = m.group(0).count("<nvlink")
    less = parse_nccl_xml((data[:m.start()] + data[m.end():]).encode(), kind="topology", nccl_version=DEFAULT,
                          path="less.xml")
    b = host_budget(less.root, host.root, Params(version=DEFAULT), Plugin())
    assert b.gpu_busid == m.group(1) and b.gpu == 2 + nvlinks and nvlinks >= 1
    assert b.per_rank == less.node_count + b.gpu + b.fused  # (the storage NICs' two ports fused: no NCCL_IB_HCA)


def test_explain_says_the_host_count():
    out = run_cli("explain", "NTS051").stdout
    assert "With a host (--root, --live) the count is exact" in " ".join(out.split())


# --------------------------------------------------------------------------------------------------
# One finding per fault against a host: a file written for another host is not one line per element


def test_a_file_for_another_host_is_one_finding_per_fault():
    # dgx-h100's file on dgx-a100: 8 GPU bus ids that do not exist, 12 <net> under other bus ids, 10 devices under
    # another NUMA node, 12 <net> whose speed/port/guid differ, 8 host GPUs not in the file: one finding each (they
    # were 8 + 12 + 10 + 12 + 8 lines), every element in the evidence and the JSON locations.
    from conftest import REPO

    path = REPO / "tests/golden/topo/dgx-h100.xml"
    res = run_cli("topo", "validate", str(path), "--root", str(A100), "--format", "json")
    found = json.loads(res.stdout)["findings"]
    by = {}
    for f in found:
        by.setdefault((f["rule"], f["message"].split(":")[0]), []).append(f)
    assert all(len(v) == 1 for v in by.values()), sorted(by)
    gpus = next(f for f in found if f["rule"] == "NTH001" and "GPU bus ids" in f["message"])
    assert gpus["message"].startswith('8 GPU bus ids of the file do not exist on this host: "0000:1b:00.0" (line 9), '
                                      '"0000:43:00.0" (line 30)')
    assert gpus["message"].endswith("(GPUs: 0000:07:00.0, 0000:0f:00.0, 0000:47:00.0, 0000:4e:00.0, 0000:87:00.0, "
                                    "0000:90:00.0, 0000:b7:00.0, 0000:bd:00.0)")
    assert [x["line"] for x in gpus["locations"]] == [9, 30, 45, 60, 77, 98, 113, 128] and gpus["line"] == 9
    nets = next(f for f in found if f["rule"] == "NTH001" and "<net> elements" in f["message"])
    assert nets["message"].startswith("12 <net> elements sit under another busid than the IB plugin reports them at: "
                                      'mlx5_0 under "0000:18:00.0" (line 6; the plugin: 0000:0c:00.0)')
    assert "and 4 more" in nets["message"] and len(nets["evidence"]) == 12 and len(nets["locations"]) == 12
    (absent,) = [f for f in found if f["rule"] == "NTH002"]
    assert absent["message"] == ("8 GPUs of this host are not in the file: GPU 0 (0000:07:00.0), GPU 1 (0000:0f:00.0), "
                                 "GPU 2 (0000:47:00.0), GPU 3 (0000:4e:00.0), GPU 4 (0000:87:00.0), GPU 5 "
                                 "(0000:90:00.0), GPU 6 (0000:b7:00.0), GPU 7 (0000:bd:00.0)")
    (numa,) = [f for f in found if f["rule"] == "NTH005"]
    assert numa["message"].startswith("10 devices are under another <cpu numaid> than the NUMA node they sit on")
    assert "NIC mlx5_0 under 0, on 3 (line 4)" in numa["message"]
    (attrs,) = [f for f in found if f["rule"] == "NTH010"]
    assert attrs["message"].startswith("12 <net> elements differ from this host: mlx5_0 (line 6: speed 400000 (host "
                                       "200000), guid ")
    # One element keeps the single message (tests/test_topo_cli.py: "GPU 0 (0000:1b:00.0) is not in the file").


def test_fusion_under_a_switch_counts_the_made_up_pci():
    # NCCL_NET_MERGE_LEVEL=PIX on dgx-a100: the two NICs under each switch fuse, and NCCL makes a <pci> (a unique
    # busid) with a <nic> and the virtual <net> under the switch (ncclTopoMakeVNics -> ncclTopoMakePciParent):
    # 14 elements. NCCL 2.30.7 (CPU harness, same setting): dgx-a100's file + 127 bridges (242) initialises with its
    # six virtual NICs (256); + 128 (243) fails 'too many XML nodes (max 256)'.
    from ncclctl.nccl.build import Plugin
    from ncclctl.nccl.detect import generate_for
    from ncclctl.nccl.hostmerge import host_budget
    from ncclctl.nccl.system import Params
    from ncclctl.nccl.version import DEFAULT
    from ncclctl.nccl.xml import parse_nccl_xml
    from ncclctl.probe import probe

    data = generate_for(probe(str(A100)))[0].decode()
    for k, total in ((127, 256), (128, 257)):
        res = parse_nccl_xml(_padded(data, k).encode(), kind="topology", nccl_version=DEFAULT, path="p.xml")
        host = parse_nccl_xml(data.encode(), kind="topology", nccl_version=DEFAULT, path="h.xml")
        b = host_budget(res.root, host.root, Params(env={"NCCL_NET_MERGE_LEVEL": "PIX"}, version=DEFAULT), Plugin())
        assert (b.file, b.fused, b.per_rank) == (115 + k, 14, total)
