"""iproute2 dcb parsers. Text samples: the man-page examples (man8/dcb-pfc.8, dcb-app.8) with the
trailing space every ``"%s "`` token leaves; JSON samples laid out as iproute2's json_print emits
them for dcb_pfc.c / dcb_app.c (including the ``" "`` element that dcb_app_print_filtered adds to
every pair since iproute2 6.5)."""

from __future__ import annotations

import pytest

from ncclctl.errors import ParseError
from ncclctl.parsers.dcb import DSCP_NAMES, DcbApp, DcbPfc, parse_dcb_app, parse_dcb_pfc

PFC_TEXT = (
    "pfc-cap 8 macsec-bypass off delay 4096 \n"
    "prio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:on 7:on \n"
)
PFC_STATS = (
    "pfc-cap 8 macsec-bypass off delay 0 \n"
    "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n"
    "requests 0:0 1:0 2:0 3:1822 4:0 5:0 6:0 7:0 \n"
    "indications 0:0 1:0 2:0 3:97 4:0 5:0 6:0 7:0 \n"
)
PFC_JSON = (
    '{"pfc_cap":8,"macsec_bypass":false,"delay":4096,'
    '"prio_pfc":[false,false,false,true,false,false,false,false]}\n'
)

APP_TEXT = "dscp-prio 0:0 CS3:2 CS3:3 CS6:6 \n"  # dcb-app.8 example
APP_NUMERIC = "dscp-prio 0:0 24:2 24:3 48:6 \n"  # same with -N
APP_ROCE = (
    "default-prio 0 \n"
    "dscp-prio default:0 CS1:1 AF31:3 CS6:6 EF:5 \n"
    "pcp-prio 1nd:1 2de:2 \n"
)
APP_JSON_NEW = '{"dscp_prio":[[0,0," "],[24,2," "],[24,3," "],[48,6," "]]}\n'
APP_JSON_OLD = '{"dscp_prio":[[0,0],[24,2],[24,3],[48,6]]}\n'

PFC_SAMPLES = [PFC_TEXT, PFC_STATS, PFC_JSON]
APP_SAMPLES = [APP_TEXT, APP_NUMERIC, APP_ROCE, APP_JSON_NEW, APP_JSON_OLD]


# ------------------------------------------------------------------------------------------- pfc


def test_pfc_text() -> None:
    pfc = parse_dcb_pfc(PFC_TEXT)
    assert pfc == DcbPfc(
        pfc_cap=8,
        macsec_bypass=False,
        delay=4096,
        prio_pfc=(False, False, False, False, False, False, True, True),
    )
    assert pfc.enabled_priorities == (6, 7)


def test_pfc_text_with_stats() -> None:
    pfc = parse_dcb_pfc(PFC_STATS)
    assert pfc.enabled_priorities == (3,) and pfc.delay == 0
    assert pfc.requests == (0, 0, 0, 1822, 0, 0, 0, 0)
    assert pfc.indications == (0, 0, 0, 97, 0, 0, 0, 0)


def test_pfc_json_equals_text() -> None:
    pfc = parse_dcb_pfc(PFC_JSON)
    assert pfc.prio_pfc == (False, False, False, True, False, False, False, False)
    assert (pfc.pfc_cap, pfc.macsec_bypass, pfc.delay) == (8, False, 4096)
    text = PFC_TEXT.replace("3:off", "3:on").replace("6:on", "6:off").replace("7:on", "7:off")
    assert parse_dcb_pfc(text) == pfc


def test_pfc_json_pretty_and_stats() -> None:
    doc = (
        "{\n"
        '    "pfc_cap": 8,\n'
        '    "macsec_bypass": false,\n'
        '    "delay": 0,\n'
        '    "prio_pfc": [ false,false,false,true,false,false,false,false ],\n'
        '    "requests": [ 0,0,0,1822,0,0,0,0 ],\n'
        '    "indications": [ 0,0,0,97,0,0,0,0 ]\n'
        "}\n"
    )
    assert parse_dcb_pfc(doc) == parse_dcb_pfc(PFC_STATS)


def test_pfc_only_prio_pfc_shown() -> None:
    pfc = parse_dcb_pfc("prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n")
    assert pfc.pfc_cap is None and pfc.delay is None and pfc.macsec_bypass is None


@pytest.mark.parametrize(
    "variant",
    [
        lambda t: t.replace("\n", "\r\n"),
        lambda t: t.replace(" ", "\t"),
        lambda t: t.replace(" ", "\n"),
        lambda t: "\n" + t + "\n\n",
    ],
)
def test_pfc_whitespace_variants(variant) -> None:  # type: ignore[no-untyped-def]
    for text in PFC_SAMPLES:
        assert parse_dcb_pfc(variant(text)) == parse_dcb_pfc(text)


def test_pfc_unknown_keyword_is_skipped() -> None:
    text = PFC_TEXT.replace("delay 4096", "delay 4096 future-knob 3 future-list 0:1 1:1")
    assert parse_dcb_pfc(text) == parse_dcb_pfc(PFC_TEXT)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", 1),
        ("pfc-cap 8 macsec-bypass off delay 4096 \n", 1),
        (PFC_TEXT.replace("7:on", "7:maybe"), 2),
        (PFC_TEXT.replace(" 7:on", ""), 2),
        (PFC_TEXT.replace("7:on", "8:on"), 2),
        (PFC_TEXT.replace("5:off", "6:off"), 2),
        (PFC_TEXT.replace("delay 4096", "delay lots"), 1),
        (PFC_TEXT.replace("bypass off", "bypass maybe"), 1),
        ("pfc-cap 8 macsec-bypass off delay\n", 1),
        ("0:off 1:off\n", 1),
        (PFC_TEXT + PFC_TEXT, 3),
        (PFC_STATS.replace("3:97", "3:many"), 4),
    ],
)
def test_pfc_text_errors(text: str, line: int) -> None:
    with pytest.raises(ParseError) as ei:
        parse_dcb_pfc(text, source="cmd/dcb_pfc_show_dev_ens1f0np0.txt")
    assert ei.value.line == line and ei.value.path == "cmd/dcb_pfc_show_dev_ens1f0np0.txt"
    assert ei.value.fix


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('{"pfc_cap":8,"prio_pfc":[false,false]}', 1),
        ('{"pfc_cap":8,"prio_pfc":[0,0,0,1,0,0,0,0]}', 1),
        ('{"pfc_cap":true,"prio_pfc":[false,false,false,true,false,false,false,false]}', 1),
        ('{"pfc_cap":8}', 1),
        ('{\n"pfc_cap": 8,\n"delay": "4096",\n"prio_pfc": []\n}', 4),
        ('{\n"pfc_cap": 8,\n"delay": "4096",\n"prio_pfc": [false,false,false,true,false,false,false,false]\n}', 3),
        ('{"pfc_cap":8,"prio_pfc":[false,false,false,true,false,false,false,false],"requests":[1]}', 1),
        ('{"pfc_cap": 8,\n "prio_pfc": [false,', 2),
        ("[1, 2]", 1),
        ('{"pfc_cap": NaN, "prio_pfc": []}', 1),
    ],
)
def test_pfc_json_errors(text: str, line: int) -> None:
    with pytest.raises(ParseError) as ei:
        parse_dcb_pfc(text)
    assert ei.value.line == line and ei.value.path == "dcb pfc show"


# ------------------------------------------------------------------------------------------- app


def test_app_symbolic_and_numeric_agree() -> None:
    app = parse_dcb_app(APP_TEXT)
    assert app.dscp_prio == ((0, 0), (24, 2), (24, 3), (48, 6))
    assert app.prios_for_dscp(24) == (2, 3)
    assert parse_dcb_app(APP_NUMERIC) == app
    assert parse_dcb_app(APP_JSON_NEW) == app
    assert parse_dcb_app(APP_JSON_OLD) == app


def test_app_roce_style_table() -> None:
    app = parse_dcb_app(APP_ROCE)
    assert app.default_prio == (0,)
    # "default" is what DSCP 0 prints as once rt_dsfield has been loaded
    assert app.dscp_prio == ((0, 0), (8, 1), (26, 3), (46, 5), (48, 6))
    assert app.pcp_prio == (("1nd", 1), ("2de", 2))


def test_app_other_selectors() -> None:
    text = (
        "ethtype-prio 8906:3 \n"
        "stream-port-prio 4791:3 \n"
        "dgram-port-prio 4791:3 \n"
        "port-prio 4791:3 \n"
        "pcp-prio 1:1 10:2 \n"  # -N spelling of 1nd and 2de
    )
    app = parse_dcb_app(text)
    assert app.ethtype_prio == ((0x8906, 3),)
    assert app.stream_port_prio == app.dgram_port_prio == app.port_prio == ((4791, 3),)
    assert app.pcp_prio == (("1nd", 1), ("2de", 2))


def test_app_json_pcp_and_default() -> None:
    doc = (
        '{"ethtype_prio":[[35078,3," "]],"default_prio":[0],'
        '"pcp_prio":[["1nd",1," "],["2de",2," "]],"unknown_prio":[[1,1]]}'
    )
    app = parse_dcb_app(doc)
    assert app.ethtype_prio == ((0x8906, 3),) and app.default_prio == (0,)
    assert app.pcp_prio == (("1nd", 1), ("2de", 2))
    numeric = '{"pcp_prio":[[1,1," "],[10,2," "]]}'
    assert parse_dcb_app(numeric).pcp_prio == (("1nd", 1), ("2de", 2))


@pytest.mark.parametrize("text", ["", "\n", "{}", "{}\n"])
def test_app_empty_table(text: str) -> None:
    assert parse_dcb_app(text) == DcbApp((), (), ())


def test_dscp_name_table() -> None:
    assert DSCP_NAMES["AF31"] == 26 and DSCP_NAMES["CS6"] == 48 and DSCP_NAMES["EF"] == 46
    for name, value in DSCP_NAMES.items():
        assert parse_dcb_app(f"dscp-prio {name}:1\n").dscp_prio == ((value, 1),)
    assert parse_dcb_app("dscp-prio af31:3\n").dscp_prio == ((26, 3),)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("dscp-prio 0:0 GOLD:3\n", 1),
        ("default-prio 0\ndscp-prio 64:3\n", 2),
        ("dscp-prio 26:8\n", 1),
        ("dscp-prio 26\n", 1),
        ("dscp-prio\n", 1),
        ("pcp-prio 9nd:1\n", 1),
        ("ethtype-prio zz:1\n", 1),
        ("stream-port-prio 0:1\n", 1),
        ("dscp-prio 0:0\ndscp-prio 24:3\n", 2),
        ("24:3\n", 1),
    ],
)
def test_app_text_errors(text: str, line: int) -> None:
    with pytest.raises(ParseError) as ei:
        parse_dcb_app(text, source="cmd/dcb_app_show.txt")
    assert ei.value.line == line and ei.value.path == "cmd/dcb_app_show.txt" and ei.value.fix


def test_unknown_dscp_name_suggests_numeric_output() -> None:
    with pytest.raises(ParseError) as ei:
        parse_dcb_app("dscp-prio GOLD:3\n")
    assert "-N" in (ei.value.fix or "")


@pytest.mark.parametrize(
    "text",
    [
        '{"dscp_prio":[[24]]}',
        '{"dscp_prio":[[24,3,7]]}',
        '{"dscp_prio":[[64,3," "]]}',
        '{"dscp_prio":[["CS3",3," "]]}',
        '{"dscp_prio":[[24,9," "]]}',
        '{"dscp_prio":{"24":3}}',
        '{"default_prio":[true]}',
        '{"pcp_prio":[["8nd",1," "]]}',
        '{"dscp_prio":[[24,3," "]',
    ],
)
def test_app_json_errors(text: str) -> None:
    with pytest.raises(ParseError) as ei:
        parse_dcb_app(text)
    assert ei.value.line == 1
