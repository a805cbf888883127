"""Command outputs from standard input and empty inputs through the CLI (issue 28, 'a CLI that fits the shell'):
`ibstat | ncclctl parse ibstat -` reads the pipe as the README promises, and an empty input (an empty file, /dev/null,
an empty pipe) is said to be empty (exit 3), never parsed into "0 records" or a list of differences."""

from __future__ import annotations

import subprocess
import sys

from conftest import HOSTS, REPO

DEVINFO = HOSTS / "dgx-h100" / "cmd" / "ibv_devinfo_-v.txt"


def _run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ncclctl", *args], input=stdin, capture_output=True, cwd=REPO,
                          timeout=60)


def test_parse_reads_standard_input():
    piped = _run("parse", "ibv_devinfo", "-", "--format", "json", stdin=DEVINFO.read_bytes())
    named = _run("parse", "ibv_devinfo", str(DEVINFO), "--format", "json")
    assert piped.returncode == 0 == named.returncode, piped.stderr
    assert piped.stdout.replace(b"<stdin>", str(DEVINFO).encode()) == named.stdout


def test_empty_inputs_are_said_to_be_empty(tmp_path):
    empty = tmp_path / "ibstat.txt"
    empty.write_text("\n\n")
    for args, stdin in ((("parse", "ibstat", "-"), b""), (("parse", "ibstat", str(empty)), b""),
                        (("parse", "ibstat", "/dev/null"), b""),
                        (("probe", "--root", str(HOSTS / "dgx-h100"), "--compare-smi", "/dev/null"), b"")):
        res = _run(*args, stdin=stdin)
        assert res.returncode == 3, (args, res.stdout, res.stderr)
        assert b"empty" in res.stderr and b"Traceback" not in res.stderr
        assert res.stdout == b""


def test_a_missing_file_is_no_such_file():
    res = _run("parse", "ibstat", "/nonexistent/ibstat.txt")
    assert res.returncode == 3 and b"no such" in res.stderr and b"larger" not in res.stderr


import pytest  # noqa: E402


@pytest.mark.parametrize("prompt", ["user@host:~$ ibv_devinfo -v", "$ user@host:~$ ibv_devinfo -v", "# ibv_devinfo -v",
                                    "(venv) $ ibv_devinfo -v", "[root@gpu01 ~]# ibv_devinfo -v",
                                    "root@gpu01:/# sudo ibv_devinfo -v"])
def test_pasted_output_with_a_prompt_line_in_any_common_form(prompt):
    clean = _run("parse", "ibv_devinfo", "-", "--format", "json", stdin=DEVINFO.read_bytes())
    pasted = _run("parse", "ibv_devinfo", "-", "--format", "json",
                  stdin=prompt.encode() + b"\n" + DEVINFO.read_bytes() + b"user@host:~$ \n")
    assert pasted.returncode == 0, pasted.stderr
    strip = lambda b: [ln for ln in b.splitlines() if b'"line"' not in ln]  # noqa: E731 -- line numbers shift by one
    assert strip(pasted.stdout) == strip(clean.stdout)
