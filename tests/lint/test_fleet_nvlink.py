"""FLT012: NVLink domains grouped by (cluster UUID, clique id), never the clique id alone; domain size, IMEX node
lists, drivers, a shared sentinel clique id; through the API and ``fleet lint`` on an inventory of models."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import HOSTS, run_cli
from ncclctl.lint.rules_fleet import FleetCtx, fleet_facts, fleet_nvlink_domain, nvlink_domains
from ncclctl.probe import probe

RACK_A = "6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31"
RACK_B = "0f7d2c91-5b3e-4a60-8c1d-e94b27a05f18"
_BASE: list = []


def base():
    if not _BASE:
        _BASE.append(probe(str(HOSTS / "gb200-nvl72")))
    return _BASE[0]


def tray(rack: int, t: int, uuid: str, clique: int, imex_nodes=None, driver=None):
    n = base()
    addr = f"10.20.{rack}.{10 + t}"
    gpus = tuple(dataclasses.replace(g, fabric_cluster_uuid=uuid, fabric_clique_id=clique) for g in n.gpus)
    nodes = tuple(imex_nodes) if imex_nodes is not None else tuple(f"10.20.{rack}.{10 + i}" for i in range(1, 19))
    imex = dataclasses.replace(n.facts.imex, local_addresses=(addr,), nodes=nodes)
    facts = dataclasses.replace(n.facts, imex=imex, driver_version=driver or n.facts.driver_version)
    return dataclasses.replace(n, hostname=f"r{rack}t{t:02d}", gpus=gpus, facts=facts)


def two_racks():
    return [tray(1, t, RACK_A, 1) for t in range(1, 19)] + [tray(2, t, RACK_B, 32766) for t in range(1, 19)]


def inventory_of(tmp_path, nodes) -> str:
    """An inventory of node models under ``tmp_path`` (one JSON per host): what `fleet lint --inventory` reads."""
    lines = ["version: 1", "hosts:"]
    for n in nodes:
        (tmp_path / f"{n.hostname}.json").write_text(json.dumps(n.to_dict()))
        lines.append(f"  {n.hostname}: {{model: {n.hostname}.json}}")
    (tmp_path / "inv.yaml").write_text("\n".join(lines) + "\n")
    return str(tmp_path / "inv.yaml")


def check(nodes, **opts):
    fctx = FleetCtx(hosts=[(n.hostname, fleet_facts(n)) for n in nodes])
    return list(fleet_nvlink_domain(fctx, {"max_trays": 18, **opts}))


def test_two_healthy_racks():
    nodes = two_racks()
    fctx = FleetCtx(hosts=[(n.hostname, fleet_facts(n)) for n in nodes])
    assert sorted((k, len(v)) for k, v in nvlink_domains(fctx).items()) == [((RACK_B, 32766), 18), ((RACK_A, 1), 18)]
    assert check(nodes) == []


def test_grouped_by_uuid_and_clique_never_clique_alone():
    # Both racks in the default partition: one clique id, two domains (info only), never one domain of 36.
    nodes = [tray(1, t, RACK_A, 32766) for t in range(1, 19)] + [tray(2, t, RACK_B, 32766) for t in range(1, 19)]
    hits = check(nodes)
    assert [(h.subject, h.severity.value) for h in hits] == [("r2t01", "info")]
    assert "clique id 32766 is reported by 2 NVLink domains" in hits[0].message


def test_tray_in_the_wrong_clique():
    # Rack 1 tray 5 re-registered in clique 2: its own domain of one; every rack-1 node list misses nothing it
    # should have (r1t05 is still listed), but r1t05's list names 17 hosts of another domain.
    nodes = two_racks()
    nodes[4] = tray(1, 5, RACK_A, 2)
    hits = check(nodes)
    got = {(h.subject, h.severity.value) for h in hits}
    assert ("r1t05", "warning") in got  # its node list names the other 17 trays of rack 1 (another domain now)
    assert all(h.subject == "r1t05" or "r1t05" in "".join(h.evidence) or h.severity.value == "warning" for h in hits)


def test_domain_too_big():
    nodes = [tray(1, t, RACK_A, 1, imex_nodes=[f"10.20.1.{10 + i}" for i in range(1, 20)]) for t in range(1, 20)]
    hits = [h for h in check(nodes) if "more than the 18 trays" in h.message]
    assert [(h.subject, h.severity) for h in hits] == [("r1t01", None)]
    assert check(nodes, max_trays=19) == []


def test_node_list_missing_a_member_and_driver_split():
    nodes = two_racks()
    nodes[0] = tray(1, 1, RACK_A, 1, imex_nodes=[f"10.20.1.{10 + i}" for i in range(1, 18)])  # leaves out t18
    nodes[3] = tray(1, 4, RACK_A, 1, driver="570.124.06")
    hits = check(nodes)
    assert {(h.subject, h.severity and h.severity.value) for h in hits} == {("r1t01", None), ("r1t04", "warning")}
    assert "leaves out 1 member(s)" in next(h.message for h in hits if h.subject == "r1t01")


def test_cli_fleet_lint_on_models(tmp_path):
    nodes = two_racks()
    nodes[0] = tray(1, 1, RACK_A, 1, imex_nodes=[f"10.20.1.{10 + i}" for i in range(1, 18)])
    inventory_of(tmp_path, nodes[:3] + nodes[17:19])
    r = run_cli("fleet", "lint", "--inventory", str(tmp_path / "inv.yaml"), "--rule", "FLT012", "--format", "json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "leaves out" in r.stdout and "r1t01" in r.stdout
    ok = run_cli("fleet", "lint", "--inventory", str(tmp_path / "inv.yaml"), "--rule", "FLT012",
                 "--config", "/dev/null")
    assert "r1t02" not in [ln.split(":")[0] for ln in ok.stdout.splitlines() if "FLT012" in ln]


class _Counted(dict):
    """A facts dict that counts the reads of its keys (the rule's work per host), shared by all instances."""

    reads = 0

    def __getitem__(self, key):
        _Counted.reads += 1
        return super().__getitem__(key)

    def get(self, key, default=None):
        _Counted.reads += 1
        return super().get(key, default)


def _racks(racks: int) -> list[tuple[str, dict]]:
    hosts = []
    for rack in range(racks):
        uuid = f"{rack:08x}-0000-4000-8000-000000000000"
        facts = fleet_facts(tray(1, 1, uuid, 32766 if rack % 2 else 1))
        for t in range(1, 19):
            f = _Counted(facts)
            f["nvlink"] = _Counted(domain=[uuid, 32766 if rack % 2 else 1], addresses=[f"10.{rack}.0.{t}"],
                                   imex_nodes=[f"10.{rack}.0.{i}" for i in range(1, 19)])
            hosts.append((f"r{rack}t{t}", f))
    return hosts


def test_scale_racks_linear():
    """16 and 64 racks of 18 trays (1,152 trays, 4,608 GPUs): the facts are built once and the rule's work per
    host is bounded by its domain (18 trays), so 4x the racks read the facts 4x as often. Counted, not timed:
    a rule comparing every host with every other host reads them 16x as often and fails here."""
    reads = {}
    for racks in (16, 64):
        hosts = _racks(racks)
        _Counted.reads = 0
        hits = list(fleet_nvlink_domain(FleetCtx(hosts=hosts), {"max_trays": 18}))
        reads[racks] = _Counted.reads
        assert [h.severity.value for h in hits] == ["info", "info"]  # cliques 1 and 32766, each on racks/2 racks
        assert f"{racks // 2} NVLink domains" in hits[0].message, hits[0].message
    assert reads[16] > 0 and reads[64] <= 4.5 * reads[16], reads


def test_explain_fleet_and_log_rules():
    for rule_id in ("FLT012", "LOG029"):
        r = run_cli("explain", rule_id)
        assert r.returncode == 0 and rule_id in r.stdout and "Fix:" in r.stdout, r.stdout
