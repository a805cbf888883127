"""Fabric commands show stage progress only when stderr is a terminal; pipes and logs stay clean."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

from conftest import REPO, run_cli

IB = REPO / "fixtures" / "fabric" / "ib-small"


def test_progress_on_a_terminal_only():
    args = ["fabric", "rails", "--inventory", str(IB / "inventory.yaml"), "--format", "json"]
    piped = run_cli(*args)
    assert "detecting the rail layout" not in piped.stderr
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NCCLCTL_DEBUG"}
    env["TERM"] = "xterm"
    proc = subprocess.run([sys.executable, "-m", "ncclctl", *args], stdout=subprocess.PIPE, stderr=slave,
                          cwd=REPO, env=env, timeout=60)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    err = b"".join(chunks).decode()
    assert "ncclctl: reading the fabric" in err and "detecting the rail layout" in err
    assert proc.stdout == piped.stdout.encode()  # the document itself is unchanged
