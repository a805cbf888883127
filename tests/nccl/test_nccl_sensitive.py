"""Variables NCCL's registry marks SENSITIVE (the table's ``sensitive`` flag): ``snapshot --redact`` and ``facts``
publish ``<redacted>`` instead of their values. NCCL 2.32.3 flags none of its own parameters, so the behaviour is
checked with a table in which one variable carries the flag, as the next release's table update would do."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from conftest import HOSTS
from ncclctl.nccl import variables
from ncclctl.nccl.variables import KNOWN, REDACTED, sensitive_variable
from ncclctl.ops import facts
from ncclctl.probe import probe
from ncclctl.probe.snapshot import snapshot

SECRET = "s3cr3t-value-0123456789abcdef0123"


def test_no_variable_is_sensitive_in_2_32_3():
    # tools/nccl_extract.py on the 2.32.3 library: no registry parameter has the Sensitive flag.
    assert [n for n in KNOWN if sensitive_variable(n)] == []
    assert not sensitive_variable("NCCL_SOCKET_IFNAME") and not sensitive_variable("NCCL_NOT_A_VARIABLE")


@pytest.fixture
def sensitive_comm_id(monkeypatch):
    """The table with NCCL_COMM_ID flagged sensitive."""
    info = KNOWN["NCCL_COMM_ID"]
    monkeypatch.setitem(variables.KNOWN, "NCCL_COMM_ID",
                        dataclasses.replace(info, flags=info.flags | {"sensitive"}))
    assert sensitive_variable("NCCL_COMM_ID")
    return "NCCL_COMM_ID"


def _host(tmp_path, name: str):
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "dgx-h100", root, symlinks=True)
    env = json.loads((root / "env.json").read_text())
    env[name] = SECRET
    env["NCCL_SOCKET_IFNAME"] = "=eth0"
    (root / "env.json").write_text(json.dumps(env))
    with open(root / "etc/nccl.conf", "a") as fh:
        fh.write(f"{name}={SECRET}\n")
    return root


def test_snapshot_redact_replaces_sensitive_values(tmp_path, sensitive_comm_id):
    root = _host(tmp_path, sensitive_comm_id)
    snapshot(str(tmp_path / "red"), redact=True, root=str(root))
    env = json.loads((tmp_path / "red/env.json").read_text())
    assert env[sensitive_comm_id] == REDACTED and env["NCCL_SOCKET_IFNAME"] == "=eth0"
    conf = (tmp_path / "red/etc/nccl.conf").read_text()
    assert f"{sensitive_comm_id}={REDACTED}\n" in conf and "NCCL_IB_HCA=" in conf
    assert not any(SECRET in p.read_text("latin-1") for p in (tmp_path / "red").rglob("*")
                   if p.is_file() and not p.is_symlink())
    # Without --redact the snapshot is the node's own copy: the value is kept.
    snapshot(str(tmp_path / "plain"), redact=False, root=str(root))
    assert json.loads((tmp_path / "plain/env.json").read_text())[sensitive_comm_id] == SECRET


def test_facts_publish_no_sensitive_value(tmp_path, sensitive_comm_id):
    root = _host(tmp_path, sensitive_comm_id)
    doc = facts.document(probe(str(root)), source={"kind": "root", "path": str(root)}, lint=False)
    assert doc["nccl"]["env"]["nccl_comm_id"] == REDACTED and doc["nccl"]["env"]["nccl_socket_ifname"] == "=eth0"
    assert SECRET not in json.dumps(doc)


def test_facts_keep_values_that_are_not_sensitive(tmp_path):
    root = _host(tmp_path, "NCCL_COMM_ID")
    doc = facts.document(probe(str(root)), source={"kind": "root", "path": str(root)}, lint=False)
    assert doc["nccl"]["env"]["nccl_comm_id"] == SECRET
