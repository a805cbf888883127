"""``nvidia-smi nvlink --status`` as the recorded fallback for NVLink state when NVML says nothing: without NVML
(the PCI view) and when NVML answers no link's state; matched by UUID, else index; through the probe, ``lint``
(GPU001) and bad recorded input (tmp copies of the gb200-nvl72 tray)."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import HOSTS, run_cli
from ncclctl.errors import InputError
from ncclctl.probe import probe
from tests.probe.test_nvlink_domain import _smi

SLUG = "cmd/nvidia-smi_nvlink_--status.txt"
BUSES = ["00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"]


def _status(uuids, inactive=(), speed="53.125"):
    """18 NVLink5 links per GPU (GB200: 53.125 GB/s per direction); ``inactive``: (GPU index, link) pairs."""
    out = []
    for i, uuid in enumerate(uuids):
        out.append(f"GPU {i}: NVIDIA GB200 (UUID: {uuid})")
        out += [f"\t Link {k}: " + ("<inactive>" if (i, k) in inactive else f"{speed} GB/s") for k in range(18)]
    return "\n".join(out) + "\n"


@pytest.fixture()
def gb(tmp_path):
    root = tmp_path / "gb"
    shutil.copytree(HOSTS / "gb200-nvl72", root, symlinks=True)
    return root


def _uuids(root):
    return [d["uuid"] for d in json.loads((HOSTS / "gb200-nvl72" / "nvml.json").read_text())["devices"]]


def _silence_nvml_links(root):
    doc = json.loads((root / "nvml.json").read_text())
    for dev in doc["devices"]:
        dev["nvlinks"] = [{"link": k, "state": {"error": "NoPermission"}} for k in range(18)]
    (root / "nvml.json").write_text(json.dumps(doc))


def test_without_nvml_the_recorded_status_gives_the_links(gb):
    (gb / "nvml.json").unlink()
    (gb / "cmd/nvidia-smi_-q.txt").write_text(_smi(BUSES))  # the fabric: registered with a multi-node domain
    (gb / SLUG).write_text(_status(["GPU-x0", "GPU-x1", "GPU-x2", "GPU-x3"], inactive={(2, 5)}))
    n = probe(str(gb))
    assert [(g.source, len(g.nvlinks), len(g.active_nvlinks)) for g in n.gpus] == \
        [("pci", 18, 18), ("pci", 18, 18), ("pci", 18, 17), ("pci", 18, 18)]
    assert {lk.remote_type for g in n.gpus for lk in g.nvlinks} == {"nvswitch"}
    assert n.gpus[2].nvlinks[5].active is False and n.gpus[2].nvlinks[5].version is None


def test_snapshot_records_the_status_and_probes_identically(gb, tmp_path):
    from ncclctl.probe.snapshot import snapshot

    _silence_nvml_links(gb)
    (gb / SLUG).write_text(_status(_uuids(gb), inactive={(3, 17)}))
    out = tmp_path / "snap"
    result = snapshot(str(out), root=str(gb))
    assert (out / SLUG).read_text() == (gb / SLUG).read_text()  # the fallback's output is kept in the snapshot
    assert probe(str(out)) == result.node == probe(str(gb))
    assert [len(g.active_nvlinks) for g in result.node.gpus] == [18, 18, 18, 17]


def test_without_nvml_or_status_nothing_is_invented(gb):
    (gb / "nvml.json").unlink()
    n = probe(str(gb))
    assert all(g.nvlinks == () for g in n.gpus)
    assert not any(u.source.startswith("nvidia-smi nvlink") for u in n.unavailable)  # optional: no marker


def test_nvml_silent_links_filled_by_uuid_and_lint_sees_them(gb):
    _silence_nvml_links(gb)
    before = run_cli("lint", "--root", str(gb), "--rule", "GPU001", "--format", "json")
    assert before.returncode == 1, before.stdout + before.stderr  # no NVLink known: 0 of 18
    uuids = _uuids(gb)
    # listed in another order than NVML's: the UUIDs place them
    text = _status(uuids, inactive={(1, 7)})
    blocks = text.split("GPU ")[1:]
    (gb / SLUG).write_text("".join("GPU " + b for b in reversed(blocks)).replace("GPU 3:", "GPU 9:"))
    n = probe(str(gb))
    assert [len(g.active_nvlinks) for g in n.gpus] == [18, 17, 18, 18]
    assert {lk.remote_type for g in n.gpus for lk in g.nvlinks} == {"nvswitch"}  # registered with the fabric
    r = run_cli("lint", "--root", str(gb), "--rule", "GPU001", "--format", "json")
    assert r.returncode == 1, r.stdout + r.stderr
    (f,) = json.loads(r.stdout)["findings"]
    assert f["subject"] == "GPU1", f
    (gb / SLUG).write_text(_status(uuids))
    ok = run_cli("lint", "--root", str(gb), "--rule", "GPU001")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_nvml_links_are_never_replaced(gb):
    (gb / SLUG).write_text(_status(_uuids(gb), inactive={(0, 0)}))
    n = probe(str(gb))
    assert all(len(g.active_nvlinks) == 18 for g in n.gpus)  # NVML answered: the status file is not read


def test_a_uuid_that_disagrees_leaves_the_gpu_alone(gb):
    _silence_nvml_links(gb)
    (gb / SLUG).write_text(_status(["GPU-a", "GPU-b", "GPU-c", "GPU-d"]))
    assert all(g.nvlinks == () for g in probe(str(gb)).gpus)


@pytest.mark.parametrize("text, needle", [
    ("GPU 0: NVIDIA GB200 (UUID: GPU-a)\n\t Link 0: fast\n\t Link 1: 53.125 GB/s\n", "unexpected line: 'Link 0: fast'"),
    ("\t Link 0: 53.125 GB/s\n", "before any 'GPU N: ...' line"),
    ("GPU 0: NVIDIA GB200\n\t Link 0: 53.125 GB/s\n\t Link 0: 53.125 GB/s\n", "listed twice"),
    ("\x00\xff" * 500, None),
])
def test_bad_recorded_status_is_an_input_error(gb, text, needle):
    _silence_nvml_links(gb)
    (gb / SLUG).write_bytes(text.encode("latin-1"))
    with pytest.raises(InputError, match=needle):
        probe(str(gb))
    r = run_cli("probe", "--root", str(gb))
    assert r.returncode == 3 and "nvidia-smi_nvlink_--status" in r.stderr and "Traceback" not in r.stderr, r.stderr
