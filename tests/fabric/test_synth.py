"""fabric synth: parseable, rail-correct cabling, ground truth for miscabling and down links, deterministic."""

from __future__ import annotations

import json
import re

from conftest import REPO, run_cli
from ncclctl.fabric.synth import SynthSpec, synth
from ncclctl.parsers.ibnetdiscover import parse_ibnetdiscover


def hca_leaf_rails(text: str) -> dict[tuple[str, int], int]:
    """(host, hca rail) -> rail of the leaf it is cabled to, read back through the parser."""
    fab = parse_ibnetdiscover(text)
    out = {}
    for n in fab.nodes:
        if n.kind != "ca":
            continue
        host, hca = n.desc.split()
        for p in n.ports:
            leaf = fab.node(p.remote_guid)
            out[(host, int(hca.split("_")[1]))] = int(re.search(r"rail(\d+)-leaf", leaf.desc).group(1))
    return out


def test_clean_fabric_is_rail_aligned():
    r = synth(SynthSpec(nodes=70, rails=8, group=32))
    cabling = hca_leaf_rails(r.text)
    assert len(cabling) == 70 * 8
    assert all(hca == leaf for (host, hca), leaf in cabling.items())
    fab = parse_ibnetdiscover(r.text)
    assert sum(1 for n in fab.nodes if n.kind == "switch") == 3 * 8 + 8 * 4  # 3 groups x 8 leaves + 8 x 4 spines
    assert all(p.rate_gbps == 400 for n in fab.nodes for p in n.ports)


def test_ground_truth_of_faults():
    r = synth(SynthSpec(nodes=64, miscable=3, down=2, seed=7))
    cabling = hca_leaf_rails(r.text)
    wrong = sorted({host for (host, hca), leaf in cabling.items() if hca != leaf})
    assert wrong == sorted(m[0] for m in r.miscabled)
    for host, a, b in r.miscabled:
        assert cabling.get((host, a), b) == b and cabling.get((host, b), a) == a
    for host, rail in r.down:
        assert (host, rail) not in cabling
    assert synth(SynthSpec(nodes=64, miscable=3, down=2, seed=7)).text == r.text


def test_cli(tmp_path):
    out = tmp_path / "fabric.txt"
    result = run_cli("fabric", "synth", "--nodes", "40", "--miscable", "1", "-o", str(out), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert len(doc["miscabled"]) == 1 and parse_ibnetdiscover(out.read_text()).nodes
    assert run_cli("fabric", "synth", "--nodes", "0").returncode == 2


def test_every_subpackage_is_packaged():
    text = (REPO / "pyproject.toml").read_text()
    listed = set(re.sub(r"\s", "", re.search(r"packages = \[(.*?)\]", text, re.S).group(1)).replace('"', "").split(","))
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "ncclctl").rglob("__init__.py")}
    # plus the data-only package of the schemas (a link to schemas/ in a checkout), listed so that setuptools
    # installs its files as the package's data rather than warning that it would ignore them
    assert found | {"ncclctl._schemas"} == listed, "list every ncclctl subpackage in [tool.setuptools] packages"
