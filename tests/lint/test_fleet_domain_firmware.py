"""GPU firmware (VBIOS, InfoROM image) per NVLink domain: recorded by the probe from NVML (``nvml.json``
``vbios_version`` / ``inforom_image_version``), from ``nvidia-smi -q`` without NVML, and held by FLT012 across the
members of one domain (cluster UUID + clique id). Through the probe, the API (fleet facts of tray models) and
``fleet lint`` on an inventory of models and on the two-rack fixture."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from conftest import HOSTS, REPO, run_cli
from ncclctl.errors import InputError
from ncclctl.lint.fleet import FleetCtx
from ncclctl.lint.rules_fleet import fleet_facts, fleet_nvlink_domain
from ncclctl.probe import probe
from tests.lint.test_fleet_nvlink import RACK_A, RACK_B, inventory_of, tray
from tests.probe.test_nvlink_domain import _smi

NEW, OLD = "97.00.B9.00.76", "97.00.82.00.5F"
ROM = "G548.0201.00.06"
BUSES = ["00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"]
FLEET = REPO / "fixtures" / "fleet" / "gb200-two-racks"


def fw_tray(rack, t, uuid=RACK_A, clique=1, vbios=None, imex_nodes=None):
    """A tray model whose GPUs run ``vbios`` ({GPU index: version}, default NEW on each)."""
    n = tray(rack, t, uuid, clique, imex_nodes=imex_nodes)
    vbios = vbios or {}
    gpus = tuple(dataclasses.replace(g, vbios_version=vbios.get(g.index, NEW), inforom_image_version=ROM)
                 for g in n.gpus)
    return dataclasses.replace(n, gpus=gpus)


def hits(nodes):
    fctx = FleetCtx(hosts=[(n.hostname, fleet_facts(n)) for n in nodes])
    return [h for h in fleet_nvlink_domain(fctx, {"max_trays": 18}) if "VBIOS" in h.message or "InfoROM" in h.message]


# ---------------------------------------------------------------------------------------------- probe


@pytest.fixture()
def gb(tmp_path):
    root = tmp_path / "gb"
    shutil.copytree(HOSTS / "gb200-nvl72", root, symlinks=True)
    return root


def _set_nvml(root, fn):
    doc = json.loads((root / "nvml.json").read_text())
    for dev in doc["devices"]:
        fn(dev)
    (root / "nvml.json").write_text(json.dumps(doc))


def test_recorded_nvml_firmware_reaches_the_model(gb):
    _set_nvml(gb, lambda d: d.update(vbios_version=NEW, inforom_image_version=ROM))
    n = probe(str(gb))
    assert {(g.vbios_version, g.inforom_image_version) for g in n.gpus} == {(NEW, ROM)}
    doc = json.loads(run_cli("probe", "--root", str(gb), "--format", "json").stdout)
    assert {g["vbios_version"] for g in doc["gpus"]} == {NEW}
    facts = json.loads(run_cli("facts", "--root", str(gb)).stdout)
    assert facts["gpu"]["nvlink_domain"]["vbios_versions"] == [NEW]
    import jsonschema

    jsonschema.validate(facts, json.loads((REPO / "schemas" / "facts.schema.json").read_text()))
    # a snapshot made before the fields existed: no entry, nothing unavailable
    assert all(g.vbios_version is None for g in probe(str(HOSTS / "gb200-nvl72")).gpus)


def test_snapshot_keeps_the_firmware(gb, tmp_path):
    from ncclctl.probe.snapshot import snapshot

    _set_nvml(gb, lambda d: d.update(vbios_version=NEW, inforom_image_version=ROM))
    out = tmp_path / "snap"
    node = snapshot(str(out), root=str(gb)).node
    assert probe(str(out)) == node and {g.vbios_version for g in node.gpus} == {NEW}


def test_nvml_errors_are_reported_per_gpu(gb):
    _set_nvml(gb, lambda d: d.update(vbios_version={"error": "NoPermission"},
                                     inforom_image_version={"error": "NotSupported"}))
    n = probe(str(gb))
    assert all(g.vbios_version is None and g.inforom_image_version is None for g in n.gpus)
    gaps = {(u.reason, u.detail) for u in n.unavailable if u.source == "nvml"}
    assert ("NoPermission", "GPU 0 vbios_version") in gaps
    assert not any("inforom" in (d or "") for _, d in gaps)  # NotSupported: a GPU without it, not a gap


@pytest.mark.parametrize("value", [["97.00"], "97.00\x00\x07", "9" * 200, 97])
def test_bad_recorded_firmware_is_an_input_error(gb, value):
    _set_nvml(gb, lambda d: d.update(vbios_version=value))
    with pytest.raises(InputError, match="vbios_version must be a version string"):
        probe(str(gb))
    r = run_cli("probe", "--root", str(gb))
    assert r.returncode == 3 and "nvml.json" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_without_nvml_smi_q_gives_the_firmware(gb):
    (gb / "nvml.json").unlink()
    text = _smi(BUSES).replace("    Product Name                          : NVIDIA GB200\n",
                               "    Product Name                          : NVIDIA GB200\n"
                               f"    VBIOS Version                         : {NEW}\n"
                               "    Inforom Version\n"
                               f"        Image Version                     : {ROM}\n"
                               "        OEM Object                        : 2.1\n"
                               "        ECC Object                        : N/A\n")
    (gb / "cmd/nvidia-smi_-q.txt").write_text(text)
    n = probe(str(gb))
    assert [(g.source, g.vbios_version, g.inforom_image_version, g.fabric_source) for g in n.gpus] == \
        [("pci", NEW, ROM, "nvidia-smi")] * 4


def test_smi_q_firmware_parser_edges():
    from ncclctl.parsers.smi_query import parse_nvidia_smi_q_fabric

    text = ("GPU 00000008:01:00.0\n    VBIOS Version : N/A\n    Inforom Version\n        Image Version : N/A\n"
            "    Fabric\n        State : Completed\n"
            "GPU 00000009:01:00.0\n    Inforom Version\n        OEM Object : 2.1\n    VBIOS Version : 97.00.B9.00.76\n"
            "    Fabric\n        State : Completed\n        Image Version : 1\n")
    a, b = parse_nvidia_smi_q_fabric(text)
    assert (a.vbios_version, a.inforom_image_version) == (None, None)
    # the VBIOS line after the Inforom section is the GPU's; an "Image Version" inside Fabric is not the InfoROM's
    assert (b.vbios_version, b.inforom_image_version) == (NEW, None)


class _NVMLError(Exception):
    pass


class _NotSupported(_NVMLError):
    pass


_NotSupported.__name__ = "NVMLError_NotSupported"


class _FakeNvml:
    """pynvml as the probe calls it: firmware answered (bytes, as pynvml before 11.5 returns), the rest NotSupported."""
    NVMLError = _NVMLError

    def nvmlDeviceGetVbiosVersion(self, h):  # noqa: N802
        return NEW.encode()

    def nvmlDeviceGetInforomImageVersion(self, h):  # noqa: N802
        raise _NotSupported()

    def __getattr__(self, name):
        if not name.startswith("nvmlDevice") or "FabricInfo" in name or "PlatformInfo" in name:
            raise AttributeError(name)

        def fail(*args):
            raise _NotSupported()
        return fail


def test_live_nvml_records_the_firmware():
    from ncclctl.probe.nvml import LiveNvml

    dev = LiveNvml()._device(_FakeNvml(), lambda fn, *a: _q(fn, *a), 0, object())
    assert dev["vbios_version"] == NEW and dev["inforom_image_version"] == {"error": "NotSupported"}


def _q(fn, *args):
    try:
        return fn(*args)
    except _NVMLError as exc:
        return {"error": type(exc).__name__.removeprefix("NVMLError_")}


# ---------------------------------------------------------------------------------------------- FLT012


def test_odd_tray_named_with_its_gpu_against_the_majority():
    nodes = [fw_tray(1, t, vbios={2: OLD} if t == 12 else None) for t in range(1, 19)]
    nodes += [fw_tray(2, t, RACK_B, 32766, vbios={0: OLD, 1: OLD, 2: OLD, 3: OLD}) for t in range(1, 19)]
    (h,) = hits(nodes)  # rack 2 all on OLD: agrees within itself
    assert h.subject == "r1t12" and h.severity.value == "warning"
    assert f"GPU VBIOS {OLD} on GPU 2 differs from its NVLink domain's majority {NEW} (17 of 18 members; " \
           f"cluster {RACK_A} clique 1)" in h.message
    assert h.evidence == (f"VBIOS {NEW}: r1t[01-18]", f"VBIOS {OLD}: r1t12")
    assert "nvfwupd" in h.fix and NEW in h.fix


def test_inforom_split_is_said_the_same_way():
    nodes = [fw_tray(1, t) for t in range(1, 4)]
    odd = nodes[2]
    nodes[2] = dataclasses.replace(odd, gpus=tuple(dataclasses.replace(g, inforom_image_version="G548.0201.00.04")
                                                   if g.index == 1 else g for g in odd.gpus))
    (h,) = hits(nodes)
    assert h.subject == "r1t03"
    assert f"GPU InfoROM image G548.0201.00.04 on GPU 1 differs from its NVLink domain's majority {ROM} (2 of 3" \
        in h.message
    assert h.evidence == (f"InfoROM image {ROM}: r1t[01-03]", "InfoROM image G548.0201.00.04: r1t03")


def test_tie_is_one_warning_on_the_domain():
    (h,) = hits([fw_tray(1, 1), fw_tray(1, 2, vbios={0: OLD, 1: OLD, 2: OLD, 3: OLD})])
    assert h.subject == "r1t01"
    assert f"2 GPU VBIOS versions with no majority ({OLD} on r1t02; {NEW} on r1t01)" in h.message


def test_firmware_differs_only_between_domains_or_is_unknown():
    same = [fw_tray(1, t) for t in range(1, 4)]
    other = [fw_tray(2, t, RACK_B, 32766, vbios={i: OLD for i in range(4)}) for t in range(1, 4)]
    assert hits(same + other) == []
    assert hits([tray(1, 1, RACK_A, 1), fw_tray(1, 2)]) == []  # a host with no version: left out
    # ... so a split inside the one tray that reports versions is said on that tray
    (h,) = hits([tray(1, 1, RACK_A, 1), fw_tray(1, 2, vbios={0: OLD})])
    assert h.subject == "r1t02" and "no majority" in h.message


def test_cli_fleet_lint_fails_then_passes(tmp_path):
    imex = [f"10.20.1.{10 + i}" for i in (1, 2, 3)]
    nodes = [fw_tray(1, t, imex_nodes=imex, vbios={3: OLD} if t == 3 else None) for t in (1, 2, 3)]
    r = run_cli("fleet", "lint", "--inventory", inventory_of(tmp_path, nodes), "--rule", "FLT012", "--fail-on",
                "warning", "--format", "json")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    (f,) = [f for h in json.loads(r.stdout)["hosts"] for f in h["findings"]]
    assert f["subject"] == "r1t03" and f"{OLD} on GPU 3" in f["message"] and "r1t[01-03]" in json.dumps(f)
    nodes[2] = fw_tray(1, 3, imex_nodes=imex)
    ok = run_cli("fleet", "lint", "--inventory", inventory_of(tmp_path, nodes), "--rule", "FLT012", "--fail-on",
                 "warning")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_two_rack_fixture_names_the_swapped_board():
    r = run_cli("fleet", "lint", "--inventory", str(FLEET / "inventory.yaml"), "--rule", "FLT012", "--format", "json")
    found = [f for h in json.loads(r.stdout)["hosts"] for f in h["findings"] if "VBIOS" in f["message"]]
    assert [f["subject"] for f in found] == ["gb200-r02-t12"], found
    assert f"{OLD} on GPU 2" in found[0]["message"] and "(17 of 18 members" in found[0]["message"]
    assert found[0]["evidence"] == [f"VBIOS {NEW}: gb200-r02-t[01-18]", f"VBIOS {OLD}: gb200-r02-t12"]


def test_facts_document_round_trip_keeps_the_firmware(tmp_path):
    from ncclctl.lint.fleet import facts_from_json, facts_to_json

    facts = fleet_facts(fw_tray(1, 1, vbios={2: OLD}))
    assert facts["nvlink"]["vbios"] == [[OLD, [2]], [NEW, [0, 1, 3]]]
    assert facts_from_json(facts_to_json(facts))["nvlink"]["vbios"] == facts["nvlink"]["vbios"]
