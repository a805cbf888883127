"""Lint rule cases: data under ``fixtures/lint/<RULE>.yaml``, each a host fixture plus a small overlay.

Format (one file per rule)::

    rule: PCI003
    cases:
      - name: x8-link                 # unique within the file
        base: dgx-h100-x8-link        # a folder under fixtures/hosts/
        expect: fail                  # fail: the rule fires; pass: it does not
        subjects: ["0000:1b:00.0"]    # optional (fail): the exact set of finding subjects
        message: "x8"                 # optional (fail): a substring of some finding's message
        severity: info                # optional (fail): the severity of every finding
        count: 1                      # optional (fail): the number of findings
        # overlay, applied to a hard-linked copy of the base (files are replaced, never edited in place):
        write: {"sys/bus/pci/devices/0000:1b:00.0/current_link_width": "8\n"}
        delete: ["etc/nccl.conf"]
        link: {"sys/class/infiniband/mlx5_9/device": "../../../devices/..."}
        json:                         # set a value inside a JSON file of the fixture (nvml.json, env.json)
          - {file: nvml.json, path: [devices, 0, persistence_mode], value: 0}
        sub:                          # Python re.sub in a text file (one field of a long command output);
          - {file: cmd/ibv_devinfo_-v.txt, pattern: "(?s)(hca_id:.mlx5_3.*?active_mtu:.*?)4096 [(]5[)]",
             repl: '\\g<1>2048 (4)', count: 1}  # the pattern must match exactly count times (default 1)
        patch:                        # overwrite bytes of a binary file (PCI config space) at an offset
          - {file: "sys/devices/.../0000:17:03.0/config", offset: 0x14e, hex: "1d00"}  # ACS Control = 0x001d
        truncate: {"sys/devices/.../config": 64}   # keep the first N bytes (config space as a non-root reader sees it)
        options: {min_rate_gbps: 400} # rule options for this case
        expect_profile: {...}         # an expected-state profile (EXP rules)

A case without an overlay lints the base folder in place (no copy).

Fleet rules (FLT) compare hosts: their cases give ``hosts`` instead of ``base``, a list of host entries, each a
``base`` plus an optional overlay (same keys as above) and the host ``name`` (as an inventory names it)::

      - name: one-host-mtu-1500
        expect: fail
        hosts:
          - {name: roce-01, base: hgx-h100-roce}
          - {name: roce-02, base: hgx-h100-roce, write: {"sys/class/net/ens1np0/mtu": "1500\n"}}
        subjects: [roce-02]
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
HOSTS = REPO / "fixtures" / "hosts"
CASES = REPO / "fixtures" / "lint"

OVERLAY_KEYS = ("write", "delete", "link", "json", "sub", "patch", "truncate")
CASE_KEYS = {"name", "base", "expect", "subjects", "message", "count", "severity", "options", "expect_profile", "note",
             "hosts", *OVERLAY_KEYS}
HOST_KEYS = {"name", "base", "labels", *OVERLAY_KEYS}  # labels: Kubernetes node labels, as an inventory gives them


def load_case_files() -> dict[str, dict]:
    out = {}
    for path in sorted(CASES.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        assert isinstance(doc, dict) and set(doc) <= {"rule", "cases"}, f"{path}: top-level keys rule, cases"
        assert doc["rule"] == path.stem, f"{path}: rule {doc['rule']} must match the file name"
        for case in doc["cases"]:
            unknown = set(case) - CASE_KEYS
            assert not unknown, f"{path}: case {case.get('name')}: unknown keys {sorted(unknown)}"
            assert case["expect"] in ("pass", "fail"), f"{path}: case {case.get('name')}: expect pass|fail"
            if "hosts" in case:  # a fleet case: several hosts, each a base plus an overlay
                assert "base" not in case and len(case["hosts"]) >= 2, f"{path}: case {case['name']}: hosts (2+), no base"
                for h in case["hosts"]:
                    assert set(h) <= HOST_KEYS and "name" in h, f"{path}: case {case['name']}: host keys {sorted(HOST_KEYS)}"
                    assert (HOSTS / h["base"]).is_dir(), f"{path}: case {case['name']}: no fixture {h['base']}"
                continue
            assert (HOSTS / case["base"]).is_dir(), f"{path}: case {case['name']}: no fixture {case['base']}"
        out[doc["rule"]] = doc
    return out


def all_cases() -> list[tuple[str, dict]]:
    return [(rid, case) for rid, doc in load_case_files().items() for case in doc["cases"]]


def _set(doc: Any, path: list, value: Any) -> None:
    cur = doc
    for key in path[:-1]:
        cur = cur[key]
    if value is None and isinstance(cur, dict):
        cur.pop(path[-1], None)
    else:
        cur[path[-1]] = value


def materialize(case: dict, tmp: Path) -> Path:
    """The folder to lint for ``case``: the base itself, or a hard-linked copy with the overlay applied."""
    base = HOSTS / case["base"]
    if not any(k in case for k in OVERLAY_KEYS):
        return base
    root = tmp / case["base"]
    shutil.copytree(base, root, symlinks=True, copy_function=os.link)

    def target(rel: str) -> Path:
        p = root / rel
        assert root in p.parents, f"case {case['name']}: path {rel} escapes the fixture"
        if p.is_symlink() or p.exists():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()  # replace, never edit in place: the file is a hard link to the fixture
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    for rel in case.get("delete", []):
        p = root / rel
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.is_symlink() or p.exists():
            p.unlink()
    for rel, text in case.get("write", {}).items():
        target(rel).write_text(text)
    for rel, dest in case.get("link", {}).items():
        os.symlink(dest, target(rel))
    for edit in case.get("json", []):
        src = root / edit["file"]
        doc = json.loads(src.read_text())
        _set(doc, edit["path"], edit["value"])
        target(edit["file"]).write_text(json.dumps(doc, indent=2) + "\n")
    for edit in case.get("sub", []):
        text = (root / edit["file"]).read_text()
        new, n = re.subn(edit["pattern"], edit["repl"], text)
        want = edit.get("count", 1)
        assert n == want, f"case {case['name']}: {edit['file']}: pattern matched {n} times, expected {want}"
        target(edit["file"]).write_text(new)
    for edit in case.get("patch", []):
        data = bytearray((root / edit["file"]).read_bytes())
        new_bytes = bytes.fromhex(edit["hex"])
        off = edit["offset"]
        assert 0 <= off and off + len(new_bytes) <= len(data), f"case {case['name']}: {edit['file']}: patch past the end"
        data[off:off + len(new_bytes)] = new_bytes
        target(edit["file"]).write_bytes(bytes(data))
    for rel, size in case.get("truncate", {}).items():
        data = (root / rel).read_bytes()
        assert 0 <= size < len(data), f"case {case['name']}: {rel}: truncate to {size} of {len(data)} bytes"
        target(rel).write_bytes(data[:size])
    return root
