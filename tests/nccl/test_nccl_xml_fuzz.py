"""Property tests: on any bytes the reader returns a tree or one fatal diagnostic, never another exception,
and validation always returns findings; both do work linear in the input (counted, not timed)."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclctl.nccl import xml as X
from ncclctl.nccl.xml import ParseResult, parse_nccl_xml
from ncclctl.topo.graphfile import validate_graph
from ncclctl.topo.validate import validate_topology

VALID = Path(__file__).resolve().parents[2] / "fixtures" / "topo" / "valid"
TOPO = (VALID / "nccl-example-topo.xml").read_bytes()
GRAPH = (VALID / "nccl-example-graph.xml").read_bytes()
_INTERESTING = [b"<", b">", b"/", b"=", b'"', b"'", b" ", b"\t", b"\n", b"\r", b"<!--", b"-->", b"</", b"/>",
                b"\x00", b"\xef\xbb\xbf", b"<?xml", b"&amp;", b"<system>", b"</pci>", b"<gpu/>"]


def _check(data: bytes, kind: str) -> None:
    with _counted() as work:
        _check_once(data, kind)
    # one parse and one validation (which parses again): each tag read takes at least one byte, and each
    # position asked for scans at most the input; a reader that loops or backtracks fails here, not on a clock
    assert work["tags"] <= 4 * (len(data) + 2), (work, len(data))
    assert work["scanned"] <= (work["positions"] + 1) * (len(data) + 1), (work, len(data))


def _counted():
    work = {"tags": 0, "positions": 0, "scanned": 0}
    get_node, advance = X._Reader.get_node, X._LineIndex._advance

    def counted_get_node(self):
        work["tags"] += 1
        assert work["tags"] <= 8 * (self.n + 2), "the reader does not advance"
        return get_node(self)

    def counted_advance(self, base, pos):
        work["positions"] += 1
        work["scanned"] += max(0, pos - base[0])
        return advance(self, base, pos)

    class _Patch:
        def __enter__(self):
            self.patches = [mock.patch.object(X._Reader, "get_node", counted_get_node),
                            mock.patch.object(X._LineIndex, "_advance", counted_advance)]
            for p in self.patches:
                p.start()
            return work

        def __exit__(self, *exc):
            for p in reversed(self.patches):
                p.stop()

    return _Patch()


def _check_once(data: bytes, kind: str) -> None:
    res = parse_nccl_xml(data, kind=kind)  # type: ignore[arg-type]
    assert isinstance(res, ParseResult)
    if res.fatal is not None:
        assert res.fatal.fatal and res.fatal.line >= 1 and res.fatal.column >= 1
        assert res.fatal.rule.startswith(("NTX", "NTS", "NTG"))
    for d in res.diagnostics:
        assert d.line >= 1 and d.column >= 1
    validate = validate_topology if kind == "topology" else validate_graph
    findings = validate(data, path="fuzz.xml")
    assert all(f.line is None or f.line >= 1 for f in findings)


@st.composite
def mutated(draw, base: bytes) -> bytes:
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["insert", "delete", "replace", "splice"]))
        if op == "insert":
            data[pos:pos] = draw(st.sampled_from(_INTERESTING) | st.binary(max_size=4))
        elif op == "delete":
            data[pos:pos + draw(st.integers(1, 40))] = b""
        elif op == "replace":
            data[pos:pos + 1] = draw(st.binary(min_size=1, max_size=1))
        else:
            other = draw(st.integers(0, len(base)))
            data[pos:pos] = base[other:other + draw(st.integers(1, 200))]
    return bytes(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_random_bytes(data: bytes) -> None:
    _check(data, "topology")
    _check(data, "graph")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_INTERESTING) | st.binary(max_size=3) | st.sampled_from(
    [b'version="1"', b'numaid="0"', b"cpu", b"pci", b"system", b"graphs", b"channel"]), max_size=60))
def test_token_soup(parts: list[bytes]) -> None:
    data = b"".join(parts)
    _check(data, "topology")
    _check(data, "graph")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(TOPO))
def test_mutated_topology_example(data: bytes) -> None:
    _check(data, "topology")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(GRAPH))
def test_mutated_graph_example(data: bytes) -> None:
    _check(data, "graph")
