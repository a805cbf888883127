"""LOG029: NCCL's 'MNNVL busId ... fabric UUID ... cliqueId ... state ... healthMask ...' lines: the cluster UUID
turned back into the form the probe records, state and health mask judged as nvml.h defines them."""

from __future__ import annotations

import json

from conftest import run_cli
from ncclctl.logs.parse import mnnvl_uuid

LINES = [
    "gb-t04:5000:5000 [0] NCCL INFO NCCL version 2.27.7+cuda12.9",
    "gb-t04:5000:5000 [0] NCCL INFO MNNVL busId 0x801000 fabric UUID 7e4db093e4521a6c.317d9ec4082bf5a1 cliqueId 0x1 "
    "state 3 healthMask 0xaa",
]
DEGRADED = ("gb-t04:5001:5001 [1] NCCL INFO MNNVL busId 0x901000 fabric UUID 7e4db093e4521a6c.317d9ec4082bf5a1 "
            "cliqueId 0x1 state 3 healthMask 0xa9")
INCOMPLETE = "gb-t04:5002:5002 [2] NCCL INFO MNNVL busId 0x1801000 fabric UUID 0.0 cliqueId 0x0 state 2 healthMask 0x0"


def test_uuid_as_the_probe_records_it():
    # The gb200-nvl72 fixture's cluster UUID, as NCCL prints it (two little-endian longs).
    assert mnnvl_uuid("7e4db093e4521a6c", "317d9ec4082bf5a1") == "6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31"
    assert mnnvl_uuid("0", "0") == "00000000-0000-0000-0000-000000000000"


def _check(tmp_path, lines):
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    r = run_cli("log", "check", str(log), "--format", "json")
    return r, [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "LOG029"]


def test_healthy_mnnvl_lines(tmp_path):
    r, found = _check(tmp_path, LINES)
    assert found == [], found


def test_degraded_and_incomplete(tmp_path):
    r, found = _check(tmp_path, LINES + [DEGRADED, INCOMPLETE])
    assert r.returncode == 1
    got = sorted((f["severity"], f["line"]) for f in found)
    assert got == [("error", 4), ("warning", 3)]
    msgs = " ".join(f["message"] for f in found)
    assert "GPU 0018:01:00.0" in msgs and "IN_PROGRESS" in msgs and "DEGRADED_BW=TRUE" in msgs
    assert "cluster 6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31 clique 1" in msgs
    assert all(f["fix"] and f["evidence"] for f in found)
    assert run_cli("explain", "LOG029").returncode == 0
