"""fixtures/topo/corpus-classes/: authored reproductions of defect classes found in published topology files
(docs/topo-corpus.md). NCCL's reader accepts each of them silently, which is what makes them defects worth a rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ncclctl.nccl.xml import parse_nccl_xml

CLASSES = Path(__file__).resolve().parents[2] / "fixtures" / "topo" / "corpus-classes"
FILES = sorted(CLASSES.glob("*.xml"))
_HEAD = re.compile(r"<!-- class (?P<cls>[a-z-]+(?: / [a-z-]+)?)(?: \([^)]*\))?: .+; seen in (?P<src>.+) -->")


def test_every_class_file_is_listed_in_the_readme():
    readme = (CLASSES / "README.md").read_text()
    assert len(FILES) >= 8
    assert all(f"`{p.name}`" in readme for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_nccl_reads_it_without_complaint(path):
    data = path.read_bytes()
    m = _HEAD.match(data.decode())
    assert m, "first line: <!-- class NAME: what; seen in SOURCE -->"
    assert re.search(r"[\w-]+/[\w.-]+", m["src"]), "the source names a public repository"
    res = parse_nccl_xml(data, kind="topology")
    assert res.fatal is None and res.root is not None and res.root.name == "system"
    assert [d for d in res.diagnostics if d.severity.value == "error"] == []


# The rule that now reports each class (issue 15); the one-socket <cpu> needs the host (NTH004 with --root).
CAUGHT = {
    "cpu-identical-affinity.xml": ("NTS044", None),
    "cpu-swapped-affinity.xml": ("NTS045", None),
    "link-bridge-2.5gt-x1.xml": ("NTS047", None),
    "link-empty-speed-width-zero.xml": ("NTS031", None),
    "link-speed-pcie-s-suffix.xml": ("NTS048", None),
    "nvlink-self-target.xml": ("NTS049", None),
    "skeleton-bus-ids-only.xml": ("NTS053", None),
    "version-virtual-switch-without-ids.xml": ("NTV011", "2.9.6"),
}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_class_is_reported(name):
    from ncclctl.topo.validate import validate_bytes

    rule, version = CAUGHT[name]
    data = (CLASSES / name).read_bytes()
    kw = {"nccl_version": version} if version else {}
    assert rule in {f.rule for f in validate_bytes(data, path=name, **kw)}
