"""The node model: JSON round trip, strict decoding, schema kept in sync with the dataclasses."""

import json

import jsonschema
import pytest

from conftest import REPO
from ncclctl.errors import InputError
from ncclctl.model import (
    Cpu, Gid, Gpu, IbPort, Nic, Node, NumaNode, NvLink, PciDevice, json_schema,
)
from ncclctl.plan.paths import derived, matrix, nearest_nics, pcie_path_type


def _pci(bdf, role, path, cls="0x060400", numa=0, vendor="0x10de", device="0x2330"):
    return PciDevice(bdf=bdf, role=role, path=path, class_code=cls, vendor=vendor, device=device, numa_node=numa)


def small_node() -> Node:
    """Two sockets; socket 0: switch with GPU0+NIC0 and a second-level switch with GPU1; socket 1: GPU2."""
    rc0, rc1 = "pci0000:00", "pci0000:80"
    pci = (
        _pci("0000:00:01.0", "root_port", (rc0, "0000:00:01.0")),
        _pci("0000:01:00.0", "switch_upstream", (rc0, "0000:00:01.0", "0000:01:00.0")),
        _pci("0000:02:00.0", "switch_downstream", (rc0, "0000:00:01.0", "0000:01:00.0", "0000:02:00.0")),
        _pci("0000:02:01.0", "switch_downstream", (rc0, "0000:00:01.0", "0000:01:00.0", "0000:02:01.0")),
        _pci("0000:02:02.0", "switch_downstream", (rc0, "0000:00:01.0", "0000:01:00.0", "0000:02:02.0")),
        _pci("0000:03:00.0", "endpoint", (rc0, "0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0"), cls="0x030200"),
        _pci("0000:04:00.0", "endpoint", (rc0, "0000:00:01.0", "0000:01:00.0", "0000:02:01.0", "0000:04:00.0"),
             cls="0x020700", vendor="0x15b3", device="0x1021"),
        _pci("0000:05:00.0", "switch_upstream", (rc0, "0000:00:01.0", "0000:01:00.0", "0000:02:02.0", "0000:05:00.0")),
        _pci("0000:06:00.0", "switch_downstream", (rc0, "0000:00:01.0", "0000:01:00.0", "0000:02:02.0", "0000:05:00.0", "0000:06:00.0")),
        _pci("0000:07:00.0", "endpoint", (rc0, "0000:00:01.0", "0000:01:00.0", "0000:02:02.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"), cls="0x030200"),
        _pci("0000:80:01.0", "root_port", (rc1, "0000:80:01.0"), numa=1),
        _pci("0000:81:00.0", "endpoint", (rc1, "0000:80:01.0", "0000:81:00.0"), cls="0x030200", numa=1),
    )
    gpus = (
        Gpu(index=0, bdf="0000:03:00.0", name="G", sm=90, numa_node=0,
            nvlinks=(NvLink(link=0, active=True, remote_type="gpu", remote_bdf="0000:07:00.0"),
                     NvLink(link=1, active=True, remote_type="gpu", remote_bdf="0000:07:00.0"),
                     NvLink(link=2, active=False, remote_type="gpu", remote_bdf="0000:07:00.0"))),
        Gpu(index=1, bdf="0000:07:00.0", name="G", sm=90, numa_node=0,
            nvlinks=(NvLink(link=0, active=True, remote_type="gpu", remote_bdf="0000:03:00.0"),
                     NvLink(link=1, active=True, remote_type="gpu", remote_bdf="0000:03:00.0"))),
        Gpu(index=2, bdf="0000:81:00.0", name="G", sm=90, numa_node=1),
    )
    nics = (Nic(name="mlx5_0", bdf="0000:04:00.0", ports=(
        IbPort(num=1, state="ACTIVE", phys_state="LinkUp", link_layer="InfiniBand", rate_gbps=400.0,
               gids=(Gid(index=0, gid="fe80:0000:0000:0000:a288:c2ff:fee3:142a"),)),)),)
    cpu = Cpu(arch="x86_64", vendor="GenuineIntel", family=6, model=143, model_name="Xeon", sockets=2, logical_cpus=4)
    numa = (NumaNode(id=0, cpulist="0-1", cpumap="00000003", distances=(10, 21)),
            NumaNode(id=1, cpulist="2-3", cpumap="0000000c", distances=(21, 10)))
    return Node(hostname="t", cpu=cpu, numa=numa, pci=pci, gpus=gpus, nics=nics)


def test_round_trip_is_identity():
    node = small_node()
    data = json.loads(json.dumps(node.to_dict()))
    again = Node.from_dict(data)
    assert again == node
    assert again.to_dict() == node.to_dict()


def test_schema_file_is_current_and_validates():
    on_disk = json.loads((REPO / "schemas" / "node.schema.json").read_text())
    assert on_disk == json_schema(), "schemas/node.schema.json is stale: regenerate it from ncclctl.model.json_schema()"
    doc = small_node().to_dict()
    doc["derived"] = derived(small_node())
    jsonschema.validate(doc, on_disk)
    doc["gpus"][0]["index"] = "zero"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, on_disk)


@pytest.mark.parametrize("mutate,needle", [
    (lambda d: d.update(schema_version=99), "schema_version"),
    (lambda d: d["gpus"][0].update(index="0"), "$.gpus[0].index"),
    (lambda d: d["gpus"][0].update(colour="red"), "unknown key 'colour'"),
    (lambda d: d["cpu"].pop("arch"), "missing key 'arch'"),
    (lambda d: d["nics"][0]["ports"][0].update(rate_gbps=True), "rate_gbps"),
])
def test_from_dict_is_strict(mutate, needle):
    data = json.loads(json.dumps(small_node().to_dict()))
    mutate(data)
    with pytest.raises(InputError) as exc:
        Node.from_dict(data, source="model.json")
    assert needle in str(exc.value)
    assert exc.value.path == "model.json"


def test_path_types_follow_switch_levels():
    node = small_node()
    assert pcie_path_type(node, "0000:03:00.0", "0000:04:00.0") == "PIX"   # same switch
    assert pcie_path_type(node, "0000:07:00.0", "0000:04:00.0") == "PXB"   # two switch levels
    assert pcie_path_type(node, "0000:03:00.0", "0000:81:00.0") == "SYS"   # other socket
    m = matrix(node)
    assert m.labels == ("GPU0", "GPU1", "GPU2", "NIC0")
    assert m.cells[0][1] == "NV2"        # only the two active links count
    assert m.cells[0][2] == "SYS"
    assert m.cells[2][3] == "SYS"
    assert m.cpu_affinity[2] == "2-3" and m.numa_affinity[2] == "1"
    assert nearest_nics(node) == {0: ("mlx5_0",), 1: ("mlx5_0",), 2: ("mlx5_0",)}


def test_same_numa_different_host_bridges_is_node():
    node = small_node()
    rc = "pci0000:40"
    extra = _pci("0000:40:00.0", "endpoint", (rc, "0000:40:00.0"), cls="0x020000", numa=0)
    node2 = Node(hostname=node.hostname, cpu=node.cpu, numa=node.numa, pci=node.pci + (extra,), gpus=node.gpus)
    assert pcie_path_type(node2, "0000:03:00.0", "0000:40:00.0") == "NODE"
    assert pcie_path_type(node2, "0000:81:00.0", "0000:40:00.0") == "SYS"


def test_gid_helpers():
    g = Gid(index=3, gid="0000:0000:0000:0000:0000:ffff:0ac8:010a", type="RoCE v2")
    assert g.is_ipv4_mapped and g.ipv4 == "10.200.1.10" and not g.is_link_local
