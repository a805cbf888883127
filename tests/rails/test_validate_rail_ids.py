"""``topo validate FILE --model/--root HOST --fabric FABRIC [--rail-map MAP] [--host NAME]``: the rail=/plane= of a
topology file's <net> elements against the host and its fabric (NTH040-NTH044), each with a failing and a passing
case, on the fixtures of fixtures/fabric/planes (files written by ``topo generate --fabric``). The host is
fixtures/hosts/dgx-h100 (the DGX H100 of the fabric's nodes, whose NICs it shares) named as a fabric node with
``--host``: NCCL's model of it is quick, where the fabric's own node models make the meaning rules search long."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import HOSTS, REPO, run_cli

PLANES = REPO / "fixtures" / "fabric" / "planes"


DGX = str(HOSTS / "dgx-h100")


def node_for(host: str):
    from ncclctl.cli.common import load_node

    return load_node(DGX, None)


def generate(tmp_path: Path, host: str, fabric: str | Path, name: str = "topo.xml", version: str = "2.30.7") -> Path:
    """What ``topo generate --root dgx-h100 --fabric FABRIC --host HOST`` writes (through the API: the CLI is
    covered in tests/rails/test_rail_ids.py)."""
    from ncclctl.nccl.version import parse
    from ncclctl.fabric.railids import ids_from_options
    from ncclctl.plan.rails import plan_rails
    from ncclctl.nccl.detect import generate_for

    node = node_for(host)
    ids = ids_from_options(node, plan_rails(node), fabric_file=str(PLANES / fabric), rail_map=None, host=host)
    assert ids is not None and ids.source == "fabric"
    out = tmp_path / name
    out.write_bytes(generate_for(node, nccl_version=parse(version), rail_ids=ids)[0])
    return out


def validate(*args: str) -> tuple[int, dict, str]:
    """``topo validate FILE [--root R] [--fabric F] [--rail-map M] [--host H] [--nccl-version V] [--rule ID]``
    through the API's report (the findings the CLI prints); :func:`validate_cli` runs the CLI."""
    from ncclctl.nccl.version import parse
    from ncclctl.topo.filecheck import RailSource, validate_report

    opts = dict(zip(args[1::2], args[2::2]))
    rails = None
    if "--fabric" in opts or "--rail-map" in opts:
        rails = RailSource(fabric=opts.get("--fabric"), rail_map=opts.get("--rail-map"), host=opts.get("--host"))
    root = opts.get("--root")
    rep = validate_report(Path(args[0]).read_bytes(), args[0], nccl_version=parse(opts.get("--nccl-version", "2.30.7")),
                          load_node=(lambda: node_for(root)) if root else None, rails=rails, xsd=False,
                          only=(opts["--rule"],) if "--rule" in opts else None)
    doc = {"findings": [{"rule": f.rule, "severity": f.severity.value, "message": f.message, "line": f.line,
                         "fix": f.fix} for f in rep.findings]}
    return (1 if any(f.severity.value == "error" for f in rep.findings) else 0), doc, ""


def validate_cli(*args: str) -> tuple[int, dict, str]:
    r = run_cli("topo", "validate", *args, "--format", "json", "--show-info")
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout), r.stderr


def rules(doc: dict, prefix: str = "NTH04") -> list[dict]:
    return [f for f in doc["findings"] if f["rule"].startswith(prefix)]


def line_of(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


@pytest.mark.parametrize("fabric,host", [("dual-plane.txt", "gpu01"), ("dual-plane-unnamed.txt", "gpu04"),
                                         ("pci-order.txt", "gpu03"), ("wrong-rail.txt", "gpu02")])
def test_generated_file_passes_against_its_host_and_fabric(tmp_path, fabric, host):
    f = generate(tmp_path, host, fabric)
    check = validate_cli if fabric == "dual-plane.txt" else validate
    rc, doc, _ = check(str(f), "--root", DGX, "--fabric", str(PLANES / fabric), "--host", host)
    assert rc == 0 and rules(doc) == []


def test_nth040_a_net_labelled_with_another_rail_than_its_leaf(tmp_path):
    # gpu01's file (mlx5_5 rail 3, mlx5_9 rail 5) copied to gpu02, whose mlx5_5 is cabled to the rail-5 leaf
    f = generate(tmp_path, "gpu01", "wrong-rail.txt")
    rc, doc, _ = validate_cli(str(f), "--root", DGX, "--fabric", str(PLANES / "wrong-rail.txt"), "--host", "gpu02")
    got = rules(doc)
    assert rc == 1 and [x["rule"] for x in got] == ["NTH040", "NTH040"]
    assert got[0]["line"] == line_of(f, 'name="mlx5_5"') and got[0]["severity"] == "error"
    assert "port mlx5_5:1 lands on leaf su1-rail5-leaf, rail 5" in got[0]["message"]
    assert "host gpu02" in got[0]["message"] and 'write rail="5"' in got[0]["fix"]
    assert "rail 3" in got[1]["message"] and got[1]["line"] == line_of(f, 'name="mlx5_9"')
    # the same file on its own host is clean
    rc, doc, _ = validate(str(f), "--root", DGX, "--fabric", str(PLANES / "wrong-rail.txt"), "--host", "gpu01")
    assert rc == 0 and rules(doc) == []


def test_nth040_plane_and_host_option(tmp_path):
    f = generate(tmp_path, "gpu01", "dual-plane.txt")
    text = f.read_text().replace('name="mlx5_6" dev="6" speed="400000" port="1" rail="0" plane="1"',
                                 'name="mlx5_6" dev="6" speed="400000" port="1" rail="0" plane="0"')
    f.write_text(text)
    # the host (dgx-h100-01) is gpu01 in the fabric: --host names it there
    rc, doc, _ = validate(str(f), "--root", DGX, "--fabric", str(PLANES / "dual-plane.txt"), "--host", "gpu01",
                          "--rule", "NTH040")
    got = rules(doc)
    assert rc == 1 and len(got) == 1 and "plane 1" in got[0]["message"] and 'plane="1"' in got[0]["fix"]


def test_nth041_file_and_ib_hca_disagree_file_wins(tmp_path):
    f = generate(tmp_path, "gpu02", "wrong-rail.txt")
    r = run_cli("probe", "--root", DGX, "--format", "json")
    assert r.returncode == 0, r.stderr
    model = json.loads(r.stdout)
    hca = "=mlx5_0:1:0,mlx5_3:1:1,mlx5_4:1:2,mlx5_5:1:3,mlx5_6:1:4,mlx5_9:1:5,mlx5_10:1:6,mlx5_11:1:7"
    model["facts"]["conf_files"] = [{"path": "/etc/nccl.conf", "text": f"NCCL_DEBUG=WARN\nNCCL_IB_HCA={hca}\n"}]
    m = tmp_path / "gpu02.json"
    m.write_text(json.dumps(model))
    rc, doc, _ = validate_cli(str(f), "--model", str(m))
    got = rules(doc)
    assert [x["rule"] for x in got] == ["NTH041", "NTH041"] and got[0]["severity"] == "warning"
    assert got[0]["line"] == line_of(f, 'name="mlx5_5"')
    assert "NCCL_IB_HCA (/etc/nccl.conf:2) gives mlx5_5:1 rail 3; NCCL uses the file's ids" in got[0]["message"]
    assert "/etc/nccl.conf" in got[0]["fix"]
    # the ids the fabric gives, in both: clean
    good = hca.replace("mlx5_5:1:3", "mlx5_5:1:5").replace("mlx5_9:1:5", "mlx5_9:1:3")
    model["facts"]["conf_files"] = []
    model["facts"]["nccl_env"] = [["NCCL_IB_HCA", good]]
    m.write_text(json.dumps(model))
    rc, doc, _ = validate_cli(str(f), "--model", str(m))
    assert rules(doc) == []


def test_nth042_two_nets_one_rail_on_two_leaves(tmp_path):
    # a fabric whose rail-1 leaf is named like the rail-0 leaf: both leaves give rail 0, NCCL takes mlx5_0 and
    # mlx5_3 for one rail although they land on different leaves
    fab = tmp_path / "misnamed.txt"
    fab.write_text((PLANES / "dual-plane.txt").read_text().replace("su1-plane0-rail1-leaf", "su1-plane0-rail0-leafb"))
    out = generate(tmp_path, "gpu01", fab)
    rc, doc, _ = validate(str(out), "--root", DGX, "--fabric", str(fab), "--host", "gpu01")
    got = rules(doc)
    assert [x["rule"] for x in got] == ["NTH042"], got
    assert got[0]["line"] == line_of(out, 'name="mlx5_3"')
    assert "mlx5_0" in got[0]["message"] and "su1-plane0-rail0-leafb" in got[0]["message"]
    # against the correctly named fabric the same file is NTH040 (mlx5_3 labelled rail 0 on the rail-1 leaf),
    # and NTH042 gives way to it
    rc, doc, _ = validate(str(out), "--root", DGX, "--fabric", str(PLANES / "dual-plane.txt"), "--host", "gpu01")
    assert [x["rule"] for x in rules(doc)] == ["NTH040"]


def test_nth043_rail_ids_on_a_storage_nic(tmp_path):
    f = generate(tmp_path, "gpu01", "dual-plane.txt")
    f.write_text(re.sub(r'(name="mlx5_1" dev="1" speed="200000" port="1")', r'\1 rail="0" plane="0"', f.read_text()))
    rc, doc, _ = validate(str(f), "--root", DGX)
    got = rules(doc)
    assert [x["rule"] for x in got] == ["NTH043"] and got[0]["line"] == line_of(f, 'name="mlx5_1"')
    assert "mlx5_1 is no GPU's rail NIC" in got[0]["message"]
    f2 = generate(tmp_path, "gpu01", "dual-plane.txt", "clean.xml")
    rc, doc, _ = validate(str(f2), "--root", DGX)
    assert rules(doc) == []


def test_nth044_rail_ids_for_an_older_nccl(tmp_path):
    f = generate(tmp_path, "gpu03", "pci-order.txt")
    rc, doc, _ = validate(str(f), "--root", DGX, "--fabric", str(PLANES / "pci-order.txt"), "--host", "gpu03",
                          "--nccl-version", "2.30.4")
    got = rules(doc)
    assert [x["rule"] for x in got] == ["NTH044"] and got[0]["line"] == line_of(f, 'name="mlx5_0"')
    assert "NCCL 2.30.4 ignores them without a word" in got[0]["message"]
    assert "mlx5_3:1 rail 2" in got[0]["message"]
    assert not [x for x in doc["findings"] if x["rule"] == "NTV002"]  # one fact, one finding
    # without a host NTV002 still says it
    rc, doc, _ = validate(str(f), "--nccl-version", "2.30.4")
    assert any(x["rule"] == "NTV002" for x in doc["findings"]) and not rules(doc)
    # a file written for 2.30.4 carries no ids: clean
    old = generate(tmp_path, "gpu03", "pci-order.txt", "old.xml", version="2.30.4")
    assert ' rail="' not in old.read_text()
    rc, doc, _ = validate(str(old), "--root", DGX, "--nccl-version", "2.30.4")
    assert rules(doc) == []


def test_rail_map_source(tmp_path):
    f = generate(tmp_path, "gpu02", "wrong-rail.txt")
    rmap = tmp_path / "map.yaml"
    ports = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    rmap.write_text("hosts:\n  gpu02:\n" + "".join(f"    {p}:1: {{rail: {k}}}\n" for k, p in enumerate(ports)))
    rc, doc, _ = validate(str(f), "--root", DGX, "--rail-map", str(rmap), "--host", "gpu02")
    got = rules(doc)
    assert [x["rule"] for x in got] == ["NTH040", "NTH040"] and "hosts: gpu02" in got[0]["message"]
    assert "--rail-map" in got[0]["fix"]


@pytest.mark.parametrize("args,msg", [
    (("--fabric", "FAB"), "give --root DIR, --model JSON or --live"),
    (("--host", "gpu01"), "give --fabric FILE or --rail-map FILE"),
])
def test_usage_errors(tmp_path, args, msg):
    f = generate(tmp_path, "gpu01", "dual-plane.txt")
    args = tuple(str(PLANES / "dual-plane.txt") if a == "FAB" else a for a in args)
    r = run_cli("topo", "validate", str(f), *args)
    assert r.returncode == 2 and msg in r.stderr


def test_unknown_host_and_bad_fabric_are_input_errors(tmp_path):
    f = generate(tmp_path, "gpu01", "dual-plane.txt")
    r = run_cli("topo", "validate", str(f), "--root", DGX, "--fabric", str(PLANES / "dual-plane.txt"), "--host",
                "nosuchhost")
    assert r.returncode == 3 and "has no rail port of host nosuchhost" in r.stderr and "--host NAME" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) <= 2
    bad = tmp_path / "fabric.txt"
    bad.write_bytes(b"\x00\xffnot a fabric\n")
    r = run_cli("topo", "validate", str(f), "--root", DGX, "--fabric", str(bad))
    assert r.returncode == 3 and "Traceback" not in r.stderr


@pytest.mark.parametrize("rail,plane", [("-1", "0"), ("3abc", "0"), ("0", "99999999999999999999"), ("", ""),
                                        ("0x1", "0"), ("1e0", "-0")])
def test_hostile_ids_are_nts090_not_a_crash(tmp_path, rail, plane):
    # ids NCCL does not read as written: NTS090 says so, the host and fabric checks skip them
    f = generate(tmp_path, "gpu01", "dual-plane.txt")
    text = f.read_text()
    f.write_text(text.replace('rail="0" plane="0"', f'rail="{rail}" plane="{plane}"', 1))
    rc, doc, _ = validate(str(f), "--root", DGX, "--fabric", str(PLANES / "dual-plane.txt"), "--host", "gpu01")
    assert not [x for x in rules(doc) if x["line"] == line_of(f, 'name="mlx5_0"') and x["rule"] != "NTH042"]
