"""NCCL settings family: NCCL's own reading of env and nccl.conf (nccl.settings), the list syntaxes (nccl.lists), the probe's
NCCL_TOPO_FILE / NCCL_GRAPH_FILE facts, the family on every host fixture (a golden table), and the CLI."""

from __future__ import annotations

import ctypes
import json
import os
import random
import shutil
from pathlib import Path

import pytest

from ncclctl.lint.context import Ctx
from ncclctl.lint.engine import Config, run
from ncclctl.registry import all_rules
from ncclctl.model import ConfFile, Node
from ncclctl.nccl.lists import hca_selects, ifname_selects, parse_ib_hca
from ncclctl.nccl.params import c_atoi, load_param
from ncclctl.nccl.params import strtol as c_strtoll
from ncclctl.nccl.settings import effective_setting, read_conf, resolve_sources
from ncclctl.nccl.values import check_algo_proto, read_level
from ncclctl.nccl.variables import KNOWN, suggest_variable
from ncclctl.nccl.version import RELEASES
from ncclctl.probe import probe
from ncclctl.probe.hostroot import Recorder

from conftest import HOSTS, host_names, run_cli

NCCL_IDS = tuple(r.id for r in all_rules() if r.family == "nccl")


def fmt_version(v) -> str:
    """A release as written in the release list (a Version prints as MAJOR.MINOR.PATCH)."""
    return str(v)

# --------------------------------------------------------------------------------------------------
# The family on every host fixture: exactly these (rule, subject) pairs, nothing else.

GOLDEN: dict[str, set[tuple[str, str]]] = {
    "cloud-vm-flat": set(),
    "cpu-only": set(),
    "gb300-dd": set(),
    "gb300-dd-acs-off": set(),
    "gb300-dd-split-iommu": set(),
    "dgx-a100": set(),
    "dgx-h100": set(),
    "dgx-h100-nvlink-missing": set(),
    # /etc/nccl.conf names mlx5_3, whose port is down in this variant.
    "dgx-h100-port-down": {("NCCL011", "/etc/nccl.conf")},
    "dgx-h100-x8-link": set(),
    "gb200-nvl72": set(),
    "gb200-nvl72-clique-split": set(),
    "gb200-nvl72-degraded": set(),
    "gb200-nvl72-fabric-incomplete": set(),
    "gb200-nvl72-imex-down": set(),
    "gb200-nvl72-no-imex-channel": set(),
    "gb300-nvl72": set(),
    "grace-hopper": set(),
    # The container's NCCL_VERSION label: NCCL ignores it (info).
    "h200-vm-socket": {("NCCL006", "NCCL_VERSION")},
    "hgx-h100-roce": set(),
    "hgx-h100-roce-pfc-off": set(),
    "pcie-cx8-inline": set(),
    "pcie-server": set(),
    "pcie-server-roce-lag": set(),
}


def _lint(root: str | Path, options: dict | None = None) -> list:
    node = probe(str(root))
    cfg = Config()
    if options:
        from ncclctl.lint.engine import RuleConfig

        cfg = Config(rules=tuple((rid, RuleConfig(options=tuple(o.items()))) for rid, o in options.items()))
    return run(Ctx(node=node, source=str(root)), cfg, only=NCCL_IDS)


def test_every_host_fixture_is_in_the_golden_table():
    assert sorted(GOLDEN) == host_names()


@pytest.mark.parametrize("host", sorted(GOLDEN))
def test_family_on_host_fixture(host):
    found = _lint(HOSTS / host)
    assert {(f.rule, f.subject) for f in found} == GOLDEN[host], "\n".join(
        f"{f.rule} {f.location()}: {f.message}" for f in found)


def test_family_has_docs_and_version_option():
    rules = [r for r in all_rules() if r.family == "nccl"]
    ids = [r.id for r in rules]
    # NCCL001.. contiguous; NCCL040-049 is the block reserved for the rail/plane rules (issue 17)
    base = [i for i in ids if i < "NCCL040"]
    assert base == [f"NCCL{i:03d}" for i in range(1, len(base) + 1)]
    assert ids[len(base):] == [f"NCCL{i:03d}" for i in range(40, 40 + len(ids) - len(base))]
    for r in rules:
        assert "NCCL" in r.doc.why or "nccl" in r.doc.why, r.id
        opt = r.option("nccl_version")
        if opt is not None:
            assert opt.default == "2.30.7" and opt.choices == RELEASES


# --------------------------------------------------------------------------------------------------
# C integer parsing: the model against the C library itself


def _libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.strtoll.restype = ctypes.c_longlong
        libc.strtoll.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]
        libc.atoi.restype = ctypes.c_int
        libc.atoi.argtypes = [ctypes.c_char_p]
        return libc
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return None


def test_strtoll_model_matches_libc():
    libc = _libc()
    if libc is None:
        pytest.skip("no C library via ctypes")
    rng = random.Random(7)
    alphabet = "0123456789xXabcdefgABCDEF+- \t#\"'8"
    samples = ["", "08", "010", "0x68", "0x", "3 # x", "auto", "-1", " 12", "99999999999999999999",
               "-9223372036854775809", "0x8000000000000000", "1e3"]
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(3000)]
    for s in samples:
        buf = ctypes.create_string_buffer(s.encode())
        end = ctypes.c_char_p()
        ctypes.set_errno(0)
        value = libc.strtoll(buf, ctypes.byref(end), 0)
        overflow = ctypes.get_errno() != 0
        consumed = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buf)
        r = c_strtoll(s)
        assert (r.value, r.end, r.overflow) == (value, consumed, overflow), s
        if abs(value) < 1 << 31:
            assert c_atoi(s) == libc.atoi(s.encode()), s


def test_load_param_semantics():
    assert load_param(None) is None and load_param("") is None  # the default
    assert load_param("08") == 0 and load_param("010") == 8 and load_param("0x68") == 104
    assert load_param("auto") == 0 and load_param("3 # comment") == 3
    assert load_param("99999999999999999999") is None  # ERANGE: the default


# --------------------------------------------------------------------------------------------------
# Conf file reading, by version


def test_read_conf_line_semantics():
    text = "# comment\nexport NCCL_X=1\nNCCL_Y = 2\nNCCL_Z=\"q\"\nno equals\n=empty\nNCCL_W=a=b\n"
    lines = read_conf(text, "/etc/nccl.conf")
    got = [(cl.name, cl.value, cl.skipped) for cl in lines]
    assert got == [(None, None, "comment"), ("export NCCL_X", "1", None), ("NCCL_Y ", " 2", None),
                   ("NCCL_Z", "\"q\"", None), (None, None, "no-equals"), (None, None, "empty-name"),
                   ("NCCL_W", "a=b", None)]
    assert [cl.line for cl in lines] == [1, 2, 3, 4, 5, 6, 7]


def test_comments_from_2_26_and_cr_from_2_30():
    text = "#NCCL_IB_HCA=mlx5_0\r\nNCCL_SOCKET_IFNAME=eth0\r\n"
    old = read_conf(text, "/etc/nccl.conf", (2, 25, 1))
    assert [(cl.name, cl.value) for cl in old] == [("#NCCL_IB_HCA", "mlx5_0\r"), ("NCCL_SOCKET_IFNAME", "eth0\r")]
    mid = read_conf(text, "/etc/nccl.conf", (2, 29, 7))
    assert mid[0].skipped == "comment" and mid[1].value == "eth0\r"
    new = read_conf(text, "/etc/nccl.conf", (2, 30, 7))
    assert new[1].value == "eth0" and new[1].crlf


def test_long_lines_are_cut_like_nccl():
    value = "x" * 5000
    (cl,) = read_conf(f"NCCL_A={value}\n", "/f", (2, 29, 7))
    assert len(cl.value) == 1023
    pieces = read_conf(f"NCCL_A={value}=tail\n", "/f", (2, 30, 7))
    assert len(pieces) == 2 and pieces[0].name == "NCCL_A" and len(pieces[0].value) == 1023
    assert pieces[1].name == "x" * (5007 - 4095) and pieces[1].value == "tail"  # the remainder is a new line


def test_precedence_environment_user_file_etc_first_line_wins():
    user = ConfFile("/home/u/.nccl.conf", "NCCL_A=user\nNCCL_B=user\nNCCL_B=user-again\n")
    etc = ConfFile("/etc/nccl.conf", "NCCL_A=etc\nNCCL_B=etc\nNCCL_C=etc\n")
    res = resolve_sources([("NCCL_A", "env"), ("HOME", "/home/u")], [user, etc])
    assert res.value("NCCL_A") == "env" and res.value("NCCL_B") == "user" and res.value("NCCL_C") == "etc"
    assert res.value("HOME") is None  # only NCCL_* from the environment
    assert [s.where for s in res.candidates("NCCL_B")] == ["/home/u/.nccl.conf:2", "/etc/nccl.conf:2"]
    dups = res.duplicates()
    assert [(a.line, b.line) for a, b in dups] == [(3, 2)]
    over = {(a.where, b.where) for a, b in res.overridden()}
    assert ("/etc/nccl.conf:1", "the environment") in over and ("/etc/nccl.conf:2", "/home/u/.nccl.conf:2") in over
    same = resolve_sources([], [etc, etc])  # NCCL_CONF_FILE=/etc/nccl.conf: read once
    assert len(same.settings) == 3


def test_effective_setting_keeps_working():
    node = probe(str(HOSTS / "dgx-h100"))
    assert effective_setting(node, "NCCL_IB_HCA") == "=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11"
    assert effective_setting(node, "NCCL_SOCKET_IFNAME") is None


# --------------------------------------------------------------------------------------------------
# Values


def test_levels():
    assert read_level("PHB").level == "PHB"
    assert read_level("phb").level is None and read_level("NODE").level is None and read_level("PHB ").level is None
    assert read_level("P2C", (2, 26, 6)).level is None and read_level("P2C", (2, 27, 3)).level == "P2C"
    assert read_level("08").level == "LOC" and read_level("2").level == "PXB" and read_level("9").level == "SYS"
    assert read_level("-1").level is None and read_level("").level is None


def test_algo_proto_lists():
    assert check_algo_proto("ring,tree;allreduce:^nvls", "algo") == []
    assert check_algo_proto("^LL128;allreduce:Simple", "proto") == []
    assert [p.kind for p in check_algo_proto("ring;tree", "algo")] == ["no-prefix"]
    assert [(p.kind, p.token) for p in check_algo_proto("sum:ring", "algo")] == [("prefix", "sum")]
    assert [p.token for p in check_algo_proto('"Simple"', "proto")] == ['"Simple"']
    assert check_algo_proto("Ring,PAT", "algo", (2, 23, 4)) == []
    old = check_algo_proto("Ring,PAT", "algo", (2, 18, 6))
    assert [(p.token, p.fatal) for p in old] == [("PAT", False)]


def test_variable_table_and_suggestions():
    assert KNOWN["NCCL_IB_HCA"].kind == "str" and KNOWN["NCCL_IB_GID_INDEX"].kind == "int"
    assert KNOWN["NCCL_IB_GDR_LEVEL"].until is not None and KNOWN["NCCL_CONF_FILE"].since == (2, 23, 4)
    for info in KNOWN.values():
        assert fmt_version(info.since) in RELEASES
        assert info.until is None or (fmt_version(info.until) in RELEASES and info.until >= info.since)
    assert suggest_variable("NCCL_IB_HCAS") == "NCCL_IB_HCA"
    assert suggest_variable("nccl_socket_ifname") == "NCCL_SOCKET_IFNAME"
    assert suggest_variable("NCCL_TOTALLY_MADE_UP_THING") is None


def test_if_lists_follow_parse_string_list():
    devs = [("mlx5_0", 1), ("mlx5_1", 1), ("mlx5_10", 1)]
    assert hca_selects("mlx5_1", devs) == {("mlx5_1", 1), ("mlx5_10", 1)}
    assert hca_selects("=mlx5_1", devs) == {("mlx5_1", 1)}
    assert hca_selects("^", devs) == set()  # empty list matches all, XOR '^': nothing
    assert hca_selects("", devs) == set(devs)
    assert hca_selects(":1", devs) == set(devs)  # an entry with an empty name is dropped
    assert hca_selects("mlx5_0:x", devs) == set()  # atoi('x') = 0: no port 0
    assert hca_selects("mlx5_0:-1", devs) == {("mlx5_0", 1)}  # -1 = every port
    assert hca_selects("^=mlx5_0,^=mlx5_1", devs) == {("mlx5_1", 1), ("mlx5_10", 1)}  # '^=mlx5_1' is a name
    spec = parse_ib_hca("=" + ",".join(f"mlx5_{i}" for i in range(40)))
    assert len(spec.entries) == 32 and spec.dropped[0] == "mlx5_32"
    assert ifname_selects("eno1", ["eno1", "eno1.100", "eth0"]) == ["eno1", "eno1.100"]
    assert ifname_selects("=eno1", ["eno1", "eno1.100"]) == ["eno1"]
    assert ifname_selects("^docker,lo", ["docker0", "lo", "eth0"]) == ["eth0"]


# --------------------------------------------------------------------------------------------------
# The probe: NCCL_TOPO_FILE / NCCL_GRAPH_FILE facts


def _copy(tmp_path: Path, host: str) -> Path:
    root = tmp_path / host
    shutil.copytree(HOSTS / host, root, symlinks=True)
    return root


def test_probe_reads_topo_file_named_in_etc_conf_through_a_symlink(tmp_path):
    root = _copy(tmp_path, "grace-hopper")
    (root / "etc").mkdir()
    (root / "etc/nccl.conf").write_text("NCCL_TOPO_FILE=/opt/vendor/topo.xml\n")
    (root / "opt/vendor/v1").mkdir(parents=True)
    (root / "opt/vendor/v1/topo.xml").write_text('<system version="1"/>\n')
    os.symlink("v1/topo.xml", root / "opt/vendor/topo.xml")
    rec = Recorder()
    node = probe(str(root), recorder=rec)
    assert node.facts.topo_file == ConfFile("/opt/vendor/topo.xml", '<system version="1"/>\n')
    assert node.facts.graph_file is None
    # a snapshot writes back what was read: the file and the link to it
    assert rec.files["/opt/vendor/v1/topo.xml"] == b'<system version="1"/>\n'
    assert rec.links["/opt/vendor/topo.xml"] == "v1/topo.xml"
    again = Node.from_dict(json.loads(json.dumps(node.to_dict())))
    assert again.facts.topo_file == node.facts.topo_file


def test_probe_environment_beats_conf_and_bad_paths_are_absent(tmp_path):
    root = _copy(tmp_path, "grace-hopper")
    env = json.loads((root / "env.json").read_text())
    env["NCCL_GRAPH_FILE"] = "/opt/g.xml"
    env["NCCL_TOPO_FILE"] = "/opt/dangling.xml"
    (root / "env.json").write_text(json.dumps(env))
    (root / "etc").mkdir()
    (root / "etc/nccl.conf").write_text("NCCL_GRAPH_FILE=/opt/other.xml\n")
    (root / "opt").mkdir()
    (root / "opt/g.xml").write_text("<graphs version=\"1\"/>\n")
    (root / "opt/other.xml").write_text("<graphs/>\n")
    os.symlink("nowhere.xml", root / "opt/dangling.xml")
    node = probe(str(root))
    assert node.facts.graph_file is not None and node.facts.graph_file.path == "/opt/g.xml"
    assert node.facts.topo_file is None  # dangling: absent, not an error (NCCL's fopen fails the same way)
    os.unlink(root / "opt/dangling.xml")
    os.mkfifo(root / "opt/dangling.xml")  # a FIFO would block a reader: not read
    assert probe(str(root)).facts.topo_file is None
    env["NCCL_TOPO_FILE"] = "relative/topo.xml"
    (root / "env.json").write_text(json.dumps(env))
    assert probe(str(root)).facts.topo_file is None


# --------------------------------------------------------------------------------------------------
# Version-dependent findings and the CLI


def test_crlf_is_a_warning_only_before_2_30(tmp_path):
    root = _copy(tmp_path, "dgx-h100")
    (root / "etc/nccl.conf").write_bytes(b"NCCL_IB_HCA==mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11\r\n")
    new = [f for f in _lint(root) if f.rule == "NCCL005"]
    old = [f for f in _lint(root, {"NCCL005": {"nccl_version": "2.29.7"}}) if f.rule == "NCCL005"]
    assert [f.severity.value for f in new] == ["info"] and [f.severity.value for f in old] == ["warning"]


def test_cli_lint_json_names_file_and_line():
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100-port-down"), "--rule", "NCCL011", "--format", "json")
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    findings = [f for f in _walk_findings(doc) if f.get("rule") == "NCCL011"]
    assert len(findings) == 1
    f = findings[0]
    assert (f["subject"], f["line"], f["severity"]) == ("/etc/nccl.conf", 2, "error")
    assert "mlx5_3" in f["message"] and f["fix"]
    again = run_cli("lint", "--root", str(HOSTS / "dgx-h100-port-down"), "--rule", "NCCL011", "--format", "json")
    assert again.stdout == res.stdout  # deterministic


def test_cli_lint_clean_host_exits_0():
    res = run_cli("lint", "--root", str(HOSTS / "hgx-h100-roce"), "--rule", ",".join(NCCL_IDS))
    assert res.returncode == 0, res.stdout + res.stderr


def test_cli_config_rejects_an_unknown_nccl_version(tmp_path):
    cfg = tmp_path / "ncclctl.yaml"
    cfg.write_text("rules:\n  NCCL016:\n    options: {nccl_version: '2.99.1'}\n")
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--config", str(cfg), "--rule", "NCCL016")
    assert res.returncode == 3, res.stdout + res.stderr
    assert str(cfg) in res.stderr and "Traceback" not in res.stderr


def _walk_findings(doc):
    if isinstance(doc, dict):
        if "rule" in doc and "subject" in doc and "message" in doc:
            yield doc
        for v in doc.values():
            yield from _walk_findings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _walk_findings(v)
