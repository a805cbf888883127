"""Start-up stays fast: heavy modules are imported inside commands, never by --version/--help."""

import subprocess
import sys

import pytest

from conftest import REPO

HEAVY = ("lxml", "yaml", "pynvml", "ncclctl.probe", "ncclctl.topo", "jsonschema", "pydantic",
         "ncclctl.registry", "ncclctl.lint", "ncclctl.report", "ncclctl.fabric")


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["topo", "--help"], ["probe", "--help"], ["lint", "--help"],
                                  ["fabric", "--help"], ["log", "--help"], ["perf", "--help"]])
def test_no_heavy_imports(args):
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "ncclctl", *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert not [m for m in HEAVY if m in imported], sorted(m for m in HEAVY if m in imported)


def _imported(args: list[str]) -> set[str]:
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "ncclctl", *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


def test_version_imports_no_cli_framework():
    """``--version`` answers from ncclctl.cli alone: no typer, no click, no command module."""
    imported = _imported(["--version"])
    assert not {m for m in imported if m.startswith(("typer", "click", "ncclctl.cli."))}, sorted(imported)


_MODULES = """
import sys
from ncclctl.cli import main
try:
    main(sys.argv[1:])
finally:
    sys.stderr.write("MODULES " + " ".join(sorted(m for m in sys.modules if m.startswith("ncclctl.cli."))) + "\\n")
"""


def _cli_modules(args: list[str]) -> set[str]:
    result = subprocess.run([sys.executable, "-c", _MODULES, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    line = [x for x in result.stderr.splitlines() if x.startswith("MODULES")][-1]
    return set(line.split()[1:])


@pytest.mark.parametrize("command,module", [("lint", "ncclctl.cli.lint"), ("topo", "ncclctl.cli.topo"),
                                            ("fabric", "ncclctl.cli.fabric"), ("conf", "ncclctl.cli.ops"),
                                            ("parse", "ncclctl.cli.parse"), ("log", "ncclctl.cli.logs"),
                                            ("perf", "ncclctl.cli.perf")])
def test_a_command_imports_only_its_own_module(command, module):
    """The command tree is registered without importing command modules: ``X --help`` loads X's module only
    (and the shared one), and ``--help`` none."""
    assert _cli_modules(["--help"]) == {"ncclctl.cli.common"}
    assert _cli_modules([command, "--help"]) == {"ncclctl.cli.common", module}


_EXIT = """
import atexit, os, sys, threading, time
marker = sys.argv[1]
what = sys.argv[2]

class Gone:
    def __del__(self, _open=open, _path=marker + ".teardown"):  # runs only when the interpreter tears itself down
        with _open(_path, "w") as fh:
            fh.write("x")

keep = Gone()
if what == "atexit":
    atexit.register(lambda: open(marker + ".atexit", "w").write("x"))
elif what == "thread":
    def late():  # still running when the command ends, however slow the machine (a loaded CI took > 0.3 s)
        time.sleep(3.0)
        open(marker + ".thread", "w").write("x")
    threading.Thread(target=late).start()
sys.argv = ["ncclctl", *sys.argv[3:]]
from ncclctl.cli import main
main()
"""


@pytest.mark.parametrize("what", ["nothing", "atexit", "thread"])
def test_console_script_exit(tmp_path, what):
    """The console script ends the process at once when nothing is left to run at exit (no interpreter teardown:
    ~10-15 ms of every command), and exits the usual way when something is: an atexit callback, another thread.
    Output and exit code are the same either way."""
    marker = str(tmp_path / "m")
    args = ["topo", "predict", "--root", str(REPO / "fixtures" / "hosts" / "dgx-h100"), "-N", "2", "--format", "json"]
    got = subprocess.run([sys.executable, "-c", _EXIT, marker, what, *args], capture_output=True, text=True,
                         timeout=60, cwd=REPO)
    ref = subprocess.run([sys.executable, "-m", "ncclctl", *args], capture_output=True, text=True, timeout=60,
                         cwd=REPO)
    assert (got.returncode, got.stdout, got.stderr) == (ref.returncode, ref.stdout, ref.stderr)
    assert ref.stdout.strip().startswith("{")
    torn_down = (tmp_path / "m.teardown").exists()
    if what == "nothing":
        assert not torn_down  # ended at once
    else:
        assert torn_down and (tmp_path / f"m.{what}").exists()
