"""The live host (CI's machine: no GPU): probe, snapshot, and probing the snapshot give the same model."""

from __future__ import annotations

import json

from conftest import run_cli


def test_live_probe_and_snapshot_agree(tmp_path):
    live = run_cli("probe", "--format", "json")
    assert live.returncode == 0, live.stderr
    out = tmp_path / "snap"
    snap = run_cli("snapshot", "-o", str(out), "--format", "json")
    assert snap.returncode == 0, snap.stderr
    assert json.loads(snap.stdout)["path"] == str(out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == 1 and manifest["kernel"]
    again = run_cli("probe", "--root", str(out), "--format", "json")
    assert again.returncode == 0, again.stderr
    a, b = json.loads(live.stdout), json.loads(again.stdout)
    # Netdev counters can move between two runs; the structure may not.
    for doc in (a, b):
        for nd in doc["netdevs"]:
            nd["operstate"] = None
    assert a == b
