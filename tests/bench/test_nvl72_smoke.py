"""``bench/nvl72.py`` runs end to end on a small fleet (8 racks, one repaired tray) and checks its own results
(FLT013 finds exactly the repaired trays, the written block files check clean); times are never asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_nvl72_bench_smoke() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "nvl72.py"), "--racks", "8", "--repeat", "1"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "8 racks, 144 trays, 576 GPUs" in proc.stdout and "1 repaired trays found by FLT013" in proc.stdout
    for row in ("fleet lint --rule FLT012,FLT013", "fleet blocks --format slurm-block", "fleet blocks --check topology.yaml"):
        assert row in proc.stdout, proc.stdout
