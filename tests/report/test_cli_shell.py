"""The report commands fit the shell (issue 28): ``-q/--quiet``, colour on a terminal only (``--color``,
``NO_COLOR``, ``TERM=dumb``), a machine report written with ``-o`` beside the text on screen, SARIF for
``fleet lint``, and SARIF links that point at the project's own rule docs (never a made-up address)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

from conftest import HOSTS, REPO, run_cli

PORT_DOWN = str(HOSTS / "dgx-h100-port-down")
CLEAN = str(HOSTS / "dgx-h100")
LOG = str(REPO / "fixtures" / "logs" / "v2.27-roce-ib-errors.log")
ESC = "\x1b["


def _strip(text: str) -> str:
    from ncclctl.report.color import strip

    return strip(text)


def _summary(stdout: str) -> str:
    return stdout.rstrip("\n").splitlines()[-1]


@pytest.mark.parametrize("args", [
    ["lint", "--root", PORT_DOWN],
    ["log", "check", LOG],
    ["fleet", "lint", CLEAN, PORT_DOWN],
    ["topo", "validate", str(REPO / "fixtures" / "topo" / "valid" / "meaning-links-topo.xml")],
])
def test_quiet_prints_the_summary_line_alone_with_the_same_exit_code(args):
    full = run_cli(*args)
    quiet = run_cli(*args, "-q")
    assert full.returncode in (0, 1) and quiet.returncode == full.returncode, (full.stderr, quiet.stderr)
    assert quiet.stdout.count("\n") == 1, quiet.stdout
    assert quiet.stdout.rstrip("\n") == _summary(full.stdout)
    assert len(full.stdout.splitlines()) > 1 or full.returncode == 0


def test_colour_only_when_asked_or_on_a_terminal():
    never = run_cli("lint", "--root", PORT_DOWN)  # a pipe: auto means none
    assert ESC not in never.stdout and never.returncode == 1
    always = run_cli("lint", "--root", PORT_DOWN, "--color", "always")
    assert "\x1b[1;31merror\x1b[0m" in always.stdout and always.returncode == 1
    # The colours add codes and change nothing else.
    assert _strip(always.stdout) == never.stdout
    assert ESC not in run_cli("lint", "--root", PORT_DOWN, "--color", "never").stdout
    # Machine formats never get colour.
    assert ESC not in run_cli("lint", "--root", PORT_DOWN, "-f", "json", "--color", "always").stdout


def _on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """stdout of ``ncclctl ARGS`` run on a pseudo-terminal (what a person at a shell sees)."""
    master, slave = pty.openpty()
    full_env = {**os.environ, "TERM": "xterm", **env}
    full_env.pop("NO_COLOR", None) if "NO_COLOR" not in env else None
    proc = subprocess.Popen([sys.executable, "-m", "ncclctl", *args], stdout=slave, stderr=subprocess.DEVNULL,
                            cwd=REPO, env=full_env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_auto_colours_a_terminal_unless_no_color_or_a_dumb_terminal():
    args = ["lint", "--root", PORT_DOWN]
    assert "\x1b[1;31merror" in _on_a_terminal(args, {})
    assert ESC not in _on_a_terminal(args, {"NO_COLOR": "1"})
    assert ESC not in _on_a_terminal(args, {"TERM": "dumb"})
    assert ESC not in _on_a_terminal([*args, "--color", "never"], {})


def test_colour_never_lets_input_escape_sequences_through(capsys):
    """Colour is added after the input's control characters are escaped: an OSC 52 in a device name stays text."""
    from ncclctl.cli.common import out

    out("mlx5_0\x1b]52;c;ZWNobyBoaQ==\x07: error: IB001: port down\n", color=True)
    printed = capsys.readouterr().out
    assert "\\x1b]52" in printed and "\x1b]" not in printed and "\x07" not in printed
    assert "\x1b[1;31merror\x1b[0m" in printed


@pytest.mark.parametrize("fmt", ["sarif", "junit", "json"])
def test_output_file_gets_the_machine_format_and_the_terminal_the_text(tmp_path, fmt):
    path = tmp_path / f"lint.{fmt}"
    r = run_cli("lint", "--root", PORT_DOWN, "-f", fmt, "-o", str(path))
    text = run_cli("lint", "--root", PORT_DOWN)
    assert r.returncode == 1 == text.returncode
    assert r.stdout == text.stdout  # the text report, as without -o
    body = path.read_text(encoding="utf-8")
    if fmt == "junit":
        assert body.startswith("<?xml") and "IB001" in body
    else:
        assert "IB001" in json.dumps(json.loads(body))
    q = run_cli("lint", "--root", PORT_DOWN, "-f", fmt, "-o", str(path), "-q")
    assert q.stdout == _summary(text.stdout) + "\n" and q.returncode == 1
    # A text report written to a file is not printed again; an engine's textfile stays silent.
    assert run_cli("lint", "--root", PORT_DOWN, "-o", str(tmp_path / "lint.txt")).stdout == ""
    assert run_cli("lint", "--root", PORT_DOWN, "-f", "prom", "-o", str(tmp_path / "x.prom")).stdout == ""


def test_fleet_lint_speaks_sarif_with_each_result_on_its_host(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    r = run_cli("fleet", "lint", CLEAN, PORT_DOWN, str(broken), "-f", "sarif")
    assert r.returncode == 3, r.stderr  # one host unreadable: the others are still reported
    doc = json.loads(r.stdout)
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    run = doc["runs"][0]
    ids = [d["id"] for d in run["tool"]["driver"]["rules"]]
    assert len(ids) == len(set(ids)) and "IB001" in ids and "FLT001" in ids  # rules that ran, fleet rules too
    ib = [res for res in run["results"] if res["ruleId"] == "IB001"]
    assert len(ib) == 1 and ib[0]["level"] == "error" and ids[ib[0]["ruleIndex"]] == "IB001"
    where = ib[0]["locations"][0]["logicalLocations"][0]
    assert where["name"] == "mlx5_3" and where["fullyQualifiedName"].endswith("/mlx5_3")
    assert "dgx-h100-port-down" in where["fullyQualifiedName"]
    inv = run["invocations"][0]
    assert inv["executionSuccessful"] is False
    assert "broken.json" in inv["toolExecutionNotifications"][0]["message"]["text"]
    clean = json.loads(run_cli("fleet", "lint", CLEAN, CLEAN, "-f", "sarif").stdout)["runs"][0]
    assert clean["results"] == [] and clean["invocations"][0]["executionSuccessful"] is True


def test_sarif_links_point_at_the_projects_rule_docs():
    r = run_cli("lint", "--root", PORT_DOWN, "-f", "sarif")
    assert ".invalid" not in r.stdout
    rules = {d["id"]: d for d in json.loads(r.stdout)["runs"][0]["tool"]["driver"]["rules"]}
    # No public home: no link, the whole documentation inline, and the page that holds the rule's table named.
    assert "helpUri" not in rules["IB001"] and "docs/rules-ib-roce.md" in rules["IB001"]["help"]["markdown"]
    site = run_cli("lint", "--root", PORT_DOWN, "-f", "sarif",
                   env={"NCCLCTL_DOCS_URL": "https://git.example.org/hpc/ncclctl/blob/main/"})
    driver = json.loads(site.stdout)["runs"][0]["tool"]["driver"]
    rules = {d["id"]: d for d in driver["rules"]}
    assert rules["IB001"]["helpUri"] == "https://git.example.org/hpc/ncclctl/blob/main/docs/rules-ib-roce.md"
    assert rules["NCCL011"]["helpUri"].endswith("/docs/rules-nccl.md")
    assert driver["informationUri"] == "https://git.example.org/hpc/ncclctl/blob/main/README.md"
    for d in rules.values():  # every page linked is in the source tree, with the rule in its table
        page = REPO / d["helpUri"].split("/blob/main/", 1)[1]
        assert f"| {d['id']} |" in page.read_text(encoding="utf-8"), d["id"]
    # A value that is not a URL is ignored rather than written into the report.
    odd = run_cli("lint", "--root", PORT_DOWN, "-f", "sarif", env={"NCCLCTL_DOCS_URL": "javascript:alert(1)"})
    assert "helpUri" not in odd.stdout and "javascript" not in odd.stdout


@pytest.mark.parametrize("args", [
    ["topo", "validate", "/nonexistent/topo.xml"],
    ["lint", "--root", CLEAN, "-c", "/nonexistent/ncclctl.yaml"],
    ["fleet", "lint", "-i", "/nonexistent/inventory.yaml"],
])
def test_a_missing_file_gets_no_such_file_and_no_remark_on_its_size(args):
    r = run_cli(*args)
    assert r.returncode == 3 and "no such" in r.stderr, r.stderr
    assert "kilobytes" not in r.stderr and "few lines" not in r.stderr
    assert r.stderr.rstrip().endswith("(fix: check the path)"), r.stderr
