"""`ncclctl fabric plan` (issue 17, deliverable 4): per-host nccl.conf/topo.xml, hostfile, topology.conf and plan.json
from one fabric analysis; consistent with `conf generate`, `topo generate` and `fabric order`; safe and idempotent
writes."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from conftest import REPO, run_cli

IB = REPO / "fixtures" / "fabric" / "ib-small"
INV = str(IB / "inventory.yaml")
MODELS = IB / "models"
PLANES = REPO / "fixtures" / "fabric" / "planes"
DUAL = str(PLANES / "dual-plane.txt")
PCI = str(PLANES / "pci-order.txt")
HOSTS = ("gpu01", "gpu02", "gpu03", "gpu04")


def no_traceback(r) -> None:
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr


def plan(out, *args, inv=INV, fabric=DUAL):
    return run_cli("fabric", "plan", "--inventory", str(inv), *(["--fabric", str(fabric)] if fabric else []),
                   "-o", str(out), *args)


def inventory(tmp_path, hosts: dict[str, str], name="inv.yaml") -> str:
    p = tmp_path / name
    p.write_text("hosts:\n" + "".join(f"  {h}: {{model: {m}}}\n" for h, m in hosts.items()))
    return str(p)


def ib_hca(conf: str) -> dict[str, list[str]]:
    line = next(ln for ln in conf.splitlines() if ln.startswith("NCCL_IB_HCA="))
    return {e.split(":")[0]: e.split(":")[1:] for e in line.split("=", 1)[1].lstrip("=^").split(",")}


def tree(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------------------------------------------
# The files are what the single-purpose commands write


def test_dual_plane_files_are_what_the_commands_write(tmp_path):
    out = tmp_path / "plan"
    r = plan(out)
    no_traceback(r)
    assert r.returncode == 0, r.stderr
    assert sorted(tree(out)) == sorted(["hostfile", "plan.json", "topology.conf"]
                                       + [f"hosts/{h}/{f}" for h in HOSTS for f in ("nccl.conf", "topo.xml")])
    for h in ("gpu01", "gpu03"):
        model = str(MODELS / f"{h}.json")
        conf = run_cli("conf", "generate", "--model", model, "--fabric", DUAL, "--host", h)
        topo = run_cli("topo", "generate", "--model", model, "--fabric", DUAL, "--host", h)
        assert conf.returncode == 0 and topo.returncode == 0
        assert (out / "hosts" / h / "nccl.conf").read_text() == conf.stdout
        assert (out / "hosts" / h / "topo.xml").read_text() == topo.stdout
    for fmt, name in (("hostfile", "hostfile"), ("slurm", "topology.conf")):
        r = run_cli("fabric", "order", DUAL, "--inventory", INV, "-f", fmt)
        assert r.returncode == 0 and (out / name).read_text() == r.stdout
    # two planes: the same leaf gives the same rail/plane on every host
    confs = {h: ib_hca((out / "hosts" / h / "nccl.conf").read_text()) for h in HOSTS}
    assert confs["gpu01"]["mlx5_0"] == ["1", "0", "0"] and confs["gpu01"]["mlx5_6"] == ["1", "0", "1"]
    assert all(c == confs["gpu01"] for c in confs.values())
    man = json.loads((out / "plan.json").read_text())
    assert man["generator"] == "ncclctl fabric plan" and man["rail_id_sources"] == ["fabric"]
    assert man["order"] == list(HOSTS) and man["left_out"] == [] and man["findings"] == []
    assert [h["status"] for h in man["hosts"]] == ["planned"] * 4
    for f in man["files"]:
        data = (out / f["path"]).read_bytes()
        assert f["sha256"] == hashlib.sha256(data).hexdigest() and f["bytes"] == len(data)
    ports = man["hosts"][0]["rail_ids"]["ports"]
    assert ports["mlx5_9:1"] == {"rail": 1, "plane": 1}


def test_pci_order_uses_the_fabric_ids(tmp_path):
    """gpu03's PCIe order differs from its leaf order: its files carry the ids of the leaves, in both files."""
    out = tmp_path / "plan"
    r = plan(out, "-f", "json", fabric=PCI)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["plan"]["rail_id_sources"] == ["fabric"] and doc["changed"] is True
    gpu03 = (out / "hosts" / "gpu03" / "nccl.conf").read_text()
    gpu01 = (out / "hosts" / "gpu01" / "nccl.conf").read_text()
    assert ib_hca(gpu03)["mlx5_3"] == ["1", "2"] and ib_hca(gpu03)["mlx5_4"] == ["1", "1"]
    assert ib_hca(gpu01)["mlx5_3"] == ["1", "1"]  # the rail-1 leaf: gpu01's mlx5_3, gpu03's mlx5_4
    assert "NCCL_CROSS_NIC=0" in gpu03  # a spine per rail: rail-only
    topo = (out / "hosts" / "gpu03" / "topo.xml").read_text()
    assert 'name="mlx5_3" dev="3" speed="400000" port="1" rail="2"' in topo
    assert 'name="mlx5_4" dev="4" speed="400000" port="1" rail="1"' in topo
    pcie = run_cli("rails", "--model", str(MODELS / "gpu03.json"), "-f", "json")
    by_hca = {x["hca"]: x["rail"] for x in json.loads(pcie.stdout)["rails"]}
    assert by_hca["mlx5_3:1"] == 1  # the PCIe guess, which the plan does not use
    # the host order is the fabric's (gpu03 deviates from its group's layout: last of its group)
    assert (out / "hostfile").read_text().split() == ["gpu01", "slots=8", "gpu02", "slots=8", "gpu04", "slots=8",
                                                      "gpu03", "slots=8"]
    assert "2 FAB001" in run_cli("fabric", "plan", "-i", INV, "--fabric", PCI, "-o", str(out)).stdout


def test_nccl_229_keeps_todays_forms_with_a_note(tmp_path):
    out = tmp_path / "plan"
    r = plan(out, "--nccl-version", "2.29.2", "--show-info", fabric=PCI)
    assert r.returncode == 0, r.stderr
    assert "info: FAB025: NCCL 2.29.2 reads no rail/plane ids" in r.stdout
    assert "note: NCCL 2.29.2 reads no rail/plane ids" in r.stdout
    for h in HOSTS:
        conf = (out / "hosts" / h / "nccl.conf").read_text()
        assert all(v == ["1"] for v in ib_hca(conf).values()) and "MERGE_POLICY" not in conf
        assert "NCCL_CROSS_NIC" not in conf
        assert " rail=" not in (out / "hosts" / h / "topo.xml").read_text()
    conf = run_cli("conf", "generate", "--model", str(MODELS / "gpu03.json"), "--fabric", PCI, "--host", "gpu03",
                   "--nccl-version", "2.29.2")
    assert (out / "hosts" / "gpu03" / "nccl.conf").read_text() == conf.stdout
    man = json.loads((out / "plan.json").read_text())
    assert man["nccl_version"] == "2.29.2" and [f["rule"] for f in man["findings"]] == ["FAB025"]
    assert man["hosts"][0]["rail_ids"]["written"] is False


# --------------------------------------------------------------------------------------------------------------
# Hosts without files: listed and reported, never silently dropped


def test_host_without_snapshot_in_the_inventory(tmp_path):
    inv = inventory(tmp_path, {h: str(MODELS / f"{h}.json") for h in ("gpu01", "gpu02", "gpu04")})
    out = tmp_path / "plan"
    r = plan(out, "-f", "json", inv=inv)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [(f["rule"], f["severity"]) for f in doc["findings"]] == [("FAB021", "warning")]
    assert "gpu03" in doc["findings"][0]["message"]
    assert not (out / "hosts" / "gpu03").exists()
    assert "gpu03" not in (out / "hostfile").read_text()
    man = json.loads((out / "plan.json").read_text())
    assert man["left_out"] == [{"host": "gpu03", "status": "not-in-inventory",
                                "why": "named by the fabric, no snapshot or model in the inventory"}]
    assert plan(tmp_path / "p2", "--fail-on", "warning", inv=inv).returncode == 1


def _with_mgmt_host(tmp_path) -> str:
    """dual-plane.txt plus ufm01, one HCA on a spine (a UFM server)."""
    text = (PLANES / "dual-plane.txt").read_text()
    g = "043f7203000009ff"
    head = 'Switch\t65 "S-043f720200000000"\t\t# "MF0;plane0-spine0:MQM9700/U1" enhanced port 0 lid 500 lmc 0\n'
    assert head in text
    text = text.replace(head, head + f'[9]\t"H-{g}"[1]({g}) \t\t# "ufm01 mlx5_0" lid 900 4xNDR\n')
    text += (f'\nvendid=0x2c9\ndevid=0x1021\nsysimgguid=0x{g}\ncaguid=0x{g}\nCa\t1 "H-{g}"\t\t# "ufm01 mlx5_0"\n'
             f'[1]({g}) \t"S-043f720200000000"[9]\t\t# lid 900 lmc 0 "MF0;plane0-spine0:MQM9700/U1" lid 500 4xNDR\n')
    p = tmp_path / "fabric-ufm.txt"
    p.write_text(text)
    return str(p)


def test_non_compute_hosts(tmp_path):
    # a management host in the fabric, not in the inventory: info, no files
    out = tmp_path / "plan"
    r = plan(out, "-f", "json", fabric=_with_mgmt_host(tmp_path))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [(f["rule"], f["severity"]) for f in doc["findings"]] == [("FAB022", "info")]
    assert "ufm01: not a compute host: 1 HCA(s)" in doc["findings"][0]["message"]
    assert [(e["host"], e["status"]) for e in doc["plan"]["left_out"]] == [("ufm01", "not-compute")]
    assert not (out / "hosts" / "ufm01").exists() and "ufm01" not in (out / "hostfile").read_text()
    # an inventory host whose node has no GPUs: no files, and an error (the fabric order still lists it)
    cpu = tmp_path / "cpu.json"
    r = run_cli("probe", "--root", str(REPO / "fixtures" / "hosts" / "cpu-only"), "-f", "json")
    cpu.write_text(r.stdout)
    models = {h: str(MODELS / f"{h}.json") for h in HOSTS} | {"gpu02": str(cpu)}
    r = plan(tmp_path / "p2", inv=inventory(tmp_path, models))
    assert r.returncode == 1 and "error: FAB022: gpu02: not a compute host: its node has no GPUs" in r.stdout
    assert not (tmp_path / "p2" / "hosts" / "gpu02").exists()
    assert "left out: gpu02: not-compute" in r.stdout


def test_inventory_host_not_in_the_fabric(tmp_path):
    models = {h: str(MODELS / f"{h}.json") for h in HOSTS} | {"gpu05": str(MODELS / "gpu04.json")}
    out = tmp_path / "plan"
    r = plan(out, inv=inventory(tmp_path, models))
    assert r.returncode == 0, r.stderr
    assert "warning: FAB022: gpu05: not in the fabric" in r.stdout and "1 FAB008" in r.stdout
    assert not (out / "hosts" / "gpu05").exists()


# --------------------------------------------------------------------------------------------------------------
# Writes: idempotent, atomic, owned folder


def test_rerun_is_byte_identical_and_keeps_mtimes(tmp_path):
    out = tmp_path / "plan"
    assert plan(out).returncode == 0
    before = tree(out)
    stamps = {p: os.stat(out / p).st_mtime_ns for p in before}
    old = 1_000_000_000 * 10**9  # an mtime no write can have: a rewrite would move it
    for p in before:
        os.utime(out / p, ns=(old, old))
    r = plan(out)
    assert r.returncode == 0 and f"{out}: unchanged (11 files up to date)" in r.stdout
    assert tree(out) == before
    assert all(os.stat(out / p).st_mtime_ns == old for p in before), stamps
    r = plan(out, "-f", "json")
    doc = json.loads(r.stdout)
    assert doc["changed"] is False and {f["status"] for f in doc["files"]} == {"unchanged"}
    # another target version: the files change, in place; --check first writes nothing
    r = plan(out, "--nccl-version", "2.29.2", "--check")
    assert r.returncode == 0 and "would be changed" in r.stdout and tree(out) == before
    r = plan(out, "--nccl-version", "2.29.2")
    assert r.returncode == 0 and "0 file(s) created, 9 changed, 2 unchanged" in r.stdout
    assert not [p for p in out.rglob("*.tmp")]


def test_check_mode_writes_nothing(tmp_path):
    out = tmp_path / "plan"
    r = plan(out, "--check", fabric=None)  # the inventory's own fabric: file
    assert r.returncode == 0 and "11 file(s) would be created" in r.stdout and not out.exists()
    assert f"(fabric: {IB / 'ibnetdiscover.txt'})" in r.stdout


def test_stale_host_folder_is_reported_not_deleted(tmp_path):
    out = tmp_path / "plan"
    assert plan(out).returncode == 0
    (out / "hosts" / "gpu09").mkdir()
    (out / "hosts" / "gpu09" / "nccl.conf").write_text("NCCL_IB_HCA==mlx5_0:1\n")
    r = plan(out, "--fail-on", "warning")
    assert r.returncode == 1 and "warning: FAB026: hosts/gpu09/: not a host of this plan" in r.stdout
    assert (out / "hosts" / "gpu09" / "nccl.conf").exists()


# --------------------------------------------------------------------------------------------------------------
# Hostile inputs: exit 3 (2 for usage), one line, nothing written outside


def test_bad_output_folders(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    for out, words in ((f, "the output folder is a file"), (tmp_path / "no" / "such", "does not exist"),
                       (f / "sub", "does not exist")):
        r = plan(out)
        no_traceback(r)
        assert r.returncode == 3 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f.read_text() == "x"
    link = tmp_path / "link-to-file"
    link.symlink_to(f)
    r = plan(link)
    assert r.returncode == 3 and "is a file" in r.stderr and f.read_text() == "x"


def test_folder_with_unrelated_files_needs_force(tmp_path):
    out = tmp_path / "plan"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "hostfile").write_text("handmade slots=1\n")
    r = plan(out)
    no_traceback(r)
    assert r.returncode == 3 and "not an ncclctl fabric plan's (hostfile, notes.txt)" in r.stderr
    assert (out / "hostfile").read_text() == "handmade slots=1\n" and not (out / "hosts").exists()
    r = plan(out, "--force")
    assert r.returncode == 0 and (out / "notes.txt").read_text() == "mine"
    assert (out / "hostfile").read_text().startswith("gpu01 slots=8")
    # a plan.json someone else wrote is not a plan's folder
    other = tmp_path / "other"
    other.mkdir()
    (other / "plan.json").write_text('{"generator": "terraform"}')
    assert plan(other).returncode == 3
    # the plan's own folder: written again without --force
    assert plan(out).returncode == 3  # notes.txt is still there
    os.unlink(out / "notes.txt")
    (out / ".plan.json.k3x9_q2a.tmp").write_text("{")  # a temp file a killed run left: the plan's own
    assert plan(out).returncode == 0
    # a plan.json that is a FIFO or a folder is not a plan's manifest (and is never opened for a blocking read)
    for make in (os.mkfifo, os.mkdir):
        odd = tmp_path / f"odd-{make.__name__}"
        odd.mkdir()
        make(odd / "plan.json")
        r = plan(odd)
        no_traceback(r)
        assert r.returncode == 3 and "not an ncclctl fabric plan's (plan.json)" in r.stderr


def test_symlinked_hosts_folders_are_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "plan"
    assert plan(out).returncode == 0
    import shutil

    shutil.rmtree(out / "hosts")
    (out / "hosts").symlink_to(elsewhere)
    for args in ((), ("--force",)):
        r = plan(out, *args)
        no_traceback(r)
        assert r.returncode == 3 and "hosts/ is a symlink" in r.stderr, r.stderr
    (out / "hosts").unlink()
    assert plan(out).returncode == 0
    shutil.rmtree(out / "hosts" / "gpu02")
    (out / "hosts" / "gpu02").symlink_to(elsewhere)
    r = plan(out)
    assert r.returncode == 3 and "hosts/gpu02/ is a symlink" in r.stderr
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("model, words", [
    ("/dev/zero", "not a regular file"),
    ("{tmp}", "not a regular file: it is a directory"),
    ("{tmp}/missing.json", "no such node model"),
    ("{tmp}/fifo", "FIFO"),
    ("../../../../../../../../etc/hostname", "not a valid JSON node model"),
])
def test_inventory_pointing_outside(tmp_path, model, words):
    os.mkfifo(tmp_path / "fifo")
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n  gpu01: {model: %s}\n" % model.format(tmp=tmp_path))
    if model.startswith("../") and not os.path.isfile("/etc/hostname"):
        pytest.skip("no /etc/hostname")
    out = tmp_path / "plan"
    r = plan(out, inv=inv)
    no_traceback(r)
    assert r.returncode == 3 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not out.exists()


def test_bad_options(tmp_path):
    out = tmp_path / "plan"
    r = plan(out, "--topo-file", "topo.xml")
    assert r.returncode == 2 and "relative" in r.stderr and not out.exists()
    r = plan(out, fabric=tmp_path / "missing.txt")
    no_traceback(r)
    assert r.returncode == 3 and not out.exists()
    r = run_cli("fabric", "plan", "-o", str(out))
    assert r.returncode == 2 and "--inventory" in r.stderr
    r = plan(out, "--nccl-version", "two")
    assert r.returncode == 2 and not out.exists()


def test_nothing_to_plan(tmp_path):
    """An inventory whose hosts the fabric does not hold: exit 3, nothing written."""
    roce = REPO / "fixtures" / "fabric" / "roce-small" / "models"
    inv = inventory(tmp_path, {"roce01": str(roce / "roce01.json"), "roce02": str(roce / "roce02.json")})
    out = tmp_path / "plan"
    r = plan(out, inv=inv)
    no_traceback(r)
    assert r.returncode == 3 and "no host of the inventory is in the rail layout" in r.stderr and not out.exists()


def test_topo_file_is_set_in_every_conf(tmp_path):
    out = tmp_path / "plan"
    assert plan(out, "--topo-file", "/etc/nccl/topo.xml").returncode == 0
    for h in HOSTS:
        assert "NCCL_TOPO_FILE=/etc/nccl/topo.xml" in (out / "hosts" / h / "nccl.conf").read_text().splitlines()


# --------------------------------------------------------------------------------------------------------------
# API: one analysis, the consistency check fails and passes


def test_api_plan_and_consistency_check(tmp_path):
    from ncclctl.fabric.plan import check_plan, conf_ids, plan_fabric, topo_ids, write_plan
    from ncclctl.nccl.version import Version
    from ncclctl.nccl.railids import RailId
    from ncclctl.plan.railids import fabric_host_ids

    p = plan_fabric(INV, DUAL, nccl_version=Version(2, 30, 7))
    assert [e.host for e in p.planned] == list(HOSTS) and p.findings == []
    fab = fabric_host_ids(p.lay)
    assert check_plan(p, fab) == []
    conf, topo = p.files["hosts/gpu02/nccl.conf"], p.files["hosts/gpu02/topo.xml"]
    assert conf_ids(conf)["mlx5_6:1"] == RailId(0, 1) == topo_ids(topo)["mlx5_6:1"] == fab["gpu02"]["mlx5_6:1"]
    # a conf that says another rail than its topo.xml and the fabric: FAB023
    p.files["hosts/gpu02/nccl.conf"] = conf.replace(b"mlx5_6:1:0:1", b"mlx5_6:1:3:1")
    bad = check_plan(p, fab)
    assert {f.rule for f in bad} == {"FAB023"} and len(bad) == 3
    assert any("NCCL_IB_HCA says rail 3 plane 1, hosts/gpu02/topo.xml says rail 0 plane 1" in f.message for f in bad)
    assert any("the leaf it lands on is rail 0 plane 1" in f.message for f in bad)
    # a topo.xml without a rail port: a warning; a hostfile out of order: an error
    p.files["hosts/gpu02/nccl.conf"] = conf
    p.files["hosts/gpu02/topo.xml"] = topo.replace(b'name="mlx5_6"', b'name="mlx5_x"')
    assert [f.severity.value for f in check_plan(p, fab)] == ["warning"]
    p.files["hosts/gpu02/topo.xml"] = topo
    p.files["hostfile"] = b"gpu02 slots=8\ngpu01 slots=8\ngpu03 slots=8\ngpu04 slots=8\n"
    assert [f.message for f in check_plan(p, fab)] == ["hostfile: the host order is not the fabric's ring order"]
    # writing: twice, the second changes nothing
    p = plan_fabric(INV, DUAL, nccl_version=Version(2, 30, 7))
    first = write_plan(p, str(tmp_path / "out"))
    assert first.counts() == {"created": 11, "changed": 0, "unchanged": 0}
    assert write_plan(p, str(tmp_path / "out")).unchanged


def test_host_whose_ports_the_fabric_does_not_all_place(tmp_path):
    """gpu02's mlx5_0 is not in the fabric: its ids fall back to the PCIe guess, not written (FAB024)."""
    fabric = tmp_path / "fabric.txt"
    text = (PLANES / "dual-plane.txt").read_text()
    assert text.count('"gpu02 mlx5_0"') == 2
    fabric.write_text(text.replace('"gpu02 mlx5_0"', '"gpu02 mlx5_99"'))
    out = tmp_path / "plan"
    r = plan(out, "-f", "json", fabric=fabric)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [(f["rule"], f["severity"]) for f in doc["findings"]] == [("FAB024", "warning")]
    message = doc["findings"][0]["message"]
    assert "gpu02: rail ids from the local PCIe order (the fabric does not place mlx5_0:1" in message
    gpu02 = next(h for h in doc["plan"]["hosts"] if h["host"] == "gpu02")
    assert gpu02["rail_ids"]["source"] == "pcie" and gpu02["rail_ids"]["written"] is False
    assert all(v == ["1"] for v in ib_hca((out / "hosts" / "gpu02" / "nccl.conf").read_text()).values())
    assert " rail=" not in (out / "hosts" / "gpu02" / "topo.xml").read_text()
    assert ib_hca((out / "hosts" / "gpu01" / "nccl.conf").read_text())["mlx5_0"] == ["1", "0", "0"]
    # a rail map naming gpu02's ports: the next source in line, written
    rmap = tmp_path / "rails.yaml"
    ports = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    rmap.write_text("hosts:\n  gpu02:\n" + "".join(f"    {p}:1: {{rail: {i % 4}, plane: {i // 4}}}\n"
                                                    for i, p in enumerate(ports)))
    r = plan(tmp_path / "p2", "-f", "json", "--rail-map", str(rmap), fabric=fabric)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["findings"] == [] and doc["plan"]["rail_id_sources"] == ["fabric", "inventory"]
    gpu02 = next(h for h in doc["plan"]["hosts"] if h["host"] == "gpu02")
    assert gpu02["rail_ids"]["source"] == "inventory" and gpu02["rail_ids"]["written"] is True
    assert ib_hca((tmp_path / "p2" / "hosts" / "gpu02" / "nccl.conf").read_text())["mlx5_9"] == ["1", "1", "1"]
