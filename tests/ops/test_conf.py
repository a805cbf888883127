"""conf generate: /etc/nccl.conf per host fixture (goldens), NCCL's conf syntax, RoCE GID/TC choice, lint-clean."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil

import pytest

from conftest import HOSTS, host_names, run_cli
from ncclctl.plan.confgen import ConfPlan, Setting, plan_conf, render
from ncclctl.errors import InputError, UsageError
from ncclctl.nccl.lists import hca_selects
from ncclctl.nccl.settings import effective_setting
from ncclctl.probe import probe
from ncclctl.plan.rails import plan_rails

HOSTS_ALL = host_names()
#: A line NCCL's setEnvFile applies as intended: NAME=value, no blanks around '=', no quotes, no export.
LINE = re.compile(r"^NCCL_[A-Z0-9_]+=[^\s\"'][^\"'\r]*(?<=\S)$")


@pytest.mark.parametrize("host", HOSTS_ALL)
def test_golden(host, golden):
    r = run_cli("conf", "generate", "--root", str(HOSTS / host))
    assert r.returncode == 0, r.stderr
    golden(f"conf/{host}.conf", r.stdout)
    for line in r.stdout.splitlines():
        assert LINE.match(line), f"{host}: {line!r} is not a plain NAME=value line"
    assert "Traceback" not in r.stderr


def test_roce_settings_follow_the_qos_config():
    node = probe(str(HOSTS / "hgx-h100-roce"))
    plan = plan_conf(node)
    # GID 3 is the RoCE v2 ::ffff:10.200.x.12 GID on every rail; PFC is on priority 3 only, trust dscp with the
    # default map, so DSCP 26 (AF31) lands in priority 3: TC = 26 << 2.
    assert plan.get("NCCL_IB_GID_INDEX") == "3"
    assert plan.get("NCCL_IB_TC") == "106"
    for nic in node.nics:
        gid = next(g for g in nic.ports[0].gids if g.index == 3)
        assert gid.type == "RoCE v2" and gid.is_ipv4_mapped
    nd = node.netdev("ens1np0")
    assert dict(nd.qos.dscp2prio)[106 >> 2] == 3 and nd.qos.pfc_enabled[3]


def _with_qos(node, **changes):
    netdevs = tuple(dataclasses.replace(nd, qos=dataclasses.replace(nd.qos, **changes)) if nd.qos else nd
                    for nd in node.netdevs)
    return dataclasses.replace(node, netdevs=netdevs)


def test_tc_uses_a_pfc_priority_other_than_3():
    node = probe(str(HOSTS / "hgx-h100-roce"))
    pfc5 = _with_qos(node, pfc_enabled=(False,) * 5 + (True,) + (False,) * 2)
    plan = plan_conf(pfc5)
    assert plan.get("NCCL_IB_TC") == str(40 << 2 | 2), "lowest DSCP mapped to priority 5 under DSCP>>3"
    # A custom map: only DSCP 46 goes to priority 5.
    custom = tuple((d, 5 if d == 46 else 0) for d in range(64))
    assert plan_conf(_with_qos(pfc5, dscp2prio=custom)).get("NCCL_IB_TC") == str(46 << 2 | 2)


def test_tc_left_out_when_pfc_is_off_or_trust_is_pcp_or_unknown():
    node = probe(str(HOSTS / "hgx-h100-roce-pfc-off"))
    plan = plan_conf(node)
    assert plan.get("NCCL_IB_TC") is None
    assert any("PFC is off on every priority" in w for w in plan.warnings)
    roce = probe(str(HOSTS / "hgx-h100-roce"))
    pcp = plan_conf(_with_qos(roce, trust="pcp"))
    assert pcp.get("NCCL_IB_TC") is None and pcp.get("NCCL_IB_SL") is None
    assert any("trust pcp" in w and "untagged" in w for w in pcp.warnings)
    # Inbox mlx5 (dcb only): trust dscp from the DCB APP table's DSCP entries, no doubt to report.
    inbox = plan_conf(probe(str(HOSTS / "pcie-server")))
    assert inbox.get("NCCL_IB_TC") == "106" and not any("trust mode" in w for w in inbox.warnings)
    # Trust unknown (no APP table recorded): read as dscp with the default map, as the RoCE lint rules do.
    unknown = plan_conf(_with_qos(probe(str(HOSTS / "pcie-server")), trust=None, dscp2prio=None))
    assert unknown.get("NCCL_IB_TC") == "106" and any("trust mode" in w for w in unknown.warnings)


def test_sl_under_trust_pcp_when_roce_runs_over_a_vlan():
    node = _with_qos(probe(str(HOSTS / "hgx-h100-roce")), trust="pcp")
    vlans = []
    nics = []
    for nic in node.nics:
        port = nic.ports[0]
        vname = f"{port.netdev}.30"
        vlans.append(dataclasses.replace(node.netdev(port.netdev), name=vname, kind="vlan", parent=port.netdev,
                                         bdf=None, qos=None))
        gids = tuple(dataclasses.replace(g, netdev=vname) for g in port.gids)
        nics.append(dataclasses.replace(nic, ports=(dataclasses.replace(port, gids=gids),)))
    tagged = dataclasses.replace(node, nics=tuple(nics), netdevs=node.netdevs + tuple(vlans))
    plan = plan_conf(tagged)
    assert plan.get("NCCL_IB_SL") == "3" and plan.get("NCCL_IB_TC") is None


def test_gid_index_left_out_when_rails_disagree():
    node = probe(str(HOSTS / "hgx-h100-roce"))
    nic = node.nics[2]
    port = nic.ports[0]
    moved = tuple(dataclasses.replace(g, index=5) if g.index == 3 else g for g in port.gids)
    odd = dataclasses.replace(node, nics=tuple(dataclasses.replace(n, ports=(dataclasses.replace(port, gids=moved),))
                                               if n is nic else n for n in node.nics))
    plan = plan_conf(odd)
    assert plan.get("NCCL_IB_GID_INDEX") is None
    assert any("differs across rails" in w and "mlx5_2:1: 5" in w for w in plan.warnings)


def test_ib_hca_is_exact_and_selects_exactly_the_rails():
    node = probe(str(HOSTS / "dgx-h100"))
    plan = plan_conf(node)
    rails = plan_rails(node)
    value = plan.get("NCCL_IB_HCA")
    assert value == rails.nccl_ib_hca and value.startswith("=")
    ports = [(n.name, p.num) for n in node.nics for p in n.ports]
    assert hca_selects(value, ports) == {(r.nic, r.port) for r in rails.rails}


def test_socket_ifname_choice():
    assert plan_conf(probe(str(HOSTS / "dgx-h100"))).get("NCCL_SOCKET_IFNAME") == "=eno3"
    # Azure-like VM: eth0 has no PCI function (hv_netvsc) and is still the one to use; docker0 never.
    assert plan_conf(probe(str(HOSTS / "cloud-vm-flat"))).get("NCCL_SOCKET_IFNAME") == "=eth0"
    # Only IPoIB interfaces: nothing is chosen, NCCL's default order applies.
    a100 = plan_conf(probe(str(HOSTS / "dgx-a100")))
    assert a100.get("NCCL_SOCKET_IFNAME") is None and any("NCCL_SOCKET_IFNAME not set" in w for w in a100.warnings)
    roce = plan_conf(probe(str(HOSTS / "hgx-h100-roce")))
    assert roce.get("NCCL_SOCKET_IFNAME") == "=eno1" and any("eno1.100" in w for w in roce.warnings)
    assert plan_conf(probe(str(HOSTS / "hgx-h100-roce")), socket_ifname="eno1.100").get("NCCL_SOCKET_IFNAME") == "=eno1.100"
    with pytest.raises(InputError, match="no such interface"):
        plan_conf(probe(str(HOSTS / "dgx-h100")), socket_ifname="eth9")


def test_topo_file_and_vm_warning():
    vm = probe(str(HOSTS / "cloud-vm-flat"))
    assert any("needs a topology file" in w for w in plan_conf(vm).warnings)
    plan = plan_conf(vm, topo_file="/etc/nccl-topo.xml")
    assert plan.settings[0] == Setting("NCCL_TOPO_FILE", "/etc/nccl-topo.xml", plan.settings[0].reason)
    assert not any("needs a topology file" in w for w in plan.warnings)
    with pytest.raises(UsageError, match="relative"):
        plan_conf(vm, topo_file="nccl-topo.xml")
    with pytest.raises(UsageError, match="surrounding blanks"):
        plan_conf(vm, topo_file="/etc/nccl-topo.xml ")


def test_comments_only_for_nccl_that_skips_them():
    plan = ConfPlan(settings=(Setting("NCCL_IB_HCA", "=mlx5_0:1", "why"),))
    text = render(plan, comments=True, nccl_version=(2, 26, 0)).decode()
    assert text.splitlines()[-2:] == ["# why", "NCCL_IB_HCA==mlx5_0:1"]
    assert all(line.startswith("#") or LINE.match(line) for line in text.splitlines())
    with pytest.raises(UsageError, match="2.26"):
        render(plan, comments=True, nccl_version=(2, 25, 1))
    r = run_cli("conf", "generate", "--root", str(HOSTS / "dgx-h100"), "--comments", "--nccl-version", "2.23")
    assert r.returncode == 2 and "does not skip '#' lines" in r.stderr
    assert render(plan) == b"NCCL_IB_HCA==mlx5_0:1\n"


def test_values_nccl_would_misread_are_refused():
    for value in (" =mlx5_0", "eth0 ", "", "a\nb", "x" * 1024):
        with pytest.raises(InputError):
            render(ConfPlan(settings=(Setting("NCCL_SOCKET_IFNAME", value, ""),)))
    with pytest.raises(InputError):
        render(ConfPlan(settings=(Setting("export NCCL_X", "1", ""),)))


def test_json_record_and_warnings():
    r = run_cli("conf", "generate", "--root", str(HOSTS / "cloud-vm-flat"), "--format", "json",
                "--topo-file", "/etc/nccl-topo.xml")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["settings"]["NCCL_TOPO_FILE"] == "/etc/nccl-topo.xml"
    assert rec["content"].startswith("NCCL_TOPO_FILE=/etc/nccl-topo.xml\n") and rec["path"] is None
    assert r.stderr == "", "JSON mode keeps warnings in the record"
    r = run_cli("conf", "generate", "--root", str(HOSTS / "cloud-vm-flat"))
    assert "ncclctl: warning: flat PCIe" in r.stderr


def test_byte_identical_across_runs():
    a = run_cli("conf", "generate", "--root", str(HOSTS / "hgx-h100-roce"), "--comments").stdout
    b = run_cli("conf", "generate", "--root", str(HOSTS / "hgx-h100-roce"), "--comments").stdout
    assert a == b and a.count("\n# ") >= 3


# -- the generated file installed on the host ------------------------------------------------------


def _installed(host: str, tmp_path, conf: bytes, extra: dict[str, bytes]):
    """A hard-linked copy of the fixture with only the generated /etc/nccl.conf as NCCL configuration."""
    root = tmp_path / host
    shutil.copytree(HOSTS / host, root, symlinks=True, copy_function=os.link)
    env_path = root / "env.json"
    env = json.loads(env_path.read_text()) if env_path.exists() else {}
    env_path.unlink(missing_ok=True)
    env_path.write_text(json.dumps({k: v for k, v in env.items() if not k.startswith("NCCL_")}))
    home = env.get("HOME", "/root").lstrip("/")
    (root / home / ".nccl.conf").unlink(missing_ok=True)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc" / "nccl.conf").unlink(missing_ok=True)
    (root / "etc" / "nccl.conf").write_bytes(conf)
    for path, data in extra.items():
        target = root / path.lstrip("/")
        target.unlink(missing_ok=True)
        target.write_bytes(data)
    return probe(str(root))


@pytest.mark.parametrize("host", ["dgx-h100", "hgx-h100-roce", "cloud-vm-flat", "pcie-server", "dgx-a100"])
def test_installed_conf_reads_back_and_lints_clean(host, tmp_path):
    from ncclctl.lint.context import Ctx
    from ncclctl.lint.engine import run
    from ncclctl.registry import all_rules

    node = probe(str(HOSTS / host))
    topo = "/etc/nccl-topo.xml" if node.is_virtual else None
    plan = plan_conf(node, topo_file=topo)
    extra = {}
    if topo:  # the topology file the conf names, generated for this host (NCCL021/NCCL022 read it)
        r = run_cli("topo", "generate", "--root", str(HOSTS / host))
        assert r.returncode == 0, r.stderr
        extra[topo] = r.stdout.encode()
    installed = _installed(host, tmp_path, render(plan), extra)
    # NCCL's own reading of the file (first writer wins, verbatim values) gives back every setting.
    for s in plan.settings:
        assert effective_setting(installed, s.name) == s.value, s.name
    ctx = Ctx(node=installed, source=str(tmp_path / host))
    # The NCCL settings rules: nothing at all.
    nccl_rules = tuple(r.id for r in all_rules() if r.family == "nccl")
    assert nccl_rules
    found = run(ctx, only=nccl_rules)
    assert not found, "\n".join(f"{f.rule} {f.subject}: {f.message}" for f in found)
    # The RoCE rules judge GID index and traffic class against the QoS config: no warning or error (an info
    # about the host itself, e.g. an unknown trust mode, may stay).
    roce_rules = tuple(r.id for r in all_rules() if r.family == "roce")
    found = [f for f in run(ctx, only=roce_rules) if f.severity.value != "info"]
    assert not found, "\n".join(f"{f.rule} {f.subject}: {f.message}" for f in found)


def test_one_nccl_ib_tc_recommendation(tmp_path):
    """conf generate and the ROCE001 fix recommend the same NCCL_IB_TC for the same DSCP (one function)."""
    from ncclctl.nccl.values import ib_tc_for_dscp

    assert ib_tc_for_dscp(26) == 106 and ib_tc_for_dscp(24) == 98 and ib_tc_for_dscp(0) == 2
    for bad in (-1, 64):
        with pytest.raises(ValueError):
            ib_tc_for_dscp(bad)
    conf = run_cli("conf", "generate", "--root", str(HOSTS / "hgx-h100-roce"))
    assert re.search(r"^NCCL_IB_TC=106$", conf.stdout, re.M), conf.stdout
    # The same host with NCCL's traffic left in TC 0 (priority 0, no PFC): ROCE001's fix names the same value.
    tree = tmp_path / "host"
    shutil.copytree(HOSTS / "hgx-h100-roce", tree, symlinks=True)
    (tree / "env.json").write_text(json.dumps({"NCCL_IB_TC": "0"}))
    lint = run_cli("lint", "--root", str(tree), "-r", "ROCE001", "-f", "json")
    fixes = " ".join(f.get("fix") or "" for f in json.loads(lint.stdout)["findings"])
    assert set(re.findall(r"NCCL_IB_TC=(\d+)", fixes)) == {"106"}, fixes
