"""examples/systemd (facts service + timer), examples/slurm/prolog.sh and healthcheck.sh: syntax, and behaviour
against fakes."""

from __future__ import annotations

import configparser
import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import HOSTS, REPO, run_cli

SYSTEMD = REPO / "examples" / "systemd"
PROLOG = REPO / "examples" / "slurm" / "prolog.sh"
HEALTHCHECK = REPO / "examples" / "slurm" / "healthcheck.sh"

# -- systemd ---------------------------------------------------------------------------------------


def _unit(name: str) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(strict=True, interpolation=None, delimiters=("=",), comment_prefixes=("#", ";"))
    cp.optionxform = str  # keys are case-sensitive in systemd
    cp.read_string((SYSTEMD / name).read_text())
    return cp


def test_units_parse_and_say_what_they_should():
    svc, timer = _unit("ncclctl-facts.service"), _unit("ncclctl-facts.timer")
    assert svc.sections() == ["Unit", "Service"] and timer.sections() == ["Unit", "Timer", "Install"]
    assert svc["Service"]["Type"] == "oneshot"
    assert timer["Timer"]["Unit"] == "ncclctl-facts.service" and timer["Install"]["WantedBy"] == "timers.target"
    for key in ("OnBootSec", "OnUnitActiveSec", "RandomizedDelaySec"):
        assert timer["Timer"][key]
    argv = shlex.split(svc["Service"]["ExecStart"])
    assert argv[1] == "facts" and "--timeout" in argv and argv[argv.index("-o") + 1] == "/etc/ansible/facts.d/ncclctl.fact"
    assert svc["Service"]["ReadWritePaths"].lstrip("-") == "/etc/ansible/facts.d"


def test_the_service_command_line_works(tmp_path):
    """ExecStart, run as written (program and output folder moved into a scratch folder, on a fixture)."""
    argv = shlex.split(_unit("ncclctl-facts.service")["Service"]["ExecStart"])
    out = tmp_path / "ncclctl.fact"
    args = [a if a != "/etc/ansible/facts.d/ncclctl.fact" else str(out) for a in argv[1:]]
    r = run_cli(*args, "--root", str(HOSTS / "dgx-h100"))
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["ok"] is True


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verify(tmp_path):
    """systemd's own checker; the program path is pointed at an existing executable (verify checks it exists)."""
    fake = tmp_path / "ncclctl"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    for name in ("ncclctl-facts.service", "ncclctl-facts.timer"):
        text = (SYSTEMD / name).read_text().replace("/opt/ncclctl/bin/ncclctl", str(fake))
        (tmp_path / name).write_text(text)
    r = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "ncclctl-facts.service"),
                        str(tmp_path / "ncclctl-facts.timer")], capture_output=True, text=True, timeout=60)
    # verify reports unknown keys and bad values as warnings on stderr with exit 0: fail on any line about ours.
    ours = [line for line in (r.stdout + r.stderr).splitlines() if "ncclctl-facts" in line]
    assert r.returncode == 0 and not ours, r.stdout + r.stderr
    bad = tmp_path / "bad.service"
    bad.write_text("[Service]\nType=oneshoot\nExecStart=/bin/true\n")
    r = subprocess.run(["systemd-analyze", "verify", str(bad)], capture_output=True, text=True, timeout=60)
    assert "oneshoot" in r.stdout + r.stderr, "the checker itself must catch a bad value"


# -- Slurm prolog ----------------------------------------------------------------------------------


@pytest.mark.parametrize("script", [PROLOG, HEALTHCHECK])
def test_slurm_scripts_are_valid_bash(script):
    r = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert os.access(script, os.X_OK)


def _fakes(tmp_path, ncclctl_body: str):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    scripts = {
        "ncclctl": ncclctl_body,
        "scontrol": f'#!/bin/sh\nprintf "scontrol %s\\n" "$*" >> {log}\n',
        "logger": f'#!/bin/sh\nprintf "logger %s\\n" "$*" >> {log}\n',
    }
    for name, body in scripts.items():
        (bindir / name).write_text(body)
        (bindir / name).chmod(0o755)
    return bindir, log


def _prolog(tmp_path, bindir, **env):
    full = {"PATH": f"{bindir}:/usr/bin:/bin", "SLURMD_NODENAME": "gpu-017", "NCCLCTL": str(bindir / "ncclctl"),
            "NCCLCTL_ARGS": f"--root {HOSTS / 'dgx-h100'}", **env}
    # the time-out is a hang guard: a prolog that waits for a hung ncclctl (sleep 600 below) never returns in it
    r = subprocess.run(["bash", str(PROLOG)], env=full, capture_output=True, text=True, timeout=60)
    return r


def _gone(pid: int) -> bool:
    """Gone, or a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


STATUS = {0: "ncclctl: ok (57 rules passed)",
          1: "ncclctl: IB001 mlx5_3 ib-port-not-active (+1 more)",
          2: "ncclctl: unknown: /x: no such host root",
          3: ""}


@pytest.mark.parametrize("code,drain_on_unknown,exit_status,drained", [
    (0, "0", 0, False), (1, "0", 1, True), (2, "0", 0, False), (2, "1", 1, True), (3, "0", 0, False),
])
def test_prolog_maps_slurm_answers(tmp_path, code, drain_on_unknown, exit_status, drained):
    """`lint --format slurm`: 0 fit, 1 drain with its line as the reason, 2 unknown (drain only when asked)."""
    args_file = tmp_path / "args"
    body = f'#!/bin/sh\nprintf "%s\\n" "$@" > {args_file}\necho "{STATUS[code]}"\nexit {code}\n'
    bindir, log = _fakes(tmp_path, body)
    r = _prolog(tmp_path, bindir, NCCLCTL_DRAIN_ON_UNKNOWN=drain_on_unknown)
    assert r.returncode == exit_status, r.stderr
    assert args_file.read_text().split("\n")[:5] == ["lint", "--format", "slurm", "--root", str(HOSTS / "dgx-h100")]
    calls = log.read_text().splitlines() if log.exists() else []
    drains = [c for c in calls if c.startswith("scontrol")]
    if drained:
        assert drains == [f"scontrol update NodeName=gpu-017 State=DRAIN Reason={STATUS[code]}"]
    else:
        assert drains == []
    if code in (2, 3):
        expected = STATUS[code] or f"ncclctl: unknown: exit status {code}"
        assert any(c.startswith("logger") and expected in c for c in calls), calls
    if code == 0:
        assert calls == []


def test_prolog_times_out_as_unknown(tmp_path):
    """Counted, not timed: the hung ncclctl (it would sleep 600 s) is killed by the prolog's timeout, so its
    process is gone when the prolog returns, and the prolog returns inside the hang guard."""
    pidfile = tmp_path / "ncclctl.pid"
    bindir, log = _fakes(tmp_path, f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 600\n")
    r = _prolog(tmp_path, bindir, NCCLCTL_TIMEOUT="1")
    assert r.returncode == 0, r.stderr
    assert _gone(int(pidfile.read_text())), "the hung ncclctl outlived the prolog's timeout"
    assert any("did not finish within 1s" in c for c in log.read_text().splitlines())
    assert "scontrol" not in log.read_text()


def test_prolog_without_ncclctl_is_unknown_not_a_drain(tmp_path):
    bindir, log = _fakes(tmp_path, "#!/bin/sh\nexit 0\n")
    r = _prolog(tmp_path, bindir, NCCLCTL=str(tmp_path / "missing"))
    assert r.returncode == 0 and "cannot run" in log.read_text() and "scontrol" not in log.read_text()


@pytest.mark.parametrize("host,drained", [("dgx-h100", False), ("dgx-h100-port-down", True)])
def test_prolog_with_the_real_ncclctl(tmp_path, host, drained):
    """The real `ncclctl lint --format slurm` on a clean and on a broken fixture."""
    bindir, log = _fakes(tmp_path, f"#!/bin/sh\nexec {sys.executable} -m ncclctl \"$@\"\n")
    env = {"PYTHONPATH": str(REPO), "NCCLCTL_ARGS": f"--root {HOSTS / host}", "NCCLCTL_TIMEOUT": "30"}
    r = _prolog(tmp_path, bindir, **env)
    calls = log.read_text().splitlines() if log.exists() else []
    drains = [c for c in calls if c.startswith("scontrol")]
    if drained:
        assert r.returncode == 1 and len(drains) == 1, (r.stderr, calls)
        assert drains == ["scontrol update NodeName=gpu-017 State=DRAIN "
                          "Reason=ncclctl: IB001 mlx5_3 ib-port-not-active (+1 more)"]
    else:
        assert r.returncode == 0 and not drains, (r.stderr, calls)


@pytest.mark.parametrize("host,drained", [("dgx-h100", False), ("dgx-h100-port-down", True)])
def test_healthcheck_drains_itself_and_always_exits_0(tmp_path, host, drained):
    """HealthCheckProgram: slurmd ignores the exit status, so the real ncclctl drains (--drain) with its reason."""
    bindir, log = _fakes(tmp_path, f"#!/bin/sh\nexec {sys.executable} -m ncclctl \"$@\"\n")
    (bindir / "scontrol").write_text(f'#!/bin/sh\nprintf "scontrol %s\\n" "$*" >> {log}\n')
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "SLURMD_NODENAME": "gpu-017", "NCCLCTL": str(bindir / "ncclctl"),
           "PYTHONPATH": str(REPO), "NCCLCTL_ARGS": f"--root {HOSTS / host}"}
    r = subprocess.run(["bash", str(HEALTHCHECK)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    if drained:
        assert calls == ["scontrol update nodename=gpu-017 state=drain "
                         "reason=ncclctl: IB001 mlx5_3 ib-port-not-active (+1 more)"]
    else:
        assert calls == []
