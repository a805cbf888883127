"""Probe every host fixture: golden JSON, schema, CLI formats, snapshot round trip, determinism."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest

from conftest import HOSTS, REPO, host_names, run_cli
from ncclctl.model import Node
from ncclctl.plan.paths import matrix
from ncclctl.probe import probe
from ncclctl.probe.snapshot import snapshot
from ncclctl.render import dumps, node_document

HOSTS_LIST = host_names()
SCHEMA = json.loads((REPO / "schemas" / "node.schema.json").read_text())


@pytest.mark.parametrize("host", HOSTS_LIST)
def test_golden_probe_json(host, golden):
    result = run_cli("probe", "--root", str(HOSTS / host), "--format", "json")
    assert result.returncode == 0, result.stderr
    golden(f"probe/{host}.json", result.stdout)
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, SCHEMA)
    # The JSON form reads back into the same model.
    assert Node.from_dict(doc) == probe(str(HOSTS / host))


@pytest.mark.parametrize("host", HOSTS_LIST)
@pytest.mark.parametrize("fmt", ["text", "tree", "matrix"])
def test_human_formats(host, fmt):
    result = run_cli("probe", "--root", str(HOSTS / host), "--format", fmt)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    node = probe(str(HOSTS / host))
    if fmt == "matrix" and node.gpus:
        first = result.stdout.splitlines()[0].split()
        assert first[: len(node.gpus)] == [f"GPU{g.index}" for g in sorted(node.gpus, key=lambda g: g.index)]
    if fmt == "tree":
        for g in node.gpus:
            if node.pci_device(g.bdf):
                assert f"GPU{g.index} " in result.stdout


@pytest.mark.parametrize("host", HOSTS_LIST)
def test_snapshot_of_fixture_probes_identically(host, tmp_path):
    """Re-capturing a fixture writes a tree whose probe gives the same model (and the same bytes twice)."""
    out = tmp_path / "snap"
    result = snapshot(str(out), root=str(HOSTS / host))
    original = probe(str(HOSTS / host))
    assert result.node == original
    again = probe(str(out))
    assert again == original
    assert dumps(node_document(again)) == dumps(node_document(original))


@pytest.mark.parametrize("host", HOSTS_LIST)
def test_fixture_is_lean(host, tmp_path):
    """A fixture holds only what the probe reads: re-capturing it writes no fewer files than it has."""
    out = tmp_path / "snap"
    snapshot(str(out), root=str(HOSTS / host))
    have = {p.relative_to(HOSTS / host).as_posix() for p in (HOSTS / host).rglob("*")
            if (p.is_file() or p.is_symlink()) and p.name not in ("README.md", "manifest.json")}
    written = {p.relative_to(out).as_posix() for p in out.rglob("*")
               if (p.is_file() or p.is_symlink()) and p.name != "manifest.json"}
    extra = sorted(have - written)
    assert not extra, f"{host}: files the probe never reads: {extra[:10]}"


def test_redacted_snapshot_hides_identifiers(tmp_path):
    host = "dgx-h100" if "dgx-h100" in HOSTS_LIST else HOSTS_LIST[0]
    original = probe(str(HOSTS / host))
    out = tmp_path / "red"
    snapshot(str(out), root=str(HOSTS / host), redact=True)
    redacted = probe(str(out))
    text = "\n".join(p.read_text(errors="ignore") for p in out.rglob("*") if p.is_file() and p.name != "config")
    for nic in original.nics:
        if nic.node_guid:
            assert nic.node_guid[2:] not in text
    for nd in original.netdevs:
        if nd.address and nd.address not in ("00:00:00:00:00:00",) and nd.kind != "loopback":
            assert nd.address not in text
    for g in original.gpus:
        if g.serial and set(g.serial) != {"0"}:
            assert g.serial not in text
    if original.hostname not in ("unknown", "localhost"):
        assert original.hostname not in text
    # Structure survives: same GPUs, NICs, paths.
    assert [g.bdf for g in redacted.gpus] == [g.bdf for g in original.gpus]
    assert [n.name for n in redacted.nics] == [n.name for n in original.nics]
    assert matrix(redacted).cells == matrix(original).cells
    # Redaction is consistent: the same input gives the same output.
    out2 = tmp_path / "red2"
    snapshot(str(out2), root=str(HOSTS / host), redact=True)
    assert probe(str(out2)) == redacted


def test_snapshot_tar_round_trip(tmp_path):
    host = HOSTS_LIST[0]
    tar = tmp_path / "host.tar.gz"
    result = run_cli("snapshot", "--root", str(HOSTS / host), "--tar", str(tar), "--format", "json",
                     env={"SOURCE_DATE_EPOCH": "1700000000"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["path"] == str(tar)
    first = tar.read_bytes()
    via_tar = run_cli("probe", "--root", str(tar), "--format", "json")
    direct = run_cli("probe", "--root", str(HOSTS / host), "--format", "json")
    assert via_tar.returncode == 0, via_tar.stderr
    assert via_tar.stdout == direct.stdout
    run_cli("snapshot", "--root", str(HOSTS / host), "--tar", str(tar), env={"SOURCE_DATE_EPOCH": "1700000000"})
    assert tar.read_bytes() == first, "the same capture must give a byte-identical archive"


def test_snapshot_refuses_to_clobber_a_foreign_folder(tmp_path):
    target = tmp_path / "precious"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    result = run_cli("snapshot", "--root", str(HOSTS / HOSTS_LIST[0]), "-o", str(target))
    assert result.returncode == 3
    assert "refusing to overwrite" in result.stderr
    assert (target / "notes.txt").read_text() == "keep me"
    assert not any(p.name.startswith(".ncclctl-snapshot-") for p in tmp_path.iterdir())


def test_probe_output_is_deterministic():
    host = HOSTS_LIST[0]
    a = run_cli("probe", "--root", str(HOSTS / host), "--format", "json")
    b = run_cli("probe", "--root", str(HOSTS / host), "--format", "json")
    assert a.stdout == b.stdout


def test_copied_fixture_probes_the_same(tmp_path):
    """Fixtures are relocatable: relative symlinks only."""
    host = HOSTS_LIST[0]
    dest = tmp_path / "copy"
    shutil.copytree(HOSTS / host, dest, symlinks=True)
    assert probe(str(dest)) == probe(str(HOSTS / host))


@pytest.mark.parametrize("flag", ["-o", "--tar"])
def test_snapshot_refuses_an_empty_output_path(flag):
    # "-o $DIR" with DIR unset: -o "" was an internal error (exit 70, TypeError), --tar "" tried to replace the
    # current folder ("Is a directory"). Both are refused before anything is probed or written.
    result = run_cli("snapshot", "--root", str(HOSTS / HOSTS_LIST[0]), flag, "")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == f"ncclctl: error: {flag} is empty (fix: ncclctl snapshot -o ./myhost)"
