"""Runs of connection lines read in one step (``Parser._conn_run``) record exactly what the line-by-line path does.

A 1,024-rank job's log is 99% connection lines ("Channel 00/1 : 3[3] -> 4[4] [send] via NET/IB/0/GDRDMA"), in runs
of one prefix: ``feed_source`` reads a batch that is mostly connections with one pattern and each run at once. Every
test here reads the same text with that path forced (any batch, any share of connection lines) and turned off, and
compares the whole parser state: members and their ranks, channels and caps, local peers, counts per transport,
the first line of each (its Ev), line numbers, line counts. Work is counted (calls), never timed."""

from __future__ import annotations

import random
import subprocess
import sys
from typing import Any

import pytest

from ncclctl.logs import parse as P
from ncclctl.logs.records import Ev, Member, Proc

from conftest import REPO

RUN_HEAD = "gpu0003:41199:41203 [5]"


def _conv(x: Any) -> Any:
    if isinstance(x, Ev):
        return ("Ev", x.source, x.line, x.text)
    if isinstance(x, Proc):
        return ("Proc", x.host, x.pid)
    if isinstance(x, Member):
        return ("Member", x.proc.host, x.proc.pid, x.dev)
    if isinstance(x, dict):
        return [(_conv(k), _conv(v)) for k, v in x.items()]  # in order: insertion order is kept too
    if isinstance(x, (set, frozenset)):
        return sorted(repr(_conv(v)) for v in x)
    if isinstance(x, (list, tuple)):
        return [_conv(v) for v in x]
    if hasattr(x, "__dataclass_fields__"):
        return [(f, _conv(getattr(x, f))) for f in x.__dataclass_fields__]
    return x


def _fields(obj: Any) -> list[tuple[str, Any]]:
    out = [(s, getattr(obj, s)) for c in type(obj).__mro__ for s in getattr(c, "__slots__", ())
           if s not in ("__dict__", "__weakref__") and s != "proc" and hasattr(obj, s)]
    return out + sorted((getattr(obj, "__dict__", None) or {}).items())


def state(ls: P.LogSet) -> list:
    """Everything the parser recorded, order-sensitive (dicts in insertion order)."""
    res: list = [[(f, _conv(getattr(ls, f))) for f in ls.__dataclass_fields__ if f not in ("procs", "comms")]]
    index: dict[int, int] = {}
    for key, proc in ls.procs.items():
        row = []
        for f, v in _fields(proc):
            if f == "members":
                for m in v:
                    index[id(m)] = len(index)
                v = [[(g, _conv(w)) for g, w in _fields(m)] for m in v]
            row.append((f, _conv(v)))
        res.append((key, row))
    res.append([(c.key, c.comm_id, c.nranks, [index[id(m)] for m in c.members]) for c in ls.comms])
    return res


def parse(text: str, *, fast: bool, batch: int | None = None, monkeypatch: pytest.MonkeyPatch,
          rows_min: int = 1) -> P.LogSet:
    """``text`` read in batches of ``batch`` lines (one batch: None), runs (of ``rows_min`` rows or more) in one
    step or line by line."""
    with monkeypatch.context() as mp:
        mp.setattr(P, "RUN_BATCH_MIN", 1 if fast else 1 << 60)
        mp.setattr(P, "RUN_VIA_SHARE", 0)
        mp.setattr(P, "RUN_ROWS_MIN", rows_min)
        parser = P.Parser()
        src = P.Source("job.log")
        parser.out.sources.append(src)
        lines = text.split("\n")
        batches = [lines] if batch is None else [lines[i:i + batch] for i in range(0, len(lines), batch)]
        parser.feed_source("job.log", batches, src)
        return parser.finish()


def same(text: str, monkeypatch: pytest.MonkeyPatch, batches=(None, 1, 7)) -> P.LogSet:
    ref = parse(text, fast=False, monkeypatch=monkeypatch)
    want = state(ref)
    for b in batches:
        assert state(parse(text, fast=True, batch=b, monkeypatch=monkeypatch)) == want, f"batches of {b} lines"
    assert state(parse(text, fast=True, monkeypatch=monkeypatch, rows_min=P.RUN_ROWS_MIN)) == want
    return ref


def conn(ch: str, a: int | str, b: int | str, via: str, d: str = "", head: str = RUN_HEAD) -> str:
    return f"{head} NCCL INFO Channel {ch} : {a}[{a}] -> {b}[{b}]{d} via {via}"


def alltoall(me: int, n: int, head: str = RUN_HEAD) -> list[str]:
    """What a rank of a p2p all-to-all prints: a send and a receive line per peer, NET off the node, P2P on it."""
    out = []
    for peer in range(n):
        if peer == me:
            continue
        via = "P2P/CUMEM/read" if peer // 8 == me // 8 else f"NET/IB/{me % 8}/GDRDMA"
        ch = f"{32 + peer % 2:02d}/1"
        out.append(conn(ch, me, peer, via, " [send]", head))
        out.append(conn(ch, peer, me, via, " [receive]", head))
    return out


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"_conn": 0, "_conn_run": 0, "rows": 0}
    conn_line, conn_run = P.Parser._conn, P.Parser._conn_run

    def count_conn(self, *a):
        calls["_conn"] += 1
        return conn_line(self, *a)

    def count_run(self, key, rows, *a):
        calls["_conn_run"] += 1
        calls["rows"] += len(rows)
        return conn_run(self, key, rows, *a)

    monkeypatch.setattr(P.Parser, "_conn", count_conn)
    monkeypatch.setattr(P.Parser, "_conn_run", count_run)
    return calls


def test_a_run_is_read_in_one_step(monkeypatch):
    lines = [f"{RUN_HEAD} NCCL INFO comm 0x1 rank 21 nranks 64 cudaDev 5 busId 9a000 commId 0x7 - Init START"]
    lines += alltoall(21, 64)
    text = "\n".join(lines)
    ref = same(text, monkeypatch)
    calls = _counting(monkeypatch)
    parse(text, fast=True, monkeypatch=monkeypatch)
    # the first connection line makes nothing new (the START line made the member): all 126 in one call
    assert calls == {"_conn": 0, "_conn_run": 1, "rows": 126}
    mem = ref.procs[("gpu0003", 41199)].members[0]
    assert mem.rank == 21 and dict(mem.conns) == {"NET/IB/GDRDMA": 112, "P2P/CUMEM": 14}
    assert list(mem.net_ch) == ["32", "33"] and mem.net_ch["32"] == {("send", 5, True, None), ("receive", 5, True, None)}
    assert list(mem.local_peers) == [16, 17, 18, 19, 20, 22, 23]
    assert mem.conn_ev["NET/IB/GDRDMA"].line == 2 and mem.conn_ev["P2P/CUMEM"].line == 2 + 2 * 16  # peers 0, 16
    assert ref.recognised == ref.nccl_lines == ref.lines == 127


def test_a_run_whose_first_line_makes_the_process(monkeypatch):
    text = "\n".join(alltoall(3, 16))
    same(text, monkeypatch)
    calls = _counting(monkeypatch)
    parse(text, fast=True, monkeypatch=monkeypatch)
    assert calls == {"_conn": 1, "_conn_run": 1, "rows": 29}  # the first line as before, the other 29 at once


@pytest.mark.parametrize("odd", [
    f"{RUN_HEAD} NCCL INFO Channel 00/32 :    0    1    2    3",  # a ring list, no " via "
    f"{RUN_HEAD} NCCL INFO comm 0x1 rank 3 nranks 16 cudaDev 5 busId 9a000 commId 0x7 - Init COMPLETE",
    f"{RUN_HEAD} NCCL WARN Channel 00/1 : 3[3] -> 4[4] via P2P/IPC",
    f"{RUN_HEAD} NCCL INFOxChannel 00/1 : 3[3] -> 4[4] via P2P/IPC",
    f"0: {RUN_HEAD} NCCL INFO Channel 00/1 : 3[3] -> 4[4] via P2P/IPC",  # a launcher's prefix
    f"{RUN_HEAD.replace(' ', chr(9))} NCCL INFO Channel 00/1 : 3[3] -> 4[4] via P2P/IPC",
    f"{RUN_HEAD} NCCL INFO Channel 00/1 : 03[3] -> 4[4] via P2P/IPC",  # the rank written another way
    f"{RUN_HEAD} NCCL INFO Channel 00/1 : 4[4] -> 5[5] via P2P/IPC",  # another rank
    f"{RUN_HEAD} NCCL INFO Channel \u0663/1 : 3[3] -> 4[4] via P2P/IPC",  # a digit that is not ASCII
    f"{RUN_HEAD} NCCL INFO Channel 00/1 : 3[3] -> 4[4] via \x00P2P/IPC",
    f"{RUN_HEAD} NCCL INFO Channel 00/1 : 3[3] -> 4[4] via NET/IB/1/GDRDMA\r",
    f"{RUN_HEAD} NCCL INFO Channel 1234567890/1 : 3[3] -> 4[4] via NET/IB/1/GDRDMA",
    f"{RUN_HEAD} NCCL INFO Channel 00/1 : 3[3] -> 4[4] via " + "P2P/" + "x" * 70_000,  # past the 400-char Ev cut
    "",
    "NCCL version 2.30.7+cuda12.9",
])
def test_one_odd_line_in_a_run(odd, monkeypatch):
    run = alltoall(3, 16)
    for where in (0, 7, len(run)):
        same("\n".join(run[:where] + [odd] + run[where:]), monkeypatch)


def test_ranks_and_communicators_in_one_run(monkeypatch):
    start = f"{RUN_HEAD} NCCL INFO comm 0x1 rank 3 nranks 16 cudaDev 5 busId 9a000 - Init COMPLETE"
    # another rank's lines while rank 3's communicator initialises: not read (nor recognised)
    init = f"{RUN_HEAD} NCCL INFO comm 0x1 rank 3 nranks 16 cudaDev 5 busId 9a000"
    ref = same("\n".join([init] + alltoall(4, 16) + alltoall(3, 16)), monkeypatch)
    assert ref.recognised == 1 + 30 and ref.procs[("gpu0003", 41199)].members[0].conns["P2P/CUMEM"] == 14
    # NCCL < 2.18: a completed member, then another rank's connections: a new communicator without START
    ref = same("\n".join([start] + alltoall(3, 16) + alltoall(4, 16) + alltoall(5, 16)), monkeypatch)
    assert [m.rank for m in ref.procs[("gpu0003", 41199)].members] == [3, 4]
    # two ranks interleaved in one run: line by line
    mixed = [x for pair in zip(alltoall(3, 16), alltoall(4, 16)) for x in pair]
    same("\n".join([start] + mixed), monkeypatch)
    calls = _counting(monkeypatch)
    parse("\n".join(mixed), fast=True, monkeypatch=monkeypatch)
    assert calls["_conn"] == len(mixed)


def test_ranks_that_print_in_turns(monkeypatch):
    """Eight processes of a host writing one file: their lines in turns, runs of one row, read row by row (what
    one step costs is more than a row's _conn); the rows' matches are not made again."""
    heads = [f"gpu0005:{41388 + d}:{41392 + d} [{d}]" for d in range(8)]
    starts = [f"{h} NCCL INFO comm 0x1 rank {32 + d} nranks 64 cudaDev {d} busId {d}000 commId 0x7 - Init START"
              for d, h in enumerate(heads)]
    turns = [x for group in zip(*(alltoall(32 + d, 64, h) for d, h in enumerate(heads))) for x in group]
    ref = same("\n".join(starts + turns), monkeypatch)
    assert [m.conns["NET/IB/GDRDMA"] for p in ref.procs.values() for m in p.members] == [112] * 8
    calls = _counting(monkeypatch)
    parse("\n".join(starts + turns), fast=True, monkeypatch=monkeypatch, rows_min=P.RUN_ROWS_MIN)
    assert calls == {"_conn": len(turns), "_conn_run": 0, "rows": 0}


def test_caps_of_channels_nets_and_local_peers(monkeypatch):
    rng = random.Random(27)
    lines = [conn(f"{i:03d}/1", 5, i, f"NET/IB/{i % 11}/GDRDMA", " [send]") for i in range(600)]
    lines += [conn(f"{i % 3:02d}/1", 5, i, f"NET/IB/{i % 13}({i % 5})/GDRDMA", " [send]") for i in range(300)]
    lines += [conn("00/1", i, 5, rng.choice(["P2P/IPC", "P2P/CUMEM/read", "SHM/direct/direct"]), " [receive]")
              for i in range(300)]
    rng.shuffle(lines)
    ref = same("\n".join(lines), monkeypatch, batches=(None, 50))
    mem = ref.procs[("gpu0003", 41199)].members[0]
    assert len(mem.net_ch) == 256 and max(map(len, mem.net_ch.values())) == 8 and len(mem.local_peers) == 64


def test_mixed_logs(monkeypatch):
    """Seeded mixes of runs and other lines (prefixes that change, START/COMPLETE lines, ring lists, WARNs,
    prefix-less lines, lines of two messages), in batches that cut runs anywhere."""
    heads = [f"h{i % 3}:{100 + i % 2}:{200 + i % 4} [{i % 3}]" for i in range(6)] + ["[0]", "h1:100:200 [00]"]
    vias = ["NET/IB/0/GDRDMA", "NET/IB/1(3)/GDRDMA", "NET/Socket/0", "P2P/CUMEM/read", "P2P/IPC", "SHM/direct/direct",
            "direct shared memory", "CollNet/x", "NVLS", "odd words", "NET/IB/x", "", "P2P"]
    runs = 0
    for seed in range(12):
        rng = random.Random(seed)
        head, lines = heads[0], []
        for _ in range(rng.randrange(50, 250)):
            if rng.random() < 0.1:
                head = rng.choice(heads)
            r = rng.random()
            if r < 0.8:
                lines.append(conn(rng.choice(["00/1", "01/1", "7", "07/32"]), rng.choice([0, 1, 3, "03"]),
                                  rng.choice([0, 1, 4]), rng.choice(vias),
                                  rng.choice(["", " [send]", " [receive]", " [r]", " [x]"]), head))
            elif r < 0.88:
                lines.append(f"{head} NCCL INFO comm 0x{rng.randrange(3)} rank {rng.choice([0, 1, 3, 4])} nranks 8 "
                             f"cudaDev 0 busId 1000 commId 0x{rng.randrange(2)} - Init "
                             f"{rng.choice(['START', 'COMPLETE'])}")
            else:
                lines.append(rng.choice([f"{head} NCCL INFO Channel 00/02 :    0   1   2   3",
                                         f"{head} NCCL WARN Connect to 10.0.0.1<1234> failed",
                                         "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "",
                                         f"{head} NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC NCCL INFO x",
                                         f"{head} NCCL INFO Trees [0] 1/-1/-1->0->-1"]))
        calls = _counting(monkeypatch)
        same("\n".join(lines), monkeypatch, batches=(None, 5))
        runs += calls["_conn_run"]
        monkeypatch.undo()
    assert runs > 100  # the one-step path was taken


def test_log_outputs_are_the_same_through_the_cli(tmp_path):
    """``log show -f json`` of a small job (runs of connection lines around its init lines), runs read in one step
    against line by line (the process sets the two limits before the command)."""
    lines = []
    for r in range(16):
        head = f"gpu{r // 8:04d}:{4100 + r}:{4200 + r} [{r % 8}]"
        lines.append(f"{head} NCCL INFO comm 0x{r:x} rank {r} nranks 16 cudaDev {r % 8} busId {r}000 commId 0x9 - "
                     "Init START")
        lines += alltoall(r, 16, head)
        lines.append(f"{head} NCCL INFO comm 0x{r:x} rank {r} nranks 16 cudaDev {r % 8} busId {r}000 commId 0x9 - "
                     "Init COMPLETE")
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n")
    outs = []
    for limit in ("1", "1 << 60"):
        code = ("import sys; import ncclctl.logs.parse as p; p.RUN_BATCH_MIN = %s; p.RUN_VIA_SHARE = 0; "
                "from ncclctl.cli import main; sys.argv = ['ncclctl', 'log', 'show', '-f', 'json', %r]; main()"
                % (limit, str(log)))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1] and '"rank": 15' in outs[0]
