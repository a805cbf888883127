"""Which NCCL the node runs: libraries found where a job's loader and Python look, the release read from the
library's own banner in its .rodata (never by loading it), recorded in the snapshot, said by predict and facts.

The libraries here are real ELF shared objects built by the machine's C compiler with NCCL's banner format
(``init.cc``: "NCCL version 2.28.9+cuda13.0"); checked by hand against the nvidia-nccl-cu12 2.32.3 wheel's
libnccl.so.2 (473 MB: its .rodata alone read, "2.32.3"/"12.9" in 0.5 s).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from conftest import HOSTS, run_cli
from ncclctl.probe.ncclib import library_version

CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler to build a stand-in library")


def _build(tmp_path, banner: str, name: str = "libnccl.so.2") -> str:
    src = tmp_path / "nccl_stub.c"
    src.write_text(f'const char nccl_banner[] = "{banner}";\nint ncclGetVersion(int *v) {{ *v = 22809; return 0; }}\n')
    out = tmp_path / name
    subprocess.run([CC, "-shared", "-fPIC", "-O1", "-o", str(out), str(src)], check=True)
    return str(out)


@needs_cc
def test_banner_read_from_rodata(tmp_path):
    lib = _build(tmp_path, "NCCL version 2.28.9+cuda13.0")
    assert library_version(lib) == ("2.28.9", "13.0")
    other = _build(tmp_path, "NCCL version 2.19.3a+cuda12.2", "libnccl.so.2.19.3")
    assert library_version(other) == ("2.19.3a", "12.2")
    plain = tmp_path / "not-nccl.so"
    plain.write_bytes(b"\x7fELF" + bytes(200))
    assert library_version(str(plain)) is None


@needs_cc
def test_live_probe_finds_the_library_a_job_would_load(tmp_path):
    libdir = tmp_path / "lib"
    libdir.mkdir()
    lib = _build(libdir, "NCCL version 2.28.9+cuda13.0")
    os.symlink("libnccl.so.2", libdir / "libnccl.so")  # the same file twice: listed once
    env = {"LD_LIBRARY_PATH": str(libdir)}
    res = run_cli("facts", "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    libs = json.loads(res.stdout)["nccl"]["libraries"]
    mine = [x for x in libs if x["path"].startswith(str(libdir))]
    assert len(mine) == 1 and mine[0]["version"] == "2.28.9" and mine[0]["cuda"] == "13.0"
    assert mine[0]["where"] == "LD_LIBRARY_PATH" and os.path.realpath(mine[0]["path"]) == lib
    # The snapshot keeps what was found; the probe of the snapshot gives it back.
    snap = tmp_path / "snap"
    assert run_cli("snapshot", "-o", str(snap), env=env).returncode == 0
    doc = json.loads((snap / "nccl.json").read_text())
    assert any(x["version"] == "2.28.9" for x in doc["libraries"])
    again = json.loads(run_cli("probe", "--root", str(snap), "--format", "json").stdout)
    assert again["facts"]["nccl_libraries"] == json.loads(run_cli("probe", "--format", "json",
                                                                  env=env).stdout)["facts"]["nccl_libraries"]


def test_predict_names_the_release_modelled_and_the_nodes():
    vm = str(HOSTS / "h200-vm-socket")
    text = run_cli("topo", "predict", "--root", vm, "-N", "2").stdout
    assert text.startswith("NCCL 2.30.7 (the release modelled)")
    assert "The node's NCCL: 2.28.9 at " in text and "--nccl-version 2.28.9" in text
    # The container's NCCL_VERSION label is no setting.
    assert "Settings: NCCL defaults" in text and "NCCL_VERSION=2.28.3-1" in text.split("note: not NCCL settings")[1]
    doc = json.loads(run_cli("topo", "predict", "--root", vm, "-N", "2", "--format", "json").stdout)
    assert doc["node_nccl"][0]["version"] == "2.28.9" and "NCCL_VERSION" not in doc["settings"]
    modelled = run_cli("topo", "predict", "--root", vm, "-N", "2", "--nccl-version", "2.28.9").stdout
    assert modelled.startswith("NCCL 2.28.9 (the release modelled)") and "pass --nccl-version" not in modelled


def test_facts_of_an_older_snapshot_say_not_looked_for():
    res = run_cli("facts", "--root", str(HOSTS / "dgx-h100"), "--format", "json")
    assert json.loads(res.stdout)["nccl"]["libraries"] is None
