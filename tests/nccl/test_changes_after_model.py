"""Which NCCL the model is, and the changes after it (ncclctl/nccl/changes.py): the table, whether a change concerns
a node, and what ``topo predict`` and ``rings graph`` say, through the API and the CLI.

The modelled rows are checked against NCCL's own code: tests/nccl/test_nccl_expected_2_31.py (NCCL 2.31.0a7,
commit 86fa684d, run on CPU)."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import HOSTS, run_cli

from ncclctl.nccl import changes as ch
from ncclctl.nccl.version import DEFAULT, RELEASES, Version, parse


def test_table_is_well_formed():
    keys = [c.key for c in ch.CHANGES]
    assert len(keys) == len(set(keys))
    assert [c.release for c in ch.CHANGES] == sorted(c.release for c in ch.CHANGES)
    known = [parse(r) for r in RELEASES]
    for c in ch.CHANGES:
        assert c.release > ch.MODELLED, c.key
        # a release of the list, or the .0 of a line the list has (a change first seen in a pre-release)
        assert c.release in known or any(k[:2] == c.release[:2] for k in known), c.key
        assert c.when in ch.CONDITIONS and c.checked in ch.CHECKED and c.source, c.key
        assert c.key.startswith(f"{c.release.major}.{c.release.minor}/")
    assert ch.MODELLED == DEFAULT


def test_after_runs_from_the_model_to_the_release_asked():
    assert ch.after(DEFAULT, DEFAULT) == []
    assert ch.after(DEFAULT, Version(2, 29, 7)) == []
    upto_231 = ch.after(DEFAULT, Version(2, 31, 2))
    assert upto_231 and all(c.release < Version(2, 32, 0) for c in upto_231)
    assert ch.after(DEFAULT, Version(2, 32, 3)) == list(ch.CHANGES)
    assert ch.model_release(Version(2, 32, 3)) == DEFAULT
    assert ch.model_release(Version(2, 21, 5)) == Version(2, 21, 5)
    assert ch.release_of("2.31.0a7") == Version(2, 31, 0) and ch.release_of("2.28.9+cuda13.0") == Version(2, 28, 9)
    assert ch.release_of("unknown") is None


def _traits(name: str, **kw) -> ch.Traits:
    from nccl_expected import topo_xml
    from ncclctl.nccl.xml import parse_nccl_xml

    return ch.traits_from_tree(parse_nccl_xml(topo_xml(name)).root, **kw)


def _applies(traits: ch.Traits) -> dict[str, bool | None]:
    return {c.key: ch.applies(c, traits)[0] for c in ch.CHANGES}


def test_which_change_concerns_which_node():
    amd = _applies(_traits("cloud-vm-flat"))  # 2 x AMD EPYC 9V84 (Zen 4: familyid 175), H100, ConnectX-7
    assert amd["2.31/amd-zen-bw"] is True and amd["2.31/cpu-familyid"] is True
    assert amd["2.31/intel-gnr-erp"] is False and amd["2.31/gb300-channels"] is False
    assert amd["2.31/start-nic"] is False  # no Blackwell GPU: the NICs do not matter
    rome = _applies(_traits("dgx-a100"))  # Zen 2 (familyid 143): the bandwidth stays 16 GB/s
    assert rome["2.31/amd-zen-bw"] is False and rome["2.31/cpu-familyid"] is True
    # GB300 with ConnectX-8 (the node's PCI ids), or NICs unknown (a topology file alone: may apply)
    gb300 = _traits("gb300-dd", nic_devices=[ch.CONNECTX8])
    assert _applies(gb300)["2.31/start-nic"] is True and _applies(gb300)["2.31/gb300-channels"] is True
    assert _applies(_traits("gb300-dd"))["2.31/start-nic"] is None
    assert _applies(_traits("gb300-dd", nic_devices=["0x1021"]))["2.31/start-nic"] is False
    # ConnectX-9 or the rail policy set
    assert _applies(_traits("dgx-h100", nic_devices=[ch.CONNECTX9]))["2.32/ib-rail-policy"] is True
    assert _applies(_traits("dgx-h100", env={"NCCL_IB_RAIL_POLICY": "CX9"}))["2.32/ib-rail-policy"] is True
    assert _applies(_traits("dgx-h100", nic_devices=["0x1021"]))["2.32/ib-rail-policy"] is False


def test_tuning_rows_follow_the_prediction():
    """2.31/tree-two-nodes concerns 2-node jobs; 2.31/ll128-path-rule nodes where 2.30.7's tuning turned LL128 off
    for a path type (dgx-h100, GPUDirect RDMA off: the 2.31.0a7 harness keeps LL128 on there), unless NCCL_PROTO or
    NCCL_ALGO is set."""
    args = ["topo", "predict", "--root", str(HOSTS / "dgx-h100"), "-N", "2", "--nccl-version", "2.31.2",
            "--format", "json"]
    rows = {r["key"]: r for r in json.loads(run_cli(*args, "-e", "NCCL_NET_GDR_LEVEL=LOC").stdout)["changes_after"]}
    assert rows["2.31/ll128-path-rule"]["applies"] is True and rows["2.31/tree-two-nodes"]["applies"] is None
    assert not rows["2.31/ll128-path-rule"]["modelled"] and rows["2.31/ll128-path-rule"]["checked"] == "harness"
    rows = {r["key"]: r for r in json.loads(run_cli(*args).stdout)["changes_after"]}
    assert rows["2.31/ll128-path-rule"]["applies"] is False
    t = _traits("dgx-h100", env={"NCCL_PROTO": "^LL"}, nodes=4, ll128_path_off=True)
    assert _applies(t)["2.31/ll128-path-rule"] is False and _applies(t)["2.31/tree-two-nodes"] is False


def test_nvlink_without_tclass_is_counted():
    from ncclctl.nccl.xml import parse_nccl_xml

    xml = (b'<system version="1"><cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="173">'
           b'<pci busid="0000:01:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" '
           b'link_width="16"><gpu dev="0" sm="90" rank="0" gdr="1"><nvlink target="0000:02:00.0" count="18"/>'
           b'</gpu></pci></cpu><cpu numaid="1" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="173"/>'
           b'</system>')
    t = ch.traits_from_tree(parse_nccl_xml(xml).root)
    got = _applies(t)
    assert t.nvlink_without_tclass == 1 and got["2.31/nvlink-tclass"] is True
    assert got["2.31/intel-gnr-erp"] is True  # model 0xAD on 2 sockets


def test_model_follows_amd_zen_bandwidth_from_2_31():
    """Modelled row 2.31/amd-zen-bw: a path crossing the two sockets of a Zen 4 node (PXN and P2P off: GPU to the
    far NIC through both CPUs) is 16 GB/s as NCCL 2.30.7 computes it and 24 GB/s as 2.31.0a7 does (harness values
    in tests/data/nccl_expected/2.31.0a7.json, cloud-vm-flat|N=2|gdr=1|hca=all|env=NCCL_P2P_DISABLE=1)."""
    args = ["--root", str(HOSTS / "cloud-vm-flat"), "-N", "2", "-e", "NCCL_PXN_DISABLE=1", "-e",
            "NCCL_P2P_DISABLE=1", "--format", "json"]
    old = json.loads(run_cli("topo", "predict", *args).stdout)
    new = json.loads(run_cli("topo", "predict", *args, "--nccl-version", "2.31.2").stdout)
    far = "mlx5_ib7"
    assert old["gpus"][0]["paths_to_nets"][far] == {"type": "SYS", "bw": 16.0, "hops": 6} or \
        old["gpus"][0]["paths_to_nets"][far]["bw"] == 16.0
    assert new["gpus"][0]["paths_to_nets"][far]["type"] == "SYS"
    assert new["gpus"][0]["paths_to_nets"][far]["bw"] == 24.0
    assert old["release_modelled"] == new["release_modelled"] == "2.30.7"
    row = next(r for r in new["changes_after"] if r["key"] == "2.31/amd-zen-bw")
    assert row["applies"] is True and row["modelled"] is True and row["checked"] == "harness"


def test_predict_names_the_release_and_lists_nothing_at_the_model():
    r = run_cli("topo", "predict", "--root", str(HOSTS / "dgx-h100"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("NCCL 2.30.7 (the release modelled) on ")
    assert "Changes in NCCL after" not in r.stdout
    doc = json.loads(run_cli("topo", "predict", "--root", str(HOSTS / "dgx-h100"), "--format", "json").stdout)
    assert doc["release_modelled"] == doc["release_asked"] == "2.30.7" and doc["changes_after"] == []


def test_predict_for_a_newer_release_lists_the_changes_that_apply():
    r = run_cli("topo", "predict", "--root", str(HOSTS / "gb300-dd"), "--nccl-version", "2.32.3")
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()[:2]
    assert first.startswith("NCCL 2.32.3 asked for: the model runs 2.30.7's code")
    assert second.startswith("Changes in NCCL after 2.30.7 up to 2.32.3 (--nccl-version): 3 apply, 0 may apply")
    assert "GB300 favours 8 channels with PXN off [GB300 GPUs (sm 103); checked: reported; not modelled]" in r.stdout
    assert "the node has ConnectX-8 NICs" in r.stdout
    assert "not for this node: 2.31/amd-zen-bw (no AMD Zen 3/4/5 CPU)" in r.stdout
    doc = json.loads(run_cli("topo", "predict", "--root", str(HOSTS / "gb300-dd"), "--nccl-version", "2.32.3",
                             "--format", "json").stdout)
    assert doc["nccl_version"] == doc["release_asked"] == "2.32.3" and doc["release_modelled"] == "2.30.7"
    assert [r["key"] for r in doc["changes_after"]] == [c.key for c in ch.CHANGES]
    assert {r["key"] for r in doc["changes_after"] if r["applies"]} == \
        {"2.31/tuning-rewrite", "2.31/start-nic", "2.31/gb300-channels"}


def test_predict_on_a_node_running_a_newer_nccl(tmp_path):
    """The node's libnccl (nccl.json of the snapshot) is 2.32.3: the model stays 2.30.7 and says what changed up
    to the node's release."""
    node = tmp_path / "vm"
    shutil.copytree(HOSTS / "h200-vm-socket", node, symlinks=True)
    doc = json.loads((node / "nccl.json").read_text())
    doc["libraries"][0]["version"] = "2.32.3"
    (node / "nccl.json").write_text(json.dumps(doc))
    r = run_cli("topo", "predict", "--root", str(node), "-N", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("NCCL 2.30.7 (the release modelled)")
    assert "The model is of 2.30.7, the newest release ncclctl checks its model against: the changes after it up " \
           "to 2.32.3 are listed below" in r.stdout
    assert "Changes in NCCL after 2.30.7 up to 2.32.3 (the node's libnccl)" in r.stdout
    js = json.loads(run_cli("topo", "predict", "--root", str(node), "-N", "2", "--format", "json").stdout)
    assert js["changes_up_to"] == "2.32.3" and js["changes_up_to_from"] == "the node's libnccl"
    # An older library: no list, the hint to model its release stays.
    doc["libraries"][0]["version"] = "2.28.9"
    (node / "nccl.json").write_text(json.dumps(doc))
    old = run_cli("topo", "predict", "--root", str(node), "-N", "2").stdout
    assert "Changes in NCCL after" not in old and "pass --nccl-version 2.28.9" in old


@pytest.mark.parametrize("version, tail", [
    ("2.30.7", "channels as NCCL 2.30.7 computes them (the release modelled)\n"),
    ("2.31.2", "channels as NCCL 2.30.7 computes them (the release modelled; 2.31.2 asked for); after it up to "
               "2.31.2 (--nccl-version), 4 known change(s) concern this node: 2.31/amd-zen-bw, 2.31/cpu-familyid, "
               "2.31/tuning-rewrite, 2.31/tree-two-nodes (ncclctl topo predict --nccl-version 2.31.2 lists them)\n"),
])
def test_rings_graph_names_the_release(version, tail):
    r = run_cli("rings", "graph", "--root", str(HOSTS / "cloud-vm-flat"), "--nccl-version", version)
    assert r.returncode == 0, r.stderr
    assert "ncclctl: " + tail in r.stderr
    doc = json.loads(run_cli("rings", "graph", "--root", str(HOSTS / "cloud-vm-flat"), "--nccl-version", version,
                             "--format", "json").stdout)
    assert doc["release_modelled"] == "2.30.7" and doc["release_asked"] == version


def test_topo_generate_json_names_the_release_it_writes_for():
    base = ["topo", "generate", "--root", str(HOSTS / "dgx-h100"), "--format", "json"]
    assert json.loads(run_cli(*base).stdout)["nccl_version"] == "2.30.7"
    assert json.loads(run_cli(*base, "--nccl-version", "2.21").stdout)["nccl_version"] == "2.21.0"


def test_nvlink_without_tclass_filled_before_2_31_refused_after(tmp_path):
    """Modelled row 2.31/nvlink-tclass, checked with both harnesses on dgx-h100's topology with every tclass
    removed: NCCL 2.30.7 (commit 5067397c) fills them (no class readable: NVSwitch) and gives every GPU pair
    NVL/370.8 as with the classes; NCCL 2.31.0a7 (86fa684d) stops with 'Attribute tclass of node nvlink not found'."""
    import re

    from nccl_expected import topo_xml

    f = tmp_path / "no-tclass.xml"
    f.write_bytes(re.sub(rb' tclass="[^"]*"', b"", topo_xml("dgx-h100")))
    r = run_cli("topo", "predict", str(f), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert any(n.startswith("32 <nvlink> without tclass: NCCL 2.30.7 fills it") for n in doc["notes"])
    assert {v["type"] for v in doc["gpus"][0]["paths_to_gpus"].values()} == {"NVL"}
    assert doc["gpus"][0]["paths_to_gpus"]["1"]["bw"] == 370.8
    new = run_cli("topo", "predict", str(f), "--nccl-version", "2.31.2")
    assert new.returncode != 0 and "has no tclass: NCCL stops here (2.31 and later" in new.stderr
    old = run_cli("topo", "validate", str(f), "--format", "json")
    msgs = {x["message"] for x in json.loads(old.stdout)["findings"] if x["rule"] == "NTS018"}
    assert msgs and all("assumes an NVSwitch" in m and "2.31 and later stop here" in m for m in msgs)
    later = run_cli("topo", "validate", str(f), "--nccl-version", "2.31.2", "--format", "json")
    msgs = {x["message"] for x in json.loads(later.stdout)["findings"] if x["rule"] == "NTS018"}
    assert msgs and all("NCCL 2.31.2 no longer fills it" in m for m in msgs)
