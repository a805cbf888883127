"""Multi-node NVLink domain facts: the IMEX parsers, NVML fabric/platform info from nvml.json, the probe's text,
``probe --format json`` and ``facts``; bad input is a clear error."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import HOSTS, run_cli
from ncclctl.errors import InputError, ParseError
from ncclctl.parsers.imex import parse_fib_trie_local, parse_imex_config, parse_imex_ctl, parse_nodes_config
from ncclctl.probe import probe
from ncclctl.probe.nvml import format_uuid

CTL = """Connectivity Table Legend:
I - Invalid - Node wasn't reachable, no connection status available
C - Connected - Ready for operation

11/20/2026 12:00:00.000
Nodes:
Node #0   - 10.0.0.1        - READY                - Version: 580.65.06
Node #1   - 10.0.0.2        - UNAVAILABLE
Node #2   - gb-t03          - READY                - Version: 580.65.06

 Nodes From\\To  0   1   2
       0        C   I   C
Domain State: DEGRADED
"""


def test_imex_ctl_text():
    out = parse_imex_ctl(CTL)
    assert out.domain_state == "DEGRADED"
    assert [(n.index, n.address, n.status, n.version) for n in out.nodes] == [
        (0, "10.0.0.1", "READY", "580.65.06"), (1, "10.0.0.2", "UNAVAILABLE", None), (2, "gb-t03", "READY", "580.65.06")]


def test_imex_ctl_json():
    doc = {"nodes": {"0": {"host": "10.0.0.1", "status": "READY", "version": "580.65.06"},
                     "1": {"host": "10.0.0.2", "status": "UNAVAILABLE"}}, "status": "UP"}
    out = parse_imex_ctl(json.dumps(doc))
    assert out.domain_state == "UP" and [n.address for n in out.nodes] == ["10.0.0.1", "10.0.0.2"]


@pytest.mark.parametrize("text", ["", "garbage\n", "{\"nodes\": [1]}"])
def test_imex_ctl_bad(text):
    with pytest.raises(ParseError):
        parse_imex_ctl(text)


def test_nodes_config_and_config():
    assert parse_nodes_config("# rack 1\n10.0.0.1\n\n10.0.0.2  # tray 2\nfe80::1\ngb-t03\n") == (
        "10.0.0.1", "10.0.0.2", "fe80::1", "gb-t03")
    with pytest.raises(ParseError, match="not an IP address"):
        parse_nodes_config("10.0.0.1\n10.0.0.300\n", source="n.cfg")
    cfg = parse_imex_config("# c\nIMEX_NODE_CONFIG_FILE=/etc/x.cfg\nSERVER_PORT=50000\n")
    assert cfg["IMEX_NODE_CONFIG_FILE"] == "/etc/x.cfg"


def test_fib_trie_local_addresses():
    text = (HOSTS / "gb200-nvl72" / "proc/net/fib_trie").read_text()
    assert parse_fib_trie_local(text) == ("10.20.1.14",)


def test_uuid_bytes_canonical():
    assert format_uuid(bytes(range(16))) == "00010203-0405-0607-0809-0a0b0c0d0e0f"


def test_probe_model():
    n = probe(str(HOSTS / "gb200-nvl72"))
    g = n.gpus[0]
    assert (g.fabric_state, g.fabric_status, g.fabric_clique_id, g.fabric_health_mask, g.fabric_health_summary) == (
        3, 0, 1, 0xAA, 1)
    assert g.fabric_cluster_uuid == "6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31"
    assert g.platform is not None and g.platform.tray_index == 4 and g.platform.module_id == 1
    imex = n.facts.imex
    assert imex is not None and imex.service == "active" and imex.channels == (0,) and imex.channels_major == 234
    assert len(imex.nodes or ()) == 18 and imex.domain_state == "UP" and imex.local_addresses == ("10.20.1.14",)
    assert probe(str(HOSTS / "gb200-nvl72-no-imex-channel")).facts.imex.channels is None
    assert probe(str(HOSTS / "gb200-nvl72-imex-down")).facts.imex.service == "failed"
    # Nodes without a multi-node fabric read none of it.
    assert probe(str(HOSTS / "dgx-h100")).facts.imex is None


def test_cli_probe_text_json_and_facts():
    r = run_cli("probe", "--root", str(HOSTS / "gb200-nvl72"))
    assert r.returncode == 0, r.stderr
    assert "nvlink    multi-node domain cluster 6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31 clique 1; fabric COMPLETED; " \
           "health mask 0xaa" in r.stdout
    assert "imex      service active; node list 18 node(s); domain UP; channels channel0" in r.stdout
    doc = json.loads(run_cli("probe", "--root", str(HOSTS / "gb300-nvl72"), "--format", "json").stdout)
    assert {g["fabric_clique_id"] for g in doc["gpus"]} == {32766}
    facts = json.loads(run_cli("facts", "--root", str(HOSTS / "gb200-nvl72-no-imex-channel")).stdout)
    dom = facts["gpu"]["nvlink_domain"]
    assert dom["clique_ids"] == [1] and dom["health_masks"] == ["0xaa"] and dom["vbios_versions"] == []
    assert dom["imex"] == {"service": "active", "nodes": 18, "in_node_list": True, "channels": None,
                           "domain_state": "UP"}
    facts = json.loads(run_cli("facts", "--root", str(HOSTS / "dgx-h100")).stdout)
    assert facts["gpu"]["nvlink_domain"] is None


@pytest.mark.parametrize("patch,needle", [
    ({"cluster_uuid": "not-a-uuid"}, "is not a UUID"),
    ({"clique_id": -1}, "unsigned 32-bit"),
    ({"health_mask": "0xaa"}, "unsigned 32-bit"),
])
def test_bad_recorded_fabric_is_a_clear_error(tmp_path, patch, needle):
    root = tmp_path / "gb"
    shutil.copytree(HOSTS / "gb200-nvl72", root, symlinks=True)
    doc = json.loads((root / "nvml.json").read_text())
    doc["devices"][0]["fabric"].update(patch)
    (root / "nvml.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match=needle):
        probe(str(root))
    r = run_cli("probe", "--root", str(root))
    assert r.returncode not in (0, 1) and needle in r.stderr and "Traceback" not in r.stderr


SMI_Q = """
==============NVSMI LOG==============

Timestamp                                 : Fri Nov 20 12:00:00 2026
Driver Version                            : 580.65.06

Attached GPUs                             : 4
{gpus}
"""

SMI_GPU = """GPU {bus}
    Product Name                          : NVIDIA GB200
    Fabric
        State                             : {state}
        Status                            : Success
        CliqueId                          : 1
        ClusterUUID                       : 6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31
        Health
            Bandwidth                     : {bw}
            Route Recovery in progress    : False
            Route Unhealthy               : False
            Access Timeout Recovery       : False
            Summary                       : Healthy
    Clocks Event Reasons
        Idle                              : Active
"""


def _smi(buses, degraded=None, state="Completed"):
    return SMI_Q.format(gpus="".join(
        SMI_GPU.format(bus=b, bw="Degraded" if b == degraded else "Full", state=state) for b in buses))


def test_smi_q_fabric_parser():
    from ncclctl.parsers.smi_query import parse_nvidia_smi_q_fabric

    (f,) = parse_nvidia_smi_q_fabric(_smi(["00000008:01:00.0"]))
    assert (f.state, f.status, f.clique_id, f.health_mask, f.health_summary) == (3, 0, 1, 0xAA, 1)
    (f,) = parse_nvidia_smi_q_fabric(_smi(["00000008:01:00.0"], degraded="00000008:01:00.0"))
    assert f.health_mask == 0xA9
    with pytest.raises(ParseError, match="unknown Fabric State"):
        parse_nvidia_smi_q_fabric(_smi(["00000008:01:00.0"], state="Sideways"))


def test_without_nvml_the_recorded_smi_q_gives_the_fabric(tmp_path):
    root = tmp_path / "gb"
    shutil.copytree(HOSTS / "gb200-nvl72", root, symlinks=True)
    (root / "nvml.json").unlink()
    buses = ["00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"]
    (root / "cmd/nvidia-smi_-q.txt").write_text(_smi(buses, degraded="00000018:01:00.0"))
    n = probe(str(root))
    assert [(g.source, g.fabric_source, g.fabric_clique_id) for g in n.gpus] == [("pci", "nvidia-smi", 1)] * 4
    assert n.gpus[2].fabric_health_mask == 0xA9
    r = run_cli("lint", "--root", str(root), "--rule", "NVL002", "--format", "json")
    (f,) = json.loads(r.stdout)["findings"]
    assert f["subject"] == "GPU2" and "(nvidia-smi)" not in f["message"]


# As driver 580.159.04 prints it on a standalone H200 (checked on the device machine): Summary first, every value
# N/A, Incorrect Configuration and Partition Assigned present.
SMI_580_NA = """GPU 00000000:19:00.0
    Product Name                                       : NVIDIA H200
    GPU Fabric GUID                                    : N/A
    Fabric
        State                                          : N/A
        Status                                         : N/A
        CliqueId                                       : N/A
        ClusterUUID                                    : N/A
        Health
            Summary                                    : N/A
            Bandwidth                                  : N/A
            Route Recovery in progress                 : N/A
            Route Unhealthy                            : N/A
            Access Timeout Recovery                    : N/A
            Incorrect Configuration                    : N/A
            Partition Assigned                         : N/A
    Processes                                          : None
"""


def test_smi_q_580_layout_not_supported():
    from ncclctl.parsers.smi_query import parse_nvidia_smi_q_fabric

    (f,) = parse_nvidia_smi_q_fabric(SMI_580_NA)
    assert (f.state, f.status, f.clique_id, f.cluster_uuid, f.health_mask, f.health_summary) == (0, None, None, None,
                                                                                                  0, 0)
    text = SMI_580_NA.replace("State                                          : N/A",
                              "State                                          : Completed")
    text = text.replace("Partition Assigned                         : N/A",
                        "Partition Assigned                         : False")
    (f,) = parse_nvidia_smi_q_fabric(text)
    assert f.state == 3 and f.health_mask == 2 << 12
