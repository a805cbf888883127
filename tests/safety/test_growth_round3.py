"""Hostile and huge inputs, round three, item 7 (issue 29): growth that is not linear.

Each input class is tried through the command line at a size that runs in seconds, with the same answer as a
small input scaled; and through the API, where the work or memory per unit of input is counted (not timed: the
timings at three sizes are in bench/RESULTS.md, measured with bench/growth.py).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, held_after, run_cli

sys.path.insert(0, str(REPO / "bench"))
from growth import fabric_with_cr, perf_rows, rank_lines, replicate  # noqa: E402

HOSTS = REPO / "fixtures" / "hosts"


def run(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return run_cli(*args, env=env, timeout=timeout)


def _model(tmp_path: Path, host: str) -> dict:
    p = run("probe", "--root", str(HOSTS / host), "--format", "json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


# 1. lint: linear in GPUs -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["pcie-server", "dgx-h100"])
def test_lint_of_many_gpus_gives_the_findings_of_one_host_times_the_copies(tmp_path: Path, host: str) -> None:
    """2,048 GPUs took 22-45 s (every GPU pair's NVLinks counted, every GPU against every NIC for rails). A host
    replicated 32 times (PCI domains 0-31: 256-384 GPUs) gets each PCIe finding once per copy, in the copies'
    order; the whole lint runs in seconds."""
    one = _model(tmp_path, host)
    many = replicate(one, 32)
    f1, fk = tmp_path / "one.json", tmp_path / "many.json"
    f1.write_text(json.dumps(one))
    fk.write_text(json.dumps(many))
    a = run("lint", "--model", str(f1), "-f", "json", "-r", "PCI001,PCI002,PCI003,GDR001")
    b = run("lint", "--model", str(fk), "-f", "json", "-r", "PCI001,PCI002,PCI003,GDR001")
    assert "Traceback" not in a.stderr + b.stderr, b.stderr[-2000:]
    assert a.returncode == b.returncode, (a.stdout[-800:], b.stdout[-800:])
    fa, fb = json.loads(a.stdout)["findings"], json.loads(b.stdout)["findings"]
    dev = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:")  # a device's finding (once per copy); the rest is host-wide
    assert len([x for x in fb if dev.match(x["subject"])]) == 32 * len([x for x in fa if dev.match(x["subject"])])
    assert len([x for x in fb if not dev.match(x["subject"])]) == len([x for x in fa if not dev.match(x["subject"])])
    assert sorted({x["rule"] for x in fa}) == sorted({x["rule"] for x in fb})
    rails1, railsk = run("rails", "--model", str(f1), "-f", "json"), run("rails", "--model", str(fk), "-f", "json")
    assert rails1.returncode == railsk.returncode == 0, railsk.stderr
    assert len(json.loads(railsk.stdout)["rails"]) == 32 * len(json.loads(rails1.stdout)["rails"])


def _path_calls(monkeypatch, node) -> int:
    """PCIe path computations of the P2P pairs and the rail plan of ``node``."""
    import ncclctl.plan.paths as paths
    from ncclctl.lint.rules_pcie import p2p_pairs
    from ncclctl.plan.rails import plan_rails

    calls = [0]
    real = paths.pcie_path_type

    def counted(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(paths, "pcie_path_type", counted)
    import ncclctl.plan.rails as rails_mod
    monkeypatch.setattr(rails_mod, "pcie_path_type", counted)
    p2p_pairs(node)
    plan_rails(node)
    return calls[0]


@pytest.mark.parametrize("host", ["dgx-h100", "pcie-server", "cloud-vm-flat"])
def test_path_computations_grow_linearly_with_the_gpus(tmp_path: Path, monkeypatch, host: str) -> None:
    """The P2P pairs and the rails compare only devices that can be close: 4x the GPUs, at most ~4x the paths
    (before: 16x, every pair). Not the Grace trays: replicated, their copies share NUMA nodes 0 and 1, and pairs
    of a NUMA node are what NCCL's P2C/NODE levels admit (compared, as they must be)."""
    from ncclctl.model import Node

    one = _model(tmp_path, host)
    small = _path_calls(monkeypatch, Node.from_dict(replicate(one, 4)))
    big = _path_calls(monkeypatch, Node.from_dict(replicate(one, 16)))
    assert big <= 4.5 * max(small, 1), (small, big)


# 2. log show / log check: small per rank line --------------------------------------------------------------------

def test_log_of_many_processes_reads_in_little_memory_per_line(tmp_path: Path) -> None:
    """One 'Init START' line per process (2 M of them were killed at 6.2 GB): ~5.8 KB held per line before
    (a __dict__ per process and rank, a dozen empty containers each); now under 2.5 KB."""
    from ncclctl.logs.parse import read_logs

    f = tmp_path / "ranks.log"
    rank_lines(f, 10_000)
    ls, held = held_after(read_logs, [str(f)])
    assert len(ls.procs) == 10_000
    assert held / 10_000 < 2500, held / 10_000


def test_log_show_and_check_of_many_processes_through_the_command_line(tmp_path: Path) -> None:
    f = tmp_path / "ranks.log"
    rank_lines(f, 5_000)
    show = run("log", "show", str(f), "-f", "json")
    check = run("log", "check", str(f), "-f", "json")
    assert "Traceback" not in show.stderr + check.stderr, show.stderr + check.stderr
    assert show.returncode == 0, show.stderr
    doc = json.loads(show.stdout)
    assert doc["processes"] == 5_000
    assert check.returncode in (0, 1), check.stderr


def test_shared_empty_containers_refuse_to_be_written() -> None:
    """A record's containers are shared empties until the parser takes its own (own()): writing one in place is a
    programming error that must not leak into every other record."""
    from ncclctl.logs.records import Ev, Proc, own

    a, b = Proc("h", 1, Ev("x", 1, "")), Proc("h", 2, Ev("x", 1, ""))
    with pytest.raises(TypeError):
        a.warns.append(("k", Ev("x", 1, "")))
    with pytest.raises(TypeError):
        a.settings["NCCL_X"] = ("1", Ev("x", 1, ""))
    own(a, "warns").append(("k", Ev("x", 1, "")))
    own(a, "devs").add(3)
    assert len(a.warns) == 1 and b.warns == [] and a.devs == {3} and b.devs == set()


# 3. perf check: rows held small ----------------------------------------------------------------------------------

def test_perf_rows_are_held_small(tmp_path: Path) -> None:
    """3 M result rows ran out of time at 2.9 GB: each row kept its line and two dict-backed sides. Now slotted
    rows, and only the lines a finding may quote."""
    from ncclctl.logs.perf import read_results

    f = tmp_path / "rows.txt"
    perf_rows(f, 20_000)
    (tests, _), held = held_after(read_results, [str(f)])
    assert len(tests) == 1 and tests[0].nrows == 20_000  # counted; the rows kept are bounded (test_perf_huge)
    assert held / 20_000 < 900, held / 20_000
    assert sum(1 for r in tests[0].rows if r.text) <= 2


def test_perf_check_of_many_rows_cites_the_largest_row(tmp_path: Path) -> None:
    f = tmp_path / "rows.txt"
    perf_rows(f, 3_000, wrong_at=1_500)
    p = run("perf", "check", str(f), "-f", "json")
    assert "Traceback" not in p.stderr, p.stderr
    doc = json.loads(p.stdout)
    assert doc["results"][0]["rows"] == 3_000
    wrong = [x for x in doc["findings"] if x["rule"] == "PERF002"]
    assert wrong and any(" 12008 " in e or "12008" in e for e in wrong[0]["evidence"]), wrong


# 4. A stray CR keeps a fabric on the fast path -------------------------------------------------------------------

@pytest.mark.parametrize("how", ["crlf", "one-cr-at-a-line-end"])
def test_a_fabric_with_cr_stays_on_the_fast_path(tmp_path: Path, how: str, monkeypatch) -> None:
    """One CR sent a 673 MB fabric to the general parser (144 s, 4.2 GB against 21-36 s). The fast reader now reads
    CRLF and a lone CR as line ends, as the general parser does: it returns the graph (not None), the same as
    for the file without CR, in the C reader and in the Python one."""
    from ncclctl.fabric.lean import read_graph

    plain, crs = tmp_path / "plain.txt", tmp_path / "cr.txt"
    fabric_with_cr(plain, crs, how)
    for pure in ("", "1"):
        monkeypatch.setenv("NCCLCTL_PURE_PYTHON", pure) if pure else monkeypatch.delenv("NCCLCTL_PURE_PYTHON",
                                                                                        raising=False)
        g = read_graph(str(crs))
        assert g is not None
    for cmd in ("rails", "load"):
        outs = [run("fabric", cmd, str(f), "-f", "json", env=env)
                for f in (plain, crs) for env in ({}, {"NCCLCTL_PURE_PYTHON": "1"})]
        assert all("Traceback" not in o.stderr for o in outs)
        docs = [(o.returncode, json.loads(o.stdout)) for o in outs]
        for _rc, d in docs:
            d.get("fabric", {}).pop("source", None)
        assert docs[0] == docs[1] == docs[2] == docs[3], [o.stdout[:300] for o in outs]


# 5. An inventory of many hosts sharing one model -----------------------------------------------------------------

def _shared_inventory(tmp_path: Path, hosts: int) -> Path:
    model = tmp_path / "model.json"
    p = run("probe", "--root", str(HOSTS / "dgx-h100"), "--format", "json")
    model.write_text(p.stdout)
    inv = tmp_path / "inventory.yaml"
    inv.write_text("hosts:\n" + "".join(f"  node{i:05d}: {{model: model.json}}\n" for i in range(hosts)))
    return inv


def test_a_model_shared_by_many_hosts_is_read_once(tmp_path: Path, monkeypatch) -> None:
    """10,000 inventory hosts naming one model took 120 s and 1.2 GB: the model was read, parsed and checked once
    per host. Now once per process; each host still gets its own name in its findings."""
    import ncclctl.inventory as inventory
    from ncclctl.lint.config import load_config
    from ncclctl.lint.fleet import lint_fleet, sources_from_inventory

    inv = _shared_inventory(tmp_path, 40)
    reads = [0]
    real = inventory.load_model

    def counted(path: str):
        reads[0] += 1
        return real(path)

    monkeypatch.setattr(inventory, "load_model", counted)
    monkeypatch.chdir(tmp_path)
    result = lint_fleet(sources_from_inventory(str(inv)), load_config(None), jobs=1)
    assert reads[0] == 1
    assert [h.host for h in result.hosts] == [f"node{i:05d}" for i in range(40)]
    assert all(not h.error for h in result.hosts)


def test_fleet_lint_of_hosts_sharing_a_model_through_the_command_line(tmp_path: Path) -> None:
    inv = _shared_inventory(tmp_path, 60)
    p = run("fleet", "lint", "--inventory", str(inv), "-f", "json")
    assert "Traceback" not in p.stderr, p.stderr
    doc = json.loads(p.stdout)
    assert len(doc["hosts"]) == 60
    subjects = {f.get("host") for h in doc["hosts"] for f in h.get("findings", [])} - {None}
    assert subjects <= {f"node{i:05d}" for i in range(60)}
