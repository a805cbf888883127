"""The layers, enforced: no import circle anywhere in ncclctl, the import-linter contracts of pyproject.toml kept,
and docs/architecture.md showing the layers as the contract states them.

Every import counts, wherever it is written (module level, inside a function, under TYPE_CHECKING): grimp, the
graph library import-linter uses, records them all. A lazy import keeps start-up fast; it is still a dependency,
and a circle through one is still a circle (a change at either end can break the other)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp", reason="grimp (the import graph) needs Python 3.11+: the layers are checked there")

REPO = Path(__file__).resolve().parents[1]


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively), and the
    modules that import themselves: every import circle, each once."""
    adj = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in adj:
        if root in index:
            continue
        work = [(root, iter(adj[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(adj.get(w, ()))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1 or v in adj.get(v, ()):
                        out.append(sorted(comp))
    return out


def _where(graph: grimp.ImportGraph, comp: list[str]) -> str:
    members = set(comp)
    lines = []
    for m in comp:
        for i in sorted(graph.find_modules_directly_imported_by(m) & members):
            for d in graph.get_import_details(importer=m, imported=i):
                lines.append(f"  {m}:{d['line_number']}: {d['line_contents'].strip()}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("ncclctl", cache_dir=None)


def test_no_import_circle_anywhere(graph):
    found = circles(graph)
    assert not found, "import circles (move the code to the layer it belongs to):\n" + "\n".join(
        f"{len(c)} modules: {', '.join(c)}\n{_where(graph, c)}" for c in found)


def test_the_circle_finder_finds_circles():
    """The check above can fail: an import from NCCL's XML reader up to the validator (the circle issue 26 broke)
    and one of a module to itself are found, with the modules between them."""
    graph = grimp.build_graph("ncclctl", cache_dir=None)
    graph.add_import(importer="ncclctl.nccl.xml", imported="ncclctl.topo.validate", line_number=1,
                     line_contents="from ncclctl.topo.validate import validate_file")
    graph.add_import(importer="ncclctl.names", imported="ncclctl.names")
    found = circles(graph)
    assert ["ncclctl.names"] in found
    [up] = [c for c in found if "ncclctl.nccl.xml" in c]
    assert {"ncclctl.nccl.xml", "ncclctl.topo.validate"} <= set(up)
    assert "ncclctl.nccl.xml:1: from ncclctl.topo.validate import validate_file" in _where(graph, up)


def _contracts() -> list[dict]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_import_linter_contracts_are_kept():
    """The contracts of pyproject.toml ([tool.importlinter]), checked by `lint-imports` as .ci/run runs it."""
    script = Path(sys.executable).with_name("lint-imports")
    cmd = [str(script)] if script.exists() else [shutil.which("lint-imports") or "lint-imports"]
    p = subprocess.run([*cmd, "--no-cache", "--config", str(REPO / "pyproject.toml")], capture_output=True,
                       text=True, cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in p.stdout, p.stdout


def test_the_layers_contract_covers_the_whole_package():
    """Every module and subpackage of ncclctl is on a floor (exhaustive), and the CI runs the checker."""
    [layers] = [c for c in _contracts() if c["id"] == "layers"]
    assert layers["containers"] == ["ncclctl"] and layers["exhaustive"] is True
    assert not layers.get("ignore_imports")
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert ci[ci.index(next(ln for ln in ci if ln.startswith("python -m mypy"))) + 1].startswith("lint-imports")


def test_architecture_doc_shows_the_layers_of_the_contract():
    """docs/architecture.md lists the floors top to bottom exactly as the layers contract states them."""
    [layers] = [c for c in _contracts() if c["id"] == "layers"]
    want = [[m.strip() for m in floor.split("|")] for floor in layers["layers"]]
    doc = (REPO / "docs" / "architecture.md").read_text()
    block = doc.split("<!-- layers: from [tool.importlinter] in pyproject.toml -->", 1)[1].split("```", 2)[1]
    got = [re.findall(r"`?([\w_]+)(?:/|\.py)?`?", ln.split("#")[0].split(":", 1)[1])
           for ln in block.strip().splitlines() if re.match(r"\s*\d+\s*:", ln)]
    assert got == want, f"{got}\n!=\n{want}"
