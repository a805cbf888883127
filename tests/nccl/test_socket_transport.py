"""NCCL's Socket transport: which interfaces NCCL takes, where it places them, and what it builds over them.

The interface rules follow NCCL's ``misc/socket.cc`` (``ncclFindInterfaces``), ``os/linux.cc``
(``ncclOsFindInterfaces``), ``transport/net_socket.cc`` (properties) and ``graph/xml.cc`` (``ncclTopoFillNet``) at
NCCL 2.30.7 (commit 5067397c). The end-to-end expected values are what real NCCL 2.28.9+cuda13.0 (PyTorch 2.11.0)
printed on a real node: one NVIDIA H200 in a Firecracker VM, driver 580.159.04 (open kernel module), CUDA 13.0,
two processes with NCCL_HOSTID=nodeA/nodeB over NET/Socket/0 (``../shared/real/h200-vm``, 2026-11-27).
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from conftest import HOSTS, REPO, run_cli
from ncclctl.model import NetDev
from ncclctl.nccl.transport import find_interfaces, socket_devices, transport

REAL = REPO.parent / "shared" / "real" / "h200-vm"
VM = str(HOSTS / "h200-vm-socket")


def nd(name, idx, state="up", inet=("inet",), flags=0x1003, speed=None, device=None):
    return NetDev(name=name, ifindex=idx, operstate=state, inet=inet, flags=flags, speed_mbps=speed,
                  device_name=device)


HOST = [nd("lo", 1, "unknown", ("inet",), 0x9), nd("eth0", 2, speed=25000, device="0000:17:00.0"),
        nd("docker0", 3, "down", ("inet",), 0x1003), nd("ib0", 4, inet=("inet6",)), nd("eth1", 5, inet=("inet6",)),
        nd("veth9", 6)]


def names(devs):
    return [d.name for d in devs]


@pytest.mark.parametrize("env,expect", [
    ({}, ["ib0"]),                                              # ib* first, even IPv6-only
    ({"NCCL_SOCKET_IFNAME": "eth"}, ["eth0", "eth1"]),          # prefix; IPv4 interfaces before IPv6-only ones
    ({"NCCL_SOCKET_IFNAME": "=eth"}, []),                       # exact names only
    ({"NCCL_SOCKET_IFNAME": "=eth1"}, ["eth1"]),
    ({"NCCL_SOCKET_IFNAME": "^ib,lo"}, ["eth0", "veth9", "eth1"]),  # docker0 is down: never listed
    ({"NCCL_SOCKET_IFNAME": "e"}, ["ib0"]),                     # one character: ignored, automatic choice
    ({"NCCL_SOCKET_IFNAME": "eth", "NCCL_SOCKET_FAMILY": "AF_INET6"}, ["eth1"]),
    ({"NCCL_SOCKET_IFNAME": "lo"}, ["lo"]),
])
def test_find_interfaces_follows_nccl(env, expect):
    got, _, _ = find_interfaces(HOST, env)
    assert names(got) == expect


def test_automatic_order_of_fallbacks():
    no_ib = [d for d in HOST if d.name != "ib0"]
    assert names(find_interfaces(no_ib, {})[0]) == ["eth0", "veth9", "eth1"]
    only_lo_docker = [nd("lo", 1, "unknown", ("inet",), 0x9), nd("docker0", 2)]
    assert names(find_interfaces(only_lo_docker, {})[0]) == ["docker0"]
    assert names(find_interfaces(only_lo_docker[:1], {})[0]) == ["lo"]
    # IFF_UP cleared: not RUNNING whatever the operational state says.
    assert find_interfaces([nd("eth0", 1, flags=0x1002)], {})[0] == []
    # No address of either family: not listed.
    assert find_interfaces([nd("eth0", 1, inet=())], {})[0] == []


def test_socket_properties_speed_and_placement():
    devs, _, _ = socket_devices([nd("eth0", 2, speed=-1, device="virtio2"), nd("eth1", 3, speed=100000,
                                 device="0000:17:00.1"), nd("bond0", 4, speed=None)],
                                {"NCCL_SOCKET_IFNAME": "eth,bond"})
    assert [(d.name, d.dev, d.speed, d.speed_defaulted, d.busid) for d in devs] == [
        ("eth0", 0, 10000, True, None), ("eth1", 1, 100000, False, "0000:17:00.1"), ("bond0", 2, 10000, True, None)]
    assert "not a PCI function" in devs[0].attach_note and "no device" in devs[2].attach_note


def test_transport_choice():
    class Node:
        netdevs = HOST
    ports = frozenset({("mlx5_0", 1)})
    assert transport(Node, {}, ports).name == "IB"
    assert transport(Node, {}, frozenset()).name == "Socket"
    assert transport(Node, {"NCCL_IB_DISABLE": "1"}, ports).name == "Socket"
    assert transport(Node, {"NCCL_NET": "socket"}, ports).name == "Socket"
    assert transport(Node, {"NCCL_NET": "IB"}, frozenset()).name == "none"
    assert transport(Node, {"NCCL_NET": "AWS Libfabric"}, ports).name == "external"
    Node.netdevs = []
    assert transport(Node, {}, ports).name == "none"  # the IB plugin needs an IP interface for its OOB too


def _check_real_node_prediction(doc: dict) -> None:
    """What NCCL 2.28.9 did on the real H200 VM at 2 nodes (its INFO log and graph dump)."""
    assert doc["transport"]["name"] == "Socket"
    assert [(n["dev"], n["name"], n["speed_gbps"], n["gdr"]) for n in doc["nets"]] == [(0, "eth0", 10.0, False)]
    ring, tree = doc["graphs"]["ring"], doc["graphs"]["tree"]
    assert (ring["nchannels"], ring["bw_intra"], ring["bw_inter"], ring["type_intra"], ring["type_inter"]) == \
        (1, 1.2, 1.2, "LOC", "PHB")
    assert (tree["nchannels"], tree["bw_intra"], tree["bw_inter"], tree["type_intra"], tree["type_inter"]) == \
        (1, 2.4, 1.2, "LOC", "PHB")
    assert doc["graphs"]["channels"] == 2
    table = {(a, p): (f"{v['gbps']:.1f}" if v["enabled"] else "0.0")
             for a, row in doc["graphs"]["allreduce"].items() for p, v in row.items()}
    assert table == {("ring", "LL"): "0.6", ("ring", "LL128"): "0.0", ("ring", "Simple"): "1.2",
                     ("tree", "LL"): "0.2", ("tree", "LL128"): "0.0", ("tree", "Simple"): "0.9"}
    assert doc["gpus"][0]["gdr"]["eth0"]["write"] == "Disabled"


def test_predict_on_the_socket_vm_fixture_matches_real_nccl():
    res = run_cli("topo", "predict", "--root", VM, "-N", "2", "--format", "json")
    assert res.returncode == 0, res.stderr
    _check_real_node_prediction(json.loads(res.stdout))
    text = run_cli("topo", "predict", "--root", VM, "-N", "2").stdout
    assert "Network transport: Socket" in text and "Defaulting" not in text
    assert "speed unreadable: NCCL defaults to 10 Gb/s" in text and "not a PCI function" in text
    assert "socket device: NCCL's Socket transport sends from host memory" in text


def test_generate_writes_the_socket_net_where_nccl_detects_it(tmp_path):
    out = tmp_path / "vm.xml"
    res = run_cli("topo", "generate", "--root", VM, "-o", str(out))
    assert res.returncode == 0, res.stderr
    xml = out.read_text()
    # Under the first CPU, after the GPU's PCI device, as NCCL's own dump on the node has it.
    assert '<nic>\n      <net name="eth0" dev="0" speed="10000" port="0"' in xml
    assert "pairing GPU i with NIC i" not in res.stderr and "no RDMA NIC" in res.stderr
    val = run_cli("topo", "validate", str(out), "--root", VM)
    assert val.returncode == 0, val.stdout + val.stderr


def test_ib_disabled_on_a_dgx_uses_its_ipoib_interfaces_under_their_pci_functions():
    res = run_cli("topo", "predict", "--root", str(HOSTS / "dgx-h100"), "-N", "2", "--env", "NCCL_IB_DISABLE=1",
                  "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["transport"]["name"] == "Socket"
    assert sorted(n["name"] for n in doc["nets"]) == sorted(
        ["ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0", "ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0"])
    assert all(not n["gdr"] for n in doc["nets"])
    # Each GPU's nearest socket device shares its PCIe switch: the path is PHB only because NCCL routes a non-GDR
    # NET through the CPU; a device attached to the wrong CPU would show SYS.
    for g in doc["gpus"]:
        assert all(doc["gpus"][g["rank"]]["paths_to_nets"][n]["type"] == "PHB" for n in g["nets_used"])


@pytest.mark.skipif(not (REAL / "snapshot-redacted.tar.gz").exists(), reason="../shared/real is not beside the checkout")
def test_real_node_snapshot_predicts_what_nccl_did(tmp_path):
    """The real node's own snapshot (taken by f2f76a0, procfs files cut at a page) still predicts NCCL's choice."""
    res = run_cli("topo", "predict", "--root", str(REAL / "snapshot-redacted.tar.gz"), "-N", "2", "--format", "json")
    assert res.returncode == 0, res.stderr
    _check_real_node_prediction(json.loads(res.stdout))


@pytest.mark.skipif(not (REAL / "snapshot-redacted.tar.gz").exists(), reason="../shared/real is not beside the checkout")
def test_real_logs_checked_against_the_real_snapshot():
    """``log check LOG --root SNAPSHOT`` used to exit 70 (KeyError in the prediction's JSON: no NET path)."""
    for log in ("nccl-2proc-socket.log", "nccl-1rank.log"):
        res = run_cli("log", "check", str(REAL / log), "--root", str(REAL / "snapshot-redacted.tar.gz"))
        assert res.returncode in (0, 1), res.stderr
        assert "internal error" not in res.stderr
