"""``bench/nvl72_firmware.py`` runs on a small fleet (4 racks: one with a GPU on an older VBIOS) and FLT012 finds
exactly that tray; times are never asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_nvl72_firmware_bench_smoke() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "nvl72_firmware.py"), "--racks", "4", "--repeat", "1"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("72 trays; 1 VBIOS finding(s); FLT012 min "), proc.stdout
