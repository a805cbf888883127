"""The bugs the fuzzers found, each replayed through the CLI: a clean exit 3 naming the file (or a normal
result), never an internal error or a traceback. docs/reliability.md lists them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import HOSTS, run_cli

BIG = "9" * 4400  # over Python's 4300-digit int-from-string limit


def _refused(proc, path: Path | str, *words: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out
    assert "Traceback" not in out and "internal error" not in out, out
    assert f"ncclctl: error: {path}" in proc.stderr, out
    for w in words:
        assert w in proc.stderr, out


@pytest.fixture
def model(tmp_path: Path):
    """Write a probe model of dgx-h100 changed by ``edit(doc)``; returns its path."""
    base = json.loads(run_cli("probe", "--root", str(HOSTS / "dgx-h100"), "--format", "json").stdout)

    def make(edit) -> Path:
        doc = json.loads(json.dumps(base))
        edit(doc)
        p = tmp_path / "model.json"
        p.write_text(json.dumps(doc))
        return p

    return make


def test_huge_integer_in_xml_for_old_nccl(tmp_path: Path) -> None:
    """c_strtol on a 4400-digit value (ValueError from int()); NCCL's strtol saturates."""
    f = tmp_path / "g.xml"
    f.write_text(f'<graphs version="{BIG}">\n</graphs>\n')
    proc = run_cli("topo", "validate", "--nccl-version", "2.18.1", str(f))
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr


def test_deeply_nested_model_json(tmp_path: Path) -> None:
    f = tmp_path / "model.json"
    f.write_text("[" * 100_000 + "]" * 100_000)
    _refused(run_cli("rails", "--model", str(f)), f, "not a usable JSON node model")


def test_deeply_nested_recorded_nvml_json(tmp_path: Path) -> None:
    tree = tmp_path / "host"
    shutil.copytree(HOSTS / "cpu-only", tree, symlinks=True)
    (tree / "nvml.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    _refused(run_cli("probe", "--root", str(tree)), tree / "nvml.json", "not valid JSON")


def test_recorded_nvml_with_nvlinks_not_a_list(tmp_path: Path) -> None:
    tree = tmp_path / "host"
    shutil.copytree(HOSTS / "dgx-h100", tree, symlinks=True)
    doc = json.loads((tree / "nvml.json").read_text())
    doc["devices"][6]["nvlinks"] = 7
    (tree / "nvml.json").write_text(json.dumps(doc))
    _refused(run_cli("probe", "--root", str(tree)), tree / "nvml.json", "GPU 6: 'nvlinks' must be a list")


@pytest.mark.parametrize("text, words", [
    ("1: a\nswitches: [{gpus: [0], nics: [mlx5_ib0]}]\n", ("unknown key 1",)),
    ("version: 1\nswitches:\n  - {gpus: [0], nics: [mlx5_ib0], 7: x}\n", ("unknown key 7",)),
    ("[" * 5000 + "]" * 5000 + "\n", ("not usable YAML",)),
    (f"version: {BIG}\nswitches: []\n", ("not usable YAML",)),
], ids=["int-key", "int-key-in-switch", "deep", "huge-int"])
def test_hostile_layout_specs(tmp_path: Path, text: str, words: tuple[str, ...]) -> None:
    f = tmp_path / "spec.yaml"
    f.write_text(text)
    _refused(run_cli("topo", "generate", "--root", str(HOSTS / "cloud-vm-flat"), "--spec", str(f)), f, *words)


@pytest.mark.parametrize("text, words", [
    (f"rules:\n  IB002: {{options: {{min_rate_gbps: {BIG}}}}}\n", ("not usable YAML",)),
    ("extends: default\n<<: {a: 1}\n", ("unknown key",)),
], ids=["huge-int", "merge-key"])
def test_hostile_lint_configs(tmp_path: Path, text: str, words: tuple[str, ...]) -> None:
    f = tmp_path / "config.yaml"
    f.write_text(text)
    _refused(run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--config", str(f)), f, *words)


def test_hostile_inventory(tmp_path: Path) -> None:
    f = tmp_path / "inventory.yaml"
    f.write_text(f"version: {BIG}\nhosts:\n  a: {{snapshot: x}}\n")
    _refused(run_cli("fleet", "lint", "--inventory", str(f)), f, "not usable YAML")


@pytest.mark.parametrize("cpulist", ["0-65536," * 20000, "0-" + "9" * 30, "0-3,１２"], ids=["bomb", "huge", "unicode"])
def test_hostile_cpulist_in_a_fixture(tmp_path: Path, cpulist: str) -> None:
    """``0-65536,`` x 20000 used to expand to 1.3 billion CPU numbers."""
    tree = tmp_path / "host"
    shutil.copytree(HOSTS / "cpu-only", tree, symlinks=True)
    target = tree / "sys/devices/system/node/node0/cpulist"
    target.write_text(cpulist + "\n")
    proc = run_cli("probe", "--root", str(tree), timeout=120)  # a hang guard; the work is counted below
    _refused(proc, target, "unexpected CPU list")


@pytest.mark.parametrize("bomb", ["0-65536," * 20000, "0-65535," * 20000, "0-100," * 20000])
def test_cpulist_bomb_expands_a_bounded_number_of_cpus(monkeypatch: pytest.MonkeyPatch, bomb: str) -> None:
    """Counted, not timed: the CPU numbers the parser expands before it refuses stay under twice MAX_CPUS (one
    range past the cap); a parser that checks the count only at the end expands 1.3 billion (stopped here at
    ten times the bound, so that it fails instead of filling memory)."""
    import builtins

    from ncclctl import sysfs

    expanded = 0

    def counted(a: int, b: int) -> range:
        nonlocal expanded
        expanded += max(0, b - a)
        assert expanded <= 10 * sysfs.MAX_CPUS, "the CPU list is expanded without a bound"
        return builtins.range(a, b)

    monkeypatch.setattr(sysfs, "range", counted, raising=False)
    with pytest.raises(ValueError):
        sysfs.parse_cpulist(bomb)
    assert expanded <= 2 * sysfs.MAX_CPUS, expanded


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["pci"][3].update(bdf="000101-0"), ("$.pci[3].bdf",)),
    (lambda d: d["nics"][0].update(node_guid="0::xa088"), ("$.nics[0].node_guid",)),
    (lambda d: d["numa"][0].update(cpulist="0-" + "9" * 40), ("$.numa[0].cpulist",)),
    (lambda d: d["cpu"].update(vendor="Genuine\ud800Intel"), ("$.cpu.vendor", "valid Unicode")),
], ids=["bdf", "guid", "cpulist", "surrogate"])
def test_hostile_models(model, edit, words: tuple[str, ...]) -> None:
    f = model(edit)
    for argv in (("topo", "generate", "--model", str(f)), ("rails", "--model", str(f)), ("lint", "--model", str(f))):
        _refused(run_cli(*argv), f, *words)


def test_unwritable_attribute_value_is_refused_not_written(model) -> None:
    """A quote in a value used to produce an XML file NCCL misreads; now generate refuses it."""
    f = model(lambda d: d["cpu"].update(vendor='Genuine"Intel'))
    proc = run_cli("topo", "generate", "--model", str(f))
    assert proc.returncode == 3 and "cannot be written in NCCL's XML dialect" in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_single_line_xml_is_linear(tmp_path: Path) -> None:
    """Columns on a 2 MB single-line file used to cost O(line length) each: minutes for 100k elements."""
    f = tmp_path / "one-line.xml"
    f.write_bytes(b'<system version="1"><x>' + b"<a b='1'/>" * 150_000 + b"</x></system>")
    proc = run_cli("topo", "validate", "--no-xsd", str(f), timeout=120)  # a hang guard; the work is counted below
    assert proc.returncode in (0, 1), proc.stderr


def test_single_line_xml_positions_scan_linear_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: the bytes the line index scans to place findings (``_LineIndex._advance``, from a 64 KiB
    checkpoint or the last position asked) at 5,000 and 20,000 elements on one line. Linear reading scans about
    the same few MB at both (each step at most 64 KiB); counting from the line's start each time scans ~14x more
    for 4x the elements, and fails here."""
    from ncclctl.nccl import xml as X
    from ncclctl.topo.validate import validate_topology

    scanned = 0
    real = X._LineIndex._advance

    def advance(self, base, pos):
        nonlocal scanned
        scanned += max(0, pos - base[0])
        return real(self, base, pos)

    monkeypatch.setattr(X._LineIndex, "_advance", advance)
    per_size = {}
    for n in (5_000, 20_000):
        scanned = 0
        data = b'<system version="1"><x>' + b"<a b='1'/>" * n + b"</x></system>"
        assert validate_topology(data, path="one-line.xml")
        per_size[n] = scanned
    assert 0 < per_size[20_000] <= 4.5 * per_size[5_000], per_size
