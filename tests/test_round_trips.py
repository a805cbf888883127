"""Round trips over every fixture and real file the suite holds: the model answers, it never crashes (exit 70).

``log check LOG --root HOST`` of every log fixture against every host fixture, ``topo predict`` at 1, 2 and 3 nodes
of every host fixture and every valid topology file. A refusal (:class:`~ncclctl.errors.NcclctlError`: exit 2/3
with file, line and fix) is an answer; any other exception is the bug class issue 25 found (a GPU with no NET path,
a node with no RDMA NIC, a log with more "nodes" than hosts). In-process, so the whole matrix costs seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import HOSTS, REPO, host_names
from ncclctl.errors import NcclctlError

LOGS = sorted(p for p in (REPO / "fixtures" / "logs").iterdir() if p.suffix in (".log", ".gz"))
TOPOS = sorted((REPO / "fixtures" / "topo" / "valid").glob("*.xml"))
REAL = REPO.parent / "shared" / "real" / "h200-vm"


def _predict_everything(node_or_data, nodes: int, source: str) -> None:
    from ncclctl.nccl.predict import Inputs, inputs_for_node, predict_xml, render_text
    from ncclctl.nccl.version import DEFAULT

    try:
        if isinstance(node_or_data, bytes):
            data, inputs, down = node_or_data, Inputs(source=source, nodes=nodes), frozenset()
        else:
            data, inputs, down = inputs_for_node(node_or_data, nodes=nodes, env={}, version=DEFAULT, gdr="auto",
                                                 source=source)
        pred = predict_xml(data, inputs=inputs, down=down, path=source)
    except NcclctlError:
        return
    pred.to_json()
    text = render_text(pred)
    assert text.strip()
    if nodes * len(pred.system.nodes[0]) == 1 and pred.graphs:
        assert "One rank" in text and "Large AllReduce" not in text


@pytest.mark.parametrize("host", host_names())
def test_predict_every_host_at_1_2_3_nodes(host, shared_predictions):
    from ncclctl.probe import probe

    node = probe(str(HOSTS / host))
    for nodes in (1, 2, 3):
        _predict_everything(node, nodes, host)


def test_predict_every_valid_topology_file_at_1_2_3_nodes(shared_predictions):
    assert TOPOS, "no topology fixtures found"
    for path in TOPOS:
        for nodes in (1, 2, 3):
            _predict_everything(path.read_bytes(), nodes, str(path))


#: Shared by every test of this module: the variants of one machine (six GB200 trays that differ in fabric state,
#: IMEX or health only) generate the same topology and so share one search.
_PREDICTIONS: dict = {}


@pytest.fixture
def shared_predictions(monkeypatch):
    """One prediction per (topology, settings, node count): logs of the same shape share it (the search on the
    DGX and GB200 fixtures costs up to seconds; the crash class under test lives after it)."""
    import ncclctl.nccl.predict as P

    real = P.predict_xml
    memo = _PREDICTIONS

    def cached(data, *, inputs, down=frozenset(), path=None, channels=True):
        tr = inputs.transport
        key = (data, inputs.nodes, tuple(sorted(inputs.env.items())), inputs.gdr, str(inputs.version), down,
               inputs.graph_file, None if tr is None else (tr.name, tr.socket), channels)
        if key not in memo:
            memo[key] = real(data, inputs=inputs, down=down, path=path, channels=channels)
        return memo[key]

    monkeypatch.setattr(P, "predict_xml", cached)


@pytest.fixture
def shared_probe(monkeypatch):
    """One probe per host tree for the whole log matrix (a GB200 tray's ~830 files cost about a second to read, 29
    times per host otherwise); the test holds the model's JSON before and after, so a check that changed the
    shared model would fail it rather than hide behind the sharing."""
    import ncclctl.inventory as I

    real = I.load_snapshot
    memo: dict = {}

    def cached(path: str):
        if path not in memo:
            memo[path] = real(path)
        return memo[path]

    monkeypatch.setattr(I, "load_snapshot", cached)
    return memo


@pytest.mark.parametrize("host", host_names())
def test_log_check_every_log_against_every_host(host, shared_predictions, shared_probe):
    from ncclctl.logs.check import check, predict_models
    from ncclctl.logs.parse import read_logs
    from ncclctl.render import dumps

    assert LOGS, "no log fixtures found"
    before = None
    for log in LOGS:
        ls = read_logs([str(log)])
        try:
            models, _notes = predict_models(ls, root=str(HOSTS / host))
        except NcclctlError:
            continue
        if before is None:
            before = dumps(shared_probe[str(HOSTS / host)].to_dict())
        check(ls, models=models)
    if before is not None:
        assert dumps(shared_probe[str(HOSTS / host)].to_dict()) == before, "a log check changed the host's model"


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real is not beside the checkout")
def test_real_material_round_trips(shared_predictions):
    """The real node's NCCL dumps predicted at 1-3 nodes, its logs against its snapshot and every host fixture."""
    from ncclctl.logs.check import check, predict_models
    from ncclctl.logs.parse import read_logs

    for dump in sorted(REAL.glob("*topo-dump.xml")):
        for nodes in (1, 2, 3):
            _predict_everything(dump.read_bytes(), nodes, str(dump))
    roots = [str(REAL / "snapshot-redacted.tar.gz")] + [str(HOSTS / h) for h in host_names()]
    for log in sorted(REAL.glob("*.log")):
        ls = read_logs([str(log)])
        for root in roots:
            try:
                models, _ = predict_models(ls, root=root)
            except NcclctlError:
                continue
            check(ls, models=models)


def test_hostile_procfs_truncations_give_the_whole_answer_or_a_note(tmp_path):
    """Random cuts of /proc/cpuinfo and /proc/modules in a host tree: the probe answers (the CPU count from
    sysfs, with a note that procfs was cut, where the NUMA nodes list more CPUs) or refuses with a clear error."""
    import random
    import shutil

    from ncclctl.probe import probe

    src = HOSTS / "h200-vm-socket"
    whole = probe(str(src))
    rng = random.Random(2025)
    cpuinfo = (src / "proc" / "cpuinfo").read_text()
    stanzas = [s for s in cpuinfo.split("\n\n") if s.strip()]
    for trial in range(12):
        root = tmp_path / f"t{trial}"
        shutil.copytree(src, root, symlinks=True)
        keep = rng.randint(1, len(stanzas))
        (root / "proc" / "cpuinfo").write_text("\n\n".join(stanzas[:keep]) + "\n\n")
        try:
            node = probe(str(root))
        except NcclctlError:
            continue
        assert node.cpu.logical_cpus == whole.cpu.logical_cpus == 16
        cut = [u for u in node.unavailable if u.reason == "cut at its first page"]
        assert bool(cut) == (keep < 16), (keep, node.unavailable)
