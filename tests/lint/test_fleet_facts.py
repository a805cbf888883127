"""fleet lint --facts (issue 31): the fleet view from the facts documents Ansible already gathers
(/etc/ansible/facts.d/ncclctl.fact fetched per host, or its JSON fact cache), the same answer as from the nodes."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli


def _facts_of(model_path: Path) -> dict:
    """What `ncclctl facts --model PATH` writes (the same function, in process: 20 hosts in well under a second)."""
    from ncclctl.inventory import load_model
    from ncclctl.ops.facts import build

    return build(lambda: load_model(str(model_path)), source={"kind": "model", "path": str(model_path)})


def _fleet(tmp_path: Path, models: dict, layout: dict[str, tuple[str, str | None]]):
    """Node models under tmp/models/HOST.json and their facts as Ansible's fetch lays them out:
    tmp/fetched/HOST/etc/ansible/facts.d/ncclctl.fact."""
    paths = []
    for host, (name, driver) in layout.items():
        doc = json.loads(json.dumps(models[name]))
        doc["hostname"] = host
        if driver:
            doc["facts"]["driver_version"] = driver
        m = tmp_path / "models" / f"{host}.json"
        m.parent.mkdir(exist_ok=True)
        m.write_text(json.dumps(doc))
        paths.append(str(m))
        fact = tmp_path / "fetched" / host / "etc" / "ansible" / "facts.d" / "ncclctl.fact"
        fact.parent.mkdir(parents=True)
        fact.write_text(json.dumps(_facts_of(m)))
    return paths, tmp_path / "fetched"


def _comparable(doc: dict) -> dict:
    """A fleet JSON report without where each host was read from."""
    for h in doc["hosts"]:
        h.pop("source", None)
    return doc


LAYOUT = {f"gpu{i:03d}": ("dgx-h100-port-down" if i in (2, 17, 18, 19) else "dgx-h100",
                          "535.183.01" if i == 7 else None) for i in range(1, 21)}


def test_facts_give_the_answer_the_nodes_give(tmp_path, models):
    paths, fetched = _fleet(tmp_path, models, LAYOUT)
    from_models = run_cli("fleet", "lint", *paths, "--format", "json", "-j", "1")
    from_facts = run_cli("fleet", "lint", "--facts", str(fetched), "--format", "json")
    assert from_facts.returncode == from_models.returncode == 1, from_facts.stderr
    a, b = _comparable(json.loads(from_models.stdout)), _comparable(json.loads(from_facts.stdout))
    assert a == b
    gpu007 = next(h for h in b["hosts"] if h["host"] == "gpu007")
    assert [f["rule"] for f in gpu007["findings"]] == ["FLT003"]  # the odd driver, compared from facts
    assert any(h["host"] == "gpu017" and {"IB001", "NCCL011", "FLT011"} <= {f["rule"] for f in h["findings"]}
               for h in b["hosts"])


def test_facts_text_is_grouped_per_fault_with_the_fix_once(tmp_path, models):
    _, fetched = _fleet(tmp_path, models, LAYOUT)
    r = run_cli("fleet", "lint", "--facts", str(fetched))
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    ib = [ln for ln in lines if ": IB001: " in ln]
    assert len(ib) == 1 and ib[0].startswith("gpu[002,017-019]: mlx5_3: error: IB001: ") and ib[0].endswith("[4 hosts]")
    fixes = [ln for ln in lines if ln.startswith("    fix: ")]
    assert fixes and len(fixes) == len(set(fixes))
    assert lines[-1] == ("20 hosts: 15 clean, 5 with findings (4 at or above error), 0 unreadable; 12 errors, 1 warning, "
                         "0 info")


def test_files_setup_output_and_fact_cache_are_read(tmp_path, models):
    """A facts file given by name, Ansible's setup output ({"ansible_facts": {"ansible_local": {"ncclctl": ...}}})
    and a jsonfile fact-cache entry (a file named after the host, {"ansible_local": {...}})."""
    _, fetched = _fleet(tmp_path, models, {"gpu001": ("dgx-h100", None), "gpu002": ("dgx-h100-port-down", None),
                                           "gpu003": ("dgx-h100", None)})
    docs = {h: json.loads((fetched / h / "etc/ansible/facts.d/ncclctl.fact").read_text()) for h in
            ("gpu001", "gpu002", "gpu003")}
    (tmp_path / "setup.json").write_text(json.dumps({"ansible_facts": {"ansible_local": {"ncclctl": docs["gpu002"]}}}))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "gpu003").write_text(json.dumps({"ansible_local": {"ncclctl": docs["gpu003"]}, "ansible_hostname": "x"}))
    plain = fetched / "gpu001/etc/ansible/facts.d/ncclctl.fact"
    r = run_cli("fleet", "lint", "--facts", str(plain), str(tmp_path / "setup.json"), str(cache), "-f", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert [h["host"] for h in doc["hosts"]] == ["gpu001", "gpu002", "gpu003"]
    assert {f["rule"] for f in doc["hosts"][1]["findings"]} == {"IB001", "NCCL011", "FLT011"}


def test_rule_selection_applies_to_recorded_findings(tmp_path, models):
    _, fetched = _fleet(tmp_path, models, {"gpu001": ("dgx-h100", None), "gpu002": ("dgx-h100-port-down", None),
                                           "gpu003": ("dgx-h100", None)})
    r = run_cli("fleet", "lint", "--facts", str(fetched), "--rule", "IB001", "-f", "json")
    doc = json.loads(r.stdout)
    assert [f["rule"] for h in doc["hosts"] for f in h["findings"]] == ["IB001"]
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("rules:\n  NCCL011: warning\nignore:\n  - hosts: 'gpu00[2]'\n    rules: [IB001]\n")
    doc = json.loads(run_cli("fleet", "lint", "--facts", str(fetched), "-c", str(cfg), "-f", "json").stdout)
    found = {f["rule"]: f["severity"] for h in doc["hosts"] for f in h["findings"]}
    assert "IB001" not in found and found["NCCL011"] == "warning" and found["FLT011"] == "error"


def test_bad_facts_are_named_and_the_rest_are_linted(tmp_path, models):
    _, fetched = _fleet(tmp_path, models, {"gpu001": ("dgx-h100", None), "gpu002": ("dgx-h100", None)})
    broken = fetched / "gpu003.json"
    broken.write_text('{"schema_version": 1,\n "ok": tru}\n')
    old = json.loads((fetched / "gpu001/etc/ansible/facts.d/ncclctl.fact").read_text())
    del old["fleet"]
    (fetched / "gpu004.json").write_text(json.dumps(old))
    failed = {"schema_version": 1, "ok": False, "timed_out": True, "hostname": "gpu005",
              "error": {"error": "Timeout", "message": "probe did not finish within 20 s", "fix": "raise --timeout"}}
    (fetched / "gpu005.json").write_text(json.dumps(failed))
    hostile = json.loads((fetched / "gpu002/etc/ansible/facts.d/ncclctl.fact").read_text())
    hostile["fleet"]["findings"] = [{"rule": "IB001", "severity": "bogus", "message": 5, "subject": "x"}]
    (fetched / "gpu006.json").write_text(json.dumps(hostile))
    (fetched / "notes.txt").write_text("not read: not a facts name")
    r = run_cli("fleet", "lint", "--facts", str(fetched), "-f", "json")
    assert r.returncode == 3 and "Traceback" not in r.stderr
    doc = json.loads(r.stdout)
    errors = {Path(h["source"]).name: h["error"] for h in doc["hosts"] if h.get("error")}
    assert set(errors) == {"gpu003.json", "gpu004.json", "gpu005.json", "gpu006.json"}
    assert errors["gpu003.json"]["line"] == 2 and "not a valid JSON facts document" in errors["gpu003.json"]["message"]
    assert "no 'fleet' section" in errors["gpu004.json"]["message"] and "upgrade" in errors["gpu004.json"]["fix"]
    assert "probe timed out: Timeout" in errors["gpu005.json"]["message"]
    assert "'fleet' section is malformed" in errors["gpu006.json"]["message"]
    assert sum(1 for h in doc["hosts"] if not h.get("error")) == 2


def test_usage_errors(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run_cli("fleet", "lint", "--facts", str(empty))
    assert r.returncode == 3 and str(empty) in r.stderr and "no facts files" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("fleet", "lint", "--facts", str(empty), "--expect", "x.yaml")
    assert r.returncode == 2 and "--facts" in r.stderr
    r = run_cli("fleet", "lint", "--facts", str(tmp_path / "missing.fact"))
    assert r.returncode == 3 and "missing.fact" in (r.stdout + r.stderr)
