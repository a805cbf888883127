"""examples/nhc/ncclctl.nhc: NHC's check_ncclctl, sourced in bash with stand-ins for NHC's die and log.

NHC's conventions (its scripts/*.nhc): a check is a bash function `check_*` that calls `die 1 "$FUNCNAME:  msg"`
and returns non-zero on failure (NHC hands the message to the resource manager as the reason), `log "msg"` for
what only goes to the log, and returns 0 when the node passes.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import HOSTS, REPO

NHC = REPO / "examples" / "nhc" / "ncclctl.nhc"

HARNESS = r'''
die() { printf 'die %s %s\n' "$1" "$2" >> "$CALLS"; }
log() { printf 'log %s\n' "$*" >> "$CALLS"; }
. "$NHC_FILE"
check_ncclctl "$@"
echo "rc=$?" >> "$CALLS"
'''


def _run(tmp_path, ncclctl: str, *args: str, **env: str) -> list[str]:
    calls = tmp_path / "calls"
    full = {"PATH": "/usr/bin:/bin", "CALLS": str(calls), "NHC_FILE": str(NHC), "NCCLCTL": ncclctl,
            "PYTHONPATH": str(REPO), **env}
    r = subprocess.run(["bash", "-c", HARNESS, "harness", *args], env=full, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return calls.read_text().splitlines()


def _fake(tmp_path, body: str) -> str:
    prog = tmp_path / "ncclctl"
    prog.write_text("#!/bin/sh\n" + body)
    prog.chmod(0o755)
    return str(prog)


def test_nhc_file_is_valid_bash_and_defines_only_its_check():
    r = subprocess.run(["bash", "-c", f'. "{NHC}"; declare -F'], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["declare", "-f", "check_ncclctl"]


@pytest.mark.parametrize("host, calls", [
    ("dgx-h100", ["rc=0"]),
    ("dgx-h100-port-down", ["die 1 check_ncclctl:  IB001 mlx5_3 ib-port-not-active (+1 more)", "rc=1"]),
])
def test_check_ncclctl_with_the_real_ncclctl(tmp_path, host, calls):
    real = _fake(tmp_path, f'exec {sys.executable} -m ncclctl "$@"\n')
    assert _run(tmp_path, real, "--root", str(HOSTS / host)) == calls


def test_check_ncclctl_passes_its_arguments(tmp_path):
    args = tmp_path / "args"
    fake = _fake(tmp_path, f'printf "%s\\n" "$@" > {args}\necho "ncclctl: ok"\n')
    assert _run(tmp_path, fake, "--config", "/etc/ncclctl.yaml") == ["rc=0"]
    assert args.read_text().splitlines() == ["lint", "--format", "slurm", "--config", "/etc/ncclctl.yaml"]


def test_check_ncclctl_unknown_logs_unless_asked(tmp_path):
    fake = _fake(tmp_path, 'echo "ncclctl: unknown: /sys: not readable"\nexit 2\n')
    assert _run(tmp_path, fake) == ["log check_ncclctl:  unknown: /sys: not readable", "rc=0"]
    (tmp_path / "calls").unlink()
    assert _run(tmp_path, fake, NCCLCTL_DIE_ON_UNKNOWN="1") == ["die 1 check_ncclctl:  unknown: /sys: not readable",
                                                                "rc=1"]
    (tmp_path / "calls").unlink()
    crash = _fake(tmp_path, "exit 5\n")
    assert _run(tmp_path, crash) == ["log check_ncclctl:  unknown: ncclctl exit status 5", "rc=0"]


def test_check_ncclctl_without_ncclctl_fails(tmp_path):
    assert _run(tmp_path, str(tmp_path / "missing")) == [
        f"die 1 check_ncclctl:  {tmp_path / 'missing'} not found or not runnable.", "rc=1"]
