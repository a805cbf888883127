"""Expected-state profiles: derived from a node, written deterministically and idempotently, loaded with errors that
name file and line, accepted by the generated JSON Schema, and compared by the EXP rules through the CLI."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from ncclctl.errors import InputError
from ncclctl.lint.expect import check_profile, derive, dump, json_schema, parse_profile
from ncclctl.probe import probe

from conftest import HOSTS, run_cli


@pytest.fixture(scope="module")
def dgx():
    return probe(str(HOSTS / "dgx-h100"))


def test_derive_covers_every_section(dgx):
    prof = derive(dgx)
    assert prof["driver"] == {"nvidia": "550.54.15", "cuda": 12040}
    assert prof["gpus"] == {"count": 8, "models": {"NVIDIA H100 80GB HBM3": 8}, "nvlinks": 18}
    assert prof["nics"]["count"] == 12 and prof["nics"]["firmware"]["mlx5_7"] == "28.39.2048"
    assert [r["hca"] for r in prof["rails"]] == ["mlx5_0:1", "mlx5_3:1", "mlx5_4:1", "mlx5_5:1", "mlx5_6:1",
                                                 "mlx5_9:1", "mlx5_10:1", "mlx5_11:1"]
    assert prof["rails"][0] == {"rail": 0, "hca": "mlx5_0:1", "link_layer": "InfiniBand", "rate_gbps": 400,
                                "width": "4X", "mtu": 4096, "netdev_mtu": 4092}
    assert prof["nccl"] == {"NCCL_IB_HCA": "=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11"}


@pytest.mark.parametrize("host", ["dgx-h100", "hgx-h100-roce", "cloud-vm-flat", "cpu-only", "pcie-server",
                                  "grace-hopper"])
def test_dumped_profile_round_trips_and_matches_the_schema(host):
    from jsonschema import Draft202012Validator

    node = probe(str(HOSTS / host))
    data = dump(derive(node))
    assert data == dump(derive(probe(str(HOSTS / host))))  # deterministic
    loaded = parse_profile(data.decode(), path="p.yaml")
    assert loaded == check_profile(derive(node))
    Draft202012Validator(json_schema()).validate(yaml.safe_load(data))


def test_a_node_matches_its_own_profile():
    from ncclctl.lint.context import Ctx
    from ncclctl.lint.engine import Config, run
    from ncclctl.registry import all_rules

    exp_ids = tuple(r.id for r in all_rules() if r.family == "expect")
    for host in ("dgx-h100", "hgx-h100-roce", "cloud-vm-flat", "cpu-only", "pcie-server", "grace-hopper", "dgx-a100"):
        node = probe(str(HOSTS / host))
        prof = check_profile(derive(node))
        assert run(Ctx(node=node, expect=prof), Config(), only=exp_ids) == [], host


BAD = [
    ("gpu: {count: 8}\n", 1, "unknown key 'gpu'"),
    ("version: 2\n", 1, "unsupported profile version 2"),
    ("gpus: {count: eight}\n", 1, "gpus.count must be an integer >= 0, got 'eight'"),
    ("gpus:\n  count: 8\n  nvlink: 18\n", 3, "gpus: unknown key 'nvlink'"),
    ("gpus:\n  models: {H100: 0}\n", 2, "expected a GPU count >= 1"),
    ("driver:\n  nvidia: 550.54\n", 2, "driver.nvidia must be a string, got 550.54"),
    ("nics:\n  firmware:\n    mlx5_0: 28.39\n", 3, "firmware version must be a string"),
    ("rails:\n  - {rail: 0}\n", 2, "rails[0]: 'hca' (device:port, e.g. mlx5_0:1) is required"),
    ("rails:\n  - {hca: mlx5_0}\n", 2, "rails[0].hca: 'mlx5_0' is not device:port"),
    ("rails:\n  - hca: 'mlx5_0:1'\n    mtu: 9000\n", 3, "rails[0].mtu: 9000 is not an RDMA MTU"),
    ("rails:\n  - hca: 'mlx5_0:1'\n    width: four\n", 3, "is not a link width"),
    ("rails:\n  - hca: 'mlx5_0:1'\n    link_layer: RoCE\n", 3, "is not InfiniBand or Ethernet"),
    ("rails:\n  - hca: 'mlx5_0:1'\n    speed: 400\n", 3, "rails[0]: unknown key 'speed'"),
    ("rails:\n  - {hca: 'mlx5_0:1'}\n  - {hca: 'mlx5_0:1'}\n", 3, "mlx5_0:1 is listed twice"),
    ("nccl:\n  IB_HCA: mlx5\n", 2, "'IB_HCA' is not an NCCL_* variable"),
    ("nccl:\n  NCCL_IB_TC: [106]\n", 2, "the value must be a string"),
    ("nccl:\n  NCCL_IB_TC: 1\n  NCCL_IB_TC: 2\n", 3, "duplicate key 'NCCL_IB_TC'"),
    ("[1, 2]\n", 1, "an expected-state profile is a mapping"),
]


@pytest.mark.parametrize("text,line,message", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_profile_names_file_and_line(text, line, message):
    with pytest.raises(InputError) as info:
        parse_profile(text, path="exp.yaml")
    assert info.value.path == "exp.yaml" and info.value.line == line, str(info.value)
    assert message in info.value.message


@pytest.mark.parametrize("text", [b[0] for b in BAD if "twice" not in b[2] and "duplicate" not in b[2]])
def test_schema_rejects_what_the_loader_rejects(text):
    from jsonschema import Draft202012Validator

    assert not Draft202012Validator(json_schema()).is_valid(yaml.safe_load(text)), text


def test_integer_nccl_values_are_read_as_text():
    assert parse_profile("nccl: {NCCL_IB_TC: 106}\n")["nccl"] == {"NCCL_IB_TC": "106"}


def test_write_expect_is_atomic_idempotent_and_deterministic(tmp_path):
    out = tmp_path / "expected.yaml"
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--write-expect", str(out), "--format", "json")
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)
    assert rec["changed"] is True and rec["path"] == str(out) and rec["host"] == "dgx-h100-01"
    first = out.read_bytes()
    assert first.startswith(b"# ncclctl expected-state profile")
    mtime = os.stat(out).st_mtime_ns
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--write-expect", str(out), "--format", "json")
    assert json.loads(res.stdout)["changed"] is False
    assert out.read_bytes() == first and os.stat(out).st_mtime_ns == mtime
    assert not [p for p in tmp_path.iterdir() if p.name != "expected.yaml"]  # no temp files left behind
    # The known-good node passes against its own profile; a degraded one does not.
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--expect", str(out), "--rule", "EXP001,EXP003,EXP004,"
                  "EXP005,EXP006,EXP007,EXP008", "--format", "json")
    assert res.returncode == 0 and json.loads(res.stdout)["findings"] == [], res.stdout
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100-port-down"), "--expect", str(out), "--format", "json")
    doc = json.loads(res.stdout)
    assert doc["expect"] == str(out)
    exp = [(f["rule"], f["subject"]) for f in doc["findings"] if f["rule"].startswith("EXP")]
    assert exp and all(s == "mlx5_3" for _, s in exp), exp


def test_expect_rules_do_not_run_without_a_profile():
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100-nvlink-missing"), "--format", "json")
    doc = json.loads(res.stdout)
    assert not [r for r in doc["rules_run"] if r.startswith("EXP")]


def test_cli_profile_errors(tmp_path):
    bad = tmp_path / "exp.yaml"
    bad.write_text("gpus:\n  count: 8\n  nvlinks: -1\n")
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--expect", str(bad))
    assert res.returncode == 3 and f"{bad}:3: gpus.nvlinks must be an integer >= 0" in res.stderr
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--expect", str(tmp_path / "none.yaml"))
    assert res.returncode == 3 and "no such expected-state profile" in res.stderr and "--write-expect" in res.stderr
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--expect", str(bad), "--write-expect", str(bad))
    assert res.returncode == 2 and "not both" in res.stderr
