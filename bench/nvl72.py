#!/usr/bin/env python3
"""NVL72 fleet benchmark (issue 30): 64 GB200 NVL72 racks (1,152 trays, 4,608 GPUs) checked end to end.

Usage: bench/nvl72.py [--racks N] [--repeat R] [--jobs J] [--keep DIR]

The fleet: N racks of 18 lean tray models written by ``fixtures/fleet/build.py``'s ``tray_model`` (the
gb200-nvl72 tray with each tray's host name, IMEX address and node list, GPU UUIDs); every rack its own cluster
UUID, odd racks in the default partition (clique 32766, the shared sentinel), even racks in clique 1; faults planted
the way issue 30 describes them: in every 8th rack tray 7 is back from a repair in the default partition (its own
domain), and its Kubernetes clique label is the stale pre-repair one. One inventory (hostlists not used: one line
per tray, each with its nvidia.com/gpu.clique label), a Slurm topology.conf and topology.yaml written by
``fleet blocks``.

Rows (wall-clock medians of fresh processes, start-up included):
  fleet lint --rule FLT012,FLT013   load every model, the fleet facts, both NVLink-domain fleet rules
  fleet blocks (slurm-block / yaml)  the domains and the Slurm block file
  fleet blocks --check (conf/yaml)  read the file back and hold it against the domains
The run checks the results too: FLT013 fires exactly on the repaired trays, the written files check clean.
Target (issue 30): the 64-rack fleet "checked in seconds".
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable


def build_fleet(root: Path, racks: int) -> list[str]:
    spec = importlib.util.spec_from_file_location("fleet_build", REPO / "fixtures" / "fleet" / "build.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.path.insert(0, str(REPO))
    from ncclctl.probe import probe

    base = probe(str(REPO / "fixtures" / "hosts" / "gb200-nvl72"))
    (root / "models").mkdir(parents=True)
    inv = ["version: 1", "hosts:"]
    repaired = []
    for rack in range(1, racks + 1):
        uuid = f"{rack:08x}-5b3e-4a60-8c1d-e94b27a05f18"
        clique = 32766 if rack % 2 else 1
        for tray in range(1, 19):
            name = mod.host(rack, tray)
            broken = rack % 8 == 0 and tray == 7
            (root / "models" / f"{name}.json").write_text(
                mod.tray_model(base, rack, tray, uuid, 32766 if broken else clique))
            inv.append(f"  {name}: {{model: models/{name}.json, labels: {{nvidia.com/gpu.clique: \"{uuid}.{clique}\"}}}}")
            if broken and clique != 32766:
                repaired.append(name)
    (root / "inventory.yaml").write_text("\n".join(inv) + "\n")
    return repaired


def timed(args: list[str], repeat: int, ok: tuple[int, ...] = (0,)
          ) -> tuple[tuple[float, float], subprocess.CompletedProcess]:
    """(median wall seconds, median CPU seconds of the process and its workers), the last run."""
    import resource

    times, cpus = [], []
    last = None
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        last = subprocess.run([PY, "-m", "ncclctl", *args], capture_output=True, text=True, cwd=REPO)
        times.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        assert last.returncode in ok, (args, last.returncode, last.stderr[-2000:])
    assert last is not None
    return (statistics.median(times), statistics.median(cpus)), last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--racks", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", help="build the fleet in this folder and keep it")
    args = ap.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ncclctl-nvl72-"))
    try:
        t0 = time.perf_counter()
        repaired = build_fleet(root, args.racks)
        built = time.perf_counter() - t0
        inv = str(root / "inventory.yaml")
        rows = []
        sec, r = timed(["fleet", "lint", "--inventory", inv, "--rule", "FLT012,FLT013", "-j", str(args.jobs),
                        "--format", "json"], args.repeat, ok=(1,))
        doc = json.loads(r.stdout)
        flt013 = sorted(h["host"] for h in doc["hosts"] for f in h["findings"] if f["rule"] == "FLT013")
        assert flt013 == sorted(repaired), (flt013, repaired)
        rows.append(("fleet lint --rule FLT012,FLT013", sec))
        for fmt, ext in (("slurm-block", "conf"), ("slurm-yaml", "yaml")):
            sec, r = timed(["fleet", "blocks", "--inventory", inv, "--format", fmt], args.repeat)
            rows.append((f"fleet blocks --format {fmt}", sec))
            out = root / f"topology.{ext}"
            out.write_text(r.stdout)
            sec, r = timed(["fleet", "blocks", "--inventory", inv, "--check", str(out)], args.repeat)
            assert "agree with" in r.stdout, r.stdout[-500:]
            rows.append((f"fleet blocks --check topology.{ext}", sec))
        trays = args.racks * 18
        print(f"{args.racks} racks, {trays} trays, {trays * 4} GPUs (fleet built in {built:.1f} s; "
              f"{len(repaired)} repaired trays found by FLT013); median of {args.repeat}, -j {args.jobs}")
        print(f"  {'':<36} {'wall':>8} {'CPU':>8}")
        for what, (sec, cpu) in rows:
            print(f"  {what:<36} {sec:6.2f} s {cpu:6.2f} s")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
