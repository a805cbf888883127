#!/usr/bin/env python3
"""Fabric parser benchmark: parse time and peak memory per fabric size, for ibnetdiscover (topology and -p forms)
and iblinkinfo (default and --line forms), beside an awk pass over the same file as the floor.

Usage: bench/parsers.py [--sizes 512,4096,32768] [--repeat N] [--forms ibnetdiscover,iblinkinfo,...] [--keep DIR]

Inputs are ``ncclctl fabric synth --nodes N`` fabrics (8 rails, groups of 32, 4 spines per rail) written in each
form (``fabric synth --format``). Every figure comes from a fresh process (``python -m ...``, one parse):

- parse: seconds inside the parse call only (the file is already in memory), best of N runs;
- process: the whole child's wall time (start-up, reading the file, parsing), best of N;
- peak: the child's peak RSS (``ru_maxrss``: start-up and the file's text included);
- awk: ``awk '/^\\[/{n++} END{print n}'`` (or the pattern that counts port lines of the form), the one-pass floor;
  ratio = parse / awk;
- growth: parse time over the parse time of the previous size (the sizes grow 8x: linear is ~8).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
#: form -> (parser function, awk pattern matching one line per port listed)
FORMS = {
    "ibnetdiscover": ("ncclctl.parsers.ibnetdiscover:parse_ibnetdiscover", r"/^\[/"),
    "ibnetdiscover-p": ("ncclctl.parsers.ibnetdiscover:parse_ibnetdiscover", r"/^(SW|CA|RT) /"),
    "iblinkinfo": ("ncclctl.parsers.iblinkinfo:parse_iblinkinfo", r"/==>/"),
    "iblinkinfo-line": ("ncclctl.parsers.iblinkinfo:parse_iblinkinfo", r"/==>/"),
}
CHILD = r"""
import importlib, json, sys, time
mod, fn = sys.argv[1].split(":")
parse = getattr(importlib.import_module(mod), fn)
text = open(sys.argv[2], encoding="utf-8").read()
t0 = time.perf_counter()
fabric = parse(text, source=sys.argv[2])
dt = time.perf_counter() - t0
print(json.dumps({"parse": dt, "nodes": len(fabric.nodes), "ports": sum(len(n.ports) for n in fabric.nodes)}))
"""


def measure(argv: list[str], repeat: int) -> tuple[float, float, str]:
    """Best wall seconds, max peak RSS (MiB) and the last stdout of ``argv`` run ``repeat`` times."""
    best, peak, out = float("inf"), 0.0, ""
    for _ in range(repeat):
        with tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
            t0 = time.perf_counter()
            proc = subprocess.Popen(argv, stdout=fout, stderr=ferr, cwd=REPO)
            _, status, usage = os.wait4(proc.pid, 0)  # the child's own peak RSS
            best = min(best, time.perf_counter() - t0)
            peak = max(peak, usage.ru_maxrss / 1024)
            fout.seek(0)
            ferr.seek(0)
            if os.waitstatus_to_exitcode(status):
                raise SystemExit(f"{' '.join(argv[:4])} failed: {ferr.read().decode()[-500:]}")
            out = fout.read().decode()
    return best, peak, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="512,4096,32768", help="node counts (comma-separated)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (best is kept)")
    ap.add_argument("--forms", default=",".join(FORMS), help="forms to measure (comma-separated)")
    ap.add_argument("--keep", metavar="DIR", help="write the fabric files here and keep them")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    forms = args.forms.split(",")
    for f in forms:
        if f not in FORMS:
            ap.error(f"unknown form {f!r}: use {', '.join(FORMS)}")
    awk = shutil.which("mawk") or shutil.which("awk")
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ncclctl-bench-parsers-"))
    tmp.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for form in forms:
            prev = None
            for n in sizes:
                path = tmp / f"fabric-{n}-{form}.txt"
                if not path.exists():  # through the CLI: this process stays small (a child's peak RSS
                    # counts the pages it had at fork time, before exec)
                    measure([PY, "-m", "ncclctl", "fabric", "synth", "--nodes", str(n), "--format", form,
                             "-o", str(path)], 1)
                mb = path.stat().st_size / 1e6
                parse_best = float("inf")
                proc_best, peak, out = measure([PY, "-c", CHILD, FORMS[form][0], str(path)], args.repeat)
                for _ in range(args.repeat):  # the parse-only figure: best over fresh processes
                    _, _, o = measure([PY, "-c", CHILD, FORMS[form][0], str(path)], 1)
                    parse_best = min(parse_best, json.loads(o)["parse"])
                doc = json.loads(out)
                awk_s = measure([awk, FORMS[form][1] + "{n++} END{print n}", str(path)], args.repeat)[0] if awk else None
                growth = f"{parse_best / prev:.1f}x" if prev else ""
                prev = parse_best
                rows.append((form, f"{n}", f"{mb:.1f} MB", f"{doc['nodes']}", f"{doc['ports']}",
                             f"{parse_best:.3f} s", f"{proc_best:.3f} s", f"{peak:.0f} MiB",
                             f"{awk_s:.3f} s" if awk_s else "n/a", f"{parse_best / awk_s:.1f}x" if awk_s else "",
                             growth))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    headers = ("form", "nodes", "input", "fabric nodes", "linked ports", "parse", "process", "peak RSS",
               f"awk ({os.path.basename(awk) if awk else '-'})", "parse/awk", "growth")
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    print(f"fabric parser benchmark (best of {args.repeat}; {os.cpu_count()} CPUs, Python {sys.version.split()[0]})")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
