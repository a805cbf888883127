#!/usr/bin/env python3
"""Fabric benchmark: parse + rails + cabling check + ordering on synthetic rail-optimized fabrics.

Usage: bench/fabric.py [--sizes 512,4096,32768] [--repeat N] [--smoke]
       bench/fabric.py --readers PAIRS [--sizes 8192,32768]

For each size (nodes x 8 rails, groups of 32, 1% of the nodes miscabled and 1% of the links down) it writes the
``fabric synth`` output into a temp dir, then runs ``python -m ncclctl fabric rails FILE`` and ``fabric order
FILE`` as whole processes (start-up included), timed with os.wait4 for the child's own peak RSS, median of N runs.
A second table times the stages in-process (parse, graph, layout + check, order + cost model) so it is clear where
the time goes. Growth ratios between consecutive sizes are printed beside the n log n ratio, and the ring order's
crossings beside the lower bound (and the sorted-name order's, hosts numbered across groups).

With ``--readers PAIRS`` it compares the C fabric reader with the pure-Python one instead (the same interpreter,
``NCCLCTL_PURE_PYTHON=1`` for the second): per size and form (ibnetdiscover, ibnetdiscover -p), PAIRS alternating
runs of ``fabric order FILE -f slurm`` and ``fabric rails FILE`` as whole processes, CPU time (os.wait4), and the
reader alone in this process (lean.read_graph, CPU time); the median of the pairs' Python/C ratios.

Targets (2-core machine): 4,096 nodes under 2 s and 500 MB whole-process; growth no worse than n log n; orderings
at the crossing lower bound.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PY = sys.executable


def run(argv: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[float, float, float, int, str]:
    """Median wall seconds, median CPU seconds (user + system), max peak RSS (MiB), last exit status and last
    stdout of a fresh process. CPU time is the steadier figure on a shared machine."""
    times, cpus, peaks, rc, out = [], [], [], 0, ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO, env=env)
        data = proc.stdout.read()  # type: ignore[union-attr]
        _, status, usage = os.wait4(proc.pid, 0)
        times.append(time.perf_counter() - t0)
        cpus.append(usage.ru_utime + usage.ru_stime)
        peaks.append(usage.ru_maxrss / 1024)
        rc = os.waitstatus_to_exitcode(status)
        out = data.decode()
    return statistics.median(times), statistics.median(cpus), max(peaks), rc, out


def stages(path: str) -> dict[str, float]:
    """Seconds per stage, in this process."""
    from ncclctl.fabric.graph import from_fabric, host_endpoints, parse_fabric_text, read_fabric_text
    from ncclctl.fabric.layout import analyze
    from ncclctl.fabric.order import plan_order
    from ncclctl.fabric.sources import FabricInput

    import gc

    gc.disable()  # as the CLI does
    t = [time.perf_counter()]
    text = read_fabric_text(path)
    kind, fab = parse_fabric_text(text, source=path)
    t.append(time.perf_counter())
    g = from_fabric(fab, source=path, kind=kind)
    eps, found = host_endpoints(g)
    t.append(time.perf_counter())
    lay = analyze(FabricInput(graph=g, endpoints=eps, findings=g.findings + found))
    t.append(time.perf_counter())
    plan_order(lay)
    t.append(time.perf_counter())
    del text, fab, g, eps, lay
    gc.enable()
    gc.collect()
    return {"parse": t[1] - t[0], "graph": t[2] - t[1], "layout": t[3] - t[2], "order": t[4] - t[3]}


def readers(sizes: list[int], pairs: int) -> None:
    """The C reader against the pure-Python one: whole commands and the reader alone, alternating, CPU time."""
    import gc

    from ncclctl.fabric import lean
    from ncclctl.fabric.synth import SynthSpec, as_form, synth

    c_env = {k: v for k, v in os.environ.items() if k != "NCCLCTL_PURE_PYTHON"}
    py_env = dict(c_env, NCCLCTL_PURE_PYTHON="1")
    rows = []
    print(f"C reader vs pure Python: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, {pairs} pairs, "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory(prefix="ncclctl-fabric-bench-") as tmp:
        for n in sizes:
            text = synth(SynthSpec(nodes=n, rails=8, miscable=max(1, n // 100), down=max(1, n // 100), seed=1,
                                   host_order="interleaved")).text
            for form in ("ibnetdiscover", "ibnetdiscover-p"):
                path = os.path.join(tmp, f"fabric-{n}-{form}.txt")
                with open(path, "w") as fh:
                    fh.write(text if form == "ibnetdiscover" else as_form(text, form))
                for cmd in ("order", "rails"):
                    argv = [PY, "-m", "ncclctl", "fabric", cmd, path] + (["-f", "slurm"] if cmd == "order" else [])
                    cs, ps = [], []
                    for _ in range(pairs):
                        cs.append(run(argv, 1, c_env)[1])
                        ps.append(run(argv, 1, py_env)[1])
                    rows.append((f"{n:,}", form, f"fabric {cmd}", f"{statistics.median(cs):.2f} s",
                                 f"{statistics.median(ps):.2f} s",
                                 f"{statistics.median(p / c for p, c in zip(ps, cs)):.2f}x"))
                cs, ps = [], []
                gc.disable()
                for _ in range(pairs):
                    for env, out in ((c_env, cs), (py_env, ps)):
                        os.environ.pop("NCCLCTL_PURE_PYTHON", None)
                        os.environ.update(env)
                        t0 = time.process_time()
                        g = lean.read_graph(path)
                        out.append(time.process_time() - t0)
                        assert g is not None
                        del g
                        gc.collect()
                gc.enable()
                os.environ.pop("NCCLCTL_PURE_PYTHON", None)
                rows.append((f"{n:,}", form, "reader alone", f"{statistics.median(cs):.2f} s",
                             f"{statistics.median(ps):.2f} s",
                             f"{statistics.median(p / c for p, c in zip(ps, cs)):.2f}x"))
            del text
    _table(("nodes", "form", "what", "C (CPU)", "Python (CPU)", "Python/C"), rows)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="512,4096,32768", help="comma-separated node counts")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="512 nodes, one run (CI)")
    ap.add_argument("--readers", type=int, metavar="PAIRS",
                    help="compare the C fabric reader with the pure-Python one: PAIRS alternating runs per case")
    args = ap.parse_args()
    if args.readers:
        readers([int(s) for s in args.sizes.split(",")], args.readers)
        return 0
    sizes = [512] if args.smoke else [int(s) for s in args.sizes.split(",")]
    repeat = 1 if args.smoke else args.repeat

    from ncclctl.fabric.synth import SynthSpec, synth

    rows, stage_rows, results = [], [], []
    with tempfile.TemporaryDirectory(prefix="ncclctl-fabric-bench-") as tmp:
        for n in sizes:
            path = os.path.join(tmp, f"fabric-{n}.txt")
            res = synth(SynthSpec(nodes=n, rails=8, miscable=max(1, n // 100), down=max(1, n // 100), seed=1,
                                  host_order="interleaved"))
            with open(path, "w") as fh:
                fh.write(res.text)
            mb = os.path.getsize(path) / 1e6
            del res
            base = [PY, "-m", "ncclctl", "fabric"]
            r_wall, r_cpu, r_rss, r_rc, r_out = run(base + ["rails", path, "--format", "json"], repeat)
            o_wall, o_cpu, o_rss, o_rc, o_out = run(base + ["order", path, "--format", "json"], repeat)
            rails_doc, order_doc = json.loads(r_out), json.loads(o_out)
            st = stages(path)
            results.append((n, r_wall, o_wall, r_rss, o_rss, r_cpu, o_cpu))
            rows.append((f"{n:,}", f"{mb:.0f} MB", f"{r_wall:.2f} s", f"{r_cpu:.2f} s", f"{r_rss:.0f} MiB",
                         f"{o_wall:.2f} s", f"{o_cpu:.2f} s", f"{o_rss:.0f} MiB",
                         f"{order_doc['crossings']}/{order_doc['lower_bound']}",
                         str(order_doc["naive"]["crossings"]), str(len(rails_doc["problems"])),
                         "" if r_rc in (0, 1) and o_rc == 0 else f"rc={r_rc},{o_rc}"))
            stage_rows.append((f"{n:,}", *(f"{st[k]:.3f} s" for k in ("parse", "graph", "layout", "order"))))
    head = ("nodes", "file", "rails", "cpu", "rails RSS", "order", "cpu", "order RSS", "crossings/bound",
            "sorted-name", "problems", "")
    print(f"fabric benchmark: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, median of {repeat}")
    _table(head, rows)
    print("\nin-process stages (parse = ibnetdiscover parser; graph, layout + check, order + cost = fabric code)")
    _table(("nodes", "parse", "graph", "layout", "order"), stage_rows)
    if len(results) > 1:
        print("\ngrowth between sizes (whole process, start-up included)")
        growth = []
        for (n1, r1, o1, rm1, om1, rc1, oc1), (n2, r2, o2, rm2, om2, rc2, oc2) in zip(results, results[1:]):
            nlogn = (n2 * math.log(n2)) / (n1 * math.log(n1))
            growth.append((f"{n1:,} -> {n2:,}", f"{n2 / n1:.1f}x", f"{nlogn:.1f}x", f"{r2 / r1:.1f}x",
                           f"{rc2 / rc1:.1f}x", f"{o2 / o1:.1f}x", f"{oc2 / oc1:.1f}x", f"{rm2 / rm1:.1f}x"))
        _table(("sizes", "n", "n log n", "rails wall", "rails cpu", "order wall", "order cpu", "peak RSS"), growth)
    for n, r_wall, o_wall, r_rss, o_rss, *_ in results:
        if n == 4096:
            ok = max(r_wall, o_wall) < 2.0 and max(r_rss, o_rss) < 500
            print(f"\ntarget 4,096 nodes < 2 s and < 500 MB: {'met' if ok else 'NOT met'} "
                  f"(rails {r_wall:.2f} s {r_rss:.0f} MiB, order {o_wall:.2f} s {o_rss:.0f} MiB)")
    return 0


def _table(head, rows) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for row in (head, *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())


if __name__ == "__main__":
    sys.exit(main())
