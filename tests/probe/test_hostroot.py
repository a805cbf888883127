"""HostRoot: symlink resolution confined to the root, loops, recording for snapshots."""

import os

import pytest

from ncclctl.errors import InputError
from ncclctl.probe.hostroot import HostRoot, Recorder


@pytest.fixture
def root(tmp_path):
    d = str(tmp_path)
    dev = d + "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
    os.makedirs(dev + "/net/eth0")
    os.makedirs(d + "/sys/class/net")
    os.symlink("../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/net/eth0", d + "/sys/class/net/eth0")
    os.symlink("../../../0000:01:00.0", dev + "/net/eth0/device")
    with open(dev + "/class", "w") as fh:
        fh.write("0x020000\n")
    os.makedirs(d + "/run/x")
    os.makedirs(d + "/var")
    os.symlink("/run", d + "/var/run")
    os.symlink("loop2", d + "/loop1")
    os.symlink("loop1", d + "/loop2")
    return d


def test_relative_links_resolve_inside(root):
    h = HostRoot(root)
    assert h.realpath("/sys/class/net/eth0/device") == "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
    assert h.read_value("/sys/class/net/eth0/device/class") == "0x020000"


def test_absolute_links_and_dotdot_stay_in_root(root):
    h = HostRoot(root)
    assert h.realpath("/var/run/x") == "/run/x"
    assert h.realpath("/../../etc/passwd") == "/etc/passwd"
    assert h.read_text("/../../../etc/hostname") is None  # never the real /etc


def test_symlink_loop_is_an_input_error(root):
    with pytest.raises(InputError, match="too many levels"):
        HostRoot(root).realpath("/loop1/x")


def test_recorder_sees_links_files_and_listings(root):
    rec = Recorder()
    h = HostRoot(root, recorder=rec)
    assert h.listdir("/sys/class/net") == ["eth0"]
    h.read_value("/sys/class/net/eth0/device/class")
    assert rec.links["/sys/class/net/eth0"].startswith("../../devices/")
    assert rec.links["/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/net/eth0/device"] == "../../../0000:01:00.0"
    assert rec.files["/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/class"] == b"0x020000\n"
    assert rec.entries["/sys/class/net/eth0"][0] == "link"


def test_root_must_exist(tmp_path):
    with pytest.raises(InputError, match="not a directory"):
        HostRoot(str(tmp_path / "missing"))
