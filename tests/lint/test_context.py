"""The lint context's shared views (ctx.nccl, ctx.nccl_for, ctx.ports, ctx.nccl_ports) and the rule that rule
modules never import each other."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import ncclctl.lint
from ncclctl.lint.context import Ctx, nccl_ports
from ncclctl.model import ConfFile
from ncclctl.nccl.version import DEFAULT, Version

from .family import node, with_env

LINT = Path(ncclctl.lint.__file__).parent


def _with_conf(n, text: str):
    return dataclasses.replace(n, facts=dataclasses.replace(n.facts, conf_files=(ConfFile("/etc/nccl.conf", text),)))


def test_nccl_view_reads_settings_as_nccl_does():
    n = _with_conf(with_env(node("dgx-h100"), NCCL_IB_TC="0x6a"),
                   "NCCL_IB_SL=3 # lossless\nNCCL_IB_TC=0\nNCCL_IB_TIMEOUT=\n#NCCL_DEBUG=INFO\r\n")
    nccl = Ctx(node=n).nccl
    assert nccl.int("NCCL_IB_TC", -1) == 106 and nccl.text("NCCL_IB_TC") == "NCCL_IB_TC=0x6a"  # env beats the file
    assert nccl.int("NCCL_IB_SL", -1) == 3 and nccl.text("NCCL_IB_SL") == "NCCL_IB_SL=3 # lossless (/etc/nccl.conf:1)"
    assert nccl.int("NCCL_IB_TIMEOUT", 20) == 20 and nccl.value("NCCL_IB_TIMEOUT") == ""  # empty: the default
    assert nccl.get("NCCL_IB_SL").line == 1 and nccl.get("NCCL_IB_SL").source == "/etc/nccl.conf"
    assert nccl.get("NCCL_DEBUG") is None and nccl.text("NCCL_DEBUG") == "NCCL_DEBUG unset"


def test_nccl_view_is_resolved_once_per_version():
    ctx = Ctx(node=_with_conf(node("dgx-h100"), "#NCCL_DEBUG=INFO\n"))
    assert ctx.nccl is ctx.nccl_for(DEFAULT) is ctx.nccl_for(Version(2, 30, 7))
    old = ctx.nccl_for(Version(2, 25, 1))  # before 2.26 a '#' line sets a variable named '#NCCL_DEBUG'
    assert old is ctx.nccl_for(Version(2, 25, 1)) and old.value("#NCCL_DEBUG") == "INFO"
    assert ctx.nccl.value("#NCCL_DEBUG") is None
    assert dataclasses.replace(ctx).nccl_for(Version(2, 25, 1)) is not old  # a copy resolves for itself


def test_ports_and_nccl_ports():
    dgx = node("dgx-h100")
    dgx = dataclasses.replace(dgx, facts=dataclasses.replace(dgx.facts, nccl_env=(), conf_files=()))  # nothing set
    ctx = Ctx(node=dgx)
    names = [f"{n.name}:{p.num}" for n, p in ctx.ports]
    assert names[:3] == ["mlx5_0:1", "mlx5_1:1", "mlx5_2:1"] and "mlx5_10:1" in names[9:]  # natural order
    assert ctx.nccl_ports == nccl_ports(ctx) == {(n.name, p.num) for n, p in ctx.ports}
    assert Ctx(node=with_env(dgx, NCCL_IB_HCA="=mlx5_1:1")).nccl_ports == {("mlx5_1", 1)}
    assert Ctx(node=with_env(dgx, NCCL_IB_HCA="mlx5_1")).nccl_ports == {("mlx5_1", 1), ("mlx5_10", 1),
                                                                       ("mlx5_11", 1)}
    assert Ctx(node=with_env(dgx, NCCL_IB_DISABLE="1")).nccl_ports == frozenset()
    assert Ctx(node=with_env(dgx, NCCL_IB_DISABLE="")).nccl_ports == ctx.nccl_ports  # empty: default 0


def test_no_rule_module_imports_another():
    """Rule families share NCCL semantics through ncclctl.nccl and the lint context, never through each other."""
    offenders = []
    for path in sorted(LINT.glob("*.py")):
        if not path.name.startswith("rules_"):  # (fleet.py is the runner; its rules are rules_fleet.py)
            continue
        for stmt in ast.walk(ast.parse(path.read_text())):
            if isinstance(stmt, ast.ImportFrom) and stmt.module:
                mods = [stmt.module] + [f"{stmt.module}.{a.name}" for a in stmt.names]
            elif isinstance(stmt, ast.Import):
                mods = [a.name for a in stmt.names]
            else:
                continue
            offenders += [f"{path.name}: {m}" for m in mods if m.startswith("ncclctl.lint.rules_")]
    assert offenders == []
