"""tests/data/nccl_expected/<version>.json: what NCCL's own code computed on ncclctl's topology files.

Two kinds of check:
* the file is well formed (case ids, shapes, path strings, channel GPU sets, canonical one-case-per-line layout);
* the inputs are still current: every case was computed from the XML that ``ncclctl topo generate`` wrote (and, for
  ``graph=file`` cases, the ``rings graph`` file, and for ``hca=rails`` the ``ncclctl rails`` list). A change to
  those commands' output makes the expected values stale, and the test says to re-run the harness.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import sys

import pytest

from conftest import REPO

DATA_DIR = REPO / "tests" / "data" / "nccl_expected"
DATA = DATA_DIR / "2.30.7.json"
RERUN = ("the expected values in tests/data/nccl_expected/2.30.7.json were computed from the old output: re-run the "
         "NCCL harness as tests/data/nccl_expected/README.md describes and commit the regenerated file")

PATH_TYPES = "LOC|NVL|NVB|C2C|PIX|PXB|P2C|PXN|PHB|SYS|NET|DIS"
PATH_RE = re.compile(rf"^({PATH_TYPES})/\d+(\.\d+)?$")
CASE_RE = re.compile(r"^(?P<fx>[a-z0-9-]+(/profile=[a-z0-9]+)?)\|N=(?P<n>[124])\|gdr=(?P<gdr>[01])\|"
                     r"hca=(?P<hca>rails|all)\|env=(?P<env>[^|]*)\|graph=(?P<graph>nccl|file)$")
PROTOCOLS = {"LL", "LL128", "Simple"}


def _load() -> dict:
    return json.loads(DATA.read_text(encoding="ascii"))


def _canonical(data: dict) -> str:
    """The layout the harness writes: sorted keys, no spaces, meta / inputs / one case per line."""
    def dump(v) -> str:
        return json.dumps(v, sort_keys=True, separators=(",", ":"))

    keys = sorted(data["cases"])
    lines = ["{", f'"meta":{dump(data["meta"])},', f'"inputs":{dump(data["inputs"])},', '"cases":{']
    lines += [f"{json.dumps(k)}:{dump(data['cases'][k])}{',' if i < len(keys) - 1 else ''}" for i, k in enumerate(keys)]
    return "\n".join(lines + ["}}"]) + "\n"


def _graph_problems(cid: str, name: str, g: dict, gpus: list[int], nets: set[str], multi: bool) -> list[str]:
    out = []
    for key in ("nChannels", "bwIntra", "bwInter", "typeIntra", "typeInter", "pattern", "crossNic", "channels"):
        if key not in g:
            out.append(f"{cid}: {name} lacks {key}")
            return out
    if g["typeIntra"] not in PATH_TYPES.split("|") or g["typeInter"] not in PATH_TYPES.split("|"):
        out.append(f"{cid}: {name} path types {g['typeIntra']}/{g['typeInter']}")
    if len(g["channels"]) != g["nChannels"] or g["nChannels"] < 1:
        out.append(f"{cid}: {name} has {len(g['channels'])} channels for nChannels={g['nChannels']}")
    for c, (net_in, devs, net_out) in enumerate(g["channels"]):
        if g["pattern"] != "NVLS" and sorted(devs) != sorted(gpus):
            out.append(f"{cid}: {name} channel {c} GPUs {devs} are not the node's GPUs {gpus}")
        if multi and (net_in not in nets or net_out not in nets):
            out.append(f"{cid}: {name} channel {c} nets {net_in}>{net_out} are not plugin devices")
        if not multi and (net_in is not None or net_out is not None):
            out.append(f"{cid}: {name} channel {c} has nets on a single node")
    return out


def _case_problems(cid: str, case: dict, inputs: dict) -> list[str]:
    m = CASE_RE.match(cid)
    if not m:
        return [f"malformed case id {cid!r}"]
    if m["fx"] not in inputs:
        return [f"{cid}: fixture {m['fx']} has no inputs entry"]
    inp = case.get("input", {})
    env = ",".join(f"{k}={v}" for k, v in sorted(inp.get("env", {}).items()))
    want = (int(m["n"]), int(m["gdr"]), m["env"], m["graph"] == "file", m["fx"], inputs[m["fx"]]["topo_cmd"])
    got = (inp.get("nodes"), inp.get("gdr"), env, inp.get("graph_file"), inp.get("fixture"), inp.get("topo_cmd"))
    if want != got:
        return [f"{cid}: input {got} does not match the case id {want}"]
    hca = inputs[m["fx"]]["rails_hca"] if m["hca"] == "rails" else None
    if inp.get("NCCL_IB_HCA") != hca:
        return [f"{cid}: NCCL_IB_HCA {inp.get('NCCL_IB_HCA')!r}, expected {hca!r}"]
    if "error" in case:
        return [] if isinstance(case["error"], str) and case["error"] else [f"{cid}: empty error"]
    out = []
    for key in ("nets", "system_nets", "gpus", "gpu_gpu", "ring", "tree", "connect"):
        if key not in case:
            out.append(f"{cid}: missing {key}")
    if out:
        return out
    gpus, n = case["gpus"], int(m["n"])
    plugin = {e[1] for e in case["nets"]}
    sysnets = [e[1] for e in case["system_nets"]]
    if not set(sysnets) <= plugin:
        out.append(f"{cid}: system nets {sysnets} are not all plugin devices")
    if sorted(case["gpu_gpu"], key=int) != [str(g) for g in sorted(gpus)]:
        out.append(f"{cid}: gpu_gpu rows {sorted(case['gpu_gpu'])} for GPUs {gpus}")
    for g, row in case["gpu_gpu"].items():
        if len(row) != len(gpus) or not all(PATH_RE.match(p) for p in row):
            out.append(f"{cid}: gpu_gpu[{g}] = {row}")
    if sysnets:
        for key in ("gpu_net", "gdr", "local_nets"):
            if sorted(case.get(key, {}), key=int) != [str(g) for g in sorted(gpus)]:
                out.append(f"{cid}: {key} rows do not cover GPUs {gpus}")
        for g, row in case.get("gpu_net", {}).items():
            if len(row) != len(sysnets) or not all(PATH_RE.match(p) for p in row):
                out.append(f"{cid}: gpu_net[{g}] = {row}")
        for g, row in case.get("gdr", {}).items():
            if len(row) != len(sysnets) or not all(re.fullmatch(r"[0-2]{2}", x) for x in row):
                out.append(f"{cid}: gdr[{g}] = {row}")
        for g, row in case.get("local_nets", {}).items():
            if not row or not set(row) <= set(sysnets):
                out.append(f"{cid}: local_nets[{g}] = {row}")
    for name in ("ring", "tree"):
        out += _graph_problems(cid, name, case[name], gpus, plugin, n > 1)
    con = case["connect"]
    if n == 2 and con.get("ok"):
        rings = con.get("rings", [])
        nranks = n * len(gpus)
        if not rings or any(sorted(r) != list(range(nranks)) for r in rings):
            out.append(f"{cid}: connect rings are not orders of the {nranks} ranks")
        if len(rings) * con.get("rings_repeat", 1) != con.get("nChannels"):
            out.append(f"{cid}: {len(rings)} ring orders x {con.get('rings_repeat', 1)} "
                       f"!= {con.get('nChannels')} channels")
        if "pxn" not in case and sysnets:
            out.append(f"{cid}: N=2 without pxn")
    if len(gpus) * n > 1:
        tune = case.get("tuning_allreduce", {})
        if sorted(tune) != ["ring", "tree"] or any(len(v) != 3 for v in tune.values()):
            out.append(f"{cid}: tuning_allreduce = {tune}")
        prot = case.get("protocols", {})
        if sorted(prot) != ["ring", "tree"] or not all(set(v) <= PROTOCOLS for v in prot.values()):
            out.append(f"{cid}: protocols = {prot}")
    return out


def test_expected_data_is_well_formed():
    text = DATA.read_text(encoding="ascii")
    assert len(text.encode()) < 2_000_000, "keep the expected-values file under 2 MB"
    data = _load()
    meta = data["meta"]
    assert meta["nccl_version"] == "2.30.7" and re.fullmatch(r"[0-9a-f]{40}", meta["nccl_commit"])
    assert meta["case_count"] == len(data["cases"]) > 300
    assert text == _canonical(data), "the file is not in the harness's canonical layout (sorted, one case per line)"
    problems = []
    for cid, case in data["cases"].items():
        problems += _case_problems(cid, case, data["inputs"])
    assert not problems, "\n".join(problems[:20])
    # every GPU fixture x N x GDR x HCA is there for NCCL's own search
    fixtures = sorted(data["inputs"])
    for fx in fixtures:
        for n in (1, 2, 4):
            for gdr in (0, 1):
                assert f"{fx}|N={n}|gdr={gdr}|hca=all|env=|graph=nccl" in data["cases"]


def test_case_checker_catches_a_broken_case():
    """The well-formedness check is not vacuous: damage a real case in memory and it is reported."""
    data = _load()
    cid = "dgx-h100|N=2|gdr=1|hca=rails|env=|graph=nccl"
    case = json.loads(json.dumps(data["cases"][cid]))
    assert _case_problems(cid, case, data["inputs"]) == []
    case["ring"]["channels"][0][1] = case["ring"]["channels"][0][1][:-1]        # a GPU dropped from a channel
    case["gpu_net"]["0"][0] = "PIX-48"                                          # not a "TYPE/bw" string
    case["connect"]["rings"][0][0] = 99                                         # not a rank order
    found = "\n".join(_case_problems(cid, case, data["inputs"]))
    assert "channel 0 GPUs" in found and "gpu_net[0]" in found and "connect rings" in found
    bad = cid.replace("N=2", "N=3")
    assert _case_problems(bad, case, data["inputs"]) == [f"malformed case id {bad!r}"]


def _run(cmd: str) -> bytes:
    args = shlex.split(cmd)
    assert args[0] == "ncclctl"
    r = subprocess.run([sys.executable, "-m", "ncclctl", *args[1:]], cwd=REPO, capture_output=True, timeout=120)
    assert r.returncode == 0, f"`{cmd}` failed: {r.stderr.decode(errors='replace')}"
    return r.stdout


def _stale(fx: str, entry: dict) -> list[str]:
    out = []
    topo = hashlib.sha256(_run(entry["topo_cmd"])).hexdigest()
    if topo != entry["topo_sha256"]:
        out.append(f"{fx}: `{entry['topo_cmd']}` now writes a different topology XML (sha256 {topo[:16]}..., "
                   f"expected {entry['topo_sha256'][:16]}...); {RERUN}")
    if entry["graph_cmd"]:
        graph = hashlib.sha256(_run(entry["graph_cmd"])).hexdigest()
        if graph != entry["graph_sha256"]:
            out.append(f"{fx}: `{entry['graph_cmd']}` now writes a different graph file (sha256 {graph[:16]}..., "
                       f"expected {entry['graph_sha256'][:16]}...): the graph=file cases are stale; {RERUN}")
    m = re.search(r"^NCCL_IB_HCA=(\S+)$", _run(entry["rails_cmd"]).decode(), re.M)
    hca = m.group(1) if m else None
    if hca != entry["rails_hca"]:
        out.append(f"{fx}: `{entry['rails_cmd']}` now prints NCCL_IB_HCA={hca} (was {entry['rails_hca']}): the "
                   f"hca=rails cases are stale; {RERUN}")
    return out


@pytest.mark.parametrize("fixture", sorted(json.loads(DATA.read_text(encoding="ascii"))["inputs"]))
def test_expected_values_match_what_ncclctl_generates_now(fixture):
    entry = _load()["inputs"][fixture]
    problems = _stale(fixture, entry)
    assert not problems, "\n".join(problems)


def test_stale_input_is_reported_with_the_rerun_instruction():
    entry = dict(_load()["inputs"]["pcie-server"])
    entry["topo_sha256"] = "0" * 64
    entry["rails_hca"] = "=mlx5_0:1"
    problems = _stale("pcie-server", entry)
    assert len(problems) == 2
    assert all("re-run the NCCL harness" in p for p in problems)
    assert "topology XML" in problems[0] and "hca=rails" in problems[1]
