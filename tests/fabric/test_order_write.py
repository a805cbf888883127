"""`fabric order -o` writes like every other writer: atomic, only on change, --check/--diff/--backup."""

from __future__ import annotations

from conftest import run_cli


def test_order_output_check_diff_backup(tmp_path):
    a, b, out = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "hosts"
    assert run_cli("fabric", "synth", "--nodes", "64", "-o", str(a)).returncode == 0
    assert run_cli("fabric", "synth", "--nodes", "64", "--host-order", "interleaved", "-o", str(b)).returncode == 0
    r = run_cli("fabric", "order", str(a), "-f", "hostfile", "-o", str(out))
    assert r.returncode == 0 and "created" in r.stderr
    first = out.read_bytes()
    assert first.splitlines()[0] == b"node00001 slots=8"
    r = run_cli("fabric", "order", str(a), "-f", "hostfile", "-o", str(out))
    assert "up to date" in r.stderr and out.read_bytes() == first
    # Another fabric (hosts numbered across groups): a different order; --check writes nothing, --diff shows it.
    r = run_cli("fabric", "order", str(b), "-f", "hostfile", "-o", str(out), "--check", "--diff")
    assert r.returncode == 0 and "would be changed" in r.stderr
    assert r.stdout.startswith(f"--- {out}") and "+node00003 slots=8" in r.stdout
    assert out.read_bytes() == first
    r = run_cli("fabric", "order", str(b), "-f", "hostfile", "-o", str(out), "--backup")
    assert r.returncode == 0 and out.read_bytes() != first
    backups = [p for p in tmp_path.iterdir() if p.name.startswith("hosts.") and p.name.endswith("~")]
    assert len(backups) == 1 and backups[0].read_bytes() == first
    r = run_cli("fabric", "order", str(a), "-f", "hostfile", "--check")
    assert r.returncode == 2 and "-o" in r.stderr
