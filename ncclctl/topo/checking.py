"""What the topology checks (:mod:`ncclctl.topo.validate`) and the graph checks (:mod:`ncclctl.topo.graphfile`)
share: the findings collector (:class:`Ctx`, rule ids and fixes from the registry), the reader's diagnostics
(:func:`lexical`), the root-element checks, NCCL's dictionary lookup (``kvConvertToInt``) and its path-type
dictionary per version, and how a value is quoted in a message."""

from __future__ import annotations

from typing import Iterable

from ncclctl.findings import Finding
from ncclctl.nccl.version import Version
from ncclctl.nccl.xml import IgnoredElement, ParseResult, XmlDiagnostic, XmlNode, show_text
from ncclctl.topo.rules import rule


def quote(s: str | None) -> str:
    return '""' if s is None else f'"{show_text(s)}"'


def kv_lookup(value: str, keys: Iterable[str]) -> str | None:
    """``kvConvertToInt``: the first key the value starts with (prefix match), or None (fallback)."""
    for k in keys:
        if value.startswith(k):
            return k
    return None


def link_type_keys(v: Version) -> tuple[str, ...]:
    keys = ["LOC", "NVL", "PIX", "PXB", "PHB", "SYS"]
    if v >= Version(2, 8, 0):
        keys.append("NVB")
    if v >= Version(2, 12, 0):
        keys.append("PXN")
    if v >= Version(2, 27, 0):
        keys.append("P2C")
    return tuple(keys)


class Ctx:
    def __init__(self, path: str, version: Version, confirmed: frozenset[tuple[int, int, str]] = frozenset()) -> None:
        self.path = path
        self.version = version
        # (line, column, attribute) of init-only values the host check found equal to what NCCL detects (NTS025)
        self.confirmed = confirmed
        self.findings: list[Finding] = []
        self._seen: set[tuple] = set()

    def add(self, rule_id: str, message: str, node: XmlNode | IgnoredElement | None = None, *,
            line: int | None = None, column: int | None = None, fix: str | None = None,
            evidence: tuple[str, ...] = ()) -> None:
        r = rule(rule_id)
        if node is not None:
            line, column = node.line, node.column
            if isinstance(node, XmlNode) and not evidence:
                evidence = (node.start_tag(),)
        key = (rule_id, line, column, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(rule_id, r.severity, message, self.path, line, column, fix or r.fix,
                                     evidence))

    def from_diag(self, d: XmlDiagnostic) -> None:
        r = rule(d.rule)
        evidence = (d.nccl_message,) if d.nccl_message else ()
        key = (d.rule, d.line, d.column, d.message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(d.rule, d.severity, d.message, self.path, d.line, d.column, r.fix,
                                     evidence))

    def result(self) -> list[Finding]:
        return sorted(self.findings, key=lambda f: (f.line or 0, f.column or 0, f.rule, f.message))


def lexical(ctx: Ctx, res: ParseResult) -> bool:
    """Report the reader's diagnostics; True if NCCL would fail to read the file."""
    if res.fatal is not None:
        # Once NCCL stops, warnings about what it read before are noise: keep the errors.
        for d in res.diagnostics:
            if d.severity.value == "error":
                ctx.from_diag(d)
        ctx.from_diag(res.fatal)
        return True
    for d in res.diagnostics:
        ctx.from_diag(d)
    return False


def _roots_in_order(res: ParseResult) -> list[XmlNode | IgnoredElement]:
    tops: list[XmlNode | IgnoredElement] = list(res.roots)
    tops += [i for i in res.ignored if i.reason == "wrong-root"]
    return sorted(tops, key=lambda t: (t.line, t.column))


#: (expected root, root found) -> the fix, where the rule's own fix would point the wrong way.
_WRONG_ROOT_FIX = {
    ("graphs", "graph"): 'Wrap the <graph> elements in <graphs version="1"> ... </graphs>: NCCL reads <graph> only '
                         "inside <graphs>.",
    ("system", "graph"): "This is a graph file: give it as NCCL_GRAPH_FILE with the root <graphs version=\"1\">; "
                         "NCCL_TOPO_FILE takes a topology file (<system version=\"1\">).",
    ("system", "graphs"): "This is a graph file: give it as NCCL_GRAPH_FILE; NCCL_TOPO_FILE takes a topology file "
                          "(<system version=\"1\">).",
    ("graphs", "system"): "This is a topology file: give it as NCCL_TOPO_FILE; NCCL_GRAPH_FILE takes a graph file "
                          "(<graphs version=\"1\">).",
}


def check_roots(ctx: Ctx, res: ParseResult, root_name: str, r_none: str, r_two: str) -> None:
    """No root / several top-level elements. (A missing or wrong version is fatal in the reader.)"""
    tops = _roots_in_order(res)
    wrong = [t for t in tops if isinstance(t, IgnoredElement)]
    if not res.roots:
        if wrong:
            ctx.add(r_none, f"the top-level element is <{show_text(wrong[0].name)}>, not <{root_name}>: NCCL "
                            "ignores it with its whole subtree and loads nothing", wrong[0],
                    fix=_WRONG_ROOT_FIX.get((root_name, wrong[0].name)))
        else:
            ctx.add(r_none, f"the file contains no element: NCCL loads nothing from it (no <{root_name}>)",
                    line=1, column=1)
    if len(tops) > 1:
        used = res.roots[0] if res.roots else tops[0]
        extra = next(t for t in tops if t is not used)
        ctx.add(r_two, f"{len(tops)} top-level elements: NCCL uses only the <{show_text(used.name)}> at line "
                       f"{used.line} and ignores this <{show_text(extra.name)}>", extra)
