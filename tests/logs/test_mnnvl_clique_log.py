"""NCCL's MNNVL clique line ("MNNVL 1 cliqueId C cliqueSize S cliqueRank R nvlDomainSize D", mnnvl.cc; without
nvlDomainSize in older releases) read by the log parser and held by LOG031: ranks of one NVLink fabric in another clique
(D > S, no "Cross-clique P2P enabled"), and a clique id unlike the host's snapshot (--root / --inventory). Tmp
copies of the authored healthy GB200 log with the line added after each rank's MNNVL busId line."""

from __future__ import annotations

import json
import re

from conftest import HOSTS, REPO, run_cli
from ncclctl.logs.check import check
from ncclctl.logs.parse import read_logs

HEALTHY = REPO / "fixtures" / "logs" / "v2.30-gb200-mnnvl-healthy.log"
FLEET = str(REPO / "fixtures" / "fleet" / "gb200-two-racks" / "inventory.yaml")
_BUSID = re.compile(r"^(?P<prefix>.* NCCL INFO )MNNVL busId .*$")


def _log(tmp_path, clique=1, size=8, domain=8, cross=False, old=False):
    out, rank = [], 0
    for line in HEALTHY.read_text().splitlines():
        out.append(line)
        m = _BUSID.match(line)
        if m:
            tail = "" if old else f" nvlDomainSize {domain}"
            out.append(f"{m['prefix']}MNNVL 1 cliqueId {clique:x} cliqueSize {size} cliqueRank {rank % size}{tail}")
            if cross:
                out.append(f"{m['prefix']}Cross-clique P2P enabled: nvlDomainSize={domain} cliqueSize={size}")
            rank += 1
    path = tmp_path / "job.log"
    path.write_text("\n".join(out) + "\n")
    return str(path)


def _found(log, *extra):
    r = run_cli("log", "check", log, "--format", "json", *extra)
    assert "Traceback" not in r.stderr, r.stderr
    return [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "LOG031"]


def test_the_line_is_parsed_in_both_forms(tmp_path):
    (p, *_) = [p for p in read_logs([_log(tmp_path, clique=0x7ffe, size=4)]).procs.values() if p.mnnvl_clique]
    mnnvl, clique, size, _rank, domain, ev = p.mnnvl_clique[0]
    assert (mnnvl, clique, size, domain) == (1, 0x7FFE, 4, 8) and "cliqueSize 4" in ev.text
    (q, *_) = [p for p in read_logs([_log(tmp_path, old=True)]).procs.values() if p.mnnvl_clique]
    assert q.mnnvl_clique[0][4] is None  # older releases: no nvlDomainSize


def test_one_clique_passes(tmp_path):
    log = _log(tmp_path)
    assert _found(log) == []
    assert _found(log, "--root", str(HOSTS / "gb200-nvl72")) == []  # the tray registers clique 1
    assert _found(_log(tmp_path, old=True)) == []


def test_ranks_of_the_fabric_in_another_clique(tmp_path):
    (f,) = _found(_log(tmp_path, size=4, domain=8))
    assert f["severity"] == "warning"
    assert "NVLink domain holds 8 ranks but NCCL's clique 1 only 4 (on gb200-r01-t[04-05])" in f["message"]
    assert "4 rank(s) share the NVLink fabric" in f["message"] and "NCCL_MNNVL_CROSS_CLIQUE=1" in f["fix"]
    assert "nvlDomainSize 8" in json.dumps(f["evidence"])
    # the API gives the same finding
    (a,) = [x for x in check(read_logs([_log(tmp_path, size=4, domain=8)])) if x.rule == "LOG031"]
    assert a.message == f["message"]
    # NCCL said it uses NVLink across the cliques: nothing to report
    assert _found(_log(tmp_path, size=4, domain=8, cross=True)) == []


def test_clique_unlike_the_snapshot(tmp_path):
    log = _log(tmp_path, clique=2)
    assert _found(log) == []  # without a model: nothing to compare with
    found = _found(log, "--root", str(HOSTS / "gb200-nvl72"))
    assert found, found
    f = found[0]
    assert "NCCL used NVLink clique 2 (cliqueId 0x2), the host's snapshot registers its GPUs in clique 1" in f["message"]
    assert "NCCL_MNNVL_CLIQUE_ID" in f["message"] and f["severity"] == "warning"
    inv = _found(log, "--inventory", FLEET)
    assert {f["message"].split(":")[0] for f in inv if "NCCL used NVLink clique" in f["message"]} == \
        {"gb200-r01-t04", "gb200-r01-t05"}
