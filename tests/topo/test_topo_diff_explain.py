"""``ncclctl topo diff OLD NEW`` explains each change (ncclctl/topo/explain.py): CPU sets moved between NUMA
nodes, the bandwidth NCCL computes for a link, devices moved under another switch or NUMA node, and what NCCL's
model then decides differently. The files are authored here after changes seen in published VM files
(docs/topo-corpus.md)."""

from __future__ import annotations

import json

from conftest import run_cli

LINK = 'link_speed="32.0 GT/s PCIe" link_width="16"'
CPU = '<cpu numaid="{n}" affinity="{a}" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">'
LOW, HIGH = "00000000,0000ffff,ffffffff", "ffffffff,ffff0000,00000000"


def leaf(busid: str, cls: str, link: str = LINK) -> str:
    return f'    <pci busid="{busid}" class="{cls}" {link}/>'


def switch(busid: str, *kids: str, link: str = LINK) -> str:
    return f'  <pci busid="{busid}" class="0x060400" {link}>\n' + "\n".join(kids) + "\n  </pci>"


def topo(*cpus: tuple[int, str, list[str]]) -> str:
    out = ['<system version="1">']
    for n, aff, kids in cpus:
        out += [CPU.format(n=n, a=aff), *kids, "</cpu>"]
    return "\n".join(out + ["</system>"]) + "\n"


def pair(k: int, link: str = LINK) -> str:
    return switch(f"ffff:ff:0{k}.0", leaf(f"000{k}:00:00.0", "0x030200"), leaf(f"010{k}:00:00.0", "0x020700"), link=link)


BASE = topo((0, LOW, [pair(1), pair(2)]), (1, HIGH, [pair(3), pair(4)]))


def diff(tmp_path, old: str, new: str, *extra: str) -> tuple[int, str, dict]:
    a, b = tmp_path / "old.xml", tmp_path / "new.xml"
    a.write_text(old)
    b.write_text(new)
    text = run_cli("topo", "diff", str(a), str(b), *extra)
    doc = run_cli("topo", "diff", str(a), str(b), "--format", "json", *extra)
    assert "Traceback" not in text.stderr + doc.stderr
    return text.returncode, text.stdout, json.loads(doc.stdout)


def test_swapped_affinities_are_named(tmp_path):
    swapped = topo((0, HIGH, [pair(1), pair(2)]), (1, LOW, [pair(3), pair(4)]))
    rc, text, doc = diff(tmp_path, BASE, swapped)
    assert rc == 1
    assert "NUMA node 0: CPUs 0-47 (48) -> CPUs 48-95 (48), the CPU set NUMA node 1 had" in text
    assert "the ranks of the GPUs under it (0001:00:00.0, 0002:00:00.0) bind their threads to these CPUs" in text
    assert doc["notes"] and "NUMA nodes 0, 1 exchanged their CPU sets" in doc["notes"][0]
    cpus = {c["gpu"]: c for c in doc["consequences"]["gpu_cpus"]}
    assert cpus["0001:00:00.0"]["before"] == {"numa": "0", "affinity": LOW}
    assert cpus["0001:00:00.0"]["after"] == {"numa": "0", "affinity": HIGH}
    assert doc["consequences"]["gpu_nets"] == [] and doc["consequences"]["gpu_paths"] == []


def test_link_speed_change_gives_nccl_bandwidth_before_and_after(tmp_path):
    slow = BASE.replace(pair(1), pair(1, link='link_speed="2.5 GT/s" link_width="1"'))
    rc, text, doc = diff(tmp_path, BASE, slow)
    assert "the link above switch ffff:ff:01.0: NCCL computes 48 GB/s (x16 32.0 GT/s PCIe) -> 0.1875 GB/s (x1 2.5 GT/s)" \
        in text
    assert text.count("NCCL computes") == 1  # speed and width of one link: one sentence
    paths = [p for p in doc["consequences"]["gpu_paths"] if "0001:00:00.0" in p["gpus"]]
    assert paths and all(p["after"][1] < 1 for p in paths)
    assert "0001:00:00.0 <-> 0002:00:00.0: PHB/48 -> PHB/0.19" in text


def test_nic_moved_under_another_switch_changes_paths_and_gdr(tmp_path):
    moved = topo((0, LOW, [switch("ffff:ff:01.0", leaf("0001:00:00.0", "0x030200")),
                           switch("ffff:ff:02.0", leaf("0002:00:00.0", "0x030200"), leaf("0102:00:00.0", "0x020700"),
                                  leaf("0101:00:00.0", "0x020700"))]),
                 (1, HIGH, [pair(3), pair(4)]))
    rc, text, doc = diff(tmp_path, BASE, moved)
    assert "NIC 0101:00:00.0 moved from under switch ffff:ff:01.0 to under switch ffff:ff:02.0" in text
    paths = {(p["net"], p["gpu"]): (p["before"][0], p["after"][0]) for p in doc["consequences"]["net_paths"]}
    assert paths[("NIC@0101:00:00.0", "0001:00:00.0")] == ("PIX", "PHB")
    assert paths[("NIC@0101:00:00.0", "0002:00:00.0")] == ("PHB", "PIX")
    gpu0 = next(g for g in doc["consequences"]["gpu_nets"] if g["gpu"] == "0001:00:00.0")
    assert gpu0["before"][0]["gdr"] is True and not any(u["gdr"] for u in gpu0["after"])


def test_device_moved_to_another_numa_node(tmp_path):
    moved = topo((0, LOW, [pair(1)]), (1, HIGH, [pair(2), pair(3), pair(4)]))
    rc, text, doc = diff(tmp_path, BASE, moved)
    assert "switch ffff:ff:02.0 moved from under the CPU of NUMA node 0 to under the CPU of NUMA node 1: NUMA node 0 -> 1" \
        in text
    cpus = {c["gpu"]: (c["before"]["numa"], c["after"]["numa"]) for c in doc["consequences"]["gpu_cpus"]}
    assert cpus == {"0002:00:00.0": ("0", "1")}
    assert "GPU 0002:00:00.0 binds to NUMA node 0 CPUs 0-47 (48) -> NUMA node 1 CPUs 48-95 (48)" in text


def test_added_and_removed_devices(tmp_path):
    fewer = topo((0, LOW, [pair(1), pair(2)]), (1, HIGH, [pair(3)]))
    rc, text, doc = diff(tmp_path, BASE, fewer)
    assert "- pci 0004:00:00.0" in text and "GPU 0004:00:00.0 removed under switch ffff:ff:04.0 (NUMA node 1)" in text
    only = {(d.get("gpu") or d.get("net")): d["only_in"] for d in doc["consequences"]["devices"]}
    assert only == {"0004:00:00.0": "old", "NIC@0104:00:00.0": "old"}


def test_nvlinks_retargeted_to_the_gpu_itself(tmp_path):
    def gpus(target: str) -> str:
        out = []
        for k, t in ((1, target or "0002:00:00.0"), (2, target.replace("1", "2") if target else "0001:00:00.0")):
            out.append(f'  <pci busid="000{k}:00:00.0" class="0x030200" {LINK}>\n'
                       f'    <gpu dev="{k - 1}" sm="80"><nvlink target="{t}" count="12" tclass="0x030200"/></gpu>\n  </pci>')
        return topo((0, LOW, out))

    rc, text, doc = diff(tmp_path, gpus(""), gpus("0001:00:00.0"))
    assert "NVLink 0001:00:00.0 -> 0001:00:00.0 added (it targets the GPU itself)" in text
    [p] = doc["consequences"]["gpu_paths"]
    assert p["before"][0] == "NVL" and p["after"][0] != "NVL"


def test_model_not_computable_is_said_not_raised(tmp_path):
    bad = BASE.replace('    <pci busid="0001:00:00.0" class="0x030200" ' + LINK + "/>",
                       '    <pci busid="0001:00:00.0" class="0x030200" ' + LINK + '><gpu dev="0" sm="90">'
                       '<nvlink target="0002:00:00.0" count="1"/></gpu></pci>')
    assert bad != BASE
    rc, text, doc = diff(tmp_path, BASE, bad)
    assert rc == 1 and "NCCL's model of the NEW file: not computed" in text
    assert doc["consequences"]["model"]["new"]["unavailable"]


def test_unreadable_affinity_and_formatting(tmp_path):
    odd = BASE.replace(LOW, "zz", 1)
    rc, text, _ = diff(tmp_path, BASE, odd)
    assert "-> 'zz' (not a CPU mask)" in text
    reformatted = BASE.replace("\n", "\n\n").replace('<system version="1">', "<!-- same -->\n<system version=\"1\">")
    rc, text, doc = diff(tmp_path, BASE, reformatted)
    assert rc == 0 and doc["same"] is True and doc["consequences"] == {} and "no semantic difference" in text


def test_output_is_deterministic(tmp_path):
    swapped = topo((0, HIGH, [pair(2), pair(1)]), (1, LOW, [pair(4)]))
    first = diff(tmp_path, BASE, swapped)
    second = diff(tmp_path, BASE, swapped)
    assert first[1] == second[1] and first[2] == second[2]


def test_bad_version_is_usage(tmp_path):
    a = tmp_path / "a.xml"
    a.write_text(BASE)
    r = run_cli("topo", "diff", str(a), str(a), "--nccl-version", "two")
    assert r.returncode == 2
