"""Start-up stays fast: heavy modules are imported inside commands, never by --version/--help."""

import subprocess
import sys

import pytest

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
