""".ncclctl.yaml: the loader resolves every form, rejects bad input naming file, line and rule, agrees with the
generated JSON Schema; strict semantics; discovery; the CLI maps config errors to exit 3."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from ncclctl.errors import InputError
from ncclctl.findings import Severity
from ncclctl.lint.config import discover, json_schema, load_config, parse_config
from ncclctl.lint.engine import Config, RuleConfig
from ncclctl.registry import Hit, Option, Rule, RuleDoc

from conftest import HOSTS, REPO, run_cli

GOOD = """\
extends: strict
rules:
  EXP003:
    severity: warning
    options: {allow_faster: false}
  expect-nccl-settings:
    options:
      ignore: [NCCL_DEBUG, NCCL_IB_TC]
      unexpected: false
  EXP005: off
  EXP006: info
  EXP001: {disable: true}
  EXP002: {severity: off}
  FLT001: on
ignore:
  - hosts: "gpu-dev-*"
    rules: [EXP008, fleet-mtu-mismatch]
  - hosts: "*"
    rules: FLT004
"""


def test_every_form_resolves():
    cfg = parse_config(GOOD, path="x.yaml")
    rc = dict(cfg.rules)
    assert cfg.extends == "strict" and cfg.path == "x.yaml"
    assert rc["EXP003"] == RuleConfig(severity=Severity.WARNING, options=(("allow_faster", False),), disabled=False)
    assert rc["EXP007"].options == (("ignore", ("NCCL_DEBUG", "NCCL_IB_TC")), ("unexpected", False))
    assert rc["EXP007"].disabled is None and rc["EXP007"].severity is None
    assert rc["EXP005"].disabled is True  # YAML reads a bare `off` as false
    assert rc["EXP006"] == RuleConfig(severity=Severity.INFO, disabled=False)
    assert rc["EXP001"].disabled is True and rc["EXP002"].disabled is True
    assert rc["FLT001"].disabled is False
    assert cfg.ignores == (("gpu-dev-*", ("EXP008", "FLT001")), ("*", ("FLT004",)))
    assert cfg.ignored("gpu-dev-3", "EXP008") and not cfg.ignored("gpu-prod-3", "EXP008")


def test_empty_file_is_the_default():
    assert parse_config("", path="e.yaml") == Config(path="e.yaml")
    assert parse_config("# nothing yet\n", path="e.yaml").extends == "default"
    assert load_config(None) == Config()


BAD = [
    ("extend: strict\n", 1, "unknown key 'extend'", "did you mean 'extends'"),
    ("extends: paranoid\n", 1, "extends: 'paranoid' is not a profile", "extends: strict"),
    ("rules:\n  EXP003: {}\n  EXP0008: off\n", 3, "unknown rule 'EXP0008'", "did you mean EXP008?"),
    ("rules:\n  EXP999: off\n", 2, "unknown rule 'EXP999'", "'ncclctl rules' lists"),
    ("rules:\n  expect-firmwar: off\n", 2, "unknown rule 'expect-firmwar'", "did you mean expect-firmware"),
    ("rules:\n  EXP003:\n    options:\n      allow_fastr: true\n", 4, "rule EXP003: unknown option 'allow_fastr'",
     "did you mean 'allow_faster'"),
    ("rules:\n  EXP003:\n    options:\n      allow_faster: 3\n", 4,
     "rule EXP003: option allow_faster: expected true or false, got int 3", "allow_faster is a bool"),
    ("rules:\n  EXP007:\n    options: {ignore: NCCL_DEBUG}\n", 3,
     "rule EXP007: option ignore: expected a list of strings", "list of str"),
    ("rules:\n  EXP007:\n    options: {ignore: [1, 2]}\n", 3, "expected a list of strings", None),
    ("rules:\n  EXP001:\n    options: {x: 1}\n", 3, "rule EXP001: has no options", None),
    ("rules:\n  EXP001:\n    severity: fatal\n", 3, "rule EXP001: severity 'fatal' is not one of", None),
    ("rules:\n  EXP001:\n    level: error\n", 3, "rule EXP001: unknown key 'level'", "allowed keys"),
    ("rules:\n  EXP001: maybe\n", 2, "rule EXP001: 'maybe' is not a setting", None),
    ("rules:\n  EXP001:\n", 2, "rule EXP001: give off/on/a severity", None),
    ("rules:\n  EXP001: {disable: yes please}\n", 2, "rule EXP001: disable must be true or false", None),
    ("rules:\n  EXP001: {severity: error, disable: true}\n", 2, "contradicts severity error", None),
    ("rules:\n  EXP001: off\n  expect-gpu-count-model: on\n", 3, "rule EXP001 is configured twice", None),
    ("rules:\n  EXP001: off\n  EXP001: on\n", 3, "duplicate key 'EXP001'", None),
    ("rules: [EXP001]\n", 1, "'rules' must be a mapping", None),
    ("ignore:\n  - hosts: a*\n    rules: [EXP001, NOPE]\n", 3, "unknown rule 'NOPE'", None),
    ("ignore:\n  - hosts: a*\n    rule: [EXP001]\n", 3, "ignore entry: unknown key 'rule'", "did you mean 'rules'"),
    ("ignore:\n  - rules: [EXP001]\n", 2, "'hosts' must be a host-name glob", None),
    ("ignore: {hosts: a}\n", 1, "'ignore' must be a list", None),
    ("- a\n- b\n", 1, "a config file is a mapping", None),
    ("rules:\n  EXP001: [off\n", 3, "not valid YAML", "fix the YAML syntax"),
]


@pytest.mark.parametrize("text,line,message,fix", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_config_names_file_line_and_rule(text, line, message, fix):
    with pytest.raises(InputError) as info:
        parse_config(text, path="site.yaml")
    err = info.value
    assert err.path == "site.yaml" and err.line == line, (err.line, str(err))
    assert message in err.message, err.message
    if fix:
        assert fix in (err.fix or ""), err.fix


@pytest.mark.parametrize("text", [GOOD, "", "extends: default\n"]
                         + [b[0] for b in BAD if "configured twice" not in b[2] and "duplicate key" not in b[2]])
def test_loader_and_json_schema_agree(text):
    """The schema shipped for editors accepts exactly what the loader accepts (for these samples; the loader
    also rejects a rule configured under both its id and its slug, and duplicate keys, which a schema cannot see)."""
    from jsonschema import Draft202012Validator

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return
    schema_ok = Draft202012Validator(json_schema()).is_valid(data)
    try:
        parse_config(text, path="s.yaml")
        loader_ok = True
    except InputError:
        loader_ok = False
    assert schema_ok == loader_ok, text


def _rule(**kw) -> Rule:
    base = dict(id="GPU900", slug="test-rule", family="gpu", severity=Severity.WARNING, title="t",
                doc=RuleDoc("w", "y", "d", "f"), check=lambda ctx, opts: iter(()))
    base.update(kw)
    return Rule(**base)


def test_strict_enables_default_off_rules_and_applies_strict_severity():
    off = _rule(default_enabled=False, strict_severity=Severity.ERROR)
    default, strict = Config(), Config(extends="strict")
    assert not default.enabled(off) and strict.enabled(off)
    assert default.severity(off) is None and strict.severity(off) is Severity.ERROR
    # Naming the rule with a severity enables it without strict; an explicit severity beats strict's.
    named = Config(rules=(("GPU900", RuleConfig(severity=Severity.INFO, disabled=False)),), extends="strict")
    assert named.enabled(off) and named.severity(off) is Severity.INFO
    assert not Config(extends="strict", rules=(("GPU900", RuleConfig(disabled=True)),)).enabled(off)


def test_option_types_are_checked():
    assert Option("n", int, 3, "h", min=1, max=8).problem(0) == "0 is below the minimum 1"
    assert Option("n", int, 3, "h", min=1, max=8).problem(9) == "9 is above the maximum 8"
    assert "expected an integer" in Option("n", int, 3, "h").problem(True)
    assert "expected an integer" in Option("n", int, 3, "h").problem(2.5)
    assert Option("x", float, 1.5, "h").problem(2) is None
    assert "expected a number" in Option("x", float, 1.5, "h").problem("2")
    assert "'z' is not one of a, b" in Option("s", str, "a", "h", choices=("a", "b")).problem("z")
    assert "'z' is not one of a, b" in Option("l", list, ["a"], "h", choices=("a", "b")).problem(["a", "z"])
    assert Option("l", list, ["a"], "h").type_name == "list of str"


def test_registration_rejects_bad_option_defaults():
    from ncclctl.registry import rule

    with pytest.raises(ValueError, match="default"):
        rule("GPU901", "bad-default", Severity.INFO, "t", what="w", why="y", detect="d", fix="f",
             options=(Option("n", int, "three", "h"),))(lambda ctx, opts: ())
    with pytest.raises(ValueError, match="family prefix"):
        rule("XYZ001", "bad-id", Severity.INFO, "t", what="w", why="y", detect="d", fix="f")(lambda ctx, opts: ())


def test_discovery(tmp_path):
    assert discover(None, cwd=str(tmp_path)) is None
    (tmp_path / ".ncclctl.yaml").write_text("extends: strict\n")
    assert discover(None, cwd=str(tmp_path)) == str(tmp_path / ".ncclctl.yaml")
    assert discover("other.yaml", cwd=str(tmp_path)) == "other.yaml"


def test_cli_reads_dot_ncclctl_yaml_from_the_working_directory(tmp_path):
    (tmp_path / ".ncclctl.yaml").write_text("rules:\n  GPU004: error\n")
    env = {k: v for k, v in os.environ.items() if k != "NCCLCTL_DEBUG"}
    env["PYTHONPATH"] = str(REPO)
    root = tmp_path / "host"
    import shutil

    shutil.copytree(HOSTS / "dgx-h100", root, symlinks=True, copy_function=os.link)
    import json

    nvml = json.loads((root / "nvml.json").read_text())
    nvml["devices"][2]["persistence_mode"] = 0
    (root / "nvml.json").unlink()
    (root / "nvml.json").write_text(json.dumps(nvml))
    res = subprocess.run([sys.executable, "-m", "ncclctl", "lint", "--root", str(root), "--rule", "GPU004",
                          "--format", "json"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
    doc = json.loads(res.stdout)
    assert res.returncode == 1, res.stderr  # the config raised GPU004 (a warning) to error
    assert doc["config"].endswith(".ncclctl.yaml")
    assert [f["severity"] for f in doc["findings"]] == ["error"]


def test_cli_config_error_is_exit_3_naming_file_and_line(tmp_path):
    bad = tmp_path / "site.yaml"
    bad.write_text("rules:\n  EXP007:\n    options:\n      ignore: 5\n")
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--config", str(bad))
    assert res.returncode == 3
    assert f"{bad}:4: rule EXP007: option ignore: expected a list of strings" in res.stderr
    assert "Traceback" not in res.stderr
    res = run_cli("lint", "--root", str(HOSTS / "dgx-h100"), "--config", str(tmp_path / "missing.yaml"))
    assert res.returncode == 3 and "no such config file" in res.stderr


def test_ignored_hosts_skip_rules():
    from ncclctl.lint.context import Ctx
    from ncclctl.lint.engine import run
    from ncclctl.probe import probe

    node = probe(str(HOSTS / "dgx-h100-nvlink-missing"))
    profile = {"gpus": {"nvlinks": 18}}
    found = run(Ctx(node=node, expect=profile), Config(), only=("EXP008",))
    assert [f.subject for f in found] == ["GPU5"]
    cfg = parse_config("ignore:\n  - {hosts: 'dgx-h100-*', rules: [expect-nvlink-count]}\n")
    assert run(Ctx(node=node, expect=profile), cfg, only=("EXP008",)) == []
    cfg = parse_config("rules: {EXP008: warning}\n")
    assert [f.severity for f in run(Ctx(node=node, expect=profile), cfg, only=("EXP008",))] == [
        Severity.WARNING]


def test_a_crashing_check_becomes_an_error_finding(monkeypatch):
    from ncclctl.lint import engine
    from ncclctl.lint.context import Ctx
    from ncclctl.probe import probe

    def boom(ctx, opts):
        yield Hit("x", "fine")
        raise KeyError("nope")

    broken = _rule(check=boom)
    monkeypatch.setattr(engine, "all_rules", lambda: (broken,))
    monkeypatch.delenv("NCCLCTL_DEBUG", raising=False)
    node = probe(str(HOSTS / "cpu-only"))
    found = engine.run(Ctx(node=node), Config())
    assert [(f.rule, f.severity, f.subject) for f in found] == [("GPU900", Severity.ERROR, node.hostname)]
    assert "the check crashed (KeyError" in found[0].message


def test_yaml_alias_bombs_are_refused_before_anything_walks_them(monkeypatch):
    """A 'billion laughs' document (aliases of aliases) is refused by its expanded size, wherever it sits. Work is
    counted, not timed: nothing builds or walks the document (no construct_document, no check_nodes call); only
    expanded_size, memoised per composed node (~100 here, not the 9**10 the aliases expand to), looks at it."""
    from ncclctl import yamlio
    from ncclctl.lint.expect import parse_profile

    calls = {"construct": 0, "check": 0}
    loader = yamlio.safe_loader()
    real_construct, real_check = loader.construct_document, yamlio.check_nodes

    def construct(self, node):
        calls["construct"] += 1
        return real_construct(self, node)

    def check(root, path):
        calls["check"] += 1
        return real_check(root, path)

    monkeypatch.setattr(loader, "construct_document", construct)
    monkeypatch.setattr(yamlio, "check_nodes", check)

    text = "x: &l0 [a, a, a, a, a, a, a, a, a]\n"
    for i in range(1, 10):
        text += f"x{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n"
    for parse in (parse_config, parse_profile):
        with pytest.raises(InputError, match="alias bomb"):
            parse(text, path="laughs.yaml")
    assert calls["construct"] == calls["check"] == 0, calls
    nested = "ignore:\n  - &l0 [a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"  - &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 10))
    with pytest.raises(InputError, match="alias bomb"):
        parse_config(nested, path="laughs.yaml")
    small = "a: &x [1, 2]\nb: *x\n"  # a few aliases are fine: only the expanded size counts
    from ncclctl.yamlio import load

    assert calls["construct"] == calls["check"] == 0, calls
    assert load(small, "small.yaml")[0] == {"a": [1, 2], "b": [1, 2]}
    assert calls["construct"] == calls["check"] == 1, calls  # the control: a usable document is built and walked
