"""Compare the probed topology with a captured ``nvidia-smi topo -m`` (the format users paste into bug reports).

GPUs are matched by index; NICs by RDMA device name through the NIC legend (or old drivers' ibdev labels).
NODE and PHB are compared as written: nvidia-smi tells host bridges of one NUMA node (NODE) from one host
bridge (PHB), and so does the probe.
"""

from __future__ import annotations

from ncclctl.model import Node
from ncclctl.parsers.smi_topo import parse_nvidia_smi_topo
from ncclctl.plan.paths import matrix


def compare(node: Node, text: str, *, source: str) -> list[dict]:
    smi = parse_nvidia_smi_topo(text, source=source)
    m = matrix(node)
    legend = dict(smi.nic_legend)  # NIC0 -> mlx5_0
    ours = {label: i for i, label in enumerate(m.labels)}
    ours_by_name = {name: label for label, name in m.nic_legend}

    def to_ours(label: str) -> str | None:
        if label.startswith("GPU"):
            return label if label in ours else None
        name = legend.get(label, label)
        return ours_by_name.get(name)

    out: list[dict] = []
    for i, row_label in enumerate(smi.labels):
        r = to_ours(row_label)
        for j, col_label in enumerate(smi.labels):
            c = to_ours(col_label)
            cell = smi.matrix[i][j]
            if r is None or c is None:
                if i == j or (r is None and c is None and j > i):
                    if r is None and i == j:
                        out.append({"row": row_label, "column": col_label, "smi": "present", "model": "missing"})
                continue
            mine = m.cells[ours[r]][ours[c]]
            if mine != cell:
                out.append({"row": row_label, "column": col_label, "smi": cell, "model": mine})
    present = {to_ours(label) for label in smi.labels}
    for label in m.labels:
        if label not in present:
            out.append({"row": label, "column": label, "smi": "missing", "model": "present"})
    return out


def compare_file(node: Node, path: str) -> tuple[dict, str]:
    """``probe --compare-smi FILE``: read the captured ``nvidia-smi topo -m`` output through the input door and
    compare; ``(JSON document, text)``. ``doc["same"]`` says whether they agree."""
    from ncclctl import JSON_SCHEMA_VERSION
    from ncclctl.inputs import read_text

    from ncclctl.errors import InputError

    shown = "<stdin>" if path == "-" else path
    text = read_text(path, "cmd", display=shown)
    if not text.strip():
        raise InputError("empty: no 'nvidia-smi topo -m' output to compare with", path=shown,
                         fix="capture it on the host: nvidia-smi topo -m > topo-m.txt")
    differences = compare(node, text, source=shown)
    doc = {"schema_version": JSON_SCHEMA_VERSION, "file": path, "same": not differences, "differences": differences}
    text = "".join(f"{d['row']} x {d['column']}: nvidia-smi says {d['smi']}, the model says {d['model']}\n"
                   for d in differences) or f"{path} agrees with the probed topology\n"
    return doc, text
