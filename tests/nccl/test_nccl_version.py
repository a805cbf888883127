"""NCCL release numbers (ncclctl.nccl.version): one Version type, one default, one parser, and the CLI options."""

from __future__ import annotations

import re

import pytest

from conftest import HOSTS, run_cli
from ncclctl.errors import ExitCode, InputError, UsageError
from ncclctl.nccl.version import DEFAULT, DEFAULT_TEXT, RELEASES, Version, parse, parse_option


@pytest.mark.parametrize("value,expected", [
    ("2.30.7", (2, 30, 7)), ("2.30", (2, 30, 0)), ("v2.21.5-1", (2, 21, 5)), (" 2.18.3\n", (2, 18, 3)),
    ((2, 26), (2, 26, 0)), ((2, 26, 6), (2, 26, 6)), (Version(2, 8, 4), (2, 8, 4)), ("3.0", (3, 0, 0)),
])
def test_parse(value, expected):
    v = parse(value)
    assert isinstance(v, Version) and v == expected and tuple(v) == expected


@pytest.mark.parametrize("value", [
    "", "2", "two.thirty", "2.x", "2.30.7.1", "2.30.7-rc1", "2..7", "-2.30", "2.30.7 2", None, 2.30, (2,),
    (2, 30, 7, 1), (2, 30, -1), (True, 30), ("2", "30"), [2, 30, 7],
])
def test_parse_refuses_with_input_error(value):
    with pytest.raises(InputError) as exc:
        parse(value)
    assert exc.value.exit_code == ExitCode.INVALID_INPUT and "2.30.7" in (exc.value.fix or "")


@pytest.mark.parametrize("text", ["two", "3.0", "2", "", "1.9.9"])
def test_parse_option_is_a_usage_error_naming_the_option(text):
    with pytest.raises(UsageError) as exc:
        parse_option(text, "--nccl-version")
    assert exc.value.exit_code == ExitCode.USAGE and exc.value.message.startswith("--nccl-version: ")


def test_version_compares_and_prints_like_the_tuples_it_replaces():
    assert DEFAULT == (2, 30, 7) and DEFAULT >= (2, 30, 7) and DEFAULT > (2, 30, 4) and DEFAULT < (2, 31)
    assert hash(DEFAULT) == hash((2, 30, 7)) and {(2, 30, 7): 1}[DEFAULT] == 1  # cache keys stay the same
    assert str(DEFAULT) == DEFAULT_TEXT == "2.30.7" and f"{Version(2, 8)}" == "2.8.0"
    assert sorted([Version(2, 10, 3), Version(2, 9, 9), Version(2, 30, 3)]) == [(2, 9, 9), (2, 10, 3), (2, 30, 3)]


def test_release_list_is_ordered_and_holds_the_default():
    versions = [parse(r) for r in RELEASES]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert DEFAULT_TEXT in RELEASES and all(str(v) == r for v, r in zip(versions, RELEASES))
    # The lint tables reach past the modelled release: 2.31.2 and 2.32.3 (from their released libraries).
    assert RELEASES[RELEASES.index(DEFAULT_TEXT) + 1:] == ("2.31.2", "2.32.3")


@pytest.mark.parametrize("args", [
    ["topo", "generate", "--help"], ["topo", "validate", "--help"], ["topo", "show", "--help"],
    ["conf", "generate", "--help"],
])
def test_cli_defaults_come_from_the_constant(args):
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    flat = " ".join(r.stdout.split())
    m = re.search(r"--nccl-version X\.Y\[\.Z\] [^\[]*\[default: ([^\]]+)\]", flat)
    assert m is not None and m.group(1) == DEFAULT_TEXT, flat


@pytest.mark.parametrize("value", ["two", "3.0", "2.30.7.1"])
def test_cli_refuses_a_bad_version_with_exit_2(tmp_path, value):
    topo = tmp_path / "topo.xml"
    topo.write_text('<system version="1"/>\n')
    for args in (["topo", "validate", "--nccl-version", value, str(topo)],
                 ["conf", "generate", "--root", str(HOSTS / "dgx-h100"), "--nccl-version", value]):
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert "--nccl-version" in r.stderr and "Traceback" not in r.stderr
