"""show_gids parser. The sample is laid out byte for byte as mlnx-tools sbin/show_gids echoes it
(header/separator strings and row formats copied from the script); the GID values are the real
ones quoted in host-facts.md (Juniper JVD ConnectX-7, IB capture GUID 58a2:e103:001a:677e)."""

from __future__ import annotations

import pytest

from ncclctl.errors import ParseError
from ncclctl.parsers.show_gids import ShowGid, parse_show_gids

HEADER = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
SEPARATOR = "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"


def _row(dev: str, port: int, idx: int, gid: str, ver: str, ndev: str, ipv4: str = "") -> str:
    if ipv4:
        return f"{dev}\t{port}\t{idx}\t{gid}\t{ipv4}  \t{ver}\t{ndev}\n"
    return f"{dev}\t{port}\t{idx}\t{gid}\t\t\t{ver}\t{ndev}\n"


ROWS = (
    _row("mlx5_0", 1, 0, "fe80:0000:0000:0000:a288:c2ff:fe3b:506a", "v1", "ens1f0np0")
    + _row("mlx5_0", 1, 1, "fe80:0000:0000:0000:a288:c2ff:fe3b:506a", "v2", "ens1f0np0")
    # `ls` order: 10 and 11 come before 2 (macvlan/SR-IOV pods leave sparse tables)
    + _row("mlx5_0", 1, 10, "0000:0000:0000:0000:0000:ffff:0ac8:0164", "v1", "ens1f0np0.100", "10.200.1.100")
    + _row("mlx5_0", 1, 11, "0000:0000:0000:0000:0000:ffff:0ac8:0164", "v2", "ens1f0np0.100", "10.200.1.100")
    + _row("mlx5_0", 1, 2, "0000:0000:0000:0000:0000:ffff:0ac8:010a", "v1", "ens1f0np0", "10.200.1.10")
    + _row("mlx5_0", 1, 3, "0000:0000:0000:0000:0000:ffff:0ac8:010a", "v2", "ens1f0np0", "10.200.1.10")
    # InfiniBand port: type "IB/RoCE v1" -> v1, ndevs unreadable -> empty last column
    + _row("mlx5_1", 1, 0, "fe80:0000:0000:0000:58a2:e103:001a:677e", "v1", "")
)
FULL = HEADER + SEPARATOR + ROWS + "n_gids_found=7\n"

SAMPLES = [FULL, ROWS, HEADER + SEPARATOR + "n_gids_found=0\n"]


def test_full_table() -> None:
    rows = parse_show_gids(FULL)
    assert len(rows) == 7
    assert rows[0] == ShowGid(
        dev="mlx5_0",
        port=1,
        index=0,
        gid="fe80:0000:0000:0000:a288:c2ff:fe3b:506a",
        ipv4=None,
        version="v1",
        netdev="ens1f0np0",
    )
    assert rows[0].line == 3 and rows[0].is_link_local
    v2 = [r for r in rows if r.version == "v2" and r.ipv4]
    assert [(r.index, r.ipv4, r.netdev) for r in v2] == [
        (11, "10.200.1.100", "ens1f0np0.100"),
        (3, "10.200.1.10", "ens1f0np0"),
    ]
    assert all(r.is_ipv4_mapped for r in v2)
    ib = rows[-1]
    assert (ib.dev, ib.version, ib.netdev, ib.ipv4) == ("mlx5_1", "v1", None, None)


@pytest.mark.parametrize(
    "variant",
    [
        lambda t: t.expandtabs(8),
        lambda t: t.replace("\n", "\r\n"),
        lambda t: "\n".join("  " + ln + "  " for ln in t.split("\n")),
        lambda t: t.replace("\n", "\n\n"),
    ],
)
def test_whitespace_variants(variant) -> None:  # type: ignore[no-untyped-def]
    assert parse_show_gids(variant(FULL)) == parse_show_gids(FULL)


def test_without_header_or_trailer() -> None:
    assert parse_show_gids(ROWS) == parse_show_gids(FULL)


def test_unreadable_type_gives_no_version() -> None:
    text = "mlx5_0\t1\t5\tfe80:0000:0000:0000:a288:c2ff:fe3b:506a\t\t\t\tens1f0np0\n"
    (row,) = parse_show_gids(text)
    assert row.version is None and row.netdev == "ens1f0np0"
    (row,) = parse_show_gids("mlx5_0\t1\t5\tfe80:0000:0000:0000:a288:c2ff:fe3b:506a\t\t\t\t\n")
    assert row.version is None and row.netdev is None


@pytest.mark.parametrize("text", ["", "\n", HEADER + SEPARATOR + "n_gids_found=0\n"])
def test_empty(text: str) -> None:
    assert parse_show_gids(text) == ()


def test_trailer_mismatch_means_lost_lines() -> None:
    text = HEADER + SEPARATOR + ROWS.split("\n", 1)[1] + "n_gids_found=7\n"
    with pytest.raises(ParseError) as ei:
        parse_show_gids(text, source="cmd/show_gids.txt")
    assert ei.value.line == 9 and ei.value.path == "cmd/show_gids.txt"


@pytest.mark.parametrize(
    ("bad", "line"),
    [
        (FULL.replace("fe80:0000:0000:0000:58a2:e103:001a:677e", "fe80::58a2:e103:1a:677e"), 9),
        (FULL.replace("mlx5_1\t1\t0", "mlx5_1\tone\t0"), 9),
        (FULL.replace("10.200.1.10  ", "10.200.1.310  ", 1), 7),
        (FULL.replace("\tv1\tens1f0np0\n", "\tv1\tens1f0np0\textra\n", 1), 3),
        (FULL + "mlx5_0\t1\t0\tfe80:0000:0000:0000:a288:c2ff:fe3b:506a\t\t\tv1\tx\n", 11),
        ("mlx5_0\t1\t0\n", 1),
        (FULL.replace("n_gids_found=7\n", "n_gids_found=7\nn_gids_found=7\n"), 11),
    ],
)
def test_errors(bad: str, line: int) -> None:
    with pytest.raises(ParseError) as ei:
        parse_show_gids(bad)
    assert ei.value.line == line and ei.value.fix
