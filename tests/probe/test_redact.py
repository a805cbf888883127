"""``ncclctl snapshot --redact``: no identifier of the original survives in any file of the redacted tree, in any
encoding (derived from the original probe model and its parsed LLDP neighbours, not hard-coded); unrelated tokens
survive; the redacted tree probes and lints like the original and groups hosts by switch as the original does;
the output is deterministic."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import HOSTS, host_names, run_cli
from ncclctl.errors import NcclctlError
from ncclctl.parsers.lldp import parse_lldpctl_json, parse_lldptool_neighbor
from ncclctl.parsers.show_gids import parse_show_gids
from ncclctl.probe import probe
from ncclctl.probe.redact import Redactor

EPOCH = {"SOURCE_DATE_EPOCH": "1700000000"}
LLDP_HOSTS = [h for h in host_names() if (HOSTS / h / "cmd" / "lldpctl_-f_json.txt").exists()]
IB_HOSTS = [h for h in ("cloud-vm-flat", "dgx-a100") if h in host_names()]


# ------------------------------------------------------------------------------------ what must not survive


def _guid_forms(g: bytes) -> set[str]:
    h = g.hex()
    return {"0x" + h, h, ":".join(h[i:i + 4] for i in range(0, 16, 4)), ":".join(h[i:i + 2] for i in range(0, 16, 2))}


def _mac_forms(mac: bytes) -> set[str]:
    colon = ":".join(f"{x:02x}" for x in mac)
    eui = bytes([mac[0] ^ 2]) + mac[1:3] + b"\xff\xfe" + mac[3:]
    return {colon, colon.replace(":", "-"), mac.hex()} | _guid_forms(eui)


def _v4_forms(a: str) -> set[str]:
    hexs = ipaddress.IPv4Address(a).packed.hex()
    hi, lo = hexs[:4], hexs[4:]
    return {a, f"ffff:{hi}:{lo}", f"::ffff:{a}", f"::ffff:{int(hi, 16):x}:{int(lo, 16):x}"}


def _v6_forms(b: bytes) -> set[str]:
    addr = ipaddress.IPv6Address(b)
    if addr.ipv4_mapped is not None:
        return _v4_forms(str(addr.ipv4_mapped))
    forms = {addr.exploded, addr.compressed} | _guid_forms(b[8:])
    if b[11:13] == b"\xff\xfe":
        forms |= _mac_forms(bytes([b[8] ^ 2]) + b[9:11] + b[13:16])
    return forms


def _ip_forms(text: str) -> set[str]:
    ip = ipaddress.ip_address(text)
    return _v4_forms(text) if ip.version == 4 else _v6_forms(ip.packed)


def neighbours(root: Path) -> list:
    """The LLDP neighbours recorded in a host tree, parsed as the probe parses them."""
    out = []
    cmd = root / "cmd"
    if (cmd / "lldpctl_-f_json.txt").exists():
        out += parse_lldpctl_json((cmd / "lldpctl_-f_json.txt").read_text())
    for path in sorted(cmd.glob("lldptool_-t_-n_-i_*.txt")) if cmd.is_dir() else ():
        if "_-V_" not in path.name:
            try:
                out.append(parse_lldptool_neighbor(path.read_text()))
            except NcclctlError:
                pass
    return out


def identifiers(root: Path) -> dict[str, str]:
    """Every spelling of every identifier of the host at ``root`` -> what it is, from its probe model and LLDP."""
    node = probe(str(root))
    found: dict[str, str] = {}

    def add(forms, what: str) -> None:
        for form in forms:
            found.setdefault(form.lower(), what)

    if node.hostname not in ("unknown", "localhost"):
        add({node.hostname, node.hostname.split(".")[0]}, "hostname")
    for nic in node.nics:
        for guid in (nic.node_guid, nic.sys_image_guid):
            if guid:
                add(_guid_forms(bytes.fromhex(guid[2:])), f"{nic.name} GUID")
        for port in nic.ports:
            for gid in port.gids:
                add(_v6_forms(bytes.fromhex(gid.gid.replace(":", ""))) | {gid.gid}, f"{nic.name} GID {gid.gid}")
    for nd in node.netdevs:
        hexs = (nd.address or "").replace(":", "")
        if len(hexs) == 12 and int(hexs, 16) and not int(hexs[:2], 16) & 1:
            add(_mac_forms(bytes.fromhex(hexs)), f"{nd.name} MAC")
        elif len(hexs) == 40:
            add({nd.address or ""} | _v6_forms(bytes.fromhex(hexs[8:])), f"{nd.name} IPoIB address")
    for gpu in node.gpus:
        if gpu.serial:
            add({gpu.serial}, f"GPU{gpu.index} serial")
        if gpu.uuid:
            add({gpu.uuid.split("-", 1)[1]}, f"GPU{gpu.index} UUID")
    for nb in neighbours(root):
        if nb.chassis_name:
            add({nb.chassis_name}, "LLDP system name")
        for value, kind, chassis in ((nb.chassis_id, nb.chassis_id_type, True),
                                     (nb.port_id, nb.port_id_type, False)):
            if value and kind == "mac":
                add(_mac_forms(bytes.fromhex(value.replace(":", ""))), "LLDP MAC id")
            elif value and kind == "ip":
                add(_ip_forms(value), "LLDP address id")
            elif value and kind == "local" and chassis:
                add({value}, "LLDP chassis id")
        for ip in nb.mgmt_ips:
            add(_ip_forms(ip), "LLDP management address")
    return found


def _files(root: Path) -> dict[str, bytes | str]:
    """Every entry of a tree: path -> bytes (files) or ``-> target`` (links)."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                out[rel] = "-> " + os.readlink(full)
            elif os.path.isfile(full):
                out[rel] = Path(full).read_bytes()
    return out


def leaks(tree: Path, found: dict[str, str]) -> list[str]:
    """``file: form (what)`` for every spelling in ``found`` that occurs as a token in a file of ``tree``."""
    patterns = {}
    for form in found:
        core = re.escape(form.encode())
        if re.fullmatch(r"[0-9.]+", form):  # a dotted quad: not inside a longer one
            core = rb"(?<!\d\.)" + core + rb"(?!\.\d)"
        patterns[form.encode()] = re.compile(rb"(?<![0-9A-Za-z])" + core + rb"(?![0-9A-Za-z])", re.IGNORECASE)
    out = []
    for rel, data in sorted(_files(tree).items()):
        if isinstance(data, bytes):
            low = data.lower()
            out += [f"{rel}: {form.decode()} ({found[form.decode()]})" for form, pattern in patterns.items()
                    if form in low and pattern.search(data)]
    return out


# ------------------------------------------------------------------------------------------------ helpers


def snap(src: Path, out: Path, *extra: str) -> None:
    result = run_cli("snapshot", "--root", str(src), "-o", str(out), *extra, env=EPOCH)
    assert result.returncode == 0, result.stderr


def probe_doc(root: Path) -> dict:
    result = run_cli("probe", "--root", str(root), "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def lint_doc(root: Path) -> tuple[list[str], list[str]]:
    result = run_cli("lint", "--root", str(root), "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    return doc["rules_run"], sorted(f["rule"] for f in doc["findings"])


def rails_doc(root: Path, tmp: Path) -> dict:
    inv = tmp / f"inventory-{root.name}.yaml"
    inv.write_text(f"version: 1\nhosts:\n  h1: {{snapshot: {root}}}\n")
    result = run_cli("fabric", "rails", "--inventory", str(inv), "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    return {"fabric": {k: v for k, v in doc["fabric"].items() if k != "source"}, "rails": doc["rails"],
            "leaves": [len(g["leaves"]) for g in doc["groups"]], "ok": doc["ok"]}


def shape(doc: dict) -> dict:
    """What redaction must keep: counts, RoCE ports, the GPU-NIC (rail) matrix, LLDP presence."""
    return {
        "gpus": len(doc["gpus"]), "nics": len(doc["nics"]), "netdevs": len(doc["netdevs"]),
        "roce_ports": sum(p["link_layer"] == "Ethernet" for n in doc["nics"] for p in n["ports"]),
        "gids": [len(p["gids"]) for n in doc["nics"] for p in n["ports"]],
        "lldp": sorted(nd["name"] for nd in doc["netdevs"] if nd.get("lldp")),
        "derived": doc["derived"], "pci": doc["pci"],
    }


def check_redacted(src: Path, out: Path, tmp: Path) -> None:
    found = identifiers(src)
    assert found
    bad = leaks(out, found)
    assert not bad, f"{len(bad)} identifiers survive redaction, e.g. {bad[:8]}"
    original, redacted = probe_doc(src), probe_doc(out)
    assert shape(redacted) == shape(original)
    assert redacted["hostname"] != original["hostname"] or original["hostname"] in ("unknown", "localhost")
    assert lint_doc(out) == lint_doc(src)


# ---------------------------------------------------------------------------------------- captured hosts


@pytest.mark.parametrize("host", LLDP_HOSTS)
def test_redacted_roce_lldp_host(host, tmp_path):
    src = HOSTS / host
    assert neighbours(src), "the fixture records LLDP neighbours"
    out = tmp_path / "red"
    snap(src, out, "--redact")
    check_redacted(src, out, tmp_path)
    rails = rails_doc(out, tmp_path)
    assert rails == rails_doc(src, tmp_path)
    # Same switch -> same fake in every file: the redacted model's neighbours are the redacted capture's.
    red_names = {nb.chassis_name for nb in neighbours(out)}
    model_names = {nd["lldp"]["chassis_name"] for nd in probe_doc(out)["netdevs"] if nd.get("lldp")}
    assert model_names <= red_names and len(red_names) == len({nb.chassis_name for nb in neighbours(src)})


@pytest.mark.parametrize("host", IB_HOSTS)
def test_redacted_infiniband_host(host, tmp_path):
    out = tmp_path / "red"
    snap(HOSTS / host, out, "--redact")
    check_redacted(HOSTS / host, out, tmp_path)


@pytest.mark.parametrize("host", ["hgx-h100-roce", "cloud-vm-flat"])
def test_redaction_is_deterministic(host, tmp_path):
    snap(HOSTS / host, tmp_path / "a", "--redact")
    snap(HOSTS / host, tmp_path / "b", "--redact")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_same_switch_same_fake_across_hosts(tmp_path):
    """Two hosts cabled to the same leaves, redacted separately, still name the same (fake) switches."""
    a, b = "hgx-h100-roce", "hgx-h100-roce-pfc-off"
    snap(HOSTS / a, tmp_path / "a", "--redact")
    snap(HOSTS / b, tmp_path / "b", "--redact")

    def switches(root: Path) -> set:
        return {(nb.interface, nb.chassis_name, nb.chassis_id, nb.mgmt_ip) for nb in neighbours(root)}

    assert switches(HOSTS / a) == switches(HOSTS / b)
    assert switches(tmp_path / "a") == switches(tmp_path / "b")
    assert not switches(tmp_path / "a") & switches(HOSTS / a)


# -------------------------------------------------------------------------------------- synthetic hosts


def _copy(host: str, dest: Path) -> Path:
    shutil.copytree(HOSTS / host, dest, symlinks=True)
    return dest


def _rewrite_text(root: Path, old: str, new: str) -> None:
    for rel, data in _files(root).items():
        if isinstance(data, bytes) and b"\0" not in data and old.encode() in data and not rel.endswith("config"):
            (root / rel).write_bytes(data.replace(old.encode(), new.encode()))


def test_hostname_is_replaced_as_a_whole_token_only(tmp_path):
    """A host named ``vm``: cpuinfo's vme/vmmcall, the command line's nested_pvm=1, NVML's keys survive."""
    src = _copy("cloud-vm-flat", tmp_path / "src")
    _rewrite_text(src, probe(str(src)).hostname, "vm")
    cmdline = src / "proc" / "cmdline"
    cmdline.write_text(cmdline.read_text().rstrip("\n") + " kvm-amd.nested=1 nested_pvm=1 kvm_amd.vm_exit=1 xvm\n")
    assert probe(str(src)).hostname == "vm"
    out, plain = tmp_path / "red", tmp_path / "plain"
    snap(src, out, "--redact")
    snap(src, plain)
    assert (out / "proc" / "cpuinfo").read_bytes() == (src / "proc" / "cpuinfo").read_bytes()
    assert re.search(r"\bvme\b.*\bvmmcall\b", (out / "proc" / "cpuinfo").read_text())
    words = (out / "proc" / "cmdline").read_text().split()
    assert {"kvm-amd.nested=1", "nested_pvm=1", "kvm_amd.vm_exit=1", "xvm", "ro", "panic=-1"} <= set(words)

    def keys(doc, path=""):
        if isinstance(doc, dict):
            return {path + "/" + k for k in doc} | {k for key, v in doc.items() for k in keys(v, path + "/" + key)}
        if isinstance(doc, list):
            return {k for v in doc for k in keys(v, path + "[]")}
        return set()

    red_nvml = json.loads((out / "nvml.json").read_text())
    assert keys(red_nvml) == keys(json.loads((plain / "nvml.json").read_text()))
    assert red_nvml["nvml_version"] == json.loads((plain / "nvml.json").read_text())["nvml_version"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest.keys() == json.loads((plain / "manifest.json").read_text()).keys()
    assert manifest["redacted"] is True and manifest["hostname"].startswith("host-")
    # The name itself is gone everywhere, as a whole token.
    token = re.compile(rb"(?<![A-Za-z0-9_-])vm(?![A-Za-z0-9_-])", re.IGNORECASE)
    assert not [rel for rel, data in _files(out).items() if isinstance(data, bytes) and token.search(data)]
    assert probe_doc(out)["hostname"] == manifest["hostname"]
    # Nothing else changed: a file differs only where it holds an identifier (or the command line's PARTUUID=).
    holders = {line.split(": ", 1)[0] for line in leaks(plain, identifiers(src))} | {"proc/cmdline"}
    red_files = _files(out)
    differ = {rel for rel, data in _files(plain).items() if data != red_files.get(rel)}
    assert differ and differ <= holders, sorted(differ - holders)


def _lldptool(k: int) -> str:
    return (f"Chassis ID TLV\n\tMAC: 1c:34:da:7a:0{k}:0{k}\nPort ID TLV\n\tIfname: swp{k}s0\n"
            f"Time to Live TLV\n\t120\nPort Description TLV\n\tdownlink to hgx-roce-12 ens{k}np0\n"
            f"System Name TLV\n\trail{k - 1}-leaf01.dc1.corp.example.net\n"
            "System Description TLV\n\tCumulus Linux version 5.9.1 running on Nvidia SN5600\n"
            f"Management Address TLV\n\tIPv4: 172.20.{k}.1\n\tIfindex: 2\n"
            f"Management Address TLV\n\tIPv6: fd00:7::{k}\n\tIfindex: 2\n"
            "End of LLDPDU TLV\n")


def _add_dsn(config: Path, serial: bytes) -> None:
    data = bytearray(config.read_bytes())
    off = 0x100
    while (nxt := (int.from_bytes(data[off:off + 4], "little") >> 20) & 0xFFC):
        off = nxt
    header = int.from_bytes(data[off:off + 4], "little")
    data[off:off + 4] = ((header & 0xFFFFF) | 0xE00 << 20).to_bytes(4, "little")
    data[0xE00:0xE0C] = (0x00010003).to_bytes(4, "little") + serial[::-1]
    config.write_bytes(bytes(data))


def test_lldpad_host_fqdn_address_range_and_device_serial(tmp_path):
    """A RoCE host running lldpad (lldptool captures, switch FQDNs, IPv4 and IPv6 management addresses), with an
    FQDN hostname, NCCL_IB_ADDR_RANGE steering the GID choice and a PCIe Device Serial Number capability."""
    src = _copy("hgx-h100-roce", tmp_path / "src")
    (src / "cmd" / "lldpctl_-f_json.txt").unlink()
    for k in range(1, 9):
        (src / "cmd" / f"lldptool_-t_-n_-i_ens{k}np0.txt").write_text(_lldptool(k))
    (src / "proc" / "sys" / "kernel" / "hostname").write_text("hgx-roce-12.cluster.corp.example\n")
    env = json.loads((src / "env.json").read_text())
    env.pop("NCCL_IB_GID_INDEX")
    env["NCCL_IB_ADDR_RANGE"] = "10.200.0.0/16"
    (src / "env.json").write_text(json.dumps(env))
    bridge = src / "sys/devices/pci0000:b7/0000:b7:01.0/config"
    serial = bytes.fromhex("0011223344556677")
    _add_dsn(bridge, serial)
    out = tmp_path / "red"
    snap(src, out, "--redact")
    found = identifiers(src)
    assert {"hgx-roce-12.cluster.corp.example", "rail0-leaf01.dc1.corp.example.net", "172.20.1.1",
            "fd00:7::1"} <= set(found)
    found.update({"corp.example": "domain", "0x0011223344556677": "device serial"})
    bad = leaks(out, found)
    assert not bad, f"{len(bad)} identifiers survive redaction, e.g. {bad[:8]}"
    assert serial[::-1] not in (out / "sys/devices/pci0000:b7/0000:b7:01.0/config").read_bytes()
    original, redacted = probe_doc(src), probe_doc(out)
    assert shape(redacted) == shape(original)
    assert redacted["hostname"].startswith("host-") and redacted["hostname"].endswith(".example")
    assert len(shape(redacted)["lldp"]) == 8
    rules = lint_doc(src)
    assert "ROCE005" in rules[0] and "ROCE005" not in rules[1]
    assert lint_doc(out) == rules
    rng = ipaddress.ip_network(json.loads((out / "env.json").read_text())["NCCL_IB_ADDR_RANGE"])
    v4 = [ipaddress.IPv6Address(g["gid"]).ipv4_mapped for n in redacted["nics"] for p in n["ports"]
          for g in p["gids"] if ipaddress.IPv6Address(g["gid"]).ipv4_mapped]
    assert v4 and all(a in rng for a in v4) and rng.prefixlen == 16 and rng.subnet_of(ipaddress.ip_network("10.0.0.0/8"))


# ------------------------------------------------------------------------------------- the encodings (API)

SHOW_GIDS = (
    "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
    "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
    "mlx5_0\t1\t0\tfe80:0000:0000:0000:a288:c2ff:fe5f:f9c2\t\t\tv1\tens1np0\n"
    "mlx5_0\t1\t1\tfe80:0000:0000:0000:a288:c2ff:fe5f:f9c2\t\t\tv2\tens1np0\n"
    "mlx5_0\t1\t2\t0000:0000:0000:0000:0000:ffff:0a0a:0015\t10.10.0.21  \tv1\tens1np0\n"
    "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:0a0a:0015\t10.10.0.21  \tv2\tens1np0\n"
    "mlx5_0\t1\t4\t2001:0470:1f0b:0012:a288:c2ff:fe5f:f9c2\t\t\tv2\tens1np0\n"
    "n_gids_found=5\n"
)
IP_ADDR = (
    "3: ens1np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP group default qlen 1000\n"
    "    link/ether a0:88:c2:5f:f9:c2 brd ff:ff:ff:ff:ff:ff permaddr A0:88:C2:5F:F9:C3\n"
    "    inet 10.10.0.21/24 brd 10.10.0.255 scope global ens1np0\n"
    "    inet6 2001:470:1f0b:12:a288:c2ff:fe5f:f9c2/64 scope global dynamic mngtmpaddr\n"
    "    inet6 fe80::a288:c2ff:fe5f:f9c2/64 scope link\n"
)
IP_ADDR_JSON = ('[{"ifname":"ens1np0","address":"a0:88:c2:5f:f9:c2","addr_info":[{"family":"inet",'
                '"local":"10.10.0.21","prefixlen":24,"broadcast":"10.10.0.255"},{"family":"inet6",'
                '"local":"::ffff:a0a:15","prefixlen":128}]}]\n')
IBV = ("\tnode_guid:\t\t\ta088:c203:005f:f9c2\n"
       "\t\t\tGID[  1]:\t\tfe80::a288:c2ff:fe5f:f9c2, RoCE v2\n"
       "\t\t\tGID[  3]:\t\t::ffff:10.10.0.21, RoCE v2\n"
       "\t\t\tGID[  4]:\t\t::ffff:0a0a:0015, RoCE v2\n")
IBSTAT = "\tNode GUID: 0xa088c203005ff9c2\n\tPort GUID: 0xa088c203005ff9c2\n\tsw H-a088c203005ff9c2 a088c25ff9c2\n"
UNRELATED = ("fw_ver: 28.39.1002 version 2.1.0.4 netmask 255.255.255.0 lo 127.0.0.1 mcast 224.0.0.251 ff02::1 ::1\n"
             "bdf 0000:b7:01.0 pci 00000000:19:00.0 age 03:12:40 cpumap ffffffff,00000000 mask 0x0000000000000000\n"
             "vendor 0x02c9 board MT_0000000838 broadcast ff:ff:ff:ff:ff:ff lldp 01:80:c2:00:00:0e null "
             "00:00:00:00:00:00 uuid 00000000-0000-0000-0000-000000000000\n")


def _redactor(*texts: str) -> Redactor:
    red = Redactor()
    for text in texts:
        red.learn_text(text)
    return red


def test_every_encoding_of_an_address_maps_to_one_fake():
    texts = (SHOW_GIDS, IP_ADDR, IP_ADDR_JSON, IBV, IBSTAT)
    red = _redactor(*texts)
    gids, addr, addr_json, ibv, ibstat = (red.text(t) for t in texts)
    for out in (gids, addr, addr_json, ibv, ibstat):
        low = out.lower()
        for real in ("10.10.0.21", "0a0a:0015", ":a0a:15", "a0:88:c2:5f:f9:c2", "a0:88:c2:5f:f9:c3", "a288:c2ff",
                     "a088:c203", "a088c203005ff9c2", "a088c25ff9c2", "2001:470", "2001:0470", "1f0b"):
            assert real not in low, (real, out)
    # show_gids: the IPv4 column is the GID's IPv4-mapped tail; the link-local GID is the EUI-64 of the fake MAC.
    rows = parse_show_gids(gids)
    v4 = [r for r in rows if r.ipv4]
    assert v4 and all(ipaddress.IPv6Address(r.gid).ipv4_mapped == ipaddress.IPv4Address(r.ipv4) for r in v4)
    fake_v4 = v4[0].ipv4
    assert ipaddress.IPv4Address(fake_v4) in ipaddress.ip_network("10.0.0.0/8") and fake_v4.endswith(".21")
    fake_mac = re.search(r"link/ether (\S+)", addr).group(1)
    assert fake_mac.startswith("02:")
    m = bytes.fromhex(fake_mac.replace(":", ""))
    eui = (bytes([m[0] ^ 2]) + m[1:3] + b"\xff\xfe" + m[3:]).hex()
    assert all(r.gid.replace(":", "").endswith(eui) for r in rows if r.gid.startswith("fe80"))
    assert f"inet {fake_v4}/24 brd {fake_v4.rsplit('.', 1)[0]}.255 " in addr
    assert f'"local":"{fake_v4}"' in addr_json and f"::ffff:{fake_v4}" in ibv
    hexs = ipaddress.IPv4Address(fake_v4).packed.hex()
    assert f"::ffff:{hexs[:4]}:{hexs[4:]}" in ibv  # the padded compressed spelling stays padded
    assert f"::ffff:{int(hexs[:4], 16):x}:{int(hexs[4:], 16):x}" in addr_json
    # The global IPv6 address: documentation prefix, same /64 in both files, interface id from the fake MAC.
    glob = re.search(r"inet6 (\S+)/64 scope global", addr).group(1)
    assert ipaddress.IPv6Address(glob) in ipaddress.ip_network("2001:db8::/32")
    assert ipaddress.IPv6Address(glob) in [ipaddress.IPv6Address(r.gid) for r in rows]
    assert ipaddress.IPv6Address(glob).packed[8:].hex() == eui
    # GUIDs: sysfs, 0x, bare and ibnetdiscover's H- spelling agree.
    guid = re.search(r"node_guid:\s+(\S+)", ibv).group(1).replace(":", "")
    assert f"Node GUID: 0x{guid}" in ibstat and f"H-{guid}" in ibstat
    assert fake_mac.replace(":", "") in ibstat  # the bare MAC, known from its colon spelling


def test_unrelated_tokens_survive():
    red = _redactor(UNRELATED, IP_ADDR)
    assert red.text(UNRELATED) == UNRELATED


def test_prefix_structure_is_kept():
    red = Redactor()
    for a in ("10.200.0.12", "10.200.1.12", "10.200.0.13", "10.201.0.12", "192.168.200.10", "192.168.200.11"):
        red.ipv4.add(int(ipaddress.IPv4Address(a)))
    fake = {a: ipaddress.IPv4Address(red.text(a)) for a in ("10.200.0.12", "10.200.1.12", "10.200.0.13",
                                                            "10.201.0.12", "192.168.200.10", "192.168.200.11")}
    assert len(set(fake.values())) == len(fake)
    assert all(f in ipaddress.ip_network("10.0.0.0/8") for f in fake.values())

    def common(a, b):
        return 32 - (int(fake[a]) ^ int(fake[b])).bit_length()

    assert common("10.200.0.12", "10.200.0.13") >= 24 and common("10.200.0.12", "10.200.1.12") in range(16, 24)
    assert common("10.200.0.12", "10.201.0.12") in range(8, 16)
    assert common("192.168.200.10", "192.168.200.11") >= 24
    red.learn_text("NCCL_IB_ADDR_RANGE=10.200.0.0/16")
    net = ipaddress.ip_network(red.text("10.200.0.0/16"))
    assert fake["10.200.0.12"] in net and fake["10.200.1.12"] in net and fake["10.201.0.12"] not in net


@pytest.mark.parametrize("name, text, kept", [
    ("vm", "flags : fpu vme de vmmcall svm\n", True),
    ("vm", "nested_pvm=1 kvm_amd.vm_exit=1 vm-1 xvm VMware\n", True),
    ("vm", '{"nvml_version": "12.550.54.15", "nvml": 1}\n', True),
    ("gpu", '<gpu dev="0"></gpu>\n', True),
    ("vm", "vm mlx5_0\n", False),
    ("vm", '"hostname": "vm",\n', False),
    ("vm", "vm.cluster.example.org:22\n", False),
    ("VM", "node VM.\n", False),
])
def test_hostname_tokens(name, text, kept):
    red = Redactor()
    red.add_name(name, "host")
    assert (red.text(text) == text) is kept
    if not kept:
        assert not re.search(r"(?<![A-Za-z0-9_-])vm(?![A-Za-z0-9_-])", red.text(text), re.IGNORECASE)
        assert "cluster.example.org" not in red.text(text)


def test_hostile_runs_stay_linear():
    """One long run of hex digits and colons (or dots) is no identifier, and scanning it is not quadratic."""
    red = Redactor()
    for text in ("0:" * 200_000, "a" * 400_000 + ":", "1." * 200_000, ":" * 400_000):
        red.learn_text(text)
        assert red.text(text) == text


def test_device_serial_in_config_space():
    config = bytearray(4096)
    config[0x100:0x104] = (0x00010003).to_bytes(4, "little")  # DSN, no next capability
    config[0x104:0x10C] = bytes.fromhex("0011223344556677")[::-1]
    red = Redactor()
    out = red.config(bytes(config))
    assert out[:0x104] == config[:0x104] and out[0x10C:] == config[0x10C:] and out[0x104:0x10C] != config[0x104:0x10C]
    assert red.config(bytes(config)) == out
    loop = bytearray(config)
    loop[0x100:0x104] = (0x00010003 | 0x100 << 20).to_bytes(4, "little")  # a capability pointing at itself
    assert len(red.config(bytes(loop))) == 4096


def test_key_changes_every_fake():
    plain, keyed = Redactor(), Redactor("s3cret")
    for red in (plain, keyed):
        red.learn_text(IP_ADDR)
    assert plain.text(IP_ADDR) != keyed.text(IP_ADDR)
    assert Redactor("s3cret").text("a0:88:c2:5f:f9:c2") == keyed.text("a0:88:c2:5f:f9:c2")
