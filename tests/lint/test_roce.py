"""RoCE family (ROCE001-ROCE008): every host fixture pinned, NCCL's TC -> DSCP -> priority chain under each trust
mode, NCCL's GID auto-selection replayed on GID tables, RoCE MTU, grading, the CLI."""

from __future__ import annotations

import dataclasses
import ipaddress
import json

import pytest

from conftest import HOSTS, run_cli
from ncclctl.lint.context import Ctx
from ncclctl.lint.engine import Config, RuleConfig, run
from ncclctl.registry import all_rules
from ncclctl.lint.rules_roce import (gid_family, gid_in_range, iboe_mtu, landing, marking, roce_ports, select_gid)
from ncclctl.model import Gid, NetDev
from ncclctl.probe import probe

from .family import assert_host, assert_pinned, case_findings, family_lint, node, with_env

FAMILY = tuple(r.id for r in all_rules() if r.family == "roce")
RAILS = [f"ens{i}np0" for i in range(1, 9)]

# (rule, severity, subject) per host fixture.
# * hgx-h100-roce-pfc-off: PFC lost on every rail, ens6np0 also fell back to trust pcp (traffic on priority 0,
#   where ECN is off too): what its README promises, plus the ECN consequence of the trust loss.
# * pcie-server really has a RoCE problem its README does not list: NCCL_IB_TC is unset (TC 0 -> priority 0)
#   while dcb shows PFC on priority 3 only, so NCCL's traffic is lossy.
# * dgx-h100's storage RoCE ports are outside /etc/nccl.conf's NCCL_IB_HCA: not judged.
EXPECTED = {
    "cloud-vm-flat": set(),
    "cpu-only": set(),
    "gb300-dd": set(),
    "gb300-dd-acs-off": set(),
    "gb300-dd-split-iommu": set(),
    "dgx-a100": set(),
    "dgx-h100": set(),
    "dgx-h100-nvlink-missing": set(),
    "dgx-h100-port-down": set(),
    "dgx-h100-x8-link": set(),
    "gb200-nvl72": set(),
    "gb200-nvl72-clique-split": set(),
    "gb200-nvl72-degraded": set(),
    "gb200-nvl72-fabric-incomplete": set(),
    "gb200-nvl72-imex-down": set(),
    "gb200-nvl72-no-imex-channel": set(),
    "gb300-nvl72": set(),
    "grace-hopper": set(),
    "h200-vm-socket": set(),
    "hgx-h100-roce": set(),
    "hgx-h100-roce-pfc-off": {("ROCE001", "error", nd) for nd in RAILS}
    | {("ROCE003", "error", "ens6np0"), ("ROCE004", "warning", "ens6np0")},
    "pcie-cx8-inline": set(),
    "pcie-server": {("ROCE001", "error", "enp29s0f0np0"), ("ROCE001", "error", "enp29s0f1np1")},
    # RoCE LAG: mlx5_bond_0 on bond0; QoS is judged on the bond's physical slaves.
    "pcie-server-roce-lag": {("ROCE001", "error", "enp29s0f0np0"), ("ROCE001", "error", "enp29s0f1np1")},
}


lint = family_lint(FAMILY)


def test_family_registered():
    assert FAMILY == ("ROCE001", "ROCE002", "ROCE003", "ROCE004", "ROCE005", "ROCE006", "ROCE007", "ROCE008")


def test_every_fixture_is_pinned():
    assert_pinned(EXPECTED)


@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_findings_per_host(host):
    assert_host(lint(node(host)), EXPECTED[host])


def test_output_is_deterministic():
    assert lint(node("hgx-h100-roce-pfc-off")) == lint(probe(str(HOSTS / "hgx-h100-roce-pfc-off")))


# NCCL's marking and the priority it lands on ------------------------------------------------------------------

@pytest.mark.parametrize("tc,dscp,prio", [(None, 0, 0), ("106", 26, 3), ("104", 26, 3), ("96", 24, 3), ("0x6a", 26, 3),
                                          ("0152", 26, 3), ("362", 26, 3), ("184", 46, 5), ("-1", 0, 0),
                                          ("auto", 0, 0)])
def test_tc_to_priority_under_dscp_trust(tc, dscp, prio):
    n = with_env(node("hgx-h100-roce"), drop=("NCCL_IB_TC",) if tc is None else (),
                 **({"NCCL_IB_TC": tc} if tc is not None else {}))
    ctx = Ctx(node=n)
    m = marking(ctx)
    assert m.dscp == dscp
    rp = roce_ports(ctx)[0]
    assert landing(ctx, rp, m).prio == prio


def test_tc_from_conf_file_names_the_line():
    hgx = node("hgx-h100-roce")
    conf = dataclasses.replace(hgx.facts, nccl_env=(("NCCL_IB_GID_INDEX", "3"),),
                               conf_files=(dataclasses.replace(node("dgx-h100").facts.conf_files[0],
                                                               text="NCCL_IB_TC=106\n"),))
    ctx = Ctx(node=dataclasses.replace(hgx, facts=conf))
    assert marking(ctx).tc_text == "NCCL_IB_TC=106 (/etc/nccl.conf:1)"


def _tagged_node(sl: str | None):
    """hgx-h100-roce whose rail 1 GIDs sit on a VLAN netdev ens1np0.100, trust pcp, PFC on priority 3."""
    hgx = with_env(node("hgx-h100-roce"), **({"NCCL_IB_SL": sl} if sl is not None else {}))
    nics = list(hgx.nics)
    port = nics[0].ports[0]
    gids = tuple(dataclasses.replace(g, netdev="ens1np0.100") for g in port.gids)
    nics[0] = dataclasses.replace(nics[0], ports=(dataclasses.replace(port, gids=gids),))
    netdevs = []
    for nd in hgx.netdevs:
        if nd.name == "ens1np0":
            nd = dataclasses.replace(nd, qos=dataclasses.replace(nd.qos, trust="pcp", dscp2prio=None))
        netdevs.append(nd)
    netdevs.append(NetDev(name="ens1np0.100", mtu=9000, operstate="up", type=1, kind="vlan", parent="ens1np0"))
    return dataclasses.replace(hgx, nics=tuple(nics), netdevs=tuple(netdevs))


def test_pcp_trust_on_vlan_uses_the_sl():
    ctx = Ctx(node=_tagged_node("3"))
    rp = roce_ports(ctx)[0]
    assert (landing(ctx, rp, marking(ctx)).prio, rp.netdev.name) == (3, "ens1np0")
    found = run(Ctx(node=_tagged_node("3")), Config(), only=FAMILY)
    assert not [f for f in found if f.subject == "ens1np0"], found
    # The same VLAN without NCCL_IB_SL: the PCP is 0, the DSCP is ignored.
    found = run(Ctx(node=_tagged_node(None)), Config(), only=FAMILY)
    assert {(f.rule, f.subject) for f in found} >= {("ROCE001", "ens1np0"), ("ROCE003", "ens1np0")}
    assert any("tagged, NCCL_IB_SL unset" in f.message for f in found)


def test_fifo_tc_priority_is_rdma(tmp_path):
    assert case_findings("ROCE002", "priority-4-carries-the-fifo-class", tmp_path) == []
    found = case_findings("ROCE002", "pfc-also-on-priority-4", tmp_path / "b")
    assert [(f.subject, f.severity.value) for f in found] == [("ens1np0", "warning")]


def test_ib_disable_turns_the_family_off():
    assert lint(with_env(node("hgx-h100-roce-pfc-off"), NCCL_IB_DISABLE="1")) == []


def test_lossy_profile(tmp_path):
    cfg = Config(rules=(("ROCE001", RuleConfig(options=(("profile", "lossy"),))),))
    assert lint(node("hgx-h100-roce-pfc-off"), only=("ROCE001",), config=cfg) == []
    (f,) = case_findings("ROCE004", "both-points-off-lossy", tmp_path)
    assert f.severity.value == "error"
    (f,) = case_findings("ROCE004", "reaction-point-off", tmp_path / "b")
    assert f.severity.value == "warning" and f.fix == "echo 1 > /sys/class/net/ens2np0/ecn/roce_rp/enable/3 " \
        "(persist with a systemd unit)"


def test_trust_unknown_is_only_an_info(tmp_path):
    found = case_findings("ROCE003", "trust-unknown-on-inbox-driver", tmp_path)
    assert {f.severity.value for f in found} == {"info"}
    assert "dcb app add dev enp29s0f0np0 dscp-prio 26:3" in found[0].fix


def test_fix_for_trust_loss_is_the_trust():
    found = {(f.rule, f.subject): f for f in lint(node("hgx-h100-roce-pfc-off"))}
    assert found[("ROCE001", "ens6np0")].fix.startswith(
        "switch ens6np0 to DSCP trust (mlnx_qos -i ens6np0 --trust dscp")
    assert "mlnx_qos -i ens1np0 --pfc 0,0,0,1,0,0,0,0" in found[("ROCE001", "ens1np0")].fix
    assert "NCCL_IB_TC=106 (DSCP 26)" in lint(node("pcie-server"))[0].fix


# NCCL's GID auto-selection (ncclIbGetGidIndex) ----------------------------------------------------------------

def _gid(index: int, addr: str, gtype: str | None, netdev: str = "ens1np0") -> Gid:
    # sysfs form: 8 groups of 4 hex digits (not .exploded: Python 3.13 writes IPv4-mapped tails as a.b.c.d).
    hexed = ipaddress.IPv6Address(addr).packed.hex()
    full = ":".join(hexed[i:i + 4] for i in range(0, 32, 4))
    return Gid(index=index, gid=full, type=gtype, netdev=netdev)


STD = [(0, "fe80::a288:c2ff:fe5f:f9c2", "IB/RoCE v1"), (1, "fe80::a288:c2ff:fe5f:f9c2", "RoCE v2"),
       (2, "::ffff:10.200.0.12", "IB/RoCE v1"), (3, "::ffff:10.200.0.12", "RoCE v2")]


def _choose(table, **env):
    hgx = with_env(node("hgx-h100-roce"), drop=("NCCL_IB_GID_INDEX",), **env)
    nic = hgx.nics[0]
    port = dataclasses.replace(nic.ports[0], gids=tuple(_gid(*t) for t in table))
    return select_gid(Ctx(node=hgx), nic, port).index


@pytest.mark.parametrize("table,env,index", [
    (STD, {}, 3),
    # Order follows address add order: IPv4 first, then a global IPv6.
    (STD + [(4, "2001:db8::c", "IB/RoCE v1"), (5, "2001:db8::c", "RoCE v2")], {}, 3),
    (STD + [(4, "2001:db8::c", "IB/RoCE v1"), (5, "2001:db8::c", "RoCE v2")], {"NCCL_IB_ADDR_FAMILY": "AF_INET6"}, 5),
    # Only link-local GIDs (no address on the netdev): index 0 stays.
    (STD[:2], {}, 0),
    # Sparse table as in containers: only slots 4/5 populated besides the defaults.
    (STD[:2] + [(4, "::ffff:10.1.0.5", "IB/RoCE v1"), (5, "::ffff:10.1.0.5", "RoCE v2")], {}, 5),
    # v2 listed before v1 (two addresses): the first v2 IPv4 GID wins and v1 never replaces it.
    ([STD[0], STD[1], (2, "::ffff:10.200.0.12", "RoCE v2"), (3, "::ffff:10.200.0.12", "IB/RoCE v1")], {}, 2),
    # NCCL_IB_ROCE_VERSION_NUM=1 asks for v1.
    (STD, {"NCCL_IB_ROCE_VERSION_NUM": "1"}, 2),
    # NCCL_IB_ADDR_RANGE picks the matching subnet among two IPv4 addresses.
    (STD + [(4, "::ffff:192.168.7.12", "IB/RoCE v1"), (5, "::ffff:192.168.7.12", "RoCE v2")],
     {"NCCL_IB_ADDR_RANGE": "192.168.0.0/16"}, 5),
    (STD + [(4, "::ffff:192.168.7.12", "IB/RoCE v1"), (5, "::ffff:192.168.7.12", "RoCE v2")], {}, 3),
    # A range that matches nothing leaves index 0; an invalid range is ignored (no range).
    (STD, {"NCCL_IB_ADDR_RANGE": "10.100.0.0/16"}, 0),
    (STD, {"NCCL_IB_ADDR_RANGE": "10.100.0.0/40"}, 3),
    (STD, {"NCCL_IB_ADDR_RANGE": "not-an-address/16"}, 3),
    # A family name NCCL does not know keeps AF_INET.
    (STD, {"NCCL_IB_ADDR_FAMILY": "inet6"}, 3),
])
def test_gid_auto_selection(table, env, index):
    assert _choose(table, **env) == index


def test_forced_gid_index_is_used_blindly():
    hgx = node("hgx-h100-roce")
    for value, index in (("3", 3), ("0x2", 2), ("9", 9), ("-1", 3), ("", 3)):
        n = with_env(hgx, NCCL_IB_GID_INDEX=value)
        choice = select_gid(Ctx(node=n), n.nics[0], n.nics[0].ports[0])
        assert choice.index == index, value
        assert choice.forced == (value not in ("-1", ""))


def test_gid_helpers():
    raw = lambda a: ipaddress.IPv6Address(a).packed  # noqa: E731
    assert gid_family(raw("::ffff:10.0.0.1")) == "AF_INET"
    assert gid_family(raw("ff0e::ffff:239.1.1.1")) == "AF_INET"
    assert gid_family(raw("fe80::1")) == "AF_INET6"
    assert gid_in_range("AF_INET", ipaddress.IPv4Address("10.200.0.0").packed, 16, raw("::ffff:10.200.3.4"))
    assert not gid_in_range("AF_INET", ipaddress.IPv4Address("10.200.0.0").packed, 16, raw("::ffff:10.201.3.4"))
    assert gid_in_range("AF_INET6", raw("2001:db8::"), 32, raw("2001:db8:1::5"))
    assert not gid_in_range("AF_INET6", raw("2001:db8::"), 48, raw("2001:db8:1::5"))
    assert gid_in_range("AF_INET", None, 0, raw("::ffff:1.2.3.4"))


def test_gid_findings_name_the_usable_index():
    n = with_env(node("hgx-h100-roce"), NCCL_IB_GID_INDEX="2")
    found = lint(n, only=("ROCE005",))
    assert len(found) == 8
    assert "or set NCCL_IB_GID_INDEX=3 (GID[3] ::ffff:10.200.0.12 (RoCE v2))" in found[0].fix


# RoCE MTU -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mtu,rdma", [(9000, 4096), (4200, 4096), (4192, 4096), (4191, 2048), (2144, 2048),
                                      (2143, 1024), (1500, 1024), (1120, 1024), (1119, 512), (352, 256), (300, None)])
def test_iboe_mtu(mtu, rdma):
    assert iboe_mtu(mtu) == rdma


def test_mtu_grading(tmp_path):
    (f,) = case_findings("ROCE007", "rail-at-mtu-1500", tmp_path)
    assert f.severity.value == "error" and "ip link set dev ens5np0 mtu 9000" in f.fix
    (f,) = case_findings("ROCE007", "rail-at-mtu-4000", tmp_path / "b")
    assert f.severity.value == "warning"


def test_gid_index_differs_is_an_info(tmp_path):
    (f,) = case_findings("ROCE006", "auto-index-differs", tmp_path)
    assert f.severity.value == "info"


# CLI ----------------------------------------------------------------------------------------------------------

def test_cli_lint_pfc_off():
    r = run_cli("lint", "--root", str(HOSTS / "hgx-h100-roce-pfc-off"), "--rule", ",".join(FAMILY),
                "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert {(f["rule"], f["severity"], f["subject"]) for f in doc["findings"]} == EXPECTED["hgx-h100-roce-pfc-off"]
    ens6 = next(f for f in doc["findings"] if f["rule"] == "ROCE003")
    assert "trust=pcp (mlnx_qos)" in ens6["evidence"]


def test_cli_profile_option_via_config(tmp_path):
    cfg = tmp_path / "ncclctl.yaml"
    cfg.write_text("rules:\n  ROCE001: {options: {profile: lossy}}\n  ROCE004: {options: {profile: lossy}}\n")
    r = run_cli("lint", "--root", str(HOSTS / "hgx-h100-roce-pfc-off"), "--rule", "ROCE001,ROCE004",
                "--config", str(cfg), "--format", "json")
    assert r.returncode == 1, r.stderr
    found = [(f["rule"], f["severity"], f["subject"]) for f in json.loads(r.stdout)["findings"]]
    assert found == [("ROCE004", "error", "ens6np0")]


# Robustness: odd settings and hand-written models never crash a check ----------------------------------------

@pytest.mark.parametrize("env", [
    {"NCCL_IB_TC": "0x"}, {"NCCL_IB_TC": "-7"}, {"NCCL_IB_TC": "99999999999999999999"}, {"NCCL_IB_TC": "\"106\""},
    {"NCCL_IB_GID_INDEX": "300"}, {"NCCL_IB_GID_INDEX": "-5"}, {"NCCL_IB_SL": "99"}, {"NCCL_IB_FIFO_TC": "abc"},
    {"NCCL_IB_ADDR_RANGE": "/"}, {"NCCL_IB_ADDR_RANGE": "10.0.0.0/-3"}, {"NCCL_IB_ADDR_FAMILY": "AF_INET6",
                                                                       "NCCL_IB_ADDR_RANGE": "fe80::%eth0/10"},
    {"NCCL_IB_HCA": "^"}, {"NCCL_IB_HCA": "=mlx5_0:x"}, {"NCCL_IB_ROCE_VERSION_NUM": "7"},
])
def test_odd_settings_never_crash(env):
    for host in ("hgx-h100-roce", "hgx-h100-roce-pfc-off", "pcie-server", "dgx-h100"):
        found = run(Ctx(node=with_env(node(host), **env)), Config(),
                    only=FAMILY + tuple(r.id for r in all_rules() if r.family == "infiniband"))
        assert not [f for f in found if "crashed" in f.message], found


def test_hand_written_model_values_never_crash():
    hgx = node("hgx-h100-roce")
    nics = list(hgx.nics)
    port = nics[0].ports[0]
    nics[0] = dataclasses.replace(nics[0], ports=(dataclasses.replace(
        port, gids=(Gid(index=0, gid="not-a-gid", type="RoCE v2"), Gid(index=3, gid="ffff", type=None))),))
    netdevs = []
    for nd in hgx.netdevs:
        if nd.qos is not None:
            nd = dataclasses.replace(nd, qos=dataclasses.replace(nd.qos, pfc_enabled=(True, False),
                                                                 dscp2prio=((26, 9),)),
                                     ecn=dataclasses.replace(nd.ecn, np_enabled=(None,), rp_enabled=()))
        netdevs.append(nd)
    n = dataclasses.replace(hgx, nics=tuple(nics), netdevs=tuple(netdevs))
    found = run(Ctx(node=n), Config(), only=FAMILY)
    assert not [f for f in found if "crashed" in f.message], found
    # GID 3 is unreadable: NCCL_IB_GID_INDEX=3 selects an empty slot on mlx5_0.
    assert ("ROCE005", "mlx5_0") in {(f.rule, f.subject) for f in found}


def test_roce_lag_qos_follows_the_bond_to_its_slaves():
    n = node("pcie-server-roce-lag")
    port = n.nic("mlx5_bond_0").ports[0]
    assert port.netdev == "bond0" and n.netdev("bond0").kind == "bond" and n.netdev("bond0").qos is None
    for slave in ("enp29s0f0np0", "enp29s0f1np1"):
        nd = n.netdev(slave)
        assert nd.master == "bond0" and nd.qos is not None and nd.qos.pfc_enabled[3] and nd.qos.trust == "dscp"
        assert nd.lldp is not None and nd.lldp.port_id == "swp21"
    found = lint(n, only=("ROCE001",))
    assert [f.message.split(":")[0] for f in found] == ["enp29s0f0np0 (bond0 slave, mlx5_bond_0 port 1)",
                                                        "enp29s0f1np1 (bond0 slave, mlx5_bond_0 port 1)"]
    # With NCCL marking DSCP 26 (priority 3, PFC on) both slaves are clean.
    assert lint(with_env(n, NCCL_IB_TC="106"), only=("ROCE001", "ROCE003")) == []
