#!/usr/bin/env python3
"""Growth of the inputs of issue 29, item 7, at three sizes each: whole-process wall time and peak RSS of the
command, one fresh process per figure (start-up included), best of N.

Usage: bench/growth.py [--repeat N] [--only lint,log,perf,fabric-cr] [--scale K]

- lint: ``lint --model`` of a DGX H100 replicated 16/32/64 times (128/256/512 GPUs, PCI domain per copy);
- log: ``log show`` of 10,000/20,000/40,000 processes with one 'Init START' line each;
- perf: ``perf check`` of one nccl-tests table of 25,000/50,000/100,000 rows;
- fabric-cr: ``fabric rails`` of a 4,096/8,192/16,384-node synthetic fabric with one CR at a line end, beside
  the same file without it (the fast path for both).

The builders are also the tests' (tests/safety/test_growth_round3.py). ``--scale`` multiplies every size.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


# --- builders ---------------------------------------------------------------------------------------------------

def replicate(model: dict, copies: int) -> dict:
    """A node model (``probe --format json``) ``copies`` times in one node: copy c in PCI domain c (root complex
    ``pciCCCC:..``), GPU indexes, UUIDs and NIC/netdev names renumbered; copy 0 is the host as it is."""
    keys = ("pci", "gpus", "nvswitches", "nics", "netdevs")
    out = {k: v for k, v in model.items() if k != "derived"}
    base = json.dumps({k: model.get(k, []) for k in keys})
    ngpu, nnic = len(model.get("gpus", [])), len(model.get("nics", []))
    acc: dict[str, list] = {k: [] for k in keys}
    for c in range(copies):
        d = json.loads(base.replace('"0000:', f'"{c:04x}:').replace('"pci0000:', f'"pci{c:04x}:'))
        for g in d["gpus"]:
            g["index"] += ngpu * c
            if g.get("uuid"):
                g["uuid"] = g["uuid"][:-4] + f"{c:04x}"
        if c:
            for n in d["nics"]:
                m = re.fullmatch(r"(.*?)(\d+)", n["name"])
                n["name"] = f"{m.group(1)}{int(m.group(2)) + nnic * c}" if m else f"{n['name']}c{c}"
            for n in d["netdevs"]:
                n["name"] = f"{n['name']}c{c}"
        for k in keys:
            acc[k].extend(d[k])
    out.update(acc)
    return out


def rank_lines(path: Path, n: int) -> None:
    """``n`` processes (8 per host) with one NCCL 2.18+ 'Init START' line each, one communicator of ``n`` ranks."""
    with open(path, "w") as out:
        for i in range(n):
            h, pid = f"node{i // 8:05d}", 40000 + i % 8
            out.write(f"{h}:{pid}:{pid} [{i % 8}] NCCL INFO comm 0x{0x55000000c0a0 + i:x} rank {i} nranks {n} "
                      f"cudaDev {i % 8} nvmlDev {i % 8} busId 1b000 commId 0x7a3f9c2e11d04b55 - Init START\n")


def perf_rows(path: Path, n: int, wrong_at: int | None = None) -> None:
    """One all_reduce table of ``n`` rows (sizes 8, 16, ... : nccl-tests ``-i 8``), the fixture's header and footer;
    the row ``wrong_at`` (0-based) with 3 wrong elements."""
    src = (REPO / "fixtures" / "logs" / "perf" / "all_reduce-h100-1node.txt").read_text().splitlines(True)
    head = src[:next(i for i, x in enumerate(src) if "(B)" in x) + 1]  # up to the column units
    foot = [x for x in src if x.startswith(("# Out of bounds", "# Avg bus"))] + ["#\n"]
    with open(path, "w") as out:
        out.writelines(head)
        for i in range(n):
            size, w = 8 * (i + 1), 3 if i == wrong_at else 0
            out.write(f"{size:12d}  {size // 4:12d}     float     sum      -1    20.00    0.00    0.00  {w:6d}"
                      f"    19.80    0.00    0.00  {w:6d}\n")
        out.writelines(foot)


def fabric_with_cr(plain: Path, crs: Path, how: str, nodes: int = 256) -> None:
    """A synthetic fabric (``fabric synth``) and the same with CRLF line ends (``crlf``) or one CR at the end of
    one link line (``one-cr-at-a-line-end``: a line end to both readers, so one more, empty, line)."""
    from ncclctl.fabric.synth import SynthSpec, synth

    text = synth(SynthSpec(nodes=nodes)).text
    plain.write_text(text)
    if how == "crlf":
        crs.write_bytes(text.replace("\n", "\r\n").encode())
    else:
        k = text.index("\n[", len(text) // 2)
        k = text.index("\n", k + 1)
        crs.write_text(text[:k] + "\r" + text[k:])


# --- measuring --------------------------------------------------------------------------------------------------

def measure(argv: list[str], repeat: int) -> tuple[float, float, int]:
    """Best wall seconds, peak RSS (MiB) and exit status of ``python -m ncclctl argv``."""
    best, peak, rc = float("inf"), 0.0, 0
    for _ in range(repeat):
        with tempfile.TemporaryFile() as fout:
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "ncclctl", *argv], stdout=fout, stderr=subprocess.DEVNULL,
                                    cwd=REPO)
            _, status, usage = os.wait4(proc.pid, 0)
            best = min(best, time.perf_counter() - t0)
            peak = max(peak, usage.ru_maxrss / 1024)
            rc = os.waitstatus_to_exitcode(status)
    return best, peak, rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", default="lint,log,perf,fabric-cr")
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args()
    only = set(a.only.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="ncclctl-growth-"))
    rows = []

    def row(name: str, size: int, argv: list[str]) -> None:
        t, m, rc = measure(argv, a.repeat)
        rows.append((name, size, t, m))
        print(f"{name:<28} {size:>9,}  {t:8.2f} s  {m:8.1f} MiB  exit {rc}", flush=True)

    def sizes(*base: int) -> list[int]:
        return [max(1, int(b * a.scale)) for b in base]

    if "lint" in only:
        model = json.loads(subprocess.run([sys.executable, "-m", "ncclctl", "probe", "--root",
                                           str(REPO / "fixtures/hosts/dgx-h100"), "--format", "json"],
                                          capture_output=True, text=True, cwd=REPO, check=True).stdout)
        for k in sizes(16, 32, 64):
            f = tmp / f"dgx-x{k}.json"
            f.write_text(json.dumps(replicate(model, k)))
            row("lint (GPUs)", 8 * k, ["lint", "--model", str(f), "-f", "json"])
    if "log" in only:
        for n in sizes(10_000, 20_000, 40_000):
            f = tmp / f"ranks-{n}.log"
            rank_lines(f, n)
            row("log show (rank lines)", n, ["log", "show", str(f)])
    if "perf" in only:
        for n in sizes(25_000, 50_000, 100_000):
            f = tmp / f"rows-{n}.txt"
            perf_rows(f, n)
            row("perf check (rows)", n, ["perf", "check", str(f)])
    if "fabric-cr" in only:
        for n in sizes(4096, 8192, 16384):
            plain, crs = tmp / f"fabric-{n}.txt", tmp / f"fabric-{n}-cr.txt"
            fabric_with_cr(plain, crs, "one-cr-at-a-line-end", nodes=n)
            row("fabric rails, no CR (nodes)", n, ["fabric", "rails", str(plain)])
            row("fabric rails, one CR (nodes)", n, ["fabric", "rails", str(crs)])
    for name in dict.fromkeys(r[0] for r in rows):
        pts = [r for r in rows if r[0] == name]
        if len(pts) >= 2:
            print(f"{name}: time x{pts[-1][2] / pts[0][2]:.1f}, memory x{pts[-1][3] / pts[0][3]:.1f} "
                  f"for input x{pts[-1][1] / pts[0][1]:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
