"""The topology.conf (topology/tree) that `fabric order -f slurm` writes, loaded by a real slurmctld (issue 31).

slurmctld starts on localhost with a generated slurm.conf in a temporary folder (SLURM_CONF; every node at
NodeAddr=127.0.0.1, SlurmctldHost=<hostname>(127.0.0.1), so nothing needs name resolution; free ports), munge on
its own key and socket when munged is installed (AuthInfo=socket=...), else auth/none; then `scontrol show
topology` must list exactly the switches, their child switches and their nodes that the file names, and the
daemon's log must hold no error about the topology. Start, query, stop: well under a second each on Debian's
slurm-wlm 22.05. Skipped with a message where slurmctld cannot be found or started (.ci/run installs
slurmctld, slurm-client and munge).
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from ncclctl.fabric.synth import SynthSpec, synth

SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")


def _which(name: str) -> str | None:
    return shutil.which(name) or next((f"{d}/{name}" for d in SBIN if os.access(f"{d}/{name}", os.X_OK)), None)


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _expand(hostlist: str) -> list[str]:
    from ClusterShell.NodeSet import NodeSet

    return list(NodeSet(hostlist)) if hostlist else []


def _written(conf: str) -> dict[str, dict[str, str]]:
    """SwitchName -> {Nodes: ..., Switches: ...} from a topology.conf (comments left out)."""
    out = {}
    for line in conf.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            fields = dict(f.split("=", 1) for f in line.split())
            out[fields.pop("SwitchName")] = fields
    return out


class Slurmctld:
    """A slurmctld (and its munged) in ``folder``: start(topology_conf, nodes), show_topology(), stop()."""

    def __init__(self, folder: Path) -> None:
        self.dir = folder
        self.procs: list[subprocess.Popen] = []
        self.munge_socket: Path | None = None
        self.env = dict(os.environ, SLURM_CONF=str(folder / "slurm.conf"))

    def _munge(self) -> bool:
        munged = _which("munged")
        if munged is None:
            return False
        mdir = self.dir / "munge"
        mdir.mkdir(mode=0o700)
        key = mdir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self.munge_socket = mdir / "munge.sock"
        r = subprocess.run([munged, f"--key-file={key}", f"--socket={self.munge_socket}",
                            f"--pid-file={mdir / 'munged.pid'}", f"--log-file={mdir / 'munged.log'}",
                            f"--seed-file={mdir / 'munged.seed'}", "--force"],
                           capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            pytest.skip(f"munged did not start: {(r.stderr or r.stdout).strip()[-300:]}")
        return True

    def start(self, topology: str, nodes: list[str]) -> None:
        from ClusterShell.NodeSet import NodeSet

        daemon, scontrol = _which("slurmctld"), _which("scontrol")
        if daemon is None or scontrol is None:
            pytest.skip("slurmctld/scontrol not installed (Debian: apt-get install slurmctld slurm-client munge; "
                        ".ci/run installs them)")
        self.scontrol = scontrol
        auth = (f"AuthType=auth/munge\nAuthInfo=socket={self.munge_socket}\nCredType=cred/munge\n"
                if self._munge() else "AuthType=auth/none\nCredType=cred/none\n")
        ctl, slurmd = _free_ports(2)
        (self.dir / "state").mkdir()
        (self.dir / "topology.conf").write_text(topology)
        (self.dir / "slurm.conf").write_text(
            f"ClusterName=ncclctltest\nSlurmctldHost={socket.gethostname()}(127.0.0.1)\n"
            f"SlurmctldPort={ctl}\nSlurmdPort={slurmd}\n{auth}SlurmUser={getpass.getuser()}\n"
            f"StateSaveLocation={self.dir / 'state'}\nSlurmctldPidFile={self.dir / 'slurmctld.pid'}\n"
            f"SlurmctldLogFile={self.dir / 'slurmctld.log'}\nSlurmctldDebug=info\n"
            "TopologyPlugin=topology/tree\nSchedulerType=sched/builtin\nSelectType=select/linear\n"
            "ProctrackType=proctrack/linuxproc\nReturnToService=2\nMpiDefault=none\nMailProg=/bin/true\n"
            f"NodeName={NodeSet.fromlist(nodes)} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n"
            "PartitionName=all Nodes=ALL Default=YES\n")
        self.log = self.dir / "slurmctld.log"
        # -D: in the foreground (our child, stopped by pid); -i: ignore any saved state.
        self.procs.append(subprocess.Popen([daemon, "-D", "-i"], env=self.env, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.procs[-1].poll() is not None:
                pytest.skip(f"slurmctld exited ({self.procs[-1].returncode}): {self._log_tail()}")
            if subprocess.run([scontrol, "ping"], env=self.env, capture_output=True, timeout=10).returncode == 0:
                return
            time.sleep(0.1)
        pytest.skip(f"slurmctld did not answer scontrol ping within 20 s: {self._log_tail()}")

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-600:] if self.log.exists() else "(no log)"

    def show_topology(self) -> dict[str, dict[str, str]]:
        r = subprocess.run([self.scontrol, "show", "topology"], env=self.env, capture_output=True, text=True,
                           timeout=10)
        assert r.returncode == 0, r.stderr
        out = {}
        for line in r.stdout.splitlines():
            fields = dict(f.split("=", 1) for f in line.split())
            out[fields.pop("SwitchName")] = fields
        return out

    def errors(self) -> list[str]:
        """The daemon's errors about the topology or its nodes (its start on an empty state folder logs others:
        missing state files, no PMIx library)."""
        return [x for x in self.log.read_text(errors="replace").splitlines()
                if "error:" in x and re.search(r"switch|topolog|node", x, re.I) and "state file" not in x]

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
        if self.munge_socket is not None:
            pid = self.munge_socket.parent / "munged.pid"
            if pid.exists():
                try:
                    os.kill(int(pid.read_text().strip()), signal.SIGTERM)
                except (ValueError, ProcessLookupError):
                    pass


@pytest.fixture
def slurmctld(tmp_path):
    # munged wants a short socket path (sun_path: 108 bytes) and a folder only its owner can write
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="ncclctl-slurm-"))
    ctl = Slurmctld(folder)
    try:
        yield ctl
    finally:
        ctl.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _check_loaded(ctl: Slurmctld, conf: str) -> dict[str, dict[str, str]]:
    """What slurmctld shows equals what the file says: every switch, its child switches, its nodes (a switch
    above others lists all the nodes below it); the topology plugin logged no error."""
    written = _written(conf)
    shown = ctl.show_topology()
    assert sorted(shown) == sorted(written)

    def nodes_below(name: str) -> set[str]:
        sw = written[name]
        return set(_expand(sw.get("Nodes", ""))).union(*(nodes_below(c) for c in _expand(sw.get("Switches", ""))))

    for name, sw in written.items():
        assert _expand(shown[name].get("Switches", "")) == _expand(sw.get("Switches", "")), name
        assert set(_expand(shown[name].get("Nodes", ""))) == nodes_below(name), name
    assert ctl.errors() == []
    return shown


def _order(tmp_path: Path, nodes: int, **kw) -> tuple[str, list[str]]:
    fabric = tmp_path / "fabric.txt"
    fabric.write_text(synth(SynthSpec(nodes=nodes, **kw)).text)
    r = run_cli("fabric", "order", str(fabric), "--format", "slurm")
    assert r.returncode == 0, r.stderr
    hosts = [line.split()[0] for line in run_cli("fabric", "order", str(fabric), "-f", "hostfile").stdout.splitlines()]
    return r.stdout, hosts


def test_slurmctld_loads_the_tree_of_an_interleaved_fabric(slurmctld, tmp_path):
    """128 hosts in 4 leaf groups, host numbers interleaved: 4 leaf switches and a spine above them."""
    conf, hosts = _order(tmp_path, 128, host_order="interleaved")
    slurmctld.start(conf, hosts)
    shown = _check_loaded(slurmctld, conf)
    assert shown["spine"]["Level"] == "1" and {shown[g]["Level"] for g in ("g000", "g001", "g002", "g003")} == {"0"}
    assert len(_expand(shown["spine"]["Nodes"])) == 128


def test_slurmctld_loads_the_tree_of_a_captured_fabric(slurmctld, tmp_path):
    """A captured ibnetdiscover fixture (ib-small): the file as written, loaded as written."""
    fabric = REPO / "fixtures" / "fabric" / "ib-small"
    src = fabric / "ibnetdiscover.txt"
    r = run_cli("fabric", "order", str(src), "--format", "slurm")
    assert r.returncode == 0, r.stderr
    hosts = sorted({h for sw in _written(r.stdout).values() for h in _expand(sw.get("Nodes", ""))})
    assert hosts
    slurmctld.start(r.stdout, hosts)
    _check_loaded(slurmctld, r.stdout)


def test_the_check_fails_a_file_slurm_reads_differently(slurmctld, tmp_path):
    """The comparison is not vacuous: a file naming a node slurm.conf lacks is loaded without it (and logged),
    and the check says so."""
    conf, hosts = _order(tmp_path, 64, host_order="interleaved")
    slurmctld.start(conf, hosts[:-1])  # the last host of the order is not a Slurm node
    with pytest.raises(AssertionError):
        _check_loaded(slurmctld, conf)
    assert any("Invalid hostnames in switch configuration: " + hosts[-1] in e for e in slurmctld.errors())
