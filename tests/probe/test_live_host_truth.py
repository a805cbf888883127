"""The test machine is a real Linux host: what ncclctl reads live must be what the operating system says itself.

Every comparison reads the truth with plain Python (``open().read()`` loops to end of file, ``os.cpu_count``,
``os.listdir``), never through ncclctl's readers. A reader that stops at a short read (procfs hands out one page per
``read``: issue 25 found /proc/cpuinfo cut after 2 of 16 processors and /proc/modules after its first lines on a real
GPU node) fails here on any host whose files are longer than a page.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import run_cli
from ncclctl import inputs


def _plain(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _page_or_more_procfs() -> list[str]:
    """procfs files on this host that need more than one read (longer than a page), stable between two reads."""
    out = []
    for path in ("/proc/cpuinfo", "/proc/modules", "/proc/self/mountinfo", "/proc/zoneinfo", "/proc/self/smaps",
                 "/proc/interrupts", "/proc/vmstat", "/proc/devices", "/proc/filesystems"):
        try:
            first = _plain(path)
        except OSError:
            continue
        if len(first) > 4096:
            out.append(path)
    return out


def test_input_door_reads_procfs_to_the_end():
    long_files = _page_or_more_procfs()
    assert long_files, "no procfs file longer than a page on this host: the short-read test would prove nothing"
    for path in long_files:
        got = inputs.read_bytes(path, "host")
        if path in ("/proc/self/smaps", "/proc/self/mountinfo", "/proc/interrupts", "/proc/vmstat", "/proc/zoneinfo"):
            # Counters and this process's own mappings move between two reads: compare the line count.
            assert abs(got.count(b"\n") - _plain(path).count(b"\n")) <= 8, path
            assert len(got) > 4096, f"{path}: read stopped after the first page ({len(got)} bytes)"
        else:
            assert got == _plain(path), path


def test_input_door_survives_short_reads_anywhere(monkeypatch, tmp_path):
    """Random short reads (as procfs, FUSE and pipes give them) make no difference to what is read."""
    import random

    data = b"".join(b"processor\t: %d\nmodel name\t: X\n\n" % i for i in range(5000))
    path = tmp_path / "cpuinfo"
    path.write_bytes(data)
    real_read = os.read
    rng = random.Random(25)

    def short_read(fd, n):
        return real_read(fd, max(1, min(n, rng.choice((1, 7, 100, 4096, 4095, 65535)))))

    monkeypatch.setattr(inputs.os, "read", short_read)
    for _ in range(20):
        assert inputs.read_bytes(str(path), "host") == data


def test_live_probe_counts_what_the_os_counts():
    res = run_cli("probe", "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    cpuinfo = _plain("/proc/cpuinfo").decode()
    processors = sum(1 for line in cpuinfo.splitlines() if line.split(":")[0].strip() == "processor")
    assert doc["cpu"]["logical_cpus"] == processors == os.cpu_count()
    assert sorted(nd["name"] for nd in doc["netdevs"]) == sorted(os.listdir("/sys/class/net"))
    try:
        modules = sorted(line.split()[0] for line in _plain("/proc/modules").decode().splitlines() if line.strip())
    except FileNotFoundError:  # a kernel without loadable modules
        modules = []
    assert doc["facts"]["modules"] == modules
    # Interface indexes and running state as the kernel reports them.
    for nd in doc["netdevs"]:
        base = f"/sys/class/net/{nd['name']}"
        assert nd["ifindex"] == int(_plain(f"{base}/ifindex"))
        assert nd["flags"] == int(_plain(f"{base}/flags"), 16)


def test_live_facts_count_what_the_os_counts():
    res = run_cli("facts", "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["cpu"]["logical_cpus"] == os.cpu_count()
    assert sorted(nd["name"] for nd in doc["netdevs"]) == sorted(os.listdir("/sys/class/net"))


def test_live_addresses_match_the_kernel():
    """An interface has an IPv4 address where the kernel routes a subnet on it, an IPv6 one where if_inet6 says so
    (cross-checked with socket.if_nameindex for the names and indexes)."""
    import socket

    res = run_cli("probe", "--format", "json")
    doc = json.loads(res.stdout)
    by_index = dict(socket.if_nameindex())
    inet6 = {line.split()[5] for line in _plain("/proc/net/if_inet6").decode().splitlines()
             if line.strip() and int(line.split()[0], 16) != 1} if os.path.exists("/proc/net/if_inet6") else set()
    for nd in doc["netdevs"]:
        assert by_index.get(nd["ifindex"]) == nd["name"]
        assert ("inet6" in nd["inet"]) == (nd["name"] in inet6)


@pytest.mark.parametrize("redact", [False, True])
def test_live_snapshot_round_trip_is_the_same_model(tmp_path, redact):
    out = tmp_path / "snap"
    args = ["snapshot", "-o", str(out)] + (["--redact"] if redact else [])
    snap = run_cli(*args)
    assert snap.returncode == 0, snap.stderr
    live = json.loads(run_cli("probe", "--format", "json").stdout)
    again = json.loads(run_cli("probe", "--root", str(out), "--format", "json").stdout)
    assert again["cpu"]["logical_cpus"] == live["cpu"]["logical_cpus"] == os.cpu_count()
    assert again["facts"]["modules"] == live["facts"]["modules"]
    assert [(n["name"], n["inet"], n["ifindex"]) for n in again["netdevs"]] == \
        [(n["name"], n["inet"], n["ifindex"]) for n in live["netdevs"]]
    # The snapshot holds whole files, not their first page.
    assert (out / "proc" / "cpuinfo").read_bytes() == _plain("/proc/cpuinfo") or redact
