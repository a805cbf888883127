"""Friendliness: shell completion that works in a real bash, and no ANSI colour when stdout is not a terminal or
NO_COLOR is set."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys

import pytest

from conftest import HOSTS, REPO, run_cli


@pytest.mark.parametrize("shell,marker", [("bash", "complete -o default -F _ncclctl_completion ncclctl"),
                                          ("zsh", "#compdef ncclctl"), ("fish", "complete --command ncclctl")])
def test_completion_scripts(shell, marker):
    r = run_cli("completion", shell)
    assert r.returncode == 0 and marker in r.stdout and "_NCCLCTL_COMPLETE" in r.stdout, r.stdout + r.stderr


def test_unknown_shell_is_a_usage_error():
    r = run_cli("completion", "tcsh")
    assert r.returncode == 2 and "tcsh" in r.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_completes_commands_and_options(tmp_path):
    """Source the generated script in bash and ask it, the way bash does on TAB."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "ncclctl"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -m ncclctl \"$@\"\n")
    wrapper.chmod(0o755)
    script = tmp_path / "ncclctl.bash"
    script.write_text(run_cli("completion", "bash").stdout)

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        prog = (f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
                f"_ncclctl_completion ncclctl; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
        env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO)}
        r = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog], env=env, capture_output=True, text=True,
                           timeout=60, cwd=REPO)
        assert r.returncode == 0, r.stderr
        return [w for w in r.stdout.split("\n") if w]

    assert {"conf", "facts", "topo", "rings"} <= set(complete("ncclctl", "''"))
    assert complete("ncclctl", "con") == ["conf"]
    assert "generate" in complete("ncclctl", "conf", "''")
    assert {"--check", "--comments"} <= set(complete("ncclctl", "conf", "generate", "--c"))


# -- colour ----------------------------------------------------------------------------------------

COMMANDS = [
    ["--help"], ["conf", "generate", "--help"], ["facts", "--help"], ["topo", "generate", "--help"],
    ["rails", "--root", str(HOSTS / "dgx-h100")],
    ["probe", "--root", str(HOSTS / "dgx-h100"), "--format", "tree"],
    ["conf", "generate", "--root", str(HOSTS / "cloud-vm-flat")],  # warnings on stderr
    ["topo", "validate", str(REPO / "fixtures" / "topo" / "invalid-host")],  # an error
    ["lint", "--root", str(HOSTS / "dgx-h100-port-down")],  # findings
    ["rules"],
    ["no-such-command"],  # a usage error
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a)[:40])
def test_no_escape_sequences_in_pipes(args):
    r = run_cli(*args, env={"TERM": "xterm-256color", "COLORTERM": "truecolor"})
    assert "\x1b" not in r.stdout and "\x1b" not in r.stderr, (r.stdout + r.stderr)[:500]
    assert r.stdout or r.stderr


def _on_a_terminal(args: list[str], env: dict) -> bytes:
    master, slave = pty.openpty()
    full = {**os.environ, "TERM": "xterm-256color", **env}
    full.pop("NCCLCTL_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "ncclctl", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=full, cwd=REPO)
    os.close(slave)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        proc.wait(timeout=60)
    return out


@pytest.mark.parametrize("args", [["--help"], ["no-such-command"], ["lint", "--root", str(HOSTS / "dgx-h100-port-down")],
                                  ["conf", "generate", "--root", str(HOSTS / "cloud-vm-flat")]],
                         ids=lambda a: " ".join(a)[:30])
def test_no_colour_on_a_terminal_with_no_color(args):
    out = _on_a_terminal(args, {"NO_COLOR": "1"})
    assert out and b"\x1b[" not in out, out[:500]
