"""mlnx_qos parser. Samples follow mlnx-tools python/mlnx_qos ``pretty_print`` byte for byte (TABs,
"%1d   " columns with trailing spaces, the 8-per-line dscp2prio wrap); the first is the
host-facts.md §3.2 illustration completed with the traffic-class lines its "…" stood for."""

from __future__ import annotations

import pytest

from ncclctl.errors import ParseError
from ncclctl.parsers.mlnx_qos import MlnxQosTc, parse_mlnx_qos

# trust dscp, DSCP->prio default (DSCP>>3, APP-table order), buffers supported, PFC on prio 3.
DSCP_TRUST = (
    "DCBX mode: OS controlled\n"
    "Priority trust state: dscp\n"
    "dscp2prio mapping:\n"
    "\tprio:0 dscp:07,06,05,04,03,02,01,00,\n"
    "\tprio:1 dscp:15,14,13,12,11,10,09,08,\n"
    "\tprio:2 dscp:23,22,21,20,19,18,17,16,\n"
    "\tprio:3 dscp:31,30,29,28,27,26,25,24,\n"
    "\tprio:4 dscp:39,38,37,36,35,34,33,32,\n"
    "\tprio:5 dscp:47,46,45,44,43,42,41,40,\n"
    "\tprio:6 dscp:55,54,53,52,51,50,49,48,\n"
    "\tprio:7 dscp:63,62,61,60,59,58,57,56,\n"
    "Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=2097152\n"
    "Cable len: 7\n"
    "PFC configuration:\n"
    "\tpriority    0   1   2   3   4   5   6   7\n"
    "\tenabled     0   0   0   1   0   0   0   0   \n"
    "\tbuffer      0   0   0   1   0   0   0   0   \n"
    "tc: 0 ratelimit: unlimited, tsa: ets, bw: 50%\n"
    "\t priority:  0\n"
    "\t priority:  1\n"
    "\t priority:  2\n"
    "\t priority:  4\n"
    "\t priority:  5\n"
    "\t priority:  7\n"
    "tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%\n"
    "\t priority:  3\n"
    "tc: 6 ratelimit: 12.5 Gbps, tsa: strict\n"
    "\t priority:  6\n"
)

# trust pcp, no buffer support (message printed before pretty_print, no "buffer" row), lldpad
# running (warning + the blank line from its trailing "\n"), firmware DCBX, 8 TCs 1:1.
PCP_TRUST = (
    "****** WARNING: lldpad service is running and may overwrite your settings ******\n"
    "\n"
    "Buffers commands are not supported on your system\n"
    "DCBX mode: Firmware controlled\n"
    "Priority trust state: pcp\n"
    "Cable len: 7\n"
    "PFC configuration:\n"
    "\tpriority    0   1   2   3   4   5   6   7\n"
    "\tenabled     0   0   0   0   0   0   0   0   \n"
    + "".join(
        f"tc: {i} ratelimit: unlimited, tsa: vendor\n\t priority:  {i}\n" for i in range(8)
    )
)

# Rate limits unreadable: mlnx_qos swallows the IndexError and prints the TSA without its
# "tc: N ratelimit: X, tsa: " prefix.
LOST_PREFIX = (
    "DCBX mode: OS controlled\n"
    "Priority trust state: none\n"
    "Rate limit is not supported on your system!\n"
    "Cable len: 7\n"
    "PFC configuration:\n"
    "\tpriority    0   1   2   3   4   5   6   7\n"
    "\tenabled     0   0   0   0   0   0   0   0   \n"
    "ets, bw: 100%\n"
    "\t priority:  0\n"
    "\t priority:  1\n"
    "strict\n"
    "\t priority:  2\n"
)

SAMPLES = [DSCP_TRUST, PCP_TRUST, LOST_PREFIX]


def test_dscp_trust_sample() -> None:
    q = parse_mlnx_qos(DSCP_TRUST)
    assert q.dcbx_mode == "OS controlled" and q.trust == "dscp"
    assert len(q.dscp2prio) == 64
    assert dict(q.dscp2prio) == {d: d >> 3 for d in range(64)}
    assert q.prios_for_dscp(26) == (3,) and q.prios_for_dscp(48) == (6,)
    assert q.pfc_enabled == (False, False, False, True, False, False, False, False)
    assert q.pfc_priorities == (3,)
    assert q.pfc_buffer == (0, 0, 0, 1, 0, 0, 0, 0)
    assert q.buffer_sizes == (130944, 130944, 0, 0, 0, 0, 0, 0)
    assert q.max_buffer_size == 2097152 and q.cable_len == 7
    assert q.tcs == (
        MlnxQosTc(0, "unlimited", None, "ets", 50, (0, 1, 2, 4, 5, 7)),
        MlnxQosTc(3, "unlimited", None, "ets", 50, (3,)),
        MlnxQosTc(6, "12.5 Gbps", 12.5, "strict", None, (6,)),
    )
    assert not q.lldpad_warning and q.notices == ()


def test_pcp_trust_sample() -> None:
    q = parse_mlnx_qos(PCP_TRUST)
    assert q.lldpad_warning
    assert q.notices == ("Buffers commands are not supported on your system",)
    assert q.dcbx_mode == "Firmware controlled" and q.trust == "pcp"
    assert q.dscp2prio == () and q.pfc_buffer is None and q.buffer_sizes is None
    assert q.pfc_priorities == ()
    assert [(t.tc, t.tsa, t.priorities) for t in q.tcs] == [(i, "vendor", (i,)) for i in range(8)]


def test_lost_tc_prefix() -> None:
    q = parse_mlnx_qos(LOST_PREFIX)
    assert q.trust is None
    assert q.notices == ("Rate limit is not supported on your system!",)
    assert q.tcs == (
        MlnxQosTc(None, None, None, "ets", 100, (0, 1)),
        MlnxQosTc(None, None, None, "strict", None, (2,)),
    )


def test_wrapped_dscp_lines_and_sysfs_order() -> None:
    # sysfs dscp2prio lists DSCPs ascending; a priority with more than 8 DSCPs wraps and repeats
    # its "prio:N dscp:" prefix. Here DSCPs 0..15 go to prio 0 and 26 to prio 3.
    text = DSCP_TRUST.replace(
        "\tprio:0 dscp:07,06,05,04,03,02,01,00,\n\tprio:1 dscp:15,14,13,12,11,10,09,08,\n",
        "\tprio:0 dscp:00,01,02,03,04,05,06,07,\n\tprio:0 dscp:08,09,10,11,12,13,14,15,\n",
    )
    q = parse_mlnx_qos(text)
    assert all(p == 0 for d, p in q.dscp2prio if d < 16)
    assert q.prios_for_dscp(9) == (0,)


def test_dscp_under_two_priorities_is_kept() -> None:
    text = DSCP_TRUST.replace("\tprio:4 dscp:", "\tprio:4 dscp:26,")
    assert parse_mlnx_qos(text).prios_for_dscp(26) == (3, 4)


@pytest.mark.parametrize(
    "variant",
    [
        lambda t: t.expandtabs(8),
        lambda t: t.replace("\t", ""),
        lambda t: t.replace("\n", "\r\n"),
        lambda t: "\n".join("  " + ln.rstrip() for ln in t.split("\n")),
        lambda t: t.replace("\n", "\n\n"),
    ],
)
def test_whitespace_variants(variant) -> None:  # type: ignore[no-untyped-def]
    for text in SAMPLES:
        assert parse_mlnx_qos(variant(text)) == parse_mlnx_qos(text)


def test_empty_output_is_an_error() -> None:
    with pytest.raises(ParseError) as ei:
        parse_mlnx_qos("", source="cmd/mlnx_qos_-i_ens1f0np0.txt")
    assert ei.value.path == "cmd/mlnx_qos_-i_ens1f0np0.txt" and ei.value.line == 1


def test_truncated_before_pfc_rows() -> None:
    text = DSCP_TRUST.split("PFC configuration:")[0]
    with pytest.raises(ParseError) as ei:
        parse_mlnx_qos(text)
    assert ei.value.line == 13 and "enabled" in ei.value.message


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        ("\tenabled     0   0   0   1   0   0   0   0   ", "\tenabled     0   0   0   1   0   0   0", 16),
        ("\tenabled     0   0   0   1", "\tenabled     0   0   0   2", 16),
        ("\tbuffer      0   0   0   1", "\tbuffer      0   0   0   x", 17),
        ("Priority trust state: dscp", "Priority trust state: both", 2),
        ("prio:7 dscp:63,", "prio:7 dscp:64,", 11),
        ("prio:7 dscp:", "prio:8 dscp:", 11),
        ("tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%", "tc: 3 ratelimit: fast, tsa: ets, bw: 50%", 25),
        ("tsa: ets, bw: 50%\n\t priority:  3", "tsa: ets\n\t priority:  3", 25),
        ("Cable len: 7", "Cable len: seven", 13),
        ("DCBX mode: OS controlled", "DCBX mode: mixed", 1),
        ("\t priority:  6", "\t priority:  9", 28),
    ],
)
def test_bad_values(old: str, new: str, line: int) -> None:
    assert old in DSCP_TRUST
    with pytest.raises(ParseError) as ei:
        parse_mlnx_qos(DSCP_TRUST.replace(old, new))
    assert ei.value.line == line and ei.value.fix


def test_priority_line_before_any_tc() -> None:
    text = DSCP_TRUST.replace("tc: 0 ratelimit: unlimited, tsa: ets, bw: 50%\n", "")
    with pytest.raises(ParseError) as ei:
        parse_mlnx_qos(text)
    assert ei.value.line == 18


def test_tool_error_lines_are_rejected() -> None:
    for msg in ("Interface name is required", "ETS features are not supported on your system"):
        with pytest.raises(ParseError) as ei:
            parse_mlnx_qos(msg + "\n")
        assert ei.value.line == 1
    trace = DSCP_TRUST + "Traceback (most recent call last):\n  File \"/usr/sbin/mlnx_qos\", line 9\n"
    with pytest.raises(ParseError) as ei:
        parse_mlnx_qos(trace)
    assert ei.value.line == 29


def test_duplicated_lines_are_rejected() -> None:
    with pytest.raises(ParseError) as ei:
        parse_mlnx_qos(DSCP_TRUST.replace("Cable len: 7\n", "Cable len: 7\nCable len: 7\n"))
    assert ei.value.line == 14
    with pytest.raises(ParseError) as ei:
        parse_mlnx_qos(DSCP_TRUST + "tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%\n")
    assert ei.value.line == 29
