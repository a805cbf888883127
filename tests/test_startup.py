"""Start-up stays fast: heavy modules are imported inside commands, never by --version/--help."""

import subprocess
import sys

import pytest

HEAVY = ("lxml", "yaml", "pynvml", "ncclctl.probe", "ncclctl.topo", "jsonschema", "pydantic",
         "ncclctl.registry", "ncclctl.lint", "ncclctl.report", "ncclctl.fabric")


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["topo", "--help"], ["probe", "--help"], ["lint", "--help"],
                                  ["fabric", "--help"]])
def test_no_heavy_imports(args):
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "ncclctl", *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert not [m for m in HEAVY if m in imported], sorted(m for m in HEAVY if m in imported)
