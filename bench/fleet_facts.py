#!/usr/bin/env python3
"""``fleet lint --facts`` over a fleet of N facts documents (issue 31's target: 10,000 nodes in < 30 s, < 1 GB).

Usage: bench/fleet_facts.py [--sizes 1000,3000,10000] [--keep DIR]

The fleet is written as Ansible's ``fetch`` lays it out (``DIR/gpuNNNNN/etc/ansible/facts.d/ncclctl.fact``): the
facts of fixtures/hosts/dgx-h100 (18 KB each) under N host names, one host in 50 with the facts of
dgx-h100-port-down (IB001, NCCL011 and FLT011 planted) and one in 500 on another NVIDIA driver (FLT003 planted).
Each size is one fresh ``python -m ncclctl fleet lint --facts DIR --format json -o FILE`` process: wall time, its CPU
time (user + system) and its peak RSS (``os.wait4``; CPU time is the figure a shared machine's load leaves alone), then the report is checked: every planted fault found on exactly its hosts, nothing
else. Figures go to bench/RESULTS.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def base_docs() -> dict[str, dict]:
    from ncclctl.ops.facts import build
    from ncclctl.inventory import load_snapshot

    out = {}
    for name in ("dgx-h100", "dgx-h100-port-down"):
        root = str(REPO / "fixtures" / "hosts" / name)
        out[name] = build(lambda root=root: load_snapshot(root), source={"kind": "root", "path": root})
    return out


def write_fleet(folder: Path, n: int, docs: dict[str, dict]) -> tuple[set[str], set[str]]:
    """N facts files; returns (hosts with the port down, hosts on the odd driver)."""
    down, driver = set(), set()
    texts = {}
    for i in range(1, n + 1):
        host = f"gpu{i:05d}"
        kind = "dgx-h100-port-down" if i % 50 == 7 else "dgx-h100"
        odd = i % 500 == 123
        key = (kind, odd)
        if key not in texts:
            d = json.loads(json.dumps(docs[kind]))
            d["hostname"] = "@HOST@"
            if odd:
                d["fleet"]["facts"]["driver"] = "535.183.01"
            texts[key] = json.dumps(d, indent=2)
        (down if kind != "dgx-h100" else set()).add(host)
        if odd:
            driver.add(host)
        p = folder / host / "etc" / "ansible" / "facts.d"
        p.mkdir(parents=True)
        (p / "ncclctl.fact").write_text(texts[key].replace('"@HOST@"', json.dumps(host)))
    return down, driver


def run(folder: Path, out: Path) -> tuple[float, float, int, int]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ncclctl", "fleet", "lint", "--facts", str(folder), "--format",
                             "json", "-o", str(out)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status)


def check(report: Path, n: int, down: set[str], driver: set[str]) -> str:
    doc = json.loads(report.read_text())
    got: dict[str, set[str]] = {}
    for h in doc["hosts"]:
        for f in h["findings"]:
            got.setdefault(f["rule"], set()).add(h["host"])
    want = {"IB001": down, "NCCL011": down, "FLT011": down, "FLT003": driver}
    ok = got == want and doc["summary"]["hosts"] == n and not doc["fleet_findings"]
    return "planted faults found" if ok else f"MISMATCH: {sorted((k, len(v)) for k, v in got.items())}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000,10000")
    ap.add_argument("--keep", help="write the fleets under this folder and keep them")
    args = ap.parse_args()
    docs = base_docs()
    print(f"fleet lint --facts (Python {'.'.join(map(str, sys.version_info[:3]))}, {os.cpu_count()} CPUs)")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    print(f"{'hosts':>7}  {'wall':>8}  {'CPU':>8}  {'CPU/host':>9}  {'peak RSS':>9}  {'rc':>2}  check")
    bad = 0
    for n in (int(x) for x in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(dir=args.keep) as tmp:
            folder = Path(tmp) / "fetched"
            down, driver = write_fleet(folder, n, docs)
            report = Path(tmp) / "report.json"
            wall, cpu, rss, rc = run(folder, report)
            verdict = check(report, n, down, driver) if report.exists() else "no report"
            bad += verdict != "planted faults found" or rc != 1
            print(f"{n:>7}  {wall:>7.2f}s  {cpu:>7.2f}s  {cpu / n * 1000:>6.2f} ms  {rss / 2**20:>5.0f} MiB  {rc:>2}  "
                  f"{verdict}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
