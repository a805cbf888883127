"""Degraded sources give partial results with explicit ``unavailable`` markers and exit 0.

Covered here (tests/probe/test_degradation.py covers recorded-fixture variants): the NVML library missing
(pynvml's loader made to fail, and pynvml not installed), NVML errors per call (NotSupported, NoPermission,
GpuIsLost, Unknown) through the *live* NVML code against a fake pynvml that replays a recorded host,
unreadable sysfs files (simulated through the HostRoot seam when running as root, chmod 000 otherwise), IB
tools that are not installed, and commands that hang or flood their output (the live runner's timeout kills
the whole process group). Live runs go through the CLI where the machine allows it (``ncclctl probe`` on this
host with a controlled PATH); fixture-based runs wrap the live seams so that ``probe`` accepts them under a
root.
"""

from __future__ import annotations

import copy
import ctypes
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import HOSTS, REPO
from ncclctl.probe import probe
from ncclctl.probe.commands import LiveRunner
from ncclctl.probe.nvml import LiveNvml
from ncclctl.render import dumps

pytestmark = pytest.mark.skipif(not (HOSTS / "dgx-h100").is_dir(), reason="dgx-h100 fixture missing")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    dest = tmp_path / "host"
    shutil.copytree(HOSTS / "dgx-h100", dest, symlinks=True)
    return dest


class Live:
    """Wraps a live seam so that ``probe(root, ...)`` (which refuses LiveRunner/LiveNvml under a root, to
    avoid mixing hosts) runs the real live code against a fixture's sysfs."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def collect(self) -> dict:
        return self.inner.collect()  # type: ignore[attr-defined]

    def run(self, argv: tuple[str, ...]):
        return self.inner.run(argv)  # type: ignore[attr-defined]


def marks(node) -> set[tuple[str, str, str | None]]:
    return {(u.source, u.reason, u.detail) for u in node.unavailable}


def cli(*args: str, env: dict | None = None, pre: str = "", timeout: float = 60) -> subprocess.CompletedProcess:
    """``ncclctl ARGS`` through ``cli.main``, after running ``pre`` (Python) in the same interpreter."""
    code = f"import sys\n{pre}\nfrom ncclctl.cli import main\nmain(sys.argv[1:])\n"
    full = {k: v for k, v in os.environ.items() if k != "NCCLCTL_DEBUG"}
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO, env=full,
                          timeout=timeout)


# ------------------------------------------------------------------------------------------------ NVML


NO_LIBRARY = """
import pynvml
def _no_library(*a, **k):
    raise OSError("libnvidia-ml.so.1: cannot open shared object file: No such file or directory")
pynvml.CDLL = _no_library
pynvml.nvmlLib = None
"""


def test_no_nvml_library_live_cli() -> None:
    """``ncclctl probe`` on this host with libnvidia-ml not loadable: exit 0, NVML marked unavailable."""
    proc = cli("probe", "--format", "json", pre=NO_LIBRARY)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert {"source": "nvml", "reason": "LibraryNotFound", "detail": None} in doc["unavailable"]
    assert all(g["source"] == "pci" for g in doc["gpus"])  # whatever GPUs the PCI bus shows


def test_pynvml_not_installed_live_cli() -> None:
    proc = cli("probe", "--format", "json", pre="sys.modules['pynvml'] = None")
    assert proc.returncode == 0, proc.stderr
    assert {"source": "nvml", "reason": "ModuleNotFound", "detail": None} in json.loads(proc.stdout)["unavailable"]


def test_no_nvml_library_gpus_from_pci(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pynvml

    def no_library(*args: object, **kwargs: object) -> None:
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    monkeypatch.setattr(pynvml, "CDLL", no_library)
    monkeypatch.setattr(pynvml, "nvmlLib", None)
    node = probe(str(tree), nvml=Live(LiveNvml()))
    assert ("nvml", "LibraryNotFound", None) in marks(node)
    assert len(node.gpus) == 8 and all(g.source == "pci" and g.sm is None and not g.nvlinks for g in node.gpus)
    assert [n.name for n in node.nics] == [n.name for n in probe(str(HOSTS / "dgx-h100")).nics]  # from sysfs
    assert '"reason": "LibraryNotFound"' in dumps(node.to_dict())


class FakePynvml(types.ModuleType):
    """Enough of pynvml to replay a recorded ``nvml.json`` through :class:`LiveNvml`; an ``{"error": X}`` in
    the document makes the matching call raise ``NVMLError_X``, as the real library does."""

    class NVMLError(Exception):
        value = 999

    class c_nvmlGpuFabricInfo_t(ctypes.Structure):  # noqa: N801 - pynvml's name
        _fields_ = [("clusterUuid", ctypes.c_char * 16), ("status", ctypes.c_uint), ("cliqueId", ctypes.c_uint),
                    ("state", ctypes.c_uint8)]

    def __init__(self, doc: dict) -> None:
        super().__init__("pynvml")
        self.doc = doc
        self.devices = {d["index"]: d for d in doc["devices"]}
        self._errors: dict[str, type] = {}

    def _error(self, name: str) -> type:
        if name not in self._errors:
            self._errors[name] = type(f"NVMLError_{name}", (self.NVMLError,), {})
        return self._errors[name]

    def _v(self, value):
        if isinstance(value, dict) and set(value) == {"error"}:
            raise self._error(value["error"])()
        return value

    def __getattr__(self, name: str):
        raise AttributeError(name)  # an API this fake lacks is absent, as in an old pynvml

    # -- system
    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlSystemGetDriverVersion(self):
        return self._v(self.doc["driver_version"])

    def nvmlSystemGetNVMLVersion(self):
        return self._v(self.doc["nvml_version"])

    def nvmlSystemGetCudaDriverVersion(self):
        return self._v(self.doc["cuda_driver_version"])

    def nvmlDeviceGetCount(self):
        return self._v(self.doc.get("device_count", len(self.devices)))

    def nvmlDeviceGetHandleByIndex(self, i):
        dev = self.devices[i]
        if "error" in dev:
            raise self._error(dev["error"])()
        return i

    # -- device
    def _f(self, h, key):
        return self._v(self.devices[h][key])

    def nvmlDeviceGetUUID(self, h):
        return self._f(h, "uuid")

    def nvmlDeviceGetName(self, h):
        return self._f(h, "name")

    def nvmlDeviceGetSerial(self, h):
        return self._f(h, "serial")

    def nvmlDeviceGetPciInfo(self, h):
        p = self._f(h, "pci")
        return types.SimpleNamespace(busId=p["busId"].encode(), busIdLegacy=p["busIdLegacy"].encode(),
                                     pciDeviceId=int(p["pciDeviceId"], 16), pciSubSystemId=int(p["pciSubSystemId"], 16))

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return tuple(self._f(h, "cuda_compute_capability"))

    def nvmlDeviceGetPersistenceMode(self, h):
        return self._f(h, "persistence_mode")

    def nvmlDeviceGetMigMode(self, h):
        return tuple(self._f(h, "mig_mode"))

    def nvmlDeviceGetNumaNodeId(self, h):
        return self._f(h, "numa_node_id")

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        return self._v(self.devices[h]["pcie"]["max_gen"])

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        return self._v(self.devices[h]["pcie"]["max_width"])

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return self._v(self.devices[h]["pcie"]["curr_gen"])

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return self._v(self.devices[h]["pcie"]["curr_width"])

    def _link(self, h, link):
        links = self.devices[h]["nvlinks"]
        if link >= len(links):
            raise self._error("NotSupported")()
        return links[link]

    def nvmlDeviceGetNvLinkState(self, h, link):
        return self._v(self._link(h, link)["state"])

    def nvmlDeviceGetNvLinkCapability(self, h, link, cap):
        return self._v(self._link(h, link)["p2p_supported"])

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h, link):
        return types.SimpleNamespace(busId=self._v(self._link(h, link)["remote_bus_id"]).encode())

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h, link):
        return self._v(self._link(h, link)["remote_device_type"])

    def nvmlDeviceGetNvLinkVersion(self, h, link):
        return self._v(self._link(h, link)["version"])

    def nvmlDeviceGetFieldValues(self, h, ids):
        c2c = self._f(h, "c2c")
        return [types.SimpleNamespace(nvmlReturn=0, value=types.SimpleNamespace(uiVal=v))
                for v in (c2c["count"], c2c.get("max_bw") or 0)]

    def nvmlDeviceGetGpuFabricInfo(self, h, ref):
        fabric = self._f(h, "fabric")
        ref._obj.state, ref._obj.status = fabric["state"], fabric["status"]


def _recorded(tree: Path) -> dict:
    return json.loads((tree / "nvml.json").read_text())


def test_fake_pynvml_replays_the_recorded_host(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sanity for the fake: the live NVML code against it collects exactly the recorded document."""
    doc = _recorded(tree)
    monkeypatch.setitem(sys.modules, "pynvml", FakePynvml(copy.deepcopy(doc)))
    assert LiveNvml().collect() == doc
    assert probe(str(tree), nvml=Live(LiveNvml())) == probe(str(tree))


def test_nvml_errors_per_call_live(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _recorded(tree)
    doc["driver_version"] = {"error": "NoPermission"}
    d0 = doc["devices"][0]
    d0["persistence_mode"] = {"error": "NoPermission"}
    d0["cuda_compute_capability"] = {"error": "NotSupported"}
    d0["serial"] = {"error": "NoPermission"}
    d0["pcie"]["curr_width"] = {"error": "GpuIsLost"}
    doc["devices"][1] = {"index": 1, "error": "GpuIsLost"}
    doc["devices"][2]["nvlinks"][3]["state"] = {"error": "Unknown"}
    doc["devices"][3]["nvlinks"][0]["remote_bus_id"] = {"error": "NoPermission"}
    monkeypatch.setitem(sys.modules, "pynvml", FakePynvml(doc))
    node = probe(str(tree), nvml=Live(LiveNvml()))
    full = probe(str(HOSTS / "dgx-h100"))
    g0 = node.gpu(0)
    assert g0.persistence_mode is None and g0.sm is None and g0.serial is None and g0.pcie_curr_width is None
    assert g0.name == full.gpu(0).name and len(g0.nvlinks) == 18  # the rest of GPU 0 is intact
    assert node.gpu(1) is None and [g.index for g in node.gpus] == [0, 2, 3, 4, 5, 6, 7]
    assert len(node.gpu(2).nvlinks) == 17
    assert node.facts.driver_version is None
    expected = {
        ("nvml", "NoPermission", "driver version"),
        ("nvml", "NoPermission", "GPU 0 persistence_mode"),
        ("nvml", "NotSupported", "GPU 0 cuda_compute_capability"),
        ("nvml", "NoPermission", "GPU 0 serial"),
        ("nvml", "GpuIsLost", "GPU 0 pcie curr_width"),
        ("nvml", "GpuIsLost", "GPU 1"),
        ("nvml", "Unknown", "GPU 2 NVLink 3 state"),
        ("nvml", "NoPermission", "GPU 3 NVLink 0 remote_bus_id"),
    }
    assert expected <= marks(node), expected - marks(node)
    # Absent optional features (no C2C on H100, no NUMA id from this driver) are not "unavailable".
    assert not any("c2c" in (d or "") or "numa_node_id" in (d or "") for _, _, d in marks(node))
    assert '"detail": "GPU 0 persistence_mode"' in dumps(node.to_dict())


def test_nvml_errors_per_call_recorded_cli(tree: Path) -> None:
    """The same errors recorded in nvml.json, through ``ncclctl probe --root``: exit 0 and the markers."""
    doc = _recorded(tree)
    doc["devices"][0]["persistence_mode"] = {"error": "NoPermission"}
    doc["devices"][1] = {"index": 1, "error": "GpuIsLost"}
    doc["devices"][4]["uuid"] = {"error": "NotSupported"}
    (tree / "nvml.json").write_text(json.dumps(doc))
    proc = cli("probe", "--root", str(tree), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    got = {(u["source"], u["reason"], u["detail"]) for u in out["unavailable"]}
    assert {("nvml", "NoPermission", "GPU 0 persistence_mode"), ("nvml", "GpuIsLost", "GPU 1"),
            ("nvml", "NotSupported", "GPU 4 uuid")} <= got
    assert [g["index"] for g in out["gpus"]] == [0, 2, 3, 4, 5, 6, 7]
    text = cli("probe", "--root", str(tree))
    assert text.returncode == 0 and "GpuIsLost" in text.stdout


def test_nvml_device_count_failure_falls_back_to_pci(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _recorded(tree)
    doc["device_count"] = {"error": "Unknown"}
    monkeypatch.setitem(sys.modules, "pynvml", FakePynvml(doc))
    node = probe(str(tree), nvml=Live(LiveNvml()))
    assert ("nvml", "Unknown", "device count") in marks(node)
    assert len(node.gpus) == 8 and all(g.source == "pci" for g in node.gpus)


# ------------------------------------------------------------------------------------------------ sysfs


DENY = ("/sys/class/infiniband/mlx5_0/ports/1/rate", "/sys/bus/pci/devices/0000:1b:00.0/current_link_speed",
        "/sys/class/net/ibp24s0/mtu")


def _deny_code(root: Path) -> str:
    """Python run before the CLI: make reads of DENY under ``root`` fail with EACCES at the input door's seam
    (what an unprivileged read of a root-only file gets; root itself cannot be denied by chmod)."""
    denied = [str(root) + p for p in DENY]
    return f"""
import errno, os
from ncclctl import inputs
_real = inputs._read
_denied = {denied!r}
def _read(path, *args):
    if os.path.realpath(path) in {{os.path.realpath(p) for p in _denied}}:
        raise PermissionError(errno.EACCES, "Permission denied", path)
    return _real(path, *args)
inputs._read = _read
"""


def _check_denied(doc: dict) -> None:
    sysfs = [u for u in doc["unavailable"] if u["source"] == "sysfs" and u["reason"] == "permission denied"]
    assert len(sysfs) == 1, doc["unavailable"]
    for p in ("/sys/class/infiniband/mlx5_0/ports/1/rate", "0000:1b:00.0/current_link_speed", "ibp24s0/mtu"):
        assert p in sysfs[0]["detail"], sysfs[0]["detail"]  # (the PCI path as resolved by the probe)
    nic = next(n for n in doc["nics"] if n["name"] == "mlx5_0")
    assert nic["ports"][0]["rate_gbps"] is None and nic["ports"][0]["state"] == "ACTIVE"  # only the rate is lost
    gpu0 = next(d for d in doc["pci"] if d["bdf"] == "0000:1b:00.0")
    assert gpu0["current_link_speed"] is None and gpu0["current_link_width"] == 16
    assert next(n for n in doc["netdevs"] if n["name"] == "ibp24s0")["mtu"] is None


def test_unreadable_sysfs_files_cli(tree: Path) -> None:
    proc = cli("probe", "--root", str(tree), "--format", "json", pre=_deny_code(tree))
    assert proc.returncode == 0, proc.stderr
    _check_denied(json.loads(proc.stdout))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode (the seam test covers root)")
def test_unreadable_sysfs_files_chmod(tree: Path) -> None:
    for p in DENY:
        real = Path(os.path.realpath(str(tree) + p))
        real.chmod(0)
    proc = cli("probe", "--root", str(tree), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    _check_denied(json.loads(proc.stdout))


# ------------------------------------------------------------------------------------------------ commands


def _without_rdma_sysfs(tree: Path) -> None:
    """A container without /sys/class/infiniband: the probe falls back to running ``ibstat``."""
    shutil.rmtree(tree / "sys/class/infiniband")


def _bin(tmp_path: Path, scripts: dict[str, str]) -> str:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, body in scripts.items():
        p = folder / name
        p.write_text("#!/bin/sh\n" + body)
        p.chmod(0o755)
    return str(folder)


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for init to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_missing_ib_tools(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _without_rdma_sysfs(tree)
    monkeypatch.setenv("PATH", _bin(tmp_path, {}))
    node = probe(str(tree), runner=Live(LiveRunner(timeout=5)))
    assert ("ibstat", "not installed", None) in marks(node)
    assert ("rdma", "no /sys/class/infiniband and no ibstat", None) in marks(node)
    assert node.nics == () and len(node.gpus) == 8


def test_hanging_ib_tool_is_killed_with_its_children(tree: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _without_rdma_sysfs(tree)
    pidfile = tmp_path / "child.pid"
    monkeypatch.setenv("PATH", _bin(tmp_path, {"ibstat": f"/bin/sleep 60 &\necho $! > {pidfile}\nwait\n"}))
    # counted, not timed: the tool is marked timed out and its child (it would sleep 60 s) is gone on return
    node = probe(str(tree), runner=Live(LiveRunner(timeout=1)))
    assert ("ibstat", "timed out after 1s", None) in marks(node)
    assert _dead(int(pidfile.read_text())), "the hung tool's child outlived the timeout"


def test_missing_tool_live_cli(tmp_path: Path) -> None:
    """``ncclctl probe`` on this host with no tools on PATH: exit 0, the command marked not installed."""
    proc = cli("probe", "--format", "json", env={"PATH": _bin(tmp_path, {})})
    assert proc.returncode == 0, proc.stderr
    assert {"source": "ip -j -d link show", "reason": "not installed", "detail": None} in json.loads(proc.stdout)["unavailable"]


def test_hanging_tool_live_cli(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    path = _bin(tmp_path, {"ip": f"/bin/sleep 60 &\necho $! > {pidfile}\nwait\n"})
    # the CLI's time-out is a hang guard; the tool's child (it would sleep 60 s) is gone when probe returns
    proc = cli("probe", "--format", "json", env={"PATH": path, "NCCLCTL_COMMAND_TIMEOUT": "1"})
    assert proc.returncode == 0, proc.stderr
    assert {"source": "ip -j -d link show", "reason": "timed out after 1s", "detail": None} in json.loads(proc.stdout)["unavailable"]
    assert _dead(int(pidfile.read_text()))


def test_flooding_tool_live_cli(tmp_path: Path) -> None:
    path = _bin(tmp_path, {"ip": "exec /usr/bin/yes\n"})
    proc = cli("probe", "--format", "json", env={"PATH": path, "NCCLCTL_COMMAND_TIMEOUT": "20"})
    assert proc.returncode == 0, proc.stderr
    assert {"source": "ip -j -d link show", "reason": "output over 16 MiB", "detail": None} in json.loads(proc.stdout)["unavailable"]


def test_bad_command_timeout_setting_is_a_usage_error() -> None:
    proc = cli("probe", env={"NCCLCTL_COMMAND_TIMEOUT": "soon"})
    assert proc.returncode == 2
    assert "NCCLCTL_COMMAND_TIMEOUT='soon'" in proc.stderr and "fix:" in proc.stderr


# ------------------------------------------------------------------------------------------------ lldpad


LLDPTOOL_WILLING = """case "$*" in
  *" -n "*) echo "Agent instance for device not found" ;;
  *) printf 'IEEE 8021QAZ PFC TLV\\n\\t Willing: yes\\n\\t MACsec Bypass Capable: no\\n\\t PFC capable traffic classes: 8\\n\\t PFC enabled: 3 \\n' ;;
esac
"""


@pytest.mark.parametrize("tool", ["missing", "lldpad-down", "willing"])
def test_lldptool_is_optional(tool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lldpad is rarely run: lldptool missing or failing (daemon down) leaves no marker and no DCBX state; a
    running lldpad gives the port's TLV, and a peer query answered with an error text means 'no switch TLV'."""
    root = tmp_path / "roce"
    shutil.copytree(HOSTS / "hgx-h100-roce", root, symlinks=True)
    tools = {"missing": {},
             "lldpad-down": {"lldptool": "echo 'Failed to connect to lldpad - clif_open: Connection refused' >&2\n"
                                         "exit 1\n"},
             "willing": {"lldptool": LLDPTOOL_WILLING}}[tool]
    monkeypatch.setenv("PATH", _bin(tmp_path, tools))
    node = probe(str(root), runner=Live(LiveRunner(timeout=5)))
    assert not any(src.startswith("lldptool") for src, _, _ in marks(node)), marks(node)
    dcbx = node.netdev("ens1np0").dcbx
    if tool == "willing":
        assert dcbx is not None and dcbx.willing and dcbx.local_pfc == (3,) and dcbx.peer_pfc is None
    else:
        assert dcbx is None
