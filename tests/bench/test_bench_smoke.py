"""``bench/run --smoke`` runs end to end and prints every row the project tracks.

Only the table's shape and its correctness notes are asserted (every command exits 0 or 1, the fleet lint
finds exactly the planted faults, ring orders sit at the crossing lower bound); times are never asserted
here: they live in ``bench/RESULTS.md``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_bench_smoke_prints_every_figure(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "run"), "--smoke", "--fleet", "20"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    lines = out.splitlines()
    assert lines[0].startswith("ncclctl benchmark (smoke, 1 run;"), out
    header = lines[1].split()
    assert header[:3] == ["figure", "wall", "peak"], out
    for needle in ("python -c pass (peer: bare start-up, same interpreter)", "ncclctl --version", "probe --root dgx-h100",
                   "topo generate --root dgx-h100", "topo validate dgx-h100.xml --root dgx-h100",
                   "topo predict --root dgx-h100 -N 2", "topo predict dgx-h100.xml -N 2",
                   "lint --root dgx-h100", "probe (live host)", "fleet lint 20 snapshots", "per node",
                   "ibnetdiscover parse only, 512 nodes", "fabric rails, 512 nodes x 8 rails",
                   "fabric order, 512 nodes x 8 rails", "ring crossings, 512 nodes", "log show, 64-rank job log",
                   "fabric reader in use", "fabric order -f slurm, 512 nodes (topology form)",
                   "fabric order -f slurm, 512 nodes (ports form -p)", "same, topology form, pure Python",
                   "same, -p, pure Python",
                   "log check, 64-rank job log", "log show, one rank's log", "log check, one rank's log",
                   "perf check all_reduce"):
        assert any(needle in line for line in lines), f"missing row {needle!r}:\n{out}"
    # A command that failed (exit status other than 0/1) is flagged in its row.
    assert "rc=" not in out, out
    assert "planted faults found" in out and "MISMATCH" not in out, out
    assert "at bound" in out and "ABOVE bound" not in out, out
    # Every row with a numeric target carries its verdict (times vary by machine, so only its presence is
    # asserted).
    for line in lines[3:]:
        if "< 200 ms" in line or "<= 3x bare" in line:
            assert line.rstrip().endswith(("met", "NOT met")), line
    # Every timed row has a figure in ms or s.
    for line in lines[3:]:
        if line.startswith(("python", "ncclctl", "probe", "topo", "lint", "fleet", "fabric", "ibnetdiscover", "log",
                            "perf")):
            assert " ms " in line or " s " in line, line
