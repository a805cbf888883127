"""Bad fabric input (issue 4 section 4): clear findings or input errors with file:line, never a traceback."""

from __future__ import annotations

import json

import pytest

from conftest import REPO, run_cli

IB = REPO / "fixtures" / "fabric" / "ib-small"
TOPO = (IB / "ibnetdiscover.txt").read_text()


def no_traceback(r) -> None:
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr


def write(tmp_path, name: str, text: str | bytes):
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return str(p)


@pytest.mark.parametrize("name, content, where, words", [
    ("truncated-mid-line.txt", TOPO[:3000], ":62:", "unknown link speed"),
    ("garbled.txt", TOPO.replace('[2]\t"H-043f720300000100"[1](043f720300000100)', "[2]\t##garbage##", 1), ":12:",
     "malformed switch link line"),
    ("not-a-fabric.txt", "hello world\n", ":1:", "not ibnetdiscover or iblinkinfo output"),
    ("binary.txt", b"\x00\xff\xfe\x01", ":1:", "not UTF-8"),
    ("empty.txt", "", ":", "no fabric in the file"),
], ids=["truncated", "garbled", "not-a-fabric", "binary", "empty"])
def test_unparseable_input_exits_3_with_file_and_line(tmp_path, name, content, where, words):
    path = write(tmp_path, name, content)
    for cmd in ("load", "rails", "order"):
        r = run_cli("fabric", cmd, path)
        no_traceback(r)
        assert r.returncode == 3, (cmd, r.stderr)
        assert f"{name}{where}" in r.stderr and words in r.stderr and "(fix: " in r.stderr, r.stderr
    r = run_cli("fabric", "rails", path, "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and doc["error"]["path"] == path and doc["error"]["exit_code"] == 3


def test_missing_file_directory_and_no_input(tmp_path):
    r = run_cli("fabric", "load", str(tmp_path / "nope.txt"))
    assert r.returncode == 3 and "nope.txt: no such fabric dump" in r.stderr
    r = run_cli("fabric", "load", str(tmp_path))
    assert r.returncode == 3 and "is a directory" in r.stderr
    r = run_cli("fabric", "rails")
    assert r.returncode == 2 and "give a fabric file" in r.stderr
    r = run_cli("fabric", "rails", str(IB / "ibnetdiscover.txt"), "--expect-rate", "fast")
    assert r.returncode == 2 and "--expect-rate" in r.stderr
    no_traceback(r)


def test_truncated_at_a_block_boundary_is_a_finding_not_an_error(tmp_path):
    """Cut after the leaves: HCA and spine blocks are gone, the leaves' link lines still name them."""
    lines = TOPO.splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if "rail0-spine00" in line and line.startswith("Switch"))
    path = write(tmp_path, "truncated.txt", "".join(lines[: cut - 5]))
    r = run_cli("fabric", "rails", path, "--format", "json")
    no_traceback(r)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [f["rule"] for f in doc["findings"]] == ["FAB010"]
    assert doc["hosts"] == 4 and doc["rails"] == 8 and doc["problems"] == []


def test_duplicate_guid(tmp_path):
    # gpu02's mlx5_0 carries gpu01's mlx5_0 GUID (cloned firmware): two blocks, two switch ports reach it
    path = write(tmp_path, "dup.txt", TOPO.replace("043f720300000100", "043f720300000000"))
    r = run_cli("fabric", "load", path, "--format", "json")
    no_traceback(r)
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    dup = [f for f in doc["findings"] if f["rule"] == "FAB006"]
    assert len(dup) == 2 and all(f["line"] for f in dup)
    assert any("described twice" in f["message"] for f in dup)


def test_unknown_node_descriptions(tmp_path):
    text = (TOPO.replace('"gpu03 mlx5_9"', '"MT4129 ConnectX7   Mellanox Technologies"')
            .replace('"gpu04 mlx5_0"', '"localhost mlx5_0"'))
    path = write(tmp_path, "unknown.txt", text)
    r = run_cli("fabric", "rails", path, "--format", "json")
    no_traceback(r)
    doc = json.loads(r.stdout)
    unknown = sorted(f["message"] for f in doc["findings"] if f["rule"] == "FAB007")
    assert len(unknown) == 2 and "is not '<host> <hca>'" in unknown[0] and "names no real host" in unknown[1]
    # the HCAs left out are rails the hosts lack now
    absent = {(p["host"], p["hca"], p["rail"]) for p in doc["problems"] if p["problem"] == "absent"}
    assert absent == {("gpu03", "mlx5_9", 5), ("gpu04", "mlx5_0", 0)}
    assert r.returncode == 1
    # warnings alone: exit 0 unless --fail-on warning
    only_warn = write(tmp_path, "warn.txt", TOPO.replace('"gpu03 mlx5_9"', '"gpu03 mlx5_9"'))
    assert run_cli("fabric", "load", only_warn).returncode == 0
    r = run_cli("fabric", "load", path, "--fail-on", "warning")
    assert r.returncode == 1 and "FAB007" in r.stdout


def test_hosts_unknown_to_the_inventory_and_missing_from_the_fabric(tmp_path):
    models = IB / "models"
    inv = write(tmp_path, "inv.yaml", (
        "version: 1\n"
        f"fabric: {IB / 'ibnetdiscover.txt'}\n"
        "hosts:\n"
        f"  gpu01: {{model: {models / 'gpu01.json'}}}\n"
        f"  gpu02: {{model: {models / 'gpu02.json'}}}\n"
        f"  gpu03: {{model: {models / 'gpu03.json'}}}\n"
        f"  gpu09: {{model: {REPO / 'fixtures' / 'fabric' / 'roce-small' / 'models' / 'roce01.json'}}}\n"))
    r = run_cli("fabric", "rails", "--inventory", inv, "--format", "json")
    no_traceback(r)
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    rules = {}
    for f in doc["findings"]:
        rules.setdefault(f["rule"], []).append(f)
    # gpu04's HCAs name a host the inventory lacks; gpu09 (in the inventory; RoCE NICs) has none in the fabric
    # one finding per host the inventory lacks, naming its HCAs
    assert len(rules["FAB007"]) == 1 and "names no inventory host" in rules["FAB007"][0]["message"]
    assert "host gpu04 (8 HCAs: mlx5_0, mlx5_3," in rules["FAB007"][0]["message"]
    assert [(f["subject"], f["line"]) for f in rules["FAB008"]] == [(inv, 7)]
    assert "gpu09" in rules["FAB008"][0]["message"]


def test_guid_mismatch_between_fabric_and_model(tmp_path):
    text = TOPO.replace("043f720300000305", "043f7203000003ff")  # gpu04 mlx5_9 got another GUID
    fab = write(tmp_path, "fabric.txt", text)
    inv = write(tmp_path, "inv.yaml", "version: 1\nfabric: fabric.txt\nhosts:\n" + "".join(
        f"  gpu0{i}: {{model: {IB / 'models' / f'gpu0{i}.json'}}}\n" for i in range(1, 5)))
    r = run_cli("fabric", "load", "--inventory", inv, "--format", "json")
    no_traceback(r)
    doc = json.loads(r.stdout)
    assert [f["rule"] for f in doc["findings"]] == ["FAB014"]
    assert "gpu04 mlx5_9" in doc["findings"][0]["message"] and doc["findings"][0]["subject"] == fab


def test_model_guid_places_an_hca_whose_description_is_stale(tmp_path):
    """The inventory says host gpu09 has the HCAs the fabric still calls gpu04's: the GUIDs decide, with FAB014."""
    inv = write(tmp_path, "inv.yaml", f"version: 1\nfabric: {IB / 'ibnetdiscover.txt'}\nhosts:\n" + "".join(
        f"  {name}: {{model: {IB / 'models' / f'{model}.json'}}}\n"
        for name, model in (("gpu01", "gpu01"), ("gpu02", "gpu02"), ("gpu03", "gpu03"), ("gpu09", "gpu04"))))
    r = run_cli("fabric", "rails", "--inventory", inv, "--format", "json")
    no_traceback(r)
    doc = json.loads(r.stdout)
    assert {f["rule"] for f in doc["findings"]} == {"FAB014"} and len(doc["findings"]) == 8
    assert doc["groups"][1]["hosts"] == ["gpu03", "gpu09"] and r.returncode == 0
