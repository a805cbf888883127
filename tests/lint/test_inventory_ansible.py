"""--inventory takes the Ansible inventory a site already has (issue 31): INI and YAML, groups, group vars,
children, host patterns (gpu[01:16], strides, letters); each host's node from ncclctl_snapshot / ncclctl_model."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import HOSTS, run_cli


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """models/gpu01..gpu04.json (gpu03: port down) and models/rack[a-b]: node models under those host names."""
    folder = tmp_path_factory.mktemp("inv")
    docs = {}
    for name in ("dgx-h100", "dgx-h100-port-down"):
        r = run_cli("probe", "--root", str(HOSTS / name), "--format", "json")
        assert r.returncode == 0, r.stderr
        docs[name] = json.loads(r.stdout)
    (folder / "models").mkdir()
    for host in ("gpu01", "gpu02", "gpu03", "gpu04", "gpu05", "racka", "rackb"):
        doc = dict(docs["dgx-h100-port-down" if host == "gpu03" else "dgx-h100"], hostname=host)
        (folder / "models" / f"{host}.json").write_text(json.dumps(doc))
    return folder


INI = """\
# the site's inventory, as Ansible reads it
[gpus]
gpu[01:04:1] ansible_host=10.0.0.1
gpu05  ncclctl_group=spare   # a comment

[racks]
rack[a:b]

[gpus:vars]
ncclctl_model=models/{host}.json
ansible_user=root

[racks:vars]
ncclctl_model="models/{{ inventory_hostname }}.json"

[cluster:children]
gpus
racks

[cluster:vars]
ncclctl_group=su1
"""

YAML = """\
---
all:
  vars:
    ncclctl_model: "models/{{ inventory_hostname }}.json"
  children:
    su1:
      vars: {ncclctl_group: su1}
      hosts:
        gpu[01:03]:
    su2:
      hosts:
        gpu04: {ncclctl_group: special}
"""


def _hosts(doc: dict) -> dict[str, set[str]]:
    return {h["host"]: {f["rule"] for f in h["findings"]} for h in doc["hosts"]}


def test_ini_inventory(models):
    (models / "hosts.ini").write_text(INI)
    r = run_cli("fleet", "lint", "--inventory", str(models / "hosts.ini"), "-f", "json", "-j", "1")
    assert r.returncode == 1, r.stderr
    hosts = _hosts(json.loads(r.stdout))
    assert list(hosts) == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05", "racka", "rackb"]
    assert {"IB001", "NCCL011"} <= hosts["gpu03"] and not hosts["gpu01"]
    # the group hint: the deepest group's ncclctl_group wins over the parent's, the host's own over both
    from ncclctl.inventory import load_inventory

    inv = load_inventory(str(models / "hosts.ini"))
    assert [(h.name, h.group, h.line) for h in inv.hosts][3:] == [("gpu04", "su1", 3), ("gpu05", "spare", 4),
                                                                ("racka", "su1", 7), ("rackb", "su1", 7)]


def test_yaml_inventory(models):
    (models / "hosts.yml").write_text(YAML)
    r = run_cli("fleet", "lint", "--inventory", str(models / "hosts.yml"), "-f", "json", "-j", "1")
    assert r.returncode == 1, r.stderr
    hosts = _hosts(json.loads(r.stdout))
    assert list(hosts) == ["gpu01", "gpu02", "gpu03", "gpu04"] and "IB001" in hosts["gpu03"]
    from ncclctl.inventory import load_inventory

    assert [h.group for h in load_inventory(str(models / "hosts.yml")).hosts] == ["su1", "su1", "su1", "special"]


@pytest.mark.parametrize("text, line, words", [
    ("[gpus]\ngpu[01:02]\nlogin01 ncclctl_model=x.json\n", 2, "host gpu01: no ncclctl_snapshot or ncclctl_model"),
    ("[gpus]\ngpu[05:01] ncclctl_model=m.json\n", 2, "a range is [START:END]"),
    ("[gpus]\ngpu01 ncclctl_model='{{ lookup(\"env\", \"X\") }}'\n", 2, "uses Jinja that ncclctl does not evaluate"),
    ("[gpus:oops]\ngpu01\n", 1, "a section is [group], [group:vars] or [group:children]"),
    ("[gpus]\ngpu01 ncclctl_model=a.json ncclctl_snapshot=b\n", 2, "both ncclctl_snapshot and ncclctl_model"),
    ("[gpus]\ngpu[1:200000] ncclctl_model=m.json\n", 2, "names more than 100000 hosts"),
])
def test_bad_ansible_inventories_are_named_with_line_and_fix(tmp_path, text, line, words):
    p = tmp_path / "hosts.ini"
    p.write_text(text)
    r = run_cli("fleet", "lint", "--inventory", str(p))
    assert r.returncode == 3, r.stdout + r.stderr
    assert f"{p}:{line}" in r.stderr and words in r.stderr and "fix" in r.stderr and "Traceback" not in r.stderr


def test_ncclctl_inventories_are_not_taken_for_ansible(tmp_path):
    from ncclctl.ansible_inventory import looks_like_ansible

    assert not looks_like_ansible("x", "version: 1\nhosts:\n  gpu[001-002]: {model: 'm/{host}.json'}\n")
    assert not looks_like_ansible("x", "# c\nhosts:\n  a: {model: a.json}\n")
    assert looks_like_ansible("x", "gpu01 ncclctl_model=a.json\n")
    assert looks_like_ansible("x", "---\nall:\n  hosts:\n    a:\n")
    assert looks_like_ansible("x", "gpus:\n  hosts:\n    gpu01:\n  vars: {ncclctl_model: a.json}\n")


def test_same_hosts_and_variables_as_ansible_inventory(tmp_path):
    """Where ansible-core is installed: ansible-inventory --list names the same hosts with the same ncclctl_*
    variables (before ncclctl substitutes {host})."""
    tool = shutil.which("ansible-inventory")
    if tool is None:
        pytest.skip("ansible-inventory not installed (pip install ansible-core)")
    from ncclctl.ansible_inventory import parse_ini, parse_yaml, resolve

    for name, text in (("hosts.ini", INI), ("hosts.yml", YAML)):
        p = tmp_path / name
        p.write_text(text)
        r = subprocess.run([tool, "-i", str(p), "--list"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        listed = json.loads(r.stdout)
        theirs = {h: {k: v for k, v in hv.items() if k.startswith("ncclctl_")}
                  for h, hv in listed["_meta"]["hostvars"].items()}
        if name.endswith(".ini"):
            groups, host_vars, _ = parse_ini(text, str(p), 1000)
        else:
            import yaml

            from ncclctl.yamlio import load

            data, root = load(text, str(p), max_depth=32, fix="")
            groups, host_vars, _ = parse_yaml(data, root, str(p), 1000)
        ours = {h: {k: v for k, v in hv.items() if k.startswith("ncclctl_")} for h, hv, _ in resolve(groups, host_vars)}
        assert ours == theirs, name
