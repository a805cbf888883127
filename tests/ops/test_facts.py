"""ncclctl facts: valid JSON (schema) and exit 0 whatever happens, bounded time, deterministic, -o idempotent."""

from __future__ import annotations

import json
import os
import shutil
import time

import jsonschema
import pytest

from conftest import HOSTS, REPO, host_names, run_cli
from ncclctl.ops import facts
from ncclctl.probe import probe

SCHEMA = json.loads((REPO / "schemas" / "facts.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _valid(doc: dict) -> None:
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message[:200]}" for e in errors[:5])


def test_schema_is_a_valid_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("host", host_names())
def test_every_fixture_validates(host):
    r = run_cli("facts", "--root", str(HOSTS / host))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    doc = json.loads(r.stdout)
    _valid(doc)
    assert doc["ok"] is True and doc["timed_out"] is False and doc["error"] is None
    assert doc["source"] == {"kind": "root", "path": str(HOSTS / host)}


def test_content_matches_the_node():
    doc = json.loads(run_cli("facts", "--root", str(HOSTS / "dgx-h100-port-down")).stdout)
    node = probe(str(HOSTS / "dgx-h100-port-down"))
    assert doc["hostname"] == node.hostname
    assert doc["gpu"]["count"] == 8 and doc["gpu"]["models"] == [{"name": node.gpus[0].name, "count": 8}]
    assert doc["gpu"]["driver_version"] == node.facts.driver_version
    assert doc["rails"]["nccl_ib_hca"].startswith("=mlx5_0:1,mlx5_3:1") and doc["rails"]["down"] == ["mlx5_3:1"]
    mlx5_3 = next(n for n in doc["nics"] if n["name"] == "mlx5_3")
    assert mlx5_3["ports"][0]["state"] == "DOWN" and mlx5_3["ports"][0]["link_layer"] == "InfiniBand"
    assert mlx5_3["ports"][0]["rate_gbps"] == node.nic("mlx5_3").ports[0].rate_gbps == 10  # a down port: SDR 1X
    # /etc/nccl.conf of the fixture, as NCCL resolves it.
    assert doc["nccl"]["conf_files"] == ["/etc/nccl.conf"]
    assert doc["nccl"]["effective"]["nccl_ib_hca"] == "=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11"
    # The lint summary runs the registered rules: the down rail port is an error.
    assert doc["lint"]["ran"] is True and doc["lint"]["summary"]["error"] >= 1 and "IB001" in doc["lint"]["rules"]
    assert doc["versions"]["ncclctl"] == doc["ncclctl_version"]
    no_lint = json.loads(run_cli("facts", "--root", str(HOSTS / "dgx-h100-port-down"), "--no-lint").stdout)
    assert no_lint["lint"] == {"ran": False, "error": None, "summary": None, "rules": None}
    _valid(no_lint)


def test_keys_are_snake_case():
    doc = json.loads(run_cli("facts", "--root", str(HOSTS / "hgx-h100-roce")).stdout)
    bad = []

    def walk(obj, where):
        if isinstance(obj, dict):
            for k, v in obj.items():
                if not k.replace("_", "a").isalnum() or k != k.lower() or k[0].isdigit():
                    bad.append(f"{where}.{k}")
                walk(v, f"{where}.{k}")
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                walk(v, f"{where}[{i}]")

    walk(doc, "$")
    assert not bad and doc["nccl"]["env"] == {"nccl_ib_gid_index": "3", "nccl_ib_tc": "106"}, bad


def test_byte_identical_across_runs():
    a = run_cli("facts", "--root", str(HOSTS / "hgx-h100-roce")).stdout
    b = run_cli("facts", "--root", str(HOSTS / "hgx-h100-roce")).stdout
    assert a == b


def test_errors_stay_inside_valid_json(tmp_path):
    r = run_cli("facts", "--root", str(tmp_path / "nowhere"))
    assert r.returncode == 0 and r.stderr == ""
    doc = json.loads(r.stdout)
    _valid(doc)
    assert doc["ok"] is False and doc["timed_out"] is False
    assert doc["error"]["error"] == "InputError" and doc["error"]["path"] == str(tmp_path / "nowhere")
    assert doc["error"]["exit_code"] == 3 and doc["error"]["fix"]
    assert doc["gpu"] is None and doc["hostname"] is None
    bad_model = tmp_path / "model.json"
    bad_model.write_text("{ not json")
    doc = json.loads(run_cli("facts", "--model", str(bad_model)).stdout)
    _valid(doc)
    assert doc["ok"] is False and "not a valid JSON node model" in doc["error"]["message"]


def test_model_input(tmp_path):
    model = tmp_path / "m.json"
    model.write_text(run_cli("probe", "--root", str(HOSTS / "grace-hopper"), "--format", "json").stdout)
    doc = json.loads(run_cli("facts", "--model", str(model)).stdout)
    _valid(doc)
    assert doc["ok"] and doc["source"] == {"kind": "model", "path": str(model)} and doc["cpu"]["arch"] == "arm64"


def test_a_fifo_in_a_snapshot_is_refused_not_waited_on(tmp_path):
    """A FIFO without a writer where a file should be (a hostile snapshot, or a hung read): the input door refuses
    it at once instead of blocking until the deadline."""
    root = tmp_path / "hung"
    shutil.copytree(HOSTS / "cpu-only", root, symlinks=True)
    (root / "proc" / "cpuinfo").unlink()
    os.mkfifo(root / "proc" / "cpuinfo")
    r = run_cli("facts", "--root", str(root), "--timeout", "20")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    _valid(doc)
    assert doc["ok"] is False and doc["timed_out"] is False and doc["error"]["error"] == "InputError"
    assert "FIFO" in doc["error"]["message"] and doc["error"]["path"].endswith("/proc/cpuinfo")


def test_collect_kills_the_worker_and_its_children(tmp_path):
    """The deadline kills the forked worker's whole process group (commands it started included)."""
    import subprocess

    pidfile = tmp_path / "child.pid"

    def load():
        child = subprocess.Popen(["sleep", "60"])
        pidfile.write_text(str(child.pid))
        time.sleep(60)

    doc = facts.collect(load, source={"kind": "live", "path": None}, timeout=0.5)
    assert doc["timed_out"] is True
    pid = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        if os.path.exists(f"/proc/{pid}/stat") and open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            break  # killed, waiting for its (gone) parent to be reaped by init
        time.sleep(0.1)
    else:
        pytest.fail(f"the worker's child {pid} survived the deadline")


def test_internal_errors_become_documents():
    def load():
        raise RuntimeError("boom")

    doc = facts.collect(load, source={"kind": "live", "path": None}, timeout=10)
    _valid(doc)
    assert doc["ok"] is False and doc["error"]["error"] == "InternalError" and "boom" in doc["error"]["message"]
    assert doc["hostname"]  # live: the host name is still known


def test_output_file_is_idempotent(tmp_path):
    out = tmp_path / "facts.d" / "ncclctl.fact"
    out.parent.mkdir()
    args = ("facts", "--root", str(HOSTS / "dgx-h100"), "-o", str(out), "--format", "json")
    first = json.loads(run_cli(*args).stdout)
    assert first["changed"] is True and first["ok"] is True and first["facts"] is None
    _valid(json.loads(out.read_text()))
    assert json.loads(run_cli(*args).stdout)["changed"] is False
    r = run_cli("facts", "--root", str(HOSTS / "dgx-h100"), "-o", str(out))
    assert r.stdout == "" and "is up to date" in r.stderr


@pytest.mark.parametrize("host,vm", [("cloud-vm-flat", True), ("pcie-server", False), ("dgx-h100", False)])
def test_virtual_machine_from_cpu_flags_and_pci_layout(host, vm):
    """cloud-vm-flat: flat PCIe and the 'hypervisor' CPU flag; pcie-server: flags without it; dgx-h100: no flags
    recorded, a switch hierarchy."""
    doc = json.loads(run_cli("facts", "--root", str(HOSTS / host), "--no-lint").stdout)
    assert doc["virtual_machine"] is vm
    node = probe(str(HOSTS / host))
    assert node.cpu.hypervisor == {"cloud-vm-flat": True, "pcie-server": False, "dgx-h100": None}[host]


def test_hypervisor_flag_alone_makes_a_guest(tmp_path):
    """A VM whose vPCI shows a switch hierarchy: the PCI layout looks like bare metal, the CPUID bit does not."""
    root = tmp_path / "guest"
    shutil.copytree(HOSTS / "pcie-server", root, symlinks=True)
    info = root / "proc" / "cpuinfo"
    info.write_text(info.read_text().replace("flags\t\t: fpu ", "flags\t\t: fpu hypervisor "))
    node = probe(str(root))
    assert node.cpu.hypervisor is True and not node.is_virtual and node.is_guest
    assert json.loads(run_cli("facts", "--root", str(root), "--no-lint").stdout)["virtual_machine"] is True


# ------------------------------------------------------------------------------------------------------------
# Nothing outlives facts: a tool that escapes into its own session (setsid, a double-forking daemon) is killed at
# the deadline, on SIGTERM/SIGINT/SIGHUP, and when the probe finishes normally.

MARKER_VAR = "NCCLCTL_FACTS_TEST_MARKER"


def _fake_ip(tmp_path, *, hang: bool) -> tuple[dict, "os.PathLike"]:
    """A live probe whose ``ip`` (the first command it runs) starts two escapees marked by an environment variable:
    ``setsid sh -c 'sleep 300'`` and a double-forked daemon in its own session (its parent exits, so it is an
    orphan); it writes ``ready`` once both have left facts' process groups. Then ``ip`` hangs (``hang``) or
    answers ``[]``."""
    import sys
    import uuid

    ready = tmp_path / "ready"
    daemon = ("import os, sys, time\n"
              "os.setsid()\n"
              "if os.fork():\n"
              "    os._exit(0)\n"
              "open(sys.argv[1], 'w').close()\n"
              "time.sleep(300)\n")
    (tmp_path / "daemon.py").write_text(daemon)
    tail = "exec /bin/sleep 300\n" if hang else "echo '[]'\n"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ip = bin_dir / "ip"
    ip.write_text("#!/bin/sh\n"
                  "/usr/bin/setsid /bin/sh -c '/bin/sleep 300; :' </dev/null >/dev/null 2>&1 &\n"
                  f"'{sys.executable}' '{tmp_path / 'daemon.py'}' '{ready}' </dev/null >/dev/null 2>&1 &\n"
                  f"while [ ! -e '{ready}' ]; do /bin/sleep 0.05; done\n" + tail)
    ip.chmod(0o755)
    env = {"PATH": str(bin_dir), "NCCLCTL_COMMAND_TIMEOUT": "120", MARKER_VAR: uuid.uuid4().hex}
    return env, ready


def _marked(marker: str) -> list[int]:
    """Live processes (zombies have no environment) carrying ``marker`` in their environment."""
    needle = f"{MARKER_VAR}={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    if needle in fh.read().split(b"\0"):
                        found.append(int(name))
            except OSError:
                continue
    return found


def _left_behind(marker: str) -> list[str]:
    """Marked processes still alive after a grace period (SIGKILL takes a moment to land); kills them."""
    for _ in range(100):
        pids = _marked(marker)
        if not pids:
            return []
        time.sleep(0.1)
    names = []
    for pid in pids:
        try:
            names.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace"))
            os.kill(pid, 9)
        except OSError:
            pass
    return names


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self") or not os.path.exists("/usr/bin/setsid"),
                                reason="needs Linux /proc and setsid")


@needs_proc
def test_deadline_kills_tools_that_left_the_process_group(tmp_path):
    env, ready = _fake_ip(tmp_path, hang=True)
    try:
        r = run_cli("facts", "--no-lint", "--timeout", "5", env=env, timeout=120)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        doc = json.loads(r.stdout)
        _valid(doc)
        assert doc["ok"] is False and doc["timed_out"] is True and doc["error"]["error"] == "Timeout"
        assert ready.exists(), "the fake tool never ran: the test proves nothing"
    finally:
        assert _left_behind(env[MARKER_VAR]) == []


@needs_proc
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_signal_kills_the_tree_and_still_prints_the_document(tmp_path, signame):
    """``timeout 5 ncclctl facts``: the signal arrives mid-probe; facts answers (exit 0, valid JSON) and its
    stdout closes, because no process it started still holds it."""
    import signal
    import subprocess
    import sys

    env, ready = _fake_ip(tmp_path, hang=True)
    full_env = {k: v for k, v in os.environ.items() if k != "NCCLCTL_DEBUG"} | env
    proc = subprocess.Popen([sys.executable, "-m", "ncclctl", "facts", "--no-lint", "--timeout", "300"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env, cwd=REPO)
    try:
        for _ in range(600):
            if ready.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert ready.exists(), "the fake tool never ran"
        proc.send_signal(getattr(signal, signame))
        out, err = proc.communicate(timeout=60)  # EOF on both pipes: nothing left holds them
        assert proc.returncode == 0 and err == b"", err
        doc = json.loads(out)
        _valid(doc)
        assert doc["ok"] is False and doc["timed_out"] is False
        assert doc["error"]["error"] == "Interrupted" and signame in doc["error"]["message"]
        assert doc["error"]["exit_code"] == 130 and doc["hostname"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        assert _left_behind(env[MARKER_VAR]) == []


@needs_proc
def test_a_finished_probe_leaves_no_daemon_behind(tmp_path):
    """The tool returns at once but leaves escapees running: the worker kills them before it answers."""
    env, ready = _fake_ip(tmp_path, hang=False)
    try:
        r = run_cli("facts", "--no-lint", env=env, timeout=120)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        doc = json.loads(r.stdout)
        _valid(doc)
        assert doc["ok"] is True and ready.exists()
    finally:
        assert _left_behind(env[MARKER_VAR]) == []
