"""fleet lint at scale (issue 31): findings grouped per fault across hosts in hostlist form with the fix printed
once; a fleet without a majority gets one "no majority" finding naming the groups, and no host fails for it."""

from __future__ import annotations

import json

from conftest import run_cli


def _fleet(tmp_path, hosts: dict) -> list[str]:
    paths = []
    for host, (doc, driver) in hosts.items():
        doc = json.loads(json.dumps(doc))
        doc["hostname"] = host
        if driver:
            doc["facts"]["driver_version"] = driver
        p = tmp_path / f"{host}.json"
        p.write_text(json.dumps(doc))
        paths.append(str(p))
    return paths


def test_one_line_per_fault_with_a_hostlist_and_the_fix_once(tmp_path, models):
    good, down = models["dgx-h100"], models["dgx-h100-port-down"]
    hosts = {f"gpu{i:03d}": (down if i in (2, 17, 18, 19) else good, None) for i in range(1, 21)}
    r = run_cli("fleet", "lint", *_fleet(tmp_path, hosts), "--jobs", "1")
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    ib = [ln for ln in lines if ": IB001: " in ln]
    assert ib == [ln for ln in ib if ln.startswith("gpu[002,017-019]: mlx5_3: error: IB001: mlx5_3 port 1 is DOWN")]
    assert len(ib) == 1 and ib[0].endswith("[4 hosts]")
    fix = lines[lines.index(ib[0]) + 1]
    assert fix.startswith("    fix: ") and r.stdout.count(fix) == 1
    assert "gpu[002,017-019]  3       0         0     FAIL" in lines  # IB001, NCCL011, FLT011
    assert lines[-1].startswith("20 hosts: 16 clean, 4 with findings (4 at or above error), 0 unreadable; 12 errors")
    # every fault once: no line repeats, and no fix is printed twice
    fixes = [ln for ln in lines if ln.startswith("    fix: ")]
    assert len(fixes) == len(set(fixes))


def test_no_majority_is_one_fleet_finding_and_no_host_fails(tmp_path, models):
    good = models["dgx-h100"]
    hosts = {"gpu001": (good, "535.183.01"), "gpu002": (good, "550.54.15"), "gpu003": (good, "560.35.03")}
    r = run_cli("fleet", "lint", *_fleet(tmp_path, hosts), "--jobs", "1")
    assert r.returncode == 0, r.stdout + r.stderr  # a warning, and no host's
    lines = r.stdout.splitlines()
    assert lines[0] == ("fleet: warning: FLT003: NVIDIA driver: no fleet majority: 535.183.01 on gpu001; "
                        "550.54.15 on gpu002; 560.35.03 on gpu003")
    assert not any(ln.startswith("gpu") for ln in lines)  # no host line, no FAIL row
    assert lines[-1].startswith("3 hosts: 3 clean, 0 with findings (0 at or above error), 0 unreadable; 0 errors, "
                                "1 warning")
    doc = json.loads(run_cli("fleet", "lint", *_fleet(tmp_path, hosts), "--format", "json", "-j", "1").stdout)
    assert [f["rule"] for f in doc["fleet_findings"]] == ["FLT003"]
    assert all(h["ok"] and not h["findings"] for h in doc["hosts"])
    strict = run_cli("fleet", "lint", *_fleet(tmp_path, hosts), "--fail-on", "warning", "-j", "1")
    assert strict.returncode == 1  # the fleet's warning still reaches --fail-on warning
