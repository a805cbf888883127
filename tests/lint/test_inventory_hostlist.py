"""Inventories in Slurm's hostlist form (issue 31): `gpu[001-003]: {model: "models/{host}.json"}` names each host,
expanded by ClusterShell's NodeSet; mistakes are input errors naming the line, never a traceback."""

from __future__ import annotations

import json

import pytest

from conftest import HOSTS, run_cli


@pytest.fixture(scope="module")
def model_doc():
    r = run_cli("probe", "--root", str(HOSTS / "dgx-h100"), "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _models(tmp_path, doc, names):
    (tmp_path / "models").mkdir(exist_ok=True)
    for n in names:
        d = dict(doc, hostname=n)
        (tmp_path / "models" / f"{n}.json").write_text(json.dumps(d))


def test_hostlist_inventory_lints_each_host(tmp_path, model_doc):
    _models(tmp_path, model_doc, ["gpu001", "gpu002", "gpu003", "gpu010"])
    inv = tmp_path / "inv.yaml"
    inv.write_text('hosts:\n  gpu[001-003,010]: {model: "models/{host}.json", group: su1}\n')
    r = run_cli("fleet", "lint", "--inventory", str(inv), "--format", "json", "-j", "1")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [h["host"] for h in doc["hosts"]] == ["gpu001", "gpu002", "gpu003", "gpu010"]
    assert doc["hosts"][3]["source"].endswith("models/gpu010.json")


@pytest.mark.parametrize("hosts, line, words", [
    ("  gpu[001-002]: {model: models/same.json}\n", 2, "must contain {host}"),
    ("  gpu[3-1]: {model: 'models/{host}.json'}\n", 2, "hostlist 'gpu[3-1]'"),
    ("  gpu[1-99999999]: {model: 'models/{host}.json'}\n", 2, "more than 100000"),
    ("  gpu001: {model: models/gpu001.json}\n  gpu[001-002]: {model: 'models/{host}.json'}\n", 3,
     "host gpu001 is named twice (first on line 2)"),
    ("  'gpu[1-2]; rm': {model: 'models/{host}.json'}\n", 2, "neither a host name nor a hostlist"),
])
def test_hostlist_mistakes_are_input_errors(tmp_path, hosts, line, words):
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n" + hosts)
    r = run_cli("fleet", "lint", "--inventory", str(inv))
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    assert f"{inv}:{line}" in r.stderr and words in r.stderr, r.stderr
