"""topo generate / validate / show / diff through the CLI, on every host fixture."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import HOSTS, REPO, host_names, run_cli
from ncclctl.errors import InputError
from ncclctl.plan.paths import matrix as probe_matrix
from ncclctl.probe import probe
from ncclctl.nccl.detect import generate
from ncclctl.topo.interpret import load_view, matrix as file_matrix
from ncclctl.nccl.xml import parse_nccl_xml
from ncclctl.topo.validate import validate_topology

HOSTS_LIST = host_names()
GPU_HOSTS = [h for h in HOSTS_LIST if h != "cpu-only"]


def test_no_gpus_no_topology_file(tmp_path):
    """A node without GPUs: an error naming why, never a silent <system version="1"/> with exit 0."""
    out = tmp_path / "topo.xml"
    result = run_cli("topo", "generate", "--root", str(HOSTS / "cpu-only"), "-o", str(out))
    assert result.returncode == 3 and "no GPUs" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()
    matrix = run_cli("probe", "--root", str(HOSTS / "cpu-only"), "--format", "matrix")
    assert matrix.returncode == 0 and matrix.stdout == "no GPUs and no RDMA NICs: no topology matrix to show\n"
    summary = run_cli("probe", "--root", str(HOSTS / "cpu-only"))
    assert "nvml: the snapshot has no NVML answers (nvml.json)" in summary.stdout, summary.stdout


@pytest.mark.parametrize("host", GPU_HOSTS)
def test_golden_generated_topology(host, golden, tmp_path):
    out = tmp_path / "topo.xml"
    result = run_cli("topo", "generate", "--root", str(HOSTS / host), "-o", str(out))
    assert result.returncode == 0, result.stderr
    golden(f"topo/{host}.xml", out.read_text())
    stdout = run_cli("topo", "generate", "--root", str(HOSTS / host))
    assert stdout.stdout == out.read_text(), "stdout and -o must carry the same bytes"


@pytest.mark.parametrize("host", GPU_HOSTS)
def test_generate_show_validate_is_clean(host, tmp_path):
    out = tmp_path / "topo.xml"
    assert run_cli("topo", "generate", "--root", str(HOSTS / host), "-o", str(out)).returncode == 0
    shown = run_cli("topo", "show", str(out), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    node = probe(str(HOSTS / host))
    assert sorted(g["busid"] for g in doc["gpus"]) == sorted(g.bdf for g in node.gpus)
    assert doc["ignored"] == []
    checked = run_cli("topo", "validate", str(out), "--root", str(HOSTS / host), "--format", "json",
                      "--fail-on", "warning")
    report = json.loads(checked.stdout)
    assert checked.returncode == 0, report["findings"]
    assert report["summary"]["error"] == 0 and report["summary"]["warning"] == 0


@pytest.mark.parametrize("host", GPU_HOSTS)
def test_file_implies_the_hosts_paths(host):
    """The GPU/NIC matrix NCCL derives from the generated file equals the probe's (NODE is PHB to NCCL)."""
    node = probe(str(HOSTS / host))
    labels, rows = file_matrix(load_view(generate(node), path="x"))
    m = probe_matrix(node)
    index = {label: i for i, label in enumerate(m.labels)}
    nic_label = {name: label for label, name in m.nic_legend}
    for i, a in enumerate(labels):
        if not a.startswith("GPU"):
            continue
        for j, b in enumerate(labels):
            host_cell = m.cells[index[a]][index[b if b.startswith("GPU") else nic_label[b]]]
            assert rows[i][j] == {"NODE": "PHB"}.get(host_cell, host_cell), (a, b)


def test_generated_file_checked_against_another_host_fails():
    a = REPO / "tests/golden/topo/dgx-h100.xml"
    result = run_cli("topo", "validate", str(a), "--root", str(HOSTS / "dgx-a100"), "--format", "json")
    assert result.returncode == 1
    rules = {f["rule"] for f in json.loads(result.stdout)["findings"]}
    assert {"NTH001", "NTH002"} <= rules


def test_wrong_cloud_affinity_is_caught(tmp_path):
    """The published-cloud-file mistake: affinity of the wrong socket (and a GPU under the wrong NUMA node)."""
    text = (REPO / "tests/golden/topo/cloud-vm-flat.xml").read_text()
    node = probe(str(HOSTS / "cloud-vm-flat"))
    maps = [n.cpumap for n in node.numa]
    swapped = text.replace(f'affinity="{maps[0]}"', "AFF0").replace(f'affinity="{maps[1]}"', f'affinity="{maps[0]}"')
    swapped = swapped.replace("AFF0", f'affinity="{maps[1]}"')
    bad = tmp_path / "vm.xml"
    bad.write_text(swapped)
    result = run_cli("topo", "validate", str(bad), "--root", str(HOSTS / "cloud-vm-flat"), "--format", "json")
    findings = json.loads(result.stdout)["findings"]
    assert result.returncode == 1
    assert sum(f["rule"] == "NTH004" for f in findings) == 2
    line = next(f["line"] for f in findings if f["rule"] == "NTH004")
    assert "<cpu" in swapped.splitlines()[line - 1]


def test_busid_spelling_and_dev_mismatch(tmp_path):
    text = (REPO / "tests/golden/topo/dgx-h100.xml").read_text()
    node = probe(str(HOSTS / "dgx-h100"))
    g0 = node.gpu(0).bdf
    text = text.replace(f'busid="{g0}"', f'busid="0000{g0.upper()}"'.replace("0000" + g0.upper(), "0000" + g0.upper()), 1)
    text = re.sub(r'<gpu dev="1" ', '<gpu dev="5" ', text, count=1)
    bad = tmp_path / "t.xml"
    bad.write_text(text)
    result = run_cli("topo", "validate", str(bad), "--root", str(HOSTS / "dgx-h100"), "--format", "json")
    rules = [f["rule"] for f in json.loads(result.stdout)["findings"]]
    assert "NTH003" in rules and "NTH007" in rules and "NTS028" in rules


def test_swapped_nic_pairing_is_flagged(tmp_path):
    text = (REPO / "tests/golden/topo/dgx-h100.xml").read_text()
    text = text.replace('name="mlx5_0"', 'name="TMP"').replace('name="mlx5_3"', 'name="mlx5_0"').replace('name="TMP"', 'name="mlx5_3"')
    bad = tmp_path / "t.xml"
    bad.write_text(text)
    findings = json.loads(run_cli("topo", "validate", str(bad), "--root", str(HOSTS / "dgx-h100"), "--format", "json").stdout)["findings"]
    pairing = [f for f in findings if f["rule"] == "NTH006"]
    assert pairing and "mlx5_3" in pairing[0]["message"] and "mlx5_0" in pairing[0]["message"]


def test_sarif_output(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text('<system version="1">\n\t<cpu numaid="0"/>\n</system>\n')
    result = run_cli("topo", "validate", str(bad), "--format", "sarif")
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    assert doc["version"] == "2.1.0"
    res = doc["runs"][0]["results"][0]
    assert res["ruleId"] == "NTX001" and res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 1}


def test_reference_examples_validate_clean():
    for name in ("nccl-example-topo.xml", "nccl-example-graph.xml"):
        result = run_cli("topo", "validate", str(REPO / "fixtures/topo/valid" / name), "--fail-on", "warning")
        assert result.returncode == 0, result.stdout


def test_diff_is_blind_to_formatting(tmp_path):
    src = (REPO / "tests/golden/topo/dgx-h100.xml").read_text()
    # Reorder attributes on one line, re-indent, add a comment: the same to NCCL.
    reordered = src.replace('<system version="1">', '<!-- reformatted -->\n<system  version="1">', 1)
    reordered = re.sub(r'<net name="(\S+)" dev="(\d+)" speed="(\d+)"', r'<net speed="\3" name="\1" dev="\2"', reordered)
    reordered = "\n".join("    " + line.strip() for line in reordered.splitlines()) + "\n"
    b = tmp_path / "b.xml"
    b.write_text(reordered)
    same = run_cli("topo", "diff", str(REPO / "tests/golden/topo/dgx-h100.xml"), str(b), "--format", "json")
    assert same.returncode == 0, same.stdout
    assert json.loads(same.stdout)["same"] is True
    other = run_cli("topo", "diff", str(REPO / "tests/golden/topo/dgx-h100.xml"),
                    str(REPO / "tests/golden/topo/dgx-h100-nvlink-missing.xml"))
    assert other.returncode == 1
    assert "nvlink" in other.stdout and "count" in other.stdout


def test_show_marks_what_nccl_ignores(tmp_path):
    f = tmp_path / "t.xml"
    f.write_text('<system version="1">\n  <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143" host_hash="0x1">\n'
                 '    <nvs busid="0000:05:00.0"/>\n  </cpu>\n</system>\n')
    out = run_cli("topo", "show", str(f)).stdout
    assert "ignored by NCCL: <nvs>" in out and "overwritten by NCCL" in out
    fatal = tmp_path / "fatal.xml"
    fatal.write_text('<?xml version="1.0"?>\n<system version="1"/>\n')
    result = run_cli("topo", "show", str(fatal))
    assert result.returncode == 3 and f"{fatal}:1" in result.stderr


def test_minimal_skeleton(tmp_path):
    result = run_cli("topo", "generate", "--root", str(HOSTS / "dgx-h100"), "--minimal")
    assert result.returncode == 0
    assert "<gpu" not in result.stdout and "<nic" not in result.stdout and "<net" not in result.stdout
    node = probe(str(HOSTS / "dgx-h100"))
    for g in node.gpus:
        assert f'<pci busid="{g.bdf}" class="0x030200"' in result.stdout
    f = tmp_path / "skeleton.xml"
    f.write_text(result.stdout)
    checked = run_cli("topo", "validate", str(f), "--fail-on", "warning")
    assert checked.returncode == 0, checked.stdout
    vm = run_cli("topo", "generate", "--root", str(HOSTS / "cloud-vm-flat"), "--minimal", "--profile", "h100")
    assert vm.returncode == 0 and vm.stdout.count('class="0x060400"') == 8 and "<gpu" not in vm.stdout


def test_version_refusal_cli():
    result = run_cli("topo", "generate", "--root", str(HOSTS / "grace-hopper"), "--nccl-version", "2.18")
    assert result.returncode == 3 and "C2C" in result.stderr and "2.19" in result.stderr
    bad = run_cli("topo", "generate", "--root", str(HOSTS / "dgx-h100"), "--nccl-version", "two")
    assert bad.returncode == 2


# --------------------------------------------------------------------------------------------------
# Property: every generated file obeys NCCL's dialect and limits (or generation refuses cleanly).

from ncclctl.model import Cpu, Gpu, IbPort, Nic, Node, NumaNode, NvLink, PciDevice  # noqa: E402


@st.composite
def hosts(draw):
    sockets = draw(st.integers(1, 2))
    numa = tuple(NumaNode(id=i, cpulist=f"{i * 8}-{i * 8 + 7}", cpumap=f"{0xff << (8 * i):08x}") for i in range(sockets))
    pci, gpus, nics = [], [], []
    bus = 1
    for s in range(sockets):
        rc = f"pci0000:{s * 0x80:02x}"
        for sw in range(draw(st.integers(0, 3))):
            rp = f"0000:{s * 0x80 + bus:02x}:00.0"
            up = f"0000:{s * 0x80 + bus + 1:02x}:00.0"
            pci += [PciDevice(bdf=rp, role="root_port", path=(rc, rp), class_code="0x060400", vendor="0x8086", device="0x352a", numa_node=s),
                    PciDevice(bdf=up, role="switch_upstream", path=(rc, rp, up), class_code="0x060400", vendor="0x1000", device="0xc030", numa_node=s)]
            for k in range(draw(st.integers(1, 4))):
                dn = f"0000:{s * 0x80 + bus + 2:02x}:{k:02x}.0"
                ep = f"0000:{s * 0x80 + bus + 3 + k:02x}:00.0"
                pci.append(PciDevice(bdf=dn, role="switch_downstream", path=(rc, rp, up, dn), class_code="0x060400",
                                     vendor="0x1000", device="0xc030", numa_node=s,
                                     max_link_speed=draw(st.sampled_from(["32.0 GT/s PCIe", "16.0 GT/s PCIe", "Unknown"])),
                                     max_link_width=draw(st.sampled_from([16, 8, 0]))))
                if draw(st.booleans()):
                    pci.append(PciDevice(bdf=ep, role="endpoint", path=(rc, rp, up, dn, ep), class_code="0x030200",
                                         vendor="0x10de", device="0x2330", numa_node=s, max_link_speed="32.0 GT/s PCIe", max_link_width=16))
                    gpus.append(ep)
                else:
                    pci.append(PciDevice(bdf=ep, role="endpoint", path=(rc, rp, up, dn, ep), class_code="0x020700",
                                         vendor="0x15b3", device="0x1021", numa_node=s))
                    nics.append(ep)
            bus += 0x10
    gpu_objs = tuple(Gpu(index=i, bdf=b, name="G", sm=90, numa_node=None,
                         nvlinks=tuple(NvLink(link=j, active=True, remote_type="nvswitch") for j in range(draw(st.integers(0, 18)))))
                     for i, b in enumerate(sorted(gpus)))
    nic_objs = tuple(Nic(name=f"mlx5_{i}", bdf=b, sys_image_guid=f"0x{i + 1:016x}",
                         ports=(IbPort(num=1, state=draw(st.sampled_from(["ACTIVE", "DOWN"])), phys_state="LinkUp",
                                       link_layer="InfiniBand", rate_gbps=400.0),))
                     for i, b in enumerate(sorted(nics)))
    cpu = Cpu(arch=draw(st.sampled_from(["x86_64", "arm64"])), vendor="GenuineIntel", family=6, model=143,
              model_name="x", sockets=sockets, logical_cpus=8 * sockets)
    return Node(hostname="h", cpu=cpu, numa=numa, pci=tuple(pci), gpus=gpu_objs, nics=nic_objs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hosts())
def test_generated_files_obey_dialect_and_limits(node):
    try:
        data = generate(node)
    except InputError as exc:
        assert "at most 255" in str(exc) or (not node.gpus and "no GPUs" in str(exc))
        return
    assert generate(node) == data
    result = parse_nccl_xml(data, kind="topology")
    assert result.ok and not result.ignored
    assert result.node_count <= 255
    text = data.decode("ascii")
    assert "\t" not in text and not text.startswith("<?xml") and "keep=" not in text and "rank=" not in text
    for line in text.splitlines():
        assert re.fullmatch(r"( {2})*<[^<>\n]*>", line), line
        assert all(len(v) < 254 for v in re.findall(r'="([^"]*)"', line))
    # NTS047: these random hosts have bridges without a link speed in sysfs, for which the generator writes NCCL's
    # own Gen3 fallback; NCCL then caps the faster devices below them, which NTS047 rightly reports.
    errors = [f for f in validate_topology(data, path="gen.xml") if f.severity.value != "info" and f.rule != "NTS047"]
    assert errors == [], errors


HOST_CORPUS = sorted((REPO / "fixtures/topo/invalid-host").glob("NTH*.xml"))


@pytest.mark.parametrize("path", HOST_CORPUS, ids=lambda p: p.name)
def test_host_corpus_fires_its_rule(path):
    """Each file breaks one thing relative to a host fixture; exactly that NTH rule fires, at the stated line."""
    m = re.match(r"<!-- expect (NTH\d{3}) line (\d+) host (\S+):", path.read_text())
    assert m, "first line must be <!-- expect NTHxxx line N host NAME: ... -->"
    rule_id, line, host = m.group(1), int(m.group(2)), m.group(3)
    assert path.name.startswith(rule_id + "-")
    result = run_cli("topo", "validate", str(path), "--root", str(HOSTS / host), "--format", "json", "--no-xsd")
    findings = json.loads(result.stdout)["findings"]
    host_rules = {f["rule"] for f in findings if f["rule"].startswith("NTH")}
    assert host_rules == {rule_id}, [(f["rule"], f["message"]) for f in findings if f["rule"].startswith("NTH")]
    hits = [f for f in findings if f["rule"] == rule_id]
    if line:
        assert any(f["line"] == line for f in hits), [(f["line"], f["message"]) for f in hits]
    assert all(f["fix"] for f in hits)
    assert result.returncode == (1 if any(f["severity"] == "error" for f in findings) else 0)


def test_minimal_skeleton_is_not_missing_devices(tmp_path):
    """A --minimal file names every GPU and NIC as a <pci> function: NCCL fills them in, so no NTH002."""
    out = tmp_path / "min.xml"
    root = "fixtures/hosts/dgx-h100"
    assert run_cli("topo", "generate", "--root", root, "--minimal", "-o", str(out)).returncode == 0
    r = run_cli("topo", "validate", str(out), "--root", root, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "NTH002"] == []
    # Drop one GPU's <pci> line: that GPU is now really absent from the file.
    lines = out.read_text().splitlines(keepends=True)
    gpu = next(i for i, l in enumerate(lines) if 'busid="0000:1b:00.0"' in l)
    out.write_text("".join(lines[:gpu] + lines[gpu + 1:]))
    r = run_cli("topo", "validate", str(out), "--root", root, "--format", "json")
    missing = [f["message"] for f in json.loads(r.stdout)["findings"] if f["rule"] == "NTH002"]
    assert missing == ["GPU 0 (0000:1b:00.0) is not in the file"]
