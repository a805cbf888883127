"""Command outputs as users paste them (issue 16): ``ncclctl parse KIND FILE`` on the authored fixtures under
fixtures/outputs/, each reproducing a quirk seen in real outputs (see its README): prompts and command echoes,
cut blocks, elisions, mail quoting, filtered lines, matrices of the wrong kind."""

from __future__ import annotations

import json

import pytest

from conftest import REPO, run_cli
from ncclctl.errors import ParseError
from ncclctl.parsers._common import paste_body, shell_line
from ncclctl.parsers.ibstatus import parse_ibstatus
from ncclctl.parsers.lspci import parse_lspci
from ncclctl.parsers.nvlink import parse_nvlink_status

OUT = REPO / "fixtures" / "outputs"


def parse(kind: str, name: str) -> dict:
    r = run_cli("parse", kind, str(OUT / name), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["kind"] == kind and doc["schema_version"] == 1
    return doc


def refused(kind: str, name: str) -> str:
    r = run_cli("parse", kind, str(OUT / name))
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and f"{name}:" in r.stderr and "(fix: " in r.stderr
    return r.stderr


def test_every_fixture_is_documented_and_parsed_or_refused():
    readme = (OUT / "README.md").read_text()
    for p in sorted(OUT.glob("*.txt")):
        assert f"`{p.name}`" in readme, p.name


def test_ibstat_prompt_and_ibpanic():
    doc = parse("ibstat", "ibstat-prompt.txt")
    assert [ca["name"] for ca in doc["result"]] == ["mlx5_0"] and doc["notes"] == []
    assert doc["result"][0]["node_guid"] == "0x7c8c090300aa0010"
    doc = parse("ibstat", "ibstat-ibpanic.txt")
    assert [ca["name"] for ca in doc["result"]] == ["mlx5_0", "mlx5_1"]
    assert doc["failure"]["line"] == 35 and "mlx5_2" in doc["failure"]["text"]
    assert any("the tool stopped here" in n for n in doc["notes"])


def test_ibstatus_forms():
    doc = parse("ibstatus", "ibstatus-tabs.txt")
    ports = doc["result"]["ports"]
    assert [(p["device"], p["state"], p["rate_gbps"], p["width"], p["speed"], p["link_layer"]) for p in ports] == [
        ("mlx5_0", "ACTIVE", 400.0, 4, "NDR", "InfiniBand"), ("mlx5_1", "DOWN", 100.0, 4, "EDR", "Ethernet")]
    assert ports[0]["base_lid"] == 0x2A and ports[1]["default_gid"] is None and ports[1]["phys_state"] == "Disabled"
    doc = parse("ibstatus", "ibstatus-markdown-prompt.txt")
    assert [(p["device"], p["rate_gbps"]) for p in doc["result"]["ports"]] == [("mlx5_4", 200.0)]
    doc = parse("ibstatus", "ibstatus-cut.txt")
    assert [p["device"] for p in doc["result"]["ports"]] == ["mlx5_0"]
    assert any("cut" in n for n in doc["notes"]) and any("mlx5_1 port 1" in n for n in doc["notes"])


def test_nvlink_status():
    doc = parse("nvlink", "nvlink-h100.txt")
    gpus = doc["result"]["gpus"]
    assert [(g["index"], len(g["links"])) for g in gpus] == [(0, 18), (1, 18)]
    assert [lk["link"] for lk in gpus[0]["links"] if not lk["active"]] == [5]
    assert gpus[0]["links"][0]["gbs"] == 26.562 and gpus[0]["uuid"].startswith("GPU-")
    doc = parse("nvlink", "nvlink-pasted.txt")
    assert [g["index"] for g in doc["result"]["gpus"]] == [0, 5]
    assert sum("leaves out" in n for n in doc["notes"]) == 2 and sum("UUID is elided" in n for n in doc["notes"]) == 2


def test_topo_m_wrapped_and_echoed():
    doc = parse("topo-m", "topo-m-wrapped.txt")
    assert doc["result"]["labels"] == ["GPU0", "GPU1", "NIC0"] and doc["result"]["nic_legend"] == [["NIC0", "mlx5_0"]]
    assert any("text before the matrix header" in n for n in doc["notes"])
    doc = parse("topo-m", "topo-m-echo-on-header.txt")
    assert doc["result"]["matrix"] == [["X", "PHB"], ["PHB", "X"]]
    assert any("command echo" in n for n in doc["notes"]) and any("legend entries without" in n for n in doc["notes"])


def test_p2p_matrices_parse_as_such_and_each_kind_refuses_the_other():
    doc = parse("p2p", "p2p-read.txt")
    res = doc["result"]
    assert res["capability"] == "read" and res["labels"] == ["GPU0", "GPU1", "GPU2"]
    assert res["matrix"][0] == ["X", "OK", "CNS"]
    doc = parse("p2p", "p2p-retry-spaces.txt")  # the failed first try is another command's output
    assert doc["result"]["capability"] == "write" and doc["result"]["matrix"] == [["X", "GNS"], ["GNS", "X"]]
    msg = refused("topo-m", "p2p-read.txt")
    assert "nvidia-smi topo -p2p" in msg and "ncclctl parse p2p FILE" in msg
    msg = refused("p2p", "topo-m-wrapped.txt")
    assert "this is 'nvidia-smi topo -m' output" in msg


def test_lspci():
    doc = parse("lspci", "lspci-vvv-root.txt")
    sw, gpu = doc["result"]["devices"]
    assert sw["bdf"] == "0000:17:00.0" and sw["port_type"] == "Downstream Port"
    assert sw["acs_ctrl"] == "0x1d" and sw["acs_cap"] == "0x7f"
    assert (sw["max_link_speed"], sw["current_link_speed"], sw["current_link_width"]) == (
        "32.0 GT/s PCIe", "16.0 GT/s PCIe", 8)
    assert sw["speed_downgraded"] is True and sw["width_downgraded"] is True and sw["numa_node"] == 0
    assert gpu["port_type"] == "Endpoint" and gpu["driver"] == "nvidia" and gpu["acs_ctrl"] is None
    doc = parse("lspci", "lspci-elided.txt")
    assert doc["result"]["devices"][0]["acs_ctrl"] == "0x1d" and len(doc["notes"]) == 3
    doc = parse("lspci", "lspci-mail-quoted.txt")  # "> " quoting, flag lines wrapped by the mailer
    dev = doc["result"]["devices"][0]
    assert dev["bdf"] == "0000:00:02.0" and dev["acs_ctrl"] == "0x1d" and dev["acs_cap"] == "0x1f"
    doc = parse("lspci", "lspci-no-root.txt")
    assert doc["result"]["devices"][0]["access_denied"] is True and doc["result"]["devices"][0]["acs_ctrl"] is None
    assert "quoted-printable" in refused("lspci", "lspci-quoted-printable.txt")


def test_fabric_kinds():
    doc = parse("iblinkinfo", "iblinkinfo-grep-active.txt")
    nodes = {n["guid"]: n for n in doc["result"]["nodes"]}
    assert nodes["lid:3"]["kind"] == "switch" and nodes["lid:3"]["desc"] == "MF0;lab-leaf:MQM9790/U1"
    assert any("filtered (grep?)" in n for n in doc["notes"])
    doc = parse("ibnetdiscover", "ibnetdiscover-hash-in-desc.txt")
    sw = doc["result"]["nodes"][0]
    assert sw["desc"] == "Voltaire 4036 # lab-sw1"
    assert sw["ports"][0]["remote_port_guid"] == "00117500008ea9b3"  # printed without its leading zeros


def test_text_format_lists_records_and_notes():
    r = run_cli("parse", "ibstatus", str(OUT / "ibstatus-cut.txt"))
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].endswith("ibstatus: 1 record(s)") and "device=mlx5_0" in lines[1]
    assert lines[-1].startswith("note: ")


@pytest.mark.parametrize("line, tools, kind", [
    ("[root@n01 HPL]# iblinkinfo | grep Up", ("iblinkinfo",), "invocation"),
    ("root@t3640:/# ibstatus", ("ibstatus",), "invocation"),
    ("    harry@foo:~$ sudo ibstatus", ("ibstatus",), "invocation"),
    ("(base) root@epyc:~/x# nvidia-smi topo -p2p p", ("nvidia-smi topo",), "invocation"),
    ("nvidia-smi nvlink -s", ("nvidia-smi nvlink",), "invocation"),
    ("+ /usr/sbin/ibstat", ("ibstat",), "invocation"),
    ("# lspci -vvvs 00:01.", ("lspci",), "invocation"),
    ("[root@n01 HPL]#", ("ibstat",), "prompt"),
    ("[root@n01 HPL]# cat run.sh", ("ibstat",), "prompt"),
    ("# Topology file: generated on Mon", ("ibnetdiscover",), None),
    ('[1]\t"H-e09d7303007a4bd8"[1](e09d7303007a4bd8) \t\t# "a08 mlx5_5" lid 647 4xNDR', ("ibnetdiscover",), None),
    ("CA 'mlx5_0'", ("ibstat",), None),
    ("% ibstat", ("ibstat",), "invocation"),
    ("50%", ("ibstat",), None),
])
def test_shell_lines(line, tools, kind):
    assert shell_line(line, tools) == kind


def test_paste_body_keeps_the_last_invocations_output_and_line_numbers():
    lines = ["$ ibstat", "old", "$ ibstatus", "x", "y", "[u@h ~]$ ls", "z"]
    body, n = paste_body(lines, ("ibstatus",))
    assert body == ["", "", "", "x", "y", "", ""] and n == 5


@pytest.mark.parametrize("parser, text, needle", [
    (parse_ibstatus, "Infiniband device 'mlx5_0' port 1 status:\n\tstate:\t 4 ACTIVE\n", "expected '<n>: <NAME>'"),
    (parse_ibstatus, "Infiniband device 'mlx5_0' port 1 status:\n\tbase lid:\t 0xZZ\n\tstate: 4: ACTIVE\n", "hex LID"),
    (parse_ibstatus, "Infiniband device 'mlx5_0' port 1 status:\n\trate:\t 400 Gbps\n\tstate: 4: ACTIVE\n", "rate"),
    (parse_ibstatus, "hello\n", "before the first"),
    (parse_ibstatus, "Infiniband device 'mlx5_0' port 1 status:\n\tcolour: red\n\tstate: 4: ACTIVE\n", "cannot read"),
    (parse_nvlink_status, "\tLink 0: 25 GB/s\n", "before any 'GPU N"),
    (parse_nvlink_status, "GPU 0: A (UUID: GPU-1)\n\tLink 0: 25 GB/s\n\tLink 0: 25 GB/s\n", "listed twice"),
    (parse_nvlink_status, "GPU 0: A (UUID: GPU-1)\n\tLink 0: <sleeping>\n", "unknown state"),
    (parse_nvlink_status, "GPU 0: A (UUID: GPU-1)\nGPU 0: A (UUID: GPU-1)\n", "listed twice"),
    (parse_nvlink_status, "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-3\nGPU1\tNV4\t X \t0-3\n", "topo -m"),
    (parse_nvlink_status, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
     "nvidia-smi failed"),
    (parse_lspci, "-+-[0000:00]-+-00.0\n", "lspci -t"),
    (parse_lspci, "00:01.0 PCI bridge: X\n\tLnkSta:\tSpeed 9GT/s, Width x4\n", "unknown PCIe link speed"),
    (parse_lspci, "00:01.0 PCI bridge: X\n00:01.0 PCI bridge: X\n", "listed twice"),
    (parse_lspci, "00:01.0 PCI bridge: X\nnot a device line\nmore\n", "unexpected line"),
    (parse_ibstatus, b"Infiniband device 'mlx5_0' port 1 status:\n\tstate: 4: \xff\n", "UTF-8"),
    (parse_lspci, "00:01.0 PCI bridge: X\n" + "\tLnkSta:\t" + "x" * 200000 + "\n", None),
])
def test_hostile_inputs_are_parse_errors_with_a_line(parser, text, needle):
    if needle is None:  # a huge line that means nothing is read, not an error and not slow
        parser(text, source="f.txt")
        return
    with pytest.raises(ParseError) as exc:
        parser(text, source="f.txt")
    assert needle in str(exc.value) and exc.value.line and exc.value.fix
