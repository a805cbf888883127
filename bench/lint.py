#!/usr/bin/env python3
"""Lint benchmark: whole-process `ncclctl lint` of a DGX-class fixture, and `ncclctl fleet lint` of a generated fleet.

Usage: bench/lint.py [--nodes N] [--jobs J] [--repeat R] [--smoke] [--keep DIR]

The fleet is N snapshot folders made from fixtures/hosts/dgx-h100: hard-linked copies (no file data is copied)
with their own hostname, and small mutations on some nodes, each replacing one file (never editing the shared
inode): every 50th node has one rail's IB MTU at 2048, every 73rd one HCA on older firmware, every
97th one rail port DOWN, every 89th an extra NCCL_IB_TC in its environment. The fleet lint probes every
snapshot (the same code path as real captures), runs every node rule and the FLT rules, and must find exactly
the mutated nodes. The same fleet is then linted as node-model JSONs (ncclctl probe --format json, mutated in
the model), which skips the probe. Figures are wall-clock medians of fresh processes (start-up included).

Targets (issue 5): lint of a DGX-class fixture < 200 ms; fleet lint of 1,000 snapshots < 20 s on 2 cores.
"""

from __future__ import annotations

import argparse
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
BASE = REPO / "fixtures" / "hosts" / "dgx-h100"
PY = sys.executable
DEVINFO = "cmd/ibv_devinfo_-v.txt"

# (every k-th node, what, files to replace).
MUTATIONS = (
    (73, "firmware", {"sys/class/infiniband/mlx5_5/fw_ver": "28.37.1014\n"}),
    (97, "port-down", {"sys/class/infiniband/mlx5_6/ports/1/state": "1: DOWN\n",
                       "sys/class/infiniband/mlx5_6/ports/1/phys_state": "3: Disabled\n"}),
)


def _replace(root: Path, rel: str, text: str) -> None:
    p = root / rel
    real = Path(os.path.realpath(p))
    assert str(real).startswith(str(root.resolve())), rel
    real.unlink()  # a hard link to the fixture: replace, never write through
    real.write_text(text)


def make_fleet(dest: Path, n: int) -> dict[str, set[str]]:
    """Write n snapshots under dest; return host -> kinds of mutation applied."""
    truth: dict[str, set[str]] = {}
    for i in range(n):
        host = f"gpu{i:04d}"
        root = dest / host
        shutil.copytree(BASE, root, symlinks=True, copy_function=os.link)
        _replace(root, "proc/sys/kernel/hostname", host + "\n")
        kinds = set()
        for k, kind, files in MUTATIONS:
            if i % k == k - 1:
                for rel, text in files.items():
                    _replace(root, rel, text)
                kinds.add(kind)
        if i % 50 == 49:  # rail 2's IB MTU at 2048 (ibv_devinfo active_mtu)
            text = (root / DEVINFO).read_text()
            head, sep, tail = text.partition("hca_id:\tmlx5_4\n")
            _replace(root, DEVINFO, head + sep + tail.replace("active_mtu:\t\t4096 (5)", "active_mtu:\t\t2048 (4)", 1))
            kinds.add("mtu")
        if i % 89 == 88:
            env = json.loads((root / "env.json").read_text())
            env["NCCL_IB_TC"] = "106"
            _replace(root, "env.json", json.dumps(env, indent=2) + "\n")
            kinds.add("nccl-env")
        if kinds:
            truth[host] = kinds
    return truth


def make_models(dest: Path, n: int) -> dict[str, set[str]]:
    """The same fleet as node-model JSONs (ncclctl probe --format json), mutated in the model instead of files."""
    sys.path.insert(0, str(REPO))
    from ncclctl.probe import probe
    from ncclctl.render import dumps

    base = probe(str(BASE)).to_dict()
    text = dumps(base)
    truth: dict[str, set[str]] = {}
    for i in range(n):
        host = f"gpu{i:04d}"
        doc = json.loads(text)
        doc["hostname"] = host
        nics = {nic["name"]: nic for nic in doc["nics"]}
        kinds = set()
        if i % 50 == 49:
            nics["mlx5_4"]["ports"][0]["active_mtu"] = 2048
            kinds.add("mtu")
        if i % 73 == 72:
            nics["mlx5_5"]["fw_ver"] = "28.37.1014"
            kinds.add("firmware")
        if i % 97 == 96:
            nics["mlx5_6"]["ports"][0].update(state="DOWN", phys_state="Disabled")
            kinds.add("port-down")
        if i % 89 == 88:
            doc["facts"]["nccl_env"] = sorted(doc["facts"]["nccl_env"] + [["NCCL_IB_TC", "106"]])
            kinds.add("nccl-env")
        (dest / f"{host}.json").write_text(dumps(doc))
        if kinds:
            truth[host] = kinds
    return truth


def timed(argv: list[str], repeat: int, env: dict | None = None) -> tuple[float, float, int, str]:
    """Median wall seconds and median CPU seconds (user + sys of the process and all its workers)."""
    import resource

    times, cpus, rc, out = [], [], 0, ""
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env)
        times.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
        rc, out = proc.returncode, proc.stdout
    return statistics.median(times), statistics.median(cpus), rc, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=None, help="fleet lint --jobs (default: its own default)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="100 nodes, one repetition")
    ap.add_argument("--keep", metavar="DIR", help="generate the fleet here and keep it")
    args = ap.parse_args()
    if args.smoke:
        args.nodes, args.repeat = min(args.nodes, 100), 1
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure what an installed ncclctl does: cached bytecode
    nc = [PY, "-m", "ncclctl"]
    subprocess.run(nc + ["lint", "--root", str(BASE)], capture_output=True, env=env)  # warm the bytecode cache

    rows = []
    bare, bare_cpu, _, _ = timed([PY, "-c", "pass"], args.repeat, env)
    rows.append(("python -c pass (bare start-up)", bare, bare_cpu, ""))
    for fmt in ("text", "json", "sarif"):
        wall, cpu, rc, _ = timed(nc + ["lint", "--root", str(BASE), "--format", fmt], args.repeat, env)
        rows.append((f"lint --root dgx-h100 --format {fmt}", wall, cpu,
                     "< 200 ms" + ("" if rc in (0, 1) else f" rc={rc}")))
    wall, cpu, rc, _ = timed(nc + ["lint", "--root", str(BASE), "--nagios"], args.repeat, env)
    rows.append(("lint --root dgx-h100 --nagios", wall, cpu, "< 200 ms"))

    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ncclctl-fleet-"))
    truth: dict[str, set[str]] = {}
    found_ok = True
    odd: set[str] = set()
    try:
        t0 = time.perf_counter()
        if not (tmp / "gpu0000").exists():
            tmp.mkdir(parents=True, exist_ok=True)
            truth = make_fleet(tmp, args.nodes)
        setup = time.perf_counter() - t0
        snaps = sorted(str(p) for p in tmp.iterdir() if p.is_dir() and p.name != "models")[: args.nodes]
        jobs = args.jobs or os.cpu_count() or 1
        argv = nc + ["fleet", "lint", *snaps, "--format", "json", "--jobs", str(jobs)]
        fleet_repeat = 1 if args.nodes >= 500 else args.repeat
        wall, cpu, rc, out = timed(argv, fleet_repeat, env)
        doc = json.loads(out)
        odd = {h["host"] for h in doc["hosts"] if h["findings"]}
        found_ok = not truth or odd == set(truth)
        n = len(snaps)
        rows.append((f"fleet lint {n} snapshots (jobs={jobs})", wall, cpu,
                     f"< {20 * n / 1000:g} s on 2 cores; CPU / 2 = {cpu / 2:.2f} s"
                     + ("" if found_ok else "  MISMATCH")))
        rows.append(("  per node", wall / n, cpu / n, "(wall per node; CPU per node)"))

        mdir = tmp / "models"
        if not mdir.exists():
            mdir.mkdir()
            mtruth = make_models(mdir, args.nodes)
        else:
            mtruth = {}
        models = sorted(str(p) for p in mdir.iterdir())[: args.nodes]
        wall, cpu, rc, out = timed(nc + ["fleet", "lint", *models, "--format", "json", "--jobs", str(jobs)],
                                   fleet_repeat, env)
        modd = {h["host"] for h in json.loads(out)["hosts"] if h["findings"]}
        m_ok = not mtruth or modd == set(mtruth)
        found_ok = found_ok and m_ok
        rows.append((f"fleet lint {len(models)} node-model JSONs (jobs={jobs})", wall, cpu,
                     f"CPU / 2 = {cpu / 2:.2f} s" + ("" if m_ok else "  MISMATCH")))
        rows.append(("  per node", wall / len(models), cpu / len(models), ""))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    print(f"ncclctl lint benchmark ({'smoke' if args.smoke else f'median of {args.repeat}'}; {os.cpu_count()} CPUs, "
          f"Python {sys.version.split()[0]}; fleet of {args.nodes} generated in {setup:.1f} s)")
    width = max(len(r[0]) for r in rows)

    def fig(secs: float) -> str:
        return f"{secs * 1000:.1f} ms" if secs < 10 else f"{secs:.2f} s"

    print(f"{'figure':<{width}}  {'wall':>10}  {'CPU':>10}  target")
    for name, secs, cpu, target in rows:
        print(f"{name:<{width}}  {fig(secs):>10}  {fig(cpu):>10}  {target}")
    print("(wall clock is only meaningful on an otherwise idle machine; CPU is user + sys of all processes)")
    if truth and not found_ok:
        print(f"fleet lint flagged {sorted(odd - set(truth))[:5]} but not {sorted(set(truth) - odd)[:5]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
