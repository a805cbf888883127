"""Topology generation on synthetic models: NCCL's walk, versions, limits, virtual layouts, specs."""

from __future__ import annotations

import dataclasses

import pytest

from ncclctl.errors import InputError, UsageError
from ncclctl.model import C2c, Gpu, IbPort, Nic, Node, PciDevice
from ncclctl.nccl.version import parse_option as parse_version
from ncclctl.nccl.detect import (
    Options, generate, load_spec, net_devices, profile_layout,
)
from conftest import HOSTS
from test_model import small_node


def _lines(data: bytes) -> list[str]:
    return data.decode().splitlines()


def test_switch_named_by_upstream_port_and_children_sorted():
    out = _lines(generate(small_node()))
    assert out[0] == '<system version="1">'
    # Root ports (0000:00:01.0) and downstream ports (0000:02:0x.0) never appear: NCCL skips them.
    text = "\n".join(out)
    assert "0000:00:01.0" not in text and "0000:02:00.0" not in text
    assert '<pci busid="0000:01:00.0" class="0x060400"' in text
    busids = [line.split('busid="')[1][:12] for line in out if 'busid="' in line]
    assert busids == ["0000:01:00.0", "0000:03:00.0", "0000:04:00.0", "0000:05:00.0", "0000:07:00.0", "0000:81:00.0"]


def test_dialect_basics():
    data = generate(small_node())
    assert not data.startswith(b"<?xml") and not data.startswith(b"\xef\xbb\xbf")
    assert b"\t" not in data and b"'" not in data
    assert b"keep=" not in data and b"rank=" not in data
    for line in data.decode().splitlines():
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0
        assert line.lstrip().startswith("<")


def test_deterministic():
    assert generate(small_node()) == generate(small_node())


def test_symmetric_gpu_nvlinks():
    text = generate(small_node()).decode()
    assert '<nvlink target="0000:07:00.0" count="2" tclass="0x030200"/>' in text
    assert '<nvlink target="0000:03:00.0" count="2" tclass="0x030200"/>' in text


def test_arm64_cpu_has_no_x86_attributes():
    node = small_node()
    node = dataclasses.replace(node, cpu=dataclasses.replace(node.cpu, arch="arm64", vendor="0x41", family=None))
    text = generate(node).decode()
    assert 'arch="arm64"' in text and "vendor=" not in text.split("<pci")[0]
    assert "aarch64" not in text


def test_nccl_version_gating():
    node = small_node()
    old = generate(node, Options(nccl_version=parse_version("2.8"))).decode()
    assert 'link_speed="8 GT/s"' in old and "vendor=" not in old.split("</cpu>")[0].split("<pci", 1)[1]
    gen5 = dataclasses.replace(node, pci=tuple(dataclasses.replace(d, max_link_speed="32.0 GT/s PCIe") for d in node.pci))
    with pytest.raises(InputError, match="Gen5"):
        generate(gen5, Options(nccl_version=parse_version("2.10")))
    assert 'link_speed="32.0 GT/s PCIe"' in generate(gen5, Options(nccl_version=parse_version("2.11"))).decode()
    c2c = dataclasses.replace(node, gpus=(dataclasses.replace(node.gpus[0], c2c=C2c(count=10, max_bw=45000)),) + node.gpus[1:])
    with pytest.raises(InputError, match="C2C"):
        generate(c2c, Options(nccl_version=parse_version("2.18")))
    assert '<c2c bw="45000" count="10"/>' in generate(c2c).decode()
    with pytest.raises(UsageError):
        parse_version("3.0")
    with pytest.raises(UsageError):
        parse_version("two")


def test_element_cap_gives_a_way_out():
    node = small_node()
    rc = "pci0001:00"
    many = []
    for i in range(140):
        bdf = f"0001:{i:02x}:00.0"
        many.append(PciDevice(bdf=bdf, role="endpoint", path=(rc, bdf), class_code="0x020700",
                              vendor="0x15b3", device="0x1021", numa_node=0))
    nics = tuple(Nic(name=f"mlx5_{i}", bdf=d.bdf, sys_image_guid=f"0x{i + 1:016x}",
                     ports=(IbPort(num=1, state="ACTIVE", phys_state="LinkUp", link_layer="InfiniBand", rate_gbps=400.0),))
                 for i, d in enumerate(many))
    big = dataclasses.replace(node, pci=node.pci + tuple(many), nics=nics)
    with pytest.raises(InputError) as exc:
        generate(big)
    assert "at most 255" in str(exc.value) and "--nics" in str(exc.value)
    assert generate(big, Options(nics=("mlx5_0", "mlx5_1")))


def test_ib_plugin_view_of_multi_function_nic():
    node = small_node()
    rc = node.pci[0].path[0]
    f0 = PciDevice(bdf="0000:09:00.0", role="endpoint", path=(rc, "0000:09:00.0"), class_code="0x020000", vendor="0x15b3", device="0x101d", numa_node=0)
    f1 = dataclasses.replace(f0, bdf="0000:09:00.1", path=(rc, "0000:09:00.1"))
    port = IbPort(num=1, state="ACTIVE", phys_state="LinkUp", link_layer="Ethernet", rate_gbps=100.0)
    down = dataclasses.replace(port, state="DOWN", phys_state="Disabled")
    nics = (Nic(name="mlx5_1", bdf=f0.bdf, sys_image_guid="0x00000000000000aa", ports=(port,)),
            Nic(name="mlx5_2", bdf=f1.bdf, sys_image_guid="0x00000000000000aa", ports=(port,)),
            Nic(name="mlx5_3", bdf="0000:81:00.0", ports=(down,)))
    node = dataclasses.replace(node, pci=node.pci + (f0, f1), nics=node.nics + nics)
    nets = net_devices(node)
    assert [(n.nic.name, n.dev, n.nccl_port, n.busid) for n in nets] == [
        ("mlx5_0", 0, 1, "0000:04:00.0"),
        ("mlx5_1", 1, 1, "0000:09:00.0"),
        ("mlx5_2", 2, 2, "0000:09:00.0"),   # second function of the same card: realPort 1
    ]
    text = generate(node).decode()
    assert text.count('<pci busid="0000:09:00.0"') == 1 and "0000:09:00.1" not in text
    assert '<net name="mlx5_2" dev="2" speed="100000" port="2" guid="0xaa"/>' in text
    assert "mlx5_3" not in text  # NCCL's IB plugin only reports ACTIVE ports


def test_second_pci_function_is_written_as_nccls_ib_plugin_reports_it(cli):
    """pcie-server: mlx5_1 is PCI function 0000:1d:00.1, ibv port 1. NCCL's IB plugin (net_ib/init.cc) reports its
    pciPath with the function zeroed (ncclIbGetPciPath) and port = ibv port + realPort (ncclIbGetRealPort), so
    NCCL's own topology dump has it under <pci busid="0000:1d:00.0"> with port="2". Two functions under one guid
    must keep distinct ports: NCCL identifies a physical port by (guid, port) when it shares bandwidth and rails."""
    r = cli("topo", "generate", "--root", str(HOSTS / "pcie-server"))
    assert r.returncode == 0, r.stderr
    assert "0000:1d:00.1" not in r.stdout
    nic = r.stdout.split('<pci busid="0000:1d:00.0"')[1].split("</pci>")[0]
    assert '<net name="mlx5_0" dev="0" speed="100000" port="1" guid="0xb83fd20300cbd6bc"' in nic
    assert '<net name="mlx5_1" dev="1" speed="100000" port="2" guid="0xb83fd20300cbd6bc"' in nic
    # NCCL_IB_HCA matches the ibv port, not the reported one: rails keeps mlx5_1:1
    rails = cli("rails", "--root", str(HOSTS / "pcie-server"))
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1" in rails.stdout


def _flat_vm(n: int = 8) -> Node:
    node = small_node()
    pci, gpus, nics = [], [], []
    for i in range(n):
        g = f"{i + 1:04x}:00:00.0"
        nb = f"{0x101 + i:04x}:00:00.0"
        pci.append(PciDevice(bdf=g, role="endpoint", path=(f"pci{i + 1:04x}:00", g), class_code="0x030200",
                             vendor="0x10de", device="0x2330", numa_node=i // 4, max_link_speed="Unknown", max_link_width=0))
        pci.append(PciDevice(bdf=nb, role="endpoint", path=(f"pci{0x101 + i:04x}:00", nb), class_code="0x020700",
                             vendor="0x15b3", device="0x101e", numa_node=i // 4, is_vf=True))
        gpus.append(Gpu(index=i, bdf=g, name="H100", sm=90, numa_node=i // 4, pcie_max_gen=5, pcie_max_width=16))
        nics.append(Nic(name=f"mlx5_{i}", bdf=nb, sys_image_guid=f"0x{0x100 + i:016x}",
                        ports=(IbPort(num=1, state="ACTIVE", phys_state="LinkUp", link_layer="InfiniBand", rate_gbps=400.0),)))
    return dataclasses.replace(node, pci=tuple(pci), gpus=tuple(gpus), nics=tuple(nics))


def test_virtual_h100_profile():
    node = _flat_vm()
    assert node.is_virtual
    text = generate(node, layout=profile_layout(node, "h100")).decode()
    assert text.count('class="0x060400"') == 8
    for k in range(8):
        assert f'<pci busid="ffff:ff:{k + 1:02x}.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">' in text
    # The VM's real bus ids sit under the virtual switches, with explicit link attributes instead of Unknown.
    assert '<pci busid="0001:00:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">' in text
    assert "Unknown" not in text
    cpu_blocks = text.split("<cpu ")[1:]
    assert len(cpu_blocks) == 2 and cpu_blocks[0].startswith('numaid="0"') and cpu_blocks[1].startswith('numaid="1"')


def test_virtual_a100_profile_pairs_two_per_switch():
    node = _flat_vm()
    layout = profile_layout(node, "a100")
    assert [s.gpus for s in layout.switches] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert [s.nics for s in layout.switches] == [("mlx5_0", "mlx5_1"), ("mlx5_2", "mlx5_3"), ("mlx5_4", "mlx5_5"), ("mlx5_6", "mlx5_7")]
    text = generate(node, layout=layout).decode()
    assert text.count('class="0x060400"') == 4


def test_profile_refuses_mismatched_host():
    with pytest.raises(InputError, match="8 GPUs and 8 NICs"):
        profile_layout(_flat_vm(4), "h100")
    assert profile_layout(_flat_vm(4), "pairs").switches
    with pytest.raises(UsageError):
        profile_layout(_flat_vm(), "b200")


SPEC = """
version: 1
name: my-vm
link_speed: "32.0 GT/s PCIe"
link_width: 16
switches:
  - {gpus: [0, 1], nics: [mlx5_0], numa: 0}
  - {gpus: [2, 3], nics: [mlx5_1], numa: 1}
"""


def test_spec_layout():
    node = _flat_vm(4)
    layout = load_spec(SPEC, path="vm.yaml")
    text = generate(node, layout=layout).decode()
    assert text.count("<cpu ") == 2 and text.count('class="0x060400"') == 2
    assert "mlx5_2" not in text


@pytest.mark.parametrize("spec,needle", [
    ("switches: [", "not valid YAML"),
    ("- 1", "mapping"),
    ("switches: []", "non-empty"),
    ("colour: red\nswitches: [{gpus: [0]}]", "unknown key 'colour'"),
    ("switches: [{gpus: [zero]}]", "switches[0].gpus"),
    ("switches: [{gpus: [0], bogus: 1}]", "switches[0]: unknown key 'bogus'"),
    ("switches: [{gpus: [0]}]\nlink_speed: fast", "link_speed"),
    ("switches: [{gpus: [0]}]\nlink_width: 3", "link_width"),
    ("switches: [{}]", "is empty"),
])
def test_spec_errors(spec, needle):
    with pytest.raises(InputError) as exc:
        load_spec(spec, path="vm.yaml")
    assert needle in str(exc.value) and exc.value.path == "vm.yaml"


def test_spec_yaml_error_has_line():
    with pytest.raises(InputError) as exc:
        load_spec("switches:\n  - gpus: [0\n", path="vm.yaml")
    assert exc.value.line is not None


@pytest.mark.parametrize("layout_spec,needle", [
    ("switches: [{gpus: [9]}]", "GPU 9"),
    ("switches: [{nics: [mlx5_9]}]", "mlx5_9"),
    ("switches: [{gpus: [0]}, {gpus: [0]}]", "two virtual switches"),
])
def test_spec_must_match_host(layout_spec, needle):
    with pytest.raises(InputError, match=needle.replace("[", r"\[")):
        generate(_flat_vm(4), layout=load_spec(layout_spec, path="vm.yaml"))


# --------------------------------------------------------------------------------------------------
# The spec's JSON Schema and the loader agree.

import json as _json  # noqa: E402
from pathlib import Path as _Path  # noqa: E402

import jsonschema as _jsonschema  # noqa: E402
import yaml as _yaml  # noqa: E402

_REPO = _Path(__file__).resolve().parents[1]
_SPEC_SCHEMA = _json.loads((_REPO / "schemas/topo-spec.schema.json").read_text())


@pytest.mark.parametrize("path", sorted((_REPO / "examples/topo").glob("*.yaml")), ids=lambda p: p.name)
def test_example_specs_match_schema_and_loader(path):
    text = path.read_text()
    _jsonschema.validate(_yaml.safe_load(text), _SPEC_SCHEMA)
    assert load_spec(text, path=str(path)).switches


@pytest.mark.parametrize("spec", [
    "switches: []", "colour: red\nswitches: [{gpus: [0]}]", "switches: [{gpus: [zero]}]",
    "switches: [{gpus: [0], bogus: 1}]", "switches: [{gpus: [0]}]\nlink_speed: fast",
    "switches: [{gpus: [0]}]\nlink_width: 3", "switches: [{}]", "version: 2\nswitches: [{gpus: [0]}]",
])
def test_schema_rejects_what_the_loader_rejects(spec):
    with pytest.raises(_jsonschema.ValidationError):
        _jsonschema.validate(_yaml.safe_load(spec), _SPEC_SCHEMA)
    with pytest.raises(InputError):
        load_spec(spec, path="vm.yaml")


def test_example_spec_on_the_vm_fixture():
    from ncclctl.probe import probe

    node = probe(str(_REPO / "fixtures/hosts/cloud-vm-flat"))
    layout = load_spec((_REPO / "examples/topo/nd-h100-v5.yaml").read_text(), path="x")
    text = generate(node, layout=layout).decode()
    assert text.count('class="0x060400"') == 8 and text.count("<cpu ") == 2
