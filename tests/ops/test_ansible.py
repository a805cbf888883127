"""The example role and playbook, run for real with ansible-core against localhost on a fixture root.

One scratch folder per run; the playbook installs the freshly built wheel into a virtual environment there
(dependencies from this interpreter's site-packages: PIP_NO_DEPS, so no download), writes the facts file, the
topology file and nccl.conf there, and asserts that lint passes. Four runs:

1. check mode on the fresh folder: reports a change (the install), writes nothing;
2. for real: changed, every file written with the content the CLI gives;
3. again: changed=0 (idempotent);
4. nccl.conf edited by hand, check + diff mode: exactly that task reports a change and shows the diff, and the
   file is left as it was (check mode reaches the ncclctl_file module, which passes --check).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import HOSTS, REPO, run_cli

from .tools import tool_venv

PLAYBOOK_DIR = REPO / "examples" / "ansible"
RECAP = re.compile(r"^localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)",
                   re.M)


@pytest.fixture(scope="module")
def ansible():
    return tool_venv("ansible-core", ["ansible-core"], "bin/ansible-playbook")


def _play(ansible, work, extra: list[str]) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "NCCL"))}
    env.update(ANSIBLE_HOME=str(work / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(work / "ansible-home" / "tmp"),
               ANSIBLE_REMOTE_TEMP=str(work / "ansible-home" / "remote"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_PIPELINING="1", ANSIBLE_CONFIG=str(PLAYBOOK_DIR / "ansible.cfg"),
               ANSIBLE_ROLES_PATH=str(PLAYBOOK_DIR / "roles"))
    proc = subprocess.run([str(ansible / "bin" / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "playbook.yml", "-e", f"@{work / 'vars.json'}", *extra],
                          cwd=PLAYBOOK_DIR, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    m = RECAP.search(proc.stdout)
    assert proc.returncode == 0 and m, f"ansible-playbook {' '.join(extra)} failed (rc={proc.returncode}):\n{out[-6000:]}"
    recap = dict(zip(("ok", "changed", "unreachable", "failed", "skipped"), map(int, m.groups())))
    return recap, out


def _task_result(out: str, title_part: str) -> str:
    """The status word (ok/changed/skipping/failed) of the task whose title contains ``title_part``."""
    blocks = re.split(r"^TASK \[", out, flags=re.M)
    for b in blocks:
        head = b.split("\n", 1)[0]
        if title_part in head:
            m = re.search(r"^(ok|changed|skipping|failed|fatal): \[localhost\]", b, re.M)
            return m.group(1) if m else "?"
    raise AssertionError(f"no task {title_part!r} in the output:\n{out[-3000:]}")


def test_playbook_check_real_idempotent_and_check_diff(ansible, dist, tmp_path):
    work = tmp_path
    etc = work / "etc"
    etc.mkdir()
    root = HOSTS / "dgx-h100"
    files = {"facts": work / "facts.d" / "ncclctl.fact", "topo": etc / "nccl-topo.xml", "conf": etc / "nccl.conf"}
    (work / "vars.json").write_text(json.dumps({
        "ncclctl_hosts": "localhost", "ncclctl_become": False,
        "ansible_python_interpreter": str(ansible / "bin" / "python"),
        "ncclctl_root": str(root),
        "ncclctl_package": f"ncclctl @ {dist['wheel'].as_uri()}",
        # A venv of its own with ncclctl's dependencies installed from the index, as on a real node (a venv that
        # borrowed site-packages would only work where the base interpreter happens to have them).
        "ncclctl_python": sys.executable, "ncclctl_venv": str(work / "venv"), "ncclctl_venv_site_packages": False,
        "ncclctl_pip_environment": {"PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        "ncclctl_facts_dir": str(files["facts"].parent), "ncclctl_topo_file": str(files["topo"]),
        "ncclctl_conf_file": str(files["conf"]),
    }))

    # 1. Check mode on a fresh host: the install would happen, nothing is written.
    recap, out = _play(ansible, work, ["--check"])
    assert recap["changed"] >= 1 and recap["failed"] == 0, out
    assert _task_result(out, "Pip install") == "changed"
    assert not (work / "venv").exists() and not files["facts"].parent.exists() and not any(etc.iterdir())

    # 2. For real: installed, every file written, lint asserted.
    recap, out = _play(ansible, work, [])
    assert recap["changed"] >= 4, out
    for step in ("Pip install", "Write the facts", "Write the topology file", "Write nccl.conf"):
        assert _task_result(out, step) == "changed", step
    assert _task_result(out, "No lint finding") == "ok"
    assert (work / "venv" / "bin" / "ncclctl").exists()
    facts = json.loads(files["facts"].read_text())
    assert facts["ok"] and facts["hostname"] == "dgx-h100-01" and facts["rails"]["count"] == 8
    assert files["conf"].read_text() == run_cli("conf", "generate", "--root", str(root)).stdout
    assert files["topo"].read_text() == run_cli("topo", "generate", "--root", str(root)).stdout
    assert "Validate the NCCL topology file" in out  # the handler ran on the new topology file

    # 3. Again: nothing changes.
    recap, out = _play(ansible, work, [])
    assert recap["changed"] == 0 and recap["failed"] == 0, out

    # 4. nccl.conf edited by hand; check + diff mode shows exactly that and writes nothing.
    files["conf"].write_text("NCCL_IB_HCA=mlx5\n")
    recap, out = _play(ansible, work, ["--check", "--diff"])
    assert recap["changed"] == 1, out
    assert _task_result(out, "Write nccl.conf") == "changed"
    assert f"--- before: {files['conf']}" in out and "-NCCL_IB_HCA=mlx5" in out and "+NCCL_SOCKET_IFNAME==eno3" in out
    assert files["conf"].read_text() == "NCCL_IB_HCA=mlx5\n"
    assert not list(etc.glob("nccl.conf.*~")), "check mode made a backup"
    shutil.rmtree(work / "venv", ignore_errors=True)


def test_role_passes_ansible_lint_production_profile(tmp_path):
    """The example role and playbook pass ansible-lint's strictest profile (production), offline. ansible-lint is
    installed in a cached tool environment (as ansible-core above), never as a project dependency."""
    lint = tool_venv("ansible-lint", ["ansible-lint", "ansible-core"], "bin/ansible-lint")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "NCCL"))}
    env.update(ANSIBLE_HOME=str(tmp_path / "ansible-home"), NO_COLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               PATH=f"{lint / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    proc = subprocess.run([str(lint / "bin" / "ansible-lint"), "--offline", "--profile", "production", "--nocolor",
                           "--format", "pep8", "."], cwd=PLAYBOOK_DIR, env=env, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Profile 'production' was required, and it passed" in out, out[-4000:]
