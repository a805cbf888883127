"""Names that are not UTF-8 (``ip link set X name $'bad\\xff'`` is allowed by the kernel) through every output.

The probe leaves such an entry out and lists it under ``unavailable`` (``\\xNN`` escapes); JSON writers escape any
surrogate-escaped string left elsewhere (a ``--root`` path, an environment value) the same way. Each hostile
input runs through ``facts``, ``probe`` (text, json), and ``lint`` (text, json, junit, nagios) with stdout
encoded strictly (as under a UTF-8 locale): never exit 70, always valid UTF-8, the JSON ones parseable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HOSTS, REPO

BAD = b"\xff"
COMMANDS = [("facts",), ("probe",), ("probe", "--format", "json"), ("lint",), ("lint", "--format", "json"),
            ("lint", "--format", "junit"), ("lint", "--nagios")]


def _run(*args: str | bytes, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != "NCCLCTL_DEBUG"}
    full_env["PYTHONIOENCODING"] = "utf-8:strict"  # a UTF-8 locale: surrogates are not silently written as bytes
    full_env.update(env or {})
    return subprocess.run([sys.executable.encode(), b"-m", b"ncclctl", *(os.fsencode(a) for a in args)],
                          capture_output=True, timeout=120, env=full_env, cwd=REPO)


def _bad_netdev(tmp_path: Path) -> bytes:
    """A virtual netdev named b'bad\\xffname' (its sysfs folder and the class link)."""
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "pcie-server", root, symlinks=True)
    name = b"bad" + BAD + b"name"
    dev = os.fsencode(root / "sys/devices/virtual/net") + b"/" + name
    os.makedirs(dev)
    for attr, value in ((b"operstate", b"up\n"), (b"mtu", b"1500\n"), (b"type", b"1\n")):
        with open(dev + b"/" + attr, "wb") as fh:
            fh.write(value)
    os.symlink(b"../../devices/virtual/net/" + name, os.fsencode(root / "sys/class/net") + b"/" + name)
    return os.fsencode(root)


def _bad_gid_netdev(tmp_path: Path) -> bytes:
    """A RoCE GID whose netdev (gid_attrs/ndevs/N, a file naming the interface) is not UTF-8."""
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "hgx-h100-roce", root, symlinks=True)
    (root / "sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3").write_bytes(b"ens" + BAD + b"\n")
    return os.fsencode(root)


def _bad_root_path(tmp_path: Path) -> bytes:
    """The --root folder's own name is not UTF-8 (it appears in every document's source)."""
    root = os.fsencode(tmp_path) + b"/host" + BAD
    shutil.copytree(HOSTS / "cpu-only", os.fsdecode(root), symlinks=True)
    return root


CASES = {"netdev-name": _bad_netdev, "gid-netdev-file": _bad_gid_netdev, "root-path": _bad_root_path}


def _check(proc: subprocess.CompletedProcess, args: tuple[str, ...]) -> str:
    assert proc.returncode in ((0, 1, 2) if "--nagios" in args else (0, 1)), (args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
    text = proc.stdout.decode("utf-8")  # strict: raw undecodable bytes would fail here
    assert "\udcff" not in text
    if "json" in args or "sarif" in args or args == ("facts",):
        json.loads(text)
    return text


@pytest.mark.parametrize("case", sorted(CASES))
def test_undecodable_names_through_every_output(case, tmp_path):
    root = CASES[case](tmp_path)
    outputs = {args: _check(_run(*args, b"--root", root), args) for args in COMMANDS}
    facts = json.loads(outputs[("facts",)])
    assert facts["ok"] is True, facts["error"]
    model = json.loads(outputs[("probe", "--format", "json")])
    if case == "root-path":
        assert facts["source"]["path"].endswith("/host\\xff")
        assert json.loads(outputs[("lint", "--format", "json")])["source"].endswith("/host\\xff")
        assert 'value="' + facts["source"]["path"] + '"' in outputs[("lint", "--format", "junit")]
        return
    shown = {"netdev-name": "/sys/class/net/bad\\xffname",
             "gid-netdev-file": "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3 (ens\\xff)"}[case]
    assert {"source": "sysfs", "reason": "name is not UTF-8, left out", "detail": shown} in model["unavailable"]
    assert {"source": "sysfs", "reason": "name is not UTF-8, left out"} in facts["unavailable"]
    assert all("bad" not in d["name"] for d in model["netdevs"]) and all("bad" not in d["name"] for d in facts["netdevs"])
    assert shown.replace("\\\\", "\\") in outputs[("probe",)]
    # The model is valid Unicode throughout, so it loads back.
    path = tmp_path / "model.json"
    path.write_text(outputs[("probe", "--format", "json")])
    again = _run("facts", "--model", str(path))
    assert again.returncode == 0 and json.loads(again.stdout)["ok"] is True


def test_undecodable_nccl_environment_value():
    """A live NCCL_* variable with a non-UTF-8 value (the environment holds bytes) in every JSON output."""
    env = {"NCCL_SOCKET_IFNAME": os.fsdecode(b"eth" + BAD), "NCCL_IB_HCA": os.fsdecode(b"=mlx5_" + BAD)}
    for args in [("facts", "--no-lint"), ("probe", "--format", "json"), ("lint", "--format", "json")]:
        text = _check(_run(*args, env=env), args)
        if args[0] == "facts":
            doc = json.loads(text)
            assert doc["ok"] is True and doc["nccl"]["env"]["nccl_socket_ifname"] == "eth\\xff"
