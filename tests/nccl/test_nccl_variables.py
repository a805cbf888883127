"""The variable table (ncclctl.nccl.variables) at the releases after the modelled one: 2.31.2 and 2.32.3, as
tools/nccl_extract.py read them from the released libraries, through the API and the lint CLI."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import HOSTS, run_cli
from ncclctl.nccl.variables import KNOWN, default_at, kind_at, known_variable, suggest_variable
from ncclctl.nccl.version import Version


def _live(name: str, version: Version) -> bool:
    info = KNOWN[name]
    return info.since <= version and (info.until is None or info.until >= version)


@pytest.mark.parametrize("name,since", [
    ("NCCL_RUN_DIAGNOSTICS", (2, 31, 2)), ("NCCL_RUN_RAS_DIAGNOSTICS", (2, 31, 2)), ("NCCL_IB_PKEY_VALUE", (2, 31, 2)),
    ("NCCL_IB_RAIL_POLICY", (2, 32, 3)), ("NCCL_DEBUG_LEVELS", (2, 32, 3)), ("NCCL_PROGRESS_COUNTERS", (2, 32, 3)),
])
def test_new_variables_start_at_their_release(name, since):
    info = known_variable(name)
    assert info is not None and info is not True and info.since == since and info.until is None
    assert _live(name, Version(2, 32, 3)) and not _live(name, Version(2, 30, 7))


def test_removed_and_short_lived_variables():
    assert KNOWN["NCCL_NET_GDR_MLOPART"].until == (2, 31, 2) and KNOWN["NCCL_MLOPART_RDMA_ENABLE"].until == (2, 31, 2)
    assert _live("NCCL_NET_GDR_MLOPART", Version(2, 31, 2)) and not _live("NCCL_NET_GDR_MLOPART", Version(2, 32, 3))
    assert (KNOWN["NCCL_TOPO_SCATTER_START_NET"].since, KNOWN["NCCL_TOPO_SCATTER_START_NET"].until) == (
        (2, 31, 2), (2, 31, 2))
    # An API constant that 2.30.7 names in a message, never a variable.
    assert known_variable("NCCL_GIN_CONNECTION_RAIL") is None


def test_parse_kind_per_release():
    assert kind_at("NCCL_RAS_TIMEOUT_FACTOR", Version(2, 30, 7)) == "int"
    assert kind_at("NCCL_RAS_TIMEOUT_FACTOR", Version(2, 31, 2)) == kind_at("NCCL_RAS_TIMEOUT_FACTOR") == "str"
    assert kind_at("NCCL_IB_RAIL_POLICY") == "str" and kind_at("NCCL_DEBUG_LEVELS") == "typed"
    assert kind_at("NCCL_RUN_RAS_DIAGNOSTICS") == "int" and kind_at("NCCL_NOT_A_VARIABLE") is None
    # The typed registry took over the debug variables in 2.30.7: NCCL_PARAM and getenv before.
    assert kind_at("NCCL_SET_THREAD_NAME", Version(2, 29, 7)) == "int"
    assert kind_at("NCCL_SET_THREAD_NAME", Version(2, 30, 7)) == "typed"
    assert kind_at("NCCL_DEBUG_SUBSYS", Version(2, 30, 4)) == "str" and kind_at("NCCL_DEBUG_SUBSYS") == "typed"
    assert kind_at("NCCL_NO_CACHE", Version(2, 29, 7)) == "str"
    assert kind_at("NCCL_NO_CACHE", Version(2, 30, 3)) == "typed"


def test_plugin_flag_marks_what_only_nccls_own_plugins_read():
    plugin = {n for n, i in KNOWN.items() if "plugin" in i.flags}
    assert {"NCCL_TUNER_CONFIG_FILE", "NCCL_INSPECTOR_ENABLE", "NCCL_PROFILE_EVENT_MASK"} <= plugin
    assert all(n.startswith(("NCCL_INSPECTOR_", "NCCL_PROFILE", "NCCL_TUNER_")) for n in plugin)
    assert "NCCL_IB_HCA" not in plugin


def test_typos_of_new_variables_are_suggested():
    assert suggest_variable("NCCL_IB_RAIL_POLCY") == "NCCL_IB_RAIL_POLICY"
    assert suggest_variable("NCCL_RUN_RAS_DIAGNOSTIC") == "NCCL_RUN_RAS_DIAGNOSTICS"


def _lint_env(tmp_path, env: dict[str, str], version: str | None):
    root = tmp_path / f"host-{version or 'default'}"
    shutil.copytree(HOSTS / "dgx-h100", root, symlinks=True)
    data = json.loads((root / "env.json").read_text())
    data.update(env)
    (root / "env.json").write_text(json.dumps(data))
    args = ["lint", "--root", str(root), "--rule", "NCCL006", "--format", "json", "--fail-on", "warning"]
    if version:
        cfg = tmp_path / f"ncclctl-{version}.yaml"
        cfg.write_text(f"rules:\n  NCCL006:\n    options: {{nccl_version: '{version}'}}\n")
        args += ["--config", str(cfg)]
    res = run_cli(*args)
    assert res.returncode in (0, 1), res.stdout + res.stderr
    doc = json.loads(res.stdout)
    return res.returncode, [f for f in _findings(doc) if f["rule"] == "NCCL006"]


def _findings(doc):
    if isinstance(doc, dict):
        if {"rule", "subject", "message"} <= set(doc):
            yield doc
        for v in doc.values():
            yield from _findings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _findings(v)


def test_cli_lint_knows_2_32_variables_for_2_32_jobs(tmp_path):
    env = {"NCCL_IB_RAIL_POLICY": "CX9:FLIP", "NCCL_RUN_RAS_DIAGNOSTICS": "1", "NCCL_NET_GDR_MLOPART": "1"}
    rc, found = _lint_env(tmp_path, env, "2.32.3")
    assert rc == 1 and [(f["subject"], f["severity"]) for f in found] == [("NCCL_NET_GDR_MLOPART", "warning")]
    assert "last read by NCCL 2.31.2" in found[0]["message"]
    rc, found = _lint_env(tmp_path, env, None)  # the default, 2.30.7: the 2.32 names are ignored (info)
    got = {f["subject"]: f for f in found}
    assert rc == 0  # info only: nothing at warning
    assert sorted(got) == ["NCCL_IB_RAIL_POLICY", "NCCL_RUN_RAS_DIAGNOSTICS"]
    assert got["NCCL_RUN_RAS_DIAGNOSTICS"]["severity"] == "info"
    assert "read from NCCL 2.31.2 on; NCCL 2.30.7 ignores it" in got["NCCL_RUN_RAS_DIAGNOSTICS"]["message"]


@pytest.mark.parametrize("name,default", [
    ("NCCL_IB_TIMEOUT", "20"), ("NCCL_IB_RETRY_CNT", "7"), ("NCCL_CROSS_NIC", "2"), ("NCCL_IB_GID_INDEX", "-1"),
    ("NCCL_RUN_RAS_DIAGNOSTICS", "0"), ("NCCL_PROGRESS_COUNTER_MONITOR_STALE_WARN_SEC", "600"),
    ("NCCL_DEBUG_SUBSYS", "INIT,ENV,BOOTSTRAP"), ("NCCL_DEBUG_TIMESTAMP_LEVELS", "WARN,ATTN"),
])
def test_defaults_of_2_32_3(name, default):
    assert default_at(name, Version(2, 32, 3)) == default
    assert default_at(name, Version(2, 30, 7)) is None  # older releases: not in the table


def test_every_default_belongs_to_a_variable_of_2_32_3():
    v = Version(2, 32, 3)
    names = [n for n in KNOWN if default_at(n, v) is not None]
    assert len(names) >= 230 and all(_live(n, v) for n in names)
    assert all(kind_at(n, v) in ("int", "typed") for n in names)
    assert all(re.fullmatch(r"-?\d+", default_at(n, v) or "") for n in names if kind_at(n, v) == "int")
