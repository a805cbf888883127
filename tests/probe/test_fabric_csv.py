"""The ``nvidia-smi --query-gpu=...fabric... --format=csv`` fallback: parser, ``ncclctl parse fabric-csv``, and the
probe filling the GPU fabric fields NVML left empty (tmp copies of the gb200-nvl72 tray)."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import HOSTS, run_cli
from ncclctl.errors import ParseError
from ncclctl.parsers.smi_query import parse_nvidia_smi_fabric_csv
from ncclctl.probe import probe

UUID = "6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31"
BUSES = ["00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"]
SLUG = "nvidia-smi_--query-gpu+index+pci.bus_id+fabric.clusterUuid+fabric.cliqueId+fabric.state+fabric.status_--format+csv"
HEADER = "index, pci.bus_id, fabric.clusterUuid, fabric.cliqueId, fabric.state, fabric.status\n"


def _csv(rows=None, header=True):
    rows = rows or [(i, b, UUID, "1", "Completed", "Success") for i, b in enumerate(BUSES)]
    return (HEADER if header else "") + "".join(", ".join(str(c) for c in r) + "\n" for r in rows)


def test_parser_header_values_and_na():
    text = _csv([(0, BUSES[0], UUID.upper(), "1", "Completed", "Success"),
                 (1, BUSES[1], "[N/A]", "[N/A]", "In Progress", "[N/A]"),
                 (2, BUSES[2], "[Not Supported]", "[Not Supported]", "[Not Supported]", "[Not Supported]")])
    a, b, c = parse_nvidia_smi_fabric_csv(text)
    assert (a.bus_id, a.state, a.status, a.clique_id, a.cluster_uuid) == (BUSES[0], 3, 0, 1, UUID)
    assert (b.state, b.status, b.clique_id, b.cluster_uuid) == (2, None, None, None)
    assert (c.state, c.clique_id) == (None, None)
    assert parse_nvidia_smi_fabric_csv(_csv(header=False)) == parse_nvidia_smi_fabric_csv(_csv())


def test_parser_columns_by_header_in_any_order():
    text = "pci.bus_id, fabric.state, fabric.cliqueId\n00000008:01:00.0, Completed, 32766\n"
    (f,) = parse_nvidia_smi_fabric_csv(text)
    assert (f.state, f.clique_id, f.cluster_uuid, f.status) == (3, 32766, None, None)


@pytest.mark.parametrize("text, needle", [
    (HEADER + "0, 00000008:01:00.0, " + UUID + ", 1, Sideways, Success\n", "unknown fabric.state 'Sideways'"),
    (HEADER + "0, 00000008:01:00.0, not-a-uuid, 1, Completed, Success\n", "is not a UUID"),
    (HEADER + "0, 00000008:01:00.0, " + UUID + ", -1, Completed, Success\n", "not an unsigned 32-bit"),
    (HEADER + "0, 00000008:01:00.0, " + UUID + ", \u00b2, Completed, Success\n", "not an unsigned 32-bit"),
    (HEADER + "0, 00000008:01:00.0, " + UUID + ", 4294967296, Completed, Success\n", "not an unsigned 32-bit"),
    (HEADER + "0, GPU0, " + UUID + ", 1, Completed, Success\n", "is not a PCI bus id"),
    (HEADER + "0, 00000008:01:00.0\n", "expected 6 comma-separated values"),
    ("index, fabric.state\n0, Completed\n", "no pci.bus_id column"),
    ("0, 00000008:01:00.0, Completed\n", "expected a header line"),
])
def test_parser_bad_input_names_the_line(text, needle):
    with pytest.raises(ParseError, match=needle) as e:
        parse_nvidia_smi_fabric_csv(text, source="f.csv")
    assert e.value.line is not None


def test_cli_parse_kind(tmp_path):
    f = tmp_path / "fabric.csv"
    f.write_text(_csv())
    r = run_cli("parse", "fabric-csv", str(f), "--format", "json")
    assert r.returncode == 0, r.stderr
    recs = json.loads(r.stdout)["result"]
    assert [x["bus_id"] for x in recs] == BUSES and recs[0]["cluster_uuid"] == UUID and recs[0]["state"] == 3
    f.write_text(HEADER + "0, 00000008:01:00.0, " + UUID + ", 1, Sideways, Success\n")
    r = run_cli("parse", "fabric-csv", str(f))
    assert r.returncode == 3 and "Traceback" not in r.stderr
    assert f"{f}:2" in r.stderr and "Sideways" in r.stderr and "--query-gpu" in r.stderr


def _tray(tmp_path, nvml="drop"):
    root = tmp_path / "gb"
    shutil.copytree(HOSTS / "gb200-nvl72", root, symlinks=True)
    if nvml == "drop":
        (root / "nvml.json").unlink()
    else:
        doc = json.loads((root / "nvml.json").read_text())
        for d in doc["devices"]:
            d.pop("fabric")
        (root / "nvml.json").write_text(json.dumps(doc))
    return root


@pytest.mark.parametrize("nvml", ["drop", "no-fabric"])
def test_probe_fills_fabric_from_the_recorded_csv(tmp_path, nvml):
    root = _tray(tmp_path, nvml)
    # nothing recorded: no fabric facts, NVL001 has nothing to say
    assert all(g.fabric_state is None for g in probe(str(root)).gpus)
    rows = [(i, b, UUID, "1", "Completed", "Success") for i, b in enumerate(BUSES)]
    rows[1] = (1, BUSES[1], "00000000-0000-0000-0000-000000000000", "0", "In Progress", "[N/A]")
    (root / "cmd" / f"{SLUG}.txt").write_text(_csv(rows))
    n = probe(str(root))
    assert [(g.fabric_source, g.fabric_state, g.fabric_clique_id) for g in n.gpus] == [
        ("nvidia-smi", 3, 1), ("nvidia-smi", 2, 0), ("nvidia-smi", 3, 1), ("nvidia-smi", 3, 1)]
    assert n.gpus[0].fabric_cluster_uuid == UUID and n.gpus[0].fabric_health_mask is None
    # the CLI: NVL001 fails on GPU1 (not registered), passes once the CSV says Completed
    r = run_cli("lint", "--root", str(root), "--rule", "NVL001", "--format", "json")
    assert [f["subject"] for f in json.loads(r.stdout)["findings"]] == ["GPU1"], r.stdout + r.stderr
    (root / "cmd" / f"{SLUG}.txt").write_text(_csv())
    r = run_cli("lint", "--root", str(root), "--rule", "NVL001", "--format", "json")
    assert json.loads(r.stdout)["findings"] == [], r.stdout


def test_csv_only_fills_what_smi_q_and_nvml_left_empty(tmp_path):
    root = _tray(tmp_path, "keep")
    nvml = json.loads((HOSTS / "gb200-nvl72" / "nvml.json").read_text())
    (root / "nvml.json").write_text(json.dumps(nvml))
    (root / "cmd" / f"{SLUG}.txt").write_text(_csv([(i, b, UUID, "9", "In Progress", "Success")
                                                     for i, b in enumerate(BUSES)]))
    n = probe(str(root))
    assert [(g.fabric_source, g.fabric_clique_id, g.fabric_state) for g in n.gpus] == [("nvml", 1, 3)] * 4


def test_bad_recorded_csv_is_a_clear_error(tmp_path):
    root = _tray(tmp_path)
    (root / "cmd" / f"{SLUG}.txt").write_text(HEADER + "0, 00000008:01:00.0, " + UUID + ", x, Completed, Success\n")
    r = run_cli("probe", "--root", str(root))
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert SLUG in r.stderr and ":2" in r.stderr and "fabric.cliqueId" in r.stderr


def test_pasted_sample_with_its_prompt():
    r = run_cli("parse", "fabric-csv", "fixtures/outputs/fabric-csv-gb200.txt", "--format", "json")
    assert r.returncode == 0, r.stderr
    recs = json.loads(r.stdout)["result"]
    assert [(x["bus_id"], x["state"], x["status"], x["clique_id"]) for x in recs] == [
        (BUSES[0], 3, 0, 1), (BUSES[1], 2, None, 0), (BUSES[2], 3, 0, 1), (BUSES[3], 3, 0, 1)]


def test_csv_fills_only_the_gpus_nvml_said_nothing_about(tmp_path):
    root = _tray(tmp_path, "keep")
    doc = json.loads((HOSTS / "gb200-nvl72" / "nvml.json").read_text())
    doc["devices"][2]["fabric"] = {"error": "Unknown"}  # NVML failed on GPU2 only
    (root / "nvml.json").write_text(json.dumps(doc))
    (root / "cmd" / f"{SLUG}.txt").write_text(_csv([(i, b, UUID, "9", "Completed", "Success")
                                                     for i, b in enumerate(BUSES)]))
    n = probe(str(root))
    assert [(g.fabric_source, g.fabric_clique_id) for g in n.gpus] == [
        ("nvml", 1), ("nvml", 1), ("nvidia-smi", 9), ("nvml", 1)]
    doc["devices"][2]["fabric"] = {"error": "NotSupported"}  # a GPU outside any fabric: nvidia-smi is not asked
    (root / "nvml.json").write_text(json.dumps(doc))
    assert probe(str(root)).gpus[2].fabric_source is None
