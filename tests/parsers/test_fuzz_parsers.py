"""Property tests: every parser either returns a result or raises ParseError, for any input.

Inputs: arbitrary text; mutations of the real-format samples of the per-tool test modules
(truncation, line deletion/duplication/swap, byte flips, passed as str or as bytes); and, for the
JSON parsers, samples whose subtrees are replaced by arbitrary JSON values. A ParseError must carry
the source path, a line inside the input and a fix; a result must be hashable (frozen dataclasses
made of tuples, no lists or dicts inside).
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclctl.errors import ParseError
from ncclctl.parsers.dcb import parse_dcb_app, parse_dcb_pfc
from ncclctl.parsers.ibdev2netdev import parse_ibdev2netdev
from ncclctl.parsers.ibstat import parse_ibstat
from ncclctl.parsers.ibv_devinfo import parse_ibv_devinfo, parse_ibv_devinfo_list
from ncclctl.parsers.iplink import parse_ip_link_json, parse_ip_link_text
from ncclctl.parsers.lldp import parse_lldpctl_json, parse_lldptool_pfc
from ncclctl.parsers.mlnx_qos import parse_mlnx_qos
from ncclctl.parsers.show_gids import parse_show_gids
from ncclctl.parsers.smi_topo import parse_nvidia_smi_topo

_HERE = pathlib.Path(__file__).resolve().parent


def _samples_of(module: str) -> Any:
    """Load a sibling test module by path (works whatever pytest's import mode is)."""
    name = f"_ncclctl_parser_samples_{module}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _HERE / f"{module}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


_ibstat = _samples_of("test_ibstat")
_devinfo = _samples_of("test_ibv_devinfo")
_i2n = _samples_of("test_ibdev2netdev")
_gids = _samples_of("test_show_gids")
_qos = _samples_of("test_mlnx_qos")
_dcb = _samples_of("test_dcb")
_ip = _samples_of("test_iplink")
_topo = _samples_of("test_smi_topo")
_lldp = _samples_of("test_lldp")

#: parser name -> (function, real-format samples, JSON?)
PARSERS: dict[str, tuple[Callable[..., Any], list[str], bool]] = {
    "ibstat": (parse_ibstat, _ibstat.SAMPLES, False),
    "ibv_devinfo": (parse_ibv_devinfo, _devinfo.SAMPLES, False),
    "ibv_devinfo_list": (parse_ibv_devinfo_list, ["2 HCAs found:\n\tmlx5_0\n\tmlx5_1\n\n"], False),
    "ibdev2netdev": (parse_ibdev2netdev, _i2n.SAMPLES, False),
    "show_gids": (parse_show_gids, _gids.SAMPLES, False),
    "mlnx_qos": (parse_mlnx_qos, _qos.SAMPLES, False),
    "dcb_pfc": (parse_dcb_pfc, _dcb.PFC_SAMPLES, True),
    "dcb_app": (parse_dcb_app, _dcb.APP_SAMPLES, True),
    "ip_link_json": (parse_ip_link_json, _ip.JSON_SAMPLES, True),
    "ip_link_text": (parse_ip_link_text, _ip.TEXT_SAMPLES, False),
    "nvidia_smi_topo": (parse_nvidia_smi_topo, _topo.SAMPLES, False),
    "lldpctl_json": (parse_lldpctl_json, _lldp.JSON_SAMPLES, True),
    "lldptool_pfc": (parse_lldptool_pfc, _lldp.PFC_SAMPLES, False),
}
JSON_PARSERS = [name for name, (_, samples, is_json) in PARSERS.items() if is_json]

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _n_lines(text: str | bytes) -> int:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1


def _check(name: str, text: str | bytes) -> None:
    func = PARSERS[name][0]
    try:
        result = func(text, source="fuzz-input")
    except ParseError as exc:
        assert exc.path == "fuzz-input"
        assert isinstance(exc.line, int), f"no line number: {exc}"
        assert 1 <= exc.line <= _n_lines(text), f"line {exc.line} outside the input: {exc}"
        assert exc.fix and exc.message
        assert str(exc)
        assert exc.to_dict()["exit_code"] == 3
        return
    hash(result)  # frozen dataclasses of tuples only


# ------------------------------------------------------------------------------------- strategies


@st.composite
def mutated(draw: st.DrawFn, samples: list[str]) -> str | bytes:
    text = draw(st.sampled_from(samples))
    for op in draw(st.lists(st.sampled_from(_OPS), min_size=1, max_size=4)):
        text = op(draw, text)
    if draw(st.integers(0, 3)) == 0:
        return text.encode("utf-8", "surrogatepass")
    return text


def _truncate(draw: st.DrawFn, text: str) -> str:
    return text[: draw(st.integers(0, len(text)))]


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
        elif kind == "insert":
            lines.insert(i, draw(st.text(max_size=40)))
        return "\n".join(lines)

    return op


def _flip(draw: st.DrawFn, text: str) -> str:
    raw = bytearray(text.encode("utf-8", "surrogatepass"))
    if not raw:
        return text
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(raw) - 1))
        raw[i] ^= draw(st.integers(1, 255))
    return raw.decode("utf-8", "replace")


def _token(draw: st.DrawFn, text: str) -> str:
    """Replace one whitespace-separated token by a nasty value."""
    parts = text.split(" ")
    i = draw(st.integers(0, len(parts) - 1))
    parts[i] = draw(
        st.sampled_from(
            ["", "-1", "0x", "9" * 30, "１２", "1_000", "nan", "inf", "1e999", "N/A", "Unknown",
             "???", "\t", ":", "::", "0:0", "[", "{", "\x1b[4m", "\u2028", "\x85"]
        )
    )
    return " ".join(parts)


_OPS = [
    _truncate,
    _lines_op("delete"),
    _lines_op("dup"),
    _lines_op("swap"),
    _lines_op("insert"),
    _flip,
    _token,
]

_JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_JSON_VALUES = st.recursive(
    _JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def json_tree_mutation(draw: st.DrawFn, samples: list[str]) -> str:
    """A sample with one subtree (or one list element / key) replaced by an arbitrary JSON value."""
    doc = json.loads(draw(st.sampled_from([s for s in samples if s.strip()])))
    paths: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append((node, k))
                walk(v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                paths.append((node, i))
                walk(v)

    walk(doc)
    if paths:
        parent, key = draw(st.sampled_from(paths))
        if isinstance(parent, dict) and draw(st.booleans()):
            parent[draw(st.text(max_size=8))] = parent.pop(key)  # rename the key
        else:
            parent[key] = draw(_JSON_VALUES)
    else:
        doc = draw(_JSON_VALUES)
    return json.dumps(doc, indent=draw(st.sampled_from([None, 2])))


# ------------------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(data=st.data())
def test_arbitrary_text(name: str, data: st.DataObject) -> None:
    text = data.draw(
        st.text()
        | st.text(alphabet=" \t\r\n:=,.-_()[]{}'\"<>@/0123456789abcdefxXNVGPUICSYSPHB", max_size=200)
    )
    _check(name, text)


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(data=st.data())
def test_mutated_samples(name: str, data: st.DataObject) -> None:
    _check(name, data.draw(mutated(PARSERS[name][1])))


@pytest.mark.parametrize("name", JSON_PARSERS)
@FUZZ
@given(data=st.data())
def test_json_tree_mutations(name: str, data: st.DataObject) -> None:
    samples = [s for s in PARSERS[name][1] if s.lstrip().startswith(("{", "["))]
    _check(name, data.draw(json_tree_mutation(samples)))


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_samples_themselves_parse(name: str) -> None:
    func, samples, _ = PARSERS[name]
    for text in samples:
        hash(func(text, source="sample"))
