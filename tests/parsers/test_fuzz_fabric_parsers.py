"""Property tests for the fabric parsers (ibnetdiscover in both forms, iblinkinfo in both forms): for any input the
outcome is a Fabric or a ParseError that names the source, a line inside the input and a fix.

Inputs: arbitrary text, and mutations of real-format samples (the hand-written iblinkinfo samples, the ibnetdiscover
test sample and a small synthetic fabric written in every form): truncation, line deletion/duplication/swap/insertion,
byte flips, nasty tokens; passed as str or as UTF-8 bytes.
"""

from __future__ import annotations

import pathlib
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclctl.errors import ParseError
from ncclctl.fabric.synth import FORMS, SynthSpec, as_form, synth
from ncclctl.parsers.iblinkinfo import parse_iblinkinfo
from ncclctl.parsers.ibnetdiscover import Fabric, parse_ibnetdiscover

_SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "fabric" / "samples"
_SYNTH = synth(SynthSpec(nodes=3, rails=2, group=2, spines_per_rail=1, miscable=1, down=1, seed=4)).text
_TOPO_HEAD = ('vendid=0x2c9\ndevid=0xd2f2\nsysimgguid=0x9c0591030012ab00\nswitchguid=0x9c0591030012ab00(9c0591030012ab00)\n'
              'Switch\t129 "S-9c0591030012ab00"\t\t# "MF0;leaf01:MQM9700/U1" enhanced port 0 lid 1 lmc 0\n'
              '[1][ext 3]\t"H-b83fd20300a1b2c3"[1](b83fd20300a1b2c3) \t\t# "node005 mlx5_0" lid 22 4xNDR\n\n'
              'vendid=0x2c9\ndevid=0x1021\ncaguid=0xb83fd20300a1b2c3\nCa\t1 "H-b83fd20300a1b2c3"\t\t# "node005 mlx5_0"\n'
              '[1](b83fd20300a1b2c3) \t"S-9c0591030012ab00"[1]\t\t# lid 22 lmc 0 "MF0;leaf01:MQM9700/U1" lid 1 4xNDR\n')

PARSERS: dict[str, tuple[Callable[..., Any], list[str]]] = {
    "ibnetdiscover": (parse_ibnetdiscover, [_SYNTH, as_form(_SYNTH, "ibnetdiscover-p"), _TOPO_HEAD]),
    "iblinkinfo": (parse_iblinkinfo, [as_form(_SYNTH, "iblinkinfo"), as_form(_SYNTH, "iblinkinfo-line")]
                   + [p.read_text(encoding="utf-8") for p in sorted(_SAMPLES.glob("iblinkinfo*.txt"))]),
}

FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _n_lines(text: str | bytes) -> int:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1


def _check(name: str, text: str | bytes) -> None:
    try:
        result = PARSERS[name][0](text, source="fuzz-input")
    except ParseError as exc:
        assert exc.path == "fuzz-input"
        assert isinstance(exc.line, int) and 1 <= exc.line <= _n_lines(text), f"line outside the input: {exc}"
        assert exc.fix and exc.message and str(exc)
        assert exc.to_dict()["exit_code"] == 3
        return
    assert isinstance(result, Fabric)
    hash(result)  # frozen dataclasses of tuples only
    for n in result.nodes:
        # a switch known only by its LID (its header filtered away) is named lid:<LID>
        assert (len(n.guid) == 16 or n.guid.startswith("lid:")) and n.kind in ("switch", "ca", "router")
        for p in n.ports:
            assert p.remote_guid == "" or len(p.remote_guid) == 16 or p.remote_guid.startswith("lid:")
            assert p.port >= 0 and p.remote_port >= 0


def _lines_op(kind: str) -> Callable[[st.DrawFn, str], str]:
    def op(draw: st.DrawFn, text: str) -> str:
        lines = text.split("\n")
        i = draw(st.integers(0, len(lines) - 1))
        if kind == "delete":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines.insert(i, draw(st.text(max_size=60)))
        return "\n".join(lines)

    return op


def _truncate(draw: st.DrawFn, text: str) -> str:
    return text[: draw(st.integers(0, len(text)))]


def _flip(draw: st.DrawFn, text: str) -> str:
    raw = bytearray(text.encode("utf-8", "surrogatepass"))
    for _ in range(draw(st.integers(1, 4))):
        if raw:
            i = draw(st.integers(0, len(raw) - 1))
            raw[i] ^= draw(st.integers(1, 255))
    return raw.decode("utf-8", "replace")


def _token(draw: st.DrawFn, text: str) -> str:
    parts = text.split(" ")
    i = draw(st.integers(0, len(parts) - 1))
    parts[i] = draw(st.sampled_from(
        ["", "0", "-1", "0x", "9" * 30, "１２", "1_000", "???", "??", "\t", '"', "(", ")", "[", "]", "==>", "==(",
         "/", "Down/", "0x" + "f" * 17, "[ext 9]", "\u2028", "\x85", "\r", "Switch:", "CA:", "#"]))
    return " ".join(parts)


_OPS = [_truncate, _lines_op("delete"), _lines_op("dup"), _lines_op("swap"), _lines_op("insert"), _flip, _token]


@st.composite
def mutated(draw: st.DrawFn, samples: list[str]) -> str | bytes:
    text = draw(st.sampled_from(samples))
    for op in draw(st.lists(st.sampled_from(_OPS), min_size=1, max_size=4)):
        text = op(draw, text)
    if draw(st.integers(0, 3)) == 0:
        return text.encode("utf-8", "surrogatepass")
    return text


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(data=st.data())
def test_arbitrary_text(name: str, data: st.DataObject) -> None:
    _check(name, data.draw(st.text() | st.text(alphabet=' \t\r\n:=.-_()[]#"\'<>/0123456789abcdefxXSHRCA',
                                                    max_size=300)))


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(data=st.data())
def test_mutated_samples(name: str, data: st.DataObject) -> None:
    _check(name, data.draw(mutated(PARSERS[name][1])))


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_samples_themselves_parse(name: str) -> None:
    func, samples = PARSERS[name]
    for text in samples:
        assert func(text, source="sample").nodes
    assert set(FORMS) == {"ibnetdiscover", "ibnetdiscover-p", "iblinkinfo", "iblinkinfo-line"}
