"""LOG030 (MNNVL available but not working: the IMEX channel, IMEX itself) and LOG031 (a job across NVLink domains,
the log's domains against the hosts' snapshots, NVLS multicast missing on a registered GPU): the authored GB200 logs
of fixtures/logs (build.py), alone and held against the tray fixtures (--root) and the two-rack fleet (--inventory),
through the CLI and the API."""

from __future__ import annotations

import json

import pytest

from conftest import HOSTS, REPO, run_cli
from ncclctl.logs.check import check, predict_models
from ncclctl.logs.nvlink import is_mnnvl_not_working
from ncclctl.logs.parse import read_logs

LOGS = REPO / "fixtures" / "logs"
FLEET = str(REPO / "fixtures" / "fleet" / "gb200-two-racks" / "inventory.yaml")
HEALTHY = str(LOGS / "v2.30-gb200-mnnvl-healthy.log")
CHANNEL = str(LOGS / "v2.30-gb200-mnnvl-imex-channel.log")
IMEX = str(LOGS / "v2.30-gb200-mnnvl-imex-down.log")
TWO = str(LOGS / "v2.30-gb200-two-domains.log")
OURS = ("LOG029", "LOG030", "LOG031")


def _cli(log: str, *extra: str):
    r = run_cli("log", "check", log, "--format", "json", *extra)
    assert "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    return r.returncode, [f for f in doc["findings"] if f["rule"] in OURS]


def _api(log: str, **kw):
    ls = read_logs([log])
    models = predict_models(ls, **kw)[0] if kw else None
    return [f for f in check(ls, models=models) if f.rule in OURS]


def test_wording():
    text = ("mnnvl.cc:74 NCCL WARN MNNVL (cliqueSize 72) is available but not working on this system. Check the "
            "IMEX channel configuration (/dev/nvidia-caps-imex-channels). Set NCCL_MNNVL_ENABLE=0 to ignore this issue.")
    assert is_mnnvl_not_working(text)
    assert is_mnnvl_not_working(text.replace("IMEX channel configuration (/dev/nvidia-caps-imex-channels)",
                                             "IMEX configuration (nvidia-imex-ctl -N)"))
    assert not is_mnnvl_not_working("NVLS multicast support is available on dev 0")


@pytest.mark.parametrize("extra", [(), ("--root", str(HOSTS / "gb200-nvl72")), ("--inventory", FLEET)])
def test_healthy_job_passes(extra):
    rc, found = _cli(HEALTHY, *extra)
    assert rc == 0 and found == [], found


def test_channel_missing_without_a_model():
    rc, found = _cli(CHANNEL)
    assert rc == 1
    # one finding per fault: the two hosts with the same cause and fix, in hostlist form (issue 28)
    assert [(f["rule"], f["severity"], f["message"].split(":")[0]) for f in found] == [
        ("LOG030", "error", "gb200-r01-t[04-05]")]
    f = found[0]
    assert "; 8 rank(s);" in f["message"] and len(f["evidence"]) == 2  # the first WARN of each host
    assert "MNNVL (a clique of 8 GPUs) is available but not working" in f["message"] and "no IMEX channel" in f["message"]
    assert "/dev/nvidia-caps-imex-channels/channel0" in f["fix"] and "mnnvl.cc:74" in f["evidence"][0]
    # the WARN is not also reported as a generic one, and the failed init is not called a hang
    allf = json.loads(run_cli("log", "check", CHANNEL, "--format", "json").stdout)["findings"]
    assert {x["rule"] for x in allf} == {"LOG030"}, [(x["rule"], x["message"]) for x in allf]


def test_channel_missing_on_the_host():
    found = _api(CHANNEL, root=str(HOSTS / "gb200-nvl72-no-imex-channel"))
    assert [f.rule for f in found] == ["LOG030"] and found[0].message.startswith("gb200-r01-t[04-05]: ")
    assert "the host has no IMEX channel device" in found[0].message and "NVL003" in found[0].message
    assert found[0].fix.startswith("create the channel on the host")


def test_channel_on_the_host_not_in_the_container():
    rc, found = _cli(CHANNEL, "--root", str(HOSTS / "gb200-nvl72"))
    assert rc == 1 and len(found) == 1
    assert "it is the job's container that lacks it" in found[0]["message"]
    assert "--device /dev/nvidia-caps-imex-channels/channel0" in found[0]["fix"]


def test_imex_down():
    rc, found = _cli(IMEX, "--root", str(HOSTS / "gb200-nvl72-imex-down"))
    assert rc == 1 and {f["rule"] for f in found} == {"LOG030"}
    assert "could not export/import FABRIC memory through IMEX" in found[0]["message"]
    assert "nvidia-imex is not running on the host" in found[0]["message"]
    rc, found = _cli(IMEX, "--root", str(HOSTS / "gb200-nvl72"))
    assert "the host's snapshot shows IMEX active and UP" in found[0]["message"]
    rc, found = _cli(IMEX)
    assert "nvidia-imex is not running, not configured with this tray" in found[0]["message"]


def test_job_across_two_domains():
    rc, found = _cli(TWO)
    assert rc == 0  # warnings only
    span = [f for f in found if "NVLink domains:" in f["message"]]
    assert len(span) == 1 and span[0]["severity"] == "warning"
    assert ("gb200-r01-t06 in cluster 6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31 clique 1; gb200-r01-t07 in cluster "
            "6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31 clique 32766") in span[0]["message"]
    assert "ncclctl fleet blocks" in span[0]["fix"] and len(span[0]["evidence"]) == 2
    nvls = [f for f in found if "NVLS multicast" in f["message"]]
    assert nvls and all(f["message"].startswith("gb200-r01-t07 GPU ") for f in nvls)
    # against the fleet's snapshots: the log agrees with them (tray 7 is in clique 32766 there too)
    rc, with_inv = _cli(TWO, "--inventory", FLEET)
    assert [f["message"] for f in with_inv] == [f["message"] for f in found]


def test_log_unlike_the_snapshot():
    # gb200-nvl72-clique-split: GPU3 (0019:01:00.0) registered in clique 2; the log (before) says clique 1
    found = _api(HEALTHY, root=str(HOSTS / "gb200-nvl72-clique-split"))
    assert [(f.rule, f.host) for f in found] == [("LOG031", "gb200-r01-t04"), ("LOG031", "gb200-r01-t05")]
    assert "GPU 0019:01:00.0: the log puts it in cluster 6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31 clique 1, the host's " \
           "snapshot in cluster 6c1a52e4-93b0-4d7e-a1f5-2b08c49e7d31 clique 2" in found[0].message


def test_lean_inventory_models_are_facts_only():
    rc = run_cli("log", "check", HEALTHY, "--inventory", FLEET)
    assert rc.returncode == 0 and "its facts only: NVLink domain, IMEX" in rc.stdout
    assert "no NCCL topology from" in rc.stdout


@pytest.mark.parametrize("rule_id", ["LOG030", "LOG031"])
def test_explain(rule_id):
    r = run_cli("explain", rule_id)
    assert r.returncode == 0 and rule_id in r.stdout and "Fix:" in r.stdout
