"""``ncclctl topo show`` and ``topo diff``: what NCCL understands from a file, and semantic differences."""

from __future__ import annotations

from ncclctl import JSON_SCHEMA_VERSION
from ncclctl.topo.interpret import TopoView, matrix
from ncclctl.nccl.xml import XmlNode

#: Attributes NCCL overwrites whatever the file says (nccl-format.md §2.3).
OVERWRITTEN = {("gpu", "rank"), ("gpu", "keep"), ("gpu", "mlopart"), ("cpu", "host_hash"), ("net", "dev"),
               ("net", "keep"), ("pci", "keep"), ("cpu", "keep"), ("nic", "keep")}


def tree_text(view: TopoView) -> str:
    res = view.result
    ignored_by_parent: dict[int, list] = {}
    top_ignored = []
    for ig in res.ignored:
        if ig.parent is None:
            top_ignored.append(ig)
        else:
            ignored_by_parent.setdefault(id(ig.parent), []).append(ig)
    lines: list[str] = []
    for ig in top_ignored:
        lines.append(f"(ignored by NCCL: <{ig.name}> at line {ig.line}: {ig.reason})")

    def walk(node: XmlNode, depth: int) -> None:
        pad = "  " * depth
        attrs = []
        for k, v in node.attrs:
            mark = " (overwritten by NCCL)" if (node.name, k) in OVERWRITTEN else ""
            attrs.append(f'{k}="{v}"{mark}')
        role = ""
        if node.name == "pci":
            kids = {c.name for c in node.children}
            role = "  # GPU" if "gpu" in kids else "  # NIC" if "nic" in kids else "  # switch" if "pci" in kids else ""
        lines.append(f"{pad}<{node.name}{' ' if attrs else ''}{' '.join(attrs)}>{role}   [line {node.line}]")
        for k, v in node.dropped_attrs:
            lines.append(f"{pad}  (attribute {k}=\"{v}\" dropped: more than 16 attributes)")
        for c in node.children:
            walk(c, depth + 1)
        for ig in ignored_by_parent.get(id(node), []):
            lines.append(f"{pad}  (ignored by NCCL: <{ig.name}> at line {ig.line}: {ig.reason})")

    for root in res.roots[:1]:
        walk(root, 0)
    for extra in res.roots[1:]:
        lines.append(f"(second root <{extra.name}> at line {extra.line}: NCCL uses only the first)")
    lines.append("")
    lines.append(f"{len(view.cpus)} CPU(s), {len(view.switches)} switch(es), {len(view.gpus)} GPU(s), "
                 f"{len(view.nets)} net(s); {res.node_count} of {res.max_nodes} XML node slots used")
    return "\n".join(lines) + "\n"


def matrix_text(view: TopoView) -> str:
    labels, rows = matrix(view)
    if not labels:
        return "no GPUs or NICs in the file: NCCL will detect them itself (skeleton file)\n"
    width = max(len(x) for x in labels) + 1
    out = [" " * width + "".join(f"{x:<{width}}" for x in labels)]
    for label, row in zip(labels, rows):
        out.append((f"{label:<{width}}" + "".join(f"{c:<{width}}" for c in row)).rstrip())
    out.append("")
    out.append("Path types as NCCL derives them from this file (PHB: same CPU, SYS: different CPUs).")
    return "\n".join(out) + "\n"


def view_doc(view: TopoView) -> dict:
    labels, rows = matrix(view)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "cpus": [{"numaid": c.numaid, "attrs": c.attrs, "line": c.node.line} for c in view.cpus],
        "switches": [{"busid": s.get("busid"), "line": s.line} for s in view.switches],
        "gpus": [{"dev": g.dev, "busid": g.busid, "sm": g.sm, "numaid": g.numaid,
                  "nvlinks": [{"target": t, "count": c, "tclass": tc} for t, c, tc in g.nvlinks],
                  "c2c": {"bw": g.c2c[0], "count": g.c2c[1]} if g.c2c else None, "line": g.node.line}
                 for g in view.gpus],
        "nets": [{"name": n.name, "busid": n.busid, "numaid": n.numaid, "attrs": n.attrs, "line": n.node.line}
                 for n in view.nets],
        "ignored": [{"element": i.name, "line": i.line, "reason": i.reason} for i in view.result.ignored],
        "matrix": {"labels": labels, "rows": rows},
    }


# --------------------------------------------------------------------------------------------------
# Semantic diff: facts keyed by identity (busid, numaid, net name), blind to formatting and order.


def nearest_parent(node: XmlNode) -> XmlNode | None:
    """The ``<pci>`` or ``<cpu>`` an element hangs from (None at the top)."""
    p = node.parent
    while p is not None and p.name not in ("pci", "cpu"):
        p = p.parent
    return p


def facts(view: TopoView) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    root = view.result.root
    if root is not None:
        out["system"] = {k: v for k, v in root.attrs if k}
    for c in view.cpus:
        out[f"cpu numaid={c.numaid}"] = {k: v for k, v in c.attrs.items() if k and k != "host_hash"}

    def parent_id(node: XmlNode) -> str:
        p = nearest_parent(node)
        if p is None:
            return "-"
        return f"pci {p.get('busid')}" if p.name == "pci" else f"cpu numaid={p.get('numaid')}"

    for cpu in view.cpus:
        for node in cpu.node.iter():
            if node.name == "pci":
                attrs = {k: v for k, v in node.attrs if k}
                attrs["(parent)"] = parent_id(node)
                out[f"pci {node.get('busid')}"] = attrs
            elif node.name == "gpu":
                pci = node.parent
                attrs = {k: v for k, v in node.attrs if k and k not in ("rank", "keep")}
                out[f"gpu at {pci.get('busid') if pci else '?'}"] = attrs
                for link in node.children:
                    if link.name == "nvlink":
                        out[f"nvlink {pci.get('busid') if pci else '?'} -> {link.get('target')}"] = {
                            k: v for k, v in link.attrs if k}
                    elif link.name == "c2c":
                        out[f"c2c at {pci.get('busid') if pci else '?'}"] = {k: v for k, v in link.attrs if k}
            elif node.name == "net":
                attrs = {k: v for k, v in node.attrs if k and k not in ("keep", "dev")}
                attrs["(parent)"] = parent_id(node)
                out[f"net {node.get('name')}"] = attrs
            elif node.name == "pcilink":
                out[f"pcilink {parent_id(node)} -> {node.get('target')}"] = {}
    return out


def diff(a: TopoView, b: TopoView) -> list[dict]:
    fa, fb = facts(a), facts(b)
    changes: list[dict] = []
    for key in sorted(set(fa) | set(fb)):
        if key not in fb:
            changes.append({"change": "removed", "what": key, "attrs": fa[key]})
        elif key not in fa:
            changes.append({"change": "added", "what": key, "attrs": fb[key]})
        else:
            for attr in sorted(set(fa[key]) | set(fb[key])):
                va, vb = fa[key].get(attr), fb[key].get(attr)
                if va != vb:
                    changes.append({"change": "changed", "what": key, "attr": attr, "from": va, "to": vb})
    return changes


def diff_text(changes: list[dict], a: str, b: str, notes: list[str] | None = None,
              consequences: list[str] | None = None) -> str:
    """The changes (each with its ``meaning`` lines when :mod:`ncclctl.topo.explain` added them), then file-level
    notes and what NCCL decides differently."""
    if not changes:
        return f"no semantic difference between {a} and {b}\n"
    lines = [f"--- {a}", f"+++ {b}"]
    for c in changes:
        if c["change"] == "removed":
            lines.append(f"- {c['what']}")
        elif c["change"] == "added":
            lines.append(f"+ {c['what']}")
        else:
            lines.append(f"~ {c['what']}: {c['attr']}: {c['from']!r} -> {c['to']!r}")
        lines.extend(f"    {m}" for m in c.get("meaning", ()))
    lines.append(f"{len(changes)} difference(s)")
    lines.extend(notes or ())
    lines.extend(consequences or ())
    return "\n".join(lines) + "\n"
