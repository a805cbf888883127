"""Packaging: sdist and wheel carry the schemas (and lint profiles); the wheel installs with pipx into a fresh
environment and runs there, finding its schemas inside the installed package.

Needs the package index (build requirements, pipx, the wheel's dependencies): skipped with the reason when it
cannot be reached.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import zipfile

import jsonschema

from conftest import HOSTS, REPO



def _shipped(src):
    """The schema and profile files of the tree the distributions were built from (a copy taken at build time:
    others may be editing the checkout meanwhile)."""
    schemas = sorted(p for p in (src / "schemas").iterdir() if p.suffix in (".json", ".xsd"))
    profiles = sorted((src / "ncclctl" / "profiles").glob("*.yaml"))
    return schemas, profiles


def test_the_package_schema_folder_is_the_checkout_schema_folder():
    """ncclctl/_schemas is a link to schemas/ in a checkout, so code finds the same files there as installed."""
    link = REPO / "ncclctl" / "_schemas"
    assert link.is_symlink() and os.readlink(link) == "../schemas"
    assert sorted(p.name for p in link.iterdir()) == sorted(p.name for p in (REPO / "schemas").iterdir())


def test_wheel_and_sdist_carry_schemas_and_profiles(dist):
    SCHEMAS, PROFILES = _shipped(dist["src"])
    assert SCHEMAS
    # one wheel for every Python and platform: the C reader is opt-in (NCCLCTL_BUILD_C=1), not in the default build
    assert dist["wheel"].name.endswith("-py3-none-any.whl"), dist["wheel"].name
    with zipfile.ZipFile(dist["wheel"]) as whl:
        names = set(whl.namelist())
        assert not [n for n in names if n.endswith((".so", ".pyd", ".c"))], sorted(names)
        for p in SCHEMAS:
            assert whl.read(f"ncclctl/_schemas/{p.name}") == p.read_bytes(), p.name
        for p in PROFILES:
            assert f"ncclctl/profiles/{p.name}" in names, p.name
        assert any(n.endswith("entry_points.txt") and b"ncclctl = ncclctl.cli:main" in whl.read(n) for n in names)
    with tarfile.open(dist["sdist"]) as sdist:
        top = sdist.getnames()[0].split("/")[0]
        for p in SCHEMAS:
            member = sdist.getmember(f"{top}/ncclctl/_schemas/{p.name}")
            assert member.isfile(), f"{member.name} is not a regular file in the sdist"
            assert sdist.extractfile(member).read() == p.read_bytes()
        for p in PROFILES:
            assert sdist.getmember(f"{top}/ncclctl/profiles/{p.name}").isfile()


def test_pipx_installs_the_wheel_and_it_runs(dist, tmp_path):
    home = tmp_path / "pipx"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIPX_", "NCCL", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(PIPX_HOME=str(home / "home"), PIPX_BIN_DIR=str(home / "bin"), PIPX_MAN_DIR=str(home / "man"))
    proc = subprocess.run([str(dist["tools"] / "bin" / "pipx"), "install", str(dist["wheel"])], env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        from .tools import offline_or_fail

        offline_or_fail("pipx install", proc)
    exe = home / "bin" / "ncclctl"
    assert exe.exists(), proc.stdout + proc.stderr

    def run(*args: str) -> subprocess.CompletedProcess:
        # From a folder outside the checkout: nothing may come from the source tree.
        return subprocess.run([str(exe), *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)

    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("ncclctl "), r.stderr
    where = subprocess.run([str(home / "home" / "venvs" / "ncclctl" / "bin" / "python"), "-c",
                            "import ncclctl, os; print(os.path.dirname(ncclctl.__file__))"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60).stdout.strip()
    assert where.startswith(str(home)), f"ncclctl imported from {where}, not from the pipx environment"
    assert not os.path.islink(os.path.join(where, "_schemas"))
    r = run("rules")
    assert r.returncode == 0 and "NCCL001" in r.stdout, r.stderr
    # XSD checks need the installed schemas (a missing schema is exit 3 'schema ... not found').
    r = run("topo", "validate", str(REPO / "fixtures" / "topo" / "valid" / "nccl-example-topo.xml"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = run("topo", "validate", "--format", "json", str(REPO / "fixtures" / "topo" / "valid" / "nccl-example-graph.xml"))
    assert r.returncode == 0 and json.loads(r.stdout)["kind"] == "graph", r.stdout + r.stderr
    r = run("facts", "--root", str(HOSTS / "dgx-h100"))
    schema = json.loads(open(os.path.join(where, "_schemas", "facts.schema.json")).read())
    jsonschema.validate(json.loads(r.stdout), schema)
    r = run("completion", "bash")
    assert r.returncode == 0 and "complete -o default -F _ncclctl_completion ncclctl" in r.stdout
    shutil.rmtree(home, ignore_errors=True)  # a whole environment: do not leave it to pytest's tmp rotation
