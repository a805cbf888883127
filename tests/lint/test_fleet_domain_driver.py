"""FLT012's driver agreement inside one NVLink domain (cluster UUID + clique id): the odd trays named against the
domain's majority, the split in hostlist form, a tie reported once; drivers that differ only between domains pass.
Through the API (fleet facts of tray models) and ``fleet lint`` on an inventory of models."""

from __future__ import annotations

import json

from conftest import run_cli
from ncclctl.lint.fleet import FleetCtx
from ncclctl.lint.rules_fleet import fleet_facts, fleet_nvlink_domain
from tests.lint.test_fleet_nvlink import RACK_A, RACK_B, inventory_of, tray

NEW = "580.82.07"
OLD = "580.65.06"


def rack(r=1, uuid=RACK_A, clique=1, drivers=None):
    drivers = drivers or {}
    return [tray(r, t, uuid, clique, driver=drivers.get(t)) for t in range(1, 19)]


def hits(nodes):
    fctx = FleetCtx(hosts=[(n.hostname, fleet_facts(n)) for n in nodes])
    return [h for h in fleet_nvlink_domain(fctx, {"max_trays": 18}) if "driver" in h.message]


def test_odd_trays_named_against_the_majority():
    got = hits(rack(drivers={5: NEW, 6: NEW, 7: NEW}) + rack(2, RACK_B, 32766))
    assert [(h.subject, h.severity.value) for h in got] == [("r1t05", "warning"), ("r1t06", "warning"),
                                                            ("r1t07", "warning")]
    h = got[0]
    assert f"driver {NEW} differs from its NVLink domain's majority {OLD} (15 of 18 members; cluster {RACK_A} " \
           f"clique 1)" in h.message
    assert h.evidence == (f"driver {OLD}: r1t[01-04,08-18]", f"driver {NEW}: r1t[05-07]")
    assert OLD in h.fix and "nvidia-imex" in h.fix


def test_tie_is_one_warning_on_the_domain():
    nodes = [tray(1, 1, RACK_A, 1), tray(1, 2, RACK_A, 1, driver=NEW)]
    (h,) = hits(nodes)
    assert h.subject == "r1t01" and h.severity.value == "warning"
    assert f"2 NVIDIA driver versions with no majority ({OLD} on r1t01; {NEW} on r1t02)" in h.message


def test_drivers_differ_only_between_domains():
    assert hits(rack() + rack(2, RACK_B, 32766, drivers={t: NEW for t in range(1, 19)})) == []
    assert hits(rack()) == []


def test_cli_fleet_lint(tmp_path):
    # three trays of rack 1, each IMEX list naming exactly these three, one of them upgraded alone
    nodes = [tray(1, t, RACK_A, 1, imex_nodes=[f"10.20.1.{10 + i}" for i in (1, 2, 3)],
                  driver=NEW if t == 2 else None) for t in (1, 2, 3)]
    inv = inventory_of(tmp_path, nodes)
    r = run_cli("fleet", "lint", "--inventory", inv, "--rule", "FLT012", "--fail-on", "warning", "--format", "json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    found = [f for h in json.loads(r.stdout)["hosts"] for f in h["findings"] if "driver" in f["message"]]
    assert [f["subject"] for f in found] == ["r1t02"], found
    assert "r1t[01,03]" in json.dumps(found[0]) and OLD in found[0]["message"]
    nodes[1] = tray(1, 2, RACK_A, 1, imex_nodes=[f"10.20.1.{10 + i}" for i in (1, 2, 3)])
    ok = run_cli("fleet", "lint", "--inventory", inventory_of(tmp_path, nodes), "--rule", "FLT012",
                 "--fail-on", "warning")
    assert ok.returncode == 0, ok.stdout + ok.stderr
