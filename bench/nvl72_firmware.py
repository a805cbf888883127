#!/usr/bin/env python3
"""FLT012's GPU firmware agreement at NVL72 scale (issue 30): N racks of 18 lean GB200 trays
(``fixtures/fleet/build.py``'s ``tray_model``, every GPU on the fixture's VBIOS), one rack in four with tray 12's GPU 2
on an older VBIOS (``--no-split``: none); the fleet facts built once in this process, then ``fleet_nvlink_domain``
timed ``--repeat`` times. Prints trays, the VBIOS findings and the rule's min/median milliseconds.

Usage: bench/nvl72_firmware.py [--racks 64] [--repeat 5] [--no-split]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--racks", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-split", action="store_true")
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("fleet_build", REPO / "fixtures" / "fleet" / "build.py")
    assert spec and spec.loader
    fb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fb)
    from ncclctl.lint.rules_fleet import FleetCtx, fleet_nvlink_domain, nvlink_facts
    from ncclctl.model import Node
    from ncclctl.probe import probe

    base = probe(str(REPO / "fixtures" / "hosts" / "gb200-nvl72"))
    hosts = []
    for rack in range(1, args.racks + 1):
        uuid = f"{rack:08x}-0000-4000-8000-000000000000"
        fb.OLD_VBIOS = {(rack, 12, 2): "97.00.82.00.5F"} if rack % 4 == 0 and not args.no_split else {}
        for tray in range(1, 19):
            node = Node.from_dict(json.loads(fb.tray_model(base, rack, tray, uuid, 1)))
            hosts.append((node.hostname, {"nvlink": nvlink_facts(node), "driver": node.facts.driver_version}))
    fctx = FleetCtx(hosts=hosts)
    times, hits = [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        hits = list(fleet_nvlink_domain(fctx, {"max_trays": 18}))
        times.append(time.perf_counter() - t)
    found = [h for h in hits if "VBIOS" in h.message]
    print(f"{len(hosts)} trays; {len(found)} VBIOS finding(s); FLT012 min {min(times) * 1000:.1f} ms, "
          f"median {statistics.median(times) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
