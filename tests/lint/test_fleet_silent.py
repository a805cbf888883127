"""fleet lint --facts --inventory (issue 31): the hosts an inventory names that no facts document or textfile speaks
for are silent (one line, hosts in hostlist form, the fix once; exit 3 as for an unreadable host; never clean), and
facts of hosts the inventory does not name are said so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import HOSTS, run_cli

SILENT_LINE = ("gpu[005-007,009]: error: silent: named by the inventory ({inv}), no facts document or textfile: facts "
               "not collected [4 hosts]")
FIX_LINE = ("    fix: run the facts play (or the textfile timer) on the host / check the host (down, unreachable, "
            "ncclctl not installed)")


@pytest.fixture(scope="module")
def fetched(tmp_path_factory):
    """Facts of gpu001-gpu004 and gpu008 as `ansible -m fetch` lays them out (gpu002 with a port down)."""
    tmp = tmp_path_factory.mktemp("silent")
    from ncclctl.inventory import load_snapshot
    from ncclctl.ops.facts import build

    nodes = {name: load_snapshot(str(HOSTS / name)) for name in ("dgx-h100", "dgx-h100-port-down")}
    import dataclasses

    for i in (1, 2, 3, 4, 8):
        host = f"gpu{i:03d}"
        node = dataclasses.replace(nodes["dgx-h100-port-down" if i == 2 else "dgx-h100"], hostname=host)
        doc = build(lambda: node, source={"kind": "model", "path": host})
        fact = tmp / "fetched" / host / "etc" / "ansible" / "facts.d" / "ncclctl.fact"
        fact.parent.mkdir(parents=True)
        fact.write_text(json.dumps(doc))
    return tmp


def test_silent_hosts_of_an_ansible_inventory(fetched, tmp_path):
    inv = tmp_path / "hosts.ini"
    inv.write_text("[gpus]\ngpu[001:009]\n")  # no ncclctl_* variables: only the names are asked for
    r = run_cli("fleet", "lint", "--facts", str(fetched / "fetched"), "--inventory", str(inv))
    assert r.returncode == 3, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == SILENT_LINE.format(inv=inv) and lines[1] == FIX_LINE
    assert sum(1 for ln in lines if "facts not collected" in ln) == 1 and lines.count(FIX_LINE) == 1
    assert "gpu[005-007,009]  -       -         -     silent" in lines
    assert lines[-1] == ("9 hosts: 4 clean, 1 with findings (1 at or above error), 0 unreadable, 4 silent (no facts); "
                         "3 errors, 0 warnings, 0 info")
    doc = json.loads(run_cli("fleet", "lint", "--facts", str(fetched / "fetched"), "-i", str(inv), "-f", "json").stdout)
    assert doc["ok"] is False and doc["summary"]["silent"] == 4 and doc["summary"]["clean"] == 4
    silent = [h for h in doc["hosts"] if h["error"]]
    assert [h["host"] for h in silent] == ["gpu005", "gpu006", "gpu007", "gpu009"]
    assert all(h["error"]["error"] == "NoFacts" and h["error"]["exit_code"] == 3 for h in silent)
    prom = run_cli("fleet", "lint", "--facts", str(fetched / "fetched"), "-i", str(inv), "-f", "prom")
    assert prom.returncode == 3
    assert 'ncclctl_fleet_hosts{command="fleet lint",state="silent"} 4' in prom.stdout.splitlines()
    assert 'ncclctl_ok{command="fleet lint"} 0' in prom.stdout.splitlines()


def test_every_host_reported_and_hosts_the_inventory_does_not_name(fetched):
    """A hostlist as the inventory: all named hosts reported (exit as the findings say), and the facts of gpu008,
    which it does not name, said so in one note (still linted)."""
    r = run_cli("fleet", "lint", "--facts", str(fetched / "fetched"), "--inventory", "gpu[001-004]")
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == ("note: gpu008: not named by the inventory (gpu[001-004]), but facts were read for it: linted "
                        "and compared; add it to the inventory, or remove the stale facts")
    assert "silent" not in r.stdout and lines[-1].startswith("5 hosts: 4 clean, 1 with findings")


def test_ncclctl_and_ansible_yaml_inventories_and_short_names(fetched, tmp_path):
    own = tmp_path / "cluster.yaml"
    own.write_text('version: 1\nhosts:\n  gpu[001-004,008]: {snapshot: "snaps/{host}"}\n  gpu010: {model: m.json}\n')
    r = run_cli("fleet", "lint", "--facts", str(fetched / "fetched"), "-i", str(own), "-q")
    assert r.returncode == 3 and r.stdout == ("6 hosts: 4 clean, 1 with findings (1 at or above error), 0 unreadable, "
                                              "1 silent (no facts); 3 errors, 0 warnings, 0 info\n"), r.stdout + r.stderr
    ansible = tmp_path / "hosts.yaml"
    ansible.write_text("all:\n  children:\n    gpus:\n      hosts:\n        gpu[001:004].cluster.local:\n"
                       "        gpu008.cluster.local:\n")
    r = run_cli("fleet", "lint", "--facts", str(fetched / "fetched"), "-i", str(ansible), "-q")
    assert r.returncode == 1 and "0 unreadable;" in r.stdout, r.stdout + r.stderr  # gpu001 is gpu001.cluster.local


def test_an_unreadable_facts_file_is_not_also_silent(fetched, tmp_path):
    import shutil

    d = tmp_path / "fetched"
    shutil.copytree(fetched / "fetched", d)
    (d / "gpu003/etc/ansible/facts.d/ncclctl.fact").write_text("{ not json\n")
    r = run_cli("fleet", "lint", "--facts", str(d), "-i", "gpu[001-004,008]", "-f", "json")
    assert r.returncode == 3
    doc = json.loads(r.stdout)
    assert doc["summary"]["unreadable"] == 1 and doc["summary"]["silent"] == 0


def test_usage(fetched, tmp_path):
    r = run_cli("fleet", "lint", "--facts", "-i", "gpu[001-004]")
    assert r.returncode == 2 and "--facts reads the facts documents" in r.stderr
    r = run_cli("fleet", "lint", "--facts", str(fetched / "fetched"), "-i", str(tmp_path / "missing.ini"))
    assert r.returncode == 3 and "missing.ini" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("fleet", "lint", "--facts", str(fetched / "fetched"), "-i", "gpu[1-99999999]")
    assert r.returncode == 3 and "more than 100000 hosts" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("fleet", "lint", "--facts", str(fetched / "fetched"), "--expect", "x.yaml")
    assert r.returncode == 2 and "--expect" in r.stderr
